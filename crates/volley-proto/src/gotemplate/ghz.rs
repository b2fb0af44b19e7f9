//! ghz's function set: its own (`newUUID`, `randomString`, `randomInt`), the sprig ones ghz
//! users write (`upper`, `lower`, `title`, `trim`, `quote`, `squote`, `add`, `sub`, `mul`,
//! `div`, `mod`, with sprig's meanings: `title` capitalises words, arithmetic is on integers),
//! and Go's builtins. Without functions (`--disable-template-functions`), Go's builtins alone.

use std::borrow::Cow;

use rand::Rng;

use super::{
    funcs::{Funcs, MAX_RANDOM_STRING},
    gripmock,
    value::Val,
};

/// Go's `text/template` builtins, every dialect's.
const BUILTINS: &[&str] = &[
    "and", "or", "not", "len", "index", "slice", "print", "printf", "println", "eq", "ne", "lt",
    "le", "gt", "ge", "html", "js", "urlquery",
];

const OWN: &[&str] = &[
    "newUUID",
    "randomString",
    "randomInt",
    "upper",
    "lower",
    "title",
    "trim",
    "quote",
    "squote",
    "add",
    "sub",
    "mul",
    "div",
    "mod",
];

/// ghz's dialect; `functions: false` is `--disable-template-functions`.
#[derive(Debug)]
pub(crate) struct Ghz {
    pub(crate) functions: bool,
}

impl Funcs for Ghz {
    fn exists(&self, name: &str) -> bool {
        BUILTINS.contains(&name) || (self.functions && OWN.contains(&name))
    }

    fn call<'a>(&self, name: &str, args: Vec<Val<'a>>) -> Result<Val<'a>, String> {
        if BUILTINS.contains(&name) {
            return gripmock::call(name, args);
        }
        own(name, &args)
    }
}

fn int(v: &Val<'_>, f: &str) -> Result<i64, String> {
    match v.clone().norm() {
        Val::Int(i) => Ok(i),
        Val::Float(x) => Ok(x as i64),
        Val::Str(s) => s.parse().map_err(|_| format!("{f}: {s:?} is not a number")),
        other => Err(format!("{f}: a {} is not a number", other.type_name())),
    }
}

fn arity(f: &str, args: &[Val<'_>], n: usize) -> Result<(), String> {
    if args.len() == n {
        Ok(())
    } else {
        Err(format!(
            "wrong number of args for {f}: want {n} got {}",
            args.len()
        ))
    }
}

fn own<'a>(f: &str, args: &[Val<'a>]) -> Result<Val<'a>, String> {
    let mut rng = rand::rng();
    let text = |s: String| Val::Str(Cow::Owned(s));
    Ok(match f {
        "newUUID" => {
            arity(f, args, 0)?;
            text(uuid::Uuid::new_v4().to_string())
        }
        "randomString" => {
            arity(f, args, 1)?;
            let mut n = int(&args[0], f)?;
            if n <= 0 {
                n = rng.random_range(2..=16);
            }
            // Found by the call_template fuzzer: a huge length allocated without bound.
            if n > MAX_RANDOM_STRING {
                return Err(format!(
                    "randomString: length {n} is over the limit of {MAX_RANDOM_STRING}"
                ));
            }
            const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
            text(
                (0..n)
                    .map(|_| CHARS[rng.random_range(0..CHARS.len())] as char)
                    .collect(),
            )
        }
        "randomInt" => {
            arity(f, args, 2)?;
            let (lo, hi) = (int(&args[0], f)?, int(&args[1], f)?);
            if hi <= lo {
                return Err(format!("randomInt: max {hi} must exceed min {lo}"));
            }
            Val::Int(rng.random_range(lo..hi))
        }
        "upper" | "lower" | "title" | "trim" | "quote" | "squote" => {
            arity(f, args, 1)?;
            let s = args[0].text();
            text(match f {
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
            Val::Int(match f {
                "add" => a.wrapping_add(b),
                "sub" => a.wrapping_sub(b),
                "mul" => a.wrapping_mul(b),
                "div" | "mod" if b == 0 => return Err(format!("{f}: division by zero")),
                "div" => a / b,
                _ => a % b,
            })
        }
    })
}
