//! YAML text → a tree of [`Node`]s that remember where they came from.
//!
//! serde-saphyr does the parsing (duplicate keys are errors, aliases and nesting are budgeted, merge
//! keys are expanded); this module turns its output into a small owned tree with byte spans, which the
//! canonicaliser walks alongside the JSON Schema. Scalars are typed like Go's yaml.v3 (YAML 1.2 core
//! schema: `yes` stays a string), because that is what Traefik sees.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::{Location, Spanned};

use crate::diag::{Code, Diagnostic};
use crate::source::{FileId, Span};

/// Largest file bridgectl reads. A generated configuration of 10,000 routers and services is about
/// 2 MB, so this leaves room while keeping a stray log file or disk image from being parsed.
pub const MAX_FILE_BYTES: usize = 16 * 1024 * 1024;
/// Deepest nesting accepted; Traefik's deepest real path is about 8 levels.
pub const MAX_DEPTH: usize = 48;
/// Stack for the parsing thread: serde's recursive descent needs tens of KiB per level in debug builds.
const PARSE_STACK_BYTES: usize = 256 * 1024 * 1024;

/// A YAML value with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The value.
    pub kind: NodeKind,
    /// Where the value starts (for collections, the first token of it).
    pub span: Span,
}

/// A mapping key with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    /// The key as text (numbers and booleans used as keys are turned into their text).
    pub text: String,
    /// Where the key is written.
    pub span: Span,
}

/// The shapes a YAML value can take.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    /// `~`, `null` or nothing.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// An integer too large for i64.
    UInt(u64),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping, in source order.
    Map(Vec<(Key, Node)>),
}

impl NodeKind {
    /// A word for the type, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            NodeKind::Null => "null",
            NodeKind::Bool(_) => "a boolean",
            NodeKind::Int(_) | NodeKind::UInt(_) => "an integer",
            NodeKind::Float(_) => "a number",
            NodeKind::Str(_) => "a string",
            NodeKind::Seq(_) => "a list",
            NodeKind::Map(_) => "a mapping",
        }
    }
}

// ---- raw deserialization target ------------------------------------------------------------------

enum Raw {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    Seq(Vec<Spanned<Raw>>),
    Map(Vec<(Spanned<RawKey>, Spanned<Raw>)>),
}

struct RawKey(String);

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RawVisitor)
    }
}

