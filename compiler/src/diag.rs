//! Diagnostics are data: what is wrong, where, and how to fix it.
//!
//! Every stage pushes [`Diagnostic`]s into a [`Diagnostics`] list instead of returning early, so one run
//! reports every problem. Rendering (human, JSON, GitHub annotations, SARIF) lives in `crate::render` and
//! never decides anything.

use serde::Serialize;

use crate::source::Span;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Style and information; never fails a run.
    Note,
    /// Works, but probably not as intended; fails the run only with `--deny-warnings`.
    Warning,
    /// The configuration is rejected.
    Error,
}

impl Severity {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

macro_rules! codes {
    ($($variant:ident = $name:literal : $doc:literal,)*) => {
        /// Stable diagnostic codes. The string form is part of the JSON/SARIF contract: never rename one.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code {
            $(#[doc = $doc] $variant,)*
        }

        impl Code {
            /// The stable kebab-case identifier.
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $name,)* }
            }

            /// One line saying what the code means.
            pub fn description(self) -> &'static str {
                match self { $(Code::$variant => $doc,)* }
            }

            /// Every code, for documentation and tests.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];
        }
    };
}

codes! {
    Io = "io": "A file could not be read.",
    FileNotFound = "file-not-found": "A file named by the configuration does not exist.",
    NotUtf8 = "not-utf8": "A configuration file is not valid UTF-8 text.",
    FileTooLarge = "file-too-large": "A configuration file exceeds the size limit.",
    YamlSyntax = "yaml-syntax": "The file is not valid YAML.",
    TomlSyntax = "toml-syntax": "The file is not valid TOML.",
    YamlDuplicateKey = "duplicate-key": "A mapping repeats a key (Traefik rejects the whole file).",
    YamlLimit = "yaml-limit": "The YAML exceeds a safety budget (aliases, nesting, size).",
    YamlNotMapping = "not-a-mapping": "The document is not a mapping of configuration keys.",
    GoTemplate = "go-template": "The file uses Go template syntax, which bridgectl does not render.",
    Template = "template": "A template variable or expression could not be rendered.",
    UnknownKey = "unknown-key": "A key is not part of Traefik's configuration at this place.",
    UnknownTopLevelKey = "unknown-top-level-key": "A top-level key Traefik would silently ignore.",
    MixedConfig = "mixed-config": "Static keys in a dynamic file or dynamic keys in the static file.",
    KeyCase = "key-case": "A key is spelled in a different case than Traefik documents it.",
    EmptyElement = "empty-element": "An empty object where Traefik requires content.",
    InvalidType = "invalid-type": "A value has the wrong type.",
    InvalidValue = "invalid-value": "A value is outside what Traefik accepts.",
    MissingKey = "missing-key": "A required key is missing.",
    Unsupported = "unsupported": "Valid Traefik configuration that bridgectl does not support.",
    Ignored = "ignored": "Valid Traefik configuration that has no effect in bridgectl.",
    Deprecated = "deprecated": "A key Traefik has deprecated.",
    InvalidDuration = "invalid-duration": "A duration is not a Go duration or a number of seconds.",
    KindCount = "kind-count": "A service or middleware must define exactly one kind.",
    UndefinedReference = "undefined-reference": "A name refers to something that is not defined.",
    ReferenceCycle = "reference-cycle": "Services or middlewares refer to each other in a loop.",
    DuplicateName = "duplicate-name": "The same name is defined in more than one file.",
    Rule = "rule": "A router rule does not parse or has invalid arguments.",
    InvalidUrl = "invalid-url": "A server URL is not an absolute http, https or h2c URL.",
    InvalidAddress = "invalid-address": "An entry point address or port is not valid.",
    InvalidRegex = "invalid-regex": "A regular expression does not compile.",
    InvalidIp = "invalid-ip": "An IP address or CIDR range is not valid.",
    InvalidHash = "invalid-hash": "A basicAuth password hash is missing or of an unsupported kind.",
    Priority = "priority": "A router priority is outside the range Traefik accepts.",
    NoEntryPoint = "no-entry-point": "A router would not be served on any entry point.",
    MissingVar = "missing-var": "A variable the profile requires was not given with --var.",
    Policy = "policy": "The configuration violates the profile's policy (e.g. plain HTTP in prod).",
    Certificate = "certificate": "A certificate or key is unreadable, mismatched, expired or does not cover the domain.",
    Acme = "acme": "An ACME certificate resolver, or a router's certificates from one, cannot work as written.",
    Internal = "internal": "bridgectl hit an internal inconsistency; please report it.",
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// How bad it is.
    pub severity: Severity,
    /// Stable code.
    pub code: Code,
    /// What is wrong, in one sentence.
    pub message: String,
    /// Where; `None` for problems without a place (a missing directory, say).
    pub span: Option<Span>,
    /// JSON pointer into the canonical configuration of that file (`/http/routers/api/rule`).
    pub pointer: Option<String>,
    /// How to fix it.
    pub hint: Option<String>,
}

impl Diagnostic {
    /// A new diagnostic without location.
    pub fn new(severity: Severity, code: Code, message: impl Into<String>) -> Self {
        Self {
            severity,
            code,
            message: message.into(),
            span: None,
            pointer: None,
            hint: None,
        }
    }

