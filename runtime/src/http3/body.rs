//! Bodies over HTTP/3: a request's, read off its stream as the proxy forwards it, with its
//! declared length held to (RFC 9114 §4.1.2); an answer's, written frame by frame.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http::{HeaderMap, header};
use hyper::body::{Body, Frame, SizeHint};

use crate::body::BoxError;

type RecvStream = h3::server::RequestStream<h3_quinn::RecvStream, Bytes>;

/// A request body arriving on an HTTP/3 stream.
pub struct H3Body {
    recv: RecvStream,
    /// Data seen when the request arrived (see [`H3Body::new`]), handed out first.
    first: Option<Bytes>,
    data_done: bool,
    /// Nothing more: the data and the trailers (if any) have been handed out.
    ended: bool,
    /// Trailers that had already arrived when the request did (see [`H3Body::new`]).
    trailers: Option<HeaderMap>,
    /// `Content-Length`, counted down; a body longer or shorter is malformed.
    left: Option<u64>,
}

impl std::fmt::Debug for H3Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H3Body")
            .field("data_done", &self.data_done)
            .field("ended", &self.ended)
            .field("left", &self.left)
            .finish_non_exhaustive()
    }
}

/// A request body that does not match its `Content-Length`.
#[derive(Debug, thiserror::Error)]
#[error("HTTP/3 request body does not match its Content-Length")]
struct LengthMismatch;

impl H3Body {
    /// The body of a request whose head carried `headers`. `Err` when its `Content-Length` is
    /// not one decimal number.
    pub(crate) fn new(recv: RecvStream, headers: &HeaderMap) -> Result<Self, ()> {
        let mut lengths = headers.get_all(header::CONTENT_LENGTH).iter();
        let left = match (lengths.next(), lengths.next()) {
            (None, _) => None,
            (Some(v), None) => Some(crate::http1::client::parse_decimal(v.as_bytes()).ok_or(())?),
            (Some(_), Some(_)) => return Err(()),
        };
        let mut body = Self {
            recv,
            first: None,
            data_done: false,
            ended: false,
            trailers: None,
            left,
        };
        body.peek();
        Ok(body)
    }

    /// Looks once at what already arrived, without waiting: a request whose stream ended with
    /// its head (every GET) is known to have no body, so the proxy forwards it as such rather
    /// than as a body of unknown length.
    fn peek(&mut self) {
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        if self.left == Some(0) {
            self.data_done = true;
        } else {
            match self.recv.poll_recv_data(&mut cx) {
                Poll::Ready(Ok(Some(mut data))) => {
                    self.first = Some(data.copy_to_bytes(data.remaining()));
                    return;
                }
                Poll::Ready(Ok(None)) => self.data_done = true,
                // Errors show when the body is read.
                Poll::Ready(Err(_)) | Poll::Pending => return,
            }
        }
        match self.recv.poll_recv_trailers(&mut cx) {
            Poll::Ready(Ok(None)) => self.ended = true,
            // Kept for the first read: a request whose trailers came with it keeps them.
            Poll::Ready(Ok(Some(t))) => self.trailers = Some(t),
            // Errors show when the body is read.
            Poll::Ready(Err(_)) | Poll::Pending => {}
        }
    }

    fn count(&mut self, n: usize) -> Result<(), LengthMismatch> {
        if let Some(left) = self.left.as_mut() {
            *left = left.checked_sub(n as u64).ok_or(LengthMismatch)?;
        }
        Ok(())
    }
}

impl Body for H3Body {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let me = &mut *self;
        if me.ended {
            return Poll::Ready(None);
        }
        if let Some(t) = me.trailers.take() {
            me.ended = true;
            return Poll::Ready(Some(Ok(Frame::trailers(t))));
        }
        if let Some(data) = me.first.take() {
            me.count(data.len())?;
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        if !me.data_done {
            match me.recv.poll_recv_data(cx) {
                Poll::Ready(Ok(Some(mut data))) => {
                    let data = data.copy_to_bytes(data.remaining());
                    me.count(data.len())?;
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Poll::Ready(Ok(None)) => {
                    if me.left.is_some_and(|l| l > 0) {
                        return Poll::Ready(Some(Err(LengthMismatch.into())));
                    }
                    me.data_done = true;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Some(Err(e.into()))),
                Poll::Pending => return Poll::Pending,
            }
        }
        match me.recv.poll_recv_trailers(cx) {
            Poll::Ready(Ok(Some(trailers))) => {
                me.ended = true;
                Poll::Ready(Some(Ok(Frame::trailers(trailers))))
            }
            Poll::Ready(Ok(None)) => {
                me.ended = true;
                Poll::Ready(None)
            }
            Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e.into()))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended
    }

    fn size_hint(&self) -> SizeHint {
        match self.left {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
}

/// Writes an answer's body on the stream: data as it comes, then its trailers. A body that
/// fails resets the stream (the client sees the answer cut, not ended).
pub(super) async fn pipe<B>(body: B, send: &mut super::SendStream)
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    let mut body = body;
    loop {
        let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
        match frame {
            None => return,
            Some(Err(e)) => {
                tracing::debug!("HTTP/3 answer body failed: {}", e.into());
                send.stop_stream(h3::error::Code::H3_INTERNAL_ERROR);
                return;
            }
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => {
                    if !data.is_empty() && send.send_data(data).await.is_err() {
                        return;
                    }
                }
                Err(frame) => {
                    if let Ok(trailers) = frame.into_trailers() {
                        let _ = send.send_trailers(trailers).await;
                        return;
                    }
                }
            },
        }
    }
}
