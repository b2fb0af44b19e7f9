//! Interceptors: code that sees every call, of every kind and protocol (gRPC, gRPC-Web, Connect,
//! REST), once when its head has arrived and before any of its body is read
//! ([`Interceptor::on_call`], which may refuse it), and once when it has ended
//! ([`Interceptor::on_end`], with its status, duration and message counts).
//!
//! Register them with [`ServerBuilder::intercept`](crate::ServerBuilder::intercept) (every
//! call, unknown methods included) or [`ServiceBuilder::intercept`](crate::ServiceBuilder::intercept)
//! (one service's calls, after the global ones). A server with none pays nothing for the feature:
//! its calls take the path they took before interceptors existed.
//!
//! ```
//! use volley_server::{Status, intercept::{Call, Interceptor}};
//!
//! /// Refuses calls without the right bearer token, before their body is read.
//! struct RequireToken(String);
//!
//! impl Interceptor for RequireToken {
//!     async fn on_call(&self, call: &mut Call) -> Result<(), Status> {
//!         let want = format!("Bearer {}", self.0);
//!         match call.metadata().get("authorization") {
//!             Some(v) if v.as_bytes() == want.as_bytes() => Ok(()),
//!             _ => Err(Status::unauthenticated("missing or wrong bearer token")),
//!         }
//!     }
//! }
//! ```

mod call;
mod end;

use std::{future::Future, panic::AssertUnwindSafe, pin::Pin, sync::Arc};

use futures_util::FutureExt;
use volley_wire::Status;

pub use call::{Call, CallInfo, CallProtocol, MethodInfo, MethodKind, Peer};
pub use end::CallEnd;
pub(crate) use end::{EndGuard, Record, Tally, calibrate_clock, now, share};

/// Code that runs around every call: see the module documentation.
pub trait Interceptor: Send + Sync + 'static {
    /// Runs when the call's head has arrived, before any of its body is read. `Err` ends the
    /// call with that status (the body is never read), and the interceptors after this one do
    /// not run. It may read and change the request metadata, add values for the handler
    /// ([`Call::extensions_mut`]), add response headers and trailers, and keep state for its
    /// [`on_end`](Interceptor::on_end) ([`Call::keep`]).
    fn on_call(&self, call: &mut Call) -> impl Future<Output = Result<(), Status>> + Send;

    /// For interceptors that decide without waiting (a header check, a counter): deciding here
    /// (`Some`) spares each call the boxed future that runs `on_call`, which the server then
    /// does not call. The default (`None`) runs `on_call`.
    fn on_call_now(&self, call: &mut Call) -> Option<Result<(), Status>> {
        let _ = call;
        None
    }

    /// Runs once when the call has ended (its trailers written, or the client gone), for every
    /// interceptor whose `on_call` ran, in reverse order. Runs on the connection's task: keep it
    /// short (record, don't wait).
    fn on_end(&self, end: &CallEnd<'_>) {
        let _ = end;
    }

    /// Runs for a request to a page served beside the calls rather than a call: an
    /// [endpoint](crate::ServerBuilder::endpoint) (an admin API, `/metrics`), `GET /`, or any
    /// request to a [side server](crate::side::SideServer) this interceptor guards; before its
    /// body is read. `Err` refuses it with the status's HTTP code (UNAUTHENTICATED is 401). The
    /// default lets every page through: an interceptor that controls access (a token check,
    /// [`BearerToken`](crate::auth::BearerToken)) overrides it, so that one policy covers every
    /// endpoint on the port.
    fn on_endpoint(&self, page: &Page<'_>) -> Result<(), Status> {
        let _ = page;
        Ok(())
    }
}

/// A request to a page beside the calls, as [`Interceptor::on_endpoint`] sees it.
#[derive(Clone, Copy, Debug)]
pub struct Page<'a> {
    /// Its method.
    pub method: &'a http::Method,
    /// Its path.
    pub path: &'a str,
    /// Its headers.
    pub headers: &'a http::HeaderMap,
}

/// An interceptor from a synchronous closure over the call's head, like tonic's `interceptor`:
/// `from_fn(|call| if ok(call) { Ok(()) } else { Err(Status::unauthenticated("...")) })`.
pub fn from_fn<F>(f: F) -> FromFn<F>
where
    F: Fn(&mut Call) -> Result<(), Status> + Send + Sync + 'static,
{
    FromFn(f)
}

/// The interceptor [`from_fn`] makes.
pub struct FromFn<F>(F);

