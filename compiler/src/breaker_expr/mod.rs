//! Parser for the expression languages of Traefik's `circuitBreaker` middleware and of
//! `buffering`'s `retryExpression`, at `check` time: its results are the plan's
//! [`bridge_plan::BreakerCondition`] and [`bridge_plan::RetryCondition`], so the runtime never
//! parses. Both are vulcand/predicate over Go's parser; they differ only in the functions oxy
//! registers and in its comparison functions' checks and texts (`cbreaker/predicates.go` against
//! `buffer/threshold.go`), which is the `Dialect` the walker is given.
//!
//! Traefik v3.7.15 hands the expression to vulcand/oxy v2.1.0 (`cbreaker/predicates.go`),
//! which uses vulcand/predicate v1.3.0: the text is parsed by Go's `go/parser.ParseExpr`
//! and the resulting Go AST is walked, calling reflection-typed Go functions.
//! A config compiler must accept exactly what Traefik accepts and report the same
//! errors, so this module mirrors all three layers:
//!
//! 1. a port of `go/scanner` (tokens, automatic semicolons, comments, literal checks),
//! 2. a port of the expression half of `go/parser` (all operators and precedences,
//!    operands, selectors, index/slice/call, composite literals and type syntax), with
//!    Go's error recovery, so that the first error and the `(and N more errors)` count
//!    match `scanner.ErrorList`,
//! 3. a walker that evaluates the AST in predicate's order, reproducing the type checks
//!    of oxy's functions and of Go's `reflect.Value.Call`, so the *first* error reported
//!    is Traefik's, word for word (including oxy's `expected int, got int` typo).
//!
//! Quirks reproduced on purpose (all confirmed on the binary): `=` is read as `==` and
//! then reported, `f(x...)` is accepted as `f(x)`, a parenthesised threshold
//! (`> (0.5)`) is accepted but a parenthesised argument is not, `//line` directives
//! remap later error positions, and Go's `strconv.ParseFloat` places the decimal point
//! wrongly for literals with more than 800 integer digits in its slow path.
//!
//! Known, deliberate differences:
//! - Nesting is limited to [`MAX_NESTING`] levels, counted as Go counts them (one per
//!   unary or parenthesised operand, one per operand of a `||`/`&&` chain, …). Go's
//!   limit is 100 000, so Traefik accepts e.g. 40 000 parentheses or a 40 000-term
//!   `||` chain that this module rejects with Go's `exceeded max nesting depth` error.
//!   This is the only case where a verdict differs; it keeps recursion far inside a
//!   2 MiB thread stack, also in debug builds (a stack-usage guard backs it up).
//! - Function literal bodies (`func(){ … }`) are skipped by brace matching instead of
//!   being parsed as Go statements, so a syntax error *inside* a body is reported as
//!   `*ast.FuncLit is not supported` (still a rejection).
//! - Non-ASCII characters are classified with `char::is_alphabetic`/`is_numeric` minus
//!   the letter numbers, circled letters and common other numbers (Go uses the Unicode
//!   categories L and Nd), and `%#U` printability is approximated; combining marks
//!   inside identifiers (e.g. Devanagari vowel signs) can therefore yield a different
//!   error text. Expressions with such characters are rejected either way.
//!
//! Layout: `scanner` and `parser` are Go's, `number` is `strconv`'s conversions, and this
//! file holds the walker. `tests` checks a corpus of 650 expressions against the verdicts the
//! Traefik 3.7.15 binary gave (`docs/traefik-behaviour/breaker_corpus.tsv`, collected with
//! `docs/traefik-behaviour/breaker_oracle.py`).

use std::fmt;

use bridge_plan::{
    BreakerCondition as Condition, BreakerRatio as Ratio, Comparison, Float, RetryCondition,
    RetryCounter,
};

mod number;
mod parser;
mod scanner;
#[cfg(test)]
mod tests;

use number::*;
use parser::*;
use scanner::*;

/// Why Traefik would reject an expression.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ExprError {
    /// Traefik's error text, exactly as the binary reports it (e.g. `1:27: expected 'EOF', found foo`, `! is not supported`).
    pub message: String,
    /// Byte offset in the input the error points at, when known (Go's `line:col` errors always know it;
    /// for the walker's errors, the start of the offending node). Used by the caller to point at the
    /// right column in the user's YAML file.
    ///
    /// "Offending node" means: the operator token for `<op> is not supported` on a binary
    /// operator, the right-hand literal for a type mismatch on the threshold, the left-hand
    /// side for `lt: unsupported argument`, the argument for a bad function argument, the
    /// operand for `reflect: cannot use … in Call`, and the whole expression for
    /// `expected predicate, got …`.
    pub offset: Option<usize>,
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ExprError {}

