//! `--junit FILE`: the verdicts as JUnit XML, one test case per threshold (and one for the run's
//! validity when it is not valid), which CI systems show as test results.

use std::io::{self, Write};

use super::Verdicts;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Writes `verdicts` as a JUnit XML test suite named `suite`.
pub fn write_junit(w: &mut impl Write, suite: &str, verdicts: &Verdicts) -> io::Result<()> {
    let failures = verdicts.thresholds.iter().filter(|v| !v.held).count();
    let errors = usize::from(verdicts.invalid.is_some());
    let tests = verdicts.thresholds.len() + errors;
    writeln!(w, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    writeln!(
        w,
        r#"<testsuites tests="{tests}" failures="{failures}" errors="{errors}">"#
    )?;
    writeln!(
        w,
        r#"  <testsuite name="{}" tests="{tests}" failures="{failures}" errors="{errors}">"#,
        escape(suite)
    )?;
    if let Some(why) = &verdicts.invalid {
        writeln!(
            w,
            r#"    <testcase classname="volley.run" name="the run is valid"><error message="{}"/></testcase>"#,
            escape(why)
        )?;
    }
    for v in &verdicts.thresholds {
        let name = escape(&v.threshold);
        if v.held {
            writeln!(
                w,
                r#"    <testcase classname="volley.thresholds" name="{name}"><system-out>{}</system-out></testcase>"#,
                escape(&v.shown)
            )?;
        } else {
            writeln!(
                w,
                r#"    <testcase classname="volley.thresholds" name="{name}"><failure message="{}"/></testcase>"#,
                escape(&v.shown)
            )?;
        }
    }
    writeln!(w, "  </testsuite>")?;
    writeln!(w, "</testsuites>")
}
