//! The proxy's own HTTP/1.1 server loop, for plain keep-alive requests on any connection.
//!
//! Every accepted connection (plain or TLS) starts here. Requests without a body, upgrade or
//! `Expect` are parsed (httparse), answered and written by this loop in the connection's task;
//! hyper's server spends more per request on its dispatcher, its body channel and its timer than
//! the proxy's whole request path. At the first request this loop does not take — a body,
//! WebSocket, HTTP/1.0, HTTP/2 (prior knowledge or ALPN `h2`), a head it cannot parse or one over
//! the size limit — the connection is handed to hyper together with the bytes already read, and
//! hyper serves the rest of it with its own answers (400, 431, …). Between requests the state is
//! clean, so the hand-over is exact.
//!
//! Semantics kept from hyper's server: one bound from the end of a response (or the accept) to
//! the end of the next request head (slowloris and keep-alive idle time alike), lower-case header
//! names, a `date` header, `content-length` from a known body size else chunked encoding, no body
//! after HEAD, 1xx, 204 and 304, and a connection closed after `Connection: close` or a body that
//! failed or did not match its announced length.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode, Uri, Version};
use hyper::body::{Body as _, Frame, Incoming, SizeHint};
use std::io::Write as _;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

use crate::http1::client::put_field;

/// Most header fields in a request this loop takes (hyper's default; more goes to hyper).
const MAX_HEADERS: usize = 100;
/// Bodies up to this size are copied behind the head and written with it in one call.
const COALESCE: usize = 16 * 1024;

/// A request body: hyper's, none (the requests this loop takes have no body), or one a
/// middleware read whole.
#[derive(Debug)]
pub enum RequestBody {
    /// Streamed by hyper.
    Hyper(Incoming),
    /// No body.
    Empty,
    /// A body a middleware read whole (`forwardAuth`'s `forwardBody`), sent on once.
    Buffered(Option<Bytes>),
    /// A body `buffering` stored partly in a temporary file, read back for one attempt.
    /// Boxed: it would make every request's body, moved with the request, larger.
    Stored(Box<crate::middleware::buffering::store::Reader>),
    /// A body a middleware translates as it streams (`grpcWeb`'s base64 text requests).
    Translated(crate::body::Body),
    /// Streamed by the HTTP/2 server ([`crate::http2::server`]).
    H2(crate::http2::stream::H2Body),
    /// Streamed by the HTTP/3 server ([`crate::http3`]). Boxed: its stream state is large.
    H3(Box<crate::http3::H3Body>),
    /// Read off the connection by this loop ([`crate::http1::request_body`]).
    Own(crate::http1::request_body::OwnBody),
}

impl hyper::body::Body for RequestBody {
    type Data = Bytes;
    type Error = crate::body::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match self.get_mut() {
            // hyper's error boxed only when there is one.
            Self::Hyper(b) => Pin::new(b).poll_frame(cx).map_err(Into::into),
            Self::Empty => Poll::Ready(None),
            Self::Buffered(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Self::Stored(r) => Pin::new(&mut **r).poll_frame(cx).map_err(Into::into),
            Self::Translated(b) => Pin::new(b).poll_frame(cx),
            Self::H2(b) => Pin::new(b).poll_frame(cx).map_err(Into::into),
            Self::H3(b) => Pin::new(&mut **b).poll_frame(cx),
            Self::Own(b) => Pin::new(b).poll_frame(cx).map_err(Into::into),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Self::Hyper(b) => b.is_end_stream(),
            Self::Empty => true,
            Self::Buffered(b) => b.is_none(),
            Self::Stored(r) => r.is_end_stream(),
            Self::Translated(b) => b.is_end_stream(),
            Self::H2(b) => b.is_end_stream(),
            Self::H3(b) => b.is_end_stream(),
            Self::Own(b) => b.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Self::Hyper(b) => b.size_hint(),
            Self::Empty => SizeHint::with_exact(0),
            Self::Buffered(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            Self::Stored(r) => r.size_hint(),
            Self::Translated(b) => b.size_hint(),
            Self::H2(b) => b.size_hint(),
            Self::H3(b) => b.size_hint(),
            Self::Own(b) => b.size_hint(),
        }
    }
}

/// Limits of the loop, from the entry point.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// From the end of a response (or the accept) to the end of the next request head.
    pub header_read: Duration,
    /// Largest request head this loop reads; a larger one goes to hyper (which answers 431).
    pub max_header: usize,
    /// The entry point's `readTimeout`, from the end of a request head: what is left of a body
    /// the answer did not read is read and dropped until then at most.
    pub read_body: Option<Duration>,
    /// `keepAliveMaxRequests` (`0`: none) and `keepAliveMaxTime` of the entry point.
    pub max_requests: u64,
    pub max_age: Option<Duration>,
}

/// Traefik's `keepAliveMaxRequests` and `keepAliveMaxTime` for one connection, across the own
/// loop, hyper and the HTTP/2 server: the answer to the request that reaches either limit says
/// `Connection: close` (HTTP/2: a GOAWAY follows its stream).
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeepAlive {
    served: u64,
    started: tokio::time::Instant,
    max_requests: u64,
    max_age: Option<Duration>,
}

impl KeepAlive {
    /// A connection accepted now; `0` requests and no age mean no limit.
    pub(crate) fn new(max_requests: u64, max_age: Option<Duration>) -> Self {
        Self {
            served: 0,
            started: tokio::time::Instant::now(),
            max_requests,
            max_age,
        }
    }

    /// Counts a request; true when the connection must close after its answer.
    pub(crate) fn last(&mut self) -> bool {
        self.served += 1;
        (self.max_requests > 0 && self.served >= self.max_requests)
            || self
                .max_age
                .is_some_and(|age| self.started.elapsed() >= age)
    }

