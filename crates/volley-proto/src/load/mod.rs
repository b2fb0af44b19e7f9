//! One loader of schemas for bench, call and mock: `.proto` files compiled in-process (protox, no
//! protoc; edition files lowered to proto2 as they are read, `editions`), folders, descriptor
//! sets, and googleapis' common protos embedded, importable with no flag. Each tool names its
//! files as its peer does, and that is its dialect here; the reading underneath is one.
//!
//! - `resolve`: the import roots, the embedded googleapis, the well-known types, and the
//!   common files every pool gets ([`add_common`]);
//! - `protoset`: a descriptor set read and lowered ([`read_protoset`]);
//! - `ghz`: one `--proto` file with its folder and `.` as roots ([`compile_proto`]), or a
//!   `--protoset` ([`load_protoset`]);
//! - `grpcurl`: `-proto` names relative to `-import-path`, comments kept ([`compile_files`],
//!   [`resolve_filenames`]);
//! - `gripmock`: files, folders and descriptor sets into one pool and its services
//!   ([`load_sources`], [`compile_protos`]).

mod ghz;
mod gripmock;
mod grpcurl;
mod protoset;
mod resolve;

pub use ghz::{compile_proto, compile_proto_documented, documented_pool, load_protoset};
pub use gripmock::{Compiled, Loaded, SourcesError, compile_protos, load_sources};
pub use grpcurl::{compile_files, resolve_filenames};
pub use protoset::{Protoset, ProtosetError, read_protoset};
pub use resolve::{EMBEDDED, add_common};
pub(crate) use resolve::{Lowered, describe, resolver};

/// Why files did not compile: `file:line:column` and protox's words, or the descriptors'.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CompileError(pub String);
