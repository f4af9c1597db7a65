//! Parser for Traefik router rules such as ``Host(`a.example`) && PathPrefix(`/api`)``, in both rule syntaxes.
//!
//! Traefik reads a rule as a Go expression and then checks each matcher's arguments. This module copies that
//! grammar and those checks, and lowers the result into [`bridge_plan::rule::Rule`] with every value already
//! normalised: hosts lower-cased, Go regexes rewritten into the `regex` crate's syntax, v2 `{name:re}` templates
//! compiled to anchored regexes. That way the runtime never parses anything. Errors carry byte spans into the rule.
//!
//! The stages are files: `lex` (Go tokens), `parse` (an expression of matcher calls), `lower` (the matcher
//! table and Traefik's argument checks, producing the tree), helped by `go_regex` (RE2 → `regex` syntax) and
//! `v2_template` (gorilla/mux templates), and `display` for the way back to a rule string. This file holds the
//! public API and the byte spans every stage shares.

use bridge_plan::rule::Rule;

mod display;
mod go_regex;
mod lex;
mod lower;
mod parse;
#[cfg(test)]
mod tests;
mod v2_template;

pub use display::to_rule_string;
use lower::Lower;
use parse::Parser;

/// Deepest nesting of `(` and `!` accepted. Deeper rules are rejected instead of recursing without
/// bound, and so that the rule's tree stays well inside the plan loader's JSON nesting limit (127).
const MAX_DEPTH: usize = 24;
/// Once this many errors are found in one rule, the rest are not reported.
const MAX_ERRORS: usize = 100;

// === Public API ===

/// Which of Traefik's two rule languages a router uses (`ruleSyntax`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleSyntax {
    /// The Traefik v2 language: multi-value matchers, `Headers`, gorilla/mux `{name:re}` templates.
    V2,
    /// The Traefik v3 language (the default): single-value matchers and plain Go regexes.
    V3,
}

impl RuleSyntax {
    /// The syntax for a router whose `ruleSyntax` is `value`. Traefik compares the value exactly:
    /// `v2` selects the v2 parser, and any other value (`V2` included) falls back to the v3 parser.
    /// A missing or empty value uses `default` (the static `core.defaultRuleSyntax`).
    pub fn from_router(value: Option<&str>, default: RuleSyntax) -> RuleSyntax {
        match value {
            None | Some("") => default,
            Some("v2") => RuleSyntax::V2,
            Some(_) => RuleSyntax::V3,
        }
    }

    fn name(self) -> &'static str {
        match self {
            RuleSyntax::V2 => "v2",
            RuleSyntax::V3 => "v3",
        }
    }
}

/// One problem found in a rule, located by a byte range of the rule string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RuleError {
    /// What is wrong, in one sentence.
    pub message: String,
    /// Byte offset of the offending text in the rule.
    pub offset: usize,
    /// Byte length of the offending text (0 points between two characters, e.g. at the end).
    pub len: usize,
    /// How to fix it, when there is something useful to say.
    pub hint: Option<String>,
}

impl RuleError {
    fn new(message: impl Into<String>, span: Span) -> Self {
        Self {
            message: message.into(),
            offset: span.start,
            len: span.end.saturating_sub(span.start),
            hint: None,
        }
    }

    fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

/// Parses `rule` in `syntax` into a normalised rule tree.
///
/// On failure this returns the first syntax error. If the syntax is valid, it instead returns every error
/// found in matcher names and arguments (capped at 100).
pub fn parse_rule(rule: &str, syntax: RuleSyntax) -> Result<Rule, Vec<RuleError>> {
    let expr = Parser::parse(rule).map_err(|e| vec![e])?;
    let mut lower = Lower {
        syntax,
        errors: Vec::new(),
    };
    let out = lower.expr(&expr);
    match out {
        Some(rule) if lower.errors.is_empty() => Ok(rule),
        _ => {
            if lower.errors.is_empty() {
                // Unreachable by construction (a failed lowering always records why); never return an empty list.
                lower.errors.push(RuleError::new(
                    "the rule is invalid",
                    Span::new(0, rule.len()),
                ));
            }
            Err(lower.errors)
        }
    }
}

/// Traefik's default router priority: the length of the rule in bytes (`GetRulePriority`).
pub fn default_priority(rule: &str) -> i64 {
    i64::try_from(rule.len()).unwrap_or(i64::MAX)
}

// === Spans ===

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: usize,
    end: usize,
}

impl Span {
    fn new(start: usize, end: usize) -> Self {
        Self { start, end }
    }

    fn to(self, other: Span) -> Span {
        Span::new(self.start, other.end.max(self.start))
    }
}
