//! The lexer: a rule string → Go tokens, with byte spans.
//!
//! Traefik hands the rule to Go's expression parser (through vulcand/predicate), so the tokens are Go tokens:
//! identifiers, string literals, `(`, `)`, `,`, `&&`, `||`, `!`. Whitespace is space, tab, CR and LF. Go inserts a
//! semicolon at a line break that follows an identifier, a literal or `)`, so a rule may not continue on the next
//! line after one of those. `Newline` stands for that inserted semicolon.

use super::display::quote;
use super::{RuleError, Span};

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
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
pub(super) struct Token {
    pub(super) tok: Tok,
    pub(super) span: Span,
}

pub(super) struct Lexer<'a> {
    pub(super) src: &'a str,
    pos: usize,
    /// Whether a line break here would end the expression (Go's automatic semicolon rule).
    semi: bool,
}

impl<'a> Lexer<'a> {
    pub(super) fn new(src: &'a str) -> Self {
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

    pub(super) fn slice(&self, start: usize, end: usize) -> &'a str {
        self.src.get(start..end).unwrap_or("")
    }

    fn token(&self, tok: Tok, start: usize) -> Token {
        Token {
            tok,
            span: Span::new(start, self.pos),
        }
    }

    pub(super) fn next_token(&mut self) -> Result<Token, RuleError> {
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
