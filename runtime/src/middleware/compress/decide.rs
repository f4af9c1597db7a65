//! Whether an answer is encoded: the rules of Traefik's two handlers as one pure state machine.
//!
//! Traefik's proxy writes the upstream body to the handler chunk by chunk and, for an answer
//! without a length (chunked, close-delimited) or an event stream, flushes after each chunk; a
//! handler that has not decided when a flush comes decides then. The gzip handler (gzhttp)
//! decides on the first write when the upstream gave a `Content-Length`, the br/zstd handler
//! only counts bytes. [`Decider`] takes the same events — a write (with all bytes held so far),
//! a flush, the end — and answers as the handler would, so the body code only carries bytes.

use bridge_plan::ContentCoding;
use http::{HeaderMap, StatusCode, header};

use super::{Compress, sniff};

/// The answer of one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Keep holding the bytes.
    Wait,
    /// Encode, starting with the bytes held.
    Encode,
    /// Send the answer as it is, starting with the bytes held.
    Plain,
}

/// The fields and settings one answer is decided on.
#[derive(Debug)]
pub(crate) struct Decider<'a> {
    m: &'a Compress,
    gzip: bool,
    /// gzhttp's reading of `Content-Length`: 0 when absent or not a number.
    length: u64,
    /// The answer's `Content-Type`, `None` when absent or empty.
    content_type: Option<String>,
    /// Fields that rule compression out before any byte (`Content-Encoding`; for gzip also
    /// `Content-Range` and `No-Gzip-Compression`).
    ruled_out: bool,
    /// The proxy flushes after every chunk of this answer.
    pub(crate) flushes: bool,
}

/// `No-Gzip-Compression`: an upstream's request to gzhttp not to compress.
pub(crate) const NO_GZIP: &str = "no-gzip-compression";

impl<'a> Decider<'a> {
    /// Reads the answer's fields; `length_known` says whether the body has a length (a
    /// `Content-Length` or an answer the proxy made itself), which decides the proxy's flushing.
    pub(crate) fn new(
        m: &'a Compress,
        coding: ContentCoding,
        fields: &HeaderMap,
        length_known: bool,
    ) -> Self {
        let gzip = coding == ContentCoding::Gzip;
        let content_type = fields
            .get(header::CONTENT_TYPE)
            .filter(|v| !v.is_empty())
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        // Only whether these are there and not empty: no copy of their values.
        let present = |name: header::HeaderName| fields.get(name).is_some_and(|v| !v.is_empty());
        let length = fields
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        let ruled_out = present(header::CONTENT_ENCODING)
            || (gzip && (present(header::CONTENT_RANGE) || fields.contains_key(NO_GZIP)));
        let event_stream = content_type
            .as_deref()
            .and_then(|t| bridge_plan::media_type::parse(t).ok())
            .is_some_and(|t| t == "text/event-stream");
        Self {
            m,
            gzip,
            length,
            content_type,
            ruled_out,
            flushes: !length_known || event_stream,
        }
    }

    /// Whether a status with no body is decided at once (1xx, 204, 304 carry none).
    pub(crate) fn bodiless(status: StatusCode) -> bool {
        status.is_informational()
            || status == StatusCode::NO_CONTENT
            || status == StatusCode::NOT_MODIFIED
    }

    /// A chunk came; `held` is every byte held so far, the new ones included.
    pub(crate) fn write(&self, held: &[u8]) -> Verdict {
        if self.ruled_out {
            return Verdict::Plain;
        }
        let min = self.m.min as u64;
        if self.gzip {
            let typed_ok = self
                .content_type
                .as_deref()
                .is_none_or(|t| self.gzip_type_ok(t));
            if self.length == 0 || (self.length >= min && typed_ok) {
                if (held.len() as u64) < min && self.length == 0 {
                    return Verdict::Wait;
                }
                if self.length >= min || held.len() as u64 >= min {
                    return self.gzip_verdict(held);
                }
            }
            return Verdict::Plain;
        }
        if let Some(t) = &self.content_type
            && !self.handler_type_ok(t)
        {
            return Verdict::Plain;
        }
        if (held.len() as u64) < min {
            Verdict::Wait
        } else {
            Verdict::Encode
        }
    }

