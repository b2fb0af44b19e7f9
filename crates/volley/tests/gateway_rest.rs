//! `volley gateway` beside grpc-gateway, the anchor: the bookstore of
//! scripts/peers/grpc-gateway (a grpc-go server; grpc-gateway v2.33.0 generated for its proto by
//! Debian's protoc, both built by scripts/install-test-tools) behind each, one upstream per
//! gateway so both see the same state. The same REST requests (every rule shape the proto has:
//! path variables, nested ones, additional bindings, nested and repeated query parameters,
//! `body: "*"` and a field body, PATCH with and without a field mask, `response_body`, a server
//! stream, DELETE, errors with details, bad bodies) go to both, with curl; status, body (as JSON)
//! and the headers users read must agree, but for the differences docs/gateway.md names, each
//! checked here to be exactly that difference.

use std::{
    path::Path,
    process::{Command, Stdio},
};

use serde_json::Value;
use volley_testkit::{Volley, VolleyProcess, tool, volley, workspace};

const VOLLEY: Volley = volley!();

/// A bookstore upstream (grpc-go, with reflection).
fn upstream() -> VolleyProcess {
    VolleyProcess::start(&tool("bookstore"), &["upstream", "127.0.0.1:0"])
}

/// grpc-gateway in front of `up`.
fn grpc_gateway(up: &VolleyProcess) -> VolleyProcess {
    VolleyProcess::start(
        &tool("bookstore"),
        &["gateway", "127.0.0.1:0", &up.addr().to_string()],
    )
}

/// `volley gateway` in front of `up`, its descriptors from reflection or from the proto.
fn volley_gateway(up: &VolleyProcess, from_files: bool) -> VolleyProcess {
    let upstream = up.addr().to_string();
    let mut args = vec!["gateway", "--upstream", &upstream, "--addr", "127.0.0.1:0"];
    let proto = workspace().join("scripts/peers/grpc-gateway/proto/bookstore/v1/bookstore.proto");
    let include = workspace().join("proto");
    let (proto, include) = (proto.display().to_string(), include.display().to_string());
    if from_files {
        args.extend(["--proto", &proto, "-i", &include]);
    }
    args.extend(["--threads", "1"]);
    VolleyProcess::start(VOLLEY.bin(), &args)
}

/// What a REST call returned.
#[derive(Debug)]
struct Answer {
    status: u16,
    /// Header names lowercased.
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The `grpc-metadata-*` headers but grpc-gateway's echo of the upstream's content type.
    fn metadata(&self) -> Vec<(String, String)> {
        let mut m: Vec<_> = self
            .headers
            .iter()
            .filter(|(k, _)| k.starts_with("grpc-metadata-") && k != "grpc-metadata-content-type")
            .cloned()
            .collect();
        m.sort();
        m
    }

    /// The body as JSON values: one, or one per line for a stream.
    fn json(&self) -> Vec<Value> {
        self.body
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:?}")))
            .collect()
    }
}

/// One request.
struct Case {
    method: &'static str,
    path: &'static str,
    body: Option<&'static str>,
    headers: &'static [&'static str],
    /// The error message is each gateway's own words (a JSON or number parser's); the code and
    /// HTTP status must still agree.
    own_words: bool,
}

const fn get(path: &'static str) -> Case {
    Case {
        method: "GET",
        path,
        body: None,
        headers: &[],
        own_words: false,
    }
}

const fn send(method: &'static str, path: &'static str, body: &'static str) -> Case {
    Case {
        method,
        path,
        body: Some(body),
        headers: &[],
        own_words: false,
    }
}

