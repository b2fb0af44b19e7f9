//! A reply's header block read into what a call needs (`:status`, `grpc-status`,
//! `grpc-message`), through the connection's HPACK decoder (`hpack.rs`).

use volley_wire::{Code, Status};

use super::hpack::Decoder;

/// The largest reply header block taken (HEADERS and its CONTINUATION frames), grpc-go's default
/// limit on a header list (16 MiB): a server that sends CONTINUATION frames without end would
/// otherwise grow the block, and the client's memory, for as long as it keeps sending.
pub(super) const MAX_HEADER_BLOCK: usize = 16 << 20;

/// What a reply's header block says about its call.
#[derive(Debug, Default)]
pub(super) struct Said {
    /// `:status`.
    pub(super) http_status: Option<u16>,
    /// `grpc-status`.
    pub(super) grpc_code: Option<Code>,
    /// `grpc-message`.
    pub(super) message: Option<String>,
}

/// Decodes `block` with the connection's `decoder`; an error for a block that does not decode.
pub(super) fn decode(decoder: &mut Decoder, block: &[u8]) -> Result<Said, Status> {
    let mut said = Said::default();
    decoder
        .decode(block, |k, v| match k {
            b":status" => {
                said.http_status = std::str::from_utf8(v).ok().and_then(|s| s.parse().ok());
            }
            b"grpc-status" => {
                said.grpc_code = std::str::from_utf8(v)
                    .ok()
                    .and_then(|s| s.parse::<i32>().ok())
                    .map(Code::from_i32);
            }
            b"grpc-message" => said.message = Some(String::from_utf8_lossy(v).into_owned()),
            _ => {}
        })
        .map_err(|e| Status::internal(format!("a reply's headers do not decode: {e}")))?;
    Ok(said)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_that_does_not_decode_is_an_internal_error() {
        // :status 200, a literal grpc-status: 0 (new name), then a size update to 100.
        let mut ok = vec![0x88, 0x40, 11];
        ok.extend_from_slice(b"grpc-status");
        ok.extend_from_slice(&[1, b'0', 0x3f, 0x45]);
        let said = decode(&mut Decoder::default(), &ok).unwrap();
        assert_eq!(said.http_status, Some(200));
        assert_eq!(said.grpc_code, Some(Code::Ok));
        // The block the `fast_frames` fuzzer found panicking fluke-hpack (a size update whose
        // integer never ends): now an error.
        let found = [
            0x88, 0x00, 0x0b, 0x67, 0x72, 0x70, 0x63, 0x2d, 0x72, 0x70, 0x63, 0x2d, 0x00, 0x6d,
            0x00, 0x24, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x05, 0x00, 0x6d,
            0x00, 0x24, 0x01, 0x05, 0x00, 0x3f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        ];
        let err = decode(&mut Decoder::default(), &found).unwrap_err();
        assert_eq!(err.code(), Code::Internal);
        assert!(
            err.message().starts_with("a reply's headers do not decode"),
            "{err:?}"
        );
    }
}