/// Maximum nesting depth, counted like Go's parser counts it (one level per unary or
/// parenthesised operand, one per operand of a binary-operator chain, …). Go allows
/// 100 000; 400 is far beyond any real expression and fits a 2 MiB stack unoptimised.
pub const MAX_NESTING: u32 = 400;

/// Parses a circuit-breaker expression the way Traefik 3.7.15 does.
pub fn parse(input: &str) -> Result<Condition, ExprError> {
    let ast = parse_go_expr(input)?;
    let value = walk(&ast, &StackGuard::new(), Dialect::Breaker)?;
    match value {
        Value::Pred(c) => Ok(c),
        other => Err(walk_error(
            format!("expected predicate, got {}", other.go_type()),
            ast.pos,
        )),
    }
}

/// Parses a `buffering` `retryExpression` the way Traefik 3.7.15 does (the caller leaves an
/// empty one out: Traefik parses only a non-empty text).
pub fn parse_retry(input: &str) -> Result<RetryCondition, ExprError> {
    let ast = parse_go_expr(input)?;
    let value = walk(&ast, &StackGuard::new(), Dialect::Buffer)?;
    match value {
        Value::Retry(c) => Ok(c),
        other => Err(walk_error(
            format!("expected predicate, got {}", other.go_type()),
            ast.pos,
        )),
    }
}

/// Whose functions and comparison rules the walk follows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dialect {
    /// oxy's `cbreaker`: ratios and latency, the `circuitBreaker` middleware.
    Breaker,
    /// oxy's `buffer`: attempts, status and method, `buffering`'s `retryExpression`.
    Buffer,
}

impl Dialect {
    /// Go's `%T` of the dialect's predicate type.
    fn predicate_type(self) -> &'static str {
        match self {
            Dialect::Breaker => "cbreaker.hpredicate",
            Dialect::Buffer => "buffer.hpredicate",
        }
    }
}

// ---------------------------------------------------------------------------
// Walker (vulcand/predicate parse.go + oxy cbreaker/predicates.go)

/// A value of the Go walk: what `interface{}` held at each step.
enum Value {
    Float(f64),
    Int(i64),
    Str(String),
    FloatMapper(Ratio),
    IntMapper(f64),
    Pred(Condition),
    /// buffer's `toInt`.
    Counter(RetryCounter),
    /// buffer's `toString` (`RequestMethod()`).
    Method,
    Retry(RetryCondition),
}

impl Value {
    /// Go's `%T`.
    fn go_type(&self) -> &'static str {
        match self {
            Value::Float(_) => "float64",
            Value::Int(_) => "int",
            Value::Str(_) => "string",
            Value::FloatMapper(_) => "cbreaker.toFloat64",
            Value::IntMapper(_) => "cbreaker.toInt",
            Value::Pred(_) => "cbreaker.hpredicate",
            Value::Counter(_) => "buffer.toInt",
            Value::Method => "buffer.toString",
            Value::Retry(_) => "buffer.hpredicate",
        }
    }
}

fn walk_error(message: String, offset: usize) -> ExprError {
    ExprError {
        message,
        offset: Some(offset),
    }
}

/// predicate's `parse`: operators, parentheses, then `evaluateExpr` for the rest.
fn walk(n: &Node, stack: &StackGuard, d: Dialect) -> Result<Value, ExprError> {
    if stack.exhausted() {
        return Err(walk_error("exceeded max nesting depth".to_owned(), n.pos));
    }
    match &n.kind {
        Kind::Binary { op, op_pos, x, y } => {
            let vx = walk(x, stack, d)?;
            let vy = walk(y, stack, d)?;
            join(d, *op, *op_pos, (vx, x.pos), (vy, y.pos))
        }
        Kind::Paren(inner) => walk(inner, stack, d),
        // predicate looks up the operator before the operand; oxy defines no NOT.
        Kind::Unary(op) => Err(unsupported_op(*op, n.pos)),
        _ => evaluate(n, d),
    }
}

// Error constructors are separate functions so the recursive frames stay small.
#[cold]
fn unsupported_op(op: Tok, pos: usize) -> ExprError {
    walk_error(format!("{} is not supported", op.as_str()), pos)
}