    /// When the connection reaches its age limit, if it has one.
    pub(crate) fn deadline(&self) -> Option<tokio::time::Instant> {
        self.max_age.map(|age| self.started + age)
    }
}

/// How the loop ended.
#[derive(Debug)]
pub(crate) enum Outcome<I> {
    /// The connection is finished (closed by either side, timed out, or shut down).
    Done,
    /// hyper must serve the rest of the connection, starting with the bytes already read.
    HandOver(Rewind<I>),
}

/// Serves requests on `io` until the connection ends or needs hyper. `answer` answers one
/// request; `stop` resolving means shut down: the response in progress is finished, then the
/// connection is closed.
pub(crate) async fn serve<I, A, F>(
    mut io: I,
    limits: Limits,
    stop: &mut tokio::sync::watch::Receiver<()>,
    inbox: &crate::interim::Inbox,
    keep_alive: &mut KeepAlive,
    mut answer: A,
) -> Outcome<I>
where
    I: AsyncRead + AsyncWrite + Unpin,
    A: FnMut(Request<RequestBody>) -> F,
    F: Future<Output = Response<crate::body::Body>>,
{
    let mut buf = BytesMut::with_capacity(4096);
    let mut out = Vec::with_capacity(1024);
    let mut fields = Vec::with_capacity(16);
    let deadline = tokio::time::sleep(limits.header_read);
    tokio::pin!(deadline);
    loop {
        deadline
            .as_mut()
            .reset(tokio::time::Instant::now() + limits.header_read);
        // Bytes of an incomplete head already known to hold no end of head: parsing starts
        // over from the first byte each time, so without this a head sent in small pieces
        // costs time quadratic in its size (1 MiB in 1 KiB pieces: half a gigabyte scanned).
        let mut scanned = 0;
        let (req, close, mut body) = loop {
            if !buf.is_empty() && (scanned == 0 || head_may_end(&buf, scanned)) {
                match take(&mut buf, &mut fields, limits.max_header) {
                    Taken::Request(req, close, body) => break (req, close, body),
                    Taken::Partial if buf.len() < limits.max_header => scanned = buf.len(),
                    Taken::Partial => {
                        let _ = too_large(&mut io).await;
                        return Outcome::Done;
                    }
                    Taken::Other => {
                        return Outcome::HandOver(Rewind::new(buf.freeze(), io));
                    }
                    Taken::Fragment => {
                        let _ = fragment(&mut io).await;
                        return Outcome::Done;
                    }
                    Taken::Refused(head) => {
                        // Valid for httparse but not for `http` (a name, value or target it
                        // refuses): hyper answers it.
                        let mut rest = BytesMut::from(&head[..]);
                        rest.extend_from_slice(&buf);
                        return Outcome::HandOver(Rewind::new(rest.freeze(), io));
                    }
                }
            }
            if scanned >= limits.max_header {
                let _ = too_large(&mut io).await;
                return Outcome::Done;
            }
            if scanned > 0 {
                scanned = buf.len();
            }
            buf.reserve(4096);
            tokio::select! {
                biased;
                read = io.read_buf(&mut buf) => match read {
                    Ok(0) | Err(_) => return Outcome::Done,
                    Ok(_) => {}
                },
                () = &mut deadline => return Outcome::Done,
                _ = stop.changed(), if buf.is_empty() => return Outcome::Done,
            }
        };
        let head_request = req.method() == Method::HEAD;
        let close = close || keep_alive.last();
        // Only a body's drain needs the time (a clock read per request otherwise).
        let head_at = body.as_ref().map(|_| tokio::time::Instant::now());
        out.clear();
        // Interim responses still to be written are left in `out`, ahead of the head.
        let answering = answer(req);
        let relayed = relaying(answering, inbox, &mut io, &mut out, &mut buf, body.as_mut());
        let Some(resp) = relayed.await else {
            return Outcome::Done;
        };
        // A body that broke, or one the client still waits to send (no 100 Continue went out):
        // the answer says the connection closes (RFC 9110 §10.1.1, as Go's server says it).
        let close = close || body.as_ref().is_some_and(|b| !b.reusable());
        let mut keep = match write_response(&mut io, &mut out, resp, head_request, close).await {
            Ok(keep) => keep && !close,
            Err(_) => false,
        };
        if let Some(mut body) = body.take() {
            // An answer that left the body unread: the rest is read and dropped (bounded), so
            // the next request starts where this body ends; else the connection closes.
            let mut until = tokio::time::Instant::now() + limits.header_read;
            if let (Some(read), Some(at)) = (limits.read_body, head_at) {
                until = until.min(at + read);
            }
            keep = keep
                && (body.is_done()
                    // Boxed: rare, and its timer would enlarge every connection's task.
                    || Box::pin(tokio::time::timeout_at(
                        until,
                        body.drain(&mut io, &mut buf, DRAIN_LIMIT),
                    ))
                    .await
                    .unwrap_or(false));
        }
        if !keep || stop.has_changed().unwrap_or(true) {
            let _ = io.shutdown().await;
            return Outcome::Done;
        }
    }
}

/// Most bytes of an unread request body read and dropped after the answer to keep the
/// connection (Go's server reads 256 KiB).
const DRAIN_LIMIT: usize = 256 * 1024;

/// What happened while a request was answered.
enum Answering {
    /// The answer.
    Done(Response<crate::body::Body>),
    /// An interim response to write now.
    Interim(crate::http1::client::Interim),
    /// The body is wanted and the client waits for `100 Continue` before sending it.
    Continue,
}

