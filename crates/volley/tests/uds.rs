//! `volley serve --addr unix:/path`: reached by grpcurl (`-unix`), ghz (`unix:///path`), `volley
//! bench unix:/path` and curl (`--unix-socket`, Connect over HTTP/1.1); the socket file removed on
//! shutdown; a stale socket file replaced with a log line; a path that is not a socket, or a
//! socket another server listens on, refused in one line.

use std::{path::PathBuf, process::Command, time::Duration};

use serde_json::Value;
use volley_testkit::{Volley, fails_in_one_line, tool, volley, workspace_file};

const VOLLEY: Volley = volley!();

/// A fresh socket path for this test.
fn socket(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("volley-uds-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("volley.sock")
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run the peer");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd:?}: {text}");
    text
}

#[test]
fn clients_we_did_not_write_reach_a_unix_socket_and_its_file_goes_at_exit() {
    let path = socket("peers");
    let target = format!("unix:{}", path.display());
    let mut server = VOLLEY.command(&["serve", "--addr", &target]);
    server.env("VOLLEY_LOG", "info");
    let mut server = volley_testkit::VolleyProcess::from_command(server);
    assert_eq!(server.target(), target);

    // grpcurl through reflection.
    let shown = path.display().to_string();
    let out = run(Command::new(tool("grpcurl")).args([
        "-plaintext",
        "-unix",
        "-d",
        r#"{"id":228}"#,
        &shown,
        "api.Users/Get",
    ]));
    assert!(out.contains(r#""email": "dmitry.k@test.tld""#), "{out}");

    // ghz and volley bench, zero errors.
    let ghz = run(Command::new(tool("ghz")).args([
        "--insecure",
        "--proto",
        &workspace_file("proto/api/users.proto"),
        "--call",
        "api.Users.Get",
        "-d",
        r#"{"id":228}"#,
        "-n",
        "500",
        "-c",
        "10",
        "-O",
        "json",
        &format!("unix://{shown}"),
    ]));
    let report: Value = serde_json::from_str(ghz.trim()).expect("ghz's JSON");
    assert_eq!(report["statusCodeDistribution"]["OK"], 500, "{ghz}");
    let bench = run(&mut VOLLEY.command(&[
        "bench",
        "--insecure",
        "--call",
        "api.Users.Get",
        "-d",
        r#"{"id":228}"#,
        "-n",
        "2000",
        "-c",
        "50",
        "-O",
        "json",
        &target,
    ]));
    let report: Value =
        serde_json::from_str(&bench[..bench.rfind('}').map_or(0, |i| i + 1)]).expect("JSON");
    assert_eq!(report["statusCodeDistribution"]["OK"], 2000, "{bench}");

    // curl: Connect's JSON over HTTP/1.1, the path that reads the first bytes and replays them.
    let out = run(Command::new(tool("curl")).args([
        "-s",
        "--unix-socket",
        &shown,
        "-H",
        "content-type: application/json",
        "-d",
        r#"{"id":228}"#,
        "http://localhost/api.Users/Get",
    ]));
    assert!(out.contains(r#""email":"dmitry.k@test.tld""#), "{out}");

    server.signal("TERM");
    assert!(server.wait_exit(Duration::from_secs(10)).is_some());
    assert!(!path.exists(), "the socket file is removed at exit");
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[test]
fn a_stale_socket_is_replaced_and_anything_else_is_refused() {
    // A socket file left by a server that died: nobody listens on it.
    let path = socket("stale");
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(path.exists());
    let target = format!("unix:{}", path.display());
    let mut cmd = VOLLEY.command(&["serve", "--addr", &target]);
    cmd.env("VOLLEY_LOG", "info");
    let server = volley_testkit::VolleyProcess::from_command(cmd);
    assert!(
        server.log().contains("replacing a stale socket file"),
        "{}",
        server.log()
    );

    // The same path again, while that server lives: refused, naming why.
    let line = fails_in_one_line(&mut VOLLEY.command(&["serve", "--addr", &target]));
    assert!(line.contains("another server is listening on it"), "{line}");
    drop(server);

    // A path that is not a socket: refused, and left alone.
    let file = socket("file");
    std::fs::write(&file, "precious").unwrap();
    let line = fails_in_one_line(&mut VOLLEY.command(&[
        "serve",
        "--addr",
        &format!("unix:{}", file.display()),
    ]));
    assert!(line.contains("exists and is not a socket"), "{line}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "precious");

    let line = fails_in_one_line(&mut VOLLEY.command(&["serve", "--addr", "unix:"]));
    assert!(line.contains("needs a socket path"), "{line}");
    for p in [&path, &file] {
        let _ = std::fs::remove_dir_all(p.parent().unwrap());
    }
}
