//! Canonicalisation: a located YAML tree → the JSON value Traefik would decode, plus a span index.
//!
//! Traefik's decoder (paerser) is looser than a JSON Schema: keys match case-insensitively, `null`
//! values are skipped, scalars are converted to the field's type (`port: 443` for a string field,
//! `priority: "10"` for an integer), a string fills a list by splitting on commas, and `true` enables
//! an allow-empty section. This module applies exactly those rules, driven by the generated schema, so
//! the strict schema validation that follows only reports what Traefik itself would reject. It also
//! reports unknown keys (with "did you mean"), empty sections, unsupported and deprecated keys.

use std::collections::HashMap;

use serde_json::{Map, Number, Value};

use crate::diag::{Code, Diagnostic, did_you_mean};
use crate::model::Duration;
use crate::schema::{ConfigKind, Cursor, schema};
use crate::source::Span;
use crate::yaml::{Key, Node, NodeKind};

/// Where a value (and the key naming it) sits in the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// The key's position, for values inside mappings.
    pub key: Option<Span>,
    /// The value's position.
    pub value: Span,
}

/// The canonical JSON of one file and where each part came from.
#[derive(Debug, Clone, Default)]
pub struct Canonical {
    /// The value with Traefik's spelling of keys and Traefik's scalar conversions applied.
    pub value: Value,
    /// JSON pointer → place in the source.
    pub places: HashMap<String, Place>,
}

impl Canonical {
    /// The place of a pointer, or of its nearest ancestor that has one.
    pub fn place(&self, pointer: &str) -> Option<Place> {
        let mut p = pointer;
        loop {
            if let Some(place) = self.places.get(p) {
                return Some(*place);
            }
            let idx = p.rfind('/')?;
            p = &p[..idx];
        }
    }

    /// The value span of a pointer (or nearest ancestor).
    pub fn value_span(&self, pointer: &str) -> Option<Span> {
        self.place(pointer).map(|p| p.value)
    }

    /// The key span of a pointer, falling back to its value span.
    pub fn key_span(&self, pointer: &str) -> Option<Span> {
        self.place(pointer).map(|p| p.key.unwrap_or(p.value))
    }
}

/// Escapes one JSON pointer segment.
pub fn escape(segment: &str) -> std::borrow::Cow<'_, str> {
    if segment.contains(['~', '/']) {
        segment.replace('~', "~0").replace('/', "~1").into()
    } else {
        segment.into()
    }
}

/// Top-level keys of the other configuration kind, to tell "mixed config" from a typo.
fn other_kind_keys(kind: ConfigKind) -> Vec<&'static str> {
    let other = match kind {
        ConfigKind::Static => ConfigKind::Dynamic,
        ConfigKind::Dynamic => ConfigKind::Static,
    };
    Cursor::root(schema(other))
        .properties()
        .iter()
        .map(|(n, _)| *n)
        .collect()
}

/// Canonicalises a whole document of the given kind.
pub fn canonicalize(
    root: Option<&Node>,
    kind: ConfigKind,
    diags: &mut Vec<Diagnostic>,
) -> Canonical {
    let mut out = Canonical {
        value: Value::Object(Map::new()),
        places: HashMap::new(),
    };
    let Some(root) = root else { return out };
    out.places.insert(
        String::new(),
        Place {
            key: None,
            value: root.span,
        },
    );
    let NodeKind::Map(entries) = &root.kind else {
        diags.push(
            Diagnostic::error(
                Code::YamlNotMapping,
                format!(
                    "a {} configuration must be a mapping of keys, found {}",
                    kind.as_str(),
                    root.kind.type_name()
                ),
            )
            .at(Some(root.span)),
        );
        return out;
    };
    let mut walker = Walker {
        root: schema(kind),
        diags,
        places: &mut out.places,
    };
    let cursor = Cursor::root(walker.root);
    let mut obj = Map::new();
    let others = other_kind_keys(kind);
    for (key, child) in entries {
        let Some((name, sub)) = walker.match_property(&cursor, key) else {
            let pointer = format!("/{}", escape(&key.text));
            let other = others.iter().find(|o| o.eq_ignore_ascii_case(&key.text));
            let d = match other {
                Some(o) => Diagnostic::warning(
                    Code::MixedConfig,
                    format!(
                        "`{}` belongs to the {} configuration; Traefik ignores it in a {} file",
                        key.text,
                        if kind == ConfigKind::Static { "dynamic" } else { "static" },
                        kind.as_str()
                    ),
                )
                .hint(match kind {
                    ConfigKind::Static => format!(
                        "move `{o}` into a file-provider file (providers.file.filename or directory)"
                    ),
                    ConfigKind::Dynamic => {
                        format!("move `{o}` into traefik.yml (the static configuration)")
                    }
                }),
                None => Diagnostic::warning(
                    Code::UnknownTopLevelKey,
                    format!(
                        "unknown top-level key `{}`; Traefik silently ignores it",
                        key.text
                    ),
                )
                .maybe_hint(
                    did_you_mean(&key.text, cursor.properties().iter().map(|(n, _)| *n))
                        .map(|s| format!("did you mean `{s}`?")),
                ),
            };
            walker.diags.push(d.at(Some(key.span)).pointer(pointer));
            continue;
        };
        walker.insert_field(&mut obj, "", key, name, &sub, child);
    }
    out.value = Value::Object(obj);
    out
}

