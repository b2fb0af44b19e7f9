//! Replays every fuzz seed (`fuzz/seeds/<target>/`), the minimized corpus of the campaigns
//! (`fuzz/corpus/<target>/`) and every input a fuzzer once crashed on
//! (`fuzz/regressions/<target>/`) through the fuzz targets' bodies, on stable Rust.

use std::path::Path;

use volley_testkit::fuzz::TARGETS;

#[test]
fn every_seed_and_regression_input_runs_clean() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut ran = 0;
    for (name, body) in TARGETS {
        let mut seeds = 0;
        for kind in ["seeds", "corpus", "regressions"] {
            let dir = root.join(kind).join(name);
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries {
                let path = e.unwrap().path();
                if path.file_name().is_some_and(|n| n == ".gitkeep") {
                    continue;
                }
                let data = std::fs::read(&path).unwrap();
                let (body, shown) = (*body, path.display().to_string());
                std::panic::catch_unwind(move || body(&data))
                    .unwrap_or_else(|_| panic!("{name}: {shown} panics"));
                ran += 1;
                seeds += usize::from(kind == "seeds");
            }
        }
        assert!(seeds > 0, "no seed inputs for fuzz target {name}");
    }
    println!("{ran} fuzz inputs replayed");
}
