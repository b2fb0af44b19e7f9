//! `volley serve --proto FILE`: a service from a .proto this project has never compiled (the test
//! writes it), served with no code, and called by clients we did not write: grpcurl through
//! reflection, curl over Connect JSON, ghz and `volley bench` at c=50, and `@grpc/grpc-js` with
//! `@grpc/proto-loader` (gRPCity's stack).

use std::{path::PathBuf, process::Command};

use serde_json::{Value, json};
use volley_testkit::{Volley, fails_in_one_line, ok_stdout, tool, volley, workspace};

const VOLLEY: Volley = volley!();

const SHOP: &str = r#"syntax = "proto3";
package shop.v1;
message Item { string sku = 1; int32 count = 2; double price = 3; repeated string tags = 4; }
message Query { string prefix = 1; }
message Summary { int32 items = 1; }
service Catalog {
  rpc Get(Query) returns (Item);
  rpc List(Query) returns (stream Item);
  rpc Upload(stream Item) returns (Summary);
  rpc Chat(stream Query) returns (stream Item);
}
"#;

fn write_proto(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("volley-dynamic-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("shop.proto");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_proto_never_compiled_is_served_to_clients_we_did_not_write() {
    let proto = write_proto("serve", SHOP);
    let proto_arg = proto.display().to_string();
    let server = VOLLEY.serve(&["--proto", &proto_arg, "--stream-messages", "4"]);
    let addr = server.addr().to_string();
    let grpcurl = |args: &[&str]| {
        let mut c = Command::new(tool("grpcurl"));
        c.arg("-plaintext").args(args);
        ok_stdout(&mut c)
    };

    // Reflection: listed beside the built-in services, described from its descriptor.
    let list = grpcurl(&[&addr, "list"]);
    assert!(list.lines().any(|l| l == "shop.v1.Catalog"), "{list}");
    assert!(list.lines().any(|l| l == "helloworld.Greeter"), "{list}");
    let described = grpcurl(&[&addr, "describe", "shop.v1.Catalog"]);
    assert!(
        described.contains("rpc Chat ( stream .shop.v1.Query ) returns ( stream .shop.v1.Item );"),
        "{described}"
    );

    // Calls of every kind: default messages of the output type.
    assert_eq!(
        grpcurl(&["-d", r#"{"prefix":"a"}"#, &addr, "shop.v1.Catalog/Get"]).trim(),
        "{}"
    );
    let listed = grpcurl(&["-d", r#"{"prefix":"a"}"#, &addr, "shop.v1.Catalog/List"]);
    assert_eq!(listed.matches("{}").count(), 4, "{listed}");
    let uploaded = grpcurl(&[
        "-d",
        r#"{"sku":"a"} {"sku":"b"}"#,
        &addr,
        "shop.v1.Catalog/Upload",
    ]);
    assert_eq!(uploaded.trim(), "{}");
    let chat = grpcurl(&[
        "-d",
        r#"{"prefix":"a"} {"prefix":"b"}"#,
        &addr,
        "shop.v1.Catalog/Chat",
    ]);
    assert_eq!(chat.matches("{}").count(), 8, "{chat}");

    // Connect with JSON, by curl.
    let body = ok_stdout(Command::new(tool("curl")).args([
        "-s",
        "-H",
        "content-type: application/json",
        "-d",
        r#"{"prefix":"x"}"#,
        &format!("http://{addr}/shop.v1.Catalog/Get"),
    ]));
    assert_eq!(body, "{}");

    // @grpc/grpc-js over @grpc/proto-loader: no generated code on either side.
    let client = workspace().join("scripts/peers/node-client");
    assert!(
        client.join("node_modules/@grpc/grpc-js").is_dir(),
        "scripts/peers/node-client is not installed: run scripts/install-test-tools"
    );
    let out = ok_stdout(Command::new(tool("node")).current_dir(&client).args([
        "client.js",
        &addr,
        &proto_arg,
        "shop.v1.Catalog",
        "Get",
        "List",
        r#"{"prefix":"a"}"#,
    ]));
    let seen: Value = serde_json::from_str(out.trim()).expect("node-client's JSON");
    let empty = json!({"sku": "", "count": 0, "price": 0, "tags": []});
    assert_eq!(seen["unary"], empty, "{seen}");
    assert_eq!(
        seen["streamed"],
        json!([empty, empty, empty, empty]),
        "{seen}"
    );

    // Load at c=50 from ghz and from volley bench, both through reflection: no errors.
    // The same command line for both: volley bench is a drop-in for ghz.
    let load = [
        "--insecure",
        "--call",
        "shop.v1.Catalog.Get",
        "-d",
        r#"{"prefix":"a"}"#,
        "-c",
        "50",
        "-n",
        "2000",
        "-O",
        "json",
        addr.as_str(),
    ];
    let ghz = ok_stdout(Command::new(tool("ghz")).args(load));
    let ghz: Value = serde_json::from_str(&ghz).expect("ghz's JSON");
    assert_eq!(
        ghz["statusCodeDistribution"],
        json!({"OK": 2000}),
        "{}",
        ghz["errorDistribution"]
    );
    let bench = ok_stdout(VOLLEY.command(&["bench"]).args(load));
    let bench: Value = serde_json::from_str(&bench).expect("volley bench's JSON");
    assert_eq!(bench["statusCodeDistribution"], json!({"OK": 2000}));
    let _ = std::fs::remove_dir_all(proto.parent().unwrap());
}

#[test]
fn bad_protos_fail_at_start_naming_file_and_line() {
    let broken = write_proto(
        "broken",
        "syntax = \"proto3\";\nmessage A { int32 x = 1 }\n",
    );
    let line = fails_in_one_line(&mut VOLLEY.command(&[
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--proto",
        &broken.display().to_string(),
    ]));
    assert!(line.contains("shop.proto:2:"), "{line}");
    let no_services = write_proto(
        "empty",
        "syntax = \"proto3\";\nmessage A { int32 x = 1; }\n",
    );
    let line = fails_in_one_line(&mut VOLLEY.command(&[
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--proto",
        &no_services.display().to_string(),
    ]));
    assert!(line.ends_with("define no service to serve"), "{line}");
    let line =
        fails_in_one_line(&mut VOLLEY.command(&["serve", "--addr", "127.0.0.1:0", "--no-builtin"]));
    assert!(
        line.contains("--no-builtin leaves nothing to serve"),
        "{line}"
    );
    for p in [broken, no_services] {
        let _ = std::fs::remove_dir_all(p.parent().unwrap());
    }
}

#[test]
fn bench_with_a_proto_and_no_host_serves_it_in_process() {
    let proto = write_proto("bench", SHOP);
    let out = VOLLEY
        .command(&[
            "bench",
            "--proto",
            &proto.display().to_string(),
            "--call",
            "shop.v1.Catalog.List",
            "-d",
            r#"{"prefix":"a"}"#,
            "-n",
            "200",
            "-c",
            "10",
            "-O",
            "json",
        ])
        .output()
        .expect("run volley bench");
    assert!(out.status.success(), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["statusCodeDistribution"], json!({"OK": 200}));
    assert_eq!(
        report["volley"]["streaming"]["messagesReceived"], 600,
        "three replies a call"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("benching the built-in services and shop.v1.Catalog on 127.0.0.1:"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(proto.parent().unwrap());
}

#[test]
fn bench_with_a_proto_and_stubs_loads_the_stubs_answers() {
    let proto = write_proto("bench-stubs", SHOP);
    let stubs = proto.with_file_name("stubs.yaml");
    std::fs::write(
        &stubs,
        "- {service: Catalog, method: List, input: {equals: {prefix: a}}, output: {stream: [{sku: a1}, {sku: a2}]}}\n\
         - {service: Catalog, method: Get, input: {matches: {prefix: ^err}}, output: {error: down, code: 14}}\n",
    )
    .unwrap();
    let bench = |call: &str, data: &str| {
        let out = VOLLEY
            .command(&[
                "bench",
                "--proto",
                &proto.display().to_string(),
                "--stubs",
                &stubs.display().to_string(),
                "--call",
                call,
                "-d",
                data,
                "-n",
                "200",
                "-c",
                "10",
                "-O",
                "json",
            ])
            .output()
            .expect("run volley bench");
        let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        report
    };
    let list = bench("shop.v1.Catalog.List", r#"{"prefix":"a"}"#);
    assert_eq!(list["statusCodeDistribution"], json!({"OK": 200}));
    assert_eq!(
        list["volley"]["streaming"]["messagesReceived"], 400,
        "the stub's two replies a call, not three defaults"
    );
    let get = bench("shop.v1.Catalog.Get", r#"{"prefix":"error"}"#);
    assert_eq!(get["statusCodeDistribution"], json!({"Unavailable": 200}));

    // Stubs answer an in-process server only.
    let line = fails_in_one_line(&mut VOLLEY.command(&[
        "bench",
        "--insecure",
        "--proto",
        &proto.display().to_string(),
        "--stubs",
        &stubs.display().to_string(),
        "--call",
        "shop.v1.Catalog.Get",
        "127.0.0.1:1",
    ]));
    assert!(
        line.contains("--stubs answer an in-process server"),
        "{line}"
    );
    let _ = std::fs::remove_dir_all(proto.parent().unwrap());
}
