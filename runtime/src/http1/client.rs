//! The proxy's own HTTP/1.1 client codec, for the hot path to `http://` servers.
//!
//! A request without a body (GET, HEAD, OPTIONS, TRACE; no upgrade) is written to a pooled
//! connection and its response read by the task of the request itself: hyper's client hands
//! every request through a channel to a per-connection task and back, which on loopback cost
//! more CPU than the exchange. Requests with bodies and upgrades still go through hyper (see
//! [`crate::http1::pool`]).
//!
//! Message framing follows RFC 9112 §6.3: no body after HEAD, 1xx, 204 and 304; a final
//! `chunked` transfer coding is decoded; any other transfer coding is read until the server
//! closes; otherwise `Content-Length` (several values must agree) or, without one, until close.
//! A connection is reused only after a complete HTTP/1.1 message with neither `Connection:
//! close` nor both framing headers.

use bytes::{Bytes, BytesMut};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, StatusCode, Version};

/// Largest response head accepted (hyper's client allows about as much by default).
pub(crate) const MAX_HEAD: usize = 64 * 1024;
/// Most header fields in one response head (hyper's default).
const MAX_HEADERS: usize = 100;
/// Longest chunk-size line or trailer line accepted.
const MAX_LINE: usize = 4096;
/// Most trailer bytes read after the last chunk (trailers are not forwarded).
const MAX_TRAILERS: usize = 16 * 1024;
/// Free buffer space asked for before each read from the server.
pub(crate) const READ_RESERVE: usize = 16 * 1024;

/// Why an exchange with the server failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum H1Error {
    /// Reading or writing failed before any byte of a response arrived.
    #[error("connection error before a response: {0}")]
    Early(#[source] std::io::Error),
    /// The server closed the connection before any byte of a response.
    #[error("server closed the connection without a response")]
    ClosedEarly,
    /// Reading failed in the middle of a response.
    #[error("connection error: {0}")]
    Io(#[source] std::io::Error),
    /// The server closed the connection in the middle of a response.
    #[error("server closed the connection in the middle of a response")]
    Truncated,
    /// The server's bytes are not a valid HTTP/1.1 response.
    #[error("invalid response from server: {0}")]
    Invalid(&'static str),
}

impl H1Error {
    /// True when nothing of a response arrived: on a reused connection the server most likely
    /// closed it while idle, and an idempotent request may go out again on another one.
    pub(crate) fn nothing_received(&self) -> bool {
        matches!(self, Self::Early(_) | Self::ClosedEarly)
    }

    /// True when the failure was a timeout.
    pub(crate) fn is_timeout(&self) -> bool {
        matches!(self, Self::Early(e) | Self::Io(e) if e.kind() == std::io::ErrorKind::TimedOut)
    }
}

/// True for a request this codec carries: no body, no upgrade, no `Expect`, and a method a
/// server may receive twice (a stale keep-alive connection is retried on a new one).
pub(crate) fn eligible(method: &Method, headers: &HeaderMap, body_is_empty: bool) -> bool {
    body_is_empty && eligible_by(method, &crate::proxy::strict::Fields::of(headers))
}

/// [`eligible`] from what the request checks already saw of the fields (no lookups).
pub(crate) fn eligible_by(method: &Method, fields: &crate::proxy::strict::Fields) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE
    ) && fields.bodiless()
        && !fields.upgrade
        && !fields.expect
}

/// A request without a body, borrowed from the proxy's request: the raw exchange writes it
/// without the map of fields being cloned for a possible retry or changed for the `Host` value.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bodiless<'a> {
    /// An [`eligible`] method.
    pub method: &'a Method,
    /// Origin form: `/path?query`.
    pub target: &'a str,
    /// The `Host` value to send in place of any `Host` field in `headers`.
    pub host: Option<&'a HeaderValue>,
    /// The fields, as forwarding left them.
    pub headers: &'a HeaderMap,
    /// Fields written after `headers` (the forwarding fields, none of them in `headers`).
    pub extra: Option<(
        &'a crate::proxy::forwarded_headers::Forwarded,
        crate::proxy::forwarded_headers::Sources<'a>,
    )>,
}

