//! `-format json|text`: one printer for responses and status details, chosen once.

use prost_reflect::DynamicMessage;

use crate::{json_out::JsonFormat, text_out::TextFormat};

/// The printer `-format` picks.
pub(crate) enum Formatter {
    /// JSON (grpcurl's default).
    Json(JsonFormat),
    /// The protobuf text format.
    Text(TextFormat),
}

impl Formatter {
    /// The printer for `-format` (`json` or `text`): JSON with `emit_defaults` and `Any`s opened
    /// from `pool`, text with record separators when `separators`.
    pub(crate) fn new(
        format: &str,
        emit_defaults: bool,
        separators: bool,
        pool: prost_reflect::DescriptorPool,
    ) -> Formatter {
        if format == "text" {
            Formatter::Text(TextFormat::new(separators))
        } else {
            Formatter::Json(JsonFormat {
                emit_defaults,
                pool,
            })
        }
    }

    /// A response message.
    pub(crate) fn message(&self, msg: &DynamicMessage) -> Result<String, String> {
        match self {
            Formatter::Json(j) => j.format(msg),
            Formatter::Text(t) => Ok(t.format(msg)),
        }
    }

    /// A status detail.
    pub(crate) fn any(&self, type_url: &str, value: &[u8]) -> Result<String, String> {
        match self {
            Formatter::Json(j) => j.format_any(type_url, value),
            Formatter::Text(t) => Ok(t.format_any(type_url, value)),
        }
    }
}