/// The answer to a request. Meanwhile the interim responses its exchanges relay are written as
/// they come (RFC 9110 §15.2; a second `100 Continue` is left out), and its body, if any, is
/// read off the connection as it is wanted. `None` when the client can no longer be written to.
async fn relaying<I, F>(
    answer: F,
    inbox: &crate::interim::Inbox,
    io: &mut I,
    out: &mut Vec<u8>,
    buf: &mut BytesMut,
    mut body: Option<&mut crate::http1::request_body::Reader>,
) -> Option<Response<crate::body::Body>>
where
    I: AsyncRead + AsyncWrite + Unpin,
    F: Future<Output = Response<crate::body::Body>>,
{
    let mut answer = std::pin::pin!(answer);
    let mut continued = false;
    let mut registered = false;
    loop {
        // The answer first: one that is ready at once (most are) looks at nothing else.
        let next = std::future::poll_fn(|cx| {
            if let Poll::Ready(resp) = answer.as_mut().poll(cx) {
                return Poll::Ready(Answering::Done(resp));
            }
            if let Poll::Ready(interim) = inbox.poll_next(cx, &mut registered) {
                return Poll::Ready(Answering::Interim(interim));
            }
            match body.as_deref_mut() {
                Some(b) => b.poll_pump(cx, io, buf).map(|_| Answering::Continue),
                None => Poll::Pending,
            }
        })
        .await;
        out.clear();
        match next {
            Answering::Done(resp) => {
                // Relayed before the final head was parsed, not yet written.
                while let Some(interim) = inbox.try_next() {
                    if !(continued && interim.status == StatusCode::CONTINUE) {
                        continued |= interim.status == StatusCode::CONTINUE;
                        encode_interim(out, &interim);
                    }
                }
                inbox.next_request();
                return Some(resp);
            }
            Answering::Interim(interim) => {
                if continued && interim.status == StatusCode::CONTINUE {
                    continue;
                }
                continued |= interim.status == StatusCode::CONTINUE;
                encode_interim(out, &interim);
            }
            Answering::Continue => {
                if let Some(b) = body.as_deref_mut() {
                    b.continued();
                }
                if !continued {
                    continued = true;
                    out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
                }
            }
        }
        if write_interim(io, out).await.is_err() {
            inbox.next_request();
            return None;
        }
        out.clear();
    }
}

/// Writes and flushes the interim response in `out`.
async fn write_interim<I: AsyncWrite + Unpin>(io: &mut I, out: &[u8]) -> std::io::Result<()> {
    io.write_all(out).await?;
    io.flush().await
}

/// Appends an interim response: status line, its end-to-end fields, the empty line.
fn encode_interim(out: &mut Vec<u8>, interim: &crate::http1::client::Interim) {
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(interim.status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(interim.status.canonical_reason().unwrap_or("").as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in &interim.headers {
        put_field(out, name.as_str().as_bytes(), value.as_bytes());
    }
    out.extend_from_slice(b"\r\n");
}

/// True when the bytes after the first `scanned` of `buf` (and the two before them, which may
/// have begun the end) end a head: a line feed followed by an empty line (CRLF or, as httparse
/// also accepts, a bare LF).
fn head_may_end(buf: &[u8], scanned: usize) -> bool {
    let from = scanned.saturating_sub(2);
    buf[from..].iter().enumerate().any(|(i, &b)| {
        b == b'\n'
            && match buf.get(from + i + 1) {
                Some(b'\n') => true,
                Some(b'\r') => buf.get(from + i + 2) == Some(&b'\n'),
                // Undecided until more bytes come; `scanned` keeps the last two in view.
                None | Some(_) => false,
            }
    })
}

/// Answers a head over the size limit with 431 and closes, as hyper does (counted).
async fn too_large<I: AsyncWrite + Unpin>(io: &mut I) -> std::io::Result<()> {
    crate::proxy::strict::count_head_too_large();
    io.write_all(
        b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
    )
    .await?;
    io.shutdown().await
}

/// Traefik's answer to a raw `#` in the path (400, empty); the connection closes, as the rest
/// of the buffer cannot be trusted to start a request.
async fn fragment<I: AsyncWrite + Unpin>(io: &mut I) -> std::io::Result<()> {
    io.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        .await?;
    io.shutdown().await
}

/// What [`take`] made of the buffered bytes.
#[allow(
    clippy::large_enum_variant,
    reason = "returned once per request and taken apart at once; a box would cost an allocation"
)]
enum Taken {
    /// A request this loop answers (its head is gone from the buffer), whether the client
    /// asked to close the connection after it, and the loop's reader of its body if it has one.
    Request(
        Request<RequestBody>,
        bool,
        Option<crate::http1::request_body::Reader>,
    ),
    /// The head is not complete yet.
    Partial,
    /// Not for this loop: hyper decides (the buffer is untouched).
    Other,
    /// A complete head `http` refuses, taken off the buffer: hyper answers it.
    Refused(Bytes),
    /// A raw `#` in the path: refused as Traefik refuses it (`denyFragment`), where `http`
    /// would drop the rest of the path without a word.
    Fragment,
}

