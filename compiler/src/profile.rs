//! Profiles: named overlays that turn the one configuration the team edits into a deployment.
//!
//! A profile is data (`profiles/dev.yml`, `profiles/prod.yml`, or any file given by path): a Traefik
//! static overlay and dynamic overlay (validated with the same schemas as user files), a few declared
//! transforms that an overlay cannot express (move routers to another entry point, add a middleware
//! to every router of some entry points), and policy switches checked in `crate::policy`. Values in
//! `{{ }}` are filled from `--var`: every variable under `vars.required` must be given, and exactly
//! one alternative of `vars.one_of` completely (`tls_cert` + `tls_key`, or `cert_resolver`). A
//! section `when.<var>` holds `static`/`dynamic`/`policy` overlays that apply only when `<var>` is
//! given; when it is not, the section is blanked before rendering (its `{{ }}` are never rendered)
//! and its lines stay in place, so every position in the profile stays right.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

use crate::canon::{Canonical, Place, canonicalize, raw_json};
use crate::diag::{Code, Diagnostic};
use crate::loaded::DynamicFile;
use crate::schema::ConfigKind;
use crate::source::{FileId, SourceFile, SourceMap, Span};
use crate::yaml::{Node, NodeKind};
use crate::{template, validate};

/// The profiles shipped inside the binary (the files under `profiles/`).
pub const BUILTIN: &[(&str, &str)] = &[
    ("dev", include_str!("../../profiles/dev.yml")),
    ("prod", include_str!("../../profiles/prod.yml")),
];

/// Which profile to use: a built-in name or a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProfileSelector {
    /// `dev` or `prod`.
    Builtin(String),
    /// A profile file.
    File(PathBuf),
}

impl ProfileSelector {
    /// `dev`/`prod` select a built-in profile; anything else is a path.
    pub fn parse(s: &str) -> Self {
        if BUILTIN.iter().any(|(n, _)| *n == s) {
            Self::Builtin(s.to_owned())
        } else {
            Self::File(PathBuf::from(s))
        }
    }
}

/// Variables a profile needs.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileVars {
    /// Name → what it is for (shown when missing).
    #[serde(default)]
    pub required: BTreeMap<String, String>,
    /// Name → value used when `--var` does not give one.
    #[serde(default)]
    pub defaults: BTreeMap<String, String>,
    /// Alternatives, each name → what it is for: exactly one must be given, completely.
    #[serde(default)]
    pub one_of: Vec<BTreeMap<String, String>>,
}

/// The overlays of one `when.<var>` section, merged onto the profile's own when `<var>` is given:
/// mappings key by key, anything else replaced.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct WhenSection {
    #[serde(default, rename = "static")]
    _static: Value,
    #[serde(default, rename = "dynamic")]
    _dynamic: Value,
    #[serde(default, rename = "policy")]
    _policy: Value,
}

/// The sections a `when.<var>` may hold.
const WHEN_SECTIONS: [&str; 3] = ["static", "dynamic", "policy"];

/// A change an overlay cannot express.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Transform {
    /// Routers on `from` are served on `to` instead. Moved routers without `tls` get one: the
    /// options `tls_options` (when given), and the `certResolver` and `domains` of `to`'s
    /// `http.tls` (what Traefik gives a router written on `to` without `tls`).
    MoveRouters {
        /// Entry point the routers leave.
        from: String,
        /// Entry point they move to.
        to: String,
        /// TLS options for moved routers that have no `tls` yet.
        #[serde(default)]
        tls_options: Option<String>,
    },
    /// Every router served on one of `entrypoints` gets `middleware` last in its chain.
    AppendMiddleware {
        /// The middleware name.
        middleware: String,
        /// Entry points whose routers get it.
        entrypoints: Vec<String>,
    },
}

/// Certificate requirements.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CertificatePolicy {
    /// PEM certificate chain file.
    pub cert: String,
    /// PEM private key file.
    pub key: String,
    /// Host name the certificate must cover.
    pub domain: String,
    /// Warn when the certificate expires within this many days.
    #[serde(default = "default_expiry_days")]
    pub warn_expiry_days: i64,
}

fn default_expiry_days() -> i64 {
    30
}

