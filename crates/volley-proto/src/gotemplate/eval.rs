//! Running a parsed template: the dot, variables, pipelines, `if`/`range`/`with`, function
//! calls.

use std::borrow::Cow;

use serde_json::Value;

use super::{
    error::TemplateError,
    funcs::Funcs,
    parse::{Arg, Node, Pipe},
    value::{Root, Val},
};

/// One run of a template: the root data, the functions, variables, what is written.
pub(crate) struct Exec<'a> {
    root: &'a dyn Root,
    funcs: &'a dyn Funcs,
    /// Declared variables, innermost last (`$`, the root, is not here: it is `root`).
    vars: Vec<(String, Val<'a>)>,
    pub(crate) out: String,
    /// `range` iterations so far.
    steps: u64,
}

/// `range` iterations one render may take, and the most it may write: a stub's template is the
/// user's, but a reply must end (the stubs fuzz target's `{{range 11111111111}}` asked for
/// 11 billion at once).
const MAX_STEPS: u64 = 1_000_000;
const MAX_OUTPUT: usize = 16 << 20;

enum Flow {
    Normal,
    Break,
    Continue,
}

/// The root variable's name.
pub(crate) const ROOT: &str = "$";

fn too_many() -> TemplateError {
    TemplateError(format!(
        "range: more than {MAX_STEPS} iterations in one reply"
    ))
}

fn too_long() -> TemplateError {
    TemplateError(format!("the reply runs past {} MiB", MAX_OUTPUT >> 20))
}