    /// The proxy flushed with `held` (not empty) undecided: br/zstd encode whatever the size,
    /// gzhttp takes the length (or, without one, the minimum) as the size.
    pub(crate) fn flush(&self, held: &[u8]) -> Verdict {
        if self.ruled_out {
            return Verdict::Plain;
        }
        if !self.gzip {
            return Verdict::Encode;
        }
        let size = if self.length == 0 {
            self.m.min as u64
        } else {
            self.length
        };
        if size >= self.m.min as u64 {
            self.gzip_verdict(held)
        } else {
            Verdict::Plain
        }
    }

    /// The body ended with `held` undecided.
    pub(crate) fn end(&self, held: &[u8]) -> Verdict {
        if self.ruled_out || held.is_empty() || (held.len() as u64) < self.m.min as u64 {
            return Verdict::Plain;
        }
        if self.gzip {
            return self.gzip_verdict(held);
        }
        Verdict::Plain
    }

    /// gzhttp's filter on the type, sniffed from the bytes when the answer has none.
    fn gzip_verdict(&self, held: &[u8]) -> Verdict {
        let ok = match &self.content_type {
            Some(t) => self.gzip_type_ok(t),
            None => self.gzip_type_ok(sniff::detect(held)),
        };
        if ok { Verdict::Encode } else { Verdict::Plain }
    }

    /// gzhttp: a type that does not parse is compressed with an exclude list and not with an
    /// include list.
    fn gzip_type_ok(&self, t: &str) -> bool {
        match bridge_plan::media_type::parse(t) {
            Ok(media) => self.m.is_listed(&media) == self.m.include,
            Err(_) => !self.m.include,
        }
    }

