//! Renderers for diagnostics: human (rustc-like, with the source line and a caret), JSON, GitHub
//! workflow annotations, and SARIF 2.1.0. They only format; every decision was made before.

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::diag::{Code, Diagnostic, Severity};
use crate::source::SourceMap;

/// Output formats of `bridgectl check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// rustc-style text with source excerpts (colours only on a terminal).
    Human,
    /// `{"ok": bool, "diagnostics": [...]}` on stdout.
    Json,
    /// GitHub Actions workflow commands (`::error file=...,line=...::message`).
    Github,
    /// SARIF 2.1.0, for code-scanning uploads.
    Sarif,
}

/// A diagnostic with its position resolved to file name, line and column.
#[derive(Debug, Clone)]
pub struct Located<'a> {
    /// The diagnostic.
    pub diag: &'a Diagnostic,
    /// File name relative to the configuration directory.
    pub file: Option<&'a str>,
    /// 1-based line.
    pub line: Option<usize>,
    /// 1-based column (characters).
    pub column: Option<usize>,
    /// Width of the marked text on its line, in characters (at least 1).
    pub width: usize,
    /// Whether the file lives in the configuration directory (its name gets the directory prefix).
    pub in_dir: bool,
}

/// Resolves positions once for all renderers.
pub fn locate<'a>(sources: &'a SourceMap, diags: &'a [Diagnostic]) -> Vec<Located<'a>> {
    diags
        .iter()
        .map(|d| {
            let Some(span) = d.span else {
                return Located {
                    diag: d,
                    file: None,
                    line: None,
                    column: None,
                    width: 1,
                    in_dir: false,
                };
            };
            let Some(file) = sources.get(span.file) else {
                return Located {
                    diag: d,
                    file: None,
                    line: None,
                    column: None,
                    width: 1,
                    in_dir: false,
                };
            };
            let (line, column) = file.line_col(span.start);
            let (end_line, end_col) = file.line_col(span.end);
            let width = if end_line == line && end_col > column {
                end_col - column
            } else {
                1
            };
            Located {
                diag: d,
                file: Some(file.name.as_str()),
                line: Some(line),
                column: Some(column),
                width,
                in_dir: file.in_dir,
            }
        })
        .collect()
}

struct Style {
    on: bool,
}

impl Style {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
}

/// Human-readable report. `prefix` is prepended to file names (the directory as the user typed it).
pub fn human(sources: &SourceMap, diags: &[Diagnostic], prefix: &str, color: bool) -> String {
    let st = Style { on: color };
    let mut out = String::new();
    for l in locate(sources, diags) {
        let d = l.diag;
        let (sev, col) = match d.severity {
            Severity::Error => ("error", "1;31"),
            Severity::Warning => ("warning", "1;33"),
            Severity::Note => ("note", "1;36"),
        };
        let _ = writeln!(
            out,
            "{}{} {}",
            st.paint(col, &format!("{sev}[{}]", d.code.as_str())),
            st.paint("1", ":"),
            st.paint("1", &d.message)
        );
        if let (Some(file), Some(line), Some(column)) = (l.file, l.line, l.column) {
            let gutter = " ".repeat(line.to_string().len());
            let prefix = if l.in_dir { prefix } else { "" };
            let _ = writeln!(
                out,
                "{gutter}{} {prefix}{file}:{line}:{column}",
                st.paint("1;34", "-->")
            );
            let text = d
                .span
                .and_then(|s| sources.get(s.file))
                .map(|f| f.line_text(line))
                .unwrap_or("");
            let text: String = text
                .chars()
                .take(200)
                .collect::<String>()
                .replace('\t', " ");
            let _ = writeln!(out, "{gutter} {}", st.paint("1;34", "|"));
            let _ = writeln!(
                out,
                "{} {} {text}",
                st.paint("1;34", &line.to_string()),
                st.paint("1;34", "|")
            );
            let pad = " ".repeat(column.saturating_sub(1).min(200));
            let carets = "^".repeat(l.width.clamp(1, 120));
            let _ = writeln!(
                out,
                "{gutter} {} {pad}{}",
                st.paint("1;34", "|"),
                st.paint(col, &carets)
            );
            if let Some(h) = &d.hint {
                let _ = writeln!(
                    out,
                    "{gutter} {} {}: {h}",
                    st.paint("1;34", "="),
                    st.paint("1", "help")
                );
            }
        } else if let Some(h) = &d.hint {
            let _ = writeln!(
                out,
                "  {} {}: {h}",
                st.paint("1;34", "="),
                st.paint("1", "help")
            );
        }
        out.push('\n');
    }
    out
}

