//! The flags as values, then grpcurl's checks in grpcurl's order: flag conflicts, the verb and
//! its arguments, the schema sources. The first failure wins; warnings print as they are met.

use crate::args::{Parsed, Val};

/// Everything the flags said.
#[derive(Clone, Debug, Default)]
#[allow(missing_docs)]
pub struct Opts {
    pub plaintext: bool,
    pub insecure: bool,
    pub cacert: String,
    pub cert: String,
    pub key: String,
    pub alts: bool,
    pub alts_handshaker: String,
    pub alts_accounts: Vec<String>,
    pub headers: Vec<String>,
    pub rpc_headers: Vec<String>,
    pub reflect_headers: Vec<String>,
    pub expand_headers: bool,
    pub authority: String,
    pub servername: String,
    pub user_agent: String,
    pub data: String,
    pub format: String,
    pub allow_unknown_fields: bool,
    pub connect_timeout: f64,
    pub format_error: bool,
    pub keepalive_time: f64,
    pub max_time: f64,
    pub max_msg_sz: i64,
    pub emit_defaults: bool,
    pub protoset_out: String,
    pub proto_out_dir: String,
    pub msg_template: bool,
    pub verbose: bool,
    pub very_verbose: bool,
    pub protoset: Vec<String>,
    pub proto: Vec<String>,
    pub import_path: Vec<String>,
    /// `-use-reflection`: `None` when not given.
    pub use_reflection: Option<bool>,
    pub unix: bool,
    pub help: bool,
    pub version: bool,
    /// `-protocol`: grpc (default), grpc-web or connect.
    pub protocol: String,
    /// `-O`: empty for grpcurl's output, `json` for one JSON document.
    pub output: String,
    pub args: Vec<String>,
}

impl Opts {
    /// The values of a parsed command line.
    pub fn from_parsed(p: Parsed) -> Opts {
        let mut o = Opts {
            format: "json".into(),
            protocol: "grpc".into(),
            args: p.args,
            ..Opts::default()
        };
        for (name, v) in p.flags {
            let (b, s, f, i) = match &v {
                Val::Bool(b) => (*b, String::new(), 0.0, 0),
                Val::Str(s) => (false, s.clone(), 0.0, 0),
                Val::Float(f) => (false, String::new(), *f, 0),
                Val::Int(i) => (false, String::new(), 0.0, *i),
            };
            match name {
                "plaintext" => o.plaintext = b,
                "insecure" => o.insecure = b,
                "cacert" => o.cacert = s,
                "cert" => o.cert = s,
                "key" => o.key = s,
                "alts" => o.alts = b,
                "alts-handshaker-service" => o.alts_handshaker = s,
                "alts-target-service-account" => o.alts_accounts.push(s),
                "H" => o.headers.push(s),
                "rpc-header" => o.rpc_headers.push(s),
                "reflect-header" => o.reflect_headers.push(s),
                "expand-headers" => o.expand_headers = b,
                "authority" => o.authority = s,
                "servername" => o.servername = s,
                "user-agent" => o.user_agent = s,
                "d" => o.data = s,
                "format" => o.format = s,
                "allow-unknown-fields" => o.allow_unknown_fields = b,
                "connect-timeout" => o.connect_timeout = f,
                "format-error" => o.format_error = b,
                "keepalive-time" => o.keepalive_time = f,
                "max-time" => o.max_time = f,
                "max-msg-sz" => o.max_msg_sz = i,
                "emit-defaults" => o.emit_defaults = b,
                "protoset-out" => o.protoset_out = s,
                "proto-out-dir" => o.proto_out_dir = s,
                "msg-template" => o.msg_template = b,
                "v" => o.verbose = b,
                "vv" => o.very_verbose = b,
                "protoset" => o.protoset.push(s),
                "proto" => o.proto.push(s),
                "import-path" => o.import_path.push(s),
                "use-reflection" => o.use_reflection = Some(b),
                "unix" => o.unix = b,
                "help" => o.help = b,
                "version" => o.version = b,
                "protocol" => o.protocol = s,
                "O" => o.output = s,
                _ => {}
            }
        }
        o
    }
}

/// What to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verb {
    /// `list [SERVICE]`.
    List(Option<String>),
    /// `describe [SYMBOL]`.
    Describe(Option<String>),
    /// `SERVICE/METHOD`.
    Invoke(String),
}

/// A checked command line.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The address, when given.
    pub target: Option<String>,
    /// The verb.
    pub verb: Verb,
    /// Reflection is asked (alone, or with the files as a fallback).
    pub reflection: bool,
    /// 0, 1 (`-v`) or 2 (`-vv`).
    pub verbosity: u8,
}

/// A usage error: the message, then `Try '... -help'`, exit 2.
#[derive(Debug, PartialEq, Eq)]
pub struct Usage(pub String);

fn fail<T>(msg: &str) -> Result<T, Usage> {
    Err(Usage(msg.to_owned()))
}