fn call(gw: &VolleyProcess, c: &Case) -> Answer {
    // A folder per call: the tests run side by side.
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("volley-gw-rest-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (head, body) = (dir.join("head"), dir.join("body"));
    let mut cmd = Command::new(tool("curl"));
    cmd.args(["-sS", "--max-time", "10", "-X", c.method])
        .arg("-D")
        .arg(&head)
        .arg("-o")
        .arg(&body)
        .args(["-w", "%{http_code}"]);
    for h in c.headers {
        cmd.args(["-H", h]);
    }
    if let Some(b) = c.body {
        cmd.args(["-H", "Content-Type: application/json", "--data-binary", b]);
    }
    cmd.arg(format!("http://{}{}", gw.addr(), c.path));
    let out = cmd.stdin(Stdio::null()).output().expect("run curl");
    assert!(
        out.status.success(),
        "curl {} {}: {out:?}",
        c.method,
        c.path
    );
    let status = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let headers = read(&head)
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let body = read(&body);
    let _ = std::fs::remove_dir_all(&dir);
    Answer {
        status,
        headers,
        body,
    }
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

/// protojson's zero values dropped: grpc-gateway writes every unpopulated field (its default
/// marshaler sets EmitUnpopulated), volley leaves them out (protojson's own default); with
/// them gone the two must be the same document.
fn populated(v: &Value) -> Option<Value> {
    match v {
        Value::Null => None,
        Value::Bool(false) => None,
        Value::String(s) if s.is_empty() || s.ends_with("_UNSPECIFIED") => None,
        Value::Number(n) if n.as_f64() == Some(0.0) => None,
        Value::Array(a) if a.is_empty() => None,
        Value::Array(a) => Some(Value::Array(
            a.iter()
                .map(|x| populated(x).unwrap_or(Value::Null))
                .collect(),
        )),
        Value::Object(o) => {
            let kept: serde_json::Map<_, _> = o
                .iter()
                .filter_map(|(k, v)| populated(v).map(|v| (k.clone(), v)))
                .collect();
            // An error body keeps its empty details (a shape both write).
            Some(Value::Object(kept))
        }
        other => Some(other.clone()),
    }
}

/// The Echo reply's metadata list, the gateway's own port taken out of x-forwarded-host.
fn same_host(v: Value, gw: &VolleyProcess) -> Value {
    let s = v.to_string().replace(&gw.addr().to_string(), "GATEWAY");
    serde_json::from_str(&s).unwrap()
}

const CASES: &[Case] = &[
    get("/v1/shelves"),
    get("/v1/shelves/1"),
    get("/v1/shelf/1"),
    get("/v1/shelves/9"),
    Case {
        own_words: true,
        ..get("/v1/shelves/x")
    },
    get("/v1/shelves/1/books"),
    get("/v1/shelves/1/books?filter.tags=classic&filter.tags=utopia"),
    get("/v1/shelves/1/books?page_size=1&filter.author=Octavia%20E.%20Butler"),
    get("/v1/shelves/1/books?filter.format=FORMAT_EBOOK"),
    get("/v1/shelves/1/books/1"),
    get("/v1/shelves/1/books/1/title"),
    get("/v1/shelves/1/books/7"),
    get("/v1/shelves/1/watch"),
    get("/v1/shelves/2/watch"),
    send("POST", "/v1/shelves", r#"{"theme":"Poetry"}"#),
    send("POST", "/v1/shelves", r#"{"theme":""}"#),
    send(
        "POST",
        "/v1/shelves/1/books",
        r#"{"book":{"title":"Dune","author":"Frank Herbert","tags":["sand"],"pages":412,"added":"2025-01-02T03:04:05Z","format":"FORMAT_EBOOK"}}"#,
    ),
    send(
        "POST",
        "/v1/shelves/1/books",
        r#"{"book":{"author":"nobody"}}"#,
    ),
    send(
        "PATCH",
        "/v1/shelves/1/books/2",
        r#"{"title":"The Lathe","pages":184}"#,
    ),
    send(
        "PATCH",
        "/v1/shelves/1/books/2?update_mask=pages",
        r#"{"title":"ignored","pages":185}"#,
    ),
    send(
        "PATCH",
        "/v1/shelves/1/books/2?update_mask=shelf",
        r#"{"title":"x"}"#,
    ),
    get("/v1/shelves/1/books/2"),
    send("DELETE", "/v1/shelves/3", ""),
    send("DELETE", "/v1/shelves/3", ""),
    // google.protobuf.Any in a body (and back), by its @type.
    send(
        "POST",
        "/v1/annotate",
        r#"{"note":{"@type":"type.googleapis.com/bookstore.v1.Shelf","id":"9","theme":"Notes"}}"#,
    ),
    send(
        "POST",
        "/v1/annotate",
        r#"{"note":{"@type":"type.googleapis.com/google.protobuf.Duration","value":"1.5s"}}"#,
    ),
    send("POST", "/v1/echo", r#"{"text":"bad","code":3}"#),
    send("POST", "/v1/echo", r#"{"text":"away","code":14}"#),
    send("POST", "/v1/echo", r#"{"text":"late","code":4}"#),
    send(
        "POST",
        "/v1/echo",
        r#"{"text":"hi","filter":{"tags":["a","b"],"author":"x"}}"#,
    ),
    Case {
        own_words: true,
        ..send("POST", "/v1/echo", r#"{"text":1}"#)
    },
    Case {
        own_words: true,
        ..send("POST", "/v1/echo", "{")
    },
    Case {
        headers: &[
            "Authorization: Bearer t0ken",
            "User-Agent: rest-client/1",
            "Accept-Language: de",
            "X-Not-Forwarded: x",
            "Grpc-Metadata-Tenant: blue",
        ],
        ..send("POST", "/v1/echo", r#"{"text":"who"}"#)
    },
];

#[test]
fn rest_calls_answer_as_grpc_gateway_answers_them() {
    let (up_a, up_b, up_c) = (upstream(), upstream(), upstream());
    let anchor = grpc_gateway(&up_a);
    let by_reflection = volley_gateway(&up_b, false);
    let by_files = volley_gateway(&up_c, true);
    let mut differences = Vec::new();
    for c in CASES {
        let want = call(&anchor, c);
        for (how, gw) in [("reflection", &by_reflection), ("--proto", &by_files)] {
            let got = call(gw, c);
            let what = format!("{} {} ({how})", c.method, c.path);
            if got.status != want.status {
                differences.push(format!(
                    "{what}: HTTP {} where grpc-gateway answers {}: {} / {}",
                    got.status, want.status, got.body, want.body
                ));
                continue;
            }
            if want.header("content-type") != got.header("content-type") {
                differences.push(format!(
                    "{what}: content-type {:?}, grpc-gateway {:?}",
                    got.header("content-type"),
                    want.header("content-type")
                ));
            }
            if got.metadata() != want.metadata() {
                differences.push(format!(
                    "{what}: metadata headers {:?}, grpc-gateway {:?}",
                    got.metadata(),
                    want.metadata()
                ));
            }
            let norm = |a: &Answer, gw: &VolleyProcess| -> Vec<Value> {
                a.json()
                    .iter()
                    .map(|v| same_host(populated(v).unwrap_or(Value::Null), gw))
                    .map(|mut v| {
                        if c.own_words {
                            // The code must agree; the words are each parser's.
                            if let Some(o) = v.as_object_mut() {
                                o.remove("message");
                                if let Some(e) = o.get_mut("error").and_then(Value::as_object_mut) {
                                    e.remove("message");
                                }
                            }
                        }
                        v
                    })
                    .collect()
            };
            let (g, w) = (norm(&got, gw), norm(&want, &anchor));
            if g != w {
                differences.push(format!(
                    "{what}:\n  volley       {g:?}\n  grpc-gateway {w:?}"
                ));
            }
        }
    }
    assert!(
        differences.is_empty(),
        "{} difference(s) from grpc-gateway:\n{}",
        differences.len(),
        differences.join("\n")
    );
}

/// The differences docs/gateway.md names, each exactly as named: should one go away (or
/// change), this fails and the docs are due for a change too.
#[test]
fn the_named_differences_are_exactly_those() {
    let (up_a, up_b) = (upstream(), upstream());
    let anchor = grpc_gateway(&up_a);
    let ours = volley_gateway(&up_b, false);

    // Unpopulated fields: grpc-gateway writes them, volley leaves them out.
    let book = get("/v1/shelves/1/books/3");
    let (w, g) = (call(&anchor, &book), call(&ours, &book));
    assert_eq!(w.json()[0]["added"], Value::Null);
    assert!(
        w.json()[0].as_object().unwrap().contains_key("added"),
        "{}",
        w.body
    );
    assert!(
        !g.json()[0].as_object().unwrap().contains_key("added"),
        "{}",
        g.body
    );

    // A field the message does not have: grpc-gateway drops it, volley refuses the body,
    // naming the field.
    let unknown = send("POST", "/v1/echo", r#"{"text":"t","nope":1}"#);
    let (w, g) = (call(&anchor, &unknown), call(&ours, &unknown));
    assert_eq!(w.status, 200, "{}", w.body);
    assert_eq!(g.status, 400, "{}", g.body);
    assert!(g.body.contains("nope"), "{}", g.body);

    // A path no rule has: both 404, grpc-gateway with a JSON body, volley with one line of text.
    let none = get("/v1/nothing");
    let (w, g) = (call(&anchor, &none), call(&ours, &none));
    assert_eq!((w.status, g.status), (404, 404));
    assert_eq!(w.json()[0]["code"], 5);
    assert_eq!(g.header("content-type"), Some("text/plain; charset=utf-8"));

    // The upstream's content type echoed as metadata: grpc-gateway only.
    let list = get("/v1/shelves");
    let (w, g) = (call(&anchor, &list), call(&ours, &list));
    assert_eq!(
        w.header("grpc-metadata-content-type"),
        Some("application/grpc")
    );
    assert_eq!(g.header("grpc-metadata-content-type"), None);
    assert_eq!(g.header("grpc-metadata-x-shelf-count"), Some("2"));
}
