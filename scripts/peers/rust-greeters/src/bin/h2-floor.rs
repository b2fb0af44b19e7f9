//! The h2 floor: helloworld.Greeter/SayHello and api.Users/{Get,List} written directly on the h2
//! crate (no hyper), one task per stream, one current-thread runtime. volley's server runs its
//! HTTP/2 connections on h2 directly too, so this is what a gRPC call costs at least on its
//! stack; `hyper-floor` stays the floor the server's goal was first set against.
use bytes::{Bytes, BytesMut};
use h2::{RecvStream, server::SendResponse};
use http::{HeaderMap, HeaderValue, Request, Response};
use rust_greeters::{
    api::GetUserRequest,
    decode, frame, get_reply,
    helloworld::{HelloReply, HelloRequest},
    list_item,
};

async fn handle(req: Request<RecvStream>, mut respond: SendResponse<Bytes>) {
    let (parts, mut body) = req.into_parts();
    let mut buf = BytesMut::new();
    while let Some(chunk) = body.data().await {
        let Ok(chunk) = chunk else { return };
        let _ = body.flow_control().release_capacity(chunk.len());
        buf.extend_from_slice(&chunk);
    }
    let mut head = Response::new(());
    head.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/grpc"));
    let Ok(mut send) = respond.send_response(head, false) else {
        return;
    };
    let status = match parts.uri.path() {
        "/helloworld.Greeter/SayHello" => {
            let name = decode::<HelloRequest>(&buf).name;
            let reply = HelloReply {
                message: format!("Hello {name}"),
            };
            let _ = send.send_data(frame(&reply), false);
            "0"
        }
        "/api.Users/Get" => {
            let _ = send.send_data(frame(&get_reply(decode::<GetUserRequest>(&buf).id)), false);
            "0"
        }
        "/api.Users/List" => {
            // Ten small frames: h2 buffers them; no flow-control wait is needed at this size.
            for i in 0..10 {
                let _ = send.send_data(frame(&list_item(i)), false);
            }
            "0"
        }
        _ => "12",
    };
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static(status));
    let _ = send.send_trailers(trailers);
}

fn main() {
    rust_greeters::serve_each(|tcp| async move {
        let Ok(mut conn) = h2::server::handshake(tcp).await else {
            return;
        };
        while let Some(Ok((req, respond))) = conn.accept().await {
            tokio::spawn(handle(req, respond));
        }
    });
}
