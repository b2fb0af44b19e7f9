//! The live dashboard of a load run (`volley bench --dashboard`, k6's web dashboard): a
//! [`Board`] keeps the run's ticks as the JSON lines `--live` writes, [`serve`] serves the page
//! (`web/dashboard.html`) with `GET /data?from=N` (the ticks from the Nth on) and `GET /report`
//! (the same page with the whole run written in: [`Board::export`], what
//! `--dashboard-export` writes at the end).

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
};

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use serde_json::Value;

/// The page: HTML, CSS and JavaScript in one file, so that an export is one file too.
const PAGE: &str = include_str!("../web/dashboard.html");
/// Where an export writes the run's data into the page.
const DATA_MARK: &str = "/*VOLLEY_DATA*/null";

/// A run as the dashboard shows it.
pub struct Board {
    run: Value,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Each tick as one JSON object.
    ticks: Vec<String>,
    done: bool,
}

impl Board {
    /// The board of a run described by `run` (`{"call", "host", ...}`: what the page's header
    /// shows).
    pub fn new(run: Value) -> Arc<Board> {
        Arc::new(Board {
            run,
            state: Mutex::new(State::default()),
        })
    }

    /// Adds a tick (`tick`: its JSON, as `--live` writes it); `last`: the run has ended.
    pub fn push(&self, tick: String, last: bool) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.ticks.push(tick);
        s.done |= last;
    }

    /// `{"run", "done", "ticks": [...]}` with the ticks from the `from`th on.
    fn data(&self, from: usize) -> String {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let ticks = s.ticks.get(from..).unwrap_or_default();
        let mut out = String::with_capacity(64 + ticks.iter().map(|t| t.len() + 1).sum::<usize>());
        out.push_str("{\"run\":");
        out.push_str(&self.run.to_string());
        out.push_str(",\"done\":");
        out.push_str(if s.done { "true" } else { "false" });
        out.push_str(",\"ticks\":[");
        for (i, t) in ticks.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(t);
        }
        out.push_str("]}");
        out
    }

    /// The page with the whole run so far written in: one self-contained HTML file (no request
    /// back to the run), the dashboard as it stands.
    pub fn export(&self) -> String {
        // `</` closes a script element wherever it stands in it; JSON allows `<\/` for it.
        PAGE.replacen(DATA_MARK, &self.data(0).replace("</", "<\\/"), 1)
    }

    fn respond(&self, req: &Request<Bytes>) -> Response<Bytes> {
        let (status, kind, body) = match (req.method(), req.uri().path()) {
            (&Method::GET, "/") => (StatusCode::OK, "text/html; charset=utf-8", PAGE.to_owned()),
            (&Method::GET, "/data") => {
                let from = req
                    .uri()
                    .query()
                    .unwrap_or_default()
                    .split('&')
                    .find_map(|kv| kv.strip_prefix("from="))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                (StatusCode::OK, "application/json", self.data(from))
            }
            (&Method::GET, "/report") => {
                (StatusCode::OK, "text/html; charset=utf-8", self.export())
            }
            // No icon: an empty answer rather than a 404 in the browser's console.
            (&Method::GET, "/favicon.ico") => {
                (StatusCode::NO_CONTENT, "image/x-icon", String::new())
            }
            (&Method::GET, _) => (
                StatusCode::NOT_FOUND,
                "text/plain; charset=utf-8",
                "the dashboard serves /, /data and /report\n".to_owned(),
            ),
            _ => (
                StatusCode::METHOD_NOT_ALLOWED,
                "text/plain; charset=utf-8",
                "the dashboard is read with GET\n".to_owned(),
            ),
        };
        let mut r = Response::new(Bytes::from(body));
        *r.status_mut() = status;
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
        r.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        if req.uri().path() == "/report" {
            r.headers_mut().insert(
                header::CONTENT_DISPOSITION,
                HeaderValue::from_static("attachment; filename=\"volley-bench-report.html\""),
            );
        }
        r
    }
}

/// Serves `board` on `addr` (`host:port`; port 0 picks one) until the process ends, on
/// volley-server's side server; the address bound. Bound to an address other hosts can reach,
/// it says so (the page takes no token).
pub fn serve(addr: &str, board: Arc<Board>) -> Result<SocketAddr, String> {
    let want: SocketAddr = addr
        .parse()
        .map_err(|_| format!("--dashboard={addr}: expected host:port, as 127.0.0.1:5665"))?;
    let listener = std::net::TcpListener::bind(want)
        .map_err(|e| format!("--dashboard={want}: cannot listen: {e}"))?;
    let bound = volley_server::side::SideServer::new("volley-dashboard")
        .max_body(0)
        .spawn(listener, move |req| std::future::ready(board.respond(&req)))
        .map_err(|e| format!("--dashboard={want}: {e}"))?;
    if !bound.ip().is_loopback() {
        tracing::warn!(
            "--dashboard={bound}: other hosts can read this run's figures (the page takes no \
             token); a loopback address keeps them on this host"
        );
    }
    Ok(bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(board: &Board, uri: &str) -> Response<Bytes> {
        board.respond(&Request::get(uri).body(Bytes::new()).unwrap())
    }

    #[test]
    fn data_is_the_ticks_from_the_one_asked_and_the_export_carries_them_all() {
        let b = Board::new(serde_json::json!({"call": "a.B/C", "host": "h:1"}));
        b.push(r#"{"calls":3}"#.to_owned(), false);
        b.push(r#"{"calls":4,"note":"</script>"}"#.to_owned(), true);
        let d: Value = serde_json::from_slice(get(&b, "/data?from=1").body()).unwrap();
        assert_eq!(d["ticks"].as_array().unwrap().len(), 1);
        assert_eq!(d["ticks"][0]["calls"], 4);
        assert_eq!(
            (d["done"].as_bool(), d["run"]["call"].as_str()),
            (Some(true), Some("a.B/C"))
        );
        let past: Value = serde_json::from_slice(get(&b, "/data?from=9").body()).unwrap();
        assert_eq!(past["ticks"].as_array().unwrap().len(), 0);
        let page = b.export();
        assert!(!page.contains(DATA_MARK));
        assert!(page.contains(r#""calls":3"#) && page.contains(r#"<\/script>"#));
        assert_eq!(
            page.matches("</script>").count(),
            1,
            "only the page's own closes"
        );
        let r = get(&b, "/report");
        assert!(
            r.headers()[header::CONTENT_DISPOSITION]
                .to_str()
                .unwrap()
                .contains("attachment")
        );
        assert_eq!(get(&b, "/nothing").status(), StatusCode::NOT_FOUND);
    }
}
