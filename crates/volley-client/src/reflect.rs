//! Schemas by server reflection: asks for the file defining a symbol, then for every import it
//! lacks, over one bidi stream (v1, falling back to v1alpha), and links the files into a pool;
//! or for the list of services.

use std::collections::{HashMap, HashSet};

use bytes::Bytes;
use h2::{RecvStream, SendStream};
use http::{HeaderName, HeaderValue};
use prost::Message;
use prost_reflect::DescriptorPool;
use prost_types::FileDescriptorProto;
use volley_proto::pb::reflection::{
    ServerReflectionRequest, ServerReflectionResponse,
    server_reflection_request::MessageRequest as Req,
    server_reflection_response::MessageResponse as Resp,
};
use volley_wire::{Code, Status, codec::FrameDecoder};

use crate::{CallHead, attempt::transport_status, connection::Connection};

/// Why reflection could not produce a schema.
#[derive(Debug, thiserror::Error)]
pub enum ReflectError {
    /// The server does not offer reflection.
    #[error("the server does not support reflection ({0}); give --proto or --protoset")]
    Unsupported(String),
    /// The call failed.
    #[error("server reflection failed: {0}")]
    Call(String),
    /// The server does not know the symbol.
    #[error("server reflection: {0}")]
    NotFound(String),
    /// The files did not link.
    #[error("server reflection returned unusable descriptors: {0}")]
    Descriptor(String),
}

const PATHS: [&str; 2] = [
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

/// Fetches the schema of `symbol` (a service name) and its imports.
pub async fn fetch_pool(
    conn: &Connection,
    scheme: &str,
    authority: &str,
    symbol: &str,
    metadata: &[(HeaderName, HeaderValue)],
) -> Result<DescriptorPool, ReflectError> {
    let mut last = String::new();
    for path in PATHS {
        let head = CallHead::new(scheme, authority, path, metadata, None, false)
            .map_err(ReflectError::Call)?;
        match fetch_with(conn, &head, symbol).await {
            Err(Fetch::Unimplemented(s)) => last = s,
            Err(Fetch::Failed(e)) => return Err(e),
            Ok(files) => return linked(files.iter().map(|(_, raw)| &raw[..])),
        }
    }
    Err(ReflectError::Unsupported(last))
}

/// The services the server lists, in its order (v1, falling back to v1alpha).
pub async fn list_services(
    conn: &Connection,
    scheme: &str,
    authority: &str,
    metadata: &[(HeaderName, HeaderValue)],
) -> Result<Vec<String>, ReflectError> {
    let mut last = String::new();
    for path in PATHS {
        let head = CallHead::new(scheme, authority, path, metadata, None, false)
            .map_err(ReflectError::Call)?;
        match list_with(conn, &head).await {
            Err(Fetch::Unimplemented(s)) => last = s,
            Err(Fetch::Failed(e)) => return Err(e),
            Ok(names) => return Ok(names),
        }
    }
    Err(ReflectError::Unsupported(last))
}

/// The schema of every service the server lists (reflection's own left out): each one's files
/// with their imports, a file named twice taken once, linked into one pool.
pub async fn fetch_all(
    conn: &Connection,
    scheme: &str,
    authority: &str,
    metadata: &[(HeaderName, HeaderValue)],
) -> Result<DescriptorPool, ReflectError> {
    let services = list_services(conn, scheme, authority, metadata).await?;
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for s in services
        .iter()
        .filter(|s| !s.starts_with("grpc.reflection."))
    {
        let got = fetch_pool(conn, scheme, authority, s, metadata).await?;
        for f in got.files() {
            if !files.iter().any(|(name, _)| name == f.name()) {
                files.push((f.name().to_owned(), f.encode_to_vec()));
            }
        }
    }
    linked(files.iter().map(|(_, raw)| &raw[..]))
}

/// Encoded files linked into a pool. Decoded by the pool itself, not through `prost_types`
/// (which drops what it does not know): custom options such as `google.api.http` survive.
fn linked<'a>(files: impl Iterator<Item = &'a [u8]>) -> Result<DescriptorPool, ReflectError> {
    let mut set = Vec::new();
    for raw in files {
        prost::encoding::bytes::encode(1, &raw.to_vec(), &mut set);
    }
    let mut pool = DescriptorPool::new();
    pool.decode_file_descriptor_set(&set[..])
        .map_err(|e| ReflectError::Descriptor(e.to_string()))?;
    Ok(pool)
}

