//! The main job (`scripts/demo --quick`) on a machine with only Rust: no Go, no JDK on PATH, no
//! peer tools; it serves, calls, benches and runs every lab scenario with non-zero figures and no
//! failed call, and says in one line that ghz and grpcurl were skipped. Seed 004's orders table
//! has every row of the seed. The HTML report renders in headless Chromium at 1000 and 1400 px
//! with no text outside its chart or the window (each text's box measured in the page), and
//! screenshots at both widths are not blank. With Go's tools present, the demo shows grpcurl and
//! ghz. `volley lab` bad input fails fast with one line.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use serde_json::Value;
use volley_testkit::{Volley, fails_in_one_line, tool, volley, workspace};

const VOLLEY: Volley = volley!();

fn one_line_error(args: &[&str]) -> String {
    fails_in_one_line(Command::new(VOLLEY.bin()).args(args))
}

/// A directory of links to every program on PATH but these: a PATH without them.
fn path_without(hidden: &[&str], dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    for d in std::env::split_paths(&std::env::var_os("PATH").unwrap()) {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            if hidden.iter().any(|h| name == *h) || dir.join(&name).exists() {
                continue;
            }
            let _ = std::os::unix::fs::symlink(e.path(), dir.join(&name));
        }
    }
    dir.to_owned()
}

/// Runs `scripts/demo` with this build of volley (no cargo build), tools and reports in `scratch`.
fn demo(scratch: &Path, path: &Path, tools: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new("bash")
        .arg(workspace().join("scripts/demo"))
        .args(args)
        .env("PATH", path)
        .env("VOLLEY_DEMO_BIN", VOLLEY.bin())
        .env("VOLLEY_DEMO_TOOLS", tools)
        .env("VOLLEY_DEMO_OUT", scratch.join("lab"))
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), said)
}

/// Appended to a copy of the report: measures every SVG text's box against its SVG's and the
/// window's, and writes what it found into the body's `data-check` attribute.
const CLIP_CHECK: &str = r#"<script>
addEventListener('load', () => {
  const bad = []; const vw = document.documentElement.clientWidth; let n = 0;
  for (const svg of document.querySelectorAll('svg')) {
    const b = svg.getBoundingClientRect();
    const texts = [...svg.querySelectorAll('text')];
    const bars = [...svg.querySelectorAll('rect')].filter(r => r.getAttribute('fill') !== 'none');
    for (const t of texts) {
      n++;
      const r = t.getBoundingClientRect();
      if (r.left < b.left - 0.5 || r.right > b.right + 0.5 || r.top < b.top - 0.5 ||
          r.bottom > b.bottom + 0.5 || r.right > vw)
        bad.push('outside: ' + t.textContent);
      for (const bar of bars) {
        const q = bar.getBoundingClientRect();
        if (r.left < q.right - 0.5 && q.left < r.right - 0.5 && r.top < q.bottom - 0.5 && q.top < r.bottom - 0.5)
          bad.push('over a bar: ' + t.textContent);
      }
    }
  }
  const wide = document.documentElement.scrollWidth > vw;
  document.body.setAttribute('data-check', JSON.stringify({texts: n, bad: bad, wide: wide}));
});
</script>"#;

/// The report at `width` px: what CLIP_CHECK found, and a screenshot's size in bytes.
fn render(report: &Path, width: u32) -> (Value, usize) {
    let html = std::fs::read_to_string(report).unwrap();
    let checked = report.with_file_name("checked.html");
    std::fs::write(
        &checked,
        html.replace("</body>", &format!("{CLIP_CHECK}</body>")),
    )
    .unwrap();
    let chromium = |extra: &[String], page: &Path| {
        let out = Command::new(tool("chromium"))
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--enable-logging=stderr",
                &format!("--window-size={width},2400"),
            ])
            .args(extra)
            .arg(format!("file://{}", page.display()))
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{log}");
        (String::from_utf8_lossy(&out.stdout).into_owned(), log)
    };
    let (dom, _) = chromium(&["--dump-dom".into()], &checked);
    let attr = dom
        .split("data-check=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or_else(|| panic!("the check did not run: {dom:.400}"));
    let found: Value = serde_json::from_str(&attr.replace("&quot;", "\"")).unwrap();
    // The report itself, unmodified: no console messages, and a screenshot with content (a
    // blank page compresses to a few kilobytes; charts do not).
    let shot = report.with_file_name(format!("shot-{width}.png"));
    let (_, log) = chromium(&[format!("--screenshot={}", shot.display())], report);
    assert!(
        !log.contains("CONSOLE") && !log.contains("Uncaught"),
        "console messages: {log}"
    );
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    (found, png.len())
}

