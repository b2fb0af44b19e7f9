//! Go's text forms, byte for byte, for the tools that stand in for Go programs: ghz
//! (`volley bench`), grpcurl (`volley call`) and GripMock (`volley mock`) print numbers, durations
//! and times through Go's `strconv`, `fmt`, `encoding/json` and `time`, and users diff our output
//! against theirs. No crate writes those forms, so they are here, once.
//!
//! - [`duration`](mod@duration): `time.ParseDuration` and `time.Duration.String`;
//! - [`float`]: `strconv.FormatFloat(f, 'g', -1, ..)` (also `fmt`'s `%v`) and `encoding/json`'s floats;
//! - [`json`]: `encoding/json`'s strings;
//! - [`time`]: RFC 3339, Go layouts (`2006-01-02T15:04:05Z07:00`) and protobuf JSON's
//!   `Timestamp` and `Duration`.

pub mod duration;
pub mod float;
pub mod json;
pub mod time;

pub use duration::{duration, parse_duration};
pub use float::{format_g, format_g32, json_float};
pub use json::{json_bytes_string, json_string};
pub use time::{layout, proto_duration, proto_timestamp, rfc3339, rfc3339_nano};
