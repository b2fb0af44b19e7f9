//! What every VU of a run shares: the script's files and compiled schemas (read once, not once
//! per VU), `SharedArray` data, the metrics' definitions and totals, the logger, counts the
//! progress lines and `k6/execution` read, and the abort flag.

use std::{
    collections::{BTreeMap, HashMap},
    path::{Path, PathBuf},
    sync::{
        Arc, Mutex, OnceLock, RwLock,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Instant,
};

use prost_reflect::DescriptorPool;

use crate::{
    log::Logger,
    metrics::{Registry, Sink, SubDef},
    out::JsonOut,
    report::Reports,
};

/// The run's shared state.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The script, as an absolute path.
    pub script: PathBuf,
    /// Its folder: `open()` and `client.load()` read relative to it.
    pub dir: PathBuf,
    /// `__ENV`.
    pub env: BTreeMap<String, String>,
    pub log: Logger,
    pub registry: Registry,
    pub totals: Mutex<Sink>,
    /// Sub-metrics the thresholds name, known once `options` are read.
    pub subs: RwLock<Arc<Vec<SubDef>>>,
    sources: Mutex<HashMap<PathBuf, Arc<str>>>,
    schemas: Mutex<HashMap<String, Arc<DescriptorPool>>>,
    shared_arrays: Mutex<HashMap<String, Arc<str>>>,
    /// Where PEM texts given to `connect({tls})` are written for the TLS loader.
    pub tls_dir: OnceLock<PathBuf>,
    pub started: Instant,
    /// `options` as the script exported them, for `exec.test.options`.
    pub options_json: OnceLock<String>,
    /// The setup() result as JSON, for each VU's iterations.
    pub setup_data: OnceLock<Option<String>>,
    pub completed: AtomicU64,
    pub interrupted: AtomicU64,
    pub vus_active: AtomicU64,
    pub vus_max: AtomicU64,
    /// `exec.test.abort()` or a threshold with `abortOnFail`: why, once.
    pub aborted: OnceLock<String>,
    pub abort_flag: AtomicBool,
    /// `--insecure-skip-tls-verify`.
    pub insecure_tls: AtomicBool,
    /// `--out json=FILE`, once the thresholds are known.
    pub out: OnceLock<JsonOut>,
    /// `--report FORMAT=FILE`.
    pub reports: OnceLock<Reports>,
}

impl Shared {
    pub(crate) fn new(script: PathBuf, env: BTreeMap<String, String>, log: Logger) -> Shared {
        let dir = script.parent().map(Path::to_path_buf).unwrap_or_default();
        Shared {
            script,
            dir,
            env,
            log,
            registry: Registry::new(),
            totals: Mutex::new(Sink::default()),
            subs: RwLock::new(Arc::new(Vec::new())),
            sources: Mutex::new(HashMap::new()),
            schemas: Mutex::new(HashMap::new()),
            shared_arrays: Mutex::new(HashMap::new()),
            tls_dir: OnceLock::new(),
            started: Instant::now(),
            options_json: OnceLock::new(),
            setup_data: OnceLock::new(),
            completed: AtomicU64::new(0),
            interrupted: AtomicU64::new(0),
            vus_active: AtomicU64::new(0),
            vus_max: AtomicU64::new(0),
            aborted: OnceLock::new(),
            abort_flag: AtomicBool::new(false),
            out: OnceLock::new(),
            reports: OnceLock::new(),
            insecure_tls: AtomicBool::new(false),
        }
    }

    /// A module's source, read once.
    pub(crate) fn source(&self, path: &Path) -> std::io::Result<Arc<str>> {
        if let Some(s) = self
            .sources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(path)
        {
            return Ok(s.clone());
        }
        let text: Arc<str> = std::fs::read_to_string(path)?.into();
        self.sources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(path.to_owned(), text.clone());
        Ok(text)
    }

    /// A compiled schema by its key, made by `make` the first time.
    pub(crate) fn schema(
        &self,
        key: &str,
        make: impl FnOnce() -> Result<DescriptorPool, String>,
    ) -> Result<Arc<DescriptorPool>, String> {
        let mut all = self.schemas.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = all.get(key) {
            return Ok(p.clone());
        }
        let pool = Arc::new(make()?);
        all.insert(key.to_owned(), pool.clone());
        Ok(pool)
    }

    pub(crate) fn shared_array(&self, name: &str) -> Option<Arc<str>> {
        self.shared_arrays
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
    }

    /// Keeps the first text given for `name` and returns the one kept.
    pub(crate) fn put_shared_array(&self, name: &str, text: String) -> Arc<str> {
        self.shared_arrays
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(name.to_owned())
            .or_insert_with(|| text.into())
            .clone()
    }

    /// Stops the run: no iteration starts after this.
    pub(crate) fn abort(&self, why: String) {
        let _ = self.aborted.set(why);
        self.abort_flag.store(true, Ordering::SeqCst);
    }

    pub(crate) fn is_aborted(&self) -> bool {
        self.abort_flag.load(Ordering::Relaxed)
    }

    /// Adds a VU's sink into the totals.
    pub(crate) fn merge(&self, sink: &mut Sink) {
        self.totals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take_from(sink);
    }

    pub(crate) fn elapsed_secs(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}
