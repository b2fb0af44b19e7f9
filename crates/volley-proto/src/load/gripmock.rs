//! GripMock's protos: `.proto` files, folders (every `.proto` below, the folder an import root
//! too) and `.pb`/`.protoset` descriptor sets (one in a folder is skipped when a `.proto` of the
//! same name sits beside it), compiled into one pool with the services of the files given.

use std::path::{Path, PathBuf};

use prost_reflect::{DescriptorPool, ServiceDescriptor};

use super::{CompileError, Lowered, ProtosetError, add_common, describe, read_protoset, resolver};

/// Why GripMock's sources did not load.
#[derive(Debug, thiserror::Error)]
pub enum SourcesError {
    /// A source is neither a file nor a folder.
    #[error("{}: no such file or folder", .0.display())]
    Missing(PathBuf),
    /// A folder could not be listed.
    #[error("cannot read {}: {reason}", path.display())]
    Folder {
        /// The folder.
        path: PathBuf,
        /// Why.
        reason: std::io::Error,
    },
    /// The `.proto` files did not compile.
    #[error(transparent)]
    Compile(#[from] CompileError),
    /// A descriptor set could not be read.
    #[error(transparent)]
    Protoset(#[from] ProtosetError),
    /// A descriptor set's files did not link with the rest.
    #[error("{}: invalid descriptors: {reason}", path.display())]
    Descriptors {
        /// The descriptor set.
        path: PathBuf,
        /// prost-reflect's reason.
        reason: prost_reflect::DescriptorError,
    },
}

/// The services to serve and the pool they live in.
#[derive(Debug)]
pub struct Loaded {
    /// Every descriptor: the given files, their imports, the descriptor sets.
    pub pool: DescriptorPool,
    /// The services of the given files and descriptor sets, in the order found.
    pub services: Vec<ServiceDescriptor>,
    /// Edition files, served as proto2 (`editions`): (name, edition).
    pub lowered: Vec<(String, String)>,
}

fn is_set(p: &Path) -> bool {
    matches!(
        p.extension().and_then(|e| e.to_str()),
        Some("pb" | "protoset")
    )
}

/// Every `.proto` and descriptor set below `dir`, sorted.
fn walk(
    dir: &Path,
    protos: &mut Vec<PathBuf>,
    sets: &mut Vec<PathBuf>,
) -> Result<(), SourcesError> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|reason| SourcesError::Folder {
            path: dir.to_owned(),
            reason,
        })?
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

/// Compiles the `sources` (files, folders and descriptor sets) with `imports` as the first
/// import roots.
pub fn load_sources(sources: &[PathBuf], imports: &[PathBuf]) -> Result<Loaded, SourcesError> {
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
            return Err(SourcesError::Missing(s.clone()));
        }
    }
    roots.push(PathBuf::from("."));
    let (mut names, mut lowered) = (Vec::new(), Vec::new());
    let mut pool = if protos.is_empty() {
        DescriptorPool::new()
    } else {
        let c = compile_protos(&protos, &roots)?;
        names = c.given;
        lowered = c.lowered;
        c.pool
    };
    for path in &sets {
        let read = read_protoset(path)?;
        lowered.extend(
            read.lowered
                .into_iter()
                .map(|name| (name, "editions".to_owned())),
        );
        let fresh: Vec<_> = read
            .set
            .file
            .into_iter()
            .filter(|f| pool.get_file_by_name(f.name()).is_none())
            .collect();
        names.extend(fresh.iter().map(|f| f.name().to_owned()));
        pool.add_file_descriptor_protos(fresh)
            .map_err(|reason| SourcesError::Descriptors {
                path: path.clone(),
                reason,
            })?;
    }
    let mut services = Vec::new();
    for name in &names {
        if let Some(file) = pool.get_file_by_name(name) {
            services.extend(file.services());
        }
    }
    if !sets.is_empty() {
        add_common(&mut pool)?;
    }
    Ok(Loaded {
        pool,
        services,
        lowered,
    })
}

/// The compiled pool and the names of the files given (not those only imported).
#[derive(Debug)]
pub struct Compiled {
    /// Every file, imports included.
    pub pool: DescriptorPool,
    /// The files named in `files`, by their names relative to their root.
    pub given: Vec<String>,
    /// The edition files among them and their imports, served as proto2 (`editions`):
    /// (name, edition).
    pub lowered: Vec<(String, String)>,
}

