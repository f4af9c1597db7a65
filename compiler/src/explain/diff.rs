//! `bridgectl diff`: a structural comparison of two plans' JSON, section by section, ignoring
//! what moves without changing routing (the hash, the inputs and every entity's `source`).

use std::collections::BTreeSet;

use bridge_plan::Plan;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::clean;
use super::table::truncate;

/// What changed between two plans, section by section.
///
/// Built by [`diff`]; `hash`, `inputs` and every entity's `source` are not compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanDiff {
    /// Hash of the old plan, as recorded in it.
    pub old_hash: String,
    /// Hash of the new plan, as recorded in it.
    pub new_hash: String,
    /// Sections with at least one change, in the order `profile`, `plan_version`,
    /// `entrypoints`, `routers`, `services`, `middlewares`, `tls`, `api`, `ping`.
    pub sections: Vec<SectionDiff>,
}

/// The changes in one section of the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionDiff {
    /// Top-level key of the plan, e.g. `routers`.
    pub section: String,
    /// Changed entries, sorted by name.
    pub entries: Vec<EntryDiff>,
}

/// One added, removed or changed entry (a router, a service, `tls.options.<name>`, `api`, …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryDiff {
    /// Name within the section, e.g. `central` in `routers`, `options.strict` in `tls`.
    pub name: String,
    /// Full path of the entry, e.g. `routers.central`.
    pub path: String,
    /// What happened to it.
    pub change: Change,
}

/// What happened to an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The entry is new; `summary` describes it in a few words.
    Added {
        /// A few words, e.g. the rule and service of a router.
        summary: String,
    },
    /// The entry is gone.
    Removed {
        /// A few words, e.g. the rule and service of a router.
        summary: String,
    },
    /// The entry exists in both plans with these fields changed, sorted by path.
    Changed(Vec<FieldChange>),
}

/// One changed value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldChange {
    /// Dotted path, e.g. `services.central.load_balancer.health_check.interval_ms`; list
    /// elements as `[i]`. A service's or middleware's `kind` wrapper is left out of the path.
    pub path: String,
    /// Old value (`None`: absent).
    pub old: Option<Value>,
    /// New value (`None`: absent).
    pub new: Option<Value>,
    /// The value is a list holding the same elements in another order (e.g. an entry point's
    /// router matching order).
    pub order_only: bool,
}

impl PlanDiff {
    /// True when the plans differ at most in their hashes, inputs and source positions.
    pub fn is_empty(&self) -> bool {
        self.sections.iter().all(|s| s.entries.is_empty())
    }

    /// Every reported path: an added or removed entry's path, or each changed field's path.
    pub fn paths(&self) -> Vec<String> {
        let mut out = Vec::new();
        for entry in self.sections.iter().flat_map(|s| &s.entries) {
            match &entry.change {
                Change::Added { .. } | Change::Removed { .. } => out.push(entry.path.clone()),
                Change::Changed(fields) => out.extend(fields.iter().map(|f| f.path.clone())),
            }
        }
        out
    }

    /// A review-friendly text: the two hashes, then per section `+` added, `-` removed and `~`
    /// changed entries with each changed field as `path: old → new` (compact JSON values).
    pub fn render(&self) -> String {
        let mut out = format!(
            "--- old plan {}\n+++ new plan {}\n",
            clean(&self.old_hash),
            clean(&self.new_hash)
        );
        if self.is_empty() {
            out.push_str(
                "no routing changes (hashes, inputs and source positions are not compared)\n",
            );
            return out;
        }
        let (mut added, mut removed, mut changed) = (0, 0, 0);
        for section in &self.sections {
            if section.entries.is_empty() {
                continue;
            }
            out.push('\n');
            out.push_str(&clean(&section.section));
            out.push('\n');
            for entry in &section.entries {
                let name = clean(&entry.name);
                match &entry.change {
                    Change::Added { summary } => {
                        added += 1;
                        out.push_str(&titled("+", &name, summary));
                    }
                    Change::Removed { summary } => {
                        removed += 1;
                        out.push_str(&titled("-", &name, summary));
                    }
                    Change::Changed(fields) => {
                        changed += 1;
                        match fields.as_slice() {
                            [field] if field.path == entry.path => {
                                out.push_str(&format!("  ~ {}\n", field_line(field)));
                            }
                            _ => {
                                out.push_str(&format!("  ~ {name}\n"));
                                for field in fields {
                                    out.push_str(&format!("      {}\n", field_line(field)));
                                }
                            }
                        }
                    }
                }
            }
        }
        let total = added + removed + changed;
        out.push_str(&format!(
            "\n{total} {}: {added} added, {removed} removed, {changed} changed\n",
            if total == 1 { "entry" } else { "entries" }
        ));
        out
    }
}

