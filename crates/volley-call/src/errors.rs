//! A call's non-OK status as grpcurl prints it on standard error: the `ERROR:` block with grpc-go's
//! code name, the message and each detail indented behind `  1)` and a tab; or, with
//! `-format-error`, the `google.rpc.Status` message in `-format`'s printer with no final newline.
//! The exit code is 64 plus the status code.

use std::io::Write;

use volley_proto::gofmt;

use crate::{format::Formatter, status::CallStatus};

/// grpc-go's `codes.Code.String()`.
pub(crate) fn code_name(code: i32) -> String {
    const NAMES: [&str; 17] = [
        "OK",
        "Canceled",
        "Unknown",
        "InvalidArgument",
        "DeadlineExceeded",
        "NotFound",
        "AlreadyExists",
        "PermissionDenied",
        "ResourceExhausted",
        "FailedPrecondition",
        "Aborted",
        "OutOfRange",
        "Unimplemented",
        "Internal",
        "Unavailable",
        "DataLoss",
        "Unauthenticated",
    ];
    usize::try_from(code)
        .ok()
        .and_then(|i| NAMES.get(i))
        .map_or_else(|| format!("Code({code})"), |n| (*n).to_owned())
}

/// The code for a grpc-go code name (`NotFound` is 5).
pub(crate) fn code_of(name: &str) -> Option<i32> {
    (0..17).find(|c| code_name(*c) == name)
}

/// grpcurl's exit code for a status.
pub(crate) fn exit_code(status: &CallStatus) -> i32 {
    64 + status.code
}

/// grpcurl's `PrintStatus`.
pub(crate) fn print_status(
    w: &mut dyn Write,
    status: &CallStatus,
    fmt: &Formatter,
) -> std::io::Result<()> {
    if status.code == 0 {
        return writeln!(w, "OK");
    }
    write!(
        w,
        "ERROR:\n  Code: {}\n  Message: {}\n",
        code_name(status.code),
        status.message
    )?;
    if status.details.is_empty() {
        return Ok(());
    }
    writeln!(w, "  Details:")?;
    for (i, d) in status.details.iter().enumerate() {
        let prefix = format!("  {})", i + 1);
        write!(w, "{prefix}\t")?;
        let pad = format!("{}\t", " ".repeat(prefix.len()));
        match fmt.any(&d.type_url, &d.value) {
            Err(e) => writeln!(w, "Error parsing detail message: {e}")?,
            Ok(text) => {
                for (n, line) in text.split('\n').enumerate() {
                    if n == 0 {
                        writeln!(w, "{line}")?;
                    } else {
                        writeln!(w, "{pad}{line}")?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// `-format-error`: the status as a `google.rpc.Status` message, no final newline.
pub(crate) fn format_status(
    status: &CallStatus,
    fmt: &Formatter,
    emit_defaults: bool,
) -> Result<String, String> {
    match fmt {
        Formatter::Text(t) => Ok(t.format_status(status.code, &status.message, &status.details)),
        Formatter::Json(j) => {
            // golang/protobuf's jsonpb for a generated message: fields in declaration order.
            let mut fields: Vec<String> = Vec::new();
            if status.code != 0 || emit_defaults {
                fields.push(format!("\"code\":{}", status.code));
            }
            if !status.message.is_empty() || emit_defaults {
                let mut m = String::new();
                gofmt::json_string(&mut m, &status.message);
                fields.push(format!("\"message\":{m}"));
            }
            if !status.details.is_empty() || emit_defaults {
                let mut list = Vec::new();
                for d in &status.details {
                    let mut s = String::new();
                    j.any(&mut s, &d.type_url, &d.value)?;
                    list.push(s);
                }
                fields.push(format!("\"details\":[{}]", list.join(",")));
            }
            Ok(crate::json_out::indent(&format!(
                "{{{}}}",
                fields.join(",")
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json_out::JsonFormat;

    fn json() -> Formatter {
        Formatter::Json(JsonFormat {
            emit_defaults: false,
            pool: prost_reflect::DescriptorPool::new(),
        })
    }

    #[test]
    fn error_block_as_grpcurl() {
        let mut s = CallStatus::new(5, "fail");
        s.details.push(prost_types::Any {
            type_url: "type.googleapis.com/unknown.Thing".into(),
            value: vec![1, 2],
        });
        let mut out = Vec::new();
        print_status(&mut out, &s, &json()).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "ERROR:\n  Code: NotFound\n  Message: fail\n  Details:\n  1)\t{\n    \t  \"@error\": \"unknown.Thing is not recognized; see @value for raw binary message data\",\n    \t  \"@type\": \"type.googleapis.com/unknown.Thing\",\n    \t  \"@value\": \"AQI=\"\n    \t}\n"
        );
        assert_eq!(code_name(20), "Code(20)");
        assert_eq!(code_of("Unauthenticated"), Some(16));
    }

    #[test]
    fn format_error_json() {
        let s = CallStatus::new(3, "bad <thing> & stuff");
        assert_eq!(
            format_status(&s, &json(), false).unwrap(),
            "{\n  \"code\": 3,\n  \"message\": \"bad \\u003cthing\\u003e \\u0026 stuff\"\n}"
        );
    }
}
