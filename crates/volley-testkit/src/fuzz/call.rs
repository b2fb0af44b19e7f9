//! Fuzz bodies for volley-call: grpcurl's command line read with Go's flag grammar and checked
//! as grpcurl checks it, and `-d`'s JSON read as Go's decoder reads it into messages.

use std::sync::OnceLock;

use prost_reflect::MessageDescriptor;
use volley_call::fuzz::{Opts, Values, check_opts, compile_protos, json_message, parse_args};

/// `volley call ARGS` up to the network: the bytes split at NUL into arguments (any text, a
/// flag's name of several bytes too), parsed as Go's `flag` package parses them, then turned
/// into options and checked as grpcurl checks them.
pub fn call_args(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let argv: Vec<String> = text.split('\0').map(str::to_owned).collect();
    let Ok(parsed) = parse_args(&argv) else {
        return;
    };
    let o = Opts::from_parsed(parsed);
    let _ = check_opts(&o, &mut Vec::new());
}

/// A schema with every sort of field `-d` fills: scalars, repeated, maps, enums, a oneof, nested
/// and recursive messages, and the well-known types (Struct and Value nest without end).
fn messages() -> &'static [MessageDescriptor] {
    static MESSAGES: OnceLock<Vec<MessageDescriptor>> = OnceLock::new();
    MESSAGES.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("volley-fuzz-call-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("call.proto"), SCHEMA).unwrap();
        let includes = [dir.display().to_string()];
        compile_protos(&["call.proto".to_owned()], &includes)
            .expect("the fuzz schema compiles")
            .all_messages()
            .filter(|m| m.package_name() == "fuzz.v1")
            .collect()
    })
}

const SCHEMA: &str = r#"syntax = "proto3";
package fuzz.v1;
import "google/protobuf/any.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/field_mask.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
enum Kind { KIND_UNSPECIFIED = 0; KIND_A = 1; }
message Node { string name = 1; repeated Node children = 2; map<string, Node> named = 3; }
message All {
  string s = 1; bytes b = 2; int32 i32 = 3; int64 i64 = 4; uint64 u64 = 5; sint32 s32 = 6;
  double d = 7; float f = 8; bool flag = 9; Kind kind = 10; repeated string tags = 11;
  map<string, int64> counts = 12; Node tree = 13;
  oneof choice { string text = 14; int32 number = 15; }
  google.protobuf.Any any = 16; google.protobuf.Duration wait = 17;
  google.protobuf.FieldMask mask = 18; google.protobuf.Struct st = 19;
  google.protobuf.Value v = 20; google.protobuf.ListValue list = 21;
  google.protobuf.Timestamp at = 22; google.protobuf.Int64Value big = 23;
  google.protobuf.BytesValue blob = 24; optional string maybe = 25;
}
"#;

/// `-d`'s JSON: the first byte picks the message type, the rest is read as Go's `json.Decoder`
/// reads a stream of values (10,000 levels deep at most), each value made a message as grpcurl
/// (jhump's jsonpb) makes it. Deep input recurses once a level, as in `volley call`, which runs
/// this on a large stack; so does this body when the input could nest deep.
pub fn call_json(data: &[u8]) {
    let [pick, rest @ ..] = data else {
        return;
    };
    let messages = messages();
    let (pick, desc) = (*pick, messages[*pick as usize % messages.len()].clone());
    let read = move |rest: Vec<u8>| {
        let mut values = Values::new(rest.as_slice());
        while let Ok(Some(node)) = values.next_value() {
            let _ = json_message(&desc, &node, pick & 0x80 != 0);
        }
    };
    let rest = rest.to_vec();
    let opening = rest.iter().filter(|b| matches!(b, b'{' | b'[')).count();
    if opening < 500 {
        read(rest);
    } else {
        std::thread::Builder::new()
            .stack_size(512 << 20)
            .spawn(move || read(rest))
            .expect("a reader thread")
            .join()
            .expect("the reader returns");
    }
}