fn titled(mark: &str, name: &str, summary: &str) -> String {
    let summary = clean(summary);
    if summary.is_empty() {
        format!("  {mark} {name}\n")
    } else {
        format!("  {mark} {name}  {summary}\n")
    }
}

fn field_line(field: &FieldChange) -> String {
    let mut line = format!(
        "{}: {} → {}",
        field.path,
        compact(field.old.as_ref()),
        compact(field.new.as_ref())
    );
    if field.order_only {
        line.push_str("  (order only)");
    }
    line
}

/// Compact canonical JSON (keys sorted), or `(absent)`.
fn compact(value: Option<&Value>) -> String {
    match value {
        None => "(absent)".to_owned(),
        Some(v) => bridge_plan::canonical_json(v).unwrap_or_else(|_| v.to_string()),
    }
}

/// Sections in report order; any other top-level key (a field added to the plan later) follows,
/// sorted, so nothing goes unreported.
const SECTIONS: [&str; 9] = [
    "profile",
    "plan_version",
    "entrypoints",
    "routers",
    "services",
    "middlewares",
    "tls",
    "api",
    "ping",
];
/// Top-level keys that never count as a change.
const IGNORED: [&str; 2] = ["hash", "inputs"];
/// Sections that are maps of named entries carrying a `source`.
const NAMED: [&str; 4] = ["entrypoints", "routers", "services", "middlewares"];

/// What changed from `old` to `new`, ignoring `hash`, `inputs` and every entity's `source`
/// (provenance moves whenever a file is edited; that does not change routing).
pub fn diff(old: &Plan, new: &Plan) -> PlanDiff {
    let a = normalized(old);
    let b = normalized(new);
    let mut keys: Vec<String> = SECTIONS.iter().map(|s| (*s).to_owned()).collect();
    let extra: BTreeSet<&String> = a
        .keys()
        .chain(b.keys())
        .filter(|k| !SECTIONS.contains(&k.as_str()) && !IGNORED.contains(&k.as_str()))
        .collect();
    keys.extend(extra.into_iter().cloned());

    let mut sections = Vec::new();
    for key in keys {
        let (va, vb) = (a.get(&key), b.get(&key));
        if va == vb {
            continue;
        }
        let entries = if NAMED.contains(&key.as_str()) {
            map_entries(&key, &[Seg::Key(key.clone())], va, vb)
        } else if key == "tls" {
            tls_entries(va, vb)
        } else {
            vec![whole_entry(&key, va, vb)]
        };
        if !entries.is_empty() {
            sections.push(SectionDiff {
                section: key,
                entries,
            });
        }
    }
    PlanDiff {
        old_hash: old.hash.clone(),
        new_hash: new.hash.clone(),
        sections,
    }
}

/// The plan as JSON with what is not compared taken out: `source` directly under each entry of
/// the named sections (and only there: a router may be *named* `source`); the `kind` wrapper of
/// services and middlewares lifted into the entry, so paths read `services.x.load_balancer…`;
/// basic-auth password hashes replaced by a short fingerprint.
fn normalized(plan: &Plan) -> Map<String, Value> {
    let Ok(Value::Object(mut top)) = serde_json::to_value(plan) else {
        // Unreachable: a plan always serializes to an object (string keys, integers only).
        return Map::new();
    };
    for section in NAMED {
        let Some(Value::Object(entries)) = top.get_mut(section) else {
            continue;
        };
        for entry in entries.values_mut() {
            let Value::Object(fields) = entry else {
                continue;
            };
            fields.remove("source");
            if let Some(Value::Object(kind)) = fields.remove("kind") {
                for (variant, body) in kind {
                    fields.insert(variant, body);
                }
            }
            if let Some(Value::Array(users)) = fields
                .get_mut("basic_auth")
                .and_then(|b| b.get_mut("users"))
            {
                for user in users.iter_mut() {
                    if let Value::String(text) = user {
                        *text = redact_user(text);
                    }
                }
            }
        }
    }
    top
}

