//! `volley serve --proto F --stubs DIR`: GripMock-format stubs answering a .proto never compiled,
//! called with grpcurl: equals, contains and matches pick their stub, an error stub gives its
//! status, a delay shows, headers arrive, a request no stub matches gets NOT_FOUND naming the
//! closest stub; and stubs that do not fit the .proto fail the start, naming what is wrong.

use std::{path::PathBuf, process::Command, time::Instant};

use volley_testkit::{Volley, fails_in_one_line, tool, volley};

const VOLLEY: Volley = volley!();

const SHOP: &str = r#"syntax = "proto3";
package shop.v1;
message Item { string sku = 1; int32 count = 2; double price = 3; repeated string tags = 4; }
message Query { string prefix = 1; int64 user_id = 2; }
service Catalog {
  rpc Get(Query) returns (Item);
  rpc List(Query) returns (stream Item);
  rpc Chat(stream Query) returns (stream Item);
}
"#;

/// A folder with the .proto and `stubs/` holding `files` (relative path, text).
fn project(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("volley-stubs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("stubs/more")).unwrap();
    std::fs::write(dir.join("shop.proto"), SHOP).unwrap();
    for (path, text) in files {
        std::fs::write(dir.join("stubs").join(path), text).unwrap();
    }
    dir
}

const GET_STUBS: &str = r#"
- service: Catalog
  method: Get
  input:
    equals: {prefix: "a", userId: 7}
  output:
    data: {sku: "a-1", count: 2, tags: [new]}
    headers: {x-source: stub}
- service: shop.v1.Catalog
  method: Get
  input:
    contains: {prefix: "gone"}
  output: {error: "no such item", code: 5}
- service: Catalog
  method: Get
  input: {contains: {prefix: "t"}}
  output:
    data: {sku: "{{.Request.prefix | upper}}-{{randomInt 1 2}}", count: "{{.Request.user_id}}"}
"#;

const LIST_STUB: &str = r#"{"service": "Catalog", "method": "List",
  "input": {"matches": {"prefix": "^b[0-9]+$"}},
  "output": {"stream": [{"sku": "b-1"}, {"sku": "b-2"}], "delay": "300ms"}}"#;

