//! `compress`: Traefik's negotiation, its two handlers' rules for which answers are encoded, and
//! a streaming encoder body.
//!
//! Traefik 3.7 picks a coding from `Accept-Encoding` itself ([`Compress::choose`], at request
//! time), then hands gzip to klauspost's `gzhttp` — which negotiates again on the first header
//! line and decides with the upstream `Content-Length`, `Content-Range`, `No-Gzip-Compression`
//! and a sniffed type — and br/zstd to its own handler, which only counts bytes. Both add
//! `Vary: Accept-Encoding` whatever they then decide. [`decide`] holds both handlers' rules as a
//! pure state machine fed the answer's bytes; [`encode`] is the body that encodes frame by
//! frame, so a body of any size streams through with the codec's window as its only memory.
//! `docs/traefik-behaviour/compress.md` has the observations these rules come from.

use bridge_plan::{ContentCoding, MediaTypeFilter};
use http::{HeaderMap, Method, header};

pub(crate) mod decide;
pub(crate) mod encode;
pub(crate) mod sniff;

/// One `compress` middleware, built from the plan.
#[derive(Debug)]
pub(crate) struct Compress {
    /// Tie-break rank of each coding by [`slot`]; `None`: not configured.
    rank: [Option<i16>; 3],
    /// `identity`'s rank: after every coding.
    identity_rank: i16,
    wildcard: ContentCoding,
    default_encoding: Option<ContentCoding>,
    pub(crate) min: usize,
    /// Media types (lower case, no parameters) of the plan's list.
    pub(crate) types: Box<[Box<str>]>,
    /// `types` lists what is compressed (else what is not).
    pub(crate) include: bool,
}

/// What the request side decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Choice {
    /// Nothing is done to the answer (no `Vary` either).
    Pass,
    /// gzip won, but gzhttp's own reading of `Accept-Encoding` refuses it: the answer only
    /// gets `Vary` (and loses `No-Gzip-Compression`).
    VaryOnly,
    /// The answer is encoded with this coding if the handler's rules allow.
    Encode(ContentCoding),
}

fn slot(c: ContentCoding) -> usize {
    match c {
        ContentCoding::Gzip => 0,
        ContentCoding::Br => 1,
        ContentCoding::Zstd => 2,
    }
}

/// An `Accept-Encoding` entry Traefik's parser keeps.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Token {
    Wildcard,
    Identity,
    Coding(ContentCoding),
}

impl Compress {
    pub(crate) fn from_plan(c: &bridge_plan::Compress) -> Self {
        let mut rank = [None; 3];
        for (i, e) in c.encodings.iter().enumerate() {
            rank[slot(*e)] = Some(i16::try_from(i).unwrap_or(i16::MAX));
        }
        let (types, include) = match &c.media_types {
            MediaTypeFilter::Exclude(t) => (t, false),
            MediaTypeFilter::Include(t) => (t, true),
        };
        Self {
            rank,
            identity_rank: i16::try_from(c.encodings.len()).unwrap_or(i16::MAX),
            wildcard: c.wildcard,
            default_encoding: c.default_encoding,
            min: usize::try_from(c.min_response_body_bytes).unwrap_or(usize::MAX),
            types: types.iter().map(|t| t.as_str().into()).collect(),
            include,
        }
    }

    /// Traefik's request gate and negotiation, in its order: HEAD, the request's own type,
    /// `Accept-Encoding` (absent: the default encoding), then gzhttp's second reading.
    pub(crate) fn choose(&self, method: &Method, fields: &HeaderMap) -> Choice {
        if method == Method::HEAD {
            return Choice::Pass;
        }
        if let Some(ct) = fields.get(header::CONTENT_TYPE) {
            let ct = String::from_utf8_lossy(ct.as_bytes());
            let media = match bridge_plan::media_type::parse(&ct) {
                Ok(t) | Err(bridge_plan::media_type::MediaTypeError::InvalidParameter(t)) => t,
                Err(_) => String::new(),
            };
            // Traefik keeps a request of an excluded type (gRPC, event streams a user excluded)
            // uncompressed; with an include list only gRPC counts.
            if media == "application/grpc" || (!self.include && self.is_listed(&media)) {
                return Choice::Pass;
            }
        }
        let picked = if fields.contains_key(header::ACCEPT_ENCODING) {
            self.negotiate(fields)
        } else {
            self.default_encoding
        };
        match picked {
            None => Choice::Pass,
            Some(ContentCoding::Gzip) if !gzhttp_accepts(fields) => Choice::VaryOnly,
            Some(c) => Choice::Encode(c),
        }
    }

