//! When to renew and when to retry, as pure functions of times (Unix seconds), so the rules are
//! table-tested without a clock.
//!
//! - Renewal: when a third of the certificate's *real* lifetime is left (Let's Encrypt's own
//!   advice; for a 90-day certificate that is day 60, for a 6-day one day 4), or at the time the
//!   CA's renewal information (ARI, RFC 9773) picks when it is earlier. Traefik instead derives it
//!   from the configured `certificatesDuration` (traefik #12461) and never asks for ARI.
//! - Retries: never given up. A CA that cannot be reached (connection, TLS, timeout) is retried
//!   soon — nothing was validated, nothing counts against rate limits: 2 s doubling to 5 min. A CA
//!   that answered with an error (validation failed, rate limited, bad request) is retried slowly:
//!   1 min doubling to 1 h, so a persistent failure costs a few attempts an hour, well inside Let's
//!   Encrypt's failed-validation limit.

/// Why the last attempt failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The CA could not be reached (or answered nothing usable).
    Unreachable,
    /// The CA refused or the validation failed.
    Refused,
}

/// Seconds to wait after `attempts` failures in a row (`attempts` ≥ 1) of this kind.
pub(crate) fn backoff_secs(kind: Failure, attempts: u32) -> u64 {
    let (first, cap) = match kind {
        Failure::Unreachable => (2u64, 300u64),
        Failure::Refused => (60, 3600),
    };
    let shift = attempts.saturating_sub(1).min(20);
    first.saturating_mul(1u64 << shift).min(cap)
}

/// When a certificate valid from `not_before` to `not_after` is due: a third of its lifetime
/// before the end.
pub(crate) fn renew_at(not_before: i64, not_after: i64) -> i64 {
    let life = (not_after - not_before).max(0);
    not_after - life / 3
}

/// The renewal time given the CA's suggested window (`start`..`end`), if any: a point inside the
/// window (`pick` in 0..=1000 chooses where, for spreading renewals), when it is earlier than
/// our own time; never in the past of `now` by more than nothing (a window already open means
/// now).
pub(crate) fn with_window(own: i64, window: Option<(i64, i64)>, pick: u16, now: i64) -> i64 {
    let Some((start, end)) = window else {
        return own;
    };
    if end < start {
        return own;
    }
    let span = end - start;
    let at = start + span * i64::from(pick.min(1000)) / 1000;
    own.min(at.max(now))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400;

    #[test]
    fn renewal_comes_when_a_third_of_the_real_lifetime_is_left() {
        // (lifetime, due after) — 90-day, 45-day, 6-day and a one-hour test certificate.
        for (life, due) in [
            (90 * DAY, 60 * DAY),
            (45 * DAY, 30 * DAY),
            (6 * DAY, 4 * DAY),
            (3600, 2400),
        ] {
            assert_eq!(renew_at(1_000, 1_000 + life), 1_000 + due, "{life}");
        }
        assert_eq!(renew_at(5, 5), 5);
    }

    #[test]
    fn the_ca_window_wins_only_when_earlier() {
        let own = 100 * DAY;
        assert_eq!(with_window(own, None, 500, 0), own);
        assert_eq!(with_window(own, Some((50 * DAY, 52 * DAY)), 0, 0), 50 * DAY);
        assert_eq!(
            with_window(own, Some((50 * DAY, 52 * DAY)), 500, 0),
            51 * DAY
        );
        assert_eq!(
            with_window(own, Some((50 * DAY, 52 * DAY)), 1000, 0),
            52 * DAY
        );
        assert_eq!(with_window(own, Some((150 * DAY, 152 * DAY)), 0, 0), own);
        // An open window (revocation ahead, say) means now, not a time already past.
        assert_eq!(with_window(own, Some((10, 20)), 500, 30 * DAY), 30 * DAY);
        assert_eq!(with_window(own, Some((20, 10)), 500, 0), own);
    }

    #[test]
    fn retries_back_off_and_never_stop() {
        use Failure::*;
        let seq: Vec<u64> = (1..=10).map(|n| backoff_secs(Unreachable, n)).collect();
        assert_eq!(seq, [2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
        let seq: Vec<u64> = (1..=8).map(|n| backoff_secs(Refused, n)).collect();
        assert_eq!(seq, [60, 120, 240, 480, 960, 1920, 3600, 3600]);
        assert_eq!(backoff_secs(Refused, u32::MAX), 3600);
    }
}
