//! What a dialect is: the functions its templates may call; and the bound every dialect's
//! `randomString` keeps.

use super::value::Val;

/// The longest string `randomString` makes (1 MiB): enough for any payload field, and a bound on
/// what one template call can allocate.
pub const MAX_RANDOM_STRING: i64 = 1 << 20;

/// The functions a dialect's templates may call (Go's builtins among them).
pub trait Funcs: Send + Sync + std::fmt::Debug {
    /// Whether `name` is a function here (checked when a template is parsed).
    fn exists(&self, name: &str) -> bool;
    /// Calls `name`; the error is the function's own words.
    fn call<'a>(&self, name: &str, args: Vec<Val<'a>>) -> Result<Val<'a>, String>;
}
