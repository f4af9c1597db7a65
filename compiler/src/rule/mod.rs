//! Parser for Traefik router rules such as ``Host(`a.example`) && PathPrefix(`/api`)``, in both rule syntaxes.
//!
//! Traefik reads a rule as a Go expression and then checks each matcher's arguments. This module copies that
//! grammar and those checks, and lowers the result into [`bridge_plan::rule::Rule`] with every value already
//! normalised: hosts lower-cased, Go regexes rewritten into the `regex` crate's syntax, v2 `{name:re}` templates
//! compiled to anchored regexes. That way the runtime never parses anything. Errors carry byte spans into the rule.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::str::FromStr;

use bridge_plan::rule::{Matcher, Rule, canonical_header_key};
use ipnet::IpNet;

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

/// Renders a rule tree as a v3 rule string. Parsing the result with [`RuleSyntax::V3`] gives back the same tree
/// for every tree this module produces. Values use backticks unless they contain one, in which case a
/// double-quoted Go string is used. Empty `And`/`Or` lists are never produced by the parser and render as `()`.
pub fn to_rule_string(rule: &Rule) -> String {
    let mut out = String::new();
    render(rule, &mut out);
    out
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

// === Lexer ===
//
// Traefik hands the rule to Go's expression parser (through vulcand/predicate), so the tokens are Go tokens:
// identifiers, string literals, `(`, `)`, `,`, `&&`, `||`, `!`. Whitespace is space, tab, CR and LF. Go inserts a
// semicolon at a line break that follows an identifier, a literal or `)`, so a rule may not continue on the next
// line after one of those. `Newline` stands for that inserted semicolon.

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    Number,
    LParen,
    RParen,
    Comma,
    AndAnd,
    OrOr,
    Bang,
    Newline,
    Punct(char),
    Eof,
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    span: Span,
}

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    /// Whether a line break here would end the expression (Go's automatic semicolon rule).
    semi: bool,
}

impl<'a> Lexer<'a> {
    fn new(src: &'a str) -> Self {
        // Go skips one byte order mark at the very start of the source.
        let pos = if src.starts_with('\u{FEFF}') { 3 } else { 0 };
        Self {
            src,
            pos,
            semi: false,
        }
    }

    fn rest(&self) -> &'a str {
        self.src.get(self.pos..).unwrap_or("")
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn peek2(&self) -> Option<char> {
        self.rest().chars().nth(1)
    }

    fn bump_char(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn slice(&self, start: usize, end: usize) -> &'a str {
        self.src.get(start..end).unwrap_or("")
    }

    fn token(&self, tok: Tok, start: usize) -> Token {
        Token {
            tok,
            span: Span::new(start, self.pos),
        }
    }

    fn next_token(&mut self) -> Result<Token, RuleError> {
        // Skip whitespace and comments; a line break (or a comment containing one) may become a `Newline`.
        loop {
            let start = self.pos;
            match self.peek() {
                Some(' ' | '\t' | '\r') => {
                    self.pos += 1;
                }
                Some('\n') => {
                    self.pos += 1;
                    if self.semi {
                        self.semi = false;
                        return Ok(self.token(Tok::Newline, start));
                    }
                }
                Some('/') if self.peek2() == Some('/') => {
                    let len = self.rest().find('\n').unwrap_or(self.rest().len());
                    self.pos += len;
                    // The line break itself is handled by the next iteration.
                }
                Some('/') if self.peek2() == Some('*') => {
                    let Some(close) = self.rest().get(2..).and_then(|r| r.find("*/")) else {
                        return Err(RuleError::new(
                            "this comment is never closed",
                            Span::new(start, start + 2),
                        )
                        .hint("close it with `*/`"));
                    };
                    let body = self.slice(start, start + 2 + close + 2);
                    self.pos = start + body.len();
                    if self.semi && body.contains('\n') {
                        self.semi = false;
                        return Ok(self.token(Tok::Newline, start));
                    }
                }
                Some('\0') => {
                    return Err(RuleError::new(
                        "the rule contains a NUL character",
                        Span::new(start, start + 1),
                    ));
                }
                Some('\u{FEFF}') => {
                    return Err(RuleError::new(
                        "the rule contains a byte order mark (U+FEFF)",
                        Span::new(start, start + 3),
                    )
                    .hint("remove the invisible U+FEFF character"));
                }
                Some(c) if c.is_whitespace() => {
                    let span = Span::new(start, start + c.len_utf8());
                    return Err(RuleError::new(
                        format!("unexpected whitespace character U+{:04X}", u32::from(c)),
                        span,
                    )
                    .hint("only spaces, tabs and line breaks may separate the parts of a rule"));
                }
                _ => break,
            }
        }

        let start = self.pos;
        let Some(c) = self.bump_char() else {
            self.semi = false;
            return Ok(self.token(Tok::Eof, start));
        };
        self.semi = false;
        let tok = match c {
            '(' => Tok::LParen,
            ')' => {
                self.semi = true;
                Tok::RParen
            }
            ',' => Tok::Comma,
            '!' => Tok::Bang,
            '&' if self.peek() == Some('&') => {
                self.pos += 1;
                Tok::AndAnd
            }
            '|' if self.peek() == Some('|') => {
                self.pos += 1;
                Tok::OrOr
            }
            '`' => {
                self.semi = true;
                Tok::Str(self.raw_string(start)?)
            }
            '"' => {
                self.semi = true;
                Tok::Str(self.quoted_string(start)?)
            }
            '\'' => return Err(self.single_quote(start)),
            c if c == '_' || c.is_alphabetic() => {
                while let Some(n) = self.peek() {
                    if n == '_' || n.is_alphanumeric() {
                        self.pos += n.len_utf8();
                    } else {
                        break;
                    }
                }
                self.semi = true;
                Tok::Ident(self.slice(start, self.pos).to_owned())
            }
            c if c.is_ascii_digit() => {
                while let Some(n) = self.peek() {
                    if n.is_ascii_alphanumeric() || n == '_' || n == '.' {
                        self.pos += 1;
                    } else {
                        break;
                    }
                }
                self.semi = true;
                Tok::Number
            }
            c => Tok::Punct(c),
        };
        Ok(self.token(tok, start))
    }

    /// A Go raw string: everything up to the next backtick, with carriage returns dropped.
    fn raw_string(&mut self, start: usize) -> Result<String, RuleError> {
        let Some(len) = self.rest().find('`') else {
            return Err(RuleError::new(
                "this backtick string is never closed",
                Span::new(start, start + 1),
            )
            .hint("add the closing backtick"));
        };
        let body = self.slice(self.pos, self.pos + len);
        if let Some(i) = body.find('\0') {
            let at = self.pos + i;
            return Err(RuleError::new(
                "the rule contains a NUL character",
                Span::new(at, at + 1),
            ));
        }
        if let Some(i) = body.find('\u{FEFF}') {
            let at = self.pos + i;
            return Err(RuleError::new(
                "the rule contains a byte order mark (U+FEFF)",
                Span::new(at, at + 3),
            ));
        }
        self.pos += len + 1;
        Ok(body.chars().filter(|&c| c != '\r').collect())
    }

