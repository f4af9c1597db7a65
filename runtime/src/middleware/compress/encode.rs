//! The answer through `compress`: its fields decided once enough of the body came, then a body
//! that encodes each frame as it arrives.
//!
//! [`respond`] holds at most `minResponseBodyBytes` of the body (what Traefik's handlers hold)
//! before the head goes out. The encoder body writes each frame into the codec and sends what
//! the codec gave back; it flushes the codec after every frame of an answer the proxy flushes
//! per chunk (no length, event streams: Traefik's proxy flushes those after each write), and
//! otherwise whenever the upstream has nothing more ready — so a slow answer is not held back
//! by the codec, and a fast one is encoded in large blocks. Memory is the codec's window and one
//! frame, whatever the body's size.

use std::io::Write;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bridge_plan::ContentCoding;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, header};
use http_body_util::BodyExt as _;
use hyper::body::{Body as _, Frame, SizeHint};

use super::decide::{Decider, NO_GZIP, Verdict};
use super::{Choice, Compress};
use crate::body::{Body, BoxError};

/// `Vary: Accept-Encoding` as the first `Vary` line, before the upstream's own (Traefik adds
/// it before the upstream fields are copied, and never merges them).
fn vary_first(fields: &mut HeaderMap) {
    let theirs: Vec<HeaderValue> = match fields.entry(header::VARY) {
        header::Entry::Occupied(e) => e.remove_entry_mult().1.collect(),
        header::Entry::Vacant(_) => Vec::new(),
    };
    fields.append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    for v in theirs {
        fields.append(header::VARY, v);
    }
}

/// The answer as `compress` leaves it for a request that chose `choice` (not [`Choice::Pass`]).
///
/// `sniff`: a `contentType` middleware is in the chain, so gzhttp, which sniffs an untyped answer
/// to decide, also writes the type it found (Traefik's br/zstd handler leaves an encoded answer
/// untyped: Go does not sniff an encoded body).
pub(crate) async fn respond(
    m: &Compress,
    choice: Choice,
    mut resp: Response<Body>,
    sniff: bool,
) -> Response<Body> {
    vary_first(resp.headers_mut());
    let coding = match choice {
        Choice::Pass => return resp,
        Choice::VaryOnly => {
            // gzhttp's pass-through writer still strips the field meant for it.
            resp.headers_mut().remove(NO_GZIP);
            return resp;
        }
        Choice::Encode(c) => c,
    };
    // Traefik's proxy flushes a server's answer without length after every write; the proxy's
    // own answers carry their length (`crate::body::answer`) and are written at once.
    let length_known = resp.headers().contains_key(header::CONTENT_LENGTH);
    let decider = Decider::new(m, coding, resp.headers(), length_known);
    if coding == ContentCoding::Gzip {
        resp.headers_mut().remove(NO_GZIP);
    }
    if Decider::bodiless(resp.status()) || resp.body().is_end_stream() {
        return resp;
    }
    let (mut parts, mut body) = resp.into_parts();
    let mut held: Vec<u8> = Vec::new();
    let verdict = loop {
        match body.frame().await {
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => {
                    if data.is_empty() {
                        continue;
                    }
                    held.extend_from_slice(&data);
                    match decider.write(&held) {
                        Verdict::Wait if decider.flushes => break decider.flush(&held),
                        Verdict::Wait => {}
                        v => break v,
                    }
                }
                Err(frame) => {
                    typed(
                        &mut parts.headers,
                        sniff && coding == ContentCoding::Gzip,
                        &held,
                    );
                    let verdict = decider.end(&held);
                    let rest = Replay::trailers(frame.into_trailers().ok());
                    return finish(parts, coding, verdict, held, rest);
                }
            },
            None => {
                typed(
                    &mut parts.headers,
                    sniff && coding == ContentCoding::Gzip,
                    &held,
                );
                let verdict = decider.end(&held);
                return finish(parts, coding, verdict, held, Replay::trailers(None));
            }
            Some(Err(e)) => {
                // What came is passed on as it is, then the error, as an unencoded answer.
                let body = Replay {
                    head: Some(Bytes::from(held)),
                    rest: Rest::Failed(Some(e)),
                };
                return Response::from_parts(parts, http_body_util::BodyExt::boxed(body));
            }
        }
    };
    typed(
        &mut parts.headers,
        sniff && coding == ContentCoding::Gzip,
        &held,
    );
    match verdict {
        Verdict::Encode => {
            start(&mut parts.headers, coding);
            let mut enc = Encoder::new(coding);
            let out = enc.push(&held, decider.flushes);
            let body = Encoded {
                inner: Some(body),
                codec: Some(enc),
                out: out.map_err(|e| Box::new(e) as BoxError),
                trailers: None,
                flush_each: decider.flushes,
                unflushed: !decider.flushes,
            };
            Response::from_parts(parts, http_body_util::BodyExt::boxed(body))
        }
        _ => {
            let body = Replay {
                head: Some(Bytes::from(held)),
                rest: Rest::Body(body),
            };
            Response::from_parts(parts, http_body_util::BodyExt::boxed(body))
        }
    }
}

