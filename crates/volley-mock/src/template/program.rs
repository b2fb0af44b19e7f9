//! A parsed template, and its rendering against a root.

use super::{error::TemplateError, eval, funcs, parse, value::Root};

/// A parsed template.
#[derive(Debug)]
pub(crate) struct Template {
    nodes: Vec<parse::Node>,
}

impl Template {
    /// Parses `src`; an unknown function is an error.
    pub(crate) fn parse(src: &str) -> Result<Template, TemplateError> {
        Ok(Template {
            nodes: parse::parse(src, &funcs::exists)?,
        })
    }

    /// The text the template makes from `root`.
    pub(crate) fn render(&self, root: &dyn Root) -> Result<String, TemplateError> {
        let mut exec = eval::Exec::new(root);
        exec.run(&self.nodes)?;
        Ok(exec.out)
    }
}
