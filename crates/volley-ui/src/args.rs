//! grpcui's command line: its flags (Go's single-dash spelling taken too), checked as grpcui
//! checks them, made into the UI's state.

use std::{path::PathBuf, time::Duration};

use clap::Args;

/// `volley ui [flags] ADDRESS` (or the binary run as `grpcui`).
#[derive(Debug, Args, Clone)]
pub struct UiArgs {
    /// Plain-text HTTP/2 to the target, no TLS.
    #[arg(long)]
    pub plaintext: bool,
    /// TLS without checking the server's certificate.
    #[arg(long)]
    pub insecure: bool,
    /// Root certificates to trust (PEM).
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<String>,
    /// Client certificate (PEM), with -key.
    #[arg(long, value_name = "FILE")]
    pub cert: Option<String>,
    /// Client private key (PEM), with -cert.
    #[arg(long, value_name = "FILE")]
    pub key: Option<String>,
    /// `name: value` metadata for every call and reflection request (repeatable).
    #[arg(short = 'H', value_name = "HEADER")]
    pub header: Vec<String>,
    /// `name: value` metadata for calls only (repeatable).
    #[arg(long = "rpc-header", value_name = "HEADER")]
    pub rpc_header: Vec<String>,
    /// `name: value` metadata for reflection requests only (repeatable).
    #[arg(long = "reflect-header", value_name = "HEADER")]
    pub reflect_header: Vec<String>,
    /// `name: value` rows the form starts with, editable (repeatable).
    #[arg(long = "default-header", value_name = "HEADER")]
    pub default_header: Vec<String>,
    /// The `:authority` sent (and the TLS server name).
    #[arg(long)]
    pub authority: Option<String>,
    /// The TLS server name (must equal -authority when both are given).
    #[arg(long)]
    pub servername: Option<String>,
    /// Seconds a dial may take (default 10).
    #[arg(long = "connect-timeout", value_name = "SECONDS")]
    pub connect_timeout: Option<f64>,
    /// Seconds of idle before an HTTP/2 keepalive ping.
    #[arg(long = "keepalive-time", value_name = "SECONDS")]
    pub keepalive_time: Option<f64>,
    /// Seconds a call may take at most.
    #[arg(long = "max-time", value_name = "SECONDS")]
    pub max_time: Option<f64>,
    /// Largest reply message in bytes (default 4 MiB).
    #[arg(long = "max-msg-sz", value_name = "BYTES")]
    pub max_msg_sz: Option<usize>,
    /// Show fields at their default values in replies (default true).
    #[arg(long = "emit-defaults", default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub emit_defaults: bool,
    /// Open the page in a browser.
    #[arg(long = "open-browser")]
    pub open_browser: bool,
    /// The .proto files describing the target (no reflection then).
    #[arg(long = "proto", value_name = "FILE")]
    pub proto: Vec<PathBuf>,
    /// Descriptor sets describing the target (no reflection then).
    #[arg(long = "protoset", value_name = "FILE")]
    pub protoset: Vec<PathBuf>,
    /// Import roots for -proto (repeatable).
    #[arg(long = "import-path", value_name = "DIR")]
    pub import_path: Vec<PathBuf>,
    /// Offer only these services (repeatable; default all).
    #[arg(long = "service", value_name = "NAME")]
    pub service: Vec<String>,
    /// Offer only these methods, `pkg.Service.Method` or `pkg.Service/Method` (repeatable).
    #[arg(long = "method", value_name = "NAME")]
    pub method: Vec<String>,
    /// The page's port (0: a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// The page's address (127.0.0.1: this host only).
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: String,
    /// volley's: the protocol of the calls, `grpc`, `grpc-web` or `connect`.
    #[arg(long, default_value = "grpc", value_parser = ["grpc", "grpc-web", "connect"])]
    pub protocol: String,
    /// volley's: every page request must bear `authorization: Bearer TOKEN` (or `?token=`).
    #[arg(
        long = "ui-token",
        env = "VOLLEY_UI_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub ui_token: Option<String>,
    /// The target, `host:port`.
    #[arg(value_name = "ADDRESS")]
    pub address: String,
}

/// grpcui's flags of more than one letter: Go's `-plaintext` is clap's `--plaintext`.
const GO_FLAGS: &[&str] = &[
    "plaintext",
    "insecure",
    "cacert",
    "cert",
    "key",
    "rpc-header",
    "reflect-header",
    "default-header",
    "authority",
    "servername",
    "connect-timeout",
    "keepalive-time",
    "max-time",
    "max-msg-sz",
    "emit-defaults",
    "open-browser",
    "proto",
    "protoset",
    "import-path",
    "service",
    "method",
    "port",
    "bind",
    "protocol",
    "ui-token",
];

/// The arguments after `ui` with Go's single-dash long flags made clap's double-dash ones.
pub fn go_style(args: &mut [std::ffi::OsString]) {
    for a in args.iter_mut() {
        let Some(s) = a.to_str() else { continue };
        let Some(rest) = s.strip_prefix('-').filter(|r| !r.starts_with('-')) else {
            continue;
        };
        let name = rest.split('=').next().unwrap_or_default();
        if GO_FLAGS.contains(&name) {
            *a = format!("-{s}").into();
        }
    }
}

/// `name: value` pairs from header flags (grpcurl's form); one line naming a bad one.
pub(crate) fn pairs(flags: &[String], flag: &str) -> Result<Vec<(String, String)>, String> {
    flags
        .iter()
        .map(|h| match h.split_once(':') {
            Some((n, v)) if !n.trim().is_empty() => Ok((n.trim().to_owned(), v.trim().to_owned())),
            _ => Err(format!("{flag} {h:?}: expected `name: value`")),
        })
        .collect()
}

/// Seconds from a flag, refused when negative or not finite.
pub(crate) fn seconds(v: Option<f64>, flag: &str) -> Result<Option<Duration>, String> {
    match v {
        None => Ok(None),
        Some(s) if s.is_finite() && s >= 0.0 => Ok((s > 0.0).then(|| Duration::from_secs_f64(s))),
        Some(s) => Err(format!("{flag} {s}: expected seconds (0 or more)")),
    }
}

impl UiArgs {
    /// grpcui's own checks of its flags, in its words where it has them.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.plaintext && self.insecure {
            return Err("The -plaintext and -insecure arguments are mutually exclusive.".into());
        }
        if self.plaintext && (self.cert.is_some() || self.key.is_some()) {
            return Err("The -plaintext and -cert/-key arguments are mutually exclusive.".into());
        }
        if self.cert.is_some() != self.key.is_some() {
            return Err("The -cert and -key arguments must be used together.".into());
        }
        if !self.proto.is_empty() && !self.protoset.is_empty() {
            return Err("Use either -protoset files or -proto files, but not both.".into());
        }
        Ok(())
    }
}
