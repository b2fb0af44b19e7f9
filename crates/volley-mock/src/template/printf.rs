//! Go's `fmt.Sprintf` for templates' `printf` and `sprintf`.

use volley_proto::gofmt::format_g;

use super::value::Val;

/// Go's `fmt.Sprintf` for the verbs templates use: `%v %s %d %f %.Nf %q %t %x %%`.
pub(crate) fn printf(format: &str, args: &[Val<'_>]) -> String {
    let mut out = String::new();
    let mut it = format.chars().peekable();
    let mut next = args.iter();
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = String::new();
        while let Some(&d) = it.peek() {
            if d.is_ascii_digit() || d == '.' || d == '-' || d == '+' {
                spec.push(d);
                it.next();
            } else {
                break;
            }
        }
        let Some(verb) = it.next() else { break };
        if verb == '%' {
            out.push('%');
            continue;
        }
        let Some(v) = next.next() else {
            out.push_str(&format!("%!{verb}(MISSING)"));
            continue;
        };
        let prec = spec
            .split_once('.')
            .and_then(|(_, p)| p.parse::<usize>().ok());
        // Go answers a precision past 10^6 with `%!(BADPREC)`; Rust's formatter panics past
        // 65,535 (found by the stubs fuzz target), so that is where this one says it.
        if prec.is_some_and(|p| p > usize::from(u16::MAX)) {
            out.push_str("%!(BADPREC)");
            continue;
        }
        out.push_str(&match verb {
            'd' => v.int().map_or_else(|| v.text(), |i| i.to_string()),
            'f' | 'F' => format!("{:.*}", prec.unwrap_or(6), v.num().unwrap_or(0.0)),
            'e' => format!("{:.*e}", prec.unwrap_or(6), v.num().unwrap_or(0.0)),
            'g' => format_g(v.num().unwrap_or(0.0)),
            'q' => format!("{:?}", v.text()),
            'x' => match v.clone().norm() {
                Val::Int(i) => format!("{i:x}"),
                other => other.text().bytes().map(|b| format!("{b:02x}")).collect(),
            },
            'X' => match v.clone().norm() {
                Val::Int(i) => format!("{i:X}"),
                other => other.text().bytes().map(|b| format!("{b:02X}")).collect(),
            },
            _ => v.text(),
        });
    }
    out
}
