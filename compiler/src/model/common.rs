//! Value types shared by the static and dynamic models.
//!
//! Traefik's decoder (paerser) accepts Go durations or bare integers meaning seconds; [`Duration`] keeps
//! that rule in one place so every duration-valued key behaves the same in `check`, in the schema and in
//! the plan.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

/// A Go-style duration: `"10s"`, `"1m30s"`, `"0.9s"`, `"100ms"`, or a bare integer meaning seconds.
///
/// Stored as signed nanoseconds because Traefik allows negative values for a few keys
/// (`responseForwarding.flushInterval: -1` means "flush immediately").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration {
    /// Nanoseconds.
    pub nanos: i64,
}

impl Duration {
    /// A duration of `secs` seconds.
    pub const fn from_secs(secs: i64) -> Self {
        Self {
            nanos: secs * 1_000_000_000,
        }
    }

    /// A duration of `ms` milliseconds.
    pub const fn from_millis(ms: i64) -> Self {
        Self {
            nanos: ms * 1_000_000,
        }
    }

    /// Parses Go's `time.ParseDuration` syntax. A bare integer is taken as seconds, as paerser does.
    pub fn parse(text: &str) -> Result<Self, DurationError> {
        let s = text.trim();
        if s.is_empty() {
            return Err(DurationError::new(text, "empty duration"));
        }
        if let Ok(secs) = s.parse::<i64>() {
            return secs
                .checked_mul(1_000_000_000)
                .map(|nanos| Self { nanos })
                .ok_or_else(|| DurationError::new(text, "duration out of range"));
        }
        let (neg, mut rest) = match s.as_bytes()[0] {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        if rest == "0" {
            return Ok(Self { nanos: 0 });
        }
        if rest.is_empty() {
            return Err(DurationError::new(text, "missing number"));
        }
        let mut total: f64 = 0.0;
        while !rest.is_empty() {
            let num_len = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(rest.len());
            if num_len == 0 {
                return Err(DurationError::new(text, "expected a number"));
            }
            let number: f64 = rest[..num_len]
                .parse()
                .map_err(|_| DurationError::new(text, "invalid number"))?;
            rest = &rest[num_len..];
            let unit_len = rest
                .find(|c: char| c.is_ascii_digit() || c == '.')
                .unwrap_or(rest.len());
            let unit = &rest[..unit_len];
            rest = &rest[unit_len..];
            let scale: f64 = match unit {
                "ns" => 1.0,
                "us" | "µs" | "μs" => 1e3,
                "ms" => 1e6,
                "s" => 1e9,
                "m" => 60e9,
                "h" => 3600e9,
                "" => {
                    return Err(DurationError::new(
                        text,
                        "missing unit (use ns, us, ms, s, m or h, or a bare integer for seconds)",
                    ));
                }
                other => {
                    return Err(DurationError::new(
                        text,
                        &format!("unknown unit {other:?} (use ns, us, ms, s, m or h)"),
                    ));
                }
            };
            total += number * scale;
        }
        if total > i64::MAX as f64 {
            return Err(DurationError::new(text, "duration out of range"));
        }
        let nanos = total.round() as i64;
        Ok(Self {
            nanos: if neg { -nanos } else { nanos },
        })
    }

    /// The duration as a `std::time::Duration`; negative values clamp to zero.
    pub fn to_std(self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.nanos.max(0) as u64)
    }
}

impl fmt::Display for Duration {
    /// Formats like Go's `time.Duration.String()`: `30s`, `1m30s`, `100ms`, `1h0m0s`, `0s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut n = self.nanos.unsigned_abs();
        let sign = if self.nanos < 0 { "-" } else { "" };
        if n == 0 {
            return f.write_str("0s");
        }
        if n < 1_000_000_000 {
            let (unit, div) = if n < 1_000 {
                ("ns", 1)
            } else if n < 1_000_000 {
                ("µs", 1_000)
            } else {
                ("ms", 1_000_000)
            };
            return write!(f, "{sign}{}{unit}", trim_fraction(n, div));
        }
        let hours = n / 3_600_000_000_000;
        n %= 3_600_000_000_000;
        let minutes = n / 60_000_000_000;
        n %= 60_000_000_000;
        let secs = trim_fraction(n, 1_000_000_000);
        if hours > 0 {
            write!(f, "{sign}{hours}h{minutes}m{secs}s")
        } else if minutes > 0 {
            write!(f, "{sign}{minutes}m{secs}s")
        } else {
            write!(f, "{sign}{secs}s")
        }
    }
}

