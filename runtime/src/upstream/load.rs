//! Traefik's `p2c` and `leasttime` strategies (`docs/traefik-behaviour/load-balancing.md` §4
//! and §6): both read each server's requests in flight through this load balancer, leasttime
//! also the mean time to the first response byte of its last 100 answers. The counts live here,
//! one set per load balancer; a [`Counted`] guard, taken by the proxy when it sends a request
//! and dropped when the answer is done, keeps them.

use std::borrow::Borrow;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// Answers a server's mean covers.
const SAMPLES: usize = 100;

/// The load of one p2c or leasttime load balancer.
#[derive(Debug)]
pub(crate) struct Load {
    inflight: Box<[AtomicU32]>,
    times: Box<[Mutex<Times>]>,
    /// leasttime's tie-break: each server's deadline (Traefik's EDF).
    deadlines: Mutex<Vec<f64>>,
    /// p2c's random draws (xorshift64*).
    rng: AtomicU64,
}

#[derive(Debug)]
struct Times {
    ring: [u32; SAMPLES],
    next: usize,
    count: usize,
    sum: f64,
}

impl Times {
    fn record(&mut self, ms: u32) {
        let old = if self.count < SAMPLES {
            self.count += 1;
            0.0
        } else {
            f64::from(self.ring[self.next])
        };
        self.ring[self.next] = ms;
        self.sum = self.sum - old + f64::from(ms);
        self.next = (self.next + 1) % SAMPLES;
    }

    /// The mean in milliseconds, 0 without samples.
    fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum / self.count as f64
        }
    }
}

impl Load {
    /// Counts for `weights.len()` servers; leasttime's deadlines start cumulative over the
    /// servers that take requests (weight 1 or more), in their order, as Traefik adds them.
    pub(crate) fn new(weights: &[u32], seed: u64) -> Self {
        let mut at = 0.0;
        let deadlines = weights
            .iter()
            .map(|&w| {
                if w > 0 {
                    at += 1.0 / f64::from(w);
                }
                at
            })
            .collect();
        Self {
            inflight: weights.iter().map(|_| AtomicU32::new(0)).collect(),
            times: weights
                .iter()
                .map(|_| {
                    Mutex::new(Times {
                        ring: [0; SAMPLES],
                        next: 0,
                        count: 0,
                        sum: 0.0,
                    })
                })
                .collect(),
            deadlines: Mutex::new(deadlines),
            rng: AtomicU64::new(seed | 1),
        }
    }

    fn random(&self, n: usize) -> usize {
        let mut x = self.rng.load(Ordering::Relaxed);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng.store(x, Ordering::Relaxed);
        let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
        // The high bits are the good ones; n is small.
        ((r >> 32) % n as u64) as usize
    }

    fn inflight(&self, i: usize) -> u32 {
        self.inflight
            .get(i)
            .map_or(0, |c| c.load(Ordering::Acquire))
    }

    /// p2c among `candidates` (positions): two draws, the second moved on when it equals the
    /// first; the second wins only with strictly fewer requests in flight. The candidates are
    /// walked, not collected: a pick allocates nothing.
    pub(crate) fn p2c<I>(&self, candidates: I) -> Option<usize>
    where
        I: IntoIterator,
        I::Item: Borrow<usize>,
        I::IntoIter: Clone,
    {
        let all = candidates.into_iter();
        let nth = |k: usize| all.clone().nth(k).map(|c| *c.borrow());
        let n = all.clone().count();
        match n {
            0 => None,
            1 => nth(0),
            _ => {
                let i = self.random(n);
                let mut j = self.random(n);
                if j == i {
                    j = (j + 1) % n;
                }
                let (a, b) = (nth(i)?, nth(j)?);
                Some(if self.inflight(b) < self.inflight(a) {
                    b
                } else {
                    a
                })
            }
        }
    }

    /// leasttime among `candidates` (position, weight ≥ 1): the least
    /// `mean × (1 + in flight) / weight`; equal scores go to the earliest deadline (the first on
    /// a tie), which alone moves on by `1/weight`. Two passes over the candidates instead of a
    /// list of the tied ones: a pick allocates nothing.
    pub(crate) fn least_time<I>(&self, candidates: I) -> Option<usize>
    where
        I: IntoIterator,
        I::Item: Borrow<(usize, u32)>,
        I::IntoIter: Clone,
    {
        let all = candidates.into_iter().map(|c| *c.borrow());
        let mut two = all.clone();
        match (two.next(), two.next()) {
            (None, _) => return None,
            (Some((only, _)), None) => return Some(only),
            _ => {}
        }
        let score = |(i, w): (usize, u32)| {
            let mean = self.times.get(i).map_or(0.0, |t| {
                t.lock().unwrap_or_else(PoisonError::into_inner).mean()
            });
            mean * (1.0 + f64::from(self.inflight(i))) / f64::from(w)
        };
        let best = all.clone().map(score).fold(f64::MAX, f64::min);
        let mut tied = all.filter(|&c| score(c) == best);
        let first = tied.next()?;
        let mut rest = tied.peekable();
        if rest.peek().is_none() {
            return Some(first.0);
        }
        let mut deadlines = self
            .deadlines
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let deadline = |i: usize| deadlines.get(i).copied().unwrap_or(f64::MAX);
        let mut chosen = (first.0, first.1, deadline(first.0));
        for (i, w) in rest {
            let d = deadline(i);
            if d < chosen.2 {
                chosen = (i, w, d);
            }
        }
        let (i, w, d) = chosen;
        if let Some(slot) = deadlines.get_mut(i) {
            *slot = d + 1.0 / f64::from(w);
        }
        Some(i)
    }