/// Certificates from an ACME resolver of the static configuration instead of files.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResolverPolicy {
    /// The resolver (`certificatesResolvers.<name>`): it must exist and be ACME.
    pub resolver: String,
    /// Host name the resolver must obtain a certificate for.
    pub domain: String,
}

/// Policy switches; each is checked by `crate::policy`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// `api.insecure: true` is an error.
    #[serde(default)]
    pub deny_insecure_api: bool,
    /// Every router must be served over TLS (entry points that redirect everything are exempt).
    #[serde(default)]
    pub require_tls: bool,
    /// The dashboard and API must sit behind basicAuth.
    #[serde(default)]
    pub dashboard_requires_auth: bool,
    /// Lowest TLS version any TLS options may allow: "1.2" or "1.3".
    #[serde(default)]
    pub min_tls_version: Option<String>,
    /// Certificate/key checks.
    #[serde(default)]
    pub certificate: Option<CertificatePolicy>,
    /// Certificate resolver checks.
    #[serde(default)]
    pub certificate_resolver: Option<ResolverPolicy>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileHead {
    description: String,
    #[serde(default)]
    vars: ProfileVars,
    #[serde(default, rename = "static")]
    _static: Value,
    #[serde(default, rename = "dynamic")]
    _dynamic: Value,
    #[serde(default)]
    transforms: Vec<Transform>,
    #[serde(default)]
    policy: Policy,
}

/// A profile ready to apply.
#[derive(Debug, Clone)]
pub struct Profile {
    /// Its name (`dev`, `prod`, or the file name).
    pub name: String,
    /// The profile's source file (rendered).
    pub file: FileId,
    /// One line saying what it does.
    pub description: String,
    /// Merged onto the static configuration.
    pub static_overlay: Canonical,
    /// Added as one more dynamic file.
    pub dynamic: DynamicFile,
    /// Transforms, in order.
    pub transforms: Vec<Transform>,
    /// Policy switches.
    pub policy: Policy,
    /// The variables in effect (given and defaults).
    pub vars: BTreeMap<String, String>,
    /// The `policy` mapping with the `when` overlays in effect, for locating policy findings.
    policy_node: Option<Node>,
}

impl Profile {
    /// Where the policy value at `path` (`["certificate_resolver", "resolver"]`) is written.
    pub fn policy_span(&self, path: &[&str]) -> Option<Span> {
        let mut node = self.policy_node.as_ref()?;
        for key in path {
            node = entry(node, key)?;
        }
        Some(node.span)
    }
}

/// Problems loading a profile that stop the run (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The profile file could not be read.
    #[error("cannot read profile {path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

fn entry<'a>(node: &'a Node, key: &str) -> Option<&'a Node> {
    match &node.kind {
        NodeKind::Map(entries) => entries.iter().find(|(k, _)| k.text == key).map(|(_, v)| v),
        _ => None,
    }
}

fn entry_key_span(node: &Node, key: &str) -> Option<Span> {
    match &node.kind {
        NodeKind::Map(entries) => entries
            .iter()
            .find(|(k, _)| k.text == key)
            .map(|(k, _)| k.span),
        _ => None,
    }
}

