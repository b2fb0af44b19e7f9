//! A service config's JSON as grpc-go reads it: field names matched whatever their case (as Go's
//! `encoding/json` does), unknown fields refused, and every value checked with a sentence naming
//! its field.

use std::{collections::HashMap, time::Duration};

use serde::Deserialize;
use volley_wire::Code;

use super::policy::{CallPolicy, Codes, HedgingPolicy, MethodConfig, RetryPolicy, Throttle};
use crate::Policy;

/// Why a service config was refused: one sentence naming the field.
#[derive(Debug, thiserror::Error)]
#[error("service config: {0}")]
pub struct ServiceConfigError(pub(super) String);

/// The config's JSON, its field names in their own case, into serde's shapes (unknown fields
/// refused).
pub(super) fn read(json: &str) -> Result<Raw, ServiceConfigError> {
    let mut value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| ServiceConfigError(e.to_string()))?;
    canonical_keys(&mut value);
    serde_json::from_value(value).map_err(|e| ServiceConfigError(e.to_string()))
}

/// Every field name the service config defines.
const FIELDS: [&str; 23] = [
    "methodConfig",
    "retryThrottling",
    "loadBalancingPolicy",
    "loadBalancingConfig",
    "healthCheckConfig",
    "name",
    "timeout",
    "retryPolicy",
    "hedgingPolicy",
    "waitForReady",
    "maxRequestMessageBytes",
    "maxResponseMessageBytes",
    "service",
    "method",
    "maxAttempts",
    "initialBackoff",
    "maxBackoff",
    "backoffMultiplier",
    "retryableStatusCodes",
    "hedgingDelay",
    "nonFatalStatusCodes",
    "maxTokens",
    "tokenRatio",
];

/// Renames every key that matches a field name but for case to the field's own spelling, as
/// Go's `encoding/json` matches them (the policies inside `loadBalancingConfig` are left alone).
fn canonical_keys(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                let canonical = FIELDS
                    .iter()
                    .find(|f| f.eq_ignore_ascii_case(&k) && **f != k);
                if let Some(f) = canonical
                    && !map.contains_key(*f)
                {
                    let value = map.remove(&k).expect("the key is in the map");
                    map.insert((*f).to_owned(), value);
                }
            }
            for (k, child) in map.iter_mut() {
                if k != "loadBalancingConfig" {
                    canonical_keys(child);
                }
            }
        }
        serde_json::Value::Array(list) => list.iter_mut().for_each(canonical_keys),
        _ => {}
    }
}

