//! Third-party clients against `volley serve`: grpcurl (reflection, unary, streaming, health,
//! plaintext and TLS with the generated CA) and ghz running the seed 000 command verbatim.
//! The tools come from `scripts/install-test-tools`; a missing tool fails the test.

use std::process::{Command, Output};

use volley_testkit::{Volley, VolleyProcess, ok_stdout, tool, volley, workspace};

const VOLLEY: Volley = volley!();

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("run peer tool")
}

/// grpcurl with the connection flags for `target` in front of `args`.
fn grpcurl(conn: &[&str], args: &[&str]) -> Command {
    let mut c = Command::new(tool("grpcurl"));
    c.args(conn).args(args);
    c
}

fn check_all_calls(conn: &[&str], addr: &str) {
    let list = ok_stdout(&mut grpcurl(conn, &[addr, "list"]));
    let mut names: Vec<_> = list.lines().collect();
    names.sort();
    assert_eq!(
        names,
        [
            "api.Users",
            "grpc.health.v1.Health",
            "grpc.hi",
            "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection",
            "grpc.testing.TestService",
            "helloworld.Greeter",
            "orders.OrderService",
        ]
    );

    let get = ok_stdout(&mut grpcurl(
        conn,
        &["-d", r#"{"id": 228}"#, addr, "api.Users/Get"],
    ));
    let v: serde_json::Value = serde_json::from_str(&get).unwrap();
    assert_eq!(v["id"], "228");
    assert_eq!(v["email"], "dmitry.k@test.tld");
    assert_eq!(v["name"], "Dmitry K.");
    assert_eq!(v["rating"], 228.53);

    let list = ok_stdout(&mut grpcurl(conn, &[addr, "api.Users/List"]));
    let users: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&list)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(users.len(), 10);
    assert_eq!(users[9]["email"], "user9@test");

    let hi = ok_stdout(&mut grpcurl(
        conn,
        &[
            "-d",
            r#"{"name": "hyperf", "sex": 1}"#,
            addr,
            "grpc.hi/sayHello",
        ],
    ));
    let v: serde_json::Value = serde_json::from_str(&hi).unwrap();
    assert_eq!(v["message"], "Hello hyperf");
    assert_eq!(v["user"]["sex"], 1);

    let health = ok_stdout(&mut grpcurl(conn, &[addr, "grpc.health.v1.Health/Check"]));
    assert!(health.contains(r#""status": "SERVING""#), "{health}");

    let describe = ok_stdout(&mut grpcurl(conn, &[addr, "describe", "orders.Order"]));
    assert!(
        describe.contains("google.protobuf.Timestamp requestTime = 5"),
        "{describe}"
    );

    // An unknown method is refused by name, and the server keeps serving.
    let out = run(&mut grpcurl(conn, &[addr, "api.Users/Nope"]));
    assert!(!out.status.success());
    let again = ok_stdout(&mut grpcurl(
        conn,
        &["-d", r#"{"id": 1}"#, addr, "api.Users/Get"],
    ));
    assert!(again.contains("Dmitry K."));
}

#[test]
fn grpcurl_plaintext() {
    let p = VOLLEY.serve(&[]);
    check_all_calls(&["-plaintext"], &p.addr().to_string());
}

#[test]
fn grpcurl_tls_with_the_generated_ca() {
    let dir = std::env::temp_dir().join(format!("volley-peers-tls-{}", std::process::id()));
    let dir_s = dir.to_str().unwrap();
    let p = VolleyProcess::start(
        VOLLEY.bin(),
        &[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--tls-self-signed",
            "--tls-dir",
            dir_s,
        ],
    );
    let ca = dir.join("ca.pem");
    assert!(
        p.log()
            .contains(&format!("wrote CA certificate to {}", ca.display()))
    );
    let ca_s = ca.to_str().unwrap();
    check_all_calls(&["-cacert", ca_s], &p.addr().to_string());

    // Without the CA the client refuses the server, and the server keeps serving.
    let out = run(&mut grpcurl(&[], &[&p.addr().to_string(), "list"]));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("certificate"), "{err}");
    // A plaintext client is refused too.
    let out = run(&mut grpcurl(
        &["-plaintext"],
        &[&p.addr().to_string(), "list"],
    ));
    assert!(!out.status.success());
    ok_stdout(&mut grpcurl(
        &["-cacert", ca_s],
        &[&p.addr().to_string(), "list"],
    ));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn tls_and_plaintext_on_one_port() {
    let dir = std::env::temp_dir().join(format!("volley-peers-both-{}", std::process::id()));
    let dir_s = dir.to_str().unwrap();
    let p = VolleyProcess::start(
        VOLLEY.bin(),
        &[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--tls-self-signed",
            "--tls-dir",
            dir_s,
            "--also-plaintext",
        ],
    );
    assert!(p.log().contains("TLS and h2c"), "{}", p.log());
    let addr = p.addr().to_string();
    let ca = dir.join("ca.pem");
    for conn in [vec!["-plaintext"], vec!["-cacert", ca.to_str().unwrap()]] {
        let out = ok_stdout(&mut grpcurl(
            &conn,
            &["-d", r#"{"id": 5}"#, &addr, "api.Users/Get"],
        ));
        assert!(out.contains("Dmitry K."), "{conn:?}: {out}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn ghz_runs_the_seed_000_command() {
    let p = VOLLEY.serve(&[]);
    let proto = workspace().join("proto/api/users.proto");
    // Seed 000: ghz --insecure --proto <users.proto> --call api.Users.Get -d '{"id":228}' -c100 -n1000
    let summary = ok_stdout(
        Command::new(tool("ghz"))
            .args(["--insecure", "--proto"])
            .arg(&proto)
            .args([
                "--call",
                "api.Users.Get",
                "-d",
                r#"{"id":228}"#,
                "-c100",
                "-n1000",
            ])
            .arg(p.addr().to_string()),
    );
    assert!(summary.contains("  Count:\t1000\n"), "{summary}");
    assert!(summary.contains("[OK]   1000 responses"), "{summary}");
    assert!(!summary.contains("Error distribution"), "{summary}");

    // The streaming twin of seed 000 (api.Users.List) too.
    let summary = ok_stdout(
        Command::new(tool("ghz"))
            .args(["--insecure", "--proto"])
            .arg(&proto)
            .args(["--call", "api.Users.List", "-c100", "-n1000"])
            .arg(p.addr().to_string()),
    );
    assert!(summary.contains("[OK]   1000 responses"), "{summary}");
}
