//! Where `import` finds its modules: k6's built-in ones (`k6`, `k6/net/grpc`, `k6/http`,
//! `k6/metrics`, `k6/data`, `k6/execution`, `k6/encoding`) from the JavaScript beside this file, and the script's own local
//! files relative to the importing one. A remote import (`https://jslib.k6.io/...`) is refused
//! in one line naming it: a run reads nothing from the network but its target.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use rquickjs::{
    Ctx, Error, Module, Result,
    loader::{ImportAttributes, Loader, Resolver},
    module::Declared,
};

use crate::shared::Shared;

/// k6's modules volley has, by import name.
const BUILT_IN: [(&str, &str); 8] = [
    ("k6", include_str!("js/k6.js")),
    ("k6/net/grpc", include_str!("js/grpc.js")),
    ("k6/metrics", include_str!("js/metrics.js")),
    ("k6/data", include_str!("js/data.js")),
    ("k6/execution", include_str!("js/execution.js")),
    ("k6/http", include_str!("js/http.js")),
    ("k6/encoding", include_str!("js/encoding.js")),
    ("k6/timers", include_str!("js/timers.js")),
];

/// k6 modules volley does not have yet, named in the refusal.
const NOT_YET: [&str; 6] = [
    "k6/ws",
    "k6/crypto",
    "k6/html",
    "k6/browser",
    "k6/experimental/websockets",
    "k6/net/grpc/health",
];

/// Resolves and loads modules for one VU's runtime.
pub(crate) struct Modules {
    pub shared: Arc<Shared>,
}

impl Resolver for Modules {
    fn resolve<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> Result<String> {
        if BUILT_IN.iter().any(|(n, _)| *n == name) {
            return Ok(name.to_owned());
        }
        if name.starts_with("k6/") || name == "k6" {
            let why = if NOT_YET.contains(&name) {
                format!(
                    "unknown module: {name} (volley run does not have this k6 module yet; docs/scripts.md lists what it has)"
                )
            } else {
                format!("unknown module: {name}")
            };
            return Err(Error::new_resolving_message(base, name, why));
        }
        if name.starts_with("http://") || name.starts_with("https://") {
            return Err(Error::new_resolving_message(
                base,
                name,
                format!(
                    "remote module {name} refused: volley run imports local files only; save it beside the script and import it by path"
                ),
            ));
        }
        let path = name.strip_prefix("file://").unwrap_or(name);
        if !(path.starts_with("./") || path.starts_with("../") || path.starts_with('/')) {
            return Err(Error::new_resolving_message(
                base,
                name,
                format!(
                    "The moduleSpecifier \"{name}\" couldn't be found on local disk. Make sure that you've specified the right path to the file."
                ),
            ));
        }
        let from = Path::new(base)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| self.shared.dir.clone());
        Ok(normalize(&from.join(path)).to_string_lossy().into_owned())
    }
}

impl Loader for Modules {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> Result<Module<'js, Declared>> {
        if let Some((_, src)) = BUILT_IN.iter().find(|(n, _)| *n == name) {
            return Module::declare(ctx.clone(), name, *src);
        }
        let src = self
            .shared
            .source(Path::new(name))
            .map_err(|e| Error::new_loading_message(name, format!("cannot read {name}: {e}")))?;
        Module::declare(ctx.clone(), name, &*src)
    }
}

/// `a/./b/../c` as `a/c`, without touching the file system.
pub(crate) fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}
