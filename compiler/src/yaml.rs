//! YAML text → a tree of [`Node`]s that remember where they came from.
//!
//! granit-parser (the maintained YAML 1.2 event parser behind serde-saphyr) produces events with byte
//! positions; this module folds them into a small owned tree iteratively — no recursion, so no input
//! can exhaust the stack — while enforcing what Traefik's yaml.v3 enforces (duplicate keys are errors,
//! `<<` merge keys expand) plus budgets against hostile input: nesting depth, node count, alias
//! expansion, file size, one document per file. Scalars are typed like yaml.v3 (YAML 1.2 core
//! schema: `yes` stays a string), because that is what Traefik sees.

use crate::diag::{Code, Diagnostic};
use crate::source::{FileId, Span};

/// Largest file bridgectl reads. A generated configuration of 10,000 routers and services is about
/// 4 MB, so this leaves room while keeping a stray log file or disk image from being parsed.
pub const MAX_FILE_BYTES: usize = 16 * 1024 * 1024;
/// Deepest nesting accepted; Traefik's deepest real path is about 8 levels.
pub const MAX_DEPTH: usize = 48;

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

// ---- event-driven tree builder --------------------------------------------------------------------

/// Most nodes a document may produce, aliases included (a 10,000-router configuration has ~300,000).
pub const MAX_NODES: usize = 3_000_000;
/// Most nodes that alias expansion may copy (guards against "billion laughs").
pub const MAX_ALIAS_NODES: usize = 200_000;

enum Frame {
    Seq {
        span: Span,
        anchor: usize,
        items: Vec<Node>,
    },
    Map {
        span: Span,
        anchor: usize,
        entries: Vec<(Key, Node)>,
        pending: Option<Key>,
    },
}

struct Builder<'t> {
    file: FileId,
    text: &'t str,
    stack: Vec<Frame>,
    anchors: std::collections::HashMap<usize, Node>,
    root: Option<Node>,
    documents: usize,
    nodes: usize,
    alias_nodes: usize,
}

fn count(node: &Node) -> usize {
    match &node.kind {
        NodeKind::Seq(items) => 1 + items.iter().map(count).sum::<usize>(),
        NodeKind::Map(entries) => 1 + entries.iter().map(|(_, v)| 1 + count(v)).sum::<usize>(),
        _ => 1,
    }
}

impl Builder<'_> {
    fn span_of(&self, marker: &granit_parser::Marker) -> Span {
        let off = marker.byte_offset().unwrap_or(0).min(self.text.len());
        Span::new(self.file, off, off)
    }

    fn limit(&self, span: Span, message: String, hint: &str) -> Diagnostic {
        Diagnostic::error(Code::YamlLimit, message)
            .at(Some(span))
            .hint(hint)
    }

    /// Adds a finished node to its parent (or makes it the document root).
    fn push(&mut self, node: Node) -> Result<(), Diagnostic> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(self.limit(
                node.span,
                format!("the document has more than {MAX_NODES} nodes"),
                "split the configuration into several files of a providers.file directory",
            ));
        }
        match self.stack.last_mut() {
            None => {
                self.root = Some(node);
                Ok(())
            }
            Some(Frame::Seq { items, .. }) => {
                items.push(node);
                Ok(())
            }
            Some(Frame::Map {
                entries, pending, ..
            }) => match pending.take() {
                Some(key) => {
                    entries.push((key, node));
                    Ok(())
                }
                None => {
                    let text = match node.kind {
                        NodeKind::Null => "null".to_owned(),
                        NodeKind::Bool(b) => b.to_string(),
                        NodeKind::Int(i) => i.to_string(),
                        NodeKind::UInt(u) => u.to_string(),
                        NodeKind::Float(f) => f.to_string(),
                        NodeKind::Str(s) => s,
                        NodeKind::Seq(_) | NodeKind::Map(_) => {
                            return Err(Diagnostic::error(
                                Code::YamlSyntax,
                                "a mapping key must be a plain value, not a list or a mapping",
                            )
                            .at(Some(node.span)));
                        }
                    };
                    *pending = Some(Key {
                        text,
                        span: node.span,
                    });
                    Ok(())
                }
            },
        }
    }

    fn finish(&mut self, node: Node, anchor: usize) -> Result<(), Diagnostic> {
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
        self.push(node)
    }
}

