//! What both sides of the proxy's HTTP/2 do with a stream: send a body under flow control,
//! receive one giving the window back as it is taken, and keep HTTP/1.1's connection fields out
//! of HTTP/2 messages (RFC 9113 §8.2.2).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use h2::{Reason, RecvStream, SendStream};
use http::header::{self, HeaderMap, HeaderName};
use hyper::body::{Body, Frame, SizeHint};

use crate::body::BoxError;

/// Sends `body` on `tx` under the stream's flow control. A body that fails goes to `failed`,
/// then resets the stream (the peer must not take a cut body for a whole one); the peer's reset
/// stops reading it.
pub(crate) async fn pipe<B, F>(mut body: B, mut tx: SendStream<Bytes>, failed: F)
where
    B: Body + Unpin,
    B::Error: Into<BoxError>,
    F: FnOnce(BoxError),
{
    /// A frame of the body, in types that may be held across an await whatever `B` is.
    enum Piece {
        Data(Bytes),
        Trailers(HeaderMap),
        End,
        Failed(BoxError),
        Reset(Result<Reason, h2::Error>),
    }
    loop {
        let piece = std::future::poll_fn(|cx| {
            if let Poll::Ready(reason) = tx.poll_reset(cx) {
                return Poll::Ready(Piece::Reset(reason));
            }
            Pin::new(&mut body).poll_frame(cx).map(|frame| match frame {
                None => Piece::End,
                Some(Err(e)) => Piece::Failed(e.into()),
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(mut data) => Piece::Data(data.copy_to_bytes(data.remaining())),
                    Err(frame) => match frame.into_trailers() {
                        Ok(trailers) => Piece::Trailers(trailers),
                        // An unknown kind of frame: nothing to send.
                        Err(_) => Piece::Data(Bytes::new()),
                    },
                },
            })
        })
        .await;
        match piece {
            Piece::Reset(reason) => {
                tracing::debug!("HTTP/2 stream reset by the peer: {reason:?}");
                return;
            }
            Piece::End => {
                let _ = tx.send_data(Bytes::new(), true);
                return;
            }
            Piece::Failed(e) => {
                tracing::debug!("HTTP/2 body failed: {e}");
                failed(e);
                tx.send_reset(Reason::INTERNAL_ERROR);
                return;
            }
            Piece::Data(data) => {
                let end = body.is_end_stream();
                if data.is_empty() && !end {
                    continue;
                }
                if !data.is_empty() && !wait_capacity(&mut tx).await {
                    return;
                }
                if tx.send_data(data, end).is_err() || end {
                    return;
                }
            }
            Piece::Trailers(mut trailers) => {
                strip_connection_fields(&mut trailers, false);
                let _ = tx.send_trailers(trailers);
                return;
            }
        }
    }
}

/// Waits until the stream may send at least one byte (the data goes in whole, h2 queues what
/// the window does not take yet, within the send buffer); false when the stream is gone.
async fn wait_capacity(tx: &mut SendStream<Bytes>) -> bool {
    tx.reserve_capacity(1);
    std::future::poll_fn(|cx| {
        loop {
            if tx.capacity() > 0 {
                return Poll::Ready(true);
            }
            if let Poll::Ready(reason) = tx.poll_reset(cx) {
                tracing::debug!("HTTP/2 stream reset by the peer: {reason:?}");
                return Poll::Ready(false);
            }
            match tx.poll_capacity(cx) {
                Poll::Ready(Some(Ok(_))) => {}
                Poll::Ready(Some(Err(_)) | None) => return Poll::Ready(false),
                Poll::Pending => return Poll::Pending,
            }
        }
    })
    .await
}

/// The head of an answer as the HTTP/2 and HTTP/3 servers send it: connection fields gone, a
/// `Date` when the answer has none, `Content-Length` when the body's size is known; with the
/// body and whether it is empty already.
pub(crate) fn answer_head(
    resp: http::Response<crate::body::Body>,
) -> (http::Response<()>, crate::body::Body, bool) {
    let (mut parts, body) = resp.into_parts();
    strip_connection_fields(&mut parts.headers, false);
    if !parts.headers.contains_key(header::DATE) {
        parts
            .headers
            .insert(header::DATE, crate::http1::server::date_value());
    }
    let end = body.is_end_stream();
    if !end
        && !parts.headers.contains_key(header::CONTENT_LENGTH)
        && let Some(n) = body.size_hint().exact()
    {
        parts.headers.insert(header::CONTENT_LENGTH, n.into());
    }
    (http::Response::from_parts(parts, ()), body, end)
}