/// Appends the request head: request line in origin form, `Host` first when given apart, the
/// headers as they are (names in hyper's lower case), the empty line. `http`'s types cannot
/// hold CR or LF, so nothing a client sent can split the head.
pub(crate) fn encode_request(out: &mut Vec<u8>, req: &Bodiless<'_>) {
    out.extend_from_slice(req.method.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(req.target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    if let Some(host) = req.host {
        put_field(out, b"host", host.as_bytes());
    }
    for (name, value) in req.headers {
        if req.host.is_some() && name == header::HOST {
            continue;
        }
        put_field(out, name.as_str().as_bytes(), value.as_bytes());
    }
    if let Some((f, src)) = &req.extra {
        f.write(src, out);
    }
    out.extend_from_slice(b"\r\n");
}

/// Appends one `name: value` header line.
pub(crate) fn put_field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Where one parsed field lies in its head: the head is frozen into `Bytes` only after parsing,
/// and the fields then share it (see [`header_map`]). Plain offsets, so the list of a head's
/// fields is kept with its connection and reused instead of allocated per message.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Field {
    name: (usize, usize),
    value: (usize, usize),
}

impl Field {
    /// The field's name as sent (any case).
    pub(crate) fn name<'b>(&self, head: &'b [u8]) -> &'b [u8] {
        &head[self.name.0..self.name.1]
    }

    /// The field's value.
    pub(crate) fn value<'b>(&self, head: &'b [u8]) -> &'b [u8] {
        &head[self.value.0..self.value.1]
    }
}

/// Records where each of `fields` (parsed from `base`) lies, in `out` (emptied first).
pub(crate) fn field_spans(base: &[u8], fields: &[httparse::Header<'_>], out: &mut Vec<Field>) {
    let base = base.as_ptr() as usize;
    out.clear();
    out.extend(fields.iter().map(|f| {
        let name = f.name.as_ptr() as usize - base;
        let value = f.value.as_ptr() as usize - base;
        Field {
            name: (name, name + f.name.len()),
            value: (value, value + f.value.len()),
        }
    }));
}

/// The header map of a head from its [`field_spans`], values sharing `head` instead of copies,
/// with room for `extra` more fields (growing a map rehashes it: that showed in profiles).
/// `None` when `http` refuses a name or value.
pub(crate) fn header_map(head: &Bytes, fields: &[Field], extra: usize) -> Option<HeaderMap> {
    let mut headers = HeaderMap::with_capacity(fields.len() + extra);
    for f in fields {
        append_field(&mut headers, head, f)?;
    }
    Some(headers)
}

/// Appends one field of `head` to `headers`; `None` when `http` refuses its name or value.
fn append_field(headers: &mut HeaderMap, head: &Bytes, f: &Field) -> Option<()> {
    let name = HeaderName::from_bytes(f.name(head)).ok()?;
    let value = HeaderValue::from_maybe_shared(head.slice(f.value.0..f.value.1)).ok()?;
    headers.append(name, value);
    Some(())
}

/// How the body of a response is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// No body.
    Empty,
    /// Exactly this many bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Until the server closes the connection.
    Close,
}

/// A parsed response head.
#[derive(Debug)]
pub(crate) struct Head {
    /// Status code (never 1xx once returned by the pool).
    pub status: StatusCode,
    /// HTTP/1.0 or HTTP/1.1.
    pub version: Version,
    /// Header fields as received (values share the head's bytes), without the hop-by-hop ones
    /// (RFC 9110 §7.6.1: those of [`crate::proxy::forwarded_headers::HOP_BY_HOP`] and those `Connection` names):
    /// they describe this connection only and never reach the client.
    pub headers: HeaderMap,
    /// How the body is delimited.
    pub framing: Framing,
    /// The connection may carry another exchange once this body has been read.
    pub keep_alive: bool,
}

/// An interim (1xx) response received before the final one, forwarded to the client as it
/// arrives (RFC 9110 §15.2: a proxy MUST forward 1xx responses it did not ask for; see
/// [`crate::interim`]).
#[derive(Debug, Clone)]
pub(crate) struct Interim {
    /// 1xx, never 101.
    pub status: StatusCode,
    /// End-to-end fields (hop-by-hop ones left out, as for final responses).
    pub headers: HeaderMap,
}

/// Most interim responses accepted before the final one: a server sending more is broken or
/// hostile, and without a bound it could hold a request forever (1xx flood).
pub(crate) const MAX_INTERIM: usize = 16;

