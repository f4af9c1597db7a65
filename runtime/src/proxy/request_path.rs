//! The request path as Traefik's entry point hands it to routing, middlewares and the server
//! (its `denyFragment`, `normalizePath` and `sanitizePath` handlers, which wrap the whole entry
//! point, with Go's `URL.EscapedPath` in between). Pure, table-tested; `proxy::handle` applies it
//! right after the strict checks, so every later phase sees the same path.
//!
//! In Traefik's order:
//! 1. a raw `#` in the path is refused with 400 and no body (the `http` crate cuts a target at
//!    `#`, so the own HTTP/1.1 loop looks for it in the raw target first; what hyper parses —
//!    requests with bodies, HTTP/2 — arrives here without it, see docs/compatibility.md);
//! 2. every escape gets upper-case hex digits, and escapes of unreserved characters (ALPHA,
//!    DIGIT, `-._~`) are decoded (`/%7e%41` is `/~A`);
//! 3. a path with a byte Go would not leave raw (`{`, `"`, `|`, a byte above 0x7f, …) is decoded
//!    and encoded again Go's way, so its encoded reserved characters come out decoded
//!    (`/a%2Fb{` is `/a/b%7B`), as Go's `EscapedPath` does;
//! 4. with `sanitizePath` (the default), dot segments and duplicate slashes are removed as Go's
//!    `path.Clean` does, keeping one trailing slash (`URL.JoinPath`). Encoded dots count once
//!    decoded by step 2 (`/a/%2e%2e/b` is `/b`); `%2F` is never a separator.
//!
//! Without this, ``PathPrefix(`/api`)`` would take `/api/../admin`, and a server that resolves
//! dot segments itself would serve `/admin` through the router meant for `/api`.

use std::borrow::Cow;

use crate::routing::escape_at;

/// Why a path was refused before routing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PathRefusal {
    /// A raw `#` in the path (Traefik's `denyFragment`): 400 with an empty body.
    Fragment,
    /// The treated path is not one a request can carry (cannot happen: the output is ASCII);
    /// refused rather than routed untreated.
    Unrepresentable,
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

const fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// Bytes Go's `validEncoded` accepts raw in a path (with `%`, which starts an escape).
const fn raw_ok(b: u8) -> bool {
    unreserved(b)
        || matches!(
            b,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
                | b'['
                | b']'
                | b'/'
                | b'%'
        )
}

/// Bytes Go's path escaping leaves raw (`shouldEscape` in path mode is false).
fn go_leaves_raw(b: u8) -> bool {
    unreserved(b)
        || matches!(
            b,
            b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'@'
        )
}

/// Per byte: 1 when the byte alone sends a path to the slow steps (`%`, or a byte Go would not
/// leave raw), 2 when it does after a `/` with `sanitizePath` (`/` and `.`). A table, so the
/// common path costs a load and a test per byte.
static CLASS: [u8; 256] = {
    let mut t = [1u8; 256];
    let mut b = 0;
    while b < 256 {
        // `b` < 256: the cast keeps it.
        #[allow(clippy::cast_possible_truncation, reason = "b < 256")]
        let c = b as u8;
        if c != b'%' && raw_ok(c) {
            t[b] = if c == b'/' || c == b'.' { 2 } else { 0 };
        }
        b += 1;
    }
    t
};

/// Whether the path needs none of the steps: the common path (`/`, `/api/items`) is one scan.
#[inline]
pub(crate) fn untouched(path: &[u8], sanitize: bool) -> bool {
    let mut prev = 0u8;
    for &b in path {
        match CLASS[usize::from(b)] {
            0 => {}
            2 if !(sanitize && prev == b'/') => {}
            _ => return false,
        }
        prev = b;
    }
    true
}

/// The path every later phase sees: borrowed when unchanged. `path` is the request's raw path
/// (without the query), already checked for well-formed escapes (`proxy::strict`).
#[inline]
pub(crate) fn entry_path(path: &str, sanitize: bool) -> Result<Cow<'_, str>, PathRefusal> {
    let bytes = path.as_bytes();
    if !bytes.starts_with(b"/") || untouched(bytes, sanitize) {
        return Ok(Cow::Borrowed(path));
    }
    treated(path, sanitize)
}

