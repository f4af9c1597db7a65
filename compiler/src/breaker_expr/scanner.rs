//! Go's scanner (`go/scanner` and `go/token`), as far as an expression needs it: tokens,
//! automatic semicolons at newlines, comments and `//line` directives, and every literal check
//! with Go's error texts and positions.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tok {
    Illegal,
    Eof,
    Ident,
    Int,
    Float,
    Imag,
    Char,
    Str,
    Add,
    Sub,
    Mul,
    Quo,
    Rem,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    AndNot,
    AddAssign,
    SubAssign,
    MulAssign,
    QuoAssign,
    RemAssign,
    AndAssign,
    OrAssign,
    XorAssign,
    ShlAssign,
    ShrAssign,
    AndNotAssign,
    Land,
    Lor,
    Arrow,
    Inc,
    Dec,
    Eql,
    Lss,
    Gtr,
    Assign,
    Not,
    Neq,
    Leq,
    Geq,
    Define,
    Ellipsis,
    Lparen,
    Lbrack,
    Lbrace,
    Comma,
    Period,
    Rparen,
    Rbrack,
    Rbrace,
    Semicolon,
    Colon,
    Tilde,
    Break,
    Case,
    Chan,
    Const,
    Continue,
    Default,
    Defer,
    Else,
    Fallthrough,
    For,
    Func,
    Go,
    Goto,
    If,
    Import,
    Interface,
    Map,
    Package,
    Range,
    Return,
    Select,
    Struct,
    Switch,
    Type,
    Var,
}

pub(super) const KEYWORDS: [(&str, Tok); 25] = [
    ("break", Tok::Break),
    ("case", Tok::Case),
    ("chan", Tok::Chan),
    ("const", Tok::Const),
    ("continue", Tok::Continue),
    ("default", Tok::Default),
    ("defer", Tok::Defer),
    ("else", Tok::Else),
    ("fallthrough", Tok::Fallthrough),
    ("for", Tok::For),
    ("func", Tok::Func),
    ("go", Tok::Go),
    ("goto", Tok::Goto),
    ("if", Tok::If),
    ("import", Tok::Import),
    ("interface", Tok::Interface),
    ("map", Tok::Map),
    ("package", Tok::Package),
    ("range", Tok::Range),
    ("return", Tok::Return),
    ("select", Tok::Select),
    ("struct", Tok::Struct),
    ("switch", Tok::Switch),
    ("type", Tok::Type),
    ("var", Tok::Var),
];

impl Tok {
    /// Go's `token.Token.String()`.
    pub(super) fn as_str(self) -> &'static str {
        use Tok::*;
        match self {
            Illegal => "ILLEGAL",
            Eof => "EOF",
            Ident => "IDENT",
            Int => "INT",
            Float => "FLOAT",
            Imag => "IMAG",
            Char => "CHAR",
            Str => "STRING",
            Add => "+",
            Sub => "-",
            Mul => "*",
            Quo => "/",
            Rem => "%",
            And => "&",
            Or => "|",
            Xor => "^",
            Shl => "<<",
            Shr => ">>",
            AndNot => "&^",
            AddAssign => "+=",
            SubAssign => "-=",
            MulAssign => "*=",
            QuoAssign => "/=",
            RemAssign => "%=",
            AndAssign => "&=",
            OrAssign => "|=",
            XorAssign => "^=",
            ShlAssign => "<<=",
            ShrAssign => ">>=",
            AndNotAssign => "&^=",
            Land => "&&",
            Lor => "||",
            Arrow => "<-",
            Inc => "++",
            Dec => "--",
            Eql => "==",
            Lss => "<",
            Gtr => ">",
            Assign => "=",
            Not => "!",
            Neq => "!=",
            Leq => "<=",
            Geq => ">=",
            Define => ":=",
            Ellipsis => "...",
            Lparen => "(",
            Lbrack => "[",
            Lbrace => "{",
            Comma => ",",
            Period => ".",
            Rparen => ")",
            Rbrack => "]",
            Rbrace => "}",
            Semicolon => ";",
            Colon => ":",
            Tilde => "~",
            kw => KEYWORDS
                .iter()
                .find(|(_, t)| *t == kw)
                .map_or("?", |(s, _)| s),
        }
    }

    /// Binary-operator precedence (0 = not a binary operator).
    pub(super) fn precedence(self) -> u8 {
        use Tok::*;
        match self {
            Lor => 1,
            Land => 2,
            Eql | Neq | Lss | Leq | Gtr | Geq => 3,
            Add | Sub | Or | Xor => 4,
            Mul | Quo | Rem | Shl | Shr | And | AndNot => 5,
            _ => 0,
        }
    }

    pub(super) fn is_literal(self) -> bool {
        matches!(
            self,
            Tok::Ident | Tok::Int | Tok::Float | Tok::Imag | Tok::Char | Tok::Str
        )
    }
}

