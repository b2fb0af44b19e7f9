//! tonic's helloworld and routeguide examples, ported: each server answers its own client (the
//! example's, run as tonic's README runs it) and grpcurl (by reflection, which the generated
//! servers registered), on a port chosen at run time.

use std::{
    net::TcpListener,
    path::PathBuf,
    process::{Child, Command, Output},
    time::{Duration, Instant},
};

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `bin` with ADDR set to a free loopback port, once it accepts connections.
fn serve(bin: &str) -> (Server, String) {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let child = Command::new(bin)
        .env("ADDR", &addr)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start the server");
    let start = Instant::now();
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{bin} did not listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (Server(child), addr)
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn grpcurl(args: &[&str]) -> String {
    let bin = std::env::var_os("VOLLEY_TOOLS_BIN")
        .into_iter()
        .map(PathBuf::from)
        .chain([PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.tools/bin")])
        .chain(
            std::env::var_os("PATH")
                .iter()
                .flat_map(std::env::split_paths),
        )
        .map(|d| d.join("grpcurl"))
        .find(|p| p.is_file())
        .expect("grpcurl (scripts/install-test-tools)");
    ok(Command::new(bin).args(args).output().unwrap())
}

#[test]
fn helloworld_answers_its_client_and_grpcurl() {
    let (_server, addr) = serve(env!("CARGO_BIN_EXE_helloworld-server"));
    let out = ok(Command::new(env!("CARGO_BIN_EXE_helloworld-client"))
        .env("ADDR", &addr)
        .output()
        .unwrap());
    assert!(out.contains(r#"message: "Hello Tonic!""#), "{out}");
    let list = grpcurl(&["-plaintext", &addr, "list"]);
    assert!(list.lines().any(|l| l == "helloworld.Greeter"), "{list}");
    let reply = grpcurl(&[
        "-plaintext",
        "-d",
        r#"{"name":"grpcurl"}"#,
        &addr,
        "helloworld.Greeter/SayHello",
    ]);
    assert!(reply.contains(r#""message": "Hello grpcurl!""#), "{reply}");
}

#[test]
fn routeguide_answers_its_client_and_grpcurl() {
    let (_server, addr) = serve(env!("CARGO_BIN_EXE_routeguide-server"));
    // The client makes the four calls of tonic's tutorial: unary, server stream, client
    // stream, then a bidi stream it keeps open (a note a second, for ever): read its output
    // until the server has echoed two notes, then stop it.
    use std::io::{BufRead, BufReader};
    let mut client = Command::new(env!("CARGO_BIN_EXE_routeguide-client"))
        .env("ADDR", &addr)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = String::new();
    for line in BufReader::new(client.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
    {
        out.push_str(&line);
        out.push('\n');
        if out.matches("NOTE = RouteNote").count() >= 2 {
            break;
        }
    }
    let _ = client.kill();
    let _ = client.wait();
    assert!(out.contains("*** SIMPLE RPC ***"), "{out}");
    assert!(
        out.contains("Berkshire Valley Management Area Trail"),
        "{out}"
    );
    assert!(out.contains("*** SERVER STREAMING ***"), "{out}");
    assert!(out.matches("FEATURE = ").count() > 10, "{out}");
    assert!(out.contains("SUMMARY: RouteSummary"), "{out}");
    assert!(out.contains("*** BIDIRECTIONAL STREAMING ***"), "{out}");
    assert!(out.matches("NOTE = RouteNote").count() >= 2, "{out}");
    let feature = grpcurl(&[
        "-plaintext",
        "-d",
        r#"{"latitude":409146138,"longitude":-746188906}"#,
        &addr,
        "routeguide.RouteGuide/GetFeature",
    ]);
    assert!(
        feature.contains("Berkshire Valley Management Area Trail"),
        "{feature}"
    );
    let listed = grpcurl(&[
        "-plaintext",
        "-d",
        r#"{"lo":{"latitude":400000000,"longitude":-750000000},"hi":{"latitude":420000000,"longitude":-730000000}}"#,
        &addr,
        "routeguide.RouteGuide/ListFeatures",
    ]);
    assert!(listed.matches(r#""name""#).count() > 10, "{listed}");
}