/// Builds a mapping: `<<` merge keys are expanded (explicit keys win, as in yaml.v3) and duplicate
/// keys are errors.
fn close_map(span: Span, entries: Vec<(Key, Node)>) -> Result<Node, Diagnostic> {
    let mut own: Vec<(Key, Node)> = Vec::with_capacity(entries.len());
    let mut seen: std::collections::HashSet<String> =
        std::collections::HashSet::with_capacity(entries.len());
    let mut merged: Vec<(Key, Node)> = Vec::new();
    for (key, value) in entries {
        if key.text == "<<" {
            let sources = match value.kind {
                NodeKind::Map(m) => vec![m],
                NodeKind::Seq(items) => items
                    .into_iter()
                    .map(|i| match i.kind {
                        NodeKind::Map(m) => Ok(m),
                        _ => Err(Diagnostic::error(
                            Code::YamlSyntax,
                            "a `<<` merge list may only hold mappings",
                        )
                        .at(Some(i.span))),
                    })
                    .collect::<Result<Vec<_>, _>>()?,
                _ => {
                    return Err(Diagnostic::error(
                        Code::YamlSyntax,
                        "a `<<` merge value must be a mapping or a list of mappings",
                    )
                    .at(Some(value.span)));
                }
            };
            let mut merged_keys: std::collections::HashSet<String> =
                merged.iter().map(|(k, _)| k.text.clone()).collect();
            for m in sources {
                for (k, v) in m {
                    if merged_keys.insert(k.text.clone()) {
                        merged.push((k, v));
                    }
                }
            }
            continue;
        }
        if !seen.insert(key.text.clone()) {
            return Err(Diagnostic::error(
                Code::YamlDuplicateKey,
                format!("duplicate key `{}`", key.text),
            )
            .at(Some(key.span))
            .hint(
                "Traefik (yaml.v3) rejects the whole file when a mapping repeats a key; keep one",
            ));
        }
        own.push((key, value));
    }
    for (k, v) in merged {
        if seen.insert(k.text.clone()) {
            own.push((k, v));
        }
    }
    Ok(Node {
        kind: NodeKind::Map(own),
        span,
    })
}

/// Resolves a scalar like Go's yaml.v3 (YAML 1.2 core schema): only plain scalars are typed.
fn resolve_scalar(value: &str, plain: bool, tag: Option<&str>) -> NodeKind {
    match tag {
        Some("str") => return NodeKind::Str(value.to_owned()),
        Some("null") => return NodeKind::Null,
        Some("bool" | "int" | "float") => {}
        _ if !plain => return NodeKind::Str(value.to_owned()),
        _ => {}
    }
    match value {
        "" | "~" | "null" | "Null" | "NULL" => return NodeKind::Null,
        "true" | "True" | "TRUE" => return NodeKind::Bool(true),
        "false" | "False" | "FALSE" => return NodeKind::Bool(false),
        _ => {}
    }
    let bytes = value.as_bytes();
    let unsigned = value.strip_prefix(['+', '-']).unwrap_or(value);
    let negative = value.starts_with('-');
    if !unsigned.is_empty() && unsigned.bytes().all(|b| b.is_ascii_digit()) {
        // A leading zero makes it a string (as bridgectl's Traefik check did before: "017" is not 15).
        if unsigned.len() > 1 && unsigned.starts_with('0') {
            return NodeKind::Str(value.to_owned());
        }
        if let Ok(i) = value.parse::<i64>() {
            return NodeKind::Int(i);
        }
        if let Ok(u) = value.parse::<u64>() {
            return NodeKind::UInt(u);
        }
        return NodeKind::Str(value.to_owned());
    }
    for (prefix, radix) in [("0x", 16), ("0o", 8)] {
        if let Some(digits) = unsigned.strip_prefix(prefix)
            && !digits.is_empty()
            && let Ok(i) = i64::from_str_radix(digits, radix)
        {
            return NodeKind::Int(if negative { -i } else { i });
        }
    }
    let is_float = !bytes.is_empty()
        && unsigned.bytes().any(|b| b.is_ascii_digit())
        && unsigned
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
        && unsigned
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_digit() || b == b'.');
    if is_float && let Ok(f) = value.parse::<f64>() {
        return NodeKind::Float(f);
    }
    NodeKind::Str(value.to_owned())
}

