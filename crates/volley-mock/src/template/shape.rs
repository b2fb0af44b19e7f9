//! A reply's JSON with its templated strings parsed once, at load, and rendered per call.

use serde_json::Value;

use super::{Root, Template, TemplateError};

/// Whether `v` holds a template anywhere.
pub(crate) fn is_templated(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains("{{"),
        Value::Array(a) => a.iter().any(is_templated),
        Value::Object(m) => m.values().any(is_templated),
        _ => false,
    }
}

/// JSON whose templated strings are parsed.
#[derive(Debug)]
pub(crate) enum Shape {
    /// No template below here.
    Fixed(Value),
    /// A templated string: its text and the parsed template.
    Template(String, Box<Template>),
    Array(Vec<Shape>),
    Object(Vec<(String, Shape)>),
}

impl Shape {
    /// Parses every templated string in `v`; an error names the string.
    pub(crate) fn parse(v: &Value) -> Result<Shape, String> {
        if !is_templated(v) {
            return Ok(Shape::Fixed(v.clone()));
        }
        Ok(match v {
            Value::String(s) => {
                let t = Template::parse(s).map_err(|e| format!("{s:?}: {e}"))?;
                Shape::Template(s.clone(), Box::new(t))
            }
            Value::Array(a) => Shape::Array(a.iter().map(Shape::parse).collect::<Result<_, _>>()?),
            Value::Object(m) => Shape::Object(
                m.iter()
                    .map(|(k, x)| Ok((k.clone(), Shape::parse(x)?)))
                    .collect::<Result<_, String>>()?,
            ),
            other => Shape::Fixed(other.clone()),
        })
    }

    /// The JSON with every template rendered from `root`.
    pub(crate) fn render(&self, root: &dyn Root) -> Result<Value, String> {
        Ok(match self {
            Shape::Fixed(v) => v.clone(),
            Shape::Template(src, t) => Value::String(
                t.render(root)
                    .map_err(|e: TemplateError| format!("{src:?}: {e}"))?,
            ),
            Shape::Array(a) => {
                Value::Array(a.iter().map(|x| x.render(root)).collect::<Result<_, _>>()?)
            }
            Shape::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, x)| Ok((k.clone(), x.render(root)?)))
                    .collect::<Result<_, String>>()?,
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::Ctx;

    #[test]
    fn only_templated_strings_are_parsed() {
        let v = serde_json::json!({"a": "plain", "b": ["{{.Request.x}}"]});
        assert!(is_templated(&v));
        let shape = Shape::parse(&v).unwrap();
        let ctx = Ctx {
            request: serde_json::json!({"x": "X"}),
            ..Ctx::default()
        };
        assert_eq!(
            shape.render(&ctx).unwrap(),
            serde_json::json!({"a": "plain", "b": ["X"]})
        );
    }
}
