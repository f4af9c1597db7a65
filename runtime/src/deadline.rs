//! Bodies with a deadline: Traefik's `respondingTimeouts.readTimeout` (the whole request, body
//! included) and `writeTimeout` (the whole response) as Go's `http.Server` applies them.
//!
//! hyper has no body timeouts of its own, so the proxy wraps the streamed request body it sends
//! upstream and the response body it sends to the client. When the deadline passes before the
//! body ends, the next poll fails: hyper then aborts that message and closes the connection, as Go
//! does. Bodies are never buffered to enforce this.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

/// Boxed error type shared by the proxy's bodies.
pub(crate) use crate::body::BoxError;

/// The deadline passed before the body was complete.
#[derive(Debug, thiserror::Error)]
#[error("{0} timeout: the body did not complete in time")]
pub(crate) struct BodyTimedOut(pub &'static str);

/// `inner`, failing with [`BodyTimedOut`] once `deadline` has passed.
#[derive(Debug)]
pub(crate) struct Deadline<B> {
    inner: B,
    sleep: Pin<Box<Sleep>>,
    what: &'static str,
}

impl<B> Deadline<B> {
    /// Wraps `inner`; `what` names the timeout in the error (`read`, `write`).
    pub(crate) fn new(inner: B, deadline: Instant, what: &'static str) -> Self {
        Self {
            inner,
            sleep: Box::pin(tokio::time::sleep_until(deadline)),
            what,
        }
    }
}

impl<B> Body for Deadline<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|r| r.map_err(Into::into)));
        }
        if this.sleep.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(Box::new(BodyTimedOut(this.what)))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use std::time::Duration;

    use http_body_util::BodyExt;

    use super::*;

    /// A body that yields one 1-byte chunk every `gap`, `left` more times.
    struct Trickle {
        left: usize,
        gap: Duration,
        sleep: Pin<Box<Sleep>>,
    }

    impl Trickle {
        fn new(left: usize, gap: Duration) -> Self {
            Self {
                left,
                gap,
                sleep: Box::pin(tokio::time::sleep(gap)),
            }
        }
    }

    impl Body for Trickle {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            if self.left == 0 {
                return Poll::Ready(None);
            }
            if self.sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.left -= 1;
            let next = Instant::now() + self.gap;
            self.sleep.as_mut().reset(next);
            Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"x")))))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_completes_in_time_passes_through() {
        let body = Trickle::new(5, Duration::from_millis(100));
        let d = Deadline::new(body, Instant::now() + Duration::from_secs(1), "read");
        let got = d.collect().await.unwrap().to_bytes();
        assert_eq!(&got[..], b"xxxxx");
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_body_fails_when_the_deadline_passes() {
        let started = Instant::now();
        let body = Trickle::new(50, Duration::from_millis(100));
        let d = Deadline::new(body, started + Duration::from_secs(1), "write");
        let err = d.collect().await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "write timeout: the body did not complete in time"
        );
        assert_eq!(started.elapsed(), Duration::from_secs(1));
    }
}