/// Parses a response head at the start of `buf`, removing it from there. `None`: incomplete.
/// Header values share the head's bytes instead of being copied.
pub(crate) fn parse_head(
    buf: &mut BytesMut,
    spans: &mut Vec<Field>,
    head_request: bool,
) -> Result<Option<Head>, H1Error> {
    // Uninitialised slots: zeroing 100 of them (3 KiB) per response showed in profiles.
    let mut fields =
        [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut resp,
        buf,
        &mut fields,
    );
    let len = match parsed {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            return if buf.len() >= MAX_HEAD {
                Err(H1Error::Invalid("response head larger than 64 KiB"))
            } else {
                Ok(None)
            };
        }
        Err(httparse::Error::TooManyHeaders) => {
            return Err(H1Error::Invalid("more than 100 response header fields"));
        }
        Err(_) => return Err(H1Error::Invalid("malformed response head")),
    };
    let status = resp
        .code
        .and_then(|c| StatusCode::from_u16(c).ok())
        .ok_or(H1Error::Invalid("bad status code"))?;
    let version = if resp.version == Some(0) {
        Version::HTTP_10
    } else {
        Version::HTTP_11
    };
    field_spans(buf, resp.headers, spans);
    let spans = &spans[..];
    let facts = Facts::of(buf, spans);
    let (framing, mut ambiguous) = facts.framing(status, head_request)?;
    // RFC 9112 §6.1: `Transfer-Encoding` in an HTTP/1.0 message means faulty framing.
    ambiguous |= facts.transfer_encoding && version == Version::HTTP_10;
    if ambiguous {
        crate::proxy::strict::Discard::AmbiguousFraming.count();
    }
    let keep_alive = !ambiguous
        && framing != Framing::Close
        && !facts.close
        && (version == Version::HTTP_11 || facts.keep_alive);
    let head = buf.split_to(len).freeze();
    let headers =
        end_to_end_map(&head, spans, &facts).ok_or(H1Error::Invalid("bad header field"))?;
    Ok(Some(Head {
        status,
        version,
        headers,
        framing,
        keep_alive,
    }))
}

/// The map of a response's end-to-end fields: hop-by-hop ones are left out while it is built,
/// which costs a comparison per field instead of a hash and a removal each afterwards. With a
/// transfer coding, `Content-Length` is left out too (RFC 9112 §6.3 item 3: an intermediary
/// MUST remove it before forwarding; the body is framed anew for the client).
fn end_to_end_map(head: &Bytes, fields: &[Field], facts: &Facts) -> Option<HeaderMap> {
    let mut headers = HeaderMap::with_capacity(fields.len());
    for f in fields {
        let name = f.name(head);
        if crate::proxy::forwarded_headers::is_hop_by_hop(name)
            || facts.connection_lists(head, fields, name)
            || (facts.transfer_encoding && name.eq_ignore_ascii_case(b"content-length"))
        {
            continue;
        }
        append_field(&mut headers, head, f)?;
    }
    Some(headers)
}

/// What a response's fields say about its framing and connection, gathered in one pass over
/// the parsed fields (lookups in the header map cost a hash each).
#[derive(Debug, Default)]
struct Facts {
    /// `Content-Length`: its value, `Err` when values are bad or disagree.
    length: Option<Result<u64, &'static str>>,
    /// `Transfer-Encoding` was sent; its last coding is `chunked`.
    transfer_encoding: bool,
    chunked: bool,
    /// `Connection` lists `close` / `keep-alive`.
    close: bool,
    keep_alive: bool,
    /// Where the other names `Connection` lists lie (besides hop-by-hop ones; usually none:
    /// servers send `keep-alive` or `close`), kept inline; past eight, `many` is set and every
    /// `Connection` line is searched instead.
    named: [(usize, usize); 8],
    n_named: usize,
    many: bool,
}

impl Facts {
    fn of(buf: &[u8], spans: &[Field]) -> Self {
        let mut f = Self::default();
        for field in spans {
            let (name, value) = (field.name(buf), field.value(buf));
            if name.eq_ignore_ascii_case(b"content-length") {
                for part in value.split(|&b| b == b',') {
                    let n = parse_decimal(part.trim_ascii()).ok_or("bad Content-Length");
                    f.length = Some(match (f.length, n) {
                        (Some(Err(e)), _) | (_, Err(e)) => Err(e),
                        (Some(Ok(l)), Ok(n)) if l != n => Err("conflicting Content-Length values"),
                        (_, Ok(n)) => Ok(n),
                    });
                }
            } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
                f.transfer_encoding = true;
                // The last coding of the last value that names one decides.
                if let Some(last) = value
                    .split(|&b| b == b',')
                    .map(<[u8]>::trim_ascii)
                    .rfind(|t| !t.is_empty())
                {
                    f.chunked = last.eq_ignore_ascii_case(b"chunked");
                }
            } else if name.eq_ignore_ascii_case(b"connection") {
                let mut at = field.value.0;
                for t in value.split(|&b| b == b',') {
                    let token = t.trim_ascii();
                    let start = at + (t.len() - t.trim_ascii_start().len());
                    at += t.len() + 1;
                    if token.eq_ignore_ascii_case(b"close") {
                        f.close = true;
                    } else if token.eq_ignore_ascii_case(b"keep-alive") {
                        f.keep_alive = true;
                    } else if !token.is_empty()
                        && !crate::proxy::forwarded_headers::is_hop_by_hop(token)
                    {
                        match f.named.get_mut(f.n_named) {
                            Some(slot) => {
                                *slot = (start, start + token.len());
                                f.n_named += 1;
                            }
                            None => f.many = true,
                        }
                    }
                }
            }
        }
        f
    }

    /// Whether a `Connection` field of `head` (with `fields`) lists `name`.
    fn connection_lists(&self, head: &[u8], fields: &[Field], name: &[u8]) -> bool {
        if self.many {
            fields
                .iter()
                .filter(|c| c.name(head).eq_ignore_ascii_case(b"connection"))
                .any(|c| value_has_token(c.value(head), name))
        } else {
            self.named[..self.n_named]
                .iter()
                .any(|&(a, b)| head[a..b].eq_ignore_ascii_case(name))
        }
    }

    /// The body's framing, and whether both `Transfer-Encoding` and `Content-Length` were sent
    /// (RFC 9112 §6.3: transfer coding wins, and the connection must not be reused).
    fn framing(&self, status: StatusCode, head_request: bool) -> Result<(Framing, bool), H1Error> {
        if head_request
            || status.is_informational()
            || status == StatusCode::NO_CONTENT
            || status == StatusCode::NOT_MODIFIED
        {
            return Ok((Framing::Empty, false));
        }
        if self.transfer_encoding {
            let f = if self.chunked {
                Framing::Chunked
            } else {
                Framing::Close
            };
            return Ok((f, self.length.is_some()));
        }
        Ok(match self.length {
            Some(Err(e)) => return Err(H1Error::Invalid(e)),
            Some(Ok(0)) => (Framing::Empty, false),
            Some(Ok(n)) => (Framing::Length(n), false),
            None => (Framing::Close, false),
        })
    }
}