    /// An error.
    pub fn error(code: Code, message: impl Into<String>) -> Self {
        Self::new(Severity::Error, code, message)
    }

    /// A warning.
    pub fn warning(code: Code, message: impl Into<String>) -> Self {
        Self::new(Severity::Warning, code, message)
    }

    /// A note.
    pub fn note(code: Code, message: impl Into<String>) -> Self {
        Self::new(Severity::Note, code, message)
    }

    /// Sets the location.
    pub fn at(mut self, span: Option<Span>) -> Self {
        self.span = span;
        self
    }

    /// Sets the JSON pointer.
    pub fn pointer(mut self, pointer: impl Into<String>) -> Self {
        self.pointer = Some(pointer.into());
        self
    }

    /// Sets the hint.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Sets the hint if there is one.
    pub fn maybe_hint(mut self, hint: Option<String>) -> Self {
        self.hint = hint;
        self
    }
}

/// The findings of one run, deduplicated and in a stable order.
#[derive(Debug, Default, Clone)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    /// Records a finding; an identical one (same code, place and message) is kept once.
    pub fn push(&mut self, d: Diagnostic) {
        if !self.items.contains(&d) {
            self.items.push(d);
        }
    }

    /// Records several findings.
    pub fn extend(&mut self, ds: impl IntoIterator<Item = Diagnostic>) {
        for d in ds {
            self.push(d);
        }
    }

    /// Number of errors.
    pub fn error_count(&self) -> usize {
        self.count(Severity::Error)
    }

    /// Number of warnings.
    pub fn warning_count(&self) -> usize {
        self.count(Severity::Warning)
    }

    fn count(&self, s: Severity) -> usize {
        self.items.iter().filter(|d| d.severity == s).count()
    }

    /// True when any error was recorded.
    pub fn has_errors(&self) -> bool {
        self.error_count() > 0
    }

    /// Sorts by file, position, then code, so output does not depend on check order.
    pub fn sort(&mut self) {
        self.items.sort_by(|a, b| {
            let ka = (a.span.map(|s| (s.file, s.start)), a.code, &a.message);
            let kb = (b.span.map(|s| (s.file, s.start)), b.code, &b.message);
            ka.cmp(&kb)
        });
    }

    /// The findings.
    pub fn iter(&self) -> std::slice::Iter<'_, Diagnostic> {
        self.items.iter()
    }

    /// The findings, owned.
    pub fn into_vec(self) -> Vec<Diagnostic> {
        self.items
    }

    /// Number of findings.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when nothing was found.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

/// "did you mean" for a misspelled name among candidates (case-insensitive Jaro-Winkler).
pub fn did_you_mean<'a>(
    got: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let got_l = got.to_ascii_lowercase();
    let mut best: Option<(f64, &str)> = None;
    for c in candidates {
        let score = strsim::jaro_winkler(&got_l, &c.to_ascii_lowercase());
        if score >= 0.8 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, c));
        }
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_kebab_case() {
        let mut seen = std::collections::BTreeSet::new();
        for c in Code::ALL {
            assert!(seen.insert(c.as_str()), "duplicate code {}", c.as_str());
            assert!(
                c.as_str()
                    .chars()
                    .all(|ch| ch.is_ascii_lowercase() || ch == '-' || ch.is_ascii_digit())
            );
        }
    }

    #[test]
    fn suggestions_pick_the_closest_name() {
        let keys = ["rule", "service", "entryPoints", "middlewares", "priority"];
        assert_eq!(did_you_mean("rulee", keys), Some("rule"));
        assert_eq!(did_you_mean("entrypoint", keys), Some("entryPoints"));
        assert_eq!(did_you_mean("zzz", keys), None);
    }

    #[test]
    fn identical_findings_are_kept_once() {
        let mut ds = Diagnostics::default();
        ds.push(Diagnostic::error(Code::UnknownKey, "x"));
        ds.push(Diagnostic::error(Code::UnknownKey, "x"));
        assert_eq!(ds.len(), 1);
    }
}

/// The Markdown reference of every code, as committed in `docs/diagnostics.md`.
pub fn codes_markdown() -> String {
    let mut out = String::from(
        "# Diagnostic codes\n\n\
         Generated from `compiler/src/diag.rs` (a test fails when this file drifts; regenerate with\n\
         `BRIDGECTL_UPDATE_DOCS=1 cargo test -p bridgectl diag`). Codes are stable: they appear in the\n\
         JSON, GitHub and SARIF outputs and never change meaning.\n\n\
         | code | meaning |\n|---|---|\n",
    );
    for c in Code::ALL {
        out.push_str(&format!("| `{}` | {} |\n", c.as_str(), c.description()));
    }
    out
}

#[cfg(test)]
mod docs_drift {
    #[test]
    fn docs_list_every_code() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/diagnostics.md");
        let want = super::codes_markdown();
        if std::env::var_os("BRIDGECTL_UPDATE_DOCS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        assert_eq!(
            std::fs::read_to_string(&path).unwrap_or_default(),
            want,
            "docs/diagnostics.md is out of date; run BRIDGECTL_UPDATE_DOCS=1 cargo test -p bridgectl diag"
        );
    }
}