/// One-line summary for the human format.
pub fn summary(diags: &[Diagnostic], files: usize) -> String {
    let errors = diags
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    let warnings = diags
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .count();
    let plural = |n: usize, w: &str| {
        if n == 1 {
            format!("{n} {w}")
        } else {
            format!("{n} {w}s")
        }
    };
    let files = plural(files, "file");
    if errors == 0 {
        format!("ok: {files} checked, {}", plural(warnings, "warning"))
    } else {
        format!(
            "failed: {files} checked, {}, {}",
            plural(errors, "error"),
            plural(warnings, "warning")
        )
    }
}

/// The JSON report: `{"ok": bool, "diagnostics": [...]}`.
pub fn json(sources: &SourceMap, diags: &[Diagnostic], ok: bool) -> Value {
    let items: Vec<Value> = locate(sources, diags)
        .into_iter()
        .map(|l| {
            json!({
                "severity": l.diag.severity.as_str(),
                "code": l.diag.code.as_str(),
                "message": l.diag.message,
                "file": l.file,
                "line": l.line,
                "column": l.column,
                "pointer": l.diag.pointer,
                "hint": l.diag.hint,
            })
        })
        .collect();
    json!({ "ok": ok, "diagnostics": items })
}

fn gh_escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn gh_escape_prop(s: &str) -> String {
    gh_escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// GitHub Actions workflow commands, one per diagnostic.
pub fn github(sources: &SourceMap, diags: &[Diagnostic], prefix: &str) -> String {
    let mut out = String::new();
    for l in locate(sources, diags) {
        let cmd = match l.diag.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "notice",
        };
        let mut props = vec![format!(
            "title={}",
            gh_escape_prop(&format!("bridgectl {}", l.diag.code.as_str()))
        )];
        if let Some(f) = l.file {
            let prefix = if l.in_dir { prefix } else { "" };
            props.push(format!("file={}", gh_escape_prop(&format!("{prefix}{f}"))));
        }
        if let Some(line) = l.line {
            props.push(format!("line={line}"));
        }
        if let Some(c) = l.column {
            props.push(format!("col={c}"));
        }
        let mut msg = l.diag.message.clone();
        if let Some(h) = &l.diag.hint {
            msg.push_str("\nhelp: ");
            msg.push_str(h);
        }
        let _ = writeln!(out, "::{cmd} {}::{}", props.join(","), gh_escape_data(&msg));
    }
    out
}

/// SARIF 2.1.0. Regions are omitted when unknown (never line 0), and no empty objects are written.
pub fn sarif(sources: &SourceMap, diags: &[Diagnostic], prefix: &str) -> Value {
    let mut used: Vec<Code> = diags.iter().map(|d| d.code).collect();
    used.sort();
    used.dedup();
    let rules: Vec<Value> = used
        .iter()
        .map(|c| json!({"id": c.as_str(), "shortDescription": {"text": c.description()}}))
        .collect();
    let results: Vec<Value> = locate(sources, diags)
        .into_iter()
        .map(|l| {
            let level = match l.diag.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
                Severity::Note => "note",
            };
            let mut text = l.diag.message.clone();
            if let Some(h) = &l.diag.hint {
                text.push_str(" (help: ");
                text.push_str(h);
                text.push(')');
            }
            let mut result = json!({
                "ruleId": l.diag.code.as_str(),
                "level": level,
                "message": {"text": text},
            });
            let mut location = serde_json::Map::new();
            if let Some(f) = l.file {
                let prefix = if l.in_dir { prefix } else { "" };
                let mut phys = json!({"artifactLocation": {"uri": format!("{prefix}{f}")}});
                if let (Some(line), Some(col)) = (l.line, l.column) {
                    phys["region"] = json!({"startLine": line, "startColumn": col});
                }
                location.insert("physicalLocation".into(), phys);
            }
            if let Some(p) = &l.diag.pointer
                && !p.is_empty()
            {
                location.insert(
                    "logicalLocations".into(),
                    json!([{"fullyQualifiedName": p}]),
                );
            }
            if !location.is_empty() {
                result["locations"] = json!([Value::Object(location)]);
            }
            result
        })
        .collect();
    json!({
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "bridgectl",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "results": results,
        }]
    })
}