// ---------------------------------------------------------------------------
// Errors (go/scanner.ErrorList)

/// Go's `token.Position`: file name (set only by line directives), 1-based line and
/// byte column; line 0 is Go's invalid position, column 0 an unknown column.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Position {
    pub(super) file: String,
    pub(super) line: usize,
    pub(super) col: usize,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = self.file.clone();
        if self.line > 0 {
            if !s.is_empty() {
                s.push(':');
            }
            s.push_str(&self.line.to_string());
            if self.col != 0 {
                s.push_str(&format!(":{}", self.col));
            }
        }
        if s.is_empty() {
            s.push('-');
        }
        f.write_str(&s)
    }
}

/// One entry of Go's error list; `offset` is `None` for Go's invalid position.
#[derive(Debug)]
pub(super) struct GoError {
    pub(super) at: Position,
    pub(super) offset: Option<usize>,
    pub(super) msg: String,
}

/// A `//line` directive: positions from `offset` on are reported relative to it.
pub(super) struct LineInfo {
    pub(super) offset: usize,
    pub(super) file: String,
    pub(super) line: usize,
    pub(super) col: usize,
}

/// Maps byte offsets to Go positions, like `token.File`.
pub(super) struct Lines {
    /// Offsets where lines start. Go's `token.File.AddLine` ignores a line that would
    /// start at EOF, so a trailing newline does not open a new line.
    pub(super) starts: Vec<usize>,
    pub(super) infos: Vec<LineInfo>,
}

impl Lines {
    pub(super) fn new(src: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(
            src.bytes()
                .enumerate()
                .filter(|&(i, b)| b == b'\n' && i + 1 < src.len())
                .map(|(i, _)| i + 1),
        );
        Lines {
            starts,
            infos: Vec::new(),
        }
    }

    /// 1-based line index of `offset` in the unadjusted file.
    pub(super) fn line_of(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset).max(1)
    }

    /// Go's `File.Position`, adjusted by line directives.
    pub(super) fn position(&self, offset: usize) -> Position {
        let mut line = self.line_of(offset);
        let start = self.starts.get(line - 1).copied().unwrap_or(0);
        let mut col = offset - start.min(offset) + 1;
        let mut file = String::new();
        let i = self.infos.partition_point(|info| info.offset <= offset);
        if let Some(alt) = i.checked_sub(1).and_then(|i| self.infos.get(i)) {
            file.clone_from(&alt.file);
            let d = line as i64 - self.line_of(alt.offset) as i64;
            line = usize::try_from(alt.line as i64 + d).unwrap_or(0);
            if alt.col == 0 {
                col = 0; // unknown column stays unknown
            } else if d == 0 {
                col = alt.col + (offset - alt.offset.min(offset));
            }
        }
        Position { file, line, col }
    }

    /// Go's `File.AddLineColumnInfo`.
    pub(super) fn add_line_info(&mut self, info: LineInfo, size: usize) {
        if self.infos.last().is_none_or(|l| l.offset < info.offset) && info.offset < size {
            self.infos.push(info);
        }
    }
}

/// Go's `filepath.Clean` for slash-separated paths.
pub(super) fn clean_path(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|&p| p != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            p => parts.push(p),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_owned(),
        (false, false) => joined,
    }
}

// ---------------------------------------------------------------------------
// Scanner (go/scanner)

pub(super) const BOM: char = '\u{feff}';

/// Go's `isLetter`: ASCII letters, `_`, and Unicode category L.
pub(super) fn is_letter(c: char) -> bool {
    c.is_ascii_alphabetic()
        || c == '_'
        || (!c.is_ascii() && c.is_alphabetic() && !is_letter_number(c) && !is_circled_letter(c))
}

