//! `rateLimit`: Traefik's token bucket per source (its in-memory limiter, `golang.org/x/time/rate`
//! underneath). A bucket holds `burst` tokens, starts full and refills at `average / period`;
//! each request takes one, and the balance may go below zero (a reservation). A request whose
//! wait would be at most Traefik's maximum delay waits it out, then goes on; a longer wait is
//! refused at once with 429 (`Retry-After`, `X-Retry-In`) and its token given back. Buckets idle
//! for Traefik's time to live go away (a returning source starts full); at most 65,536 sources
//! are kept per middleware, the one expiring first making room. One instance per router, as in
//! Traefik.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use http::{HeaderValue, Response, StatusCode};
use tokio::time::Instant;

use super::source::{Key, Source};
use crate::body::Body;

/// Traefik's bound on the sources one limiter remembers.
const MAX_SOURCES: usize = 65_536;

#[derive(Debug)]
pub(crate) struct RateLimit {
    /// Tokens per second.
    rate: f64,
    burst: f64,
    max_delay: Duration,
    /// Whole seconds a bucket lives after its last request.
    ttl_secs: u64,
    pub(crate) source: Source,
    buckets: Mutex<HashMap<Key, Bucket>>,
    /// The zero of the buckets' expiry seconds.
    epoch: Instant,
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    last: Instant,
    /// Seconds since `epoch` at which the bucket is gone.
    expiry: u64,
}

/// What the limiter decides for one request.
#[derive(Debug, PartialEq)]
pub(crate) enum Decision {
    Pass,
    /// Go on after this wait.
    Wait(Duration),
    /// 429: the wait would be this long.
    Refuse(Duration),
}

impl RateLimit {
    pub(crate) fn from_plan(c: &bridge_plan::RateLimit) -> Result<Self, super::MiddlewareError> {
        let period = Duration::from_millis(c.period_ms.max(1));
        // The compiler refuses a zero average; a zero here limits nothing, as in Traefik.
        let rate = if c.average == 0 {
            f64::INFINITY
        } else {
            c.average as f64 / period.as_secs_f64()
        };
        Ok(Self::new(
            rate,
            c.burst.max(1) as f64,
            Source::from_plan(&c.source)?,
        ))
    }

    fn new(rate: f64, burst: f64, source: Source) -> Self {
        // Traefik: half the interval between two tokens, from the whole-number rate; 500 ms
        // below one request a second.
        let max_delay = if rate < 1.0 {
            Duration::from_millis(500)
        } else if rate.is_infinite() || rate >= 5e8 {
            Duration::ZERO
        } else {
            Duration::from_nanos(1_000_000_000 / (2 * rate as u64))
        };
        let ttl_secs = if rate >= 1.0 {
            2
        } else {
            1 + (1.0 / rate) as u64
        };
        Self {
            rate,
            burst,
            max_delay,
            ttl_secs,
            source,
            buckets: Mutex::new(HashMap::new()),
            epoch: Instant::now(),
        }
    }

    /// Takes a token for `key` at `now`.
    pub(crate) fn decide(&self, key: Key, now: Instant) -> Decision {
        if self.rate.is_infinite() {
            return Decision::Pass;
        }
        let now_s = now.saturating_duration_since(self.epoch).as_secs();
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        let fresh = Bucket {
            tokens: self.burst,
            last: now,
            expiry: 0,
        };
        if buckets.len() >= MAX_SOURCES && !buckets.contains_key(&key) {
            make_room(&mut buckets, now_s);
        }
        let b = buckets.entry(key).or_insert(fresh);
        if b.expiry <= now_s {
            // Gone (or new): a returning source starts full, as in Traefik.
            b.tokens = self.burst;
            b.last = now;
        }
        // Every request keeps its source remembered, refused ones too.
        b.expiry = now_s + self.ttl_secs;
        let elapsed = now.saturating_duration_since(b.last).as_secs_f64();
        b.tokens = (b.tokens + elapsed * self.rate).min(self.burst) - 1.0;
        b.last = now;
        if b.tokens >= 0.0 {
            return Decision::Pass;
        }
        let wait = Duration::from_secs_f64(-b.tokens / self.rate);
        if wait > self.max_delay {
            b.tokens += 1.0;
            Decision::Refuse(wait)
        } else {
            Decision::Wait(wait)
        }
    }

    /// Traefik's refusal: `Too Many Requests`, no newline, no `Content-Type`.
    pub(crate) fn refusal(wait: Duration) -> Response<Body> {
        let mut r = crate::body::answer(StatusCode::TOO_MANY_REQUESTS, "Too Many Requests");
        let secs = wait.as_secs_f64().ceil();
        if let Ok(v) = HeaderValue::from_str(&format!("{secs:.0}")) {
            r.headers_mut().insert(http::header::RETRY_AFTER, v);
        }
        if let Ok(v) = HeaderValue::from_str(&go_duration(wait)) {
            r.headers_mut()
                .insert(http::HeaderName::from_static("x-retry-in"), v);
        }
        r
    }
}

/// Drops the expired buckets; when none was, the one expiring first.
fn make_room(buckets: &mut HashMap<Key, Bucket>, now_s: u64) {
    buckets.retain(|_, b| b.expiry > now_s);
    if buckets.len() >= MAX_SOURCES
        && let Some(first) = buckets
            .iter()
            .min_by_key(|(_, b)| b.expiry)
            .map(|(k, _)| k.clone())
    {
        buckets.remove(&first);
    }
}

