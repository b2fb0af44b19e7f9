//! A message carried as its encoded bytes through the typed client (which wants a
//! `prost::Message + Default`): each field's key and value copied as they are, so a reply is
//! decoded once, into the method's output type, by the recorder.

use bytes::{Buf, BufMut};
use prost::{
    DecodeError, Message,
    encoding::{DecodeContext, WireType, decode_varint, encode_key, encode_varint},
};

/// A decode error of ours (prost keeps its constructor for itself, deprecated but public).
#[allow(deprecated)]
fn error(why: &'static str) -> DecodeError {
    DecodeError::new(why)
}

/// An encoded message.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Raw(pub Vec<u8>);

impl Message for Raw {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        buf.put_slice(&self.0);
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        _ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        encode_key(tag, wire_type, &mut self.0);
        let copy = |n: usize, out: &mut Vec<u8>, buf: &mut dyn Buf| -> Result<(), DecodeError> {
            if buf.remaining() < n {
                return Err(error("buffer underflow"));
            }
            let mut left = n;
            while left > 0 {
                let chunk = buf.chunk();
                let take = chunk.len().min(left);
                out.extend_from_slice(&chunk[..take]);
                buf.advance(take);
                left -= take;
            }
            Ok(())
        };
        match wire_type {
            WireType::Varint => {
                let v = decode_varint(buf)?;
                encode_varint(v, &mut self.0);
                Ok(())
            }
            WireType::SixtyFourBit => copy(8, &mut self.0, buf),
            WireType::ThirtyTwoBit => copy(4, &mut self.0, buf),
            WireType::LengthDelimited => {
                let len = decode_varint(buf)?;
                encode_varint(len, &mut self.0);
                copy(len as usize, &mut self.0, buf)
            }
            WireType::StartGroup | WireType::EndGroup => Err(error("groups are not recorded")),
        }
    }

    fn encoded_len(&self) -> usize {
        self.0.len()
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_survive_a_decode() {
        // field 1 varint 150, field 2 "hi", field 3 fixed32, field 4 fixed64
        let wire = vec![
            0x08, 0x96, 0x01, 0x12, 0x02, b'h', b'i', 0x1d, 1, 2, 3, 4, 0x21, 1, 2, 3, 4, 5, 6, 7,
            8,
        ];
        let raw = Raw::decode(&wire[..]).unwrap();
        assert_eq!(raw.0, wire);
        assert_eq!(raw.encode_to_vec(), wire);
    }
}
