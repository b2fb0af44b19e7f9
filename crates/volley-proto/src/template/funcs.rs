//! The functions ghz's templates call (`newUUID`, `randomString`, `randomInt`) and the sprig
//! ones ghz users write (`upper`, `lower`, `title`, `trim`, `quote`, `squote`, `add`, `sub`,
//! `mul`, `div`, `mod`), with their argument checks.

use rand::Rng;

use super::value::{TemplateError, Value};

fn int(v: &Value, f: &str) -> Result<i64, TemplateError> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Float(x) => Ok(*x as i64),
        Value::Str(s) => s
            .parse()
            .map_err(|_| TemplateError(format!("{f}: {s:?} is not a number"))),
        Value::Bool(_) => Err(TemplateError(format!("{f}: a bool is not a number"))),
    }
}

fn arity(f: &str, args: &[Value], n: usize) -> Result<(), TemplateError> {
    if args.len() == n {
        Ok(())
    } else {
        Err(TemplateError(format!(
            "wrong number of args for {f}: want {n} got {}",
            args.len()
        )))
    }
}

/// The longest string `randomString` makes (1 MiB): enough for any payload field, and a bound on
/// what one template call can allocate.
pub const MAX_RANDOM_STRING: i64 = 1 << 20;

pub(super) fn call(f: &str, args: &[Value]) -> Result<Value, TemplateError> {
    let mut rng = rand::rng();
    Ok(match f {
        "newUUID" => {
            arity(f, args, 0)?;
            Value::Str(uuid::Uuid::new_v4().to_string())
        }
        "randomString" => {
            arity(f, args, 1)?;
            let mut n = int(&args[0], f)?;
            if n <= 0 {
                n = rng.random_range(2..=16);
            }
            // Found by the call_template fuzzer: a huge length allocated without bound.
            if n > MAX_RANDOM_STRING {
                return Err(TemplateError(format!(
                    "randomString: length {n} is over the limit of {MAX_RANDOM_STRING}"
                )));
            }
            const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
            Value::Str(
                (0..n)
                    .map(|_| CHARS[rng.random_range(0..CHARS.len())] as char)
                    .collect(),
            )
        }
        "randomInt" => {
            arity(f, args, 2)?;
            let (lo, hi) = (int(&args[0], f)?, int(&args[1], f)?);
            if hi <= lo {
                return Err(TemplateError(format!(
                    "randomInt: max {hi} must exceed min {lo}"
                )));
            }
            Value::Int(rng.random_range(lo..hi))
        }
        "upper" | "lower" | "title" | "trim" | "quote" | "squote" => {
            arity(f, args, 1)?;
            let s = args[0].to_string();
            Value::Str(match f {
                "upper" => s.to_uppercase(),
                "lower" => s.to_lowercase(),
                "title" => s
                    .split(' ')
                    .map(|w| {
                        let mut c = w.chars();
                        c.next()
                            .map(|h| h.to_uppercase().chain(c).collect::<String>())
                            .unwrap_or_default()
                    })
                    .collect::<Vec<_>>()
                    .join(" "),
                "trim" => s.trim().to_owned(),
                "quote" => format!("{s:?}"),
                _ => format!("'{s}'"),
            })
        }
        _ => {
            arity(f, args, 2)?;
            let (a, b) = (int(&args[0], f)?, int(&args[1], f)?);
            Value::Int(match f {
                "add" => a.wrapping_add(b),
                "sub" => a.wrapping_sub(b),
                "mul" => a.wrapping_mul(b),
                "div" | "mod" if b == 0 => {
                    return Err(TemplateError(format!("{f}: division by zero")));
                }
                "div" => a / b,
                _ => a % b,
            })
        }
    })
}
