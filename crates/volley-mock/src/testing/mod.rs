//! The mock inside a Rust test, in wiremock's shape: [`MockServer::start`] on a free loopback
//! port (and an in-process [`channel`](MockServer::channel) that needs no socket), typed
//! [`Mock`]s mounted on it, the calls it received, and `expect`ations checked when it drops.
//!
//! ```no_run
//! # mod hello { #[derive(Clone, PartialEq, prost::Message)] pub struct HelloReply { #[prost(string, tag = "1")] pub message: String }
//! # #[derive(Clone, PartialEq, prost::Message)] pub struct HelloRequest { #[prost(string, tag = "1")] pub name: String }
//! # pub const FILE_DESCRIPTOR_SET: &[u8] = &[]; }
//! use volley_mock::testing::{Mock, MockServer, method, reply, request};
//! # async fn f() {
//! let server = MockServer::start(hello::FILE_DESCRIPTOR_SET).await;
//! Mock::given(method("helloworld.Greeter/SayHello"))
//!     .and(request(|r: &hello::HelloRequest| r.name == "x"))
//!     .respond_with(reply(hello::HelloReply { message: "Hello x".into() }))
//!     .expect(1)
//!     .mount(&server)
//!     .await;
//! // ... point the client under test at server.uri() or server.channel() ...
//! # }
//! ```
//!
//! Layout: `mock` (matchers, expectations, scenarios), `respond` (answers), `received` (the
//! calls kept), `handler` (the server's side), this file (the server and its checks).

mod handler;
mod mock;
mod received;
mod respond;

use std::{
    net::SocketAddr,
    path::PathBuf,
    sync::{Arc, Mutex, atomic::Ordering},
};

use bytes::Bytes;
use prost_reflect::DescriptorPool;
use serde_json::Value;
use tokio::{io::DuplexStream, sync::mpsc, sync::watch};
use volley_client::{Channel, Dialer, Endpoint, Strategy, Target};
use volley_server::{Server, Service};

pub use crate::scenario::STARTED;
pub use mock::{
    Match, MethodMatcher, Mock, MockBuilder, Times, header, method, request, request_json,
};
pub use received::ReceivedCall;
pub use respond::{Respond, error, reply, reply_json, reply_with, stream, stream_json};

use crate::{
    MockError,
    model::Origin,
    stubs::{Options, Stubs, lock},
};
use handler::{Mocked, Mounted, Shared};

/// Each in-process connection's pipe buffer, each way.
const PIPE: usize = 256 << 10;

/// A gRPC server for one test: the services of the descriptors it was given, answering from
/// the [`Mock`]s mounted on it (and GripMock stubs, if any). Stops when dropped, and then
/// panics if a mock's [`expect`](Mock::expect) was not met, listing the calls it received.
pub struct MockServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    pipes: mpsc::UnboundedSender<DuplexStream>,
    stop: watch::Sender<bool>,
}

/// What a [`MockServer`] serves: descriptor sets, `.proto` files, GripMock stub folders.
#[derive(Default)]
pub struct MockServerBuilder {
    sets: Vec<Bytes>,
    protos: Vec<PathBuf>,
    imports: Vec<PathBuf>,
    stubs: Vec<PathBuf>,
}

impl MockServerBuilder {
    /// A serialized `FileDescriptorSet` (volley-build's generated `FILE_DESCRIPTOR_SET`, a
    /// `protoc --descriptor_set_out` file, tonic-build's `file_descriptor_set_path`).
    #[must_use]
    pub fn file_descriptor_set(mut self, bytes: impl Into<Bytes>) -> Self {
        self.sets.push(bytes.into());
        self
    }

    /// A `.proto` file (or folder, or descriptor set file), compiled in-process.
    #[must_use]
    pub fn proto(mut self, path: impl Into<PathBuf>) -> Self {
        self.protos.push(path.into());
        self
    }

