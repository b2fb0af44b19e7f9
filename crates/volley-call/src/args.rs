//! grpcurl's command line read with Go's `flag` grammar: `-flag` or `--flag`, `-flag=value` or
//! `-flag value`, bool flags only as `-flag` or `-flag=BOOL`, repeatable flags appending, and
//! parsing stopping at the first argument that is not a flag (so flags come before the address).
//! Errors carry Go's words (`flag provided but not defined: -foo`).

/// What each flag holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `-flag` or `-flag=BOOL`.
    Bool,
    /// Like `Bool`, but remembers whether it was given (`-use-reflection`).
    OptBool,
    /// A string; the last one given wins.
    Str,
    /// Repeatable; every value kept.
    Multi,
    /// Seconds as a float (`strconv.ParseFloat`).
    Float,
    /// An integer (`strconv.ParseInt(s, 0, 64)`: `0x10`, `010` and `-5` too).
    Int,
}

/// The flags `volley call` takes: grpcurl's, then volley's own (`-protocol`, `-O`).
pub(crate) const FLAGS: &[(&str, Kind)] = &[
    ("H", Kind::Multi),
    ("O", Kind::Str),
    ("allow-unknown-fields", Kind::Bool),
    ("alts", Kind::Bool),
    ("alts-handshaker-service", Kind::Str),
    ("alts-target-service-account", Kind::Multi),
    ("authority", Kind::Str),
    ("cacert", Kind::Str),
    ("cert", Kind::Str),
    ("connect-timeout", Kind::Float),
    ("d", Kind::Str),
    ("emit-defaults", Kind::Bool),
    ("expand-headers", Kind::Bool),
    ("format", Kind::Str),
    ("format-error", Kind::Bool),
    ("help", Kind::Bool),
    ("import-path", Kind::Multi),
    ("insecure", Kind::Bool),
    ("keepalive-time", Kind::Float),
    ("key", Kind::Str),
    ("max-msg-sz", Kind::Int),
    ("max-time", Kind::Float),
    ("msg-template", Kind::Bool),
    ("plaintext", Kind::Bool),
    ("proto", Kind::Multi),
    ("proto-out-dir", Kind::Str),
    ("protocol", Kind::Str),
    ("protoset", Kind::Multi),
    ("protoset-out", Kind::Str),
    ("reflect-header", Kind::Multi),
    ("rpc-header", Kind::Multi),
    ("servername", Kind::Str),
    ("unix", Kind::Bool),
    ("use-reflection", Kind::OptBool),
    ("user-agent", Kind::Str),
    ("v", Kind::Bool),
    ("version", Kind::Bool),
    ("vv", Kind::Bool),
];

/// One parsed value.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    /// A bool flag's value.
    Bool(bool),
    /// A string flag's value.
    Str(String),
    /// A float flag's value.
    Float(f64),
    /// An integer flag's value.
    Int(i64),
}

/// The flags given (in order) and the arguments after them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    /// `(name, value)` for every flag, in the order given.
    pub flags: Vec<(&'static str, Val)>,
    /// The positional arguments.
    pub args: Vec<String>,
}

/// Why parsing stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// `-h` (undefined, so Go prints usage and exits 0).
    Help,
    /// Go's message; usage follows it, exit 2.
    Bad(String),
}

/// Parses `args` (without the program name) as Go's `flag.FlagSet.Parse` does.
pub fn parse(args: &[String]) -> Result<Parsed, ParseError> {
    let mut out = Parsed::default();
    let mut i = 0;
    while i < args.len() {
        let s = &args[i];
        if s.len() < 2 || !s.starts_with('-') {
            break;
        }
        let dashes = if s.as_bytes()[1] == b'-' { 2 } else { 1 };
        if s == "--" {
            i += 1;
            break;
        }
        let name_val = &s[dashes..];
        if name_val.is_empty() || name_val.starts_with('-') || name_val.starts_with('=') {
            return Err(ParseError::Bad(format!("bad flag syntax: {s}")));
        }
        i += 1;
        // `=` cannot be the name's first character. Bytes, as Go's flag package reads them: a
        // name may start with a character of several bytes (`-é`), and `=` is one byte.
        let (name, value) = match name_val.bytes().skip(1).position(|b| b == b'=') {
            Some(p) => (&name_val[..p + 1], Some(&name_val[p + 2..])),
            None => (name_val, None),
        };
        let Some(&(flag, kind)) = FLAGS.iter().find(|(n, _)| *n == name) else {
            if name == "h" {
                return Err(ParseError::Help);
            }
            return Err(ParseError::Bad(format!(
                "flag provided but not defined: -{name}"
            )));
        };
        let val = match kind {
            Kind::Bool | Kind::OptBool => {
                let text = value.unwrap_or("true");
                match parse_bool(text) {
                    Some(b) => Val::Bool(b),
                    None if kind == Kind::OptBool => {
                        return Err(ParseError::Bad(format!(
                            "invalid boolean value {} for -{name}: strconv.ParseBool: parsing {}: invalid syntax",
                            go_quote(text),
                            go_quote(text)
                        )));
                    }
                    None => {
                        return Err(ParseError::Bad(format!(
                            "invalid boolean value {} for -{name}: parse error",
                            go_quote(text)
                        )));
                    }
                }
            }
            _ => {
                let text = match value {
                    Some(v) => v.to_owned(),
                    None if i < args.len() => {
                        i += 1;
                        args[i - 1].clone()
                    }
                    None => {
                        return Err(ParseError::Bad(format!("flag needs an argument: -{name}")));
                    }
                };
                let invalid = |why: &str| {
                    ParseError::Bad(format!(
                        "invalid value {} for flag -{name}: {why}",
                        go_quote(&text)
                    ))
                };
                match kind {
                    Kind::Float => Val::Float(parse_float(&text).map_err(invalid)?),
                    Kind::Int => Val::Int(parse_int(&text).map_err(invalid)?),
                    _ => Val::Str(text),
                }
            }
        };
        out.flags.push((flag, val));
    }
    out.args = args[i..].to_vec();
    Ok(out)
}