fn grpcurl(addr: &str, data: &str, method: &str) -> (bool, String) {
    let out = Command::new(tool("grpcurl"))
        .args(["-plaintext", "-v", "-d", data, addr, method])
        .output()
        .expect("run grpcurl");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn stubs_pick_answers_by_equals_contains_and_matches() {
    let dir = project(
        "serve",
        &[("get.yaml", GET_STUBS), ("more/list.json", LIST_STUB)],
    );
    let server = VOLLEY.serve(&[
        "--no-builtin",
        "--proto",
        &dir.join("shop.proto").display().to_string(),
        "--stub",
        &dir.join("stubs").display().to_string(),
    ]);
    let addr = server.addr().to_string();

    // equals, with the request's int64 as JSON text and the field named in either spelling.
    let (ok, out) = grpcurl(
        &addr,
        r#"{"prefix":"a","user_id":"7"}"#,
        "shop.v1.Catalog/Get",
    );
    assert!(ok, "{out}");
    assert!(
        out.contains(r#""sku": "a-1""#) && out.contains(r#""count": 2"#),
        "{out}"
    );
    assert!(out.contains("x-source: stub"), "headers: {out}");
    // equals is the whole request: one more field and it does not match.
    let (ok, out) = grpcurl(&addr, r#"{"prefix":"a"}"#, "shop.v1.Catalog/Get");
    assert!(!ok && out.contains("Code: NotFound"), "{out}");
    assert!(
        out.contains("no stub matches {\"prefix\":\"a\"} for shop.v1.Catalog/Get; closest: ")
            && out.contains("get.yaml stub #1 (equals {\"prefix\":\"a\",\"userId\":7})"),
        "{out}"
    );

    // contains, answering with a status.
    let (ok, out) = grpcurl(
        &addr,
        r#"{"prefix":"gone","user_id":"3"}"#,
        "shop.v1.Catalog/Get",
    );
    assert!(
        !ok && out.contains("Code: NotFound") && out.contains("Message: no such item"),
        "{out}"
    );

    // A reply template: the request's fields and the call-data functions.
    let (ok, out) = grpcurl(
        &addr,
        r#"{"prefix":"t","user_id":"5"}"#,
        "shop.v1.Catalog/Get",
    );
    assert!(ok, "{out}");
    assert!(
        out.contains(r#""sku": "T-1""#) && out.contains(r#""count": 5"#),
        "{out}"
    );

    // matches, a stream with a delay, from a subfolder's JSON file.
    let started = Instant::now();
    let (ok, out) = grpcurl(&addr, r#"{"prefix":"b12"}"#, "shop.v1.Catalog/List");
    assert!(ok, "{out}");
    assert!(
        started.elapsed().as_millis() >= 300,
        "the delay: {:?}",
        started.elapsed()
    );
    assert!(
        out.contains(r#""sku": "b-1""#) && out.contains(r#""sku": "b-2""#),
        "{out}"
    );
    let (ok, out) = grpcurl(&addr, r#"{"prefix":"bx"}"#, "shop.v1.Catalog/List");
    assert!(
        !ok && out.contains("closest: ") && out.contains("list.json stub #1"),
        "{out}"
    );

    // A method with no stubs answers default messages.
    let (ok, out) = grpcurl(&addr, r#"{"prefix":"q"}"#, "shop.v1.Catalog/Chat");
    assert!(ok && out.matches("{}").count() == 3, "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn stubs_that_do_not_fit_the_proto_fail_the_start_naming_what() {
    let cases = [
        (
            "s.yaml",
            "- {service: Catalog, method: Gett, output: {data: {}}}",
            "stub #1: service shop.v1.Catalog has no method \"Gett\"",
        ),
        (
            "s.yaml",
            "- {service: Shop, method: Get, output: {data: {}}}",
            "stub #1: no service \"Shop\" is served",
        ),
        (
            "s.json",
            r#"{"service":"Catalog","method":"Get","input":{"equals":{"name":"x"}},"output":{"data":{}}}"#,
            "stub #1: input.equals names no field \"name\" of shop.v1.Query",
        ),
        (
            "s.yaml",
            "- {service: Catalog, method: Get, output: {data: {sku: 3, colour: red}}}",
            "stub #1: output does not fit shop.v1.Item",
        ),
        (
            "s.yaml",
            "- {service: Catalog, method: Get, output: {code: 42}}",
            "stub #1: output.code 42 is not a gRPC status code",
        ),
        (
            "s.yaml",
            "- {service: Catalog, method: Get, input: {matches: {prefix: \"(\"}}, output: {data: {}}}",
            "input.matches.prefix: \"(\" is not a regex: unclosed group",
        ),
        (
            "s.json",
            "{\"service\": \"Catalog\",\n  \"method\": }",
            "s.json:2:",
        ),
        // A key GripMock does not define is refused by `volley serve`, not half-honoured.
        (
            "s.yaml",
            "- {service: Catalog, method: Get, output: {data: {}, return_code: 0}}",
            "stub #1: \"output.return_code\" is not a key volley's stubs take",
        ),
        (
            "s.yaml",
            "- {service: Catalog, method: Get, input: {equals: {prefix: a}}, inputs: [{equals: {prefix: b}}], output: {data: {}}}",
            "stub #1: must have either 'input' or 'inputs', but not both",
        ),
        (
            "s.yaml",
            "- {service: Catalog, method: Get, output: {data: {sku: \"{{.Request.prefix\"}}}",
            "stub #1: output template \"{{.Request.prefix\": template: unclosed action",
        ),
        (
            "s.yaml",
            "- {service: Catalog, method: Get, output: {data: {size: \"{{.Request.prefix}}\"}}}",
            "stub #1: output.data names no field \"size\" of shop.v1.Item",
        ),
    ];
    for (file, text, want) in cases {
        let dir = project("bad", &[(file, text)]);
        let line = fails_in_one_line(&mut VOLLEY.command(&[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--proto",
            &dir.join("shop.proto").display().to_string(),
            "--stubs",
            &dir.join("stubs").display().to_string(),
        ]));
        assert!(line.contains(want), "{text}\n{line}");
        assert!(line.contains(file), "names the file: {line}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_changed_stub_file_is_reloaded_and_the_admin_api_adds_stubs() {
    let dir = project("live", &[("get.yaml", GET_STUBS)]);
    // Port 0: the address bound is read from the log (a port found free and handed over could
    // be taken by a test running beside this one before volley binds it).
    let server = VOLLEY.serve(&[
        "--no-builtin",
        "--proto",
        &dir.join("shop.proto").display().to_string(),
        "--stubs",
        &dir.join("stubs").display().to_string(),
        "--admin-addr",
        "127.0.0.1:0",
    ]);
    let admin = server
        .log()
        .split("stubs admin API on http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .expect("the admin API's address in the log")
        .to_owned();
    let addr = server.addr().to_string();
    let curl = |args: &[&str]| {
        let out = Command::new(tool("curl"))
            .args(["-s", "-w", "\n%{http_code}"])
            .args(args)
            .output()
            .expect("run curl");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };

    // GET / lists the files' stubs.
    let listed = curl(&[&format!("http://{admin}/")]);
    assert!(
        listed.ends_with("\n200") && listed.contains(r#""method":"Get""#),
        "{listed}"
    );
    assert!(listed.contains("get.yaml stub #2"), "{listed}");

    // POST /add: the next call uses it.
    let (ok, _) = grpcurl(&addr, r#"{"prefix":"new"}"#, "shop.v1.Catalog/Get");
    assert!(!ok);
    let added = curl(&[
        "-d",
        r#"{"service":"Catalog","method":"Get","input":{"equals":{"prefix":"new"}},"output":{"data":{"sku":"added"}}}"#,
        &format!("http://{admin}/add"),
    ]);
    // GripMock v3's ids: UUIDs.
    let (ids, code) = added.rsplit_once('\n').unwrap();
    assert_eq!(code, "200", "{added}");
    let ids: Vec<String> = serde_json::from_str(ids).expect("a JSON list");
    assert!(ids.len() == 1 && ids[0].len() == 36, "{added}");
    let (ok, out) = grpcurl(&addr, r#"{"prefix":"new"}"#, "shop.v1.Catalog/Get");
    assert!(ok && out.contains(r#""sku": "added""#), "{out}");
    // POST /find answers as a call would; a stub that does not fit is refused with the reason.
    let found = curl(&[
        "-d",
        r#"{"service":"shop.v1.Catalog","method":"Get","data":{"prefix":"new"}}"#,
        &format!("http://{admin}/find"),
    ]);
    assert_eq!(found, "{\"data\":{\"sku\":\"added\"}}\n200");
    let refused = curl(&[
        "-d",
        r#"{"service":"Catalog","method":"Get","output":{"data":{"colour":"red"}}}"#,
        &format!("http://{admin}/add"),
    ]);
    assert!(
        refused.ends_with("\n400") && refused.contains("output does not fit shop.v1.Item"),
        "{refused}"
    );

    // The file changes on disk: reread within a couple of seconds; the added stub stays.
    std::fs::write(
        dir.join("stubs/get.yaml"),
        "- {service: Catalog, method: Get, input: {contains: {prefix: a}}, output: {data: {sku: reloaded}}}\n",
    )
    .unwrap();
    let deadline = Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (ok, out) = grpcurl(&addr, r#"{"prefix":"a"}"#, "shop.v1.Catalog/Get");
        if ok && out.contains(r#""sku": "reloaded""#) {
            break;
        }
        assert!(Instant::now() < deadline, "not reloaded: {out}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let (ok, out) = grpcurl(&addr, r#"{"prefix":"new"}"#, "shop.v1.Catalog/Get");
    assert!(
        ok && out.contains(r#""sku": "added""#),
        "the admin's stub survives a reload: {out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

const BUGS_PROTO: &str = r#"syntax = "proto3";
package bugs.v1;
import "google/protobuf/any.proto";
message Req { double amount = 1; float ratio = 2; google.protobuf.Any extra = 3; string user_id = 4; }
message Reply { string message = 1; float ratio = 2; google.protobuf.Any extra = 3; }
service Bugs { rpc Call(Req) returns (Reply); }
"#;

const BUGS_STUBS: &str = r#"
- service: Bugs
  method: Call
  input: {equals: {amount: 5}}
  output: {data: {message: by-value}}
- service: Bugs
  method: Call
  input: {equals: {ratio: 3.4028235e+38}}
  output: {data: {message: max-float, ratio: 3.4028235e+38}}
- service: Bugs
  method: Call
  input:
    contains:
      extra: {"@type": type.googleapis.com/google.protobuf.StringValue, value: in}
  output:
    data:
      message: any
      extra: {"@type": type.googleapis.com/google.protobuf.StringValue, value: out}
"#;

/// Bugs seen on GripMock-format material, each once a failure of `volley serve --stubs`: a
/// `double` sent as `5.0` against a stub's `5`; the largest `float` refused; an `Any` request
/// field seen by the matcher as `{}`; an `Any` whose `@type` is a well-known wrapper refused in
/// a stub; NOT_FOUND printing `userid` for `user_id`.
#[test]
fn gripmock_format_bugs_numbers_floats_any_and_key_names() {
    let dir = std::env::temp_dir().join(format!("volley-stubs-{}-bugs", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("stubs")).unwrap();
    std::fs::write(dir.join("bugs.proto"), BUGS_PROTO).unwrap();
    std::fs::write(dir.join("stubs/bugs.yaml"), BUGS_STUBS).unwrap();
    let server = VOLLEY.serve(&[
        "--no-builtin",
        "--proto",
        &dir.join("bugs.proto").display().to_string(),
        "--stubs",
        &dir.join("stubs").display().to_string(),
    ]);
    let addr = server.addr().to_string();
    let call = |data: &str| grpcurl(&addr, data, "bugs.v1.Bugs/Call");

    let (ok, out) = call(r#"{"amount": 5.0}"#);
    assert!(
        ok && out.contains(r#""message": "by-value""#),
        "5.0 is 5: {out}"
    );
    let (ok, out) = call(r#"{"ratio": 3.4028235e+38}"#);
    assert!(
        ok && out.contains(r#""ratio": 3.4028235e+38"#),
        "the largest float: {out}"
    );
    let (ok, out) = call(
        r#"{"extra": {"@type": "type.googleapis.com/google.protobuf.StringValue", "value": "in"}}"#,
    );
    assert!(
        ok && out.contains(r#""message": "any""#),
        "an Any request field: {out}"
    );
    assert!(
        out.contains(r#""value": "out""#),
        "a wrapper in the stub's Any: {out}"
    );
    let (ok, out) = call(r#"{"user_id": "u1"}"#);
    assert!(
        !ok && out.contains(r#""user_id":"u1""#),
        "keys as sent: {out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
