//! Go's `text/template`, one engine for every template volley runs: ghz's call data (`volley
//! bench -d`, `-m`, `volley serve --stubs`) and GripMock's stubs (`volley mock`). Actions,
//! pipelines, `if`/`range`/`with`, variables, Go's builtins and Go's printing of values; each
//! tool brings its function set, a [`Funcs`] (its dialect), and its data, a [`Root`].
//!
//! - `parse`: source to a tree, once (unknown functions refused there);
//! - `eval`: a render, a walk over the tree against a root;
//! - `value`: what pipelines carry ([`Val`]) and how Go prints it;
//! - `printf`: Go's `printf` verbs;
//! - `ghz` and `gripmock` (with `faker` and `clock`): the two function sets.
//!
//! Written here because no Rust crate runs Go templates (gtmpl covers an older subset and builds
//! a dynamic context per render); parsing happens once, a render borrows the caller's data.

mod clock;
mod error;
mod eval;
mod faker;
mod funcs;
mod ghz;
mod gripmock;
mod parse;
mod printf;
mod value;

pub use error::TemplateError;
pub use funcs::{Funcs, MAX_RANDOM_STRING};
pub use value::{Root, Val};

use parse::{Arg, Node, Pipe};

/// ghz's functions (`newUUID`, `randomString`, `randomInt`, the sprig ones ghz users write) and
/// Go's builtins.
pub static GHZ: &dyn Funcs = &ghz::Ghz { functions: true };
/// Go's builtins alone (ghz's `--disable-template-functions`).
pub static GHZ_WITHOUT_FUNCTIONS: &dyn Funcs = &ghz::Ghz { functions: false };
/// GripMock's functions (text, numbers, `extract`, time and delays, UUIDs and base64,
/// `faker.*`), volley's call-data ones, and Go's builtins.
pub static GRIPMOCK: &dyn Funcs = &gripmock::GripMock;

/// A parsed template and the functions it calls.
#[derive(Debug, Clone)]
pub struct Template {
    nodes: std::sync::Arc<[Node]>,
    funcs: &'static dyn Funcs,
}

/// A top-level piece of a template made only of text and plain actions (see
/// [`Template::plain_parts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part<'t> {
    /// Text, as written.
    Text(&'t str),
    /// The action at this index of the template's top level, for [`Template::eval_action`].
    Action(usize),
}

impl Template {
    /// Parses `src` for the dialect `funcs`; an unknown function or a syntax error is an error.
    pub fn parse(src: &str, funcs: &'static dyn Funcs) -> Result<Template, TemplateError> {
        Ok(Template {
            nodes: parse::parse(src, &|name| funcs.exists(name))?.into(),
            funcs,
        })
    }

    /// The text the template makes from `root`.
    pub fn render(&self, root: &dyn Root) -> Result<String, TemplateError> {
        let mut out = String::new();
        self.render_into(root, &mut out)?;
        Ok(out)
    }

    /// Renders into `out` (cleared first, its capacity kept).
    pub fn render_into(&self, root: &dyn Root, out: &mut String) -> Result<(), TemplateError> {
        out.clear();
        let mut exec = eval::Exec::new(root, self.funcs, std::mem::take(out));
        let result = exec.run(&self.nodes);
        *out = exec.out;
        result
    }

    /// True when the template has any action (otherwise it renders to its own text).
    pub fn has_actions(&self) -> bool {
        self.nodes.iter().any(|n| !matches!(n, Node::Text(_)))
    }

    /// The top level as text and actions, when that is all there is (no `if`, `range`, `with`,
    /// no variable declared): what a caller that splices each action's value needs.
    pub fn plain_parts(&self) -> Option<Vec<Part<'_>>> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| match n {
                Node::Text(t) => Some(Part::Text(t)),
                Node::Action(p) if p.decl.is_empty() => Some(Part::Action(i)),
                _ => None,
            })
            .collect()
    }

    /// The value of the top-level action at `index` (a [`Part::Action`]) against `root`.
    pub fn eval_action<'a>(
        &'a self,
        index: usize,
        root: &'a dyn Root,
    ) -> Result<Val<'a>, TemplateError> {
        let Some(Node::Action(pipe)) = self.nodes.get(index) else {
            return Err(TemplateError::new(format!("no action at {index}")));
        };
        eval::Exec::new(root, self.funcs, String::new()).pipe_value(pipe, &Val::Nil)
    }

    /// The field's name when the top-level action at `index` is a bare root field
    /// (`{{.Name}}`): a caller that evaluates it per call may read the field from its root
    /// directly, as the pipeline would.
    pub fn bare_field(&self, index: usize) -> Option<&str> {
        let Some(Node::Action(pipe)) = self.nodes.get(index) else {
            return None;
        };
        match (pipe.decl.is_empty(), pipe.cmds.as_slice()) {
            (true, [cmd]) => match cmd.as_slice() {
                [Arg::Dot(path)] if path.len() == 1 => Some(&path[0]),
                _ => None,
            },
            _ => None,
        }
    }

    /// Every field path read from the root: `.a.b` where the dot is the root (outside `range`
    /// and `with` bodies) and `$.a.b` anywhere.
    pub fn root_paths(&self) -> Vec<&[String]> {
        let mut paths = Vec::new();
        for n in self.nodes.iter() {
            node_paths(n, true, &mut paths);
        }
        paths
    }
}

fn node_paths<'t>(n: &'t Node, dot_is_root: bool, out: &mut Vec<&'t [String]>) {
    let nodes = |list: &'t [Node], dot_is_root: bool, out: &mut Vec<&'t [String]>| {
        for n in list {
            node_paths(n, dot_is_root, out);
        }
    };
    match n {
        Node::Text(_) | Node::Break | Node::Continue => {}
        Node::Action(p) => pipe_paths(p, dot_is_root, out),
        Node::If(branches, otherwise) => {
            for (cond, body) in branches {
                pipe_paths(cond, dot_is_root, out);
                nodes(body, dot_is_root, out);
            }
            nodes(otherwise, dot_is_root, out);
        }
        Node::Range(p, body, otherwise) | Node::With(p, body, otherwise) => {
            pipe_paths(p, dot_is_root, out);
            nodes(body, false, out);
            nodes(otherwise, dot_is_root, out);
        }
    }
}

fn pipe_paths<'t>(p: &'t Pipe, dot_is_root: bool, out: &mut Vec<&'t [String]>) {
    for cmd in &p.cmds {
        for a in cmd {
            match a {
                Arg::Dot(path) if dot_is_root && !path.is_empty() => out.push(path),
                Arg::Var(name, path) if name == eval::ROOT && !path.is_empty() => out.push(path),
                Arg::Sub(inner, _) => pipe_paths(inner, dot_is_root, out),
                _ => {}
            }
        }
    }
}