    /// `media` (lower case, no parameters) is one of the plan's list.
    pub(crate) fn is_listed(&self, media: &str) -> bool {
        self.types.iter().any(|t| &**t == media)
    }

    /// Traefik's `getCompressionEncoding` over every `Accept-Encoding` line.
    fn negotiate(&self, fields: &HeaderMap) -> Option<ContentCoding> {
        let lines = fields.get_all(header::ACCEPT_ENCODING);
        let mut each = lines.iter();
        if let (Some(only), None) = (each.next(), each.next())
            && only.is_empty()
        {
            return None;
        }
        let mut best: Option<(f64, i16, Token)> = None;
        for line in lines.iter().map(http::HeaderValue::as_bytes) {
            for item in line.split(|b| *b == b',') {
                let (name, params) = match item.iter().position(|b| *b == b';') {
                    Some(i) => (&item[..i], Some(&item[i + 1..])),
                    None => (item, None),
                };
                let Some(token) = self.token(name) else {
                    continue;
                };
                let weight = match params.map(without_spaces) {
                    Some(p) if p.starts_with(b"q=") => {
                        let w = go_parse_float(&p[2..]);
                        if w == 0.0 {
                            continue;
                        }
                        w
                    }
                    _ => 1.0,
                };
                let rank = match token {
                    Token::Wildcard => -1,
                    Token::Identity => self.identity_rank,
                    Token::Coding(c) => self.rank[slot(c)].unwrap_or(i16::MAX),
                };
                if best.is_none_or(|(bw, br, _)| sorts_before((weight, rank), (bw, br))) {
                    best = Some((weight, rank, token));
                }
            }
        }
        match best?.2 {
            Token::Wildcard => Some(self.wildcard),
            Token::Identity => None,
            Token::Coding(c) => Some(c),
        }
    }

    /// The configured coding, `*` or `identity` that `name` spells once spaces are removed
    /// (Traefik removes every space, not tabs, and compares case-sensitively).
    fn token(&self, name: &[u8]) -> Option<Token> {
        let name = without_spaces(name);
        let token = match &*name {
            b"*" => Token::Wildcard,
            b"identity" => Token::Identity,
            b"gzip" => Token::Coding(ContentCoding::Gzip),
            b"br" => Token::Coding(ContentCoding::Br),
            b"zstd" => Token::Coding(ContentCoding::Zstd),
            _ => return None,
        };
        match token {
            Token::Coding(c) if self.rank[slot(c)].is_none() => None,
            t => Some(t),
        }
    }
}

/// Traefik's sort: higher weight first (a NaN weight last, as Go's `cmp.Compare` orders it),
/// then the lower rank.
fn sorts_before((w, r): (f64, i16), (bw, br): (f64, i16)) -> bool {
    if w == bw {
        return r < br;
    }
    match (w.is_nan(), bw.is_nan()) {
        (true, _) => false,
        (false, true) => true,
        (false, false) => w > bw,
    }
}

/// `b` without ASCII spaces; borrowed when it has none.
fn without_spaces(b: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if b.contains(&b' ') {
        b.iter().copied().filter(|c| *c != b' ').collect()
    } else {
        b.into()
    }
}

/// Go's `strconv.ParseFloat(s, 64)` as Traefik uses it: a syntax error is 0. Go also reads hex
/// floats and `_` separators after a base prefix, which no browser sends; those are 0 here.
fn go_parse_float(s: &[u8]) -> f64 {
    std::str::from_utf8(s)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(0.0)
}

