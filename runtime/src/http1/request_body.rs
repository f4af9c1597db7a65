//! Request bodies read by the own HTTP/1.1 server loop ([`super::server`]).
//!
//! The loop owns the connection: while a request is being answered it is the one that reads
//! the body off the socket, one piece at a time and only when the body's consumer (the
//! upstream exchange, a middleware) asks for more — so a slow server slows the client down
//! instead of filling memory, and `Expect: 100-continue` is answered when the body is first
//! wanted, as hyper's server and Go's answer it. The pieces cross to the consumer through a
//! [`Pipe`] of one slot: the consumer may live in another task (hyper's client connection).
//! The body is decoded by the same RFC 9112 decoder as server responses
//! ([`super::client::Decoder`]): lengths, chunk sizes, extensions, CRLFs and trailer sizes are
//! checked there; trailers are read and dropped (RFC 9110 §6.5.1 allows a recipient to discard
//! them).

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use hyper::body::{Frame, SizeHint};
use tokio::io::AsyncRead;

use super::client::{Decoder, Framing, Step};

/// Why a request body ended before its end.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The body broke its framing (a bad chunk size, a missing CRLF, ...).
    #[error("invalid request body: {0}")]
    Invalid(String),
    /// The client closed the connection inside the body.
    #[error("the client closed the connection inside the request body")]
    Closed,
    /// Reading from the client failed.
    #[error("reading the request body failed: {0}")]
    Io(#[source] std::io::Error),
}

/// What the loop hands over next.
#[derive(Debug, Default)]
enum Slot {
    /// Nothing yet.
    #[default]
    Empty,
    Data(Bytes),
    End,
    Failed(BodyError),
    /// The end (or the failure) was taken.
    Taken,
}

#[derive(Debug, Default)]
struct State {
    slot: Slot,
    /// The consumer found the slot empty and waits.
    wants: bool,
    /// The consumer is gone: nothing more is read for it.
    dropped: bool,
}

/// What the loop and the body share.
#[derive(Debug, Default)]
struct Pipe {
    state: Mutex<State>,
    /// Wakes the consumer when the slot is filled.
    to_body: atomic_waker::AtomicWaker,
    /// Wakes the loop when the consumer wants more or is dropped.
    to_loop: atomic_waker::AtomicWaker,
}

/// A request body the own loop reads off the client's connection (see the module docs).
#[derive(Debug)]
pub struct OwnBody {
    pipe: Arc<Pipe>,
    /// Bytes still to come of a body with a length.
    left: Option<u64>,
    done: bool,
}

