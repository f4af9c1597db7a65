//! RFC 9112 strictness at the edge: what a request must look like before anything routes it,
//! and the counters of what the proxy refused or threw away.
//!
//! Both server paths (the own loop in [`crate::http1::server`] and hyper's) end in
//! [`check_request`], so one set of rules decides; hyper has already refused what its parser
//! refuses (obs-fold, bare CR, NUL and other control bytes, a space before the colon, bad or
//! conflicting `Content-Length`, a non-chunked final transfer coding). What it lets through and
//! request smuggling needs is refused here: two `Host` fields, a missing or malformed `Host`,
//! userinfo in the target, `chunked` twice, transfer codings the proxy does not implement.
//! (`Content-Length` beside `Transfer-Encoding` never gets here: hyper frames such a request
//! by the transfer coding alone, drops the length and closes the connection after the answer,
//! as RFC 9112 §6.1 allows.) Each refusal closes the connection (the framing
//! of whatever follows is in doubt), is logged at debug with its reason and counted in
//! `bridge_requests_refused_total{reason}`. See docs/runtime.md, "Security".

use std::sync::LazyLock;

use http::header::{self, HeaderMap, HeaderValue};
use http::{Request, StatusCode, Version};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

/// Why a request was refused before routing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// More than one `Host` field (RFC 9112 §3.2: MUST answer 400).
    DuplicateHost,
    /// An HTTP/1.1 request without `Host` (RFC 9112 §3.2: MUST answer 400).
    MissingHost,
    /// A `Host` value that is not `uri-host [ ":" port ]` (RFC 9112 §3.2, RFC 3986 §3.2.2).
    InvalidHost,
    /// Userinfo in an absolute-form target (RFC 9110 §4.2.4: to be treated as an error).
    Userinfo,
    /// `chunked` applied more than once (RFC 9112 §6.1: MUST NOT).
    ChunkedTwice,
    /// A transfer coding list whose final coding is not `chunked` (RFC 9112 §6.3 item 4:
    /// the length cannot be determined; MUST answer 400 and close).
    NotChunkedLast,
    /// A transfer coding other than `chunked` (RFC 9112 §6.1: 501 for a coding not understood).
    UnknownCoding,
    /// `Transfer-Encoding` in an HTTP/1.0 request (RFC 9112 §6.1: the framing is faulty).
    TransferEncodingInHttp10,
    /// A `%` in the path that does not start `%` + two hex digits (RFC 3986 §2.1); Go's URL
    /// parser refuses such a target, so Traefik answers 400 before routing.
    InvalidPercentEncoding,
}

impl Refusal {
    /// Every refusal, for tests and the metric's labels.
    #[cfg(test)]
    pub(crate) const ALL: [Self; 9] = [
        Self::DuplicateHost,
        Self::MissingHost,
        Self::InvalidHost,
        Self::Userinfo,
        Self::ChunkedTwice,
        Self::NotChunkedLast,
        Self::UnknownCoding,
        Self::TransferEncodingInHttp10,
        Self::InvalidPercentEncoding,
    ];

    /// The status answered.
    pub(crate) fn status(self) -> StatusCode {
        match self {
            Self::UnknownCoding => StatusCode::NOT_IMPLEMENTED,
            _ => StatusCode::BAD_REQUEST,
        }
    }

