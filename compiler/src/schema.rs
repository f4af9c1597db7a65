//! JSON Schemas generated from the model, and a small cursor to walk them.
//!
//! The schemas in `schemas/*.schema.json` are produced here and nowhere else (a test fails when the
//! committed files drift). The canonicaliser and the validator use the same in-memory schemas, so the
//! editor experience and `bridgectl check` can never disagree about which keys exist.

use std::sync::OnceLock;

use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

use crate::model::{dynamic::DynamicConfig, static_config::StaticConfig};

/// Which of the two Traefik configuration kinds a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConfigKind {
    /// `traefik.yml`: entry points, providers, API.
    Static,
    /// File-provider files: routers, services, middlewares, TLS.
    Dynamic,
}

impl ConfigKind {
    /// Lower-case name, as used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigKind::Static => "static",
            ConfigKind::Dynamic => "dynamic",
        }
    }

    /// The file name under `schemas/`.
    pub fn schema_file_name(self) -> &'static str {
        match self {
            ConfigKind::Static => "traefik-static.schema.json",
            ConfigKind::Dynamic => "traefik-dynamic.schema.json",
        }
    }
}

fn generate<T: schemars::JsonSchema>(kind: ConfigKind, title: &str) -> Value {
    let schema = SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    let mut value = schema.to_value();
    strip_null(&mut value);
    if let Value::Object(obj) = &mut value {
        obj.insert(
            "$id".into(),
            Value::String(format!(
                "https://bridgectl.invalid/schemas/{}",
                kind.schema_file_name()
            )),
        );
        obj.insert("title".into(), Value::String(title.into()));
    }
    value
}

/// Removes the `null` alternative schemars adds for `Option<T>`: Traefik skips null values and the
/// canonicaliser drops them, so the schema states what a real value must look like. This also keeps
/// validation errors precise (an `anyOf` wrapper would hide the real cause).
fn strip_null(v: &mut Value) {
    match v {
        Value::Object(obj) => {
            if let Some(Value::Array(types)) = obj.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    obj.insert("type".into(), only);
                }
            }
            let is_null = |s: &Value| {
                s.get("type") == Some(&Value::String("null".into()))
                    && s.as_object().is_some_and(|o| o.len() == 1)
            };
            if let Some(Value::Array(alts)) = obj.get("anyOf")
                && alts.len() == 2
                && alts.iter().any(is_null)
            {
                let keep = alts.iter().find(|a| !is_null(a)).cloned();
                obj.remove("anyOf");
                if let Some(Value::Object(inner)) = keep {
                    for (k, val) in inner {
                        obj.entry(k).or_insert(val);
                    }
                }
            }
            for child in obj.values_mut() {
                strip_null(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_null),
        _ => {}
    }
}

/// The generated schema for a configuration kind.
pub fn schema(kind: ConfigKind) -> &'static Value {
    static STATIC: OnceLock<Value> = OnceLock::new();
    static DYNAMIC: OnceLock<Value> = OnceLock::new();
    match kind {
        ConfigKind::Static => STATIC.get_or_init(|| {
            generate::<StaticConfig>(kind, "Traefik v3 static configuration (bridgectl)")
        }),
        ConfigKind::Dynamic => DYNAMIC.get_or_init(|| {
            generate::<DynamicConfig>(
                kind,
                "Traefik v3 file-provider dynamic configuration (bridgectl)",
            )
        }),
    }
}

/// The schema as pretty JSON with a trailing newline, exactly as committed under `schemas/`.
pub fn schema_text(kind: ConfigKind) -> String {
    let mut text = serde_json::to_string_pretty(schema(kind)).unwrap_or_default();
    text.push('\n');
    text
}

