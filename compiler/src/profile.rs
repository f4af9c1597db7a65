//! Profiles: named overlays that turn the one configuration the team edits into a deployment.
//!
//! A profile is data (`profiles/dev.yml`, `profiles/prod.yml`, or any file given by path): a Traefik
//! static overlay and dynamic overlay (validated with the same schemas as user files), a few declared
//! transforms that an overlay cannot express (move routers to another entry point, add a middleware
//! to every router of some entry points), and policy switches checked in `crate::policy`. Values in
//! `{{ }}` are filled from `--var`; variables listed under `vars.required` must be given.

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
}

/// A change an overlay cannot express.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Transform {
    /// Routers on `from` are served on `to` instead, with TLS options when given.
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
    let raw_id =
        sources.add(SourceFile::new(display.clone(), path.clone(), text.clone()).outside_dir(true));
    let raw = match crate::yaml::parse(raw_id, &template::blank_comment_lines(&text)) {
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
    let head: ProfileHead = match serde_json::from_value(raw_json(&raw)) {
        Ok(h) => h,
        Err(e) => {
            diags.push(
                Diagnostic::error(Code::InvalidValue, format!("profile {display}: {e}"))
                    .at(Some(raw.span))
                    .hint("a profile has: description, vars, static, dynamic, transforms, policy"),
            );
            return Ok(None);
        }
    };
    let mut vars = head.vars.defaults.clone();
    vars.extend(given.iter().map(|(k, v)| (k.clone(), v.clone())));
    let mut missing = false;
    for (var, what) in &head.vars.required {
        if !vars.contains_key(var) {
            missing = true;
            let span = entry(&raw, "vars")
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
    if missing {
        return Ok(None);
    }
    // 2. Render and parse for real; positions now refer to the rendered text.
    let rendered = match template::render(raw_id, &text, &vars) {
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
        Ok(Some(n)) => n,
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
    }))
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
