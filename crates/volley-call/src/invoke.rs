//! grpcurl's `InvokeRPC`: find the method (`pkg.Svc/M` or `pkg.Svc.M`), then unary,
//! server-streaming, client-streaming or bidi with grpcurl's rules for request data (an empty
//! message when none is given, more than one refused where one is expected) and its event order:
//! method, metadata sent, response headers (always, `(empty)` when there were none), each
//! message, trailers. `-max-time` ends the call with `context deadline exceeded`.

use bytes::Bytes;
use prost_reflect::{DynamicMessage, MethodDescriptor};
use tokio::time::Instant;
use volley_client::Connection;

use crate::{
    args::go_quote,
    describe::Symbol,
    errors, hint,
    input::{DataError, Requests},
    metadata::Metadata,
    rpc::{Call, Head},
    source::{Source, SourceError},
    status::CallStatus,
};

/// What happens during a call, in grpcurl's order.
pub(crate) trait Events {
    /// The method was found.
    fn resolved(&mut self, m: &MethodDescriptor);
    /// The metadata about to be sent.
    fn request_metadata(&mut self, md: &Metadata);
    /// The response headers.
    fn headers(&mut self, md: &Metadata);
    /// One response message.
    fn response(&mut self, msg: &DynamicMessage);
    /// The end.
    fn trailers(&mut self, status: &CallStatus, md: &Metadata);
}

/// Why there was no call to speak of.
#[derive(Debug)]
pub(crate) enum InvokeError {
    /// `Error invoking method "S/M": ...`, exit 1.
    Plain(String),
    /// The same, and a [`hint`](mod@crate::hint) line after it.
    Hinted(String, String),
    /// A status error before the call (reflection): printed as `Plain`, or with `-format-error`
    /// as the status.
    Status(CallStatus),
}

/// Finds the method `symbol` names.
pub(crate) async fn resolve(
    source: &mut Source,
    symbol: &str,
) -> Result<MethodDescriptor, InvokeError> {
    let split = symbol.rfind('/').or_else(|| symbol.rfind('.'));
    let (svc, mth) = match split {
        Some(p) if p > 0 && p + 1 < symbol.len() => (&symbol[..p], &symbol[p + 1..]),
        _ => {
            return Err(InvokeError::Plain(format!(
                "given method name {} is not in expected format: 'service/method' or 'service.method'",
                go_quote(symbol)
            )));
        }
    };
    let not_exposed = || format!("target server does not expose service {}", go_quote(svc));
    let found = match source.find(svc).await {
        Ok(s) => s,
        Err(SourceError::NotFound(_)) => {
            let services = source.list_services().await.unwrap_or_default();
            let hint = hint::suggest(svc, &services, "service", "the server");
            return Err(InvokeError::Hinted(not_exposed(), hint));
        }
        Err(SourceError::Unsupported) => {
            return Err(InvokeError::Hinted(
                format!(
                    "failed to query for service descriptor {}: {}",
                    go_quote(svc),
                    SourceError::Unsupported
                ),
                hint::NO_REFLECTION.to_owned(),
            ));
        }
        Err(SourceError::Rpc { code, message }) => {
            let code = errors::code_of(&code).unwrap_or(2);
            return Err(InvokeError::Status(CallStatus::new(
                code,
                format!(
                    "failed to query for service descriptor {}: {message}",
                    go_quote(svc)
                ),
            )));
        }
        Err(e) => {
            return Err(InvokeError::Plain(format!(
                "failed to query for service descriptor {}: {e}",
                go_quote(svc)
            )));
        }
    };
    let Symbol::Service(service) = found else {
        return Err(InvokeError::Plain(not_exposed()));
    };
    service.methods().find(|m| m.name() == mth).ok_or_else(|| {
        InvokeError::Hinted(
            format!(
                "service {} does not include a method named {}",
                go_quote(svc),
                go_quote(mth)
            ),
            hint::no_method(&service, mth),
        )
    })
}

