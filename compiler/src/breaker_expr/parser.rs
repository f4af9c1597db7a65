//! The expression half of Go's parser (`go/parser.ParseExpr`): every operator and precedence,
//! operands, selectors, index/slice/call, composite literals and type syntax, with Go's error
//! recovery, so the first error and the `(and N more errors)` count are Go's. The AST keeps only
//! what the walker tells apart.

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ChanDir {
    Send,
    Recv,
    Both,
}

#[derive(Debug)]
pub(super) struct Node {
    /// Byte offset of the node's start (Go's `Node.Pos()`).
    pub(super) pos: usize,
    pub(super) kind: Kind,
}

/// Node kinds. Only the children the walker (or the parser's own checks) look at are kept.
#[derive(Debug)]
pub(super) enum Kind {
    Bad,
    Ident(String),
    Lit(Tok, String),
    Paren(Box<Node>),
    Selector(Box<Node>, String),
    Index,
    IndexList,
    Slice,
    TypeAssert,
    Call(Box<Node>, Vec<Node>),
    Star,
    Unary(Tok),
    Binary {
        op: Tok,
        op_pos: usize,
        x: Box<Node>,
        y: Box<Node>,
    },
    CompositeLit,
    FuncLit,
    KeyValue,
    Ellipsis,
    ArrayType,
    StructType,
    FuncType,
    InterfaceType,
    MapType,
    ChanType {
        dir: ChanDir,
        arrow: Option<usize>,
        value: Box<Node>,
    },
}

impl Kind {
    /// Go's `%T` of the node.
    pub(super) fn go_type(&self) -> &'static str {
        match self {
            Kind::Bad => "*ast.BadExpr",
            Kind::Ident(_) => "*ast.Ident",
            Kind::Lit(..) => "*ast.BasicLit",
            Kind::Paren(_) => "*ast.ParenExpr",
            Kind::Selector(..) => "*ast.SelectorExpr",
            Kind::Index => "*ast.IndexExpr",
            Kind::IndexList => "*ast.IndexListExpr",
            Kind::Slice => "*ast.SliceExpr",
            Kind::TypeAssert => "*ast.TypeAssertExpr",
            Kind::Call(..) => "*ast.CallExpr",
            Kind::Star => "*ast.StarExpr",
            Kind::Unary(_) => "*ast.UnaryExpr",
            Kind::Binary { .. } => "*ast.BinaryExpr",
            Kind::CompositeLit => "*ast.CompositeLit",
            Kind::FuncLit => "*ast.FuncLit",
            Kind::KeyValue => "*ast.KeyValueExpr",
            Kind::Ellipsis => "*ast.Ellipsis",
            Kind::ArrayType => "*ast.ArrayType",
            Kind::StructType => "*ast.StructType",
            Kind::FuncType => "*ast.FuncType",
            Kind::InterfaceType => "*ast.InterfaceType",
            Kind::MapType => "*ast.MapType",
            Kind::ChanType { .. } => "*ast.ChanType",
        }
    }
}

pub(super) fn node(pos: usize, kind: Kind) -> Box<Node> {
    Box::new(Node { pos, kind })
}

pub(super) fn unparen(mut x: &Node) -> &Node {
    while let Kind::Paren(inner) = &x.kind {
        x = inner;
    }
    x
}

// ---------------------------------------------------------------------------
// Parser (go/parser, expression half)

/// Go's `bailout` panic: parsing stops, the errors collected so far are reported.
pub(super) struct Bailout;

pub(super) type PResult<T> = Result<T, Bailout>;

pub(super) fn stmt_start(t: Tok) -> bool {
    use Tok::*;
    matches!(
        t,
        Break
            | Const
            | Continue
            | Defer
            | Fallthrough
            | For
            | Go
            | Goto
            | If
            | Return
            | Select
            | Switch
            | Type
            | Var
    )
}

pub(super) fn expr_end(t: Tok) -> bool {
    use Tok::*;
    matches!(t, Comma | Colon | Semicolon | Rparen | Rbrack | Rbrace)
}

/// A parameter as `parseParameterList` sees it: an optional name and an optional type.
pub(super) struct Param {
    pub(super) name: Option<Box<Node>>,
    pub(super) typ: Option<Box<Node>>,
}

pub(super) struct Parser<'a> {
    pub(super) sc: Scanner<'a>,
    pub(super) pos: usize,
    pub(super) tok: Tok,
    pub(super) lit: String,
    pub(super) sync_pos: Option<usize>,
    pub(super) sync_cnt: u32,
    pub(super) expr_lev: i32,
    pub(super) in_rhs: bool,
    pub(super) nest_lev: u32,
    pub(super) stack: StackGuard,
}

/// Stack the parser and the walker may use below their entry point.
///
/// Go grows goroutine stacks on demand; Rust threads have a fixed stack (2 MiB for
/// spawned threads by default), so besides Go's nesting count this measures the stack
/// actually used and stops, with Go's nesting error, before it could overflow. Within
/// [`MAX_NESTING`] it can only trigger in unoptimised builds, on deeply nested type
/// syntax such as `interface{ m(interface{ m(…`.
pub(super) const STACK_BUDGET: usize = 1 << 20;

/// Remembers where the stack was when parsing started.
pub(super) struct StackGuard {
    pub(super) base: usize,
}

impl StackGuard {
    pub(super) fn new() -> Self {
        StackGuard {
            base: stack_address(),
        }
    }

    pub(super) fn exhausted(&self) -> bool {
        self.base.abs_diff(stack_address()) > STACK_BUDGET
    }
}

/// An address in the current stack frame (only compared, never dereferenced).
#[inline(never)]
pub(super) fn stack_address() -> usize {
    let marker = 0u8;
    std::ptr::addr_of!(marker) as usize
}

