//! `volley mock` as GripMock users run it: the binary as `gripmock` (a symlink), GripMock's
//! command lines (v3's with its environment, v1's single-dash flags), its default ports, `gripmock
//! check`, protos as files, folders and descriptor sets, only health and reflection beside them
//! (health stubbable), and unknown stub keys warned about, or refused with `--strict`.

#[path = "mock_support/mod.rs"]
mod support;

use std::{collections::HashMap, process::Command};

use serde_json::{Value, json};
use support::{Mock, TempDir, gripmock, grpcurl};
use volley_testkit::{Volley, fails_in_one_line, tool, volley, workspace};

const VOLLEY: Volley = volley!();

fn project() -> std::path::PathBuf {
    workspace().join("scripts/peers/gripmock-client")
}

/// GripMock's command line for the Go client's project, from its folder.
fn project_command(bin: &std::path::Path, extra: &[&str]) -> Command {
    let mut cmd = Command::new(bin);
    cmd.args(extra).args([
        "--stub=stubs",
        "--imports=proto",
        "proto/greeter/greeter.proto",
        "proto/store/price.proto",
    ]);
    cmd.current_dir(project());
    cmd
}

/// The Go client against `addr`: each call's JSON line, by name.
fn client(addr: &str) -> HashMap<String, Value> {
    let out = Command::new(tool("gripmock-client"))
        .args(["-addr", addr])
        .output()
        .expect("run gripmock-client");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a JSON line");
            (v["call"].as_str().unwrap_or_default().to_owned(), v)
        })
        .collect()
}

fn check_calls(calls: &HashMap<String, Value>) {
    assert_eq!(
        calls["equals"]["replies"],
        json!([{"message": "Hello Tokopedia", "tags": ["first"]}])
    );
    assert_eq!(calls["matches-error"]["code"], "PermissionDenied");
    assert_eq!(calls["contains-header"]["x-stub"], "contains");
    assert_eq!(calls["no-stub"]["code"], "NotFound");
    assert_eq!(
        calls["server-stream"]["replies"].as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(
        calls["client-stream"]["replies"],
        json!([{"cents": "999", "items": 3}])
    );
    assert_eq!(calls["bidi"]["replies"], json!([{"message": "hi ann"}]));
    assert_eq!(
        calls["other-service"]["replies"],
        json!([{"sku": "pear", "cents": "250", "currency": "EUR"}])
    );
}

#[test]
fn gripmock_symlink_serves_the_go_clients_project_on_ports_from_its_environment() {
    let dir = TempDir::new("cli-env");
    let bin = gripmock(VOLLEY.bin(), &dir);
    let mock = Mock::start(project_command(&bin, &[]));
    check_calls(&client(&mock.target()));
    // `gripmock check` against the same variables.
    let ok = Command::new(&bin)
        .args(["check", "--timeout=10s", "--silent"])
        .env("GRPC_ADDR", mock.target())
        .status()
        .expect("run gripmock check");
    assert!(ok.success());
}

#[test]
fn gripmock_v1_single_dash_flags_choose_the_ports() {
    let dir = TempDir::new("cli-v1");
    let bin = gripmock(VOLLEY.bin(), &dir);
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port().to_string())
            .unwrap()
    };
    let (g, a) = (free(), free());
    let mut cmd = Command::new(&bin);
    cmd.args([
        "-grpc-listen",
        "127.0.0.1",
        "-grpc-port",
        &g,
        "-admin-listen",
        "127.0.0.1",
        "-admin-port",
        &a,
        "-stub=stubs",
        "-imports=proto",
        "proto/greeter/greeter.proto",
        "proto/store/price.proto",
    ])
    .current_dir(project());
    let mock = Mock::start(cmd);
    assert_eq!(mock.grpc.port().to_string(), g);
    assert_eq!(mock.admin.port().to_string(), a);
    check_calls(&client(&mock.target()));
}