/// [`entry_path`] for a path that needs a step.
#[cold]
#[inline(never)]
fn treated(path: &str, sanitize: bool) -> Result<Cow<'_, str>, PathRefusal> {
    let bytes = path.as_bytes();
    if bytes.contains(&b'#') {
        return Err(PathRefusal::Fragment);
    }
    let normalized = normalize(bytes);
    let escaped = if normalized.iter().all(|&b| raw_ok(b)) {
        normalized
    } else {
        go_escape(&decode(&normalized))
    };
    let out = if sanitize { clean(&escaped) } else { escaped };
    // Every byte is ASCII: escapes and the raw bytes Go accepts.
    match String::from_utf8(out) {
        Ok(s) if s == path => Ok(Cow::Borrowed(path)),
        Ok(s) => Ok(Cow::Owned(s)),
        // Cannot happen (every byte is ASCII); refused rather than routed untreated.
        Err(_) => Err(PathRefusal::Unrepresentable),
    }
}

/// Step 2: upper-case hex, unreserved characters decoded.
fn normalize(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len());
    let mut i = 0;
    while i < path.len() {
        let b = path[i];
        if let Some(c) = escape_at(&path[i..]) {
            if unreserved(c) {
                out.push(c);
            } else {
                out.extend([b'%', HEX[usize::from(c >> 4)], HEX[usize::from(c & 0xf)]]);
            }
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    out
}

/// Every escape decoded (Go's `unescape` in path mode, which keeps no escape).
fn decode(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len());
    let mut i = 0;
    while i < path.len() {
        match escape_at(&path[i..]) {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(path[i]);
                i += 1;
            }
        }
    }
    out
}

/// Go's path escaping of a decoded path.
fn go_escape(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len() + 8);
    for &b in path {
        if go_leaves_raw(b) {
            out.push(b);
        } else {
            out.extend([b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]]);
        }
    }
    out
}