    /// Traefik's br/zstd handler: a type that does not parse is never compressed.
    fn handler_type_ok(&self, t: &str) -> bool {
        match bridge_plan::media_type::parse(t) {
            Ok(media) => self.m.is_listed(&media) == self.m.include,
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ContentCoding::{Br, Gzip, Zstd};
    use Verdict::{Encode, Plain, Wait};
    use bridge_plan::MediaTypeFilter;

    fn compress(min: u64, filter: MediaTypeFilter) -> Compress {
        Compress::from_plan(&bridge_plan::Compress {
            encodings: vec![Gzip, Br, Zstd],
            wildcard: Gzip,
            default_encoding: None,
            min_response_body_bytes: min,
            media_types: filter,
        })
    }

    fn excluding(types: &[&str]) -> MediaTypeFilter {
        let mut v = vec!["application/grpc".to_owned()];
        v.extend(types.iter().map(|t| (*t).to_owned()));
        MediaTypeFilter::Exclude(v)
    }

    fn fields(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut f = HeaderMap::new();
        for (k, v) in pairs {
            f.append(
                header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        f
    }

    /// What the handler decides for `body` arriving in one chunk, flushed when the proxy would.
    fn decide(m: &Compress, coding: ContentCoding, f: &[(&str, &str)], body: &[u8]) -> Verdict {
        let length_known = f
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-length"));
        let d = Decider::new(m, coding, &fields(f), length_known);
        match d.write(body) {
            Wait if d.flushes => d.flush(body),
            Wait => d.end(body),
            v => v,
        }
    }

    const TEXT: (&str, &str) = ("content-type", "text/plain");

    #[test]
    fn size_decides_as_each_handler_does() {
        let m = compress(1024, excluding(&[]));
        let (small, big) = (vec![b'a'; 1023], vec![b'a'; 1024]);
        for c in [Gzip, Br, Zstd] {
            let len = |n: usize| n.to_string();
            assert_eq!(
                decide(&m, c, &[TEXT, ("content-length", &len(1023))], &small),
                Plain
            );
            assert_eq!(
                decide(&m, c, &[TEXT, ("content-length", &len(1024))], &big),
                Encode
            );
            // Without a length the proxy flushes the first chunk: compressed at any size.
            assert_eq!(decide(&m, c, &[TEXT], b"hello"), Encode, "{c:?}");
        }
    }

    #[test]
    fn a_slow_small_answer_with_a_length_is_encoded_by_br_only() {
        // Two chunks of 50 of a 100-byte answer, a flush between them (Traefik's 100 ms tick).
        let m = compress(1024, excluding(&[]));
        let f = fields(&[TEXT, ("content-length", "100")]);
        let gzip = Decider::new(&m, Gzip, &f, true);
        assert_eq!(
            gzip.write(&[b'a'; 50]),
            Plain,
            "gzip decides by the length at once"
        );
        let br = Decider::new(&m, Br, &f, true);
        assert_eq!(br.write(&[b'a'; 50]), Wait);
        assert_eq!(br.flush(&[b'a'; 50]), Encode);
    }

    #[test]
    fn fields_that_rule_compression_out() {
        let m = compress(10, excluding(&[]));
        let body = [b'a'; 100];
        for c in [Gzip, Br, Zstd] {
            for ce in ["gzip", "identity", "foo"] {
                assert_eq!(
                    decide(&m, c, &[TEXT, ("content-encoding", ce)], &body),
                    Plain
                );
            }
        }
        let range = [TEXT, ("content-range", "bytes 0-99/200")];
        assert_eq!(decide(&m, Gzip, &range, &body), Plain);
        assert_eq!(decide(&m, Br, &range, &body), Encode);
        let no_gzip = [TEXT, (NO_GZIP, "1")];
        assert_eq!(decide(&m, Gzip, &no_gzip, &body), Plain);
        assert_eq!(decide(&m, Zstd, &no_gzip, &body), Encode);
    }

    #[test]
    fn types_decide_as_each_handler_does() {
        let body = [b'a'; 100];
        let ex = compress(10, excluding(&["text/html"]));
        let inc = compress(10, MediaTypeFilter::Include(vec!["text/html".into()]));
        let rows: &[(&str, Verdict, Verdict, Verdict, Verdict)] = &[
            // type, gzip/exclude, br/exclude, gzip/include, br/include
            ("text/html", Plain, Plain, Encode, Encode),
            (
                "TEXT/HTML; charset=iso-8859-1",
                Plain,
                Plain,
                Encode,
                Encode,
            ),
            ("text/plain", Encode, Encode, Plain, Plain),
            ("application/grpc", Plain, Plain, Plain, Plain),
            ("application/grpc+proto", Encode, Encode, Plain, Plain),
            ("image/jpeg", Encode, Encode, Plain, Plain),
            ("text/html/x", Encode, Plain, Plain, Plain),
            ("text/plain; charset", Encode, Plain, Plain, Plain),
        ];
        for (t, ge, be, gi, bi) in rows {
            let f = [("content-type", *t), ("content-length", "100")];
            assert_eq!(decide(&ex, Gzip, &f, &body), *ge, "gzip exclude {t}");
            assert_eq!(decide(&ex, Br, &f, &body), *be, "br exclude {t}");
            assert_eq!(decide(&inc, Gzip, &f, &body), *gi, "gzip include {t}");
            assert_eq!(decide(&inc, Br, &f, &body), *bi, "br include {t}");
        }
    }

    #[test]
    fn an_untyped_answer_is_sniffed_by_gzip_only() {
        let html = b"<html><body>hello, this is a page</body></html>";
        let len = [("content-length", "47")];
        let ex = compress(10, excluding(&["text/html"]));
        assert_eq!(decide(&ex, Gzip, &len, html), Plain);
        assert_eq!(decide(&ex, Br, &len, html), Encode);
        let inc = compress(10, MediaTypeFilter::Include(vec!["text/html".into()]));
        assert_eq!(decide(&inc, Gzip, &len, html), Encode);
        assert_eq!(decide(&inc, Zstd, &len, html), Encode);
        assert_eq!(
            decide(&inc, Gzip, &len, &[b'a'; 47]),
            Plain,
            "sniffed as text/plain"
        );
    }

    #[test]
    fn held_bytes_under_the_minimum_at_the_end_go_out_plain() {
        let m = compress(1024, excluding(&[]));
        for c in [Gzip, Br] {
            let d = Decider::new(&m, c, &fields(&[TEXT]), true);
            assert_eq!(d.write(&[b'a'; 600]), Wait);
            assert_eq!(d.end(&[b'a'; 600]), Plain);
            assert_eq!(d.end(&[]), Plain);
        }
    }

    #[test]
    fn event_streams_are_flushed_per_chunk() {
        let m = compress(1024, excluding(&[]));
        let f = fields(&[
            ("content-type", "text/event-stream"),
            ("content-length", "5"),
        ]);
        assert!(Decider::new(&m, Br, &f, true).flushes);
        assert!(!Decider::new(&m, Br, &fields(&[TEXT]), true).flushes);
        assert!(Decider::new(&m, Br, &fields(&[TEXT]), false).flushes);
    }
}
