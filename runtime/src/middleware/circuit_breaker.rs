//! `circuitBreaker`: Traefik's breaker (oxy v2.1.0), measured against Traefik 3.7.15 in
//! `docs/traefik-behaviour/circuitbreaker.md`, whose numbered must-match rules this follows.
//!
//! Only what the breaker forwards is measured: the status that came back through the rest of
//! the chain and the time until the answer's body was sent, recorded when that body is dropped
//! ([`Probe`]). Right after a record — never on a timer, at most once per check period — the
//! condition is evaluated; when it holds the breaker trips and forgets its metrics. Tripped,
//! every request gets the fallback until the fallback duration is over; the next request starts
//! the recovery ramp, which lets a share of requests through that grows linearly (the first is
//! always refused) and can trip again; the first request after the ramp closes the breaker. Every
//! transition is made by a request, as in oxy. One instance per router.
//!
//! Counters are 10 buckets of one wall-clock second (a sample counts while its second is one of
//! the last ten); latencies go to six rotating HDR-style histograms (two significant digits, in
//! microseconds), which only rotate when a sample comes, so idle time does not age them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bridge_plan::{BreakerCondition, BreakerRatio};
use http::{Response, StatusCode};
use tokio::time::Instant;

use crate::body::Body;

/// Buckets of the rolling counters, one second each.
const COUNTER_BUCKETS: usize = 10;
/// Sub-histograms of the latency window, and how long each is written before the next.
const HISTOGRAMS: usize = 6;
const HISTOGRAM_PERIOD: Duration = Duration::from_secs(10);
/// Largest latency the histogram holds, in microseconds (the HDR layout oxy configures for
/// 1 h tops out below 2^32); a slower answer is counted but not recorded as a latency.
const LARGEST_LATENCY_US: u64 = (1 << 32) - 1;

#[derive(Debug)]
pub(crate) struct CircuitBreaker {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    condition: BreakerCondition,
    expression: String,
    check_period: Duration,
    fallback: Duration,
    recovery: Duration,
    response_code: StatusCode,
    clock: WallSeconds,
    state: Mutex<State>,
}

/// Whole wall-clock seconds of a monotonic instant: the counters' buckets turn when the Unix
/// second does, as oxy's do, while time itself comes from tokio (paused in tests).
#[derive(Debug, Clone, Copy)]
struct WallSeconds {
    origin: Instant,
    /// Nanoseconds since the Unix epoch at `origin`.
    origin_unix_ns: u128,
}

impl WallSeconds {
    fn now() -> Self {
        let unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Self {
            origin: Instant::now(),
            origin_unix_ns: unix.as_nanos(),
        }
    }

    fn second(self, at: Instant) -> u64 {
        let ns = self.origin_unix_ns + at.saturating_duration_since(self.origin).as_nanos();
        u64::try_from(ns / 1_000_000_000).unwrap_or(u64::MAX)
    }
}

#[derive(Debug)]
struct State {
    mode: Mode,
    /// Evaluations wait until then; `None`: the next record is evaluated.
    next_check: Option<Instant>,
    metrics: Metrics,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Standby,
    Tripped { until: Instant },
    Recovering { until: Instant, ramp: Ramp },
}

/// oxy's ratio controller: lets a request through while the share let through, counting it,
/// stays under half the elapsed part of the recovery.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Ramp {
    start: Instant,
    allowed: u64,
    denied: u64,
}

impl Ramp {
    fn allow(&mut self, now: Instant, length: Duration) -> bool {
        // Computed as oxy does, in nanoseconds as floats, so the outcome at the edges is its own.
        let target = 0.5 / length.as_nanos() as f64
            * now.saturating_duration_since(self.start).as_nanos() as f64;
        let share = (self.allowed + 1) as f64 / (self.allowed + self.denied + 1) as f64;
        if share < target {
            self.allowed += 1;
            true
        } else {
            self.denied += 1;
            false
        }
    }
}

/// What the request gate decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    Forward,
    Fallback,
}

