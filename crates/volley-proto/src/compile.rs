//! Many `.proto` files compiled into one descriptor pool, as GripMock users give them: files and
//! the files under folders, imports found in `--imports` roots, the given files' folders, and
//! the well-known types.

use std::path::{Path, PathBuf};

use prost_reflect::DescriptorPool;
use protox::{
    Error,
    file::{ChainFileResolver, File, FileResolver, GoogleFileResolver},
};

/// Why files did not compile: `file:line:column` and protox's words, or the descriptors'.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CompileError(pub String);

/// A protox error as one line: `file:line:column: what` (its Display names the file and the
/// problem; its Debug, miette's, holds line and column).
pub(crate) fn describe(e: &protox::Error) -> String {
    let mut msg = e.to_string();
    if let Some(loc) = location(e) {
        msg = format!("{loc}: {msg}");
    }
    msg
}

fn compile_error(e: &protox::Error) -> CompileError {
    CompileError(describe(e))
}

/// `file:line:column` of a compile error, when protox knows it.
fn location(e: &protox::Error) -> Option<String> {
    use miette::Diagnostic;
    let file = e.file()?.to_owned();
    let span = e.labels()?.next()?;
    let src = e.source_code()?;
    let contents = src.read_span(span.inner(), 0, 0).ok()?;
    Some(format!(
        "{file}:{}:{}",
        contents.line() + 1,
        contents.column() + 1
    ))
}

/// Edition files lowered so far: (name, edition).
type Lowered = std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>>;

/// The files of one include root, read from disk; edition files lowered to proto2
/// (`editions`).
struct Root(PathBuf, Lowered);

impl FileResolver for Root {
    fn resolve_path(&self, path: &Path) -> Option<String> {
        let rel = path.strip_prefix(&self.0).ok()?;
        let mut name = String::new();
        for c in rel.components() {
            match c {
                std::path::Component::Normal(s) => {
                    if !name.is_empty() {
                        name.push('/');
                    }
                    name.push_str(s.to_str()?);
                }
                std::path::Component::CurDir => {}
                _ => return None,
            }
        }
        Some(name)
    }

    fn open_file(&self, name: &str) -> Result<File, Error> {
        let path = self.0.join(name);
        let lowered = std::fs::read_to_string(&path)
            .ok()
            .and_then(|src| crate::editions::lower(&src));
        match lowered {
            Some((lowered, edition)) => {
                if let Ok(mut seen) = self.1.lock() {
                    seen.push((name.to_owned(), edition));
                }
                File::from_source(name, &lowered)
            }
            None => File::open(name, &path),
        }
    }
}

/// googleapis' common protos (`google/api`, `google/rpc`, `google/type`, `google/longrunning`,
/// ...; see `googleapis/README.md`), by their import names: importable with no flag, as under
/// GripMock and buf.
pub const EMBEDDED: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/googleapis.rs"));

/// The embedded googleapis protos, searched after the include roots.
struct Embedded;

impl FileResolver for Embedded {
    fn open_file(&self, name: &str) -> Result<File, Error> {
        match EMBEDDED.iter().find(|(n, _)| *n == name) {
            Some((_, source)) => File::from_source(name, source),
            None => Err(Error::file_not_found(name)),
        }
    }
}

/// The include roots as protox reads them (paths as given), then the embedded googleapis
/// protos, then the well-known types.
pub(crate) fn resolver(includes: &[PathBuf]) -> ChainFileResolver {
    let mut chain = ChainFileResolver::new();
    let lowered = Lowered::default();
    for dir in includes {
        chain.add(Root(dir.clone(), lowered.clone()));
    }
    chain.add(Embedded);
    chain.add(GoogleFileResolver::new());
    chain
}

/// Files every pool gets, so stubs can name them with no import: the well-known types (for
/// `Any` payloads such as `google.protobuf.StringValue`) and `google.rpc`'s error details.
const COMMON: [&str; 10] = [
    "google/protobuf/any.proto",
    "google/protobuf/duration.proto",
    "google/protobuf/empty.proto",
    "google/protobuf/field_mask.proto",
    "google/protobuf/struct.proto",
    "google/protobuf/timestamp.proto",
    "google/protobuf/wrappers.proto",
    "google/rpc/code.proto",
    "google/rpc/error_details.proto",
    "google/rpc/status.proto",
];

/// Adds the well-known types and `google.rpc`'s status and error details to `pool` where it
/// lacks them.
pub fn add_common(pool: &mut DescriptorPool) -> Result<(), CompileError> {
    let mut chain = ChainFileResolver::new();
    chain.add(Embedded);
    chain.add(GoogleFileResolver::new());
    let mut compiler = protox::Compiler::with_file_resolver(chain);
    compiler.include_imports(true);
    compiler.open_files(COMMON).map_err(|e| compile_error(&e))?;
    let missing: Vec<_> = compiler
        .file_descriptor_set()
        .file
        .into_iter()
        .filter(|f| pool.get_file_by_name(f.name()).is_none())
        .collect();
    pool.add_file_descriptor_protos(missing)
        .map_err(|e| CompileError(format!("invalid descriptors: {e}")))?;
    Ok(())
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
    let mut chain = ChainFileResolver::new();
    let lowered = Lowered::default();
    for dir in includes {
        chain.add(Root(normal(dir), lowered.clone()));
    }
    chain.add(Embedded);
    chain.add(GoogleFileResolver::new());
    let mut compiler = protox::Compiler::with_file_resolver(chain);
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
            .map_err(|e| compile_error(&e))?;
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
    fn every_embedded_googleapis_file_compiles() {
        let mut chain = ChainFileResolver::new();
        chain.add(Embedded);
        chain.add(GoogleFileResolver::new());
        let mut compiler = protox::Compiler::with_file_resolver(chain);
        for (name, _) in EMBEDDED {
            compiler
                .open_file(name)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        let pool = compiler.descriptor_pool();
        for m in [
            "google.rpc.ErrorInfo",
            "google.type.Money",
            "google.api.HttpRule",
        ] {
            assert!(pool.get_message_by_name(m).is_some(), "{m}");
        }
        assert!(EMBEDDED.len() > 50);
    }

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
}