/// Takes the next request head off `buf` if this loop serves it; `spans` is the connection's
/// list for the fields' offsets. Synchronous, so the parser's slots live on the stack, not in
/// the connection's future.
fn take(
    buf: &mut BytesMut,
    spans: &mut Vec<crate::http1::client::Field>,
    max_header: usize,
) -> Taken {
    // Uninitialised slots: zeroing 100 of them (3 KiB) per request showed in profiles.
    let mut slots =
        [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let len = match req.parse_with_uninit_headers(buf, &mut slots) {
        Ok(httparse::Status::Complete(n)) if n <= max_header => n,
        Ok(httparse::Status::Partial) => return Taken::Partial,
        _ => return Taken::Other,
    };
    if req.version != Some(1) {
        return Taken::Other;
    }
    let Some(method) = req
        .method
        .and_then(|m| Method::from_bytes(m.as_bytes()).ok())
    else {
        return Taken::Other;
    };
    if method == Method::CONNECT {
        return Taken::Other;
    }
    let Some(path) = req.path else {
        return Taken::Other;
    };
    let start = path.as_ptr() as usize - buf.as_ptr() as usize;
    let target = (start, start + path.len());
    crate::http1::client::field_spans(buf, req.headers, spans);
    let fields = &spans[..];
    let mut close = false;
    // The body's framing (RFC 9112 §6.3): one `Content-Length`, or one `Transfer-Encoding:
    // chunked` without a length. Anything else — both, repeats, other codings, a bad length —
    // goes to hyper, where the proxy's request checks refuse or settle it.
    let (mut length, mut chunked, mut expect) = (None, false, false);
    for f in fields {
        let (name, value) = (f.name(buf), f.value(buf));
        if name.eq_ignore_ascii_case(b"upgrade") {
            return Taken::Other;
        }
        if name.eq_ignore_ascii_case(b"transfer-encoding") {
            if chunked || !value.eq_ignore_ascii_case(b"chunked") {
                return Taken::Other;
            }
            chunked = true;
        } else if name.eq_ignore_ascii_case(b"content-length") {
            match (length, crate::http1::client::parse_decimal(value)) {
                (None, Some(n)) => length = Some(n),
                _ => return Taken::Other,
            }
        } else if name.eq_ignore_ascii_case(b"expect") {
            // The one expectation there is (RFC 9110 §10.1.1); others are hyper's to refuse.
            if expect || !value.eq_ignore_ascii_case(b"100-continue") {
                return Taken::Other;
            }
            expect = true;
        } else if name.eq_ignore_ascii_case(b"connection") {
            if crate::http1::client::value_has_token(value, b"upgrade") {
                return Taken::Other;
            }
            close |= crate::http1::client::value_has_token(value, b"close");
        }
    }
    let framing = match (chunked, length) {
        (true, None) => crate::http1::client::Framing::Chunked,
        (true, Some(_)) => return Taken::Other,
        (false, Some(n)) if n > 0 => crate::http1::client::Framing::Length(n),
        (false, _) => crate::http1::client::Framing::Empty,
    };
    let head = buf.split_to(len).freeze();
    match request(&head, method, target, fields) {
        Ok(mut req) => {
            let body = (framing != crate::http1::client::Framing::Empty).then(|| {
                let (body, reader) = crate::http1::request_body::channel(framing, expect);
                *req.body_mut() = RequestBody::Own(body);
                reader
            });
            Taken::Request(req, close, body)
        }
        Err(NotTaken::Fragment) => Taken::Fragment,
        Err(NotTaken::Refused) => Taken::Refused(head),
    }
}

/// Why [`request`] gave no request.
enum NotTaken {
    /// `http` refuses a part: hyper answers.
    Refused,
    /// A raw `#` in the path.
    Fragment,
}

/// The request, its fields sharing the head's bytes.
fn request(
    head: &Bytes,
    method: Method,
    target: (usize, usize),
    fields: &[crate::http1::client::Field],
) -> Result<Request<RequestBody>, NotTaken> {
    let uri =
        Uri::from_maybe_shared(head.slice(target.0..target.1)).map_err(|_| NotTaken::Refused)?;
    let raw = &head[target.0..target.1];
    // `http` drops a fragment without a word: the origin-form target is then longer than what
    // it kept (an absolute-form one always is, and is searched).
    if uri.path_and_query().map_or(0, |p| p.as_str().len()) != raw.len()
        && raw.iter().take_while(|&&b| b != b'?').any(|&b| b == b'#')
    {
        return Err(NotTaken::Fragment);
    }
    // No room kept for the forwarding fields: requests to `http://` servers get them written
    // apart, without touching the map.
    let headers = crate::http1::client::header_map(head, fields, 0).ok_or(NotTaken::Refused)?;
    let mut req = Request::new(RequestBody::Empty);
    *req.method_mut() = method;
    *req.uri_mut() = uri;
    *req.version_mut() = Version::HTTP_11;
    *req.headers_mut() = headers;
    Ok(req)
}

/// The `date` value for now, made once per second per thread.
pub(crate) fn date_value() -> HeaderValue {
    thread_local! {
        static CACHE: std::cell::RefCell<(u64, HeaderValue)> =
            const { std::cell::RefCell::new((u64::MAX, HeaderValue::from_static(""))) };
    }
    let now = std::time::SystemTime::now();
    let secs = now
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.0 != secs {
            let text = httpdate::fmt_http_date(now);
            c.1 = HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static(""));
            c.0 = secs;
        }
        c.1.clone()
    })
}

/// Writes `resp`; `Ok(true)` when the connection can carry another request.
async fn write_response<I>(
    io: &mut I,
    out: &mut Vec<u8>,
    resp: Response<crate::body::Body>,
    head_request: bool,
    close: bool,
) -> std::io::Result<bool>
where
    I: AsyncWrite + Unpin,
{
    let (parts, body) = resp.into_parts();
    let status = parts.status;
    let bodyless = head_request
        || status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED;
    let (keep, mut length) = encode_head(out, &parts, close);
    if bodyless {
        out.extend_from_slice(b"\r\n");
        drop(body);
        io.write_all(out).await?;
        io.flush().await?;
        return Ok(keep);
    }
    if length.is_none()
        && let Some(n) = body.size_hint().exact()
    {
        length = Some(n);
        // Written in place: no string per response.
        let _ = write!(out, "content-length: {n}\r\n");
    }
    if length.is_none() {
        put_field(out, b"transfer-encoding", b"chunked");
    }
    out.extend_from_slice(b"\r\n");
    write_body(io, out, body, length, keep).await
}

