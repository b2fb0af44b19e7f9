//! One line per scenario that says what its figures mean, computed from them: ours against the
//! seed's, and the ratio the seed's document drew its conclusion from, ours beside its.

use super::row::Row;

/// `ours / seed` as "8.4 x", or a range over several cases.
fn times(v: &[f64]) -> String {
    let (lo, hi) = v
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
    if v.len() == 1 || hi - lo < 0.05 * hi {
        format!("{} x", ratio(hi))
    } else {
        format!("{}-{} x", ratio(lo), ratio(hi))
    }
}

fn ratio(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// The first measured row whose case starts with `prefix` and contains none of `not`.
fn find<'a>(rows: &[&'a Row], prefix: &str, not: &[&str]) -> Option<&'a Row> {
    rows.iter()
        .find(|r| {
            r.not_run.is_none()
                && r.case.starts_with(prefix)
                && !not.iter().any(|n| r.case.contains(n))
        })
        .copied()
}

/// ours/theirs for two rows' figures, with the seed's own ratio beside it.
fn pair(label: &str, num: Option<&Row>, den: Option<&Row>, seed_saw: &str) -> Option<String> {
    let (n, d) = (num?, den?);
    let seed = match (n.seed, d.seed) {
        (Some(a), Some(b)) if b > 0.0 => ratio(a / b) + " x",
        _ => return None,
    };
    Some(format!(
        "{label} {} x where the seed saw {seed}{seed_saw}",
        ratio(n.ours / d.ours)
    ))
}

/// The scenario's takeaway, or `None` when it has no measured case beside a seed figure.
pub(super) fn line(scenario: &str, rows: &[&Row]) -> Option<String> {
    let against: Vec<f64> = rows
        .iter()
        .filter(|r| r.not_run.is_none())
        .filter_map(|r| Some(r.ours / r.seed.filter(|s| *s > 0.0)?))
        .collect();
    if against.is_empty() {
        return None;
    }
    let mut parts = vec![format!(
        "volley: {} the seed's figure{}",
        times(&against),
        if against.len() == 1 {
            String::new()
        } else {
            format!(" over {} cases", against.len())
        }
    )];
    let more = match scenario {
        "users" => pair(
            "List/Get",
            rows.iter()
                .rev()
                .find(|r| r.case.starts_with("api.Users.List"))
                .copied(),
            rows.iter()
                .rev()
                .find(|r| r.case.starts_with("api.Users.Get"))
                .copied(),
            " (a stream of users against one)",
        ),
        "http-vs-grpc" => pair(
            "gRPC/HTTP",
            find(rows, "gRPC", &[]),
            find(rows, "HTTP", &[]),
            " (the seed's server served gRPC at a third of its HTTP rate)",
        ),
        "gateway" => pair(
            "single connection/per request, no backend delay:",
            find(rows, "single, backend delay 0", &[]),
            find(rows, "per-request, backend delay 0", &[]),
            "; with a 200 ms backend every strategy is bound by c / 0.2 s = 1000/s",
        ),
        "orders" => {
            let unary = rows
                .iter()
                .filter(|r| {
                    r.not_run.is_none()
                        && r.case.starts_with("unary, ")
                        && !r.case.contains("TLS")
                        && !r.case.contains("server to server")
                        && r.seed.is_some()
                })
                .min_by_key(|r| std::cmp::Reverse(r.calls))
                .copied();
            pair(
                "stream/unary",
                find(rows, "stream, ", &["TLS"]),
                unary,
                " (the seed: \"streaming is at least twice slower\")",
            )
        }
        _ => None,
    };
    parts.extend(more);
    Some(parts.join("; ") + ".")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(case: &str, ours: f64, seed: Option<f64>) -> Row {
        Row {
            case: case.into(),
            ours,
            seed,
            calls: 1,
            ..Row::default()
        }
    }

    #[test]
    fn says_how_ours_compares_and_the_seeds_own_ratio() {
        let rows = [
            row(
                "unary, 1000 clients x 100000 orders",
                40_000.0,
                Some(3631.0),
            ),
            row(
                "stream, 10000 clients x 1000 orders each",
                400_000.0,
                Some(1587.0),
            ),
            row("unary, 1000 clients x 1000 orders, TLS", 30_000.0, None),
        ];
        let refs: Vec<&Row> = rows.iter().collect();
        assert_eq!(
            line("orders", &refs).unwrap(),
            "volley: 11-252 x the seed's figure over 2 cases; stream/unary 10 x where the seed \
             saw 0.44 x (the seed: \"streaming is at least twice slower\")."
        );
        let one = [row("helloworld", 41_000.0, Some(4942.17))];
        let refs: Vec<&Row> = one.iter().collect();
        assert_eq!(
            line("greeter", &refs).unwrap(),
            "volley: 8.3 x the seed's figure."
        );
        let none = [row("x", 1.0, None)];
        let refs: Vec<&Row> = none.iter().collect();
        assert_eq!(line("greeter", &refs), None);
    }
}