impl hyper::body::Body for OwnBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        if self.done {
            return Poll::Ready(None);
        }
        let Ok(mut state) = self.pipe.state.lock() else {
            return Poll::Ready(Some(Err(BodyError::Closed)));
        };
        match std::mem::take(&mut state.slot) {
            Slot::Data(d) => {
                drop(state);
                if let Some(left) = self.left.as_mut() {
                    *left = left.saturating_sub(d.len() as u64);
                }
                Poll::Ready(Some(Ok(Frame::data(d))))
            }
            Slot::End | Slot::Taken => {
                state.slot = Slot::Taken;
                drop(state);
                self.done = true;
                Poll::Ready(None)
            }
            Slot::Failed(e) => {
                state.slot = Slot::Taken;
                drop(state);
                self.done = true;
                Poll::Ready(Some(Err(e)))
            }
            Slot::Empty => {
                self.pipe.to_body.register(cx.waker());
                state.wants = true;
                drop(state);
                self.pipe.to_loop.wake();
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done || self.left == Some(0)
    }

    fn size_hint(&self) -> SizeHint {
        match self.left {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
}

impl Drop for OwnBody {
    fn drop(&mut self) {
        if let Ok(mut state) = self.pipe.state.lock() {
            state.dropped = true;
        }
        self.pipe.to_loop.wake();
    }
}

/// What the loop should do for the body.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Wanted {
    /// Write `100 Continue` first: the client asked to wait for it before sending the body.
    Continue,
}

/// The loop's side of one request body: the decoder and the pipe to the consumer.
#[derive(Debug)]
pub(crate) struct Reader {
    pipe: Arc<Pipe>,
    framing: Framing,
    decoder: Decoder,
    /// `Expect: 100-continue` not answered yet.
    expect: bool,
    /// The end or a failure was handed over; nothing more is read.
    finished: bool,
    failed: bool,
    /// The consumer was told how the body ended (its end or a failure).
    told: bool,
}

/// A body framed as `framing` (not empty), and the loop's reader of it; `expect`: the client
/// waits for `100 Continue`.
pub(crate) fn channel(framing: Framing, expect: bool) -> (OwnBody, Reader) {
    let pipe = Arc::new(Pipe::default());
    let left = match framing {
        Framing::Length(n) => Some(n),
        _ => None,
    };
    (
        OwnBody {
            pipe: pipe.clone(),
            left,
            done: false,
        },
        Reader {
            pipe,
            framing,
            decoder: Decoder::new(framing),
            expect,
            finished: false,
            failed: false,
            told: false,
        },
    )
}

impl Reader {
    /// Moves the body along while the request is answered: when the consumer wants more, the
    /// next piece is decoded from `buf`, reading from `io` when `buf` holds none. `Ready` only
    /// when the loop must write `100 Continue` first ([`Reader::continued`] after it).
    pub(crate) fn poll_pump<I: AsyncRead + Unpin>(
        &mut self,
        cx: &mut Context<'_>,
        io: &mut I,
        buf: &mut BytesMut,
    ) -> Poll<Wanted> {
        loop {
            if self.finished {
                return Poll::Pending;
            }
            self.pipe.to_loop.register(cx.waker());
            {
                let Ok(state) = self.pipe.state.lock() else {
                    return Poll::Pending;
                };
                if state.dropped || !state.wants || !matches!(state.slot, Slot::Empty) {
                    return Poll::Pending;
                }
            }
            if self.expect {
                return Poll::Ready(Wanted::Continue);
            }
            let next = match self.decoder.decode(buf) {
                Ok(Step::Data(d)) => Slot::Data(d),
                Ok(Step::End) => Slot::End,
                Err(e) => Slot::Failed(BodyError::Invalid(e.to_string())),
                Ok(Step::More) => {
                    buf.reserve(super::client::READ_RESERVE);
                    match tokio_util::io::poll_read_buf(Pin::new(&mut *io), cx, buf) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Ok(0)) => Slot::Failed(BodyError::Closed),
                        Poll::Ready(Ok(_)) => continue,
                        Poll::Ready(Err(e)) => Slot::Failed(BodyError::Io(e)),
                    }
                }
            };
            self.hand_over(next);
        }
    }

    fn hand_over(&mut self, next: Slot) {
        match next {
            Slot::End => {
                self.finished = true;
                self.told = true;
            }
            Slot::Failed(_) => {
                self.finished = true;
                self.failed = true;
                self.told = true;
            }
            _ => {}
        }
        if let Ok(mut state) = self.pipe.state.lock() {
            state.wants = false;
            state.slot = next;
        }
        self.pipe.to_body.wake();
    }

    /// How the body is framed on the wire.
    pub(crate) fn framing(&self) -> Framing {
        self.framing
    }

    /// `100 Continue` was written.
    pub(crate) fn continued(&mut self) {
        self.expect = false;
    }

    /// After the answer: whether the connection can carry another request once the rest of
    /// the body has been read and dropped (at most `limit` bytes, by [`Reader::drain`]). A
    /// client still waiting for `100 Continue` may send its body or not: the connection is not
    /// kept (RFC 9110 §10.1.1).
    pub(crate) fn reusable(&self) -> bool {
        !self.failed && !self.expect
    }

    /// True when the whole body has been read.
    pub(crate) fn is_done(&self) -> bool {
        self.finished && !self.failed
    }

    /// Reads and drops the rest of the body, at most `limit` bytes of it (as Go's server does
    /// after an answer that left the body unread), so the connection can carry the next
    /// request; false when the body is longer, broken, or the client stopped.
    pub(crate) async fn drain<I: AsyncRead + Unpin>(
        &mut self,
        io: &mut I,
        buf: &mut BytesMut,
        limit: usize,
    ) -> bool {
        if !self.reusable() {
            return false;
        }
        let mut dropped = 0usize;
        loop {
            if self.finished {
                return !self.failed;
            }
            match self.decoder.decode(buf) {
                Ok(Step::Data(d)) => {
                    dropped += d.len();
                    if dropped > limit {
                        return false;
                    }
                }
                Ok(Step::End) => self.finished = true,
                Err(_) => return false,
                Ok(Step::More) => {
                    buf.reserve(super::client::READ_RESERVE);
                    match tokio::io::AsyncReadExt::read_buf(io, buf).await {
                        Ok(0) | Err(_) => return false,
                        Ok(_) => {}
                    }
                }
            }
        }
    }
}

impl Drop for Reader {
    /// The request is over: a consumer still holding the body (hyper's client may, after the
    /// answer) learns it will get no more, also when the rest was drained for the next request.
    fn drop(&mut self) {
        if !self.told {
            self.hand_over(Slot::Failed(BodyError::Closed));
        }
    }
}

