//! One port, two frameworks: axum's routes and volley's services answer real clients (curl,
//! grpcurl, grpc-go's interop client) through axum::serve, and a layer on the axum router sees
//! both kinds of request.

use std::{
    io::{BufRead, BufReader},
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

/// The example's binary on a port chosen at run time; stopped when dropped.
struct App(Child, String);

impl Drop for App {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn app(args: &[&str]) -> App {
    let mut child = Command::new(env!("CARGO_BIN_EXE_volley-example-axum"))
        .arg("127.0.0.1:0")
        .args(args)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the example");
    let addr = BufReader::new(child.stderr.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("listening on ").map(str::to_owned))
        .expect("the example's address");
    App(child, addr)
}

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
        .unwrap_or_else(|| panic!("{name} not found (scripts/install-test-tools)"))
}

fn run(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().expect("run the peer");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn axum_routes_and_volley_services_on_one_port() {
    let app = app(&[]);
    let a = app.1.as_str();
    // axum's routes.
    let (ok, out) = run(Command::new("curl").args(["-sS", &format!("http://{a}/health")]));
    assert!(ok && out == "ok", "{out}");
    let (ok, out) = run(Command::new("curl").args(["-sS", &format!("http://{a}/greet/ann")]));
    assert!(ok && out == r#"{"greeting":"Hi ann"}"#, "{out}");
    // volley's: gRPC by reflection (grpcurl), Connect's JSON (curl, HTTP/1.1), an error.
    let (ok, out) = run(Command::new(tool("grpcurl")).args(["-plaintext", a, "list"]));
    assert!(
        ok && out.lines().any(|l| l == "helloworld.Greeter"),
        "{out}"
    );
    let (ok, out) = run(Command::new(tool("grpcurl")).args([
        "-plaintext",
        "-d",
        r#"{"name":"grpcurl"}"#,
        a,
        "helloworld.Greeter/SayHello",
    ]));
    assert!(
        ok && out.contains(r#""message": "Hello grpcurl!""#),
        "{out}"
    );
    let (ok, out) = run(Command::new(tool("grpcurl")).args([
        "-plaintext",
        "-d",
        "{}",
        a,
        "helloworld.Greeter/SayHello",
    ]));
    assert!(!ok && out.contains("Code: InvalidArgument"), "{out}");
    let (ok, out) = run(Command::new("curl").args([
        "-sS",
        "-H",
        "content-type: application/json",
        "-d",
        r#"{"name":"connect"}"#,
        &format!("http://{a}/helloworld.Greeter/SayHello"),
    ]));
    assert!(ok && out == r#"{"message":"Hello connect!"}"#, "{out}");
}

#[tokio::test]
async fn a_layer_on_the_axum_router_sees_both() {
    let seen = Arc::new(AtomicU64::new(0));
    let router = volley_example_axum::app(volley_example_axum::greeter(), seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let a = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let curl = {
        let a = a.clone();
        tokio::task::spawn_blocking(move || {
            run(Command::new("curl").args(["-sS", &format!("http://{a}/health")]))
        })
        .await
        .unwrap()
    };
    assert_eq!(curl, (true, "ok".to_owned()));
    assert_eq!(seen.load(Ordering::Relaxed), 1);
    let proto = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("proto");
    let grpc = tokio::task::spawn_blocking(move || {
        run(Command::new(tool("grpcurl")).args([
            "-plaintext",
            "-import-path",
            proto.to_str().unwrap(),
            "-proto",
            "helloworld.proto",
            "-d",
            r#"{"name":"layer"}"#,
            &a,
            "helloworld.Greeter/SayHello",
        ]))
    })
    .await
    .unwrap();
    assert!(grpc.0 && grpc.1.contains("Hello layer!"), "{grpc:?}");
    assert_eq!(
        seen.load(Ordering::Relaxed),
        2,
        "the gRPC call went past the layer"
    );
}

#[test]
fn grpc_gos_interop_client_passes_through_the_tower_path() {
    let app = app(&["--builtin"]);
    let port = app.1.rsplit(':').next().unwrap().to_owned();
    for case in [
        "empty_unary",
        "large_unary",
        "client_streaming",
        "server_streaming",
        "ping_pong",
        "empty_stream",
        "timeout_on_sleeping_server",
        "cancel_after_begin",
        "cancel_after_first_response",
        "status_code_and_message",
        "special_status_message",
        "custom_metadata",
        "unimplemented_method",
        "unimplemented_service",
    ] {
        let mut child = Command::new(tool("grpc-interop-client"))
            .args([
                "--server_host=127.0.0.1",
                &format!("--server_port={port}"),
                &format!("--test_case={case}"),
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start grpc-interop-client");
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(std::time::Instant::now() < deadline, "{case} timed out");
            std::thread::sleep(Duration::from_millis(20));
        };
        let out = child.wait_with_output().unwrap();
        assert!(
            status.success(),
            "{case}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
