//! Asking a responder: the DER request POSTed with `Content-Type: application/ocsp-request`
//! (RFC 6960 appendix A.1), as Traefik (Go's `http.Post`) sends it — redirects followed as Go
//! follows them (10 requests at most; 307 and 308 repeat the POST, 301, 302 and 303 become a
//! GET, other 3xx are answers), 10 s
//! for the whole exchange, any status but 2xx a failure. `https` responders are verified against
//! the system's CA store. An answer is read up to 1 MiB (real ones are a few kB): a responder
//! cannot make the stapler hold more.

use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode, Uri, header};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use crate::acme::client::Connector;

/// Go's `http.Client` timeout Traefik sets for OCSP.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(10);
/// Go's default limit: the tenth redirect is not followed.
const MAX_REDIRECTS: usize = 10;
/// The largest answer read.
const MAX_ANSWER: usize = 1 << 20;

/// The HTTP client of the stapler.
#[derive(Clone)]
pub(crate) struct Http {
    client: Client<Connector, Full<Bytes>>,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Http")
    }
}

impl Http {
    pub(crate) fn new() -> Self {
        let tls = crate::acme::client::system_tls();
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(TIMEOUT));
        let mut b = Client::builder(TokioExecutor::new());
        b.pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(30));
        Self {
            client: b.build(Connector::new(http, tls, None)),
        }
    }

    /// POSTs `request` to `url`; the answer's body, or why there is none (Traefik's wording:
    /// `due to status code: 500`, the connection error, …).
    pub(crate) async fn post(&self, url: &str, request: &[u8]) -> Result<Vec<u8>, String> {
        tokio::time::timeout(TIMEOUT, self.exchange(url, request))
            .await
            .map_err(|_| format!("Post \"{url}\": timeout ({} s) exceeded", TIMEOUT.as_secs()))?
    }

    async fn exchange(&self, url: &str, request: &[u8]) -> Result<Vec<u8>, String> {
        let mut target = url::Url::parse(url).map_err(|e| format!("bad URL \"{url}\": {e}"))?;
        let mut method = Method::POST;
        for _ in 0..MAX_REDIRECTS {
            if !matches!(target.scheme(), "http" | "https") {
                return Err(format!(
                    "unsupported protocol scheme \"{}\"",
                    target.scheme()
                ));
            }
            let uri: Uri = target
                .as_str()
                .parse()
                .map_err(|e| format!("bad URL \"{target}\": {e}"))?;
            let host = uri
                .authority()
                .map(|a| a.as_str().rsplit('@').next().unwrap_or_default().to_owned())
                .unwrap_or_default();
            let mut b = Request::builder()
                .method(method.clone())
                .uri(uri)
                .header(header::HOST, host);
            let body = if method == Method::POST {
                b = b.header(header::CONTENT_TYPE, "application/ocsp-request");
                Full::new(Bytes::copy_from_slice(request))
            } else {
                Full::new(Bytes::new())
            };
            let req = b.body(body).map_err(|e| e.to_string())?;
            let rsp = self
                .client
                .request(req)
                .await
                .map_err(|e| format!("{method} \"{target}\": {}", chain(&e)))?;
            let status = rsp.status();
            let redirect = matches!(
                status,
                StatusCode::MOVED_PERMANENTLY
                    | StatusCode::FOUND
                    | StatusCode::SEE_OTHER
                    | StatusCode::TEMPORARY_REDIRECT
                    | StatusCode::PERMANENT_REDIRECT
            );
            if redirect {
                let Some(next) = rsp
                    .headers()
                    .get(header::LOCATION)
                    .and_then(|l| l.to_str().ok())
                else {
                    return Err(format!("due to status code: {}", status.as_u16()));
                };
                target = target
                    .join(next)
                    .map_err(|e| format!("bad redirect \"{next}\": {e}"))?;
                if !matches!(
                    status,
                    StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
                ) {
                    method = Method::GET;
                }
                continue;
            }
            if !status.is_success() {
                return Err(format!("due to status code: {}", status.as_u16()));
            }
            let body = Limited::new(rsp.into_body(), MAX_ANSWER)
                .collect()
                .await
                .map_err(|e| format!("unable to read the answer: {e}"))?;
            return Ok(body.to_bytes().to_vec());
        }
        Err(format!("stopped after {MAX_REDIRECTS} redirects"))
    }
}

/// An error with its sources, as one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
