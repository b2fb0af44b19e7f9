//! Filling a compiled plan per call: each slot's value from its actions' output, checked to be
//! one the JSON route reads the same way, and encoded as protobuf.

use std::borrow::Cow;

use prost::encoding::{WireType, encode_key, encode_varint};

use super::{Actions, Decline, IntWire, Item, Piece, Plan, Slot, Ty};
use crate::template::Value as Out;

impl Plan {
    pub(super) fn encode<A: Actions + ?Sized>(
        &self,
        actions: &A,
        out: &mut Vec<u8>,
    ) -> Result<(), Decline> {
        for item in &self.items {
            match item {
                Item::Fixed(bytes) => out.extend_from_slice(bytes),
                Item::Scalar(slot) => slot.encode(actions, out)?,
                Item::Message(number, plan) => {
                    let mut inner = Vec::new();
                    plan.encode(actions, &mut inner)?;
                    encode_key(*number, WireType::LengthDelimited, out);
                    encode_varint(inner.len() as u64, out);
                    out.extend_from_slice(&inner);
                }
            }
        }
        Ok(())
    }
}

/// Action output as the JSON route splices it into the text.
fn text(v: Out) -> Cow<'static, str> {
    match v {
        Out::Str(s) => Cow::Owned(s),
        Out::Bool(true) => Cow::Borrowed("true"),
        Out::Bool(false) => Cow::Borrowed("false"),
        other => Cow::Owned(other.to_string()),
    }
}

/// Action output spliced into a JSON string is read as JSON there: a quote, backslash or
/// control character would change what it means.
fn plain(s: &str) -> bool {
    !s.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20)
}

impl Slot {
    fn encode<A: Actions + ?Sized>(&self, actions: &A, out: &mut Vec<u8>) -> Result<(), Decline> {
        let value = match self.pieces.as_slice() {
            [Piece::Action(k)] => {
                let v = actions.get(*k)?;
                // An integer into a number field: its decimal text is canonical, so the number
                // goes as it is (no text made and read back).
                if let (Out::Int(i), Ty::Int { .. }) = (&v, &self.ty) {
                    return self.put_int(i128::from(*i), out);
                }
                text(v)
            }
            pieces => {
                let mut s = String::new();
                for p in pieces {
                    match p {
                        Piece::Text(t) => s.push_str(t),
                        Piece::Action(k) => {
                            let t = text(actions.get(*k)?);
                            if !self.bare && !plain(&t) {
                                return Err(Decline::Value);
                            }
                            s.push_str(&t);
                        }
                    }
                }
                Cow::Owned(s)
            }
        };
        let value = if self.bare {
            match &self.ty {
                // `{{quote .X}}` bare: a JSON string.
                Ty::Str | Ty::Enum(_) => {
                    let inner = value
                        .strip_prefix('"')
                        .and_then(|v| v.strip_suffix('"'))
                        .ok_or(Decline::Value)?;
                    if !plain(inner) {
                        return Err(Decline::Value);
                    }
                    Value::Quoted(inner)
                }
                _ => Value::Bare(&value),
            }
        } else {
            if !plain(&value) && matches!(self.pieces.as_slice(), [Piece::Action(_)]) {
                return Err(Decline::Value);
            }
            Value::Quoted(&value)
        };
        self.put(value, out)
    }

    /// An integer field's value (int, sint, fixed and their signed kinds).
    fn put_int(&self, v: i128, out: &mut Vec<u8>) -> Result<(), Decline> {
        let Ty::Int { min, max, wire } = &self.ty else {
            return Err(Decline::Value);
        };
        if v < i128::from(*min) || v > i128::from(*max) {
            return Err(Decline::Value);
        }
        if v == 0 && !self.presence {
            return Ok(());
        }
        // In range, so its two's complement bits are the field's.
        let bits = v as i64 as u64;
        let n = self.number;
        match wire {
            IntWire::Varint => {
                encode_key(n, WireType::Varint, out);
                encode_varint(bits, out);
            }
            IntWire::Zigzag => {
                encode_key(n, WireType::Varint, out);
                let zz = if *min == i64::from(i32::MIN) {
                    let v = v as i32;
                    u64::from(((v << 1) ^ (v >> 31)) as u32)
                } else {
                    let v = v as i64;
                    ((v << 1) ^ (v >> 63)) as u64
                };
                encode_varint(zz, out);
            }
            IntWire::Fixed32 => {
                encode_key(n, WireType::ThirtyTwoBit, out);
                out.extend_from_slice(&(bits as u32).to_le_bytes());
            }
            IntWire::Fixed64 => {
                encode_key(n, WireType::SixtyFourBit, out);
                out.extend_from_slice(&bits.to_le_bytes());
            }
        }
        Ok(())
    }

    fn put(&self, value: Value<'_>, out: &mut Vec<u8>) -> Result<(), Decline> {
        let n = self.number;
        match (&self.ty, value) {
            (Ty::Str, Value::Quoted(s)) => {
                if s.is_empty() && !self.presence {
                    return Ok(());
                }
                encode_key(n, WireType::LengthDelimited, out);
                encode_varint(s.len() as u64, out);
                out.extend_from_slice(s.as_bytes());
            }
            (Ty::Bool, Value::Bare(s)) => {
                let b = match s {
                    "true" => true,
                    "false" => false,
                    _ => return Err(Decline::Value),
                };
                if b || self.presence {
                    encode_key(n, WireType::Varint, out);
                    encode_varint(u64::from(b), out);
                }
            }
            (Ty::Int { .. }, Value::Bare(s) | Value::Quoted(s)) => {
                return self.put_int(canonical_int(s).ok_or(Decline::Value)?, out);
            }
            (Ty::Enum(e), value) => {
                let number = match value {
                    Value::Quoted(name) => {
                        e.get_value_by_name(name).ok_or(Decline::Value)?.number()
                    }
                    Value::Bare(s) => {
                        let v = i32::try_from(canonical_int(s).ok_or(Decline::Value)?)
                            .map_err(|_| Decline::Value)?;
                        e.get_value(v).ok_or(Decline::Value)?.number()
                    }
                };
                if number != 0 || self.presence {
                    encode_key(n, WireType::Varint, out);
                    encode_varint(number as i64 as u64, out);
                }
            }
            _ => return Err(Decline::Value),
        }
        Ok(())
    }
}

/// A slot's value: JSON text outside quotes, or a string's content.
enum Value<'a> {
    Bare(&'a str),
    Quoted(&'a str),
}

/// `-?(0|[1-9][0-9]*)`, read exactly; anything else (exponents, fractions, leading zeros or
/// signs) is left to the JSON route.
pub(super) fn canonical_int(s: &str) -> Option<i128> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let ok = !digits.is_empty()
        && digits.len() <= 20
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && !(s.starts_with('-') && digits == "0");
    ok.then(|| s.parse().ok()).flatten()
}