impl CircuitBreaker {
    pub(crate) fn from_plan(
        c: &bridge_plan::CircuitBreaker,
    ) -> Result<Self, super::MiddlewareError> {
        let response_code =
            StatusCode::from_u16(c.response_code).map_err(|_| super::MiddlewareError::Value {
                option: "circuitBreaker.responseCode",
                value: c.response_code.to_string(),
            })?;
        let ms = |v: u64| Duration::from_millis(v.max(1));
        Ok(Self::new(
            c,
            response_code,
            [
                ms(c.check_period_ms),
                ms(c.fallback_duration_ms),
                ms(c.recovery_duration_ms),
            ],
            WallSeconds::now(),
        ))
    }

    fn new(
        c: &bridge_plan::CircuitBreaker,
        response_code: StatusCode,
        [check_period, fallback, recovery]: [Duration; 3],
        clock: WallSeconds,
    ) -> Self {
        Self {
            shared: Arc::new(Shared {
                condition: c.condition.clone(),
                expression: c.expression.clone(),
                check_period,
                fallback,
                recovery,
                response_code,
                clock,
                state: Mutex::new(State {
                    mode: Mode::Standby,
                    next_check: None,
                    metrics: Metrics::default(),
                }),
            }),
        }
    }

    /// Whether a request arriving `now` goes on or gets the fallback (rule 12).
    pub(crate) fn gate(&self, now: Instant) -> Gate {
        let s = &self.shared;
        let mut state = s.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            match &mut state.mode {
                Mode::Standby => return Gate::Forward,
                Mode::Tripped { until } if now < *until => return Gate::Fallback,
                Mode::Tripped { .. } => {
                    tracing::debug!("circuitBreaker `{}`: recovering", s.expression);
                    state.mode = Mode::Recovering {
                        until: now + s.recovery,
                        ramp: Ramp {
                            start: now,
                            allowed: 0,
                            denied: 0,
                        },
                    };
                }
                Mode::Recovering { until, .. } if now > *until => {
                    tracing::debug!("circuitBreaker `{}`: standby", s.expression);
                    state.mode = Mode::Standby;
                    return Gate::Forward;
                }
                Mode::Recovering { ramp, .. } => {
                    return if ramp.allow(now, s.recovery) {
                        Gate::Forward
                    } else {
                        Gate::Fallback
                    };
                }
            }
        }
    }

    /// Traefik's fallback: the code and its status text, nothing else.
    pub(crate) fn fallback(&self) -> Response<Body> {
        let code = self.shared.response_code;
        crate::body::answer(code, crate::body::go_status_text(code))
    }

    /// What measures a forwarded request that started at `start` and came back with `status`.
    pub(crate) fn probe(&self, status: StatusCode, start: Instant) -> Probe {
        Probe {
            shared: self.shared.clone(),
            status: status.as_u16(),
            start,
        }
    }

    #[cfg(test)]
    fn record(&self, status: u16, latency: Duration, now: Instant) {
        self.shared.record(status, latency, now);
    }
}

impl Shared {
    /// Rules 6 and 11: record, then maybe evaluate and trip.
    fn record(&self, status: u16, latency: Duration, now: Instant) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let second = self.clock.second(now);
        state.metrics.record(status, latency, second, now);
        if state.next_check.is_some_and(|at| now < at) {
            return;
        }
        state.next_check = Some(now + self.check_period);
        if matches!(state.mode, Mode::Tripped { .. }) {
            return;
        }
        if state.metrics.holds(&self.condition, second) {
            tracing::debug!(
                "circuitBreaker `{}`: tripped for {:?}",
                self.expression,
                self.fallback
            );
            state.mode = Mode::Tripped {
                until: now + self.fallback,
            };
            state.metrics = Metrics {
                last_rotation: Some(now),
                ..Metrics::default()
            };
        }
    }
}

/// Travels with a forwarded answer's body; records the answer when the body is done with.
#[derive(Debug)]
pub(crate) struct Probe {
    shared: Arc<Shared>,
    status: u16,
    start: Instant,
}

impl Drop for Probe {
    fn drop(&mut self) {
        let now = Instant::now();
        self.shared
            .record(self.status, now.saturating_duration_since(self.start), now);
    }
}