/// The status line and the fields of a response, appended to `out` (which may hold interim
/// responses already), without the empty line that ends the head: hop-by-hop framing fields left out, one `Content-Length` at most, `Date`
/// added when missing, `Connection: close` when the client asked to close. Returns whether the
/// connection may be kept and the announced length.
fn encode_head(
    out: &mut Vec<u8>,
    parts: &http::response::Parts,
    close: bool,
) -> (bool, Option<u64>) {
    let status = parts.status;
    let mut keep = true;
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(status.canonical_reason().unwrap_or("").as_bytes());
    out.extend_from_slice(b"\r\n");
    let mut length: Option<u64> = None;
    let mut has_date = false;
    for (name, value) in &parts.headers {
        if name == header::TRANSFER_ENCODING {
            continue;
        }
        if name == header::CONTENT_LENGTH {
            if status == StatusCode::NO_CONTENT {
                continue;
            }
            match crate::http1::client::parse_decimal(value.as_bytes()) {
                Some(n) if length.is_none() => length = Some(n),
                // A second or unreadable length: send neither, frame the body by itself.
                _ => continue,
            }
        }
        if name == header::DATE {
            has_date = true;
        }
        if name == header::CONNECTION
            && crate::http1::client::value_has_token(value.as_bytes(), b"close")
        {
            keep = false;
        }
        put_field(out, name.as_str().as_bytes(), value.as_bytes());
    }
    if !has_date {
        put_field(out, b"date", date_value().as_bytes());
    }
    // The client asked to close: say so, or it would take the close for a failure.
    if close && keep {
        put_field(out, b"connection", b"close");
        keep = false;
    }
    (keep, length)
}

/// The body of a response whose head is in `out`: the head goes out with the first piece of
/// the body when that is ready now (a complete small response is one write), chunked when no
/// length was announced, cut (and the connection closed) past the announced length.
async fn write_body<I>(
    io: &mut I,
    out: &mut Vec<u8>,
    mut body: crate::body::Body,
    length: Option<u64>,
    mut keep: bool,
) -> std::io::Result<bool>
where
    I: AsyncWrite + Unpin,
{
    let chunked = length.is_none();
    let mut left = length.unwrap_or(0);
    // The head goes out with the first piece of the body when that is ready now (a complete
    // small response is one write); a body still on its way gets its head sent first.
    let mut head_sent = false;
    let mut cut = false;
    loop {
        let frame = if head_sent {
            std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await
        } else {
            match std::future::poll_fn(|cx| match Pin::new(&mut body).poll_frame(cx) {
                Poll::Ready(f) => Poll::Ready(Some(f)),
                Poll::Pending => Poll::Ready(None),
            })
            .await
            {
                Some(f) => f,
                None => {
                    io.write_all(out).await?;
                    io.flush().await?;
                    out.clear();
                    head_sent = true;
                    continue;
                }
            }
        };
        let data = match frame {
            None => break,
            Some(Err(_)) => {
                // The client must not take a cut body for a whole one.
                if !out.is_empty() {
                    io.write_all(out).await?;
                }
                return Ok(false);
            }
            Some(Ok(f)) => match f.into_data() {
                Ok(d) => d,
                Err(_) => continue,
            },
        };
        if data.is_empty() {
            continue;
        }
        let mut data = data;
        if !chunked {
            if data.len() as u64 > left {
                data.truncate(usize::try_from(left).unwrap_or(usize::MAX));
                cut = true;
            }
            left -= data.len() as u64;
        }
        if data.len() <= COALESCE {
            if chunked {
                let _ = write!(out, "{:x}\r\n", data.len());
                out.extend_from_slice(&data);
                out.extend_from_slice(b"\r\n");
            } else {
                out.extend_from_slice(&data);
            }
            if body.is_end_stream() {
                continue;
            }
            io.write_all(out).await?;
        } else {
            if !out.is_empty() {
                io.write_all(out).await?;
            }
            if chunked {
                let mut all = Bytes::from(format!("{:x}\r\n", data.len()))
                    .chain(data)
                    .chain(&b"\r\n"[..]);
                io.write_all_buf(&mut all).await?;
            } else {
                io.write_all(&data).await?;
            }
        }
        io.flush().await?;
        out.clear();
        head_sent = true;
        if cut {
            // More than the announced length: the rest is dropped with the connection.
            return Ok(false);
        }
    }
    if chunked {
        out.extend_from_slice(b"0\r\n\r\n");
    } else if left > 0 {
        keep = false;
    }
    if !out.is_empty() {
        io.write_all(out).await?;
        io.flush().await?;
    }
    Ok(keep)
}

/// Fuzzing entry point (`fuzz/`): `data` as the bytes of a client connection. Heads are taken
/// off the buffer as the loop takes them (pipelined ones in turn) and each request the loop
/// would answer goes through the proxy's request checks; nothing may panic.
#[doc(hidden)]
pub(crate) fn fuzz_request_heads(data: &[u8]) {
    let mut buf = BytesMut::from(data);
    let mut spans = Vec::new();
    while !buf.is_empty() {
        match take(&mut buf, &mut spans, 64 * 1024) {
            Taken::Request(mut req, _, body) => {
                if crate::proxy::strict::check_request(&mut req).is_ok() {
                    fuzz_entry_path(req.uri().path());
                }
                // The body is taken off as the loop reads it; the next request starts after it.
                if let Some(body) = body
                    && !crate::http1::request_body::fuzz_take(body.framing(), &mut buf)
                {
                    return;
                }
            }
            Taken::Partial | Taken::Other | Taken::Refused(_) | Taken::Fragment => return,
        }
    }
}

