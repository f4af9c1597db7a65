//! `compress`: Traefik's constraints on its options, with Traefik's error texts (each stops the
//! router there, which then answers 404), and warnings where Traefik accepts a value it then
//! reads otherwise than it reads (a zero minimum, `defaultEncoding: gzip`, which its gzip
//! handler never honours).

use bridge_plan::media_type;

use crate::diag::{Code, did_you_mean};
use crate::model::dynamic::Compress;

use super::Ctx;

/// The codings Traefik's `compress` knows, in its default priority.
pub(crate) const ENCODINGS: [&str; 3] = ["gzip", "br", "zstd"];

impl Ctx<'_> {
    pub(super) fn check_compress(&mut self, name: &str, fi: usize, base: &str, c: &Compress) {
        let excluded = c.excluded_content_types.as_deref().unwrap_or_default();
        let included = c.included_content_types.as_deref().unwrap_or_default();
        if !excluded.is_empty() && !included.is_empty() {
            let span = self.key_span(fi, base);
            self.err(
                Code::InvalidValue,
                format!("middleware `{name}`: excludedContentTypes and includedContentTypes options are mutually exclusive"),
                span,
                base.to_owned(),
            );
        }
        for (key, word, list) in [
            ("excludedContentTypes", "excluded", excluded),
            ("includedContentTypes", "included", included),
        ] {
            for (i, t) in list.iter().enumerate() {
                if let Err(e) = media_type::parse(t) {
                    let p = format!("{base}/{key}/{i}");
                    let span = self.span(fi, &p);
                    self.err(
                        Code::InvalidValue,
                        format!("middleware `{name}`: parsing {word} media type: {e} (`{t}`)"),
                        span,
                        p,
                    );
                }
            }
        }
        if let Some(n) = c.min_response_body_bytes
            && n <= 0
        {
            let p = format!("{base}/minResponseBodyBytes");
            let span = self.span(fi, &p);
            self.warn(
                Code::InvalidValue,
                format!("middleware `{name}`: minResponseBodyBytes {n} is taken as the default 1024, as Traefik takes it"),
                span,
                p,
            );
        }
        let written = c.encodings.as_deref().unwrap_or_default();
        for (i, e) in written.iter().enumerate() {
            let p = format!("{base}/encodings/{i}");
            if !ENCODINGS.contains(&e.as_str()) {
                let span = self.span(fi, &p);
                let hint = did_you_mean(e, ENCODINGS.iter().copied())
                    .map(|s| format!("did you mean `{s}`? (Traefik's names are case-sensitive)"));
                self.err(
                    Code::InvalidValue,
                    format!("middleware `{name}`: unsupported encoding: {e}"),
                    span,
                    p,
                )
                .hint = hint;
            } else if written[..i].contains(e) {
                let span = self.span(fi, &p);
                self.warn(
                    Code::InvalidValue,
                    format!("middleware `{name}`: encoding `{e}` is listed twice; Traefik ranks it by its last place"),
                    span,
                    p,
                );
            }
        }
        let encodings: Vec<&str> = if written.is_empty() {
            ENCODINGS.to_vec()
        } else {
            written.iter().map(String::as_str).collect()
        };
        match c.default_encoding.as_deref() {
            None | Some("") => {}
            Some(d) if !encodings.contains(&d) => {
                let p = format!("{base}/defaultEncoding");
                let span = self.span(fi, &p);
                self.err(
                    Code::InvalidValue,
                    format!("middleware `{name}`: unsupported default encoding: {d}"),
                    span,
                    p,
                );
            }
            Some("gzip") => {
                let p = format!("{base}/defaultEncoding");
                let span = self.span(fi, &p);
                self.warn(
                    Code::InvalidValue,
                    format!("middleware `{name}`: defaultEncoding gzip never applies: Traefik's gzip handler compresses only for a request naming gzip, so requests without Accept-Encoding (or with `*`) are sent uncompressed"),
                    span,
                    p,
                );
            }
            Some(_) => {}
        }
    }
}