/// The size budget every configuration file is parsed under ([`MAX_FILE_BYTES`]), YAML or TOML.
pub fn within_size(text: &str) -> Result<(), Diagnostic> {
    if text.len() > MAX_FILE_BYTES {
        return Err(Diagnostic::error(
            Code::FileTooLarge,
            format!(
                "file is {} bytes; bridgectl reads at most {MAX_FILE_BYTES} bytes",
                text.len()
            ),
        ));
    }
    Ok(())
}

/// Parses one YAML document. An empty document gives `Ok(None)`.
pub fn parse(file: FileId, text: &str) -> Result<Option<Node>, Diagnostic> {
    use granit_parser::{Event, Parser, ScalarStyle};
    within_size(text)?;
    if let Some(pos) = text.find('\0') {
        return Err(Diagnostic::error(
            Code::YamlSyntax,
            "file contains a NUL byte; it is binary, not YAML",
        )
        .at(Some(Span::new(file, pos, pos + 1))));
    }
    let mut b = Builder {
        file,
        text,
        stack: Vec::new(),
        anchors: std::collections::HashMap::new(),
        root: None,
        documents: 0,
        nodes: 0,
        alias_nodes: 0,
    };
    for item in Parser::new_from_str(text) {
        let (event, span) = match item {
            Ok(ev) => ev,
            Err(e) => {
                let at = b.span_of(e.marker());
                let info = e.info();
                let hint = info
                    .contains("tab")
                    .then(|| "YAML indentation must use spaces, not tabs".to_owned());
                return Err(Diagnostic::error(Code::YamlSyntax, info)
                    .at(Some(at))
                    .maybe_hint(hint));
            }
        };
        let here = b.span_of(&span.start);
        match event {
            Event::DocumentStart(..) => {
                b.documents += 1;
                if b.documents > 1 {
                    return Err(Diagnostic::error(
                        Code::YamlLimit,
                        "the file holds more than one YAML document (`---`); Traefik reads only the first and silently ignores the rest",
                    )
                    .at(Some(here))
                    .hint("split the documents into separate files of a providers.file directory"));
                }
            }
            Event::Scalar(value, style, anchor, tag) => {
                let tag = tag
                    .as_ref()
                    .filter(|t| t.handle() == "tag:yaml.org,2002:")
                    .map(|t| t.suffix().to_owned());
                let kind = resolve_scalar(&value, style == ScalarStyle::Plain, tag.as_deref());
                let end = span.end.byte_offset().unwrap_or(here.start).min(text.len());
                b.finish(
                    Node {
                        kind,
                        span: Span::new(file, here.start, end),
                    },
                    anchor,
                )?;
            }
            Event::SequenceStart(_, anchor, _) | Event::MappingStart(_, anchor, _) => {
                if b.stack.len() >= MAX_DEPTH {
                    return Err(b.limit(
                        here,
                        format!("nesting deeper than {MAX_DEPTH} levels"),
                        "Traefik configuration is never nested this deep; the file is probably generated wrongly",
                    ));
                }
                let frame = if matches!(event, Event::SequenceStart(..)) {
                    Frame::Seq {
                        span: here,
                        anchor,
                        items: Vec::new(),
                    }
                } else {
                    Frame::Map {
                        span: here,
                        anchor,
                        entries: Vec::new(),
                        pending: None,
                    }
                };
                b.stack.push(frame);
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (node, anchor) = match b.stack.pop() {
                    Some(Frame::Seq {
                        span,
                        anchor,
                        items,
                    }) => (
                        Node {
                            kind: NodeKind::Seq(items),
                            span,
                        },
                        anchor,
                    ),
                    Some(Frame::Map {
                        span,
                        anchor,
                        entries,
                        ..
                    }) => (close_map(span, entries)?, anchor),
                    None => {
                        return Err(Diagnostic::error(Code::Internal, "unbalanced YAML events")
                            .at(Some(here)));
                    }
                };
                b.finish(node, anchor)?;
            }
            Event::Alias(id) => {
                let Some(node) = b.anchors.get(&id).cloned() else {
                    return Err(
                        Diagnostic::error(Code::YamlSyntax, "alias to an unknown anchor")
                            .at(Some(here)),
                    );
                };
                b.alias_nodes += count(&node);
                if b.alias_nodes > MAX_ALIAS_NODES {
                    return Err(b.limit(
                        here,
                        "aliases expand beyond the safety budget (an alias bomb?)".into(),
                        "bridgectl limits alias expansion to protect CI; real Traefik configurations are far below it",
                    ));
                }
                let node = Node { span: here, ..node };
                b.push(node)?;
            }
            _ => {}
        }
    }
    Ok(b.root)
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

#[cfg(test)]
mod more_tests {
    use super::*;

    fn p(text: &str) -> Result<Option<Node>, Diagnostic> {
        parse(FileId(0), text)
    }

    fn keys(node: &Node) -> Vec<(String, NodeKind)> {
        let NodeKind::Map(m) = &node.kind else {
            panic!("not a map")
        };
        m.iter()
            .map(|(k, v)| (k.text.clone(), v.kind.clone()))
            .collect()
    }

    #[test]
    fn merge_keys_expand_and_explicit_keys_win() {
        let node = p("base: &b {a: 1, c: 2}\nx:\n  <<: *b\n  c: 3\n")
            .unwrap()
            .unwrap();
        let NodeKind::Map(top) = &node.kind else {
            panic!()
        };
        assert_eq!(
            keys(&top[1].1),
            vec![
                ("c".into(), NodeKind::Int(3)),
                ("a".into(), NodeKind::Int(1))
            ]
        );
    }

    #[test]
    fn aliases_copy_the_anchored_value() {
        let node = p("a: &x [1, 2]\nb: *x\n").unwrap().unwrap();
        let k = keys(&node);
        assert_eq!(k[0].1, k[1].1);
    }

    #[test]
    fn scalars_with_tags_and_styles() {
        let node = p("a: !!str 10\nb: '10'\nc: 0x1F\nd: -3\ne: 1e3\nf: .5\ng: 12abc\nh: NULL\n")
            .unwrap()
            .unwrap();
        let k: Vec<NodeKind> = keys(&node).into_iter().map(|(_, v)| v).collect();
        assert_eq!(
            k,
            vec![
                NodeKind::Str("10".into()),
                NodeKind::Str("10".into()),
                NodeKind::Int(31),
                NodeKind::Int(-3),
                NodeKind::Float(1000.0),
                NodeKind::Float(0.5),
                NodeKind::Str("12abc".into()),
                NodeKind::Null,
            ]
        );
    }

    #[test]
    fn errors_are_located() {
        let e = p("a: 1\nb: [1, 2\n").unwrap_err();
        assert_eq!(e.code, Code::YamlSyntax);
        assert!(e.span.is_some_and(|s| s.start > 5), "{e:?}");
        let e = p("a:\n\tb: 1\n").unwrap_err();
        assert_eq!(e.code, Code::YamlSyntax);
        let e = p("a: *nope\n").unwrap_err();
        assert_eq!(e.code, Code::YamlSyntax);
        let e = p("[a]: 1\n").unwrap_err();
        assert_eq!(e.code, Code::YamlSyntax);
    }
}