async fn list_with(conn: &Connection, head: &CallHead) -> Result<Vec<String>, Fetch> {
    let (resp, mut out) = conn.open_stream(head.request()).await.map_err(failed)?;
    ask(&mut out, Req::ListServices(String::new()))?;
    let resp = resp.await.map_err(|e| failed(transport_status(&e)))?;
    if let Some(s) = Status::from_headers(resp.headers()) {
        return Err(failed(s));
    }
    let mut body = Replies {
        body: resp.into_body(),
        decoder: FrameDecoder::new(None, 64 << 20),
    };
    let reply = body.next().await?;
    let _ = out.send_data(Bytes::new(), true);
    match reply.message_response {
        Some(Resp::ListServicesResponse(l)) => Ok(l.service.into_iter().map(|s| s.name).collect()),
        Some(Resp::ErrorResponse(e)) => Err(Fetch::Failed(ReflectError::Call(e.error_message))),
        _ => Err(Fetch::Failed(ReflectError::Call(
            "unexpected reflection reply".into(),
        ))),
    }
}

enum Fetch {
    Unimplemented(String),
    Failed(ReflectError),
}

fn failed(s: Status) -> Fetch {
    if s.code() == Code::Unimplemented {
        Fetch::Unimplemented(s.to_string())
    } else {
        Fetch::Failed(ReflectError::Call(s.to_string()))
    }
}

async fn fetch_with(
    conn: &Connection,
    head: &CallHead,
    symbol: &str,
) -> Result<Vec<(FileDescriptorProto, Bytes)>, Fetch> {
    let (resp, mut out) = conn.open_stream(head.request()).await.map_err(failed)?;
    ask(&mut out, Req::FileContainingSymbol(symbol.to_owned()))?;
    let resp = resp.await.map_err(|e| failed(transport_status(&e)))?;
    if let Some(s) = Status::from_headers(resp.headers()) {
        return Err(failed(s));
    }
    let mut body = Replies {
        body: resp.into_body(),
        decoder: FrameDecoder::new(None, 64 << 20),
    };
    // Each file decoded (for its name and imports) and kept as it came (for its options).
    let mut files: HashMap<String, (FileDescriptorProto, Bytes)> = HashMap::new();
    let mut asked: HashSet<String> = HashSet::new();
    let mut pending = 1;
    while pending > 0 {
        let reply = body.next().await?;
        pending -= 1;
        match reply.message_response {
            Some(Resp::FileDescriptorResponse(f)) => {
                for raw in f.file_descriptor_proto {
                    let fd = FileDescriptorProto::decode(&raw[..])
                        .map_err(|e| Fetch::Failed(ReflectError::Descriptor(e.to_string())))?;
                    files
                        .entry(fd.name().to_owned())
                        .or_insert((fd, Bytes::from(raw)));
                }
            }
            Some(Resp::ErrorResponse(e)) => {
                return Err(Fetch::Failed(ReflectError::NotFound(e.error_message)));
            }
            _ => {
                return Err(Fetch::Failed(ReflectError::Call(
                    "unexpected reflection reply".into(),
                )));
            }
        }
        let missing: Vec<String> = files
            .values()
            .flat_map(|(f, _)| f.dependency.iter())
            .filter(|d| !files.contains_key(*d) && !asked.contains(*d))
            .cloned()
            .collect();
        for dep in missing {
            if asked.insert(dep.clone()) {
                ask(&mut out, Req::FileByFilename(dep))?;
                pending += 1;
            }
        }
    }
    let _ = out.send_data(Bytes::new(), true);
    Ok(files.into_values().collect())
}

fn ask(out: &mut SendStream<Bytes>, req: Req) -> Result<(), Fetch> {
    let msg = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(req),
    };
    out.send_data(volley_wire::codec::encode_frame(&msg), false)
        .map_err(|e| failed(transport_status(&e)))
}

struct Replies {
    body: RecvStream,
    decoder: FrameDecoder,
}

impl Replies {
    async fn next(&mut self) -> Result<ServerReflectionResponse, Fetch> {
        loop {
            if let Some(m) = self
                .decoder
                .next_message()
                .map_err(|s| Fetch::Failed(ReflectError::Call(s.to_string())))?
            {
                return ServerReflectionResponse::decode(m)
                    .map_err(|e| Fetch::Failed(ReflectError::Call(e.to_string())));
            }
            match self.body.data().await {
                Some(Ok(chunk)) => {
                    let _ = self.body.flow_control().release_capacity(chunk.len());
                    self.decoder.push(chunk);
                }
                Some(Err(e)) => return Err(failed(transport_status(&e))),
                None => {
                    let trailers = self.body.trailers().await.ok().flatten();
                    let s = trailers
                        .as_ref()
                        .and_then(Status::from_headers)
                        .unwrap_or_else(|| Status::internal("reflection stream ended early"));
                    return Err(failed(s));
                }
            }
        }
    }
}
