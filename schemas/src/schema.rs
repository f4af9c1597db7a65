//! The JSON Schema of the plan, generated from the types (feature `schema`).
//!
//! The committed copy is `schemas/plan.schema.json`; a test fails when it drifts from the types.

use schemars::generate::SchemaSettings;
use serde_json::Value;

use crate::plan::Plan;

/// `$id` of the plan schema.
pub const PLAN_SCHEMA_ID: &str = "https://bridgectl.invalid/schemas/plan.schema.json";

/// File name of the committed schema under `schemas/`.
pub const PLAN_SCHEMA_FILE: &str = "plan.schema.json";

/// The JSON Schema (draft 2020-12) of a plan file.
pub fn plan_schema() -> Value {
    let schema = SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<Plan>();
    let mut value = schema.to_value();
    if let Value::Object(obj) = &mut value {
        obj.insert("$id".into(), Value::String(PLAN_SCHEMA_ID.into()));
        obj.insert(
            "title".into(),
            Value::String("bridgectl routing plan".into()),
        );
    }
    value
}

/// The schema as pretty JSON with a trailing newline, exactly as committed.
pub fn plan_schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&plan_schema()).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// The committed `schemas/plan.schema.json` must equal what the types generate.
    /// Run with `BRIDGECTL_UPDATE_SCHEMAS=1` to rewrite it after changing the types.
    #[test]
    fn committed_plan_schema_matches_the_types() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(PLAN_SCHEMA_FILE);
        let want = plan_schema_text();
        if std::env::var_os("BRIDGECTL_UPDATE_SCHEMAS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "{} is out of date; run `BRIDGECTL_UPDATE_SCHEMAS=1 cargo test -p bridge-plan --features schema schema` and commit it",
            path.display()
        );
    }

    fn property_names(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(obj) => {
                if let Some(Value::Object(props)) = obj.get("properties") {
                    out.extend(props.keys().cloned());
                }
                obj.values().for_each(|c| property_names(c, out));
            }
            Value::Array(items) => items.iter().for_each(|c| property_names(c, out)),
            _ => {}
        }
    }

    /// Every field name of the plan (and every service and middleware kind) is documented in
    /// `docs/plan.md` as `` `name` `` or `` `parent.name` ``.
    #[test]
    fn every_field_is_documented() {
        let doc = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/plan.md"),
        )
        .unwrap();
        let mut names = BTreeSet::new();
        property_names(&plan_schema(), &mut names);
        names.remove("$schema");
        let missing: Vec<_> = names
            .iter()
            .filter(|n| !doc.contains(&format!("`{n}`")) && !doc.contains(&format!(".{n}`")))
            .collect();
        assert!(
            missing.is_empty(),
            "docs/plan.md does not mention {missing:?}"
        );
    }

    /// The example plan validates against its own schema's basic shape: every required property of
    /// the root is present.
    #[test]
    fn example_has_every_root_property() {
        let schema = plan_schema();
        let example = serde_json::to_value(Plan::example()).unwrap();
        let props = schema["properties"].as_object().unwrap();
        for key in props.keys() {
            assert!(example.get(key).is_some(), "example lacks {key}");
        }
    }
}
