//! Traefik v2 (gorilla/mux) route templates: `{name}` and `{name:re}` placeholders → anchored regexes.

use super::go_regex::go_regex_to_rust;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Template {
    Host,
    Path,
    Prefix,
    Query,
}

/// Compiles a gorilla/mux route template. Text outside `{...}` is literal; `{name}` uses the default pattern
/// for the part (`[^.]+` in a host, `[^/]+` in a path, `.*` in a query value); `{name:re}` uses `re`.
/// Returns `None` when the template has no placeholder, so the caller can keep a plain matcher.
///
/// Each placeholder becomes `(?:re)` (gorilla uses a named group; the match is the same). The whole pattern is
/// anchored: `^...$`, or `^...` for a path prefix. Host templates match case-insensitively in Traefik v2. The
/// runtime lower-cases the host, so literal text is lower-cased, and `(?i)` is added only when a placeholder's
/// pattern contains an upper-case letter.
pub(super) fn v2_template(tpl: &str, kind: Template) -> Result<Option<String>, String> {
    let braces = brace_indices(tpl)?;
    if kind == Template::Host {
        // Strict on purpose: Traefik v2 accepts any literal text, but a host never contains, say, `(` or `*`,
        // so such a template can never match. That is almost always a v3-style regex in a v2 rule.
        let mut segments = Vec::with_capacity(braces.len() + 1);
        let mut end = 0;
        for &(s, e) in &braces {
            segments.push(tpl.get(end..s).unwrap_or(""));
            end = e;
        }
        segments.push(tpl.get(end..).unwrap_or(""));
        for seg in segments {
            if let Some(bad) = seg
                .chars()
                .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')))
            {
                return Err(format!(
                    "`{bad}` outside a `{{name:regex}}` placeholder is matched literally in ruleSyntax v2 and can \
                     never appear in a host, so Traefik accepts this rule but it never matches \
                     (bridgectl rejects it on purpose)"
                ));
            }
        }
    }
    if braces.is_empty() {
        return Ok(None);
    }
    let default = match kind {
        Template::Host => "[^.]+",
        Template::Path | Template::Prefix => "[^/]+",
        Template::Query => ".*",
    };
    let literal = |raw: &str| {
        if kind == Template::Host {
            regex::escape(&raw.to_ascii_lowercase())
        } else {
            regex::escape(raw)
        }
    };
    let mut re = String::from("^");
    let mut fold = false;
    let mut end = 0;
    for &(s, e) in &braces {
        re.push_str(&literal(tpl.get(end..s).unwrap_or("")));
        let whole = tpl.get(s..e).unwrap_or("");
        let inner = tpl.get(s + 1..e - 1).unwrap_or("");
        let (name, pattern) = inner.split_once(':').unwrap_or((inner, default));
        if name.is_empty() || pattern.is_empty() {
            return Err(format!("missing name or pattern in `{whole}`"));
        }
        let translated =
            go_regex_to_rust(pattern).map_err(|m| format!("invalid regex in `{whole}`: {m}"))?;
        fold |= pattern.chars().any(|c| c.is_ascii_uppercase());
        re.push_str("(?:");
        re.push_str(&translated);
        re.push(')');
        end = e;
    }
    re.push_str(&literal(tpl.get(end..).unwrap_or("")));
    if kind != Template::Prefix {
        re.push('$');
    }
    if kind == Template::Host && fold {
        re.insert_str(0, "(?i)");
    }
    Ok(Some(re))
}

/// Top-level `{...}` ranges (start, end exclusive), as gorilla/mux's `braceIndices`.
fn brace_indices(s: &str) -> Result<Vec<(usize, usize)>, String> {
    let mut level: usize = 0;
    let mut start = 0;
    let mut out = Vec::new();
    for (i, b) in s.bytes().enumerate() {
        match b {
            b'{' => {
                level += 1;
                if level == 1 {
                    start = i;
                }
            }
            b'}' => {
                if level == 0 {
                    return Err(format!("unbalanced braces in `{s}`"));
                }
                level -= 1;
                if level == 0 {
                    out.push((start, i + 1));
                }
            }
            _ => {}
        }
    }
    if level != 0 {
        return Err(format!("unbalanced braces in `{s}`"));
    }
    Ok(out)
}
