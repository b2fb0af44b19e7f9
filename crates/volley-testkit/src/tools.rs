//! Where the third-party peers live: `VOLLEY_TOOLS_BIN`, the workspace's `.tools/bin`, or `PATH`.

use std::path::{Path, PathBuf};

/// The path of a peer tool. Panics with the fix when it is missing: a test that needs a peer must
/// not pass without it.
pub fn tool(name: &str) -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(d) = std::env::var_os("VOLLEY_TOOLS_BIN") {
        dirs.push(d.into());
    }
    dirs.push(workspace.join(".tools/bin"));
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs.iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("{name} not found in VOLLEY_TOOLS_BIN, .tools/bin or PATH: run scripts/install-test-tools")
        })
}