/// oxy's `RTMetrics` of one breaker.
#[derive(Debug, Default)]
struct Metrics {
    total: Rolling,
    network_errors: Rolling,
    codes: BTreeMap<u16, Rolling>,
    latencies: [Histogram; HISTOGRAMS],
    current: usize,
    /// `None`: the first sample rotates at once, as oxy's zero time does.
    last_rotation: Option<Instant>,
}

impl Metrics {
    fn record(&mut self, status: u16, latency: Duration, second: u64, now: Instant) {
        self.total.add(second);
        // Rule 7: whoever produced them.
        if status == 502 || status == 504 {
            self.network_errors.add(second);
        }
        self.codes.entry(status).or_default().add(second);
        if self
            .last_rotation
            .is_none_or(|at| now.saturating_duration_since(at) >= HISTOGRAM_PERIOD)
        {
            self.current = (self.current + 1) % HISTOGRAMS;
            self.latencies[self.current] = Histogram::default();
            self.last_rotation = Some(now);
        }
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        if us <= LARGEST_LATENCY_US {
            self.latencies[self.current].add(us);
        }
    }

    fn holds(&self, c: &BreakerCondition, second: u64) -> bool {
        match c {
            BreakerCondition::Or(a, b) => self.holds(a, second) || self.holds(b, second),
            BreakerCondition::And(a, b) => self.holds(a, second) && self.holds(b, second),
            BreakerCondition::Ratio {
                ratio,
                op,
                threshold,
            } => op.holds(self.ratio(*ratio, second), threshold.get()),
            BreakerCondition::Latency {
                quantile,
                op,
                threshold_ms,
            } => op.holds(self.latency_ms(quantile.get()), *threshold_ms),
        }
    }

    /// Rules 7 and 8; 0 when there is nothing to divide by.
    fn ratio(&self, ratio: BreakerRatio, second: u64) -> f64 {
        let (a, b) = match ratio {
            BreakerRatio::NetworkErrors => {
                (self.network_errors.count(second), self.total.count(second))
            }
            BreakerRatio::ResponseCodes {
                numerator: [a1, a2],
                denominator: [b1, b2],
            } => {
                let (mut a, mut b) = (0, 0);
                for (&code, counter) in &self.codes {
                    let code = i64::from(code);
                    let n = counter.count(second);
                    if (a1..a2).contains(&code) {
                        a += n;
                    }
                    if (b1..b2).contains(&code) {
                        b += n;
                    }
                }
                (a, b)
            }
        };
        if b == 0 { 0.0 } else { a as f64 / b as f64 }
    }

    /// Rule 10: the merged histograms' value at the percentile, in whole milliseconds.
    fn latency_ms(&self, quantile: f64) -> i64 {
        let mut merged: BTreeMap<u64, u64> = BTreeMap::new();
        for h in &self.latencies {
            for (&low, &n) in &h.counts {
                *merged.entry(low).or_default() += n;
            }
        }
        let total: u64 = merged.values().sum();
        let q = quantile.min(100.0);
        // hdrhistogram-go: the rank rounds half up, and rank 0 (so also the 0th percentile,
        // whose lowest-value reading would only matter at a higher rank) reads as 0.
        let rank = (q / 100.0 * total as f64 + 0.5) as u64;
        if rank == 0 {
            return 0;
        }
        let mut seen = 0;
        for (&low, &n) in &merged {
            seen += n;
            if seen >= rank {
                return i64::try_from(highest_equivalent(low) / 1000).unwrap_or(i64::MAX);
            }
        }
        0
    }
}

/// A count over the last ten wall-clock seconds.
#[derive(Debug, Default)]
struct Rolling {
    /// Per bucket: the second it holds and its count.
    buckets: [(u64, u64); COUNTER_BUCKETS],
}

impl Rolling {
    fn add(&mut self, second: u64) {
        let slot = &mut self.buckets[(second % COUNTER_BUCKETS as u64) as usize];
        if slot.0 != second {
            *slot = (second, 0);
        }
        slot.1 += 1;
    }

