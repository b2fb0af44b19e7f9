//! `volley call -help`: the grammar, then every flag in Go's `PrintDefaults` layout (sorted,
//! `  -name type` then the text indented by a tab), so it reads as grpcurl's does.

/// Flag, value name (empty for bools) and help text.
const HELP: &[(&str, &str, &str)] = &[
    (
        "H",
        "value",
        "Header 'name: value' sent with the call and with reflection requests (repeatable).",
    ),
    (
        "O",
        "string",
        "Output: empty for grpcurl's, or 'json' for one JSON document per call\n(messages, headers, trailers, status, timing), for scripts.",
    ),
    (
        "allow-unknown-fields",
        "",
        "With JSON input, ignore fields the request type does not have.",
    ),
    ("alts", "", "Use ALTS (not supported by volley call)."),
    (
        "alts-handshaker-service",
        "string",
        "ALTS handshaker address (not supported by volley call).",
    ),
    (
        "alts-target-service-account",
        "value",
        "ALTS service account (not supported by volley call).",
    ),
    (
        "authority",
        "string",
        "The :authority sent; with TLS also the name the certificate must carry.\nDefaults to the address, or 'localhost' for a Unix socket.",
    ),
    (
        "cacert",
        "string",
        "PEM file of the CAs trusted for the server's certificate (ignored with -insecure).",
    ),
    (
        "cert",
        "string",
        "PEM client certificate for mutual TLS (needs -key).",
    ),
    (
        "connect-timeout",
        "float",
        "Seconds to wait for the connection (default 10).",
    ),
    (
        "d",
        "string",
        "Request data: JSON (or text with -format text), '@' to read standard input.\nStreams take several messages in a row.",
    ),
    (
        "emit-defaults",
        "",
        "Print fields with default values in JSON output.",
    ),
    (
        "expand-headers",
        "",
        "Replace ${NAME} in header values with the environment variable NAME.",
    ),
    (
        "format",
        "string",
        "Input and output format: 'json' or 'text'. (default \"json\")",
    ),
    (
        "format-error",
        "",
        "Print a non-OK status with -format's printer, on standard error.",
    ),
    ("help", "", "Print this help and exit."),
    (
        "import-path",
        "value",
        "Directory for resolving -proto imports (repeatable).",
    ),
    (
        "insecure",
        "",
        "TLS without checking the server's certificate (not secure).",
    ),
    (
        "keepalive-time",
        "float",
        "Seconds of idleness before a keepalive ping (0: none).",
    ),
    ("key", "string", "PEM private key for -cert."),
    (
        "max-msg-sz",
        "int",
        "Largest response message accepted, in bytes (default 4194304).",
    ),
    (
        "max-time",
        "float",
        "Seconds the whole operation may take (0: no limit).",
    ),
    (
        "msg-template",
        "",
        "With describe of a message, also print a JSON template of it.",
    ),
    ("plaintext", "", "HTTP/2 without TLS (h2c)."),
    (
        "proto",
        "value",
        "A .proto source giving the schema instead of reflection (repeatable).",
    ),
    (
        "proto-out-dir",
        "string",
        "Write .proto files (not supported by volley call).",
    ),
    (
        "protocol",
        "string",
        "grpc, grpc-web or connect (unary and server-streaming calls for the\nlatter two). (default \"grpc\")",
    ),
    (
        "protoset",
        "value",
        "A compiled FileDescriptorSet giving the schema instead of reflection\n(repeatable).",
    ),
    (
        "protoset-out",
        "string",
        "With list or describe, write the elements and their dependencies to this\nfile as a FileDescriptorSet.",
    ),
    (
        "reflect-header",
        "value",
        "Header sent with reflection requests only (repeatable).",
    ),
    (
        "rpc-header",
        "value",
        "Header sent with the call only (repeatable).",
    ),
    (
        "servername",
        "string",
        "TLS name to check the certificate against (prefer -authority).",
    ),
    ("unix", "", "The address is the path of a Unix socket."),
    (
        "use-reflection",
        "value",
        "Ask the server for the schema. Defaults to true unless -proto or -protoset\nis given; with them, reflection comes first and the files are the fallback.",
    ),
    (
        "user-agent",
        "string",
        "Put this before volley's own user agent.",
    ),
    (
        "v",
        "",
        "Verbose: the method, metadata sent and received, and a summary.",
    ),
    ("version", "", "Print the version and exit."),
    (
        "vv",
        "",
        "Very verbose: -v plus response sizes and timings.",
    ),
];

/// The whole help text, for `program` (`volley call`).
pub(crate) fn text(program: &str) -> String {
    let mut out = format!(
        "Usage:
\t{program} [flags] [address] [list|describe] [symbol]

The address may be left out only with 'list' or 'describe' and -proto or -protoset.

'list' lists the services (or, given a service, its methods); 'describe' prints the
definition of a service, method, message, enum or field (every service when no symbol
is given); otherwise the symbol is a method, 'package.Service/Method' or
'package.Service.Method', called with -d's data (an empty message when none is given
and the method takes one).

The address is host:port ([::1]:port for IPv6), unix:/path or, with -unix, a socket
path; dns:///host:port and ipv4:a:p,b:p lists work too.

Available flags:
"
    );
    for (name, value, help) in HELP {
        out.push_str("  -");
        out.push_str(name);
        if !value.is_empty() {
            out.push(' ');
            out.push_str(value);
        }
        if name.len() + value.len() <= 1 {
            out.push('\t');
        } else {
            out.push_str("\n    \t");
        }
        out.push_str(&help.replace('\n', "\n    \t"));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_flag_has_help_in_order() {
        let names: Vec<&str> = super::HELP.iter().map(|h| h.0).collect();
        let flags: Vec<&str> = crate::args::FLAGS.iter().map(|f| f.0).collect();
        assert_eq!(names, flags);
        assert!(
            super::text("volley call").contains("  -plaintext\n    \tHTTP/2 without TLS (h2c).\n")
        );
    }
}
