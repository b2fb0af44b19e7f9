//! The protos a mock serves, as GripMock takes them: `.proto` files, folders (every `.proto`
//! below, the folder an import root too), and `.pb`/`.protoset` descriptor sets (one in a folder
//! is skipped when a `.proto` of the same name sits beside it), compiled into one pool.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use prost::Message;
use prost_reflect::{DescriptorPool, ServiceDescriptor};
use prost_types::FileDescriptorSet;

/// The services to serve and the pool they live in.
pub struct Loaded {
    /// Every descriptor: the given files, their imports, the descriptor sets.
    pub pool: DescriptorPool,
    /// The services of the given files and descriptor sets, in the order found.
    pub services: Vec<ServiceDescriptor>,
    /// Edition files, served as proto2 (`volley_proto::editions`): (name, edition).
    pub lowered: Vec<(String, String)>,
}

fn is_set(p: &Path) -> bool {
    matches!(
        p.extension().and_then(|e| e.to_str()),
        Some("pb" | "protoset")
    )
}

/// Every `.proto` and descriptor set below `dir`, sorted.
fn walk(dir: &Path, protos: &mut Vec<PathBuf>, sets: &mut Vec<PathBuf>) -> Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, protos, sets)?;
        } else if p.extension().is_some_and(|e| e == "proto") {
            protos.push(p);
        } else if is_set(&p) && !p.with_extension("proto").is_file() {
            sets.push(p);
        }
    }
    Ok(())
}

/// Compiles the `sources` (files and folders) with `imports` as the first import roots.
pub fn load(sources: &[PathBuf], imports: &[PathBuf]) -> Result<Loaded> {
    let (mut protos, mut sets, mut roots) = (Vec::new(), Vec::new(), imports.to_vec());
    for s in sources {
        if s.is_dir() {
            roots.push(s.clone());
            walk(s, &mut protos, &mut sets)?;
        } else if is_set(s) {
            sets.push(s.clone());
        } else if s.is_file() {
            if let Some(dir) = s.parent() {
                roots.push(if dir.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    dir.to_path_buf()
                });
            }
            protos.push(s.clone());
        } else {
            bail!("{}: no such file or folder", s.display());
        }
    }
    roots.push(PathBuf::from("."));
    let (mut names, mut lowered) = (Vec::new(), Vec::new());
    let mut pool = if protos.is_empty() {
        DescriptorPool::new()
    } else {
        let c = volley_proto::compile::compile_protos(&protos, &roots)?;
        names = c.given;
        lowered = c.lowered;
        c.pool
    };
    for set in &sets {
        let bytes = std::fs::read(set).with_context(|| format!("cannot read {}", set.display()))?;
        let fds = FileDescriptorSet::decode(&bytes[..])
            .map_err(|e| anyhow::anyhow!("{}: not a FileDescriptorSet: {e}", set.display()))?;
        let mut fresh: Vec<_> = fds
            .file
            .into_iter()
            .filter(|f| pool.get_file_by_name(f.name()).is_none())
            .collect();
        for f in &mut fresh {
            if volley_proto::editions::lower_descriptor(f) {
                lowered.push((f.name().to_owned(), "editions".to_owned()));
            }
        }
        names.extend(fresh.iter().map(|f| f.name().to_owned()));
        pool.add_file_descriptor_protos(fresh)
            .with_context(|| format!("{}: invalid descriptors", set.display()))?;
    }
    let mut services = Vec::new();
    for name in &names {
        if let Some(file) = pool.get_file_by_name(name) {
            services.extend(file.services());
        }
    }
    if !sets.is_empty() {
        volley_proto::compile::add_common(&mut pool)?;
    }
    Ok(Loaded {
        pool,
        services,
        lowered,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_gives_every_proto_below_and_sets_without_a_twin() {
        let dir = crate::testkit::temp_dir("src");
        std::fs::create_dir_all(dir.join("p/q")).unwrap();
        std::fs::write(
            dir.join("p/a.proto"),
            "syntax = \"proto3\";\npackage a;\nimport \"q/b.proto\";\n\
             service A { rpc Get(b.B) returns (b.B); }\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("p/q/b.proto"),
            "syntax = \"proto3\";\npackage b;\nmessage B {}\nservice Bs { rpc X(B) returns (B); }\n",
        )
        .unwrap();
        // A descriptor set beside its .proto is skipped (it would be a duplicate).
        std::fs::write(dir.join("p/q/b.pb"), b"not read").unwrap();
        let loaded = load(&[dir.join("p")], &[]).unwrap();
        let mut names: Vec<&str> = loaded.services.iter().map(|s| s.full_name()).collect();
        names.sort();
        assert_eq!(names, ["a.A", "b.Bs"]);
        assert!(load(&[dir.join("none")], &[]).is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