    /// A Go interpreted string: `"..."` with Go's escapes. `\x` and octal escapes give bytes, so the result is
    /// checked to be UTF-8 at the end.
    fn quoted_string(&mut self, start: usize) -> Result<String, RuleError> {
        let mut bytes: Vec<u8> = Vec::new();
        loop {
            let at = self.pos;
            match self.bump_char() {
                None | Some('\n') => {
                    return Err(RuleError::new(
                        "this double-quoted string is never closed",
                        Span::new(start, start + 1),
                    )
                    .hint("add the closing `\"`; a double-quoted string cannot span lines"));
                }
                Some('"') => break,
                Some('\0') => {
                    return Err(RuleError::new(
                        "the rule contains a NUL character",
                        Span::new(at, at + 1),
                    ));
                }
                Some('\\') => self.escape(at, &mut bytes)?,
                Some(c) => {
                    let mut buf = [0u8; 4];
                    bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
        String::from_utf8(bytes).map_err(|_| {
            RuleError::new(
                "this string's `\\x` or octal escapes do not form valid UTF-8",
                Span::new(start, self.pos),
            )
            .hint("write the character itself, or use `\\u` escapes")
        })
    }

    fn escape(&mut self, at: usize, bytes: &mut Vec<u8>) -> Result<(), RuleError> {
        let bad =
            |lexer: &Self, msg: String| RuleError::new(msg, Span::new(at, lexer.pos.max(at + 1)));
        let Some(e) = self.bump_char() else {
            return Err(bad(
                self,
                "the string ends in the middle of an escape".into(),
            ));
        };
        let simple = match e {
            'a' => Some(0x07),
            'b' => Some(0x08),
            'f' => Some(0x0C),
            'n' => Some(b'\n'),
            'r' => Some(b'\r'),
            't' => Some(b'\t'),
            'v' => Some(0x0B),
            '\\' => Some(b'\\'),
            '"' => Some(b'"'),
            _ => None,
        };
        if let Some(b) = simple {
            bytes.push(b);
            return Ok(());
        }
        let digits = |lexer: &mut Self, n: usize, radix: u32| -> Option<u32> {
            let mut v: u32 = 0;
            for _ in 0..n {
                let d = lexer.peek()?.to_digit(radix)?;
                lexer.pos += 1;
                v = v * radix + d;
            }
            Some(v)
        };
        match e {
            '0'..='7' => {
                let first = e.to_digit(8).unwrap_or(0);
                let Some(rest) = digits(self, 2, 8) else {
                    return Err(bad(
                        self,
                        "an octal escape needs exactly three digits (`\\101`)".into(),
                    ));
                };
                let v = first * 64 + rest;
                let Ok(b) = u8::try_from(v) else {
                    return Err(bad(self, "octal escape value is greater than 255".into()));
                };
                bytes.push(b);
            }
            'x' => {
                let Some(v) = digits(self, 2, 16) else {
                    return Err(bad(
                        self,
                        "a `\\x` escape needs exactly two hex digits".into(),
                    ));
                };
                bytes.push(u8::try_from(v).unwrap_or(0));
            }
            'u' | 'U' => {
                let n = if e == 'u' { 4 } else { 8 };
                let Some(v) = digits(self, n, 16) else {
                    return Err(bad(
                        self,
                        format!("a `\\{e}` escape needs exactly {n} hex digits"),
                    ));
                };
                let Some(c) = char::from_u32(v) else {
                    return Err(bad(
                        self,
                        format!("`\\{e}{v:0n$X}` is not a valid Unicode code point"),
                    ));
                };
                let mut buf = [0u8; 4];
                bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
            '\'' => {
                return Err(bad(
                    self,
                    "`\\'` is not a valid escape in a double-quoted string".into(),
                )
                .hint("write `'` without a backslash"));
            }
            other => {
                return Err(bad(self, format!("unknown escape sequence `\\{other}`"))
                    .hint("double-quoted strings use Go escapes (`\\\\`, `\\\"`, `\\n`, `\\u00e9`); use backticks for raw text"));
            }
        }
        Ok(())
    }

    fn single_quote(&self, start: usize) -> RuleError {
        // Point at the whole single-quoted text when it is closed on the same line.
        let after = self.rest();
        let line = after.split('\n').next().unwrap_or("");
        let (span, hint) = match line.find('\'') {
            Some(end) => {
                let content = line.get(..end).unwrap_or("");
                (
                    Span::new(start, self.pos + end + 1),
                    format!("use backticks or double quotes: {}", quote(content)),
                )
            }
            None => (
                Span::new(start, start + 1),
                "use backticks (`...`) or double quotes (\"...\")".to_owned(),
            ),
        };
        RuleError::new("single quotes are not allowed around rule values", span).hint(hint)
    }
}

// === Parser ===

#[derive(Debug)]
enum Expr {
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Not(Box<Expr>),
    Call(Call),
}

#[derive(Debug)]
struct Call {
    name: String,
    name_span: Span,
    args: Vec<Arg>,
    /// From the matcher name to the closing parenthesis.
    span: Span,
}

#[derive(Debug)]
struct Arg {
    value: String,
    span: Span,
}

struct Parser<'a> {
    lexer: Lexer<'a>,
    tok: Token,
    depth: usize,
}

impl<'a> Parser<'a> {
    fn parse(src: &'a str) -> Result<Expr, RuleError> {
        let mut lexer = Lexer::new(src);
        let tok = lexer.next_token()?;
        let mut p = Parser {
            lexer,
            tok,
            depth: 0,
        };
        if matches!(p.tok.tok, Tok::Eof) {
            return Err(RuleError::new("the rule is empty", Span::new(0, src.len()))
                .hint("a rule needs at least one matcher, e.g. Host(`example.com`)"));
        }
        let expr = p.or()?;
        if matches!(p.tok.tok, Tok::Newline) {
            let newline = p.tok.span;
            p.bump()?;
            if !matches!(p.tok.tok, Tok::Eof) {
                return Err(newline_error(newline));
            }
        }
        match p.tok.tok {
            Tok::Eof => Ok(expr),
            _ => Err(p.after_operand(None)),
        }
    }

    fn bump(&mut self) -> Result<(), RuleError> {
        self.tok = self.lexer.next_token()?;
        Ok(())
    }

    fn enter(&mut self, span: Span) -> Result<(), RuleError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(RuleError::new(
                format!("the rule nests `(` and `!` more than {MAX_DEPTH} levels deep"),
                span,
            )
            .hint("simplify the rule"));
        }
        Ok(())
    }

    fn or(&mut self) -> Result<Expr, RuleError> {
        let mut items = vec![self.and()?];
        while matches!(self.tok.tok, Tok::OrOr) {
            self.bump()?;
            items.push(self.and()?);
        }
        Ok(if items.len() == 1 {
            items.swap_remove(0)
        } else {
            Expr::Or(items)
        })
    }

    fn and(&mut self) -> Result<Expr, RuleError> {
        let mut items = vec![self.unary()?];
        while matches!(self.tok.tok, Tok::AndAnd) {
            self.bump()?;
            items.push(self.unary()?);
        }
        Ok(if items.len() == 1 {
            items.swap_remove(0)
        } else {
            Expr::And(items)
        })
    }

    fn unary(&mut self) -> Result<Expr, RuleError> {
        if matches!(self.tok.tok, Tok::Bang) {
            self.enter(self.tok.span)?;
            self.bump()?;
            let inner = self.unary()?;
            self.depth -= 1;
            return Ok(Expr::Not(Box::new(inner)));
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Expr, RuleError> {
        match &self.tok.tok {
            Tok::LParen => {
                let open = self.tok.span;
                self.enter(open)?;
                self.bump()?;
                let inner = self.or()?;
                match self.tok.tok {
                    Tok::RParen => {}
                    Tok::Eof => return Err(unclosed(open)),
                    _ => return Err(self.after_operand(Some(open))),
                }
                self.bump()?;
                self.depth -= 1;
                Ok(inner)
            }
            Tok::Ident(name) => {
                let name = name.clone();
                self.call(name)
            }
            _ => Err(self.expected_operand()),
        }
    }

    fn call(&mut self, name: String) -> Result<Expr, RuleError> {
        let name_span = self.tok.span;
        self.bump()?;
        if !matches!(self.tok.tok, Tok::LParen) {
            return Err(not_a_call(&name, name_span));
        }
        let open = self.tok.span;
        self.bump()?;
        let mut args = Vec::new();
        loop {
            match &self.tok.tok {
                Tok::RParen => break,
                Tok::Str(value) => {
                    args.push(Arg {
                        value: value.clone(),
                        span: self.tok.span,
                    });
                    self.bump()?;
                    match self.tok.tok {
                        Tok::Comma => self.bump()?,
                        Tok::RParen => break,
                        _ => return Err(self.in_args(&name, open, true)),
                    }
                }
                _ => return Err(self.in_args(&name, open, false)),
            }
        }
        let close = self.tok.span;
        self.bump()?;
        Ok(Expr::Call(Call {
            name,
            name_span,
            args,
            span: name_span.to(close),
        }))
    }

    // --- syntax error messages ---

    /// The current token cannot start a matcher.
    fn expected_operand(&self) -> RuleError {
        let span = self.tok.span;
        match &self.tok.tok {
            Tok::Eof => RuleError::new("the rule ends where a matcher is expected", span)
                .hint("add a matcher such as Host(`example.com`), or remove the trailing operator"),
            Tok::RParen => RuleError::new("expected a matcher before `)`", span),
            Tok::AndAnd | Tok::OrOr => RuleError::new(
                format!("expected a matcher before `{}`", self.text(span)),
                span,
            ),
            Tok::Str(_) => RuleError::new("a quoted value must be the argument of a matcher", span)
                .hint("e.g. Host(`example.com`)"),
            Tok::Number => RuleError::new("expected a matcher, found a number", span),
            Tok::Newline => newline_error(span),
            Tok::Punct(c) => punct_error(*c, span),
            Tok::Ident(_) | Tok::LParen | Tok::Comma | Tok::Bang => RuleError::new(
                format!("expected a matcher, found `{}`", self.text(span)),
                span,
            ),
        }
    }

    /// A complete operand was parsed and the current token is neither an operator nor the expected end.
    fn after_operand(&self, open: Option<Span>) -> RuleError {
        let span = self.tok.span;
        match &self.tok.tok {
            Tok::Newline => newline_error(span),
            Tok::Ident(word) if word.eq_ignore_ascii_case("and") => {
                RuleError::new(format!("`{word}` is not an operator"), span).hint("use `&&`")
            }
            Tok::Ident(word) if word.eq_ignore_ascii_case("or") => {
                RuleError::new(format!("`{word}` is not an operator"), span).hint("use `||`")
            }
            Tok::Ident(_) | Tok::LParen | Tok::Bang | Tok::Str(_) | Tok::Number => {
                RuleError::new("expected `&&` or `||` before this", span)
                    .hint("join matchers with `&&` (and) or `||` (or)")
            }
            Tok::RParen if open.is_none() => RuleError::new("this `)` has no matching `(`", span),
            Tok::Punct(c) => punct_error(*c, span),
            _ => match open {
                Some(open) => unclosed(open),
                None => RuleError::new(format!("unexpected `{}`", self.text(span)), span),
            },
        }
    }

    /// Something other than a string, `,` or `)` inside a matcher's parentheses.
    fn in_args(&self, name: &str, open: Span, after_arg: bool) -> RuleError {
        let span = self.tok.span;
        match &self.tok.tok {
            Tok::Eof => unclosed(open),
            Tok::Newline => RuleError::new("missing `,` before the line break in the argument list", span)
                .hint("Traefik reads rules as Go expressions: end the line with `,` or keep `)` on the same line"),
            Tok::Str(_) if after_arg => RuleError::new("missing `,` between arguments", span),
            Tok::Comma => RuleError::new("expected an argument before `,`", span),
            Tok::Ident(_) | Tok::Number | Tok::Punct(_) if !after_arg => {
                // Quote whatever runs up to the next `,` or `)` to show the fix.
                let rest = self.lexer.src.get(span.start..).unwrap_or("");
                let end = rest.find([',', ')']).unwrap_or(rest.len());
                let raw = rest.get(..end).unwrap_or("").trim_end();
                RuleError::new("matcher arguments must be quoted strings", Span::new(span.start, span.start + raw.len()))
                    .hint(format!("write {name}({})", quote(raw)))
            }
            _ if after_arg => RuleError::new(
                format!("expected `,` or `)` after the argument, found `{}`", self.text(span)),
                span,
            ),
            _ => RuleError::new(format!("expected a quoted argument, found `{}`", self.text(span)), span),
        }
    }

    fn text(&self, span: Span) -> &'a str {
        self.lexer.slice(span.start, span.end)
    }
}

fn newline_error(span: Span) -> RuleError {
    RuleError::new("the rule ends at this line break, but more text follows", span).hint(
        "Traefik reads rules as Go expressions, where a line break after `)` ends the expression; \
         put `&&`/`||` at the end of the line instead of the start of the next, or fold the YAML string with `>-`",
    )
}

fn unclosed(open: Span) -> RuleError {
    RuleError::new("this `(` is never closed", open).hint("add the missing `)`")
}

fn punct_error(c: char, span: Span) -> RuleError {
    match c {
        '&' => RuleError::new("`&` is not an operator", span).hint("use `&&`"),
        '|' => RuleError::new("`|` is not an operator", span).hint("use `||`"),
        '=' => RuleError::new("rules cannot compare values with `=`", span)
            .hint("pass the value to a matcher instead, e.g. Header(`X-Env`, `prod`)"),
        _ => RuleError::new(format!("unexpected `{c}`"), span),
    }
}

fn not_a_call(name: &str, span: Span) -> RuleError {
    let err = RuleError::new(format!("`{name}` is not a matcher call"), span);
    match name.to_ascii_lowercase().as_str() {
        "and" => err.hint("use `&&`"),
        "or" => err.hint("use `||`"),
        "not" => err.hint("use `!`"),
        _ => err.hint("matchers take their arguments in parentheses, e.g. Host(`example.com`)"),
    }
}

// === Matcher table ===

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Host,
    HostRegexp,
    Path,
    PathPrefix,
    PathRegexp,
    Method,
    Header,
    HeaderRegexp,
    Query,
    QueryRegexp,
    ClientIp,
    // v2 only
    HostHeader,
    Headers,
    HeadersRegexp,
}

const V3_MATCHERS: &[(&str, Kind)] = &[
    ("ClientIP", Kind::ClientIp),
    ("Method", Kind::Method),
    ("Host", Kind::Host),
    ("HostRegexp", Kind::HostRegexp),
    ("Path", Kind::Path),
    ("PathRegexp", Kind::PathRegexp),
    ("PathPrefix", Kind::PathPrefix),
    ("Header", Kind::Header),
    ("HeaderRegexp", Kind::HeaderRegexp),
    ("Query", Kind::Query),
    ("QueryRegexp", Kind::QueryRegexp),
];

const V2_MATCHERS: &[(&str, Kind)] = &[
    ("Host", Kind::Host),
    ("HostHeader", Kind::HostHeader),
    ("HostRegexp", Kind::HostRegexp),
    ("ClientIP", Kind::ClientIp),
    ("Path", Kind::Path),
    ("PathPrefix", Kind::PathPrefix),
    ("Method", Kind::Method),
    ("Headers", Kind::Headers),
    ("HeadersRegexp", Kind::HeadersRegexp),
    ("Query", Kind::Query),
];

/// Matcher names that belong to TCP routers only.
const TCP_MATCHERS: &[&str] = &["HostSNI", "HostSNIRegexp", "ALPN"];

/// Traefik registers each matcher under four spellings: as defined, lower, upper and `strings.Title` of the
/// lower-case name (`PathPrefix`, `pathprefix`, `PATHPREFIX`, `Pathprefix`).
fn spelled_as(defined: &str, written: &str) -> bool {
    if written == defined {
        return true;
    }
    let lower = defined.to_ascii_lowercase();
    if written == lower || written == defined.to_ascii_uppercase() {
        return true;
    }
    let mut chars = lower.chars();
    let title: String = chars
        .next()
        .map(|c| c.to_ascii_uppercase())
        .into_iter()
        .chain(chars)
        .collect();
    written == title
}

fn table(syntax: RuleSyntax) -> &'static [(&'static str, Kind)] {
    match syntax {
        RuleSyntax::V2 => V2_MATCHERS,
        RuleSyntax::V3 => V3_MATCHERS,
    }
}

fn defined_name(kind: Kind) -> &'static str {
    V3_MATCHERS
        .iter()
        .chain(V2_MATCHERS)
        .find(|(_, k)| *k == kind)
        .map(|(n, _)| *n)
        .unwrap_or("?")
}

/// An example call, for hints.
fn example(kind: Kind) -> &'static str {
    match kind {
        Kind::Host | Kind::HostHeader => "Host(`example.com`)",
        Kind::HostRegexp => "HostRegexp(`^[a-z]+\\.example\\.com$`)",
        Kind::Path => "Path(`/api`)",
        Kind::PathPrefix => "PathPrefix(`/api`)",
        Kind::PathRegexp => "PathRegexp(`^/api/v[0-9]+`)",
        Kind::Method => "Method(`GET`)",
        Kind::Header => "Header(`X-Forwarded-Proto`, `https`)",
        Kind::HeaderRegexp => "HeaderRegexp(`User-Agent`, `^curl/`)",
        Kind::Query => "Query(`debug`, `1`)",
        Kind::QueryRegexp => "QueryRegexp(`page`, `^[0-9]+$`)",
        Kind::ClientIp => "ClientIP(`10.0.0.0/8`)",
        Kind::Headers => "Headers(`X-Forwarded-Proto`, `https`)",
        Kind::HeadersRegexp => "HeadersRegexp(`User-Agent`, `^curl/`)",
    }
}

// === Lowering: matcher calls to the plan's rule tree ===

struct Lower {
    syntax: RuleSyntax,
    errors: Vec<RuleError>,
}

impl Lower {
    fn error(&mut self, err: RuleError) {
        if self.errors.len() < MAX_ERRORS {
            self.errors.push(err);
        }
    }

    fn expr(&mut self, e: &Expr) -> Option<Rule> {
        match e {
            Expr::And(items) => {
                let parts: Vec<Option<Rule>> = items.iter().map(|i| self.expr(i)).collect();
                Some(and(parts.into_iter().collect::<Option<Vec<_>>>()?))
            }
            Expr::Or(items) => {
                let parts: Vec<Option<Rule>> = items.iter().map(|i| self.expr(i)).collect();
                Some(or(parts.into_iter().collect::<Option<Vec<_>>>()?))
            }
            Expr::Not(inner) => Some(Rule::Not(Box::new(self.expr(inner)?))),
            Expr::Call(call) => self.call(call),
        }
    }