struct Walker<'a, 'd> {
    root: &'static Value,
    diags: &'d mut Vec<Diagnostic>,
    places: &'a mut HashMap<String, Place>,
}

impl Walker<'_, '_> {
    /// Finds the property a key names: exact first, then case-insensitively (Traefik's rule).
    fn match_property(&mut self, cursor: &Cursor, key: &Key) -> Option<(&'static str, Cursor)> {
        let props = cursor.properties();
        if let Some((n, s)) = props.iter().find(|(n, _)| *n == key.text) {
            return Some((n, cursor.child(s)));
        }
        let (n, s) = props
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(&key.text))?;
        self.diags.push(
            Diagnostic::note(
                Code::KeyCase,
                format!("`{}` is accepted (Traefik matches keys case-insensitively); the documented spelling is `{n}`", key.text),
            )
            .at(Some(key.span)),
        );
        Some((n, cursor.child(s)))
    }

    /// Adds `name: child` to a struct object, applying field-level rules.
    fn insert_field(
        &mut self,
        obj: &mut Map<String, Value>,
        parent: &str,
        key: &Key,
        name: &str,
        sub: &Cursor,
        child: &Node,
    ) {
        let pointer = format!("{parent}/{}", escape(name));
        if obj.contains_key(name) {
            self.diags.push(
                Diagnostic::error(
                    Code::YamlDuplicateKey,
                    format!(
                        "`{}` is given twice (keys are case-insensitive in Traefik)",
                        key.text
                    ),
                )
                .at(Some(key.span))
                .pointer(pointer),
            );
            return;
        }
        if matches!(child.kind, NodeKind::Null) {
            return; // Traefik skips null values.
        }
        let allow_empty = sub.extension("x-allow-empty") == Some(&Value::Bool(true));
        // `true` and an empty string enable an allow-empty section (Traefik 3.7: `ocsp: ""`
        // turns stapling on); `false` leaves it off.
        let enable = match &child.kind {
            NodeKind::Bool(b) => Some(*b),
            NodeKind::Str(s) if s.is_empty() => Some(true),
            _ => None,
        };
        if allow_empty && let Some(b) = enable {
            if b {
                self.places.insert(
                    pointer,
                    Place {
                        key: Some(key.span),
                        value: child.span,
                    },
                );
                obj.insert(name.to_owned(), Value::Object(Map::new()));
            }
            return;
        }
        self.report_markers(sub, key, &pointer);
        if let Some(v) = self.walk(child, sub, &pointer, Some(key.span), allow_empty) {
            obj.insert(name.to_owned(), v);
        }
    }

    fn report_markers(&mut self, sub: &Cursor, key: &Key, pointer: &str) {
        if sub.extension("x-bridgectl").is_none() && sub.extension("deprecated").is_none() {
            return;
        }
        let what = pointer.trim_start_matches('/').replace('/', ".");
        match sub.extension("x-bridgectl").and_then(Value::as_str) {
            Some("unsupported") => self.diags.push(
                Diagnostic::error(
                    Code::Unsupported,
                    format!("`{what}` is valid Traefik, but not supported by bridgectl"),
                )
                .at(Some(key.span))
                .pointer(pointer)
                .hint("remove it, or keep running Traefik for this configuration; see docs/compatibility.md"),
            ),
            Some("ignored") => self.diags.push(
                Diagnostic::warning(
                    Code::Ignored,
                    format!("`{what}` is valid Traefik, but has no effect in bridgectl"),
                )
                .at(Some(key.span))
                .pointer(pointer),
            ),
            _ => {}
        }
        if sub.extension("deprecated") == Some(&Value::Bool(true)) {
            // `x-no-effect`: Traefik v3 still reads the key but no longer acts on it.
            let message = if sub.extension("x-no-effect") == Some(&Value::Bool(true)) {
                format!("`{what}` is deprecated in Traefik v3 and has no effect there (nor here)")
            } else {
                format!("`{what}` is deprecated in Traefik v3")
            };
            self.diags.push(
                Diagnostic::warning(Code::Deprecated, message)
                    .at(Some(key.span))
                    .pointer(pointer),
            );
        }
    }

    fn walk(
        &mut self,
        node: &Node,
        cursor: &Cursor,
        pointer: &str,
        key: Option<Span>,
        allow_empty: bool,
    ) -> Option<Value> {
        self.places.insert(
            pointer.to_owned(),
            Place {
                key,
                value: node.span,
            },
        );
        if cursor.is_duration() {
            return self.duration(node, pointer);
        }
        match &node.kind {
            NodeKind::Null => None,
            NodeKind::Map(entries) => self.map(node, entries, cursor, pointer, allow_empty),
            NodeKind::Seq(items) => {
                let item_cursor = cursor.items().unwrap_or_else(|| Cursor::any(self.root));
                if !cursor.accepts("array") {
                    return Some(raw_json(node));
                }
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    let p = format!("{pointer}/{}", out.len());
                    if matches!(item.kind, NodeKind::Null) {
                        self.places.insert(
                            p.clone(),
                            Place {
                                key: None,
                                value: item.span,
                            },
                        );
                        out.push(Value::Null);
                        continue;
                    }
                    if let Some(v) = self.walk(item, &item_cursor, &p, None, false) {
                        out.push(v);
                    }
                }
                Some(Value::Array(out))
            }
            _ => Some(self.scalar(node, cursor, pointer)),
        }
    }

    fn map(
        &mut self,
        node: &Node,
        entries: &[(Key, Node)],
        cursor: &Cursor,
        pointer: &str,
        allow_empty: bool,
    ) -> Option<Value> {
        if !cursor.accepts("object") {
            return Some(raw_json(node));
        }
        let props = cursor.properties();
        let map_values = cursor.map_values();
        if entries.is_empty() {
            if !allow_empty && (!props.is_empty() || map_values.is_some()) {
                let what = pointer.rsplit('/').next().unwrap_or("");
                self.diags.push(
                    Diagnostic::error(
                        Code::EmptyElement,
                        format!("`{what}` is empty; Traefik rejects the whole file with \"{what} cannot be a standalone element\""),
                    )
                    .at(Some(node.span))
                    .pointer(pointer)
                    .hint("remove the key, or give it content"),
                );
                return None;
            }
            return Some(Value::Object(Map::new()));
        }
        let mut obj = Map::new();
        if !props.is_empty() {
            for (key, child) in entries {
                match self.match_property(cursor, key) {
                    Some((name, sub)) => {
                        self.insert_field(&mut obj, pointer, key, name, &sub, child)
                    }
                    None if cursor.is_closed() || map_values.is_none() => {
                        let names: Vec<&str> = props.iter().map(|(n, _)| *n).collect();
                        let hint = did_you_mean(&key.text, names.iter().copied())
                            .map(|s| format!("did you mean `{s}`?"))
                            .unwrap_or_else(|| format!("valid keys here: {}", names.join(", ")));
                        self.diags.push(
                            Diagnostic::error(
                                Code::UnknownKey,
                                format!(
                                    "unknown key `{}` in `{}`",
                                    key.text,
                                    display_path(pointer)
                                ),
                            )
                            .at(Some(key.span))
                            .pointer(format!("{pointer}/{}", escape(&key.text)))
                            .hint(hint),
                        );
                    }
                    None => {}
                }
            }
            return Some(Value::Object(obj));
        }
        // A map with free keys (router names, header names, ...): keys keep their case.
        let values = map_values.unwrap_or_else(|| Cursor::any(self.root));
        for (key, child) in entries {
            let p = format!("{pointer}/{}", escape(&key.text));
            if obj.contains_key(&key.text) {
                continue; // yaml parser already reported exact duplicates
            }
            if matches!(child.kind, NodeKind::Null) {
                if values.is_open() || values.accepts("null") {
                    continue;
                }
                self.places.insert(
                    p.clone(),
                    Place {
                        key: Some(key.span),
                        value: child.span,
                    },
                );
                continue;
            }
            // An empty entry of a free-key map is an element with defaults, not a "standalone element".
            if let Some(v) = self.walk(child, &values, &p, Some(key.span), true) {
                obj.insert(key.text.clone(), v);
            }
        }
        Some(Value::Object(obj))
    }

    fn duration(&mut self, node: &Node, pointer: &str) -> Option<Value> {
        let text = match &node.kind {
            NodeKind::Str(s) => s.clone(),
            NodeKind::Int(i) => return Some(Value::Number((*i).into())),
            NodeKind::Null => return None,
            other => {
                self.diags.push(
                    Diagnostic::error(
                        Code::InvalidDuration,
                        format!(
                            "expected a duration such as \"10s\", found {}",
                            other.type_name()
                        ),
                    )
                    .at(Some(node.span))
                    .pointer(pointer),
                );
                return None;
            }
        };
        match Duration::parse(&text) {
            Ok(_) => Some(Value::String(text)),
            Err(e) => {
                self.diags.push(
                    Diagnostic::error(Code::InvalidDuration, e.to_string())
                        .at(Some(node.span))
                        .pointer(pointer)
                        .hint(
                            "use a Go duration like 500ms, 5s, 1m30s, or a whole number of seconds",
                        ),
                );
                None
            }
        }
    }

    /// Converts a scalar to the type the schema wants, as paerser does; otherwise keeps it so the
    /// validator reports the mismatch.
    fn scalar(&mut self, node: &Node, cursor: &Cursor, pointer: &str) -> Value {
        let raw = raw_json(node);
        let ty = json_type(&raw);
        if cursor.accepts(ty) {
            return raw;
        }
        match &node.kind {
            NodeKind::Int(_) | NodeKind::UInt(_) | NodeKind::Float(_) | NodeKind::Bool(_)
                if cursor.accepts("string") =>
            {
                Value::String(scalar_text(&node.kind))
            }
            NodeKind::Str(s) if cursor.accepts("integer") && s.trim().parse::<i64>().is_ok() => s
                .trim()
                .parse::<i64>()
                .map(|i| Value::Number(i.into()))
                .unwrap_or(raw),
            NodeKind::Str(s) if cursor.accepts("number") && s.trim().parse::<f64>().is_ok() => s
                .trim()
                .parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .map_or(raw, Value::Number),
            NodeKind::Str(s) if cursor.accepts("boolean") && go_bool(s).is_some() => {
                Value::Bool(go_bool(s).unwrap_or_default())
            }
            NodeKind::Str(s) if cursor.accepts("array") => {
                // paerser fills a list from "a,b,c".
                let items: Vec<Value> = s
                    .split(',')
                    .map(|p| Value::String(p.trim().to_owned()))
                    .collect();
                for i in 0..items.len() {
                    self.places.insert(
                        format!("{pointer}/{i}"),
                        Place {
                            key: None,
                            value: node.span,
                        },
                    );
                }
                Value::Array(items)
            }
            _ => raw,
        }
    }
}