/// gzhttp's sniffed type, written when `contentType` re-enabled Go's detection.
fn typed(fields: &mut HeaderMap, sniff: bool, held: &[u8]) {
    let encoded = fields
        .get(header::CONTENT_ENCODING)
        .is_some_and(|v| !v.is_empty());
    if sniff && !encoded && !held.is_empty() && !fields.contains_key(header::CONTENT_TYPE) {
        fields.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(super::sniff::detect(held)),
        );
    }
}

/// The fields of an encoded answer.
fn start(fields: &mut HeaderMap, coding: ContentCoding) {
    fields.remove(header::CONTENT_LENGTH);
    if coding == ContentCoding::Gzip {
        fields.remove(header::ACCEPT_RANGES);
    }
    fields.insert(
        header::CONTENT_ENCODING,
        HeaderValue::from_static(coding.token()),
    );
}

/// The body ended while held: the whole answer is known.
fn finish(
    mut parts: http::response::Parts,
    coding: ContentCoding,
    verdict: Verdict,
    held: Vec<u8>,
    rest: Replay,
) -> Response<Body> {
    if verdict == Verdict::Encode {
        let mut enc = Encoder::new(coding);
        if let Ok(mut out) = enc.push(&held, false)
            && let Ok(tail) = enc.finish()
        {
            start(&mut parts.headers, coding);
            out.extend_from_slice(&tail);
            let body = Replay {
                head: Some(Bytes::from(out)),
                rest: rest.rest,
            };
            return Response::from_parts(parts, http_body_util::BodyExt::boxed(body));
        }
    }
    let body = Replay {
        head: Some(Bytes::from(held)),
        rest: rest.rest,
    };
    Response::from_parts(parts, http_body_util::BodyExt::boxed(body))
}

/// One codec writing into a buffer the body empties after every frame.
enum Encoder {
    Gzip(flate2::write::GzEncoder<Vec<u8>>),
    // Boxed: brotli's state is large, and most answers are gzip.
    Br(Option<Box<brotli::CompressorWriter<Vec<u8>>>>),
    Zstd(zstd::stream::write::Encoder<'static, Vec<u8>>),
    /// zstd could not be set up (its allocation failed): the answer fails.
    Broken,
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Gzip(_) => "Encoder::Gzip",
            Self::Br(_) => "Encoder::Br",
            Self::Zstd(_) => "Encoder::Zstd",
            Self::Broken => "Encoder::Broken",
        })
    }
}

/// Traefik's settings: klauspost's default gzip level (5), brotli quality 6 with a 4 MiB window
/// (lgwin 22), zstd's default level (3) with its checksum on.
const GZIP_LEVEL: u32 = 5;
const BROTLI_QUALITY: u32 = 6;
const BROTLI_LGWIN: u32 = 22;
const ZSTD_LEVEL: i32 = 3;

impl Encoder {
    fn new(coding: ContentCoding) -> Self {
        match coding {
            ContentCoding::Gzip => Self::Gzip(flate2::write::GzEncoder::new(
                Vec::new(),
                flate2::Compression::new(GZIP_LEVEL),
            )),
            ContentCoding::Br => Self::Br(Some(Box::new(brotli::CompressorWriter::new(
                Vec::new(),
                4096,
                BROTLI_QUALITY,
                BROTLI_LGWIN,
            )))),
            ContentCoding::Zstd => {
                match zstd::stream::write::Encoder::new(Vec::new(), ZSTD_LEVEL).and_then(|mut e| {
                    e.include_checksum(true)?;
                    Ok(e)
                }) {
                    Ok(e) => Self::Zstd(e),
                    Err(_) => Self::Broken,
                }
            }
        }
    }

    fn sink(&mut self) -> Option<&mut Vec<u8>> {
        match self {
            Self::Gzip(e) => Some(e.get_mut()),
            Self::Br(Some(e)) => Some(e.get_mut()),
            Self::Zstd(e) => Some(e.get_mut()),
            Self::Br(None) | Self::Broken => None,
        }
    }