/// For a response hyper parsed: removes `Content-Length` beside `Transfer-Encoding` (RFC 9112
/// §6.3 item 3) and tells whether the framing was ambiguous — both fields, or a transfer
/// coding in an HTTP/1.0 response — so its connection must not be reused (counted).
pub(crate) fn ambiguous_framing(version: Version, headers: &mut HeaderMap) -> bool {
    if !headers.contains_key(header::TRANSFER_ENCODING) {
        return false;
    }
    let both = headers.remove(header::CONTENT_LENGTH).is_some();
    let ambiguous = both || version == Version::HTTP_10;
    if ambiguous {
        crate::proxy::strict::Discard::AmbiguousFraming.count();
    }
    ambiguous
}

/// A decimal `Content-Length`: digits only (no sign, no space), within `u64`.
pub(crate) fn parse_decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &d| {
        if d.is_ascii_digit() {
            n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
        } else {
            None
        }
    })
}

/// True when the comma-separated field value lists `token` (ASCII case-insensitive), as
/// `Connection` values do.
pub(crate) fn value_has_token(value: &[u8], token: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

/// What the decoder made of the buffered bytes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Body bytes.
    Data(Bytes),
    /// The body is complete.
    End,
    /// More bytes from the server are needed.
    More,
}

#[derive(Debug, Clone, Copy)]
enum State {
    Length(u64),
    ChunkSize,
    ChunkData(u64),
    ChunkEnd,
    Trailers(usize),
    Close,
    Done,
}

/// Takes a response body out of the connection's read buffer.
#[derive(Debug)]
pub(crate) struct Decoder {
    state: State,
}

impl Decoder {
    /// A decoder for a body framed as `framing`.
    pub(crate) fn new(framing: Framing) -> Self {
        let state = match framing {
            Framing::Empty | Framing::Length(0) => State::Done,
            Framing::Length(n) => State::Length(n),
            Framing::Chunked => State::ChunkSize,
            Framing::Close => State::Close,
        };
        Self { state }
    }

    /// True once the whole body has been decoded.
    pub(crate) fn is_done(&self) -> bool {
        matches!(self.state, State::Done)
    }

    /// Bytes of the body still to come, when known.
    pub(crate) fn remaining(&self) -> Option<u64> {
        match self.state {
            State::Length(n) => Some(n),
            State::Done => Some(0),
            _ => None,
        }
    }