/// Step 4: Go's `path.Clean` of a rooted path, then one trailing slash kept (`URL.JoinPath`).
fn clean(path: &[u8]) -> Vec<u8> {
    let mut out: Vec<u8> = Vec::with_capacity(path.len());
    out.push(b'/');
    let n = path.len();
    let mut r = 1;
    while r < n {
        let at = |k: usize| path.get(k).copied();
        // An empty element, or `.`.
        if path[r] == b'/' || (path[r] == b'.' && matches!(at(r + 1), None | Some(b'/'))) {
            r += 1;
        } else if path[r] == b'.'
            && at(r + 1) == Some(b'.')
            && matches!(at(r + 2), None | Some(b'/'))
        {
            r += 2;
            // A rooted path cannot climb above the root.
            if out.len() > 1 {
                out.pop();
                while out.len() > 1 && out.last() != Some(&b'/') {
                    out.pop();
                }
                if out.len() > 1 {
                    out.pop();
                }
            }
        } else {
            if out.len() != 1 {
                out.push(b'/');
            }
            while r < n && path[r] != b'/' {
                out.push(path[r]);
                r += 1;
            }
        }
    }
    if path.ends_with(b"/") && !out.ends_with(b"/") {
        out.push(b'/');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(path: &str, sanitize: bool) -> Result<String, PathRefusal> {
        entry_path(path, sanitize).map(Cow::into_owned)
    }

    /// Rows measured against Traefik 3.7.15 (docs/traefik-behaviour/buffering-grpcweb-encoded.md
    /// §3, and tests/differential/paths.rs) or read from Go's `path.Clean` and `URL.JoinPath`.
    #[test]
    fn paths_as_traefik_hands_them_on() {
        let rows: &[(&str, &str)] = &[
            ("/", "/"),
            ("/api/items", "/api/items"),
            ("/a/../b", "/b"),
            ("/a/./b", "/a/b"),
            ("/a//b", "/a/b"),
            ("//a", "/a"),
            ("/a/b/", "/a/b/"),
            ("/a/./", "/a/"),
            ("/a/..", "/"),
            ("/a/../", "/"),
            ("/..", "/"),
            ("/../../x", "/x"),
            ("/a/b/../../..", "/"),
            ("/.a/..b/...", "/.a/..b/..."),
            ("/a/.", "/a"),
            ("/a/%2e%2e/b", "/b"),
            ("/a/%2E/b", "/a/b"),
            ("/a%2Fb/../c", "/c"),
            ("/x/..%2Fa", "/x/..%2Fa"),
            ("/a%2fb", "/a%2Fb"),
            ("/%7e%41", "/~A"),
            ("/a%c3%a9", "/a%C3%A9"),
            ("/a%20b", "/a%20b"),
            ("/a;b", "/a;b"),
            ("/a%2Fb{", "/a/b%7B"),
            ("/a%2Fb\"", "/a/b%22"),
            ("/a|b", "/a%7Cb"),
            ("/a%25b{", "/a%25b%7B"),
            ("/a%3Fb{", "/a%3Fb%7B"),
            ("/a%2Fb%2F..%2F{", "/a/%7B"),
        ];
        for (raw, want) in rows {
            assert_eq!(run(raw, true).as_deref(), Ok(*want), "{raw}");
        }
    }

    #[test]
    fn without_sanitize_path_only_escapes_change() {
        for (raw, want) in [
            ("/a/../b", "/a/../b"),
            ("/a//b", "/a//b"),
            ("/a%2fb/%7e", "/a%2Fb/~"),
            ("/a%2Fb{", "/a/b%7B"),
        ] {
            assert_eq!(run(raw, false).as_deref(), Ok(want), "{raw}");
        }
    }

    #[test]
    fn a_raw_hash_is_refused() {
        assert_eq!(run("/a#b", true), Err(PathRefusal::Fragment));
        assert_eq!(run("/a#b", false), Err(PathRefusal::Fragment));
        assert_eq!(run("/a%23b", true).as_deref(), Ok("/a%23b"));
    }

    #[test]
    fn unchanged_paths_are_borrowed() {
        for p in ["/", "/api/items", "/a.b/c", "*", "/a%2Fb"] {
            assert!(matches!(entry_path(p, true), Ok(Cow::Borrowed(_))), "{p}");
        }
    }

    proptest::proptest! {
        /// Whatever path the `http` crate accepted, the one handed on is one it accepts too
        /// (`proxy::with_entry_path` puts it back into the request), and handing it on again
        /// changes nothing.
        #[test]
        fn handed_on_paths_parse_and_are_stable(
            raw in "/[a-zA-Z0-9._~!$&'()*+,;=:@\\[\\]/{}|^`\"<>-]{0,24}",
            escapes in proptest::collection::vec((0usize..24, proptest::num::u8::ANY), 0..4),
            sanitize in proptest::bool::ANY,
        ) {
            let mut path = raw;
            for (at, b) in escapes {
                let at = at.min(path.len());
                path.insert_str(at, &format!("%{b:02x}"));
            }
            // What reaches the treatment: a path `http` took and `proxy::strict` let through.
            if path.parse::<http::uri::PathAndQuery>().is_err()
                || !crate::routing::valid_percent_encoding(&path)
            {
                return Ok(());
            }
            if let Ok(once) = entry_path(&path, sanitize) {
                proptest::prop_assert!(once.parse::<http::uri::PathAndQuery>().is_ok(), "{path} -> {once}");
                let twice = entry_path(&once, sanitize);
                proptest::prop_assert_eq!(twice.as_deref(), Ok(&*once), "{}", path);
            }
        }

        /// A sanitised path is rooted, has no dot segment and no empty segment, and is a fixed
        /// point: handing it on again changes nothing.
        #[test]
        fn sanitised_paths_are_clean_and_stable(
            segs in proptest::collection::vec("(\\.|\\.\\.|%2e|%2E%2e|[a-z]{1,3}|%2F|%41|)", 0..8),
            trailing in proptest::bool::ANY,
        ) {
            let mut raw = String::from("/");
            raw.push_str(&segs.join("/"));
            if trailing { raw.push('/'); }
            let once = run(&raw, true).unwrap();
            proptest::prop_assert!(once.starts_with('/'));
            let body = once.trim_end_matches('/');
            for seg in body.split('/').skip(1) {
                proptest::prop_assert!(seg != "." && seg != ".." && !seg.is_empty(), "{raw} -> {once}");
            }
            proptest::prop_assert_eq!(run(&once, true).unwrap(), once);
        }
    }
}
