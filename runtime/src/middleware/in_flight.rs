//! `inFlightReq`: at most `amount` requests of one source at a time (Traefik's default source:
//! the request's host as sent). A request over the limit gets 429 `max connections reached: N`
//! at once, never queued. A request holds its [`Slot`] until its answer has been sent (the slot
//! travels with the response body) or, for an upgraded connection, until the tunnel closes — as
//! Traefik's handler only returns then. One instance per router, as in Traefik.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use http::{Response, StatusCode};

use super::source::{Key, Source};
use crate::body::Body;

#[derive(Debug)]
pub(crate) struct InFlight {
    amount: u64,
    pub(crate) source: Source,
    counts: Arc<Mutex<HashMap<Key, u64>>>,
}

/// One request's place; given back when dropped.
#[derive(Debug)]
pub(crate) struct Slot {
    counts: Arc<Mutex<HashMap<Key, u64>>>,
    key: Option<Key>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let Some(key) = self.key.take() else { return };
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = counts.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&key);
            }
        }
    }
}

impl InFlight {
    pub(crate) fn from_plan(c: &bridge_plan::InFlightReq) -> Result<Self, super::MiddlewareError> {
        Ok(Self {
            amount: c.amount,
            source: Source::from_plan(&c.source)?,
            counts: Arc::default(),
        })
    }

    /// A slot for `key`; `None` when its source has `amount` in flight.
    pub(crate) fn acquire(&self, key: Key) -> Option<Slot> {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        let n = counts.entry(key.clone()).or_insert(0);
        if *n >= self.amount {
            if *n == 0 {
                counts.remove(&key);
            }
            tracing::debug!(
                "inFlightReq: {key:?} has {} requests in flight",
                self.amount
            );
            return None;
        }
        *n += 1;
        Some(Slot {
            counts: self.counts.clone(),
            key: Some(key),
        })
    }

    /// Traefik's refusal: 429 `max connections reached: N`, no `Content-Type`.
    pub(crate) fn refusal(&self) -> Response<Body> {
        crate::body::answer(
            StatusCode::TOO_MANY_REQUESTS,
            format!("max connections reached: {}", self.amount),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(amount: u64) -> InFlight {
        InFlight::from_plan(&bridge_plan::InFlightReq {
            amount,
            source: bridge_plan::SourceCriterion::RequestHost,
        })
        .unwrap()
    }

    #[test]
    fn slots_are_counted_per_source_and_given_back() {
        let l = limit(2);
        let h1 = || Key::Text("h1".into());
        let a = l.acquire(h1()).unwrap();
        let b = l.acquire(h1()).unwrap();
        assert!(l.acquire(h1()).is_none());
        let refused = l.refusal();
        assert_eq!(refused.status(), 429);
        assert!(refused.headers().get("content-type").is_none());
        assert_eq!(
            crate::middleware::test_support::body_text(refused),
            "max connections reached: 2"
        );
        // Another host is another source.
        let other = l.acquire(Key::Text("h2".into())).unwrap();
        drop(a);
        let c = l.acquire(h1()).unwrap();
        drop((b, c, other));
        assert!(
            l.counts.lock().unwrap().is_empty(),
            "no source kept at zero"
        );
    }
}