    /// The next piece of the body found in `buf` (consumed from it).
    pub(crate) fn decode(&mut self, buf: &mut BytesMut) -> Result<Step, H1Error> {
        loop {
            match self.state {
                State::Done => return Ok(Step::End),
                State::Length(n) | State::ChunkData(n) => {
                    if buf.is_empty() {
                        return Ok(Step::More);
                    }
                    let take = usize::try_from(n).unwrap_or(usize::MAX).min(buf.len());
                    let data = buf.split_to(take).freeze();
                    let left = n - take as u64;
                    self.state = match (self.state, left) {
                        (State::Length(_), 0) => State::Done,
                        (State::Length(_), l) => State::Length(l),
                        (_, 0) => State::ChunkEnd,
                        (_, l) => State::ChunkData(l),
                    };
                    return Ok(Step::Data(data));
                }
                State::Close => {
                    if buf.is_empty() {
                        return Ok(Step::More);
                    }
                    return Ok(Step::Data(buf.split().freeze()));
                }
                State::ChunkSize => {
                    let Some(line) = take_line(buf)? else {
                        return Ok(Step::More);
                    };
                    let size = chunk_size(&line)?;
                    self.state = if size == 0 {
                        State::Trailers(0)
                    } else {
                        State::ChunkData(size)
                    };
                }
                State::ChunkEnd => {
                    if buf.len() < 2 {
                        return Ok(Step::More);
                    }
                    if &buf[..2] != b"\r\n" {
                        return Err(H1Error::Invalid("chunk data not followed by CRLF"));
                    }
                    let _ = buf.split_to(2);
                    self.state = State::ChunkSize;
                }
                State::Trailers(seen) => {
                    let Some(line) = take_line(buf)? else {
                        return Ok(Step::More);
                    };
                    if line.is_empty() {
                        self.state = State::Done;
                        return Ok(Step::End);
                    }
                    let seen = seen + line.len() + 2;
                    if seen > MAX_TRAILERS {
                        return Err(H1Error::Invalid("trailers larger than 16 KiB"));
                    }
                    self.state = State::Trailers(seen);
                }
            }
        }
    }

    /// The server closed the connection: the end of a close-delimited body, else an error.
    pub(crate) fn eof(&mut self) -> Result<Step, H1Error> {
        match self.state {
            State::Close | State::Done => {
                self.state = State::Done;
                Ok(Step::End)
            }
            _ => Err(H1Error::Truncated),
        }
    }
}

/// A CRLF-terminated line from the front of `buf`, without its CRLF.
fn take_line(buf: &mut BytesMut) -> Result<Option<BytesMut>, H1Error> {
    let window = &buf[..buf.len().min(MAX_LINE)];
    match window.iter().position(|&b| b == b'\n') {
        Some(i) if i > 0 && window[i - 1] == b'\r' => {
            let mut line = buf.split_to(i + 1);
            line.truncate(i - 1);
            Ok(Some(line))
        }
        Some(_) => Err(H1Error::Invalid("line in chunked body not ended by CRLF")),
        None if buf.len() >= MAX_LINE => Err(H1Error::Invalid("chunk line longer than 4 KiB")),
        None => Ok(None),
    }
}

/// `chunk-size [ chunk-ext ]`: hexadecimal digits, then optional whitespace and extensions.
fn chunk_size(line: &[u8]) -> Result<u64, H1Error> {
    let digits = line
        .iter()
        .position(|&b| !b.is_ascii_hexdigit())
        .unwrap_or(line.len());
    if digits == 0 || digits > 15 {
        return Err(H1Error::Invalid("bad chunk size"));
    }
    let rest = line[digits..].trim_ascii_start();
    if !(rest.is_empty() || rest[0] == b';') {
        return Err(H1Error::Invalid("bad chunk size"));
    }
    let mut n = 0u64;
    for &d in &line[..digits] {
        let v = char::from(d)
            .to_digit(16)
            .ok_or(H1Error::Invalid("bad chunk size"))?;
        n = n * 16 + u64::from(v);
    }
    Ok(n)
}

