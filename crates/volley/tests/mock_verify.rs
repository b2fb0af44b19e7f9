//! `volley mock verify --against`: stubs recorded from volley's built-in services verify equal
//! against them; a stub made wrong, one for a method the service lacks and one for a status
//! are each reported, with exit 1, in text, JSON and JUnit. Against grpc-go's interop server
//! (no reflection: its protos given), hand-written stubs, one deliberately wrong.

#[path = "mock_support/mod.rs"]
mod support;

use serde_json::Value;
use support::{Mock, TempDir, grpcurl};
use volley_testkit::{Volley, volley, workspace};

const VOLLEY: Volley = volley!();

fn verify(args: &[&str]) -> (i32, String, String) {
    let out = VOLLEY
        .command(&["mock", "verify"])
        .args(args)
        .current_dir(workspace())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn recorded_stubs_verify_equal_and_wrong_ones_are_reported() {
    let dir = TempDir::new("verify");
    let stubs = dir.path("stubs");
    let upstream = VOLLEY.serve(&[]);
    let target = upstream.addr().to_string();
    let mut cmd = VOLLEY.command(&["mock", "--threads", "1", "--imports", "proto"]);
    cmd.args(["--record", &target, "--stubs-out", &stubs])
        .args(["proto/api/users.proto", "proto/grpc/testing/test.proto"])
        .current_dir(workspace());
    let recorder = Mock::start(cmd);
    for id in ["7", "8"] {
        let (ok, out) = grpcurl(
            &recorder.target(),
            &["-d", &format!("{{\"id\": {id}}}")],
            "api.Users/Get",
        );
        assert!(ok, "{out}");
    }
    let (ok, out) = grpcurl(
        &recorder.target(),
        &[
            "-d",
            r#"{"response_status": {"code": 5, "message": "gone away"}}"#,
        ],
        "grpc.testing.TestService/UnaryCall",
    );
    assert!(!ok && out.contains("gone away"), "{out}");
    drop(recorder);

    // As recorded: every stub equal (the service's reflection gives the schema); a file beside
    // the stubs that is not one (buf's config) is passed over, as `volley mock` passes over it.
    dir.write(
        "stubs/buf.yaml",
        "version: v1\nbreaking:\n  use:\n    - FILE\n",
    );
    let (code, out, err) = verify(&["--against", &target, &stubs]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("ok ")).count(),
        3,
        "{out}"
    );
    assert!(
        out.ends_with(&format!(
            "3 stubs: 3 equal, 0 differ, 0 status differs, 0 missing, 0 invalid, 0 skipped \
             (against {target})\n"
        )),
        "{out}"
    );

    // One answer made wrong, one method the service lacks, one status it does not give, one
    // with its own ignored fields (equal), one matching by pattern (skipped).
    dir.write(
        "stubs/zz-extra/wrong.json",
        r#"[
  {"service": "api.Users", "method": "Get", "input": {"equals": {"id": 9}},
   "output": {"data": {"id": "9", "name": "not the name"}}},
  {"service": "api.Users", "method": "Remove", "input": {"equals": {"id": 9}},
   "output": {"data": {}}},
  {"service": "api.Users", "method": "Get", "input": {"equals": {"id": 10}},
   "output": {"error": "no user", "code": 5}},
  {"service": "api.Users", "method": "Get", "input": {"equals": {"id": 11}},
   "ignoreFields": ["name", "email", "rating"], "output": {"data": {"id": "11"}}},
  {"service": "api.Users", "method": "Get", "input": {"matches": {"id": "^1"}},
   "output": {"data": {}}}
]"#,
    );
    let junit = dir.path("verify.xml");
    let (code, out, err) = verify(&[
        "--against",
        &target,
        "-O",
        "json",
        "--junit",
        &junit,
        &stubs,
    ]);
    assert_eq!(code, 1, "{out}{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let verdicts: Vec<(&str, &str)> = v["stubs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["method"].as_str().unwrap(),
                s["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        verdicts[3..],
        [
            ("api.Users/Get", "differs"),
            ("api.Users/Remove", "missing"),
            ("api.Users/Get", "status-differs"),
            ("api.Users/Get", "equal"),
            ("api.Users/Get", "skipped"),
        ],
        "{out}"
    );
    assert_eq!(v["failed"], 3);
    let wrong = &v["stubs"][3];
    assert!(
        wrong["diff"].as_array().unwrap().iter().any(|l| l
            .as_str()
            .unwrap()
            .starts_with("name: expected \"not the name\", got ")),
        "{wrong}"
    );
    assert!(
        v["stubs"][5]["detail"]
            .as_str()
            .unwrap()
            .starts_with("status differs: the stub says NotFound: no user, the service OK"),
        "{out}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("tests=\"8\" failures=\"3\" skipped=\"1\""),
        "{xml}"
    );
    assert_eq!(xml.matches("<failure type=").count(), 3, "{xml}");
}

#[test]
fn grpc_go_s_interop_server_without_reflection_needs_its_protos() {
    let (mut server, target) = support::interop_server();
    let dir = TempDir::new("verify-interop");
    let stubs = dir.write(
        "stubs/testing.yaml",
        r#"- service: grpc.testing.TestService
  method: EmptyCall
  output: {data: {}}
- service: grpc.testing.TestService
  method: UnaryCall
  input: {equals: {response_size: 2}}
  output: {data: {payload: {body: AAA=}}}
- service: grpc.testing.TestService
  method: UnaryCall
  input: {equals: {response_status: {code: 5, message: gone}}}
  output: {error: gone, code: 5}
- service: grpc.testing.TestService
  method: StreamingOutputCall
  input: {equals: {response_parameters: [{size: 1}, {size: 2}]}}
  output: {stream: [{payload: {body: AA==}}, {payload: {body: AAA=}}]}
# Wrong: three bytes are asked for, the stub answers two.
- service: grpc.testing.TestService
  method: UnaryCall
  input: {equals: {response_size: 3}}
  output: {data: {payload: {body: AAA=}}}
"#,
    );
    let stubs = stubs.display().to_string();
    let (code, out, err) = verify(&["--against", &target, &stubs]);
    let _ = &out;
    assert_ne!(code, 0);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("does not support reflection") && err.contains("--proto"),
        "{err}"
    );
    let (code, out, err) = verify(&[
        "--against",
        &target,
        "--proto",
        "proto/grpc/testing/test.proto",
        "-i",
        "proto",
        &stubs,
    ]);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(code, 1, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 6, "{out}");
    assert!(lines[..4].iter().all(|l| l.starts_with("ok ")), "{out}");
    assert!(
        lines[4].starts_with("FAIL ")
            && lines[4].ends_with(
                "grpc.testing.TestService/UnaryCall: answer differs: payload.body: expected \
                 \"AAA=\", got \"AAAA\""
            ),
        "{out}"
    );
    assert!(lines[5].starts_with("5 stubs: 4 equal, 1 differ"), "{out}");
}
