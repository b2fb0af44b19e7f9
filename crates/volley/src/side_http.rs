//! A small HTTP/1.1 API beside the main work (GripMock's admin API, `volley bench
//! --prometheus-listen`): a bound listener served on a thread of its own, one current-thread
//! runtime, for the life of the process.

use std::{convert::Infallible, future::Future};

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response, body::Incoming, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;

/// Serves `listener` (already bound, set non-blocking) with `handle` on a thread named `name`.
pub fn serve<H, F>(name: &str, listener: std::net::TcpListener, handle: H) -> std::io::Result<()>
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + 'static,
    F: Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                while let Ok((conn, _)) = listener.accept().await {
                    let handle = handle.clone();
                    tokio::spawn(async move {
                        let service = service_fn(move |req| {
                            let reply = handle(req);
                            async move { Ok::<_, Infallible>(reply.await) }
                        });
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(conn), service)
                            .await;
                    });
                }
            });
        })?;
    Ok(())
}
