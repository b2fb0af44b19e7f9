//! [`Builder`]: which sides to generate and where, then compile: protox -> descriptor set ->
//! prost's messages + our services, and the descriptor set written beside them for the server.

use std::path::{Path, PathBuf};

use prost::Message;
use prost_build::{Service, ServiceGenerator};

/// Why generation failed; its `Debug` is its message, so `build.rs`'s `.unwrap()` prints one
/// readable line (`proto/x.proto:3:9: expected ';'`).
pub struct Error(String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// The file a `compile` call's descriptors go to, beside the generated code (which includes
/// it): named after the files compiled, so that two calls in one build script (tonic's examples
/// compile one proto per call) do not overwrite each other's.
fn descriptor_file(protos: &[PathBuf]) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    protos.hash(&mut h);
    format!("volley_file_descriptor_set_{:016x}.bin", h.finish())
}

/// Generates servers and clients (both by default) into `OUT_DIR`, like tonic-build's builder.
#[must_use]
#[derive(Debug, Clone)]
pub struct Builder {
    server: bool,
    client: bool,
    out_dir: Option<PathBuf>,
    type_attributes: Vec<(String, String)>,
    field_attributes: Vec<(String, String)>,
    extern_paths: Vec<(String, String)>,
    descriptor_set_path: Option<PathBuf>,
}

/// A [`Builder`] with the defaults: server and client, into `OUT_DIR`.
pub fn configure() -> Builder {
    Builder {
        server: true,
        client: true,
        out_dir: None,
        type_attributes: Vec::new(),
        field_attributes: Vec::new(),
        extern_paths: Vec::new(),
        descriptor_set_path: None,
    }
}

/// Compiles `protos` (found under `includes`) and generates messages, servers and clients into
/// `OUT_DIR`; include them with `include!(concat!(env!("OUT_DIR"), "/<package>.rs"))`.
pub fn compile_protos(
    protos: &[impl AsRef<Path>],
    includes: &[impl AsRef<Path>],
) -> Result<(), Error> {
    configure().compile(protos, includes)
}

impl Builder {
    /// Generate `<service>_server` modules (default on).
    pub fn build_server(mut self, on: bool) -> Self {
        self.server = on;
        self
    }

    /// Generate `<service>_client` modules (default on).
    pub fn build_client(mut self, on: bool) -> Self {
        self.client = on;
        self
    }

    /// Write the generated files here instead of `OUT_DIR`.
    pub fn out_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// An attribute on the message or enum types matching `path` (prost-build's rules, `"."`
    /// for all), such as `#[derive(serde::Serialize)]`.
    pub fn type_attribute(mut self, path: impl Into<String>, attribute: impl Into<String>) -> Self {
        self.type_attributes.push((path.into(), attribute.into()));
        self
    }

    /// An attribute on the fields matching `path`.
    pub fn field_attribute(
        mut self,
        path: impl Into<String>,
        attribute: impl Into<String>,
    ) -> Self {
        self.field_attributes.push((path.into(), attribute.into()));
        self
    }

    /// Use an existing Rust type for a protobuf package or type instead of generating it.
    pub fn extern_path(
        mut self,
        proto_path: impl Into<String>,
        rust_path: impl Into<String>,
    ) -> Self {
        self.extern_paths
            .push((proto_path.into(), rust_path.into()));
        self
    }

    /// Also writes the compiled files' `FileDescriptorSet` here (tonic-build's
    /// `file_descriptor_set_path`; the generated `FILE_DESCRIPTOR_SET` holds it either way).
    pub fn file_descriptor_set_path(mut self, path: impl AsRef<Path>) -> Self {
        self.descriptor_set_path = Some(path.as_ref().to_path_buf());
        self
    }

    /// [`compile`](Self::compile), under the name tonic-build gives it.
    pub fn compile_protos(
        self,
        protos: &[impl AsRef<Path>],
        includes: &[impl AsRef<Path>],
    ) -> Result<(), Error> {
        self.compile(protos, includes)
    }

    /// Compiles `protos` (paths on disk, each under one of `includes`) and writes the code.
    /// Tells cargo to rerun the build script when any of them changes.
    pub fn compile(
        self,
        protos: &[impl AsRef<Path>],
        includes: &[impl AsRef<Path>],
    ) -> Result<(), Error> {
        let protos: Vec<PathBuf> = protos.iter().map(|p| p.as_ref().to_path_buf()).collect();
        let includes: Vec<PathBuf> = includes.iter().map(|p| p.as_ref().to_path_buf()).collect();
        for p in &protos {
            println!("cargo:rerun-if-changed={}", p.display());
        }
        let fds = volley_proto::load::compile_files(&protos, &includes)
            .map_err(|e| Error(e.to_string()))?;
        let names: Vec<String> = fds.file.iter().map(|f| f.name().to_owned()).collect();
        let clashes = crate::names::collisions(&fds, &names);
        if !clashes.is_empty() {
            return Err(Error(format!(
                "generated names collide: {}",
                clashes.join("; ")
            )));
        }
        let out_dir = match self.out_dir {
            Some(d) => d,
            None => PathBuf::from(std::env::var_os("OUT_DIR").ok_or_else(|| {
                Error("OUT_DIR is not set: run from a build script, or set out_dir".into())
            })?),
        };
        let mut runtime = fds.clone();
        for f in &mut runtime.file {
            f.source_code_info = None;
        }
        let descriptor_file = descriptor_file(&protos);
        let mut targets = vec![out_dir.join(&descriptor_file)];
        targets.extend(self.descriptor_set_path.clone());
        for path in targets {
            std::fs::write(&path, runtime.encode_to_vec())
                .map_err(|e| Error(format!("cannot write {}: {e}", path.display())))?;
        }

        let mut config = prost_build::Config::new();
        config.out_dir(&out_dir);
        for (path, attr) in &self.type_attributes {
            config.type_attribute(path, attr);
        }
        for (path, attr) in &self.field_attributes {
            config.field_attribute(path, attr);
        }
        for (proto, rust) in &self.extern_paths {
            config.extern_path(proto, rust);
        }
        config.service_generator(Box::new(Generator {
            server: self.server,
            client: self.client,
            descriptor_file,
        }));
        config
            .compile_fds(fds)
            .map_err(|e| Error(format!("generating code failed: {e}")))
    }
}

/// prost-build's hook: called per service, then once per package that has services.
struct Generator {
    server: bool,
    client: bool,
    descriptor_file: String,
}

impl ServiceGenerator for Generator {
    fn generate(&mut self, service: Service, buf: &mut String) {
        if self.server {
            crate::server::generate(&service, buf);
        }
        if self.client {
            crate::client::generate(&service, buf);
        }
    }

    fn finalize_package(&mut self, package: &str, buf: &mut String) {
        buf.push_str(&format!(
            "/// The encoded `FileDescriptorSet` of the compiled files (and their imports): \
             the descriptors `{package}`'s generated servers register for reflection, \
             Connect/JSON and REST.\n\
             pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(\"{}\");\n",
            self.descriptor_file
        ));
    }
}
