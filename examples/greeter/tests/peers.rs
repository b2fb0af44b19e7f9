//! The example answers real clients: grpcurl (by reflection, which the generated server
//! registered by itself), curl (Connect's JSON, which needs the same descriptors), and the
//! example's own generated client.

use std::process::Command;

use volley_testkit::{VolleyProcess, tool};

fn server() -> VolleyProcess {
    VolleyProcess::start(
        env!("CARGO_BIN_EXE_greeter-server").as_ref(),
        &["127.0.0.1:0"],
    )
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run the peer");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn grpcurl_lists_and_calls_by_reflection() {
    let server = server();
    let addr = server.addr().to_string();
    let list = run(Command::new(tool("grpcurl")).args(["-plaintext", &addr, "list"]));
    assert!(list.lines().any(|l| l == "helloworld.Greeter"), "{list}");
    let reply = run(Command::new(tool("grpcurl")).args([
        "-plaintext",
        "-d",
        r#"{"name": "grpcurl"}"#,
        &addr,
        "helloworld.Greeter/SayHello",
    ]));
    assert!(reply.contains(r#""message": "Hello grpcurl!""#), "{reply}");

    let out = Command::new(tool("grpcurl"))
        .args([
            "-plaintext",
            "-d",
            "{}",
            &addr,
            "helloworld.Greeter/SayHello",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("InvalidArgument") && err.contains("name is empty"),
        "{err}"
    );
}

#[test]
fn curl_calls_with_connect_json() {
    let server = server();
    let url = format!("http://{}/helloworld.Greeter/SayHello", server.addr());
    let reply = run(Command::new("curl").args([
        "-sS",
        "-H",
        "content-type: application/json",
        "-d",
        r#"{"name": "curl"}"#,
        &url,
    ]));
    assert_eq!(reply.trim(), r#"{"message":"Hello curl!"}"#);
}

#[test]
fn the_generated_client_calls_the_server() {
    let server = server();
    let out = run(Command::new(env!("CARGO_BIN_EXE_greeter-client"))
        .args([&server.addr().to_string(), "example"]));
    assert_eq!(out.trim(), "Hello example!");
}
