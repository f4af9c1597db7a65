//! Canonical JSON, the plan hash, and the verified loader.
//!
//! The canonical form of a JSON value is what gets hashed; it does not depend on how the value was
//! built or parsed:
//!
//! - object members are sorted by key, comparing the keys' UTF-8 bytes; keys are unique;
//! - no whitespace outside strings ([`canonical_json`]), or exactly the layout of
//!   [`canonical_pretty`] for files;
//! - strings are escaped as serde_json does: `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, other
//!   characters below U+0020 as `\u00xx` (lower-case hex), everything else (including `/`, U+007F
//!   and non-ASCII) literally, in UTF-8;
//! - numbers are integers in plain decimal (`-` sign, no leading zeros, no exponent); any other
//!   number is an error ([`PlanError::NotInteger`]);
//! - `true`, `false`, `null` as such;
//! - containers nest at most [`MAX_DEPTH`] levels ([`PlanError::TooDeep`]).
//!
//! The map type of `serde_json` keeps insertion order in this workspace (`preserve_order`), so the
//! writer sorts explicitly instead of relying on the map.
//!
//! The plan hash is `sha256:` followed by the lower-case hex SHA-256 of the UTF-8 bytes of
//! [`canonical_json`] of the plan object without its top-level `hash` member.

use std::fmt::Write as _;

use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};

use crate::error::PlanError;
use crate::plan::{PLAN_VERSION, Plan, pointer_escape};

/// Deepest container nesting of the canonical form (the top-level object is level 1). It matches
/// the parser of the loader, which refuses deeper documents.
pub const MAX_DEPTH: usize = 127;

/// Prefix of every hash in a plan.
pub const HASH_PREFIX: &str = "sha256:";

/// Compact canonical JSON of `value` (see the [module documentation](self)).
pub fn canonical_json(value: &Value) -> Result<String, PlanError> {
    let mut w = Writer::new(false);
    w.value(value)?;
    Ok(w.out)
}

/// Canonical JSON laid out for files: same member order and escaping as [`canonical_json`], every
/// array element and object member on its own line indented by two spaces per level, `": "`
/// between key and value, empty containers as `[]` and `{}`, and a final newline. This is the
/// layout of `serde_json::to_string_pretty`.
pub fn canonical_pretty(value: &Value) -> Result<String, PlanError> {
    let mut w = Writer::new(true);
    w.value(value)?;
    w.out.push('\n');
    Ok(w.out)
}

/// `sha256:` + lower-case hex SHA-256 of [`canonical_json`] of `value`.
pub fn sha256_of(value: &Value) -> Result<String, PlanError> {
    let text = canonical_json(value)?;
    let digest = Sha256::digest(text.as_bytes());
    let mut out = String::with_capacity(HASH_PREFIX.len() + 64);
    out.push_str(HASH_PREFIX);
    for byte in digest {
        // Writing to a String cannot fail.
        let _ = write!(out, "{byte:02x}");
    }
    Ok(out)
}

struct Writer {
    out: String,
    pretty: bool,
    /// Reference tokens of the value being written, for error pointers.
    path: Vec<String>,
}

impl Writer {
    fn new(pretty: bool) -> Self {
        Writer {
            out: String::new(),
            pretty,
            path: Vec::new(),
        }
    }

    fn pointer(&self) -> String {
        self.path
            .iter()
            .map(|t| format!("/{}", pointer_escape(t)))
            .collect()
    }

    fn newline(&mut self) {
        if self.pretty {
            self.out.push('\n');
            for _ in 0..self.path.len() {
                self.out.push_str("  ");
            }
        }
    }