/// Parses like `go/parser.ParseExpr` and formats errors like `scanner.ErrorList.Error()`.
pub(super) fn parse_go_expr(src: &str) -> Result<Box<Node>, ExprError> {
    let mut p = Parser {
        sc: Scanner::new(src),
        pos: 0,
        tok: Tok::Illegal,
        lit: String::new(),
        sync_pos: None,
        sync_cnt: 0,
        expr_lev: 0,
        in_rhs: false,
        nest_lev: 0,
        stack: StackGuard::new(),
    };
    p.next();
    let result = p.parse_top();
    let mut errors = std::mem::take(&mut p.sc.errors);
    // Go sorts by (filename, line, column, message) and reports the first.
    errors.sort_by(|a, b| (&a.at, &a.msg).cmp(&(&b.at, &b.msg)));
    let more = errors.len().saturating_sub(1);
    let Some(first) = errors.into_iter().next() else {
        // A bailout always records an error first; stay safe if it did not.
        return result.map_err(|Bailout| ExprError {
            message: "exceeded max nesting depth".to_owned(),
            offset: None,
        });
    };
    let mut message = if first.at.file.is_empty() && first.at.line == 0 {
        first.msg
    } else {
        format!("{}: {}", first.at, first.msg)
    };
    if more > 0 {
        message.push_str(&format!(" (and {more} more errors)"));
    }
    Err(ExprError {
        message,
        offset: first.offset,
    })
}

