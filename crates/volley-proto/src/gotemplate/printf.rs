//! Go's `fmt.Sprintf` for templates' `printf` and `sprintf`.

use crate::gofmt::format_g;

use super::value::Val;

/// Go's `fmt.Sprintf` for the verbs templates use: `%v %s %d %f %e %g %q %t %x %X %%`, with
/// Go's flags (`-` left-justify, `0` zero-pad, `+` sign), width and precision (`%05d`, `%-8s`,
/// `%8.3f`).
pub(crate) fn printf(format: &str, args: &[Val<'_>]) -> String {
    let mut out = String::new();
    let mut it = format.chars().peekable();
    let mut next = args.iter();
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let (mut left, mut zero, mut plus) = (false, false, false);
        while let Some(&d) = it.peek() {
            match d {
                '-' => left = true,
                '0' => zero = true,
                '+' => plus = true,
                ' ' | '#' => {}
                _ => break,
            }
            it.next();
        }
        let mut spec = String::new();
        while let Some(&d) = it.peek() {
            if d.is_ascii_digit() || d == '.' {
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
        let (width, prec) = match spec.split_once('.') {
            Some((w, p)) => (w, Some(p.parse::<usize>().unwrap_or(0))),
            None => (spec.as_str(), None),
        };
        let width = width.parse::<usize>().unwrap_or(0);
        // Go answers a precision past 10^6 with `%!(BADPREC)`; Rust's formatter panics past
        // 65,535 (found by the stubs fuzz target), so that is where this one says it. A width
        // is bounded the same way (it is an allocation).
        if prec.is_some_and(|p| p > usize::from(u16::MAX)) {
            out.push_str("%!(BADPREC)");
            continue;
        }
        if width > usize::from(u16::MAX) {
            out.push_str("%!(BADWIDTH)");
            continue;
        }
        let numeric = matches!(verb, 'd' | 'f' | 'F' | 'e' | 'g');
        let mut body = match verb {
            'd' => v.int().map_or_else(|| v.text(), |i| i.to_string()),
            'f' | 'F' => format!("{:.*}", prec.unwrap_or(6), v.num().unwrap_or(0.0)),
            'e' => go_exponent(&format!(
                "{:.*e}",
                prec.unwrap_or(6),
                v.num().unwrap_or(0.0)
            )),
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
            _ => {
                let t = v.text();
                match (verb, prec) {
                    ('s' | 'v', Some(p)) => t.chars().take(p).collect(),
                    _ => t,
                }
            }
        };
        if plus && numeric && !body.starts_with('-') {
            body.insert(0, '+');
        }
        let pad = width.saturating_sub(body.chars().count());
        if left {
            out.push_str(&body);
            out.extend(std::iter::repeat_n(' ', pad));
        } else if zero && numeric {
            let sign = usize::from(body.starts_with(['-', '+']));
            out.push_str(&body[..sign]);
            out.extend(std::iter::repeat_n('0', pad));
            out.push_str(&body[sign..]);
        } else {
            out.extend(std::iter::repeat_n(' ', pad));
            out.push_str(&body);
        }
    }
    out
}

/// Rust's `1.5e0` as Go writes it: `1.5e+00` (a sign, at least two digits).
fn go_exponent(rust: &str) -> String {
    match rust.split_once('e') {
        Some((mant, exp)) => {
            let (sign, digits) = match exp.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exp),
            };
            format!("{mant}e{sign}{digits:0>2}")
        }
        None => rust.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    #[test]
    fn verbs_flags_and_widths_as_go() {
        // go1.26.8: fmt.Sprintf with the same format and arguments.
        let s = |t: &str| Val::Str(Cow::Owned(t.to_owned()));
        for (format, args, go) in [
            (
                "%05d|%-4d|%4d|%+d",
                vec![Val::Int(41), Val::Int(7), Val::Int(-3), Val::Int(5)],
                "00041|7   |  -3|+5",
            ),
            (
                "%06.2f|%-8s|%8s|%.2s",
                vec![Val::Float(-1.5), s("ab"), s("cd"), s("xyz")],
                "-01.50|ab      |      cd|xy",
            ),
            (
                "%e|%.2e|%x|%X|%q",
                vec![
                    Val::Float(1.5),
                    Val::Float(123456.0),
                    Val::Int(255),
                    s("hi"),
                    s("a"),
                ],
                "1.500000e+00|1.23e+05|ff|6869|\"a\"",
            ),
            ("%d%%|%d", vec![Val::Int(9)], "9%|%!d(MISSING)"),
        ] {
            assert_eq!(printf(format, &args), go, "{format}");
        }
    }
}