/// `user:hash` → `user:(hash 1a2b3c4d)`: a fingerprint shows that a password changed without
/// printing the hash.
fn redact_user(entry: &str) -> String {
    let (user, hash) = entry.split_once(':').unwrap_or((entry, ""));
    let digest = Sha256::digest(hash.as_bytes());
    let hex: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("{user}:(hash {hex})")
}

/// Entries of a map (`routers`, `tls.options`, …) under `prefix`, named by key.
fn map_entries(
    name_prefix: &str,
    prefix: &[Seg],
    a: Option<&Value>,
    b: Option<&Value>,
) -> Vec<EntryDiff> {
    let empty = Map::new();
    let ma = a.and_then(Value::as_object).unwrap_or(&empty);
    let mb = b.and_then(Value::as_object).unwrap_or(&empty);
    let names: BTreeSet<&String> = ma.keys().chain(mb.keys()).collect();
    let mut entries = Vec::new();
    for name in names {
        let mut path = prefix.to_vec();
        path.push(Seg::Key(name.clone()));
        let display = if NAMED.contains(&name_prefix) {
            name.clone()
        } else {
            format!("{name_prefix}.{name}")
        };
        let summary_of = |v: &Value| summary(prefix, v);
        let change = match (ma.get(name), mb.get(name)) {
            (None, Some(v)) => Change::Added {
                summary: summary_of(v),
            },
            (Some(v), None) => Change::Removed {
                summary: summary_of(v),
            },
            (Some(x), Some(y)) if x != y => Change::Changed(fields(&path, Some(x), Some(y))),
            _ => continue,
        };
        entries.push(EntryDiff {
            name: display,
            path: render_path(&path),
            change,
        });
    }
    entries
}

/// `tls`: each option set is an entry (`options.<name>`); every other member (`certificates`,
/// `default_certificate`) is an entry of its own.
fn tls_entries(a: Option<&Value>, b: Option<&Value>) -> Vec<EntryDiff> {
    let empty = Map::new();
    let ma = a.and_then(Value::as_object).unwrap_or(&empty);
    let mb = b.and_then(Value::as_object).unwrap_or(&empty);
    let keys: BTreeSet<&String> = ma.keys().chain(mb.keys()).collect();
    let mut entries = Vec::new();
    for key in keys {
        let (x, y) = (ma.get(key), mb.get(key));
        if x == y {
            continue;
        }
        let path = [Seg::Key("tls".into()), Seg::Key(key.clone())];
        if key == "options" {
            entries.extend(map_entries("options", &path, x, y));
        } else {
            entries.push(EntryDiff {
                name: key.clone(),
                path: render_path(&path),
                change: Change::Changed(fields(&path, x, y)),
            });
        }
    }
    entries
}

/// A section compared as one entry: `profile`, `plan_version`, `api`, `ping`. An optional
/// section switched on or off is added or removed.
fn whole_entry(key: &str, a: Option<&Value>, b: Option<&Value>) -> EntryDiff {
    let path = [Seg::Key(key.to_owned())];
    let present = |v: Option<&Value>| v.is_some_and(|v| !v.is_null());
    let change = match (present(a), present(b), a, b) {
        (false, true, _, Some(v)) if v.is_object() => Change::Added {
            summary: summary(&path, v),
        },
        (true, false, Some(v), _) if v.is_object() => Change::Removed {
            summary: summary(&path, v),
        },
        _ => Change::Changed(fields(&path, a, b)),
    };
    EntryDiff {
        name: key.to_owned(),
        path: render_path(&path),
        change,
    }
}

