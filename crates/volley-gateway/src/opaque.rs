//! A message the gateway never looks into: its encoded bytes, carried from the caller's call to
//! the upstream's and back. Both sides' typed paths want a `prost::Message + Default`; this one
//! takes the whole buffer at once in `merge` (prost's default walks it field by field), so a
//! message passes through with no decode and no copy when the buffer is `Bytes`.

use bytes::{Buf, BufMut, Bytes};
use prost::{
    DecodeError, Message,
    encoding::{DecodeContext, WireType},
};

/// An encoded message, passed through as it is.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Opaque(pub Bytes);

impl Message for Opaque {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        buf.put_slice(&self.0);
    }

    /// Reached only through prost's length-delimited paths, which the gateway does not use
    /// (`merge` takes the buffer whole): refused, not guessed at.
    fn merge_field(
        &mut self,
        _tag: u32,
        _wire_type: WireType,
        _buf: &mut impl Buf,
        _ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        // prost keeps DecodeError's constructor for itself (deprecated, but public).
        #[allow(deprecated)]
        Err(DecodeError::new(
            "an opaque message is decoded whole, not field by field",
        ))
    }

    fn merge(&mut self, mut buf: impl Buf) -> Result<(), DecodeError> {
        let rest = buf.copy_to_bytes(buf.remaining());
        self.0 = if self.0.is_empty() {
            rest
        } else {
            // Merging onto a message is concatenating its encodings (protobuf's own rule).
            let mut both = Vec::with_capacity(self.0.len() + rest.len());
            both.extend_from_slice(&self.0);
            both.extend_from_slice(&rest);
            Bytes::from(both)
        };
        Ok(())
    }

    fn encoded_len(&self) -> usize {
        self.0.len()
    }

    fn clear(&mut self) {
        self.0 = Bytes::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_pass_through_unchanged_and_uncopied() {
        // field 1 varint 150, field 2 "hi", field 3 fixed32
        let wire =
            Bytes::from_static(&[0x08, 0x96, 0x01, 0x12, 0x02, b'h', b'i', 0x1d, 1, 2, 3, 4]);
        let m = Opaque::decode(wire.clone()).unwrap();
        assert_eq!(m.0, wire);
        // The same memory: a slice of the buffer, not a copy.
        assert_eq!(m.0.as_ptr(), wire.as_ptr());
        assert_eq!(m.encode_to_vec(), wire.to_vec());
        assert_eq!(m.encoded_len(), wire.len());
    }

    #[test]
    fn merging_concatenates_as_protobuf_does() {
        let mut m = Opaque(Bytes::from_static(&[0x08, 0x01]));
        m.merge(&[0x10, 0x02][..]).unwrap();
        assert_eq!(&m.0[..], &[0x08, 0x01, 0x10, 0x02]);
    }
}
