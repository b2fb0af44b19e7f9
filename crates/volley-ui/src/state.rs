//! What the page's requests share: the schema (from reflection or files), the methods offered,
//! how to reach the target (one connection, dialled again when it fails), and the flags that
//! shape each call.

use std::time::Duration;

use prost_reflect::{DescriptorPool, MethodDescriptor};
use tokio::sync::Mutex;
use volley_call::dynamic::{DialOpts, Dialed, Protocol, dial};

/// The target's connection as the calls use it.
#[derive(Clone)]
pub(crate) struct Conn {
    pub conn: volley_client::Connection,
    pub scheme: &'static str,
    pub authority: String,
}

/// The UI's state, shared by every request of the page.
pub(crate) struct Ui {
    pub pool: DescriptorPool,
    /// The methods the page offers, in the schema's order (`-service`, `-method` applied).
    pub methods: Vec<MethodDescriptor>,
    pub dial: DialOpts,
    /// How long a dial may take.
    pub connect_timeout: Duration,
    pub protocol: Protocol,
    /// `-H` and `-rpc-header`: set on every call, over the form's rows.
    pub rpc_headers: Vec<(String, String)>,
    /// `-default-header`: the form's first rows.
    pub default_headers: Vec<(String, String)>,
    pub max_time: Option<Duration>,
    pub max_recv: usize,
    pub emit_defaults: bool,
    /// The target as given, for the page.
    pub target: String,
    /// The connection, once dialled.
    pub conn: Mutex<Option<Conn>>,
}

impl Ui {
    /// The method `pkg.Svc.Method` (or `pkg.Svc/Method`), if the page offers it.
    pub(crate) fn method(&self, name: &str) -> Option<&MethodDescriptor> {
        let name = name.replace('/', ".");
        self.methods.iter().find(|m| m.full_name() == name)
    }

    /// The connection, dialled when there is none or it failed; the error in `volley call`'s
    /// words.
    pub(crate) async fn connection(&self) -> Result<Conn, String> {
        let mut held = self.conn.lock().await;
        if let Some(c) = held.as_ref().filter(|c| c.conn.is_usable()) {
            return Ok(c.clone());
        }
        let c = connect(&self.dial, self.connect_timeout).await?;
        *held = Some(c.clone());
        Ok(c)
    }
}

/// Dials `o` within `timeout`: the connection, or why not in grpcurl's words.
pub(crate) async fn connect(o: &DialOpts, timeout: Duration) -> Result<Conn, String> {
    let mut o = o.clone();
    o.deadline = tokio::time::Instant::now() + timeout;
    let mut warnings = Vec::new();
    match dial(&o, &mut warnings).await {
        Ok(Dialed {
            conn,
            scheme,
            authority,
            ..
        }) => Ok(Conn {
            conn,
            scheme,
            authority,
        }),
        Err(volley_call::dynamic::DialError::Usage(s))
        | Err(volley_call::dynamic::DialError::TlsConfig(s)) => Err(s),
        Err(volley_call::dynamic::DialError::Dial(s, hint)) => Err(match hint {
            Some(h) => format!("Failed to dial target host {:?}: {s} ({h})", o.target),
            None => format!("Failed to dial target host {:?}: {s}", o.target),
        }),
    }
}
