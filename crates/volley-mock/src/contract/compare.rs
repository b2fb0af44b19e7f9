//! Two answers compared in proto3's JSON form (so a stub written with field names or enum
//! numbers compares equal to the service's canonical form), fields to ignore left out, each
//! difference one line naming its path.

use prost_reflect::DynamicMessage;
use serde_json::Value;

/// The differences between the stub's messages and the service's, as `path: expected X, got
/// Y` lines; none when equal.
pub(super) fn diff(
    want: &[DynamicMessage],
    got: &[DynamicMessage],
    ignore: &[String],
) -> Vec<String> {
    let json = |list: &[DynamicMessage]| -> Vec<Value> {
        list.iter()
            .map(|m| {
                let mut v = serde_json::to_value(m).unwrap_or(Value::Null);
                for path in ignore {
                    drop_path(&mut v, &path.split('.').collect::<Vec<_>>());
                }
                v
            })
            .collect()
    };
    let (want, got) = (json(want), json(got));
    let mut out = Vec::new();
    if want.len() != got.len() {
        out.push(format!(
            "messages: expected {}, got {}",
            want.len(),
            got.len()
        ));
    }
    for (i, (w, g)) in want.iter().zip(&got).enumerate() {
        let at = match want.len() {
            1 => String::new(),
            _ => format!("[{i}]"),
        };
        walk(&at, w, g, &mut out);
    }
    out
}

/// `name` in proto3 JSON's lowerCamelCase (`created_at` is `createdAt`).
fn camel(name: &str) -> String {
    let mut out = String::new();
    let mut up = false;
    for c in name.chars() {
        match (c, up) {
            ('_', _) => up = true,
            (c, true) => {
                out.extend(c.to_uppercase());
                up = false;
            }
            (c, false) => out.push(c),
        }
    }
    out
}

/// Removes the field at `path` (each step a field, in either spelling; lists are walked).
fn drop_path(v: &mut Value, path: &[&str]) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    match v {
        Value::Array(items) => items.iter_mut().for_each(|i| drop_path(i, path)),
        Value::Object(m) => {
            for key in [first.to_string(), camel(first)] {
                if rest.is_empty() {
                    m.remove(&key);
                } else if let Some(inner) = m.get_mut(&key) {
                    drop_path(inner, rest);
                }
            }
        }
        _ => {}
    }
}

fn walk(at: &str, want: &Value, got: &Value, out: &mut Vec<String>) {
    let join = |k: &str| match at.is_empty() {
        true => k.to_owned(),
        false => format!("{at}.{k}"),
    };
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            let mut keys: Vec<&String> = w.keys().chain(g.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                match (w.get(k), g.get(k)) {
                    (Some(a), Some(b)) => walk(&join(k), a, b, out),
                    (Some(a), None) => out.push(format!("{}: expected {a}, got nothing", join(k))),
                    (None, Some(b)) => out.push(format!("{}: expected nothing, got {b}", join(k))),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => {
            for (i, (a, b)) in w.iter().zip(g).enumerate() {
                walk(&format!("{at}[{i}]"), a, b, out);
            }
        }
        (w, g) if w != g => {
            let at = if at.is_empty() { "the message" } else { at };
            out.push(format!("{at}: expected {w}, got {g}"));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::testkit::{check, msg, pool};

    #[test]
    fn differences_are_named_by_path_and_ignored_fields_left_out() {
        let p = pool();
        let out = check(&p).output();
        let a = msg(out.clone(), json!({"status": "SERVING"}));
        let b = msg(out.clone(), json!({"status": "NOT_SERVING"}));
        let empty = msg(out, json!({}));
        assert!(diff(std::slice::from_ref(&a), std::slice::from_ref(&a), &[]).is_empty());
        assert_eq!(
            diff(std::slice::from_ref(&a), std::slice::from_ref(&b), &[]),
            ["status: expected \"SERVING\", got \"NOT_SERVING\""]
        );
        assert_eq!(
            diff(std::slice::from_ref(&a), std::slice::from_ref(&empty), &[]),
            ["status: expected \"SERVING\", got nothing"]
        );
        assert!(
            diff(
                std::slice::from_ref(&a),
                std::slice::from_ref(&b),
                &["status".into()]
            )
            .is_empty()
        );
        assert_eq!(
            diff(&[a.clone(), a], &[b], &[]),
            [
                "messages: expected 2, got 1",
                "[0].status: expected \"SERVING\", got \"NOT_SERVING\""
            ]
        );
        assert_eq!(camel("created_at"), "createdAt");
    }
}