/// Go's `time.Duration.String()`: `196.341198ms`, `1.101539036s`, `1m0s`, `0s`.
pub(crate) fn go_duration(d: Duration) -> String {
    fn frac(v: u128, unit: u128, digits: usize) -> String {
        let (int, rem) = (v / unit, v % unit);
        if rem == 0 {
            return int.to_string();
        }
        let f = format!("{rem:0digits$}");
        format!("{int}.{}", f.trim_end_matches('0'))
    }
    let ns = d.as_nanos();
    match ns {
        0 => "0s".to_owned(),
        1..1_000 => format!("{ns}ns"),
        1_000..1_000_000 => format!("{}µs", frac(ns, 1_000, 3)),
        1_000_000..1_000_000_000 => format!("{}ms", frac(ns, 1_000_000, 6)),
        _ => {
            let (h, m) = (ns / 3_600_000_000_000, (ns / 60_000_000_000) % 60);
            let s = frac(ns % 60_000_000_000, 1_000_000_000, 9);
            match (h, m) {
                (0, 0) => format!("{s}s"),
                (0, m) => format!("{m}m{s}s"),
                (h, m) => format!("{h}h{m}m{s}s"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::middleware::source::IpStrategy;

    fn limiter(average: u64, period_ms: u64, burst: u64) -> RateLimit {
        let mut l = RateLimit::from_plan(&bridge_plan::RateLimit {
            average,
            period_ms,
            burst,
            source: bridge_plan::SourceCriterion::RequestHost,
        })
        .unwrap();
        l.source = Source::Ip(IpStrategy::new(0, &[], None));
        l
    }

    fn key() -> Key {
        Key::Text("client".into())
    }

    #[test]
    fn traefiks_maximum_delay_and_time_to_live() {
        for (average, period_ms, delay_ns, ttl) in [
            (5, 1000, 100_000_000, 2),
            (3, 1000, 166_666_666, 2),
            // 1.5 a second: from the whole-number rate, so 500 ms, not 333 ms.
            (3, 2000, 500_000_000, 2),
            (1000, 1000, 500_000, 2),
            (1, 10_000, 500_000_000, 11),
        ] {
            let l = limiter(average, period_ms, 1);
            assert_eq!(
                l.max_delay,
                Duration::from_nanos(delay_ns),
                "{average}/{period_ms}"
            );
            assert_eq!(l.ttl_secs, ttl, "{average}/{period_ms}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_schedule_traefik_follows_for_five_a_second_burst_two() {
        // The schedule measured against Traefik 3.7.15 (average 5, burst 2).
        let l = limiter(5, 1000, 2);
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        assert_eq!(l.decide(key(), at(0)), Decision::Pass);
        assert_eq!(l.decide(key(), at(0)), Decision::Pass);
        // 0.6 tokens at 120 ms: waits 80 ms, within the 100 ms maximum.
        let Decision::Wait(w) = l.decide(key(), at(120)) else {
            panic!("expected a wait")
        };
        assert_eq!(w.as_millis(), 80);
        // At 130 ms the balance is -1.35 after the reservation: 270 ms, refused and refunded.
        let Decision::Refuse(w) = l.decide(key(), at(130)) else {
            panic!("expected a refusal")
        };
        assert_eq!(w.as_millis(), 270);
        let Decision::Refuse(w) = l.decide(key(), at(250)) else {
            panic!("expected a refusal")
        };
        assert_eq!(w.as_millis(), 150);
        assert!(matches!(l.decide(key(), at(320)), Decision::Wait(_)));
        // Another source has its own bucket.
        assert_eq!(l.decide(Key::Text("other".into()), at(320)), Decision::Pass);
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_bucket_expires_and_its_source_starts_full() {
        // Traefik: rate 1/s, burst 3; three at 0 s and three at 2.2 s all pass.
        let l = limiter(1, 1000, 3);
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(l.decide(key(), t0), Decision::Pass);
        }
        let later = t0 + Duration::from_millis(2200);
        for _ in 0..3 {
            assert_eq!(l.decide(key(), later), Decision::Pass);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_sources_remembered_are_bounded() {
        let l = limiter(1, 1000, 1);
        let now = Instant::now();
        for i in 0..(MAX_SOURCES + 10) {
            l.decide(Key::Text(i.to_string().into()), now);
        }
        assert_eq!(l.buckets.lock().unwrap().len(), MAX_SOURCES);
    }

    #[test]
    fn a_refusal_is_traefiks() {
        let r = RateLimit::refusal(Duration::from_nanos(1_101_539_036));
        assert_eq!(r.status(), 429);
        assert_eq!(r.headers()["retry-after"], "2");
        assert_eq!(r.headers()["x-retry-in"], "1.101539036s");
        assert!(r.headers().get("content-type").is_none());
        assert_eq!(
            crate::middleware::test_support::body_text(r),
            "Too Many Requests"
        );
    }

    #[test]
    fn go_duration_strings() {
        for (ns, want) in [
            (0, "0s"),
            (999, "999ns"),
            (1_500, "1.5µs"),
            (196_341_198, "196.341198ms"),
            (100_000_000, "100ms"),
            (1_101_539_036, "1.101539036s"),
            (60_000_000_000, "1m0s"),
            (3_600_000_000_000, "1h0m0s"),
            (3_661_500_000_000, "1h1m1.5s"),
        ] {
            assert_eq!(go_duration(Duration::from_nanos(ns)), want, "{ns}");
        }
    }
}
