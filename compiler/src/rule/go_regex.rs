//! Go (RE2) regexp syntax → the `regex` crate's, with the same meaning, and the `regex` crate's
//! error messages made short.

use std::fmt::Write as _;

/// Rewrites a Go (RE2) regex so that the `regex` crate reads it with the same meaning, or explains why Go
/// would reject it. The two syntaxes mostly agree. The differences handled here:
///
/// - A `{` that does not start a valid repetition (`{2}`, `{2,}`, `{2,5}`) is a literal in Go and an error in
///   Rust: it is escaped (`/{id}` becomes `/\{id}`).
/// - Inside a class, Go treats `[`, `&&`, `~~` and `--` as literals while Rust reads nested classes and set
///   operations: they are escaped.
/// - `\d`, `\w` and `\s` are ASCII-only in Go and Unicode-aware in Rust: they become explicit ASCII classes.
///   (`\b` stays Unicode-aware; Go's ASCII `\b` has no spelling that Go itself also accepts.)
/// - `\Q...\E` (Go only) becomes escaped text; octal escapes (`\101`) become `\x{41}`.
/// - Things Go rejects and Rust accepts are reported as errors: stacked repetitions (`a**`), repeat counts
///   over 1000, `\u`-style escapes, and the flags `x`, `R` and `u`.
///
/// The output is a fixed point: translating it again gives it back unchanged, and it reads the same in Go.
pub(super) fn go_regex_to_rust(src: &str) -> Result<String, String> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len() + 8);
    let mut i = 0;
    let mut in_class = false;
    // Inside a class: the previous item was an unescaped `-`.
    let mut class_dash = false;
    // Outside a class: the previous item was a repetition operator.
    let mut after_repeat = false;
    let at = |k: usize| chars.get(k).copied();

    while let Some(c) = at(i) {
        if in_class {
            let mut dash = false;
            match c {
                '\\' => {
                    i = escape(&chars, i + 1, true, &mut out)?;
                    class_dash = false;
                    continue;
                }
                ']' => {
                    in_class = false;
                    out.push(']');
                }
                '[' => match posix_class_len(&chars, i) {
                    Some(len) => {
                        out.extend(&chars[i..i + len]);
                        i += len;
                        class_dash = false;
                        continue;
                    }
                    None => out.push_str("\\["),
                },
                '&' | '~' => {
                    out.push('\\');
                    out.push(c);
                }
                '-' if class_dash => out.push_str("\\-"),
                '-' => {
                    out.push('-');
                    dash = true;
                }
                _ => out.push(c),
            }
            class_dash = dash;
            i += 1;
            continue;
        }

        let mut repeat = false;
        match c {
            '\\' => {
                i = escape(&chars, i + 1, false, &mut out)?;
                after_repeat = false;
                continue;
            }
            '[' => {
                in_class = true;
                class_dash = false;
                out.push('[');
                i += 1;
                if at(i) == Some('^') {
                    out.push('^');
                    i += 1;
                }
                // A `]` right after `[` or `[^` is a literal in both syntaxes; escaping it keeps that obvious.
                if at(i) == Some(']') {
                    out.push_str("\\]");
                    i += 1;
                }
                after_repeat = false;
                continue;
            }
            '{' => match repeat_len(&chars, i)? {
                Some(len) => {
                    if after_repeat {
                        return Err("invalid nested repetition operator".into());
                    }
                    out.extend(&chars[i..i + len]);
                    i += len;
                    if at(i) == Some('?') {
                        out.push('?');
                        i += 1;
                    }
                    after_repeat = true;
                    continue;
                }
                None => out.push_str("\\{"),
            },
            '*' | '+' | '?' => {
                if after_repeat {
                    return Err(format!("invalid nested repetition operator `{c}`"));
                }
                out.push(c);
                if at(i + 1) == Some('?') {
                    out.push('?');
                    i += 1;
                }
                repeat = true;
            }
            '(' if at(i + 1) == Some('?') => {
                if !matches!(at(i + 2), Some('P' | '<')) {
                    let mut j = i + 2;
                    let mut flags = String::new();
                    while let Some(f) = at(j) {
                        if f == ')' || f == ':' {
                            break;
                        }
                        flags.push(f);
                        j += 1;
                    }
                    if flags
                        .chars()
                        .any(|f| !matches!(f, 'i' | 'm' | 's' | 'U' | '-'))
                    {
                        return Err(format!("invalid or unsupported Perl syntax `(?{flags}`"));
                    }
                }
                out.push_str("(?");
                i += 2;
                after_repeat = false;
                continue;
            }
            _ => out.push(c),
        }
        after_repeat = repeat;
        i += 1;
    }
    Ok(out)
}

