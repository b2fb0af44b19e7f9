//! Go `text/template` source into a tree: text, actions (`{{pipeline}}`, `{{$x := ...}}`), `if`
//! / `else if` / `else`, `range`, `with`, `break`, `continue`, comments and trim markers.
//! Function names are checked here, so a stub with an unknown function fails at load.

use super::TemplateError;

/// A parsed piece of a template.
#[derive(Debug)]
pub(crate) enum Node {
    Text(String),
    Action(Pipe),
    If(Vec<(Pipe, Vec<Node>)>, Vec<Node>),
    Range(Pipe, Vec<Node>, Vec<Node>),
    With(Pipe, Vec<Node>, Vec<Node>),
    Break,
    Continue,
}

/// `$a, $b := cmd | cmd ...`
#[derive(Debug)]
pub(crate) struct Pipe {
    pub decl: Vec<String>,
    /// `=` rather than `:=`.
    pub assign: bool,
    pub cmds: Vec<Vec<Arg>>,
}

/// An operand or a function name.
#[derive(Debug)]
pub(crate) enum Arg {
    /// `.a.b` (empty: the dot itself).
    Dot(Vec<String>),
    /// `$x.a.b` (`$` alone is the root).
    Var(String, Vec<String>),
    Func(String),
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Nil,
    /// `(pipeline).a.b`
    Sub(Box<Pipe>, Vec<String>),
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Field(Vec<String>),
    Var(String, Vec<String>),
    Ident(String),
    Str(String),
    Num(String),
    Char(i64),
    LParen,
    /// `)`, and whether a field chain follows with no space.
    RParen,
    Pipe,
    Declare,
    Assign,
    Comma,
}

fn err(msg: impl Into<String>) -> TemplateError {
    TemplateError(msg.into())
}

/// Text (`Ok`) or an action's tokens (`Err`), each token with whether it touched the one before.
type Item = Result<String, Vec<(Tok, bool)>>;

/// Splits `src` into text and actions' tokens, trim markers applied, comments dropped.
fn items(src: &str) -> Result<Vec<Item>, TemplateError> {
    let mut out = Vec::new();
    let mut rest = src;
    let mut trim_next = false;
    while let Some(open) = rest.find("{{") {
        let mut text = &rest[..open];
        if trim_next {
            text = text.trim_start();
        }
        let mut body = &rest[open + 2..];
        if body.starts_with("- ") || body.starts_with("-\t") || body.starts_with("-\n") {
            text = text.trim_end();
            body = &body[1..];
        }
        if !text.is_empty() {
            out.push(Ok(text.to_owned()));
        }
        let trimmed = body.trim_start();
        if let Some(c) = trimmed.strip_prefix("/*") {
            let end = c.find("*/").ok_or_else(|| err("unclosed comment"))?;
            let after = c[end + 2..].trim_start();
            let (after, trim) = match after.strip_prefix("-}}") {
                Some(a) => (a, true),
                None => (
                    after
                        .strip_prefix("}}")
                        .ok_or_else(|| err("unclosed comment"))?,
                    false,
                ),
            };
            trim_next = trim;
            rest = after;
            continue;
        }
        let (toks, used, trim) = lex(body, src)?;
        trim_next = trim;
        out.push(Err(toks));
        rest = &body[used..];
    }
    let text = if trim_next { rest.trim_start() } else { rest };
    if !text.is_empty() {
        out.push(Ok(text.to_owned()));
    }
    Ok(out)
}

fn fields_after(s: &str) -> (Vec<String>, usize) {
    let mut fields = Vec::new();
    let mut i = 0;
    let b = s.as_bytes();
    while i < b.len() && b[i] == b'.' {
        let start = i + 1;
        let mut j = start;
        while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
            j += 1;
        }
        if j == start {
            break;
        }
        fields.push(s[start..j].to_owned());
        i = j;
    }
    (fields, i)
}