/// Takes a request's body off `buf` as the loop would (fuzzing): the decoder's verdict, and
/// the buffer left at the next request when the body is whole.
pub(crate) fn fuzz_take(framing: Framing, buf: &mut BytesMut) -> bool {
    let mut decoder = Decoder::new(framing);
    loop {
        match decoder.decode(buf) {
            Ok(Step::Data(_)) => {}
            Ok(Step::End) => return true,
            Ok(Step::More) | Err(_) => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt as _;

    #[tokio::test]
    async fn the_body_is_read_only_when_wanted_and_expect_is_answered_first() {
        let (client, mut server) = tokio::io::duplex(1024);
        let (body, mut reader) = channel(Framing::Length(5), true);
        let mut buf = BytesMut::new();
        // Nobody wants the body yet: nothing is asked of the loop.
        let waker = futures_task_noop();
        let mut cx = Context::from_waker(&waker);
        assert!(
            reader
                .poll_pump(&mut cx, &mut server, &mut buf)
                .is_pending()
        );
        let collect = tokio::spawn(async move { body.collect().await.map(|c| c.to_bytes()) });
        let wanted = std::future::poll_fn(|cx| reader.poll_pump(cx, &mut server, &mut buf)).await;
        assert_eq!(wanted, Wanted::Continue);
        reader.continued();
        let mut client = client;
        tokio::io::AsyncWriteExt::write_all(&mut client, b"hel")
            .await
            .ok();
        tokio::io::AsyncWriteExt::write_all(&mut client, b"loGET")
            .await
            .ok();
        let pump = async {
            loop {
                let _ =
                    std::future::poll_fn(|cx| match reader.poll_pump(cx, &mut server, &mut buf) {
                        Poll::Pending if reader.is_done() => Poll::Ready(()),
                        Poll::Pending => Poll::Pending,
                        Poll::Ready(_) => Poll::Ready(()),
                    })
                    .await;
                if reader.is_done() {
                    break;
                }
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(5), pump)
            .await
            .ok();
        let got = collect.await.ok().and_then(Result::ok);
        assert_eq!(got.as_deref(), Some(&b"hello"[..]));
        // What follows the body stays for the next request.
        assert_eq!(&buf[..], b"GET");
        assert!(reader.reusable());
    }

    #[tokio::test]
    async fn a_broken_chunked_body_fails_the_consumer_and_the_connection() {
        let (_client, mut server) = tokio::io::duplex(1024);
        let (body, mut reader) = channel(Framing::Chunked, false);
        let mut buf = BytesMut::from(&b"5\r\nhelloXX\r\n0\r\n\r\n"[..]);
        let collect = tokio::spawn(async move { body.collect().await.map(|c| c.to_bytes()) });
        let pump = async {
            while !reader.finished {
                let _ = std::future::poll_fn(|cx| {
                    if reader.finished {
                        return Poll::Ready(());
                    }
                    reader.poll_pump(cx, &mut server, &mut buf).map(|_| ())
                })
                .await;
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(5), pump)
            .await
            .ok();
        let got = collect.await.ok();
        assert!(matches!(got, Some(Err(BodyError::Invalid(_)))), "{got:?}");
        assert!(!reader.reusable());
    }

    #[tokio::test]
    async fn an_unread_body_is_drained_up_to_the_limit() {
        let (mut client, mut server) = tokio::io::duplex(1 << 16);
        let (body, mut reader) = channel(Framing::Length(10), false);
        drop(body);
        let mut buf = BytesMut::from(&b"01234"[..]);
        tokio::io::AsyncWriteExt::write_all(&mut client, b"56789GET")
            .await
            .ok();
        assert!(reader.drain(&mut server, &mut buf, 16).await);
        assert_eq!(&buf[..], b"GET");
        let (_, mut long) = channel(Framing::Length(100), false);
        let mut buf = BytesMut::from(&[b'x'; 100][..]);
        assert!(!long.drain(&mut server, &mut buf, 16).await);
    }

    #[tokio::test]
    async fn a_consumer_still_waiting_when_the_rest_was_drained_gets_an_error() {
        let (mut client, mut server) = tokio::io::duplex(1 << 16);
        let (body, mut reader) = channel(Framing::Length(4), false);
        let waiting = tokio::spawn(async move { body.collect().await.map(|c| c.to_bytes()) });
        tokio::io::AsyncWriteExt::write_all(&mut client, b"abcd")
            .await
            .ok();
        let mut buf = BytesMut::new();
        assert!(reader.drain(&mut server, &mut buf, 16).await);
        drop(reader);
        let got = tokio::time::timeout(std::time::Duration::from_secs(5), waiting).await;
        assert!(
            matches!(got, Ok(Ok(Err(BodyError::Closed)))),
            "the consumer was left waiting: {got:?}"
        );
    }

    fn futures_task_noop() -> std::task::Waker {
        std::task::Waker::noop().clone()
    }
}