#[test]
fn gripmock_default_command_line_on_4770_and_4771() {
    // A test that cannot run fails: CI's machine has these ports free, and a machine where
    // something holds them has not tried GripMock's defaults.
    let free = |p: u16| std::net::TcpListener::bind(("0.0.0.0", p)).is_ok();
    for port in [4770, 4771] {
        assert!(
            free(port),
            "port {port} is taken on this machine, so GripMock's default command line cannot be \
             tried: stop what listens there (a GripMock?) and run this test again"
        );
    }
    let dir = TempDir::new("cli-default");
    let bin = gripmock(VOLLEY.bin(), &dir);
    let mut cmd = project_command(&bin, &[]);
    // Exactly GripMock's command line and environment: no address given anywhere.
    for v in [
        "GRPC_ADDR",
        "GRPC_HOST",
        "GRPC_PORT",
        "HTTP_ADDR",
        "HTTP_HOST",
        "HTTP_PORT",
    ] {
        cmd.env_remove(v);
    }
    let process = volley_testkit::VolleyProcess::from_command(cmd);
    assert_eq!(process.addr().to_string(), "0.0.0.0:4770");
    assert!(
        process.log().contains("admin API on http://0.0.0.0:4771/"),
        "{}",
        process.log()
    );
    let ok = Command::new(&bin)
        .args(["check", "--timeout=10s", "--silent"])
        .env_remove("GRPC_ADDR")
        .status()
        .expect("run gripmock check");
    assert!(ok.success());
    check_calls(&client("127.0.0.1:4770"));
    let (body, code) = support::curl(&[], "http://127.0.0.1:4771/api/health/liveness");
    assert_eq!(code, 200, "{body}");
}

#[test]
fn gripmock_check_gives_up_on_a_port_nothing_serves() {
    let dir = TempDir::new("cli-check");
    let bin = gripmock(VOLLEY.bin(), &dir);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = Command::new(&bin)
        .args(["check", "--timeout=1s", "--interval=200ms"])
        .env("GRPC_ADDR", format!("127.0.0.1:{port}"))
        .output()
        .expect("run gripmock check");
    assert_eq!(out.status.code(), Some(1));
}

const SHOP: &str = "syntax = \"proto3\";\npackage shop.v1;\nimport \"common/money.proto\";\n\
    message Query { string sku = 1; }\n\
    service Catalog { rpc Price(Query) returns (common.Money); }\n";
const MONEY: &str = "syntax = \"proto3\";\npackage common;\nmessage Money { int64 cents = 1; }\n\
    service Bank { rpc Balance(Money) returns (Money); }\n";