    fn call(&mut self, call: &Call) -> Option<Rule> {
        let kind = self.resolve(call)?;
        let name = defined_name(kind);
        // Traefik's CheckRule: no argument list may be empty, and no argument may be empty.
        if call.args.is_empty() {
            self.error(
                RuleError::new(format!("`{name}` needs an argument"), call.span)
                    .hint(format!("e.g. {}", example(kind))),
            );
            return None;
        }
        let mut ok = true;
        for arg in &call.args {
            if arg.value.is_empty() {
                self.error(RuleError::new(
                    format!("empty argument to `{name}`"),
                    arg.span,
                ));
                ok = false;
            }
        }
        if !ok {
            return None;
        }
        match self.syntax {
            RuleSyntax::V3 => self.v3(kind, call),
            RuleSyntax::V2 => self.v2(kind, call),
        }
    }

    /// Finds the matcher a call names, or records why the name is not accepted.
    fn resolve(&mut self, call: &Call) -> Option<Kind> {
        let written = call.name.as_str();
        let own = table(self.syntax);
        if let Some((_, kind)) = own.iter().find(|(defined, _)| spelled_as(defined, written)) {
            return Some(*kind);
        }
        let span = call.name_span;
        let syntax = self.syntax.name();
        // A known matcher in a spelling Traefik does not register (`pathPrefix`).
        if let Some((defined, _)) = own.iter().find(|(d, _)| d.eq_ignore_ascii_case(written)) {
            let lower = defined.to_ascii_lowercase();
            let upper = defined.to_ascii_uppercase();
            let title = format!(
                "{}{}",
                upper.get(..1).unwrap_or(""),
                lower.get(1..).unwrap_or("")
            );
            self.error(
                RuleError::new(format!("unknown matcher `{written}`: Traefik accepts only four spellings of `{defined}`"), span)
                    .hint(format!("did you mean `{defined}`? (also accepted: `{lower}`, `{upper}`, `{title}`)")),
            );
            return None;
        }
        // A matcher of the other syntax.
        let other = match self.syntax {
            RuleSyntax::V2 => V3_MATCHERS,
            RuleSyntax::V3 => V2_MATCHERS,
        };
        if let Some((defined, kind)) = other.iter().find(|(d, _)| d.eq_ignore_ascii_case(written)) {
            let message = format!("`{defined}` is not a matcher in ruleSyntax {syntax}");
            let hint = match (self.syntax, kind) {
                (RuleSyntax::V3, Kind::Headers) => {
                    "in v3 it is called `Header`; or set `ruleSyntax: v2`".to_owned()
                }
                (RuleSyntax::V3, Kind::HeadersRegexp) => {
                    "in v3 it is called `HeaderRegexp`; or set `ruleSyntax: v2`".to_owned()
                }
                (RuleSyntax::V3, Kind::HostHeader) => {
                    "in v3 use `Host`; or set `ruleSyntax: v2`".to_owned()
                }
                (RuleSyntax::V2, Kind::Header) => {
                    "in v2 it is called `Headers`; or set `ruleSyntax: v3`".to_owned()
                }
                (RuleSyntax::V2, Kind::HeaderRegexp) => {
                    "in v2 it is called `HeadersRegexp`; or set `ruleSyntax: v3`".to_owned()
                }
                (RuleSyntax::V2, Kind::PathRegexp) => {
                    "in v2 use a `Path(`/{name:regex}`)` template; or set `ruleSyntax: v3`"
                        .to_owned()
                }
                (RuleSyntax::V2, Kind::QueryRegexp) => {
                    "in v2 use a `Query(`key={name:regex}`)` template; or set `ruleSyntax: v3`"
                        .to_owned()
                }
                _ => "set `ruleSyntax` to the syntax this rule is written in".to_owned(),
            };
            self.error(RuleError::new(message, span).hint(hint));
            return None;
        }
        if let Some(tcp) = TCP_MATCHERS
            .iter()
            .find(|t| t.eq_ignore_ascii_case(written))
        {
            self.error(
                RuleError::new(
                    format!("`{tcp}` is a TCP router matcher, not valid in an HTTP router rule"),
                    span,
                )
                .hint("for HTTP routers use `Host`"),
            );
            return None;
        }
        let mut err = RuleError::new(format!("unknown matcher `{written}`"), span);
        if let Some(best) = did_you_mean(written, own.iter().map(|(d, _)| *d)) {
            err = err.hint(format!("did you mean `{best}`?"));
        } else {
            let names: Vec<&str> = own.iter().map(|(d, _)| *d).collect();
            err = err.hint(format!(
                "ruleSyntax {syntax} matchers: {}",
                names.join(", ")
            ));
        }
        self.error(err);
        None
    }

    // --- v3 ---

    fn v3(&mut self, kind: Kind, call: &Call) -> Option<Rule> {
        let (min, max, expected) = match kind {
            Kind::Header | Kind::HeaderRegexp => (2, 2, "exactly 2 arguments (name, value)"),
            Kind::Query | Kind::QueryRegexp => (1, 2, "1 or 2 arguments (key, optional value)"),
            _ => (1, 1, "exactly 1 argument"),
        };
        let n = call.args.len();
        let name = defined_name(kind);
        if n < min || n > max {
            let span = match call.args.get(max) {
                Some(first_extra) if n > max => first_extra.span.to(call.args[n - 1].span),
                _ => call.span,
            };
            let mut err = RuleError::new(format!("`{name}` takes {expected}, got {n}"), span);
            err = if n > max && max == 1 {
                let alternatives: Vec<String> = call
                    .args
                    .iter()
                    .map(|a| format!("{name}({})", quote(&a.value)))
                    .collect();
                err.hint(format!(
                    "in ruleSyntax v3 every matcher takes one value; combine with ||: `{}`, or set `ruleSyntax: v2`",
                    alternatives.join(" || ")
                ))
            } else {
                err.hint(format!("e.g. {}", example(kind)))
            };
            self.error(err);
            return None;
        }
        let a0 = &call.args[0];
        let a1 = call.args.get(1);
        let matcher = match kind {
            Kind::Host => Matcher::Host {
                host: self.host(a0, true)?,
            },
            Kind::HostRegexp => {
                if !a0.value.is_ascii() {
                    self.error(
                        RuleError::new(
                            "`HostRegexp` only accepts ASCII; this regex has non-ASCII characters",
                            a0.span,
                        )
                        .hint("write internationalised names in their punycode form (xn--...)"),
                    );
                    return None;
                }
                Matcher::HostRegexp {
                    regex: self.regex(name, a0)?,
                }
            }
            Kind::Path => Matcher::Path {
                path: self.slash(name, a0)?,
            },
            Kind::PathPrefix => Matcher::PathPrefix {
                prefix: self.slash(name, a0)?,
            },
            Kind::PathRegexp => Matcher::PathRegexp {
                regex: self.regex(name, a0)?,
            },
            Kind::Method => Matcher::Method {
                method: a0.value.to_uppercase(),
            },
            Kind::Header => Matcher::Header {
                name: canonical_header_key(&a0.value),
                value: a1.map(|a| a.value.clone()).unwrap_or_default(),
            },
            Kind::HeaderRegexp => {
                let regex = self.regex(name, a1?)?;
                Matcher::HeaderRegexp {
                    name: canonical_header_key(&a0.value),
                    regex,
                }
            }
            Kind::Query => Matcher::Query {
                key: a0.value.clone(),
                value: a1.map(|a| a.value.clone()).unwrap_or_default(),
            },
            // Traefik's one-argument QueryRegexp is literally its Query matcher (key present with an empty
            // value), so it becomes a `Query` with value "".
            Kind::QueryRegexp => match a1 {
                None => Matcher::Query {
                    key: a0.value.clone(),
                    value: String::new(),
                },
                Some(re) => Matcher::QueryRegexp {
                    key: a0.value.clone(),
                    regex: self.regex(name, re)?,
                },
            },
            Kind::ClientIp => Matcher::ClientIp {
                cidr: self.client_ip(a0)?,
            },
            Kind::HostHeader | Kind::Headers | Kind::HeadersRegexp => return None,
        };
        Some(Rule::Match(matcher))
    }

    // --- v2 ---

    fn v2(&mut self, kind: Kind, call: &Call) -> Option<Rule> {
        let name = defined_name(kind);
        match kind {
            Kind::Host | Kind::HostHeader => self.each(call, |l, a| {
                Some(Matcher::Host {
                    host: l.host(a, false)?,
                })
            }),
            Kind::HostRegexp => self.each(call, |l, a| {
                Some(Matcher::HostRegexp {
                    regex: l.v2_host_regexp(a)?,
                })
            }),
            Kind::Path | Kind::PathPrefix => {
                let prefix = kind == Kind::PathPrefix;
                self.each(call, |l, a| l.v2_path(name, a, prefix))
            }
            Kind::Method => self.each(call, |_, a| {
                Some(Matcher::Method {
                    method: a.value.to_uppercase(),
                })
            }),
            Kind::ClientIp => self.each(call, |l, a| {
                Some(Matcher::ClientIp {
                    cidr: l.client_ip(a)?,
                })
            }),
            Kind::Headers | Kind::HeadersRegexp => {
                if !call.args.len().is_multiple_of(2) {
                    self.error(
                        RuleError::new(
                            format!(
                                "`{name}` takes name/value pairs, got {} arguments",
                                call.args.len()
                            ),
                            call.span,
                        )
                        .hint(format!("e.g. {}", example(kind))),
                    );
                    return None;
                }
                let mut parts = Vec::new();
                for pair in call.args.chunks(2) {
                    let [key, value] = pair else { return None };
                    let header = canonical_header_key(&key.value);
                    parts.push(if kind == Kind::Headers {
                        Some(Rule::Match(Matcher::Header {
                            name: header,
                            value: value.value.clone(),
                        }))
                    } else {
                        self.regex(name, value).map(|regex| {
                            Rule::Match(Matcher::HeaderRegexp {
                                name: header,
                                regex,
                            })
                        })
                    });
                }
                Some(and(parts.into_iter().collect::<Option<Vec<_>>>()?))
            }
            Kind::Query => {
                let parts: Vec<Option<Rule>> = call
                    .args
                    .iter()
                    .map(|a| self.v2_query(a).map(Rule::Match))
                    .collect();
                Some(and(parts.into_iter().collect::<Option<Vec<_>>>()?))
            }
            Kind::HeaderRegexp | Kind::Header | Kind::PathRegexp | Kind::QueryRegexp => None,
        }
    }

    /// v2 multi-value matchers: one matcher per argument, any of which may match.
    fn each(
        &mut self,
        call: &Call,
        mut f: impl FnMut(&mut Self, &Arg) -> Option<Matcher>,
    ) -> Option<Rule> {
        let parts: Vec<Option<Rule>> = call
            .args
            .iter()
            .map(|a| f(self, a).map(Rule::Match))
            .collect();
        Some(or(parts.into_iter().collect::<Option<Vec<_>>>()?))
    }

    fn v2_host_regexp(&mut self, arg: &Arg) -> Option<String> {
        if !arg.value.is_ascii() {
            self.error(
                RuleError::new(
                    "`HostRegexp` only accepts ASCII; this value has non-ASCII characters",
                    arg.span,
                )
                .hint("write internationalised names in their punycode form (xn--...)"),
            );
            return None;
        }
        let compiled = v2_template(&arg.value, Template::Host).map(|re| {
            re.unwrap_or_else(|| format!("^{}$", regex::escape(&arg.value.to_ascii_lowercase())))
        });
        match compiled {
            Ok(re) => self.compiles("HostRegexp", arg, re),
            Err(message) => {
                self.error(RuleError::new(message, arg.span).hint(
                    "in ruleSyntax v2, HostRegexp takes a gorilla/mux template: literal host text plus \
                     `{name:regex}` placeholders, e.g. HostRegexp(`{sub:[a-z0-9-]+}.example.com`); \
                     or set `ruleSyntax: v3` to write a plain regex",
                ));
                None
            }
        }
    }

    fn v2_path(&mut self, name: &str, arg: &Arg, prefix: bool) -> Option<Matcher> {
        let path = self.slash(name, arg)?;
        let kind = if prefix {
            Template::Prefix
        } else {
            Template::Path
        };
        match v2_template(&path, kind) {
            Ok(None) if prefix => Some(Matcher::PathPrefix { prefix: path }),
            Ok(None) => Some(Matcher::Path { path }),
            Ok(Some(re)) => Some(Matcher::PathRegexp {
                regex: self.compiles(name, arg, re)?,
            }),
            Err(message) => {
                self.error(
                    RuleError::new(format!("invalid `{name}` template: {message}"), arg.span).hint(
                        "in ruleSyntax v2, placeholders are written `{name}` or `{name:regex}`; \
                     literal braces are not allowed",
                    ),
                );
                None
            }
        }
    }

