//! ghz's options as typed values, read once from the command line and once from a config file,
//! then merged field by field: the command line wins, the config file fills the rest, and
//! `resolve` supplies ghz's defaults. Each field is declared once, with its kind, config key and
//! flag; a value that does not parse fails with one line naming the flag (or the config key).
//!
//! Longer than most files here because it is one table of ghz's 57 options; splitting the table
//! would scatter what one glance should see.

use std::{path::PathBuf, time::Duration};

use serde_json::{Map, Value};

use super::{
    PlanError,
    args::BenchArgs,
    options::{DurationStop, Format},
    schedule::Shape,
    units::{parse_duration, parse_size},
};

/// How one kind of option is read from its clap field and from a config value.
pub(super) trait Kind {
    /// The field's type in [`BenchArgs`].
    type Arg;
    /// The typed value.
    type Value;
    /// The value given on the command line, if any.
    fn arg(arg: &Self::Arg, flag: &str) -> Result<Option<Self::Value>, PlanError>;
    /// A (non-null) config value.
    fn config(v: &Value, key: &str, flag: &str) -> Result<Option<Self::Value>, PlanError>;
}

fn config_text(v: &Value, key: &str) -> Result<String, PlanError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(PlanError::new(format!(
            "config key {key:?} must be a string, not {other}"
        ))),
    }
}

/// Text, as given (`--call`, `--cname`, `--strategy`, ...); numbers in a config file are taken
/// as their text.
pub(super) struct Text;
impl Kind for Text {
    type Arg = Option<String>;
    type Value = String;
    fn arg(arg: &Option<String>, _: &str) -> Result<Option<String>, PlanError> {
        Ok(arg.clone())
    }
    fn config(v: &Value, key: &str, _: &str) -> Result<Option<String>, PlanError> {
        config_text(v, key).map(Some)
    }
}

/// A repeatable flag (`--call`, `--stage`); a string or a list in a config file.
pub(super) struct Repeated;
impl Kind for Repeated {
    type Arg = Vec<String>;
    type Value = Vec<String>;
    fn arg(arg: &Vec<String>, _: &str) -> Result<Option<Vec<String>>, PlanError> {
        Ok((!arg.is_empty()).then(|| arg.clone()))
    }
    fn config(v: &Value, key: &str, _: &str) -> Result<Option<Vec<String>>, PlanError> {
        match v {
            Value::Array(items) => items
                .iter()
                .map(|x| config_text(x, key))
                .collect::<Result<_, _>>()
                .map(Some),
            v => config_text(v, key).map(|s| Some(vec![s])),
        }
    }
}

/// A file path.
pub(super) struct Path;
impl Kind for Path {
    type Arg = Option<PathBuf>;
    type Value = PathBuf;
    fn arg(arg: &Option<PathBuf>, _: &str) -> Result<Option<PathBuf>, PlanError> {
        Ok(arg.clone())
    }
    fn config(v: &Value, key: &str, _: &str) -> Result<Option<PathBuf>, PlanError> {
        config_text(v, key).map(|s| Some(PathBuf::from(s)))
    }
}

/// A whole number.
pub(super) struct Count;
impl Kind for Count {
    type Arg = Option<u64>;
    type Value = u64;
    fn arg(arg: &Option<u64>, _: &str) -> Result<Option<u64>, PlanError> {
        Ok(*arg)
    }
    fn config(v: &Value, key: &str, _: &str) -> Result<Option<u64>, PlanError> {
        v.as_u64().map(Some).ok_or_else(|| {
            PlanError::new(format!(
                "config key {key:?} must be a whole number, not {v}"
            ))
        })
    }
}

/// A whole number that may be negative (schedule steps).
pub(super) struct Signed;
impl Kind for Signed {
    type Arg = Option<i64>;
    type Value = i64;
    fn arg(arg: &Option<i64>, _: &str) -> Result<Option<i64>, PlanError> {
        Ok(*arg)
    }
    fn config(v: &Value, key: &str, _: &str) -> Result<Option<i64>, PlanError> {
        v.as_i64().map(Some).ok_or_else(|| {
            PlanError::new(format!(
                "config key {key:?} must be a whole number, not {v}"
            ))
        })
    }
}

