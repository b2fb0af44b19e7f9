//! The runner's start-up exchange: a size-delimited `ServerCompatRequest` on stdin, a
//! size-delimited `ServerCompatResponse` on stdout (4-byte big-endian length, then the message).

use std::io::{self, Read, Write};

use prost::Message;

use crate::pb::{ServerCompatRequest, ServerCompatResponse};

/// Reads one size-delimited message.
pub fn read_request(mut r: impl Read) -> io::Result<ServerCompatRequest> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let mut buf = vec![0u8; u32::from_be_bytes(len) as usize];
    r.read_exact(&mut buf)?;
    ServerCompatRequest::decode(buf.as_slice()).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("ServerCompatRequest: {e}"),
        )
    })
}

/// Writes one size-delimited message and flushes.
pub fn write_response(mut w: impl Write, resp: &ServerCompatResponse) -> io::Result<()> {
    let body = resp.encode_to_vec();
    let len = u32::try_from(body.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "response too large"))?;
    w.write_all(&len.to_be_bytes())?;
    w.write_all(&body)?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_delimited_round_trip() {
        let req = ServerCompatRequest {
            use_tls: true,
            message_receive_limit: 1024,
            ..Default::default()
        };
        let body = req.encode_to_vec();
        let mut wire = (body.len() as u32).to_be_bytes().to_vec();
        wire.extend_from_slice(&body);
        assert_eq!(read_request(wire.as_slice()).unwrap(), req);

        let mut out = Vec::new();
        let resp = ServerCompatResponse {
            host: "127.0.0.1".into(),
            port: 4242,
            pem_cert: Vec::new(),
        };
        write_response(&mut out, &resp).unwrap();
        assert_eq!(
            u32::from_be_bytes(out[..4].try_into().unwrap()) as usize,
            out.len() - 4
        );
        assert_eq!(ServerCompatResponse::decode(&out[4..]).unwrap(), resp);
        assert!(read_request(&out[..3]).is_err());
    }
}