/// grpcurl's checks, in its order. Warnings are pushed to `warn` as they are met.
pub fn check(o: &Opts, warn: &mut Vec<String>) -> Result<Plan, Usage> {
    for (v, name) in [
        (o.connect_timeout, "connect-timeout"),
        (o.keepalive_time, "keepalive-time"),
        (o.max_time, "max-time"),
        (o.max_msg_sz as f64, "max-msg-sz"),
    ] {
        if v < 0.0 {
            return fail(&format!("The -{name} argument must not be negative."));
        }
    }
    let tls = !o.plaintext && !o.alts;
    if o.plaintext && o.alts {
        return fail("The -plaintext and -alts arguments are mutually exclusive.");
    }
    if o.insecure && !tls {
        return fail("The -insecure argument can only be used with TLS.");
    }
    if !o.cert.is_empty() && !tls {
        return fail("The -cert argument can only be used with TLS.");
    }
    if !o.key.is_empty() && !tls {
        return fail("The -key argument can only be used with TLS.");
    }
    if o.key.is_empty() != o.cert.is_empty() {
        return fail("The -cert and -key arguments must be used together and both be present.");
    }
    if !o.alts_handshaker.is_empty() && !o.alts {
        return fail("The -alts-handshaker-service argument must be used with the -alts argument.");
    }
    if !o.alts_accounts.is_empty() && !o.alts {
        return fail(
            "The -alts-target-service-account argument must be used with the -alts argument.",
        );
    }
    if o.format != "json" && o.format != "text" {
        return fail("The -format option must be 'json' or 'text'.");
    }
    if o.emit_defaults && o.format != "json" {
        warn.push("The -emit-defaults is only used when using json format.".into());
    }
    let mut args: &[String] = &o.args;
    if args.is_empty() {
        return fail("Too few arguments.");
    }
    let mut target = None;
    if args[0] != "list" && args[0] != "describe" {
        target = Some(args[0].clone());
        args = &args[1..];
    }
    if args.is_empty() {
        return fail("Too few arguments.");
    }
    let verbosity = if o.very_verbose {
        2
    } else {
        u8::from(o.verbose)
    };
    let verb;
    if args[0] == "list" || args[0] == "describe" {
        if !o.data.is_empty() {
            warn.push("The -d argument is not used with 'list' or 'describe' verb.".into());
        }
        if !o.rpc_headers.is_empty() {
            warn.push(
                "The -rpc-header argument is not used with 'list' or 'describe' verb.".into(),
            );
        }
        let symbol = args.get(1).cloned();
        verb = if args[0] == "list" {
            Verb::List(symbol)
        } else {
            Verb::Describe(symbol)
        };
        args = &args[(1 + usize::from(args.len() > 1))..];
    } else {
        verb = Verb::Invoke(args[0].clone());
        args = &args[1..];
    }
    if !args.is_empty() {
        return fail("Too many arguments.");
    }
    if o.protoset.is_empty() && o.proto.is_empty() && target.is_none() {
        return fail(
            "No host:port specified, no protoset specified, and no proto sources specified.",
        );
    }
    if !o.protoset.is_empty() && !o.reflect_headers.is_empty() {
        warn.push("The -reflect-header argument is not used when -protoset files are used.".into());
    }
    if !o.protoset.is_empty() && !o.proto.is_empty() {
        return fail("Use either -protoset files or -proto files, but not both.");
    }
    if !o.import_path.is_empty() && o.proto.is_empty() {
        warn.push("The -import-path argument is not used unless -proto files are used.".into());
    }
    let files = !o.protoset.is_empty() || !o.proto.is_empty();
    if o.use_reflection == Some(false) && !files {
        return fail(
            "No protoset files or proto files specified and -use-reflection set to false.",
        );
    }
    let reflection = o.use_reflection.unwrap_or(!files);
    Ok(Plan {
        target,
        verb,
        reflection,
        verbosity,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::parse;

    fn plan(args: &[&str]) -> (Result<Plan, Usage>, Vec<String>) {
        let parsed = parse(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        let mut warn = Vec::new();
        (check(&Opts::from_parsed(parsed), &mut warn), warn)
    }

    #[test]
    fn verbs_and_targets() {
        let p = plan(&["-plaintext", "h:1", "list"]).0.unwrap();
        assert_eq!(
            (p.target.as_deref(), p.verb),
            (Some("h:1"), Verb::List(None))
        );
        let p = plan(&["-proto", "x.proto", "describe", "a.B"]).0.unwrap();
        assert_eq!(p.verb, Verb::Describe(Some("a.B".into())));
        assert!(!p.reflection && p.target.is_none());
        let p = plan(&["h:1", "a.B/C"]).0.unwrap();
        assert_eq!(p.verb, Verb::Invoke("a.B/C".into()));
        assert!(p.reflection);
    }

    #[test]
    fn grpcurl_usage_errors_in_order() {
        let err = |a: &[&str]| plan(a).0.unwrap_err().0;
        assert_eq!(err(&[]), "Too few arguments.");
        assert_eq!(err(&["h:1"]), "Too few arguments.");
        assert_eq!(err(&["h:1", "list", "a", "b"]), "Too many arguments.");
        assert_eq!(
            err(&["-plaintext", "-insecure", "h:1", "list"]),
            "The -insecure argument can only be used with TLS."
        );
        assert_eq!(
            err(&["-cert", "c", "h:1", "list"]),
            "The -cert and -key arguments must be used together and both be present."
        );
        assert_eq!(
            err(&["-format", "yaml", "h:1", "list"]),
            "The -format option must be 'json' or 'text'."
        );
        assert_eq!(
            err(&["-max-time=-1", "h:1", "list"]),
            "The -max-time argument must not be negative."
        );
        assert_eq!(
            err(&["-proto", "a", "-protoset", "b", "list"]),
            "Use either -protoset files or -proto files, but not both."
        );
        assert_eq!(
            err(&["-use-reflection=false", "h:1", "list"]),
            "No protoset files or proto files specified and -use-reflection set to false."
        );
        assert_eq!(err(&["-proto", "x.proto", "a.B/C"]), "Too few arguments.");
        let (_, warn) = plan(&["-d", "{}", "-rpc-header", "a: b", "h:1", "list"]);
        assert_eq!(warn.len(), 2);
    }
}