fn go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

fn scalar_text(kind: &NodeKind) -> String {
    match kind {
        NodeKind::Bool(b) => b.to_string(),
        NodeKind::Int(i) => i.to_string(),
        NodeKind::UInt(u) => u.to_string(),
        NodeKind::Float(f) => f.to_string(),
        NodeKind::Str(s) => s.clone(),
        _ => String::new(),
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The node as JSON, without any schema knowledge.
pub fn raw_json(node: &Node) -> Value {
    match &node.kind {
        NodeKind::Null => Value::Null,
        NodeKind::Bool(b) => Value::Bool(*b),
        NodeKind::Int(i) => Value::Number((*i).into()),
        NodeKind::UInt(u) => Value::Number((*u).into()),
        NodeKind::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
        NodeKind::Str(s) => Value::String(s.clone()),
        NodeKind::Seq(items) => Value::Array(items.iter().map(raw_json).collect()),
        NodeKind::Map(entries) => Value::Object(
            entries
                .iter()
                .map(|(k, v)| (k.text.clone(), raw_json(v)))
                .collect(),
        ),
    }
}

/// `/http/routers/api` → `http.routers.api`, for messages.
pub fn display_path(pointer: &str) -> String {
    if pointer.is_empty() {
        return "(top level)".into();
    }
    pointer
        .trim_start_matches('/')
        .split('/')
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::FileId;

    fn canon(kind: ConfigKind, text: &str) -> (Canonical, Vec<Diagnostic>) {
        let node = crate::yaml::parse(FileId(0), text).unwrap();
        let mut diags = Vec::new();
        let c = canonicalize(node.as_ref(), kind, &mut diags);
        (c, diags)
    }

    #[test]
    fn keys_match_case_insensitively_and_keep_a_note() {
        let (c, d) = canon(
            ConfigKind::Dynamic,
            "HTTP:\n  services:\n    s:\n      loadbalancer:\n        healthcheck:\n          path: /h\n",
        );
        assert!(
            c.value
                .pointer("/http/services/s/loadBalancer/healthCheck/path")
                .is_some(),
            "{}",
            c.value
        );
        assert!(
            d.iter()
                .all(|d| d.code == Code::KeyCase && d.severity == crate::diag::Severity::Note)
        );
        assert_eq!(d.len(), 3);
    }

    #[test]
    fn scalars_convert_like_traefiks_decoder() {
        let (c, d) = canon(
            ConfigKind::Dynamic,
            "http:\n  routers:\n    r:\n      rule: x\n      service: s\n      priority: \"10\"\n      entryPoints: web,websecure\n  middlewares:\n    m:\n      redirectScheme:\n        scheme: https\n        port: 443\n        permanent: \"true\"\n",
        );
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(
            c.value.pointer("/http/routers/r/priority"),
            Some(&Value::from(10))
        );
        assert_eq!(
            c.value.pointer("/http/routers/r/entryPoints"),
            Some(&serde_json::json!(["web", "websecure"]))
        );
        assert_eq!(
            c.value.pointer("/http/middlewares/m/redirectScheme/port"),
            Some(&Value::from("443"))
        );
        assert_eq!(
            c.value
                .pointer("/http/middlewares/m/redirectScheme/permanent"),
            Some(&Value::Bool(true))
        );
    }

    #[test]
    fn allow_empty_sections_take_true_and_others_reject_empty() {
        let (c, d) = canon(
            ConfigKind::Static,
            "api: true\nping: {}\nlog: false\nocsp: \"\"\n",
        );
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(
            c.value,
            serde_json::json!({"api": {}, "ping": {}, "ocsp": {}})
        );
        let (_, d) = canon(ConfigKind::Dynamic, "http:\n  middlewares: {}\n");
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].code, Code::EmptyElement);
    }

    #[test]
    fn nulls_are_skipped() {
        let (c, d) = canon(ConfigKind::Static, "api:\n  insecure: ~\nlog:\n");
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(c.value, serde_json::json!({"api": {}}));
    }

    #[test]
    fn unknown_keys_get_suggestions_and_top_level_ones_are_warnings() {
        let (_, d) = canon(
            ConfigKind::Static,
            "entryPoints:\n  web:\n    adress: \":80\"\napii: {}\nhttp: {}\n",
        );
        let summary: Vec<_> = d
            .iter()
            .map(|d| (d.code, d.severity, d.hint.clone()))
            .collect();
        assert_eq!(summary[0].0, Code::UnknownKey);
        assert_eq!(summary[0].1, crate::diag::Severity::Error);
        assert_eq!(summary[0].2.as_deref(), Some("did you mean `address`?"));
        assert_eq!(summary[1].0, Code::UnknownTopLevelKey);
        assert_eq!(summary[1].2.as_deref(), Some("did you mean `api`?"));
        assert_eq!(summary[2].0, Code::MixedConfig);
    }

    #[test]
    fn places_point_at_keys_and_values() {
        let text = "http:\n  routers:\n    r:\n      rule: x\n      service: s\n";
        let (c, _) = canon(ConfigKind::Dynamic, text);
        let key = c.key_span("/http/routers/r/service").unwrap();
        let value = c.value_span("/http/routers/r/service").unwrap();
        assert_eq!(&text[key.start..key.start + 7], "service");
        assert_eq!(&text[value.start..value.start + 1], "s");
        // Unknown pointers fall back to the nearest known ancestor.
        assert_eq!(
            c.value_span("/http/routers/r/nope/deeper"),
            c.value_span("/http/routers/r")
        );
    }

    #[test]
    fn unsupported_and_ignored_keys_are_named() {
        let (_, d) = canon(
            ConfigKind::Dynamic,
            "tcp:\n  routers: {}\nhttp:\n  routers:\n    r:\n      rule: x\n      service: s\n      observability:\n        tracing: false\n",
        );
        let codes: Vec<_> = d.iter().map(|d| (d.code, d.severity)).collect();
        assert!(
            codes.contains(&(Code::Unsupported, crate::diag::Severity::Error)),
            "{d:?}"
        );
        assert!(
            codes.contains(&(Code::Ignored, crate::diag::Severity::Warning)),
            "{d:?}"
        );
    }
}