    /// The codec as a writer; `None` once brotli's was finished or zstd's never set up.
    fn writer(&mut self) -> Option<&mut dyn Write> {
        match self {
            Self::Gzip(e) => Some(e),
            Self::Br(Some(e)) => Some(&mut **e),
            Self::Zstd(e) => Some(e),
            Self::Br(None) | Self::Broken => None,
        }
    }

    /// Encodes `data`, flushing the codec when asked; what the codec produced so far.
    fn push(&mut self, data: &[u8], flush: bool) -> std::io::Result<Vec<u8>> {
        let w = self
            .writer()
            .ok_or_else(|| std::io::Error::other("no encoder"))?;
        w.write_all(data)?;
        if flush {
            w.flush()?;
        }
        Ok(self.sink().map(std::mem::take).unwrap_or_default())
    }

    /// Ends the stream; its last bytes.
    fn finish(&mut self) -> std::io::Result<Vec<u8>> {
        match self {
            Self::Gzip(e) => {
                e.try_finish()?;
                Ok(std::mem::take(e.get_mut()))
            }
            Self::Br(e) => Ok(e.take().map(|e| e.into_inner()).unwrap_or_default()),
            Self::Zstd(e) => {
                e.do_finish()?;
                Ok(std::mem::take(e.get_mut()))
            }
            Self::Broken => Err(std::io::Error::other("no encoder")),
        }
    }
}

/// The encoded body.
#[derive(Debug)]
struct Encoded {
    /// `None` once the upstream body ended.
    inner: Option<Body>,
    /// `None` once finished.
    codec: Option<Encoder>,
    /// Bytes produced and not yet sent, or the codec's error.
    out: Result<Vec<u8>, BoxError>,
    trailers: Option<HeaderMap>,
    /// The codec is flushed after every frame (the proxy flushes this answer per chunk).
    flush_each: bool,
    /// Bytes went into the codec since its last flush.
    unflushed: bool,
}

impl Encoded {
    /// Everything the codec produced, as a frame, if anything.
    fn take_out(&mut self) -> Option<Result<Frame<Bytes>, BoxError>> {
        match &mut self.out {
            Ok(out) if out.is_empty() => None,
            Ok(out) => Some(Ok(Frame::data(Bytes::from(std::mem::take(out))))),
            Err(_) => {
                let e = std::mem::replace(&mut self.out, Ok(Vec::new()));
                e.err().map(Err)
            }
        }
    }

    fn feed(&mut self, data: &[u8], flush: bool) {
        self.unflushed = !flush;
        if let Some(c) = &mut self.codec {
            match c.push(data, flush) {
                Ok(more) => match &mut self.out {
                    Ok(out) if out.is_empty() => *out = more,
                    Ok(out) => out.extend_from_slice(&more),
                    Err(_) => {}
                },
                Err(e) => self.out = Err(Box::new(e)),
            }
        }
    }

    fn end(&mut self) {
        self.inner = None;
        if let Some(mut c) = self.codec.take() {
            match c.finish() {
                Ok(tail) => {
                    if let Ok(out) = &mut self.out {
                        out.extend_from_slice(&tail);
                    }
                }
                Err(e) => self.out = Err(Box::new(e)),
            }
        }
    }
}

