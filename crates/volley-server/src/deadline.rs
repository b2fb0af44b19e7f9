//! A call's deadline: `Connect-Timeout-Ms` read into an instant, and `within`, which runs a
//! call's future until it (`grpc-timeout` itself is parsed by `volley_wire::timeout`).

use std::{future::Future, time::Duration};

use http::HeaderMap;
use tokio::time::Instant;
use volley_wire::Status;

/// `Connect-Timeout-Ms`: up to ten digits of milliseconds.
pub(crate) fn connect_timeout(headers: &HeaderMap) -> Result<Option<Instant>, Status> {
    let Some(v) = headers.get("connect-timeout-ms") else {
        return Ok(None);
    };
    let ms = std::str::from_utf8(v.as_bytes())
        .ok()
        .filter(|s| !s.is_empty() && s.len() <= 10 && s.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| Status::invalid_argument(format!("invalid connect-timeout-ms {v:?}")))?;
    Ok(Some(Instant::now() + Duration::from_millis(ms)))
}

/// Runs `call` until the deadline, if there is one.
///
/// A plain function, not an `async fn`: an `async fn` that takes a future by value stores it
/// twice (argument and awaited copy), and this sits inside every call's future, which hyper and
/// tokio move by value several times per call (measured: memmove was 20% of a unary call).
pub(crate) fn within<T, F>(
    deadline: Option<Instant>,
    call: F,
) -> impl Future<Output = Result<T, Status>>
where
    F: Future<Output = Result<T, Status>>,
{
    use futures_util::{FutureExt, future::Either};
    match deadline {
        None => Either::Left(call),
        Some(d) => Either::Right(tokio::time::timeout_at(d, call).map(|r| {
            r.unwrap_or_else(|_| Err(Status::deadline_exceeded("context deadline exceeded")))
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts() {
        let mut h = HeaderMap::new();
        assert!(connect_timeout(&h).unwrap().is_none());
        h.insert("connect-timeout-ms", "250".parse().unwrap());
        assert!(connect_timeout(&h).unwrap().is_some());
        h.insert("connect-timeout-ms", "12345678901".parse().unwrap());
        assert!(connect_timeout(&h).is_err());
    }
}
