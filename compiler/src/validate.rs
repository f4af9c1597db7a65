//! Schema validation of a canonical value, and the step into the typed model.
//!
//! jsonschema checks the canonical JSON against the generated schema and every error is mapped back to
//! the source through the span index. Entities (a router, a service, an entry point ...) that fail are
//! then cut out, so the typed model can still be built from the rest and the semantic checks run on
//! everything that is valid: one run reports every problem.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use jsonschema::error::ValidationErrorKind;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::canon::{Canonical, display_path};
use crate::diag::{Code, Diagnostic};
use crate::schema::{ConfigKind, schema};

fn validator(kind: ConfigKind) -> Option<&'static jsonschema::Validator> {
    static STATIC: OnceLock<Option<jsonschema::Validator>> = OnceLock::new();
    static DYNAMIC: OnceLock<Option<jsonschema::Validator>> = OnceLock::new();
    let cell = match kind {
        ConfigKind::Static => &STATIC,
        ConfigKind::Dynamic => &DYNAMIC,
    };
    cell.get_or_init(|| jsonschema::validator_for(schema(kind)).ok())
        .as_ref()
}

/// The JSON pointer of the entity containing `pointer` (a router, a service, an entry point ...).
pub fn entity_of(kind: ConfigKind, pointer: &str) -> String {
    let segs: Vec<&str> = pointer.split('/').skip(1).collect();
    let depth = match kind {
        ConfigKind::Dynamic => match segs.as_slice() {
            ["http" | "tcp" | "udp", _, _, ..] => 3,
            ["tls", "options" | "stores" | "certificates", _, ..] => 3,
            _ => 1,
        },
        ConfigKind::Static => match segs.as_slice() {
            ["entryPoints" | "certificatesResolvers", _, ..] => 2,
            _ => 1,
        },
    };
    let n = depth.min(segs.len());
    segs[..n].iter().fold(String::new(), |mut acc, s| {
        acc.push('/');
        acc.push_str(s);
        acc
    })
}

/// Validates, reports, and returns the pointers of the entities that had errors.
pub fn validate(
    kind: ConfigKind,
    canon: &Canonical,
    diags: &mut Vec<Diagnostic>,
) -> BTreeSet<String> {
    let mut broken = BTreeSet::new();
    let Some(v) = validator(kind) else {
        diags.push(Diagnostic::error(
            Code::Internal,
            "the generated JSON Schema does not compile",
        ));
        return broken;
    };
    for err in v.iter_errors(&canon.value) {
        let pointer = err.instance_path().as_str().to_owned();
        let (code, message, at_key, pointer) = describe(&err, &pointer);
        let span = if at_key {
            canon.key_span(&pointer)
        } else {
            canon.value_span(&pointer)
        };
        // A bad optional value is cut alone so the rest of its entity is still checked; structural
        // problems (missing keys, several kinds) cut the whole entity.
        let structural = matches!(code, Code::MissingKey | Code::KindCount | Code::UnknownKey);
        if structural || pointer.split('/').count() <= 2 {
            broken.insert(entity_of(kind, &pointer));
        } else {
            broken.insert(pointer.clone());
        }
        diags.push(Diagnostic::error(code, message).at(span).pointer(pointer));
    }
    broken
}

fn describe(err: &jsonschema::ValidationError<'_>, pointer: &str) -> (Code, String, bool, String) {
    let here = display_path(pointer);
    match err.kind() {
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            (
                Code::MissingKey,
                format!("`{here}` is missing the required key `{name}`"),
                true,
                pointer.to_owned(),
            )
        }
        ValidationErrorKind::MaxProperties { .. } => (
            Code::KindCount,
            format!(
                "`{here}` defines more than one kind; Traefik requires exactly one (\"multi-types ... not supported\")"
            ),
            true,
            pointer.to_owned(),
        ),
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let first = unexpected.first().cloned().unwrap_or_default();
            let p = format!("{pointer}/{}", crate::canon::escape(&first));
            (
                Code::UnknownKey,
                format!("unknown key `{first}` in `{here}`"),
                true,
                p,
            )
        }
        ValidationErrorKind::Type { .. } => (
            Code::InvalidType,
            format!("`{here}`: {err}"),
            false,
            pointer.to_owned(),
        ),
        _ => (
            Code::InvalidValue,
            format!("`{here}`: {err}"),
            false,
            pointer.to_owned(),
        ),
    }
}

/// Removes broken entities and deserializes the rest into the typed model.
pub fn into_model<T: DeserializeOwned + Default>(
    canon: &Canonical,
    broken: &BTreeSet<String>,
    diags: &mut Vec<Diagnostic>,
) -> T {
    if broken.is_empty() {
        // The common case: deserialize straight from the canonical value, no copy.
        return T::deserialize(&canon.value).unwrap_or_else(|e| {
            diags.push(Diagnostic::error(
                Code::Internal,
                format!("the configuration passed the schema but not the model: {e}"),
            ));
            T::default()
        });
    }
    let mut value = canon.value.clone();
    // Deepest first, so array indices of shallower pointers stay valid.
    let mut ordered: Vec<&String> = broken.iter().collect();
    ordered.sort_by_key(|p| std::cmp::Reverse(p.matches('/').count()));
    for pointer in ordered {
        remove(&mut value, pointer);
    }
    match serde_json::from_value::<T>(value) {
        Ok(m) => m,
        Err(_) if !broken.is_empty() => {
            // Cutting single values was not enough (a required value was cut): cut whole entities.
            let kind = if std::any::type_name::<T>().contains("Static") {
                ConfigKind::Static
            } else {
                ConfigKind::Dynamic
            };
            let entities: BTreeSet<String> = broken.iter().map(|p| entity_of(kind, p)).collect();
            let mut value = canon.value.clone();
            for pointer in &entities {
                remove(&mut value, pointer);
            }
            serde_json::from_value::<T>(value).unwrap_or_else(|e| {
                diags.push(Diagnostic::error(
                    Code::Internal,
                    format!("the configuration passed the schema but not the model: {e}"),
                ));
                T::default()
            })
        }
        Err(e) => {
            diags.push(Diagnostic::error(
                Code::Internal,
                format!("the configuration passed the schema but not the model: {e}"),
            ));
            T::default()
        }
    }
}

fn remove(value: &mut Value, pointer: &str) {
    if pointer.is_empty() {
        *value = Value::Object(Default::default());
        return;
    }
    let Some(idx) = pointer.rfind('/') else {
        return;
    };
    let (parent, last) = (&pointer[..idx], &pointer[idx + 1..]);
    let last = last.replace("~1", "/").replace("~0", "~");
    match value.pointer_mut(parent) {
        Some(Value::Object(m)) => {
            m.remove(&last);
        }
        Some(Value::Array(a)) => {
            if let Ok(i) = last.parse::<usize>()
                && i < a.len()
            {
                a.remove(i);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_are_found_from_deep_pointers() {
        assert_eq!(
            entity_of(
                ConfigKind::Dynamic,
                "/http/services/a/loadBalancer/servers/0/url"
            ),
            "/http/services/a"
        );
        assert_eq!(
            entity_of(ConfigKind::Dynamic, "/tls/options/x/minVersion"),
            "/tls/options/x"
        );
        assert_eq!(
            entity_of(ConfigKind::Static, "/entryPoints/web/address"),
            "/entryPoints/web"
        );
        assert_eq!(entity_of(ConfigKind::Static, "/api/insecure"), "/api");
    }
}
