//! Scenarios in the stub language (WireMock's `scenarioName`, `requiredScenarioState`,
//! `newScenarioState`), called with grpcurl: WireMock's to-do list example gives WireMock's
//! sequence of answers; the admin API lists, sets and resets the state (and answers to its
//! token); `--strict` refuses the keys; a state no stub reaches is refused at start in one line.

#[path = "mock_support/mod.rs"]
mod support;

use serde_json::Value;
use support::{Mock, TempDir, grpcurl};
use volley_testkit::{Volley, volley, workspace};

const VOLLEY: Volley = volley!();

/// WireMock's "To do list" (its Stateful Behaviour page), in stub form: `Get {id: 1}` stands for
/// `GET /todo/items`, `Get {id: 2}` for the POST that adds "Cancel newspaper subscription".
const TODO: &str = r#"[
  {"service": "api.Users", "method": "Get", "input": {"equals": {"id": 1}},
   "scenarioName": "To do list", "requiredScenarioState": "Started",
   "output": {"data": {"id": "1", "name": "Buy milk"}}},
  {"service": "api.Users", "method": "Get", "input": {"equals": {"id": 2}},
   "scenarioName": "To do list", "requiredScenarioState": "Started",
   "newScenarioState": "Cancel newspaper item added",
   "output": {"data": {"id": "2", "name": "added"}}},
  {"service": "api.Users", "method": "Get", "input": {"equals": {"id": 1}},
   "scenarioName": "To do list", "requiredScenarioState": "Cancel newspaper item added",
   "output": {"data": {"id": "1", "name": "Buy milk, Cancel newspaper subscription"}}}
]"#;

fn mock(stubs: &str, extra: &[&str]) -> std::process::Command {
    let mut cmd = VOLLEY.command(&["mock", "--threads", "1", "--stub", stubs]);
    cmd.args(extra)
        .arg("proto/api/users.proto")
        .current_dir(workspace());
    cmd
}

fn name(mock: &Mock, id: u32) -> String {
    let (ok, out) = grpcurl(
        &mock.target(),
        &["-d", &format!("{{\"id\": {id}}}")],
        "api.Users/Get",
    );
    if !ok {
        return format!("error: {out}");
    }
    let v: Value = serde_json::from_str(&out).unwrap();
    v["name"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn wiremock_s_to_do_list_through_grpcurl() {
    let dir = TempDir::new("scenarios");
    let stubs = dir.write("stubs/todo.json", TODO).display().to_string();
    let m = Mock::start(mock(&stubs, &["--admin-token", "s3cret"]));
    assert_eq!(name(&m, 1), "Buy milk");
    assert_eq!(name(&m, 1), "Buy milk");
    assert_eq!(name(&m, 2), "added");
    assert_eq!(name(&m, 1), "Buy milk, Cancel newspaper subscription");
    // The POST's stub requires Started: no longer answers.
    assert!(name(&m, 2).contains("NotFound"));

    let auth = ["-H", "authorization: Bearer s3cret"];
    let (_, code) = m.admin(&[], "/api/scenarios");
    assert_eq!(code, 401, "the scenarios answer to the admin token");
    let (body, code) = m.admin(&auth, "/api/scenarios");
    assert_eq!(code, 200);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["scenarios"][0]["name"], "To do list");
    assert_eq!(v["scenarios"][0]["state"], "Cancel newspaper item added");

    let (_, code) = m.admin(
        &[&auth[..], &["-X", "POST"]].concat(),
        "/api/scenarios/reset",
    );
    assert_eq!(code, 204);
    assert_eq!(name(&m, 1), "Buy milk");

    let set = |state: &str| {
        m.admin(
            &[
                &auth[..],
                &["-X", "PUT", "-d", &format!("{{\"state\": \"{state}\"}}")],
            ]
            .concat(),
            "/api/scenarios/To%20do%20list/state",
        )
    };
    assert_eq!(set("Cancel newspaper item added").1, 200);
    assert_eq!(name(&m, 1), "Buy milk, Cancel newspaper subscription");
    let (body, code) = set("Done");
    assert_eq!(code, 400);
    assert!(
        body.contains("scenario \\\"To do list\\\" has no state \\\"Done\\\""),
        "{body}"
    );
}

#[test]
fn strict_refuses_the_keys_and_an_unreachable_state_is_named_at_start() {
    let dir = TempDir::new("scenarios-bad");
    let stubs = dir.write("stubs/todo.json", TODO).display().to_string();
    let out = mock(&stubs, &["--strict"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("todo.json:2: stub #1: \"")
            && err.contains("ScenarioState\" is volley's extension to GripMock's stubs"),
        "{err}"
    );
    let bad = dir
        .write(
            "bad/paid.json",
            r#"{"service": "api.Users", "method": "Get", "scenarioName": "orders",
                "requiredScenarioState": "Paid", "output": {"data": {}}}"#,
        )
        .display()
        .to_string();
    let out = mock(&bad, &[]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains(
            "paid.json stub #1: requiredScenarioState \"Paid\" of scenario \"orders\" is never \
             reached (no stub's newScenarioState sets it); its states are \"Started\""
        ),
        "{err}"
    );
}
