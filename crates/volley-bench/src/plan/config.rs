//! `--config` files (JSON, TOML or YAML, by extension) with ghz's keys, read into one JSON map.

use std::path::Path;

use serde_json::{Map, Value};

use super::PlanError;

/// Reads a config file into a map of ghz keys.
pub(super) fn load(path: &Path) -> Result<Map<String, Value>, PlanError> {
    load_as(path, "--config")
}

/// Reads a scenario file: a config file whose `target` is the host, and which may give a `mix:`
/// and `stages:`.
pub(super) fn load_scenario(path: &Path) -> Result<Map<String, Value>, PlanError> {
    let mut m = load_as(path, "--scenario")?;
    if let Some(t) = m.remove("target") {
        if m.contains_key("host") {
            return Err(PlanError::new(format!(
                "--scenario {}: give target or host, not both",
                path.display()
            )));
        }
        m.insert("host".into(), t);
    }
    Ok(m)
}

fn load_as(path: &Path, flag: &str) -> Result<Map<String, Value>, PlanError> {
    let shown = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|e| PlanError::new(format!("cannot read {flag} {shown}: {e}")))?;
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let value: Value = match ext.as_str() {
        "json" => serde_json::from_str(&text)
            .map_err(|e| PlanError::new(format!("{flag} {shown}: invalid JSON: {e}")))?,
        "toml" => {
            let v: toml::Value = toml::from_str(&text)
                .map_err(|e| PlanError::new(format!("{flag} {shown}: invalid TOML: {e}")))?;
            serde_json::to_value(v).map_err(|e| PlanError::new(format!("{flag} {shown}: {e}")))?
        }
        "yaml" | "yml" => serde_yaml::from_str(&text)
            .map_err(|e| PlanError::new(format!("{flag} {shown}: invalid YAML: {e}")))?,
        other => {
            return Err(PlanError::new(format!(
                "{flag} {shown}: unknown file type {other:?} (use .json, .toml, .yaml or .yml)"
            )));
        }
    };
    match value {
        Value::Object(m) => Ok(m),
        _ => Err(PlanError::new(format!(
            "{flag} {shown}: expected an object of ghz options"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_formats_one_map() {
        let dir = std::env::temp_dir().join(format!("volley-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cases = [
            (
                "c.json",
                r#"{"call": "api.Users.Get", "total": 10, "insecure": true, "data": {"id": 1}}"#,
            ),
            (
                "c.toml",
                "call = \"api.Users.Get\"\ntotal = 10\ninsecure = true\n[data]\nid = 1\n",
            ),
            (
                "c.yaml",
                "call: api.Users.Get\ntotal: 10\ninsecure: true\ndata:\n  id: 1\n",
            ),
        ];
        for (name, text) in cases {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            let m = load(&p).unwrap();
            assert_eq!(m["call"], "api.Users.Get", "{name}");
            assert_eq!(m["total"], 10, "{name}");
            assert_eq!(m["insecure"], true, "{name}");
            assert_eq!(m["data"]["id"], 1, "{name}");
        }
        let p = dir.join("c.ini");
        std::fs::write(&p, "x").unwrap();
        assert!(
            load(&p)
                .unwrap_err()
                .to_string()
                .contains("unknown file type")
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