    /// The label in `bridge_requests_refused_total` and the reason in the debug log.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Self::DuplicateHost => "duplicate_host",
            Self::MissingHost => "missing_host",
            Self::InvalidHost => "invalid_host",
            Self::Userinfo => "userinfo",
            Self::ChunkedTwice => "chunked_twice",
            Self::NotChunkedLast => "not_chunked_last",
            Self::UnknownCoding => "unknown_transfer_coding",
            Self::TransferEncodingInHttp10 => "transfer_encoding_in_http10",
            Self::InvalidPercentEncoding => "invalid_percent_encoding",
        }
    }

    /// The body of the answer, like Go's server: the status, then why.
    fn text(self) -> &'static str {
        match self {
            Self::DuplicateHost => "400 Bad Request: too many Host headers\n",
            Self::MissingHost => "400 Bad Request: missing required Host header\n",
            Self::InvalidHost => "400 Bad Request: malformed Host header\n",
            Self::Userinfo => "400 Bad Request: userinfo in the request target\n",
            Self::ChunkedTwice => "400 Bad Request: chunked applied more than once\n",
            Self::NotChunkedLast => "400 Bad Request: final transfer coding is not chunked\n",
            Self::UnknownCoding => "501 Not Implemented: unsupported transfer coding\n",
            Self::TransferEncodingInHttp10 => {
                "400 Bad Request: Transfer-Encoding in an HTTP/1.0 request\n"
            }
            Self::InvalidPercentEncoding => "400 Bad Request: invalid URL escape in the path\n",
        }
    }

    /// The answer: status, reason, `Connection: close`; counted and logged at debug.
    pub(crate) fn response(self) -> http::Response<crate::body::Body> {
        use http_body_util::BodyExt as _;
        REFUSED
            .get_or_create(&Reason {
                reason: self.reason(),
            })
            .inc();
        tracing::debug!("request refused: {}", self.reason());
        let mut resp = http::Response::new(
            http_body_util::Full::new(bytes::Bytes::from_static(self.text().as_bytes()))
                .map_err(|never| match never {})
                .boxed(),
        );
        *resp.status_mut() = self.status();
        let h = resp.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        h.insert(header::CONNECTION, HeaderValue::from_static("close"));
        resp
    }
}