impl hyper::body::Body for Encoded {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        loop {
            if let Some(frame) = this.take_out() {
                return Poll::Ready(Some(frame));
            }
            let Some(inner) = &mut this.inner else {
                return Poll::Ready(this.trailers.take().map(|t| Ok(Frame::trailers(t))));
            };
            match Pin::new(inner).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) if data.is_empty() => {}
                    Ok(data) => this.feed(&data, this.flush_each),
                    Err(frame) => {
                        this.trailers = frame.into_trailers().ok();
                        this.end();
                    }
                },
                Poll::Ready(Some(Err(e))) => {
                    this.inner = None;
                    this.codec = None;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(None) => this.end(),
                Poll::Pending => {
                    // Nothing more is ready: what the codec holds goes out now.
                    if this.unflushed {
                        this.feed(&[], true);
                        if let Some(frame) = this.take_out() {
                            return Poll::Ready(Some(frame));
                        }
                    }
                    return Poll::Pending;
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_none()
            && self.codec.is_none()
            && self.trailers.is_none()
            && matches!(&self.out, Ok(o) if o.is_empty())
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

/// What follows the held bytes of an answer sent as it came.
#[derive(Debug)]
enum Rest {
    Body(Body),
    Trailers(Option<HeaderMap>),
    Failed(Option<BoxError>),
}

/// `head`, then `rest`: an answer whose first bytes were read to decide on it.
pub(crate) fn replay(head: Bytes, rest: Body) -> Body {
    http_body_util::BodyExt::boxed(Replay {
        head: Some(head),
        rest: Rest::Body(rest),
    })
}

/// A body that is only `trailers` (an answer whose trailers came before any data).
pub(crate) fn trailers_only(trailers: HeaderMap) -> Body {
    http_body_util::BodyExt::boxed(Replay::trailers(Some(trailers)))
}

/// A body that fails with `e` at once (an answer whose body failed while it was read to decide).
pub(crate) fn failed(e: BoxError) -> Body {
    http_body_util::BodyExt::boxed(Replay {
        head: None,
        rest: Rest::Failed(Some(e)),
    })
}

/// The held bytes, then the rest.
#[derive(Debug)]
struct Replay {
    head: Option<Bytes>,
    rest: Rest,
}

impl Replay {
    fn trailers(t: Option<HeaderMap>) -> Self {
        Self {
            head: None,
            rest: Rest::Trailers(t),
        }
    }
}

impl hyper::body::Body for Replay {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if let Some(head) = this.head.take()
            && !head.is_empty()
        {
            return Poll::Ready(Some(Ok(Frame::data(head))));
        }
        match &mut this.rest {
            Rest::Body(b) => Poll::Ready(ready!(Pin::new(b).poll_frame(cx))),
            Rest::Trailers(t) => Poll::Ready(t.take().map(|t| Ok(Frame::trailers(t)))),
            Rest::Failed(e) => Poll::Ready(e.take().map(Err)),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.head.as_ref().is_none_or(Bytes::is_empty)
            && match &self.rest {
                Rest::Body(b) => b.is_end_stream(),
                Rest::Trailers(t) => t.is_none(),
                Rest::Failed(e) => e.is_none(),
            }
    }

    fn size_hint(&self) -> SizeHint {
        let head = self.head.as_ref().map_or(0, |h| h.len() as u64);
        let rest = match &self.rest {
            Rest::Body(b) => b.size_hint(),
            Rest::Trailers(_) | Rest::Failed(_) => SizeHint::with_exact(0),
        };
        let mut hint = SizeHint::new();
        hint.set_lower(rest.lower().saturating_add(head));
        if let Some(upper) = rest.upper() {
            hint.set_upper(upper.saturating_add(head));
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::io::Read as _;

    use bridge_plan::MediaTypeFilter;
    use http_body_util::BodyExt as _;
    use proptest::prelude::*;

    use super::*;

    /// A body sending `chunks`, with a `Pending` before every other one (the upstream not ready).
    #[derive(Debug)]
    struct Chunks {
        chunks: VecDeque<Bytes>,
        stall: bool,
    }

    impl hyper::body::Body for Chunks {
        type Data = Bytes;
        type Error = BoxError;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
            self.stall = !self.stall;
            if self.stall && !self.chunks.is_empty() {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            Poll::Ready(self.chunks.pop_front().map(|c| Ok(Frame::data(c))))
        }
    }

    fn compress(min: u64) -> Compress {
        Compress::from_plan(&bridge_plan::Compress {
            encodings: vec![ContentCoding::Gzip, ContentCoding::Br, ContentCoding::Zstd],
            wildcard: ContentCoding::Gzip,
            default_encoding: None,
            min_response_body_bytes: min,
            media_types: MediaTypeFilter::Exclude(vec!["application/grpc".into()]),
        })
    }

    fn answer(chunks: Vec<Bytes>, length: bool) -> Response<Body> {
        let total: usize = chunks.iter().map(Bytes::len).sum();
        let mut r = Response::new(
            Chunks {
                chunks: chunks.into(),
                stall: false,
            }
            .boxed(),
        );
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        if length {
            r.headers_mut()
                .insert(header::CONTENT_LENGTH, HeaderValue::from(total));
        }
        r
    }

    fn run(m: &Compress, coding: ContentCoding, resp: Response<Body>) -> (HeaderMap, Vec<Bytes>) {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(async {
                let resp = respond(m, Choice::Encode(coding), resp, false).await;
                let (parts, mut body) = resp.into_parts();
                let mut frames = Vec::new();
                while let Some(f) = body.frame().await {
                    if let Ok(d) = f.unwrap().into_data() {
                        frames.push(d);
                    }
                }
                (parts.headers, frames)
            })
    }

    fn decode(coding: Option<&str>, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        match coding {
            None => out.extend_from_slice(bytes),
            Some("gzip") => {
                flate2::read::GzDecoder::new(bytes)
                    .read_to_end(&mut out)
                    .unwrap();
            }
            Some("br") => {
                brotli::Decompressor::new(bytes, 4096)
                    .read_to_end(&mut out)
                    .unwrap();
            }
            Some("zstd") => out = zstd::decode_all(bytes).unwrap(),
            Some(other) => panic!("unexpected coding {other}"),
        }
        out
    }

    fn coding_of(h: &HeaderMap) -> Option<&str> {
        h.get(header::CONTENT_ENCODING).map(|v| v.to_str().unwrap())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        /// Whatever the chunking, the length framing and the minimum, the client decodes
        /// exactly the upstream body, encoded when it reached the minimum (or had no length).
        #[test]
        fn round_trip_at_any_chunking(
            body in proptest::collection::vec(any::<u8>(), 0..6000),
            cuts in proptest::collection::vec(0usize..6000, 0..12),
            coding in prop_oneof![
                Just(ContentCoding::Gzip), Just(ContentCoding::Br), Just(ContentCoding::Zstd)
            ],
            length in any::<bool>(),
            min in 1u64..3000,
        ) {
            let mut cuts: Vec<usize> = cuts.into_iter().filter(|c| *c < body.len()).collect();
            cuts.sort_unstable();
            cuts.dedup();
            let mut chunks = Vec::new();
            let mut from = 0;
            for c in cuts.into_iter().chain([body.len()]) {
                chunks.push(Bytes::copy_from_slice(&body[from..c]));
                from = c;
            }
            let m = compress(min);
            let (fields, frames) = run(&m, coding, answer(chunks, length));
            let sent: Vec<u8> = frames.concat();
            prop_assert_eq!(&decode(coding_of(&fields), &sent), &body);
            let encoded = coding_of(&fields).is_some();
            let want = !body.is_empty() && (!length || body.len() as u64 >= min);
            prop_assert_eq!(encoded, want);
            prop_assert_eq!(fields.contains_key(header::CONTENT_LENGTH), length && !encoded);
            prop_assert_eq!(fields.get(header::VARY).unwrap(), "Accept-Encoding");
        }
    }

    #[test]
    fn an_answer_without_length_is_sent_as_its_chunks_come() {
        // Each upstream chunk is one encoded frame the client can decode at once (Traefik's
        // proxy flushes after every write of such an answer).
        for coding in [ContentCoding::Gzip, ContentCoding::Br, ContentCoding::Zstd] {
            let chunks = vec![Bytes::from_static(b"data: one\n\n"); 3];
            let (fields, frames) = run(&compress(1024), coding, answer(chunks, false));
            assert_eq!(coding_of(&fields), Some(coding.token()));
            assert!(frames.len() >= 3, "{coding:?}: {} frames", frames.len());
        }
    }

    #[test]
    fn upstream_vary_lines_follow_ours() {
        let mut resp = answer(vec![Bytes::from_static(b"x")], true);
        resp.headers_mut()
            .append(header::VARY, HeaderValue::from_static("Origin"));
        resp.headers_mut()
            .append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
        let (fields, _) = run(&compress(1024), ContentCoding::Br, resp);
        let vary: Vec<&str> = fields
            .get_all(header::VARY)
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect();
        assert_eq!(vary, ["Accept-Encoding", "Origin", "Accept-Encoding"]);
    }

    #[test]
    fn gzip_drops_accept_ranges_and_no_gzip_compression_br_keeps_them() {
        let big = Bytes::from(vec![b'a'; 4096]);
        for (coding, ranges_kept) in [(ContentCoding::Gzip, false), (ContentCoding::Br, true)] {
            let mut resp = answer(vec![big.clone()], true);
            resp.headers_mut()
                .insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
            let (fields, _) = run(&compress(1024), coding, resp);
            assert_eq!(
                fields.contains_key(header::ACCEPT_RANGES),
                ranges_kept,
                "{coding:?}"
            );
            let mut resp = answer(vec![big.clone()], true);
            resp.headers_mut()
                .insert(NO_GZIP, HeaderValue::from_static("1"));
            let (fields, _) = run(&compress(1024), coding, resp);
            let gzip = coding == ContentCoding::Gzip;
            assert_eq!(coding_of(&fields).is_some(), !gzip, "{coding:?}");
            assert_eq!(fields.contains_key(NO_GZIP), !gzip, "{coding:?}");
        }
    }
}
