//! The text of `<service>_server`: the service trait, and the server that erases an
//! implementation into a `volley_server::Service` with its descriptors attached.

use std::fmt::Write;

use prost_build::{Method, Service};

use crate::names::{full_name, snake, stream_type, type_path};

fn request_type(m: &Method) -> String {
    let input = type_path(&m.input_type);
    if m.client_streaming {
        format!("Request<Streaming<{input}>>")
    } else {
        format!("Request<{input}>")
    }
}

/// Appends `<service>_server` to `buf`.
pub(crate) fn generate(service: &Service, buf: &mut String) {
    let full = full_name(service);
    let trait_name = &service.name;
    let module = format!("{}_server", snake(&service.proto_name));
    let w = buf;
    let _ = writeln!(
        w,
        "/// Server side of `{full}`: implement [`{module}::{trait_name}`], then add a \
         [`{module}::{trait_name}Server`] to a `volley_server::Server`."
    );
    let _ = writeln!(w, "pub mod {module} {{");
    let _ = writeln!(
        w,
        "#![allow(unused_imports, clippy::all, clippy::pedantic)]\n\
         use volley_server::codegen::*;\n\
         /// The fully-qualified service name.\n\
         pub const SERVICE_NAME: &str = \"{full}\";"
    );
    service.comments.append_with_indent(0, w);
    if service.comments.leading.is_empty() {
        let _ = writeln!(w, "/// The methods of `{full}`, one per rpc.");
    }
    let _ = writeln!(w, "pub trait {trait_name}: Send + Sync + 'static {{");
    for m in &service.methods {
        let output = type_path(&m.output_type);
        let reply = if m.server_streaming {
            let ty = stream_type(&m.proto_name);
            let _ = writeln!(
                w,
                "/// The reply stream of [`{trait_name}::{name}`]: items are \
                 `Result<{out}, Status>`, or `Result<Reply<{out}>, Status>` to choose each \
                 message's compression.\n\
                 type {ty}: Stream<Item: ReplyItem<{output}>> + Send + 'static;",
                name = m.name,
                out = m.output_proto_type.rsplit('.').next().unwrap_or_default(),
            );
            format!("Self::{ty}")
        } else {
            output
        };
        m.comments.append_with_indent(0, w);
        if m.comments.leading.is_empty() {
            let _ = writeln!(w, "/// `{full}/{}`.", m.proto_name);
        }
        let _ = writeln!(
            w,
            "fn {name}(&self, request: {req}) -> impl Future<Output = Result<Response<{reply}>, \
             Status>> + Send;",
            name = m.name,
            req = request_type(m),
        );
    }
    let _ = writeln!(w, "}}");
    let _ = writeln!(
        w,
        "/// Serves an implementation of [`{trait_name}`]; converts into a \
         `volley_server::Service` (`ServerBuilder::add_service` takes it as it is).\n\
         #[derive(Debug)]\n\
         pub struct {trait_name}Server<T> {{ inner: Arc<T> }}\n\
         impl<T> Clone for {trait_name}Server<T> {{\n\
             fn clone(&self) -> Self {{ {trait_name}Server {{ inner: self.inner.clone() }} }}\n\
         }}\n\
         impl<T: {trait_name}> {trait_name}Server<T> {{\n\
             /// Serves `inner`.\n\
             pub fn new(inner: T) -> Self {{ Self::from_arc(Arc::new(inner)) }}\n\
             /// Serves an implementation shared with other code.\n\
             pub fn from_arc(inner: Arc<T>) -> Self {{ {trait_name}Server {{ inner }} }}\n\
             /// The `volley_server::Service`: every method, and the descriptors of `{full}`.\n\
             pub fn into_service(self) -> Service {{\n\
                 let inner = self.inner;\n\
                 Service::builder(SERVICE_NAME)\n\
                     .file_descriptor_set(super::FILE_DESCRIPTOR_SET)"
    );
    for m in &service.methods {
        let (kind, wrap) = match (m.client_streaming, m.server_streaming) {
            (false, false) => ("unary", false),
            (false, true) => ("server_streaming", true),
            (true, false) => ("client_streaming", false),
            (true, true) => ("bidi_streaming", true),
        };
        let call = if wrap {
            let output = type_path(&m.output_type);
            format!(
                "inner.{name}(request).await.map(|r| r.map(|s| \
                 s.map(<_ as ReplyItem<{output}>>::into_frame)))",
                name = m.name
            )
        } else {
            format!("inner.{}(request).await", m.name)
        };
        let _ = writeln!(
            w,
            ".{kind}(\"{proto}\", {{ let inner = inner.clone(); move |request: {req}| {{ \
             let inner = inner.clone(); async move {{ {call} }} }} }})",
            proto = m.proto_name,
            req = request_type(m),
        );
    }
    let _ = writeln!(
        w,
        "            .build()\n\
             }}\n\
         }}\n\
         impl<T: {trait_name}> From<{trait_name}Server<T>> for Service {{\n\
             fn from(server: {trait_name}Server<T>) -> Service {{ server.into_service() }}\n\
         }}\n\
         }}"
    );
}
