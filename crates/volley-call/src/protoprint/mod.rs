//! Proto source for one descriptor, as grpcurl's `describe` and `-v` print it: jhump's protoprint
//! with `Compact`, `SortElements`, `ForceFullyQualifiedNames` and only leading doc comments.
//! Written by hand because grpcurl's exact bytes demand it: two-space indents, no blank lines,
//! `.pkg.Type` references, `rpc M ( .a.In ) returns ( stream .a.Out );`, elements sorted (options,
//! fields and oneofs by number, messages, enums, extension ranges, extensions, reserved), short
//! field options `[a = 1, b = 2]` and a space swallowed before `;` and `,` as its writer does.

mod message;
mod options;
mod service;

use std::collections::HashMap;

use prost_reflect::FileDescriptor;

pub(crate) use message::type_string;
use options::Opt;
pub(crate) use options::quoted_string;

/// Writes proto source the way protoprint's writer does.
pub(crate) struct Printer {
    pub(crate) out: String,
    space: bool,
    newline: bool,
    comments: HashMap<Vec<i32>, String>,
}

impl Printer {
    /// A printer for elements of `file`, with its leading comments at hand.
    pub(crate) fn new(file: &FileDescriptor) -> Printer {
        let mut comments = HashMap::new();
        if let Some(info) = &file.file_descriptor_proto().source_code_info {
            for loc in &info.location {
                if let Some(c) = &loc.leading_comments {
                    comments
                        .entry(loc.path.clone())
                        .or_insert_with(|| c.clone());
                }
            }
        }
        Printer {
            out: String::new(),
            space: false,
            newline: true,
            comments,
        }
    }

    /// protoprint's writer: a trailing space is held back and dropped before `;` and `,`.
    pub(crate) fn w(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        self.newline = false;
        if self.space {
            if !s.starts_with(';') && !s.starts_with(',') {
                self.out.push(' ');
            }
            self.space = false;
        }
        let mut s = s;
        if let Some(rest) = s.strip_suffix(' ') {
            self.space = true;
            s = rest;
        }
        if s.ends_with('\n') {
            self.newline = true;
        }
        self.out.push_str(s);
    }

    pub(super) fn indent(&mut self, n: i32) {
        for _ in 0..n.max(0) {
            self.w("  ");
        }
    }

    /// The leading doc comment of the element at `path`, as `//` lines.
    pub(super) fn leading(&mut self, path: &[i32], indent: i32) {
        let Some(c) = self.comments.get(path).cloned() else {
            return;
        };
        let mut lines: Vec<&str> = c.split('\n').collect();
        if lines.first() == Some(&"") {
            lines.remove(0);
        }
        if lines.last() == Some(&"") {
            lines.pop();
        }
        if lines.is_empty() {
            return;
        }
        if !self.newline {
            self.w("\n");
        }
        for l in lines {
            let l = if !l.is_empty() && !l.starts_with(' ') {
                format!(" {l}")
            } else {
                l.to_owned()
            };
            self.indent(indent);
            self.w(&format!("//{}\n", l.trim_end_matches([' ', '\t'])));
        }
    }

    pub(super) fn end_element(&mut self, indent: i32) {
        if indent >= 0 && !self.newline {
            self.w("\n");
        }
    }
    pub(super) fn range(&mut self, start: i64, end: i64, max: i64) {
        if start == end {
            self.w(&format!("{start} "));
        } else if end == max {
            self.w(&format!("{start} to max "));
        } else {
            self.w(&format!("{start} to {end} "));
        }
    }

    pub(super) fn reserved_ranges(&mut self, ranges: &[(i64, i64)], max: i64, indent: i32) {
        self.indent(indent);
        self.w("reserved ");
        for (i, (s, e)) in ranges.iter().enumerate() {
            if i > 0 {
                self.w(", ");
            }
            self.range(*s, *e, max);
        }
        self.w(";\n");
    }

    pub(super) fn reserved_names(&mut self, names: &[&str], indent: i32) {
        if names.is_empty() {
            return;
        }
        self.indent(indent);
        self.w("reserved ");
        for (i, n) in names.iter().enumerate() {
            if i > 0 {
                self.w(", ");
            }
            self.w(&format!("{} ", quoted_string(n)));
        }
        self.w(";\n");
    }
    pub(super) fn options_long(&mut self, opts: &[Opt], indent: i32) {
        for o in opts {
            self.indent(indent);
            self.w("option ");
            self.w(&format!("{} = ", o.name));
            self.w(&o.value);
            self.w(";");
            self.end_element(indent);
        }
    }

    pub(super) fn options_short(&mut self, opts: &[Opt], indent: i32) {
        if opts.is_empty() {
            return;
        }
        let inline: Vec<String> = opts
            .iter()
            .map(|o| format!("{} = {}", o.name, o.value))
            .collect();
        let joined = inline.join(", ");
        if opts.len() <= 3 && joined.len() <= 50 {
            self.w(&format!("[{joined}] "));
            return;
        }
        self.w("[\n");
        for (i, o) in inline.iter().enumerate() {
            self.indent(indent + 1);
            self.w(o);
            if i + 1 < inline.len() {
                self.w(",\n");
            }
            self.end_element(indent + 1);
        }
        self.indent(indent);
        self.w("] ");
    }
}
