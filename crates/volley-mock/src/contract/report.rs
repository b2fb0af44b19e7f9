//! The verdicts written for a person (one line per stub, then the counts), as JSON (`-O json`)
//! and as JUnit XML (`--junit FILE`, one test case per stub) for CI.

use serde_json::{Value, json};

use super::{Checked, Verdict};

fn label(v: &Verdict) -> (&'static str, String) {
    match v {
        Verdict::Equal => ("equal", "answer equal".into()),
        Verdict::Differs(lines) => ("differs", format!("answer differs: {}", lines.join("; "))),
        Verdict::StatusDiffers { want, got } => (
            "status-differs",
            format!("status differs: the stub says {want}, the service {got}"),
        ),
        Verdict::Missing(why) => ("missing", format!("method missing: {why}")),
        Verdict::Invalid(why) => ("invalid", format!("stub does not fit the service: {why}")),
        Verdict::Skipped(why) => ("skipped", format!("skipped: {why}")),
    }
}

/// `N stubs: a equal, b differ, ...`.
fn counts(all: &[Checked]) -> String {
    let n = |k: &str| all.iter().filter(|c| label(&c.verdict).0 == k).count();
    format!(
        "{} stubs: {} equal, {} differ, {} status differs, {} missing, {} invalid, {} skipped",
        all.len(),
        n("equal"),
        n("differs"),
        n("status-differs"),
        n("missing"),
        n("invalid"),
        n("skipped")
    )
}

/// One line per stub, then the counts.
pub fn text(all: &[Checked], against: &str) -> String {
    let mut out = String::new();
    for c in all {
        let (mark, what) = label(&c.verdict);
        let mark = match mark {
            "equal" => "ok",
            "skipped" => "skip",
            _ => "FAIL",
        };
        out.push_str(&format!("{mark:<4} {} {}: {what}\n", c.stub, c.method));
    }
    out.push_str(&format!("{} (against {against})\n", counts(all)));
    out
}

/// The verdicts as JSON: `{"against", "stubs": [{"stub", "method", "verdict", "detail"}],
/// "failed"}`.
pub fn json(all: &[Checked], against: &str) -> Value {
    let stubs: Vec<Value> = all
        .iter()
        .map(|c| {
            let (verdict, detail) = label(&c.verdict);
            let mut v = json!({"stub": c.stub, "method": c.method, "verdict": verdict,
                               "detail": detail});
            if let Verdict::Differs(lines) = &c.verdict {
                v["diff"] = json!(lines);
            }
            v
        })
        .collect();
    json!({"against": against, "stubs": stubs,
           "failed": all.iter().filter(|c| c.verdict.failed()).count()})
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// JUnit XML: a suite for the target, a case per stub (failed, skipped or passed).
pub fn junit(all: &[Checked], against: &str) -> String {
    let failures = all.iter().filter(|c| c.verdict.failed()).count();
    let skipped = all
        .iter()
        .filter(|c| matches!(c.verdict, Verdict::Skipped(_)))
        .count();
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite \
         name=\"volley mock verify --against {}\" tests=\"{}\" failures=\"{failures}\" \
         skipped=\"{skipped}\">\n",
        escape(against),
        all.len()
    );
    for c in all {
        let (kind, what) = label(&c.verdict);
        out.push_str(&format!(
            "    <testcase classname=\"{}\" name=\"{}\"",
            escape(&c.method),
            escape(&c.stub)
        ));
        match &c.verdict {
            Verdict::Equal => out.push_str("/>\n"),
            Verdict::Skipped(_) => {
                out.push_str(&format!(
                    ">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                    escape(&what)
                ));
            }
            _ => out.push_str(&format!(
                ">\n      <failure type=\"{kind}\" message=\"{}\"/>\n    </testcase>\n",
                escape(&what)
            )),
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}
