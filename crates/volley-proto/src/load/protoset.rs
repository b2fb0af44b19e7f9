//! A descriptor set read from a file (`protoc --descriptor_set_out`, `buf build -o`), edition
//! files in it lowered to proto2 as `.proto` files are (`editions`): every tool's `--protoset`.

use std::path::{Path, PathBuf};

use prost::Message as _;
use prost_types::FileDescriptorSet;

/// A descriptor set that could not be had: the file, and whether reading or decoding failed (each
/// tool words them as its peer does).
#[derive(Debug, thiserror::Error)]
pub enum ProtosetError {
    /// The file could not be read.
    #[error("cannot read {}: {reason}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: std::io::Error,
    },
    /// The bytes are not a `FileDescriptorSet`.
    #[error("{}: not a FileDescriptorSet: {reason}", path.display())]
    Decode {
        /// The file.
        path: PathBuf,
        /// prost's reason.
        reason: prost::DecodeError,
    },
}

/// A descriptor set as read: its files, edition ones lowered, and the names of those lowered.
#[derive(Debug)]
pub struct Protoset {
    /// The set's files, in its order.
    pub set: FileDescriptorSet,
    /// The files that were edition files.
    pub lowered: Vec<String>,
}

/// Reads and decodes the descriptor set at `path`, lowering its edition files.
pub fn read_protoset(path: &Path) -> Result<Protoset, ProtosetError> {
    let bytes = std::fs::read(path).map_err(|reason| ProtosetError::Read {
        path: path.to_owned(),
        reason,
    })?;
    let mut set =
        FileDescriptorSet::decode(&bytes[..]).map_err(|reason| ProtosetError::Decode {
            path: path.to_owned(),
            reason,
        })?;
    let mut lowered = Vec::new();
    for f in &mut set.file {
        if crate::editions::lower_descriptor(f) {
            lowered.push(f.name().to_owned());
        }
    }
    Ok(Protoset { set, lowered })
}

#[cfg(test)]
mod tests {
    use prost::Message as _;
    use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto};

    use super::*;

    /// A descriptor set holding one edition 2023 file, as `protoc --descriptor_set_out` or
    /// `buf build` writes it (prost-types has no `edition` field: `syntax` marks it, as the
    /// lowering reads it).
    fn edition_set() -> Vec<u8> {
        let file = FileDescriptorProto {
            name: Some("e.proto".into()),
            package: Some("e".into()),
            syntax: Some("editions".into()),
            message_type: vec![DescriptorProto {
                name: Some("M".into()),
                field: vec![FieldDescriptorProto {
                    name: Some("name".into()),
                    number: Some(1),
                    label: Some(1),
                    r#type: Some(9),
                    json_name: Some("name".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        FileDescriptorSet { file: vec![file] }.encode_to_vec()
    }

    #[test]
    fn an_edition_set_is_lowered_and_links() {
        let path =
            std::env::temp_dir().join(format!("volley-edition-set-{}.pb", std::process::id()));
        std::fs::write(&path, edition_set()).unwrap();
        let read = read_protoset(&path).unwrap();
        assert_eq!(read.lowered, ["e.proto"]);
        let pool = prost_reflect::DescriptorPool::from_file_descriptor_set(read.set).unwrap();
        assert!(pool.get_message_by_name("e.M").is_some());
        std::fs::write(&path, b"\xff not a set").unwrap();
        let e = read_protoset(&path).unwrap_err();
        assert!(e.to_string().contains("not a FileDescriptorSet"), "{e}");
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(
            read_protoset(&path),
            Err(ProtosetError::Read { .. })
        ));
    }
}