/// The tokens of one action up to its `}}`; bytes used (past `}}`), and whether it ended `-}}`.
/// Each token carries whether it touched the one before (for `(x).field`).
#[allow(clippy::type_complexity)]
fn lex(body: &str, src: &str) -> Result<(Vec<(Tok, bool)>, usize, bool), TemplateError> {
    let b = body.as_bytes();
    let mut toks = Vec::new();
    let mut i = 0;
    let mut touching = false;
    loop {
        let start_ws = i;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let spaced = i > start_ws;
        if i >= b.len() {
            return Err(err(format!("unclosed action in {src:?}")));
        }
        let rest = &body[i..];
        if rest.starts_with("-}}") && spaced {
            return Ok((toks, i + 3, true));
        }
        if rest.starts_with("}}") {
            return Ok((toks, i + 2, false));
        }
        let adj = touching && !spaced;
        let c = b[i];
        let (tok, len) = match c {
            b'(' => (Tok::LParen, 1),
            b')' => (Tok::RParen, 1),
            b'|' => (Tok::Pipe, 1),
            b',' => (Tok::Comma, 1),
            b'=' => (Tok::Assign, 1),
            b':' if rest.starts_with(":=") => (Tok::Declare, 2),
            b'"' => {
                let mut s = String::new();
                // Read lazily: collecting the rest of the template for each quoted string
                // made a long template with many of them quadratic (a recorded 1 MiB reply
                // whose `{{` are escaped as `{{"{{"}}`).
                let mut chars = rest[1..].chars();
                let mut used = 1;
                loop {
                    let ch = chars
                        .next()
                        .ok_or_else(|| err("unterminated quoted string"))?;
                    used += ch.len_utf8();
                    match ch {
                        '"' => break,
                        '\\' => {
                            let e = chars
                                .next()
                                .ok_or_else(|| err("unterminated quoted string"))?;
                            used += e.len_utf8();
                            s.push(match e {
                                'n' => '\n',
                                't' => '\t',
                                'r' => '\r',
                                '0' => '\0',
                                other => other,
                            });
                        }
                        other => s.push(other),
                    }
                }
                (Tok::Str(s), used)
            }
            b'`' => {
                let end = rest[1..]
                    .find('`')
                    .ok_or_else(|| err("unterminated raw quoted string"))?;
                (Tok::Str(rest[1..1 + end].to_owned()), end + 2)
            }
            b'\'' => {
                let mut it = rest[1..].chars();
                let ch = it
                    .next()
                    .ok_or_else(|| err("unterminated character constant"))?;
                if it.next() != Some('\'') {
                    return Err(err("malformed character constant"));
                }
                (Tok::Char(ch as i64), ch.len_utf8() + 2)
            }
            b'.' => {
                let (fields, used) = fields_after(rest);
                if used == 0 {
                    (Tok::Field(Vec::new()), 1)
                } else {
                    (Tok::Field(fields), used)
                }
            }
            b'$' => {
                let mut j = 1;
                while j < rest.len()
                    && (rest.as_bytes()[j].is_ascii_alphanumeric() || rest.as_bytes()[j] == b'_')
                {
                    j += 1;
                }
                let (fields, used) = fields_after(&rest[j..]);
                (Tok::Var(rest[..j].to_owned(), fields), j + used)
            }
            b'0'..=b'9' | b'-' | b'+' => {
                let mut j = 1;
                let rb = rest.as_bytes();
                while j < rb.len()
                    && (rb[j].is_ascii_alphanumeric()
                        || rb[j] == b'.'
                        || ((rb[j] == b'-' || rb[j] == b'+') && matches!(rb[j - 1], b'e' | b'E')))
                {
                    j += 1;
                }
                (Tok::Num(rest[..j].to_owned()), j)
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let mut j = 0;
                let rb = rest.as_bytes();
                while j < rb.len()
                    && (rb[j].is_ascii_alphanumeric() || rb[j] == b'_' || rb[j] == b'.')
                {
                    j += 1;
                }
                (Tok::Ident(rest[..j].trim_end_matches('.').to_owned()), j)
            }
            _ => {
                return Err(err(format!(
                    "unexpected {:?} in action",
                    rest.chars().next().unwrap_or(' ')
                )));
            }
        };
        toks.push((tok.clone(), adj));
        touching = matches!(tok, Tok::RParen);
        i += len;
    }
}

/// Parses `src` into nodes; `known` says whether a function name exists.
pub(crate) fn parse(src: &str, known: &dyn Fn(&str) -> bool) -> Result<Vec<Node>, TemplateError> {
    let items = items(src)?;
    let mut p = Parser {
        items,
        at: 0,
        known,
    };
    let (nodes, end) = p.list()?;
    match end {
        None => Ok(nodes),
        Some(e) => Err(err(format!("unexpected {{{{{e}}}}}"))),
    }
}