struct RawVisitor;

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Raw;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Raw, E> {
        Ok(Raw::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Raw, E> {
        Ok(Raw::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Raw, D::Error> {
        Raw::deserialize(d)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Raw, E> {
        Ok(Raw::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Raw, E> {
        Ok(Raw::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Raw, E> {
        Ok(i64::try_from(v).map_or(Raw::UInt(v), Raw::Int))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Raw, E> {
        Ok(Raw::Str(v.to_string()))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Raw, E> {
        Ok(Raw::Str(v.to_string()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Raw, E> {
        Ok(Raw::Float(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Raw, E> {
        Ok(Raw::Str(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Raw, E> {
        Ok(Raw::Str(v))
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Raw, E> {
        Ok(Raw::Str(String::from_utf8_lossy(v).into_owned()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Raw>>()? {
            items.push(item);
        }
        Ok(Raw::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<RawKey>>()? {
            let value = map.next_value::<Spanned<Raw>>()?;
            entries.push((key, value));
        }
        Ok(Raw::Map(entries))
    }
}

impl<'de> Deserialize<'de> for RawKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a scalar mapping key")
            }
            fn visit_unit<E: de::Error>(self) -> Result<RawKey, E> {
                Ok(RawKey("null".into()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<RawKey, E> {
                Ok(RawKey(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawKey, E> {
                Ok(RawKey(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawKey, E> {
                Ok(RawKey(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<RawKey, E> {
                Ok(RawKey(v.to_string()))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawKey, E> {
                Ok(RawKey(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<RawKey, E> {
                Ok(RawKey(v))
            }
        }
        d.deserialize_any(V)
    }
}

// ---- public API ----------------------------------------------------------------------------------

/// Parses one YAML document. An empty document gives `Ok(None)`.
pub fn parse(file: FileId, text: &str) -> Result<Option<Node>, Diagnostic> {
    if text.len() > MAX_FILE_BYTES {
        return Err(Diagnostic::error(
            Code::FileTooLarge,
            format!(
                "file is {} bytes; bridgectl reads at most {MAX_FILE_BYTES} bytes",
                text.len()
            ),
        ));
    }
    if let Some(pos) = text.find('\0') {
        return Err(Diagnostic::error(
            Code::YamlSyntax,
            "file contains a NUL byte; it is binary, not YAML",
        )
        .at(Some(Span::new(file, pos, pos + 1))));
    }
    if let Some(d) = depth_guard(file, text) {
        return Err(d);
    }
    let owned = text.to_owned();
    let worker = std::thread::Builder::new()
        .name("yaml-parse".into())
        .stack_size(PARSE_STACK_BYTES)
        .spawn(move || parse_on_big_stack(file, &owned));
    match worker.map(|h| h.join()) {
        Ok(Ok(result)) => result,
        _ => Err(Diagnostic::error(
            Code::Internal,
            "the YAML parser thread failed",
        )),
    }
}

/// Rejects documents nested deeper than [`MAX_DEPTH`] with a cheap event scan, before the recursive
/// deserializer could exhaust the stack. Syntax errors are left to the real parse, which words them better.
fn depth_guard(file: FileId, text: &str) -> Option<Diagnostic> {
    use serde_saphyr::granit_parser::{Event, Parser};
    let mut depth = 0usize;
    for item in Parser::new_from_str(text) {
        let Ok((event, span)) = item else { return None };
        match event {
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                depth += 1;
                if depth > MAX_DEPTH {
                    let off = span.start.byte_offset().unwrap_or(0).min(text.len());
                    return Some(
                        Diagnostic::error(
                            Code::YamlLimit,
                            format!("nesting deeper than {MAX_DEPTH} levels"),
                        )
                        .at(Some(Span::new(file, off, off)))
                        .hint("Traefik configuration is never nested this deep; the file is probably generated wrongly"),
                    );
                }
            }
            Event::SequenceEnd | Event::MappingEnd => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

fn parse_on_big_stack(file: FileId, text: &str) -> Result<Option<Node>, Diagnostic> {
    let options = serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_depth: MAX_DEPTH + 16,
            max_nodes: 5_000_000,
            max_events: 20_000_000,
            max_documents: 1,
        },
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
        strict_booleans: true,
        leading_zero_numbers_as_strings: true,
        underscored_numbers_as_strings: true,
        with_snippet: false,
    };
    let raw: Option<Spanned<Raw>> = match serde_saphyr::from_str_with_options(text, options) {
        Ok(v) => v,
        Err(e) => return Err(convert_error(file, text, &e)),
    };
    Ok(raw.map(|r| to_node(file, text, r)))
}

fn location_span(file: FileId, text: &str, loc: &Location) -> Span {
    let sp = loc.span();
    match (sp.byte_offset(), sp.byte_len()) {
        (Some(off), Some(len)) => {
            let start = usize::try_from(off).unwrap_or(usize::MAX).min(text.len());
            let end = start.saturating_add(usize::try_from(len).unwrap_or(0));
            Span::new(file, start, end.min(text.len()))
        }
        _ => {
            let sf = crate::source::SourceFile::new("", "", text.to_owned());
            let line = usize::try_from(loc.line()).unwrap_or(1).max(1);
            let col = usize::try_from(loc.column()).unwrap_or(1).max(1);
            let off = sf.offset_of(line, col);
            Span::new(file, off, off)
        }
    }
}

fn to_node(file: FileId, text: &str, raw: Spanned<Raw>) -> Node {
    let span = location_span(file, text, &raw.referenced);
    let kind = match raw.value {
        Raw::Null => NodeKind::Null,
        Raw::Bool(b) => NodeKind::Bool(b),
        Raw::Int(i) => NodeKind::Int(i),
        Raw::UInt(u) => NodeKind::UInt(u),
        Raw::Float(f) => NodeKind::Float(f),
        Raw::Str(s) => NodeKind::Str(s),
        Raw::Seq(items) => {
            NodeKind::Seq(items.into_iter().map(|i| to_node(file, text, i)).collect())
        }
        Raw::Map(entries) => NodeKind::Map(
            entries
                .into_iter()
                .map(|(k, v)| {
                    let key = Key {
                        span: location_span(file, text, &k.referenced),
                        text: k.value.0,
                    };
                    (key, to_node(file, text, v))
                })
                .collect(),
        ),
    };
    Node { kind, span }
}

fn convert_error(file: FileId, text: &str, err: &serde_saphyr::Error) -> Diagnostic {
    use serde_saphyr::Error as E;
    let mut inner = err;
    while let E::AliasError { error, .. } | E::WithSnippet { error, .. } = inner {
        inner = error;
    }
    let code = match inner {
        E::DuplicateMappingKey { .. } => Code::YamlDuplicateKey,
        E::Budget { .. }
        | E::AliasReplayLimitExceeded { .. }
        | E::AliasExpansionLimitExceeded { .. }
        | E::AliasReplayStackDepthExceeded { .. }
        | E::AliasReplayCounterOverflow { .. } => Code::YamlLimit,
        _ => Code::YamlSyntax,
    };
    let mut message = match inner {
        E::DuplicateMappingKey { key: Some(k), .. } => format!("duplicate key `{k}`"),
        E::DuplicateMappingKey { key: None, .. } => "duplicate key".to_owned(),
        E::Budget { breach, .. } => {
            let name = format!("{breach:?}");
            if name.starts_with("Documents") {
                "the file holds more than one YAML document (`---`); Traefik reads only the first and silently ignores the rest".to_owned()
            } else if name.starts_with("Depth") {
                format!("nesting deeper than {MAX_DEPTH} levels")
            } else if name.contains("Anchor") || name.contains("Alias") {
                "aliases expand beyond the safety budget (an alias bomb?)".to_owned()
            } else {
                format!(
                    "the YAML exceeds a safety budget ({})",
                    name.split([' ', '{']).next().unwrap_or("size")
                )
            }
        }
        _ => inner.to_string(),
    };
    // The library appends its own position; ours is rendered separately.
    if let Some(idx) = message.find(" at line ") {
        message.truncate(idx);
    }
    let hint = match code {
        Code::YamlDuplicateKey => Some(
            "Traefik (yaml.v3) rejects the whole file when a mapping repeats a key; keep one"
                .into(),
        ),
        Code::YamlLimit => Some(format!(
            "bridgectl limits nesting to {MAX_DEPTH} levels and alias expansion to protect CI; real Traefik configurations are far below these"
        )),
        _ if message.contains("tab") => Some("YAML indentation must use spaces, not tabs".into()),
        _ => None,
    };
    let span = err.location().map(|loc| location_span(file, text, &loc));
    Diagnostic::error(code, message).at(span).maybe_hint(hint)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<Option<Node>, Diagnostic> {
        parse(FileId(0), text)
    }

    #[test]
    fn keeps_key_and_value_positions() {
        let text = "http:\n  routers:\n    api:\n      rule: x\n";
        let node = p(text).unwrap().unwrap();
        let NodeKind::Map(top) = &node.kind else {
            panic!()
        };
        let NodeKind::Map(routers) = &top[0].1.kind else {
            panic!()
        };
        let NodeKind::Map(api) = &routers[0].1.kind else {
            panic!()
        };
        let NodeKind::Map(rule) = &api[0].1.kind else {
            panic!()
        };
        assert_eq!(rule[0].0.text, "rule");
        assert_eq!(
            &text[rule[0].0.span.start..rule[0].0.span.start + 4],
            "rule"
        );
        assert_eq!(&text[rule[0].1.span.start..rule[0].1.span.start + 1], "x");
    }

    #[test]
    fn scalars_are_typed_like_yaml_1_2() {
        let node = p("a: yes\nb: on\nc: 017\nd: 1_000\ne: true\nf: 15\ng: 1.5\nh: ~\n")
            .unwrap()
            .unwrap();
        let NodeKind::Map(m) = node.kind else {
            panic!()
        };
        let kinds: Vec<_> = m.into_iter().map(|(_, v)| v.kind).collect();
        assert_eq!(
            kinds,
            vec![
                NodeKind::Str("yes".into()),
                NodeKind::Str("on".into()),
                NodeKind::Str("017".into()),
                NodeKind::Str("1_000".into()),
                NodeKind::Bool(true),
                NodeKind::Int(15),
                NodeKind::Float(1.5),
                NodeKind::Null,
            ]
        );
    }

    #[test]
    fn duplicate_keys_are_located_errors() {
        let err = p("a: 1\nb: 2\na: 3\n").unwrap_err();
        assert_eq!(err.code, Code::YamlDuplicateKey);
        assert!(err.span.is_some());
    }

    #[test]
    fn alias_bombs_and_deep_nesting_are_refused_quickly() {
        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 0..12 {
            let prev = if i == 0 {
                "a".to_string()
            } else {
                format!("l{}", i - 1)
            };
            bomb.push_str(&format!(
                "l{i}: &l{i} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
            ));
        }
        let started = std::time::Instant::now();
        let err = p(&bomb).unwrap_err();
        assert_eq!(err.code, Code::YamlLimit, "{err:?}");
        let deep = "- ".repeat(100_000) + "x\n";
        let err = p(&deep).unwrap_err();
        assert_eq!(err.code, Code::YamlLimit, "{err:?}");
        let deep_flow = "[".repeat(100_000);
        assert!(p(&deep_flow).is_err());
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }

    #[test]
    fn empty_documents_are_none() {
        assert_eq!(p("").unwrap(), None);
        assert_eq!(p("# only a comment\n").unwrap(), None);
    }
}
