//! The stub files watched: looked at every interval (GripMock's `STUB_WATCHER_INTERVAL`), read
//! again when one changed, and swapped in whole when they all check; when they do not, the stubs
//! in force stay and one warning line says why.

use std::{
    path::PathBuf,
    time::{Duration, SystemTime},
};

use crate::{
    load::{read_files, stub_files},
    stubs::Stubs,
};

/// What tells the stub files under `paths` changed: each file with its modification time and
/// size (a file added, removed, edited or touched changes it).
fn fingerprint(paths: &[PathBuf]) -> Vec<(PathBuf, Option<SystemTime>, u64)> {
    stub_files(paths)
        .unwrap_or_default()
        .into_iter()
        .map(|p| {
            let meta = std::fs::metadata(&p).ok();
            let modified = meta.as_ref().and_then(|m| m.modified().ok());
            (p, modified, meta.map_or(0, |m| m.len()))
        })
        .collect()
}

impl Stubs {
    /// Rereads the stub files every second when they change, keeping the stubs in force when
    /// the new ones do not check (and saying why, once per change).
    pub fn watch(&self) {
        self.watch_every(Duration::from_secs(1));
    }

    /// Rereads the stub files when they change, looking every `every`.
    pub fn watch_every(&self, every: Duration) {
        let paths = self.inner().paths.clone();
        let this = self.clone();
        // The first look is taken before this returns: a file changed right after it (before the
        // thread got to run) is a change, not the state to compare with.
        let mut seen = fingerprint(&paths);
        let _ = std::thread::Builder::new()
            .name("volley-stubs".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(every);
                    let now = fingerprint(&paths);
                    if now == seen {
                        continue;
                    }
                    seen = now;
                    let inner = this.inner();
                    let read = read_files(&inner.paths, &inner.pools, inner.options.strict)
                        .and_then(|f| {
                            crate::scenario::check_states(&f).map_err(crate::MockError::Stub)?;
                            Ok(f)
                        });
                    match read {
                        Ok(files) => {
                            tracing::info!("stubs reloaded: {} from files", files.len());
                            this.set_files(files);
                        }
                        Err(e) => tracing::warn!("stubs not reloaded, the old ones stay: {e}"),
                    }
                }
            });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use serde_json::json;

    use super::*;
    use crate::{
        stubs::Options,
        testkit::{pool, temp_dir},
    };

    /// A stub file's text: `n` stubs of Health/Check.
    fn stub_file(n: usize) -> String {
        let list: Vec<serde_json::Value> = (0..n)
            .map(|i| {
                json!({"service": "grpc.health.v1.Health", "method": "Check",
                       "input": {"equals": {"service": format!("s{i}")}},
                       "output": {"data": {"status": "SERVING"}}})
            })
            .collect();
        serde_json::to_string(&list).unwrap()
    }

    /// Writes `n` stubs to `file` until `s` holds them (five seconds at most); how many it holds.
    /// Each write is a byte longer: a watcher whose first look came after an earlier write
    /// still sees a change.
    fn write_until_len(s: &Stubs, file: &std::path::Path, n: usize) -> usize {
        let start = Instant::now();
        let mut pad = String::new();
        while s.len() != n && start.elapsed() < Duration::from_secs(5) {
            std::fs::write(file, stub_file(n) + &pad).unwrap();
            pad.push(' ');
            std::thread::sleep(Duration::from_millis(50));
        }
        s.len()
    }

    #[test]
    fn the_fingerprint_changes_when_a_stub_file_is_added_edited_or_removed() {
        let dir = temp_dir("watch-fp");
        let paths = [dir.clone()];
        std::fs::write(dir.join("a.json"), stub_file(1)).unwrap();
        let first = fingerprint(&paths);
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].2, stub_file(1).len() as u64);
        assert_eq!(fingerprint(&paths), first, "nothing changed");
        // Files that are not stub files do not count.
        std::fs::write(dir.join("notes.txt"), "x").unwrap();
        assert_eq!(fingerprint(&paths), first);
        std::fs::write(dir.join("a.json"), stub_file(2)).unwrap();
        let edited = fingerprint(&paths);
        assert_ne!(edited, first);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/b.yaml"), "[]").unwrap();
        let added = fingerprint(&paths);
        assert_eq!(added.len(), 2);
        std::fs::remove_file(dir.join("a.json")).unwrap();
        assert_eq!(fingerprint(&paths).len(), 1);
        // A folder gone: no files, not an error.
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(fingerprint(&paths).is_empty());
    }

    #[test]
    fn a_change_is_swapped_in_and_a_bad_one_keeps_the_stubs_in_force() {
        let dir = temp_dir("watch-reload");
        let file = dir.join("a.json");
        std::fs::write(&file, stub_file(1)).unwrap();
        let pool = pool();
        let s = Stubs::load_with(
            std::slice::from_ref(&dir),
            std::slice::from_ref(&pool),
            Options::gripmock(),
        )
        .unwrap();
        assert_eq!(s.len(), 1);
        s.watch_every(Duration::from_millis(10));
        assert_eq!(write_until_len(&s, &file, 2), 2);
        // A stub that does not check: the two in force stay.
        std::fs::write(
            &file,
            r#"[{"service": "grpc.health.v1.Health", "method": "Nope", "output": {}}]"#,
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(s.len(), 2);
        // The watcher lives on: the next good change is read.
        assert_eq!(write_until_len(&s, &file, 3), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