    /// v2 `Query(`key=value`)`. gorilla/mux matches the first value of `key` against `^key=value$`, where the
    /// value may hold `{name:re}` placeholders and an empty value means "present with any value".
    fn v2_query(&mut self, arg: &Arg) -> Option<Matcher> {
        let Some((key, value)) = arg.value.split_once('=') else {
            // Traefik splits every argument at `=` and pairs the pieces up: a lone `Query(`k`)` fails
            // ("number of parameters must be multiple of 2") and `Query(`a`, `b`)` quietly means a=b. Both are
            // rejected here.
            self.error(
                RuleError::new("in ruleSyntax v2, `Query` arguments are `key=value` pairs", arg.span).hint(format!(
                    "write Query({}) to require `{}` with any value, or set `ruleSyntax: v3` to use Query({})",
                    quote(&format!("{}=", arg.value)),
                    arg.value,
                    quote(&arg.value),
                )),
            );
            return None;
        };
        if key.is_empty() {
            self.error(
                RuleError::new("empty query parameter name", arg.span)
                    .hint("e.g. Query(`debug=1`)"),
            );
            return None;
        }
        if key.contains(['{', '}']) {
            self.error(RuleError::new(
                "placeholders in query parameter names are not supported by bridgectl",
                arg.span,
            ));
            return None;
        }
        if value.is_empty() {
            return Some(Matcher::QueryRegexp {
                key: key.to_owned(),
                regex: "^.*$".to_owned(),
            });
        }
        match v2_template(value, Template::Query) {
            Ok(None) => Some(Matcher::Query {
                key: key.to_owned(),
                value: value.to_owned(),
            }),
            Ok(Some(re)) => Some(Matcher::QueryRegexp {
                key: key.to_owned(),
                regex: self.compiles("Query", arg, re)?,
            }),
            Err(message) => {
                self.error(RuleError::new(
                    format!("invalid `Query` template: {message}"),
                    arg.span,
                ));
                None
            }
        }
    }

    // --- argument checks ---

    fn host(&mut self, arg: &Arg, wildcards: bool) -> Option<String> {
        let value = arg.value.as_str();
        if !value.is_ascii() {
            let mut err = RuleError::new(
                format!(
                    "`Host` only accepts ASCII host names; {} has non-ASCII characters",
                    quote(value)
                ),
                arg.span,
            );
            err = match url::Host::parse(value) {
                Ok(url::Host::Domain(puny)) if puny.is_ascii() => {
                    err.hint(format!("use the punycode form: Host({})", quote(&puny)))
                }
                _ => err.hint("write the host in its punycode form (xn--...)"),
            };
            self.error(err);
            return None;
        }
        let mut host = value.to_ascii_lowercase();
        if host.ends_with('.') {
            host.pop();
        }
        if host.is_empty() {
            self.error(RuleError::new(
                format!("{} is not a host name", quote(value)),
                arg.span,
            ));
            return None;
        }
        if !wildcards && host.contains('*') {
            self.error(
                RuleError::new(
                    "`*` wildcards in `Host` need ruleSyntax v3 (Traefik v3.7+); in ruleSyntax v2 the `*` is literal, \
                     so Traefik accepts this rule but it never matches (bridgectl rejects it on purpose)",
                    arg.span,
                )
                .hint("set `ruleSyntax: v3`, or use HostRegexp(`{sub:[a-z0-9-]+}.example.com`)"),
            );
            return None;
        }
        Some(host)
    }

    fn slash(&mut self, name: &str, arg: &Arg) -> Option<String> {
        if arg.value.starts_with('/') {
            return Some(arg.value.clone());
        }
        self.error(
            RuleError::new(format!("`{name}` must start with `/`"), arg.span).hint(format!(
                "write {name}({})",
                quote(&format!("/{}", arg.value))
            )),
        );
        None
    }

    fn client_ip(&mut self, arg: &Arg) -> Option<String> {
        match parse_client_ip(&arg.value) {
            Some(cidr) => Some(cidr),
            None => {
                self.error(
                    RuleError::new(
                        format!("{} is not an IP address or CIDR range", quote(&arg.value)),
                        arg.span,
                    )
                    .hint("e.g. ClientIP(`192.168.1.0/24`) or ClientIP(`10.0.0.1`)"),
                );
                None
            }
        }
    }

    /// A Go regex written by the user, translated for the `regex` crate and compiled.
    fn regex(&mut self, name: &str, arg: &Arg) -> Option<String> {
        match go_regex_to_rust(&arg.value) {
            Ok(re) => self.compiles(name, arg, re),
            Err(message) => {
                self.error(RuleError::new(
                    format!("invalid regex in `{name}`: {message}"),
                    arg.span,
                ));
                None
            }
        }
    }

    fn compiles(&mut self, name: &str, arg: &Arg, re: String) -> Option<String> {
        match regex::Regex::new(&re) {
            Ok(_) => Some(re),
            Err(e) => {
                let mut err = RuleError::new(
                    format!("invalid regex in `{name}`: {}", regex_error_message(&e)),
                    arg.span,
                );
                if self.syntax == RuleSyntax::V3
                    && arg.value.contains('{')
                    && arg.value.contains(':')
                {
                    err = err.hint(
                        "this looks like a v2 `{name:regex}` template; in ruleSyntax v3 write a plain regex, \
                         or set `ruleSyntax: v2`",
                    );
                }
                self.error(err);
                None
            }
        }
    }
}

/// `And` of the parts, flattening nested `And`s and never wrapping a single part.
fn and(parts: Vec<Rule>) -> Rule {
    let mut out = Vec::with_capacity(parts.len());
    for p in parts {
        match p {
            Rule::And(inner) => out.extend(inner),
            other => out.push(other),
        }
    }
    if out.len() == 1 {
        out.swap_remove(0)
    } else {
        Rule::And(out)
    }
}

/// `Or` of the parts, flattening nested `Or`s and never wrapping a single part.
fn or(parts: Vec<Rule>) -> Rule {
    let mut out = Vec::with_capacity(parts.len());
    for p in parts {
        match p {
            Rule::Or(inner) => out.extend(inner),
            other => out.push(other),
        }
    }
    if out.len() == 1 {
        out.swap_remove(0)
    } else {
        Rule::Or(out)
    }
}

fn did_you_mean<'a>(got: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let got = got.to_lowercase();
    let mut best: Option<(f64, &str)> = None;
    for c in candidates {
        let score = strsim::jaro_winkler(&got, &c.to_ascii_lowercase());
        if score >= 0.8 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, c));
        }
    }
    best.map(|(_, c)| c)
}

/// A bare address becomes a /32 or /128 network; a CIDR keeps its prefix with the host bits cleared, as Go's
/// `net.ParseCIDR` does.
fn parse_client_ip(value: &str) -> Option<String> {
    if value.contains('/') {
        IpNet::from_str(value)
            .ok()
            .map(|net| net.trunc().to_string())
    } else {
        IpAddr::from_str(value)
            .ok()
            .map(|ip| IpNet::from(ip).to_string())
    }
}

fn regex_error_message(e: &regex::Error) -> String {
    match e {
        regex::Error::Syntax(text) => text
            .lines()
            .rev()
            .find_map(|l| l.trim().strip_prefix("error: "))
            .map(str::to_owned)
            .unwrap_or_else(|| text.trim().to_owned()),
        regex::Error::CompiledTooBig(limit) => {
            format!("the compiled regex exceeds the size limit of {limit} bytes")
        }
        other => other.to_string(),
    }
}

// === v2 (gorilla/mux) templates ===

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Template {
    Host,
    Path,
    Prefix,
    Query,
}

/// Compiles a gorilla/mux route template. Text outside `{...}` is literal; `{name}` uses the default pattern
/// for the part (`[^.]+` in a host, `[^/]+` in a path, `.*` in a query value); `{name:re}` uses `re`.
/// Returns `None` when the template has no placeholder, so the caller can keep a plain matcher.
///
/// Each placeholder becomes `(?:re)` (gorilla uses a named group; the match is the same). The whole pattern is
/// anchored: `^...$`, or `^...` for a path prefix. Host templates match case-insensitively in Traefik v2. The
/// runtime lower-cases the host, so literal text is lower-cased, and `(?i)` is added only when a placeholder's
/// pattern contains an upper-case letter.
fn v2_template(tpl: &str, kind: Template) -> Result<Option<String>, String> {
    let braces = brace_indices(tpl)?;
    if kind == Template::Host {
        // Strict on purpose: Traefik v2 accepts any literal text, but a host never contains, say, `(` or `*`,
        // so such a template can never match. That is almost always a v3-style regex in a v2 rule.
        let mut segments = Vec::with_capacity(braces.len() + 1);
        let mut end = 0;
        for &(s, e) in &braces {
            segments.push(tpl.get(end..s).unwrap_or(""));
            end = e;
        }
        segments.push(tpl.get(end..).unwrap_or(""));
        for seg in segments {
            if let Some(bad) = seg
                .chars()
                .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')))
            {
                return Err(format!(
                    "`{bad}` outside a `{{name:regex}}` placeholder is matched literally in ruleSyntax v2 and can \
                     never appear in a host, so Traefik accepts this rule but it never matches \
                     (bridgectl rejects it on purpose)"
                ));
            }
        }
    }
    if braces.is_empty() {
        return Ok(None);
    }
    let default = match kind {
        Template::Host => "[^.]+",
        Template::Path | Template::Prefix => "[^/]+",
        Template::Query => ".*",
    };
    let literal = |raw: &str| {
        if kind == Template::Host {
            regex::escape(&raw.to_ascii_lowercase())
        } else {
            regex::escape(raw)
        }
    };
    let mut re = String::from("^");
    let mut fold = false;
    let mut end = 0;
    for &(s, e) in &braces {
        re.push_str(&literal(tpl.get(end..s).unwrap_or("")));
        let whole = tpl.get(s..e).unwrap_or("");
        let inner = tpl.get(s + 1..e - 1).unwrap_or("");
        let (name, pattern) = inner.split_once(':').unwrap_or((inner, default));
        if name.is_empty() || pattern.is_empty() {
            return Err(format!("missing name or pattern in `{whole}`"));
        }
        let translated =
            go_regex_to_rust(pattern).map_err(|m| format!("invalid regex in `{whole}`: {m}"))?;
        fold |= pattern.chars().any(|c| c.is_ascii_uppercase());
        re.push_str("(?:");
        re.push_str(&translated);
        re.push(')');
        end = e;
    }
    re.push_str(&literal(tpl.get(end..).unwrap_or("")));
    if kind != Template::Prefix {
        re.push('$');
    }
    if kind == Template::Host && fold {
        re.insert_str(0, "(?i)");
    }
    Ok(Some(re))
}

/// Top-level `{...}` ranges (start, end exclusive), as gorilla/mux's `braceIndices`.
fn brace_indices(s: &str) -> Result<Vec<(usize, usize)>, String> {
    let mut level: usize = 0;
    let mut start = 0;
    let mut out = Vec::new();
    for (i, b) in s.bytes().enumerate() {
        match b {
            b'{' => {
                level += 1;
                if level == 1 {
                    start = i;
                }
            }
            b'}' => {
                if level == 0 {
                    return Err(format!("unbalanced braces in `{s}`"));
                }
                level -= 1;
                if level == 0 {
                    out.push((start, i + 1));
                }
            }
            _ => {}
        }
    }
    if level != 0 {
        return Err(format!("unbalanced braces in `{s}`"));
    }
    Ok(out)
}

// === Go regexp syntax to the regex crate ===