    /// An import root for [`proto`](Self::proto)'s files.
    #[must_use]
    pub fn import_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.imports.push(path.into());
        self
    }

    /// GripMock stub files or folders, answering calls no mock matches.
    #[must_use]
    pub fn stubs(mut self, path: impl Into<PathBuf>) -> Self {
        self.stubs.push(path.into());
        self
    }

    /// Starts the server on a free 127.0.0.1 port.
    ///
    /// # Panics
    /// When the descriptors, protos or stubs cannot be read: the panic's one line says which.
    pub async fn start(self) -> MockServer {
        match self.try_start().await {
            Ok(s) => s,
            Err(e) => panic!("volley-mock: MockServer could not start: {e}"),
        }
    }

    /// As [`start`](Self::start), the failure returned.
    pub async fn try_start(self) -> Result<MockServer, MockError> {
        let mut pool = DescriptorPool::new();
        for (i, set) in self.sets.iter().enumerate() {
            pool.decode_file_descriptor_set(set.clone())
                .map_err(|e| MockError::Stub(format!("file descriptor set #{}: {e}", i + 1)))?;
        }
        if !self.protos.is_empty() {
            let loaded = volley_proto::load::load_sources(&self.protos, &self.imports)?;
            pool.add_file_descriptor_protos(loaded.pool.file_descriptor_protos().cloned())
                .map_err(|e| MockError::Stub(format!("{}: {e}", self.protos[0].display())))?;
        }
        let options = Options {
            defaults: None,
            strict: false,
            gripmock_text: false,
            history: 0,
        };
        let stubs = Stubs::load_with(&self.stubs, std::slice::from_ref(&pool), options)?;
        let shared = Arc::new(Shared {
            pool: pool.clone(),
            stubs,
            mounts: Mutex::new(Vec::new()),
            received: Mutex::new(Vec::new()),
        });
        let mut builder = Server::builder().health(false);
        for s in pool.services() {
            builder = builder.add_service(Service::dynamic(&s, Mocked(shared.clone())));
        }
        let server = Arc::new(builder.build()?);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = watch::channel(false);
        let until = |mut rx: watch::Receiver<bool>| async move {
            let _ = rx.wait_for(|s| *s).await;
        };
        let (pipes, mut incoming) = mpsc::unbounded_channel::<DuplexStream>();
        let (tcp, mem) = (server.clone(), server);
        let on_tcp = until(stopped.clone());
        tokio::spawn(async move {
            let _ = tcp.serve(listener, on_tcp).await;
        });
        let on_mem = until(stopped);
        tokio::spawn(async move {
            let conns = futures_util::stream::poll_fn(move |cx| incoming.poll_recv(cx));
            let _ = mem.serve_incoming(conns, on_mem).await;
        });
        Ok(MockServer {
            shared,
            addr,
            pipes,
            stop,
        })
    }
}

/// Opens in-process connections to a [`MockServer`] (no socket): for clients that take a
/// connector, such as tonic's `Endpoint::connect_with_connector`. Cheap to clone.
#[derive(Clone)]
pub struct InProcess(mpsc::UnboundedSender<DuplexStream>);

impl InProcess {
    /// One new connection's client end.
    pub fn connect(&self) -> std::io::Result<DuplexStream> {
        let (client, server) = tokio::io::duplex(PIPE);
        self.0.send(server).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::ConnectionRefused,
                "the mock server has stopped",
            )
        })?;
        Ok(client)
    }
}

impl Mock {
    /// Mounts the mock on `server`: later calls may match it.
    ///
    /// # Panics
    /// When the mock's method is not one the server serves, or its reply does not fit the
    /// method's output type: the panic's one line names the mock and where it was written.
    pub async fn mount(self, server: &MockServer) {
        server.mount(self);
    }
}

impl MockServer {
    /// A server for the services of `file_descriptor_set` (volley-build's generated
    /// `FILE_DESCRIPTOR_SET`), on a free 127.0.0.1 port. See [`MockServer::builder`] for more.
    ///
    /// # Panics
    /// When the bytes are not a descriptor set.
    pub async fn start(file_descriptor_set: impl Into<Bytes>) -> MockServer {
        MockServer::builder()
            .file_descriptor_set(file_descriptor_set)
            .start()
            .await
    }

    /// What to serve, before [`start`](MockServerBuilder::start).
    pub fn builder() -> MockServerBuilder {
        MockServerBuilder::default()
    }

