//! Variables in dynamic files: `{{ name }}` filled from `--var name=value` (minijinja).
//!
//! Traefik renders file-provider files as Go `text/template`; bridgectl deliberately does not (a
//! template language inside a config language hides errors), but it does fill plain variables so one
//! file can serve several deployments. Go-only constructs (`{{ .X }}`, `{{ range }}`, `{{ $v }}`) get a
//! located error that says so instead of a confusing Jinja parse error.

use std::collections::BTreeMap;

use regex::Regex;

use crate::diag::{Code, Diagnostic};
use crate::source::{FileId, SourceFile, Span};

#[allow(
    clippy::expect_used,
    reason = "a constant pattern, covered by the tests below"
)]
fn go_template() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"\{\{-?\s*(?:\.|\$|(?:range|if|with|end|else|define|template|block|printf|env|index|len|not|and|or)\b)")
            .expect("valid regex")
    })
}

/// True when the text contains template markup outside full-line comments.
pub fn has_markup(text: &str) -> bool {
    let t = blank_comment_lines(text);
    t.contains("{{") || t.contains("{%")
}

/// Replaces every full-line YAML comment with spaces (keeping line breaks, so positions do not
/// move). Comments mean nothing to YAML, and template-looking text in them (documentation such as
/// `# Default: "Host(`{{ normalize .Name }}`)"`) must not be rendered or rejected.
pub fn blank_comment_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with('#') {
            out.extend(
                line.chars()
                    .map(|c| if c == '\n' || c == '\r' { c } else { ' ' }),
            );
        } else {
            out.push_str(line);
        }
    }
    out
}

/// Renders `text` with `vars`. Files without markup are returned unchanged.
pub fn render(
    file: FileId,
    text: &str,
    vars: &BTreeMap<String, String>,
) -> Result<String, Vec<Diagnostic>> {
    if !has_markup(text) {
        return Ok(text.to_owned());
    }
    let blanked = blank_comment_lines(text);
    let text = blanked.as_str();
    let go: Vec<Diagnostic> = go_template()
        .find_iter(text)
        .map(|m| {
            let end = text[m.start()..].find("}}").map_or(m.end(), |e| m.start() + e + 2);
            Diagnostic::error(
                Code::GoTemplate,
                format!(
                    "Go template syntax `{}` is valid Traefik, but not supported by bridgectl",
                    &text[m.start()..end]
                ),
            )
            .at(Some(Span::new(file, m.start(), end)))
            .hint("bridgectl fills plain variables only: write `{{ name }}` and pass --var name=value")
        })
        .collect();
    if !go.is_empty() {
        return Err(go);
    }
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    // Bounds loops like `{% for i in range(100000) %}{% for j in range(100000) %}`.
    env.set_fuel(Some(10_000_000));
    let located = |e: &minijinja::Error| {
        let sf = SourceFile::new("", "", text.to_owned());
        let off = e.line().map_or(0, |l| sf.offset_of(l, 1));
        let detail = e.detail().map(|d| format!(": {d}")).unwrap_or_default();
        Diagnostic::error(
            Code::Template,
            format!("template error: {}{detail}", e.kind()),
        )
        .at(Some(Span::new(file, off, off)))
    };
    let tmpl = env.template_from_str(text).map_err(|e| vec![located(&e)])?;
    let keep_newline = text.ends_with('\n');
    tmpl.render(vars)
        .map(|mut out| {
            if keep_newline && !out.ends_with('\n') {
                out.push('\n');
            }
            out
        })
        .map_err(|e| {
            let mut d = located(&e);
            if e.kind() == minijinja::ErrorKind::UndefinedError {
                d = d.hint(format!(
                    "pass the variable with --var NAME=VALUE (defined: {})",
                    if vars.is_empty() {
                        "none".to_owned()
                    } else {
                        vars.keys().cloned().collect::<Vec<_>>().join(", ")
                    }
                ));
            }
            vec![d]
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn plain_files_are_untouched() {
        assert_eq!(render(FileId(0), "a: 1\n", &vars(&[])).unwrap(), "a: 1\n");
    }

    #[test]
    fn variables_are_filled() {
        let out = render(
            FileId(0),
            "url: \"http://{{ host }}:5000\"\n",
            &vars(&[("host", "a")]),
        )
        .unwrap();
        assert_eq!(out, "url: \"http://a:5000\"\n");
    }

    #[test]
    fn undefined_variables_are_located_errors() {
        let err = render(FileId(0), "a: 1\nurl: {{ host }}\n", &vars(&[])).unwrap_err();
        assert_eq!(err[0].code, Code::Template);
        assert_eq!(err[0].span.map(|s| s.start), Some(5));
        assert!(err[0].hint.as_deref().unwrap_or("").contains("--var"));
    }

    #[test]
    fn markup_in_comments_is_ignored() {
        let text = "# Default: \"Host(`{{ normalize .Name }}`)\"\na: 1\n";
        assert!(!has_markup(text));
        assert_eq!(render(FileId(0), text, &vars(&[])).unwrap(), text);
        let with_var = "# {{ .X }}\na: {{ v }}\n";
        let out = render(FileId(0), with_var, &vars(&[("v", "1")])).unwrap();
        assert_eq!(out, "          \na: 1\n");
    }

    #[test]
    fn go_templates_are_named() {
        let text = "url: {{ .Server1 }}\n{{ range $i, $e := until 3 }}\n";
        let err = render(FileId(0), text, &vars(&[])).unwrap_err();
        assert_eq!(err.len(), 2);
        assert!(err.iter().all(|d| d.code == Code::GoTemplate));
        assert!(err[0].message.contains("{{ .Server1 }}"));
    }
}
