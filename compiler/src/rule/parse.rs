//! The parser: tokens → an expression of matcher calls joined by `&&`, `||` and `!`, with the
//! syntax error messages (Go's, made readable).

use super::display::quote;
use super::lex::{Lexer, Tok, Token};
use super::{MAX_DEPTH, RuleError, Span};

#[derive(Debug)]
pub(super) enum Expr {
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Not(Box<Expr>),
    Call(Call),
}

#[derive(Debug)]
pub(super) struct Call {
    pub(super) name: String,
    pub(super) name_span: Span,
    pub(super) args: Vec<Arg>,
    /// From the matcher name to the closing parenthesis.
    pub(super) span: Span,
}

#[derive(Debug)]
pub(super) struct Arg {
    pub(super) value: String,
    pub(super) span: Span,
}

pub(super) struct Parser<'a> {
    lexer: Lexer<'a>,
    tok: Token,
    depth: usize,
}

impl<'a> Parser<'a> {
    pub(super) fn parse(src: &'a str) -> Result<Expr, RuleError> {
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