    /// Rule 9: samples of `second` and the nine before it.
    fn count(&self, second: u64) -> u64 {
        self.buckets
            .iter()
            .filter(|(s, _)| *s <= second && second - s < COUNTER_BUCKETS as u64)
            .map(|(_, n)| n)
            .sum()
    }
}

/// Latencies by HDR bucket (two significant digits): key is the bucket's lowest value.
#[derive(Debug, Default)]
struct Histogram {
    counts: BTreeMap<u64, u64>,
}

impl Histogram {
    fn add(&mut self, us: u64) {
        *self.counts.entry(lowest_equivalent(us)).or_default() += 1;
    }
}

/// Width of the HDR bucket holding `v`: 1 below 256, then doubling with every power of two
/// (256 sub-buckets, two significant digits, unit 1 µs).
fn bucket_width(v: u64) -> u64 {
    let bits = 64 - (v | 0xff).leading_zeros();
    1 << (bits - 8)
}

fn lowest_equivalent(v: u64) -> u64 {
    v & !(bucket_width(v) - 1)
}

fn highest_equivalent(low: u64) -> u64 {
    low + bucket_width(low) - 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use bridge_plan::{Comparison, Float};

    fn ratio(ratio: BreakerRatio, op: Comparison, t: f64) -> BreakerCondition {
        BreakerCondition::Ratio {
            ratio,
            op,
            threshold: Float::new(t).unwrap(),
        }
    }

    const NET: BreakerRatio = BreakerRatio::NetworkErrors;
    const FIVE_XX: BreakerRatio = BreakerRatio::ResponseCodes {
        numerator: [500, 600],
        denominator: [0, 600],
    };

    fn latency(q: f64, op: Comparison, ms: i64) -> BreakerCondition {
        BreakerCondition::Latency {
            quantile: Float::new(q).unwrap(),
            op,
            threshold_ms: ms,
        }
    }

    /// A breaker whose wall-clock seconds start `phase_ms` into a second.
    fn breaker(
        condition: BreakerCondition,
        [check, fallback, recovery]: [u64; 3],
        phase_ms: u64,
    ) -> CircuitBreaker {
        let plan = bridge_plan::CircuitBreaker {
            expression: condition.to_string(),
            condition,
            check_period_ms: check,
            fallback_duration_ms: fallback,
            recovery_duration_ms: recovery,
            response_code: 503,
        };
        let clock = WallSeconds {
            origin: Instant::now(),
            origin_unix_ns: 1_700_000_000_000_000_000 + u128::from(phase_ms) * 1_000_000,
        };
        let ms = Duration::from_millis;
        CircuitBreaker::new(
            &plan,
            StatusCode::SERVICE_UNAVAILABLE,
            [ms(check), ms(fallback), ms(recovery)],
            clock,
        )
    }

    fn advance(ms: u64) -> impl Future<Output = ()> {
        tokio::time::advance(Duration::from_millis(ms))
    }

    fn fast(b: &CircuitBreaker, status: u16) {
        b.record(status, Duration::from_millis(1), Instant::now());
    }

    #[tokio::test(start_paused = true)]
    async fn one_failing_first_answer_trips_and_the_fallback_is_the_status_text() {
        let b = breaker(ratio(NET, Comparison::Gt, 0.5), [100, 10_000, 10_000], 0);
        assert_eq!(b.gate(Instant::now()), Gate::Forward);
        fast(&b, 502);
        assert_eq!(b.gate(Instant::now()), Gate::Fallback);
        let r = b.fallback();
        assert_eq!(r.status(), 503);
        assert_eq!(r.headers()["content-length"], "19");
        assert!(r.headers().get("content-type").is_none());
        use http_body_util::BodyExt as _;
        let body = r.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"Service Unavailable");
        advance(9_999).await;
        assert_eq!(b.gate(Instant::now()), Gate::Fallback);
    }

    #[tokio::test(start_paused = true)]
    async fn only_502_and_504_are_network_errors() {
        let b = breaker(ratio(NET, Comparison::Gt, 0.5), [1, 10_000, 10_000], 0);
        for s in [500, 503, 499, 404] {
            fast(&b, s);
            advance(2).await;
        }
        assert_eq!(b.gate(Instant::now()), Gate::Forward);
        for s in [504, 502, 504, 502, 504] {
            fast(&b, s);
            advance(2).await;
        }
        // 5 of 9: tripped at the last.
        assert_eq!(b.gate(Instant::now()), Gate::Fallback);
    }

    #[tokio::test(start_paused = true)]
    async fn answers_inside_a_check_period_are_counted_but_not_evaluated() {
        let b = breaker(
            ratio(FIVE_XX, Comparison::Gt, 0.5),
            [5_000, 10_000, 10_000],
            0,
        );
        fast(&b, 200); // evaluated: 0
        for s in [500, 500, 500, 500, 200] {
            advance(200).await;
            fast(&b, s);
        }
        assert_eq!(b.gate(Instant::now()), Gate::Forward);
        advance(4_000).await;
        fast(&b, 200); // evaluated: 4 of 7
        assert_eq!(b.gate(Instant::now()), Gate::Fallback);
    }

    #[tokio::test(start_paused = true)]
    async fn a_sample_leaves_the_counters_in_the_tenth_second_after_its_own() {
        // Seconds turn at phase 0; the 200 lands 900 ms into its second.
        let b = breaker(ratio(FIVE_XX, Comparison::Ge, 1.0), [1, 10_000, 10_000], 0);
        advance(900).await;
        fast(&b, 200);
        advance(9_000).await; // second 9 after: still counted
        fast(&b, 500);
        assert_eq!(b.gate(Instant::now()), Gate::Forward, "1 of 2");
        let b = breaker(ratio(FIVE_XX, Comparison::Ge, 1.0), [1, 10_000, 10_000], 0);
        advance(900).await;
        fast(&b, 200);
        advance(9_300).await; // second 10 after: gone
        fast(&b, 500);
        assert_eq!(b.gate(Instant::now()), Gate::Fallback, "1 of 1");
    }

    #[tokio::test(start_paused = true)]
    async fn recovery_refuses_the_first_request_and_ramps_up_then_closes() {
        let b = breaker(ratio(NET, Comparison::Gt, 0.5), [100, 10_000, 10_000], 0);
        fast(&b, 502);
        advance(10_000).await;
        // Polled every 100 ms through the recovery, as in the note's experiment.
        let mut passed = 0;
        let mut first_pass = None;
        for i in 0..100 {
            if b.gate(Instant::now()) == Gate::Forward {
                passed += 1;
                first_pass.get_or_insert(i);
                fast(&b, 200);
            }
            advance(100).await;
        }
        assert_eq!(first_pass, Some(14), "the first pass comes 1.4 s in");
        assert_eq!(passed, 49);
        advance(1).await;
        assert_eq!(b.gate(Instant::now()), Gate::Forward);
        assert_eq!(b.shared.state.lock().unwrap().mode, Mode::Standby);
    }

    #[tokio::test(start_paused = true)]
    async fn transitions_are_made_by_requests() {
        let b = breaker(ratio(NET, Comparison::Gt, 0.5), [100, 2_000, 2_000], 0);
        fast(&b, 502);
        advance(7_000).await; // long past the fallback, nobody asked
        assert_eq!(
            b.gate(Instant::now()),
            Gate::Fallback,
            "recovery starts now"
        );
        advance(1_999).await;
        assert!(matches!(
            b.shared.state.lock().unwrap().mode,
            Mode::Recovering { .. }
        ));
        advance(2).await;
        assert_eq!(b.gate(Instant::now()), Gate::Forward);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_during_recovery_trips_again_with_fresh_metrics() {
        let b = breaker(ratio(NET, Comparison::Gt, 0.5), [100, 2_000, 2_000], 0);
        fast(&b, 502);
        advance(2_000).await;
        loop {
            advance(50).await;
            if b.gate(Instant::now()) == Gate::Forward {
                fast(&b, 502);
                break;
            }
        }
        assert!(matches!(
            b.shared.state.lock().unwrap().mode,
            Mode::Tripped { .. }
        ));
        let second = b.shared.clock.second(Instant::now());
        assert_eq!(
            b.shared.state.lock().unwrap().metrics.total.count(second),
            0
        );
    }

    #[tokio::test(start_paused = true)]
    async fn answers_in_flight_when_it_tripped_are_recorded_without_evaluation() {
        let b = breaker(ratio(NET, Comparison::Gt, 0.5), [1, 10_000, 10_000], 0);
        fast(&b, 502);
        advance(5).await;
        fast(&b, 200);
        let s = b.shared.state.lock().unwrap();
        assert!(matches!(s.mode, Mode::Tripped { .. }));
        assert_eq!(
            s.metrics.total.count(b.shared.clock.second(Instant::now())),
            1
        );
    }

    #[test]
    fn hdr_buckets_have_two_significant_digits() {
        assert_eq!(
            (lowest_equivalent(255), highest_equivalent(255)),
            (255, 255)
        );
        assert_eq!(highest_equivalent(lowest_equivalent(256)), 257);
        assert_eq!(lowest_equivalent(99_900), 99_840);
        assert_eq!(highest_equivalent(99_840), 100_351);
        assert_eq!(bucket_width(100_000), 512);
    }

    #[test]
    fn the_median_is_the_rounded_half_rank() {
        let mut m = Metrics::default();
        let now = Instant::now();
        let us = |ms| Duration::from_millis(ms);
        for (l, want) in [(1, 1), (150, 1), (1, 1), (150, 1), (150, 150)] {
            m.record(200, us(l), 0, now);
            assert_eq!(m.latency_ms(50.0), want);
        }
        assert_eq!(m.latency_ms(0.5), 0, "rank 0 reads as 0");
        assert_eq!(m.latency_ms(100.0), 150);
        assert_eq!(m.latency_ms(1000.0), 150, "clamped to 100");
        // 99.9 ms reads as the top of its bucket.
        let mut m = Metrics::default();
        m.record(200, Duration::from_micros(99_900), 0, now);
        assert_eq!(m.latency_ms(50.0), 100);
        assert_eq!(m.latency_ms(0.0), 0, "so is the 0th percentile");
    }

    #[tokio::test(start_paused = true)]
    async fn idle_time_does_not_age_latencies_out() {
        let cond = BreakerCondition::And(
            Box::new(ratio(NET, Comparison::Gt, 0.5)),
            Box::new(latency(50.0, Comparison::Gt, 100)),
        );
        let b = breaker(cond, [1, 10_000, 10_000], 0);
        for _ in 0..3 {
            b.record(200, Duration::from_millis(150), Instant::now());
            advance(2).await;
        }
        assert_eq!(b.gate(Instant::now()), Gate::Forward);
        advance(76_000).await;
        fast(&b, 502);
        assert_eq!(b.gate(Instant::now()), Gate::Fallback);
    }

    #[test]
    fn latency_histograms_rotate_only_when_samples_come() {
        let mut m = Metrics::default();
        let t0 = Instant::now();
        m.record(200, Duration::from_millis(150), 0, t0);
        // Six rotations later the slot of the first sample is written again.
        for i in 1..=HISTOGRAMS as u64 {
            assert_eq!(m.latency_ms(100.0), 150, "rotation {i}");
            m.record(
                200,
                Duration::from_millis(1),
                0,
                t0 + HISTOGRAM_PERIOD * i as u32,
            );
        }
        assert_eq!(m.latency_ms(100.0), 1);
    }

    #[test]
    fn response_code_ratio_is_zero_without_a_denominator() {
        let mut m = Metrics::default();
        let now = Instant::now();
        m.record(500, Duration::ZERO, 5, now);
        let odd = BreakerRatio::ResponseCodes {
            numerator: [500, 600],
            denominator: [200, 300],
        };
        assert_eq!(m.ratio(odd, 5), 0.0);
        m.record(200, Duration::ZERO, 5, now);
        assert_eq!(m.ratio(odd, 5), 1.0);
        assert_eq!(m.ratio(NET, 5), 0.0);
    }
}