/// gzhttp's own test on the first `Accept-Encoding` line: the first `gzip` (any case) with a
/// weight above 0, `q=` read in any case and clamped to 0..1 (a bad number is 0).
fn gzhttp_accepts(fields: &HeaderMap) -> bool {
    let Some(line) = fields.get(header::ACCEPT_ENCODING) else {
        return false;
    };
    let line = line.as_bytes().trim_ascii();
    for item in line.split(|b| *b == b',') {
        let mut parts = item.split(|b| *b == b';');
        let coding = parts.next().unwrap_or_default().trim_ascii();
        if !coding.eq_ignore_ascii_case(b"gzip") {
            continue;
        }
        let mut q = 1.0_f64;
        for part in parts {
            let part = part.trim_ascii();
            if part.len() >= 2 && part[..2].eq_ignore_ascii_case(b"q=") {
                q = go_parse_float(&part[2..]).clamp(0.0, 1.0);
            }
        }
        return q > 0.0;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(encodings: &[ContentCoding], default: Option<ContentCoding>) -> bridge_plan::Compress {
        bridge_plan::Compress {
            encodings: encodings.to_vec(),
            wildcard: default.unwrap_or(encodings[0]),
            default_encoding: default,
            min_response_body_bytes: 1024,
            media_types: MediaTypeFilter::Exclude(vec!["application/grpc".into()]),
        }
    }

    use ContentCoding::{Br, Gzip, Zstd};

    fn choose(m: &Compress, method: Method, lines: &[&str], ct: Option<&str>) -> Choice {
        let mut f = HeaderMap::new();
        for l in lines {
            f.append(header::ACCEPT_ENCODING, l.parse().unwrap());
        }
        if let Some(ct) = ct {
            f.insert(header::CONTENT_TYPE, ct.parse().unwrap());
        }
        m.choose(&method, &f)
    }

    /// Every row observed on Traefik 3.7.15 with the default encodings (gzip, br, zstd); `None`
    /// is no header at all (docs/traefik-behaviour/compress.md §2).
    #[test]
    fn negotiates_as_traefik_with_the_defaults() {
        use Choice::{Encode, Pass, VaryOnly};
        let m = Compress::from_plan(&plan(&[Gzip, Br, Zstd], None));
        let rows: &[(&[&str], Choice)] = &[
            (&[], Pass),
            (&[""], Pass),
            (&["gzip"], Encode(Gzip)),
            (&["br"], Encode(Br)),
            (&["zstd"], Encode(Zstd)),
            (&["gzip, br"], Encode(Gzip)),
            (&["br, gzip"], Encode(Gzip)),
            (&["zstd, br, gzip"], Encode(Gzip)),
            (&["br;q=1.0, zstd;q=1.0"], Encode(Br)),
            (&["br;q=0.5, gzip"], Encode(Gzip)),
            (&["gzip;q=0.5, br"], Encode(Br)),
            (&["gzip;q=0"], Pass),
            (&["gzip;q=0, br"], Encode(Br)),
            (&["*"], VaryOnly),
            (&["*;q=0.5, br;q=0.4"], VaryOnly),
            (&["gzip, *"], Encode(Gzip)),
            (&["br, *"], VaryOnly),
            (&["zstd, *"], VaryOnly),
            (&["br;q=0.5, gzip;q=0.5, *"], Encode(Gzip)),
            (&["*;q=0"], Pass),
            (&["identity"], Pass),
            (&["identity, gzip"], Encode(Gzip)),
            (&["identity;q=0, gzip"], Encode(Gzip)),
            (&["identity;q=0"], Pass),
            (&["*, identity"], VaryOnly),
            (&["deflate"], Pass),
            (&["compress, deflate"], Pass),
            (&["x-gzip"], Pass),
            (&["GZIP"], Pass),
            (&["Gzip, BR"], Pass),
            (&["gzip;Q=0.5, br"], Encode(Gzip)),
            (&["gzip;q=0.5;foo=1, br;q=0.4"], Encode(Br)),
            (&["gzip;foo=1;q=0.1, br;q=0.5"], Encode(Gzip)),
            (&["gzip;q=abc, br;q=0.1"], Encode(Br)),
            (&["gzip;q=2, br"], Encode(Gzip)),
            (&["gzip;q=-1"], VaryOnly),
            (&["br;q=-1, deflate"], Encode(Br)),
            (&["gzip;q=0.001"], Encode(Gzip)),
            (&["gzip ; q=0.5 , br ; q=0.6"], Encode(Br)),
            (&["b r"], Encode(Br)),
            (&["br;q=0.5,\tgzip"], Encode(Br)),
            (&["gzip;q=0, gzip"], VaryOnly),
            (&["br;q=0.5, br"], Encode(Br)),
            (&["br", "gzip"], VaryOnly),
            (&["gzip", "br"], Encode(Gzip)),
            (&["deflate", "gzip"], VaryOnly),
        ];
        for (lines, want) in rows {
            assert_eq!(choose(&m, Method::GET, lines, None), *want, "{lines:?}");
        }
    }

    #[test]
    fn negotiates_as_traefik_with_other_encodings() {
        use Choice::{Encode, Pass, VaryOnly};
        let zbg = Compress::from_plan(&plan(&[Zstd, Br, Gzip], None));
        for ae in ["*", "gzip, br, zstd", "gzip, zstd", "br, *", "gzip, *"] {
            assert_eq!(choose(&zbg, Method::GET, &[ae], None), Encode(Zstd), "{ae}");
        }
        assert_eq!(
            choose(&zbg, Method::GET, &["identity;q=1, zstd;q=0.5"], None),
            Pass
        );
        let bg = Compress::from_plan(&plan(&[Br, Gzip], None));
        for ae in ["*", "gzip, br, zstd", "gzip, *"] {
            assert_eq!(choose(&bg, Method::GET, &[ae], None), Encode(Br), "{ae}");
        }
        for ae in ["zstd", "identity, zstd"] {
            assert_eq!(choose(&bg, Method::GET, &[ae], None), Pass, "{ae}");
        }
        assert_eq!(
            choose(&bg, Method::GET, &["gzip, zstd"], None),
            Encode(Gzip)
        );
        let default_br = Compress::from_plan(&plan(&[Gzip, Br, Zstd], Some(Br)));
        for ae in [&[][..], &["*"], &["gzip, *"]] {
            assert_eq!(
                choose(&default_br, Method::GET, ae, None),
                Encode(Br),
                "{ae:?}"
            );
        }
        assert_eq!(choose(&default_br, Method::GET, &[""], None), Pass);
        assert_eq!(choose(&default_br, Method::GET, &["deflate"], None), Pass);
        let default_gzip = Compress::from_plan(&plan(&[Gzip, Br, Zstd], Some(Gzip)));
        for ae in [&[][..], &["*"], &["br, *"]] {
            assert_eq!(
                choose(&default_gzip, Method::GET, ae, None),
                VaryOnly,
                "{ae:?}"
            );
        }
    }

    #[test]
    fn head_and_excluded_request_types_pass() {
        let mut p = plan(&[Gzip, Br, Zstd], None);
        let m = Compress::from_plan(&p);
        assert_eq!(choose(&m, Method::HEAD, &["gzip"], None), Choice::Pass);
        for ct in [
            "application/grpc",
            "Application/GRPC; x=y",
            "application/grpc; charset",
        ] {
            assert_eq!(
                choose(&m, Method::POST, &["gzip"], Some(ct)),
                Choice::Pass,
                "{ct}"
            );
        }
        for ct in ["application/grpc+proto", "text/html", "nonsense/"] {
            assert_eq!(
                choose(&m, Method::POST, &["gzip"], Some(ct)),
                Choice::Encode(Gzip),
                "{ct}"
            );
        }
        p.media_types =
            MediaTypeFilter::Exclude(vec!["application/grpc".into(), "text/html".into()]);
        let m = Compress::from_plan(&p);
        assert_eq!(
            choose(&m, Method::POST, &["gzip"], Some("text/html")),
            Choice::Pass
        );
        p.media_types = MediaTypeFilter::Include(vec!["text/html".into()]);
        let m = Compress::from_plan(&p);
        assert_eq!(
            choose(&m, Method::POST, &["gzip"], Some("text/html")),
            Choice::Encode(Gzip)
        );
        assert_eq!(
            choose(&m, Method::POST, &["gzip"], Some("application/grpc")),
            Choice::Pass
        );
    }

    #[test]
    fn a_coding_listed_twice_ranks_by_its_last_place() {
        // The compiler gives [gzip, br] for `[br, gzip, br]`; `*` stays the first as written.
        let mut p = plan(&[Gzip, Br], None);
        p.wildcard = Br;
        let m = Compress::from_plan(&p);
        assert_eq!(
            choose(&m, Method::GET, &["br, gzip"], None),
            Choice::Encode(Gzip)
        );
        assert_eq!(choose(&m, Method::GET, &["*"], None), Choice::Encode(Br));
    }
}

/// The fuzz entry (`bridge_runtime::fuzzing::compress`): `data` is the request's
/// `Accept-Encoding` lines, its `Content-Type`, the answer's `Content-Type` and the answer's
/// body, separated by NUL bytes; the first body byte (when there is one) also picks the
/// configuration. Negotiation, the handlers' decision and the encoder run over it, and an
/// encoded body must decode to the body.
pub(crate) fn fuzz(data: &[u8]) {
    use std::io::Read as _;

    use http_body_util::BodyExt as _;

    let mut parts = data.splitn(4, |b| *b == 0);
    let (ae, req_ct, resp_ct, body) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let control = body.first().copied().unwrap_or(0);
    let all = [ContentCoding::Gzip, ContentCoding::Br, ContentCoding::Zstd];
    let encodings: Vec<ContentCoding> = all
        .iter()
        .copied()
        .filter(|c| control & (1 << slot(*c)) != 0)
        .collect();
    let encodings = if encodings.is_empty() {
        all.to_vec()
    } else {
        encodings
    };
    let m = Compress::from_plan(&bridge_plan::Compress {
        wildcard: encodings[0],
        default_encoding: (control & 8 != 0).then_some(encodings[encodings.len() - 1]),
        encodings,
        min_response_body_bytes: u64::from(control >> 4) * 64 + 1,
        media_types: if control & 0x80 != 0 {
            MediaTypeFilter::Include(vec!["text/plain".into()])
        } else {
            MediaTypeFilter::Exclude(vec!["application/grpc".into(), "text/html".into()])
        },
    });
    let mut fields = HeaderMap::new();
    for line in ae.split(|b| *b == b'\n') {
        if let Ok(v) = http::HeaderValue::from_bytes(line) {
            fields.append(header::ACCEPT_ENCODING, v);
        }
    }
    if let Ok(v) = http::HeaderValue::from_bytes(req_ct) {
        fields.insert(header::CONTENT_TYPE, v);
    }
    let choice = m.choose(&Method::GET, &fields);
    let _ = sniff::detect(body);
    let mut resp = http::Response::new(crate::body::full(bytes::Bytes::copy_from_slice(body)));
    if let Ok(v) = http::HeaderValue::from_bytes(resp_ct) {
        let _ = bridge_plan::media_type::parse(&String::from_utf8_lossy(resp_ct));
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    if control & 0x40 != 0 {
        resp.headers_mut()
            .insert(header::CONTENT_LENGTH, http::HeaderValue::from(body.len()));
    }
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().build() else {
        return;
    };
    let (coding, sent) = rt.block_on(async {
        let resp = encode::respond(&m, choice, resp, control & 0x20 != 0).await;
        let coding = resp
            .headers()
            .get(header::CONTENT_ENCODING)
            .map(|v| v.as_bytes().to_vec());
        let sent = resp.into_body().collect().await.map(|c| c.to_bytes());
        (coding, sent)
    });
    let Ok(sent) = sent else {
        panic!("a complete body failed to encode");
    };
    let mut out = Vec::new();
    let decoded = match coding.as_deref() {
        None => Ok(sent.to_vec()),
        Some(b"gzip") => flate2::read::GzDecoder::new(&sent[..])
            .read_to_end(&mut out)
            .map(|_| out),
        Some(b"br") => brotli::Decompressor::new(&sent[..], 4096)
            .read_to_end(&mut out)
            .map(|_| out),
        Some(b"zstd") => zstd::decode_all(&sent[..]),
        Some(other) => panic!("unexpected coding {other:?}"),
    };
    assert!(
        decoded.is_ok_and(|d| d == body),
        "the encoded answer does not decode to its body"
    );
}

#[cfg(test)]
mod fuzz_seeds {
    /// The fuzz target's seeds pass on stable too (the smoke run needs nightly).
    #[test]
    fn every_seed_round_trips() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/compress");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            super::fuzz(&std::fs::read(entry.unwrap().path()).unwrap());
            n += 1;
        }
        assert!(n >= 4, "seeds in {}", dir.display());
    }
}