#[test]
fn a_folder_and_a_descriptor_set_are_served_with_health_and_reflection_only() {
    let dir = TempDir::new("cli-sources");
    dir.write("protos/shop/shop.proto", SHOP);
    dir.write("protos/common/money.proto", MONEY);
    // A descriptor set of another service, as `buf build -o` or protoc would write it.
    let other = dir.write(
        "other/other.proto",
        "syntax = \"proto3\";\npackage other;\nmessage M { string s = 1; }\nservice O { rpc Get(M) returns (M); }\n",
    );
    let compiled =
        volley_proto::load::compile_protos(std::slice::from_ref(&other), &[dir.0.join("other")])
            .unwrap();
    let set = prost_types::FileDescriptorSet {
        file: compiled.pool.file_descriptor_protos().cloned().collect(),
    };
    std::fs::write(dir.0.join("other.pb"), prost::Message::encode_to_vec(&set)).unwrap();
    std::fs::remove_file(other).unwrap();
    dir.write(
        "stubs/price.yaml",
        "- {service: Catalog, method: Price, input: {equals: {sku: a}}, output: {data: {cents: 250}}}\n\
         - {service: other.O, method: Get, output: {data: {s: from-a-set}}}\n",
    );
    let mock = Mock::start(VOLLEY.command(&[
        "mock",
        "--stub",
        &dir.path("stubs"),
        &dir.path("protos"),
        &dir.path("other.pb"),
    ]));
    let (ok, list) = grpcurl(&mock.target(), &[], "list");
    assert!(ok, "{list}");
    let mut names: Vec<&str> = list.lines().collect();
    names.sort();
    assert_eq!(
        names,
        [
            "common.Bank",
            "grpc.health.v1.Health",
            "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection",
            "other.O",
            "shop.v1.Catalog",
        ]
    );
    let (ok, out) = grpcurl(
        &mock.target(),
        &["-d", r#"{"sku":"a"}"#],
        "shop.v1.Catalog/Price",
    );
    assert!(ok && out.contains(r#""cents": "250""#), "{out}");
    let (ok, out) = grpcurl(&mock.target(), &["-d", "{}"], "other.O/Get");
    assert!(ok && out.contains("from-a-set"), "{out}");
}

#[test]
fn health_is_stubbable_and_answers_for_the_rest() {
    let dir = TempDir::new("cli-health");
    dir.write("p/shop.proto", SHOP);
    dir.write("p/common/money.proto", MONEY);
    dir.write(
        "stubs/health.yaml",
        "- service: grpc.health.v1.Health\n  method: Check\n  input: {equals: {service: shop.v1.Catalog}}\n  output: {data: {status: NOT_SERVING}}\n\
         - service: grpc.health.v1.Health\n  method: Check\n  input: {equals: {service: gripmock}}\n  output: {data: {status: NOT_SERVING}}\n",
    );
    let mock = Mock::start(VOLLEY.command(&["mock", "--stub", &dir.path("stubs"), &dir.path("p")]));
    let check = |service: &str| {
        grpcurl(
            &mock.target(),
            &["-d", &format!(r#"{{"service":"{service}"}}"#)],
            "grpc.health.v1.Health/Check",
        )
    };
    let (ok, out) = check("shop.v1.Catalog");
    assert!(ok && out.contains("NOT_SERVING"), "the stub answers: {out}");
    for name in ["", "common.Bank", "gripmock"] {
        let (ok, out) = check(name);
        assert!(ok && out.contains("\"SERVING\""), "{name:?}: {out}");
    }
    let (ok, out) = check("nope");
    assert!(
        !ok && out.contains("Code: NotFound") && out.contains("unknown service"),
        "{out}"
    );
}

#[test]
fn an_unknown_key_is_one_warning_line_or_with_strict_one_error_line() {
    let dir = TempDir::new("cli-keys");
    dir.write("p/shop.proto", SHOP);
    dir.write("p/common/money.proto", MONEY);
    dir.write(
        "stubs/s.yaml",
        "- {service: Catalog, method: Price, input: {equals: {sku: b}}, output: {data: {cents: 2}, return_code: 0}}\n",
    );
    let stubs = dir.path("stubs");
    let protos = dir.path("p");
    let mock = Mock::start(VOLLEY.command(&["mock", "--stub", &stubs, &protos]));
    let log = mock.process.log();
    let warned: Vec<&str> = log.lines().filter(|l| l.contains("return_code")).collect();
    assert_eq!(warned.len(), 1, "{log}");
    assert!(
        warned[0].contains("s.yaml:1: stub #1") && warned[0].contains("WARN"),
        "{}",
        warned[0]
    );
    let (ok, out) = grpcurl(
        &mock.target(),
        &["-d", r#"{"sku":"b"}"#],
        "shop.v1.Catalog/Price",
    );
    assert!(
        ok && out.contains(r#""cents": "2""#),
        "the stub still answers: {out}"
    );

    let mut strict = VOLLEY.command(&["mock", "--strict", "--stub", &stubs, &protos]);
    strict
        .env("GRPC_ADDR", "127.0.0.1:0")
        .env("HTTP_ADDR", "127.0.0.1:0");
    let line = fails_in_one_line(&mut strict);
    assert!(
        line.contains("s.yaml:1: stub #1") && line.contains("\"output.return_code\" is not a key"),
        "{line}"
    );
}

#[test]
fn editions_and_googleapis_with_no_flag_from_a_folder() {
    let dir = TempDir::new("cli-editions");
    dir.write(
        "protos/greeter/greeter.proto",
        "edition = \"2023\";\npackage helloworld;\n\
         import \"google/type/money.proto\";\nimport \"google/api/annotations.proto\";\n\
         option features.field_presence = IMPLICIT;\n\
         message HelloRequest { string name = 1; }\n\
         message HelloReply { string message = 1 [features.field_presence = EXPLICIT]; google.type.Money price = 2; }\n\
         service Greeter {\n  rpc SayHello(HelloRequest) returns (HelloReply) {\n    option (google.api.http) = {get: \"/v1/hello/{name}\"};\n  }\n}\n",
    );
    dir.write(
        "protos/faker/faker.proto",
        "edition = \"2024\";\npackage example;\nimport \"google/protobuf/timestamp.proto\";\n\
         export message Req { string id = 1; }\n\
         export message Profile { string name = 1; google.protobuf.Timestamp born = 2; reserved legacy; }\n\
         service Profiles { rpc GetProfile(Req) returns (Profile); }\n",
    );
    dir.write(
        "stubs/s.yaml",
        "- service: Greeter\n  method: SayHello\n  input: {equals: {name: ann}}\n  output: {data: {message: hi ann, price: {currency_code: EUR, units: 3}}}\n\
         - service: example.Profiles\n  method: GetProfile\n  output: {data: {name: \"{{ faker.Person.FirstName }}\", born: \"2020-01-02T03:04:05Z\"}}\n",
    );
    let mock =
        Mock::start(VOLLEY.command(&["mock", "--stub", &dir.path("stubs"), &dir.path("protos")]));
    let log = mock.process.log();
    assert!(
        log.lines().any(
            |l| l.contains("editions: protox 0.10 and prost-reflect 0.16")
                && l.contains("faker/faker.proto (2024)")
                && l.contains("greeter/greeter.proto (2023)")
        ),
        "{log}"
    );
    let (ok, out) = grpcurl(
        &mock.target(),
        &["-d", r#"{"name":"ann"}"#],
        "helloworld.Greeter/SayHello",
    );
    assert!(
        ok && out.contains(r#""message": "hi ann""#) && out.contains(r#""currencyCode": "EUR""#),
        "{out}"
    );
    let (ok, out) = grpcurl(&mock.target(), &["-d", "{}"], "example.Profiles/GetProfile");
    assert!(
        ok && out.contains(r#""born": "2020-01-02T03:04:05Z""#),
        "{out}"
    );
}

#[test]
fn bad_stubs_fail_the_start_with_file_line_and_stub_number() {
    let dir = TempDir::new("cli-bad");
    dir.write("p/shop.proto", SHOP);
    dir.write("p/common/money.proto", MONEY);
    let cases = [
        (
            "s.yaml",
            "- service: Catalog\n  method: Price\n  input: {equals: {sku: [}\n",
            "s.yaml:3:",
        ),
        (
            "s.yaml",
            "- service: Catalog\n  method: Price\n  output: {data: {}}\n- service: Catalog\n  method: Price\n  input: {equals: {sku: [}\n",
            "stub #2: the YAML does not parse",
        ),
        (
            "s.json",
            "[{\"service\": \"Catalog\", \"method\": \"Price\", \"output\": {}},\n {\"service\": \"Catalog\",, }]",
            "s.json:2:",
        ),
        (
            "s.json",
            "[{\"service\": \"Catalog\", \"method\": \"Price\", \"output\": {}},\n {\"service\": \"Catalog\",, }]",
            "stub #2: the JSON does not parse",
        ),
        (
            "s.yaml",
            "- service: Catalog\n  method: Price\n  output: {data: {cents: 1}}\n- service: Catalog\n  method: Price\n  input: {equals: {nope: 1}}\n  output: {data: {}}\n",
            "s.yaml:4: stub #2: input.equals names no field \"nope\" of shop.v1.Query",
        ),
        (
            "s.json",
            "[{\"service\": \"Catalog\", \"method\": \"Price\", \"priority\": \"high\", \"output\": {}}]",
            "s.json:1: stub #1: invalid type",
        ),
        (
            "s.json",
            "{\"service\": \"Catalog\", \"method\": \"Price\",\n \"output\": {\"data\": {\"cents\": \"{{nope 1}}\"}}}",
            "s.json:1: stub #1: output template \"{{nope 1}}\": template: function \"nope\" not defined",
        ),
        (
            "s.yaml",
            "- service: Catalog\n  method: Price\n  input: {equals: {sku: {{ uuid2base64 \"not-a-uuid\" }}}}\n  output: {data: {}}\n",
            "s.yaml:3: stub #1: template: error calling uuid2base64",
        ),
    ];
    for (file, text, want) in cases {
        let _ = std::fs::remove_dir_all(dir.0.join("stubs"));
        dir.write(&format!("stubs/{file}"), text);
        let mut cmd = VOLLEY.command(&["mock", "--stub", &dir.path("stubs"), &dir.path("p")]);
        cmd.env("GRPC_ADDR", "127.0.0.1:0")
            .env("HTTP_ADDR", "127.0.0.1:0");
        let line = fails_in_one_line(&mut cmd);
        assert!(line.contains(want), "{text}\n{line}");
    }
    // A template that fails per call names the stub and the function.
    let _ = std::fs::remove_dir_all(dir.0.join("stubs"));
    dir.write(
        "stubs/s.yaml",
        "- service: Catalog\n  method: Price\n  output: {data: {cents: \"{{ uuid2int64 .Request.sku }}\"}}\n",
    );
    let mock = Mock::start(VOLLEY.command(&["mock", "--stub", &dir.path("stubs"), &dir.path("p")]));
    let (ok, out) = grpcurl(
        &mock.target(),
        &["-d", r#"{"sku":"x"}"#],
        "shop.v1.Catalog/Price",
    );
    assert!(
        !ok && out.contains("Code: Internal")
            && out.contains("s.yaml stub #1")
            && out.contains("error calling uuid2int64"),
        "{out}"
    );
}

#[test]
fn gripmocks_host_port_watcher_and_history_variables() {
    let dir = TempDir::new("cli-vars");
    dir.write("p/shop.proto", SHOP);
    dir.write("p/common/money.proto", MONEY);
    dir.write(
        "stubs/a.yaml",
        "- {service: Catalog, method: Price, input: {equals: {sku: a}}, output: {data: {cents: 1}}}\n",
    );
    let bin = gripmock(VOLLEY.bin(), &dir);
    let mut cmd = Command::new(&bin);
    cmd.args(["--stub", &dir.path("stubs"), &dir.path("p")])
        .env("GRPC_HOST", "127.0.0.1")
        .env("GRPC_PORT", "0")
        .env("HTTP_HOST", "127.0.0.1")
        .env("HTTP_PORT", "0")
        .env("STUB_WATCHER_INTERVAL", "100ms")
        .env("HISTORY_ENABLED", "false");
    let mock = Mock::start(cmd);
    // *_HOST and *_PORT chose the addresses (no *_ADDR was given).
    assert!(mock.grpc.ip().is_loopback() && mock.admin.ip().is_loopback());
    let price = |sku: &str| {
        grpcurl(
            &mock.target(),
            &["-d", &format!(r#"{{"sku":"{sku}"}}"#)],
            "shop.v1.Catalog/Price",
        )
    };
    let (ok, out) = price("b");
    assert!(!ok && out.contains("Code: NotFound"), "{out}");
    // A stub file added while it runs is served within the watcher's interval (100 ms here;
    // the loop allows 3 s for a loaded machine).
    dir.write(
        "stubs/b.yaml",
        "- {service: Catalog, method: Price, input: {equals: {sku: b}}, output: {data: {cents: 2}}}\n",
    );
    let start = std::time::Instant::now();
    let out = loop {
        let (ok, out) = price("b");
        if ok || start.elapsed() > std::time::Duration::from_secs(3) {
            break out;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(out.contains(r#""cents": "2""#), "{out}");
    // HISTORY_ENABLED=false: calls were answered, none kept.
    let (body, code) = mock.admin(&[], "/api/history");
    assert_eq!((body.trim(), code), ("[]", 200));
    // A variable that does not parse stops the start with one line naming it.
    let mut bad = Command::new(&bin);
    bad.args(["--stub", &dir.path("stubs"), &dir.path("p")])
        .env("GRPC_ADDR", "127.0.0.1:0")
        .env("HTTP_ADDR", "127.0.0.1:0")
        .env("STUB_WATCHER_INTERVAL", "soon");
    let line = fails_in_one_line(&mut bad);
    assert!(line.contains("STUB_WATCHER_INTERVAL=soon"), "{line}");
}