/// Handles the escape whose letter is at `chars[i]` (just after the backslash); returns the next index.
fn escape(chars: &[char], i: usize, in_class: bool, out: &mut String) -> Result<usize, String> {
    let Some(&c) = chars.get(i) else {
        return Err("trailing backslash at end of expression".into());
    };
    let mut next = i + 1;
    match c {
        'd' => out.push_str(if in_class { "0-9" } else { "[0-9]" }),
        'D' => out.push_str(if in_class { "[:^digit:]" } else { "[^0-9]" }),
        'w' => out.push_str(if in_class {
            "0-9A-Za-z_"
        } else {
            "[0-9A-Za-z_]"
        }),
        'W' => out.push_str(if in_class {
            "[:^word:]"
        } else {
            "[^0-9A-Za-z_]"
        }),
        's' => out.push_str(if in_class {
            "\\t\\n\\f\\r "
        } else {
            "[\\t\\n\\f\\r ]"
        }),
        // Everything but Go's five `\s` characters, spelled so that Go reads it the same way.
        'S' if in_class => out.push_str("\\x00-\\x08\\x0B\\x0E-\\x1F\\x21-\\x{10FFFF}"),
        'S' => out.push_str("[^\\t\\n\\f\\r ]"),
        'p' | 'P' | 'x' => {
            out.push('\\');
            out.push(c);
            if chars.get(next) == Some(&'{') {
                while let Some(&n) = chars.get(next) {
                    out.push(n);
                    next += 1;
                    if n == '}' {
                        break;
                    }
                }
            } else {
                let take = if c == 'x' { 2 } else { 1 };
                for _ in 0..take {
                    if let Some(&n) = chars.get(next) {
                        out.push(n);
                        next += 1;
                    }
                }
            }
        }
        'a' | 'f' | 't' | 'n' | 'r' | 'v' => {
            out.push('\\');
            out.push(c);
        }
        'A' | 'z' | 'b' | 'B' if !in_class => {
            out.push('\\');
            out.push(c);
        }
        'Q' if !in_class => {
            let mut lit = String::new();
            while let Some(&n) = chars.get(next) {
                if n == '\\' && chars.get(next + 1) == Some(&'E') {
                    next += 2;
                    break;
                }
                lit.push(n);
                next += 1;
            }
            out.push_str(&regex::escape(&lit));
        }
        '0'..='7' => {
            let is_octal = |k: usize| matches!(chars.get(k), Some('0'..='7'));
            if c != '0' && !is_octal(next) {
                return Err(format!("backreferences such as `\\{c}` are not supported"));
            }
            let mut value = c.to_digit(8).unwrap_or(0);
            for _ in 0..2 {
                match chars.get(next).and_then(|d| d.to_digit(8)) {
                    Some(d) => {
                        value = value * 8 + d;
                        next += 1;
                    }
                    None => break,
                }
            }
            let _ = write!(out, "\\x{{{value:X}}}");
        }
        c if c.is_ascii() && !c.is_ascii_alphanumeric() => {
            out.push_str(&regex::escape(&c.to_string()))
        }
        c => return Err(format!("invalid escape sequence `\\{c}`")),
    }
    Ok(next)
}

/// Length of a POSIX class such as `[:alpha:]` or `[:^digit:]` starting at `chars[i]`.
fn posix_class_len(chars: &[char], i: usize) -> Option<usize> {
    if chars.get(i + 1) != Some(&':') {
        return None;
    }
    let mut j = i + 2;
    if chars.get(j) == Some(&'^') {
        j += 1;
    }
    let name_start = j;
    while chars.get(j).is_some_and(|c| c.is_ascii_lowercase()) {
        j += 1;
    }
    (j > name_start && chars.get(j) == Some(&':') && chars.get(j + 1) == Some(&']'))
        .then_some(j + 2 - i)
}

/// Length of a Go repetition `{n}`, `{n,}` or `{n,m}` at `chars[i]`, or `None` when Go reads the `{` as a
/// literal. Counts above 1000, or a minimum above the maximum, are errors in Go.
fn repeat_len(chars: &[char], i: usize) -> Result<Option<usize>, String> {
    let int = |mut j: usize| -> Option<(u32, usize)> {
        let start = j;
        let mut v: u32 = 0;
        while let Some(d) = chars.get(j).and_then(|c| c.to_digit(10)) {
            v = v.saturating_mul(10).saturating_add(d);
            j += 1;
        }
        // Go does not accept leading zeros (`{01}` is literal text).
        let leading_zero = j - start >= 2 && chars.get(start) == Some(&'0');
        (j > start && !leading_zero).then_some((v, j))
    };
    let Some((min, mut j)) = int(i + 1) else {
        return Ok(None);
    };
    let mut max = Some(min);
    if chars.get(j) == Some(&',') {
        j += 1;
        if chars.get(j) == Some(&'}') {
            max = None;
        } else {
            let Some((m, k)) = int(j) else {
                return Ok(None);
            };
            max = Some(m);
            j = k;
        }
    }
    if chars.get(j) != Some(&'}') {
        return Ok(None);
    }
    if min > 1000 || max.is_some_and(|m| m > 1000 || m < min) {
        let text: String = chars[i..=j].iter().collect();
        return Err(format!("invalid repeat count `{text}`"));
    }
    Ok(Some(j + 1 - i))
}

pub(super) fn regex_error_message(e: &regex::Error) -> String {
    match e {
        regex::Error::Syntax(text) => text
            .lines()
            .rev()
            .find_map(|l| l.trim().strip_prefix("error: "))
            .map(str::to_owned)
            .unwrap_or_else(|| text.trim().to_owned()),
        regex::Error::CompiledTooBig(limit) => {
            format!("the compiled regex exceeds the size limit of {limit} bytes")
        }
        other => other.to_string(),
    }
}