/// Go's `isDigit`: Unicode category Nd.
pub(super) fn is_digit(c: char) -> bool {
    c.is_ascii_digit()
        || (!c.is_ascii() && c.is_numeric() && !is_letter_number(c) && !is_other_number(c))
}

// Rust's `is_alphabetic` (the Alphabetic property) and `is_numeric` (N*) are wider than
// Go's categories L and Nd; these subtract the differences that matter in practice.

/// Category Nl (letter numbers such as `Ⅻ`), which Rust counts as alphabetic and numeric.
pub(super) fn is_letter_number(c: char) -> bool {
    matches!(c,
        '\u{16ee}'..='\u{16f0}' | '\u{2160}'..='\u{2182}' | '\u{2185}'..='\u{2188}'
        | '\u{3007}' | '\u{3021}'..='\u{3029}' | '\u{3038}'..='\u{303a}'
        | '\u{a6e6}'..='\u{a6ef}' | '\u{10140}'..='\u{10174}' | '\u{10341}' | '\u{1034a}'
        | '\u{103d1}'..='\u{103d5}' | '\u{12400}'..='\u{1246e}')
}

/// Circled and squared letters (category So, but Other_Alphabetic).
pub(super) fn is_circled_letter(c: char) -> bool {
    matches!(c, '\u{24b6}'..='\u{24e9}' | '\u{1f130}'..='\u{1f149}' | '\u{1f150}'..='\u{1f169}'
        | '\u{1f170}'..='\u{1f189}')
}

/// The common category No characters (superscripts, fractions, circled numbers).
pub(super) fn is_other_number(c: char) -> bool {
    matches!(c,
        '\u{b2}' | '\u{b3}' | '\u{b9}' | '\u{bc}'..='\u{be}' | '\u{2070}'..='\u{2089}'
        | '\u{2150}'..='\u{215f}' | '\u{2189}' | '\u{2460}'..='\u{249b}' | '\u{24ea}'..='\u{24ff}'
        | '\u{2776}'..='\u{2793}' | '\u{3192}'..='\u{3195}' | '\u{3220}'..='\u{3229}'
        | '\u{3248}'..='\u{324f}' | '\u{3251}'..='\u{325f}' | '\u{3280}'..='\u{3289}'
        | '\u{32b1}'..='\u{32bf}')
}

pub(super) fn lower(c: char) -> char {
    // Go's `('a' - 'A') | ch`: lower-cases ASCII letters, leaves the rest unusable as letters.
    char::from_u32(u32::from(c) | 0x20).unwrap_or(c)
}

pub(super) fn is_hex(c: char) -> bool {
    c.is_ascii_hexdigit()
}

pub(super) fn digit_val(c: Option<char>) -> u32 {
    c.and_then(|c| c.to_digit(16)).unwrap_or(16)
}

/// Approximation of Go's `strconv.IsPrint`.
pub(super) fn is_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    !(c.is_control()
        || c.is_whitespace()
        || matches!(c,
            '\u{ad}' | '\u{600}'..='\u{605}' | '\u{61c}' | '\u{6dd}' | '\u{70f}' | '\u{180e}'
            | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{206f}'
            | '\u{feff}' | '\u{fff9}'..='\u{fffb}' | '\u{e000}'..='\u{f8ff}' | '\u{f0000}'..))
}

/// Go's `%#U`.
pub(super) fn fmt_unicode(c: char) -> String {
    if is_print(c) {
        format!("U+{:04X} '{c}'", u32::from(c))
    } else {
        format!("U+{:04X}", u32::from(c))
    }
}

pub(super) fn litname(prefix: char) -> &'static str {
    match prefix {
        'x' => "hexadecimal literal",
        'o' | '0' => "octal literal",
        'b' => "binary literal",
        _ => "decimal literal",
    }
}

