//! `grpcWeb`, as Traefik's traefik/grpc-web v0.17.0 (with rs/cors v1.7.0) does it: a `POST` whose
//! `Content-Type` starts with `application/grpc-web` goes to the server as gRPC (the type
//! rewritten, a `-text` body base64-decoded as it streams, no length: the server's own protocol
//! carries it), and its answer comes back as gRPC-Web (the type rewritten, the trailers as a
//! final `0x80` message, base64 for text requests, CORS fields); an `OPTIONS` naming
//! `x-grpc-web` in `Access-Control-Request-Headers` is its CORS preflight, answered here.
//! Everything else passes untouched. Rules and measurements:
//! `docs/traefik-behaviour/buffering-grpcweb-encoded.md` §2.

use std::pin::Pin;
use std::task::{Context, Poll};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, header};
use hyper::body::{Frame, SizeHint};

use super::{Flow, RequestCtx, Stage};
use crate::body::{Body, BoxError};
use crate::http1::server::RequestBody;

/// One `grpcWeb` middleware.
#[derive(Debug)]
pub(crate) struct GrpcWeb {
    any: bool,
    origins: Vec<String>,
}

/// How a translated request's bodies are carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `application/grpc-web`: the bytes as they are.
    Binary,
    /// `application/grpc-web-text`: base64.
    Text,
}

/// What the answer to a translated request needs.
#[derive(Debug)]
pub(crate) struct Translated {
    mode: Mode,
    /// The origin echoed with credentials, when CORS allows it.
    origin: Option<HeaderValue>,
}

/// The methods rs/cors allows by default.
fn simple_method(m: &str) -> bool {
    matches!(m, "GET" | "POST" | "HEAD" | "OPTIONS")
}

impl GrpcWeb {
    /// The middleware the plan describes.
    pub(crate) fn from_plan(c: &bridge_plan::GrpcWeb) -> Self {
        Self {
            any: c.allow_origins.iter().any(|o| o == "*"),
            origins: c.allow_origins.clone(),
        }
    }

    /// rs/cors's origin check as Traefik configures it: `*`, or exactly equal.
    fn allowed(&self, origin: &str) -> bool {
        !origin.is_empty() && (self.any || self.origins.iter().any(|o| o == origin))
    }

    /// Decides a request: pass it, answer its preflight, or translate it (changing it here).
    pub(crate) fn apply<'a>(
        &'a self,
        req: &mut Request<RequestBody>,
        ctx: &mut RequestCtx<'a>,
    ) -> Flow {
        let fields = req.headers();
        let first = |name: HeaderName| fields.get(name).map(HeaderValue::as_bytes);
        let content_type = first(header::CONTENT_TYPE).unwrap_or_default();
        let cors_path = req.method() == Method::OPTIONS
            && first(header::ACCESS_CONTROL_REQUEST_HEADERS)
                .is_some_and(|h| contains_ignore_case(h, b"x-grpc-web"));
        let grpc_path =
            req.method() == Method::POST && content_type.starts_with(b"application/grpc-web");
        if !cors_path && !grpc_path {
            return Flow::Continue;
        }
        let origin = first(header::ORIGIN).unwrap_or_default();
        let origin_ok = std::str::from_utf8(origin).is_ok_and(|o| self.allowed(o));
        if cors_path
            && let Some(acrm) =
                first(header::ACCESS_CONTROL_REQUEST_METHOD).filter(|m| !m.is_empty())
        {
            return Flow::Respond(preflight(fields, origin_ok.then_some(origin), acrm));
        }
        let echo = (origin_ok && simple_method(req.method().as_str()))
            .then(|| fields.get(header::ORIGIN).cloned())
            .flatten();
        let mode = if content_type.starts_with(b"application/grpc-web-text") {
            Mode::Text
        } else {
            Mode::Binary
        };
        let rewritten = rewrite_type(
            content_type,
            match mode {
                Mode::Text => b"application/grpc-web-text",
                Mode::Binary => b"application/grpc-web",
            },
            b"application/grpc",
        );
        let fields = req.headers_mut();
        if let Ok(v) = HeaderValue::from_bytes(&rewritten) {
            fields.insert(header::CONTENT_TYPE, v);
        }
        // Streamed on: the server's protocol frames it (chunked over HTTP/1.1).
        fields.remove(header::CONTENT_LENGTH);
        ctx.fields_changed = true;
        let body = std::mem::replace(req.body_mut(), RequestBody::Empty);
        *req.body_mut() = RequestBody::Translated(http_body_util::BodyExt::boxed(Streamed {
            inner: body,
            decode: (mode == Mode::Text).then(Decoder::default),
        }));
        ctx.response
            .stages
            .push(Stage::GrpcWeb(Translated { mode, origin: echo }));
        Flow::Continue
    }
}

