//! k6's exit codes, and the error lines that go with them (a script exception, bad options,
//! `setup` or `teardown` past its time limit).

use std::time::Duration;

use crate::shared::Shared;

/// A threshold was crossed.
pub(crate) const THRESHOLDS_FAILED: i32 = 99;
pub(crate) const SETUP_TIMEOUT: i32 = 100;
pub(crate) const TEARDOWN_TIMEOUT: i32 = 101;
pub(crate) const INVALID_CONFIG: i32 = 104;
pub(crate) const SCRIPT_EXCEPTION: i32 = 107;
pub(crate) const SCRIPT_ABORTED: i32 = 108;
pub(crate) const GENERIC: i32 = 255;

/// An exception in the script: the line, and its code.
pub(crate) fn script_error(shared: &Shared, text: &str) -> i32 {
    shared.log.line(
        "error",
        text,
        &[("hint", "script exception"), ("source", "stacktrace")],
    );
    SCRIPT_EXCEPTION
}

/// k6's default `setupTimeout` and `teardownTimeout`.
pub(crate) const LIFECYCLE_TIMEOUT: Duration = Duration::from_secs(60);

/// `setup` or `teardown` ran past its time limit: k6's line and exit code.
pub(crate) fn timed_out(shared: &Shared, what: &str, limit: Duration) -> i32 {
    shared.log.line(
        "error",
        &format!(
            "{what}() execution timed out after {} seconds",
            limit.as_secs_f64()
        ),
        &[(
            "hint",
            &format!("You can increase the time limit via the {what}Timeout option"),
        )],
    );
    if what == "setup" {
        SETUP_TIMEOUT
    } else {
        TEARDOWN_TIMEOUT
    }
}

/// Options that cannot run: the line, and its code.
pub(crate) fn config_error(shared: &Shared, text: &str) -> i32 {
    shared.log.line("error", text, &[]);
    INVALID_CONFIG
}