    /// Starts counting a request to server `i`.
    pub(crate) fn start(self: &Arc<Self>, i: usize) -> Counted {
        if let Some(c) = self.inflight.get(i) {
            c.fetch_add(1, Ordering::AcqRel);
        }
        Counted {
            load: Arc::clone(self),
            index: i,
        }
    }
}

/// One request counted in flight on a server; the count drops with it.
#[derive(Debug)]
pub(crate) struct Counted {
    load: Arc<Load>,
    index: usize,
}

impl Counted {
    /// The server's answer began `ttfb` after the request was sent (whole milliseconds, as
    /// Traefik keeps them).
    pub(crate) fn first_byte(&self, ttfb: Duration) {
        let ms = u32::try_from(ttfb.as_millis()).unwrap_or(u32::MAX);
        if let Some(t) = self.load.times.get(self.index) {
            t.lock().unwrap_or_else(PoisonError::into_inner).record(ms);
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        if let Some(c) = self.load.inflight.get(self.index) {
            c.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p2c_prefers_the_server_with_fewer_requests_in_flight() {
        let load = Arc::new(Load::new(&[1, 1], 42));
        let _busy = load.start(0);
        for _ in 0..50 {
            assert_eq!(load.p2c([0, 1]), Some(1), "one request on 0: always 1");
        }
        drop(_busy);
        let mut seen = [0; 2];
        for _ in 0..400 {
            seen[load.p2c([0, 1]).unwrap_or(9)] += 1;
        }
        assert!(seen[0] > 120 && seen[1] > 120, "idle: both drawn, {seen:?}");
        assert_eq!(load.p2c([1]), Some(1));
        assert_eq!(load.p2c([0_usize; 0]), None);
    }

    #[test]
    fn least_time_cold_start_is_traefiks_edf_then_the_fastest_wins() {
        // All means 0: EDF over cumulative deadlines 1, 2, 3 → A A B A B C A B C (model of
        // load-balancing.md §6).
        let load = Arc::new(Load::new(&[1, 1, 1], 1));
        let all = [(0, 1), (1, 1), (2, 1)];
        let picks: Vec<usize> = (0..9).map(|_| load.least_time(all).unwrap()).collect();
        assert_eq!(picks, [0, 0, 1, 0, 1, 2, 0, 1, 2]);
        let w31 = Arc::new(Load::new(&[3, 1], 1));
        let picks: Vec<usize> = (0..8)
            .map(|_| w31.least_time([(0, 3), (1, 1)]).unwrap())
            .collect();
        assert_eq!(picks, [0, 0, 0, 0, 1, 0, 0, 0]);
        // Means 20, 10, 30 ms: the 10 ms server from then on; in flight multiplies.
        for (i, ms) in [(0, 20), (1, 10), (2, 30)] {
            load.start(i).first_byte(Duration::from_millis(ms));
        }
        assert_eq!(load.least_time(all), Some(1));
        let busy = load.start(1);
        // 10 × 2 = 20 ties with server 0's 20: equal deadlines (5 each after the nine picks
        // above), so the first.
        assert_eq!(load.least_time(all), Some(0));
        let _more = load.start(1);
        assert_eq!(load.least_time(all), Some(0), "10 × 3 = 30 > 20");
        drop(busy);
        // Weights divide: 20 ms at weight 3 beats 10 ms at weight 1.
        let w = Arc::new(Load::new(&[3, 1], 1));
        w.start(0).first_byte(Duration::from_millis(20));
        w.start(1).first_byte(Duration::from_millis(10));
        assert_eq!(w.least_time([(0, 3), (1, 1)]), Some(0));
    }

    #[test]
    fn the_mean_covers_the_last_hundred_answers() {
        let load = Arc::new(Load::new(&[1], 1));
        let c = load.start(0);
        for _ in 0..100 {
            c.first_byte(Duration::from_millis(50));
        }
        for _ in 0..100 {
            c.first_byte(Duration::from_millis(10));
        }
        let mean = load.times[0]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .mean();
        assert_eq!(mean, 10.0);
        assert_eq!(load.inflight(0), 1);
        drop(c);
        assert_eq!(load.inflight(0), 0);
    }
}