/// ASCII case-insensitive substring test.
fn contains_ignore_case(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

/// `strings.Replace(s, from, to, 1)`.
fn rewrite_type(s: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    match s.windows(from.len()).position(|w| w == from) {
        Some(at) => [&s[..at], to, &s[at + from.len()..]].concat(),
        None => s.to_vec(),
    }
}

/// rs/cors's preflight answer: always the three `Vary` lines; the allow fields only for an
/// allowed origin and one of the simple methods.
fn preflight(fields: &HeaderMap, origin: Option<&[u8]>, acrm: &[u8]) -> Response<Body> {
    let mut resp = crate::body::answer(StatusCode::OK, Bytes::new());
    let h = resp.headers_mut();
    for v in [
        "Origin",
        "Access-Control-Request-Method",
        "Access-Control-Request-Headers",
    ] {
        h.append(header::VARY, HeaderValue::from_static(v));
    }
    let method = acrm.to_ascii_uppercase();
    let Some(origin) = origin.filter(|_| std::str::from_utf8(&method).is_ok_and(simple_method))
    else {
        return resp;
    };
    if let Ok(o) = HeaderValue::from_bytes(origin) {
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, o);
    }
    if let Ok(m) = HeaderValue::from_bytes(&method) {
        h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, m);
    }
    let requested = fields
        .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .map(HeaderValue::as_bytes)
        .unwrap_or_default();
    if let Ok(v) = HeaderValue::from_str(&allow_headers(requested)) {
        h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, v);
    }
    h.insert(
        header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
        HeaderValue::from_static("true"),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("600"),
    );
    resp
}

/// rs/cors's `parseHeaderList`: names split on `,` and spaces, only `[A-Za-z0-9_-]` kept, each
/// canonicalised (upper case at the start and after `-` or `_`), joined with `", "`.
fn allow_headers(requested: &[u8]) -> String {
    let mut names: Vec<String> = Vec::new();
    for part in requested.split(|&b| b == b',' || b == b' ') {
        let mut name = String::new();
        let mut upper = true;
        for &b in part {
            if !(b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
                continue;
            }
            name.push(char::from(if upper {
                b.to_ascii_uppercase()
            } else {
                b.to_ascii_lowercase()
            }));
            upper = b == b'-' || b == b'_';
        }
        if !name.is_empty() {
            names.push(name);
        }
    }
    names.join(", ")
}

/// Go's `CanonicalHeaderKey` of a lower-case field name.
fn go_canonical(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = true;
    for c in name.chars() {
        out.push(if upper { c.to_ascii_uppercase() } else { c });
        upper = c == '-';
    }
    out
}