    fn value(&mut self, value: &Value) -> Result<(), PlanError> {
        match value {
            Value::Null => self.out.push_str("null"),
            Value::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Value::Number(n) => self.number(n)?,
            Value::String(s) => write_string(&mut self.out, s),
            Value::Array(items) => {
                self.enter()?;
                self.out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.path.push(i.to_string());
                    self.newline();
                    self.value(item)?;
                    self.path.pop();
                }
                if !items.is_empty() {
                    self.newline();
                }
                self.out.push(']');
            }
            Value::Object(obj) => {
                self.enter()?;
                let mut members: Vec<(&String, &Value)> = obj.iter().collect();
                members.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                self.out.push('{');
                for (i, (key, item)) in members.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.path.push((*key).clone());
                    self.newline();
                    write_string(&mut self.out, key);
                    self.out.push(':');
                    if self.pretty {
                        self.out.push(' ');
                    }
                    self.value(item)?;
                    self.path.pop();
                }
                if !members.is_empty() {
                    self.newline();
                }
                self.out.push('}');
            }
        }
        Ok(())
    }

    /// Checks that one more level of nesting is allowed (`path` holds the levels above).
    fn enter(&self) -> Result<(), PlanError> {
        if self.path.len() >= MAX_DEPTH {
            return Err(PlanError::TooDeep {
                pointer: self.pointer(),
                max: MAX_DEPTH,
            });
        }
        Ok(())
    }

    fn number(&mut self, n: &Number) -> Result<(), PlanError> {
        if let Some(u) = n.as_u64() {
            let _ = write!(self.out, "{u}");
        } else if let Some(i) = n.as_i64() {
            let _ = write!(self.out, "{i}");
        } else {
            return Err(PlanError::NotInteger {
                pointer: self.pointer(),
            });
        }
        Ok(())
    }
}

/// Writes `s` as a JSON string with serde_json's escaping.
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

impl Plan {
    /// The hash of this plan's content: [`sha256_of`] the plan as JSON without what does not change
    /// behaviour — `hash` itself, `inputs` (file digests change with comments and formatting) and the
    /// `source` provenance of entry points, routers, services and middlewares (line numbers move
    /// when keys are reordered). So two plans with the same hash route identically, whatever the
    /// layout of the YAML they came from. The current value of `hash` does not matter.
    pub fn content_hash(&self) -> Result<String, PlanError> {
        let value = serde_json::to_value(self).map_err(|e| PlanError::Invalid(e.to_string()))?;
        sha256_of(&hashed_content(value))
    }

    /// Sets `hash` to [`Plan::content_hash`]. Sealing twice gives the same hash.
    pub fn seal(&mut self) -> Result<(), PlanError> {
        self.hash = self.content_hash()?;
        Ok(())
    }

    /// The plan file text: [`canonical_pretty`] of this plan, sealed. The hash is recomputed, so a
    /// stale `self.hash` never reaches the file.
    pub fn to_file_string(&self) -> Result<String, PlanError> {
        let mut sealed = self.clone();
        sealed.seal()?;
        let value = serde_json::to_value(&sealed).map_err(|e| PlanError::Invalid(e.to_string()))?;
        canonical_pretty(&value)
    }
}

/// The part of a plan's JSON that [`Plan::content_hash`] covers (see there).
pub fn hashed_content(mut value: Value) -> Value {
    if let Value::Object(obj) = &mut value {
        obj.remove("hash");
        obj.remove("inputs");
        for section in ["entrypoints", "routers", "services", "middlewares"] {
            if let Some(Value::Object(entries)) = obj.get_mut(section) {
                for entry in entries.values_mut() {
                    if let Value::Object(e) = entry {
                        e.remove("source");
                    }
                }
            }
        }
    }
    value
}