/// `strconv.ParseBool`.
pub(crate) fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// `strconv.ParseFloat(s, 64)` as the flag package reports it.
fn parse_float(s: &str) -> Result<f64, &'static str> {
    let lower = s.to_ascii_lowercase();
    let body = lower.trim_start_matches(['+', '-']);
    if matches!(body, "inf" | "infinity" | "nan") {
        return s.parse::<f64>().or(Ok(if lower.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        }));
    }
    if s.is_empty() || s.contains(['_', ' ']) || lower.contains("inf") || lower.contains("nan") {
        return Err("parse error");
    }
    match s.parse::<f64>() {
        Ok(f) if f.is_infinite() => Err("value out of range"),
        Ok(f) => Ok(f),
        Err(_) => Err("parse error"),
    }
}

/// `strconv.ParseInt(s, 0, 64)`: sign, then `0x`, `0o`, `0b` or a leading `0` for octal, and
/// underscores between digits.
fn parse_int(s: &str) -> Result<i64, &'static str> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d.to_owned())
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d.to_owned())
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d.to_owned())
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, lower[1..].to_owned())
    } else {
        (10, lower.clone())
    };
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
    {
        return Err("parse error");
    }
    let digits: String = digits.chars().filter(|c| *c != '_').collect();
    let magnitude = u64::from_str_radix(&digits, radix).map_err(|e| match e.kind() {
        std::num::IntErrorKind::PosOverflow => "value out of range",
        _ => "parse error",
    })?;
    if neg {
        if magnitude > i64::MAX as u64 + 1 {
            return Err("value out of range");
        }
        Ok((magnitude as i64).wrapping_neg())
    } else {
        i64::try_from(magnitude).map_err(|_| "value out of range")
    }
}

/// Go's `%q` for the ASCII strings flags hold.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::from('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Parsed, ParseError> {
        parse(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn go_grammar() {
        let got = p(&[
            "-plaintext",
            "--d={}",
            "-H",
            "a: b",
            "-H=c: d",
            "host:1",
            "list",
            "-v",
        ])
        .unwrap();
        assert_eq!(
            got.flags,
            vec![
                ("plaintext", Val::Bool(true)),
                ("d", Val::Str("{}".into())),
                ("H", Val::Str("a: b".into())),
                ("H", Val::Str("c: d".into())),
            ]
        );
        // Parsing stops at the first positional argument: `-v` is an argument.
        assert_eq!(got.args, ["host:1", "list", "-v"]);
        let got = p(&["-plaintext=false", "-use-reflection=0", "--", "-x"]).unwrap();
        assert_eq!(got.flags[0].1, Val::Bool(false));
        assert_eq!(got.args, ["-x"]);
        // A bool flag never takes the next argument.
        assert_eq!(p(&["-v", "false"]).unwrap().args, ["false"]);
        // A lone dash is an argument.
        assert_eq!(p(&["-", "x"]).unwrap().args, ["-", "x"]);
    }

    #[test]
    fn numbers_as_strconv() {
        let v = |a: &[&str]| p(a).unwrap().flags[0].1.clone();
        assert_eq!(v(&["-max-msg-sz", "0x10"]), Val::Int(16));
        assert_eq!(v(&["-max-msg-sz", "010"]), Val::Int(8));
        assert_eq!(v(&["-max-msg-sz=-5"]), Val::Int(-5));
        assert_eq!(v(&["-max-msg-sz=1_000"]), Val::Int(1000));
        assert_eq!(v(&["-max-time", "1.5"]), Val::Float(1.5));
        assert_eq!(v(&["-max-time", ".5"]), Val::Float(0.5));
        assert_eq!(v(&["-max-time", "1e3"]), Val::Float(1000.0));
    }

    #[test]
    fn go_messages() {
        let bad = |a: &[&str]| match p(a) {
            Err(ParseError::Bad(m)) => m,
            other => panic!("{other:?}"),
        };
        assert_eq!(bad(&["-foo"]), "flag provided but not defined: -foo");
        assert_eq!(bad(&["--foo=1"]), "flag provided but not defined: -foo");
        assert_eq!(
            bad(&["-max-time", "abc"]),
            "invalid value \"abc\" for flag -max-time: parse error"
        );
        assert_eq!(
            bad(&["-plaintext=maybe"]),
            "invalid boolean value \"maybe\" for -plaintext: parse error"
        );
        assert_eq!(
            bad(&["-use-reflection=maybe"]),
            "invalid boolean value \"maybe\" for -use-reflection: strconv.ParseBool: parsing \"maybe\": invalid syntax"
        );
        assert_eq!(bad(&["-d"]), "flag needs an argument: -d");
        assert_eq!(bad(&["---x"]), "bad flag syntax: ---x");
        assert_eq!(bad(&["-=x"]), "bad flag syntax: -=x");
        assert_eq!(
            bad(&["-max-msg-sz", "99999999999999999999"]),
            "invalid value \"99999999999999999999\" for flag -max-msg-sz: value out of range"
        );
        assert_eq!(p(&["-h"]), Err(ParseError::Help));
        // A name that starts with a character of several bytes is read, not sliced through.
        assert_eq!(bad(&["-é"]), "flag provided but not defined: -é");
        assert_eq!(bad(&["--é=1"]), "flag provided but not defined: -é");
        assert_eq!(bad(&["-ü=é"]), "flag provided but not defined: -ü");
    }
}
