//! GripMock's function set: Go's builtins (`index`, `len`, `printf`, `eq`, ...), GripMock's
//! (text, numbers, `extract`, time and delays, UUIDs and base64, `faker.*`) and volley's
//! call-data ones (`randomInt`, `randomString`, `newUUID`, `trim`, `quote`), with GripMock's
//! meanings where they differ from ghz's (`title` upper-cases, arithmetic takes floats).

use std::borrow::Cow;

use base64::Engine;
use serde_json::Value;

use super::{clock::now_nanos, faker, funcs::Funcs, printf::printf, value::Val};

/// GripMock's dialect.
#[derive(Debug)]
pub(crate) struct GripMock;

impl Funcs for GripMock {
    fn exists(&self, name: &str) -> bool {
        exists(name)
    }

    fn call<'a>(&self, name: &str, args: Vec<Val<'a>>) -> Result<Val<'a>, String> {
        call(name, args)
    }
}

/// Every function name but `faker.*`.
const NAMES: &[&str] = &[
    "and",
    "or",
    "not",
    "len",
    "index",
    "slice",
    "print",
    "printf",
    "println",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "gte",
    "lte",
    "html",
    "js",
    "urlquery",
    "upper",
    "lower",
    "title",
    "join",
    "split",
    "sprintf",
    "str",
    "json",
    "int",
    "int64",
    "float",
    "decimal",
    "add",
    "sub",
    "div",
    "mod",
    "sum",
    "mul",
    "avg",
    "min",
    "max",
    "round",
    "floor",
    "ceil",
    "extract",
    "now",
    "unix",
    "format",
    "duration",
    "regressive",
    "backoff",
    "jitter",
    "uuid",
    "uuid2base64",
    "uuid2bytes",
    "uuid2int64",
    "string2base64",
    "bytes2base64",
    "bytes",
    "newUUID",
    "randomString",
    "randomInt",
    "trim",
    "quote",
    "squote",
];

/// Whether `name` is a function.
fn exists(name: &str) -> bool {
    NAMES.contains(&name) || faker::exists(name)
}

fn s<'a>(v: &Val<'a>) -> Cow<'a, str> {
    match v.clone().norm() {
        Val::Str(s) => s,
        other => Cow::Owned(other.text()),
    }
}

fn need<'s, 'a>(args: &'s [Val<'a>], n: usize, name: &str) -> Result<&'s [Val<'a>], String> {
    if args.len() < n {
        return Err(format!("{name} takes {n} argument(s), got {}", args.len()));
    }
    Ok(args)
}

fn number(x: f64) -> Val<'static> {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        Val::Int(x as i64)
    } else {
        Val::Float(x)
    }
}