/// Counts a request hyper's parser refused (it answered 400 or 431 itself and closed the
/// connection): reason `malformed` or `head_too_large`, logged at debug with hyper's words.
pub(crate) fn count_connection_error(e: &(dyn std::error::Error + 'static)) {
    let Some(h) = e.downcast_ref::<hyper::Error>() else {
        return;
    };
    let reason = if h.is_parse_too_large() {
        "head_too_large"
    } else if h.is_parse() {
        "malformed"
    } else {
        return;
    };
    REFUSED.get_or_create(&Reason { reason }).inc();
    tracing::debug!("request refused: {reason} ({h})");
}

/// Counts a head over the size limit answered 431 by the proxy's own loop.
pub(crate) fn count_head_too_large() {
    REFUSED
        .get_or_create(&Reason {
            reason: "head_too_large",
        })
        .inc();
    tracing::debug!("request refused: head_too_large");
}

/// Checks an HTTP/1.x request before routing and normalises what RFC 9110 lets a recipient
/// repair: identical `Content-Length` values become one field, and `Upgrade: h2c` is dropped
/// (the proxy never switches a connection to h2c for a server, the precondition of h2c
/// smuggling; Traefik stopped forwarding it too). A path with a malformed percent-escape is
/// refused for every version, as Go's URL parser refuses it; HTTP/2 requests carry neither
/// `Host` rules nor transfer codings and are otherwise untouched.
pub(crate) fn check_request<B>(req: &mut Request<B>) -> Result<Fields, Refusal> {
    let path = req.uri().path();
    // With sanitizePath or without: a path plain for the stricter test is plain for both.
    let plain_path = super::request_path::untouched(path.as_bytes(), true);
    if !plain_path
        && path.as_bytes().contains(&b'%')
        && !crate::routing::valid_percent_encoding(path)
    {
        return Err(Refusal::InvalidPercentEncoding);
    }
    let version = req.version();
    if version != Version::HTTP_11 && version != Version::HTTP_10 {
        return Ok(Fields {
            plain_path,
            ..Fields::of(req.headers())
        });
    }
    if let Some(a) = req.uri().authority()
        && a.as_str().contains('@')
    {
        return Err(Refusal::Userinfo);
    }
    let headers = req.headers_mut();
    // One pass over the fields instead of a lookup per name: most requests carry a handful of
    // fields, and comparing a standard name is an integer comparison.
    let (mut hosts, mut host_ok) = (0u8, true);
    let (mut lengths, mut length_list) = (0u8, false);
    let mut seen = Fields {
        plain_path,
        ..Fields::default()
    };
    for (name, value) in headers.iter() {
        if name == header::HOST {
            hosts = hosts.saturating_add(1);
            host_ok = valid_host(value.as_bytes());
            seen.host = Some(value.clone());
        } else if name == header::TRANSFER_ENCODING {
            seen.transfer_encoding = true;
        } else if name == header::CONTENT_LENGTH {
            lengths = lengths.saturating_add(1);
            length_list |= value.as_bytes().contains(&b',');
            seen.length |= value.as_bytes() != b"0";
        } else if name == header::UPGRADE {
            seen.upgrade = true;
        } else if name == header::EXPECT {
            seen.expect = true;
        }
    }
    let (te, upgrade) = (seen.transfer_encoding, seen.upgrade);
    match hosts {
        0 if version == Version::HTTP_11 => return Err(Refusal::MissingHost),
        0 => {}
        1 if !host_ok => return Err(Refusal::InvalidHost),
        1 => {}
        _ => return Err(Refusal::DuplicateHost),
    }
    if te {
        if version == Version::HTTP_10 {
            return Err(Refusal::TransferEncodingInHttp10);
        }
        // With `Content-Length` beside it, hyper has already dropped the length and will close
        // the connection after the answer (RFC 9112 §6.1): the transfer coding alone frames it.
        transfer_codings(headers)?;
    } else if lengths > 1 || length_list {
        one_content_length(headers);
    }
    if upgrade {
        drop_h2c(headers);
        seen.upgrade = headers.contains_key(header::UPGRADE);
    }
    Ok(seen)
}

/// What [`check_request`] saw of the fields that decide how a request is carried, so the
/// request path does not look them up again (each lookup hashes a name).
#[derive(Debug, Clone, Default)]
pub(crate) struct Fields {
    /// The `Host` value (shared, not copied).
    pub host: Option<HeaderValue>,
    /// `Transfer-Encoding` is present.
    pub transfer_encoding: bool,
    /// A `Content-Length` other than `0` is present.
    pub length: bool,
    /// `Upgrade` is present (after `h2c` was dropped).
    pub upgrade: bool,
    /// `Expect` is present.
    pub expect: bool,
    /// The path needs none of the entry point's treatment (`proxy::request_path`), known from
    /// the scan that also looks for `%`: the common path costs one pass.
    pub plain_path: bool,
}

impl Fields {
    /// The same facts looked up in `headers` (HTTP/2 requests, and after a middleware changed
    /// the fields).
    pub(crate) fn of(headers: &HeaderMap) -> Self {
        Self {
            host: headers.get(header::HOST).cloned(),
            transfer_encoding: headers.contains_key(header::TRANSFER_ENCODING),
            length: headers
                .get(header::CONTENT_LENGTH)
                .is_some_and(|v| v.as_bytes() != b"0"),
            upgrade: headers.contains_key(header::UPGRADE),
            expect: headers.contains_key(header::EXPECT),
            // Only read on arrival, where check_request sets it.
            plain_path: false,
        }
    }

    /// True when the request carries no body by its fields (no transfer coding, no length).
    pub(crate) fn bodiless(&self) -> bool {
        !self.transfer_encoding && !self.length
    }
}

/// The transfer codings of every `Transfer-Encoding` line, in order: exactly one `chunked`,
/// last; any other coding is one the proxy does not implement (it would have to decode it to
/// frame the body for the server, and passing it on undecoded changes the body).
fn transfer_codings(headers: &HeaderMap) -> Result<(), Refusal> {
    let mut chunked = 0usize;
    let mut last_chunked = false;
    let mut other = false;
    for value in headers.get_all(header::TRANSFER_ENCODING) {
        for coding in value.as_bytes().split(|&b| b == b',') {
            let coding = coding.trim_ascii();
            if coding.is_empty() {
                continue;
            }
            let name = coding
                .split(|&b| b == b';')
                .next()
                .unwrap_or(coding)
                .trim_ascii();
            last_chunked = name.eq_ignore_ascii_case(b"chunked");
            if last_chunked {
                chunked += 1;
                // `chunked` takes no parameters (RFC 9112 §7.1).
                if name.len() != coding.len() {
                    return Err(Refusal::NotChunkedLast);
                }
            } else {
                other = true;
            }
        }
    }
    if chunked > 1 {
        Err(Refusal::ChunkedTwice)
    } else if !last_chunked {
        Err(Refusal::NotChunkedLast)
    } else if other {
        Err(Refusal::UnknownCoding)
    } else {
        Ok(())
    }
}

/// Several `Content-Length` fields or a list value (hyper has checked that they agree) become
/// one field with the single value (RFC 9110 §8.6), so the server never sees two lines.
fn one_content_length(headers: &mut HeaderMap) {
    let single = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|first| first.as_bytes().split(|&b| b == b',').next())
        .map(<[u8]>::trim_ascii)
        .and_then(|d| HeaderValue::from_bytes(d).ok());
    if let Some(v) = single {
        headers.insert(header::CONTENT_LENGTH, v);
    }
}