/// The entry point's path treatment of an accepted path: it never panics, a path it rewrites is
/// one the `http` crate takes (one it leaves alone stays as `http` parsed it, e.g. the empty path
/// of an authority-form target), and treating its output again changes nothing.
fn fuzz_entry_path(path: &str) {
    for sanitize in [true, false] {
        if let Ok(once) = crate::proxy::request_path::entry_path(path, sanitize) {
            assert!(
                matches!(once, std::borrow::Cow::Borrowed(_))
                    || once.parse::<http::uri::PathAndQuery>().is_ok(),
                "{path:?} -> {once:?} is not a path"
            );
            let twice = crate::proxy::request_path::entry_path(&once, sanitize);
            assert_eq!(twice.as_deref(), Ok(&*once), "{path:?} is not stable");
        }
    }
}

/// A connection whose first bytes were already read: they are read again first.
#[derive(Debug)]
pub(crate) struct Rewind<I> {
    pre: Bytes,
    io: I,
}

impl<I> Rewind<I> {
    /// `io`, with `pre` read from it already.
    pub(crate) fn new(pre: Bytes, io: I) -> Self {
        // An empty view may still hold a whole read buffer (hyper's, for an upgraded
        // connection): it is let go at once.
        let pre = if pre.is_empty() { Bytes::new() } else { pre };
        Self { pre, io }
    }

    /// The bytes read before the hand-over, still to be read again.
    pub(crate) fn prefix(&self) -> &[u8] {
        &self.pre
    }

    /// The connection under the bytes read before.
    pub(crate) fn inner_mut(&mut self) -> &mut I {
        &mut self.io
    }

