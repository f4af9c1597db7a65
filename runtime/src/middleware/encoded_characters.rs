//! `encodedCharacters`, the middleware and an entry point's `http.encodedCharacters`: a request
//! whose path holds an escape of a denied character is refused with 400 and no body, as Traefik
//! refuses it. The check reads the path as it is at that point (the entry point's after
//! `proxy::request_path`, so with upper-case hex; the middleware's after earlier rewrites).

use bridge_plan::{EncodedCharacter, EncodedCharacters};

/// The denied characters as a bit set, built at load.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Denied(u8);

fn bit(c: EncodedCharacter) -> u8 {
    1 << (c as u8)
}

impl Denied {
    /// The set a plan section denies.
    pub(crate) fn of(e: &EncodedCharacters) -> Self {
        Self(e.denied.iter().fold(0, |acc, &c| acc | bit(c)))
    }

    /// True when nothing is denied: the check is skipped.
    pub(crate) fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The denied character `%hi lo` escapes, if any (either case of hex digit, as Traefik
    /// lists both).
    fn denies(self, hi: u8, lo: u8) -> bool {
        use EncodedCharacter as C;
        let c = match (hi, lo.to_ascii_uppercase()) {
            (b'2', b'F') => C::Slash,
            (b'5', b'C') => C::BackSlash,
            (b'0', b'0') => C::NullCharacter,
            (b'3', b'B') => C::Semicolon,
            (b'2', b'5') => C::Percent,
            (b'3', b'F') => C::QuestionMark,
            (b'2', b'3') => C::Hash,
            _ => return false,
        };
        self.0 & bit(c) != 0
    }

    /// Whether `path` (without the query) is refused: Traefik's scan, which also refuses a `%`
    /// with fewer than two bytes after it.
    pub(crate) fn refuses(self, path: &str) -> bool {
        if self.is_empty() {
            return false;
        }
        let b = path.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' {
                match (b.get(i + 1), b.get(i + 2)) {
                    (Some(&hi), Some(&lo)) if !self.denies(hi, lo) => i += 3,
                    _ => return true,
                }
            } else {
                i += 1;
            }
        }
        false
    }
}

/// Traefik's refusal: 400 with an empty body (and its `Content-Length: 0`).
pub(crate) fn refusal() -> http::Response<crate::body::Body> {
    crate::body::answer(http::StatusCode::BAD_REQUEST, "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use EncodedCharacter as C;

    fn denied(cs: &[EncodedCharacter]) -> Denied {
        Denied::of(&EncodedCharacters {
            denied: cs.to_vec(),
        })
    }

    /// Rows measured against Traefik 3.7.15 (docs/traefik-behaviour/buffering-grpcweb-encoded.md
    /// §3 and tests/differential/paths.rs).
    #[test]
    fn escapes_are_refused_as_traefik_refuses_them() {
        let all = denied(&EncodedCharacter::ALL);
        for (path, want) in [
            ("/a/b", false),
            ("/a%2Fb", true),
            ("/a%2fb", true),
            ("/a%5Cb", true),
            ("/a%5cb", true),
            ("/a%00b", true),
            ("/a%3Bb", true),
            ("/a%3bb", true),
            ("/a%25b", true),
            ("/a%252Fb", true),
            ("/a%3Fb", true),
            ("/a%3fb", true),
            ("/a%23b", true),
            ("/a%20b%2C%C3%A9", false),
            ("/a;b", false),
            ("/a%2", true),
            ("/a%", true),
            ("/a%41", false),
        ] {
            assert_eq!(all.refuses(path), want, "{path}");
        }
        let slash = denied(&[C::Slash]);
        assert!(slash.refuses("/a%2Fb"));
        assert!(!slash.refuses("/a%5Cb"));
        // `%252F` is a percent, then `2F`: not a slash.
        assert!(!slash.refuses("/a%252Fb"));
        // Even with nothing to find, a cut escape is refused; with nothing denied, nothing is.
        assert!(slash.refuses("/a%2"));
        assert!(!Denied::default().refuses("/a%2"));
    }
}
