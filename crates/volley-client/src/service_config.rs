//! gRPC service config as JSON (gRFC A2 and A6): per-method timeouts, retry and hedging
//! policies, retry throttling and the balancing policy, read as grpc-go's
//! `grpc.WithDefaultServiceConfig` reads them, and checked as strictly.
//!
//! ```
//! use volley_client::ServiceConfig;
//!
//! let config = ServiceConfig::parse(r#"{
//!   "methodConfig": [{
//!     "name": [{"service": "helloworld.Greeter"}],
//!     "timeout": "2s",
//!     "retryPolicy": {
//!       "maxAttempts": 4,
//!       "initialBackoff": "0.1s",
//!       "maxBackoff": "1s",
//!       "backoffMultiplier": 2,
//!       "retryableStatusCodes": ["UNAVAILABLE"]
//!     }
//!   }],
//!   "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
//! }"#).unwrap();
//! assert!(config.method("/helloworld.Greeter/SayHello").is_some());
//! assert!(config.method("/other.Service/Call").is_none());
//! ```

use std::{
    collections::HashMap,
    sync::atomic::{AtomicU32, Ordering},
    time::Duration,
};

use serde::Deserialize;
use volley_wire::Code;

use crate::Policy;

/// A parsed service config; share it between channels with an `Arc` (its retry throttle is
/// shared with it, as grpc-go's is per channel).
#[derive(Debug)]
pub struct ServiceConfig {
    methods: Vec<MethodConfig>,
    /// `package.Service/Method` → index in `methods`.
    by_method: HashMap<Box<str>, usize>,
    /// `package.Service` → index in `methods`.
    by_service: HashMap<Box<str>, usize>,
    /// The entry with an empty name, for every method.
    default: Option<usize>,
    throttle: Option<Throttle>,
    lb_policy: Option<Policy>,
}

/// What the config says about the calls of one method.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodConfig {
    /// The deadline of calls that set none.
    pub timeout: Option<Duration>,
    /// How failed calls are tried again, if at all.
    pub policy: Option<CallPolicy>,
}

/// A method's retry or hedging policy (a method has at most one).
#[derive(Debug, Clone, PartialEq)]
pub enum CallPolicy {
    /// Try again after a failure with a retryable code, with exponential backoff.
    Retry(RetryPolicy),
    /// Send more attempts while the first is outstanding; the first good answer wins.
    Hedge(HedgingPolicy),
}

/// gRFC A6's `retryPolicy`.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (2 to 5; more is read as 5, as gRPC does).
    pub max_attempts: u32,
    /// The first backoff's upper bound.
    pub initial_backoff: Duration,
    /// No backoff's upper bound exceeds this.
    pub max_backoff: Duration,
    /// Each backoff's upper bound is the last one's times this.
    pub backoff_multiplier: f64,
    /// Codes a call is tried again after.
    pub retryable: Codes,
}

/// gRFC A6's `hedgingPolicy`.
#[derive(Debug, Clone, PartialEq)]
pub struct HedgingPolicy {
    /// Attempts in all, the first included (2 to 5; more is read as 5).
    pub max_attempts: u32,
    /// Time between attempts (0: all at once).
    pub delay: Duration,
    /// Codes that do not end the call: another attempt is sent at once instead.
    pub non_fatal: Codes,
}

/// A set of status codes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Codes(u32);

impl Codes {
    /// Whether `code` is in the set.
    pub fn contains(self, code: Code) -> bool {
        self.0 & (1 << code as u32) != 0
    }

    fn insert(&mut self, code: Code) {
        self.0 |= 1 << code as u32;
    }
}

/// gRFC A6's retry throttling: a token count that failures spend and successes refill; retries
/// and hedges are sent only while it is above half its maximum. Counts are in thousandths.
#[derive(Debug)]
pub struct Throttle {
    max: u32,
    ratio: u32,
    tokens: AtomicU32,
}

impl Throttle {
    fn new(max_tokens: f64, token_ratio: f64) -> Throttle {
        let max = (max_tokens * 1000.0).round() as u32;
        Throttle {
            max,
            ratio: (token_ratio * 1000.0).round() as u32,
            tokens: AtomicU32::new(max),
        }
    }

    /// Whether another attempt may be sent now.
    pub fn allows(&self) -> bool {
        self.tokens.load(Ordering::Relaxed) > self.max / 2
    }

    /// An attempt failed with a retryable (or, hedging, non-fatal) code: one token spent.
    pub fn failed(&self) {
        let _ = self
            .tokens
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                Some(t.saturating_sub(1000))
            });
    }

    /// A call succeeded: `tokenRatio` tokens back, up to the maximum.
    pub fn succeeded(&self) {
        let (max, ratio) = (self.max, self.ratio);
        let _ = self
            .tokens
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                (t < max).then(|| (t + ratio).min(max))
            });
    }

    /// The token count now (for tests and reports).
    pub fn tokens(&self) -> f64 {
        f64::from(self.tokens.load(Ordering::Relaxed)) / 1000.0
    }
}