    /// The bytes not read again yet, and the connection.
    pub(crate) fn into_parts(self) -> (Bytes, I) {
        (self.pre, self.io)
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Rewind<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if !self.pre.is_empty() {
            let n = self.pre.len().min(buf.remaining());
            buf.put_slice(&self.pre[..n]);
            self.pre.advance(n);
            if self.pre.is_empty() {
                // An empty view still keeps the loop's whole read buffer (4 KiB and more)
                // alive: for an upgraded connection, as long as its tunnel.
                self.pre = Bytes::new();
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Rewind<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

    type Body = crate::body::Body;

    /// The request-heads fuzz target's saved crash inputs, also without the nightly toolchain
    /// the fuzz smoke run needs.
    #[test]
    fn saved_fuzz_crashes_of_the_request_heads_target_pass() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fuzz/regressions/request_head");
        let mut ran = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let data = std::fs::read(entry.unwrap().path()).unwrap();
            fuzz_request_heads(&data);
            ran += 1;
        }
        assert!(ran > 0, "no saved inputs in {}", dir.display());
    }

    fn limits() -> Limits {
        Limits {
            header_read: Duration::from_secs(5),
            max_header: 8192,
            read_body: None,
            max_requests: 0,
            max_age: None,
        }
    }

    fn full(text: &'static str) -> Body {
        http_body_util::Full::new(Bytes::from_static(text.as_bytes()))
            .map_err(|never| match never {})
            .boxed()
    }

    /// A body of unknown length, in two frames.
    struct Chunks(std::collections::VecDeque<&'static str>);

    impl hyper::body::Body for Chunks {
        type Data = Bytes;
        type Error = Box<dyn std::error::Error + Send + Sync>;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            Poll::Ready(
                self.0
                    .pop_front()
                    .map(|p| Ok(Frame::data(Bytes::from_static(p.as_bytes())))),
            )
        }
    }

    fn streamed() -> Body {
        Chunks(["hello, ", "world"].into_iter().collect()).boxed()
    }

    /// Runs the loop on one end of a pipe with an answer echoing method and path; returns the
    /// client end and the loop's task.
    fn start(
        body: fn() -> Body,
        stop: tokio::sync::watch::Receiver<()>,
    ) -> (DuplexStream, tokio::task::JoinHandle<Option<Vec<u8>>>) {
        let (client, server) = tokio::io::duplex(1 << 16);
        let task = tokio::spawn(async move {
            let mut stop = stop;
            let inbox = crate::interim::Inbox::new();
            let outcome = serve(
                server,
                limits(),
                &mut stop,
                &inbox,
                &mut KeepAlive::new(0, None),
                move |req: Request<RequestBody>| {
                    let mut resp = Response::new(body());
                    resp.headers_mut().insert(
                        "x-seen",
                        HeaderValue::from_str(&format!("{} {}", req.method(), req.uri())).unwrap(),
                    );
                    async move { resp }
                },
            )
            .await;
            match outcome {
                Outcome::Done => None,
                Outcome::HandOver(mut rest) => {
                    let mut bytes = vec![0u8; 4096];
                    let n = rest.read(&mut bytes).await.unwrap();
                    bytes.truncate(n);
                    Some(bytes)
                }
            }
        });
        (client, task)
    }

    async fn read_all(mut c: DuplexStream) -> String {
        let mut out = Vec::new();
        c.read_to_end(&mut out).await.unwrap();
        String::from_utf8(out).unwrap()
    }

    #[tokio::test]
    async fn pipelined_requests_are_answered_in_order_with_length_and_date() {
        let (_tx, rx) = tokio::sync::watch::channel(());
        let (mut c, task) = start(|| full("ok"), rx);
        c.write_all(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b?q=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let out = read_all(c).await;
        let first = out.find("x-seen: GET /a\r\n").unwrap();
        let second = out.find("x-seen: GET /b?q=1\r\n").unwrap();
        assert!(first < second, "{out}");
        assert_eq!(out.matches("HTTP/1.1 200 OK\r\n").count(), 2, "{out}");
        assert_eq!(out.matches("content-length: 2\r\n").count(), 2, "{out}");
        assert_eq!(out.matches("\r\ndate: ").count(), 2, "{out}");
        assert!(out.ends_with("\r\n\r\nok"), "{out}");
        // `Connection: close` is confirmed in the answer and ends the connection after it.
        assert_eq!(out.matches("connection: close\r\n").count(), 1, "{out}");
        assert!(out.rfind("connection: close").unwrap() > second, "{out}");
        assert!(task.await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_body_of_unknown_length_is_sent_chunked() {
        let (_tx, rx) = tokio::sync::watch::channel(());
        let (mut c, _task) = start(streamed, rx);
        c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let out = read_all(c).await;
        assert!(out.contains("transfer-encoding: chunked\r\n"), "{out}");
        assert!(!out.contains("content-length"), "{out}");
        assert!(
            out.ends_with("\r\n\r\n7\r\nhello, \r\n5\r\nworld\r\n0\r\n\r\n"),
            "{out}"
        );
    }

    #[tokio::test]
    async fn a_head_answer_has_no_body() {
        let (_tx, rx) = tokio::sync::watch::channel(());
        let (mut c, _task) = start(|| full("ok"), rx);
        c.write_all(b"HEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let out = read_all(c).await;
        assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
        assert!(out.ends_with("\r\n\r\n"), "{out}");
    }

    /// Runs the loop with an answer echoing the request body (read whole) as `<method> <body>`.
    fn start_echo() -> (DuplexStream, tokio::task::JoinHandle<()>) {
        let (client, server) = tokio::io::duplex(1 << 16);
        let task = tokio::spawn(async move {
            let (_tx, mut stop) = tokio::sync::watch::channel(());
            let inbox = crate::interim::Inbox::new();
            let _ = serve(
                server,
                limits(),
                &mut stop,
                &inbox,
                &mut KeepAlive::new(0, None),
                |req: Request<RequestBody>| {
                    let method = req.method().clone();
                    async move {
                        let text = match req.into_body().collect().await {
                            Ok(b) => format!("{method} {}", String::from_utf8_lossy(&b.to_bytes())),
                            Err(e) => format!("{method} failed: {e}"),
                        };
                        Response::new(full_owned(text))
                    }
                },
            )
            .await;
        });
        (client, task)
    }

    fn full_owned(text: String) -> Body {
        http_body_util::Full::new(Bytes::from(text))
            .map_err(|never| match never {})
            .boxed()
    }

    /// Reads from `c` until `want` has arrived (or 5 s passed); what arrived.
    async fn read_until(c: &mut DuplexStream, want: &str) -> String {
        let mut got = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            let mut piece = [0u8; 1024];
            while !String::from_utf8_lossy(&got).contains(want) {
                match c.read(&mut piece).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&piece[..n]),
                }
            }
        })
        .await;
        String::from_utf8_lossy(&got).into_owned()
    }

    #[tokio::test]
    async fn a_handed_over_connection_lets_go_of_the_loops_buffer_once_it_is_read() {
        let mut buffer = BytesMut::with_capacity(4096);
        buffer.extend_from_slice(b"GET /ws HTTP/1.1\r\n\r\n");
        let read = buffer.freeze();
        let (_client, server) = tokio::io::duplex(64);
        let mut rewind = Rewind::new(read.clone(), server);
        assert!(!read.is_unique());
        let mut got = [0u8; 8];
        let n = rewind.read(&mut got).await.unwrap();
        assert_eq!(&got[..n], b"GET /ws ");
        assert!(!read.is_unique(), "released before it was read");
        let mut rest = [0u8; 64];
        let _ = rewind.read(&mut rest).await.unwrap();
        // Held by a tunnel for hours otherwise (issue 16's memory per idle tunnel).
        assert!(read.is_unique(), "the read buffer is still held");
        // Nothing left to read again: the buffer behind an empty view is not kept either.
        let mut buffer = BytesMut::with_capacity(8192);
        buffer.extend_from_slice(b"x");
        let mut all = buffer.freeze();
        let empty = all.split_off(1);
        let (_client, server) = tokio::io::duplex(64);
        let kept = Rewind::new(empty, server);
        assert!(kept.prefix().is_empty());
        assert!(all.is_unique(), "an empty prefix keeps the read buffer");
        drop(kept);
    }

    #[tokio::test(start_paused = true)]
    async fn keep_alive_limits_close_after_the_last_request_or_the_age() {
        let mut by_count = KeepAlive::new(2, None);
        assert!(!by_count.last());
        assert!(by_count.last());
        let mut none = KeepAlive::new(0, None);
        assert!((0..1000).all(|_| !none.last()));
        let mut by_age = KeepAlive::new(0, Some(Duration::from_secs(5)));
        assert!(!by_age.last());
        tokio::time::advance(Duration::from_secs(5)).await;
        assert!(by_age.last());
    }

    #[tokio::test]
    async fn bodies_are_read_by_the_loop_and_keep_the_connection() {
        let (mut c, _task) = start_echo();
        // A length, then chunks with an extension and a trailer, then a bodiless request, in
        // one write: each request ends exactly where its framing says.
        c.write_all(
            b"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloPUT /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3;e=1\r\nabc\r\n2\r\nde\r\n0\r\nt: 1\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\n\r\n",
        )
        .await
        .unwrap();
        let out = read_until(&mut c, "GET \r\n").await;
        let bodies: Vec<&str> = out
            .split("\r\n\r\n")
            .skip(1)
            .map(|b| b.split("HTTP/1.1").next().unwrap_or(""))
            .collect();
        assert_eq!(bodies, ["POST hello", "PUT abcde", "GET "], "{out}");
    }

    #[tokio::test]
    async fn expect_100_continue_is_answered_when_the_body_is_wanted() {
        let (mut c, _task) = start_echo();
        c.write_all(
            b"POST /a HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n",
        )
        .await
        .unwrap();
        // The client sends nothing more before the 100.
        let interim = read_until(&mut c, "\r\n\r\n").await;
        assert_eq!(interim, "HTTP/1.1 100 Continue\r\n\r\n");
        c.write_all(b"ok").await.unwrap();
        let out = read_until(&mut c, "POST ok").await;
        assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
    }

    #[tokio::test]
    async fn an_answer_before_the_100_continue_closes_the_connection() {
        let (client, server) = tokio::io::duplex(1 << 16);
        let _task = tokio::spawn(async move {
            let (_tx, mut stop) = tokio::sync::watch::channel(());
            let inbox = crate::interim::Inbox::new();
            let _ = serve(
                server,
                limits(),
                &mut stop,
                &inbox,
                &mut KeepAlive::new(0, None),
                |_req: Request<RequestBody>| {
                    // Refused without looking at the body (an auth failure, say).
                    async { Response::new(full("no")) }
                },
            )
            .await;
        });
        let mut c = client;
        c.write_all(
            b"POST /a HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n",
        )
        .await
        .unwrap();
        let out = read_all(c).await;
        assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
        assert!(!out.contains("100 Continue"), "{out}");
        assert!(
            out.to_ascii_lowercase().contains("connection: close\r\n"),
            "{out}"
        );
    }

    #[tokio::test]
    async fn a_broken_body_fails_the_request_and_closes_the_connection() {
        let (mut c, task) = start_echo();
        c.write_all(
            b"POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
        )
        .await
        .unwrap();
        let out = read_until(&mut c, "failed").await;
        assert!(out.contains("POST failed: invalid request body"), "{out}");
        let rest = read_until(&mut c, "smuggled").await;
        assert!(!rest.contains("GET"), "{rest}");
        assert!(
            tokio::time::timeout(Duration::from_secs(5), task)
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn requests_this_loop_does_not_take_go_to_hyper_with_every_byte() {
        for raw in [
            &b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"[..],
            b"GET / HTTP/1.0\r\n\r\n",
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
            // Framings the loop leaves to hyper and the request checks: both, a coding list,
            // two lengths, another expectation.
            b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n",
            b"POST /x HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
            b"POST /x HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
            b"POST /x HTTP/1.1\r\nContent-Length: +3\r\n\r\nabc",
            b"POST /x HTTP/1.1\r\nExpect: 200-ok\r\nContent-Length: 3\r\n\r\nabc",
        ] {
            let (_tx, rx) = tokio::sync::watch::channel(());
            let (mut c, task) = start(|| full("ok"), rx);
            c.write_all(raw).await.unwrap();
            assert_eq!(
                task.await.unwrap().as_deref(),
                Some(raw),
                "{}",
                String::from_utf8_lossy(raw)
            );
        }
    }

    #[tokio::test]
    async fn an_unfinished_head_larger_than_the_limit_is_answered_431() {
        let (_tx, rx) = tokio::sync::watch::channel(());
        let (mut c, task) = start(|| full("ok"), rx);
        let mut big = b"GET / HTTP/1.1\r\nX-Big: ".to_vec();
        big.resize(9000, b'a');
        // In small pieces: each is scanned once, not parsed again from the start.
        for piece in big.chunks(100) {
            // The loop answers as soon as the limit is passed and closes.
            if c.write_all(piece).await.is_err() {
                break;
            }
            tokio::task::yield_now().await;
        }
        let out = read_all(c).await;
        assert!(out.starts_with("HTTP/1.1 431 "), "{out}");
        assert!(task.await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_head_in_small_pieces_is_taken_when_it_ends() {
        let (_tx, rx) = tokio::sync::watch::channel(());
        let (mut c, _task) = start(|| full("ok"), rx);
        for raw in [
            &b"GET /a HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n\r\n"[..],
            b"GET /b HTTP/1.1\nHost: x\n\n",
        ] {
            for piece in raw.chunks(3) {
                c.write_all(piece).await.unwrap();
                tokio::task::yield_now().await;
            }
            let mut buf = [0u8; 512];
            let n = c.read(&mut buf).await.unwrap();
            let text = String::from_utf8_lossy(&buf[..n]).into_owned();
            assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
        }
    }

    #[test]
    fn the_end_of_a_head_is_found_in_new_bytes_only() {
        let head = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        for split in 1..head.len() {
            // Anything before `split` was scanned already and held no end.
            let ends = head_may_end(head, split);
            assert!(ends, "split {split}");
        }
        assert!(!head_may_end(b"GET / HTTP/1.1\r\nHost: x\r\nX-", 10));
        assert!(head_may_end(b"GET / HTTP/1.1\nHost: x\n\n", 20));
        // A line feed at the very end: undecided, and not parsed again for it.
        assert!(!head_may_end(b"GET / HTTP/1.1\r\nHost: x\r\n", 20));
        assert!(head_may_end(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 25));
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_connection_is_closed_after_the_header_read_bound() {
        let (_tx, rx) = tokio::sync::watch::channel(());
        let (mut c, task) = start(|| full("ok"), rx);
        c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 512];
        let n = c.read(&mut buf).await.unwrap();
        assert!(buf[..n].starts_with(b"HTTP/1.1 200 OK"));
        tokio::time::sleep(Duration::from_millis(4900)).await;
        assert!(!task.is_finished());
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(task.await.unwrap().is_none());
    }

    #[tokio::test]
    async fn shutting_down_closes_an_idle_connection() {
        let (tx, rx) = tokio::sync::watch::channel(());
        let (_c, task) = start(|| full("ok"), rx);
        tokio::task::yield_now().await;
        tx.send(()).unwrap();
        assert!(task.await.unwrap().is_none());
    }
}