/// Rewrites a Go (RE2) regex so that the `regex` crate reads it with the same meaning, or explains why Go
/// would reject it. The two syntaxes mostly agree. The differences handled here:
///
/// - A `{` that does not start a valid repetition (`{2}`, `{2,}`, `{2,5}`) is a literal in Go and an error in
///   Rust: it is escaped (`/{id}` becomes `/\{id}`).
/// - Inside a class, Go treats `[`, `&&`, `~~` and `--` as literals while Rust reads nested classes and set
///   operations: they are escaped.
/// - `\d`, `\w` and `\s` are ASCII-only in Go and Unicode-aware in Rust: they become explicit ASCII classes.
///   (`\b` stays Unicode-aware; Go's ASCII `\b` has no spelling that Go itself also accepts.)
/// - `\Q...\E` (Go only) becomes escaped text; octal escapes (`\101`) become `\x{41}`.
/// - Things Go rejects and Rust accepts are reported as errors: stacked repetitions (`a**`), repeat counts
///   over 1000, `\u`-style escapes, and the flags `x`, `R` and `u`.
///
/// The output is a fixed point: translating it again gives it back unchanged, and it reads the same in Go.
fn go_regex_to_rust(src: &str) -> Result<String, String> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len() + 8);
    let mut i = 0;
    let mut in_class = false;
    // Inside a class: the previous item was an unescaped `-`.
    let mut class_dash = false;
    // Outside a class: the previous item was a repetition operator.
    let mut after_repeat = false;
    let at = |k: usize| chars.get(k).copied();

    while let Some(c) = at(i) {
        if in_class {
            let mut dash = false;
            match c {
                '\\' => {
                    i = escape(&chars, i + 1, true, &mut out)?;
                    class_dash = false;
                    continue;
                }
                ']' => {
                    in_class = false;
                    out.push(']');
                }
                '[' => match posix_class_len(&chars, i) {
                    Some(len) => {
                        out.extend(&chars[i..i + len]);
                        i += len;
                        class_dash = false;
                        continue;
                    }
                    None => out.push_str("\\["),
                },
                '&' | '~' => {
                    out.push('\\');
                    out.push(c);
                }
                '-' if class_dash => out.push_str("\\-"),
                '-' => {
                    out.push('-');
                    dash = true;
                }
                _ => out.push(c),
            }
            class_dash = dash;
            i += 1;
            continue;
        }

        let mut repeat = false;
        match c {
            '\\' => {
                i = escape(&chars, i + 1, false, &mut out)?;
                after_repeat = false;
                continue;
            }
            '[' => {
                in_class = true;
                class_dash = false;
                out.push('[');
                i += 1;
                if at(i) == Some('^') {
                    out.push('^');
                    i += 1;
                }
                // A `]` right after `[` or `[^` is a literal in both syntaxes; escaping it keeps that obvious.
                if at(i) == Some(']') {
                    out.push_str("\\]");
                    i += 1;
                }
                after_repeat = false;
                continue;
            }
            '{' => match repeat_len(&chars, i)? {
                Some(len) => {
                    if after_repeat {
                        return Err("invalid nested repetition operator".into());
                    }
                    out.extend(&chars[i..i + len]);
                    i += len;
                    if at(i) == Some('?') {
                        out.push('?');
                        i += 1;
                    }
                    after_repeat = true;
                    continue;
                }
                None => out.push_str("\\{"),
            },
            '*' | '+' | '?' => {
                if after_repeat {
                    return Err(format!("invalid nested repetition operator `{c}`"));
                }
                out.push(c);
                if at(i + 1) == Some('?') {
                    out.push('?');
                    i += 1;
                }
                repeat = true;
            }
            '(' if at(i + 1) == Some('?') => {
                if !matches!(at(i + 2), Some('P' | '<')) {
                    let mut j = i + 2;
                    let mut flags = String::new();
                    while let Some(f) = at(j) {
                        if f == ')' || f == ':' {
                            break;
                        }
                        flags.push(f);
                        j += 1;
                    }
                    if flags
                        .chars()
                        .any(|f| !matches!(f, 'i' | 'm' | 's' | 'U' | '-'))
                    {
                        return Err(format!("invalid or unsupported Perl syntax `(?{flags}`"));
                    }
                }
                out.push_str("(?");
                i += 2;
                after_repeat = false;
                continue;
            }
            _ => out.push(c),
        }
        after_repeat = repeat;
        i += 1;
    }
    Ok(out)
}

/// Handles the escape whose letter is at `chars[i]` (just after the backslash); returns the next index.
fn escape(chars: &[char], i: usize, in_class: bool, out: &mut String) -> Result<usize, String> {
    let Some(&c) = chars.get(i) else {
        return Err("trailing backslash at end of expression".into());
    };
    let mut next = i + 1;
    match c {
        'd' => out.push_str(if in_class { "0-9" } else { "[0-9]" }),
        'D' => out.push_str(if in_class { "[:^digit:]" } else { "[^0-9]" }),
        'w' => out.push_str(if in_class {
            "0-9A-Za-z_"
        } else {
            "[0-9A-Za-z_]"
        }),
        'W' => out.push_str(if in_class {
            "[:^word:]"
        } else {
            "[^0-9A-Za-z_]"
        }),
        's' => out.push_str(if in_class {
            "\\t\\n\\f\\r "
        } else {
            "[\\t\\n\\f\\r ]"
        }),
        // Everything but Go's five `\s` characters, spelled so that Go reads it the same way.
        'S' if in_class => out.push_str("\\x00-\\x08\\x0B\\x0E-\\x1F\\x21-\\x{10FFFF}"),
        'S' => out.push_str("[^\\t\\n\\f\\r ]"),
        'p' | 'P' | 'x' => {
            out.push('\\');
            out.push(c);
            if chars.get(next) == Some(&'{') {
                while let Some(&n) = chars.get(next) {
                    out.push(n);
                    next += 1;
                    if n == '}' {
                        break;
                    }
                }
            } else {
                let take = if c == 'x' { 2 } else { 1 };
                for _ in 0..take {
                    if let Some(&n) = chars.get(next) {
                        out.push(n);
                        next += 1;
                    }
                }
            }
        }
        'a' | 'f' | 't' | 'n' | 'r' | 'v' => {
            out.push('\\');
            out.push(c);
        }
        'A' | 'z' | 'b' | 'B' if !in_class => {
            out.push('\\');
            out.push(c);
        }
        'Q' if !in_class => {
            let mut lit = String::new();
            while let Some(&n) = chars.get(next) {
                if n == '\\' && chars.get(next + 1) == Some(&'E') {
                    next += 2;
                    break;
                }
                lit.push(n);
                next += 1;
            }
            out.push_str(&regex::escape(&lit));
        }
        '0'..='7' => {
            let is_octal = |k: usize| matches!(chars.get(k), Some('0'..='7'));
            if c != '0' && !is_octal(next) {
                return Err(format!("backreferences such as `\\{c}` are not supported"));
            }
            let mut value = c.to_digit(8).unwrap_or(0);
            for _ in 0..2 {
                match chars.get(next).and_then(|d| d.to_digit(8)) {
                    Some(d) => {
                        value = value * 8 + d;
                        next += 1;
                    }
                    None => break,
                }
            }
            let _ = write!(out, "\\x{{{value:X}}}");
        }
        c if c.is_ascii() && !c.is_ascii_alphanumeric() => {
            out.push_str(&regex::escape(&c.to_string()))
        }
        c => return Err(format!("invalid escape sequence `\\{c}`")),
    }
    Ok(next)
}

/// Length of a POSIX class such as `[:alpha:]` or `[:^digit:]` starting at `chars[i]`.
fn posix_class_len(chars: &[char], i: usize) -> Option<usize> {
    if chars.get(i + 1) != Some(&':') {
        return None;
    }
    let mut j = i + 2;
    if chars.get(j) == Some(&'^') {
        j += 1;
    }
    let name_start = j;
    while chars.get(j).is_some_and(|c| c.is_ascii_lowercase()) {
        j += 1;
    }
    (j > name_start && chars.get(j) == Some(&':') && chars.get(j + 1) == Some(&']'))
        .then_some(j + 2 - i)
}

/// Length of a Go repetition `{n}`, `{n,}` or `{n,m}` at `chars[i]`, or `None` when Go reads the `{` as a
/// literal. Counts above 1000, or a minimum above the maximum, are errors in Go.
fn repeat_len(chars: &[char], i: usize) -> Result<Option<usize>, String> {
    let int = |mut j: usize| -> Option<(u32, usize)> {
        let start = j;
        let mut v: u32 = 0;
        while let Some(d) = chars.get(j).and_then(|c| c.to_digit(10)) {
            v = v.saturating_mul(10).saturating_add(d);
            j += 1;
        }
        // Go does not accept leading zeros (`{01}` is literal text).
        let leading_zero = j - start >= 2 && chars.get(start) == Some(&'0');
        (j > start && !leading_zero).then_some((v, j))
    };
    let Some((min, mut j)) = int(i + 1) else {
        return Ok(None);
    };
    let mut max = Some(min);
    if chars.get(j) == Some(&',') {
        j += 1;
        if chars.get(j) == Some(&'}') {
            max = None;
        } else {
            let Some((m, k)) = int(j) else {
                return Ok(None);
            };
            max = Some(m);
            j = k;
        }
    }
    if chars.get(j) != Some(&'}') {
        return Ok(None);
    }
    if min > 1000 || max.is_some_and(|m| m > 1000 || m < min) {
        let text: String = chars[i..=j].iter().collect();
        return Err(format!("invalid repeat count `{text}`"));
    }
    Ok(Some(j + 1 - i))
}

// === Rendering ===

fn render(rule: &Rule, out: &mut String) {
    match rule {
        Rule::Or(items) => render_list(items, " || ", out, |r| matches!(r, Rule::Or(_))),
        Rule::And(items) => render_list(items, " && ", out, |r| {
            matches!(r, Rule::Or(_) | Rule::And(_))
        }),
        Rule::Not(inner) => {
            out.push('!');
            if matches!(**inner, Rule::Match(_) | Rule::Not(_)) {
                render(inner, out);
            } else {
                out.push('(');
                render(inner, out);
                out.push(')');
            }
        }
        Rule::Match(m) => render_matcher(m, out),
    }
}

fn render_list(items: &[Rule], sep: &str, out: &mut String, needs_parens: impl Fn(&Rule) -> bool) {
    if items.is_empty() {
        out.push_str("()");
        return;
    }
    for (n, item) in items.iter().enumerate() {
        if n > 0 {
            out.push_str(sep);
        }
        if needs_parens(item) {
            out.push('(');
            render(item, out);
            out.push(')');
        } else {
            render(item, out);
        }
    }
}

fn render_matcher(m: &Matcher, out: &mut String) {
    // Parsing drops one trailing dot from a `Host` (as Traefik does): a host that still ends in
    // one was written with one more (found by the `rule` fuzz target).
    let dotted;
    let (name, args): (&str, Vec<&str>) = match m {
        Matcher::Host { host } if host.ends_with('.') => {
            dotted = format!("{host}.");
            ("Host", vec![dotted.as_str()])
        }
        Matcher::Host { host } => ("Host", vec![host]),
        Matcher::HostRegexp { regex } => ("HostRegexp", vec![regex]),
        Matcher::Path { path } => ("Path", vec![path]),
        Matcher::PathPrefix { prefix } => ("PathPrefix", vec![prefix]),
        Matcher::PathRegexp { regex } => ("PathRegexp", vec![regex]),
        Matcher::Method { method } => ("Method", vec![method]),
        Matcher::Header { name, value } => ("Header", vec![name, value]),
        Matcher::HeaderRegexp { name, regex } => ("HeaderRegexp", vec![name, regex]),
        Matcher::Query { key, value } if value.is_empty() => ("Query", vec![key]),
        Matcher::Query { key, value } => ("Query", vec![key, value]),
        // An empty regex cannot be written as an argument; `(?:)` matches the same.
        Matcher::QueryRegexp { key, regex } if regex.is_empty() => {
            ("QueryRegexp", vec![key, "(?:)"])
        }
        Matcher::QueryRegexp { key, regex } => ("QueryRegexp", vec![key, regex]),
        Matcher::ClientIp { cidr } => ("ClientIP", vec![cidr]),
    };
    out.push_str(name);
    out.push('(');
    for (n, a) in args.iter().enumerate() {
        if n > 0 {
            out.push_str(", ");
        }
        out.push_str(&quote(a));
    }
    out.push(')');
}