/// The head of an interim (1xx) answer relayed to the client, connection fields gone.
pub(crate) fn interim_head(interim: crate::http1::client::Interim) -> http::Response<()> {
    let mut head = http::Response::new(());
    *head.status_mut() = interim.status;
    *head.headers_mut() = interim.headers;
    strip_connection_fields(head.headers_mut(), false);
    head
}

/// Removes the fields that are specific to an HTTP/1.1 connection and must not appear in
/// HTTP/2 (RFC 9113 §8.2.2), together with the fields `Connection` names: h2 refuses a message
/// that carries them, and hyper removed them alike. A request keeps `TE: trailers`
/// (`keep_te_trailers`), the one `TE` value HTTP/2 allows, which gRPC servers want to see.
pub(crate) fn strip_connection_fields(headers: &mut HeaderMap, keep_te_trailers: bool) {
    const FIXED: [HeaderName; 4] = [
        HeaderName::from_static("keep-alive"),
        HeaderName::from_static("proxy-connection"),
        header::TRANSFER_ENCODING,
        header::UPGRADE,
    ];
    for name in &FIXED {
        headers.remove(name);
    }
    if let Some(named) = headers.remove(header::CONNECTION)
        && let Ok(named) = named.to_str()
    {
        for name in named.split(',') {
            headers.remove(name.trim());
        }
    }
    let te_trailers = keep_te_trailers
        && headers
            .get_all(header::TE)
            .iter()
            .any(|v| crate::http1::client::value_has_token(v.as_bytes(), b"trailers"));
    headers.remove(header::TE);
    if te_trailers {
        headers.insert(header::TE, http::HeaderValue::from_static("trailers"));
    }
}

/// A body received on an HTTP/2 stream: flow-control capacity is given back as the data is
/// taken, and trailers follow the data. A request body (the server side) ends without an error
/// on an early RST_STREAM(NO_ERROR) from the client (RFC 9113 §8.1); a response body
/// (`strict`, the client side) takes any reset before END_STREAM for the cut it is.
#[derive(Debug)]
pub struct H2Body {
    recv: RecvStream,
    data_done: bool,
    strict: bool,
    /// The declared length, for the size hint (h2 checks the data against it).
    length: Option<u64>,
}

impl H2Body {
    /// The body arriving on `recv`, whose head carried `headers`.
    pub(crate) fn new(recv: RecvStream, headers: &HeaderMap, strict: bool) -> Self {
        let length = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| crate::http1::client::parse_decimal(v.as_bytes()));
        Self {
            recv,
            data_done: false,
            strict,
            length,
        }
    }
}

impl Body for H2Body {
    type Data = Bytes;
    type Error = h2::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, h2::Error>>> {
        let me = &mut *self;
        if !me.data_done {
            match me.recv.poll_data(cx) {
                Poll::Ready(Some(Ok(data))) => {
                    let _ = me.recv.flow_control().release_capacity(data.len());
                    if let Some(left) = me.length.as_mut() {
                        *left = left.saturating_sub(data.len() as u64);
                    }
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Poll::Ready(Some(Err(e))) if !me.strict && e.reason() == Some(Reason::NO_ERROR) => {
                    return Poll::Ready(None);
                }
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(None) => me.data_done = true,
                Poll::Pending => return Poll::Pending,
            }
        }
        match me.recv.poll_trailers(cx) {
            Poll::Ready(Ok(Some(trailers))) => Poll::Ready(Some(Ok(Frame::trailers(trailers)))),
            Poll::Ready(Ok(None)) => Poll::Ready(None),
            Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.recv.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        match self.length {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (n, v) in pairs {
            h.append(*n, http::HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn connection_fields_go_and_a_request_keeps_only_te_trailers() {
        let mut h = fields(&[
            ("connection", "keep-alive, x-hop"),
            ("x-hop", "1"),
            ("keep-alive", "timeout=5"),
            ("transfer-encoding", "chunked"),
            ("upgrade", "websocket"),
            ("te", "gzip, trailers"),
            ("x-end", "kept"),
        ]);
        strip_connection_fields(&mut h, true);
        assert_eq!(h.len(), 2, "{h:?}");
        assert_eq!(h["te"], "trailers");
        assert_eq!(h["x-end"], "kept");
        let mut h = fields(&[("te", "trailers")]);
        strip_connection_fields(&mut h, false);
        assert!(h.is_empty());
        let mut h = fields(&[("te", "gzip")]);
        strip_connection_fields(&mut h, true);
        assert!(h.is_empty());
    }
}