/// Makes the call; the status is in the `trailers` event.
pub(crate) async fn invoke(
    conn: &Connection,
    head: &Head,
    method: &MethodDescriptor,
    requests: &mut Requests,
    events: &mut dyn Events,
    deadline: Option<Instant>,
) -> Result<(), InvokeError> {
    let fqn = method.full_name().to_owned();
    let data_err = |e: DataError| {
        let text = format!("error getting request data: {}", e.text);
        match e.hint {
            Some(h) => InvokeError::Hinted(text, h),
            None => InvokeError::Plain(text),
        }
    };
    let single = !method.is_client_streaming();
    let mut first = None;
    if single {
        first = requests.next().await.map_err(data_err)?;
        if first.is_some() {
            match requests.next().await {
                Ok(Some(_)) => {
                    let kind = if method.is_server_streaming() {
                        "server-streaming"
                    } else {
                        "unary"
                    };
                    return Err(InvokeError::Plain(format!(
                        "method {} is a {kind} RPC, but request data contained more than 1 message",
                        go_quote(&fqn)
                    )));
                }
                Err(e) => return Err(data_err(e)),
                Ok(None) => {}
            }
        }
    }
    let mut state = State::default();
    let call = async {
        let mut call = Call::open(conn, head).await?;
        if single {
            let req = first.unwrap_or_else(|| DynamicMessage::new(method.input()));
            let _ = call.send(&req, true).await;
        } else if !method.is_server_streaming() {
            // Client streaming: every message, then the one reply.
            loop {
                match requests.next().await {
                    Ok(Some(m)) => {
                        if call.send(&m, false).await.is_err() {
                            break;
                        }
                    }
                    Ok(None) => {
                        call.close_send();
                        break;
                    }
                    Err(e) => return Ok(Err(data_err(e))),
                }
            }
        }
        if single || !method.is_server_streaming() {
            let headers = call.headers().await;
            return Ok(Ok(read_rest(
                &mut call, headers, method, events, &mut state, false,
            )
            .await));
        }
        // Bidi: requests go out while replies come in.
        let mut sender = call.sender();
        let send = async {
            loop {
                match requests.next().await {
                    Ok(Some(m)) => {
                        if sender.send(&m, false).await.is_err() {
                            return Ok(());
                        }
                    }
                    Ok(None) => {
                        sender.close();
                        return Ok(());
                    }
                    Err(e) => return Err(e),
                }
            }
        };
        let recv = async {
            let headers = call.headers().await;
            read_rest(&mut call, headers, method, events, &mut state, true).await
        };
        tokio::pin!(send, recv);
        let mut sending = true;
        loop {
            tokio::select! {
                r = &mut send, if sending => {
                    sending = false;
                    if let Err(e) = r {
                        let text = format!(
                            "grpc call for {} failed: error getting request data: {}",
                            go_quote(&fqn),
                            e.text
                        );
                        return Ok(Err(match e.hint {
                            Some(h) => InvokeError::Hinted(text, h),
                            None => InvokeError::Plain(text),
                        }));
                    }
                }
                done = &mut recv => return Ok(Ok(done)),
            }
        }
    };
    let outcome = match deadline {
        Some(d) => tokio::time::timeout_at(d, call).await.ok(),
        None => Some(call.await),
    };
    let (status, trailers) = match outcome {
        Some(Ok(Ok(Some(end)))) => end,
        Some(Ok(Ok(None))) => return Ok(()),
        Some(Ok(Err(e))) => return Err(e),
        Some(Err(open_failed)) => (open_failed, Metadata::new()),
        None => (
            CallStatus::new(4, "context deadline exceeded"),
            Metadata::new(),
        ),
    };
    if !state.headers_shown {
        events.headers(&Metadata::new());
    }
    events.trailers(&status, &trailers);
    Ok(())
}

#[derive(Default)]
struct State {
    headers_shown: bool,
}

/// Headers, messages and the end. Streams print as they go; a unary or client-streaming call
/// prints its headers only once its reply is in, as grpcurl does. `None` when the trailers
/// event was already given.
async fn read_rest(
    call: &mut Call,
    headers: Metadata,
    method: &MethodDescriptor,
    events: &mut dyn Events,
    state: &mut State,
    _bidi: bool,
) -> Option<(CallStatus, Metadata)> {
    let streaming = method.is_server_streaming();
    if streaming {
        events.headers(&headers);
        state.headers_shown = true;
    }
    let mut replies: Vec<DynamicMessage> = Vec::new();
    let mut failed = None;
    loop {
        match call.message().await {
            Ok(Some(bytes)) => match decode(method, bytes) {
                Ok(m) if streaming => events.response(&m),
                Ok(m) => replies.push(m),
                Err(s) => {
                    failed = Some(s);
                    break;
                }
            },
            Ok(None) => break,
            Err(s) => {
                failed = Some(s);
                break;
            }
        }
    }
    let (mut status, trailers) = match failed {
        Some(s) => (s, Metadata::new()),
        None => call.finish().await,
    };
    if !streaming && status.code == 0 && replies.len() != 1 {
        status = CallStatus::new(
            13,
            if replies.is_empty() {
                "cardinality violation: expected <EOF> for non server-streaming RPCs, but received none"
            } else {
                "cardinality violation: expected <EOF> for non server-streaming RPCs, but received another message"
            },
        );
    }
    if !streaming {
        events.headers(&headers);
        state.headers_shown = true;
        if status.code == 0 {
            events.response(&replies[0]);
        }
    }
    Some((status, trailers))
}

fn decode(method: &MethodDescriptor, bytes: Bytes) -> Result<DynamicMessage, CallStatus> {
    DynamicMessage::decode(method.output(), bytes).map_err(|e| {
        CallStatus::new(
            13,
            format!("grpc: failed to unmarshal the received message: {e}"),
        )
    })
}
