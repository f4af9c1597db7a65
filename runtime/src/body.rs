//! The body types every layer agrees on, and the proxy's canned answers.
//!
//! At the bottom of the module graph so the codecs (`http1`) and the proxy share one `Body`
//! without importing each other. The wrappers that change how a body is read (deadlines,
//! observation, mirroring, pooled connections) live with their concern and all produce these.

use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::combinators::{BoxBody, UnsyncBoxBody};
use http_body_util::{BodyExt, Empty, Full};

/// The error every boxed body carries.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Response body type for everything the proxy answers.
pub(crate) type Body = BoxBody<Bytes, BoxError>;

/// Request body type sent upstream: the client's streamed body, or empty for a retry.
pub(crate) type ReqBody = UnsyncBoxBody<Bytes, BoxError>;

/// A complete response body.
pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never: Infallible| match never {})
        .boxed()
}

/// A complete request body (mirrored copies).
pub(crate) fn full_request(bytes: Bytes) -> ReqBody {
    Full::new(bytes)
        .map_err(|never: Infallible| match never {})
        .boxed_unsync()
}

/// An empty request body (the attempts after the first, which the client body already left).
pub(crate) fn empty_request() -> ReqBody {
    Empty::new()
        .map_err(|never: Infallible| match never {})
        .boxed_unsync()
}

/// An answer the proxy makes itself, with its `Content-Length` (as Go's server sends a small
/// handler answer; `compress` also tells the proxy's own answers, written at once, from a server's
/// answer without length, which Traefik's proxy flushes chunk by chunk).
pub(crate) fn answer(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let body = body.into();
    let len = HeaderValue::from(body.len());
    let mut r = Response::new(full(body));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_LENGTH, len);
    r
}

/// Go's `http.StatusText`: what Traefik writes as the body of a status it answers itself (its
/// wording differs from the `http` crate's in places, e.g. 413 and 416); empty for a code Go
/// has no text for.
pub(crate) fn go_status_text(status: StatusCode) -> &'static str {
    match status.as_u16() {
        100 => "Continue",
        101 => "Switching Protocols",
        102 => "Processing",
        103 => "Early Hints",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        207 => "Multi-Status",
        208 => "Already Reported",
        226 => "IM Used",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        305 => "Use Proxy",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Request Entity Too Large",
        414 => "Request URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Requested Range Not Satisfiable",
        417 => "Expectation Failed",
        418 => "I'm a teapot",
        421 => "Misdirected Request",
        422 => "Unprocessable Entity",
        423 => "Locked",
        424 => "Failed Dependency",
        425 => "Too Early",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        451 => "Unavailable For Legal Reasons",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        506 => "Variant Also Negotiates",
        507 => "Insufficient Storage",
        508 => "Loop Detected",
        510 => "Not Extended",
        511 => "Network Authentication Required",
        _ => "",
    }
}

/// A canned plain-text answer of the proxy itself (`404 page not found\n`, `no available
/// server\n`…), worded as Traefik words it and with the fields Go's `http.Error` sets.
pub(crate) fn text(status: StatusCode, body: &'static str) -> Response<Body> {
    let mut r = answer(status, Bytes::from_static(body.as_bytes()));
    let fields = r.headers_mut();
    fields.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    fields.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

/// A plain-text answer with a body made at run time (an ACME HTTP-01 key authorization).
pub(crate) fn text_owned(status: StatusCode, body: String) -> Response<Body> {
    let mut r = answer(status, Bytes::from(body));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// Traefik's answer when no router matches.
pub(crate) fn not_found() -> Response<Body> {
    text(StatusCode::NOT_FOUND, "404 page not found\n")
}

/// Traefik's answer when the server could not be reached or answered nonsense (its proxy writes
/// the status text without a newline or `Content-Type`, unlike `http.Error`).
pub(crate) fn bad_gateway() -> Response<Body> {
    bare(StatusCode::BAD_GATEWAY, "Bad Gateway")
}

/// Traefik's answer when the server did not answer in time.
pub(crate) fn gateway_timeout() -> Response<Body> {
    bare(StatusCode::GATEWAY_TIMEOUT, "Gateway Timeout")
}

/// The status text alone, without `Content-Type` (Traefik's proxy errors have none).
fn bare(status: StatusCode, body: &'static str) -> Response<Body> {
    answer(status, Bytes::from_static(body.as_bytes()))
}

/// A body that keeps `keep` alive until it is dropped — after its last frame was sent, or when
/// the client went away (an inFlightReq slot held for the whole answer).
#[derive(Debug)]
pub(crate) struct Held<T> {
    body: Body,
    _keep: T,
}

impl<T: Send + Sync + Unpin + 'static> Held<T> {
    /// `body`, holding `keep`.
    pub(crate) fn wrap(body: Body, keep: T) -> Body {
        Self { body, _keep: keep }.boxed()
    }
}

impl<T: Unpin> hyper::body::Body for Held<T> {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, BoxError>>> {
        std::pin::Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}