/// Loads a plan file, trusting nothing in it until checked, in this order:
///
/// 1. the bytes are UTF-8 JSON with unique keys in every object ([`PlanError::NotJson`];
///    duplicate keys are [`PlanError::Invalid`]) and the top level is an object;
/// 2. `plan_version` is [`PLAN_VERSION`] ([`PlanError::UnsupportedVersion`]), checked before
///    anything else so a newer plan is reported as such even though its fields differ;
/// 3. the recorded `hash` equals the hash of the content ([`PlanError::HashMismatch`]; non-integer
///    numbers are [`PlanError::NotInteger`]);
/// 4. the JSON has exactly the shape of [`Plan`] ([`PlanError::Invalid`], with line and column);
/// 5. the plan is self-consistent ([`Plan::check_consistency`], [`PlanError::Inconsistent`]).
pub fn load_verified(bytes: &[u8]) -> Result<Plan, PlanError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| PlanError::NotJson(format!("the file is not UTF-8: {e}")))?;
    let Value::Object(mut obj) = parse_strict(text)? else {
        return Err(PlanError::Invalid("a plan is a JSON object".into()));
    };

    match obj.get("plan_version") {
        None => return Err(PlanError::Invalid("missing field `plan_version`".into())),
        Some(v) => match v.as_u64() {
            Some(found) if found == u64::from(PLAN_VERSION) => {}
            Some(found) => {
                return Err(PlanError::UnsupportedVersion {
                    found,
                    supported: PLAN_VERSION,
                });
            }
            None => {
                return Err(PlanError::Invalid(format!(
                    "`plan_version` must be a non-negative integer, found {v}"
                )));
            }
        },
    }

    let expected = match obj.remove("hash") {
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(PlanError::Invalid(format!(
                "`hash` must be a string, found {other}"
            )));
        }
        None => return Err(PlanError::Invalid("missing field `hash`".into())),
    };
    let actual = sha256_of(&hashed_content(Value::Object(obj)))?;
    if expected != actual {
        return Err(PlanError::HashMismatch { expected, actual });
    }

    // The text has no duplicate keys (checked above), so this reads exactly the content hashed.
    let plan: Plan = serde_json::from_str(text).map_err(|e| PlanError::Invalid(e.to_string()))?;
    plan.check_consistency()?;
    Ok(plan)
}