/// The numbers of `args`: several, or one list.
fn numbers(args: &[Val<'_>]) -> Result<Vec<f64>, String> {
    let items = match args {
        [one] => one.items().unwrap_or_else(|| vec![one.clone()]),
        many => many.to_vec(),
    };
    items
        .iter()
        .map(|v| {
            v.num()
                .ok_or_else(|| format!("{} is not a number", v.text()))
        })
        .collect()
}

fn arith(
    args: &[Val<'_>],
    op: fn(f64, f64) -> f64,
    int: fn(i64, i64) -> Option<i64>,
) -> Val<'static> {
    let all_int = args.iter().all(|v| matches!(v.clone().norm(), Val::Int(_)));
    if all_int
        && args.len() == 2
        && let (Some(a), Some(b)) = (args[0].int(), args[1].int())
        && let Some(r) = int(a, b)
    {
        return Val::Int(r);
    }
    let a = args.first().and_then(Val::num).unwrap_or(0.0);
    let b = args.get(1).and_then(Val::num).unwrap_or(0.0);
    number(op(a, b))
}

/// Compares two values: numbers by value, the rest as text.
fn cmp(a: &Val<'_>, b: &Val<'_>) -> Option<std::cmp::Ordering> {
    match (a.clone().norm(), b.clone().norm()) {
        (Val::Str(x), Val::Str(y)) => Some(x.cmp(&y)),
        (x, y) => match (x.num(), y.num()) {
            (Some(p), Some(q)) => p.partial_cmp(&q),
            _ => Some(x.text().cmp(&y.text())),
        },
    }
}

fn equal(a: &Val<'_>, b: &Val<'_>) -> bool {
    match (a.clone().norm(), b.clone().norm()) {
        (Val::Missing | Val::Nil, Val::Missing | Val::Nil) => true,
        (Val::Bool(x), Val::Bool(y)) => x == y,
        (x @ (Val::Int(_) | Val::Float(_)), y @ (Val::Int(_) | Val::Float(_))) => {
            x.num() == y.num()
        }
        (Val::Str(x), Val::Str(y)) => x == y,
        (x, y) => x.text() == y.text(),
    }
}

fn parse_uuid(v: &Val<'_>) -> Result<[u8; 16], String> {
    uuid::Uuid::parse_str(s(v).trim())
        .map(|u| *u.as_bytes())
        .map_err(|e| format!("{:?} is not a UUID: {e}", s(v)))
}

fn dur(v: &Val<'_>) -> Result<i64, String> {
    match v.clone().norm() {
        Val::Dur(d) => Ok(d),
        Val::Int(i) => Ok(i),
        other => crate::gofmt::parse_duration(&s(&other))
            .map(|d| d.as_nanos() as i64)
            .map_err(|_| format!("{:?} is not a duration", other.text())),
    }
}

fn to_json(v: &Val<'_>) -> Value {
    match v.clone().norm() {
        Val::Missing | Val::Nil => Value::Null,
        Val::Bool(b) => Value::Bool(b),
        Val::Int(i) => Value::from(i),
        Val::Float(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        Val::Str(s) => Value::String(s.into_owned()),
        Val::Json(j) => j.clone(),
        Val::List(l) => Value::Array(l.iter().map(to_json).collect()),
        Val::Map(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), to_json(v))).collect()),
        other => Value::String(other.text()),
    }
}

