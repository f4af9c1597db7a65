//! `buffering`, as Traefik's vulcand/oxy buffer does it: the whole request body is read (and
//! limited) before anything goes on, the whole answer is held (and limited) before the client
//! gets any of it, and a request with a body is replayed through the rest of the chain while the
//! plan's retry condition holds for the attempt that just ended. This module holds the pure
//! parts (limits, the condition, the answers) and the reading of the bodies ([`store`]); the
//! attempt loop, which sends requests, lives with the proxy (`proxy::buffered`).

use bridge_plan::{Comparison, RetryCondition, RetryCounter};
use bytes::Bytes;
use http::{HeaderMap, Method, Response, StatusCode, header};
use http_body_util::BodyExt as _;

use crate::body::Body;
use crate::http1::server::RequestBody;

pub(crate) mod store;

use store::{Spill, Stored};

/// oxy's cap: the first attempt and at most ten replays.
const MAX_ATTEMPTS: u32 = 11;

/// One `buffering` middleware, built from the plan.
#[derive(Debug)]
pub(crate) struct Buffering {
    max_request: Option<u64>,
    mem_request: u64,
    max_response: Option<u64>,
    mem_response: u64,
    retry: Option<RetryCondition>,
}

/// Why a request body was not stored.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum RequestRefusal {
    /// More than `maxRequestBodyBytes` (declared or sent).
    TooLarge,
    /// The client went away, or stopped sending, before the body was complete.
    ClientGone,
    /// The temporary file could not be written.
    Storage,
}

/// Why an answer was not stored.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ResponseRefusal {
    /// More than `maxResponseBodyBytes`; the rest was read and dropped.
    TooLarge,
    /// The server's body failed, or the temporary file could not be written.
    Failed,
}

impl Buffering {
    /// The middleware the plan describes.
    pub(crate) fn from_plan(c: &bridge_plan::Buffering) -> Self {
        Self {
            max_request: c.max_request_body_bytes,
            mem_request: c.mem_request_body_bytes,
            max_response: c.max_response_body_bytes,
            mem_response: c.mem_response_body_bytes,
            retry: c.retry.clone(),
        }
    }

    /// The request side alone, for a failover's `errors` replay: up to `max` bytes (`None`: no
    /// limit), kept in memory up to 1 MiB and in a temporary file past it (Traefik keeps it all
    /// in memory).
    pub(crate) fn for_replay(max: Option<u64>) -> Self {
        Self {
            max_request: max,
            mem_request: 1 << 20,
            max_response: None,
            mem_response: 0,
            retry: None,
        }
    }

    /// oxy refuses at once, unread and without `100 Continue`, a body whose declared length is
    /// over the limit.
    pub(crate) fn declared_too_large(&self, fields: &HeaderMap) -> bool {
        let Some(max) = self.max_request else {
            return false;
        };
        fields
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            .is_some_and(|n| n > max)
    }

    /// Reads the whole request body.
    pub(crate) async fn read_request(
        &self,
        body: &mut RequestBody,
    ) -> Result<Stored, RequestRefusal> {
        let mut spill = Spill::new(self.mem_request);
        while let Some(frame) = body.frame().await {
            // Go's server cancels the request when reading from its connection fails.
            let frame = frame.map_err(|_| RequestRefusal::ClientGone)?;
            let Ok(data) = frame.into_data() else {
                // Trailers: oxy does not pass them on.
                continue;
            };
            if self
                .max_request
                .is_some_and(|max| spill.len() + data.len() as u64 > max)
            {
                return Err(RequestRefusal::TooLarge);
            }
            spill.push(data).await.map_err(|e| {
                tracing::error!("buffering: storing the request body: {e}");
                RequestRefusal::Storage
            })?;
        }
        spill.finish().await.map_err(|e| {
            tracing::error!("buffering: storing the request body: {e}");
            RequestRefusal::Storage
        })
    }