/// The client's answer to a translated request: the server's status, its fields with the type
/// rewritten and the CORS fields, every field name exposed, and the body as gRPC-Web.
pub(crate) fn respond(t: Translated, resp: Response<Body>) -> Response<Body> {
    let (mut parts, body) = resp.into_parts();
    let h = &mut parts.headers;
    h.remove(header::TRAILER);
    h.append(header::VARY, HeaderValue::from_static("Origin"));
    if let Some(origin) = t.origin {
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        h.insert(
            header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
            HeaderValue::from_static("true"),
        );
    }
    if let Some(ct) = h.get(header::CONTENT_TYPE) {
        let to: &[u8] = match t.mode {
            Mode::Text => b"application/grpc-web-text",
            Mode::Binary => b"application/grpc-web",
        };
        let rewritten = rewrite_type(ct.as_bytes(), b"application/grpc", to);
        if let Ok(v) = HeaderValue::from_bytes(&rewritten) {
            h.insert(header::CONTENT_TYPE, v);
        }
    }
    // Traefik's entry point leaves an empty Content-Type entry (no sniffing), so the name is
    // always among those exposed.
    let mut names: Vec<String> = Vec::new();
    if !h.contains_key(header::CONTENT_TYPE) {
        names.push("Content-Type".to_owned());
    }
    names.extend(h.keys().map(|k| go_canonical(k.as_str())));
    names.push("grpc-status".to_owned());
    names.push("grpc-message".to_owned());
    if let Ok(v) = HeaderValue::from_str(&names.join(", ")) {
        h.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, v);
    }
    // A server's length no longer holds once the trailers follow the body (Traefik keeps it and
    // then cuts the answer short); streamed, as Traefik flushes it, piece by piece, when the
    // server sent no length.
    let flush_each = h.remove(header::CONTENT_LENGTH).is_none();
    let headers: Vec<HeaderName> = h.keys().cloned().collect();
    let body = http_body_util::BodyExt::boxed(Answer {
        inner: body,
        text: (t.mode == Mode::Text).then(|| Encoder {
            flush_each,
            rest: Vec::new(),
        }),
        headers,
        trailers: HeaderMap::new(),
        done: false,
    });
    Response::from_parts(parts, body)
}

/// The request body on its way to the server: as it is, or base64-decoded; of no known length.
struct Streamed {
    inner: RequestBody,
    decode: Option<Decoder>,
}

impl hyper::body::Body for Streamed {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        loop {
            let frame = match std::task::ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                Some(Ok(frame)) => frame,
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => {
                    let end = this.decode.as_mut().map(Decoder::finish).transpose();
                    return Poll::Ready(end.err().map(Err));
                }
            };
            let Some(decoder) = this.decode.as_mut() else {
                return Poll::Ready(Some(Ok(frame)));
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            match decoder.push(&data) {
                Ok(out) if out.is_empty() => continue,
                Ok(out) => return Poll::Ready(Some(Ok(Frame::data(out)))),
                Err(e) => return Poll::Ready(Some(Err(e))),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        // A partial quantum left must still be reported by `poll_frame`.
        self.inner.is_end_stream() && self.decode.as_ref().is_none_or(|d| d.pending.is_empty())
    }

    fn size_hint(&self) -> SizeHint {
        // No length: the server's protocol frames the body (Traefik removes the length).
        SizeHint::default()
    }
}

/// Go's `base64.NewDecoder(StdEncoding, …)`: whole quanta decoded as they arrive, line breaks
/// skipped, nothing after padding, a trailing partial quantum an error.
#[derive(Debug, Default)]
struct Decoder {
    pending: Vec<u8>,
    padded: bool,
}

impl Decoder {
    fn push(&mut self, data: &[u8]) -> Result<Bytes, BoxError> {
        self.pending
            .extend(data.iter().copied().filter(|&b| b != b'\r' && b != b'\n'));
        if self.padded && !self.pending.is_empty() {
            return Err("illegal base64 data after padding".into());
        }
        let whole = self.pending.len() / 4 * 4;
        if whole == 0 {
            return Ok(Bytes::new());
        }
        let quanta: Vec<u8> = self.pending.drain(..whole).collect();
        self.padded = quanta.last() == Some(&b'=');
        let out = STANDARD
            .decode(&quanta)
            .map_err(|e| -> BoxError { format!("illegal base64 data: {e}").into() })?;
        Ok(Bytes::from(out))
    }

