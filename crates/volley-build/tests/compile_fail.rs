//! What the generated code refuses, checked by compiling small crates with cargo: an
//! implementation that forgets a method or takes the wrong request type does not compile, and the
//! error names the method; a .proto that does not parse, or whose generated names collide, fails
//! the build script with one line saying where. A correct implementation compiles (the control).

use std::{
    path::{Path, PathBuf},
    process::Command,
};

const PROTO: &str = r#"syntax = "proto3";
package demo;
service Greeter {
  rpc SayHello(HelloRequest) returns (HelloReply);
  rpc Chat(stream HelloRequest) returns (stream HelloReply);
}
message HelloRequest { string name = 1; }
message HelloReply { string message = 1; }
"#;

const HEADER: &str = r#"
mod demo { include!(concat!(env!("OUT_DIR"), "/demo.rs")); }
use demo::{HelloReply, HelloRequest, greeter_server::{Greeter, GreeterServer}};
use volley_server::{Request, Response, Status, Streaming};
type Replies = std::pin::Pin<Box<dyn volley_server::codegen::Stream<Item = Result<HelloReply, Status>> + Send>>;
struct G;
"#;

const CHAT: &str = r#"
    type ChatStream = Replies;
    async fn chat(&self, _: Request<Streaming<HelloRequest>>) -> Result<Response<Replies>, Status> {
        Err(Status::unimplemented("no chat"))
    }
"#;

const SAY_HELLO: &str = r#"
    async fn say_hello(&self, r: Request<HelloRequest>) -> Result<Response<HelloReply>, Status> {
        Ok(Response::new(HelloReply { message: r.into_inner().name }))
    }
"#;

const MAIN: &str = r#"
fn main() { let _: volley_server::Service = GreeterServer::new(G).into(); }
"#;

/// A scratch crate outside the workspace, sharing one target directory across cases.
struct Scratch {
    dir: PathBuf,
    target: PathBuf,
}

impl Scratch {
    fn new() -> Scratch {
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let dir = tmp.join("compile-fail-crate");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let manifest = format!(
            r#"[package]
name = "compile-fail"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
prost = "0.14"
volley-server = {{ path = "{server}" }}

[build-dependencies]
volley-build = {{ path = "{build}" }}

[workspace]
"#,
            server = crates.join("volley-server").display(),
            build = crates.join("volley-build").display(),
        );
        std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
        // Server side only (the crate has no volley-client). The workspace's lock, so the scratch crate builds the versions already downloaded.
        std::fs::copy(crates.join("../Cargo.lock"), dir.join("Cargo.lock")).unwrap();
        std::fs::write(
            dir.join("build.rs"),
            "fn main() { volley_build::configure().build_client(false)\
             .compile(&[\"demo.proto\"], &[\".\"]).unwrap(); }\n",
        )
        .unwrap();
        Scratch {
            dir,
            target: tmp.join("compile-fail-target"),
        }
    }

    /// `cargo check` with this proto and main.rs: Ok(()) or Err(stderr).
    fn check(&self, proto: &str, main: &str) -> Result<(), String> {
        std::fs::write(self.dir.join("demo.proto"), proto).unwrap();
        std::fs::write(self.dir.join("src/main.rs"), main).unwrap();
        let out = Command::new(env!("CARGO"))
            .args(["check", "--offline", "--quiet", "--message-format=short"])
            .current_dir(&self.dir)
            .env("CARGO_TARGET_DIR", &self.target)
            .env_remove("RUSTFLAGS")
            .output()
            .expect("run cargo");
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }
}

fn program(methods: &str) -> String {
    format!("{HEADER}\nimpl Greeter for G {{{methods}}}\n{MAIN}")
}

#[test]
fn generated_services_refuse_what_they_should() {
    let s = Scratch::new();

    // The control: a whole implementation compiles, so the failures below are the cases'.
    let whole = program(&format!("{SAY_HELLO}{CHAT}"));
    s.check(PROTO, &whole)
        .unwrap_or_else(|e| panic!("a correct implementation must compile:\n{e}"));

    let err = s.check(PROTO, &program(CHAT)).unwrap_err();
    assert!(
        err.contains("not all trait items implemented, missing: `say_hello`"),
        "forgotten method:\n{err}"
    );

    let wrong = SAY_HELLO.replace("Request<HelloRequest>", "Request<HelloReply>");
    let err = s
        .check(PROTO, &program(&format!("{wrong}{CHAT}")))
        .unwrap_err();
    assert!(
        err.contains("method `say_hello` has an incompatible type for trait"),
        "wrong request type:\n{err}"
    );

    let broken = PROTO.replace("string name = 1;", "string name = 1");
    let err = s.check(&broken, &whole).unwrap_err();
    assert!(
        err.contains("demo.proto:7:"),
        "a parse error names file:line:\n{err}"
    );

    let clash = PROTO.replace(
        "rpc Chat(",
        "rpc say_hello(HelloRequest) returns (HelloReply);\n  rpc Chat(",
    );
    let err = s.check(&clash, &whole).unwrap_err();
    assert!(
        err.contains(
            "methods demo.Greeter.SayHello and demo.Greeter.say_hello both generate fn say_hello"
        ),
        "colliding names:\n{err}"
    );
}
