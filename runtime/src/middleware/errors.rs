//! `errors`: an answer whose status is caught is replaced by the page another service answers.
//!
//! As Traefik's `customerrors`: nothing is buffered — the decision is made on the status line,
//! an answer that is not caught streams through untouched, a caught one is dropped (headers and
//! body) and the client gets the page service's fields and body with the caught status (or its
//! rewrite), whatever the page service answered. The page request is always a `GET` without a
//! body, to `query` with `{status}`, `{originalStatus}` and `{url}` replaced, with the request's
//! fields as they were at this middleware (all of them, or only `errorRequestHeaders`). 1xx
//! answers (a `101` included) are never caught. This module decides; `crate::proxy` sends the
//! page request, since it goes through the proxy's forwarding like any other.

use http::{HeaderMap, HeaderName, StatusCode, header};

use super::MiddlewareError;
use crate::upstream::ServiceId;

/// One `errors` middleware, built at load.
#[derive(Debug)]
pub(crate) struct ErrorPages {
    ranges: Box<[(u16, u16)]>,
    rewrites: Box<[((u16, u16), StatusCode)]>,
    /// The page service, resolved at load.
    pub(crate) service: PageService,
    /// Its name, for logs and the access log.
    pub(crate) service_name: Box<str>,
    query: Box<[Part]>,
    /// `None`: every field of the request goes to the page request.
    fields: Option<Box<[HeaderName]>>,
}

/// Where the page comes from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum PageService {
    /// A service of the plan, through the proxy's forwarding.
    Service(ServiceId),
    /// `ping@internal`: its answer.
    Ping,
    /// `prometheus@internal`: the metrics.
    Prometheus,
    /// `noop@internal`: `418` without a body (so the page is empty).
    Noop,
    /// `api@internal`, `dashboard@internal`, `rest@internal`: what the API answers for the page
    /// request's path, as a router to them would get.
    Api,
}

/// A piece of the page request's target, split at load.
#[derive(Debug, PartialEq, Eq)]
enum Part {
    Text(Box<str>),
    Status,
    OriginalStatus,
    Url,
}

impl ErrorPages {
    pub(crate) fn from_plan(
        c: &bridge_plan::Errors,
        service_id: impl Fn(&str) -> Option<ServiceId>,
    ) -> Result<Self, MiddlewareError> {
        use bridge_plan::{InternalService, ServiceRef};
        let service = match ServiceRef::parse(&c.service) {
            Some(ServiceRef::Internal(InternalService::Ping)) => Some(PageService::Ping),
            Some(ServiceRef::Internal(InternalService::Prometheus)) => {
                Some(PageService::Prometheus)
            }
            Some(ServiceRef::Internal(InternalService::Noop)) => Some(PageService::Noop),
            Some(ServiceRef::Internal(_)) => Some(PageService::Api),
            Some(ServiceRef::Service(s)) => service_id(&s).map(PageService::Service),
            None => None,
        }
        .ok_or_else(|| MiddlewareError::UnknownService {
            option: "errors.service",
            service: c.service.clone(),
        })?;
        let fields = match &c.error_request_headers {
            None => None,
            Some(names) => Some(
                names
                    .iter()
                    .map(|n| {
                        HeaderName::from_bytes(n.as_bytes()).map_err(|_| MiddlewareError::Value {
                            option: "errors.errorRequestHeaders",
                            value: n.clone(),
                        })
                    })
                    .collect::<Result<_, _>>()?,
            ),
        };
        Ok(Self {
            ranges: c.status.iter().map(|r| (r.from, r.to)).collect(),
            rewrites: c
                .status_rewrites
                .iter()
                .filter_map(|r| {
                    let to = StatusCode::from_u16(r.status).ok()?;
                    Some(((r.range.from, r.range.to), to))
                })
                .collect(),
            service,
            service_name: c.service.clone().into(),
            query: split_query(&c.query),
            fields,
        })
    }

    /// The query names `{url}`: only then is the request's path kept for the page request.
    pub(crate) fn wants_url(&self) -> bool {
        self.query.contains(&Part::Url)
    }

    /// The status the client gets when `status` is caught.
    pub(crate) fn catches(&self, status: StatusCode) -> Option<StatusCode> {
        let code = status.as_u16();
        if status.is_informational() || !self.ranges.iter().any(|(a, b)| (*a..=*b).contains(&code))
        {
            return None;
        }
        Some(
            self.rewrites
                .iter()
                .find(|((a, b), _)| (*a..=*b).contains(&code))
                .map_or(status, |(_, to)| *to),
        )
    }

    /// The page request's path and query; `url` is only asked for when the query uses it.
    pub(crate) fn target(
        &self,
        sent: StatusCode,
        original: StatusCode,
        url: impl FnOnce() -> String,
    ) -> String {
        let mut url = Some(url);
        let mut out = String::new();
        for p in &self.query {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Status => out.push_str(sent.as_str()),
                Part::OriginalStatus => out.push_str(original.as_str()),
                Part::Url => {
                    if let Some(f) = url.take() {
                        query_escape(&f(), &mut out);
                    }
                }
            }
        }
        out
    }

    /// The page request's fields from the request's: all, or the listed ones; never its
    /// framing (the page request has no body) or a protocol switch.
    pub(crate) fn fields(&self, request: &HeaderMap) -> HeaderMap {
        let mut out = match &self.fields {
            None => request.clone(),
            Some(names) => {
                let mut out = HeaderMap::new();
                for n in names.iter() {
                    for v in request.get_all(n) {
                        out.append(n.clone(), v.clone());
                    }
                }
                out
            }
        };
        for f in [
            header::CONTENT_LENGTH,
            header::TRANSFER_ENCODING,
            header::UPGRADE,
            header::CONNECTION,
            header::EXPECT,
        ] {
            out.remove(f);
        }
        out
    }
}