/// The first policy of `loadBalancingConfig` volley knows (gRPC takes the first it supports),
/// else `loadBalancingPolicy`.
pub(super) fn lb_policy(
    old: Option<String>,
    list: Option<Vec<HashMap<String, serde_json::Value>>>,
) -> Result<Option<Policy>, ServiceConfigError> {
    if let Some(list) = list {
        let names: Vec<&String> = list.iter().flat_map(|m| m.keys()).collect();
        return match names.iter().find_map(|n| n.parse::<Policy>().ok()) {
            Some(p) => Ok(Some(p)),
            None if names.is_empty() => Ok(None),
            None => Err(ServiceConfigError(format!(
                "loadBalancingConfig names no policy volley knows ({}); use pick_first or \
                 round_robin",
                names
                    .iter()
                    .map(|n| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        };
    }
    old.map(|name| {
        name.parse::<Policy>().map_err(|_| {
            ServiceConfigError(format!(
                "loadBalancingPolicy {name:?} is not one volley knows; use pick_first or \
                 round_robin"
            ))
        })
    })
    .transpose()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Raw {
    #[serde(default)]
    pub(super) method_config: Vec<RawMethod>,
    pub(super) retry_throttling: Option<RawThrottling>,
    pub(super) load_balancing_policy: Option<String>,
    pub(super) load_balancing_config: Option<Vec<HashMap<String, serde_json::Value>>>,
    #[serde(default, rename = "healthCheckConfig")]
    _health_check_config: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct RawMethod {
    #[serde(default)]
    pub(super) name: Vec<RawName>,
    timeout: Option<String>,
    retry_policy: Option<RawRetry>,
    hedging_policy: Option<RawHedging>,
    #[serde(default, rename = "waitForReady")]
    _wait_for_ready: Option<bool>,
    #[serde(default, rename = "maxRequestMessageBytes")]
    _max_request_message_bytes: Option<serde_json::Value>,
    #[serde(default, rename = "maxResponseMessageBytes")]
    _max_response_message_bytes: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawName {
    pub(super) service: Option<String>,
    pub(super) method: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawRetry {
    max_attempts: Option<u32>,
    initial_backoff: Option<String>,
    max_backoff: Option<String>,
    backoff_multiplier: Option<f64>,
    #[serde(default)]
    retryable_status_codes: Vec<RawCode>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawHedging {
    max_attempts: Option<u32>,
    hedging_delay: Option<String>,
    #[serde(default)]
    non_fatal_status_codes: Vec<RawCode>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct RawThrottling {
    max_tokens: f64,
    token_ratio: f64,
}

/// A status code as a name (`"UNAVAILABLE"`) or a number (`14`).
#[derive(Deserialize)]
#[serde(untagged)]
enum RawCode {
    Number(u32),
    Name(String),
}

/// gRPC caps every policy's attempts at five.
const MAX_ATTEMPTS_CAP: u32 = 5;

impl RawMethod {
    pub(super) fn check(&self, at: &str) -> Result<MethodConfig, ServiceConfigError> {
        let timeout = self
            .timeout
            .as_deref()
            .map(|t| duration(t, &format!("{at}.timeout")))
            .transpose()?;
        let policy = match (&self.retry_policy, &self.hedging_policy) {
            (Some(_), Some(_)) => {
                return Err(ServiceConfigError(format!(
                    "{at} has both a retryPolicy and a hedgingPolicy; a method takes one"
                )));
            }
            (Some(r), None) => Some(CallPolicy::Retry(r.check(&format!("{at}.retryPolicy"))?)),
            (None, Some(h)) => Some(CallPolicy::Hedge(h.check(&format!("{at}.hedgingPolicy"))?)),
            (None, None) => None,
        };
        Ok(MethodConfig { timeout, policy })
    }
}

impl RawThrottling {
    pub(super) fn check(&self) -> Result<Throttle, ServiceConfigError> {
        if !(self.max_tokens > 0.0 && self.max_tokens <= 1000.0) {
            return Err(ServiceConfigError(format!(
                "retryThrottling.maxTokens must be above 0 and at most 1000 (it is {})",
                self.max_tokens
            )));
        }
        if self.token_ratio <= 0.0 {
            return Err(ServiceConfigError(format!(
                "retryThrottling.tokenRatio must be above 0 (it is {})",
                self.token_ratio
            )));
        }
        Ok(Throttle::new(self.max_tokens, self.token_ratio))
    }
}

fn attempts(n: Option<u32>, at: &str) -> Result<u32, ServiceConfigError> {
    match n {
        None => Err(ServiceConfigError(format!("{at}.maxAttempts is missing"))),
        Some(n) if n < 2 => Err(ServiceConfigError(format!(
            "{at}.maxAttempts must be at least 2 (it is {n})"
        ))),
        Some(n) => Ok(n.min(MAX_ATTEMPTS_CAP)),
    }
}

impl RawRetry {
    fn check(&self, at: &str) -> Result<RetryPolicy, ServiceConfigError> {
        let max_attempts = attempts(self.max_attempts, at)?;
        let positive = |v: &Option<String>, field: &str| {
            let field = format!("{at}.{field}");
            let v = v
                .as_deref()
                .ok_or_else(|| ServiceConfigError(format!("{field} is missing")))?;
            let d = duration(v, &field)?;
            if d.is_zero() {
                return Err(ServiceConfigError(format!("{field} must be above 0")));
            }
            Ok(d)
        };
        let initial_backoff = positive(&self.initial_backoff, "initialBackoff")?;
        let max_backoff = positive(&self.max_backoff, "maxBackoff")?;
        let backoff_multiplier = match self.backoff_multiplier {
            Some(m) if m > 0.0 => m,
            Some(m) => {
                return Err(ServiceConfigError(format!(
                    "{at}.backoffMultiplier must be above 0 (it is {m})"
                )));
            }
            None => {
                return Err(ServiceConfigError(format!(
                    "{at}.backoffMultiplier is missing"
                )));
            }
        };
        if self.retryable_status_codes.is_empty() {
            return Err(ServiceConfigError(format!(
                "{at}.retryableStatusCodes must name at least one code"
            )));
        }
        let retryable = codes(
            &self.retryable_status_codes,
            &format!("{at}.retryableStatusCodes"),
        )?;
        Ok(RetryPolicy {
            max_attempts,
            initial_backoff,
            max_backoff,
            backoff_multiplier,
            retryable,
        })
    }
}

impl RawHedging {
    fn check(&self, at: &str) -> Result<HedgingPolicy, ServiceConfigError> {
        Ok(HedgingPolicy {
            max_attempts: attempts(self.max_attempts, at)?,
            delay: self
                .hedging_delay
                .as_deref()
                .map(|d| duration(d, &format!("{at}.hedgingDelay")))
                .transpose()?
                .unwrap_or_default(),
            non_fatal: codes(
                &self.non_fatal_status_codes,
                &format!("{at}.nonFatalStatusCodes"),
            )?,
        })
    }
}

fn codes(list: &[RawCode], at: &str) -> Result<Codes, ServiceConfigError> {
    let mut set = Codes::default();
    for c in list {
        let code = match c {
            RawCode::Number(n) if *n <= 16 => Code::from_i32(*n as i32),
            RawCode::Name(name) => (0..=16)
                .map(Code::from_i32)
                .find(|c| c.name().eq_ignore_ascii_case(name))
                .ok_or_else(|| {
                    ServiceConfigError(format!(
                        "{at}: {name:?} is not a status code (UNAVAILABLE, ABORTED, ...)"
                    ))
                })?,
            RawCode::Number(n) => {
                return Err(ServiceConfigError(format!(
                    "{at}: {n} is not a status code (0 to 16)"
                )));
            }
        };
        if code == Code::Ok {
            return Err(ServiceConfigError(format!("{at}: OK cannot be retried")));
        }
        set.insert(code);
    }
    Ok(set)
}

/// A duration as protobuf's JSON mapping writes it: decimal seconds with an `s`, e.g. `"0.1s"`,
/// `"2s"`, `"1.000340012s"` (and `".01s"`, which grpc-go's examples write).
fn duration(s: &str, at: &str) -> Result<Duration, ServiceConfigError> {
    let bad = || {
        ServiceConfigError(format!(
            "{at} {s:?} is not a duration; write seconds with an s, e.g. \"0.1s\""
        ))
    };
    let secs = s.strip_suffix('s').ok_or_else(bad)?;
    let (whole, frac) = secs.split_once('.').unwrap_or((secs, ""));
    if (whole.is_empty() && frac.is_empty())
        || frac.len() > 9
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| bad())?
    };
    let nanos: u32 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<9}").parse().map_err(|_| bad())?
    };
    Ok(Duration::new(whole, nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_protobuf_json_writes_them() {
        let d = |s| duration(s, "x");
        assert_eq!(d("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(d("0.1s").unwrap(), Duration::from_millis(100));
        assert_eq!(d("1.000000001s").unwrap(), Duration::new(1, 1));
        assert_eq!(d(".01s").unwrap(), Duration::from_millis(10));
        for bad in ["", "s", ".s", "1", "-1s", "1.0000000001s", "1ms", "1.5e3s"] {
            assert!(d(bad).is_err(), "{bad}");
        }
    }
}
