//! What the `volley mock` tests share: the binary as `gripmock` (a symlink in a temp folder), a
//! mock started on ports chosen at run time through GripMock's own variables (`GRPC_ADDR`,
//! `HTTP_ADDR`), grpcurl and curl.
#![allow(dead_code)]

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    process::Command,
};

use volley_testkit::{VolleyProcess, tool};

/// A temp folder of the test's own, removed on drop.
pub(crate) struct TempDir(pub PathBuf);

impl TempDir {
    pub(crate) fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("volley-mock-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// Writes `text` to `rel` (folders made), and returns its path.
    pub(crate) fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }

    pub(crate) fn path(&self, rel: &str) -> String {
        self.0.join(rel).display().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `gripmock`: a symlink to the volley binary under test, in a folder of its own.
pub(crate) fn gripmock(volley: &Path, dir: &TempDir) -> PathBuf {
    let link = dir.0.join("bin/gripmock");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(volley, &link).unwrap();
    link
}

/// A running mock: its gRPC and admin addresses.
pub(crate) struct Mock {
    pub process: VolleyProcess,
    pub grpc: SocketAddr,
    pub admin: SocketAddr,
}

impl Mock {
    /// Starts `cmd` (a `gripmock` or `volley mock` command line) on free loopback ports, given
    /// as GripMock users give them (GRPC_ADDR, HTTP_ADDR) unless `cmd` sets them.
    pub(crate) fn start(mut cmd: Command) -> Mock {
        let given: Vec<String> = cmd
            .get_envs()
            .map(|(n, _)| n.to_string_lossy().into_owned())
            .collect();
        let set = |k: &str| given.iter().any(|n| n == k);
        if !set("GRPC_ADDR") && !set("GRPC_PORT") {
            cmd.env("GRPC_ADDR", "127.0.0.1:0");
        }
        if !set("HTTP_ADDR") && !set("HTTP_PORT") {
            cmd.env("HTTP_ADDR", "127.0.0.1:0");
        }
        let process = VolleyProcess::from_command(cmd);
        let log = process.log();
        let admin = log
            .split("admin API on http://")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no admin address in the log:\n{log}"));
        let grpc = process.addr();
        Mock {
            process,
            grpc,
            admin,
        }
    }

    pub(crate) fn target(&self) -> String {
        self.grpc.to_string()
    }

    /// `curl -s` against the admin API: the body and the HTTP status.
    pub(crate) fn admin(&self, args: &[&str], path: &str) -> (String, u16) {
        curl(args, &format!("http://{}{path}", self.admin))
    }
}

/// `curl -s ARGS URL`: the body and the HTTP status.
pub(crate) fn curl(args: &[&str], url: &str) -> (String, u16) {
    let out = Command::new(tool("curl"))
        .args(["-s", "-w", "\n%{http_code}"])
        .args(args)
        .arg(url)
        .output()
        .expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or_default();
    (body.to_owned(), code.parse().unwrap_or(0))
}

/// `grpcurl -plaintext ARGS ADDR METHOD`: whether it succeeded, and stdout with stderr.
pub(crate) fn grpcurl(addr: &str, args: &[&str], method: &str) -> (bool, String) {
    let out = Command::new(tool("grpcurl"))
        .arg("-plaintext")
        .args(args)
        .arg(addr)
        .arg(method)
        .output()
        .expect("run grpcurl");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// grpc-go's interop server on a free loopback port, listening: the process and its address.
pub(crate) fn interop_server() -> (std::process::Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = Command::new(tool("grpc-interop-server"))
        .arg(format!("--port={port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start grpc-interop-server");
    let addr = format!("127.0.0.1:{port}");
    let start = std::time::Instant::now();
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(
            start.elapsed().as_secs() < 20,
            "grpc-interop-server did not listen"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    (server, addr)
}
