//! k6's log lines: logrus text (`time="..." level=info msg="..." source=console`), JSON or raw
//! messages, on stderr unless `--log-output` says stdout, a file or none. An iteration's
//! exception is logged once per distinct message, with k6's fields; the later ones are counted.

use std::{collections::HashSet, fs::File, io::Write, sync::Mutex};

/// Where log lines go.
#[derive(Debug)]
pub(crate) enum Output {
    Stderr,
    Stdout,
    None,
    File(Mutex<File>),
}

/// How a line is written.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Format {
    Text,
    Json,
    Raw,
}

/// The run's logger.
#[derive(Debug)]
pub(crate) struct Logger {
    output: Output,
    format: Format,
    /// `-v`: debug lines too.
    verbose: bool,
    seen: Mutex<HashSet<String>>,
    lock: Mutex<()>,
}

impl Logger {
    /// `--log-output` (`stderr`, `stdout`, `none`, `file=PATH`) and `--log-format` (`text`,
    /// `json`, `raw`).
    pub(crate) fn new(output: &str, format: &str, verbose: bool) -> Result<Logger, String> {
        let output = match output {
            "" | "stderr" => Output::Stderr,
            "stdout" => Output::Stdout,
            "none" => Output::None,
            o => match o.strip_prefix("file=") {
                Some(path) => Output::File(Mutex::new(
                    File::create(path).map_err(|e| format!("--log-output file={path}: {e}"))?,
                )),
                None => {
                    return Err(format!(
                        "--log-output {o:?}: volley run writes logs to stderr, stdout, none or file=PATH"
                    ));
                }
            },
        };
        let format = match format {
            "" | "text" => Format::Text,
            "json" => Format::Json,
            "raw" => Format::Raw,
            f => return Err(format!("--log-format {f:?}: one of text, json, raw")),
        };
        Ok(Logger {
            output,
            format,
            verbose,
            seen: Mutex::new(HashSet::new()),
            lock: Mutex::new(()),
        })
    }

    /// Whether `level` lines are written.
    pub(crate) fn enabled(&self, level: &str) -> bool {
        !matches!(self.output, Output::None) && (level != "debug" || self.verbose)
    }

    /// Writes one line: `msg` at `level`, then `fields` (k6 sorts them by name).
    pub(crate) fn line(&self, level: &str, msg: &str, fields: &[(&str, &str)]) {
        if !self.enabled(level) {
            return;
        }
        let mut fields = fields.to_vec();
        fields.sort_by_key(|(k, _)| *k);
        let text = match self.format {
            Format::Raw => format!("{msg}\n"),
            Format::Json => {
                let mut m = serde_json::Map::new();
                for (k, v) in &fields {
                    m.insert((*k).to_owned(), (*v).into());
                }
                m.insert("level".into(), level.into());
                m.insert("msg".into(), msg.into());
                m.insert("time".into(), now_rfc3339().into());
                format!("{}\n", serde_json::Value::Object(m))
            }
            Format::Text => {
                let mut s = format!(
                    "time=\"{}\" level={level} msg={}",
                    now_rfc3339(),
                    quote(msg)
                );
                for (k, v) in &fields {
                    s.push(' ');
                    s.push_str(k);
                    s.push('=');
                    s.push_str(&quote_if_needed(v));
                }
                s.push('\n');
                s
            }
        };
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let _ = match &self.output {
            Output::Stderr => std::io::stderr().lock().write_all(text.as_bytes()),
            Output::Stdout => std::io::stdout().lock().write_all(text.as_bytes()),
            Output::File(f) => f
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .write_all(text.as_bytes()),
            Output::None => Ok(()),
        };
    }

    /// An iteration's exception: logged the first time its text is seen.
    pub(crate) fn exception(&self, text: &str, executor: &str, scenario: &str) {
        let first = self
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(text.to_owned());
        if first {
            self.line(
                "error",
                text,
                &[
                    ("executor", executor),
                    ("hint", "script exception"),
                    ("scenario", scenario),
                    ("source", "stacktrace"),
                ],
            );
        }
    }
}

/// logrus quotes a message always.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// logrus quotes a field value only when it holds a space, a quote or `=`.
fn quote_if_needed(s: &str) -> String {
    if s.is_empty()
        || s.chars()
            .any(|c| c == ' ' || c == '"' || c == '=' || (c as u32) < 0x20)
    {
        quote(s)
    } else {
        s.to_owned()
    }
}

/// The time now as RFC 3339 in UTC, seconds precision (logrus's default for text).
fn now_rfc3339() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    volley_proto::gofmt::rfc3339(nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_lines_quote_as_logrus_does() {
        assert_eq!(quote("a \"b\"\n"), "\"a \\\"b\\\"\\n\"");
        assert_eq!(quote_if_needed("console"), "console");
        assert_eq!(quote_if_needed("script exception"), "\"script exception\"");
        let t = now_rfc3339();
        assert_eq!(t.len(), 20, "{t}");
        assert!(t.ends_with('Z') && t.as_bytes()[10] == b'T', "{t}");
    }
}
