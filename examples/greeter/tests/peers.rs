//! The example answers real clients: grpcurl (by reflection, which the generated server
//! registered by itself), curl (Connect's JSON, which needs the same descriptors), and the
//! example's own generated client.

use std::{
    io::{BufRead, BufReader},
    path::PathBuf,
    process::{Child, Command, Stdio},
};

/// The example's server binary on a port chosen at run time; stopped when dropped.
struct Server(Child, String);

impl Server {
    fn addr(&self) -> &str {
        &self.1
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn server() -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_greeter-server"))
        .arg("127.0.0.1:0")
        .stderr(Stdio::piped())
        .spawn()
        .expect("start greeter-server");
    let stderr = child.stderr.take().unwrap();
    let addr = BufReader::new(stderr)
        .lines()
        .map_while(Result::ok)
        .find_map(|l| l.split("listening on ").nth(1).map(str::to_owned))
        .expect("the server's address");
    Server(child, addr)
}

/// A peer tool: from VOLLEY_TOOLS_BIN (where volley's scripts/install-test-tools puts them),
/// the repository's .tools/bin when this crate is in it, else PATH.
fn tool(name: &str) -> PathBuf {
    std::env::var_os("VOLLEY_TOOLS_BIN")
        .into_iter()
        .map(PathBuf::from)
        .chain([PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.tools/bin")])
        .chain(
            std::env::var_os("PATH")
                .iter()
                .flat_map(std::env::split_paths),
        )
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} is not installed (VOLLEY_TOOLS_BIN or PATH)"))
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
    let addr = server.addr().to_owned();
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
    let out =
        run(Command::new(env!("CARGO_BIN_EXE_greeter-client")).args([server.addr(), "example"]));
    assert_eq!(out.trim(), "Hello example!");
}