/// Parses JSON into a [`Value`], rejecting duplicate object keys (which `Value` would silently
/// collapse, so the hashed content could differ from what another reader sees).
fn parse_strict(text: &str) -> Result<Value, PlanError> {
    let classify = |e: serde_json::Error| match e.classify() {
        serde_json::error::Category::Data => PlanError::Invalid(e.to_string()),
        _ => PlanError::NotJson(e.to_string()),
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let StrictValue(value) = StrictValue::deserialize(&mut de).map_err(classify)?;
    de.end().map_err(classify)?;
    Ok(value)
}

/// A [`Value`] deserialized with duplicate-key detection.
struct StrictValue(Value);

impl<'de> Deserialize<'de> for StrictValue {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = StrictValue;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::Bool(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::Number(v.into())))
    }

    fn visit_u64<E>(self, v: u64) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::Number(v.into())))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<StrictValue, E> {
        // Kept as a float so hashing reports it with its pointer.
        Number::from_f64(v)
            .map(|n| StrictValue(Value::Number(n)))
            .ok_or_else(|| E::custom("number out of range"))
    }

    fn visit_str<E>(self, v: &str) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::String(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::String(v)))
    }

    fn visit_unit<E>(self) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<StrictValue, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(StrictValue(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(StrictValue(Value::Array(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StrictValue, A::Error> {
        let mut obj = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if obj.contains_key(&key) {
                return Err(de::Error::custom(format_args!("duplicate key `{key}`")));
            }
            let StrictValue(item) = map.next_value()?;
            obj.insert(key, item);
        }
        Ok(StrictValue(Value::Object(obj)))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::plan::{Router, ServiceKind};

    fn sealed_file(plan: &Plan) -> String {
        plan.to_file_string().unwrap()
    }

    /// Re-seals an arbitrary JSON value as if it were a plan (for shape and consistency tests).
    fn reseal(mut value: Value) -> String {
        let obj = value.as_object_mut().unwrap();
        obj.remove("hash");
        let hash = sha256_of(&hashed_content(value.clone())).unwrap();
        value
            .as_object_mut()
            .unwrap()
            .insert("hash".into(), Value::String(hash));
        canonical_pretty(&value).unwrap()
    }

    fn plan_value() -> Value {
        serde_json::to_value(Plan::example()).unwrap()
    }

    #[test]
    fn compact_form_sorts_keys_bytewise_at_every_level() {
        let mut inner = Map::new();
        inner.insert("d".into(), json!([3, {"y": 1, "x": 2}]));
        inner.insert("c".into(), Value::Null);
        let mut outer = Map::new();
        outer.insert("é".into(), json!(true));
        outer.insert("b".into(), json!(-1));
        outer.insert("a".into(), Value::Object(inner));
        outer.insert("B".into(), json!("s"));
        outer.insert("aa".into(), json!({}));
        outer.insert("ab".into(), json!([]));
        assert_eq!(
            canonical_json(&Value::Object(outer)).unwrap(),
            r#"{"B":"s","a":{"c":null,"d":[3,{"x":2,"y":1}]},"aa":{},"ab":[],"b":-1,"é":true}"#
        );
    }

    #[test]
    fn integers_keep_their_full_range() {
        let v = json!({"max": u64::MAX, "min": i64::MIN, "zero": 0});
        assert_eq!(
            canonical_json(&v).unwrap(),
            r#"{"max":18446744073709551615,"min":-9223372036854775808,"zero":0}"#
        );
    }

    #[test]
    fn floats_are_rejected_with_their_pointer() {
        let v = json!({"a": [1, 1.5], "b": 2});
        assert_eq!(
            canonical_json(&v),
            Err(PlanError::NotInteger {
                pointer: "/a/1".into()
            })
        );
        let v = json!({"a/b~c": 1.0});
        assert_eq!(
            canonical_pretty(&v),
            Err(PlanError::NotInteger {
                pointer: "/a~1b~0c".into()
            })
        );
    }

    #[test]
    fn strings_are_escaped_exactly_like_serde_json() {
        let mut all: String = (0u32..0x80).filter_map(char::from_u32).collect();
        all.push_str("é€😀\u{2028}\u{FEFF}/");
        for c in all.chars() {
            let s = c.to_string();
            let mut ours = String::new();
            write_string(&mut ours, &s);
            assert_eq!(
                ours,
                serde_json::to_string(&s).unwrap(),
                "U+{:04X}",
                c as u32
            );
        }
    }

    #[test]
    fn pretty_form_has_serde_json_layout_and_a_final_newline() {
        let v = json!({"a": {"b": [1, {"c": []}], "d": {}}, "e": "x"});
        let want = serde_json::to_string_pretty(&v).unwrap() + "\n";
        assert_eq!(canonical_pretty(&v).unwrap(), want);
        assert!(want.contains("\n  \"a\": {\n    \"b\": [\n      1,"));
    }

    fn nested(depth: usize) -> Value {
        let mut v = json!(1);
        for _ in 0..depth {
            v = Value::Array(vec![v]);
        }
        v
    }

    #[test]
    fn depth_limit_matches_the_parser() {
        assert!(canonical_json(&nested(MAX_DEPTH)).is_ok());
        assert!(matches!(
            canonical_json(&nested(MAX_DEPTH + 1)),
            Err(PlanError::TooDeep { max: MAX_DEPTH, .. })
        ));
        // The loader's parser accepts exactly the depth the writer allows.
        let text = |d: usize| format!("{}1{}", "[".repeat(d), "]".repeat(d));
        assert_eq!(parse_strict(&text(MAX_DEPTH)).unwrap(), nested(MAX_DEPTH));
        assert!(matches!(
            parse_strict(&text(MAX_DEPTH + 1)),
            Err(PlanError::NotJson(m)) if m.contains("recursion limit")
        ));
    }

    #[test]
    fn round_trip() {
        let plan = Plan::example();
        let text = sealed_file(&plan);
        assert!(text.ends_with("}\n"));
        let loaded = load_verified(text.as_bytes()).unwrap();
        assert_eq!(loaded, plan);
        assert_eq!(sealed_file(&loaded), text);
    }

    #[test]
    fn sealing_is_idempotent_and_ignores_the_old_hash() {
        let mut plan = Plan::example();
        plan.seal().unwrap();
        let first = plan.hash.clone();
        plan.seal().unwrap();
        assert_eq!(plan.hash, first);
        plan.hash = "sha256:stale".into();
        plan.seal().unwrap();
        assert_eq!(plan.hash, first);
        assert!(first.starts_with(HASH_PREFIX));
        let hex = &first[HASH_PREFIX.len()..];
        assert_eq!(hex.len(), 64);
        assert!(
            hex.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );

        plan.hash = "sha256:stale".into();
        let text = plan.to_file_string().unwrap();
        assert!(text.contains(&first));
    }

    #[test]
    fn provenance_and_inputs_do_not_change_the_hash_but_routing_does() {
        let plan = Plan::example();
        let mut moved = plan.clone();
        for r in moved.routers.values_mut() {
            r.source.line += 10;
        }
        moved.inputs.digest = "sha256:0".into();
        assert_eq!(moved.content_hash().unwrap(), plan.content_hash().unwrap());
        let mut changed = plan.clone();
        for r in changed.routers.values_mut() {
            r.priority += 1;
        }
        assert_ne!(
            changed.content_hash().unwrap(),
            plan.content_hash().unwrap()
        );
    }

    #[test]
    fn hash_is_sha256_of_the_compact_form_without_hash_inputs_and_provenance() {
        let plan = Plan::example();
        let v = hashed_content(serde_json::to_value(&plan).unwrap());
        assert!(v.get("inputs").is_none() && v.get("hash").is_none());
        assert!(
            v["routers"]
                .as_object()
                .unwrap()
                .values()
                .all(|r| r.get("source").is_none())
        );
        let compact = canonical_json(&v).unwrap();
        let digest = Sha256::digest(compact.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(plan.hash, format!("sha256:{hex}"));
    }

    fn reorder(v: &Value, key: &dyn Fn(&str) -> u64) -> Value {
        match v {
            Value::Object(obj) => {
                let mut entries: Vec<_> = obj.iter().collect();
                entries.sort_by_key(|(k, _)| key(k));
                Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, c)| (k.clone(), reorder(c, key)))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(|c| reorder(c, key)).collect()),
            other => other.clone(),
        }
    }

    #[test]
    fn key_order_and_layout_of_the_file_do_not_matter() {
        let plan = Plan::example();
        let v = serde_json::to_value(&plan).unwrap();
        // Reverse-alphabetical insertion order, compact and pretty, both load.
        let reversed = reorder(&v, &|k: &str| u64::MAX - u64::from(k.as_bytes()[0]));
        let compact = serde_json::to_string(&reversed).unwrap();
        assert!(compact.starts_with(r#"{"tls""#), "{}", &compact[..20]);
        assert_eq!(load_verified(compact.as_bytes()).unwrap(), plan);
        let pretty = serde_json::to_string_pretty(&reversed).unwrap();
        assert_eq!(load_verified(pretty.as_bytes()).unwrap(), plan);
        assert_eq!(sha256_of(&reversed).unwrap(), sha256_of(&v).unwrap());
    }

    /// Every leaf of the plan file that affects routing, changed, makes the loader refuse it
    /// (provenance and the inputs record are outside the hash by design).
    #[test]
    fn changing_any_routing_value_is_a_hash_mismatch() {
        fn leaves(v: &Value, at: String, out: &mut Vec<String>) {
            match v {
                Value::Object(obj) => obj
                    .iter()
                    .for_each(|(k, c)| leaves(c, format!("{at}/{}", pointer_escape(k)), out)),
                Value::Array(items) => items
                    .iter()
                    .enumerate()
                    .for_each(|(i, c)| leaves(c, format!("{at}/{i}"), out)),
                _ => out.push(at),
            }
        }
        let v = plan_value();
        let mut pointers = Vec::new();
        leaves(&v, String::new(), &mut pointers);
        assert!(pointers.len() > 50, "{}", pointers.len());
        let outside_hash = |p: &str| {
            p == "/plan_version"
                || p.starts_with("/inputs/")
                || p.split('/').nth(3) == Some("source")
        };
        for pointer in pointers.iter().filter(|p| !outside_hash(p)) {
            let mut changed = v.clone();
            let leaf = changed.pointer_mut(pointer).unwrap();
            *leaf = match leaf.take() {
                Value::String(s) => Value::String(format!("{s}x")),
                Value::Number(n) => json!(n.as_u64().map_or(0, |n| n + 1)),
                Value::Bool(b) => Value::Bool(!b),
                _ => json!(0),
            };
            let text = canonical_pretty(&changed).unwrap();
            assert!(
                matches!(
                    load_verified(text.as_bytes()),
                    Err(PlanError::HashMismatch { .. })
                ),
                "{pointer}"
            );
        }
    }

    #[test]
    fn a_flipped_byte_is_a_hash_mismatch() {
        let plan = Plan::example();
        let text = sealed_file(&plan);
        let at = text.find("10.0.0.12").unwrap() + 8;
        let mut bytes = text.into_bytes();
        bytes[at] = b'3';
        match load_verified(&bytes) {
            Err(PlanError::HashMismatch { expected, actual }) => {
                assert_eq!(expected, plan.hash);
                assert_ne!(actual, plan.hash);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unknown_version_is_refused_before_anything_else() {
        let err = load_verified(br#"{"plan_version": 99, "weird": 1.5, "hash": 3}"#).unwrap_err();
        assert_eq!(
            err,
            PlanError::UnsupportedVersion {
                found: 99,
                supported: PLAN_VERSION
            }
        );
        assert!(
            err.to_string().contains("rebuild the plan"),
            "the message says what to do: {err}"
        );
        // A plan of the previous format (strings where version 3 has enumerations) is refused
        // by its version, not by the first field that no longer reads.
        let mut v = plan_value();
        v["plan_version"] = json!(2);
        let text = reseal(v);
        assert!(matches!(
            load_verified(text.as_bytes()),
            Err(PlanError::UnsupportedVersion { found: 2, .. })
        ));
        for bad in [
            r#"{"hash":"x"}"#,
            r#"{"plan_version":"1"}"#,
            r#"{"plan_version":1.0}"#,
        ] {
            assert!(
                matches!(load_verified(bad.as_bytes()), Err(PlanError::Invalid(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn floats_in_a_plan_are_refused() {
        let mut v = plan_value();
        v["entrypoints"]["web"]["max_header_bytes"] = json!(1.5);
        v["hash"] = json!("sha256:0");
        let text = serde_json::to_string(&v).unwrap();
        assert_eq!(
            load_verified(text.as_bytes()),
            Err(PlanError::NotInteger {
                pointer: "/entrypoints/web/max_header_bytes".into()
            })
        );
    }

    #[test]
    fn malformed_input_is_not_json() {
        for bad in [
            &b"\xff\xfe{}"[..],
            b"",
            b"{",
            b"{} {}",
            b"{\"a\":1,}",
            b"nul",
        ] {
            assert!(
                matches!(load_verified(bad), Err(PlanError::NotJson(_))),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        assert!(matches!(load_verified(b"[1]"), Err(PlanError::Invalid(_))));
    }

    #[test]
    fn duplicate_keys_are_refused() {
        let text = sealed_file(&Plan::example());
        let dup = text.replacen(
            "\"profile\": \"dev\",",
            "\"profile\": \"x\",\n  \"profile\": \"dev\",",
            1,
        );
        assert_ne!(dup, text);
        match load_verified(dup.as_bytes()) {
            Err(PlanError::Invalid(m)) => {
                assert!(
                    m.contains("duplicate key `profile`") && m.contains("line"),
                    "{m}"
                )
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn wrong_shape_is_invalid_with_a_position() {
        let mut v = plan_value();
        v["routers"]["whoami"]["surprise"] = json!(true);
        match load_verified(reseal(v).as_bytes()) {
            Err(PlanError::Invalid(m)) => {
                assert!(
                    m.contains("unknown field `surprise`") && m.contains("line"),
                    "{m}"
                )
            }
            other => panic!("{other:?}"),
        }
        let mut v = plan_value();
        v["entrypoints"]["web"]["port"] = json!(70000);
        assert!(matches!(
            load_verified(reseal(v).as_bytes()),
            Err(PlanError::Invalid(_))
        ));
        let mut v = plan_value();
        v.as_object_mut().unwrap().remove("tls");
        assert!(matches!(
            load_verified(reseal(v).as_bytes()),
            Err(PlanError::Invalid(m)) if m.contains("missing field `tls`")
        ));
    }

    #[test]
    fn inconsistent_plans_are_refused_after_the_hash_check() {
        let mut plan = Plan::example();
        if let Some(r) = plan.routers.get_mut("whoami") {
            r.service = Some("missing".into());
        }
        match load_verified(sealed_file(&plan).as_bytes()) {
            Err(PlanError::Inconsistent { pointer, message }) => {
                assert_eq!(pointer, "/routers/whoami/service");
                assert!(message.contains("`missing`"), "{message}");
            }
            other => panic!("{other:?}"),
        }

        let mut plan = Plan::example();
        let extra: Router = plan.routers["whoami"].clone();
        plan.routers.insert("a-second".into(), extra);
        // Not re-indexed: the entry point's list misses the new router.
        assert!(matches!(
            load_verified(sealed_file(&plan).as_bytes()),
            Err(PlanError::Inconsistent { pointer, .. }) if pointer == "/entrypoints/web/routers"
        ));
        plan.index_entrypoint_routers();
        assert!(load_verified(sealed_file(&plan).as_bytes()).is_ok());
    }

    #[test]
    fn router_trees_are_checked() {
        // `whoami` becomes a parent of `child`, which has no entry points.
        let tree = || {
            let mut plan = Plan::example();
            let mut child: Router = plan.routers["whoami"].clone();
            child.entrypoints.clear();
            child.priority = 5;
            plan.routers.insert("child".into(), child);
            if let Some(r) = plan.routers.get_mut("whoami") {
                r.service = None;
                r.children = vec!["child".into()];
            }
            plan.index_entrypoint_routers();
            plan
        };
        assert!(load_verified(sealed_file(&tree()).as_bytes()).is_ok());
        let refused =
            |plan: &Plan, at: &str, says: &str| match load_verified(sealed_file(plan).as_bytes()) {
                Err(PlanError::Inconsistent { pointer, message }) => {
                    assert_eq!(pointer, at);
                    assert!(message.contains(says), "{message}");
                }
                other => panic!("{at}: {other:?}"),
            };
        let mut plan = tree();
        if let Some(r) = plan.routers.get_mut("whoami") {
            r.service = Some("whoami".into());
        }
        refused(&plan, "/routers/whoami/children", "not both");
        let mut plan = tree();
        if let Some(r) = plan.routers.get_mut("whoami") {
            r.children.clear();
        }
        refused(&plan, "/routers/child/entrypoints", "or a parent router");
        let mut plan = tree();
        if let Some(r) = plan.routers.get_mut("child") {
            r.entrypoints = vec!["web".into()];
        }
        plan.index_entrypoint_routers();
        refused(&plan, "/routers/child/entrypoints", "no entry points");
        let mut plan = tree();
        if let Some(r) = plan.routers.get_mut("whoami") {
            r.children = vec!["child".into(), "ghost".into()];
        }
        refused(&plan, "/routers/whoami/children/1", "`ghost`");
        // Children out of matching order, and a cycle.
        let mut plan = tree();
        let mut second: Router = plan.routers["child"].clone();
        second.priority = 9;
        plan.routers.insert("second".into(), second);
        if let Some(r) = plan.routers.get_mut("whoami") {
            r.children = vec!["child".into(), "second".into()];
        }
        refused(&plan, "/routers/whoami/children", "priority descending");
        // Two children of each other, reached from no entry point: only the cycle is wrong.
        let mut plan = tree();
        let mut loop_a: Router = plan.routers["child"].clone();
        loop_a.service = None;
        let mut loop_b = loop_a.clone();
        loop_a.children = vec!["loop-b".into()];
        loop_b.children = vec!["loop-a".into()];
        plan.routers.insert("loop-a".into(), loop_a);
        plan.routers.insert("loop-b".into(), loop_b);
        refused(&plan, "/routers/loop-a/children", "cycle");
    }

    #[test]
    fn internal_services_need_no_definition() {
        let mut plan = Plan::example();
        if let Some(r) = plan.routers.get_mut("whoami") {
            r.service = Some("api@internal".into());
        }
        assert!(load_verified(sealed_file(&plan).as_bytes()).is_ok());
    }

    #[test]
    fn service_cycles_are_refused() {
        use crate::plan::{Failover, Service, Weighted, WeightedRef};
        let mut plan = Plan::example();
        let source = plan.services["whoami"].source.clone();
        plan.services.insert(
            "a".into(),
            Service {
                middlewares: Vec::new(),
                source: source.clone(),
                kind: ServiceKind::Weighted(Weighted {
                    services: vec![
                        WeightedRef {
                            service: "whoami".into(),
                            name: "whoami".into(),
                            weight: 1,
                        },
                        WeightedRef {
                            service: "b".into(),
                            name: "b".into(),
                            weight: 1,
                        },
                    ],
                    health_check: false,
                    sticky: None,
                }),
            },
        );
        plan.services.insert(
            "b".into(),
            Service {
                middlewares: Vec::new(),
                source,
                kind: ServiceKind::Failover(Failover {
                    service: "whoami".into(),
                    fallback: "a".into(),
                    health_check: false,
                    errors: None,
                }),
            },
        );
        assert!(matches!(
            plan.check_consistency(),
            Err(PlanError::Inconsistent { message, .. }) if message.contains("itself")
        ));
        if let ServiceKind::Failover(f) = &mut plan.services.get_mut("b").unwrap().kind {
            f.fallback = "whoami".into();
        }
        plan.check_consistency().unwrap();
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            any::<String>().prop_map(Value::String),
        ];
        leaf.prop_recursive(5, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((any::<String>(), inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    fn mix(seed: u64, key: &str) -> u64 {
        // FNV-1a over the seed and the key: a cheap, seed-dependent permutation of keys.
        let mut h = 0xcbf2_9ce4_8422_2325_u64 ^ seed;
        for b in key.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        h
    }

    proptest! {
        #[test]
        fn canonical_form_ignores_insertion_order_and_parses_back(v in arb_value(), seed in any::<u64>()) {
            let shuffled = reorder(&v, &|k: &str| mix(seed, k));
            let compact = canonical_json(&v).unwrap();
            prop_assert_eq!(&compact, &canonical_json(&shuffled).unwrap());
            let back: Value = serde_json::from_str(&compact).unwrap();
            prop_assert_eq!(&back, &v);
            let pretty = canonical_pretty(&shuffled).unwrap();
            let back: Value = serde_json::from_str(&pretty).unwrap();
            prop_assert_eq!(&back, &v);
            prop_assert_eq!(&parse_strict(&compact).unwrap(), &v);
            prop_assert_eq!(sha256_of(&v).unwrap(), sha256_of(&shuffled).unwrap());
        }

        #[test]
        fn strings_match_serde_json(s in any::<String>()) {
            let mut ours = String::new();
            write_string(&mut ours, &s);
            prop_assert_eq!(ours, serde_json::to_string(&s).unwrap());
        }
    }
}