/// A view on one place in a schema: the union of every alternative reachable through `$ref`,
/// `anyOf`, `oneOf` and `allOf`, which is what "the keys allowed here" means for Traefik's model.
///
/// Views are computed once per schema node and cached (per thread): the canonicaliser asks for the
/// same few hundred nodes hundreds of thousands of times on a large configuration.
#[derive(Debug, Clone)]
pub struct Cursor {
    root: &'static Value,
    info: std::rc::Rc<Info>,
}

#[derive(Debug)]
struct Info {
    parts: Vec<&'static Map<String, Value>>,
    types: Option<Vec<&'static str>>,
    props: Vec<(&'static str, &'static Value)>,
    map_values: Option<&'static Value>,
    items: Option<&'static Value>,
    closed: bool,
    duration: bool,
}

thread_local! {
    static CACHE: std::cell::RefCell<std::collections::HashMap<usize, std::rc::Rc<Info>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

static ANY: Value = Value::Bool(true);

impl Cursor {
    /// The cursor at the root of a schema.
    pub fn root(root: &'static Value) -> Self {
        Self::at(root, root)
    }

    /// A cursor that accepts anything.
    pub fn any(root: &'static Value) -> Self {
        Self::at(root, &ANY)
    }

    /// The cursor at a subschema of `root`.
    pub fn at(root: &'static Value, schema: &'static Value) -> Self {
        let key = schema as *const Value as usize;
        let info = CACHE.with(|c| c.borrow().get(&key).cloned());
        let info = info.unwrap_or_else(|| {
            let info = std::rc::Rc::new(Info::compute(root, schema));
            CACHE.with(|c| c.borrow_mut().insert(key, info.clone()));
            info
        });
        Self { root, info }
    }

    /// True when the schema accepts anything (no constraints known).
    pub fn is_open(&self) -> bool {
        self.info.parts.is_empty() || self.info.types.is_none() && self.info.props.is_empty()
    }

    /// Declared JSON types, or `None` when unconstrained.
    pub fn types(&self) -> Option<&[&'static str]> {
        self.info.types.as_deref()
    }

    /// True when the schema accepts the JSON type (`"integer"` is accepted by `"number"` too).
    pub fn accepts(&self, ty: &str) -> bool {
        match &self.info.types {
            None => true,
            Some(ts) => ts
                .iter()
                .any(|t| *t == ty || (*t == "number" && ty == "integer")),
        }
    }

    /// Named properties (struct fields): `(name, subschema)`.
    pub fn properties(&self) -> &[(&'static str, &'static Value)] {
        &self.info.props
    }

    /// The schema of map values, when this is a map (`additionalProperties` is a schema).
    pub fn map_values(&self) -> Option<Cursor> {
        self.info.map_values.map(|v| Cursor::at(self.root, v))
    }

    /// True when unknown keys are rejected here.
    pub fn is_closed(&self) -> bool {
        self.info.closed
    }

    /// The schema of list items.
    pub fn items(&self) -> Option<Cursor> {
        self.info.items.map(|v| Cursor::at(self.root, v))
    }

    /// A schema extension or annotation on any alternative (`x-allow-empty`, `deprecated`, ...).
    pub fn extension(&self, name: &str) -> Option<&'static Value> {
        self.info.parts.iter().find_map(|p| p.get(name))
    }

    /// True when this place is a [`crate::model::Duration`].
    pub fn is_duration(&self) -> bool {
        self.info.duration
    }

    /// Descends into a property by its exact name.
    pub fn property(&self, name: &str) -> Option<Cursor> {
        self.info
            .props
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| Cursor::at(self.root, v))
    }

    /// Descends into a subschema of this schema's document.
    pub fn child(&self, schema: &'static Value) -> Cursor {
        Cursor::at(self.root, schema)
    }
}