/// A Go string literal for `s`: backticks when possible, else a double-quoted string with Go escapes.
fn quote(s: &str) -> String {
    if !s.contains(['`', '\r', '\0', '\u{FEFF}']) {
        return format!("`{s}`");
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{FEFF}' => out.push_str("\\ufeff"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use proptest::prelude::*;

    fn ok(rule: &str, syntax: RuleSyntax) -> Rule {
        parse_rule(rule, syntax).unwrap_or_else(|e| panic!("{rule:?} should parse, got {e:#?}"))
    }
    fn v3(rule: &str) -> Rule {
        ok(rule, RuleSyntax::V3)
    }
    fn v2(rule: &str) -> Rule {
        ok(rule, RuleSyntax::V2)
    }
    fn errs(rule: &str, syntax: RuleSyntax) -> Vec<RuleError> {
        match parse_rule(rule, syntax) {
            Ok(r) => panic!("{rule:?} should fail, got {r:?}"),
            Err(e) => e,
        }
    }
    /// The single error for a rule.
    fn err(rule: &str, syntax: RuleSyntax) -> RuleError {
        let mut e = errs(rule, syntax);
        assert_eq!(e.len(), 1, "{rule:?}: {e:#?}");
        e.remove(0)
    }
    fn err3(rule: &str) -> RuleError {
        err(rule, RuleSyntax::V3)
    }
    /// The text an error points at.
    fn at<'a>(rule: &'a str, e: &RuleError) -> &'a str {
        &rule[e.offset..e.offset + e.len]
    }
    fn hint(e: &RuleError) -> &str {
        e.hint.as_deref().unwrap_or("")
    }

    fn host(h: &str) -> Rule {
        Rule::Match(Matcher::Host { host: h.into() })
    }
    fn host_re(r: &str) -> Rule {
        Rule::Match(Matcher::HostRegexp { regex: r.into() })
    }
    fn path(p: &str) -> Rule {
        Rule::Match(Matcher::Path { path: p.into() })
    }
    fn prefix(p: &str) -> Rule {
        Rule::Match(Matcher::PathPrefix { prefix: p.into() })
    }
    fn path_re(r: &str) -> Rule {
        Rule::Match(Matcher::PathRegexp { regex: r.into() })
    }
    fn method(m: &str) -> Rule {
        Rule::Match(Matcher::Method { method: m.into() })
    }
    fn header(n: &str, v: &str) -> Rule {
        Rule::Match(Matcher::Header {
            name: n.into(),
            value: v.into(),
        })
    }
    fn header_re(n: &str, r: &str) -> Rule {
        Rule::Match(Matcher::HeaderRegexp {
            name: n.into(),
            regex: r.into(),
        })
    }
    fn query(k: &str, v: &str) -> Rule {
        Rule::Match(Matcher::Query {
            key: k.into(),
            value: v.into(),
        })
    }
    fn query_re(k: &str, r: &str) -> Rule {
        Rule::Match(Matcher::QueryRegexp {
            key: k.into(),
            regex: r.into(),
        })
    }
    fn ip(c: &str) -> Rule {
        Rule::Match(Matcher::ClientIp { cidr: c.into() })
    }
    fn not(r: Rule) -> Rule {
        Rule::Not(Box::new(r))
    }
    fn matches(re: &str, s: &str) -> bool {
        regex::Regex::new(re).unwrap().is_match(s)
    }

    // --- acceptance table (traefik-semantics.md §3), the parsing half of each row ---

    #[test]
    fn rows_01_to_04_host_is_lower_cased_without_trailing_dot() {
        assert_eq!(v3("Host(`example.com`)"), host("example.com"));
        assert_eq!(v3("Host(`EXAMPLE.COM`)"), host("example.com"));
        assert_eq!(v3("Host(`example.com.`)"), host("example.com"));
    }

    #[test]
    fn row_05_multi_value_host_is_v2_only() {
        let rule = "Host(`example.com`, `example.org`)";
        let e = err3(rule);
        assert!(e.message.contains("exactly 1 argument, got 2"), "{e:?}");
        assert_eq!(at(rule, &e), "`example.org`");
        assert!(
            hint(&e).contains("Host(`example.com`) || Host(`example.org`)"),
            "{e:?}"
        );
        assert!(hint(&e).contains("ruleSyntax: v2"), "{e:?}");
        assert_eq!(
            v2(rule),
            Rule::Or(vec![host("example.com"), host("example.org")])
        );
    }

    #[test]
    fn row_06_host_must_be_ascii() {
        let rule = "Host(`🦭.com`)";
        let e = err3(rule);
        assert_eq!(at(rule, &e), "`🦭.com`");
        assert!(hint(&e).contains("Host(`xn--9t9h.com`)"), "{e:?}");
        assert!(err(rule, RuleSyntax::V2).message.contains("ASCII"));
        assert_eq!(v3("Host(`xn--9t9h.com`)"), host("xn--9t9h.com"));
    }

    #[test]
    fn rows_07_08_wildcards_are_kept_in_v3_and_rejected_in_v2() {
        assert_eq!(v3("Host(`*.Example.com`)"), host("*.example.com"));
        assert_eq!(v3("Host(`*`)"), host("*"));
        let e = err("Host(`*.example.com`)", RuleSyntax::V2);
        assert!(e.message.contains("never matches"), "{e:?}");
        assert!(hint(&e).contains("ruleSyntax: v3"), "{e:?}");
    }

    #[test]
    fn row_09_ip_hosts() {
        assert_eq!(v3("Host(`10::10`)"), host("10::10"));
        assert_eq!(v3("Host(`127.0.0.1`)"), host("127.0.0.1"));
    }

    #[test]
    fn rows_10_11_host_regexp_is_kept_as_written() {
        assert_eq!(
            v3(r"HostRegexp(`^[a-zA-Z-]+\.com$`)"),
            host_re(r"^[a-zA-Z-]+\.com$")
        );
        assert_eq!(
            v3(r"HostRegexp(`^[A-Z]+\.com$`)"),
            host_re(r"^[A-Z]+\.com$")
        );
    }

    #[test]
    fn row_12_v2_template_is_literal_in_v3_and_a_template_in_v2() {
        let rule = r"HostRegexp(`{domain:[a-zA-Z-]+\.com}`)";
        let Rule::Match(Matcher::HostRegexp { regex }) = v3(rule) else {
            panic!()
        };
        assert_eq!(regex, r"\{domain:[a-zA-Z-]+\.com}");
        assert!(!matches(&regex, "example.com"));
        let Rule::Match(Matcher::HostRegexp { regex }) = v2(rule) else {
            panic!()
        };
        assert_eq!(regex, r"(?i)^(?:[a-zA-Z-]+\.com)$");
        assert!(matches(&regex, "example.com"));
        assert!(!matches(&regex, "example.org"));
    }

    #[test]
    fn row_13_bad_host_regexp() {
        let e = err3("HostRegexp(`(example.com`)");
        assert!(e.message.contains("unclosed group"), "{e:?}");
        // Traefik v2 accepts it (the text is a literal host that never matches); bridgectl says so and rejects.
        let e = err("HostRegexp(`(example.com`)", RuleSyntax::V2);
        assert!(
            e.message.contains("never matches") && e.message.contains("on purpose"),
            "{e:?}"
        );
    }

    #[test]
    fn rows_14_to_16_paths() {
        assert_eq!(v3("Path(`/css`)"), path("/css"));
        let e = err3("Path(`css`)");
        assert!(e.message.contains("must start with `/`"), "{e:?}");
        assert_eq!(hint(&e), "write Path(`/css`)");
        let rule = "Path(``)";
        let e = err3(rule);
        assert!(e.message.contains("empty argument"), "{e:?}");
        assert_eq!(at(rule, &e), "``");
        assert_eq!(v3("PathPrefix(\"/css\")"), prefix("/css"));
    }

    #[test]
    fn rows_17_18_path_regexp() {
        assert_eq!(v3("PathRegexp(`^/(css|js)`)"), path_re("^/(css|js)"));
        // Go reads `{` that is not a repetition as a literal; Rust needs it escaped.
        let Rule::Match(Matcher::PathRegexp { regex }) = v3("PathRegexp(\"/{path:(css|js)}\")")
        else {
            panic!()
        };
        assert_eq!(regex, r"/\{path:(css|js)}");
        assert!(matches(&regex, "/{path:css}"));
        assert!(!matches(&regex, "/css"));
    }

    #[test]
    fn rows_19_20_method() {
        assert_eq!(v3("Method(`get`)"), method("GET"));
        let e = err3("Method(`GET`, `POST`)");
        assert!(
            hint(&e).contains("Method(`GET`) || Method(`POST`)"),
            "{e:?}"
        );
        assert_eq!(
            v2("Method(`GET`, `post`)"),
            Rule::Or(vec![method("GET"), method("POST")])
        );
    }

    #[test]
    fn rows_21_to_23_headers() {
        assert_eq!(
            v3("Header(`X-Forwarded-Proto`, `https`)"),
            header("X-Forwarded-Proto", "https")
        );
        assert_eq!(
            v3("Header(`x-forwarded-proto`, `https`)"),
            header("X-Forwarded-Proto", "https")
        );
        let e = err3("Header(`X-Forwarded-Host`)");
        assert!(e.message.contains("exactly 2 arguments"), "{e:?}");
        let rule = "Header(`k`, ``)";
        assert_eq!(at(rule, &err3(rule)), "``");
        assert_eq!(
            v3("HeaderRegexp(`X-Forwarded-Proto`, `^https?$`)"),
            header_re("X-Forwarded-Proto", "^https?$")
        );
    }

    #[test]
    fn rows_24_to_26_query() {
        assert_eq!(v3("Query(`q`, `traefik`)"), query("q", "traefik"));
        assert_eq!(v3("Query(`mobile`)"), query("mobile", ""));
        assert_eq!(v3("QueryRegexp(`q`, `^.*$`)"), query_re("q", "^.*$"));
        // Traefik's one-argument QueryRegexp is its Query matcher.
        assert_eq!(v3("QueryRegexp(`mobile`)"), query("mobile", ""));
        assert!(
            err3("Query(`a`, `b`, `c`)")
                .message
                .contains("1 or 2 arguments")
        );
    }

    #[test]
    fn rows_27_28_client_ip() {
        assert_eq!(v3("ClientIP(`192.168.1.0/24`)"), ip("192.168.1.0/24"));
        let rule = "ClientIP(`1`)";
        let e = err3(rule);
        assert!(e.message.contains("not an IP address or CIDR"), "{e:?}");
        assert_eq!(at(rule, &e), "`1`");
        assert_eq!(v3("ClientIP(`10.0.0.1`)"), ip("10.0.0.1/32"));
        assert_eq!(v3("ClientIP(`::1`)"), ip("::1/128"));
        assert_eq!(v3("ClientIP(`192.168.1.5/24`)"), ip("192.168.1.0/24"));
        assert!(parse_rule("ClientIP(`10.0.0.0/33`)", RuleSyntax::V3).is_err());
        assert!(parse_rule("ClientIP(`fe80::1%eth0`)", RuleSyntax::V3).is_err());
        assert_eq!(
            v2("ClientIP(`10.0.0.1`, `10.1.0.0/16`)"),
            Rule::Or(vec![ip("10.0.0.1/32"), ip("10.1.0.0/16")])
        );
    }

    #[test]
    fn rows_29_to_32_operators() {
        assert_eq!(
            v3("Host(`localhost`) && PathPrefix(`/css`)"),
            Rule::And(vec![host("localhost"), prefix("/css")])
        );
        assert_eq!(
            v3(r#"Host("example.com") || Host("example.org") && Path("/css")"#),
            Rule::Or(vec![
                host("example.com"),
                Rule::And(vec![host("example.org"), path("/css")])
            ])
        );
        assert_eq!(
            v3(r#"(Host("example.com") || Host("example.org")) && Path("/css")"#),
            Rule::And(vec![
                Rule::Or(vec![host("example.com"), host("example.org")]),
                path("/css")
            ])
        );
        assert_eq!(
            v3(r#"!(Host("example.com") && !Path("/css"))"#),
            not(Rule::And(vec![host("example.com"), not(path("/css"))]))
        );
    }

    #[test]
    fn row_33_four_spellings_of_every_matcher() {
        for syntax in [RuleSyntax::V2, RuleSyntax::V3] {
            for (defined, _) in table(syntax) {
                let lower = defined.to_ascii_lowercase();
                let title = format!("{}{}", &defined[..1], &lower[1..]);
                for name in [
                    defined.to_string(),
                    lower.clone(),
                    defined.to_ascii_uppercase(),
                    title,
                ] {
                    let rule = format!("{name}(`x`)");
                    // Arguments may be wrong for the matcher; the name itself must be accepted.
                    if let Err(e) = parse_rule(&rule, syntax) {
                        assert!(
                            !e.iter().any(|e| e.message.contains("matcher `")),
                            "{rule}: {e:?}"
                        );
                    }
                }
            }
        }
        for rule in [
            r#"PATHPREFIX("/css")"#,
            r#"pathprefix("/css")"#,
            r#"Pathprefix("/css")"#,
        ] {
            assert_eq!(v3(rule), prefix("/css"));
        }
        let rule = "pathPrefix(`/css`)";
        let e = err3(rule);
        assert_eq!(at(rule, &e), "pathPrefix");
        assert!(hint(&e).starts_with("did you mean `PathPrefix`?"), "{e:?}");
        assert!(parse_rule("ClientIp(`10.0.0.1`)", RuleSyntax::V3).is_err());
        assert_eq!(v3("Clientip(`10.0.0.1`)"), ip("10.0.0.1/32"));
    }

    #[test]
    fn row_34_not_a_rule() {
        let rule = "Host(example.com)";
        let e = err3(rule);
        assert!(e.message.contains("quoted strings"), "{e:?}");
        assert_eq!(at(rule, &e), "example.com");
        assert_eq!(hint(&e), "write Host(`example.com`)");
        let rule = "rulewithnotmatcher";
        let e = err3(rule);
        assert!(e.message.contains("not a matcher call"), "{e:?}");
        assert_eq!(at(rule, &e), rule);
        for empty in ["", "   ", "\n\t", "/* nothing */"] {
            assert!(err3(empty).message.contains("empty"), "{empty:?}");
        }
    }

    #[test]
    fn row_35_path_with_space() {
        assert_eq!(v3("PathPrefix(`/foo bar`)"), prefix("/foo bar"));
    }

    #[test]
    fn rows_37_to_39_default_priority_is_the_byte_length() {
        assert_eq!(default_priority("Host(`example.org`)"), 19);
        assert!(default_priority("PathPrefix(`/mypath`)") > default_priority("PathPrefix(`/my`)"));
        assert_eq!(default_priority("Host(`é.org`)"), 14);
    }

    #[test]
    fn row_40_v2_path_template() {
        let Rule::Match(Matcher::PathRegexp { regex }) = v2("Path(`/css{path:(/.*)?}`)") else {
            panic!()
        };
        assert_eq!(regex, "^/css(?:(/.*)?)$");
        assert!(matches(&regex, "/css/main.css"));
        assert!(matches(&regex, "/css/components/component.css"));
        assert!(!matches(&regex, "/css.css"));
        assert!(!matches(&regex, "/js/main.js"));
    }

    // --- grammar ---

    #[test]
    fn precedence_and_flattening() {
        let (a, b, c) = (host("a"), host("b"), host("c"));
        assert_eq!(
            v3("Host(`a`) || Host(`b`) && Host(`c`)"),
            Rule::Or(vec![a.clone(), Rule::And(vec![b.clone(), c.clone()])])
        );
        assert_eq!(
            v3("Host(`a`) && Host(`b`) || Host(`c`)"),
            Rule::Or(vec![Rule::And(vec![a.clone(), b.clone()]), c.clone()])
        );
        let flat = Rule::And(vec![a.clone(), b.clone(), c.clone()]);
        assert_eq!(v3("Host(`a`) && Host(`b`) && Host(`c`)"), flat);
        assert_eq!(v3("(Host(`a`) && Host(`b`)) && Host(`c`)"), flat);
        assert_eq!(v3("Host(`a`) && ((Host(`b`) && (Host(`c`))))"), flat);
        assert_eq!(v3("((Host(`a`)))"), a.clone());
        assert_eq!(v3("!Host(`a`)"), not(a.clone()));
        assert_eq!(v3("!!Host(`a`)"), not(not(a.clone())));
        assert_eq!(v3("! ( Host(`a`) )"), not(a.clone()));
        // v2 multi-value matchers merge into a surrounding `||`.
        assert_eq!(v2("Host(`a`, `b`) || Host(`c`)"), Rule::Or(vec![a, b, c]));
    }

    #[test]
    fn whitespace_line_breaks_and_comments() {
        let want = Rule::And(vec![host("a"), path("/b")]);
        assert_eq!(v3(" \tHost( `a` )\t&&\r\n  Path(`/b`)\n"), want);
        assert_eq!(v3("Host(`a`) && /* c */ Path(`/b`) // trailing"), want);
        // Go inserts a semicolon after `)` at a line break, so the rule ends there.
        let rule = "Host(`a`)\n&& Path(`/b`)";
        let e = err3(rule);
        assert_eq!((e.offset, e.len), (9, 1));
        assert!(hint(&e).contains("end of the line"), "{e:?}");
        let e = err3("(Host(`a`)\n|| Host(`b`))");
        assert!(e.message.contains("line break"), "{e:?}");
        let e = err3("Host(`a`\n)");
        assert!(e.message.contains("missing `,`"), "{e:?}");
        // A trailing comma is Go syntax, and lets arguments span lines.
        assert_eq!(
            v2("Host(\n  `a`,\n  `b`,\n)"),
            Rule::Or(vec![host("a"), host("b")])
        );
        let e = err3("Host(`a`)\u{a0}&& Path(`/b`)");
        assert!(e.message.contains("U+00A0"), "{e:?}");
    }

    #[test]
    fn string_literals() {
        assert_eq!(v3(r#"Path("/caf\u00e9")"#), path("/café"));
        assert_eq!(v3(r#"Path("/caf\xc3\xa9")"#), path("/café"));
        assert_eq!(v3(r#"Path("/\101\t")"#), path("/A\t"));
        assert_eq!(v3(r#"Header("X", "a\"b\\c")"#), header("X", "a\"b\\c"));
        assert_eq!(v3(r"PathRegexp(`^/a\.b$`)"), path_re(r"^/a\.b$"));
        assert_eq!(v3("Path(`/a\r\nb`)"), path("/a\nb"));
        let rule = r#"Path("/\q")"#;
        let e = err3(rule);
        assert_eq!(at(rule, &e), r"\q");
        assert!(err3(r#"Path("/\'")"#).message.contains(r"\'"));
        assert!(err3(r#"Path("/\xff")"#).message.contains("UTF-8"));
        assert!(err3(r#"Path("/\ud800")"#).message.contains("code point"));
        assert!(err3(r#"Path("/\400")"#).message.contains("255"));
        let rule = "Path(\"/a\nb\")";
        assert_eq!(at(rule, &err3(rule)), "\"");
        let rule = "Path(`/a";
        assert_eq!(at(rule, &err3(rule)), "`");
        assert!(err3("Path(`/\0`)").message.contains("NUL"));
    }

    #[test]
    fn single_quotes_are_rejected_with_a_hint() {
        let rule = "Host('example.com')";
        let e = err3(rule);
        assert_eq!(at(rule, &e), "'example.com'");
        assert!(hint(&e).contains("`example.com`"), "{e:?}");
    }

    #[test]
    fn syntax_error_offsets() {
        let rule = "Host(`a`) && ";
        let e = err3(rule);
        assert_eq!((e.offset, e.len), (rule.len(), 0));
        let rule = "(Host(`a`) && Path(`/b`)";
        let e = err3(rule);
        assert_eq!((e.offset, e.len), (0, 1));
        assert!(e.message.contains("never closed"));
        let rule = "Host(`a`))";
        assert_eq!(at(rule, &err3(rule)), ")");
        let rule = "Host(`a`) Path(`/b`)";
        let e = err3(rule);
        assert_eq!(at(rule, &e), "Path");
        assert!(e.message.contains("`&&` or `||`"));
        let rule = "Host(`a`) and Path(`/b`)";
        let e = err3(rule);
        assert_eq!(at(rule, &e), "and");
        assert_eq!(hint(&e), "use `&&`");
        let rule = "Host(`a`) | Path(`/b`)";
        assert_eq!(hint(&err3(rule)), "use `||`");
        let rule = "Host(`a` `b`)";
        let e = err3(rule);
        assert_eq!(at(rule, &e), "`b`");
        assert!(e.message.contains("missing `,`"));
        let rule = "Host(,)";
        assert_eq!(at(rule, &err3(rule)), ",");
        let rule = "Host(`a`) && ()";
        assert_eq!(at(rule, &err3(rule)), ")");
        let rule = "Host(1)";
        assert_eq!(at(rule, &err3(rule)), "1");
        let rule = "`a`";
        assert!(err3(rule).message.contains("argument of a matcher"));
    }

    #[test]
    fn semantic_errors_are_all_collected_with_offsets() {
        let rule = "Hots(`a`) && Path(`x`) || ClientIP(`1`) && Method(``)";
        let e = errs(rule, RuleSyntax::V3);
        let spots: Vec<&str> = e.iter().map(|e| at(rule, e)).collect();
        assert_eq!(spots, ["Hots", "`x`", "`1`", "``"]);
        assert_eq!(hint(&e[0]), "did you mean `Host`?");
        let rule = "Host(`🦭`, `ok`, `*.x`)";
        let e = errs(rule, RuleSyntax::V2);
        assert_eq!(
            e.iter().map(|e| at(rule, e)).collect::<Vec<_>>(),
            ["`🦭`", "`*.x`"]
        );
    }

    #[test]
    fn empty_argument_lists_and_arities() {
        for rule in ["Host()", "Path()", "Header()", "ClientIP()"] {
            let e = err3(rule);
            assert!(e.message.contains("needs an argument"), "{rule}: {e:?}");
            assert_eq!(at(rule, &e), rule);
        }
        let e = err3("Path(`/a`, `/b`)");
        assert!(hint(&e).contains("Path(`/a`) || Path(`/b`)"), "{e:?}");
        assert!(
            err3("HeaderRegexp(`a`, `b`, `c`)")
                .message
                .contains("exactly 2")
        );
        assert!(
            err(" Headers(`a`)", RuleSyntax::V2)
                .message
                .contains("pairs")
        );
    }

    #[test]
    fn names_of_the_other_syntax_and_tcp() {
        let e = err3("Headers(`X`, `y`)");
        assert!(hint(&e).contains("`Header`"), "{e:?}");
        assert!(hint(&err3("HeadersRegexp(`X`, `y`)")).contains("`HeaderRegexp`"));
        assert!(hint(&err3("HostHeader(`a`)")).contains("`Host`"));
        assert!(hint(&err("Header(`X`, `y`)", RuleSyntax::V2)).contains("`Headers`"));
        assert!(hint(&err("QueryRegexp(`a`, `b`)", RuleSyntax::V2)).contains("ruleSyntax: v3"));
        assert!(hint(&err("PathRegexp(`^/a`)", RuleSyntax::V2)).contains("template"));
        assert!(err3("HostSNI(`a`)").message.contains("TCP"));
        let e = err3("Frobnicate(`a`)");
        assert!(hint(&e).contains("ClientIP"), "{e:?}");
    }

    #[test]
    fn depth_is_capped() {
        let nested = |n: usize| format!("{}Host(`a`){}", "(".repeat(n), ")".repeat(n));
        assert_eq!(v3(&nested(MAX_DEPTH)), host("a"));
        assert!(err3(&nested(MAX_DEPTH + 1)).message.contains("levels deep"));
        assert!(err3(&nested(100_000)).message.contains("levels deep"));
        assert!(
            err3(&format!("{}Host(`a`)", "!".repeat(100_000)))
                .message
                .contains("levels deep")
        );
        // Long flat rules are fine.
        let long = vec!["Host(`a`)"; 20_000].join(" || ");
        let Rule::Or(items) = v3(&long) else { panic!() };
        assert_eq!(items.len(), 20_000);
    }

    // --- v2 specifics ---

    #[test]
    fn v2_headers_and_query() {
        assert_eq!(v2("Headers(`x-a`, `1`)"), header("X-A", "1"));
        assert_eq!(
            v2("Headers(`x-a`, `1`, `x-b`, `2`)"),
            Rule::And(vec![header("X-A", "1"), header("X-B", "2")])
        );
        assert_eq!(
            v2("HeadersRegexp(`Content-Type`, `application/(text|json)`)"),
            header_re("Content-Type", "application/(text|json)")
        );
        assert!(
            err("HeadersRegexp(`X`, `(a`)", RuleSyntax::V2)
                .message
                .contains("unclosed group")
        );
        assert_eq!(
            v2("Query(`foo=bar`, `bar=baz`)"),
            Rule::And(vec![query("foo", "bar"), query("bar", "baz")])
        );
        assert_eq!(v2("Query(`foo=b=ar`)"), query("foo", "b=ar"));
        assert_eq!(v2("Query(`mobile=`)"), query_re("mobile", "^.*$"));
        assert_eq!(
            v2("Query(`id={id:[0-9]+}`)"),
            query_re("id", "^(?:[0-9]+)$")
        );
        assert_eq!(v2("Query(`id=a{x}`)"), query_re("id", "^a(?:.*)$"));
        let e = err("Query(`mobile`)", RuleSyntax::V2);
        assert!(hint(&e).contains("Query(`mobile=`)"), "{e:?}");
        assert!(
            err("Query(`titi={test`)", RuleSyntax::V2)
                .message
                .contains("unbalanced")
        );
        assert!(
            err("Query(`=x`)", RuleSyntax::V2)
                .message
                .contains("empty query")
        );
    }

    #[test]
    fn v2_host_regexp_templates() {
        assert_eq!(
            v2("HostRegexp(`{sub:[a-z]+}.Example.com`)"),
            host_re(r"^(?:[a-z]+)\.example\.com$")
        );
        assert_eq!(
            v2("HostRegexp(`{sub}.example.com`)"),
            host_re(r"^(?:[^.]+)\.example\.com$")
        );
        assert_eq!(v2("HostRegexp(`Example.com`)"), host_re(r"^example\.com$"));
        assert_eq!(
            v2("HostRegexp(`a.com`, `{x:b}.com`)"),
            Rule::Or(vec![host_re(r"^a\.com$"), host_re(r"^(?:b)\.com$")])
        );
        let Rule::Match(Matcher::HostRegexp { regex }) =
            v2(r"HostRegexp(`{subdomain:(foo\.)?bar\.com}`)")
        else {
            panic!()
        };
        assert!(
            matches(&regex, "foo.bar.com")
                && matches(&regex, "bar.com")
                && !matches(&regex, "fooubar.com")
        );
        let Rule::Match(Matcher::HostRegexp { regex }) =
            v2(r"HostRegexp(`{dummy:[A-Z]+}.bar.com`)")
        else {
            panic!()
        };
        assert!(matches(&regex, "foo.bar.com"), "{regex}");
        assert!(
            err("HostRegexp(`{test`)", RuleSyntax::V2)
                .message
                .contains("unbalanced")
        );
        assert!(
            err("HostRegexp(`{:a}.com`)", RuleSyntax::V2)
                .message
                .contains("missing name")
        );
        assert!(
            err("HostRegexp(`{a:(}.com`)", RuleSyntax::V2)
                .message
                .contains("invalid regex")
        );
        assert!(
            err("HostRegexp(`^a\\.com$`)", RuleSyntax::V2)
                .message
                .contains("never matches")
        );
        assert!(
            err("HostRegexp(`lo\u{e0}calhost`)", RuleSyntax::V2)
                .message
                .contains("ASCII")
        );
        assert!(
            err3("HostRegexp(`lo\u{e0}calhost`)")
                .message
                .contains("ASCII")
        );
    }

    #[test]
    fn v2_path_templates() {
        assert_eq!(
            v2("Path(`/css`, `/js`)"),
            Rule::Or(vec![path("/css"), path("/js")])
        );
        assert_eq!(v2("PathPrefix(`/css`)"), prefix("/css"));
        let Rule::Match(Matcher::PathRegexp { regex }) = v2("PathPrefix(`/css-{name:[0-9]?}`)")
        else {
            panic!()
        };
        assert_eq!(regex, r"^/css\-(?:[0-9]?)");
        assert!(
            matches(&regex, "/css-1/main.css")
                && matches(&regex, "/css-/x")
                && !matches(&regex, "/css.css")
        );
        assert_eq!(v2("Path(`/user/{id}`)"), path_re("^/user/(?:[^/]+)$"));
        assert!(
            err("Path(`{id}/a`)", RuleSyntax::V2)
                .message
                .contains("must start with `/`")
        );
        assert!(
            err("Path(`/a}`)", RuleSyntax::V2)
                .message
                .contains("unbalanced")
        );
        assert!(
            err("Path(`titi`)", RuleSyntax::V2)
                .message
                .contains("must start")
        );
    }

    // --- helpers ---

    #[test]
    fn syntax_from_router() {
        use RuleSyntax::{V2, V3};
        assert_eq!(RuleSyntax::from_router(None, V2), V2);
        assert_eq!(RuleSyntax::from_router(Some(""), V2), V2);
        assert_eq!(RuleSyntax::from_router(Some("v2"), V3), V2);
        assert_eq!(RuleSyntax::from_router(Some("v3"), V2), V3);
        assert_eq!(RuleSyntax::from_router(Some("V2"), V2), V3);
        assert_eq!(RuleSyntax::from_router(Some("v4"), V2), V3);
    }

    #[test]
    fn rule_error_displays_its_message() {
        let e = err3("Path(`x`)");
        assert_eq!(e.to_string(), e.message);
    }

    #[test]
    fn go_regexes_are_translated() {
        let t = |s: &str| go_regex_to_rust(s);
        assert_eq!(t("a{").unwrap(), r"a\{");
        assert_eq!(t("a{2}b{2,}c{2,5}?").unwrap(), "a{2}b{2,}c{2,5}?");
        assert_eq!(t("a{01}").unwrap(), r"a\{01}");
        assert_eq!(t("a{,3}").unwrap(), r"a\{,3}");
        assert_eq!(t("x{secure:s?}").unwrap(), r"x\{secure:s?}");
        assert_eq!(t(r"\d+\w\s").unwrap(), r"[0-9]+[0-9A-Za-z_][\t\n\f\r ]");
        assert_eq!(
            t(r"[\d_][^\D][\W]").unwrap(),
            r"[0-9_][^[:^digit:]][[:^word:]]"
        );
        let not_space = t(r"^[\S]+$").unwrap();
        assert!(
            matches(&not_space, "a\u{b}\u{e9}")
                && !matches(&not_space, "a b")
                && !matches(&not_space, "\t")
        );
        assert_eq!(t("[[a]").unwrap(), r"[\[a]");
        assert_eq!(t("[a&&b~~c]").unwrap(), r"[a\&\&b\~\~c]");
        assert_eq!(t("[+--]").unwrap(), r"[+-\-]");
        assert_eq!(t("[]a]").unwrap(), r"[\]a]");
        assert_eq!(t("[[:alpha:]-]").unwrap(), "[[:alpha:]-]");
        assert_eq!(t(r"\Qa.b\E+").unwrap(), r"a\.b+");
        assert_eq!(t(r"\101\0").unwrap(), r"\x{41}\x{0}");
        assert_eq!(t(r"\<\ \%\.").unwrap(), r"< %\.");
        assert_eq!(
            t(r"\p{Greek}\pL\x41\x{263a}").unwrap(),
            r"\p{Greek}\pL\x41\x{263a}"
        );
        assert_eq!(
            t("(?i)a(?P<n>b)(?<m>c)(?:d)(?s-m:e)").unwrap(),
            "(?i)a(?P<n>b)(?<m>c)(?:d)(?s-m:e)"
        );
        for bad in [
            "a**", "a+*", "a{2}{3}", "a??*", "a{1001}", "a{3,2}", r"\1", "(?x)a", "(?=a)",
            r"\u0041", r"\C", "a\\",
        ] {
            assert!(t(bad).is_err(), "{bad} should be rejected like Go does");
        }
        for good in [
            "a*?",
            "a+?b??",
            "(a*)*",
            r"^/(css|js)$",
            r"[^/]+\.png$",
            "a|{",
        ] {
            assert!(t(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn translation_is_a_fixed_point() {
        for s in [
            r"a{x\d[\w&]}",
            r"\Q{}\E",
            r"[+--][[:digit:]][\S\D\W]",
            r"\101",
            r"\<",
            "(?i)[]a]",
        ] {
            let once = go_regex_to_rust(s).unwrap();
            assert_eq!(go_regex_to_rust(&once).unwrap(), once, "{s}");
            regex::Regex::new(&once).unwrap();
        }
    }

    #[test]
    fn a_host_with_trailing_dots_renders_back_to_itself() {
        // Regression input of the `rule` fuzz target (fuzz/regressions/rule/).
        for text in ["Host(`a..`)", "Host(`a...`)", "Host(`a.`)", "Host(`a`)"] {
            let tree = parse_rule(text, RuleSyntax::V3).unwrap();
            let again = parse_rule(&to_rule_string(&tree), RuleSyntax::V3).unwrap();
            assert_eq!(again, tree, "{text} rendered as {}", to_rule_string(&tree));
        }
    }

    #[test]
    fn to_rule_string_renders_v3() {
        let rule = Rule::And(vec![
            Rule::Or(vec![host("a.com"), host("b.com")]),
            not(prefix("/x`y")),
            not(Rule::And(vec![method("GET"), query("k", "")])),
            query("k", "v"),
            header("X-A", "1"),
            ip("10.0.0.0/8"),
        ]);
        let text = to_rule_string(&rule);
        assert_eq!(
            text,
            "(Host(`a.com`) || Host(`b.com`)) && !PathPrefix(\"/x`y\") && !(Method(`GET`) && Query(`k`)) \
             && Query(`k`, `v`) && Header(`X-A`, `1`) && ClientIP(`10.0.0.0/8`)"
        );
        assert_eq!(v3(&text), rule);
        assert_eq!(quote("a\r\"\\\u{1}"), r#""a\r\"\\\u0001""#);
    }

    #[test]
    fn parsed_rules_render_back_to_the_same_tree() {
        for (rule, syntax) in [
            (
                "Path(`/css{path:(/.*)?}`) && Host(`a`, `b`)",
                RuleSyntax::V2,
            ),
            (r"HostRegexp(`{domain:[a-zA-Z-]+\.com}`)", RuleSyntax::V2),
            (r"HostRegexp(`{domain:[a-zA-Z-]+\.com}`)", RuleSyntax::V3),
            (
                "Path(`/{path:(css|js)}`) || !Query(`id={id:[0-9]+}`)",
                RuleSyntax::V2,
            ),
            (
                "PathRegexp(`/{path:(css|js)}`) || !QueryRegexp(`id`, `[\\S\\d]{2}`)",
                RuleSyntax::V3,
            ),
            (r"PathRegexp(`\d+[\s\w]\Q.\E`)", RuleSyntax::V3),
            ("Query(`mobile=`)", RuleSyntax::V2),
        ] {
            let tree = ok(rule, syntax);
            assert_eq!(v3(&to_rule_string(&tree)), tree, "{rule}");
        }
    }

    // --- properties ---

    fn arb_regex() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec![
                r"^[a-z]+\.example\.com$",
                "^/api/v[0-9]+",
                "(?i)^foo(?:bar)?$",
                "^(css|js)$",
                r"[^/]+\.png$",
                "a{2,3}b*?",
                r"\x{41}",
                r"^\p{Greek}+$",
                "[[:alpha:]]",
            ])
            .prop_map(str::to_owned),
            "[a-z0-9.{}()*+?|^$-]{1,10}".prop_map(|s| regex::escape(&s)),
        ]
    }

    fn arb_text() -> impl Strategy<Value = String> {
        prop_oneof!["[a-z0-9_.~-]{1,12}", "\\PC{1,10}", "[`\"\\\\ a\u{e9}]{1,6}"]
    }

    fn arb_matcher() -> impl Strategy<Value = Matcher> {
        prop_oneof![
            (
                proptest::option::of(Just("*.")),
                "[a-z0-9-]{1,10}(\\.[a-z0-9-]{1,10}){0,2}"
            )
                .prop_map(|(w, h)| Matcher::Host {
                    host: format!("{}{h}", w.unwrap_or(""))
                }),
            Just(Matcher::Host { host: "*".into() }),
            "[a-z0-9.-]{1,12}".prop_map(|s| Matcher::HostRegexp {
                regex: regex::escape(&s)
            }),
            arb_regex()
                .prop_filter("ASCII", |r| r.is_ascii())
                .prop_map(|regex| Matcher::HostRegexp { regex }),
            arb_text().prop_map(|p| Matcher::Path {
                path: format!("/{p}")
            }),
            arb_text().prop_map(|p| Matcher::PathPrefix {
                prefix: format!("/{p}")
            }),
            arb_regex().prop_map(|regex| Matcher::PathRegexp { regex }),
            "[A-Z]{1,7}".prop_map(|method| Matcher::Method { method }),
            ("[A-Z][a-z0-9]{0,5}(-[A-Z][a-z0-9]{0,5}){0,2}", arb_text())
                .prop_map(|(name, value)| Matcher::Header { name, value }),
            ("[A-Z][a-z0-9]{0,5}", arb_regex())
                .prop_map(|(name, regex)| Matcher::HeaderRegexp { name, regex }),
            (arb_text(), prop_oneof![Just(String::new()), arb_text()])
                .prop_map(|(key, value)| Matcher::Query { key, value }),
            (arb_text(), arb_regex()).prop_map(|(key, regex)| Matcher::QueryRegexp { key, regex }),
            (any::<[u8; 4]>(), 0u8..=32).prop_map(|(o, p)| Matcher::ClientIp {
                cidr: IpNet::new(IpAddr::from(o), p).unwrap().trunc().to_string()
            }),
            (any::<[u16; 8]>(), 0u8..=128).prop_map(|(o, p)| Matcher::ClientIp {
                cidr: IpNet::new(IpAddr::from(o), p).unwrap().trunc().to_string()
            }),
        ]
    }

    fn arb_rule() -> impl Strategy<Value = Rule> {
        arb_matcher()
            .prop_map(Rule::Match)
            .prop_recursive(4, 32, 4, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 2..4).prop_map(Rule::And),
                    prop::collection::vec(inner.clone(), 2..4).prop_map(Rule::Or),
                    inner.prop_map(|r| Rule::Not(Box::new(r))),
                ]
            })
    }

    /// The shape the parser produces: no `And` directly inside `And`, no `Or` directly inside `Or`.
    fn normalise(rule: Rule) -> Rule {
        match rule {
            Rule::And(items) => and(items.into_iter().map(normalise).collect()),
            Rule::Or(items) => or(items.into_iter().map(normalise).collect()),
            Rule::Not(inner) => Rule::Not(Box::new(normalise(*inner))),
            m @ Rule::Match(_) => m,
        }
    }

    fn check_spans(rule: &str, result: &Result<Rule, Vec<RuleError>>) {
        if let Err(errors) = result {
            assert!(!errors.is_empty());
            for e in errors {
                assert!(e.offset + e.len <= rule.len(), "{e:?} out of {rule:?}");
                assert!(
                    rule.is_char_boundary(e.offset) && rule.is_char_boundary(e.offset + e.len),
                    "{e:?}"
                );
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn never_panics_on_any_string(s in any::<String>()) {
            for syntax in [RuleSyntax::V2, RuleSyntax::V3] {
                check_spans(&s, &parse_rule(&s, syntax));
            }
        }

        #[test]
        fn never_panics_on_rule_like_strings(s in "[HhPpQqMmCcIi() `\"'!&|,\\\\{}\\[\\]:*.=/\\n\u{e9}ostheadrpxgq0-9-]{0,80}") {
            for syntax in [RuleSyntax::V2, RuleSyntax::V3] {
                check_spans(&s, &parse_rule(&s, syntax));
            }
        }

        #[test]
        fn never_panics_on_mutated_rules(rule in arb_rule(), cut in 0usize..400, insert in "[()`\"'!&|,{}\\\\ \n]{0,3}") {
            let text = to_rule_string(&rule);
            let mut at = cut.min(text.len());
            while !text.is_char_boundary(at) { at -= 1; }
            let mutated = format!("{}{insert}{}", &text[..at], &text[at..]);
            for syntax in [RuleSyntax::V2, RuleSyntax::V3] {
                check_spans(&mutated, &parse_rule(&mutated, syntax));
            }
        }

        #[test]
        fn rendering_then_parsing_gives_the_same_tree(rule in arb_rule()) {
            let rule = normalise(rule);
            let text = to_rule_string(&rule);
            let parsed = parse_rule(&text, RuleSyntax::V3);
            prop_assert_eq!(parsed.as_ref(), Ok(&rule), "rendered as {}", text);
            prop_assert_eq!(default_priority(&text), text.len() as i64);
        }

        #[test]
        fn go_translation_is_idempotent(s in "[a-z{}()\\[\\]^$.*+?|\\\\dDwWsSQE0-9,:&~-]{0,16}") {
            if let Ok(once) = go_regex_to_rust(&s) {
                prop_assert_eq!(go_regex_to_rust(&once), Ok(once.clone()), "from {}", s);
            }
        }
    }
}