    /// The loopback address it listens on.
    pub fn address(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, for clients that take a URI.
    pub fn uri(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A volley channel to the server with no socket: each connection an in-process pipe
    /// (`GreeterClient::new(server.channel())`).
    pub fn channel(&self) -> Channel {
        let pipes = self.in_process();
        let ep = Endpoint::new(Target::Tcp(self.addr.to_string()))
            .expect("a socket address is a valid target")
            .with_dialer(Dialer::new(move || {
                Ok(Box::new(pipes.connect()?) as volley_client::endpoint::DialedIo)
            }));
        Channel::new(ep, Strategy::Single)
    }

    /// Opens in-process connections (for a client other than volley's, e.g. tonic's).
    pub fn in_process(&self) -> InProcess {
        InProcess(self.pipes.clone())
    }

    /// Mounts `mock` (what [`Mock::mount`] does).
    ///
    /// # Panics
    /// When the mock's method is not one the server serves, or its reply does not fit the
    /// method's output type: the panic's one line names the mock and where it was written.
    pub(crate) fn mount(&self, mock: Mock) {
        let mut mounts = lock(&self.shared.mounts);
        let n = mounts.len();
        let at = format!("{}:{}", mock.at.file(), mock.at.line());
        let (svc, name) = (&mock.method.service, &mock.method.method);
        let Some(service) = self.shared.pool.get_service_by_name(svc) else {
            let all: Vec<String> = self
                .shared
                .pool
                .services()
                .map(|s| s.full_name().to_owned())
                .collect();
            panic!(
                "volley-mock: the mock written at {at} is for service {svc:?}, which this \
                 server does not serve (it serves: {})",
                all.join(", ")
            );
        };
        let Some(method) = service.methods().find(|m| m.name() == name.as_str()) else {
            let all: Vec<String> = service.methods().map(|m| m.name().to_owned()).collect();
            panic!(
                "volley-mock: the mock written at {at} is for {svc}/{name}, but {svc} has no \
                 method {name:?} (its methods: {})",
                all.join(", ")
            );
        };
        if let Err(e) = mock.respond.check(&method) {
            panic!("volley-mock: the mock written at {at}: {e}");
        }
        let mounted = Arc::new(Mounted {
            mock,
            n,
            method,
            hits: Default::default(),
        });
        let p = mounted.mock.priority;
        let at = mounts.partition_point(|m| m.mock.priority <= p);
        mounts.insert(at, mounted);
    }

    /// Adds GripMock stubs (one stub's JSON or a list), answering calls no mock matches; their
    /// ids, or the first one's problem in one line.
    pub fn add_stubs(&self, stubs: Value) -> Result<Vec<uuid::Uuid>, String> {
        let list = match stubs {
            Value::Array(a) => a,
            one => vec![one],
        };
        self.shared.stubs.upsert(&list, Origin::Rest, None)
    }

    /// Every call received so far, in order (a stream's when it ended).
    pub async fn received_requests(&self) -> Vec<ReceivedCall> {
        lock(&self.shared.received).clone()
    }

    /// The state of scenario `name` (`"Started"` until a mock or stub moves it).
    pub fn scenario_state(&self, name: &str) -> String {
        self.shared.stubs.scenario_state(name, "")
    }

    /// Drops every mock, stub added, call received and scenario state.
    pub async fn reset(&self) {
        lock(&self.shared.mounts).clear();
        lock(&self.shared.received).clear();
        self.shared.stubs.clear_api(None);
        self.shared.stubs.reset_scenarios(None);
    }

    /// Checks every mock's [`expect`](Mock::expect)ation now.
    ///
    /// # Panics
    /// When one is not met: the message names each such mock, what it expected and received,
    /// and lists the calls the server received.
    #[track_caller]
    pub fn verify(&self) {
        if let Some(report) = self.unmet() {
            panic!("{report}");
        }
    }

    fn unmet(&self) -> Option<String> {
        let mounts = lock(&self.shared.mounts).clone();
        let failed: Vec<String> = mounts
            .iter()
            .filter_map(|m| {
                let want = m.mock.expect?;
                let got = m.hits.load(Ordering::Acquire);
                (!want.contains(got))
                    .then(|| format!("- {}: expected {want}, received {got}", m.mock.shown(m.n)))
            })
            .collect();
        if failed.is_empty() {
            return None;
        }
        let calls = lock(&self.shared.received).clone();
        let mut out = format!(
            "volley-mock: {} expectation(s) not met:\n{}\n",
            failed.len(),
            failed.join("\n")
        );
        match calls.len() {
            0 => out.push_str("the server received no calls"),
            n => {
                out.push_str(&format!("the server received {n} call(s):"));
                for (i, c) in calls.iter().enumerate() {
                    out.push_str(&format!("\n  {}. {c}", i + 1));
                }
            }
        }
        Some(out)
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if std::thread::panicking() {
            return;
        }
        if let Some(report) = self.unmet() {
            panic!("{report}");
        }
    }
}
