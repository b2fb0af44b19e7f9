//! Names the commit `volley --version` reports: `git rev-parse` at build time, or "unknown" when
//! the source is not a git checkout (a crate tarball) or git is missing.

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=VOLLEY_COMMIT={commit}");
    // A new commit moves HEAD or the branch it points at. Only paths that exist are named: cargo
    // reruns a build script on every build while a named path is missing.
    println!("cargo:rerun-if-changed=build.rs");
    for path in [
        "../../.git/HEAD",
        "../../.git/refs/heads",
        "../../.git/packed-refs",
    ] {
        if std::path::Path::new(path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