impl Parser<'_> {
    pub(super) fn parse_top(&mut self) -> PResult<Box<Node>> {
        let x = self.parse_rhs()?;
        // If a semicolon was inserted, consume it; report an error if there are more tokens.
        if self.tok == Tok::Semicolon && self.lit == "\n" {
            self.next();
        }
        self.expect(Tok::Eof)?;
        Ok(x)
    }

    pub(super) fn next(&mut self) {
        let (pos, tok, lit) = self.sc.scan();
        self.pos = pos;
        self.tok = tok;
        self.lit = lit;
    }

    // -- error handling ----------------------------------------------------

    pub(super) fn error_at(&mut self, pos: Option<usize>, msg: impl Into<String>) -> PResult<()> {
        let at = pos.map_or_else(Position::default, |p| self.sc.lines.position(p));
        // Without AllErrors, Go drops errors on the line of the last recorded one and
        // gives up after more than 10.
        if self.sc.errors.last().is_some_and(|e| e.at.line == at.line) {
            return Ok(());
        }
        if self.sc.errors.len() > 10 {
            return Err(Bailout);
        }
        self.sc.errors.push(GoError {
            at,
            offset: pos,
            msg: msg.into(),
        });
        Ok(())
    }

    pub(super) fn error(&mut self, pos: usize, msg: impl Into<String>) -> PResult<()> {
        self.error_at(Some(pos), msg)
    }

    pub(super) fn error_expected_at(&mut self, pos: Option<usize>, what: &str) -> PResult<()> {
        let mut msg = format!("expected {what}");
        if pos == Some(self.pos) {
            if self.tok == Tok::Semicolon && self.lit == "\n" {
                msg.push_str(", found newline");
            } else if self.tok.is_literal() {
                msg.push_str(", found ");
                msg.push_str(&self.lit);
            } else {
                msg.push_str(&format!(", found '{}'", self.tok.as_str()));
            }
        }
        self.error_at(pos, msg)
    }

    pub(super) fn error_expected(&mut self, pos: usize, what: &str) -> PResult<()> {
        self.error_expected_at(Some(pos), what)
    }

    pub(super) fn expect(&mut self, tok: Tok) -> PResult<usize> {
        let pos = self.pos;
        if self.tok != tok {
            self.error_expected(pos, &format!("'{}'", tok.as_str()))?;
        }
        self.next(); // make progress
        Ok(pos)
    }

    pub(super) fn expect2(&mut self, tok: Tok) -> PResult<()> {
        if self.tok != tok {
            self.error_expected(self.pos, &format!("'{}'", tok.as_str()))?;
        }
        self.next();
        Ok(())
    }

    pub(super) fn expect_closing(&mut self, tok: Tok, context: &str) -> PResult<usize> {
        if self.tok != tok && self.tok == Tok::Semicolon && self.lit == "\n" {
            self.error(self.pos, format!("missing ',' before newline in {context}"))?;
            self.next();
        }
        self.expect(tok)
    }

    pub(super) fn expect_semi(&mut self) -> PResult<()> {
        // a semicolon is optional before a closing ')' or '}'
        if self.tok != Tok::Rparen && self.tok != Tok::Rbrace {
            match self.tok {
                Tok::Comma => {
                    self.error_expected(self.pos, "';'")?;
                    self.next();
                }
                Tok::Semicolon => self.next(),
                _ => {
                    self.error_expected(self.pos, "';'")?;
                    self.advance(stmt_start);
                }
            }
        }
        Ok(())
    }

    pub(super) fn at_comma(&mut self, context: &str, follow: Tok) -> PResult<bool> {
        if self.tok == Tok::Comma {
            return Ok(true);
        }
        if self.tok != follow {
            let mut msg = "missing ','".to_owned();
            if self.tok == Tok::Semicolon && self.lit == "\n" {
                msg.push_str(" before newline");
            }
            self.error(self.pos, format!("{msg} in {context}"))?;
            return Ok(true); // "insert" a comma and continue
        }
        Ok(false)
    }

    /// Skips to the next token in `to` (or EOF), for error recovery.
    pub(super) fn advance(&mut self, to: fn(Tok) -> bool) {
        while self.tok != Tok::Eof {
            if to(self.tok) {
                if Some(self.pos) == self.sync_pos && self.sync_cnt < 10 {
                    self.sync_cnt += 1;
                    return;
                }
                if self.sync_pos.is_none_or(|s| self.pos > s) {
                    self.sync_pos = Some(self.pos);
                    self.sync_cnt = 0;
                    return;
                }
            }
            self.next();
        }
    }

    pub(super) fn inc_nest(&mut self) -> PResult<()> {
        self.nest_lev += 1;
        if self.nest_lev > MAX_NESTING || self.stack.exhausted() {
            self.error(self.pos, "exceeded max nesting depth")?;
            return Err(Bailout);
        }
        Ok(())
    }

    pub(super) fn dec_nest(&mut self, n: u32) {
        self.nest_lev = self.nest_lev.saturating_sub(n);
    }

    // -- identifiers and types -----------------------------------------------

    pub(super) fn parse_ident(&mut self) -> PResult<Box<Node>> {
        let pos = self.pos;
        if self.tok == Tok::Ident {
            let name = std::mem::take(&mut self.lit);
            self.next();
            Ok(node(pos, Kind::Ident(name)))
        } else {
            self.expect(Tok::Ident)?;
            Ok(node(pos, Kind::Ident("_".to_owned())))
        }
    }

    pub(super) fn parse_type(&mut self) -> PResult<Box<Node>> {
        if let Some(t) = self.try_ident_or_type()? {
            return Ok(t);
        }
        let pos = self.pos;
        self.error_expected(pos, "type")?;
        self.advance(expr_end);
        Ok(node(pos, Kind::Bad))
    }

    pub(super) fn parse_qualified_ident(&mut self, ident: Option<Box<Node>>) -> PResult<Box<Node>> {
        let typ = self.parse_type_name(ident)?;
        if self.tok == Tok::Lbrack {
            return self.parse_type_instance(typ.pos);
        }
        Ok(typ)
    }

    pub(super) fn parse_type_name(&mut self, ident: Option<Box<Node>>) -> PResult<Box<Node>> {
        let ident = match ident {
            Some(i) => i,
            None => self.parse_ident()?,
        };
        if self.tok == Tok::Period {
            self.next();
            let Kind::Ident(sel) = self.parse_ident()?.kind else {
                return Ok(ident);
            };
            return Ok(node(ident.pos, Kind::Selector(ident, sel)));
        }
        Ok(ident)
    }

    /// `[` already consumed at `lbrack`; `has_len` if the length was already parsed.
    pub(super) fn parse_array_type(&mut self, lbrack: usize, has_len: bool) -> PResult<Box<Node>> {
        if !has_len {
            self.expr_lev += 1;
            // always permit an ellipsis, for more fault-tolerant parsing
            if self.tok == Tok::Ellipsis {
                self.next();
            } else if self.tok != Tok::Rbrack {
                self.parse_rhs()?;
            }
            self.expr_lev -= 1;
        }
        if self.tok == Tok::Comma {
            self.error(self.pos, "unexpected comma; expecting ]")?;
            self.next();
        }
        self.expect(Tok::Rbrack)?;
        self.parse_type()?;
        Ok(node(lbrack, Kind::ArrayType))
    }

    /// Returns the (possibly dropped) field name and the type.
    pub(super) fn parse_array_field_or_type_instance(
        &mut self,
        x: Box<Node>,
    ) -> PResult<(Option<Box<Node>>, Box<Node>)> {
        let lbrack = self.expect(Tok::Lbrack)?;
        let mut trailing_comma = None;
        let mut nargs = 0;
        if self.tok != Tok::Rbrack {
            self.expr_lev += 1;
            self.parse_rhs()?;
            nargs += 1;
            while self.tok == Tok::Comma {
                let comma = self.pos;
                self.next();
                if self.tok == Tok::Rbrack {
                    trailing_comma = Some(comma);
                    break;
                }
                self.parse_rhs()?;
                nargs += 1;
            }
            self.expr_lev -= 1;
        }
        self.expect(Tok::Rbrack)?;
        if nargs == 0 {
            self.parse_type()?; // x []E
            return Ok((Some(x), node(lbrack, Kind::ArrayType)));
        }
        if nargs == 1 && self.try_ident_or_type()?.is_some() {
            // x [P]E
            if let Some(c) = trailing_comma {
                self.error(c, "unexpected comma; expecting ]")?;
            }
            return Ok((Some(x), node(lbrack, Kind::ArrayType)));
        }
        // x[P], x[P1, P2], ...
        let kind = if nargs == 1 {
            Kind::Index
        } else {
            Kind::IndexList
        };
        Ok((None, node(x.pos, kind)))
    }

    pub(super) fn parse_field_decl(&mut self) -> PResult<()> {
        match self.tok {
            Tok::Ident => {
                let name = self.parse_ident()?;
                if matches!(
                    self.tok,
                    Tok::Period | Tok::Str | Tok::Semicolon | Tok::Rbrace
                ) {
                    // embedded type
                    if self.tok == Tok::Period {
                        self.parse_qualified_ident(Some(name))?;
                    }
                } else {
                    let mut names = 1;
                    while self.tok == Tok::Comma {
                        self.next();
                        self.parse_ident()?;
                        names += 1;
                    }
                    if names == 1 && self.tok == Tok::Lbrack {
                        self.parse_array_field_or_type_instance(name)?;
                    } else {
                        self.parse_type()?;
                    }
                }
            }
            Tok::Mul => {
                self.next();
                if self.tok == Tok::Lparen {
                    self.error(self.pos, "cannot parenthesize embedded type")?;
                    self.next();
                    self.parse_qualified_ident(None)?;
                    if self.tok == Tok::Rparen {
                        self.next();
                    }
                } else {
                    self.parse_qualified_ident(None)?;
                }
            }
            Tok::Lparen => {
                self.error(self.pos, "cannot parenthesize embedded type")?;
                self.next();
                if self.tok == Tok::Mul {
                    self.next();
                }
                self.parse_qualified_ident(None)?;
                if self.tok == Tok::Rparen {
                    self.next();
                }
            }
            _ => {
                self.error_expected(self.pos, "field name or embedded type")?;
                self.advance(expr_end);
            }
        }
        if self.tok == Tok::Str {
            self.next(); // tag
        }
        self.expect_semi()
    }

    pub(super) fn parse_struct_type(&mut self) -> PResult<Box<Node>> {
        let pos = self.expect(Tok::Struct)?;
        self.expect(Tok::Lbrace)?;
        while matches!(self.tok, Tok::Ident | Tok::Mul | Tok::Lparen) {
            self.parse_field_decl()?;
        }
        self.expect(Tok::Rbrace)?;
        Ok(node(pos, Kind::StructType))
    }

    pub(super) fn parse_pointer_type(&mut self) -> PResult<Box<Node>> {
        let star = self.expect(Tok::Mul)?;
        self.parse_type()?;
        Ok(node(star, Kind::Star))
    }

    pub(super) fn parse_dots_type(&mut self) -> PResult<Box<Node>> {
        let pos = self.expect(Tok::Ellipsis)?;
        self.parse_type()?;
        Ok(node(pos, Kind::Ellipsis))
    }

    pub(super) fn parse_param_decl(
        &mut self,
        name: Option<Box<Node>>,
        type_sets_ok: bool,
    ) -> PResult<Param> {
        let mut f = Param {
            name: None,
            typ: None,
        };
        if name.is_none() && type_sets_ok && self.tok == Tok::Tilde {
            f.typ = Some(self.embedded_elem(None)?);
            return Ok(f);
        }
        if name.is_some() || self.tok == Tok::Ident {
            f.name = Some(match name {
                Some(n) => n,
                None => self.parse_ident()?,
            });
            match self.tok {
                Tok::Ident
                | Tok::Mul
                | Tok::Arrow
                | Tok::Func
                | Tok::Chan
                | Tok::Map
                | Tok::Struct
                | Tok::Interface
                | Tok::Lparen => f.typ = Some(self.parse_type()?),
                Tok::Lbrack => {
                    if let Some(n) = f.name.take() {
                        let (n, t) = self.parse_array_field_or_type_instance(n)?;
                        f.name = n;
                        f.typ = Some(t);
                    }
                }
                Tok::Ellipsis => {
                    f.typ = Some(self.parse_dots_type()?);
                    return Ok(f); // don't allow ...type "|" ...
                }
                Tok::Period => {
                    let n = f.name.take();
                    f.typ = Some(self.parse_qualified_ident(n)?);
                }
                Tok::Tilde if type_sets_ok => {
                    f.typ = Some(self.embedded_elem(None)?);
                    return Ok(f);
                }
                Tok::Or if type_sets_ok => {
                    let n = f.name.take();
                    f.typ = Some(self.embedded_elem(n)?);
                    return Ok(f);
                }
                _ => {}
            }
        } else {
            match self.tok {
                Tok::Mul
                | Tok::Arrow
                | Tok::Func
                | Tok::Lbrack
                | Tok::Chan
                | Tok::Map
                | Tok::Struct
                | Tok::Interface
                | Tok::Lparen => f.typ = Some(self.parse_type()?),
                Tok::Ellipsis => {
                    f.typ = Some(self.parse_dots_type()?);
                    return Ok(f);
                }
                _ => {
                    self.error_expected(self.pos, "')'")?;
                    self.advance(expr_end);
                }
            }
        }
        if type_sets_ok && self.tok == Tok::Or && f.typ.is_some() {
            let t = f.typ.take();
            f.typ = Some(self.embedded_elem(t)?);
        }
        Ok(f)
    }

    /// Returns the number of parameters (Go's `len(list)`).
    pub(super) fn parse_parameter_list(
        &mut self,
        mut name0: Option<Box<Node>>,
        closing: Tok,
        dddok: bool,
    ) -> PResult<usize> {
        let tparams = closing == Tok::Rbrack;
        let pos0 = name0.as_ref().map_or(self.pos, |n| n.pos);
        let mut list: Vec<Param> = Vec::new();
        let mut named = 0;
        let mut typed = 0;
        while name0.is_some() || (self.tok != closing && self.tok != Tok::Eof) {
            let par = self.parse_param_decl(name0.take(), tparams)?;
            if par.name.is_some() || par.typ.is_some() {
                if par.name.is_some() && par.typ.is_some() {
                    named += 1;
                }
                if par.typ.is_some() {
                    typed += 1;
                }
                list.push(par);
            }
            if !self.at_comma("parameter list", closing)? {
                break;
            }
            self.next();
        }
        if list.is_empty() {
            return Ok(0);
        }
        // The checks live in their own function to keep this (recursive) frame small.
        self.check_parameter_list(&list, named, typed, pos0, tparams, dddok)?;
        Ok(list.len())
    }

    /// Go's checks after collecting a parameter list: naming and the use of `...`.
    pub(super) fn check_parameter_list(
        &mut self,
        list: &[Param],
        named: usize,
        typed: usize,
        pos0: usize,
        tparams: bool,
        dddok: bool,
    ) -> PResult<()> {
        // Per parameter: the position of its type's `...`, if its final type is `...T`.
        let dots = |t: &Node| matches!(t.kind, Kind::Ellipsis).then_some(t.pos);
        let mut ellipsis: Vec<Option<usize>> = Vec::with_capacity(list.len());
        if named == 0 {
            // all unnamed => found names are type names
            ellipsis.extend(
                list.iter()
                    .map(|par| par.typ.as_deref().or(par.name.as_deref()).and_then(dots)),
            );
            if tparams {
                let (err_pos, msg) = if named == typed {
                    (self.pos, "missing type constraint".to_owned())
                } else {
                    let mut m = "missing type parameter name".to_owned();
                    if list.len() == 1 {
                        m.push_str(" or invalid array length");
                    }
                    (pos0, m)
                };
                self.error(err_pos, msg)?;
            }
        } else if named != list.len() {
            // some named => all must be named; distribute types from right to left
            ellipsis.resize(list.len(), None);
            let mut err_pos = None;
            let mut typ: Option<Option<usize>> = None; // the current type's `...` position
            for (i, par) in list.iter().enumerate().rev() {
                let slot = ellipsis.get_mut(i);
                if let Some(t) = &par.typ {
                    typ = Some(dots(t));
                    if par.name.is_none() {
                        err_pos = Some(t.pos);
                    }
                    if let Some(e) = slot {
                        *e = dots(t);
                    }
                } else if let Some(t) = typ {
                    if let Some(e) = slot {
                        *e = t;
                    }
                } else {
                    err_pos = par.name.as_ref().map(|n| n.pos);
                }
            }
            if let Some(mut err_pos) = err_pos {
                let msg = if named == typed {
                    err_pos = self.pos; // at the closing ) or ]
                    if tparams {
                        "missing type constraint".to_owned()
                    } else {
                        "missing parameter type".to_owned()
                    }
                } else if tparams {
                    let mut m = "missing type parameter name".to_owned();
                    if list.len() == 1 {
                        m.push_str(" or invalid array length");
                    }
                    m
                } else {
                    "missing parameter name".to_owned()
                };
                self.error(err_pos, msg)?;
            }
        } else {
            ellipsis.extend(list.iter().map(|par| par.typ.as_deref().and_then(dots)));
        }

        // check use of ... (only the first occurrence is reported)
        let n = list.len();
        let bad = ellipsis
            .iter()
            .enumerate()
            .find_map(|(i, &e)| e.filter(|_| !dddok || i + 1 < n));
        if let Some(pos) = bad {
            let msg = if dddok {
                "can only use ... with final parameter"
            } else {
                "invalid use of ..."
            };
            self.error(pos, msg)?;
        }
        Ok(())
    }

    /// Returns the position of `[` when the list is non-empty.
    pub(super) fn parse_type_parameters(&mut self) -> PResult<Option<usize>> {
        let lbrack = self.expect(Tok::Lbrack)?;
        let mut n = 0;
        if self.tok != Tok::Rbrack {
            n = self.parse_parameter_list(None, Tok::Rbrack, false)?;
        }
        let rbrack = self.expect(Tok::Rbrack)?;
        if n == 0 {
            self.error(rbrack, "empty type parameter list")?;
            return Ok(None);
        }
        Ok(Some(lbrack))
    }

    pub(super) fn parse_parameters(&mut self, result: bool) -> PResult<()> {
        if !result || self.tok == Tok::Lparen {
            self.expect(Tok::Lparen)?;
            if self.tok != Tok::Rparen {
                self.parse_parameter_list(None, Tok::Rparen, !result)?;
            }
            self.expect(Tok::Rparen)?;
            return Ok(());
        }
        self.try_ident_or_type()?;
        Ok(())
    }

    pub(super) fn parse_func_type(&mut self) -> PResult<Box<Node>> {
        let pos = self.expect(Tok::Func)?;
        if self.tok == Tok::Lbrack
            && let Some(open) = self.parse_type_parameters()?
        {
            self.error(open, "function type must have no type parameters")?;
        }
        self.parse_parameters(false)?;
        self.parse_parameters(true)?;
        Ok(node(pos, Kind::FuncType))
    }

    /// Returns whether the spec is a method (has a name), and its type otherwise.
    pub(super) fn parse_method_spec(&mut self) -> PResult<Option<Box<Node>>> {
        let x = self.parse_type_name(None)?;
        if !matches!(x.kind, Kind::Ident(_)) {
            // embedded, possibly instantiated type
            if self.tok == Tok::Lbrack {
                return Ok(Some(self.parse_type_instance(x.pos)?));
            }
            return Ok(Some(x));
        }
        match self.tok {
            Tok::Lbrack => {
                // generic method or embedded instantiated type
                let lbrack = self.pos;
                self.next();
                self.expr_lev += 1;
                let first = self.parse_expr()?;
                self.expr_lev -= 1;
                if matches!(first.kind, Kind::Ident(_))
                    && self.tok != Tok::Comma
                    && self.tok != Tok::Rbrack
                {
                    // generic method m[T any]: parsed for a better error message
                    self.parse_parameter_list(Some(first), Tok::Rbrack, false)?;
                    self.expect(Tok::Rbrack)?;
                    self.error(lbrack, "interface method must have no type parameters")?;
                    self.parse_parameters(false)?;
                    self.parse_parameters(true)?;
                    return Ok(None);
                }
                let mut n = 1;
                if self.at_comma("type argument list", Tok::Rbrack)? {
                    self.expr_lev += 1;
                    self.next();
                    while self.tok != Tok::Rbrack && self.tok != Tok::Eof {
                        self.parse_type()?;
                        n += 1;
                        if !self.at_comma("type argument list", Tok::Rbrack)? {
                            break;
                        }
                        self.next();
                    }
                    self.expr_lev -= 1;
                }
                self.expect_closing(Tok::Rbrack, "type argument list")?;
                let kind = if n == 1 { Kind::Index } else { Kind::IndexList };
                Ok(Some(node(x.pos, kind)))
            }
            Tok::Lparen => {
                // ordinary method
                self.parse_parameters(false)?;
                self.parse_parameters(true)?;
                Ok(None)
            }
            _ => Ok(Some(x)), // embedded type
        }
    }

    pub(super) fn embedded_elem(&mut self, x: Option<Box<Node>>) -> PResult<Box<Node>> {
        let mut x = match x {
            Some(x) => x,
            None => self.embedded_term()?,
        };
        while self.tok == Tok::Or {
            let op_pos = self.pos;
            self.next();
            let y = self.embedded_term()?;
            x = node(
                x.pos,
                Kind::Binary {
                    op: Tok::Or,
                    op_pos,
                    x,
                    y,
                },
            );
        }
        Ok(x)
    }

    pub(super) fn embedded_term(&mut self) -> PResult<Box<Node>> {
        if self.tok == Tok::Tilde {
            let pos = self.pos;
            self.next();
            self.parse_type()?;
            return Ok(node(pos, Kind::Unary(Tok::Tilde)));
        }
        if let Some(t) = self.try_ident_or_type()? {
            return Ok(t);
        }
        let pos = self.pos;
        self.error_expected(pos, "~ term or type")?;
        self.advance(expr_end);
        Ok(node(pos, Kind::Bad))
    }

    pub(super) fn parse_interface_type(&mut self) -> PResult<Box<Node>> {
        let pos = self.expect(Tok::Interface)?;
        self.expect(Tok::Lbrace)?;
        loop {
            if self.tok == Tok::Ident {
                if let Some(t) = self.parse_method_spec()? {
                    self.embedded_elem(Some(t))?;
                }
                self.expect_semi()?;
            } else if self.tok == Tok::Tilde {
                self.embedded_elem(None)?;
                self.expect_semi()?;
            } else if let Some(t) = self.try_ident_or_type()? {
                self.embedded_elem(Some(t))?;
                self.expect_semi()?;
            } else {
                break;
            }
        }
        self.expect(Tok::Rbrace)?;
        Ok(node(pos, Kind::InterfaceType))
    }

    pub(super) fn parse_map_type(&mut self) -> PResult<Box<Node>> {
        let pos = self.expect(Tok::Map)?;
        self.expect(Tok::Lbrack)?;
        self.parse_type()?;
        self.expect(Tok::Rbrack)?;
        self.parse_type()?;
        Ok(node(pos, Kind::MapType))
    }

    pub(super) fn parse_chan_type(&mut self) -> PResult<Box<Node>> {
        let pos = self.pos;
        let mut dir = ChanDir::Both;
        let mut arrow = None;
        if self.tok == Tok::Chan {
            self.next();
            if self.tok == Tok::Arrow {
                arrow = Some(self.pos);
                self.next();
                dir = ChanDir::Send;
            }
        } else {
            arrow = Some(self.expect(Tok::Arrow)?);
            self.expect(Tok::Chan)?;
            dir = ChanDir::Recv;
        }
        let value = self.parse_type()?;
        Ok(node(pos, Kind::ChanType { dir, arrow, value }))
    }

    /// `typ_pos` is where the instantiated type starts.
    pub(super) fn parse_type_instance(&mut self, typ_pos: usize) -> PResult<Box<Node>> {
        let opening = self.expect(Tok::Lbrack)?;
        self.expr_lev += 1;
        let mut n = 0;
        while self.tok != Tok::Rbrack && self.tok != Tok::Eof {
            self.parse_type()?;
            n += 1;
            if !self.at_comma("type argument list", Tok::Rbrack)? {
                break;
            }
            self.next();
        }
        self.expr_lev -= 1;
        let closing = self.expect_closing(Tok::Rbrack, "type argument list")?;
        if n == 0 {
            self.error_expected(closing, "type argument list")?;
        }
        let _ = opening;
        let kind = if n <= 1 { Kind::Index } else { Kind::IndexList };
        Ok(node(typ_pos, kind))
    }

    pub(super) fn try_ident_or_type(&mut self) -> PResult<Option<Box<Node>>> {
        self.inc_nest()?;
        let r = self.try_ident_or_type_inner();
        self.dec_nest(1);
        r
    }

    pub(super) fn try_ident_or_type_inner(&mut self) -> PResult<Option<Box<Node>>> {
        let t = match self.tok {
            Tok::Ident => {
                let typ = self.parse_type_name(None)?;
                if self.tok == Tok::Lbrack {
                    self.parse_type_instance(typ.pos)?
                } else {
                    typ
                }
            }
            Tok::Lbrack => {
                let lbrack = self.expect(Tok::Lbrack)?;
                self.parse_array_type(lbrack, false)?
            }
            Tok::Struct => self.parse_struct_type()?,
            Tok::Mul => self.parse_pointer_type()?,
            Tok::Func => self.parse_func_type()?,
            Tok::Interface => self.parse_interface_type()?,
            Tok::Map => self.parse_map_type()?,
            Tok::Chan | Tok::Arrow => self.parse_chan_type()?,
            Tok::Lparen => {
                let lparen = self.pos;
                self.next();
                let typ = self.parse_type()?;
                self.expect(Tok::Rparen)?;
                node(lparen, Kind::Paren(typ))
            }
            _ => return Ok(None),
        };
        Ok(Some(t))
    }

    // -- expressions -------------------------------------------------------

    pub(super) fn parse_func_type_or_lit(&mut self) -> PResult<Box<Node>> {
        let typ = self.parse_func_type()?;
        if self.tok != Tok::Lbrace {
            return Ok(typ); // function type only
        }
        self.expr_lev += 1;
        self.parse_body()?;
        self.expr_lev -= 1;
        Ok(node(typ.pos, Kind::FuncLit))
    }

    /// Skips a function body by brace matching (approximation: Go parses statements).
    pub(super) fn parse_body(&mut self) -> PResult<()> {
        self.expect(Tok::Lbrace)?;
        let mut depth = 0usize;
        while self.tok != Tok::Eof {
            match self.tok {
                Tok::Lbrace => depth += 1,
                Tok::Rbrace if depth == 0 => break,
                Tok::Rbrace => depth -= 1,
                _ => {}
            }
            self.next();
        }
        self.expect2(Tok::Rbrace)
    }

    /// May return an expression or a raw type; callers must verify the result.
    pub(super) fn parse_operand(&mut self) -> PResult<Box<Node>> {
        match self.tok {
            Tok::Ident => self.parse_ident(),
            Tok::Int | Tok::Float | Tok::Imag | Tok::Char | Tok::Str => {
                let n = node(self.pos, Kind::Lit(self.tok, std::mem::take(&mut self.lit)));
                self.next();
                Ok(n)
            }
            Tok::Lparen => {
                let lparen = self.pos;
                self.next();
                self.expr_lev += 1;
                let x = self.parse_rhs()?; // types may be parenthesized: (some type)
                self.expr_lev -= 1;
                self.expect(Tok::Rparen)?;
                Ok(node(lparen, Kind::Paren(x)))
            }
            Tok::Func => self.parse_func_type_or_lit(),
            _ => {
                if let Some(t) = self.try_ident_or_type()? {
                    return Ok(t);
                }
                let pos = self.pos;
                self.error_expected(pos, "operand")?;
                self.advance(stmt_start);
                Ok(node(pos, Kind::Bad))
            }
        }
    }

    pub(super) fn parse_type_assertion(&mut self, x_pos: usize) -> PResult<Box<Node>> {
        self.expect(Tok::Lparen)?;
        if self.tok == Tok::Type {
            self.next(); // type switch guard: x.(type)
        } else {
            self.parse_type()?;
        }
        self.expect(Tok::Rparen)?;
        Ok(node(x_pos, Kind::TypeAssert))
    }

    pub(super) fn parse_index_or_slice_or_instance(&mut self, x_pos: usize) -> PResult<Box<Node>> {
        self.expect(Tok::Lbrack)?;
        if self.tok == Tok::Rbrack {
            // empty index: accepted for parsing tolerance, but complain
            self.error_expected(self.pos, "operand")?;
            self.next();
            return Ok(node(x_pos, Kind::Index));
        }
        self.expr_lev += 1;
        let mut has_low = false;
        if self.tok != Tok::Colon {
            self.parse_rhs()?;
            has_low = true;
        }
        let mut ncolons = 0;
        let mut colons = [0usize; 2];
        let mut has_idx = [false; 2];
        let mut nargs = 0;
        match self.tok {
            Tok::Colon => {
                // slice expression
                while self.tok == Tok::Colon && ncolons < 2 {
                    if let Some(c) = colons.get_mut(ncolons) {
                        *c = self.pos;
                    }
                    ncolons += 1;
                    self.next();
                    if !matches!(self.tok, Tok::Colon | Tok::Rbrack | Tok::Eof) {
                        self.parse_rhs()?;
                        if let Some(h) = has_idx.get_mut(ncolons - 1) {
                            *h = true;
                        }
                    }
                }
            }
            Tok::Comma => {
                // instance expression
                nargs = usize::from(has_low);
                while self.tok == Tok::Comma {
                    self.next();
                    if self.tok != Tok::Rbrack && self.tok != Tok::Eof {
                        self.parse_type()?;
                        nargs += 1;
                    }
                }
            }
            _ => {}
        }
        self.expr_lev -= 1;
        self.expect(Tok::Rbrack)?;
        if ncolons > 0 {
            if ncolons == 2 {
                let [c0, c1] = colons;
                let [mid, fin] = has_idx;
                if !mid {
                    self.error(c0, "middle index required in 3-index slice")?;
                }
                if !fin {
                    self.error(c1, "final index required in 3-index slice")?;
                }
            }
            return Ok(node(x_pos, Kind::Slice));
        }
        let kind = if nargs <= 1 {
            Kind::Index
        } else {
            Kind::IndexList
        };
        Ok(node(x_pos, kind))
    }

    pub(super) fn parse_call_or_conversion(&mut self, fun: Box<Node>) -> PResult<Box<Node>> {
        self.expect(Tok::Lparen)?;
        self.expr_lev += 1;
        let mut args = Vec::new();
        let mut ellipsis = false;
        while self.tok != Tok::Rparen && self.tok != Tok::Eof && !ellipsis {
            args.push(*self.parse_rhs()?); // builtins may expect a type: make(some type, ...)
            if self.tok == Tok::Ellipsis {
                // predicate ignores the ellipsis, so `f(x...)` is simply `f(x)`
                ellipsis = true;
                self.next();
            }
            if !self.at_comma("argument list", Tok::Rparen)? {
                break;
            }
            self.next();
        }
        self.expr_lev -= 1;
        self.expect_closing(Tok::Rparen, "argument list")?;
        Ok(node(fun.pos, Kind::Call(fun, args)))
    }

    pub(super) fn parse_value(&mut self) -> PResult<Box<Node>> {
        if self.tok == Tok::Lbrace {
            return self.parse_literal_value(None);
        }
        self.parse_expr()
    }

    pub(super) fn parse_element(&mut self) -> PResult<Box<Node>> {
        let x = self.parse_value()?;
        if self.tok == Tok::Colon {
            self.next();
            self.parse_value()?;
            return Ok(node(x.pos, Kind::KeyValue));
        }
        Ok(x)
    }

    pub(super) fn parse_literal_value(&mut self, typ: Option<Box<Node>>) -> PResult<Box<Node>> {
        self.inc_nest()?;
        let r = self.parse_literal_value_inner(typ);
        self.dec_nest(1);
        r
    }

    pub(super) fn parse_literal_value_inner(
        &mut self,
        typ: Option<Box<Node>>,
    ) -> PResult<Box<Node>> {
        let lbrace = self.expect(Tok::Lbrace)?;
        self.expr_lev += 1;
        if self.tok != Tok::Rbrace {
            while self.tok != Tok::Rbrace && self.tok != Tok::Eof {
                self.parse_element()?;
                if !self.at_comma("composite literal", Tok::Rbrace)? {
                    break;
                }
                self.next();
            }
        }
        self.expr_lev -= 1;
        self.expect_closing(Tok::Rbrace, "composite literal")?;
        Ok(node(typ.map_or(lbrace, |t| t.pos), Kind::CompositeLit))
    }

    pub(super) fn parse_primary_expr(&mut self) -> PResult<Box<Node>> {
        let mut x = self.parse_operand()?;
        // Go tracks the nesting per loop iteration, since the loop builds nested output.
        let mut n = 0;
        let result = loop {
            n += 1;
            self.inc_nest()?;
            match self.tok {
                Tok::Period => {
                    self.next();
                    match self.tok {
                        Tok::Ident => {
                            let Kind::Ident(sel) = self.parse_ident()?.kind else {
                                break x;
                            };
                            x = node(x.pos, Kind::Selector(x, sel));
                        }
                        Tok::Lparen => x = self.parse_type_assertion(x.pos)?,
                        _ => {
                            let pos = self.pos;
                            self.error_expected(pos, "selector or type assertion")?;
                            if self.tok != Tok::Rbrace {
                                self.next(); // make progress
                            }
                            x = node(x.pos, Kind::Selector(x, "_".to_owned()));
                        }
                    }
                }
                Tok::Lbrack => x = self.parse_index_or_slice_or_instance(x.pos)?,
                Tok::Lparen => x = self.parse_call_or_conversion(x)?,
                Tok::Lbrace => {
                    // operand may have returned a parenthesized complit type; accept it
                    // but complain if we have a complit
                    let t = unparen(&x);
                    let complit = match t.kind {
                        Kind::Bad
                        | Kind::Ident(_)
                        | Kind::Selector(..)
                        | Kind::Index
                        | Kind::IndexList => self.expr_lev >= 0,
                        Kind::ArrayType | Kind::StructType | Kind::MapType => true,
                        _ => false,
                    };
                    if !complit {
                        break x;
                    }
                    if matches!(x.kind, Kind::Paren(_)) {
                        let tpos = t.pos;
                        self.error(tpos, "cannot parenthesize type in composite literal")?;
                    }
                    x = self.parse_literal_value(Some(x))?;
                }
                _ => break x,
            }
        };
        self.dec_nest(n);
        Ok(result)
    }

    pub(super) fn parse_unary_expr(&mut self) -> PResult<Box<Node>> {
        self.inc_nest()?;
        let r = self.parse_unary_inner();
        self.dec_nest(1);
        r
    }

    pub(super) fn parse_unary_inner(&mut self) -> PResult<Box<Node>> {
        match self.tok {
            Tok::Add | Tok::Sub | Tok::Not | Tok::Xor | Tok::And | Tok::Tilde => {
                let (pos, op) = (self.pos, self.tok);
                self.next();
                self.parse_unary_expr()?;
                Ok(node(pos, Kind::Unary(op)))
            }
            Tok::Arrow => {
                // channel type or receive expression
                let arrow = self.pos;
                self.next();
                let mut x = self.parse_unary_expr()?;
                if matches!(x.kind, Kind::ChanType { .. }) {
                    // (<-type): re-associate the arrow with the channel type
                    self.reassociate_arrow(&mut x, arrow)?;
                    return Ok(x);
                }
                Ok(node(arrow, Kind::Unary(Tok::Arrow)))
            }
            Tok::Mul => {
                // pointer type or unary "*" expression
                let pos = self.pos;
                self.next();
                self.parse_unary_expr()?;
                Ok(node(pos, Kind::Star))
            }
            _ => self.parse_primary_expr(),
        }
    }

    /// `<- chan T` parsed as `<-(chan T)`: turn it into `<-chan T` like Go does.
    pub(super) fn reassociate_arrow(&mut self, x: &mut Node, arrow: usize) -> PResult<()> {
        let mut arrow = Some(arrow);
        let mut dir = ChanDir::Send;
        let mut cur = x;
        while dir == ChanDir::Send {
            let Kind::ChanType {
                dir: tdir,
                arrow: tarrow,
                value,
            } = &mut cur.kind
            else {
                break;
            };
            if *tdir == ChanDir::Recv {
                // error: (<-type) is (<-(<-chan T))
                self.error_expected_at(*tarrow, "'chan'")?;
            }
            cur.pos = arrow.unwrap_or(cur.pos);
            std::mem::swap(&mut arrow, tarrow);
            *tarrow = Some(cur.pos);
            dir = std::mem::replace(tdir, ChanDir::Recv);
            cur = value;
        }
        if dir == ChanDir::Send {
            self.error_expected_at(arrow, "channel type")?;
        }
        Ok(())
    }

    pub(super) fn tok_prec(&self) -> (Tok, u8) {
        // In a right-hand side, `=` is parsed as `==` (and then reported).
        let tok = if self.in_rhs && self.tok == Tok::Assign {
            Tok::Eql
        } else {
            self.tok
        };
        (tok, tok.precedence())
    }

    pub(super) fn parse_binary_expr(&mut self, prec1: u8) -> PResult<Box<Node>> {
        let mut x = self.parse_unary_expr()?;
        let mut n = 0;
        let result = loop {
            n += 1;
            self.inc_nest()?;
            let (op, prec) = self.tok_prec();
            if prec < prec1 {
                break x;
            }
            let op_pos = self.expect(op)?;
            let y = self.parse_binary_expr(prec + 1)?;
            x = node(x.pos, Kind::Binary { op, op_pos, x, y });
        };
        self.dec_nest(n);
        Ok(result)
    }

    pub(super) fn parse_expr(&mut self) -> PResult<Box<Node>> {
        self.parse_binary_expr(1)
    }

    pub(super) fn parse_rhs(&mut self) -> PResult<Box<Node>> {
        let old = self.in_rhs;
        self.in_rhs = true;
        let x = self.parse_expr()?;
        self.in_rhs = old;
        Ok(x)
    }
}