impl<'a> Exec<'a> {
    /// A run writing into `out` (its capacity reused: a load generator renders per call).
    pub(crate) fn new(root: &'a dyn Root, funcs: &'a dyn Funcs, out: String) -> Exec<'a> {
        Exec {
            root,
            funcs,
            vars: Vec::new(),
            out,
            steps: 0,
        }
    }

    pub(crate) fn run(&mut self, nodes: &'a [Node]) -> Result<(), TemplateError> {
        self.walk(nodes, &Val::Nil)?;
        if self.out.len() > MAX_OUTPUT {
            return Err(too_long());
        }
        Ok(())
    }

    fn walk(&mut self, nodes: &'a [Node], dot: &Val<'a>) -> Result<Flow, TemplateError> {
        for n in nodes {
            match n {
                Node::Text(t) => self.out.push_str(t),
                Node::Action(p) => {
                    let v = self.pipe(p, dot)?;
                    if p.decl.is_empty() {
                        v.write(&mut self.out);
                    }
                }
                Node::If(branches, otherwise) => {
                    let mark = self.vars.len();
                    let mut taken = None;
                    for (cond, body) in branches {
                        if self.pipe(cond, dot)?.truthy() {
                            taken = Some(body);
                            break;
                        }
                    }
                    let flow = self.walk(taken.unwrap_or(otherwise), dot)?;
                    self.vars.truncate(mark);
                    if !matches!(flow, Flow::Normal) {
                        return Ok(flow);
                    }
                }
                Node::With(p, body, otherwise) => {
                    let mark = self.vars.len();
                    let v = self.pipe(p, dot)?;
                    let flow = if v.truthy() {
                        self.walk(body, &v)?
                    } else {
                        self.walk(otherwise, dot)?
                    };
                    self.vars.truncate(mark);
                    if !matches!(flow, Flow::Normal) {
                        return Ok(flow);
                    }
                }
                Node::Range(p, body, otherwise) => {
                    let mark = self.vars.len();
                    let v = self.pipe_value(p, dot)?.norm();
                    if let Val::Int(n) = &v
                        && u64::try_from(*n).is_ok_and(|n| n > MAX_STEPS - self.steps)
                    {
                        return Err(too_many());
                    }
                    let pairs: Vec<(Val<'a>, Val<'a>)> = match &v {
                        Val::Int(n) => (0..*n).map(|i| (Val::Int(i), Val::Int(i))).collect(),
                        Val::Json(Value::Object(m)) => {
                            let mut keys: Vec<_> = m.iter().collect();
                            keys.sort_by(|a, b| a.0.cmp(b.0));
                            keys.into_iter()
                                .map(|(k, x)| (Val::Str(Cow::Borrowed(k.as_str())), Val::Json(x)))
                                .collect()
                        }
                        Val::Map(m) => m
                            .iter()
                            .map(|(k, x)| (Val::Str(Cow::Owned(k.clone())), x.clone()))
                            .collect(),
                        other => match other.items() {
                            Some(items) => items
                                .into_iter()
                                .enumerate()
                                .map(|(i, x)| (Val::Int(i as i64), x))
                                .collect(),
                            None if !other.truthy() => Vec::new(),
                            None => {
                                return Err(TemplateError(format!(
                                    "range can't iterate over {}",
                                    other.text()
                                )));
                            }
                        },
                    };
                    if pairs.is_empty() {
                        self.walk(otherwise, dot)?;
                    }
                    for (k, x) in pairs {
                        self.steps += 1;
                        if self.steps > MAX_STEPS {
                            return Err(too_many());
                        }
                        if self.out.len() > MAX_OUTPUT {
                            return Err(too_long());
                        }
                        let inner = self.vars.len();
                        match p.decl.as_slice() {
                            [v1] => self.vars.push((v1.clone(), x.clone())),
                            [k1, v1] => {
                                self.vars.push((k1.clone(), k));
                                self.vars.push((v1.clone(), x.clone()));
                            }
                            _ => {}
                        }
                        let flow = self.walk(body, &x)?;
                        self.vars.truncate(inner);
                        if matches!(flow, Flow::Break) {
                            break;
                        }
                    }
                    self.vars.truncate(mark);
                }
                Node::Break => return Ok(Flow::Break),
                Node::Continue => return Ok(Flow::Continue),
            }
        }
        Ok(Flow::Normal)
    }

    /// The pipeline's value, its declarations made.
    fn pipe(&mut self, p: &'a Pipe, dot: &Val<'a>) -> Result<Val<'a>, TemplateError> {
        let v = self.pipe_value(p, dot)?;
        if p.assign {
            for name in &p.decl {
                match self.vars.iter_mut().rev().find(|(n, _)| n == name) {
                    Some(slot) => slot.1 = v.clone(),
                    None => return Err(TemplateError(format!("undefined variable: {name}"))),
                }
            }
        } else if let [name] = p.decl.as_slice() {
            self.vars.push((name.clone(), v.clone()));
        }
        Ok(v)
    }

    pub(crate) fn pipe_value(
        &mut self,
        p: &'a Pipe,
        dot: &Val<'a>,
    ) -> Result<Val<'a>, TemplateError> {
        let mut piped: Option<Val<'a>> = None;
        for cmd in &p.cmds {
            piped = Some(self.command(cmd, dot, piped)?);
        }
        Ok(piped.unwrap_or(Val::Nil))
    }

    fn command(
        &mut self,
        args: &'a [Arg],
        dot: &Val<'a>,
        piped: Option<Val<'a>>,
    ) -> Result<Val<'a>, TemplateError> {
        if let Arg::Func(name) = &args[0] {
            let mut vals = Vec::with_capacity(args.len());
            for a in &args[1..] {
                vals.push(self.operand(a, dot)?);
            }
            vals.extend(piped);
            return self
                .funcs
                .call(name, vals)
                .map_err(|e| TemplateError(format!("error calling {name}: {e}")));
        }
        if args.len() > 1 || piped.is_some() {
            return Err(TemplateError(format!(
                "can't give argument to non-function {:?}",
                args[0]
            )));
        }
        self.operand(&args[0], dot)
    }

    fn operand(&mut self, a: &'a Arg, dot: &Val<'a>) -> Result<Val<'a>, TemplateError> {
        let chain = |mut v: Val<'a>, fields: &[String]| -> Result<Val<'a>, TemplateError> {
            for f in fields {
                v = v.field(f).map_err(TemplateError)?;
            }
            Ok(v)
        };
        Ok(match a {
            Arg::Dot(fields) => match (dot, fields.split_first()) {
                (Val::Nil, Some((first, rest))) => {
                    let v = self.root.field(first).unwrap_or(Val::Missing);
                    chain(v, rest)?
                }
                _ => chain(dot.clone(), fields)?,
            },
            Arg::Var(name, fields) => {
                if name == ROOT {
                    let Some((first, rest)) = fields.split_first() else {
                        return Ok(Val::Nil);
                    };
                    chain(self.root.field(first).unwrap_or(Val::Missing), rest)?
                } else {
                    let v = self
                        .vars
                        .iter()
                        .rev()
                        .find(|(n, _)| n == name)
                        .map(|(_, v)| v.clone())
                        .ok_or_else(|| TemplateError(format!("undefined variable: {name}")))?;
                    chain(v, fields)?
                }
            }
            Arg::Func(name) => self
                .funcs
                .call(name, Vec::new())
                .map_err(|e| TemplateError(format!("error calling {name}: {e}")))?,
            Arg::Str(s) => Val::Str(Cow::Borrowed(s)),
            Arg::Int(i) => Val::Int(*i),
            Arg::Float(f) => Val::Float(*f),
            Arg::Bool(b) => Val::Bool(*b),
            Arg::Nil => Val::Nil,
            Arg::Sub(p, fields) => {
                let v = self.pipe_value(p, dot)?;
                chain(v, fields)?
            }
        })
    }
}
