//! The data section: which request data (`-d`, `-D`, `-b`, `-B`: one of them) and metadata
//! (`-m`, `-M`) the run sends, the streaming knobs and templating switches. Only the rules; the
//! standard input and files they name are read by `input`, once every rule holds.

use std::path::PathBuf;

use crate::plan::{LineOrder, PlanError, flags::Flags, mix, options::StreamOptions};

/// Where the request data is to come from.
pub(super) enum DataFrom {
    /// No data: one empty message.
    Empty,
    /// JSON given on the command line.
    Json(String),
    /// `-d @`: JSON from standard input.
    JsonStdin,
    /// `-D FILE`: a JSON file, or NDJSON (`.ndjson`, `.jsonl`) streamed in this order.
    File(PathBuf, Option<LineOrder>),
    /// `-b`: protobuf from standard input.
    BinaryStdin,
    /// `-B FILE`: protobuf from a file.
    BinaryFile(PathBuf),
}

/// Where the metadata is to come from.
pub(super) enum MetadataFrom {
    /// None.
    None,
    /// JSON given on the command line.
    Text(String),
    /// `-m @`: standard input.
    Stdin,
    /// `-M FILE`.
    File(PathBuf),
}

/// What the data section resolves to.
pub(super) struct DataPart {
    pub(super) data: DataFrom,
    pub(super) metadata: MetadataFrom,
    pub(super) reflect_metadata: Option<String>,
    pub(super) binary: bool,
    pub(super) stream: StreamOptions,
    pub(super) no_templates: bool,
    pub(super) no_template_functions: bool,
}

/// Resolves the data section, taking its options from `f`.
pub(super) fn data(f: &mut Flags) -> Result<DataPart, PlanError> {
    // Data: exactly one of -d, -D, -b, -B.
    let binary = f.binary.take().unwrap_or(false);
    let given = [
        f.data.is_some(),
        f.data_file.is_some(),
        binary,
        f.binary_file.is_some(),
    ];
    if given.iter().filter(|g| **g).count() > 1 {
        bail!("give only one of -d, -D, -b and -B");
    }
    let dynamic = f.stream_dynamic_messages.take().unwrap_or(false);
    let order = f.data_order.take();
    let data = if let Some(d) = f.data.take() {
        if d == "@" {
            DataFrom::JsonStdin
        } else {
            DataFrom::Json(d)
        }
    } else if let Some(p) = f.data_file.take() {
        DataFrom::File(p, order)
    } else if binary {
        DataFrom::BinaryStdin
    } else if let Some(p) = f.binary_file.take() {
        DataFrom::BinaryFile(p)
    } else {
        DataFrom::Empty
    };
    if order.is_some() && !matches!(&data, DataFrom::File(p, _) if mix::is_lines(p)) {
        bail!("--data-order applies to an NDJSON data file (-D file.ndjson)");
    }
    let is_binary = matches!(data, DataFrom::BinaryStdin | DataFrom::BinaryFile(_));
    if is_binary && dynamic {
        bail!("--stream-dynamic-messages cannot be used with binary data (-b/-B)");
    }
    let metadata = match f.metadata.take() {
        Some(s) if s == "@" => MetadataFrom::Stdin,
        Some(s) => MetadataFrom::Text(s),
        None => match f.metadata_file.take() {
            Some(p) => MetadataFrom::File(p),
            None => MetadataFrom::None,
        },
    };
    Ok(DataPart {
        data,
        metadata,
        reflect_metadata: f.reflect_metadata.take(),
        binary: is_binary,
        stream: StreamOptions {
            interval: f.stream_interval.take().unwrap_or_default(),
            call_duration: f.stream_call_duration.take().unwrap_or_default(),
            call_count: f.stream_call_count.take().unwrap_or(0),
            dynamic_messages: dynamic,
        },
        no_templates: f.disable_template_data.take().unwrap_or(false),
        no_template_functions: f.disable_template_functions.take().unwrap_or(false),
    })
}
