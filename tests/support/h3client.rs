//! An HTTP/3 client for the tests (quinn + h3, the crates the runtime serves with): one request
//! on a fresh QUIC connection, the answer's status, fields, body and trailers, or why it failed.
//!
//! ```text
//! let a = bridge_tests::h3client::request(addr, "h3.test", H3Request::get("/x"), insecure_client())?;
//! assert_eq!(a.status, 200);
//! ```

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a panic is a test failure"
)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes};

/// What to send.
#[derive(Debug, Clone)]
pub struct H3Request {
    pub method: http::Method,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
}

impl H3Request {
    /// `GET path` without body.
    pub fn get(path: &str) -> Self {
        Self {
            method: http::Method::GET,
            path: path.to_owned(),
            headers: Vec::new(),
            body: None,
        }
    }

    /// `POST path` with `body`.
    pub fn post(path: &str, body: &[u8]) -> Self {
        Self {
            method: http::Method::POST,
            path: path.to_owned(),
            headers: Vec::new(),
            body: Some(body.to_vec()),
        }
    }

    /// One more request field.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

/// What came back.
#[derive(Debug, Clone)]
pub struct H3Answer {
    pub status: u16,
    /// Interim (1xx) statuses before the final answer, in order.
    pub interims: Vec<u16>,
    pub headers: http::HeaderMap,
    pub body: Vec<u8>,
    pub trailers: Option<http::HeaderMap>,
}

impl H3Answer {
    /// A field's value as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Sends `req` to `addr` over HTTP/3 with SNI and authority `host` (TLS `cfg`, whose ALPN is
/// replaced by `h3`); at most 10 s.
pub fn request(
    addr: SocketAddr,
    host: &str,
    req: H3Request,
    cfg: Arc<rustls::ClientConfig>,
) -> Result<H3Answer, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(10), exchange(addr, host, req, cfg))
            .await
            .map_err(|_| "no answer within 10 s".to_owned())?
    })
}

async fn exchange(
    addr: SocketAddr,
    host: &str,
    req: H3Request,
    cfg: Arc<rustls::ClientConfig>,
) -> Result<H3Answer, String> {
    let mut tls = (*cfg).clone();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let quic = quinn::crypto::rustls::QuicClientConfig::try_from(tls).map_err(|e| e.to_string())?;
    let local: SocketAddr = if addr.is_ipv4() {
        "127.0.0.1:0".parse().unwrap()
    } else {
        "[::1]:0".parse().unwrap()
    };
    let mut endpoint = quinn::Endpoint::client(local).map_err(|e| e.to_string())?;
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(quic)));
    let conn = endpoint
        .connect(addr, host)
        .map_err(|e| e.to_string())?
        .await
        .map_err(|e| format!("QUIC handshake: {e}"))?;
    let (mut driver, mut send) = h3::client::new(h3_quinn::Connection::new(conn))
        .await
        .map_err(|e| format!("HTTP/3 setup: {e}"))?;
    let drive = tokio::spawn(async move {
        let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
    });
    let mut builder = http::Request::builder()
        .method(req.method.clone())
        .uri(format!("https://{host}{}", req.path));
    for (n, v) in &req.headers {
        builder = builder.header(n.as_str(), v.as_str());
    }
    let head = builder.body(()).map_err(|e| e.to_string())?;
    let mut stream = send
        .send_request(head)
        .await
        .map_err(|e| format!("request: {e}"))?;
    if let Some(body) = req.body {
        stream
            .send_data(Bytes::from(body))
            .await
            .map_err(|e| format!("request body: {e}"))?;
    }
    stream.finish().await.map_err(|e| format!("finish: {e}"))?;
    let mut interims = Vec::new();
    let resp = loop {
        let resp = stream
            .recv_response()
            .await
            .map_err(|e| format!("response: {e}"))?;
        if resp.status().is_informational() {
            interims.push(resp.status().as_u16());
            continue;
        }
        break resp;
    };
    let mut body = Vec::new();
    while let Some(mut chunk) = stream
        .recv_data()
        .await
        .map_err(|e| format!("response body: {e}"))?
    {
        let n = chunk.remaining();
        body.extend_from_slice(&chunk.copy_to_bytes(n));
    }
    let trailers = stream
        .recv_trailers()
        .await
        .map_err(|e| format!("trailers: {e}"))?;
    drop(stream);
    drop(send);
    drive.abort();
    endpoint.close(0u32.into(), b"done");
    Ok(H3Answer {
        status: resp.status().as_u16(),
        interims,
        headers: resp.headers().clone(),
        body,
        trailers,
    })
}
