//! OpenAPI 3 from the REST rules: `volley openapi FILES`, and `GET /openapi.json` on `volley
//! gateway` (rules from the upstream's reflection) and `volley serve` (its built-in rules), each
//! validated by openapi-spec-validator (PyPI, installed by scripts/install-test-tools) and, for
//! the bookstore proto, compared with gnostic's `protoc-gen-openapi` v0.7.1 (Go module proxy,
//! run by Debian's protoc) on paths, operations, parameters, bodies, replies and schemas: they
//! agree but for the differences docs/gateway.md names, each asserted here.

use std::{
    collections::BTreeSet,
    path::PathBuf,
    process::{Command, Stdio},
};

use serde_json::Value;
use volley_testkit::{Volley, VolleyProcess, ok_stdout, tool, volley, workspace};

const VOLLEY: Volley = volley!();

fn bookstore() -> (PathBuf, PathBuf) {
    (
        workspace().join("scripts/peers/grpc-gateway/proto"),
        workspace().join("proto"),
    )
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("volley-openapi-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// openapi-spec-validator's verdict on `doc`: `Ok` or its words.
fn validate(doc: &Value, name: &str) -> Result<(), String> {
    let file = scratch(name).join("openapi.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let out = Command::new(tool("peer-python"))
        .args(["-m", "openapi_spec_validator"])
        .arg(&file)
        .stdin(Stdio::null())
        .output()
        .expect("run openapi-spec-validator (scripts/install-test-tools installs it)");
    match out.status.success() {
        true => Ok(()),
        false => Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}

fn ours() -> Value {
    let (dir, include) = bookstore();
    let out = ok_stdout(&mut VOLLEY.command(&[
        "openapi",
        dir.join("bookstore/v1/bookstore.proto").to_str().unwrap(),
        "-i",
        include.to_str().unwrap(),
    ]));
    serde_json::from_str(&out).unwrap()
}

fn gnostics() -> Value {
    let (dir, include) = bookstore();
    let out = scratch("gnostic");
    let api = "google.golang.org/genproto/googleapis/api/annotations";
    let status = Command::new(tool("protoc"))
        .arg(format!("--plugin=protoc-gen-openapi={}", tool("protoc-gen-openapi").display()))
        .arg("-I")
        .arg(&dir)
        .arg("-I")
        .arg(&include)
        .arg(format!("--openapi_out={}", out.display()))
        .arg(format!(
            "--openapi_opt=enum_type=string,Mgoogle/api/annotations.proto={api},Mgoogle/api/http.proto={api}"
        ))
        .arg("bookstore/v1/bookstore.proto")
        .status()
        .expect("run protoc");
    assert!(status.success(), "protoc with protoc-gen-openapi failed");
    let yaml = std::fs::read_to_string(out.join("openapi.yaml")).unwrap();
    serde_yaml::from_str(&yaml).unwrap()
}

#[test]
fn volley_openapi_writes_a_valid_document() {
    let doc = ours();
    validate(&doc, "cli").unwrap();
    assert_eq!(doc["openapi"], "3.0.3");
    // The files' comments are the descriptions.
    assert_eq!(
        doc["paths"]["/v1/shelves/{shelf}"]["get"]["description"],
        "One shelf; NOT_FOUND when there is none."
    );
    assert_eq!(
        doc["components"]["schemas"]["Book"]["properties"]["added"]["format"],
        "date-time"
    );
    // The validator can fail: a document without info.version is refused.
    let mut broken = doc.clone();
    broken["info"].as_object_mut().unwrap().remove("version");
    assert!(validate(&broken, "broken").is_err());
}

#[test]
fn the_gateway_and_serve_answer_openapi_json_and_a_token_covers_it() {
    let up = VolleyProcess::start(&tool("bookstore"), &["upstream", "127.0.0.1:0"]);
    let gw = VolleyProcess::start(
        VOLLEY.bin(),
        &[
            "gateway",
            "--upstream",
            &up.addr().to_string(),
            "--addr",
            "127.0.0.1:0",
        ],
    );
    let get = |addr: std::net::SocketAddr, token: Option<&str>| -> (String, String) {
        let mut cmd = Command::new(tool("curl"));
        cmd.args(["-s", "-w", "\n%{http_code}"]);
        if let Some(t) = token {
            cmd.args(["-H", &format!("authorization: Bearer {t}")]);
        }
        let out = ok_stdout(cmd.arg(format!("http://{addr}/openapi.json")));
        let (body, code) = out.rsplit_once('\n').unwrap();
        (code.to_owned(), body.to_owned())
    };
    let (code, body) = get(gw.addr(), None);
    assert_eq!(code, "200", "{body}");
    let served: Value = serde_json::from_str(&body).unwrap();
    validate(&served, "gateway").unwrap();
    // By reflection, the same paths as from the file.
    let keys = |d: &Value| {
        d["paths"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(&served), keys(&ours()));

    // The same document in YAML.
    let yaml = ok_stdout(
        Command::new(tool("curl")).args(["-s", &format!("http://{}/openapi.yaml", gw.addr())]),
    );
    let from_yaml: Value = serde_yaml::from_str(&yaml).unwrap();
    assert_eq!(from_yaml, served);

    let serve = VOLLEY.serve(&["--require-token", "t0k"]);
    assert_eq!(get(serve.addr(), None).0, "401");
    let (code, body) = get(serve.addr(), Some("t0k"));
    assert_eq!(code, "200");
    let doc: Value = serde_json::from_str(&body).unwrap();
    validate(&doc, "serve").unwrap();
    assert!(doc["paths"]["/v1/users/{id}"]["get"].is_object(), "{doc}");
}

#[test]
fn every_document_route_answers_to_the_token_on_serve_and_on_the_gateway() {
    let up = VolleyProcess::start(&tool("bookstore"), &["upstream", "127.0.0.1:0"]);
    let upstream = up.addr().to_string();
    let gw = VolleyProcess::start(
        VOLLEY.bin(),
        &[
            "gateway",
            "--upstream",
            &upstream,
            "--addr",
            "127.0.0.1:0",
            "--require-token",
            "t0k",
        ],
    );
    let serve = VOLLEY.serve(&["--require-token", "t0k"]);
    let code = |addr: std::net::SocketAddr, path: &str, token: Option<&str>| -> String {
        let mut cmd = Command::new(tool("curl"));
        cmd.args(["-s", "-o", "/dev/null", "-w", "%{http_code}"]);
        if let Some(t) = token {
            cmd.args(["-H", &format!("authorization: Bearer {t}")]);
        }
        ok_stdout(cmd.arg(format!("http://{addr}{path}")))
    };
    for addr in [gw.addr(), serve.addr()] {
        for path in ["/openapi.json", "/openapi.yaml"] {
            assert_eq!(
                code(addr, path, None),
                "401",
                "{addr}{path} without a token"
            );
            assert_eq!(
                code(addr, path, Some("wrong")),
                "401",
                "{addr}{path} with a wrong token"
            );
            assert_eq!(
                code(addr, path, Some("t0k")),
                "200",
                "{addr}{path} with the token"
            );
        }
    }
}

/// Every (path, method) → operation.
fn operations(d: &Value) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for (p, item) in d["paths"].as_object().unwrap() {
        for (m, op) in item.as_object().unwrap() {
            out.push((p.clone(), m.clone(), op.clone()));
        }
    }
    out.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    out
}

/// A schema without its descriptions, and without the `format` volley adds to 64-bit integers
/// written as strings (gnostic writes `type: string` alone).
fn bare(v: &Value) -> Value {
    match v {
        Value::Object(o) => {
            let string64 = o.get("type") == Some(&Value::from("string"))
                && matches!(
                    o.get("format").and_then(Value::as_str),
                    Some("int64" | "uint64")
                );
            Value::Object(
                o.iter()
                    .filter(|(k, _)| *k != "description" && !(string64 && *k == "format"))
                    .map(|(k, v)| (k.clone(), bare(v)))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(bare).collect()),
        other => other.clone(),
    }
}

#[test]
fn the_document_agrees_with_gnostics_protoc_gen_openapi_but_for_the_named_differences() {
    let (v, g) = (ours(), gnostics());
    let (vo, go) = (operations(&v), operations(&g));
    let names = |ops: &[(String, String, Value)]| -> BTreeSet<(String, String)> {
        ops.iter().map(|(p, m, _)| (p.clone(), m.clone())).collect()
    };
    assert_eq!(names(&vo), names(&go), "the same paths and methods");
    let mut differences = Vec::new();
    for ((path, method, a), (_, _, b)) in vo.iter().zip(&go) {
        let at = format!("{method} {path}");
        if a["operationId"] != b["operationId"] {
            differences.push(format!(
                "{at}: operationId {} / {}",
                a["operationId"], b["operationId"]
            ));
        }
        let params = |op: &Value| bare(&op["parameters"]);
        if params(a) != params(b) {
            differences.push(format!("{at}: parameters {} / {}", params(a), params(b)));
        }
        if bare(&a["requestBody"]) != bare(&b["requestBody"]) {
            differences.push(format!("{at}: request body"));
        }
        let reply =
            |op: &Value| bare(&op["responses"]["200"]["content"]["application/json"]["schema"]);
        if reply(a) != reply(b) {
            differences.push(format!("{at}: reply {} / {}", reply(a), reply(b)));
        }
        if bare(&a["responses"]["default"]) != bare(&b["responses"]["default"]) {
            differences.push(format!("{at}: error reply"));
        }
    }
    let (vs, gs) = (&v["components"]["schemas"], &g["components"]["schemas"]);
    let schema_names = |s: &Value| {
        s.as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(schema_names(vs), schema_names(gs), "the same schemas");
    for name in schema_names(vs) {
        if bare(&vs[&name]["properties"]) != bare(&gs[&name]["properties"]) {
            differences.push(format!("schema {name}: {} / {}", vs[&name], gs[&name]));
        }
    }
    // The named differences, each exactly as docs/gateway.md says.
    let named = [
        // An additional binding's operation: gnostic repeats the operationId (which
        // openapi-spec-validator refuses: operationIds are unique), volley numbers it.
        r#"get /v1/shelf/{shelf}: operationId "Bookstore_GetShelf2" / "Bookstore_GetShelf""#,
        // `response_body`: volley describes the field that is the body, gnostic the message.
        r##"get /v1/shelves/{shelf}/books/{book}/title: reply {"type":"string"} / {"$ref":"#/components/schemas/Book"}"##,
        // A server stream: volley describes grpc-gateway's `{"result"}` line, gnostic a message.
        r##"get /v1/shelves/{shelf}/watch: reply {"properties":{"error":{"$ref":"#/components/schemas/Status"},"result":{"$ref":"#/components/schemas/Book"}},"type":"object"} / {"$ref":"#/components/schemas/Book"}"##,
        // google.protobuf.Empty: volley describes `{}`, gnostic gives no schema.
        r#"delete /v1/shelves/{shelf}: reply {"type":"object"} / null"#,
    ];
    let named: BTreeSet<String> = named.iter().map(|s| s.to_string()).collect();
    let found: BTreeSet<String> = differences.into_iter().collect();
    assert_eq!(
        found,
        named,
        "differences beyond the named ones:\n{}\nnamed but not found:\n{}",
        found
            .difference(&named)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n"),
        named
            .difference(&found)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n"),
    );
}