impl Info {
    fn compute(root: &'static Value, schema: &'static Value) -> Self {
        let mut parts = Vec::new();
        collect(root, schema, &mut parts, 0);
        let mut types = Vec::new();
        let mut any_typed = false;
        let mut props: Vec<(&'static str, &'static Value)> = Vec::new();
        for p in &parts {
            match p.get("type") {
                Some(Value::String(t)) => {
                    any_typed = true;
                    types.push(t.as_str());
                }
                Some(Value::Array(ts)) => {
                    any_typed = true;
                    types.extend(ts.iter().filter_map(Value::as_str));
                }
                _ => {
                    if p.contains_key("properties") || p.contains_key("additionalProperties") {
                        any_typed = true;
                        types.push("object");
                    }
                }
            }
            if let Some(Value::Object(ps)) = p.get("properties") {
                for (k, v) in ps {
                    if !props.iter().any(|(n, _)| *n == k.as_str()) {
                        props.push((k.as_str(), v));
                    }
                }
            }
        }
        let map_values = parts
            .iter()
            .find_map(|p| match p.get("additionalProperties") {
                Some(v @ Value::Object(_)) => Some(v),
                _ => None,
            });
        let closed = parts
            .iter()
            .any(|p| p.get("additionalProperties") == Some(&Value::Bool(false)));
        let items = parts.iter().find_map(|p| p.get("items"));
        let duration = parts.iter().any(|p| {
            p.get("description")
                .and_then(Value::as_str)
                .is_some_and(|d| d.starts_with("A Go duration"))
                && p.contains_key("anyOf")
        });
        Self {
            parts,
            types: any_typed.then_some(types),
            props,
            map_values,
            items,
            closed,
            duration,
        }
    }
}

fn collect<'a>(
    root: &'a Value,
    schema: &'a Value,
    out: &mut Vec<&'a Map<String, Value>>,
    depth: u32,
) {
    if depth > 32 {
        return;
    }
    let Value::Object(obj) = schema else { return };
    out.push(obj);
    if let Some(Value::String(r)) = obj.get("$ref")
        && let Some(target) = r.strip_prefix('#').and_then(|p| root.pointer(p))
    {
        collect(root, target, out, depth + 1);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(alts)) = obj.get(key) {
            for alt in alts {
                collect(root, alt, out, depth + 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_are_closed_and_describe_traefik_keys() {
        let dynamic = schema(ConfigKind::Dynamic);
        let root = Cursor::root(dynamic);
        assert!(root.property("http").is_some());
        let router = root
            .property("http")
            .and_then(|h| h.property("routers"))
            .and_then(|r| r.map_values())
            .expect("routers map");
        assert!(router.is_closed());
        assert!(router.property("rule").is_some());
        assert!(router.property("entryPoints").is_some());
        let st = Cursor::root(schema(ConfigKind::Static));
        assert!(st.property("entryPoints").is_some());
    }

    #[test]
    fn durations_are_recognised() {
        let root = Cursor::root(schema(ConfigKind::Dynamic));
        let hc = root
            .property("http")
            .and_then(|h| h.property("services"))
            .and_then(|s| s.map_values())
            .and_then(|s| s.property("loadBalancer"))
            .and_then(|l| l.property("healthCheck"))
            .expect("healthCheck");
        assert!(hc.property("interval").expect("interval").is_duration());
        assert!(!hc.property("path").expect("path").is_duration());
    }
}

#[cfg(test)]
mod drift {
    use super::*;

    /// The committed schemas under `schemas/` must equal what the model generates.
    /// Run with `BRIDGECTL_UPDATE_SCHEMAS=1` to rewrite them after changing the model.
    #[test]
    fn committed_schemas_match_the_model() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas");
        for kind in [ConfigKind::Static, ConfigKind::Dynamic] {
            let path = dir.join(kind.schema_file_name());
            let want = schema_text(kind);
            if std::env::var_os("BRIDGECTL_UPDATE_SCHEMAS").is_some() {
                std::fs::write(&path, &want).unwrap();
            }
            let have = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                have == want,
                "{} is out of date; run `BRIDGECTL_UPDATE_SCHEMAS=1 cargo test -p bridgectl schema` and commit it",
                path.display()
            );
        }
    }
}