/// Index of the first misplaced `_` in a number literal (Go's `invalidSep`).
pub(super) fn invalid_sep(x: &str) -> Option<usize> {
    let b = x.as_bytes();
    let mut x1 = ' ';
    let mut d = '.';
    let mut i = 0;
    if b.len() >= 2 && b.first() == Some(&b'0') {
        x1 = b.get(1).map_or(' ', |&c| lower(char::from(c)));
        if matches!(x1, 'x' | 'o' | 'b') {
            d = '0';
            i = 2;
        }
    }
    while let Some(&c) = b.get(i) {
        let p = d;
        d = char::from(c);
        if d == '_' {
            if p != '0' {
                return Some(i);
            }
        } else if d.is_ascii_digit() || (x1 == 'x' && is_hex(d)) {
            d = '0';
        } else {
            if p == '_' {
                return Some(i - 1);
            }
            d = '.';
        }
        i += 1;
    }
    (d == '_').then(|| b.len() - 1)
}

/// Parses a decimal `u64` like Go's `strconv.ParseUint(s, 10, 0)` (no sign, no `_`).
pub(super) fn parse_u64_strict(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

pub(super) struct Scanner<'a> {
    pub(super) src: &'a str,
    /// Current character; `None` at EOF.
    pub(super) ch: Option<char>,
    pub(super) offset: usize,
    pub(super) rd_offset: usize,
    pub(super) line_offset: usize,
    pub(super) insert_semi: bool,
    /// Position of the newline inside a `/*…*/` comment that ends a line (Go's `nlPos`).
    pub(super) nl_pos: Option<usize>,
    pub(super) lines: Lines,
    pub(super) errors: Vec<GoError>,
}

impl<'a> Scanner<'a> {
    pub(super) fn new(src: &'a str) -> Self {
        let mut s = Scanner {
            src,
            ch: Some(' '),
            offset: 0,
            rd_offset: 0,
            line_offset: 0,
            insert_semi: false,
            nl_pos: None,
            lines: Lines::new(src),
            errors: Vec::new(),
        };
        s.next();
        if s.ch == Some(BOM) {
            s.next(); // a BOM is only permitted as the very first character
        }
        s
    }

    pub(super) fn error(&mut self, offset: usize, msg: impl Into<String>) {
        let at = self.lines.position(offset);
        self.errors.push(GoError {
            at,
            offset: Some(offset),
            msg: msg.into(),
        });
    }

    pub(super) fn next(&mut self) {
        if self.rd_offset < self.src.len() {
            self.offset = self.rd_offset;
            if self.ch == Some('\n') {
                self.line_offset = self.offset;
            }
            let c = self
                .src
                .get(self.rd_offset..)
                .and_then(|s| s.chars().next())
                .unwrap_or('\0');
            if c == '\0' {
                self.error(self.offset, "illegal character NUL");
            } else if c == BOM && self.offset > 0 {
                self.error(self.offset, "illegal byte order mark");
            }
            self.rd_offset += c.len_utf8();
            self.ch = Some(c);
        } else {
            self.offset = self.src.len();
            if self.ch == Some('\n') {
                self.line_offset = self.offset;
            }
            self.ch = None;
        }
    }

    pub(super) fn peek(&self) -> u8 {
        self.src
            .as_bytes()
            .get(self.rd_offset)
            .copied()
            .unwrap_or(0)
    }

