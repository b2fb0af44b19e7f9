//! A request message framed as gRPC sends it (gzip-compressed when asked): what the payloads
//! and the NDJSON lines hand the calls.

use bytes::Bytes;
use volley_wire::{codec::frame_payload, compression::Encoding};

/// Frames a message, gzip-compressed when asked.
pub(super) fn frame(msg: &[u8], gzip: bool) -> Bytes {
    if gzip {
        return Encoding::Gzip.compress_frame(msg);
    }
    frame_payload(0, msg).freeze()
}
