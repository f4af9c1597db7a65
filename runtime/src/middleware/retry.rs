//! `retry`: how often a request that could not reach a server is tried. Only safe requests
//! without a body are tried again (nothing was consumed); the proxy applies it when forwarding.

use std::time::Duration;

/// Attempts and the first backoff (doubled after each failure, at most 10 s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Retry {
    pub(crate) attempts: u32,
    pub(crate) initial_interval: Duration,
}

impl Retry {
    /// Without a retry middleware a request is tried once more on another server at once.
    pub(crate) const DEFAULT: Self = Self {
        attempts: 2,
        initial_interval: Duration::ZERO,
    };

    pub(crate) fn from_plan(c: &bridge_plan::Retry) -> Self {
        Self {
            attempts: c.attempts.max(1),
            initial_interval: Duration::from_millis(c.initial_interval_ms),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_least_one_attempt_is_made() {
        let r = Retry::from_plan(&bridge_plan::Retry {
            attempts: 0,
            initial_interval_ms: 100,
        });
        assert_eq!(r.attempts, 1);
        assert_eq!(r.initial_interval, Duration::from_millis(100));
    }
}
