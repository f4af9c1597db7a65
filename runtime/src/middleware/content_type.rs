//! `contentType`: Go's server gives an answer without `Content-Type` the type sniffed from its
//! first bytes; Traefik's entry points turn that off, and this middleware turns it back on for
//! its routers. As in Go, the type is not sniffed when the answer has a `Content-Type` field at
//! all (even an empty one), a `Content-Encoding` or a `Transfer-Encoding`, or no body; as in
//! Traefik, not for a server's answer without length either.

use http::{HeaderValue, Response, header};
use http_body_util::BodyExt as _;

use super::compress::{decide::Decider, encode, sniff};
use crate::body::Body;

/// `resp` with the sniffed `Content-Type` where Go's server would write one; reads the body's
/// first frame to decide, then sends it on.
pub(crate) async fn sniffed(resp: Response<Body>) -> Response<Body> {
    let fields = resp.headers();
    let encoded = fields
        .get(header::CONTENT_ENCODING)
        .is_some_and(|v| !v.is_empty());
    // A server's answer without length is flushed by Traefik's proxy before its first byte is
    // written (its flush timer fires at once), so Go's server usually finds nothing to sniff;
    // it is a race in Traefik, and the head goes out at once here.
    if fields.contains_key(header::CONTENT_TYPE)
        || !fields.contains_key(header::CONTENT_LENGTH)
        || encoded
        || fields.contains_key(header::TRANSFER_ENCODING)
        || Decider::bodiless(resp.status())
        || hyper::body::Body::is_end_stream(resp.body())
    {
        return resp;
    }
    let (mut parts, mut body) = resp.into_parts();
    loop {
        match body.frame().await {
            Some(Ok(frame)) => match frame.into_data() {
                // Go sniffs the first write; an empty frame carries nothing to sniff.
                Ok(data) if data.is_empty() => {}
                Ok(data) => {
                    parts.headers.insert(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static(sniff::detect(&data)),
                    );
                    return Response::from_parts(parts, encode::replay(data, body));
                }
                Err(frame) => {
                    let body = match frame.into_trailers() {
                        Ok(t) => encode::trailers_only(t),
                        Err(_) => body,
                    };
                    return Response::from_parts(parts, body);
                }
            },
            Some(Err(e)) => return Response::from_parts(parts, encode::failed(e)),
            None => return Response::from_parts(parts, body),
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use http::StatusCode;

    use super::*;
    use crate::middleware::test_support::body_text;

    fn run(resp: Response<Body>) -> Response<Body> {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(sniffed(resp))
    }

    fn answer(body: &'static [u8], fields: &[(&str, &str)]) -> Response<Body> {
        let mut r = crate::body::answer(StatusCode::OK, Bytes::from_static(body));
        for (k, v) in fields {
            r.headers_mut().insert(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        r
    }

    #[test]
    fn an_untyped_answer_gets_the_sniffed_type_and_its_body_unchanged() {
        let r = run(answer(b"<html><p>hi</p></html>", &[]));
        assert_eq!(
            r.headers()[header::CONTENT_TYPE],
            "text/html; charset=utf-8"
        );
        assert_eq!(body_text(r), "<html><p>hi</p></html>");
        let r = run(answer(b"\x89PNG\r\n\x1a\n....", &[]));
        assert_eq!(r.headers()[header::CONTENT_TYPE], "image/png");
    }

    #[test]
    fn answers_go_does_not_sniff_are_left_alone() {
        for fields in [
            &[("content-type", "application/x-mine")][..],
            &[("content-type", "")],
            &[("content-encoding", "gzip")],
            &[("transfer-encoding", "chunked")],
        ] {
            let r = run(answer(b"<html>", fields));
            let ct = r
                .headers()
                .get(header::CONTENT_TYPE)
                .map(|v| v.to_str().unwrap().to_owned());
            assert_eq!(
                ct,
                fields
                    .iter()
                    .find(|(k, _)| *k == "content-type")
                    .map(|(_, v)| (*v).to_owned()),
                "{fields:?}"
            );
        }
        assert!(
            !run(answer(b"", &[]))
                .headers()
                .contains_key(header::CONTENT_TYPE)
        );
        let mut r = answer(b"<html>", &[]);
        r.headers_mut().remove(header::CONTENT_LENGTH);
        assert!(
            !run(r).headers().contains_key(header::CONTENT_TYPE),
            "no length"
        );
        let mut r = answer(b"<html>", &[]);
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        assert!(!run(r).headers().contains_key(header::CONTENT_TYPE));
    }
}
