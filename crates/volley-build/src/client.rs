//! The text of `<service>_client`: a typed client with one method per rpc over `volley_client::Grpc`.

use std::fmt::Write;

use prost_build::Service;

use crate::names::{full_name, snake, type_path};

/// Appends `<service>_client` to `buf`.
pub(crate) fn generate(service: &Service, buf: &mut String) {
    let full = full_name(service);
    let client = format!("{}Client", service.name);
    let module = format!("{}_client", snake(&service.proto_name));
    let w = buf;
    let _ = writeln!(
        w,
        "/// Client side of `{full}`: [`{module}::{client}`], typed calls over a \
         `volley_client::Channel`."
    );
    let _ = writeln!(
        w,
        "pub mod {module} {{\n\
         #![allow(unused_imports, clippy::all, clippy::pedantic)]\n\
         use volley_client::codegen::*;"
    );
    service.comments.append_with_indent(0, w);
    if !service.comments.leading.is_empty() {
        let _ = writeln!(w, "///");
    }
    let _ = writeln!(
        w,
        "/// Typed calls to `{full}`: each method takes the request message (or a `Request` \
         holding it, to add metadata, a timeout or compression) and returns the reply, or the \
         call's `Status`.\n\
         ///\n\
         /// The type parameter is tonic's shape (`{client}<Channel>` in signatures ported from \
         tonic); a client always calls over a `volley_client::Channel`.\n\
         pub struct {client}<T = Channel> {{ inner: Grpc, _transport: std::marker::PhantomData<fn() -> T> }}\n\
         impl<T> Clone for {client}<T> {{\n\
             fn clone(&self) -> Self {{ {client} {{ inner: self.inner.clone(), _transport: std::marker::PhantomData }} }}\n\
         }}\n\
         impl<T> std::fmt::Debug for {client}<T> {{\n\
             fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {{ f.debug_struct(\"{client}\").field(\"inner\", &self.inner).finish() }}\n\
         }}\n\
         impl {client}<Channel> {{\n\
             /// Dials `dst` on one shared connection, as tonic's generated `connect` does: \
             `\"http://host:port\"` (or without `http://`), a `String`, an `http::Uri`, \
             `https://...` (TLS with the system's roots), `unix:/path`, or a \
             `volley_client::Endpoint`. For another connection strategy, build a \
             `volley_client::Channel` and use [`{client}::new`].\n\
             pub async fn connect<D>(dst: D) -> Result<Self, DialError> where D: TryInto<Endpoint>, D::Error: Into<DialError> {{\n\
                 Grpc::connect(dst).await.map(Self::from_grpc)\n\
             }}\n\
             /// Calls over `channel` (any strategy: per-request, single, pool, expanding).\n\
             pub fn new(channel: Channel) -> Self {{ Self::from_grpc(Grpc::new(channel)) }}\n\
             /// Calls through a configured [`Grpc`].\n\
             pub fn from_grpc(inner: Grpc) -> Self {{ {client} {{ inner, _transport: std::marker::PhantomData }} }}\n\
             /// Compresses request messages with gzip unless a call says otherwise.\n\
             #[must_use]\n\
             pub fn send_compressed(mut self, on: bool) -> Self {{\n\
                 self.inner = self.inner.send_compressed(on);\n\
                 self\n\
             }}\n\
             /// Adds a client interceptor, run around every attempt of every call (after those \
             added before).\n\
             #[must_use]\n\
             pub fn with_interceptor(mut self, interceptor: impl ClientInterceptor) -> Self {{\n\
                 self.inner = self.inner.intercept(interceptor);\n\
                 self\n\
             }}\n\
             /// Largest reply message accepted (default 4 MiB).\n\
             #[must_use]\n\
             pub fn max_decoding_message_size(mut self, bytes: usize) -> Self {{\n\
                 self.inner = self.inner.max_decoding_message_size(bytes);\n\
                 self\n\
             }}\n\
             /// The call core, and through it the channel.\n\
             pub fn grpc(&self) -> &Grpc {{ &self.inner }}"
    );
    for m in &service.methods {
        let input = type_path(&m.input_type);
        let output = type_path(&m.output_type);
        let path = format!("/{full}/{}", m.proto_name);
        m.comments.append_with_indent(0, w);
        if m.comments.leading.is_empty() {
            let _ = writeln!(w, "/// `{path}`.");
        }
        let (arg, reply, call, conv) = match (m.client_streaming, m.server_streaming) {
            (false, false) => (
                format!("impl Into<Request<{input}>>"),
                output,
                "unary",
                "into",
            ),
            (false, true) => (
                format!("impl Into<Request<{input}>>"),
                format!("Streaming<{output}>"),
                "server_streaming",
                "into",
            ),
            (true, false) => (
                format!("impl IntoStreamingRequest<Message = {input}>"),
                output,
                "client_streaming",
                "into_streaming_request",
            ),
            (true, true) => (
                format!("impl IntoStreamingRequest<Message = {input}>"),
                format!("Streaming<{output}>"),
                "streaming",
                "into_streaming_request",
            ),
        };
        let _ = writeln!(
            w,
            "pub async fn {name}(&self, request: {arg}) -> Result<Response<{reply}>, Status> {{\n\
                 self.inner.{call}(\"{path}\", request.{conv}()).await\n\
             }}",
            name = m.name,
        );
    }
    let _ = writeln!(w, "}}\n}}");
}
