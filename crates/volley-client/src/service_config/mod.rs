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

mod json;
mod policy;

use std::collections::HashMap;

pub use json::ServiceConfigError;
pub use policy::{CallPolicy, Codes, HedgingPolicy, MethodConfig, RetryPolicy, Throttle};

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

impl ServiceConfig {
    /// Parses and checks a service config. Field names match whatever their case, as Go's JSON
    /// decoder matches them (grpc-go's own examples write `MaxAttempts`). Unknown fields are
    /// refused (a misspelt `retryPolicy` would otherwise be a config that silently does
    /// nothing); the fields gRPC defines that volley does not act on (`waitForReady`,
    /// `maxRequestMessageBytes`, `maxResponseMessageBytes`, `healthCheckConfig`) are accepted
    /// and ignored.
    pub fn parse(json: &str) -> Result<ServiceConfig, ServiceConfigError> {
        let raw = json::read(json)?;
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
            config.throttle = Some(t.check()?);
        }
        config.lb_policy = json::lb_policy(raw.load_balancing_policy, raw.load_balancing_config)?;
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use volley_wire::Code;

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
}