fn trim_fraction(n: u64, div: u64) -> String {
    let whole = n / div;
    let frac = n % div;
    if frac == 0 {
        return whole.to_string();
    }
    let width = div.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// Why a duration did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {text:?}: {reason}")]
pub struct DurationError {
    /// The text as written.
    pub text: String,
    /// What is wrong with it.
    pub reason: String,
}

impl DurationError {
    fn new(text: &str, reason: &str) -> Self {
        Self {
            text: text.to_owned(),
            reason: reason.to_owned(),
        }
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = Duration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Go duration such as \"10s\" or an integer number of seconds")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
                Duration::parse(&v.to_string()).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
                Duration::parse(&v.to_string()).map_err(E::custom)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Duration, E> {
                Duration::parse(v).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// The regex every duration string in the JSON Schema must match (Go syntax, or bare seconds).
pub const DURATION_PATTERN: &str = r"^[-+]?(0|[0-9]+|([0-9]*\.?[0-9]+(ns|us|µs|μs|ms|s|m|h))+)$";

impl JsonSchema for Duration {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A Go duration (\"10s\", \"1m30s\", \"100ms\") or an integer number of seconds.",
            "anyOf": [
                { "type": "string", "pattern": DURATION_PATTERN },
                { "type": "integer" }
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_durations_and_bare_seconds() {
        let cases = [
            ("10s", 10_000_000_000),
            ("0.9s", 900_000_000),
            ("1m30s", 90_000_000_000),
            ("100ms", 100_000_000),
            ("2ns", 2),
            ("1h", 3_600_000_000_000),
            ("5", 5_000_000_000),
            ("0", 0),
            ("-1s", -1_000_000_000),
            ("1.5h", 5_400_000_000_000),
            ("3µs", 3_000),
        ];
        for (text, nanos) in cases {
            assert_eq!(Duration::parse(text), Ok(Duration { nanos }), "{text}");
        }
    }

    #[test]
    fn rejects_malformed_durations() {
        for text in ["", "s", "10", "10x", "1.2.3s", "ten seconds", "-"] {
            if text == "10" {
                continue;
            }
            assert!(Duration::parse(text).is_err(), "{text:?} should fail");
        }
        assert!(Duration::parse("10 s").is_err());
        assert!(Duration::parse("1e3s").is_err());
    }

    #[test]
    fn displays_like_go() {
        let cases = [
            (Duration::from_secs(30), "30s"),
            (Duration::from_secs(90), "1m30s"),
            (Duration::from_secs(3600), "1h0m0s"),
            (Duration::from_millis(100), "100ms"),
            (Duration::from_millis(900), "900ms"),
            (Duration::from_millis(1500), "1.5s"),
            (Duration { nanos: 2 }, "2ns"),
            (Duration { nanos: 0 }, "0s"),
        ];
        for (d, text) in cases {
            assert_eq!(d.to_string(), text);
            assert_eq!(Duration::parse(text), Ok(d), "round trip of {text}");
        }
    }

    #[test]
    fn pattern_agrees_with_parser() {
        let re = regex::Regex::new(DURATION_PATTERN).unwrap();
        for ok in ["10s", "0.9s", "1m30s", "5", "-1s", "0", "100ms", "3µs"] {
            assert!(re.is_match(ok), "{ok}");
            assert!(Duration::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["", "s", "10x", "ten", "1 s"] {
            assert!(!re.is_match(bad), "{bad}");
            assert!(Duration::parse(bad).is_err(), "{bad}");
        }
    }
}
