//! Interim (1xx) responses on their way from a server to the client that asked, as they arrive.
//!
//! RFC 9110 §15.2: a proxy MUST forward the 1xx responses it did not ask for. Forwarding them
//! only together with the final response would take their point away: 103 Early Hints lets a
//! browser fetch while the server still thinks, 102 Processing keeps a client from giving up,
//! and a server's 100 Continue is what a client that sent `Expect: 100-continue` waits for
//! before it sends the body the server is waiting for. So the connection a request came in on
//! holds an [`Inbox`] and the request carries its [`Relay`] (in [`crate::proxy::Peer`]); the
//! upstream side — the own codec's response loop ([`crate::http1::pool`]), the own HTTP/2 client
//! ([`crate::http2::client`]) or hyper's callback ([`Sink`]) — puts each interim response in the
//! relay, and the server writes it at once (the own HTTP/1.1 loop, [`crate::http1::server`]) or
//! sends it as an interim HEADERS frame ([`crate::http2::server`]).
//!
//! One relay serves the requests of an HTTP/1.1 connection one after the other: an exchange
//! abandoned by a retry or a timeout may still see a late 1xx, which must not be written ahead of
//! the next request's answer, so each request's relay carries the connection's request number
//! and the inbox drops what comes for an earlier one.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use http::StatusCode;

use crate::http1::client::{Interim, MAX_INTERIM};

/// What a relay and its inbox share.
#[derive(Debug, Default)]
struct Shared {
    /// Interim responses not yet sent to the client, each with the request it belongs to.
    queue: Mutex<VecDeque<(u64, Interim)>>,
    /// Set while `queue` holds something: the server's poll takes no lock otherwise.
    ready: AtomicBool,
    /// The request being answered on the connection.
    current: AtomicU64,
    waker: atomic_waker::AtomicWaker,
}

/// The sending side, carried by one request: where its interim responses go.
#[derive(Debug, Clone)]
pub(crate) struct Relay {
    shared: Arc<Shared>,
    request: u64,
}

/// The receiving side, held by the connection's server.
#[derive(Debug)]
pub(crate) struct Inbox {
    shared: Arc<Shared>,
}

impl Relay {
    /// Hands an interim response that a client library parsed (hyper's callback, the h2 crate) to
    /// the client's connection, its hop-by-hop fields removed as from final responses.
    pub(crate) fn send_parsed(&self, status: StatusCode, mut headers: http::HeaderMap) {
        crate::proxy::forwarded_headers::strip_hop_by_hop(&mut headers, false);
        self.send(Interim { status, headers });
    }

    /// Hands `interim` to the client's connection; dropped when the request it belongs to has
    /// been answered already.
    pub(crate) fn send(&self, interim: Interim) {
        let Ok(mut queue) = self.shared.queue.lock() else {
            return;
        };
        if self.shared.current.load(Ordering::Acquire) != self.request {
            return;
        }
        queue.push_back((self.request, interim));
        self.shared.ready.store(true, Ordering::Release);
        drop(queue);
        self.shared.waker.wake();
    }
}

impl Inbox {
    /// The inbox of a new connection.
    pub(crate) fn new() -> Self {
        Self {
            shared: Arc::new(Shared::default()),
        }
    }

    /// The relay for the request about to be answered.
    pub(crate) fn relay(&self) -> Relay {
        Relay {
            shared: self.shared.clone(),
            request: self.shared.current.load(Ordering::Acquire),
        }
    }

    /// The next interim response of the current request, when one has come. The task's waker is
    /// registered once per request (`registered`): a task's waker does not change, and most
    /// requests never see an interim response, so later polls only read one flag.
    #[inline]
    pub(crate) fn poll_next(&self, cx: &Context<'_>, registered: &mut bool) -> Poll<Interim> {
        if !*registered {
            self.shared.waker.register(cx.waker());
            *registered = true;
        }
        match self.try_next() {
            Some(i) => Poll::Ready(i),
            None => Poll::Pending,
        }
    }

