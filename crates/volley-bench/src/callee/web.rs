//! `--protocol grpc-web|connect`: a unary method's calls over gRPC-Web or Connect, made by
//! volley-call's one-call layer (`volley_call::dynamic`, the code under `volley call
//! -protocol`) on the engine's HTTP/2 connections. The engine dials, paces, times and records
//! them as it does any [`CustomCall`]; the fast gRPC path is gRPC's alone.

use std::{cell::RefCell, sync::Arc};

use http::HeaderMap;
use volley_call::dynamic::{Call, CallStatus, Head, Protocol};
use volley_client::Connection;
use volley_proto::template::CallData;
use volley_wire::{Code, Status};

use super::{
    CustomCall, CustomFuture,
    metadata::Pair,
    payload::{Payload, call_data},
};
use crate::recorder::Recorder;

/// One unary method called over gRPC-Web or Connect.
pub(crate) struct WebCall {
    head: Head,
    payload: Payload,
    base: CallData,
    uuid: bool,
    /// `{{.WorkerID}}`: a custom call is not told its worker, so it renders empty.
    worker: Arc<str>,
}

impl WebCall {
    /// Calls `path` on `authority` over `protocol`, with `metadata` and the plan's `timeout`.
    pub(crate) fn new(
        protocol: Protocol,
        (scheme, authority, path): (&'static str, &str, &str),
        metadata: &[Pair],
        timeout: Option<std::time::Duration>,
        max_recv: usize,
        (payload, base, uuid): (Payload, CallData, bool),
    ) -> WebCall {
        let mut headers = HeaderMap::with_capacity(metadata.len());
        for (k, v) in metadata {
            headers.append(k.clone(), v.clone());
        }
        WebCall {
            head: Head {
                scheme,
                authority: authority.to_owned(),
                path: path.to_owned(),
                metadata: Ok(headers),
                timeout,
                user_agent: "volley-bench".to_owned(),
                protocol,
                max_recv,
                unary: true,
            },
            payload,
            base,
            uuid,
            worker: Arc::from(""),
        }
    }
}

fn failed(s: CallStatus) -> Status {
    Status::new(Code::from_i32(s.code), s.message)
}

impl CustomCall for WebCall {
    fn call<'a>(
        &'a self,
        conn: &'a Connection,
        i: u64,
        _rec: &'a RefCell<Recorder>,
    ) -> CustomFuture<'a> {
        Box::pin(async move {
            let data = self
                .payload
                .is_templated()
                .then(|| call_data(&self.base, i, &self.worker, self.uuid));
            let framed = self
                .payload
                .message(i, data.as_ref())
                .map_err(|e| Status::new(Code::InvalidArgument, e))?;
            // The payload is framed for gRPC (a flag byte and a length); the call frames it as
            // its protocol does.
            let message = framed.slice(5.min(framed.len())..);
            let mut call = Call::open(conn, &self.head).await.map_err(failed)?;
            call.send_encoded(message, true).await.map_err(failed)?;
            let _ = call.headers().await;
            let mut received = 0;
            while let Some(m) = call.message().await.map_err(failed)? {
                received += m.len() + 5;
            }
            let (status, _) = call.finish().await;
            if status.code != 0 {
                return Err(failed(status));
            }
            Ok(received)
        })
    }
}