/// `query` in pieces; the placeholders are Traefik's, matched literally.
fn split_query(q: &str) -> Box<[Part]> {
    type Make = fn() -> Part;
    const NAMES: [(&str, Make); 3] = [
        ("{status}", || Part::Status),
        ("{originalStatus}", || Part::OriginalStatus),
        ("{url}", || Part::Url),
    ];
    let mut out = Vec::new();
    let mut rest = q;
    'outer: while !rest.is_empty() {
        for (at, _) in rest.match_indices('{') {
            for (name, part) in NAMES {
                if rest[at..].starts_with(name) {
                    if at > 0 {
                        out.push(Part::Text(rest[..at].into()));
                    }
                    out.push(part());
                    rest = &rest[at + name.len()..];
                    continue 'outer;
                }
            }
        }
        out.push(Part::Text(rest.into()));
        break;
    }
    out.into_boxed_slice()
}

/// Go's `url.QueryEscape`: unreserved bytes kept, space as `+`, the rest `%XX`.
fn query_escape(s: &str, out: &mut String) {
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(b));
            }
            b' ' => out.push('+'),
            _ => {
                const HEX: &[u8; 16] = b"0123456789ABCDEF";
                out.push('%');
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 15)]));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pages(status: &[(u16, u16)], rewrites: &[((u16, u16), u16)], query: &str) -> ErrorPages {
        let plan = bridge_plan::Errors {
            status: status
                .iter()
                .map(|&(from, to)| bridge_plan::StatusRange { from, to })
                .collect(),
            status_rewrites: rewrites
                .iter()
                .map(|&((from, to), status)| bridge_plan::StatusRewrite {
                    range: bridge_plan::StatusRange { from, to },
                    status,
                })
                .collect(),
            service: "pages".into(),
            query: query.into(),
            error_request_headers: None,
        };
        ErrorPages::from_plan(&plan, |_| Some(ServiceId::for_tests(0))).unwrap()
    }

    #[test]
    fn caught_codes_and_their_rewrites() {
        let p = pages(&[(500, 599), (404, 404)], &[((502, 503), 500)], "/");
        let code = |c: u16| StatusCode::from_u16(c).unwrap();
        for (status, want) in [
            (500, Some(500)),
            (502, Some(500)),
            (503, Some(500)),
            (504, Some(504)),
            (404, Some(404)),
            (403, None),
            (200, None),
            (101, None),
        ] {
            assert_eq!(p.catches(code(status)), want.map(code), "{status}");
        }
        // A range holding 1xx still never catches an interim or switching answer.
        let p = pages(&[(100, 599)], &[], "/");
        assert_eq!(p.catches(StatusCode::SWITCHING_PROTOCOLS), None);
        assert_eq!(p.catches(StatusCode::OK), Some(StatusCode::OK));
    }

    #[test]
    fn the_page_target_fills_traefiks_placeholders() {
        let p = pages(
            &[(500, 599)],
            &[],
            "/err?s={status}&o={originalStatus}&u={url}",
        );
        // Traefik's own answer for this case (checked against the binary).
        let got = p.target(
            StatusCode::SERVICE_UNAVAILABLE,
            StatusCode::SERVICE_UNAVAILABLE,
            || "http://127.0.0.1:18200/e1/status/503?a=b%20c&x=1".into(),
        );
        assert_eq!(
            got,
            "/err?s=503&o=503&u=http%3A%2F%2F127.0.0.1%3A18200%2Fe1%2Fstatus%2F503%3Fa%3Db%2520c%26x%3D1"
        );
        let p = pages(&[(500, 599)], &[], "/{status}.html{nope}");
        assert_eq!(
            p.target(StatusCode::BAD_GATEWAY, StatusCode::BAD_GATEWAY, || {
                panic!("not asked")
            }),
            "/502.html{nope}"
        );
        let mut s = String::new();
        query_escape("a b/ü", &mut s);
        assert_eq!(s, "a+b%2F%C3%BC");
    }

    #[test]
    fn the_page_request_never_carries_the_originals_framing() {
        let mut req = HeaderMap::new();
        req.insert("content-length", "5".parse().unwrap());
        req.insert("cookie", "a=1".parse().unwrap());
        req.append("x-keep", "1".parse().unwrap());
        req.append("x-keep", "2".parse().unwrap());
        let all = pages(&[(500, 599)], &[], "/");
        let f = all.fields(&req);
        assert!(f.get("content-length").is_none());
        assert_eq!(f["cookie"], "a=1");
        let mut some = all;
        some.fields = Some(vec![HeaderName::from_static("x-keep")].into());
        let f = some.fields(&req);
        assert_eq!(f.len(), 2);
        assert_eq!(f.get_all("x-keep").iter().count(), 2);
    }
}