/// Compiles `files` (each under one of `includes`, which are searched in order for imports
/// too), then the well-known types. A failure names `file:line:column`.
pub fn compile_protos(files: &[PathBuf], includes: &[PathBuf]) -> Result<Compiled, CompileError> {
    let lowered = Lowered::default();
    let roots: Vec<PathBuf> = includes.iter().map(|d| normal(d)).collect();
    let mut compiler = protox::Compiler::with_file_resolver(resolver(&roots, &lowered));
    compiler.include_imports(true);
    for f in files {
        if !f.is_file() {
            return Err(CompileError(format!(
                "cannot read {}: no such file",
                f.display()
            )));
        }
        compiler
            .open_file(normal(f))
            .map_err(|e| CompileError(describe(&e)))?;
    }
    let given = compiler
        .files()
        .filter(|f| !f.is_import())
        .map(|f| f.name().to_owned())
        .collect();
    let mut pool = compiler.descriptor_pool();
    add_common(&mut pool)?;
    let lowered = lowered.lock().map(|l| l.clone()).unwrap_or_default();
    Ok(Compiled {
        pool,
        given,
        lowered,
    })
}

/// `path` without `./` parts, absolute when it can be (so roots and files compare).
fn normal(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edition_2023_and_2024_files_compile_as_proto2() {
        let dir = std::env::temp_dir().join(format!("volley-editions-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("greeter.proto"),
            "edition = \"2023\";\npackage helloworld;\nimport \"google/protobuf/timestamp.proto\";\n\
             option features.field_presence = IMPLICIT;\n\
             message HelloRequest { string name = 1; google.protobuf.Timestamp at = 2; }\n\
             message HelloReply { string message = 1 [features.field_presence = EXPLICIT]; }\n\
             service Greeter { rpc SayHello(HelloRequest) returns (HelloReply); }\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("faker.proto"),
            "edition = \"2024\";\npackage example;\nimport \"greeter.proto\";\n\
             export message Profile { string name = 1; int32 age = 2; reserved legacy; }\n\
             local enum Tier { TIER_UNKNOWN = 0; TIER_GOLD = 1; }\n\
             service Faker { rpc Get(helloworld.HelloRequest) returns (Profile); }\n",
        )
        .unwrap();
        let c = compile_protos(&[dir.join("faker.proto")], std::slice::from_ref(&dir)).unwrap();
        let mut lowered: Vec<&str> = c
            .lowered
            .iter()
            .map(|(n, e)| if e == "2023" { n.as_str() } else { "2024" })
            .collect();
        lowered.sort();
        assert_eq!(lowered, ["2024", "greeter.proto"]);
        let m = c.pool.get_message_by_name("example.Profile").unwrap();
        assert!(m.get_field_by_name("age").is_some());
        let req = c
            .pool
            .get_message_by_name("helloworld.HelloRequest")
            .unwrap();
        assert!(req.get_field_by_name("name").unwrap().supports_presence());
        assert!(c.pool.get_service_by_name("helloworld.Greeter").is_some());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn files_from_two_roots_share_one_pool() {
        let dir = std::env::temp_dir().join(format!("volley-compile-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("a/x")).unwrap();
        std::fs::create_dir_all(dir.join("b")).unwrap();
        std::fs::write(
            dir.join("a/x/m.proto"),
            "syntax = \"proto3\";\npackage x;\nimport \"google/protobuf/timestamp.proto\";\n\
             message M { google.protobuf.Timestamp at = 1; }\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("b/s.proto"),
            "syntax = \"proto3\";\npackage s;\nimport \"x/m.proto\";\n\
             service S { rpc Get(x.M) returns (x.M); }\n",
        )
        .unwrap();
        let c = compile_protos(&[dir.join("b/s.proto")], &[dir.join("b"), dir.join("a")]).unwrap();
        assert_eq!(c.given, ["s.proto"]);
        assert!(c.pool.get_service_by_name("s.S").is_some());
        let e = compile_protos(&[dir.join("b/none.proto")], &[dir.join("b")]).unwrap_err();
        assert!(e.to_string().contains("no such file"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_folder_gives_every_proto_below_and_sets_without_a_twin() {
        let dir = std::env::temp_dir().join(format!("volley-sources-{}", std::process::id()));
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
        let loaded = load_sources(&[dir.join("p")], &[]).unwrap();
        let mut names: Vec<&str> = loaded.services.iter().map(|s| s.full_name()).collect();
        names.sort();
        assert_eq!(names, ["a.A", "b.Bs"]);
        let e = load_sources(&[dir.join("none")], &[]).unwrap_err();
        assert!(
            e.to_string().ends_with("none: no such file or folder"),
            "{e}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