    /// Reads an attempt's whole answer body, and its trailers (a gRPC answer's status is
    /// there). Past the limit the rest is still read, as oxy's writer keeps telling the proxy
    /// it wrote, and then the answer is refused.
    pub(crate) async fn read_response(
        &self,
        mut body: Body,
    ) -> Result<(Stored, Option<HeaderMap>), ResponseRefusal> {
        let mut spill = Spill::new(self.mem_response);
        let mut over = false;
        let mut trailers: Option<HeaderMap> = None;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| {
                tracing::debug!("buffering: reading the answer: {e}");
                ResponseRefusal::Failed
            })?;
            let data = match frame.into_data() {
                Ok(data) => data,
                Err(frame) => {
                    if let Ok(t) = frame.into_trailers() {
                        trailers.get_or_insert_with(HeaderMap::new).extend(t);
                    }
                    continue;
                }
            };
            if over
                || self
                    .max_response
                    .is_some_and(|max| spill.len() + data.len() as u64 > max)
            {
                over = true;
                continue;
            }
            spill.push(data).await.map_err(|e| {
                tracing::error!("buffering: storing the answer: {e}");
                ResponseRefusal::Failed
            })?;
        }
        if over {
            tracing::error!("buffering: the answer is over maxResponseBodyBytes");
            return Err(ResponseRefusal::TooLarge);
        }
        let stored = spill.finish().await.map_err(|e| {
            tracing::error!("buffering: storing the answer: {e}");
            ResponseRefusal::Failed
        })?;
        Ok((stored, trailers))
    }

    /// After attempt `attempt` (the first is 1) of a request with a body of `body_len` bytes
    /// came back with `status`: is it replayed? Never for an empty body, never past oxy's cap.
    pub(crate) fn replays(
        &self,
        attempt: u32,
        status: u16,
        method: &Method,
        body_len: u64,
    ) -> bool {
        body_len != 0
            && attempt < MAX_ATTEMPTS
            && self
                .retry
                .as_ref()
                .is_some_and(|c| holds(c, attempt, status, method))
    }
}

/// The condition for one attempt.
fn holds(c: &RetryCondition, attempt: u32, status: u16, method: &Method) -> bool {
    match c {
        RetryCondition::Or(a, b) => {
            holds(a, attempt, status, method) || holds(b, attempt, status, method)
        }
        RetryCondition::And(a, b) => {
            holds(a, attempt, status, method) && holds(b, attempt, status, method)
        }
        RetryCondition::NetworkError => status == 502 || status == 504,
        RetryCondition::Count { counter, op, value } => {
            let n = match counter {
                RetryCounter::Attempts => i64::from(attempt),
                RetryCounter::ResponseCode => i64::from(status),
            };
            match op {
                Comparison::Lt => n < *value,
                Comparison::Le => n <= *value,
                Comparison::Gt => n > *value,
                Comparison::Ge => n >= *value,
                Comparison::Eq => n == *value,
                Comparison::Ne => n != *value,
            }
        }
        RetryCondition::Method { equal, method: m } => (method.as_str() == m) == *equal,
    }
}

/// The most of a refused body read and dropped before the answer, as Go's server reads it
/// (past it, Go closes the connection).
const DRAIN_MAX: u64 = 256 * 1024;

/// Reads and drops up to [`DRAIN_MAX`] more of a refused body, for at most a second, unless
/// the client waits for `100 Continue` (it has sent nothing then, and must not be asked). A
/// connection closed with unread bytes in its receive buffer is reset by the kernel, which can
/// destroy the answer before the client reads it; a small body read to its end also lets the
/// connection be kept.
/// The answer is `false` when the body was left unread (the connection must then close, as
/// Go's server closes it).
pub(crate) async fn drain(fields: &HeaderMap, body: &mut RequestBody) -> bool {
    if hyper::body::Body::is_end_stream(body) {
        return true;
    }
    if fields.contains_key(header::EXPECT) {
        return false;
    }
    let read = async {
        let mut seen: u64 = 0;
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else { return false };
            if let Ok(data) = frame.into_data() {
                seen += data.len() as u64;
                if seen > DRAIN_MAX {
                    return false;
                }
            }
        }
        true
    };
    tokio::time::timeout(std::time::Duration::from_secs(1), read)
        .await
        .unwrap_or(false)
}

/// [`too_large`] after [`drain`]: with `Connection: close` when the body was left unread.
pub(crate) fn too_large_after(drained: bool) -> Response<Body> {
    let mut resp = too_large();
    if !drained {
        resp.headers_mut()
            .insert(header::CONNECTION, http::HeaderValue::from_static("close"));
    }
    resp
}

/// oxy's answer to a request body over the limit.
pub(crate) fn too_large() -> Response<Body> {
    crate::body::answer(StatusCode::PAYLOAD_TOO_LARGE, "Request Entity Too Large")
}

/// oxy's answer when the client left before its body was complete: nginx's 499.
pub(crate) fn client_gone() -> Response<Body> {
    let status = StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST);
    let mut resp = crate::body::answer(status, "Client Closed Request");
    // Without one, hyper writes `<none>` for a status it has no phrase for.
    resp.extensions_mut()
        .insert(hyper::ext::ReasonPhrase::from_static(
            b"Client Closed Request",
        ));
    resp
}

