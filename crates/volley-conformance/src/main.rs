//! `volley-conformance-server`: the server under test that `connectconformance --mode server`
//! starts. Reads a `ServerCompatRequest` on stdin, serves the ConformanceService on 127.0.0.1 at
//! an ephemeral port (TLS and client certificates when asked), answers with a
//! `ServerCompatResponse` on stdout, and runs until SIGTERM (or Ctrl-C).

use std::process::ExitCode;

use volley_conformance::{
    compat::{read_request, write_response},
    pb::{FILE_DESCRIPTOR_SET, ServerCompatRequest, ServerCompatResponse},
    service,
};
use volley_server::Server;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("volley-conformance-server: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let req = read_request(std::io::stdin().lock())?;
    let server = build(&req)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let pem_cert = match (&req.server_creds, req.use_tls) {
            (Some(c), true) => c.cert.clone(),
            _ => Vec::new(),
        };
        write_response(
            std::io::stdout().lock(),
            &ServerCompatResponse {
                host: "127.0.0.1".into(),
                port: port.into(),
                pem_cert,
            },
        )?;
        // The runner sends SIGTERM when it is done with this server.
        let shutdown = async {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate() => {}
            }
        };
        server.serve(listener, shutdown).await?;
        Ok(())
    })
}

async fn terminate() {
    #[cfg(unix)]
    if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        s.recv().await;
        return;
    }
    std::future::pending::<()>().await
}

fn build(req: &ServerCompatRequest) -> Result<Server, Box<dyn std::error::Error>> {
    let mut builder = Server::builder()
        .add_service(service::service())
        .file_descriptor_set(FILE_DESCRIPTOR_SET)
        .grace_period(std::time::Duration::from_secs(1));
    if req.message_receive_limit > 0 {
        builder = builder.max_recv_message_size(req.message_receive_limit as usize);
    }
    if req.use_tls {
        let creds = req
            .server_creds
            .as_ref()
            .ok_or("use_tls is set but server_creds is missing")?;
        let client_ca = (!req.client_tls_cert.is_empty()).then_some(req.client_tls_cert.as_slice());
        builder = builder.tls(volley_server::tls::server_config_from_pem(
            &creds.cert,
            &creds.key,
            client_ca,
        )?);
    }
    Ok(builder.build()?)
}
