//! The mock's page on the admin port (`GET /ui`, GripMock's dashboard): the stubs with their
//! match counts, used and unused; the calls with the stub that answered, and for a call no stub
//! matched the nearest stub and the conditions it missed; a stub added, edited or deleted from
//! a form. One HTML file (`web/mock.html`, no build step) that reads and changes everything
//! through the admin API; with `--admin-token` the page itself needs the token (`?token=` in
//! its link, or the header) and sends it as `authorization: Bearer` on each API request.

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};

/// Where the page is served.
pub(crate) const PATH: &str = "/ui";
const PAGE: &str = include_str!("../../web/mock.html");

/// Whether `req` bears `token`: the `authorization: Bearer` header or the link's `?token=`.
fn authorized(req: &Request<Bytes>, token: &str) -> bool {
    let header = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let query = req
        .uri()
        .query()
        .unwrap_or_default()
        .split('&')
        .find_map(|kv| kv.strip_prefix("token="));
    [header, query]
        .into_iter()
        .flatten()
        .any(|t| volley_server::auth::same_secret(t.as_bytes(), token.as_bytes()))
}

fn reply(status: StatusCode, kind: &'static str, body: &'static str) -> Response<Bytes> {
    let mut r = Response::new(Bytes::from_static(body.as_bytes()));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    r
}

/// The page, to a request that may see it.
pub(crate) fn respond(req: &Request<Bytes>, token: Option<&str>) -> Response<Bytes> {
    if req.method() != Method::GET {
        return reply(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            "the page is read with GET\n",
        );
    }
    if token.is_some_and(|t| !authorized(req, t)) {
        return reply(
            StatusCode::UNAUTHORIZED,
            "text/plain; charset=utf-8",
            "this page needs the admin token: open /ui?token=TOKEN\n",
        );
    }
    let mut r = reply(StatusCode::OK, "text/html; charset=utf-8", PAGE);
    // The token in the link stays out of the logs of pages this one links to.
    r.headers_mut().insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(uri: &str, auth: Option<&str>) -> StatusCode {
        let mut b = Request::get(uri);
        if let Some(a) = auth {
            b = b.header(header::AUTHORIZATION, a);
        }
        respond(&b.body(Bytes::new()).unwrap(), Some("s3cret")).status()
    }

    #[test]
    fn with_a_token_the_page_answers_only_to_it() {
        assert_eq!(get("/ui", None), StatusCode::UNAUTHORIZED);
        assert_eq!(get("/ui?token=s3cre", None), StatusCode::UNAUTHORIZED);
        assert_eq!(get("/ui?token=s3cret", None), StatusCode::OK);
        assert_eq!(get("/ui", Some("Bearer s3cret")), StatusCode::OK);
        assert_eq!(get("/ui", Some("Bearer wrong!")), StatusCode::UNAUTHORIZED);
        let open = respond(&Request::get("/ui").body(Bytes::new()).unwrap(), None);
        assert_eq!(open.status(), StatusCode::OK);
    }
}
