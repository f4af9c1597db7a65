//! Media types read as Go's `mime.ParseMediaType` reads them.
//!
//! Traefik's `compress` decides by media type three times: on its configured lists (where a
//! parse error stops the router), on the request's `Content-Type` and on the answer's. The
//! compiler reports the same errors with Go's words, and the runtime must agree with Traefik on
//! which answers a malformed type keeps uncompressed, so both use this one reading. Only the
//! media type is returned: Traefik drops the parameters of its lists, so they never decide.

use std::fmt;

/// Why a value is not a media type, worded as Go's `mime` package words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MediaTypeError {
    /// Nothing (or no token) before the first `;`.
    NoMediaType,
    /// The first token is followed by something other than `/`.
    ExpectedSlash,
    /// `type/` with no subtype token.
    ExpectedSubtype,
    /// More after the subtype than spaces.
    ContentAfterSubtype,
    /// The media type is fine, a parameter is not; Go still returns the type with this error.
    InvalidParameter(String),
    /// One parameter name twice with different values.
    DuplicateParameter,
}

impl fmt::Display for MediaTypeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NoMediaType => "mime: no media type",
            Self::ExpectedSlash => "mime: expected slash after first token",
            Self::ExpectedSubtype => "mime: expected token after slash",
            Self::ContentAfterSubtype => "mime: unexpected content after media subtype",
            Self::InvalidParameter(_) => "mime: invalid media parameter",
            Self::DuplicateParameter => "mime: duplicate parameter name",
        })
    }
}

impl std::error::Error for MediaTypeError {}

/// The media type of `v` (`type/subtype` or a lone `type`), lower-cased, as Go finds it.
pub fn parse(v: &str) -> Result<String, MediaTypeError> {
    let base = v.split(';').next().unwrap_or_default();
    let media_type = base.to_lowercase().trim().to_owned();
    check_type(&media_type)?;
    let mut seen: Vec<(String, &str)> = Vec::new();
    let mut rest = &v[base.len()..];
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        let Some((name, value, after)) = parameter(rest) else {
            // A lone trailing `;` is tolerated, anything else is not a parameter.
            if rest.trim() == ";" {
                break;
            }
            return Err(MediaTypeError::InvalidParameter(media_type));
        };
        match seen.iter().find(|(n, _)| *n == name) {
            Some((_, earlier)) if *earlier != value => {
                return Err(MediaTypeError::DuplicateParameter);
            }
            Some(_) => {}
            None => seen.push((name, value)),
        }
        rest = after;
    }
    Ok(media_type)
}

/// `token` or `token/token`, nothing else.
fn check_type(t: &str) -> Result<(), MediaTypeError> {
    let (first, rest) = token(t);
    if first.is_empty() {
        return Err(MediaTypeError::NoMediaType);
    }
    if rest.is_empty() {
        return Ok(());
    }
    let Some(rest) = rest.strip_prefix('/') else {
        return Err(MediaTypeError::ExpectedSlash);
    };
    let (sub, rest) = token(rest);
    if sub.is_empty() {
        return Err(MediaTypeError::ExpectedSubtype);
    }
    if !rest.is_empty() {
        return Err(MediaTypeError::ContentAfterSubtype);
    }
    Ok(())
}

/// `; name = value` at the start of `v`: the lower-cased name, the raw value (a quoted string
/// keeps its quotes, which only matters for comparing duplicates) and what follows.
fn parameter(v: &str) -> Option<(String, &str, &str)> {
    let rest = v.trim_start().strip_prefix(';')?.trim_start();
    let (name, rest) = token(rest);
    if name.is_empty() {
        return None;
    }
    let rest = rest.trim_start().strip_prefix('=')?.trim_start();
    let (value, after) = value(rest)?;
    Some((name.to_lowercase(), value, after))
}

/// A token or a quoted string at the start of `v`.
fn value(v: &str) -> Option<(&str, &str)> {
    if !v.starts_with('"') {
        let (t, rest) = token(v);
        return (!t.is_empty()).then_some((t, rest));
    }
    let bytes = v.as_bytes();
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => return Some((&v[..=i], &v[i + 1..])),
            // Go unescapes only a backslash before a separator; either way the pair is skipped.
            b'\\' if bytes.get(i + 1).is_some_and(|b| is_separator(*b)) => i += 2,
            _ => i += 1,
        }
    }
    None
}

/// The longest run of token characters at the start of `v`, and the rest.
fn token(v: &str) -> (&str, &str) {
    let end = v.bytes().position(|b| !is_token_byte(b)).unwrap_or(v.len());
    v.split_at(end)
}

fn is_token_byte(b: u8) -> bool {
    b > b' ' && b < 0x7f && !is_separator(b)
}

/// RFC 2045's tspecials.
fn is_separator(b: u8) -> bool {
    b"()<>@,;:\\\"/[]?=".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_media_types_as_go_does() {
        use MediaTypeError as E;
        let cases: &[(&str, Result<&str, E>)] = &[
            ("text/html", Ok("text/html")),
            ("Text/HTML; Charset=UTF-8", Ok("text/html")),
            ("  application/json  ", Ok("application/json")),
            ("text", Ok("text")),
            ("text/html;", Ok("text/html")),
            ("text/html; ;", Err(E::InvalidParameter("text/html".into()))),
            ("text/html; a=1; a=1", Ok("text/html")),
            ("text/html; a=\"x;y\"", Ok("text/html")),
            ("text/html; a=\"x\\\"y\"", Ok("text/html")),
            (
                "text/html; a=\"unclosed",
                Err(E::InvalidParameter("text/html".into())),
            ),
            ("", Err(E::NoMediaType)),
            ("; charset=utf-8", Err(E::NoMediaType)),
            ("text/", Err(E::ExpectedSubtype)),
            ("text html", Err(E::ExpectedSlash)),
            ("text/html/x", Err(E::ContentAfterSubtype)),
            ("@", Err(E::NoMediaType)),
            (
                "text/plain; charset",
                Err(E::InvalidParameter("text/plain".into())),
            ),
            (
                "text/plain; =x",
                Err(E::InvalidParameter("text/plain".into())),
            ),
            ("text/html; a=1; a=2", Err(E::DuplicateParameter)),
            ("text/html; A=1; a=2", Err(E::DuplicateParameter)),
        ];
        for (input, want) in cases {
            let got = parse(input);
            assert_eq!(
                got.as_deref().map_err(Clone::clone),
                want.clone(),
                "{input:?}"
            );
        }
    }

    #[test]
    fn error_texts_are_go_s() {
        assert_eq!(
            MediaTypeError::ExpectedSubtype.to_string(),
            "mime: expected token after slash"
        );
        assert_eq!(
            MediaTypeError::DuplicateParameter.to_string(),
            "mime: duplicate parameter name"
        );
    }

    proptest::proptest! {
        #[test]
        fn never_panics(v in "\\PC{0,40}") {
            let _ = parse(&v);
        }
    }
}