/// An on/off flag: given on the command line means on; a config file may say either.
pub(super) struct Switch;
impl Kind for Switch {
    type Arg = bool;
    type Value = bool;
    fn arg(arg: &bool, _: &str) -> Result<Option<bool>, PlanError> {
        Ok(arg.then_some(true))
    }
    fn config(v: &Value, key: &str, _: &str) -> Result<Option<bool>, PlanError> {
        match v {
            Value::Bool(b) => Ok(Some(*b)),
            v => Err(PlanError::new(format!(
                "config key {key:?} must be true or false, not {v}"
            ))),
        }
    }
}

/// A Go duration (`10s`); a config file may also give nanoseconds as a number.
pub(super) struct Dur;
impl Kind for Dur {
    type Arg = Option<String>;
    type Value = Duration;
    fn arg(arg: &Option<String>, flag: &str) -> Result<Option<Duration>, PlanError> {
        arg.as_deref().map(|s| duration(s, flag)).transpose()
    }
    fn config(v: &Value, key: &str, flag: &str) -> Result<Option<Duration>, PlanError> {
        match v {
            Value::String(s) => duration(s, flag).map(Some),
            Value::Number(n) => n
                .as_u64()
                .map(|ns| Some(Duration::from_nanos(ns)))
                .ok_or_else(|| {
                    PlanError::new(format!(
                        "config key {key:?} must be a duration such as \"10s\""
                    ))
                }),
            v => Err(PlanError::new(format!(
                "config key {key:?} must be a duration such as \"10s\", not {v}"
            ))),
        }
    }
}

fn duration(s: &str, flag: &str) -> Result<Duration, PlanError> {
    parse_duration(s).map_err(|e| PlanError::new(format!("{flag}: {e}")))
}

/// A byte size (`4MB`, `4 MiB`, `4194304`).
pub(super) struct Size;
impl Kind for Size {
    type Arg = Option<String>;
    type Value = usize;
    fn arg(arg: &Option<String>, flag: &str) -> Result<Option<usize>, PlanError> {
        arg.as_deref().map(|s| size(s, flag)).transpose()
    }
    fn config(v: &Value, key: &str, flag: &str) -> Result<Option<usize>, PlanError> {
        size(&config_text(v, key)?, flag).map(Some)
    }
}

fn size(s: &str, flag: &str) -> Result<usize, PlanError> {
    parse_size(s).map_err(|e| PlanError::new(format!("{flag}: {e}")))
}

/// JSON given as text on the command line, or inline (any JSON value) in a config file.
pub(super) struct Json;
impl Kind for Json {
    type Arg = Option<String>;
    type Value = String;
    fn arg(arg: &Option<String>, _: &str) -> Result<Option<String>, PlanError> {
        Ok(arg.clone())
    }
    fn config(v: &Value, _: &str, _: &str) -> Result<Option<String>, PlanError> {
        Ok(Some(match v {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        }))
    }
}

/// A list: comma-separated on the command line; an array or a comma-separated string in a
/// config file (other values are ignored, as ghz does).
pub(super) struct List;
impl Kind for List {
    type Arg = Option<Vec<String>>;
    type Value = Vec<String>;
    fn arg(arg: &Option<Vec<String>>, _: &str) -> Result<Option<Vec<String>>, PlanError> {
        Ok(arg.clone())
    }
    fn config(v: &Value, _: &str, _: &str) -> Result<Option<Vec<String>>, PlanError> {
        Ok(match v {
            Value::Array(v) => Some(
                v.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect(),
            ),
            Value::String(s) => Some(s.split(',').map(String::from).collect()),
            _ => None,
        })
    }
}

/// A closed set of names (`-O`, `--duration-stop`, schedules).
pub(super) trait Named: Sized {
    fn parse_name(s: &str) -> Result<Self, String>;
}
impl Named for Format {
    fn parse_name(s: &str) -> Result<Self, String> {
        Format::parse(s)
    }
}
impl Named for Shape {
    fn parse_name(s: &str) -> Result<Self, String> {
        Shape::parse(s)
    }
}
impl Named for crate::plan::LineOrder {
    fn parse_name(s: &str) -> Result<Self, String> {
        crate::plan::LineOrder::parse(s)
    }
}
impl Named for DurationStop {
    fn parse_name(s: &str) -> Result<Self, String> {
        DurationStop::parse(s)
    }
}