struct Parser<'k> {
    items: Vec<Item>,
    at: usize,
    known: &'k dyn Fn(&str) -> bool,
}

/// How a list of nodes ended: `end`, `else`, or `else if ...` (its tokens).
enum End {
    End,
    Else(Vec<(Tok, bool)>),
}

impl std::fmt::Display for End {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            End::End => "end",
            End::Else(_) => "else",
        })
    }
}

impl Parser<'_> {
    fn list(&mut self) -> Result<(Vec<Node>, Option<End>), TemplateError> {
        let mut nodes = Vec::new();
        while self.at < self.items.len() {
            let item = std::mem::replace(&mut self.items[self.at], Ok(String::new()));
            self.at += 1;
            let toks = match item {
                Ok(text) => {
                    nodes.push(Node::Text(text));
                    continue;
                }
                Err(toks) => toks,
            };
            let keyword = match toks.first() {
                Some((Tok::Ident(k), _)) => k.clone(),
                _ => String::new(),
            };
            let rest = toks.get(1..).unwrap_or_default().to_vec();
            match keyword.as_str() {
                "end" => return Ok((nodes, Some(End::End))),
                "else" => return Ok((nodes, Some(End::Else(rest)))),
                "if" => nodes.push(self.if_chain(rest)?),
                "range" | "with" => {
                    let pipe = self.pipe(&rest)?;
                    let (body, end) = self.list()?;
                    let otherwise = match end {
                        Some(End::End) => Vec::new(),
                        Some(End::Else(t)) if t.is_empty() => self.closed()?,
                        _ => return Err(err(format!("unclosed {keyword}"))),
                    };
                    nodes.push(if keyword == "range" {
                        Node::Range(pipe, body, otherwise)
                    } else {
                        Node::With(pipe, body, otherwise)
                    });
                }
                "break" => nodes.push(Node::Break),
                "continue" => nodes.push(Node::Continue),
                "define" | "template" | "block" => {
                    return Err(err(format!("{{{{{keyword}}}}} is not supported")));
                }
                _ => nodes.push(Node::Action(self.pipe(&toks)?)),
            }
        }
        Ok((nodes, None))
    }

    /// The nodes up to `{{end}}`.
    fn closed(&mut self) -> Result<Vec<Node>, TemplateError> {
        match self.list()? {
            (nodes, Some(End::End)) => Ok(nodes),
            _ => Err(err("missing {{end}}")),
        }
    }

    fn if_chain(&mut self, cond: Vec<(Tok, bool)>) -> Result<Node, TemplateError> {
        let mut branches = Vec::new();
        let mut cond = cond;
        loop {
            let pipe = self.pipe(&cond)?;
            let (body, end) = self.list()?;
            branches.push((pipe, body));
            match end {
                Some(End::End) => return Ok(Node::If(branches, Vec::new())),
                Some(End::Else(t)) if t.is_empty() => {
                    return Ok(Node::If(branches, self.closed()?));
                }
                Some(End::Else(t)) if matches!(t.first(), Some((Tok::Ident(k), _)) if k == "if") => {
                    cond = t[1..].to_vec();
                }
                _ => return Err(err("unclosed if")),
            }
        }
    }

    fn pipe(&self, toks: &[(Tok, bool)]) -> Result<Pipe, TemplateError> {
        let mut decl = Vec::new();
        let mut assign = false;
        let mut body = toks;
        // `$x :=`, `$i, $v :=`, `$x =`
        let mut j = 0;
        let mut names = Vec::new();
        while let Some((Tok::Var(name, f), _)) = body.get(j) {
            if !f.is_empty() {
                break;
            }
            names.push(name.clone());
            j += 1;
            match body.get(j) {
                Some((Tok::Comma, _)) => j += 1,
                Some((Tok::Declare, _)) => {
                    decl = names;
                    body = &body[j + 1..];
                    break;
                }
                Some((Tok::Assign, _)) => {
                    decl = names;
                    assign = true;
                    body = &body[j + 1..];
                    break;
                }
                _ => break,
            }
        }
        let mut cmds = Vec::new();
        let mut i = 0;
        while i < body.len() {
            let mut args = Vec::new();
            while i < body.len() && body[i].0 != Tok::Pipe {
                let (arg, used) = self.arg(&body[i..])?;
                args.push(arg);
                i += used;
            }
            if args.is_empty() {
                return Err(err("missing command in pipeline"));
            }
            cmds.push(args);
            i += 1;
        }
        if cmds.is_empty() {
            return Err(err("missing value in action"));
        }
        Ok(Pipe { decl, assign, cmds })
    }

    fn arg(&self, toks: &[(Tok, bool)]) -> Result<(Arg, usize), TemplateError> {
        let arg = match &toks[0].0 {
            Tok::Field(f) => Arg::Dot(f.clone()),
            Tok::Var(n, f) => Arg::Var(n.clone(), f.clone()),
            Tok::Str(s) => Arg::Str(s.clone()),
            Tok::Char(c) => Arg::Int(*c),
            Tok::Num(n) => number(n)?,
            Tok::Ident(name) => match name.as_str() {
                "true" => Arg::Bool(true),
                "false" => Arg::Bool(false),
                "nil" => Arg::Nil,
                _ if (self.known)(name) => Arg::Func(name.clone()),
                _ => return Err(err(format!("function {name:?} not defined"))),
            },
            Tok::LParen => {
                let mut depth = 0;
                let mut end = None;
                for (k, (t, _)) in toks.iter().enumerate() {
                    match t {
                        Tok::LParen => depth += 1,
                        Tok::RParen => {
                            depth -= 1;
                            if depth == 0 {
                                end = Some(k);
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                let end = end.ok_or_else(|| err("unclosed left paren"))?;
                let inner = self.pipe(&toks[1..end])?;
                let mut used = end + 1;
                let mut fields = Vec::new();
                while let Some((Tok::Field(f), true)) = toks.get(used) {
                    fields.extend(f.iter().cloned());
                    used += 1;
                }
                return Ok((Arg::Sub(Box::new(inner), fields), used));
            }
            other => return Err(err(format!("unexpected {other:?} in operand"))),
        };
        Ok((arg, 1))
    }
}

fn number(n: &str) -> Result<Arg, TemplateError> {
    let bad = || err(format!("bad number syntax: {n:?}"));
    let clean = n.replace('_', "");
    if let Some(hex) = clean
        .strip_prefix("0x")
        .or_else(|| clean.strip_prefix("0X"))
    {
        return i64::from_str_radix(hex, 16)
            .map(Arg::Int)
            .map_err(|_| bad());
    }
    if let Ok(i) = clean.parse::<i64>() {
        return Ok(Arg::Int(i));
    }
    clean.parse::<f64>().map(Arg::Float).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(src: &str) -> Vec<Node> {
        parse(src, &|f| f != "nope").unwrap_or_else(|e| panic!("{src}: {}", e.0))
    }

    #[test]
    fn actions_controls_and_trims() {
        assert_eq!(ok("a {{- .X -}} b").len(), 3);
        assert!(
            matches!(&ok("{{if .A}}x{{else if .B}}y{{else}}z{{end}}")[0], Node::If(b, e) if b.len() == 2 && e.len() == 1)
        );
        assert!(
            matches!(&ok("{{range $i, $v := .L}}{{$v}}{{end}}")[0], Node::Range(p, ..) if p.decl == ["$i", "$v"])
        );
        assert!(
            matches!(&ok("{{(index .Requests 0).value}}")[0], Node::Action(p) if matches!(&p.cmds[0][0], Arg::Sub(_, f) if f == &["value"]))
        );
        assert!(
            matches!(&ok("{{ faker.Person.FirstName }}")[0], Node::Action(p) if matches!(&p.cmds[0][0], Arg::Func(f) if f == "faker.Person.FirstName"))
        );
        assert!(ok("{{/* a comment */}}").is_empty());
        assert!(
            matches!(&ok("{{ split .Request.id \"_\" | len }}")[0], Node::Action(p) if p.cmds.len() == 2)
        );
    }

    #[test]
    fn errors_name_what() {
        for (src, want) in [
            ("{{nope 1}}", "function \"nope\" not defined"),
            ("{{.X", "unclosed action"),
            ("{{if .X}}", "unclosed if"),
            ("{{end}}", "unexpected {{end}}"),
            ("{{\"x}}", "unterminated quoted string"),
        ] {
            let e = parse(src, &|f| f != "nope").unwrap_err().0;
            assert!(e.contains(want), "{src}: {e}");
        }
    }
}