    fn finish(&mut self) -> Result<(), BoxError> {
        if self.pending.is_empty() {
            Ok(())
        } else {
            Err("unexpected EOF in base64 data".into())
        }
    }
}

/// base64 of the answer: padded after every frame when Traefik would have flushed each write,
/// else one run to the end.
#[derive(Debug)]
struct Encoder {
    flush_each: bool,
    /// Bytes not yet encoded (fewer than three) when runs continue across frames.
    rest: Vec<u8>,
}

impl Encoder {
    fn encode(&mut self, data: &[u8], last: bool) -> Bytes {
        if self.flush_each {
            return Bytes::from(STANDARD.encode(data));
        }
        self.rest.extend_from_slice(data);
        let take = if last {
            self.rest.len()
        } else {
            self.rest.len() / 3 * 3
        };
        let run: Vec<u8> = self.rest.drain(..take).collect();
        Bytes::from(STANDARD.encode(run))
    }
}

/// The answer's body as gRPC-Web: the server's bytes (or their base64), then the trailer
/// message; HTTP trailers are never sent on.
struct Answer {
    inner: Body,
    text: Option<Encoder>,
    /// The field names the answer's head carries: trailers of these names are not repeated.
    headers: Vec<HeaderName>,
    trailers: HeaderMap,
    done: bool,
}

impl Answer {
    /// grpc-web's `copyTrailersToPayload`: `0x80`, the length, Go's `Header.Write` of the
    /// trailers with lower-case names, sorted.
    fn trailer_message(&self) -> Vec<u8> {
        let mut lines: Vec<(String, String)> = self
            .trailers
            .iter()
            .filter(|(k, _)| !self.headers.contains(k))
            .map(|(k, v)| {
                let v = String::from_utf8_lossy(v.as_bytes())
                    .replace(['\r', '\n'], " ")
                    .trim()
                    .to_owned();
                (k.as_str().to_owned(), v)
            })
            .collect();
        lines.sort_by(|a, b| a.0.cmp(&b.0));
        let mut block = Vec::new();
        for (k, v) in lines {
            block.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
        }
        let len = u32::try_from(block.len()).unwrap_or(u32::MAX);
        let mut out = Vec::with_capacity(5 + block.len());
        out.push(0x80);
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&block);
        out
    }
}