impl<F> Interceptor for FromFn<F>
where
    F: Fn(&mut Call) -> Result<(), Status> + Send + Sync + 'static,
{
    fn on_call(&self, call: &mut Call) -> impl Future<Output = Result<(), Status>> + Send {
        std::future::ready((self.0)(call))
    }

    fn on_call_now(&self, call: &mut Call) -> Option<Result<(), Status>> {
        Some((self.0)(call))
    }
}

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// [`Interceptor`] made object-safe: its `on_call` future boxed.
trait Erased: Send + Sync {
    fn on_call_now(&self, call: &mut Call) -> Option<Result<(), Status>>;
    fn on_call<'a>(&'a self, call: &'a mut Call) -> BoxFuture<'a, Result<(), Status>>;
    fn on_end(&self, end: &CallEnd<'_>);
    fn on_endpoint(&self, page: &Page<'_>) -> Result<(), Status>;
}

impl<T: Interceptor> Erased for T {
    fn on_call_now(&self, call: &mut Call) -> Option<Result<(), Status>> {
        Interceptor::on_call_now(self, call)
    }

    fn on_call<'a>(&'a self, call: &'a mut Call) -> BoxFuture<'a, Result<(), Status>> {
        // Made on the first poll, so that an interceptor that panics while making its future
        // (a synchronous one) panics inside the poll that `Chain::admit_from` catches.
        Box::pin(async move { Interceptor::on_call(self, call).await })
    }

    fn on_end(&self, end: &CallEnd<'_>) {
        Interceptor::on_end(self, end)
    }

    fn on_endpoint(&self, page: &Page<'_>) -> Result<(), Status> {
        Interceptor::on_endpoint(self, page)
    }
}

/// Where a chain's admission of a call stands after the interceptors that decide at once.
pub(crate) enum Admission {
    /// Every interceptor let it through (`Ok`), or one refused it.
    Decided(Result<(), Status>),
    /// Interceptor `n` has to wait: [`Chain::admit_from`] goes on from it.
    Waiting(usize),
}

/// The status of a call whose interceptor panicked in `on_call`.
fn panicked() -> Status {
    tracing::error!("an interceptor panicked in on_call; the call fails as INTERNAL");
    Status::internal("interceptor panicked")
}

/// Runs `on_endpoint` of `interceptors` in order, until one refuses the page.
pub(crate) fn admit_page(interceptors: &[Registered], page: &Page<'_>) -> Result<(), Status> {
    for ic in interceptors {
        match std::panic::catch_unwind(AssertUnwindSafe(|| ic.0.on_endpoint(page))) {
            Ok(Ok(())) => {}
            Ok(Err(status)) => return Err(status),
            Err(_) => {
                tracing::error!("an interceptor panicked in on_endpoint; the page is refused");
                return Err(Status::internal("interceptor panicked"));
            }
        }
    }
    Ok(())
}

/// One registered interceptor.
#[derive(Clone)]
pub(crate) struct Registered(Arc<dyn Erased>);

impl Registered {
    pub(crate) fn new(i: impl Interceptor) -> Registered {
        Registered(Arc::new(i))
    }
}

/// The interceptors of a method, in the order they run.
pub(crate) struct Chain(Vec<Registered>);

impl Chain {
    /// The chain of `global` then `own`; `None` when both are empty.
    pub(crate) fn of(global: &[Registered], own: &[Registered]) -> Option<Arc<Chain>> {
        let all: Vec<_> = global.iter().chain(own).cloned().collect();
        (!all.is_empty()).then(|| Arc::new(Chain(all)))
    }

    /// How many interceptors run.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Runs the chain's `on_call`s that decide at once ([`Interceptor::on_call_now`]), in
    /// order, until one refuses or one has to wait: most chains are decided here, without a
    /// future. A panic fails only this call, as INTERNAL.
    pub(crate) fn admit_now(&self, call: &mut Call) -> Admission {
        self.admit_now_from(call, 0)
    }

    fn admit_now_from(&self, call: &mut Call, from: usize) -> Admission {
        for (i, ic) in self.0.iter().enumerate().skip(from) {
            call.enter(i);
            match std::panic::catch_unwind(AssertUnwindSafe(|| ic.0.on_call_now(call))) {
                Ok(Some(Ok(()))) => {}
                Ok(Some(Err(status))) => return Admission::Decided(Err(status)),
                Ok(None) => return Admission::Waiting(i),
                Err(_) => return Admission::Decided(Err(panicked())),
            }
        }
        Admission::Decided(Ok(()))
    }

    /// Goes on from interceptor `from`, whose `on_call_now` did not decide: runs its `on_call`,
    /// then the rest of the chain.
    pub(crate) async fn admit_from(&self, call: &mut Call, mut from: usize) -> Result<(), Status> {
        loop {
            call.enter(from);
            AssertUnwindSafe(self.0[from].0.on_call(call))
                .catch_unwind()
                .await
                .map_err(|_| panicked())??;
            match self.admit_now_from(call, from + 1) {
                Admission::Decided(verdict) => return verdict,
                Admission::Waiting(next) => from = next,
            }
        }
    }

    /// Runs every interceptor's `on_endpoint` for a page, in order, until one refuses it; a
    /// panic refuses it as INTERNAL.
    pub(crate) fn admit_page(&self, page: &Page<'_>) -> Result<(), Status> {
        admit_page(&self.0, page)
    }

    /// Runs `on_end` of the first `ran` interceptors, last first; a panic is logged and the
    /// others still run.
    fn end(&self, ran: usize, end: &mut CallEnd<'_>) {
        for i in (0..ran.min(self.0.len())).rev() {
            end.slot = i;
            let ic = &self.0[i].0;
            if std::panic::catch_unwind(AssertUnwindSafe(|| ic.on_end(end))).is_err() {
                tracing::error!("an interceptor panicked in on_end");
            }
        }
    }
}
