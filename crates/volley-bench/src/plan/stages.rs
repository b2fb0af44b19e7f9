//! Stages, k6's arrival-rate ramps: the rate goes linearly from where it was to `to` over each
//! stage's length (`--stage 30s:500`, or a scenario's `stages: [{to: 500, over: 30s},
//! {hold: 2m}]`), from 0 at the start. The pacer turns them into intended send times: call `k`
//! is due when the calls the schedule has asked for reach `k`.

use std::time::Duration;

use serde_json::Value;

use super::{PlanError, units::parse_duration};

/// One stage: over `over`, the rate moves linearly to `to` calls per second.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stage {
    /// Its length.
    pub over: Duration,
    /// The rate at its end.
    pub to: f64,
}

/// A run's stages, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Stages(pub Vec<Stage>);

fn fail<T>(message: String) -> Result<T, PlanError> {
    Err(PlanError::new(message))
}

fn length(text: &str, what: &str) -> Result<Duration, PlanError> {
    let d = parse_duration(text).map_err(|e| PlanError::new(format!("{what}: {e}")))?;
    if d.is_zero() {
        return fail(format!("{what}: a stage must last longer than 0s"));
    }
    Ok(d)
}

fn rate(v: &Value, what: &str) -> Result<f64, PlanError> {
    v.as_f64()
        .filter(|r| r.is_finite() && *r >= 0.0)
        .or_else(|| v.as_str().and_then(|s| s.trim().parse::<f64>().ok()))
        .filter(|r| r.is_finite() && *r >= 0.0)
        .ok_or_else(|| {
            PlanError::new(format!(
                "{what}: the rate {v} is not a number of calls per second"
            ))
        })
}

impl Stages {
    /// `--stage DURATION:RATE` flags (k6's `--stage 30s:500`).
    pub(crate) fn from_flags(flags: &[String]) -> Result<Stages, PlanError> {
        let mut out = Vec::new();
        for text in flags {
            let what = format!("--stage {text}");
            let Some((over, to)) = text.split_once(':') else {
                return fail(format!(
                    "{what}: expected DURATION:RATE (30s:500: to 500 calls/s over 30 s)"
                ));
            };
            out.push(Stage {
                over: length(over.trim(), &what)?,
                to: rate(&Value::String(to.trim().to_owned()), &what)?,
            });
        }
        Ok(Stages(out))
    }

    /// A scenario's `stages:` list: `{to: 500, over: 30s}`, `{hold: 2m}`, k6's
    /// `{duration: 30s, target: 500}`, or `"30s:500"`.
    pub(crate) fn from_config(v: &Value) -> Result<Stages, PlanError> {
        let Value::Array(list) = v else {
            return fail(format!(
                "stages: expected a list ([{{to: 500, over: 30s}}, {{hold: 2m}}]), not {v}"
            ));
        };
        let mut out: Vec<Stage> = Vec::new();
        for (i, s) in list.iter().enumerate() {
            let what = format!("stage {}", i + 1);
            let text = |v: &Value| match v {
                Value::String(s) => Ok(s.clone()),
                other => fail(format!(
                    "{what}: a length must be a duration such as \"30s\", not {other}"
                )),
            };
            let stage = match s {
                Value::String(t) => Stages::from_flags(std::slice::from_ref(t))?.0[0],
                Value::Object(m) => {
                    let get = |k: &str| m.get(k).filter(|v| !v.is_null());
                    if let Some(k) = m.keys().find(|k| {
                        !["to", "over", "hold", "duration", "target"].contains(&k.as_str())
                    }) {
                        return fail(format!(
                            "{what}: unknown key {k:?} ({{to: 500, over: 30s}} or {{hold: 2m}})"
                        ));
                    }
                    match (
                        get("hold"),
                        get("over").or(get("duration")),
                        get("to").or(get("target")),
                    ) {
                        (Some(h), None, None) => Stage {
                            over: length(&text(h)?, &what)?,
                            to: out.last().map_or(0.0, |s| s.to),
                        },
                        (None, Some(o), Some(t)) => Stage {
                            over: length(&text(o)?, &what)?,
                            to: rate(t, &what)?,
                        },
                        _ => {
                            return fail(format!(
                                "{what}: expected {{to: RATE, over: DURATION}} or {{hold: DURATION}}, not {s}"
                            ));
                        }
                    }
                }
                other => {
                    return fail(format!(
                        "{what}: expected {{to: RATE, over: DURATION}} or {{hold: DURATION}}, not {other}"
                    ));
                }
            };
            out.push(stage);
        }
        if out.is_empty() {
            return fail("stages: the list is empty".into());
        }
        Ok(Stages(out))
    }