/// predicate's `joinPredicates`: the operator's Go function called via reflection.
fn join(
    d: Dialect,
    op: Tok,
    op_pos: usize,
    (x, xpos): (Value, usize),
    (y, ypos): (Value, usize),
) -> Result<Value, ExprError> {
    let cmp = match op {
        Tok::Land | Tok::Lor => {
            // and/or are variadic `func(...hpredicate)`: reflect checks each argument.
            let not_pred = |v: &Value, pos: usize| {
                walk_error(
                    format!(
                        "reflect: cannot use {} as type {} in Call",
                        v.go_type(),
                        d.predicate_type()
                    ),
                    pos,
                )
            };
            return Ok(match (x, y) {
                (Value::Pred(a), Value::Pred(b)) if d == Dialect::Breaker => {
                    let (a, b) = (Box::new(a), Box::new(b));
                    Value::Pred(if op == Tok::Land {
                        Condition::And(a, b)
                    } else {
                        Condition::Or(a, b)
                    })
                }
                (Value::Retry(a), Value::Retry(b)) if d == Dialect::Buffer => {
                    let (a, b) = (Box::new(a), Box::new(b));
                    Value::Retry(if op == Tok::Land {
                        RetryCondition::And(a, b)
                    } else {
                        RetryCondition::Or(a, b)
                    })
                }
                (Value::Pred(_) | Value::Retry(_), other) => return Err(not_pred(&other, ypos)),
                (other, _) => return Err(not_pred(&other, xpos)),
            });
        }
        Tok::Eql => Comparison::Eq,
        Tok::Neq => Comparison::Ne,
        Tok::Lss => Comparison::Lt,
        Tok::Leq => Comparison::Le,
        Tok::Gtr => Comparison::Gt,
        Tok::Geq => Comparison::Ge,
        other => {
            return Err(walk_error(
                format!("{} is not supported", other.as_str()),
                op_pos,
            ));
        }
    };
    if d == Dialect::Buffer {
        return compare_buffer(cmp, (x, xpos), (y, ypos)).map(Value::Retry);
    }
    // le/ge call lt/gt first (then eq, which cannot fail once lt/gt succeeded); ne calls eq.
    let name = match cmp {
        Comparison::Lt | Comparison::Le => "lt",
        Comparison::Gt | Comparison::Ge => "gt",
        Comparison::Eq | Comparison::Ne => "eq",
    };
    let c = match x {
        Value::FloatMapper(ratio) => match y {
            // Every literal the number conversion accepts is finite.
            Value::Float(threshold) => match Float::new(threshold) {
                Some(threshold) => Condition::Ratio {
                    ratio,
                    op: cmp,
                    threshold,
                },
                None => {
                    return Err(walk_error(
                        format!("threshold {threshold} is not a finite number"),
                        ypos,
                    ));
                }
            },
            // oxy's float64LT/GT say "expected int" (sic); float64EQ says float64.
            other => {
                let want = if name == "eq" { "float64" } else { "int" };
                return Err(walk_error(
                    format!("expected {want}, got {}", other.go_type()),
                    ypos,
                ));
            }
        },
        Value::IntMapper(quantile) => match y {
            Value::Int(threshold_ms) => match Float::new(quantile) {
                Some(quantile) => Condition::Latency {
                    quantile,
                    op: cmp,
                    threshold_ms,
                },
                None => {
                    return Err(walk_error(
                        format!("quantile {quantile} is not a finite number"),
                        xpos,
                    ));
                }
            },
            other => {
                return Err(walk_error(
                    format!("expected int, got {}", other.go_type()),
                    ypos,
                ));
            }
        },
        other => {
            return Err(walk_error(
                format!("{name}: unsupported argument: {}", other.go_type()),
                xpos,
            ));
        }
    };
    Ok(Value::Pred(c))
}

/// oxy buffer's comparison functions: `eq` takes a `toString` with a string or a `toInt` with
/// an int, `lt`/`gt` only a `toInt` with an int; `le`/`ge` call `lt`/`gt` first, then `eq`
/// (which cannot fail once they succeeded), `neq` calls `eq`. Its texts carry no `eq:` prefix.
fn compare_buffer(
    cmp: Comparison,
    (x, xpos): (Value, usize),
    (y, ypos): (Value, usize),
) -> Result<RetryCondition, ExprError> {
    let ordering = !matches!(cmp, Comparison::Eq | Comparison::Ne);
    match x {
        Value::Method if !ordering => match y {
            Value::Str(method) => Ok(RetryCondition::Method {
                equal: cmp == Comparison::Eq,
                method,
            }),
            other => Err(walk_error(
                format!("expected string, got {}", other.go_type()),
                ypos,
            )),
        },
        Value::Counter(counter) => match y {
            Value::Int(value) => Ok(RetryCondition::Count {
                counter,
                op: cmp,
                value,
            }),
            other => Err(walk_error(
                format!("expected int, got {}", other.go_type()),
                ypos,
            )),
        },
        other => Err(walk_error(
            format!("unsupported argument: {}", other.go_type()),
            xpos,
        )),
    }
}

