//! Why the mock could not start or load its stubs ([`MockError`]): each message names the stub
//! file, flag, address or upstream at fault, in the words `volley mock` prints.

use std::{io, path::PathBuf};

/// Why `volley mock` (or a [`Stubs`](crate::Stubs) load, or the admin API) could not go on.
#[derive(Debug, thiserror::Error)]
pub enum MockError {
    /// A `--stub` folder that could not be read.
    #[error("cannot read --stub {}: {reason}", path.display())]
    StubFolder {
        /// The folder.
        path: PathBuf,
        /// Why.
        reason: io::Error,
    },
    /// A `--stub` path with nothing there.
    #[error("--stub {}: no such file or folder", .0.display())]
    NoStubPath(PathBuf),
    /// A stub file that could not be read.
    #[error("cannot read {}: {reason}", path.display())]
    StubFile {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: io::Error,
    },
    /// A stub that does not parse or fit its method: `file:line: stub #n: why`.
    #[error("{0}")]
    Stub(String),
    /// The given protos and descriptor sets define no service.
    #[error("{0} define no service to serve")]
    NoService(String),
    /// A `--proto` or `--protoset` that did not load.
    #[error(transparent)]
    Schema(#[from] volley_proto::SchemaError),
    /// The protos, folders or descriptor sets of `volley mock` that did not load.
    #[error(transparent)]
    Sources(#[from] volley_proto::load::SourcesError),
    /// An address that could not be listened on (`127.0.0.1:4770 (gRPC)`, `--admin-addr ...`).
    #[error("cannot listen on {at}: {reason}")]
    Listen {
        /// The address, and what it was for.
        at: String,
        /// Why.
        reason: io::Error,
    },
    /// The recording's folder or data file that could not be made.
    #[error("cannot write the recording to {}: {reason}", path.display())]
    Record {
        /// The stubs' folder.
        path: PathBuf,
        /// Why.
        reason: io::Error,
    },
    /// The server could not be built or serve.
    #[error(transparent)]
    Serve(#[from] volley_server::ServeError),
    /// Any other I/O failure (a listener's mode, the admin API's thread).
    #[error(transparent)]
    Io(#[from] io::Error),
}