    /// The stages' total length: the run's.
    pub fn length(&self) -> Duration {
        self.0.iter().map(|s| s.over).sum()
    }

    /// The rate at `t` since the start.
    pub fn rate_at(&self, t: Duration) -> f64 {
        let mut from = 0.0;
        let mut start = Duration::ZERO;
        for s in &self.0 {
            if t < start + s.over {
                let x = (t - start).as_secs_f64() / s.over.as_secs_f64();
                return from + (s.to - from) * x;
            }
            from = s.to;
            start += s.over;
        }
        0.0
    }

    /// When the schedule has asked for `k` calls (call `k` is due), or `None` past the end.
    pub fn time_of(&self, k: u64) -> Option<Duration> {
        let mut left = k as f64;
        let mut from = 0.0f64;
        let mut start = 0.0f64;
        for s in &self.0 {
            let d = s.over.as_secs_f64();
            let calls = (from + s.to) / 2.0 * d;
            if left < calls {
                // Calls by time x into the stage: from*x + (to-from)/(2d)*x^2; solve for x.
                let a = (s.to - from) / (2.0 * d);
                let x = if a.abs() < 1e-12 {
                    left / from
                } else {
                    (-from + (from * from + 4.0 * a * left).sqrt()) / (2.0 * a)
                };
                return Some(Duration::from_secs_f64(start + x.clamp(0.0, d)));
            }
            left -= calls;
            from = s.to;
            start += d;
        }
        None
    }

    /// As flags (`30s:500`), for the report.
    pub fn describe(&self) -> Vec<String> {
        self.0
            .iter()
            .map(|s| format!("{:?}:{}", s.over, s.to))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(v: &[&str]) -> Result<Stages, PlanError> {
        Stages::from_flags(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn the_pacer_asks_for_the_area_under_the_rate() {
        // 0 -> 100/s over 2 s (100 calls), hold 100/s for 1 s (100 calls), down to 0 over 1 s (50).
        let s = flags(&["2s:100", "1s:100", "1s:0"]).unwrap();
        assert_eq!(s.length(), Duration::from_secs(4));
        assert_eq!(s.rate_at(Duration::from_secs(1)), 50.0);
        let at = |k| s.time_of(k).unwrap().as_secs_f64();
        // Ramp: k calls by t = sqrt(k / 25) (rate 50 t, area 25 t^2).
        assert!((at(25) - 1.0).abs() < 1e-9);
        assert!((at(100) - 2.0).abs() < 1e-9);
        assert!((at(150) - 2.5).abs() < 1e-9);
        assert!((at(200) - 3.0).abs() < 1e-9);
        assert!(at(249) < 4.0);
        assert_eq!(s.time_of(250), None);
        let times: Vec<f64> = (0..250).map(at).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn a_scenario_says_stages_as_k6_or_as_to_and_hold() {
        let v: Value = serde_json::from_str(
            r#"[{"to": 500, "over": "30s"}, {"hold": "2m"}, {"duration": "1m", "target": 2000}, "10s:0"]"#,
        )
        .unwrap();
        let s = Stages::from_config(&v).unwrap();
        assert_eq!(
            s.0.iter()
                .map(|s| (s.over.as_secs(), s.to))
                .collect::<Vec<_>>(),
            [(30, 500.0), (120, 500.0), (60, 2000.0), (10, 0.0)]
        );
    }

    #[test]
    fn malformed_stages_fail_in_one_line() {
        let cases: [(&[&str], &str); 4] = [
            (&["30s"], "--stage 30s: expected DURATION:RATE"),
            (&["ten:5"], "--stage ten:5: invalid duration"),
            (&["0s:5"], "--stage 0s:5: a stage must last longer than 0s"),
            (
                &["5s:lots"],
                "--stage 5s:lots: the rate \"lots\" is not a number",
            ),
        ];
        for (args, want) in cases {
            let e = flags(args).unwrap_err().to_string();
            assert!(e.starts_with(want), "{args:?}: {e}");
        }
        for (text, want) in [
            (r#"{"to": 5}"#, "stages: expected a list"),
            (
                r#"[{"to": 5}]"#,
                "stage 1: expected {to: RATE, over: DURATION}",
            ),
            (
                r#"[{"to": 5, "over": "1s", "hold": "1s"}]"#,
                "stage 1: expected",
            ),
            (r#"[{"to": -5, "over": "1s"}]"#, "stage 1: the rate -5"),
            (r#"[{"ramp": "1s"}]"#, "stage 1: unknown key \"ramp\""),
        ] {
            let v: Value = serde_json::from_str(text).unwrap();
            let e = Stages::from_config(&v).unwrap_err().to_string();
            assert!(e.starts_with(want), "{text}: {e}");
        }
    }
}