/// Removes the `h2c` protocol from `Upgrade` (and the field when nothing else is left).
fn drop_h2c(headers: &mut HeaderMap) {
    let lists_h2c = headers
        .get_all(header::UPGRADE)
        .iter()
        .any(|v| crate::http1::client::value_has_token(v.as_bytes(), b"h2c"));
    if !lists_h2c {
        return;
    }
    let rest: Vec<HeaderValue> = headers
        .get_all(header::UPGRADE)
        .iter()
        .flat_map(|v| v.as_bytes().split(|&b| b == b','))
        .map(<[u8]>::trim_ascii)
        .filter(|t| !t.is_empty() && !t.eq_ignore_ascii_case(b"h2c"))
        .filter_map(|t| HeaderValue::from_bytes(t).ok())
        .collect();
    headers.remove(header::UPGRADE);
    headers.remove(header::HeaderName::from_static("http2-settings"));
    for v in rest {
        headers.append(header::UPGRADE, v);
    }
}

/// `uri-host [ ":" port ]` (RFC 9112 §3.2 with RFC 3986 §3.2.2–3.2.3), or empty (allowed when
/// the target has no authority). Stricter than RFC 3986 in one place, on purpose: a comma,
/// which is what two `Host` values joined into one look like, is refused.
pub(crate) fn valid_host(value: &[u8]) -> bool {
    let (host, port) = if let Some(rest) = value.strip_prefix(b"[") {
        let Some(end) = rest.iter().position(|&b| b == b']') else {
            return false;
        };
        let literal = &rest[..end];
        let ok = std::str::from_utf8(literal)
            .ok()
            .is_some_and(|s| s.parse::<std::net::Ipv6Addr>().is_ok());
        if !ok {
            return false;
        }
        match &rest[end + 1..] {
            [] => return true,
            [b':', port @ ..] => (&b""[..], Some(port)),
            _ => return false,
        }
    } else {
        match value.iter().position(|&b| b == b':') {
            Some(i) => (&value[..i], Some(&value[i + 1..])),
            None => (value, None),
        }
    };
    if let Some(port) = port
        && !(port.iter().all(u8::is_ascii_digit)
            && (port.is_empty()
                || crate::http1::client::parse_decimal(port).is_some_and(|p| p <= 65_535)))
    {
        return false;
    }
    reg_name(host)
}

/// RFC 3986 `reg-name` (which covers IPv4 addresses), without the comma.
fn reg_name(host: &[u8]) -> bool {
    let mut i = 0;
    while i < host.len() {
        let b = host[i];
        if b == b'%' {
            let hex = host.get(i + 1..i + 3);
            if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                return false;
            }
            i += 3;
            continue;
        }
        if !REG_NAME[usize::from(b)] {
            return false;
        }
        i += 1;
    }
    true
}

/// The bytes a reg-name may hold besides `%` escapes: unreserved and sub-delims but `,`.
static REG_NAME: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'-' | b'.'
                    | b'_'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b';'
                    | b'='
            );
        b += 1;
    }
    t
};

/// A reason label.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct Reason {
    reason: &'static str,
}

/// Requests refused before routing, by [`Refusal::reason`] (process-wide: registered by
/// [`crate::observe::metrics`], so they count whether or not metrics are configured at the time).
pub(crate) static REFUSED: LazyLock<Family<Reason, Counter>> = LazyLock::new(Family::default);

/// Upstream connections closed instead of reused, by [`Discard`].
pub(crate) static DISCARDED: LazyLock<Family<Reason, Counter>> = LazyLock::new(Family::default);

/// Why a connection to a server was closed instead of going back to its pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Discard {
    /// The server sent bytes beyond the response its framing delimits.
    ExtraBytes,
    /// While idle in the pool, the server sent bytes or closed the connection.
    IdleActivity,
    /// The response's framing was ambiguous (`Content-Length` with `Transfer-Encoding`, or
    /// `Transfer-Encoding` in an HTTP/1.0 response).
    AmbiguousFraming,
}

