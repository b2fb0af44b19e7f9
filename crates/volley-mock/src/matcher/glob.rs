//! Go's `path.Match`, as GripMock's `glob` matcher runs it: `*` is any run of characters but
//! `/`, `?` one character but `/`, `[abc]`, `[a-z]`, `[!abc]` or `[^abc]` a class, `\` escapes.

/// Whether `name` matches `pattern`.
pub(crate) fn matches(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    go(&p, &n)
}

fn go(p: &[char], n: &[char]) -> bool {
    let (mut pi, mut ni) = (0, 0);
    // Where to resume after the last `*`: (pattern index, name index).
    let mut star: Option<(usize, usize)> = None;
    loop {
        if pi < p.len() {
            match p[pi] {
                '*' => {
                    star = Some((pi + 1, ni));
                    pi += 1;
                    continue;
                }
                '?' if ni < n.len() && n[ni] != '/' => {
                    pi += 1;
                    ni += 1;
                    continue;
                }
                '[' if ni < n.len() => {
                    if let Some((hit, used)) = class(&p[pi..], n[ni])
                        && hit
                    {
                        pi += used;
                        ni += 1;
                        continue;
                    }
                }
                '\\' if pi + 1 < p.len() && ni < n.len() && p[pi + 1] == n[ni] => {
                    pi += 2;
                    ni += 1;
                    continue;
                }
                c if c != '?' && c != '[' && c != '\\' && ni < n.len() && c == n[ni] => {
                    pi += 1;
                    ni += 1;
                    continue;
                }
                _ => {}
            }
        } else if ni == n.len() {
            return true;
        }
        // Mismatch: let the last `*` take one more character, if it may.
        match star {
            Some((sp, sn)) if sn < n.len() && n[sn] != '/' => {
                star = Some((sp, sn + 1));
                pi = sp;
                ni = sn + 1;
            }
            _ => return false,
        }
    }
}

/// Whether `c` is in the class at the start of `p` (`[...]`), and the class's length.
fn class(p: &[char], c: char) -> Option<(bool, usize)> {
    let mut i = 1;
    let negate = matches!(p.get(1), Some('!' | '^'));
    if negate {
        i += 1;
    }
    let mut hit = false;
    let mut first = true;
    while i < p.len() && (p[i] != ']' || first) {
        first = false;
        let mut lo = p[i];
        if lo == '\\' {
            i += 1;
            lo = *p.get(i)?;
        }
        let mut hi = lo;
        if p.get(i + 1) == Some(&'-') && p.get(i + 2).is_some_and(|x| *x != ']') {
            hi = p[i + 2];
            i += 2;
        }
        if lo <= c && c <= hi {
            hit = true;
        }
        i += 1;
    }
    if i >= p.len() {
        return None;
    }
    Some((hit != negate && c != '/', i + 1))
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn go_path_match() {
        for (p, n, want) in [
            ("report_*.pdf", "report_2024.pdf", true),
            ("report_*.pdf", "report_2024.csv", false),
            ("*.json", "a/b.json", false),
            ("data[12].csv", "data1.csv", true),
            ("data[12].csv", "data3.csv", false),
            ("test_?", "test_a", true),
            ("test_?", "test_ab", false),
            ("[!a]bc", "xbc", true),
            ("[^a]bc", "abc", false),
            ("[a-c]*", "beta", true),
            ("a\\*b", "a*b", true),
            ("*", "", true),
        ] {
            assert_eq!(matches(p, n), want, "{p} {n}");
        }
    }
}