/// Why a service config was refused: one sentence naming the field.
#[derive(Debug, thiserror::Error)]
#[error("service config: {0}")]
pub struct ServiceConfigError(String);

impl ServiceConfig {
    /// Parses and checks a service config. Field names match whatever their case, as Go's JSON
    /// decoder matches them (grpc-go's own examples write `MaxAttempts`). Unknown fields are
    /// refused (a misspelt `retryPolicy` would otherwise be a config that silently does nothing); the fields gRPC
    /// defines that volley does not act on (`waitForReady`, `maxRequestMessageBytes`,
    /// `maxResponseMessageBytes`, `healthCheckConfig`) are accepted and ignored.
    pub fn parse(json: &str) -> Result<ServiceConfig, ServiceConfigError> {
        let mut value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| ServiceConfigError(e.to_string()))?;
        canonical_keys(&mut value);
        let raw: Raw =
            serde_json::from_value(value).map_err(|e| ServiceConfigError(e.to_string()))?;
        let mut config = ServiceConfig {
            methods: Vec::new(),
            by_method: HashMap::new(),
            by_service: HashMap::new(),
            default: None,
            throttle: None,
            lb_policy: None,
        };
        for (i, m) in raw.method_config.into_iter().enumerate() {
            let at = format!("methodConfig[{i}]");
            let method = m.check(&at)?;
            let index = config.methods.len();
            config.methods.push(method);
            for (j, name) in m.name.iter().enumerate() {
                let at = format!("{at}.name[{j}]");
                let dup = match (name.service.as_deref(), name.method.as_deref()) {
                    (None | Some(""), Some(m)) if !m.is_empty() => {
                        return Err(ServiceConfigError(format!(
                            "{at} names method {m:?} without its service"
                        )));
                    }
                    (None | Some(""), _) => config.default.replace(index).is_some(),
                    (Some(s), None | Some("")) => {
                        config.by_service.insert(s.into(), index).is_some()
                    }
                    (Some(s), Some(m)) => config
                        .by_method
                        .insert(format!("{s}/{m}").into(), index)
                        .is_some(),
                };
                if dup {
                    return Err(ServiceConfigError(format!(
                        "{at} names a method another entry already names"
                    )));
                }
            }
        }
        if let Some(t) = raw.retry_throttling {
            if !(t.max_tokens > 0.0 && t.max_tokens <= 1000.0) {
                return Err(ServiceConfigError(format!(
                    "retryThrottling.maxTokens must be above 0 and at most 1000 (it is {})",
                    t.max_tokens
                )));
            }
            if t.token_ratio <= 0.0 {
                return Err(ServiceConfigError(format!(
                    "retryThrottling.tokenRatio must be above 0 (it is {})",
                    t.token_ratio
                )));
            }
            config.throttle = Some(Throttle::new(t.max_tokens, t.token_ratio));
        }
        config.lb_policy = lb_policy(raw.load_balancing_policy, raw.load_balancing_config)?;
        Ok(config)
    }

    /// What the config says about the method at `path` (`/package.Service/Method`): its own
    /// entry, else its service's, else the default one.
    pub fn method(&self, path: &str) -> Option<&MethodConfig> {
        let full = path.strip_prefix('/').unwrap_or(path);
        let index = self.by_method.get(full).or_else(|| {
            let service = full.rsplit_once('/').map_or(full, |(s, _)| s);
            self.by_service.get(service)
        });
        index.copied().or(self.default).map(|i| &self.methods[i])
    }

    /// The retry throttle, when `retryThrottling` is set.
    pub fn throttle(&self) -> Option<&Throttle> {
        self.throttle.as_ref()
    }

    /// The balancing policy `loadBalancingConfig` (or the older `loadBalancingPolicy`) names.
    pub fn lb_policy(&self) -> Option<Policy> {
        self.lb_policy
    }
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
                if let Some(f) = canonical {
                    if !map.contains_key(*f) {
                        let value = map.remove(&k).expect("the key is in the map");
                        map.insert((*f).to_owned(), value);
                    }
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
fn lb_policy(
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
struct Raw {
    #[serde(default)]
    method_config: Vec<RawMethod>,
    retry_throttling: Option<RawThrottling>,
    load_balancing_policy: Option<String>,
    load_balancing_config: Option<Vec<HashMap<String, serde_json::Value>>>,
    #[serde(default, rename = "healthCheckConfig")]
    _health_check_config: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawMethod {
    #[serde(default)]
    name: Vec<RawName>,
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
struct RawName {
    service: Option<String>,
    method: Option<String>,
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
struct RawThrottling {
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
    fn check(&self, at: &str) -> Result<MethodConfig, ServiceConfigError> {
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

    /// grpc-go's own retry example (examples/features/retry/client/main.go).
    const GO_EXAMPLE: &str = r#"{
        "methodConfig": [{
            "name": [{"service": "grpc.examples.echo.Echo"}],
            "waitForReady": true,
            "retryPolicy": {
                "MaxAttempts": 4,
                "InitialBackoff": ".01s",
                "MaxBackoff": ".01s",
                "BackoffMultiplier": 1.0,
                "RetryableStatusCodes": [ "UNAVAILABLE" ]
            }
        }]}"#;

    #[test]
    fn reads_a_retry_policy_and_matches_by_service_method_and_default() {
        let c = ServiceConfig::parse(
            r#"{"methodConfig": [
                {"name": [{"service": "a.S"}], "timeout": "1.5s",
                 "retryPolicy": {"maxAttempts": 9, "initialBackoff": "0.1s",
                   "maxBackoff": "1s", "backoffMultiplier": 2,
                   "retryableStatusCodes": ["UNAVAILABLE", 10]}},
                {"name": [{"service": "a.S", "method": "Hedged"}],
                 "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.02s",
                   "nonFatalStatusCodes": ["unavailable"]}},
                {"name": [{}], "timeout": "3s"}
            ], "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1},
               "loadBalancingConfig": [{"grpclb": {}}, {"round_robin": {}}]}"#,
        )
        .unwrap();
        let m = c.method("/a.S/Get").unwrap();
        assert_eq!(m.timeout, Some(Duration::from_millis(1500)));
        let Some(CallPolicy::Retry(r)) = &m.policy else {
            panic!("{m:?}")
        };
        assert_eq!(r.max_attempts, 5, "capped at five");
        assert!(r.retryable.contains(Code::Unavailable) && r.retryable.contains(Code::Aborted));
        assert!(!r.retryable.contains(Code::Internal));
        let Some(CallPolicy::Hedge(h)) = &c.method("/a.S/Hedged").unwrap().policy else {
            panic!()
        };
        assert_eq!(h.delay, Duration::from_millis(20));
        assert_eq!(
            c.method("/b.T/X").unwrap().timeout,
            Some(Duration::from_secs(3))
        );
        assert_eq!(c.lb_policy(), Some(Policy::RoundRobin));
        assert!(c.throttle().unwrap().allows());
    }

    #[test]
    fn reads_grpc_gos_own_example_whose_fields_are_in_gos_case() {
        let c = ServiceConfig::parse(GO_EXAMPLE).unwrap();
        let Some(CallPolicy::Retry(r)) = &c.method("/grpc.examples.echo.Echo/Echo").unwrap().policy
        else {
            panic!()
        };
        assert_eq!(r.initial_backoff, Duration::from_millis(10));
    }

    #[test]
    fn bad_configs_name_the_field() {
        for (json, says) in [
            ("{", "EOF"),
            (
                r#"{"methodConfig": [{"retryPolicy": {"maxAttempts": 1}}]}"#,
                "methodConfig[0].retryPolicy.maxAttempts must be at least 2 (it is 1)",
            ),
            (
                r#"{"methodConfig": [{"retryPolicy": {"maxAttempts": 2, "initialBackoff": "100ms", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#,
                "initialBackoff \"100ms\" is not a duration",
            ),
            (
                r#"{"methodConfig": [{"retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": []}}]}"#,
                "retryableStatusCodes must name at least one code",
            ),
            (
                r#"{"methodConfig": [{"hedgingPolicy": {"maxAttempts": 2, "nonFatalStatusCodes": ["UNAVAILBLE"]}}]}"#,
                "\"UNAVAILBLE\" is not a status code",
            ),
            (
                r#"{"methodConfig": [{"retryPolicy": {}, "hedgingPolicy": {}}]}"#,
                "both a retryPolicy and a hedgingPolicy",
            ),
            (
                r#"{"methodConfig": [{"name": [{"service": "a"}]}, {"name": [{"service": "a"}]}]}"#,
                "methodConfig[1].name[0] names a method another entry already names",
            ),
            (
                r#"{"methodConfig": [{"name": [{"method": "M"}]}]}"#,
                "without its service",
            ),
            (
                r#"{"retryThrottling": {"maxTokens": 0, "tokenRatio": 1}}"#,
                "maxTokens must be above 0",
            ),
            (
                r#"{"loadBalancingConfig": [{"weighted_target": {}}]}"#,
                "names no policy volley knows (weighted_target)",
            ),
            (r#"{"retryPolicy": {}}"#, "unknown field `retryPolicy`"),
            (
                r#"{"methodConfig": [{"retryPolicey": {}}]}"#,
                "unknown field `retryPolicey`",
            ),
        ] {
            let e = ServiceConfig::parse(json).unwrap_err().to_string();
            assert!(
                e.starts_with("service config: ") && e.contains(says),
                "{json}: {e}"
            );
        }
    }

    #[test]
    fn the_throttle_stops_retries_below_half_and_refills_by_the_ratio() {
        let t = Throttle::new(4.0, 0.5);
        t.failed(); // 3 > 2
        assert!(t.allows());
        t.failed(); // 2, not above half
        assert!(!t.allows());
        t.succeeded(); // 2.5
        assert!(t.allows());
        for _ in 0..10 {
            t.succeeded();
        }
        assert_eq!(t.tokens(), 4.0);
        for _ in 0..10 {
            t.failed();
        }
        assert_eq!(t.tokens(), 0.0);
    }

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
