//! A connection over the server's cap: accepted, told why, and closed. Over plaintext it gets
//! HTTP/2's server preface (an empty SETTINGS) and a GOAWAY (no stream processed,
//! ENHANCE_YOUR_CALM, "too many connections"), so a gRPC client reports UNAVAILABLE at once and
//! may try another address; over TLS it is closed (a GOAWAY needs a handshake first, which is
//! the work the cap is there to spare).
//!
//! Accepted rather than left in the listen queue: a connection the server does not accept still
//! completes its TCP handshake in the kernel, and its client waits for its connect timeout (20 s
//! in grpc-go) before it learns anything.

use tokio::io::AsyncWriteExt;
use volley_wire::h2::{kind, reason};

use super::{linger::Lingering, socket::Socket};

/// An empty SETTINGS frame, then GOAWAY(last stream 0, ENHANCE_YOUR_CALM, debug data).
#[rustfmt::skip]
const REFUSAL: &[u8] = &[
    // SETTINGS: length 0, flags 0, stream 0.
    0, 0, 0, kind::SETTINGS, 0, 0, 0, 0, 0,
    // GOAWAY: length 8 + 20, flags 0, stream 0.
    0, 0, 28, kind::GOAWAY, 0, 0, 0, 0, 0,
    0, 0, 0, 0, // last stream id 0
    0, 0, 0, reason::ENHANCE_YOUR_CALM as u8,
    b't', b'o', b'o', b' ', b'm', b'a', b'n', b'y', b' ', b'c', b'o', b'n', b'n', b'e', b'c', b't',
    b'i', b'o', b'n', b's',
];

/// Tells a plaintext peer why (see the module docs) and closes; bounded by the lingering close
/// (1 s at most).
pub(crate) async fn refuse<S: Socket>(stream: S, plaintext: bool) {
    if !plaintext {
        return;
    }
    let mut io = Lingering::new(stream);
    if io.write_all(REFUSAL).await.is_ok() {
        let _ = io.shutdown().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frames_are_well_formed() {
        let (settings, goaway) = REFUSAL.split_at(9);
        assert_eq!(settings[3], 0x4);
        let len = usize::from(goaway[2]);
        assert_eq!(goaway.len(), 9 + len);
        assert_eq!(&goaway[9 + 8..], b"too many connections");
    }
}