/// A few words about an added or removed entry.
fn summary(prefix: &[Seg], v: &Value) -> String {
    let text = |key: &str| v.get(key).and_then(Value::as_str).unwrap_or_default();
    let section: Vec<&str> = prefix
        .iter()
        .filter_map(|s| match s {
            Seg::Key(k) => Some(k.as_str()),
            Seg::Index(_) => None,
        })
        .collect();
    match section.as_slice() {
        ["entrypoints"] => {
            let tls = v
                .get("tls")
                .and_then(|t| t.get("options"))
                .and_then(Value::as_str)
                .map_or_else(|| "plain".to_owned(), |o| format!("tls:{o}"));
            format!("{} {tls}", text("address"))
        }
        ["routers"] => {
            let eps: Vec<&str> = v
                .get("entrypoints")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            format!(
                "{} → {} on {}",
                truncate(&clean(text("rule")), 80),
                text("service"),
                eps.join(", ")
            )
        }
        ["services"] | ["middlewares"] => v
            .as_object()
            .map(|o| o.keys().cloned().collect::<Vec<_>>().join(", "))
            .unwrap_or_default(),
        ["tls", "options"] => format!("min {}", text("min_version")),
        ["api"] | ["ping"] => format!("on entry point {}", text("entrypoint")),
        _ => String::new(),
    }
}

/// A path segment: an object key or a list index. Sorting by segments orders indexes
/// numerically (`[2]` before `[10]`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Seg {
    Key(String),
    Index(usize),
}

fn render_path(path: &[Seg]) -> String {
    let mut out = String::new();
    for (i, seg) in path.iter().enumerate() {
        match seg {
            Seg::Index(n) => out.push_str(&format!("[{n}]")),
            Seg::Key(k) => {
                if i > 0 {
                    out.push('.');
                }
                let plain = !k.is_empty()
                    && !k.chars().any(|c| {
                        matches!(c, '.' | '[' | ']' | '"') || c.is_whitespace() || c.is_control()
                    });
                if plain {
                    out.push_str(k);
                } else {
                    out.push_str(&Value::String(k.clone()).to_string());
                }
            }
        }
    }
    out
}

/// The changed fields below `path`, sorted by path.
fn fields(path: &[Seg], a: Option<&Value>, b: Option<&Value>) -> Vec<FieldChange> {
    let mut found = Vec::new();
    let mut at = path.to_vec();
    walk(&mut at, a, b, &mut found);
    found.sort_by(|x, y| x.0.cmp(&y.0));
    found
        .into_iter()
        .map(|(segs, old, new, order_only)| FieldChange {
            path: render_path(&segs),
            old,
            new,
            order_only,
        })
        .collect()
}

type Found = (Vec<Seg>, Option<Value>, Option<Value>, bool);

/// Objects are compared member by member; lists holding objects or lists element by element when
/// their lengths match; anything else (scalars, lists of scalars, lists whose length changed) as
/// a whole.
fn walk(path: &mut Vec<Seg>, a: Option<&Value>, b: Option<&Value>, out: &mut Vec<Found>) {
    if a == b {
        return;
    }
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for key in keys {
                path.push(Seg::Key(key.clone()));
                walk(path, x.get(key), y.get(key), out);
                path.pop();
            }
        }
        (Some(Value::Array(x)), Some(Value::Array(y)))
            if x.len() == y.len() && x.iter().chain(y).any(is_container) =>
        {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                path.push(Seg::Index(i));
                walk(path, Some(p), Some(q), out);
                path.pop();
            }
        }
        _ => {
            let order_only = match (a, b) {
                (Some(Value::Array(x)), Some(Value::Array(y))) => same_elements(x, y),
                _ => false,
            };
            out.push((path.clone(), a.cloned(), b.cloned(), order_only));
        }
    }
}

fn is_container(v: &Value) -> bool {
    v.is_object() || v.is_array()
}

fn same_elements(x: &[Value], y: &[Value]) -> bool {
    let sorted = |v: &[Value]| {
        let mut items: Vec<String> = v.iter().map(|e| compact(Some(e))).collect();
        items.sort();
        items
    };
    x.len() == y.len() && sorted(x) == sorted(y)
}
