//! GripMock's YAML pre-pass: before a `.yaml` stub file is parsed, each line's first template
//! either runs at load time and is replaced by its result (`{{ uuid2int64 "..." }}`, `{{ now |
//! unix }}`), or, when it reads the call (`.Request`, `.Headers`, any `.Name`, `$`, `faker.`),
//! stays for request time, quoted when it stood bare so YAML accepts it.

use super::{Nothing, Template};

/// Whether a template's source reads the call's data, so it must wait for the call.
fn reads_call(action: &str) -> bool {
    let b = action.as_bytes();
    action.contains("faker.")
        || action.contains('$')
        || b.windows(2)
            .any(|w| w[0] == b'.' && (w[1].is_ascii_uppercase() || w[1] == b' ' || w[1] == b'}'))
}

/// Where the first `{{ ... }}` of `line` is: its start and end (past `}}`).
fn first_action(line: &str) -> Option<(usize, usize)> {
    let open = line.find("{{")?;
    let close = line[open..].find("}}")? + open + 2;
    Some((open, close))
}

/// Whether the text before a template leaves it a bare YAML value (after `key:`, `- `, or at
/// the start of the line), not inside quotes or other text.
fn bare(before: &str) -> bool {
    let t = before.trim_end();
    !in_quotes(t)
        && (t.is_empty()
            || t.ends_with(':')
            || t.ends_with('-')
            || t.ends_with('[')
            || t.ends_with(','))
}

/// Whether a quoted YAML string is still open at the end of `text` (`message: "Hello, ` is):
/// a template there is part of the string, which YAML reads as it is.
fn in_quotes(text: &str) -> bool {
    let mut open: Option<char> = None;
    let mut escaped = false;
    for c in text.chars() {
        match open {
            Some('"') if escaped => escaped = false,
            Some('"') if c == '\\' => escaped = true,
            Some(q) if c == q => open = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => open = Some(c),
            None => {}
        }
    }
    open.is_some()
}

fn single_quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The YAML text with load-time templates run, or the line (1-based) and what failed.
pub(crate) fn yaml(text: &str) -> Result<String, (usize, String)> {
    if !text.contains("{{") {
        return Ok(text.to_owned());
    }
    let mut out = String::with_capacity(text.len());
    for (n, line) in text.split_inclusive('\n').enumerate() {
        let Some((open, close)) =
            first_action(line).filter(|_| !line.trim_start().starts_with('#'))
        else {
            out.push_str(line);
            continue;
        };
        let (before, action, after) = (&line[..open], &line[open..close], &line[close..]);
        let is_bare = bare(before);
        if reads_call(action) {
            if is_bare {
                // The rest of the value, quoted: `key: {{ .Request.a }}-x` is `key: '...'`.
                let body = after.trim_end_matches(['\n', '\r']);
                let eol = &after[body.len()..];
                out.push_str(before);
                out.push_str(&single_quoted(&format!("{action}{body}")));
                out.push_str(eol);
            } else {
                out.push_str(line);
            }
            continue;
        }
        let result = Template::parse(action)
            .and_then(|t| t.render(&Nothing))
            .map_err(|e| (n + 1, e.to_string()))?;
        out.push_str(before);
        let keep = result.starts_with('{')
            || result.starts_with('[')
            || result.contains('.')
            || result.starts_with('-');
        if is_bare && !keep {
            out.push_str(&single_quoted(&result));
        } else {
            out.push_str(&result);
        }
        out.push_str(after);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_time_templates_run_and_call_time_ones_are_quoted() {
        let src = "uuids:\n  - {{ uuid2int64 \"e351220b-4847-42f5-8abb-c052b87ff2d4\" }}\n\
                   b64: {{ uuid2base64 \"e351220b-4847-42f5-8abb-c052b87ff2d4\" }}\n\
                   name: {{ .Request.name }}\n\
                   quoted: \"{{ .Request.name }}\"\n\
                   n: {{ add 1 2 }}\n";
        let out = yaml(src).unwrap();
        let v: serde_yaml::Value = serde_yaml::from_str(&out).unwrap();
        assert!(v["uuids"][0]["high"].is_i64(), "{out}");
        assert_eq!(v["b64"], "41EiC0hHQvWKu8BSuH/y1A==");
        assert_eq!(v["name"], "{{ .Request.name }}");
        assert_eq!(v["quoted"], "{{ .Request.name }}");
        assert_eq!(v["n"], "3");
    }

    #[test]
    fn a_template_inside_a_quoted_string_is_left_to_yaml() {
        // GripMock's greeter example: text before the template inside the quotes.
        let src = "message: \"Hello, {{.Request.name}}!\"\n\
                   other: \"Hello, {{index .Headers \\\"x-user\\\"}}!\"\n\
                   single: 'it''s {{ .Request.name }}'\n";
        let out = yaml(src).unwrap();
        let v: serde_yaml::Value = serde_yaml::from_str(&out).unwrap();
        assert_eq!(v["message"], "Hello, {{.Request.name}}!", "{out}");
        assert_eq!(v["other"], "Hello, {{index .Headers \"x-user\"}}!", "{out}");
        assert_eq!(v["single"], "it's {{ .Request.name }}", "{out}");
    }

    #[test]
    fn a_failing_template_names_its_line() {
        let (line, e) = yaml("a: 1\nb: {{ uuid2base64 \"nope\" }}\n").unwrap_err();
        assert_eq!(line, 2);
        assert!(e.contains("error calling uuid2base64"), "{e}");
    }
}
