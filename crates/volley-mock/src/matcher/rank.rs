//! GripMock's ranking among the stubs a request matches, and the index that keeps a method's
//! many stubs cheap: stubs are bucketed by the value their `input.equals` wants for the field
//! most of them name, so a call looks at its bucket and the stubs that do not name it.

use std::{
    cmp::Reverse,
    collections::HashMap,
    hash::{Hash, Hasher},
    sync::Arc,
};

use prost_reflect::{DynamicMessage, FieldDescriptor, Value};

use crate::model::{Expect, Input, Stub};

/// How a matching stub ranks: the most specific first (declared keys the request sets), then
/// `priority`, then (client streams) the stub matching the later message, then the stub
/// declaring more keys, then the first loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Rank {
    pub specificity: u32,
    pub priority: i64,
    pub message: u32,
    pub fields: u32,
    pub order: Reverse<usize>,
}

/// Below this many stubs on a method, a scan costs less than the index.
const MIN_INDEXED: usize = 8;

/// A method's stubs bucketed by one field's wanted value.
pub(crate) struct Index {
    field: FieldDescriptor,
    buckets: HashMap<u64, Vec<u32>>,
    /// Stubs that do not want a value of `field` (they may match any request).
    rest: Vec<u32>,
}

/// A scalar's hash, numbers by value (so `5` and `5.0` land together).
fn key(v: &Value) -> Option<u64> {
    let mut h = std::hash::DefaultHasher::new();
    match v {
        Value::Bool(b) => b.hash(&mut h),
        Value::I32(i) => i128::from(*i).hash(&mut h),
        Value::I64(i) => i128::from(*i).hash(&mut h),
        Value::U32(i) => i128::from(*i).hash(&mut h),
        Value::U64(i) => i128::from(*i).hash(&mut h),
        Value::EnumNumber(i) => i128::from(*i).hash(&mut h),
        Value::F32(f) => f64::from(*f).to_bits().hash(&mut h),
        Value::F64(f) => f.to_bits().hash(&mut h),
        Value::String(s) => s.hash(&mut h),
        Value::Bytes(b) => b.hash(&mut h),
        _ => return None,
    }
    Some(h.finish())
}

/// The scalar `stub`'s single `input.equals` wants for `field`, if it wants one.
fn wanted<'s>(stub: &'s Stub, field: &FieldDescriptor) -> Option<&'s Value> {
    let Input::One(m) = &stub.input else {
        return None;
    };
    m.equals.iter().find_map(|(f, e)| match e {
        Expect::Scalar(v) if f == field => Some(v),
        _ => None,
    })
}

impl Index {
    /// An index over `stubs` when enough of them want a value of one singular scalar field.
    pub(crate) fn build(stubs: &[Arc<Stub>]) -> Option<Index> {
        if stubs.len() < MIN_INDEXED {
            return None;
        }
        let mut counts: HashMap<u32, (FieldDescriptor, usize)> = HashMap::new();
        for s in stubs {
            if let Input::One(m) = &s.input {
                for (f, e) in &m.equals {
                    if matches!(e, Expect::Scalar(_)) && !f.is_list() && !f.is_map() {
                        counts.entry(f.number()).or_insert((f.clone(), 0)).1 += 1;
                    }
                }
            }
        }
        let (field, n) = counts
            .into_values()
            .max_by_key(|(f, n)| (*n, Reverse(f.number())))?;
        if n < MIN_INDEXED {
            return None;
        }
        let mut index = Index {
            field,
            buckets: HashMap::new(),
            rest: Vec::new(),
        };
        for (i, s) in stubs.iter().enumerate() {
            match wanted(s, &index.field).and_then(key) {
                Some(k) => index.buckets.entry(k).or_default().push(i as u32),
                None => index.rest.push(i as u32),
            }
        }
        Some(index)
    }

    /// The positions of the stubs that may match `msg`, in load order.
    pub(crate) fn candidates<'a>(&'a self, msg: &DynamicMessage) -> Merge<'a> {
        let bucket = key(&msg.get_field(&self.field))
            .and_then(|k| self.buckets.get(&k))
            .map_or(&[][..], Vec::as_slice);
        Merge {
            a: bucket,
            b: &self.rest,
        }
    }
}

/// Two sorted lists of positions, merged.
pub(crate) struct Merge<'a> {
    a: &'a [u32],
    b: &'a [u32],
}

impl Iterator for Merge<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        let take_a = match (self.a.first(), self.b.first()) {
            (Some(x), Some(y)) => x < y,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return None,
        };
        let list = if take_a { &mut self.a } else { &mut self.b };
        let (first, rest) = list.split_first()?;
        *list = rest;
        Some(*first as usize)
    }
}

/// The stubs a call looks at: an index's, or all of a method's.
pub(crate) enum Candidates<'a> {
    Indexed(Merge<'a>),
    All(std::ops::Range<usize>),
}

impl Iterator for Candidates<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        match self {
            Candidates::Indexed(m) => m.next(),
            Candidates::All(r) => r.next(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_in_order() {
        let m = Merge {
            a: &[1, 4, 9],
            b: &[0, 5],
        };
        assert_eq!(m.collect::<Vec<_>>(), [0, 1, 4, 5, 9]);
    }

    #[test]
    fn ranks_specificity_then_priority_then_order() {
        let r = |specificity, priority, order| Rank {
            specificity,
            priority,
            message: 0,
            fields: 1,
            order: Reverse(order),
        };
        assert!(r(1, 0, 5) > r(0, 100, 0));
        assert!(r(1, 2, 5) > r(1, 1, 0));
        assert!(r(1, 1, 0) > r(1, 1, 5));
        assert_eq!(key(&Value::I32(5)), key(&Value::I64(5)));
    }
}
