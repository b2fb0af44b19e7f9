//! The stub files watched: looked at every interval (GripMock's `STUB_WATCHER_INTERVAL`), read
//! again when one changed, and swapped in whole when they all check; when they do not, the stubs
//! in force stay and one warning line says why.

use std::{path::PathBuf, time::Duration};

use crate::{
    load::{read_files, stub_files},
    stubs::Stubs,
};

impl Stubs {
    /// Rereads the stub files every second when they change, keeping the stubs in force when
    /// the new ones do not check (and saying why, once per change).
    pub fn watch(&self) {
        self.watch_every(Duration::from_secs(1));
    }

    /// Rereads the stub files when they change, looking every `every`.
    pub fn watch_every(&self, every: Duration) {
        let paths = self.inner().paths.clone();
        let fingerprint = move || -> Vec<(PathBuf, Option<std::time::SystemTime>, u64)> {
            stub_files(&paths)
                .unwrap_or_default()
                .into_iter()
                .map(|p| {
                    let meta = std::fs::metadata(&p).ok();
                    let modified = meta.as_ref().and_then(|m| m.modified().ok());
                    (p, modified, meta.map_or(0, |m| m.len()))
                })
                .collect()
        };
        let this = self.clone();
        let _ = std::thread::Builder::new()
            .name("volley-stubs".into())
            .spawn(move || {
                let mut seen = fingerprint();
                loop {
                    std::thread::sleep(every);
                    let now = fingerprint();
                    if now == seen {
                        continue;
                    }
                    seen = now;
                    let inner = this.inner();
                    match read_files(&inner.paths, &inner.pools, inner.options.strict) {
                        Ok(files) => {
                            tracing::info!("stubs reloaded: {} from files", files.len());
                            this.set_files(files);
                        }
                        Err(e) => tracing::warn!("stubs not reloaded, the old ones stay: {e:#}"),
                    }
                }
            });
    }
}