    /// The next interim response of the current request, if one is queued.
    #[inline]
    pub(crate) fn try_next(&self) -> Option<Interim> {
        // Inlined: almost every request finds nothing, and this is one load then.
        if !self.shared.ready.load(Ordering::Acquire) {
            return None;
        }
        self.take_queued()
    }

    /// The queued interim response of the current request (the rare path of `try_next`).
    #[cold]
    fn take_queued(&self) -> Option<Interim> {
        let mut queue = self.shared.queue.lock().ok()?;
        let current = self.shared.current.load(Ordering::Acquire);
        let next = loop {
            match queue.pop_front() {
                Some((request, i)) if request == current => break Some(i),
                Some(_) => {}
                None => break None,
            }
        };
        if queue.is_empty() {
            self.shared.ready.store(false, Ordering::Release);
        }
        next
    }

    /// The current request has its final answer: what its exchanges send from now on is dropped,
    /// and the next request gets relays of its own.
    pub(crate) fn next_request(&self) {
        // No lock: what is still queued carries the old number, and `try_next` drops it.
        self.shared.current.fetch_add(1, Ordering::AcqRel);
    }
}

/// The interim responses hyper's client reports for one request (its HTTP/1.1 connections to
/// `http://` servers with a body or an upgrade, and to `https://` servers over HTTP/1.1): a
/// callback in hyper's connection task puts each in the request's relay as it arrives, as the
/// own codecs do. hyper reads any number of them: past [`MAX_INTERIM`] nothing more is relayed
/// and the exchange is refused when its final answer comes, as the own codecs refuse it at once.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sink(Arc<Mutex<(usize, bool)>>);

impl Sink {
    /// Registers the callback for `req`; without a relay, interim responses are only counted.
    pub(crate) fn attach<B>(req: &mut http::Request<B>, relay: Option<&Relay>) -> Self {
        let sink = Self::default();
        let own = sink.clone();
        let relay = relay.cloned();
        hyper::ext::on_informational(req, move |res| {
            // 101 ends an exchange as its final answer (an upgrade), never as an interim one.
            if res.status() == StatusCode::SWITCHING_PROTOCOLS {
                return;
            }
            let Ok(mut count) = own.0.lock() else {
                return;
            };
            if count.0 == MAX_INTERIM {
                count.1 = true;
                return;
            }
            count.0 += 1;
            drop(count);
            if let Some(relay) = &relay {
                relay.send_parsed(res.status(), res.headers().clone());
            }
        });
        sink
    }

    /// True when the server sent more interim responses than [`MAX_INTERIM`].
    pub(crate) fn flooded(&self) -> bool {
        self.0.lock().is_ok_and(|c| c.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interim(code: u16) -> Interim {
        Interim {
            status: StatusCode::from_u16(code).unwrap_or(StatusCode::CONTINUE),
            headers: http::HeaderMap::new(),
        }
    }

    #[test]
    fn interim_responses_arrive_in_order_for_the_current_request_only() {
        let inbox = Inbox::new();
        let first = inbox.relay();
        first.send(interim(103));
        first.send(interim(102));
        assert_eq!(inbox.try_next().map(|i| i.status.as_u16()), Some(103));
        inbox.next_request();
        // A late 1xx of the answered request is not written ahead of the next answer.
        first.send(interim(100));
        let second = inbox.relay();
        second.send(interim(103));
        assert_eq!(inbox.try_next().map(|i| i.status.as_u16()), Some(103));
        assert!(inbox.try_next().is_none());
    }

    #[tokio::test]
    async fn the_inbox_wakes_when_an_interim_response_comes() {
        let inbox = Inbox::new();
        let relay = inbox.relay();
        let sender = tokio::spawn(async move {
            tokio::task::yield_now().await;
            relay.send(interim(103));
        });
        let mut registered = false;
        let got = std::future::poll_fn(|cx| inbox.poll_next(cx, &mut registered)).await;
        assert_eq!(got.status, StatusCode::EARLY_HINTS);
        sender.await.ok();
    }
}