/// One of a closed set of names.
pub(super) struct Name<T>(std::marker::PhantomData<T>);
impl<T: Named> Kind for Name<T> {
    type Arg = Option<String>;
    type Value = T;
    fn arg(arg: &Option<String>, flag: &str) -> Result<Option<T>, PlanError> {
        arg.as_deref().map(|s| named(s, flag)).transpose()
    }
    fn config(v: &Value, key: &str, flag: &str) -> Result<Option<T>, PlanError> {
        named(&config_text(v, key)?, flag).map(Some)
    }
}

fn named<T: Named>(s: &str, flag: &str) -> Result<T, PlanError> {
    T::parse_name(s).map_err(|e| PlanError::new(format!("{flag}: {e}")))
}

/// Declares [`Flags`] once: each option's field (named as in [`BenchArgs`]), kind, config key
/// and flag; the macro writes the struct, both readers and the merge.
macro_rules! flags {
    ($($(#[doc = $doc:literal])* $field:ident: $kind:ty = $key:literal, $flag:literal;)*) => {
        /// ghz's options, typed; `None` where not given.
        #[derive(Debug, Default)]
        pub(super) struct Flags {
            $(#[doc = concat!("`", $flag, "` (config key `", $key, "`).")]
            $(#[doc = $doc])* pub(super) $field: Option<<$kind as Kind>::Value>,)*
        }

        impl Flags {
            /// The options given on the command line.
            pub(super) fn from_args(a: &BenchArgs) -> Result<Flags, PlanError> {
                Ok(Flags {
                    $($field: <$kind>::arg(&a.$field, $flag)?,)*
                })
            }

            /// The options of a config file (ghz's keys).
            pub(super) fn from_config(c: &Map<String, Value>) -> Result<Flags, PlanError> {
                Ok(Flags {
                    $($field: match c.get($key) {
                        None | Some(Value::Null) => None,
                        Some(v) => <$kind>::config(v, $key, $flag)?,
                    },)*
                })
            }

            /// These options over `other`'s: each field is ours when given, else theirs.
            #[must_use]
            pub(super) fn or(self, other: Flags) -> Flags {
                Flags {
                    $($field: self.$field.or(other.$field),)*
                }
            }
        }
    };
}

flags! {
    /// The target.
    host: Text = "host", "host";
    proto: Path = "proto", "--proto";
    protoset: Path = "protoset", "--protoset";
    call: Repeated = "call", "--call";
    import_paths: List = "import-paths", "-i";
    cacert: Path = "cacert", "--cacert";
    cert: Path = "cert", "--cert";
    key: Path = "key", "--key";
    cname: Text = "cname", "--cname";
    skip_tls: Switch = "skipTLS", "--skipTLS";
    insecure: Switch = "insecure", "--insecure";
    authority: Text = "authority", "--authority";
    async_mode: Switch = "async", "--async";
    rps: Count = "rps", "-r";
    load_schedule: Name<Shape> = "load-schedule", "--load-schedule";
    load_start: Count = "load-start", "--load-start";
    load_end: Count = "load-end", "--load-end";
    load_step: Signed = "load-step", "--load-step";
    load_step_duration: Dur = "load-step-duration", "--load-step-duration";
    load_max_duration: Dur = "load-max-duration", "--load-max-duration";
    concurrency: Count = "concurrency", "-c";
    concurrency_schedule: Name<Shape> = "concurrency-schedule", "--concurrency-schedule";
    concurrency_start: Count = "concurrency-start", "--concurrency-start";
    concurrency_end: Count = "concurrency-end", "--concurrency-end";
    concurrency_step: Signed = "concurrency-step", "--concurrency-step";
    concurrency_step_duration: Dur = "concurrency-step-duration", "--concurrency-step-duration";
    concurrency_max_duration: Dur = "concurrency-max-duration", "--concurrency-max-duration";
    total: Count = "total", "-n";
    timeout: Dur = "timeout", "-t";
    duration: Dur = "duration", "-z";
    max_duration: Dur = "max-duration", "-x";
    duration_stop: Name<DurationStop> = "duration-stop", "--duration-stop";
    data: Json = "data", "-d";
    data_file: Path = "data-file", "-D";
    /// `--data-order` (an NDJSON data file's lines: round-robin or random).
    data_order: Name<crate::plan::LineOrder> = "data-order", "--data-order";
    binary: Switch = "binary", "-b";
    binary_file: Path = "binary-file", "-B";
    metadata: Json = "metadata", "-m";
    metadata_file: Path = "metadata-file", "-M";
    reflect_metadata: Json = "reflect-metadata", "--reflect-metadata";
    stream_interval: Dur = "stream-interval", "--stream-interval";
    stream_call_duration: Dur = "stream-call-duration", "--stream-call-duration";
    stream_call_count: Count = "stream-call-count", "--stream-call-count";
    stream_dynamic_messages: Switch = "stream-dynamic-messages", "--stream-dynamic-messages";
    output: Path = "output", "-o";
    format: Name<Format> = "format", "-O";
    skip_first: Count = "skipFirst", "--skipFirst";
    count_errors: Switch = "count-errors", "--count-errors";
    connections: Count = "connections", "--connections";
    /// `--strategy` (text: `pool` alone takes its size from `--connections`).
    strategy: Text = "strategy", "--strategy";
    lb_strategy: Text = "lb-strategy", "--lb-strategy";
    service_config: Json = "service-config", "--service-config";
    connect_timeout: Dur = "connect-timeout", "--connect-timeout";
    keepalive: Dur = "keepalive", "--keepalive";
    max_recv_message_size: Size = "max-recv-message-size", "--max-recv-message-size";
    max_send_message_size: Size = "max-send-message-size", "--max-send-message-size";
    enable_compression: Switch = "enable-compression", "-e";
    name: Text = "name", "--name";
    tags: Json = "tags", "--tags";
    cpus: Count = "cpus", "--cpus";
    thresholds: List = "thresholds", "--threshold";
    debug: Path = "debug", "--debug";
    disable_template_functions: Switch = "disable-template-functions", "--disable-template-functions";
    disable_template_data: Switch = "disable-template-data", "--disable-template-data";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_wins_field_by_field() {
        let cli = Flags {
            total: Some(10),
            timeout: Some(Duration::from_secs(1)),
            ..Flags::default()
        };
        let mut cfg = Map::new();
        cfg.insert("total".into(), 500.into());
        cfg.insert("concurrency".into(), 20.into());
        cfg.insert("timeout".into(), 5_000_000_000u64.into());
        cfg.insert("format".into(), "csv".into());
        let f = cli.or(Flags::from_config(&cfg).unwrap());
        assert_eq!(f.total, Some(10));
        assert_eq!(f.concurrency, Some(20));
        assert_eq!(f.timeout, Some(Duration::from_secs(1)));
        assert_eq!(f.format, Some(Format::Csv));
        assert_eq!(f.call, None);
    }

    #[test]
    fn config_errors_name_the_key_or_the_flag() {
        let cases = [
            (
                "total",
                Value::from("many"),
                "config key \"total\" must be a whole number",
            ),
            (
                "insecure",
                Value::from(1),
                "config key \"insecure\" must be true or false",
            ),
            (
                "call",
                Value::from(true),
                "config key \"call\" must be a string",
            ),
            (
                "duration",
                Value::from("ten"),
                "-z: invalid duration \"ten\"",
            ),
            ("format", Value::from("xml"), "-O: invalid format \"xml\""),
            (
                "max-recv-message-size",
                Value::from("lots"),
                "--max-recv-message-size: invalid size",
            ),
        ];
        for (key, v, want) in cases {
            let mut cfg = Map::new();
            cfg.insert(key.into(), v);
            let e = Flags::from_config(&cfg).unwrap_err().to_string();
            assert!(e.contains(want), "{key}: {e}");
        }
    }
}