/// predicate's `evaluateExpr`: literals, identifiers, selectors, index and calls.
fn evaluate(n: &Node, d: Dialect) -> Result<Value, ExprError> {
    match &n.kind {
        Kind::Lit(kind, lit) => literal(*kind, lit, n.pos),
        Kind::Call(fun, args) => call(d, n.pos, fun, args),
        _ => Err(not_a_value(n)),
    }
}

/// The error `evaluateExpr` reports for anything but a literal or a call.
#[cold]
fn not_a_value(n: &Node) -> ExprError {
    match &n.kind {
        Kind::Index => walk_error("properties are not supported".to_owned(), n.pos),
        Kind::Selector(..) => {
            let mut fields = Vec::new();
            let mut cur = n;
            while let Kind::Selector(x, sel) = &cur.kind {
                fields.push(sel.as_str());
                cur = x;
            }
            match &cur.kind {
                Kind::Ident(name) => {
                    fields.push(name);
                    fields.reverse();
                    walk_error(format!("{} is not defined", fields.join(".")), n.pos)
                }
                other => walk_error(
                    format!("unsupported selector type: {}", other.go_type()),
                    cur.pos,
                ),
            }
        }
        Kind::Ident(name) => walk_error(format!("{name} is not defined"), n.pos),
        other => walk_error(format!("{} is not supported", other.go_type()), n.pos),
    }
}

fn literal(kind: Tok, lit: &str, pos: usize) -> Result<Value, ExprError> {
    let failed = |func: &str, e: NumError| {
        walk_error(
            format!(
                "failed to parse argument: {lit}, error: strconv.{func}: parsing \"{lit}\": {}",
                e.as_str()
            ),
            pos,
        )
    };
    match kind {
        Tok::Float => go_parse_float(lit)
            .map(Value::Float)
            .map_err(|e| failed("ParseFloat", e)),
        Tok::Int => go_atoi(lit).map(Value::Int).map_err(|e| failed("Atoi", e)),
        // strconv.Unquote cannot fail on a literal the scanner accepted.
        Tok::Str => Ok(Value::Str(go_unquote(lit))),
        other => Err(walk_error(
            format!("unsupported function argument type: '{}'", other.as_str()),
            pos,
        )),
    }
}

/// Go's `strconv.Unquote` of a string literal the scanner accepted: a raw string loses its
/// carriage returns, an interpreted one has its escapes replaced (bytes that are not UTF-8,
/// which no method holds, become U+FFFD).
fn go_unquote(lit: &str) -> String {
    if let Some(raw) = lit.strip_prefix('`') {
        return raw.strip_suffix('`').unwrap_or(raw).replace('\r', "");
    }
    let inner = lit.strip_prefix('"').unwrap_or(lit);
    let inner = inner.strip_suffix('"').unwrap_or(inner);
    let mut out: Vec<u8> = Vec::with_capacity(inner.len());
    let mut chars = inner.chars();
    let hex = |chars: &mut std::str::Chars<'_>, n: usize| -> u32 {
        chars
            .by_ref()
            .take(n)
            .fold(0, |v, c| v * 16 + c.to_digit(16).unwrap_or(0))
    };
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        let Some(e) = chars.next() else { break };
        let byte = match e {
            'a' => 0x07,
            'b' => 0x08,
            'f' => 0x0c,
            'n' => b'\n',
            'r' => b'\r',
            't' => b'\t',
            'v' => 0x0b,
            'x' => u8::try_from(hex(&mut chars, 2)).unwrap_or(0),
            '0'..='7' => {
                let rest = hex_free_octal(&mut chars);
                u8::try_from((e as u32 - '0' as u32) * 64 + rest).unwrap_or(0)
            }
            'u' | 'U' => {
                let cp = hex(&mut chars, if e == 'u' { 4 } else { 8 });
                let c = char::from_u32(cp).unwrap_or('\u{FFFD}');
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                continue;
            }
            // `\\` and `\"`; the scanner let no other escape through.
            other => u8::try_from(other).unwrap_or(b'?'),
        };
        out.push(byte);
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The two octal digits after the first of a `\ooo` escape, as a number.
fn hex_free_octal(chars: &mut std::str::Chars<'_>) -> u32 {
    chars
        .by_ref()
        .take(2)
        .fold(0, |v, c| v * 8 + c.to_digit(8).unwrap_or(0))
}