/// Loads, checks variables, renders and parses a profile. Findings go to `diags`; `Ok(None)` means
/// the profile could not be used (the reasons are in `diags`).
pub fn load(
    selector: &ProfileSelector,
    given: &BTreeMap<String, String>,
    sources: &mut SourceMap,
    diags: &mut Vec<Diagnostic>,
) -> Result<Option<Profile>, ProfileError> {
    let (name, display, text) = match selector {
        ProfileSelector::Builtin(n) => {
            let text = BUILTIN
                .iter()
                .find(|(b, _)| b == n)
                .map(|(_, t)| *t)
                .unwrap_or_default();
            (n.clone(), format!("profiles/{n}.yml"), text.to_owned())
        }
        ProfileSelector::File(p) => {
            let text = std::fs::read_to_string(p).map_err(|source| ProfileError::Io {
                path: p.clone(),
                source,
            })?;
            let name = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            (name, p.to_string_lossy().into_owned(), text)
        }
    };
    let path = PathBuf::from(&display);
    // 1. The unrendered text is valid YAML (templates sit inside strings): read the variable list.
    //    Comment lines are blanked first; positions in `raw` refer to `clean`.
    let clean = template::blank_comment_lines(&text);
    let raw_id =
        sources.add(SourceFile::new(display.clone(), path.clone(), text.clone()).outside_dir(true));
    let raw = match crate::yaml::parse(raw_id, &clean) {
        Ok(Some(n)) => n,
        Ok(None) => {
            diags.push(
                Diagnostic::error(Code::YamlNotMapping, format!("profile {display} is empty"))
                    .at(Some(Span::new(raw_id, 0, 0))),
            );
            return Ok(None);
        }
        Err(d) => {
            diags.push(d);
            return Ok(None);
        }
    };
    let Some(when) = when_sections(&raw, &clean, &display, diags) else {
        return Ok(None);
    };
    // Every `when` overlay at once: their shape is checked whichever variables are given.
    let head: ProfileHead = match serde_json::from_value(raw_json(&effective(&raw, |_| true))) {
        Ok(h) => h,
        Err(e) => {
            diags.push(
                Diagnostic::error(Code::InvalidValue, format!("profile {display}: {e}"))
                    .at(Some(raw.span))
                    .hint("a profile has: description, vars, static, dynamic, transforms, policy, when"),
            );
            return Ok(None);
        }
    };
    if !declarations_ok(&name, &head.vars, &raw, &when, diags) {
        return Ok(None);
    }
    let mut vars = head.vars.defaults.clone();
    vars.extend(given.iter().map(|(k, v)| (k.clone(), v.clone())));
    if !vars_given(&name, &head.vars, &vars, &raw, diags) {
        return Ok(None);
    }
    // 2. Render and parse for real; positions now refer to the rendered text. `when` sections of
    //    variables not given are blanked first (their `{{ }}` would be undefined).
    let to_render = if when.iter().any(|(v, _)| !vars.contains_key(v)) {
        blank_absent_when(&clean, &raw, &vars)
    } else {
        text
    };
    let rendered = match template::render(raw_id, &to_render, &vars) {
        Ok(r) => r,
        Err(ds) => {
            diags.extend(ds);
            return Ok(None);
        }
    };
    let id = sources.replace(
        raw_id,
        SourceFile::new(display.clone(), path, rendered.clone()).outside_dir(true),
    );
    let root = match crate::yaml::parse(id, &rendered) {
        Ok(Some(n)) => effective(&n, |v| vars.contains_key(v)),
        Ok(None) => return Ok(None),
        Err(d) => {
            diags.push(d);
            return Ok(None);
        }
    };
    let head: ProfileHead = match serde_json::from_value(raw_json(&root)) {
        Ok(h) => h,
        Err(e) => {
            diags.push(
                Diagnostic::error(Code::InvalidValue, format!("profile {display}: {e}"))
                    .at(Some(root.span)),
            );
            return Ok(None);
        }
    };
    let static_node = entry(&root, "static").filter(|n| !matches!(n.kind, NodeKind::Null));
    let static_overlay = canonicalize(static_node, ConfigKind::Static, diags);
    let dynamic_node = entry(&root, "dynamic").filter(|n| !matches!(n.kind, NodeKind::Null));
    let dyn_canon = canonicalize(dynamic_node, ConfigKind::Dynamic, diags);
    let broken = validate::validate(ConfigKind::Dynamic, &dyn_canon, diags);
    let model = validate::into_model(&dyn_canon, &broken, diags);
    Ok(Some(Profile {
        name,
        file: id,
        description: head.description,
        static_overlay,
        dynamic: DynamicFile {
            file: id,
            canon: dyn_canon,
            model,
        },
        transforms: head.transforms,
        policy: head.policy,
        vars,
        policy_node: entry(&root, "policy").cloned(),
    }))
}

fn item(node: &Node, i: usize) -> Option<&Node> {
    match &node.kind {
        NodeKind::Seq(items) => items.get(i),
        _ => None,
    }
}