/// Fuzzing entry point (`fuzz/`): `data` is what a server sent, after one control byte (bit 0:
/// the request was HEAD; the rest: the size of each read). Heads (interim ones included) are
/// parsed and the body decoded as the pool does; nothing may panic.
#[doc(hidden)]
pub(crate) fn fuzz_response(data: &[u8]) {
    let Some((&ctl, data)) = data.split_first() else {
        return;
    };
    let head_request = ctl & 1 == 1;
    let step = usize::from(ctl >> 1).max(1);
    let mut input = data.chunks(step);
    let mut buf = BytesMut::new();
    let mut spans = Vec::new();
    let mut interim = 0;
    let head = loop {
        match parse_head(&mut buf, &mut spans, head_request) {
            Ok(Some(h)) if h.status.is_informational() && interim < MAX_INTERIM => interim += 1,
            Ok(Some(h)) => break h,
            Ok(None) => match input.next() {
                Some(piece) => buf.extend_from_slice(piece),
                None => return,
            },
            Err(_) => return,
        }
    };
    let mut dec = Decoder::new(head.framing);
    loop {
        match dec.decode(&mut buf) {
            Ok(Step::Data(_)) => {}
            Ok(Step::More) => match input.next() {
                Some(piece) => buf.extend_from_slice(piece),
                None => {
                    let _ = dec.eof();
                    return;
                }
            },
            Ok(Step::End) | Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(bytes: &[u8], head_request: bool) -> Result<Option<Head>, H1Error> {
        parse_head(&mut BytesMut::from(bytes), &mut Vec::new(), head_request)
    }

    fn framing_of(bytes: &[u8]) -> (Framing, bool) {
        let h = head(bytes, false).unwrap().unwrap();
        (h.framing, h.keep_alive)
    }

    /// Decodes `input` fed in pieces of `step` bytes; the body and the bytes left over.
    fn decode_in_pieces(
        framing: Framing,
        input: &[u8],
        step: usize,
    ) -> Result<(Vec<u8>, Vec<u8>), H1Error> {
        let mut dec = Decoder::new(framing);
        let mut buf = BytesMut::new();
        let mut body = Vec::new();
        let mut fed = 0;
        loop {
            match dec.decode(&mut buf)? {
                Step::Data(d) => body.extend_from_slice(&d),
                Step::End => return Ok((body, buf.to_vec())),
                Step::More if fed < input.len() => {
                    let end = (fed + step).min(input.len());
                    buf.extend_from_slice(&input[fed..end]);
                    fed = end;
                }
                Step::More => match dec.eof()? {
                    Step::End => return Ok((body, buf.to_vec())),
                    other => panic!("{other:?}"),
                },
            }
        }
    }

    #[test]
    fn a_head_is_parsed_and_removed_from_the_buffer() {
        let mut buf = BytesMut::from(
            &b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: 1\r\nx-a: 2\r\n\r\nokNEXT"[..],
        );
        let h = parse_head(&mut buf, &mut Vec::new(), false)
            .unwrap()
            .unwrap();
        assert_eq!(h.status, StatusCode::OK);
        assert_eq!(h.version, Version::HTTP_11);
        assert_eq!(h.framing, Framing::Length(2));
        assert!(h.keep_alive);
        let xa: Vec<_> = h.headers.get_all("x-a").iter().collect();
        assert_eq!(xa, ["1", "2"]);
        assert_eq!(&buf[..], b"okNEXT");
    }

    #[test]
    fn an_incomplete_head_asks_for_more_and_a_huge_one_is_refused() {
        assert!(
            head(b"HTTP/1.1 200 OK\r\nContent-Le", false)
                .unwrap()
                .is_none()
        );
        let mut big = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        big.resize(MAX_HEAD + 10, b'a');
        assert!(matches!(head(&big, false), Err(H1Error::Invalid(_))));
    }

    #[test]
    fn garbage_and_bad_status_are_invalid() {
        assert!(matches!(
            head(b"SSH-2.0-OpenSSH\r\n\r\n", false),
            Err(H1Error::Invalid(_))
        ));
        assert!(matches!(
            head(b"HTTP/1.1 1000 Huh\r\n\r\n", false),
            Err(H1Error::Invalid(_))
        ));
        let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..101 {
            many.extend_from_slice(format!("x-{i}: v\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        assert!(matches!(head(&many, false), Err(H1Error::Invalid(_))));
    }

    #[test]
    fn hop_by_hop_fields_are_left_out_of_the_response_map() {
        // Nine names listed: past the eight kept apart, every line is searched.
        let many = head(
            b"HTTP/1.1 204 No Content\r\nConnection: a, b, c, d, e, f, g, h, X-Ninth\r\nX-Ninth: 1\r\nA: 1\r\nX-Kept: 1\r\n\r\n",
            false,
        )
        .unwrap()
        .unwrap();
        let names: Vec<&str> = many.headers.keys().map(HeaderName::as_str).collect();
        assert_eq!(names, ["x-kept"]);
        let h = head(
            b"HTTP/1.1 200 OK\r\nConnection: keep-alive, X-Secret\r\nX-Secret: 1\r\nKeep-Alive: timeout=5\r\nconnection: x-other\r\nX-Other: 2\r\nTransfer-Encoding: chunked\r\nTrailer: x-t\r\nX-End: y\r\n\r\n",
            false,
        )
        .unwrap()
        .unwrap();
        let names: Vec<&str> = h.headers.keys().map(HeaderName::as_str).collect();
        assert_eq!(names, ["x-end"]);
        // What the fields said is still obeyed.
        assert_eq!(h.framing, Framing::Chunked);
        assert!(h.keep_alive);
    }

    #[test]
    fn framing_follows_rfc_9112() {
        assert_eq!(
            framing_of(b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n"),
            (Framing::Empty, true)
        );
        assert_eq!(
            framing_of(b"HTTP/1.1 304 Not Modified\r\n\r\n"),
            (Framing::Empty, true)
        );
        assert_eq!(
            framing_of(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"),
            (Framing::Chunked, true)
        );
        // Transfer coding wins over Content-Length, and the connection is not reused.
        assert_eq!(
            framing_of(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"
            ),
            (Framing::Chunked, false)
        );
        assert_eq!(
            framing_of(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"),
            (Framing::Close, false)
        );
        assert_eq!(
            framing_of(b"HTTP/1.1 200 OK\r\n\r\n"),
            (Framing::Close, false)
        );
        assert_eq!(
            framing_of(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
            (Framing::Empty, true)
        );
        assert_eq!(
            framing_of(b"HTTP/1.1 200 OK\r\nContent-Length: 7, 7\r\n\r\n"),
            (Framing::Length(7), true)
        );
        assert_eq!(
            framing_of(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\n"),
            (Framing::Length(1), false)
        );
        assert_eq!(
            framing_of(b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n"),
            (Framing::Length(1), false)
        );
        assert_eq!(
            framing_of(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\n"),
            (Framing::Length(1), true)
        );
        let h = head(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", true)
            .unwrap()
            .unwrap();
        assert_eq!(h.framing, Framing::Empty, "a HEAD response has no body");
        for bad in [
            &b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        ] {
            assert!(
                matches!(head(bad, false), Err(H1Error::Invalid(_))),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn chunked_bodies_decode_whatever_the_read_boundaries() {
        let input = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\nNEXT";
        for step in 1..input.len() {
            let (body, rest) = decode_in_pieces(Framing::Chunked, input, step).unwrap();
            assert_eq!(body, b"hello, world", "step {step}");
            // Bytes after the body stay in the buffer (only what was fed so far).
            assert!(b"NEXT".starts_with(&rest), "step {step}: {rest:?}");
        }
    }

    #[test]
    fn bad_chunked_bodies_are_errors() {
        for bad in [
            &b"zz\r\nhello\r\n0\r\n\r\n"[..],
            b"5\r\nhelloXX0\r\n\r\n",
            b"5\nhello\r\n0\r\n\r\n",
            b"1234567890abcdef\r\n",
            b"5 junk\r\nhello\r\n0\r\n\r\n",
        ] {
            assert!(
                decode_in_pieces(Framing::Chunked, bad, 3).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        // A server that closes mid-body truncates it.
        assert!(matches!(
            decode_in_pieces(Framing::Chunked, b"5\r\nhel", 100),
            Err(H1Error::Truncated)
        ));
        assert!(matches!(
            decode_in_pieces(Framing::Length(10), b"hello", 100),
            Err(H1Error::Truncated)
        ));
        let long = vec![b'1'; MAX_LINE + 1];
        assert!(decode_in_pieces(Framing::Chunked, &long, 1000).is_err());
    }

    #[test]
    fn length_and_close_delimited_bodies() {
        let (body, rest) = decode_in_pieces(Framing::Length(5), b"helloNEXT", 3).unwrap();
        assert_eq!(body, b"hello");
        // Fed "hel", then "loN": the byte after the body stays in the buffer.
        assert_eq!(rest, b"N");
        let (body, _) = decode_in_pieces(Framing::Close, b"until the end", 4).unwrap();
        assert_eq!(body, b"until the end");
    }

    #[test]
    fn the_request_head_is_origin_form_with_every_header() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_static("app"));
        headers.append("x-multi", HeaderValue::from_static("1"));
        headers.append("x-multi", HeaderValue::from_static("2"));
        let req = Bodiless {
            method: &Method::GET,
            target: "/a?b=c",
            host: None,
            headers: &headers,
            extra: None,
        };
        let mut out = Vec::new();
        encode_request(&mut out, &req);
        assert_eq!(
            out,
            b"GET /a?b=c HTTP/1.1\r\nhost: app\r\nx-multi: 1\r\nx-multi: 2\r\n\r\n"
        );
        // A `Host` value given apart replaces the field and comes first; extra fields come last.
        let to = HeaderValue::from_static("backend:8080");
        // A trusted peer that sent Proto, Host and Port: the proxy adds Server and Real-Ip.
        let mut sent = HeaderMap::new();
        for name in ["x-forwarded-proto", "x-forwarded-host", "x-forwarded-port"] {
            sent.insert(name, HeaderValue::from_static("kept"));
        }
        let (peer, server) = (
            HeaderValue::from_static("192.0.2.1"),
            HeaderValue::from_static("bridge"),
        );
        let inc = crate::proxy::forwarded_headers::Incoming {
            peer: "192.0.2.1".parse().unwrap(),
            tls: false,
            upgrade: false,
            host: Some(&to),
            entrypoint_port: 80,
        };
        let trust = crate::proxy::forwarded_headers::Trust::new(&bridge_plan::ForwardedHeaders {
            insecure: true,
            trusted_ips: Vec::new(),
        });
        let f = crate::proxy::forwarded_headers::forwarded(&mut sent, &inc, &trust);
        let src = crate::proxy::forwarded_headers::Sources {
            host: Some(&to),
            peer: &peer,
            server_name: &server,
        };
        out.clear();
        encode_request(
            &mut out,
            &Bodiless {
                host: Some(&to),
                method: &Method::HEAD,
                extra: Some((&f, src)),
                ..req
            },
        );
        assert_eq!(
            out,
            b"HEAD /a?b=c HTTP/1.1\r\nhost: backend:8080\r\nx-multi: 1\r\nx-multi: 2\r\nx-forwarded-server: bridge\r\nx-real-ip: 192.0.2.1\r\n\r\n"
        );
    }

    #[test]
    fn only_bodiless_repeatable_requests_take_this_codec() {
        let h = HeaderMap::new();
        assert!(eligible(&Method::GET, &h, true));
        assert!(eligible(&Method::HEAD, &h, true));
        assert!(!eligible(&Method::POST, &h, true));
        assert!(!eligible(&Method::GET, &h, false));
        let mut up = HeaderMap::new();
        up.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        assert!(!eligible(&Method::GET, &up, true));
        let mut cl = HeaderMap::new();
        cl.insert(header::CONTENT_LENGTH, HeaderValue::from_static("0"));
        assert!(eligible(&Method::GET, &cl, true));
        cl.insert(header::CONTENT_LENGTH, HeaderValue::from_static("3"));
        assert!(!eligible(&Method::GET, &cl, true));
    }

    proptest::proptest! {
        /// Any chunking of any body decodes back to the body, split at any read boundary.
        #[test]
        fn chunked_round_trip(body in proptest::collection::vec(proptest::num::u8::ANY, 0..600),
                              sizes in proptest::collection::vec(1usize..90, 1..20),
                              step in 1usize..64) {
            let mut input = Vec::new();
            let mut rest = &body[..];
            let mut i = 0;
            while !rest.is_empty() {
                let n = sizes[i % sizes.len()].min(rest.len());
                input.extend_from_slice(format!("{n:x}\r\n").as_bytes());
                input.extend_from_slice(&rest[..n]);
                input.extend_from_slice(b"\r\n");
                rest = &rest[n..];
                i += 1;
            }
            input.extend_from_slice(b"0\r\n\r\n");
            let (decoded, left) = decode_in_pieces(Framing::Chunked, &input, step).unwrap();
            proptest::prop_assert_eq!(decoded, body);
            proptest::prop_assert!(left.is_empty());
        }

        /// The response map keeps exactly the end-to-end fields: none of the hop-by-hop names,
        /// none `Connection` lists (any case, any spacing, any number of lines or names), every
        /// other field with its value.
        #[test]
        fn response_map_keeps_exactly_the_end_to_end_fields(
            fields in proptest::collection::vec(
                (proptest::sample::select(vec![
                    "X-A", "x-b", "X-C", "Keep-Alive", "TE", "Trailer", "Upgrade",
                    "Proxy-Connection", "Server", "x-d", "X-E", "Date",
                ]), "[a-z]{0,6}"),
                0..12,
            ),
            lines in proptest::collection::vec(
                proptest::collection::vec(
                    (proptest::sample::select(vec![
                        "x-a", "X-B", "close", "keep-alive", "", "x-e", "X-Nothing", "server",
                    ]), " {0,2}"),
                    0..11,
                ),
                0..3,
            ),
        ) {
            let mut raw = String::from("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n");
            let mut listed: Vec<String> = Vec::new();
            for line in &lines {
                let tokens: Vec<String> = line.iter().map(|(t, pad)| format!("{pad}{t}{pad}")).collect();
                raw.push_str(&format!("Connection: {}\r\n", tokens.join(",")));
                listed.extend(line.iter().map(|(t, _)| t.to_ascii_lowercase()));
            }
            for (name, value) in &fields {
                raw.push_str(&format!("{name}: {value}\r\n"));
            }
            raw.push_str("\r\n");
            let h = head(raw.as_bytes(), false).unwrap().unwrap();
            let mut expected: Vec<(String, String)> = std::iter::once(("content-length".to_owned(), "0".to_owned()))
                .chain(fields.iter().map(|(n, v)| (n.to_ascii_lowercase(), v.clone())))
                .filter(|(n, _)| {
                    !crate::proxy::forwarded_headers::is_hop_by_hop(n.as_bytes()) && !listed.contains(n)
                })
                .collect();
            let mut got: Vec<(String, String)> = h
                .headers
                .iter()
                .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap().to_owned()))
                .collect();
            expected.sort();
            got.sort();
            proptest::prop_assert_eq!(got, expected);
        }

        /// Arbitrary bytes never panic the head parser or the chunked decoder.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let _ = head(&bytes, false);
            let _ = decode_in_pieces(Framing::Chunked, &bytes, 7);
        }
    }
}