/// Calls function `name` with `args` (a piped value last).
pub(crate) fn call<'a>(name: &str, args: Vec<Val<'a>>) -> Result<Val<'a>, String> {
    if faker::exists(name) {
        return faker::call(name, &args);
    }
    let a = &args[..];
    Ok(match name {
        "and" => a
            .iter()
            .find(|v| !v.truthy())
            .or(a.last())
            .cloned()
            .unwrap_or(Val::Nil),
        "or" => a
            .iter()
            .find(|v| v.truthy())
            .or(a.last())
            .cloned()
            .unwrap_or(Val::Nil),
        "not" => Val::Bool(!need(a, 1, name)?[0].truthy()),
        "len" => {
            let v = need(a, 1, name)?[0].clone().norm();
            Val::Int(match &v {
                Val::Str(s) => s.len(),
                Val::Json(Value::Object(m)) => m.len(),
                Val::Map(m) => m.len(),
                Val::Bytes(b) => b.len(),
                other => other
                    .items()
                    .ok_or_else(|| format!("len of {}", other.type_name()))?
                    .len(),
            } as i64)
        }
        "index" => {
            let mut v = need(a, 1, name)?[0].clone();
            for k in &a[1..] {
                v = match (&v, k.clone().norm()) {
                    (Val::Json(Value::Object(_)) | Val::Map(_), key) => v.field(&s(&key))?,
                    (_, key) => {
                        let items = v
                            .items()
                            .ok_or_else(|| format!("can't index item of type {}", v.type_name()))?;
                        let i = key.int().ok_or("index of a list must be a number")?;
                        items
                            .get(usize::try_from(i).map_err(|_| "negative index")?)
                            .cloned()
                            .ok_or_else(|| format!("index out of range: {i}"))?
                    }
                };
            }
            v
        }
        "slice" => {
            let v = need(a, 1, name)?[0].clone().norm();
            let from = a.get(1).and_then(Val::int).unwrap_or(0).max(0) as usize;
            match v {
                Val::Str(st) => {
                    let to = a.get(2).and_then(Val::int).map_or(st.len(), |t| t as usize);
                    Val::Str(Cow::Owned(
                        st.get(from..to).ok_or("slice out of range")?.to_owned(),
                    ))
                }
                other => {
                    let items = other.items().ok_or("slice of a non-list")?;
                    let to = a
                        .get(2)
                        .and_then(Val::int)
                        .map_or(items.len(), |t| t as usize);
                    Val::List(items.get(from..to).ok_or("slice out of range")?.to_vec())
                }
            }
        }
        "print" => Val::Str(Cow::Owned(
            a.iter().map(Val::text).collect::<Vec<_>>().join(""),
        )),
        "println" => Val::Str(Cow::Owned(
            a.iter().map(Val::text).collect::<Vec<_>>().join(" ") + "\n",
        )),
        "printf" | "sprintf" => Val::Str(Cow::Owned(printf(&s(&need(a, 1, name)?[0]), &a[1..]))),
        "eq" => {
            let first = &need(a, 2, name)?[0];
            Val::Bool(a[1..].iter().any(|b| equal(first, b)))
        }
        "ne" => Val::Bool(!equal(&need(a, 2, name)?[0], &a[1])),
        "lt" => Val::Bool(cmp(&need(a, 2, name)?[0], &a[1]).is_some_and(|o| o.is_lt())),
        "le" | "lte" => Val::Bool(cmp(&need(a, 2, name)?[0], &a[1]).is_some_and(|o| o.is_le())),
        "gt" => Val::Bool(cmp(&need(a, 2, name)?[0], &a[1]).is_some_and(|o| o.is_gt())),
        "ge" | "gte" => Val::Bool(cmp(&need(a, 2, name)?[0], &a[1]).is_some_and(|o| o.is_ge())),
        "html" | "js" | "str" => Val::Str(Cow::Owned(a.iter().map(Val::text).collect())),
        "urlquery" => Val::Str(Cow::Owned(
            a.iter()
                .map(Val::text)
                .collect::<String>()
                .bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                        (b as char).to_string()
                    }
                    b' ' => "+".into(),
                    other => format!("%{other:02X}"),
                })
                .collect(),
        )),
        "upper" | "title" => Val::Str(Cow::Owned(s(&need(a, 1, name)?[0]).to_uppercase())),
        "lower" => Val::Str(Cow::Owned(s(&need(a, 1, name)?[0]).to_lowercase())),
        "trim" => Val::Str(Cow::Owned(s(&need(a, 1, name)?[0]).trim().to_owned())),
        "quote" => Val::Str(Cow::Owned(format!("{:?}", s(&need(a, 1, name)?[0])))),
        "squote" => Val::Str(Cow::Owned(format!("'{}'", s(&need(a, 1, name)?[0])))),
        "join" => {
            let items = need(a, 2, name)?[0]
                .items()
                .ok_or("join takes a list first")?;
            let parts: Vec<String> = items.iter().map(Val::text).collect();
            Val::Str(Cow::Owned(parts.join(&s(&a[1]))))
        }
        "split" => {
            let (text, sep) = (s(&need(a, 2, name)?[0]), s(&a[1]));
            Val::List(
                text.split(sep.as_ref())
                    .map(|p| Val::Str(Cow::Owned(p.to_owned())))
                    .collect(),
            )
        }
        "json" => Val::Str(Cow::Owned(to_json(&need(a, 1, name)?[0]).to_string())),
        "int" | "int64" => Val::Int(
            need(a, 1, name)?[0]
                .int()
                .ok_or_else(|| format!("{} is not a number", a[0].text()))?,
        ),
        "float" | "decimal" => Val::Float(
            need(a, 1, name)?[0]
                .num()
                .ok_or_else(|| format!("{} is not a number", a[0].text()))?,
        ),
        "add" => arith(need(a, 2, name)?, |x, y| x + y, i64::checked_add),
        "sub" => arith(need(a, 2, name)?, |x, y| x - y, i64::checked_sub),
        "mul" if a.len() == 2 => arith(a, |x, y| x * y, i64::checked_mul),
        "mul" => number(numbers(a)?.iter().product()),
        "div" => arith(
            need(a, 2, name)?,
            |x, y| if y == 0.0 { 0.0 } else { x / y },
            |x, y| {
                (y != 0 && x % y == 0)
                    .then(|| x / y)
                    .or((y == 0).then_some(0))
            },
        ),
        "mod" => arith(
            need(a, 2, name)?,
            |x, y| if y == 0.0 { 0.0 } else { x % y },
            |x, y| Some(if y == 0 { 0 } else { x % y }),
        ),
        "sum" => number(numbers(a)?.iter().sum()),
        "avg" => {
            let n = numbers(a)?;
            number(if n.is_empty() {
                0.0
            } else {
                n.iter().sum::<f64>() / n.len() as f64
            })
        }
        "min" => number(numbers(a)?.into_iter().fold(f64::INFINITY, f64::min)),
        "max" => number(numbers(a)?.into_iter().fold(f64::NEG_INFINITY, f64::max)),
        "round" => number(need(a, 1, name)?[0].num().unwrap_or(0.0).round()),
        "floor" => number(need(a, 1, name)?[0].num().unwrap_or(0.0).floor()),
        "ceil" => number(need(a, 1, name)?[0].num().unwrap_or(0.0).ceil()),
        "extract" => {
            let items = need(a, 2, name)?[0]
                .items()
                .ok_or("extract takes a list of messages")?;
            let key = s(&a[1]);
            Val::List(
                items
                    .iter()
                    .map(|m| m.field(&key).unwrap_or(Val::Missing))
                    .collect(),
            )
        }
        "now" => Val::Time(now_nanos()),
        "unix" => match need(a, 1, name)?[0].clone().norm() {
            Val::Time(t) => Val::Int(t.div_euclid(1_000_000_000)),
            other => Val::Int(other.int().unwrap_or(0)),
        },
        "format" => match need(a, 2, name)?[0].clone().norm() {
            Val::Time(t) => Val::Str(Cow::Owned(crate::gofmt::layout(t, &s(&a[1])))),
            other => return Err(format!("format takes a time, not {}", other.type_name())),
        },
        "duration" => {
            let n = need(a, 1, name)?[0]
                .num()
                .ok_or("duration takes a number")?;
            let unit = a.get(1).map_or(Cow::Borrowed("ms"), s);
            let per = crate::gofmt::parse_duration(&format!("1{unit}"))
                .map_err(|_| format!("{unit:?} is not a unit"))?
                .as_nanos() as f64;
            Val::Dur((n * per) as i64)
        }
        "regressive" => {
            let attempt = need(a, 3, name)?[0].int().unwrap_or(1).max(1);
            Val::Dur((dur(&a[1])? - (attempt - 1) * dur(&a[2])?).max(0))
        }
        "backoff" => {
            let attempt = need(a, 2, name)?[0].int().unwrap_or(1).clamp(1, 62) as u32;
            let d = dur(&a[1])?.saturating_mul(1i64 << (attempt - 1).min(30));
            Val::Dur(match a.get(2) {
                Some(cap) => d.min(dur(cap)?),
                None => d,
            })
        }
        "jitter" => {
            let (lo, hi) = (dur(&need(a, 2, name)?[0])?, dur(&a[1])?);
            Val::Dur(if hi > lo { fastrand::i64(lo..=hi) } else { lo })
        }
        "uuid" | "newUUID" => Val::Str(Cow::Owned(uuid::Uuid::new_v4().to_string())),
        "uuid2base64" => Val::Str(Cow::Owned(b64(&parse_uuid(&need(a, 1, name)?[0])?))),
        "uuid2bytes" => Val::Bytes(parse_uuid(&need(a, 1, name)?[0])?.to_vec()),
        "uuid2int64" => {
            let b = parse_uuid(&need(a, 1, name)?[0])?;
            let high = i64::from_le_bytes(b[..8].try_into().unwrap_or_default());
            let low = i64::from_le_bytes(b[8..].try_into().unwrap_or_default());
            Val::Str(Cow::Owned(format!("{{\"high\":{high},\"low\":{low}}}")))
        }
        "string2base64" => Val::Str(Cow::Owned(b64(s(&need(a, 1, name)?[0]).as_bytes()))),
        "bytes2base64" => match need(a, 1, name)?[0].clone().norm() {
            Val::Bytes(b) => Val::Str(Cow::Owned(b64(&b))),
            other => Val::Str(Cow::Owned(b64(s(&other).as_bytes()))),
        },
        "bytes" => Val::Bytes(s(&need(a, 1, name)?[0]).as_bytes().to_vec()),
        "randomString" => {
            let n = a.first().and_then(Val::int).unwrap_or(8).max(0);
            // The bound `volley bench`'s templates have (its fuzzer found the same allocation
            // there): one function call never asks for more than 1 MiB.
            let max = super::funcs::MAX_RANDOM_STRING;
            if n > max {
                return Err(format!(
                    "randomString: length {n} is over the limit of {max}"
                ));
            }
            let n = n as usize;
            Val::Str(Cow::Owned(
                std::iter::repeat_with(fastrand::alphanumeric)
                    .take(n)
                    .collect(),
            ))
        }
        "randomInt" => {
            let lo = a.first().and_then(Val::int).unwrap_or(0);
            let hi = a.get(1).and_then(Val::int).unwrap_or(lo + 1);
            Val::Int(if hi > lo { fastrand::i64(lo..hi) } else { lo })
        }
        other => return Err(format!("function {other:?} not defined")),
    })
}

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(name: &str, args: Vec<Val<'static>>) -> String {
        call(name, args).unwrap().text()
    }

    fn st(x: &str) -> Val<'static> {
        Val::Str(Cow::Owned(x.to_owned()))
    }

    #[test]
    fn numbers_text_and_lists() {
        assert_eq!(c("add", vec![Val::Int(1), Val::Int(2)]), "3");
        assert_eq!(c("div", vec![Val::Int(1), Val::Int(0)]), "0");
        assert_eq!(c("div", vec![Val::Int(7), Val::Int(2)]), "3.5");
        assert_eq!(
            c(
                "sum",
                vec![Val::List(vec![Val::Float(10.0), Val::Float(20.5)])]
            ),
            "30.5"
        );
        assert_eq!(c("avg", vec![Val::Int(1), Val::Int(2)]), "1.5");
        assert_eq!(
            c(
                "index",
                vec![
                    call("split", vec![st("user_42"), st("_")]).unwrap(),
                    Val::Int(1)
                ]
            ),
            "42"
        );
        assert_eq!(
            c(
                "printf",
                vec![st("%s=%d %.2f%%"), st("a"), Val::Int(3), Val::Float(1.5)]
            ),
            "a=3 1.50%"
        );
        assert_eq!(c("title", vec![st("ab")]), "AB");
        assert_eq!(c("eq", vec![Val::Int(5), Val::Float(5.0)]), "true");
        assert_eq!(
            c("json", vec![Val::List(vec![Val::Int(1), st("x")])]),
            "[1,\"x\"]"
        );
    }

    #[test]
    fn uuids_times_and_durations() {
        let u = st("e351220b-4847-42f5-8abb-c052b87ff2d4");
        assert_eq!(
            c("uuid2base64", vec![u.clone()]),
            "41EiC0hHQvWKu8BSuH/y1A=="
        );
        assert!(c("uuid2int64", vec![u]).starts_with("{\"high\":"));
        assert_eq!(
            crate::gofmt::layout(1_717_046_400_000_000_000, "2006-01-02T15:04:05Z07:00"),
            "2024-05-30T05:20:00Z"
        );
        assert_eq!(
            c("unix", vec![Val::Time(1_717_046_400_123_000_000)]),
            "1717046400"
        );
        assert_eq!(
            c("backoff", vec![Val::Int(3), st("100ms"), st("1s")]),
            "400ms"
        );
        assert_eq!(
            c("regressive", vec![Val::Int(2), st("3s"), st("500ms")]),
            "2.5s"
        );
        assert!(
            call("uuid2base64", vec![st("nope")])
                .unwrap_err()
                .contains("not a UUID")
        );
    }
}