/// The variables of the `when` sections, with where each is written; `None` after reporting a
/// malformed `when`. Sections are found by line in the unrendered text, so `when` must be a block
/// mapping.
fn when_sections(
    raw: &Node,
    text: &str,
    display: &str,
    diags: &mut Vec<Diagnostic>,
) -> Option<Vec<(String, Span)>> {
    let Some(when) = entry(raw, "when") else {
        return Some(Vec::new());
    };
    let flow = text
        .get(when.span.start..)
        .is_some_and(|t| t.starts_with('{'));
    match &when.kind {
        NodeKind::Null => Some(Vec::new()),
        NodeKind::Map(sections) if !flow || sections.is_empty() => {
            let mut ok = true;
            for (var, section) in sections {
                if let Err(e) = serde_json::from_value::<WhenSection>(raw_json(section)) {
                    ok = false;
                    diags.push(
                        Diagnostic::error(
                            Code::InvalidValue,
                            format!("profile {display}: when.{}: {e}", var.text),
                        )
                        .at(Some(var.span))
                        .hint("a `when.<var>` section has: static, dynamic, policy"),
                    );
                }
            }
            ok.then(|| {
                sections
                    .iter()
                    .map(|(k, _)| (k.text.clone(), k.span))
                    .collect()
            })
        }
        _ => {
            diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("profile {display}: `when` must be a block mapping of variable names"),
                )
                .at(Some(when.span))
                .hint(
                    "write one `NAME:` per line under `when:`, each with static, dynamic or policy",
                ),
            );
            None
        }
    }
}

/// Checks how the variables are declared: a `vars.one_of` name belongs to one alternative only and
/// is neither required nor defaulted (it would always be given); a `when.<var>` names a declared
/// variable.
fn declarations_ok(
    name: &str,
    decl: &ProfileVars,
    raw: &Node,
    when: &[(String, Span)],
    diags: &mut Vec<Diagnostic>,
) -> bool {
    let one_of = entry(raw, "vars").and_then(|v| entry(v, "one_of"));
    let mut ok = true;
    let mut seen = std::collections::BTreeSet::new();
    for (i, alt) in decl.one_of.iter().enumerate() {
        let at = one_of.and_then(|n| item(n, i));
        if alt.is_empty() {
            ok = false;
            diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("profile `{name}`: an alternative of vars.one_of names no variable"),
                )
                .at(at.or(one_of).map(|n| n.span)),
            );
        }
        for var in alt.keys() {
            let clash = if decl.required.contains_key(var) {
                Some("vars.required")
            } else if decl.defaults.contains_key(var) {
                Some("vars.defaults")
            } else if !seen.insert(var.as_str()) {
                Some("another alternative of vars.one_of")
            } else {
                None
            };
            if let Some(other) = clash {
                ok = false;
                diags.push(
                    Diagnostic::error(
                        Code::InvalidValue,
                        format!("profile `{name}`: `{var}` is in vars.one_of and in {other}"),
                    )
                    .at(at.and_then(|a| entry_key_span(a, var))),
                );
            }
        }
    }
    for (var, span) in when {
        let declared = decl.required.contains_key(var)
            || decl.defaults.contains_key(var)
            || decl.one_of.iter().any(|a| a.contains_key(var));
        if !declared {
            ok = false;
            diags.push(
                Diagnostic::error(
                    Code::InvalidValue,
                    format!("profile `{name}`: `when.{var}` names no variable of `vars`"),
                )
                .at(Some(*span))
                .hint("declare it under vars.required, vars.defaults or vars.one_of"),
            );
        }
    }
    ok
}