impl hyper::body::Body for Answer {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        loop {
            match std::task::ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => {
                        let out = match this.text.as_mut() {
                            Some(enc) => enc.encode(&data, false),
                            None => data,
                        };
                        if !out.is_empty() {
                            return Poll::Ready(Some(Ok(Frame::data(out))));
                        }
                    }
                    Err(frame) => {
                        if let Ok(t) = frame.into_trailers() {
                            for (k, v) in &t {
                                this.trailers.append(k, v.clone());
                            }
                        }
                    }
                },
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => {
                    this.done = true;
                    let message = this.trailer_message();
                    let out = match this.text.as_mut() {
                        Some(enc) => enc.encode(&message, true),
                        None => Bytes::from(message),
                    };
                    return Poll::Ready(Some(Ok(Frame::data(out))));
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

/// A body for tests: data frames and, when given, trailers.
#[cfg(test)]
struct Frames(std::collections::VecDeque<Frame<Bytes>>);

#[cfg(test)]
impl hyper::body::Body for Frames {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        Poll::Ready(self.get_mut().0.pop_front().map(Ok))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code: a panic is a test failure")]

    use std::future::Future;

    use http_body_util::BodyExt as _;

    use super::*;
    use crate::middleware::test_support::ctx;

    fn mw(origins: &[&str]) -> GrpcWeb {
        GrpcWeb::from_plan(&bridge_plan::GrpcWeb {
            allow_origins: origins.iter().map(|s| (*s).to_owned()).collect(),
        })
    }

    fn request(
        method: Method,
        fields: &[(&str, &str)],
        body: &'static [u8],
    ) -> Request<RequestBody> {
        let mut r = Request::new(RequestBody::Buffered(Some(Bytes::from_static(body))));
        *r.method_mut() = method;
        for (k, v) in fields {
            r.headers_mut().append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        r
    }

    fn block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    fn field<'a>(h: &'a HeaderMap, name: &str) -> Vec<&'a str> {
        h.get_all(name)
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect()
    }

    #[test]
    fn only_grpc_web_posts_and_their_preflights_are_taken() {
        let m = mw(&["*"]);
        for (method, fields) in [
            (Method::GET, vec![("content-type", "application/grpc-web")]),
            (Method::PUT, vec![("content-type", "application/grpc-web")]),
            (Method::POST, vec![("content-type", "application/grpc")]),
            // Case-sensitive, as grpc-web checks it.
            (Method::POST, vec![("content-type", "Application/grpc-web")]),
            (
                Method::OPTIONS,
                vec![("access-control-request-headers", "content-type")],
            ),
        ] {
            let mut r = request(method.clone(), &fields, b"");
            let mut c = ctx(None, "/");
            assert!(matches!(m.apply(&mut r, &mut c), Flow::Continue));
            assert!(
                c.response.stages.is_empty(),
                "{method} {fields:?} passes untouched"
            );
            assert!(!c.fields_changed);
        }
    }

    #[test]
    fn preflight_answers_as_rs_cors() {
        let m = mw(&["https://a.example"]);
        let answer = |fields: &[(&str, &str)]| {
            let mut r = request(Method::OPTIONS, fields, b"");
            let mut c = ctx(None, "/");
            match m.apply(&mut r, &mut c) {
                Flow::Respond(resp) => resp,
                other => panic!("not answered: {other:?}"),
            }
        };
        let ok = answer(&[
            ("origin", "https://a.example"),
            ("access-control-request-method", "post"),
            ("access-control-request-headers", "foo_bar , X-GRPC-WEB"),
        ]);
        let h = ok.headers();
        assert_eq!(ok.status(), 200);
        assert_eq!(
            field(h, "vary"),
            [
                "Origin",
                "Access-Control-Request-Method",
                "Access-Control-Request-Headers"
            ]
        );
        assert_eq!(
            field(h, "access-control-allow-origin"),
            ["https://a.example"]
        );
        assert_eq!(field(h, "access-control-allow-methods"), ["POST"]);
        assert_eq!(
            field(h, "access-control-allow-headers"),
            ["Foo_Bar, X-Grpc-Web"]
        );
        assert_eq!(field(h, "access-control-allow-credentials"), ["true"]);
        assert_eq!(field(h, "access-control-max-age"), ["600"]);
        assert_eq!(field(h, "content-length"), ["0"]);
        // Another origin (case counts), no origin, a method outside the simple ones: bare.
        for fields in [
            vec![
                ("origin", "HTTPS://A.EXAMPLE"),
                ("access-control-request-method", "POST"),
            ],
            vec![("access-control-request-method", "POST")],
            vec![
                ("origin", "https://a.example"),
                ("access-control-request-method", "PUT"),
            ],
        ] {
            let mut all = fields.clone();
            all.push(("access-control-request-headers", "x-grpc-web"));
            let bare = answer(&all);
            assert!(
                !bare.headers().contains_key("access-control-allow-origin"),
                "{fields:?}"
            );
            assert_eq!(bare.headers().get_all("vary").iter().count(), 3);
        }
    }

    #[test]
    fn a_text_request_is_decoded_and_retyped() {
        let m = mw(&[]);
        let mut r = request(
            Method::POST,
            &[
                ("content-type", "application/grpc-web-text+proto"),
                ("content-length", "12"),
            ],
            b"AAAAAAOh\r\nYmM=",
        );
        let mut c = ctx(None, "/");
        assert!(matches!(m.apply(&mut r, &mut c), Flow::Continue));
        assert_eq!(
            field(r.headers(), "content-type"),
            ["application/grpc+proto"]
        );
        assert!(!r.headers().contains_key("content-length"));
        assert_eq!(hyper::body::Body::size_hint(r.body()).exact(), None);
        let body = block_on(r.into_body().collect()).unwrap().to_bytes();
        assert_eq!(&body[..], b"\x00\x00\x00\x00\x03\xa1bc");
        assert!(matches!(
            c.response.stages[..],
            [Stage::GrpcWeb(Translated {
                mode: Mode::Text,
                origin: None
            })]
        ));
    }

    #[test]
    fn broken_base64_fails_the_body() {
        let mut d = Decoder::default();
        assert!(d.push(b"AAA").unwrap().is_empty());
        assert!(d.finish().is_err(), "a partial quantum at the end");
        let mut d = Decoder::default();
        assert_eq!(&d.push(b"YQ==").unwrap()[..], b"a");
        assert!(d.push(b"YQ==").is_err(), "nothing after padding");
        assert!(Decoder::default().push(b"Y!==").is_err());
    }

    fn answer(
        t: Translated,
        fields: &[(&str, &str)],
        frames: Vec<Frame<Bytes>>,
    ) -> (HeaderMap, Vec<u8>) {
        let mut resp = Response::new(Frames(frames.into()).boxed());
        for (k, v) in fields {
            resp.headers_mut().append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        let out = respond(t, resp);
        let (parts, body) = out.into_parts();
        let bytes = block_on(body.collect()).unwrap().to_bytes().to_vec();
        (parts.headers, bytes)
    }

    fn trailers(pairs: &[(&str, &str)]) -> Frame<Bytes> {
        let mut t = HeaderMap::new();
        for (k, v) in pairs {
            t.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        Frame::trailers(t)
    }

    #[test]
    fn binary_answers_carry_their_trailers_as_the_last_message() {
        let t = Translated {
            mode: Mode::Binary,
            origin: Some(HeaderValue::from_static("https://a.example")),
        };
        let (h, body) = answer(
            t,
            &[("content-type", "application/grpc+proto"), ("x-h", "1")],
            vec![
                Frame::data(Bytes::from_static(b"\x00\x00\x00\x00\x02hi")),
                trailers(&[
                    ("grpc-status", "0"),
                    ("grpc-message", "OK done"),
                    ("x-trailer-extra", "e1"),
                ]),
            ],
        );
        assert_eq!(field(&h, "content-type"), ["application/grpc-web+proto"]);
        assert_eq!(field(&h, "vary"), ["Origin"]);
        assert_eq!(
            field(&h, "access-control-allow-origin"),
            ["https://a.example"]
        );
        assert_eq!(field(&h, "access-control-allow-credentials"), ["true"]);
        let exposed = field(&h, "access-control-expose-headers")[0];
        assert!(
            exposed.ends_with(", grpc-status, grpc-message"),
            "{exposed}"
        );
        for name in ["Content-Type", "X-H", "Vary", "Access-Control-Allow-Origin"] {
            assert!(
                exposed.split(", ").any(|n| n == name),
                "{name} in {exposed}"
            );
        }
        let block = b"grpc-message: OK done\r\ngrpc-status: 0\r\nx-trailer-extra: e1\r\n";
        let mut want = b"\x00\x00\x00\x00\x02hi\x80\x00\x00\x00\x3c".to_vec();
        want.extend_from_slice(block);
        assert_eq!(body, want);
    }

    #[test]
    fn a_trailers_only_answer_keeps_its_fields_and_ends_with_an_empty_message() {
        let t = Translated {
            mode: Mode::Binary,
            origin: None,
        };
        let (h, body) = answer(
            t,
            &[("grpc-status", "5"), ("grpc-message", "not found")],
            vec![],
        );
        assert_eq!(field(&h, "grpc-status"), ["5"]);
        assert_eq!(body, b"\x80\x00\x00\x00\x00");
        let exposed = field(&h, "access-control-expose-headers")[0];
        assert!(
            exposed.starts_with("Content-Type, "),
            "an absent type is exposed: {exposed}"
        );
    }

    #[test]
    fn text_answers_are_base64_per_piece_when_streamed_and_in_one_run_with_a_length() {
        let streamed = answer(
            Translated {
                mode: Mode::Text,
                origin: None,
            },
            &[("content-type", "application/grpc")],
            vec![
                Frame::data(Bytes::from_static(b"\x00\x00\x00\x00\x02hi")),
                trailers(&[("grpc-status", "0")]),
            ],
        );
        assert_eq!(
            field(&streamed.0, "content-type"),
            ["application/grpc-web-text"]
        );
        // Each piece padded on its own, as Traefik flushes them.
        let text = String::from_utf8(streamed.1).unwrap();
        assert!(text.starts_with("AAAAAAJoaQ=="), "{text}");
        assert_eq!(
            &STANDARD.decode(&text["AAAAAAJoaQ==".len()..]).unwrap()[..5],
            b"\x80\x00\x00\x00\x10"
        );
        // With a length (the proxy's own 502), body and trailer message are one run.
        let (h, one) = answer(
            Translated {
                mode: Mode::Text,
                origin: None,
            },
            &[("content-length", "11")],
            vec![Frame::data(Bytes::from_static(b"Bad Gateway"))],
        );
        assert_eq!(String::from_utf8(one).unwrap(), "QmFkIEdhdGV3YXmAAAAAAA==");
        assert!(
            !h.contains_key("content-length"),
            "the length no longer holds"
        );
    }
}