#[test]
fn the_main_job_runs_with_only_rust_and_writes_readable_reports() {
    let scratch = std::env::temp_dir().join(format!("volley-demo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let path = path_without(
        &["go", "gofmt", "java", "javac", "mvn", "cargo", "rustc"],
        &scratch.join("path"),
    );
    assert!(
        !path.join("go").exists() && !path.join("java").exists(),
        "Go or Java still on PATH"
    );
    let (ok, said) = demo(&scratch, &path, &scratch.join("no-tools"), &["--quick"]);
    assert!(ok, "{said}");
    let skipped: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("grpcurl and ghz skipped"))
        .collect();
    assert_eq!(skipped.len(), 1, "{said}");
    assert!(!said.contains("== ghz "), "ghz ran: {said}");
    // The first call over Connect with curl, seed 000's command with volley bench, the drain.
    assert!(said.contains(r#"{"id":"228","email""#), "{said}");
    assert!(said.contains("Count:\t1000"), "{said}");
    assert!(said.contains("volley serve drained and exited 0"), "{said}");

    let out = scratch.join("lab");
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert!(
        results["machine"]["cores"].as_u64().unwrap() >= 1,
        "{results}"
    );
    let rows = results["rows"].as_array().unwrap();
    for scenario in ["users", "http-vs-grpc", "gateway", "greeter", "orders"] {
        assert!(
            rows.iter().any(|r| r["scenario"] == scenario),
            "{scenario} missing: {results}"
        );
    }
    for r in rows.iter().filter(|r| r["notRun"].is_null()) {
        assert!(r["ours"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["calls"].as_u64().unwrap() > 0, "{r}");
        assert_eq!(r["errors"], 0, "{r}");
        // A run of under a second is shown as the median of several: a single run is a long
        // one, and several carry their spread. (The median's own time may pass a second when
        // the first run did not: only the first decides.)
        let runs = r["runs"].as_u64().unwrap();
        if runs == 1 {
            assert!(r["elapsedS"].as_f64().unwrap() >= 1.0, "{r}");
        } else {
            assert!(r["spread"].is_array(), "{r}");
        }
    }
    // Seed 004's table, every row: 4 unary on one host, 6 server to server (measured, or not
    // run with the reason), the stream row, with the seed's figure; two TLS rows of ours.
    let orders: Vec<&Value> = rows.iter().filter(|r| r["scenario"] == "orders").collect();
    assert_eq!(orders.len(), 13, "{orders:#?}");
    assert_eq!(orders.iter().filter(|r| r["seed"].is_f64()).count(), 11);
    let s2s: Vec<&Value> = orders
        .iter()
        .filter(|r| r["case"].as_str().unwrap().contains("server to server"))
        .copied()
        .collect();
    assert_eq!(s2s.len(), 6, "{s2s:#?}");
    for r in s2s {
        let case = r["case"].as_str().unwrap();
        assert!(
            r["notRun"].is_string() || case.contains("two namespaces, 250 us each way by "),
            "{case}"
        );
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## gateway (seed 002"), "{md}");
    assert!(md.contains("stream/unary "), "the orders takeaway: {md}");
    assert!(md.contains("where the seed saw 0.44 x"), "{md}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<svg") && !html.contains("<script") && !html.contains("http://cdn"));
    assert!(html.contains("Machine: "), "no machine in the header");

    for width in [1000, 1400] {
        let (found, png) = render(&out.join("report.html"), width);
        assert!(found["texts"].as_u64().unwrap() > 100, "{found}");
        assert_eq!(
            found["bad"],
            serde_json::json!([]),
            "at {width} px: {found}"
        );
        assert_eq!(found["wide"], false, "wider than {width} px");
        assert!(
            png > 50_000,
            "the {width} px screenshot looks blank ({png} bytes)"
        );
    }
    let _ = std::fs::remove_dir_all(scratch);
}

#[test]
fn with_go_the_main_job_shows_grpcurl_and_ghz_beside_volley() {
    let scratch = std::env::temp_dir().join(format!("volley-demo-go-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    // The peers the test tools installed (from Go's module proxy, at the demo's versions).
    let tools = tool("ghz").parent().unwrap().to_owned();
    let path = PathBuf::from(std::env::var_os("PATH").unwrap());
    let (ok, said) = demo(&scratch, &path, &tools, &["--quick", "--only", "greeter"]);
    assert!(ok, "{said}");
    assert!(!said.contains("skipped"), "{said}");
    assert!(said.contains("api.Users"), "grpcurl list: {said}");
    // ghz's summary, then volley bench's in the same shape.
    assert!(said.contains("== ghz --insecure"), "{said}");
    assert_eq!(said.matches("  Count:\t1000\n").count(), 2, "{said}");
    let _ = std::fs::remove_dir_all(scratch);
}

#[test]
fn bad_input_fails_fast_in_one_line() {
    let err = one_line_error(&["lab", "--only", "bogus", "--out", "/tmp/volley-lab-unused"]);
    assert!(
        err.contains("unknown scenario \"bogus\": the scenarios are users, http-vs-grpc, gateway, greeter, orders"),
        "{err}"
    );

    let t = Instant::now();
    let err = one_line_error(&[
        "lab",
        "--target",
        "127.0.0.1:1",
        "--out",
        "/tmp/volley-lab-unused",
    ]);
    assert!(
        err.contains("--target 127.0.0.1:1: cannot connect: Connection refused"),
        "{err}"
    );
    assert!(t.elapsed() < Duration::from_secs(5));

    let t = Instant::now();
    let err = one_line_error(&["lab", "--out", "/proc/volley-lab"]);
    assert!(
        err.contains("--out /proc/volley-lab: cannot create the directory"),
        "{err}"
    );
    assert!(t.elapsed() < Duration::from_secs(2), "it ran load first");
}

#[test]
fn target_runs_the_proto_scenarios_against_another_server() {
    let p = VOLLEY.serve(&[]);
    let out = std::env::temp_dir().join(format!("volley-lab-target-{}", std::process::id()));
    let addr = p.addr().to_string();
    let run = Command::new(VOLLEY.bin())
        .args([
            "lab", "--quick", "--only", "greeter", "--only", "gateway", "--target", &addr,
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["target"], addr.as_str());
    let rows = results["rows"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["scenario"] == "greeter"), "{results}");
    assert!(rows[0]["ours"].as_f64().unwrap() > 0.0);
    assert_eq!(results["notRun"][0]["scenario"], "gateway");
    let _ = std::fs::remove_dir_all(out);
}