    pub(super) fn text(&self, from: usize) -> &'a str {
        self.src.get(from..self.offset).unwrap_or("")
    }

    /// Scans a comment; the initial `/` is consumed and `ch` is `/` or `*`.
    /// Returns the offset of the first newline inside a `/*…*/` comment.
    pub(super) fn scan_comment(&mut self) -> Option<usize> {
        let offs = self.offset.saturating_sub(1);
        let mut num_cr = 0;
        let mut nl = None;
        let valid;
        if self.ch == Some('/') {
            self.next();
            while let Some(c) = self.ch {
                if c == '\n' {
                    break;
                }
                if c == '\r' {
                    num_cr += 1;
                }
                self.next();
            }
            valid = true;
        } else {
            self.next();
            let mut closed = false;
            while let Some(c) = self.ch {
                if c == '\r' {
                    num_cr += 1;
                } else if c == '\n' && nl.is_none() {
                    nl = Some(self.offset);
                }
                self.next();
                if c == '*' && self.ch == Some('/') {
                    self.next();
                    closed = true;
                    break;
                }
            }
            if !closed {
                self.error(offs, "comment not terminated");
            }
            valid = closed;
        }
        if valid {
            let mut lit = self.text(offs);
            let block = lit.as_bytes().get(1) == Some(&b'*');
            if num_cr > 0 && !block && lit.ends_with('\r') {
                lit = lit.get(..lit.len() - 1).unwrap_or(lit);
            }
            // //line directives must start at the beginning of a line; /*line */ anywhere.
            if (block || offs == self.line_offset)
                && lit.get(2..).is_some_and(|r| r.starts_with("line "))
            {
                // the position immediately following the comment
                let next = if !block && self.ch == Some('\n') {
                    self.offset + 1
                } else {
                    self.offset
                };
                self.line_directive(offs, next, lit, block);
            }
        }
        nl
    }

    /// Go's `updateLineInfo`: records a line directive, or reports why it is malformed.
    pub(super) fn line_directive(&mut self, offs: usize, next: usize, lit: &str, block: bool) {
        const MAX_LINE_COL: u64 = 1 << 30;
        let text = if block {
            lit.get(..lit.len().saturating_sub(2)).unwrap_or("")
        } else {
            lit
        };
        let text = text.get(7..).unwrap_or("");
        let offs = offs + 7;
        let trailing = |t: &str| -> Option<(usize, Option<u64>)> {
            let i = t.rfind(':')?;
            Some((i + 1, parse_u64_strict(t.get(i + 1..).unwrap_or(""))))
        };
        let Some((i, n)) = trailing(text) else {
            return; // not a line directive
        };
        let Some(n) = n else {
            let msg = format!("invalid line number: {}", text.get(i..).unwrap_or(""));
            self.error(offs + i, msg);
            return;
        };
        let head = text.get(..i - 1).unwrap_or("");
        // (line, column, where the line number starts, the text before ":line")
        let (line, col, line_start, name) = match trailing(head) {
            Some((i2, Some(n2))) => {
                // //line filename:line:col
                if n == 0 || n > MAX_LINE_COL {
                    let msg = format!("invalid column number: {}", text.get(i..).unwrap_or(""));
                    self.error(offs + i, msg);
                    return;
                }
                (n2, Some(n), i2, head.get(..i2 - 1).unwrap_or(""))
            }
            _ => (n, None, i, head),
        };
        if line == 0 || line > MAX_LINE_COL {
            let end = if col.is_some() { i - 1 } else { text.len() };
            let msg = format!(
                "invalid line number: {}",
                text.get(line_start..end).unwrap_or("")
            );
            self.error(offs + line_start, msg);
            return;
        }
        // An empty file name with a column means "the current file".
        let file = if name.is_empty() {
            if col.is_some() {
                self.lines.position(offs).file
            } else {
                String::new()
            }
        } else {
            clean_path(name)
        };
        let info = LineInfo {
            offset: next,
            file,
            line: usize::try_from(line).unwrap_or(0),
            col: col.and_then(|c| usize::try_from(c).ok()).unwrap_or(0),
        };
        self.lines.add_line_info(info, self.src.len());
    }

    pub(super) fn scan_identifier(&mut self) -> &'a str {
        let offs = self.offset;
        while self.ch.is_some_and(|c| is_letter(c) || is_digit(c)) {
            self.next();
        }
        self.text(offs)
    }

    /// Accepts `{digit | '_'}`; records the first digit >= base (for base <= 10).
    /// Returns bit 0 = digits seen, bit 1 = separators seen.
    pub(super) fn digits(&mut self, base: u32, invalid: &mut Option<usize>) -> u8 {
        let mut digsep = 0;
        while let Some(c) = self.ch {
            let ok = if base <= 10 {
                c.is_ascii_digit() || c == '_'
            } else {
                is_hex(c) || c == '_'
            };
            if !ok {
                break;
            }
            if c == '_' {
                digsep |= 2;
            } else {
                digsep |= 1;
                if base <= 10 && c.to_digit(10).is_some_and(|d| d >= base) && invalid.is_none() {
                    *invalid = Some(self.offset);
                }
            }
            self.next();
        }
        digsep
    }

    pub(super) fn scan_number(&mut self) -> (Tok, &'a str) {
        let offs = self.offset;
        let mut tok = Tok::Illegal;
        let mut base = 10;
        let mut prefix = '\0'; // '\0' decimal, '0' legacy octal, or 'x', 'o', 'b'
        let mut digsep = 0;
        let mut invalid = None;

        if self.ch != Some('.') {
            tok = Tok::Int;
            if self.ch == Some('0') {
                self.next();
                match self.ch.map(lower) {
                    Some('x') => {
                        self.next();
                        (base, prefix) = (16, 'x');
                    }
                    Some('o') => {
                        self.next();
                        (base, prefix) = (8, 'o');
                    }
                    Some('b') => {
                        self.next();
                        (base, prefix) = (2, 'b');
                    }
                    _ => {
                        (base, prefix) = (8, '0');
                        digsep = 1; // the leading 0 is a digit
                    }
                }
            }
            digsep |= self.digits(base, &mut invalid);
        }

        if self.ch == Some('.') {
            tok = Tok::Float;
            if prefix == 'o' || prefix == 'b' {
                self.error(
                    self.offset,
                    format!("invalid radix point in {}", litname(prefix)),
                );
            }
            self.next();
            digsep |= self.digits(base, &mut invalid);
        }

        if digsep & 1 == 0 {
            self.error(self.offset, format!("{} has no digits", litname(prefix)));
        }

        let e = self.ch.map(lower);
        if let (Some(ch), Some(e @ ('e' | 'p'))) = (self.ch, e) {
            if e == 'e' && prefix != '\0' && prefix != '0' {
                self.error(
                    self.offset,
                    format!("'{ch}' exponent requires decimal mantissa"),
                );
            } else if e == 'p' && prefix != 'x' {
                self.error(
                    self.offset,
                    format!("'{ch}' exponent requires hexadecimal mantissa"),
                );
            }
            self.next();
            tok = Tok::Float;
            if matches!(self.ch, Some('+' | '-')) {
                self.next();
            }
            let ds = self.digits(10, &mut None);
            digsep |= ds;
            if ds & 1 == 0 {
                self.error(self.offset, "exponent has no digits");
            }
        } else if prefix == 'x' && tok == Tok::Float {
            self.error(self.offset, "hexadecimal mantissa requires a 'p' exponent");
        }

        if self.ch == Some('i') {
            tok = Tok::Imag;
            self.next();
        }

        let lit = self.text(offs);
        if tok == Tok::Int
            && let Some(inv) = invalid
        {
            let c = lit
                .as_bytes()
                .get(inv - offs)
                .map_or('?', |&b| char::from(b));
            self.error(inv, format!("invalid digit '{c}' in {}", litname(prefix)));
        }
        if digsep & 2 != 0
            && let Some(i) = invalid_sep(lit)
        {
            self.error(offs + i, "'_' must separate successive digits");
        }
        (tok, lit)
    }

    /// Scans an escape sequence after `\`; stops at the offending character on error.
    pub(super) fn scan_escape(&mut self, quote: char) -> bool {
        let offs = self.offset;
        let (mut n, base, max): (u32, u32, u32) = match self.ch {
            Some(c) if "abfnrtv\\".contains(c) || c == quote => {
                self.next();
                return true;
            }
            Some('0'..='7') => (3, 8, 255),
            Some('x') => {
                self.next();
                (2, 16, 255)
            }
            Some('u') => {
                self.next();
                (4, 16, 0x10_FFFF)
            }
            Some('U') => {
                self.next();
                (8, 16, 0x10_FFFF)
            }
            Some(_) => {
                self.error(offs, "unknown escape sequence");
                return false;
            }
            None => {
                self.error(offs, "escape sequence not terminated");
                return false;
            }
        };
        let mut x: u32 = 0;
        while n > 0 {
            let d = digit_val(self.ch);
            if d >= base {
                let msg = match self.ch {
                    Some(c) => format!("illegal character {} in escape sequence", fmt_unicode(c)),
                    None => "escape sequence not terminated".to_owned(),
                };
                self.error(self.offset, msg);
                return false;
            }
            x = x.wrapping_mul(base).wrapping_add(d);
            self.next();
            n -= 1;
        }
        if x > max || (0xD800..0xE000).contains(&x) {
            self.error(offs, "escape sequence is invalid Unicode code point");
            return false;
        }
        true
    }

    pub(super) fn scan_rune(&mut self) -> &'a str {
        let offs = self.offset.saturating_sub(1);
        let mut valid = true;
        let mut n = 0;
        loop {
            let ch = self.ch;
            if matches!(ch, None | Some('\n')) {
                if valid {
                    self.error(offs, "rune literal not terminated");
                    valid = false;
                }
                break;
            }
            self.next();
            if ch == Some('\'') {
                break;
            }
            n += 1;
            if ch == Some('\\') && !self.scan_escape('\'') {
                valid = false;
            }
        }
        if valid && n != 1 {
            self.error(offs, "illegal rune literal");
        }
        self.text(offs)
    }

    pub(super) fn scan_string(&mut self) -> &'a str {
        let offs = self.offset.saturating_sub(1);
        loop {
            let ch = self.ch;
            if matches!(ch, None | Some('\n')) {
                self.error(offs, "string literal not terminated");
                break;
            }
            self.next();
            if ch == Some('"') {
                break;
            }
            if ch == Some('\\') {
                self.scan_escape('"');
            }
        }
        self.text(offs)
    }

    pub(super) fn scan_raw_string(&mut self) -> String {
        let offs = self.offset.saturating_sub(1);
        loop {
            match self.ch {
                None => {
                    self.error(offs, "raw string literal not terminated");
                    break;
                }
                Some(c) => {
                    self.next();
                    if c == '`' {
                        break;
                    }
                }
            }
        }
        // Carriage returns are discarded from raw string literals.
        self.text(offs).replace('\r', "")
    }

    pub(super) fn skip_whitespace(&mut self) {
        while let Some(c) = self.ch {
            if c == ' ' || c == '\t' || c == '\r' || (c == '\n' && !self.insert_semi) {
                self.next();
            } else {
                break;
            }
        }
    }

    pub(super) fn switch2(&mut self, tok0: Tok, tok1: Tok) -> Tok {
        if self.ch == Some('=') {
            self.next();
            return tok1;
        }
        tok0
    }

    pub(super) fn switch3(&mut self, tok0: Tok, tok1: Tok, ch2: char, tok2: Tok) -> Tok {
        if self.ch == Some('=') {
            self.next();
            return tok1;
        }
        if self.ch == Some(ch2) {
            self.next();
            return tok2;
        }
        tok0
    }

    pub(super) fn switch4(&mut self, tok0: Tok, tok1: Tok, ch2: char, tok2: Tok, tok3: Tok) -> Tok {
        if self.ch == Some('=') {
            self.next();
            return tok1;
        }
        if self.ch == Some(ch2) {
            self.next();
            if self.ch == Some('=') {
                self.next();
                return tok3;
            }
            return tok2;
        }
        tok0
    }

    /// Returns the next non-comment token: (offset, token, literal text).
    pub(super) fn scan(&mut self) -> (usize, Tok, String) {
        loop {
            if let Some(p) = self.nl_pos.take() {
                return (p, Tok::Semicolon, "\n".to_owned());
            }
            self.skip_whitespace();
            let pos = self.offset;
            let mut insert_semi = false;
            let ch = self.ch;
            let (tok, lit): (Tok, String) = match ch {
                Some(c) if is_letter(c) => {
                    let lit = self.scan_identifier();
                    let tok = if lit.len() > 1 {
                        KEYWORDS
                            .iter()
                            .find(|(k, _)| *k == lit)
                            .map_or(Tok::Ident, |&(_, t)| t)
                    } else {
                        Tok::Ident
                    };
                    insert_semi = matches!(
                        tok,
                        Tok::Ident | Tok::Break | Tok::Continue | Tok::Fallthrough | Tok::Return
                    );
                    (tok, lit.to_owned())
                }
                Some(c) if c.is_ascii_digit() || (c == '.' && self.peek().is_ascii_digit()) => {
                    insert_semi = true;
                    let (tok, lit) = self.scan_number();
                    (tok, lit.to_owned())
                }
                _ => {
                    self.next(); // always make progress
                    let none = String::new();
                    match ch {
                        None => {
                            if self.insert_semi {
                                self.insert_semi = false;
                                return (pos, Tok::Semicolon, "\n".to_owned());
                            }
                            (Tok::Eof, none)
                        }
                        Some('\n') => {
                            // only reached when a semicolon must be inserted
                            self.insert_semi = false;
                            return (pos, Tok::Semicolon, "\n".to_owned());
                        }
                        Some('"') => {
                            insert_semi = true;
                            (Tok::Str, self.scan_string().to_owned())
                        }
                        Some('\'') => {
                            insert_semi = true;
                            (Tok::Char, self.scan_rune().to_owned())
                        }
                        Some('`') => {
                            insert_semi = true;
                            (Tok::Str, self.scan_raw_string())
                        }
                        Some(':') => (self.switch2(Tok::Colon, Tok::Define), none),
                        Some('.') => {
                            let mut tok = Tok::Period;
                            if self.ch == Some('.') && self.peek() == b'.' {
                                self.next();
                                self.next();
                                tok = Tok::Ellipsis;
                            }
                            (tok, none)
                        }
                        Some(',') => (Tok::Comma, none),
                        Some(';') => (Tok::Semicolon, ";".to_owned()),
                        Some('(') => (Tok::Lparen, none),
                        Some(')') => {
                            insert_semi = true;
                            (Tok::Rparen, none)
                        }
                        Some('[') => (Tok::Lbrack, none),
                        Some(']') => {
                            insert_semi = true;
                            (Tok::Rbrack, none)
                        }
                        Some('{') => (Tok::Lbrace, none),
                        Some('}') => {
                            insert_semi = true;
                            (Tok::Rbrace, none)
                        }
                        Some('+') => {
                            let tok = self.switch3(Tok::Add, Tok::AddAssign, '+', Tok::Inc);
                            insert_semi = tok == Tok::Inc;
                            (tok, none)
                        }
                        Some('-') => {
                            let tok = self.switch3(Tok::Sub, Tok::SubAssign, '-', Tok::Dec);
                            insert_semi = tok == Tok::Dec;
                            (tok, none)
                        }
                        Some('*') => (self.switch2(Tok::Mul, Tok::MulAssign), none),
                        Some('/') => {
                            if matches!(self.ch, Some('/' | '*')) {
                                let nl = self.scan_comment();
                                if self.insert_semi && nl.is_some() {
                                    // A /*…*/ comment containing a newline ends the line there.
                                    self.nl_pos = nl;
                                    self.insert_semi = false;
                                }
                                // Otherwise insert_semi is preserved across the comment.
                                continue;
                            }
                            (self.switch2(Tok::Quo, Tok::QuoAssign), none)
                        }
                        Some('%') => (self.switch2(Tok::Rem, Tok::RemAssign), none),
                        Some('^') => (self.switch2(Tok::Xor, Tok::XorAssign), none),
                        Some('<') => {
                            if self.ch == Some('-') {
                                self.next();
                                (Tok::Arrow, none)
                            } else {
                                let t =
                                    self.switch4(Tok::Lss, Tok::Leq, '<', Tok::Shl, Tok::ShlAssign);
                                (t, none)
                            }
                        }
                        Some('>') => (
                            self.switch4(Tok::Gtr, Tok::Geq, '>', Tok::Shr, Tok::ShrAssign),
                            none,
                        ),
                        Some('=') => (self.switch2(Tok::Assign, Tok::Eql), none),
                        Some('!') => (self.switch2(Tok::Not, Tok::Neq), none),
                        Some('&') => {
                            if self.ch == Some('^') {
                                self.next();
                                (self.switch2(Tok::AndNot, Tok::AndNotAssign), none)
                            } else {
                                (self.switch3(Tok::And, Tok::AndAssign, '&', Tok::Land), none)
                            }
                        }
                        Some('|') => (self.switch3(Tok::Or, Tok::OrAssign, '|', Tok::Lor), none),
                        Some('~') => (Tok::Tilde, none),
                        Some(c) => {
                            // next() already reported BOMs; don't repeat
                            if c != BOM {
                                let msg = if c == '\u{201c}' || c == '\u{201d}' {
                                    format!("curly quotation mark '{c}' (use neutral '\"')")
                                } else {
                                    format!("illegal character {}", fmt_unicode(c))
                                };
                                self.error(pos, msg);
                            }
                            insert_semi = self.insert_semi; // preserve insertSemi info
                            (Tok::Illegal, c.to_string())
                        }
                    }
                }
            };
            self.insert_semi = insert_semi;
            return (pos, tok, lit);
        }
    }
}