/// oxy's answer to an answer over the limit (its writer's error goes to Go's default handler).
pub(crate) fn internal_error() -> Response<Body> {
    crate::body::answer(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
}

/// The fields an attempt's request carries for a stored body of `len` bytes: its length, no
/// transfer coding and no announced trailers. An empty body has no length field, except for the
/// methods Go's client always sends one with.
pub(crate) fn request_fields(fields: &mut HeaderMap, method: &Method, len: u64) {
    fields.remove(header::TRANSFER_ENCODING);
    fields.remove(header::TRAILER);
    if len == 0 && !matches!(*method, Method::POST | Method::PUT | Method::PATCH) {
        fields.remove(header::CONTENT_LENGTH);
    } else {
        fields.insert(header::CONTENT_LENGTH, len.into());
    }
}

/// One attempt's request: `parts`' method, target, version and fields with the stored body
/// (the extensions of the client's request stay with it).
pub(crate) fn stored_request(
    parts: &http::request::Parts,
    stored: &Stored,
) -> http::Request<RequestBody> {
    let mut copy = http::Request::new(request_body(stored));
    *copy.method_mut() = parts.method.clone();
    *copy.uri_mut() = parts.uri.clone();
    *copy.version_mut() = parts.version;
    *copy.headers_mut() = parts.headers.clone();
    copy
}

/// The body an attempt sends.
pub(crate) fn request_body(stored: &Stored) -> RequestBody {
    if stored.is_empty() {
        return RequestBody::Empty;
    }
    match stored.in_memory() {
        Some(bytes) => RequestBody::Buffered(Some(bytes)),
        None => RequestBody::Stored(Box::new(stored.reader())),
    }
}

/// Whether the held answer is sent with its body: oxy sends none for these statuses, for an
/// answer with `Content-Length: 0` and for one whose `Grpc-Status` is not `0` (the request's
/// method decides HEAD, where the server sent none anyway).
pub(crate) fn sends_body(status: StatusCode, fields: &HeaderMap) -> bool {
    let s = status.as_u16();
    !(matches!(s, 100..=199 | 204 | 304)
        || fields
            .get(header::CONTENT_LENGTH)
            .is_some_and(|v| v.as_bytes() == b"0")
        || fields
            .get("grpc-status")
            .is_some_and(|v| v.as_bytes() != b"0"))
}

/// The client's answer from a held attempt: its status and fields, its body with its length
/// (known now: no transfer coding) and then its trailers if it had any (without a length
/// then: the trailers follow the body), or no body at all.
pub(crate) fn held_answer(
    parts: http::response::Parts,
    stored: &Stored,
    trailers: Option<HeaderMap>,
) -> Response<Body> {
    let mut resp = Response::from_parts(parts, crate::body::full(Bytes::new()));
    if !sends_body(resp.status(), resp.headers()) {
        if resp.headers().contains_key("grpc-status") && !stored.is_empty() {
            // oxy leaves the server's length over a body it does not send (and Go then cuts the
            // connection); the length sent here is the body's.
            resp.headers_mut()
                .insert(header::CONTENT_LENGTH, 0_u64.into());
        }
        return resp;
    }
    let fields = resp.headers_mut();
    fields.remove(header::TRANSFER_ENCODING);
    let body = match stored.in_memory() {
        Some(bytes) => crate::body::full(bytes),
        None => stored
            .reader()
            .map_err(|e| Box::new(e) as crate::body::BoxError)
            .boxed(),
    };
    let body = match trailers {
        None => {
            fields.insert(header::CONTENT_LENGTH, stored.len().into());
            body
        }
        Some(t) => {
            fields.remove(header::CONTENT_LENGTH);
            body.with_trailers(std::future::ready(Some(Ok(t)))).boxed()
        }
    };
    resp.map(|_| body)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code: a panic is a test failure")]

    use super::*;

    fn buffering(retry: Option<&str>) -> Buffering {
        Buffering {
            max_request: Some(10),
            mem_request: 4,
            max_response: Some(10),
            mem_response: 4,
            retry: retry.map(|r| serde_json::from_str(r).unwrap()),
        }
    }

    const NET_AND_AT_MOST_2: &str = r#"{"and": [
        "network_error",
        {"count": {"counter": "attempts", "op": "le", "value": 2}}]}"#;

    #[test]
    fn replays_follow_the_condition_and_oxys_rules() {
        let b = buffering(Some(NET_AND_AT_MOST_2));
        let post = Method::POST;
        // (attempt, status, body length, replayed)
        let table = [
            (1, 502, 3, true),
            (2, 504, 3, true),
            (3, 502, 3, false), // Attempts() <= 2 no longer holds: 3 requests in all
            (1, 500, 3, false), // not a network error
            (1, 200, 3, false),
            (1, 502, 0, false), // an empty body is never replayed
        ];
        for (attempt, status, len, want) in table {
            assert_eq!(
                b.replays(attempt, status, &post, len),
                want,
                "attempt {attempt}, status {status}, body {len}"
            );
        }
        assert!(
            !buffering(None).replays(1, 502, &post, 3),
            "no condition: no replay"
        );
    }

    #[test]
    fn at_most_eleven_attempts_even_when_the_condition_always_holds() {
        let b = buffering(Some(r#""network_error""#));
        let attempts = (1..100)
            .take_while(|&n| b.replays(n, 502, &Method::POST, 1))
            .count();
        assert_eq!(attempts + 1, 11, "the first attempt and ten replays");
    }

    #[test]
    fn method_and_comparisons() {
        let b = buffering(Some(
            r#"{"and": [{"method": {"equal": true, "method": "POST"}},
                        {"and": [{"count": {"counter": "response_code", "op": "ge", "value": 500}},
                                 {"count": {"counter": "attempts", "op": "lt", "value": 3}}]}]}"#,
        ));
        assert!(b.replays(1, 503, &Method::POST, 1));
        assert!(b.replays(2, 500, &Method::POST, 1));
        assert!(!b.replays(3, 500, &Method::POST, 1));
        assert!(!b.replays(1, 503, &Method::PUT, 1));
        assert!(!b.replays(1, 499, &Method::POST, 1));
        let ne = buffering(Some(r#"{"method": {"equal": false, "method": "GET"}}"#));
        assert!(ne.replays(1, 200, &Method::POST, 1));
        assert!(!ne.replays(1, 200, &Method::GET, 1));
        let or = buffering(Some(
            r#"{"or": [{"count": {"counter": "response_code", "op": "eq", "value": 429}},
                       {"count": {"counter": "response_code", "op": "ne", "value": 200}}]}"#,
        ));
        assert!(or.replays(1, 429, &Method::POST, 1));
        assert!(or.replays(1, 201, &Method::POST, 1));
        assert!(!or.replays(1, 200, &Method::POST, 1));
        let gt = buffering(Some(
            r#"{"count": {"counter": "response_code", "op": "gt", "value": 499}}"#,
        ));
        assert!(gt.replays(1, 500, &Method::POST, 1));
        assert!(!gt.replays(1, 499, &Method::POST, 1));
    }

    #[test]
    fn a_declared_length_over_the_limit_is_refused_unread() {
        let b = buffering(None);
        let with = |v: &str| {
            let mut f = HeaderMap::new();
            f.insert(header::CONTENT_LENGTH, v.parse().unwrap());
            b.declared_too_large(&f)
        };
        assert!(!with("10"), "exactly the limit passes");
        assert!(with("11"));
        assert!(!b.declared_too_large(&HeaderMap::new()));
        let unlimited = Buffering {
            max_request: None,
            ..buffering(None)
        };
        let mut f = HeaderMap::new();
        f.insert(header::CONTENT_LENGTH, "99999999".parse().unwrap());
        assert!(!unlimited.declared_too_large(&f));
    }

    #[tokio::test]
    async fn request_bodies_up_to_the_limit_are_stored_and_larger_ones_refused() {
        let b = buffering(None);
        let mut body = RequestBody::Buffered(Some(Bytes::from_static(b"0123456789")));
        let stored = b.read_request(&mut body).await.unwrap();
        assert_eq!(stored.len(), 10);
        let mut body = RequestBody::Buffered(Some(Bytes::from_static(b"0123456789a")));
        assert_eq!(
            b.read_request(&mut body).await.unwrap_err(),
            RequestRefusal::TooLarge
        );
    }

    #[tokio::test]
    async fn an_answer_over_the_limit_is_read_to_its_end_and_refused() {
        let b = buffering(None);
        let (ok, trailers) = b
            .read_response(crate::body::full("0123456789"))
            .await
            .unwrap();
        assert_eq!(ok.len(), 10);
        assert!(trailers.is_none());
        let body = Frames(["01234", "56789", "a", "bcd"].into()).boxed();
        assert_eq!(
            b.read_response(body).await.unwrap_err(),
            ResponseRefusal::TooLarge
        );
    }

    /// A body of several frames.
    struct Frames(std::collections::VecDeque<&'static str>);

    impl hyper::body::Body for Frames {
        type Data = Bytes;
        type Error = crate::body::BoxError;

        fn poll_frame(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
            let next = self.get_mut().0.pop_front();
            std::task::Poll::Ready(next.map(|s| Ok(hyper::body::Frame::data(Bytes::from(s)))))
        }
    }

    #[test]
    fn attempt_fields_carry_the_stored_length_only() {
        let mut f = HeaderMap::new();
        f.insert(header::TRANSFER_ENCODING, "chunked".parse().unwrap());
        f.insert(header::TRAILER, "X-T".parse().unwrap());
        request_fields(&mut f, &Method::POST, 10);
        assert_eq!(f.get(header::CONTENT_LENGTH).unwrap(), "10");
        assert!(!f.contains_key(header::TRANSFER_ENCODING));
        assert!(!f.contains_key(header::TRAILER));
        let mut f = HeaderMap::new();
        request_fields(&mut f, &Method::POST, 0);
        assert_eq!(f.get(header::CONTENT_LENGTH).unwrap(), "0");
        let mut f = HeaderMap::new();
        request_fields(&mut f, &Method::GET, 0);
        assert!(!f.contains_key(header::CONTENT_LENGTH));
    }

    #[tokio::test]
    async fn a_refused_body_is_drained_up_to_256_kib_unless_the_client_waits_for_100() {
        let mut small = RequestBody::Buffered(Some(Bytes::from(vec![b'x'; 1000])));
        assert!(
            drain(&HeaderMap::new(), &mut small).await,
            "read to its end"
        );
        assert!(hyper::body::Body::is_end_stream(&small));
        let resp = too_large_after(true);
        assert!(!resp.headers().contains_key(header::CONNECTION));
        let mut big = RequestBody::Buffered(Some(Bytes::from(vec![b'x'; 300 * 1024])));
        assert!(
            !drain(&HeaderMap::new(), &mut big).await,
            "left unread past 256 KiB"
        );
        assert_eq!(
            too_large_after(false).headers()[header::CONNECTION],
            "close"
        );
        let mut expect = HeaderMap::new();
        expect.insert(header::EXPECT, "100-continue".parse().unwrap());
        let mut waiting = RequestBody::Buffered(Some(Bytes::from_static(b"never sent")));
        assert!(!drain(&expect, &mut waiting).await);
        assert!(
            !hyper::body::Body::is_end_stream(&waiting),
            "not read: no 100 Continue"
        );
    }

    #[tokio::test]
    async fn held_answers_carry_their_length_or_no_body() {
        let mut spill = Spill::new(0);
        spill
            .push(Bytes::from_static(b"from the file"))
            .await
            .unwrap();
        let stored = spill.finish().await.unwrap();
        let mut parts = Response::new(()).into_parts().0;
        parts
            .headers
            .insert(header::TRANSFER_ENCODING, "chunked".parse().unwrap());
        let mut t = HeaderMap::new();
        t.insert("grpc-status", "0".parse().unwrap());
        let with = held_answer(parts.clone(), &stored, Some(t));
        assert!(
            !with.headers().contains_key(header::CONTENT_LENGTH),
            "trailers follow"
        );
        let collected = with.into_body().collect().await.unwrap();
        assert_eq!(collected.trailers().unwrap()["grpc-status"], "0");
        let resp = held_answer(parts.clone(), &stored, None);
        assert_eq!(resp.headers()[header::CONTENT_LENGTH], "13");
        assert!(!resp.headers().contains_key(header::TRANSFER_ENCODING));
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(
            &body[..],
            b"from the file",
            "memory size 0: all of it from the file"
        );
        // A gRPC error status: no body, and a length that says so.
        let mut grpc = parts;
        grpc.headers.remove(header::TRANSFER_ENCODING);
        grpc.headers.insert("grpc-status", "13".parse().unwrap());
        let resp = held_answer(grpc, &stored, None);
        assert_eq!(resp.headers()[header::CONTENT_LENGTH], "0");
        assert!(
            resp.into_body()
                .collect()
                .await
                .unwrap()
                .to_bytes()
                .is_empty()
        );
    }

    #[test]
    fn bodiless_answers() {
        let none = HeaderMap::new();
        for s in [100, 204, 304] {
            assert!(!sends_body(StatusCode::from_u16(s).unwrap(), &none), "{s}");
        }
        assert!(sends_body(StatusCode::OK, &none));
        let mut zero = HeaderMap::new();
        zero.insert(header::CONTENT_LENGTH, "0".parse().unwrap());
        assert!(!sends_body(StatusCode::OK, &zero));
        let mut grpc = HeaderMap::new();
        grpc.insert("grpc-status", "5".parse().unwrap());
        assert!(!sends_body(StatusCode::OK, &grpc));
        grpc.insert("grpc-status", "0".parse().unwrap());
        assert!(sends_body(StatusCode::OK, &grpc));
    }
}