/// The functions oxy registers: three for the breaker, four for buffering.
#[derive(Clone, Copy)]
enum Func {
    NetworkErrorRatio,
    ResponseCodeRatio,
    LatencyAtQuantileMS,
    RequestMethod,
    IsNetworkError,
    Attempts,
    ResponseCode,
}

impl Func {
    /// Go parameter types.
    fn params(self) -> &'static [&'static str] {
        match self {
            Func::ResponseCodeRatio => &["int", "int", "int", "int"],
            Func::LatencyAtQuantileMS => &["float64"],
            _ => &[],
        }
    }
}

/// predicate's CallExpr case: name lookup, arguments, then `reflect.Value.Call` checks.
fn call(d: Dialect, pos: usize, fun: &Node, args: &[Node]) -> Result<Value, ExprError> {
    let func = resolve_function(d, fun)?;
    let mut values = Vec::with_capacity(args.len());
    for a in args {
        values.push(evaluate(a, d)?);
    }
    apply(func, pos, args, values)
}

/// predicate's `getIdentifier` + `getFunction`.
fn resolve_function(d: Dialect, fun: &Node) -> Result<Func, ExprError> {
    let name = match &fun.kind {
        Kind::Selector(x, sel) => match &x.kind {
            Kind::Ident(pkg) => format!("{pkg}.{sel}"),
            other => {
                return Err(walk_error(
                    format!("expected selector identifier, got: {}", other.go_type()),
                    x.pos,
                ));
            }
        },
        Kind::Ident(name) => name.clone(),
        other => {
            return Err(walk_error(
                format!("expected identifier, got: {}", other.go_type()),
                fun.pos,
            ));
        }
    };
    match (d, name.as_str()) {
        (Dialect::Breaker, "NetworkErrorRatio") => Ok(Func::NetworkErrorRatio),
        (Dialect::Breaker, "ResponseCodeRatio") => Ok(Func::ResponseCodeRatio),
        (Dialect::Breaker, "LatencyAtQuantileMS") => Ok(Func::LatencyAtQuantileMS),
        (Dialect::Buffer, "RequestMethod") => Ok(Func::RequestMethod),
        (Dialect::Buffer, "IsNetworkError") => Ok(Func::IsNetworkError),
        (Dialect::Buffer, "Attempts") => Ok(Func::Attempts),
        (Dialect::Buffer, "ResponseCode") => Ok(Func::ResponseCode),
        _ => Err(walk_error(format!("unsupported function: {name}"), fun.pos)),
    }
}

/// `reflect.Value.Call`'s checks (count, then each type), then the call itself.
fn apply(func: Func, pos: usize, args: &[Node], values: Vec<Value>) -> Result<Value, ExprError> {
    let params = func.params();
    if values.len() < params.len() {
        return Err(walk_error(
            "reflect: Call with too few input arguments".to_owned(),
            pos,
        ));
    }
    if values.len() > params.len() {
        let extra = args.get(params.len()).map_or(pos, |a| a.pos);
        return Err(walk_error(
            "reflect: Call with too many input arguments".to_owned(),
            extra,
        ));
    }
    for ((v, want), arg) in values.iter().zip(params.iter()).zip(args) {
        if v.go_type() != *want {
            return Err(walk_error(
                format!("reflect: Call using {} as type {want}", v.go_type()),
                arg.pos,
            ));
        }
    }
    Ok(match (func, values.as_slice()) {
        (Func::RequestMethod, _) => Value::Method,
        (Func::IsNetworkError, _) => Value::Retry(RetryCondition::NetworkError),
        (Func::Attempts, _) => Value::Counter(RetryCounter::Attempts),
        (Func::ResponseCode, _) => Value::Counter(RetryCounter::ResponseCode),
        (Func::LatencyAtQuantileMS, [Value::Float(q)]) => Value::IntMapper(*q),
        (
            Func::ResponseCodeRatio,
            [
                Value::Int(a1),
                Value::Int(a2),
                Value::Int(b1),
                Value::Int(b2),
            ],
        ) => Value::FloatMapper(Ratio::ResponseCodes {
            numerator: [*a1, *a2],
            denominator: [*b1, *b2],
        }),
        _ => Value::FloatMapper(Ratio::NetworkErrors),
    })
}
