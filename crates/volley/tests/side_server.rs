//! The side server stays up: `volley mock` with 64 file descriptors, its admin port flooded with
//! 80 connections (more than it can accept) and then left alone, answers its admin API again,
//! says why it could not accept in one log line, and kept serving gRPC throughout.

use std::{
    io::{Read, Write},
    net::TcpStream,
    process::Command,
    time::{Duration, Instant},
};

use volley_testkit::{Volley, VolleyProcess, tool, volley};

const VOLLEY: Volley = volley!();

/// `GET path` on `addr` over HTTP/1.1, one connection: the status code, or `None` when the
/// server did not answer within `limit`.
fn get(addr: &str, path: &str, limit: Duration) -> Option<u16> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(limit)).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
    )
    .ok()?;
    let mut head = [0u8; 12];
    s.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

#[test]
fn the_admin_api_answers_again_after_its_descriptors_ran_out() {
    let dir = std::env::temp_dir().join(format!("volley-side-server-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("shop.proto"),
        "syntax = \"proto3\";\npackage shop.v1;\nmessage Q { string p = 1; }\n\
         service Catalog { rpc Get(Q) returns (Q); }\n",
    )
    .unwrap();
    // `ulimit -n` in sh sets the soft and the hard limit: volley cannot raise it.
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!(
            "ulimit -n 64 && exec {} mock --grpc-listen 127.0.0.1 --grpc-port 0 \
             --admin-listen 127.0.0.1 --admin-port 0 shop.proto",
            VOLLEY.bin().display()
        ))
        .current_dir(&dir);
    let p = VolleyProcess::from_command(cmd);
    let log = p.log();
    let admin = log
        .lines()
        .find_map(|l| l.split("admin API on http://").nth(1))
        .and_then(|rest| rest.split('/').next())
        .expect("the admin API's address")
        .to_owned();
    assert_eq!(get(&admin, "/api/stubs", Duration::from_secs(5)), Some(200));

    // 80 connections: the kernel queues them, the process can hold only some. (A server whose
    // accept loop ended on the first failure closed its listener: connections are then
    // refused, and the check below says so.)
    let flood: Vec<TcpStream> = (0..80)
        .filter_map(|_| TcpStream::connect(&admin).ok())
        .collect();
    println!("{} of 80 connections opened", flood.len());
    std::thread::sleep(Duration::from_secs(1));
    drop(flood);

    // Once they are gone, the admin API answers again (the loop backs off 1 s at most).
    let t = Instant::now();
    let mut answered = None;
    while t.elapsed() < Duration::from_secs(10) {
        answered = get(&admin, "/api/stubs", Duration::from_secs(2));
        if answered == Some(200) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = p.log();
    assert_eq!(
        answered,
        Some(200),
        "the admin API did not answer again within {:?}:\n{log}",
        t.elapsed()
    );
    println!("answered again {:?} after the flood ended", t.elapsed());
    // It ran out, and said so once (a line per cause, not per failed accept).
    let said: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("volley-admin: accept failed"))
        .collect();
    assert_eq!(said.len(), 1, "{log}");
    assert!(said[0].contains("Too many open files"), "{}", said[0]);
    // gRPC went on.
    let health = Command::new(tool("grpcurl"))
        .args(["-plaintext", p.target(), "grpc.health.v1.Health/Check"])
        .output()
        .unwrap();
    assert!(health.status.success(), "{health:?}");
    let _ = std::fs::remove_dir_all(dir);
}