impl Discard {
    /// The label in `bridge_upstream_connections_discarded_total`.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Self::ExtraBytes => "extra_bytes",
            Self::IdleActivity => "idle_activity",
            Self::AmbiguousFraming => "ambiguous_framing",
        }
    }

    /// Counts one discarded connection and logs it at debug.
    pub(crate) fn count(self) {
        DISCARDED
            .get_or_create(&Reason {
                reason: self.reason(),
            })
            .inc();
        tracing::debug!("upstream connection discarded: {}", self.reason());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(version: Version, target: &str, fields: &[(&str, &str)]) -> Request<()> {
        let mut r = Request::builder().version(version).uri(target);
        for (k, v) in fields {
            r = r.header(*k, *v);
        }
        r.body(()).unwrap()
    }

    fn check(version: Version, target: &str, fields: &[(&str, &str)]) -> Result<(), Refusal> {
        check_request(&mut req(version, target, fields)).map(|_| ())
    }

    const V11: Version = Version::HTTP_11;

    #[test]
    fn host_rules() {
        type Case<'a> = (&'a [(&'a str, &'a str)], Version, Result<(), Refusal>);
        let cases: &[Case<'_>] = &[
            (&[("host", "app")], V11, Ok(())),
            (&[("host", "app:8080")], V11, Ok(())),
            (&[("host", "[::1]:80")], V11, Ok(())),
            (&[("host", "[::1]")], V11, Ok(())),
            (&[("host", "")], V11, Ok(())),
            (&[("host", "10.0.0.1")], V11, Ok(())),
            (&[("host", "xn--bcher-kva.example:")], V11, Ok(())),
            (&[("host", "a%41b")], V11, Ok(())),
            (&[], Version::HTTP_10, Ok(())),
            (&[], V11, Err(Refusal::MissingHost)),
            (
                &[("host", "a"), ("host", "a")],
                V11,
                Err(Refusal::DuplicateHost),
            ),
            (
                &[("host", "a"), ("host", "b")],
                Version::HTTP_10,
                Err(Refusal::DuplicateHost),
            ),
            (&[("host", "a b")], V11, Err(Refusal::InvalidHost)),
            (&[("host", "a,b")], V11, Err(Refusal::InvalidHost)),
            (&[("host", "a, b")], V11, Err(Refusal::InvalidHost)),
            (&[("host", "user@app")], V11, Err(Refusal::InvalidHost)),
            (&[("host", "app:99999")], V11, Err(Refusal::InvalidHost)),
            (&[("host", "app:8x")], V11, Err(Refusal::InvalidHost)),
            (&[("host", "app:80:80")], V11, Err(Refusal::InvalidHost)),
            (&[("host", "[::1")], V11, Err(Refusal::InvalidHost)),
            (&[("host", "[::1]x")], V11, Err(Refusal::InvalidHost)),
            (&[("host", "[zz]")], V11, Err(Refusal::InvalidHost)),
            (&[("host", "a%4")], V11, Err(Refusal::InvalidHost)),
            (&[("host", "a/b")], V11, Err(Refusal::InvalidHost)),
        ];
        for (fields, version, want) in cases {
            assert_eq!(
                check(*version, "/", fields),
                *want,
                "{fields:?} {version:?}"
            );
        }
    }

    #[test]
    fn a_malformed_percent_escape_in_the_path_is_refused_for_every_version() {
        for version in [V11, Version::HTTP_10, Version::HTTP_2] {
            for (target, want) in [
                ("/a%20b", Ok(())),
                ("/a%2Fb%2f", Ok(())),
                ("/100%", Err(Refusal::InvalidPercentEncoding)),
                ("/a%zz", Err(Refusal::InvalidPercentEncoding)),
                ("/a%2", Err(Refusal::InvalidPercentEncoding)),
                // The query is not the path: Go keeps it raw, and so does the proxy.
                ("/a?q=100%", Ok(())),
            ] {
                assert_eq!(
                    check(version, target, &[("host", "app")]),
                    want,
                    "{target} {version:?}"
                );
            }
        }
    }

    #[test]
    fn userinfo_in_the_target_is_refused() {
        assert_eq!(
            check(V11, "http://u@app/", &[("host", "app")]),
            Err(Refusal::Userinfo)
        );
        assert_eq!(
            check(V11, "http://u:p@app/", &[("host", "app")]),
            Err(Refusal::Userinfo)
        );
        assert_eq!(check(V11, "http://app/", &[("host", "other")]), Ok(()));
    }

    #[test]
    fn transfer_coding_rules() {
        let te = |v: &[&str]| -> Result<(), Refusal> {
            let fields: Vec<(&str, &str)> = v.iter().map(|v| ("transfer-encoding", *v)).collect();
            let mut all = vec![("host", "app")];
            all.extend(fields);
            check(V11, "/", &all)
        };
        assert_eq!(te(&["chunked"]), Ok(()));
        assert_eq!(te(&["Chunked"]), Ok(()));
        assert_eq!(te(&[" chunked , "]), Ok(()));
        assert_eq!(te(&["chunked, chunked"]), Err(Refusal::ChunkedTwice));
        assert_eq!(te(&["chunked", "chunked"]), Err(Refusal::ChunkedTwice));
        assert_eq!(te(&["gzip, chunked"]), Err(Refusal::UnknownCoding));
        assert_eq!(te(&["gzip", "chunked"]), Err(Refusal::UnknownCoding));
        assert_eq!(te(&["chunked, gzip"]), Err(Refusal::NotChunkedLast));
        assert_eq!(te(&["identity"]), Err(Refusal::NotChunkedLast));
        assert_eq!(te(&["chunked;x=1"]), Err(Refusal::NotChunkedLast));
        assert_eq!(te(&[""]), Err(Refusal::NotChunkedLast));
        assert_eq!(
            check(Version::HTTP_10, "/", &[("transfer-encoding", "chunked")]),
            Err(Refusal::TransferEncodingInHttp10)
        );
        // 501 only for a coding the proxy does not implement.
        for r in Refusal::ALL {
            assert_eq!(
                r.status() == StatusCode::NOT_IMPLEMENTED,
                r == Refusal::UnknownCoding
            );
        }
    }

    #[test]
    fn identical_lengths_become_one_field() {
        for fields in [
            &[
                ("host", "a"),
                ("content-length", "5"),
                ("content-length", "5"),
            ][..],
            &[("host", "a"), ("content-length", "5, 5")],
        ] {
            let mut r = req(V11, "/", fields);
            check_request(&mut r).unwrap();
            let all: Vec<_> = r.headers().get_all("content-length").iter().collect();
            assert_eq!(all, ["5"], "{fields:?}");
        }
    }

    #[test]
    fn h2c_upgrades_are_never_passed_on() {
        let mut r = req(
            V11,
            "/",
            &[
                ("host", "a"),
                ("upgrade", "h2c"),
                ("connection", "Upgrade, HTTP2-Settings"),
                ("http2-settings", "AAMAAABkAARAAAAAAAIAAAAA"),
            ],
        );
        check_request(&mut r).unwrap();
        assert!(!r.headers().contains_key("upgrade"));
        assert!(!r.headers().contains_key("http2-settings"));
        assert!(!crate::proxy::forwarded_headers::is_upgrade(r.headers()));
        let mut r = req(
            V11,
            "/",
            &[
                ("host", "a"),
                ("upgrade", "websocket, h2c"),
                ("connection", "upgrade"),
            ],
        );
        check_request(&mut r).unwrap();
        assert_eq!(r.headers()["upgrade"], "websocket");
        let mut ws = req(V11, "/", &[("host", "a"), ("upgrade", "websocket")]);
        check_request(&mut ws).unwrap();
        assert_eq!(ws.headers()["upgrade"], "websocket");
    }

    #[test]
    fn refusals_answer_with_close_and_are_counted() {
        let before = REFUSED
            .get_or_create(&Reason {
                reason: "duplicate_host",
            })
            .get();
        let resp = Refusal::DuplicateHost.response();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
        assert_eq!(resp.headers()["connection"], "close");
        assert!(
            REFUSED
                .get_or_create(&Reason {
                    reason: "duplicate_host",
                })
                .get()
                > before
        );
    }

    proptest::proptest! {
        /// Any Host value is judged without a panic, and everything accepted is free of the
        /// bytes that split or smuggle (space, comma, `@`, `/`, controls).
        #[test]
        fn any_host_value_is_judged(value in proptest::collection::vec(proptest::num::u8::ANY, 0..40)) {
            if valid_host(&value) {
                proptest::prop_assert!(!value.iter().any(|&b| b <= b' ' || b == b',' || b == b'@' || b == b'/' || b >= 0x7f));
            }
        }
    }
}
