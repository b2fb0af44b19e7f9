//! Where a plan's schema and request data come from.

use std::path::PathBuf;

/// Where the schema comes from.
#[derive(Debug, Clone)]
pub enum SchemaSource {
    /// `--proto` and its import paths.
    Proto(PathBuf, Vec<PathBuf>),
    /// `--protoset`.
    Protoset(PathBuf),
    /// Server reflection.
    Reflection,
}

/// Request data as given.
#[derive(Debug, Clone, PartialEq)]
pub enum DataSource {
    /// No data: one empty message.
    Empty,
    /// JSON text (maybe templated).
    Json(String),
    /// Serialized protobuf.
    Binary(Vec<u8>),
    /// An NDJSON file, one message per line, streamed from disk, in this order.
    Lines(PathBuf, LineOrder),
}

/// Which line of an NDJSON data file a call takes (`--data-order`, a mix entry's `data-order`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LineOrder {
    /// Call `k` takes line `k mod n`.
    #[default]
    RoundRobin,
    /// Call `k` takes a line picked by a hash of `k` (the same in every rerun and shard).
    Random,
}

impl LineOrder {
    /// Parses `round-robin` or `random`.
    pub fn parse(s: &str) -> Result<LineOrder, String> {
        match s {
            "round-robin" => Ok(LineOrder::RoundRobin),
            "random" => Ok(LineOrder::Random),
            _ => Err(format!("{s:?}: expected round-robin or random")),
        }
    }
}