/// Every required variable is given, and exactly one alternative of `vars.one_of`, completely.
/// Reports what is missing (naming the alternatives) or mixed.
fn vars_given(
    name: &str,
    decl: &ProfileVars,
    vars: &BTreeMap<String, String>,
    raw: &Node,
    diags: &mut Vec<Diagnostic>,
) -> bool {
    let decl_node = entry(raw, "vars");
    let mut ok = true;
    for (var, what) in &decl.required {
        if !vars.contains_key(var) {
            ok = false;
            let span = decl_node
                .and_then(|v| entry(v, "required"))
                .and_then(|r| entry_key_span(r, var));
            diags.push(
                Diagnostic::error(
                    Code::MissingVar,
                    format!("profile `{name}` needs the variable `{var}` ({what})"),
                )
                .at(span)
                .hint(format!("pass --var {var}=VALUE")),
            );
        }
    }
    let alts = &decl.one_of;
    if alts.is_empty() {
        return ok;
    }
    let names = |a: &BTreeMap<String, String>| {
        a.keys()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(" and ")
    };
    let var_lines = alts
        .iter()
        .map(|a| {
            a.keys()
                .map(|k| format!("--var {k}=VALUE"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join(", or ");
    let one_of = decl_node.and_then(|v| entry(v, "one_of"));
    let touched: Vec<usize> = (0..alts.len())
        .filter(|&i| alts[i].keys().any(|k| vars.contains_key(k)))
        .collect();
    if let [_, _, ..] = touched.as_slice() {
        let given: Vec<String> = touched
            .iter()
            .flat_map(|&i| alts[i].keys().filter(|k| vars.contains_key(*k)))
            .map(|k| format!("`{k}`"))
            .collect();
        let all: Vec<String> = alts.iter().map(names).collect();
        diags.push(
            Diagnostic::error(
                Code::InvalidValue,
                format!(
                    "profile `{name}` takes {}, not more than one; given: {}",
                    all.join(" or "),
                    given.join(", ")
                ),
            )
            .at(decl_node.and_then(|v| entry_key_span(v, "one_of")))
            .hint(format!("keep one alternative: {var_lines}")),
        );
        return false;
    }
    // Nothing given: the first alternative is reported; part of one: the rest of it.
    let chosen = touched.first().copied().unwrap_or(0);
    let others: Vec<String> = (0..alts.len())
        .filter(|&i| i != chosen)
        .map(|i| names(&alts[i]))
        .collect();
    let instead = if others.is_empty() {
        String::new()
    } else {
        format!(", or instead {}", others.join(" or "))
    };
    for (var, what) in alts[chosen].iter().filter(|(k, _)| !vars.contains_key(*k)) {
        ok = false;
        let span = one_of
            .and_then(|n| item(n, chosen))
            .and_then(|a| entry_key_span(a, var));
        diags.push(
            Diagnostic::error(
                Code::MissingVar,
                format!("profile `{name}` needs the variable `{var}` ({what}){instead}"),
            )
            .at(span)
            .hint(format!("pass {var_lines}")),
        );
    }
    ok
}

fn line_start(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .and_then(|t| t.rfind('\n'))
        .map_or(0, |i| i + 1)
}

/// `text` with the lines of every `when.<var>` section whose variable is not given replaced by
/// spaces (line breaks kept). A section runs from its key's line to the next section's (the last
/// one to the next top-level key, or the end).
fn blank_absent_when(text: &str, raw: &Node, given: &BTreeMap<String, String>) -> String {
    let NodeKind::Map(top) = &raw.kind else {
        return text.to_owned();
    };
    let Some(i) = top.iter().position(|(k, _)| k.text == "when") else {
        return text.to_owned();
    };
    let NodeKind::Map(sections) = &top[i].1.kind else {
        return text.to_owned();
    };
    let end_of_when = top
        .get(i + 1)
        .map_or(text.len(), |(k, _)| line_start(text, k.span.start));
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    for (j, (var, _)) in sections.iter().enumerate() {
        if given.contains_key(&var.text) {
            continue;
        }
        let start = line_start(text, var.span.start).max(pos);
        let end = sections
            .get(j + 1)
            .map_or(end_of_when, |(k, _)| line_start(text, k.span.start))
            .max(start);
        out.push_str(&text[pos..start]);
        out.extend(
            text[start..end]
                .chars()
                .map(|c| if c == '\n' || c == '\r' { c } else { ' ' }),
        );
        pos = end;
    }
    out.push_str(&text[pos..]);
    out
}

/// `root` without `when`, with the `when.<var>` sections for which `apply(var)` merged onto its
/// `static`, `dynamic` and `policy` (in the order written).
fn effective(root: &Node, apply: impl Fn(&str) -> bool) -> Node {
    let mut out = root.clone();
    if let NodeKind::Map(entries) = &mut out.kind
        && let Some(i) = entries.iter().position(|(k, _)| k.text == "when")
    {
        let (_, when) = entries.remove(i);
        if let NodeKind::Map(sections) = when.kind {
            for (_, section) in sections.iter().filter(|(k, _)| apply(&k.text)) {
                let NodeKind::Map(parts) = &section.kind else {
                    continue;
                };
                for (key, over) in parts
                    .iter()
                    .filter(|(k, _)| WHEN_SECTIONS.contains(&k.text.as_str()))
                {
                    match entries.iter_mut().find(|(k, _)| k.text == key.text) {
                        Some((_, base)) => overlay(base, over),
                        None => entries.push((key.clone(), over.clone())),
                    }
                }
            }
        }
    }
    out
}

/// Merges `over` onto `base`: mappings key by key, anything else replaced (a null changes nothing).
fn overlay(base: &mut Node, over: &Node) {
    match (&mut base.kind, &over.kind) {
        (_, NodeKind::Null) => {}
        (NodeKind::Map(b), NodeKind::Map(o)) => {
            for (k, v) in o {
                match b.iter_mut().find(|(bk, _)| bk.text == k.text) {
                    Some((_, existing)) => overlay(existing, v),
                    None => b.push((k.clone(), v.clone())),
                }
            }
        }
        _ => *base = over.clone(),
    }
}

/// Merges `overlay` onto `base`: objects merge key by key, anything else is replaced. Places of
/// overlay values (which point into the profile file) replace the base's.
pub fn merge_static(base: &mut Canonical, overlay: &Canonical) {
    fn merge(base: &mut Value, overlay: &Value, pointer: &str, places: &mut Vec<String>) {
        match (base, overlay) {
            (Value::Object(b), Value::Object(o)) => {
                for (k, v) in o {
                    let p = format!("{pointer}/{}", crate::canon::escape(k));
                    match b.get_mut(k) {
                        Some(existing) => merge(existing, v, &p, places),
                        None => {
                            b.insert(k.clone(), v.clone());
                            places.push(p);
                        }
                    }
                }
            }
            (b, o) => {
                *b = o.clone();
                places.push(pointer.to_owned());
            }
        }
    }
    let mut replaced = Vec::new();
    merge(&mut base.value, &overlay.value, "", &mut replaced);
    for p in replaced {
        let prefix = format!("{p}/");
        let from_overlay: Vec<(String, Place)> = overlay
            .places
            .iter()
            .filter(|(k, _)| **k == p || k.starts_with(&prefix))
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        base.places.extend(from_overlay);
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        reason = "test code: a panic is a test failure"
    )]

    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn prod(given: &[(&str, &str)]) -> (Option<Profile>, Vec<Diagnostic>, SourceMap) {
        let mut sources = SourceMap::default();
        let mut diags = Vec::new();
        let sel = ProfileSelector::Builtin("prod".into());
        let p = load(&sel, &vars(given), &mut sources, &mut diags).unwrap();
        (p, diags, sources)
    }

    fn from_text(
        text: &str,
        given: &[(&str, &str)],
    ) -> (Option<Profile>, Vec<Diagnostic>, SourceMap) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("custom.yml");
        std::fs::write(&path, text).unwrap();
        let mut sources = SourceMap::default();
        let mut diags = Vec::new();
        let p = load(
            &ProfileSelector::File(path),
            &vars(given),
            &mut sources,
            &mut diags,
        )
        .unwrap();
        (p, diags, sources)
    }

    const BASE: [(&str, &str); 2] = [
        ("domain", "scadabridge.example.com"),
        ("dashboard_users_file", "/etc/traefik/users"),
    ];

    fn with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
        BASE.iter().chain(extra).copied().collect()
    }

    #[test]
    fn one_of_with_nothing_given_names_both_alternatives() {
        let (p, diags, sources) = prod(&BASE);
        assert!(p.is_none());
        assert_eq!(diags.len(), 2, "{diags:?}");
        for (d, var) in diags.iter().zip(["tls_cert", "tls_key"]) {
            assert_eq!(d.code, Code::MissingVar);
            assert!(
                d.message.contains(&format!("needs the variable `{var}`"))
                    && d.message.contains("or instead `cert_resolver`"),
                "{}",
                d.message
            );
            assert_eq!(
                d.hint.as_deref(),
                Some("pass --var tls_cert=VALUE --var tls_key=VALUE, or --var cert_resolver=VALUE")
            );
            let span = d.span.expect("located");
            let text = &sources.get(span.file).unwrap().text;
            assert!(
                text[span.start..].starts_with(var),
                "points at the declaration"
            );
        }
    }

    #[test]
    fn one_of_with_part_of_an_alternative_reports_the_rest() {
        let (p, diags, _) = prod(&with(&[("tls_cert", "/c.pem")]));
        assert!(p.is_none());
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert_eq!(diags[0].code, Code::MissingVar);
        assert!(diags[0].message.contains("needs the variable `tls_key`"));
    }

    #[test]
    fn one_of_with_two_alternatives_given_is_refused() {
        let (p, diags, sources) = prod(&with(&[
            ("tls_cert", "/c.pem"),
            ("tls_key", "/k.pem"),
            ("cert_resolver", "le"),
        ]));
        assert!(p.is_none());
        assert_eq!(diags.len(), 1, "{diags:?}");
        let d = &diags[0];
        assert_eq!(d.code, Code::InvalidValue);
        assert!(
            d.message
                .contains("takes `tls_cert` and `tls_key` or `cert_resolver`, not more than one")
                && d.message
                    .contains("given: `tls_cert`, `tls_key`, `cert_resolver`"),
            "{}",
            d.message
        );
        assert!(
            d.hint
                .as_deref()
                .unwrap()
                .contains("--var cert_resolver=VALUE")
        );
        let span = d.span.expect("located");
        assert!(sources.get(span.file).unwrap().text[span.start..].starts_with("one_of"));
    }

    #[test]
    fn prod_with_certificate_files_keeps_them_and_leaves_the_resolver_out() {
        let (p, diags, sources) = prod(&with(&[("tls_cert", "/c.pem"), ("tls_key", "/k.pem")]));
        assert!(diags.is_empty(), "{diags:?}");
        let p = p.unwrap();
        let cp = p.policy.certificate.as_ref().unwrap();
        assert_eq!((cp.cert.as_str(), cp.key.as_str()), ("/c.pem", "/k.pem"));
        assert_eq!(cp.domain, "scadabridge.example.com");
        assert!(p.policy.certificate_resolver.is_none());
        assert!(p.policy.require_tls && p.policy.deny_insecure_api);
        let canon = &p.dynamic.canon.value;
        assert_eq!(canon["tls"]["certificates"][0]["certFile"], "/c.pem");
        assert_eq!(
            canon["tls"]["stores"]["default"]["defaultCertificate"]["keyFile"],
            "/k.pem"
        );
        assert_eq!(
            canon["tls"]["options"]["bridgectl-prod"]["minVersion"],
            "VersionTLS12"
        );
        assert!(
            p.static_overlay.value["entryPoints"]["websecure"]["http"]["tls"]
                .get("certResolver")
                .is_none()
        );
        // The resolver's section was blanked before rendering, its lines kept.
        let text = &sources.get(p.file).unwrap().text;
        assert!(!text.contains("certResolver") && !text.contains("{{"));
        let raw = BUILTIN[1].1;
        assert_eq!(text.lines().count(), raw.lines().count());
        // The certificate check is located in the `when.tls_cert` section.
        let at = p
            .dynamic
            .canon
            .value_span("/tls/certificates/0/certFile")
            .unwrap();
        assert!(text[at.start..].starts_with("\"/c.pem\""));
    }

    #[test]
    fn prod_with_a_resolver_serves_websecure_and_the_dashboard_from_it() {
        let (p, diags, sources) = prod(&with(&[("cert_resolver", "le")]));
        assert!(diags.is_empty(), "{diags:?}");
        let p = p.unwrap();
        let ep = &p.static_overlay.value["entryPoints"]["websecure"]["http"]["tls"];
        assert_eq!(ep["certResolver"], "le");
        assert_eq!(ep["options"], "bridgectl-prod", "merged, not replaced");
        assert_eq!(ep["domains"][0]["main"], "scadabridge.example.com");
        let canon = &p.dynamic.canon.value;
        assert!(canon["tls"].get("certificates").is_none());
        assert!(canon["tls"].get("stores").is_none());
        let dash = &canon["http"]["routers"]["bridgectl-dashboard"];
        assert_eq!(dash["tls"]["certResolver"], "le");
        assert_eq!(dash["tls"]["options"], "bridgectl-prod");
        assert_eq!(dash["middlewares"][0], "bridgectl-dashboard-auth");
        assert!(p.policy.certificate.is_none());
        assert_eq!(
            p.policy.certificate_resolver,
            Some(ResolverPolicy {
                resolver: "le".into(),
                domain: "scadabridge.example.com".into()
            })
        );
        assert!(p.policy.require_tls && p.policy.dashboard_requires_auth);
        assert_eq!(p.policy.min_tls_version.as_deref(), Some("1.2"));
        let at = p
            .policy_span(&["certificate_resolver", "resolver"])
            .unwrap();
        let text = &sources.get(p.file).unwrap().text;
        assert!(text[at.start..].starts_with("\"le\""));
        assert!(!text.contains("tls_cert }}") && !text.contains("certFile"));
    }

    const CUSTOM: &str = "\
description: test
vars:
  one_of:
    - a: first
    - b: second
static:
  entryPoints:
    web:
      address: \":80\"
when:
  a:
    static:
      entryPoints:
        web:
          address: \"{{ a }}{{ not_a_variable }}\"
  b:
    dynamic:
      http:
        middlewares:
          m:
            headers:
              customRequestHeaders:
                X-B: \"{{ b }}\"
policy:
  require_tls: true
";

    #[test]
    fn a_when_section_is_not_rendered_without_its_variable() {
        // `when.a` names an undefined variable: rendering it would fail (strict undefined).
        let (p, diags, sources) = from_text(CUSTOM, &[("b", "yes")]);
        assert!(diags.is_empty(), "{diags:?}");
        let p = p.unwrap();
        assert_eq!(
            p.static_overlay.value["entryPoints"]["web"]["address"],
            ":80"
        );
        assert_eq!(
            p.dynamic.canon.value["http"]["middlewares"]["m"]["headers"]["customRequestHeaders"]["X-B"],
            "yes"
        );
        assert!(p.policy.require_tls, "the key after `when` is still read");
        let text = &sources.get(p.file).unwrap().text;
        assert_eq!(text.len(), CUSTOM.len() - "{{ b }}".len() + "yes".len());
        assert_eq!(text.lines().count(), CUSTOM.lines().count());
        assert!(!text.contains("not_a_variable"));
        // Positions after the blanked section are those of the file.
        let at = p
            .dynamic
            .canon
            .key_span("/http/middlewares/m")
            .map(|s| s.start);
        let line = at.map(|o| text[..o].lines().count());
        assert_eq!(line, Some(20));
        // Given, the section is rendered: here, with its undefined variable, a located error.
        let (p, diags, _) = from_text(CUSTOM, &[("a", "x")]);
        assert!(p.is_none());
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert_eq!(diags[0].code, Code::Template);
    }

    #[test]
    fn when_must_name_a_declared_variable_and_be_a_block_mapping() {
        let typo = CUSTOM.replace("  b:\n    dynamic:", "  bb:\n    dynamic:");
        let (p, diags, _) = from_text(&typo, &[("a", "x")]);
        assert!(p.is_none());
        assert!(
            diags
                .iter()
                .any(|d| d.message.contains("`when.bb` names no variable") && d.span.is_some()),
            "{diags:?}"
        );
        let flow =
            "description: t\nvars:\n  one_of: [{a: x}]\nwhen: {a: {policy: {require_tls: true}}}\n";
        let (p, diags, _) = from_text(flow, &[("a", "x")]);
        assert!(p.is_none());
        assert!(diags[0].message.contains("block mapping"), "{diags:?}");
        let section = CUSTOM.replace("  a:\n    static:", "  a:\n    statics:");
        let (p, diags, _) = from_text(&section, &[("b", "x")]);
        assert!(p.is_none(), "checked even when the variable is not given");
        assert!(diags[0].message.contains("when.a"), "{diags:?}");
    }

    #[test]
    fn a_one_of_variable_cannot_also_be_required_or_defaulted() {
        let text = CUSTOM.replace("vars:\n", "vars:\n  required:\n    a: also required\n");
        let (p, diags, _) = from_text(&text, &[("a", "x")]);
        assert!(p.is_none());
        assert!(
            diags.iter().any(|d| d
                .message
                .contains("`a` is in vars.one_of and in vars.required")),
            "{diags:?}"
        );
    }
}
