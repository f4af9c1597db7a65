//! The parser against Traefik 3.7.15 itself: a corpus of expressions with the binary's verdict
//! on each (queried through its API, see `corpus`), the known divergences, the printed form's
//! round trip, and generated inputs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a test failure"
)]

use super::*;
use Comparison::{Eq, Ge, Gt, Le, Lt, Ne};

/// What Traefik said about a corpus row.
enum Want {
    Ok(Condition),
    Err(String),
}

fn float(v: f64) -> Float {
    Float::new(v).unwrap()
}

fn ner(op: Comparison, threshold: f64) -> Condition {
    let threshold = float(threshold);
    Condition::Ratio {
        ratio: Ratio::NetworkErrors,
        op,
        threshold,
    }
}

fn rcr(numerator: [i64; 2], denominator: [i64; 2], op: Comparison, threshold: f64) -> Condition {
    let threshold = float(threshold);
    Condition::Ratio {
        ratio: Ratio::ResponseCodes {
            numerator,
            denominator,
        },
        op,
        threshold,
    }
}

fn lat(quantile: f64, op: Comparison, threshold_ms: i64) -> Condition {
    let quantile = float(quantile);
    Condition::Latency {
        quantile,
        op,
        threshold_ms,
    }
}

fn or(a: Condition, b: Condition) -> Condition {
    Condition::Or(Box::new(a), Box::new(b))
}

fn and(a: Condition, b: Condition) -> Condition {
    Condition::And(Box::new(a), Box::new(b))
}

fn message(r: &Result<Condition, ExprError>) -> String {
    match r {
        Ok(_) => "ok".to_owned(),
        Err(e) => e.message.clone(),
    }
}

fn short(s: &str) -> String {
    format!("{s:?}").chars().take(120).collect()
}

#[test]
fn corpus_matches_traefik() {
    let rows = corpus();
    assert!(rows.len() >= 600);
    let mut failures = Vec::new();
    for (input, want) in &rows {
        let got = parse(input);
        let ok = match (want, &got) {
            (Want::Ok(c), Ok(g)) => c == g,
            (Want::Err(m), Err(e)) => *m == e.message,
            _ => false,
        };
        if !ok {
            let want = match want {
                Want::Ok(c) => format!("Ok({c:?})"),
                Want::Err(m) => m.clone(),
            };
            failures.push(format!(
                "{}\n  traefik: {want}\n  ours:    {got:?}",
                short(input)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn known_divergences() {
    for (input, traefik, ours, why) in divergences() {
        let got = message(&parse(&input));
        assert_eq!(got, ours, "{} ({why})", short(&input));
        assert_ne!(got, traefik);
    }
}

#[test]
fn accepted_rows_round_trip_through_display() {
    for (input, want) in corpus() {
        if let Want::Ok(c) = want {
            let printed = c.to_string();
            assert_eq!(
                parse(&printed),
                Ok(c),
                "{} printed as {printed}",
                short(&input)
            );
        }
    }
}

#[test]
fn display_is_canonical() {
    let c = or(
        and(
            ner(Gt, 0.5),
            or(lat(99.0, Ge, 250), rcr([500, 600], [0, 600], Ne, 0.25)),
        ),
        or(ner(Le, 1e-7), ner(Eq, 5e-324)),
    );
    assert_eq!(
        c.to_string(),
        "NetworkErrorRatio() > 0.5 && (LatencyAtQuantileMS(99.0) >= 250 || \
         ResponseCodeRatio(500, 600, 0, 600) != 0.25) || \
         (NetworkErrorRatio() <= 1e-7 || NetworkErrorRatio() == 5e-324)"
    );
    assert_eq!(parse(&c.to_string()), Ok(c));
    for t in [
        0.0,
        1.0,
        0.1,
        1e21,
        123_456_789.0,
        f64::MAX,
        f64::MIN_POSITIVE,
        5e-324,
        f64::from_bits(0x000F_FFFF_FFFF_FFFF), // largest subnormal
    ] {
        let c = ner(Lt, t);
        assert_eq!(parse(&c.to_string()), Ok(c.clone()), "{c}");
    }
}

#[test]
fn error_offsets() {
    let cases: [(&str, &str, usize); 12] = [
        ("", "1:1: expected operand, found 'EOF'", 0),
        (
            "NetworkErrorRatio() > 0.5 foo",
            "1:27: expected 'EOF', found foo",
            26,
        ),
        (
            "NetworkErrorRatio() > 0.5\n)",
            "2:1: expected 'EOF', found ')'",
            26,
        ),
        (
            "LatencyAtQuantileMS(50.0) > 08",
            "1:30: invalid digit '8' in octal literal",
            29,
        ),
        (
            "NetworkErrorRatio() > 0.5 & NetworkErrorRatio() > 0.5",
            "& is not supported",
            26,
        ),
        ("!(NetworkErrorRatio() > 0.5)", "! is not supported", 0),
        ("NetworkErrorRatio() > 1", "expected int, got int", 22),
        (
            "0.5 < NetworkErrorRatio()",
            "lt: unsupported argument: float64",
            0,
        ),
        ("x || NetworkErrorRatio()", "x is not defined", 0),
        (
            "ResponseCodeRatio(500, 600, 0, 6.0) > 0.5",
            "reflect: Call using float64 as type int",
            31,
        ),
        (
            "NetworkErrorRatio() > 0.5 && 1",
            "reflect: cannot use int as type cbreaker.hpredicate in Call",
            29,
        ),
        (
            "é > 0.5 || LatencyAtQuantileMS(50.0)",
            "é is not defined",
            0,
        ),
    ];
    for (input, msg, offset) in cases {
        let e = parse(input).expect_err(input);
        assert_eq!(
            (e.message.as_str(), e.offset),
            (msg, Some(offset)),
            "{input:?}"
        );
    }
    // Every Go-positioned error's offset agrees with its line:column.
    for (input, want) in corpus() {
        let (Want::Err(_), Err(e)) = (&want, parse(&input)) else {
            continue;
        };
        let Some(pos) = e.message.split(": ").next() else {
            continue;
        };
        let parts: Vec<&str> = pos.split(':').collect();
        if let [line, col] = parts.as_slice()
            && let (Ok(line), Ok(col)) = (line.parse::<usize>(), col.parse::<usize>())
            && !input.contains("line ")
        // //line directives remap positions
        {
            let offset = e.offset.expect("positioned errors have offsets");
            let at = Lines::new(&input).position(offset);
            assert_eq!((at.line, at.col), (line, col), "{}", short(&input));
        }
    }
}

#[test]
fn number_conversion() {
    let f = |s: &str| go_parse_float(s);
    assert_eq!(f("0x1p-1074"), Ok(5e-324));
    assert_eq!(f("0x1p-1075"), Ok(0.0)); // tie, rounds to even (zero)
    assert_eq!(f("0x1.8p-1075"), Ok(5e-324));
    assert_eq!(f("0x1.fffffffffffff8p1023"), Err(NumError::Range));
    assert_eq!(f("0x1.fffffffffffff7p1023"), Ok(f64::MAX));
    assert_eq!(f("0x1.00000000000008p0"), Ok(1.0)); // tie to even
    assert_eq!(f("0x1.00000000000008000000001p0"), Ok(1.0 + f64::EPSILON));
    assert_eq!(f("0x1.00000000000018p0"), Ok(1.0 + 2.0 * f64::EPSILON));
    assert_eq!(f("0x0.0000001p28"), Ok(1.0));
    assert_eq!(f("0x_1p0"), Ok(1.0));
    assert_eq!(f("0x1p1_0"), Ok(1024.0));
    assert_eq!(f("1_0.5"), Ok(10.5));
    assert_eq!(f("1.7976931348623157e308"), Ok(f64::MAX));
    assert_eq!(f("1.7976931348623159e308"), Err(NumError::Range));
    assert_eq!(f("2.4703282292062328e-324"), Ok(5e-324));
    assert_eq!(f("2.4703282292062327e-324"), Ok(0.0));
    assert_eq!(f("1e-99999"), Ok(0.0));
    assert_eq!(f("0.1"), Ok(0.1));
    // Go's exponent cap and its 800-digit fallback (both confirmed on the binary)
    let zeros = "0".repeat(200_000);
    assert_eq!(f(&format!("1{zeros}e-200000")), Ok(0.0));
    assert_eq!(f(&format!("1{}e-690", "0".repeat(1000))), Ok(1e109));
    assert_eq!(
        f(&format!("1{}e-90", "0".repeat(400))),
        Err(NumError::Range)
    );

    assert_eq!(go_atoi("010"), Ok(10));
    assert_eq!(go_atoi("9223372036854775807"), Ok(i64::MAX));
    assert_eq!(go_atoi("9223372036854775808"), Err(NumError::Range));
    assert_eq!(go_atoi("99999999999999999999_1"), Err(NumError::Range));
    assert_eq!(go_atoi("1_000_000_000_000_000_000"), Err(NumError::Syntax));
    assert_eq!(go_atoi("0x10"), Err(NumError::Syntax));
    assert_eq!(go_atoi(""), Err(NumError::Syntax));
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    // Runs on the 2 MiB test thread, in debug builds too.
    let n = 100_000;
    let inputs = [
        format!(
            "{}NetworkErrorRatio() > 0.5{}",
            "(".repeat(n),
            ")".repeat(n)
        ),
        "(".repeat(n),
        "!".repeat(n),
        "- ".repeat(n),
        "*".repeat(n),
        "<-".repeat(n),
        "[".repeat(n),
        "[]".repeat(n),
        "a{".repeat(n),
        "f(".repeat(n),
        "a[".repeat(n),
        "func(".repeat(n),
        "func(a ".repeat(n),
        "func(a [".repeat(n),
        "map[".repeat(n),
        "chan ".repeat(n),
        "struct{a ".repeat(n),
        "interface{ m(".repeat(n),
        "(*".repeat(n),
        "LatencyAtQuantileMS(".repeat(n),
        vec!["NetworkErrorRatio() > 0.5"; n].join(" || "),
        vec!["a"; n].join(" + "),
        format!(
            "{}1{}",
            "NetworkErrorRatio() > 0.5 || (".repeat(n),
            ")".repeat(n)
        ),
    ];
    for input in inputs {
        let e = parse(&input).expect_err("too deep");
        assert!(
            e.message.ends_with("exceeded max nesting depth"),
            "{}: {e:?}",
            short(&input)
        );
    }
    // The limit is generous for real expressions.
    let depth = 390;
    let nested = format!(
        "{}NetworkErrorRatio() > 0.5{}",
        "(".repeat(depth),
        ")".repeat(depth)
    );
    assert_eq!(parse(&nested), Ok(ner(Gt, 0.5)));
    let chain = vec!["NetworkErrorRatio() > 0.5"; 380].join(" || ");
    assert!(parse(&chain).is_ok());
}

/// A small deterministic PRNG (xorshift64*), so the generated cases are reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n.max(1) as u64).unwrap_or(0)
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Float spellings Go accepts, with their values.
const FLOATS: [(&str, f64); 12] = [
    ("0.5", 0.5),
    (".5", 0.5),
    ("5e-1", 0.5),
    ("0x1p-1", 0.5),
    ("0x.8p0", 0.5),
    ("0_0.5", 0.5),
    ("1.", 1.0),
    ("1e0", 1.0),
    ("0.25", 0.25),
    ("2.5E-1", 0.25),
    ("0.1", 0.1),
    ("1_0.0e-2", 0.1),
];
const QUANTILES: [(&str, f64); 5] = [
    ("50.0", 50.0),
    ("5e1", 50.0),
    ("50.", 50.0),
    ("0x32p0", 50.0),
    ("99.9", 99.9),
];
const INTS: [(&str, i64); 5] = [
    ("100", 100),
    ("0100", 100),
    ("0", 0),
    ("007", 7),
    ("250", 250),
];
const CMPS: [(&str, Comparison); 6] = [
    ("<", Lt),
    ("<=", Le),
    (">", Gt),
    (">=", Ge),
    ("==", Eq),
    ("!=", Ne),
];

/// Builds a random valid expression as tokens, together with what it means.
/// `prec` is the precedence of the context (0 top, 1 inside `||`, 2 inside `&&`).
fn gen_expr(rng: &mut Rng, depth: u32, prec: u8, out: &mut Vec<String>) -> Condition {
    let kind = if depth == 0 { 2 } else { rng.below(3) };
    let parens = rng.below(6) == 0 || (kind == 0 && prec > 1) || (kind == 1 && prec > 2);
    if parens {
        out.push("(".to_owned());
    }
    let inner = if parens { 0 } else { prec };
    let c = match kind {
        0 | 1 => {
            let (op, p) = if kind == 0 { ("||", 1) } else { ("&&", 2) };
            let a = gen_expr(rng, depth - 1, p, out);
            out.push(op.to_owned());
            let b = gen_expr(rng, depth - 1, p + 1, out);
            let _ = inner;
            if kind == 0 { or(a, b) } else { and(a, b) }
        }
        _ => gen_leaf(rng, out),
    };
    if parens {
        out.push(")".to_owned());
    }
    c
}

fn gen_leaf(rng: &mut Rng, out: &mut Vec<String>) -> Condition {
    let (cmp, op) = *rng.pick(&CMPS);
    let wrap = rng.below(5) == 0; // `(NetworkErrorRatio()) > 0.5` is accepted too
    if wrap {
        out.push("(".to_owned());
    }
    let which = rng.below(3);
    let mapper: Result<Ratio, f64> = match which {
        0 => {
            out.extend(["NetworkErrorRatio", "(", ")"].map(String::from));
            Ok(Ratio::NetworkErrors)
        }
        1 => {
            let codes: Vec<(&str, i64)> = (0..4).map(|_| *rng.pick(&INTS)).collect();
            out.extend(["ResponseCodeRatio", "("].map(String::from));
            for (i, (lit, _)) in codes.iter().enumerate() {
                if i > 0 {
                    out.push(",".to_owned());
                }
                out.push((*lit).to_owned());
            }
            if rng.below(4) == 0 {
                out.push(",".to_owned()); // trailing comma
            }
            out.push(")".to_owned());
            let v: Vec<i64> = codes.iter().map(|c| c.1).collect();
            Ok(Ratio::ResponseCodes {
                numerator: [v[0], v[1]],
                denominator: [v[2], v[3]],
            })
        }
        _ => {
            let (lit, q) = *rng.pick(&QUANTILES);
            out.extend(["LatencyAtQuantileMS", "(", lit].map(String::from));
            if rng.below(6) == 0 {
                out.push("...".to_owned()); // predicate ignores the ellipsis
            }
            out.push(")".to_owned());
            Err(q)
        }
    };
    if wrap {
        out.push(")".to_owned());
    }
    out.push(cmp.to_owned());
    let value_parens = rng.below(8) == 0;
    if value_parens {
        out.push("(".to_owned());
    }
    let c = match mapper {
        Ok(ratio) => {
            let (lit, threshold) = *rng.pick(&FLOATS);
            let threshold = float(threshold);
            out.push(lit.to_owned());
            Condition::Ratio {
                ratio,
                op,
                threshold,
            }
        }
        Err(quantile) => {
            let (lit, threshold_ms) = *rng.pick(&INTS);
            out.push(lit.to_owned());
            Condition::Latency {
                quantile: float(quantile),
                op,
                threshold_ms,
            }
        }
    };
    if value_parens {
        out.push(")".to_owned());
    }
    c
}

/// Joins tokens with random blanks; newlines and `//` comments only where Go
/// inserts no semicolon (after an operator, `(` or `,`).
fn render(rng: &mut Rng, tokens: &[String]) -> String {
    let mut s = String::new();
    if rng.below(8) == 0 {
        let lead = *rng.pick::<&str>(&["\n", " ", "\t", "/* lead */ ", "\u{feff}"]);
        s.push_str(lead);
    }
    for (i, t) in tokens.iter().enumerate() {
        s.push_str(t);
        let Some(next) = tokens.get(i + 1) else {
            break;
        };
        let after_operator = matches!(
            t.as_str(),
            "||" | "&&" | "(" | "," | "<" | "<=" | ">" | ">=" | "==" | "!="
        );
        let word = |x: &str| {
            x.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_')
        };
        let need_space = word(t) && word(next);
        let blank = match rng.below(10) {
            0 if after_operator => "\n",
            1 if after_operator => " // note\n",
            2 => "\t",
            3 => " /* c */ ",
            4 | 5 => "",
            _ => " ",
        };
        if blank.is_empty() && need_space {
            s.push(' ');
        } else {
            s.push_str(blank);
        }
    }
    if rng.below(8) == 0 {
        let tail = *rng.pick::<&str>(&["\n", " ", "\n\n", " // tail", " /* tail */"]);
        s.push_str(tail);
    }
    s
}

#[test]
fn generated_expressions_parse_to_their_meaning() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..3000 {
        let mut tokens = Vec::new();
        let depth = u32::try_from(rng.below(5)).unwrap_or(0);
        let want = gen_expr(&mut rng, depth, 0, &mut tokens);
        let text = render(&mut rng, &tokens);
        assert_eq!(parse(&text), Ok(want.clone()), "{text:?}");
        assert_eq!(parse(&want.to_string()), Ok(want), "{text:?}");
    }
}

#[test]
fn random_input_never_panics_and_accepted_input_round_trips() {
    const FRAGMENTS: [&str; 64] = [
        "NetworkErrorRatio",
        "ResponseCodeRatio",
        "LatencyAtQuantileMS",
        "(",
        ")",
        ",",
        "||",
        "&&",
        ">",
        "<",
        ">=",
        "<=",
        "==",
        "!=",
        "!",
        "-",
        "+",
        "*",
        "&",
        "|",
        "^",
        "<<",
        "&^",
        "<-",
        "...",
        ".",
        "[",
        "]",
        "{",
        "}",
        ":",
        ";",
        "0.5",
        "1",
        "50.0",
        "0x1p-1",
        "08",
        "1e999",
        "'a'",
        "\"s\"",
        "`r`",
        "1i",
        "a",
        "func",
        "chan",
        "map",
        "struct",
        "interface",
        "type",
        "\n",
        " ",
        "\t",
        "/*c*/",
        "//c\n",
        "/*\n*/",
        "é",
        "\u{0}",
        "\u{feff}",
        "#",
        "_",
        "x.y",
        "=",
        "/*line :3:4*/",
        "\u{201c}",
    ];
    const CHARS: [char; 24] = [
        'a', 'N', '0', '9', '.', 'e', 'x', 'p', '_', '(', ')', ',', '|', '&', '>', '=', '"', '\'',
        '`', '\\', '\n', ' ', 'é', '\u{0}',
    ];
    let mut rng = Rng(0x0123_4567_89AB_CDEF);
    let mut accepted = 0;
    for i in 0..6000 {
        let len = rng.below(24);
        let text: String = if i % 2 == 0 {
            (0..len).map(|_| *rng.pick(&FRAGMENTS)).collect()
        } else {
            (0..len * 2)
                .map(|_| match rng.below(4) {
                    0 => {
                        char::from_u32(u32::try_from(rng.below(0x3000)).unwrap_or(0)).unwrap_or('?')
                    }
                    _ => *rng.pick(&CHARS),
                })
                .collect()
        };
        match parse(&text) {
            Ok(c) => {
                accepted += 1;
                assert_eq!(parse(&c.to_string()), Ok(c), "{text:?}");
            }
            Err(e) => {
                assert!(!e.message.is_empty());
                assert!(e.offset.is_none_or(|o| o <= text.len()), "{text:?}: {e:?}");
            }
        }
    }
    // Token soup rarely forms a valid expression; valid ones are covered above.
    assert!(accepted < 6000);
}

#[test]
fn ok_results_are_finite() {
    for (input, _) in corpus() {
        if let Ok(c) = parse(&input) {
            let mut stack = vec![&c];
            while let Some(c) = stack.pop() {
                match c {
                    Condition::Or(a, b) | Condition::And(a, b) => stack.extend([&**a, &**b]),
                    Condition::Ratio { threshold, .. } => assert!(threshold.get().is_finite()),
                    Condition::Latency { quantile, .. } => assert!(quantile.get().is_finite()),
                }
            }
        }
    }
}

/// Every expression sent to Traefik 3.7.15 and its verdict (generated from corpus.tsv).
fn corpus() -> Vec<(String, Want)> {
    vec![
        ("".to_owned(), Want::Err("1:1: expected operand, found 'EOF'".to_owned())),
        ("NetworkErrorRatio() > ".to_owned(), Want::Err("1:23: expected operand, found 'EOF'".to_owned())),
        ("(NetworkErrorRatio() > 0.5".to_owned(), Want::Err("1:27: expected ')', found newline".to_owned())),
        ("NetworkErrorRatio() > 0.5 foo".to_owned(), Want::Err("1:27: expected 'EOF', found foo".to_owned())),
        ("NetworkErrorRatio() > 0.5 AND NetworkErrorRatio() > 0.5".to_owned(), Want::Err("1:27: expected 'EOF', found AND".to_owned())),
        ("NetworkErrorRatio() > 0.5;".to_owned(), Want::Err("1:26: expected 'EOF', found ';'".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 08".to_owned(), Want::Err("1:30: invalid digit '8' in octal literal".to_owned())),
        ("NetworkErrorRatio() > 0.5 & NetworkErrorRatio() > 0.5".to_owned(), Want::Err("& is not supported".to_owned())),
        ("!(NetworkErrorRatio() > 0.5)".to_owned(), Want::Err("! is not supported".to_owned())),
        ("NetworkErrorRatio() > -0.5".to_owned(), Want::Err("- is not supported".to_owned())),
        ("NetworkErrorRatio() * 2 > 0.5".to_owned(), Want::Err("* is not supported".to_owned())),
        ("ResponseCodeRatio(-1, 600, 0, 600) > 0.5".to_owned(), Want::Err("*ast.UnaryExpr is not supported".to_owned())),
        ("LatencyAtQuantileMS((50.0)) > 100".to_owned(), Want::Err("*ast.ParenExpr is not supported".to_owned())),
        ("networkErrorRatio() > 0.5".to_owned(), Want::Err("unsupported function: networkErrorRatio".to_owned())),
        ("NetworkErrorRatio() > 0.5 && RequestThreshold() >= 20".to_owned(), Want::Err("unsupported function: RequestThreshold".to_owned())),
        ("a.B() > 0.5".to_owned(), Want::Err("unsupported function: a.B".to_owned())),
        ("NetworkErrorRatio > 0.5".to_owned(), Want::Err("NetworkErrorRatio is not defined".to_owned())),
        ("true".to_owned(), Want::Err("true is not defined".to_owned())),
        ("NetworkErrorRatio() > 0.5 == true".to_owned(), Want::Err("true is not defined".to_owned())),
        ("a.b > 0.5".to_owned(), Want::Err("a.b is not defined".to_owned())),
        ("a[1] > 0.5".to_owned(), Want::Err("properties are not supported".to_owned())),
        ("LatencyAtQuantileMS('a') > 100".to_owned(), Want::Err("unsupported function argument type: 'CHAR'".to_owned())),
        ("NetworkErrorRatio() > 1i".to_owned(), Want::Err("unsupported function argument type: 'IMAG'".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 0x10".to_owned(), Want::Err("failed to parse argument: 0x10, error: strconv.Atoi: parsing \"0x10\": invalid syntax".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 1_000".to_owned(), Want::Err("failed to parse argument: 1_000, error: strconv.Atoi: parsing \"1_000\": invalid syntax".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 0o10".to_owned(), Want::Err("failed to parse argument: 0o10, error: strconv.Atoi: parsing \"0o10\": invalid syntax".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 99999999999999999999".to_owned(), Want::Err("failed to parse argument: 99999999999999999999, error: strconv.Atoi: parsing \"99999999999999999999\": value out of range".to_owned())),
        ("LatencyAtQuantileMS(50) > 100".to_owned(), Want::Err("reflect: Call using int as type float64".to_owned())),
        ("LatencyAtQuantileMS(\"50\") > 100".to_owned(), Want::Err("reflect: Call using string as type float64".to_owned())),
        ("LatencyAtQuantileMS(NetworkErrorRatio()) > 1".to_owned(), Want::Err("reflect: Call using cbreaker.toFloat64 as type float64".to_owned())),
        ("ResponseCodeRatio(500.0, 600, 0, 600) > 0.5".to_owned(), Want::Err("reflect: Call using float64 as type int".to_owned())),
        ("ResponseCodeRatio(\"500\", 600, 0, 600) > 0.5".to_owned(), Want::Err("reflect: Call using string as type int".to_owned())),
        ("ResponseCodeRatio(500, 600, 0) > 0.5".to_owned(), Want::Err("reflect: Call with too few input arguments".to_owned())),
        ("ResponseCodeRatio(500, 600, 0, 600, 1) > 0.5".to_owned(), Want::Err("reflect: Call with too many input arguments".to_owned())),
        ("NetworkErrorRatio() > 1".to_owned(), Want::Err("expected int, got int".to_owned())),
        ("NetworkErrorRatio() > \"a\"".to_owned(), Want::Err("expected int, got string".to_owned())),
        ("NetworkErrorRatio() == 1".to_owned(), Want::Err("expected float64, got int".to_owned())),
        ("ResponseCodeRatio(500, 600, 0, 600) != 2".to_owned(), Want::Err("expected float64, got int".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 100.5".to_owned(), Want::Err("expected int, got float64".to_owned())),
        ("LatencyAtQuantileMS(50.0) == 1.0".to_owned(), Want::Err("expected int, got float64".to_owned())),
        ("0.5 < NetworkErrorRatio()".to_owned(), Want::Err("lt: unsupported argument: float64".to_owned())),
        ("0.5 > NetworkErrorRatio()".to_owned(), Want::Err("gt: unsupported argument: float64".to_owned())),
        ("0.5 == NetworkErrorRatio()".to_owned(), Want::Err("eq: unsupported argument: float64".to_owned())),
        ("NetworkErrorRatio() > 0.1 > 0.2".to_owned(), Want::Err("gt: unsupported argument: cbreaker.hpredicate".to_owned())),
        ("NetworkErrorRatio()".to_owned(), Want::Err("expected predicate, got cbreaker.toFloat64".to_owned())),
        ("NetworkErrorRatio() && LatencyAtQuantileMS(50.0) > 100".to_owned(), Want::Err("reflect: cannot use cbreaker.toFloat64 as type cbreaker.hpredicate in Call".to_owned())),
        ("NetworkErrorRatio() > 0.5".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("NetworkErrorRatio() >= 0.5".to_owned(), Want::Ok(ner(Ge, 0.5))),
        ("NetworkErrorRatio() <= 0.5".to_owned(), Want::Ok(ner(Le, 0.5))),
        ("NetworkErrorRatio() != 0.5".to_owned(), Want::Ok(ner(Ne, 0.5))),
        ("NetworkErrorRatio() == 1.0".to_owned(), Want::Ok(ner(Eq, 1.0))),
        ("NetworkErrorRatio() < .5".to_owned(), Want::Ok(ner(Lt, 0.5))),
        ("NetworkErrorRatio() > 5e-1".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("NetworkErrorRatio() > 0x1p-1".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("LatencyAtQuantileMS(5e1) > 100".to_owned(), Want::Ok(lat(50.0, Gt, 100))),
        ("LatencyAtQuantileMS(50.0) > 010".to_owned(), Want::Ok(lat(50.0, Gt, 10))),
        ("(NetworkErrorRatio()) > 0.5".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("((NetworkErrorRatio() > 0.5))".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("NetworkErrorRatio() > 0.5 || LatencyAtQuantileMS(50.0) > 100 && ResponseCodeRatio(500, 600, 0, 600) > 0.5".to_owned(), Want::Ok(or(ner(Gt, 0.5), and(lat(50.0, Gt, 100), rcr([500, 600], [0, 600], Gt, 0.5))))),
        ("(NetworkErrorRatio() > 0.5 || LatencyAtQuantileMS(50.0) > 100) && ResponseCodeRatio(500, 600, 0, 600) > 0.5".to_owned(), Want::Ok(and(or(ner(Gt, 0.5), lat(50.0, Gt, 100)), rcr([500, 600], [0, 600], Gt, 0.5)))),
        ("  NetworkErrorRatio()>0.5\n".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("\n\nNetworkErrorRatio() > 0.5\n\n".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("NetworkErrorRatio()\t>\t0.5\n||\nLatencyAtQuantileMS(50.0) > 100".to_owned(), Want::Err("2:1: expected 'EOF', found '||'".to_owned())),
        ("NetworkErrorRatio() > 0.5 ||\nLatencyAtQuantileMS(50.0) > 100".to_owned(), Want::Ok(or(ner(Gt, 0.5), lat(50.0, Gt, 100)))),
        ("NetworkErrorRatio() > 0.5 &&\n\n  LatencyAtQuantileMS(50.0) > 100\n".to_owned(), Want::Ok(and(ner(Gt, 0.5), lat(50.0, Gt, 100)))),
        ("NetworkErrorRatio() > 1.".to_owned(), Want::Ok(ner(Gt, 1.0))),
        ("NetworkErrorRatio() > 1e0".to_owned(), Want::Ok(ner(Gt, 1.0))),
        ("NetworkErrorRatio() > 1E+0".to_owned(), Want::Ok(ner(Gt, 1.0))),
        ("NetworkErrorRatio() > 0X1P-1".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("NetworkErrorRatio() > 0x1.8p1".to_owned(), Want::Ok(ner(Gt, 3.0))),
        ("NetworkErrorRatio() > 0x_1p0".to_owned(), Want::Ok(ner(Gt, 1.0))),
        ("NetworkErrorRatio() > 1_0.5".to_owned(), Want::Ok(ner(Gt, 10.5))),
        ("NetworkErrorRatio() > 0.5_0".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("NetworkErrorRatio() > 1e999".to_owned(), Want::Err("failed to parse argument: 1e999, error: strconv.ParseFloat: parsing \"1e999\": value out of range".to_owned())),
        ("NetworkErrorRatio() > 1e-999".to_owned(), Want::Ok(ner(Gt, 0.0))),
        ("NetworkErrorRatio() > 0x1p99999".to_owned(), Want::Err("failed to parse argument: 0x1p99999, error: strconv.ParseFloat: parsing \"0x1p99999\": value out of range".to_owned())),
        ("NetworkErrorRatio() > 0x1p-99999".to_owned(), Want::Ok(ner(Gt, 0.0))),
        ("NetworkErrorRatio() > 1.7976931348623157e308".to_owned(), Want::Ok(ner(Gt, 1.7976931348623157e+308_f64))),
        ("NetworkErrorRatio() > 1.7976931348623159e308".to_owned(), Want::Err("failed to parse argument: 1.7976931348623159e308, error: strconv.ParseFloat: parsing \"1.7976931348623159e308\": value out of range".to_owned())),
        ("NetworkErrorRatio() > 4.9e-324".to_owned(), Want::Ok(ner(Gt, 5e-324_f64))),
        ("NetworkErrorRatio() > 2e-324".to_owned(), Want::Ok(ner(Gt, 0.0))),
        ("NetworkErrorRatio() > 3e-324".to_owned(), Want::Ok(ner(Gt, 5e-324_f64))),
        ("NetworkErrorRatio() > 0x1.fffffffffffff8p1023".to_owned(), Want::Err("failed to parse argument: 0x1.fffffffffffff8p1023, error: strconv.ParseFloat: parsing \"0x1.fffffffffffff8p1023\": value out of range".to_owned())),
        ("NetworkErrorRatio() > 0x1.fffffffffffff7p1023".to_owned(), Want::Ok(ner(Gt, 1.7976931348623157e+308_f64))),
        ("NetworkErrorRatio() > 00.5".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("NetworkErrorRatio() > 09.5".to_owned(), Want::Ok(ner(Gt, 9.5))),
        ("NetworkErrorRatio() > 0e5".to_owned(), Want::Ok(ner(Gt, 0.0))),
        ("NetworkErrorRatio() > 1e99999999999999999999".to_owned(), Want::Err("failed to parse argument: 1e99999999999999999999, error: strconv.ParseFloat: parsing \"1e99999999999999999999\": value out of range".to_owned())),
        ("NetworkErrorRatio() > 0.10000000000000000555111512312578270211815834045410156250000000000000001".to_owned(), Want::Ok(ner(Gt, 0.1))),
        ("LatencyAtQuantileMS(50.0) > 0b1".to_owned(), Want::Err("failed to parse argument: 0b1, error: strconv.Atoi: parsing \"0b1\": invalid syntax".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 0".to_owned(), Want::Ok(lat(50.0, Gt, 0))),
        ("LatencyAtQuantileMS(50.0) > 00".to_owned(), Want::Ok(lat(50.0, Gt, 0))),
        ("LatencyAtQuantileMS(50.0) > 9223372036854775807".to_owned(), Want::Ok(lat(50.0, Gt, 9223372036854775807))),
        ("LatencyAtQuantileMS(50.0) > 9223372036854775808".to_owned(), Want::Err("failed to parse argument: 9223372036854775808, error: strconv.Atoi: parsing \"9223372036854775808\": value out of range".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 99999999999999999999_1".to_owned(), Want::Err("failed to parse argument: 99999999999999999999_1, error: strconv.Atoi: parsing \"99999999999999999999_1\": value out of range".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 1_000_000_000_000_000_000".to_owned(), Want::Err("failed to parse argument: 1_000_000_000_000_000_000, error: strconv.Atoi: parsing \"1_000_000_000_000_000_000\": invalid syntax".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 0777".to_owned(), Want::Ok(lat(50.0, Gt, 777))),
        ("LatencyAtQuantileMS(50.0) > 0xFFFFFFFFFFFFFFFFFFFF".to_owned(), Want::Err("failed to parse argument: 0xFFFFFFFFFFFFFFFFFFFF, error: strconv.Atoi: parsing \"0xFFFFFFFFFFFFFFFFFFFF\": invalid syntax".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 0b2".to_owned(), Want::Err("1:31: invalid digit '2' in binary literal".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 0x".to_owned(), Want::Err("1:31: hexadecimal literal has no digits".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 1__0".to_owned(), Want::Err("1:31: '_' must separate successive digits".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 1_".to_owned(), Want::Err("1:30: '_' must separate successive digits".to_owned())),
        ("LatencyAtQuantileMS(.5e) > 1".to_owned(), Want::Err("1:24: exponent has no digits".to_owned())),
        ("NetworkErrorRatio() > .5e".to_owned(), Want::Err("1:26: exponent has no digits".to_owned())),
        ("NetworkErrorRatio() > 0x1.8".to_owned(), Want::Err("1:28: hexadecimal mantissa requires a 'p' exponent".to_owned())),
        ("NetworkErrorRatio() > 0b1.0".to_owned(), Want::Err("1:26: invalid radix point in binary literal".to_owned())),
        ("NetworkErrorRatio() > 0o1p1".to_owned(), Want::Err("1:26: 'p' exponent requires hexadecimal mantissa".to_owned())),
        ("NetworkErrorRatio() > 1p1".to_owned(), Want::Err("1:24: 'p' exponent requires hexadecimal mantissa".to_owned())),
        ("NetworkErrorRatio() > 0x.p1".to_owned(), Want::Err("1:26: hexadecimal literal has no digits".to_owned())),
        ("NetworkErrorRatio() > '\\n'".to_owned(), Want::Err("unsupported function argument type: 'CHAR'".to_owned())),
        ("NetworkErrorRatio() > 'ab'".to_owned(), Want::Err("1:23: illegal rune literal".to_owned())),
        ("NetworkErrorRatio() > ''".to_owned(), Want::Err("1:23: illegal rune literal".to_owned())),
        ("NetworkErrorRatio() > 'a".to_owned(), Want::Err("1:23: rune literal not terminated".to_owned())),
        ("NetworkErrorRatio() > \"abc".to_owned(), Want::Err("1:23: string literal not terminated".to_owned())),
        ("NetworkErrorRatio() > `raw`".to_owned(), Want::Err("expected int, got string".to_owned())),
        ("NetworkErrorRatio() > `raw".to_owned(), Want::Err("1:23: raw string literal not terminated".to_owned())),
        ("NetworkErrorRatio() > \"\\q\"".to_owned(), Want::Err("1:25: unknown escape sequence".to_owned())),
        ("NetworkErrorRatio() > \"\\xZZ\"".to_owned(), Want::Err("1:26: illegal character U+005A 'Z' in escape sequence".to_owned())),
        ("NetworkErrorRatio() > \"\\uD800\"".to_owned(), Want::Err("1:25: escape sequence is invalid Unicode code point".to_owned())),
        ("NetworkErrorRatio() > 0.5)".to_owned(), Want::Err("1:26: expected 'EOF', found ')'".to_owned())),
        ("NetworkErrorRatio() > 0.5]".to_owned(), Want::Err("1:26: expected 'EOF', found ']'".to_owned())),
        ("NetworkErrorRatio() > 0.5}".to_owned(), Want::Err("1:26: expected 'EOF', found '}'".to_owned())),
        (")".to_owned(), Want::Err("1:1: expected operand, found ')'".to_owned())),
        ("{".to_owned(), Want::Err("1:1: expected operand, found '{'".to_owned())),
        ("NetworkErrorRatio() > {".to_owned(), Want::Err("1:23: expected operand, found '{'".to_owned())),
        ("a.(b) > 0.5".to_owned(), Want::Err("*ast.TypeAssertExpr is not supported".to_owned())),
        ("a.(type)".to_owned(), Want::Err("*ast.TypeAssertExpr is not supported".to_owned())),
        ("a[1:2] > 0.5".to_owned(), Want::Err("*ast.SliceExpr is not supported".to_owned())),
        ("a[1:2:3]".to_owned(), Want::Err("*ast.SliceExpr is not supported".to_owned())),
        ("a[::]".to_owned(), Want::Err("1:3: middle index required in 3-index slice".to_owned())),
        ("a[]".to_owned(), Want::Err("1:3: expected operand, found ']'".to_owned())),
        ("a[1,2]".to_owned(), Want::Err("1:5: expected type, found 2".to_owned())),
        ("func(){}".to_owned(), Want::Err("*ast.FuncLit is not supported".to_owned())),
        ("func(){} > 0.5".to_owned(), Want::Err("*ast.FuncLit is not supported".to_owned())),
        ("[]int{1}".to_owned(), Want::Err("*ast.CompositeLit is not supported".to_owned())),
        ("[]int{1} > 0.5".to_owned(), Want::Err("*ast.CompositeLit is not supported".to_owned())),
        ("f()()".to_owned(), Want::Err("expected identifier, got: *ast.CallExpr".to_owned())),
        ("f().g".to_owned(), Want::Err("unsupported selector type: *ast.CallExpr".to_owned())),
        ("f().g > 0.5".to_owned(), Want::Err("unsupported selector type: *ast.CallExpr".to_owned())),
        ("NetworkErrorRatio(,)".to_owned(), Want::Err("1:19: expected operand, found ','".to_owned())),
        ("NetworkErrorRatio(,) > 0.5".to_owned(), Want::Err("1:19: expected operand, found ','".to_owned())),
        ("ResponseCodeRatio(500,600,0,600,) > 0.5".to_owned(), Want::Ok(rcr([500, 600], [0, 600], Gt, 0.5))),
        ("NetworkErrorRatio () > 0.5".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("NetworkErrorRatio( ) > 0.5".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("NetworkErrorRatio() > 0.5 /* c */".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("NetworkErrorRatio() > 0.5 // c".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("NetworkErrorRatio() /* c */ > 0.5".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("/* c */ NetworkErrorRatio() > 0.5".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("NetworkErrorRatio() > 0.5 /* a\nb */".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("(NetworkErrorRatio() > 0.5 // c\n)".to_owned(), Want::Err("1:32: expected ')', found newline (and 1 more errors)".to_owned())),
        ("(NetworkErrorRatio() > 0.5 /* a\nb */)".to_owned(), Want::Err("1:32: expected ')', found newline (and 1 more errors)".to_owned())),
        ("NetworkErrorRatio() > 0.5 /* unterminated".to_owned(), Want::Err("1:27: comment not terminated".to_owned())),
        ("NetworkErrorRatio() > 0.5 \u{e9}".to_owned(), Want::Err("1:27: expected 'EOF', found \u{e9}".to_owned())),
        ("\u{e9} > 0.5".to_owned(), Want::Err("\u{e9} is not defined".to_owned())),
        ("NetworkErrorRatio() > 0.5 \u{201c}".to_owned(), Want::Err("1:27: curly quotation mark '\u{201c}' (use neutral '\"')".to_owned())),
        ("NetworkErrorRatio() > 0.5 #".to_owned(), Want::Err("1:27: illegal character U+0023 '#'".to_owned())),
        ("NetworkErrorRatio() > 0.5\0".to_owned(), Want::Err("1:26: illegal character NUL (and 1 more errors)".to_owned())),
        ("NetworkErrorRatio() > \"a\0\"".to_owned(), Want::Err("1:25: illegal character NUL".to_owned())),
        ("NetworkErrorRatio() > 0.5\u{1}".to_owned(), Want::Err("1:26: illegal character U+0001".to_owned())),
        ("\u{feff}NetworkErrorRatio() > 0.5".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("NetworkErrorRatio() > 0.5\u{feff}".to_owned(), Want::Err("1:26: illegal byte order mark".to_owned())),
        ("NetworkErrorRatio() + 0.5 > 0.5".to_owned(), Want::Err("+ is not supported".to_owned())),
        ("NetworkErrorRatio() - 0.5 > 0.5".to_owned(), Want::Err("- is not supported".to_owned())),
        ("NetworkErrorRatio() / 2 > 0.5".to_owned(), Want::Err("/ is not supported".to_owned())),
        ("NetworkErrorRatio() % 2 > 0.5".to_owned(), Want::Err("% is not supported".to_owned())),
        ("NetworkErrorRatio() | 2 > 0.5".to_owned(), Want::Err("| is not supported".to_owned())),
        ("NetworkErrorRatio() ^ 2 > 0.5".to_owned(), Want::Err("^ is not supported".to_owned())),
        ("NetworkErrorRatio() << 2 > 0.5".to_owned(), Want::Err("<< is not supported".to_owned())),
        ("NetworkErrorRatio() >> 2 > 0.5".to_owned(), Want::Err(">> is not supported".to_owned())),
        ("NetworkErrorRatio() &^ 2 > 0.5".to_owned(), Want::Err("&^ is not supported".to_owned())),
        ("NetworkErrorRatio() > 0.5 | NetworkErrorRatio() > 0.5".to_owned(), Want::Err("| is not supported".to_owned())),
        ("<-a".to_owned(), Want::Err("<- is not supported".to_owned())),
        ("^a".to_owned(), Want::Err("^ is not supported".to_owned())),
        ("+NetworkErrorRatio() > 0.5".to_owned(), Want::Err("+ is not supported".to_owned())),
        ("&a".to_owned(), Want::Err("& is not supported".to_owned())),
        ("~a".to_owned(), Want::Err("~ is not supported".to_owned())),
        ("*a > 0.5".to_owned(), Want::Err("*ast.StarExpr is not supported".to_owned())),
        ("NetworkErrorRatio() = 0.5".to_owned(), Want::Err("1:21: expected '==', found '='".to_owned())),
        ("NetworkErrorRatio() := 0.5".to_owned(), Want::Err("1:21: expected 'EOF', found ':='".to_owned())),
        ("NetworkErrorRatio() += 0.5".to_owned(), Want::Err("1:21: expected 'EOF', found '+='".to_owned())),
        ("NetworkErrorRatio()++".to_owned(), Want::Err("1:20: expected 'EOF', found '++'".to_owned())),
        ("NetworkErrorRatio() > 0.5, 1".to_owned(), Want::Err("1:26: expected 'EOF', found ','".to_owned())),
        ("NetworkErrorRatio() > 0.5 ... ".to_owned(), Want::Err("1:27: expected 'EOF', found '...'".to_owned())),
        ("ResponseCodeRatio(500, 600, 0, 600...) > 0.5".to_owned(), Want::Err("1:37: expected selector or type assertion, found '.'".to_owned())),
        ("LatencyAtQuantileMS(50.0...) > 100".to_owned(), Want::Ok(lat(50.0, Gt, 100))),
        ("NetworkErrorRatio() > 0.5 ||".to_owned(), Want::Err("1:29: expected operand, found 'EOF'".to_owned())),
        ("|| NetworkErrorRatio() > 0.5".to_owned(), Want::Err("1:1: expected operand, found '||'".to_owned())),
        ("NetworkErrorRatio() >> 0.5".to_owned(), Want::Err(">> is not supported".to_owned())),
        ("NetworkErrorRatio() > 0.5 && 1".to_owned(), Want::Err("reflect: cannot use int as type cbreaker.hpredicate in Call".to_owned())),
        ("1 && NetworkErrorRatio() > 0.5".to_owned(), Want::Err("reflect: cannot use int as type cbreaker.hpredicate in Call".to_owned())),
        ("\"a\" && NetworkErrorRatio() > 0.5".to_owned(), Want::Err("reflect: cannot use string as type cbreaker.hpredicate in Call".to_owned())),
        ("LatencyAtQuantileMS(50.0) && NetworkErrorRatio() > 0.5".to_owned(), Want::Err("reflect: cannot use cbreaker.toInt as type cbreaker.hpredicate in Call".to_owned())),
        ("0.5".to_owned(), Want::Err("expected predicate, got float64".to_owned())),
        ("1".to_owned(), Want::Err("expected predicate, got int".to_owned())),
        ("\"s\"".to_owned(), Want::Err("expected predicate, got string".to_owned())),
        ("'c'".to_owned(), Want::Err("unsupported function argument type: 'CHAR'".to_owned())),
        ("1i".to_owned(), Want::Err("unsupported function argument type: 'IMAG'".to_owned())),
        ("LatencyAtQuantileMS(50.0)".to_owned(), Want::Err("expected predicate, got cbreaker.toInt".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 1 == 1".to_owned(), Want::Err("eq: unsupported argument: cbreaker.hpredicate".to_owned())),
        ("(NetworkErrorRatio() > 0.5) > 0.5".to_owned(), Want::Err("gt: unsupported argument: cbreaker.hpredicate".to_owned())),
        ("LatencyAtQuantileMS(a) > 1".to_owned(), Want::Err("a is not defined".to_owned())),
        ("LatencyAtQuantileMS(a.b) > 1".to_owned(), Want::Err("a.b is not defined".to_owned())),
        ("LatencyAtQuantileMS(a[1]) > 1".to_owned(), Want::Err("properties are not supported".to_owned())),
        ("LatencyAtQuantileMS(-50.0) > 1".to_owned(), Want::Err("*ast.UnaryExpr is not supported".to_owned())),
        ("LatencyAtQuantileMS(50.0 + 1.0) > 1".to_owned(), Want::Err("*ast.BinaryExpr is not supported".to_owned())),
        ("LatencyAtQuantileMS() > 1".to_owned(), Want::Err("reflect: Call with too few input arguments".to_owned())),
        ("LatencyAtQuantileMS(1e999) > 1".to_owned(), Want::Err("failed to parse argument: 1e999, error: strconv.ParseFloat: parsing \"1e999\": value out of range".to_owned())),
        ("LatencyAtQuantileMS(x()) > 1".to_owned(), Want::Err("unsupported function: x".to_owned())),
        ("NetworkErrorRatio(1) > 0.5".to_owned(), Want::Err("reflect: Call with too many input arguments".to_owned())),
        ("(NetworkErrorRatio)() > 0.5".to_owned(), Want::Err("expected identifier, got: *ast.ParenExpr".to_owned())),
        ("a.b.c() > 0.5".to_owned(), Want::Err("expected selector identifier, got: *ast.SelectorExpr".to_owned())),
        ("a.b.c > 0.5".to_owned(), Want::Err("a.b.c is not defined".to_owned())),
        ("a().b > 0.5".to_owned(), Want::Err("unsupported selector type: *ast.CallExpr".to_owned())),
        ("(a).b > 0.5".to_owned(), Want::Err("unsupported selector type: *ast.ParenExpr".to_owned())),
        ("NetworkErrorRatio.x() > 0.5".to_owned(), Want::Err("unsupported function: NetworkErrorRatio.x".to_owned())),
        ("a[1]() > 0.5".to_owned(), Want::Err("expected identifier, got: *ast.IndexExpr".to_owned())),
        ("f[int]() > 0.5".to_owned(), Want::Err("expected identifier, got: *ast.IndexExpr".to_owned())),
        ("f[int, string]() > 0.5".to_owned(), Want::Err("expected identifier, got: *ast.IndexListExpr".to_owned())),
        ("\"NetworkErrorRatio\"() > 0.5".to_owned(), Want::Err("expected identifier, got: *ast.BasicLit".to_owned())),
        ("int(5) > 0.5".to_owned(), Want::Err("unsupported function: int".to_owned())),
        ("NetworkErrorRatio() > 0.5 == NetworkErrorRatio() > 0.5".to_owned(), Want::Err("eq: unsupported argument: cbreaker.hpredicate".to_owned())),
        ("NetworkErrorRatio() > 0.5 > NetworkErrorRatio()".to_owned(), Want::Err("gt: unsupported argument: cbreaker.hpredicate".to_owned())),
        ("NetworkErrorRatio() > 0.5 && NetworkErrorRatio()".to_owned(), Want::Err("reflect: cannot use cbreaker.toFloat64 as type cbreaker.hpredicate in Call".to_owned())),
        ("NetworkErrorRatio() > 0.5 || 0.5".to_owned(), Want::Err("reflect: cannot use float64 as type cbreaker.hpredicate in Call".to_owned())),
        ("NetworkErrorRatio() > NetworkErrorRatio()".to_owned(), Want::Err("expected int, got cbreaker.toFloat64".to_owned())),
        ("LatencyAtQuantileMS(50.0) > LatencyAtQuantileMS(50.0)".to_owned(), Want::Err("expected int, got cbreaker.toInt".to_owned())),
        ("LatencyAtQuantileMS(50.0) >= 1.5".to_owned(), Want::Err("expected int, got float64".to_owned())),
        ("LatencyAtQuantileMS(50.0) <= 1.5".to_owned(), Want::Err("expected int, got float64".to_owned())),
        ("LatencyAtQuantileMS(50.0) != 1.5".to_owned(), Want::Err("expected int, got float64".to_owned())),
        ("LatencyAtQuantileMS(50.0) < 1.5".to_owned(), Want::Err("expected int, got float64".to_owned())),
        ("NetworkErrorRatio() >= 1".to_owned(), Want::Err("expected int, got int".to_owned())),
        ("NetworkErrorRatio() <= 1".to_owned(), Want::Err("expected int, got int".to_owned())),
        ("NetworkErrorRatio() < 1".to_owned(), Want::Err("expected int, got int".to_owned())),
        ("NetworkErrorRatio() != 1".to_owned(), Want::Err("expected float64, got int".to_owned())),
        ("LatencyAtQuantileMS(50.0) == 100".to_owned(), Want::Ok(lat(50.0, Eq, 100))),
        ("LatencyAtQuantileMS(50.0) != 100".to_owned(), Want::Ok(lat(50.0, Ne, 100))),
        ("LatencyAtQuantileMS(50.0) >= 100".to_owned(), Want::Ok(lat(50.0, Ge, 100))),
        ("LatencyAtQuantileMS(50.0) <= 100".to_owned(), Want::Ok(lat(50.0, Le, 100))),
        ("LatencyAtQuantileMS(50.0) < 100".to_owned(), Want::Ok(lat(50.0, Lt, 100))),
        ("LatencyAtQuantileMS(50.0) > \"1\"".to_owned(), Want::Err("expected int, got string".to_owned())),
        ("NetworkErrorRatio() > 'a'".to_owned(), Want::Err("unsupported function argument type: 'CHAR'".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 'a'".to_owned(), Want::Err("unsupported function argument type: 'CHAR'".to_owned())),
        ("a > 0.5".to_owned(), Want::Err("a is not defined".to_owned())),
        ("if".to_owned(), Want::Err("1:1: expected operand, found 'if'".to_owned())),
        ("NetworkErrorRatio() > if".to_owned(), Want::Err("1:23: expected operand, found 'if'".to_owned())),
        ("NetworkErrorRatio() > ) 08".to_owned(), Want::Err("1:23: expected operand, found ')' (and 1 more errors)".to_owned())),
        ("NetworkErrorRatio() > ) if 08".to_owned(), Want::Err("1:23: expected operand, found ')' (and 1 more errors)".to_owned())),
        ("NetworkErrorRatio() > 0.5\n)".to_owned(), Want::Err("2:1: expected 'EOF', found ')'".to_owned())),
        ("NetworkErrorRatio() > \n".to_owned(), Want::Err("1:24: expected operand, found 'EOF'".to_owned())),
        ("NetworkErrorRatio() > \n\n".to_owned(), Want::Err("2:2: expected operand, found 'EOF'".to_owned())),
        ("NetworkErrorRatio(\n) > 0.5".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("ResponseCodeRatio(500,\n600, 0, 600) > 0.5".to_owned(), Want::Ok(rcr([500, 600], [0, 600], Gt, 0.5))),
        ("ResponseCodeRatio(500, 600, 0, 600\n) > 0.5".to_owned(), Want::Err("1:35: missing ',' before newline in argument list".to_owned())),
        ("ResponseCodeRatio(500, 600 0, 600) > 0.5".to_owned(), Want::Err("1:28: missing ',' in argument list".to_owned())),
        ("NetworkErrorRatio() > 0.5 foo bar baz".to_owned(), Want::Err("1:27: expected 'EOF', found foo".to_owned())),
        ("a b\nc d\ne f".to_owned(), Want::Err("1:3: expected 'EOF', found b".to_owned())),
        ("1 2\n3 4\n5 6\n7 8\n9 10\n11 12\n13 14\n15 16\n17 18\n19 20\n21 22\n23 24\n25 26".to_owned(), Want::Err("1:3: expected 'EOF', found 2".to_owned())),
        (")\n)\n)\n)\n)\n)\n)\n)\n)\n)\n)\n)\n)\n)".to_owned(), Want::Err("1:1: expected operand, found ')'".to_owned())),
        ("struct{}{}".to_owned(), Want::Err("*ast.CompositeLit is not supported".to_owned())),
        ("map[string]int{}".to_owned(), Want::Err("*ast.CompositeLit is not supported".to_owned())),
        ("chan int".to_owned(), Want::Err("*ast.ChanType is not supported".to_owned())),
        ("interface{}".to_owned(), Want::Err("*ast.InterfaceType is not supported".to_owned())),
        ("*int".to_owned(), Want::Err("*ast.StarExpr is not supported".to_owned())),
        ("[...]int{1}".to_owned(), Want::Err("*ast.CompositeLit is not supported".to_owned())),
        ("x.(int) > 0.5".to_owned(), Want::Err("*ast.TypeAssertExpr is not supported".to_owned())),
        ("NetworkErrorRatio() > 0.5 ]".to_owned(), Want::Err("1:27: expected 'EOF', found ']'".to_owned())),
        ("NetworkErrorRatio() > 0.5 :".to_owned(), Want::Err("1:27: expected 'EOF', found ':'".to_owned())),
        ("NetworkErrorRatio() > 0.5 .".to_owned(), Want::Err("1:28: expected selector or type assertion, found 'EOF'".to_owned())),
        ("NetworkErrorRatio() > 0.5.".to_owned(), Want::Err("1:27: expected selector or type assertion, found 'EOF'".to_owned())),
        ("NetworkErrorRatio() > 0.5.5".to_owned(), Want::Err("1:26: expected 'EOF', found .5".to_owned())),
        ("NetworkErrorRatio(). > 0.5".to_owned(), Want::Err("1:22: expected selector or type assertion, found '>'".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 1\n".to_owned(), Want::Ok(lat(50.0, Gt, 1))),
        ("NetworkErrorRatio() > 0.5\r\n".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("NetworkErrorRatio()\r\n> 0.5".to_owned(), Want::Err("2:1: expected 'EOF', found '>'".to_owned())),
        ("NetworkErrorRatio()>0.5&&LatencyAtQuantileMS(50.0)>100".to_owned(), Want::Ok(and(ner(Gt, 0.5), lat(50.0, Gt, 100)))),
        ("NetworkErrorRatio() > 0.5 //c\n|| NetworkErrorRatio() > 0.5".to_owned(), Want::Err("2:1: expected 'EOF', found '||'".to_owned())),
        ("NetworkErrorRatio() > 0.5 /* x */ || NetworkErrorRatio() > 0.5".to_owned(), Want::Ok(or(ner(Gt, 0.5), ner(Gt, 0.5)))),
        ("NetworkErrorRatio() > 0.5 /*\n*/ || NetworkErrorRatio() > 0.5".to_owned(), Want::Err("2:4: expected 'EOF', found '||'".to_owned())),
        (format!("{}NetworkErrorRatio() > 0.5{}", "(".repeat(50), ")".repeat(50)), Want::Ok(ner(Gt, 0.5))),
        (vec!["NetworkErrorRatio() > 0.5"; 300].join(" || "), Want::Ok(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(or(ner(Gt, 0.5), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)), ner(Gt, 0.5)))),
        (format!("NetworkErrorRatio() > 0.{}1", "0".repeat(5000)), Want::Ok(ner(Gt, 0.0))),
        ("LatencyAtQuantileMS(50.0) > 000000000000000000000000000000100".to_owned(), Want::Ok(lat(50.0, Gt, 100))),
        ("08 + 09".to_owned(), Want::Err("1:2: invalid digit '8' in octal literal (and 1 more errors)".to_owned())),
        ("NetworkErrorRatio() > 0.5 /*line x:0*/".to_owned(), Want::Err("1:36: invalid line number: 0".to_owned())),
        ("NetworkErrorRatio() > 0.5 /*line x:1:0*/".to_owned(), Want::Err("1:38: invalid column number: 0".to_owned())),
        ("NetworkErrorRatio() > 0.5 /*line x:y*/".to_owned(), Want::Err("1:36: invalid line number: y".to_owned())),
        ("//line x:0\nNetworkErrorRatio() > 0.5".to_owned(), Want::Err("1:10: invalid line number: 0".to_owned())),
        ("NetworkErrorRatio() > 0.5 //line x:0".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("NetworkErrorRatio() > 0.5 /*line :5:1*/ foo".to_owned(), Want::Err("5:2: expected 'EOF', found foo".to_owned())),
        ("/*line :5:1*/NetworkErrorRatio() > 0.5 foo".to_owned(), Want::Err("5:27: expected 'EOF', found foo".to_owned())),
        ("NetworkErrorRatio() > 0.5 /*line x:99999999999*/".to_owned(), Want::Err("1:36: invalid line number: 99999999999".to_owned())),
        ("[]int".to_owned(), Want::Err("*ast.ArrayType is not supported".to_owned())),
        ("map[string]int".to_owned(), Want::Err("*ast.MapType is not supported".to_owned())),
        ("struct{a int}".to_owned(), Want::Err("*ast.StructType is not supported".to_owned())),
        ("interface{ m() }".to_owned(), Want::Err("*ast.InterfaceType is not supported".to_owned())),
        ("func(a, b int) int".to_owned(), Want::Err("*ast.FuncType is not supported".to_owned())),
        ("func(a int, b) {}".to_owned(), Want::Err("1:14: missing parameter type".to_owned())),
        ("chan<- int".to_owned(), Want::Err("*ast.ChanType is not supported".to_owned())),
        ("<-chan int".to_owned(), Want::Err("*ast.ChanType is not supported".to_owned())),
        ("<-chan<- int".to_owned(), Want::Err("1:7: expected channel type".to_owned())),
        ("<-<-chan int".to_owned(), Want::Err("1:3: expected 'chan'".to_owned())),
        ("[...]int{}".to_owned(), Want::Err("*ast.CompositeLit is not supported".to_owned())),
        ("([]int){1}".to_owned(), Want::Err("1:2: cannot parenthesize type in composite literal".to_owned())),
        ("(struct{}){}".to_owned(), Want::Err("1:2: cannot parenthesize type in composite literal".to_owned())),
        ("T{a: 1}".to_owned(), Want::Err("*ast.CompositeLit is not supported".to_owned())),
        ("a{".to_owned(), Want::Err("1:3: expected '}', found 'EOF'".to_owned())),
        ("a{1,".to_owned(), Want::Err("1:5: expected '}', found 'EOF'".to_owned())),
        ("a{1\n}".to_owned(), Want::Err("1:4: missing ',' before newline in composite literal".to_owned())),
        ("f[int]".to_owned(), Want::Err("properties are not supported".to_owned())),
        ("f[]".to_owned(), Want::Err("1:3: expected operand, found ']'".to_owned())),
        ("a[1:]".to_owned(), Want::Err("*ast.SliceExpr is not supported".to_owned())),
        ("a[:2]".to_owned(), Want::Err("*ast.SliceExpr is not supported".to_owned())),
        ("a[1:2:]".to_owned(), Want::Err("1:6: final index required in 3-index slice".to_owned())),
        ("a[::3]".to_owned(), Want::Err("1:3: middle index required in 3-index slice".to_owned())),
        ("a.(".to_owned(), Want::Err("1:4: expected type, found 'EOF'".to_owned())),
        ("a.()".to_owned(), Want::Err("1:4: expected type, found ')'".to_owned())),
        ("a.\n".to_owned(), Want::Err("1:4: expected selector or type assertion, found 'EOF'".to_owned())),
        ("a.(type) > 0.5".to_owned(), Want::Err("*ast.TypeAssertExpr is not supported".to_owned())),
        ("f(a b)".to_owned(), Want::Err("1:5: missing ',' in argument list".to_owned())),
        ("f(a,".to_owned(), Want::Err("1:5: expected ')', found 'EOF'".to_owned())),
        ("f(a...".to_owned(), Want::Err("1:7: missing ',' in argument list".to_owned())),
        ("f(a..., b)".to_owned(), Want::Err("1:9: expected ')', found b".to_owned())),
        ("f(...)".to_owned(), Want::Err("1:3: expected operand, found '...'".to_owned())),
        ("f(a)(b)".to_owned(), Want::Err("expected identifier, got: *ast.CallExpr".to_owned())),
        ("\"\\400\"".to_owned(), Want::Err("1:3: escape sequence is invalid Unicode code point".to_owned())),
        ("'\\U00110000'".to_owned(), Want::Err("1:3: escape sequence is invalid Unicode code point".to_owned())),
        ("\"\\x4\"".to_owned(), Want::Err("1:5: illegal character U+0022 '\"' in escape sequence".to_owned())),
        ("'\\'".to_owned(), Want::Err("1:1: rune literal not terminated".to_owned())),
        ("\"\\".to_owned(), Want::Err("1:1: string literal not terminated (and 1 more errors)".to_owned())),
        ("'\\xG'".to_owned(), Want::Err("1:4: illegal character U+0047 'G' in escape sequence".to_owned())),
        ("NetworkErrorRatio() > 0.5 \u{b2}".to_owned(), Want::Err("1:27: illegal character U+00B2 '\u{b2}'".to_owned())),
        ("\u{216b} > 0.5".to_owned(), Want::Err("1:1: illegal character U+216B '\u{216b}'".to_owned())),
        ("\u{663} > 0.5".to_owned(), Want::Err("1:1: illegal character U+0663 '\u{663}'".to_owned())),
        ("a\u{663} > 0.5".to_owned(), Want::Err("a\u{663} is not defined".to_owned())),
        ("e\u{301} > 0.5".to_owned(), Want::Err("1:2: illegal character U+0301 '\u{301}'".to_owned())),
        ("NetworkErrorRatio() > 0.5 \u{200b}".to_owned(), Want::Err("1:27: illegal character U+200B".to_owned())),
        ("NetworkErrorRatio()\u{a0}> 0.5".to_owned(), Want::Err("1:20: illegal character U+00A0".to_owned())),
        ("NetworkErrorRatio() > 0.5 \u{1f600}".to_owned(), Want::Err("1:27: illegal character U+1F600 '\u{1f600}'".to_owned())),
        ("NetworkErrorRatio() > 0.5 \u{20ac}".to_owned(), Want::Err("1:27: illegal character U+20AC '\u{20ac}'".to_owned())),
        ("NetworkErrorRatio()\u{c}> 0.5".to_owned(), Want::Err("1:20: illegal character U+000C".to_owned())),
        ("NetworkErrorRatio()\u{b}> 0.5".to_owned(), Want::Err("1:20: illegal character U+000B".to_owned())),
        ("NetworkErrorRatio()\r> 0.5".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("NetworkErrorRatio() > 0x1p".to_owned(), Want::Err("1:27: exponent has no digits".to_owned())),
        ("NetworkErrorRatio() > 0x1p+".to_owned(), Want::Err("1:28: exponent has no digits".to_owned())),
        ("NetworkErrorRatio() > 1e+".to_owned(), Want::Err("1:26: exponent has no digits".to_owned())),
        ("NetworkErrorRatio() > 0.e1".to_owned(), Want::Ok(ner(Gt, 0.0))),
        ("LatencyAtQuantileMS(50.0) > 0_0".to_owned(), Want::Err("failed to parse argument: 0_0, error: strconv.Atoi: parsing \"0_0\": invalid syntax".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 0_8".to_owned(), Want::Err("1:31: invalid digit '8' in octal literal".to_owned())),
        ("NetworkErrorRatio() > 08.5e1".to_owned(), Want::Ok(ner(Gt, 85.0))),
        ("LatencyAtQuantileMS(50.0) > 0o".to_owned(), Want::Err("1:31: octal literal has no digits".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 0b".to_owned(), Want::Err("1:31: binary literal has no digits".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 0b_1".to_owned(), Want::Err("failed to parse argument: 0b_1, error: strconv.Atoi: parsing \"0b_1\": invalid syntax".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 1__".to_owned(), Want::Err("1:31: '_' must separate successive digits".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 0x_".to_owned(), Want::Err("1:31: '_' must separate successive digits (and 1 more errors)".to_owned())),
        ("NetworkErrorRatio() > 0x1_p1".to_owned(), Want::Err("1:26: '_' must separate successive digits".to_owned())),
        ("NetworkErrorRatio() > .5_".to_owned(), Want::Err("1:25: '_' must separate successive digits".to_owned())),
        ("NetworkErrorRatio() > 1.5i".to_owned(), Want::Err("unsupported function argument type: 'IMAG'".to_owned())),
        ("NetworkErrorRatio() > 0x1p1i".to_owned(), Want::Err("unsupported function argument type: 'IMAG'".to_owned())),
        ("NetworkErrorRatio() > 0b101i".to_owned(), Want::Err("unsupported function argument type: 'IMAG'".to_owned())),
        ("NetworkErrorRatio() > 08i".to_owned(), Want::Err("unsupported function argument type: 'IMAG'".to_owned())),
        ("NetworkErrorRatio() > 0_1.5".to_owned(), Want::Ok(ner(Gt, 1.5))),
        ("NetworkErrorRatio() > 1_000.5e1_0".to_owned(), Want::Ok(ner(Gt, 10005000000000.0))),
        ("LatencyAtQuantileMS(50.0) > 18446744073709551616".to_owned(), Want::Err("failed to parse argument: 18446744073709551616, error: strconv.Atoi: parsing \"18446744073709551616\": value out of range".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 18446744073709551615".to_owned(), Want::Err("failed to parse argument: 18446744073709551615, error: strconv.Atoi: parsing \"18446744073709551615\": value out of range".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 0x8000000000000000".to_owned(), Want::Err("failed to parse argument: 0x8000000000000000, error: strconv.Atoi: parsing \"0x8000000000000000\": invalid syntax".to_owned())),
        ("NetworkErrorRatio() > 0.5 || type".to_owned(), Want::Err("1:30: expected operand, found 'type'".to_owned())),
        ("NetworkErrorRatio() > 0.5 || range".to_owned(), Want::Err("1:30: expected operand, found 'range'".to_owned())),
        ("go".to_owned(), Want::Err("1:1: expected operand, found 'go'".to_owned())),
        ("NetworkErrorRatio() > 0.5 go".to_owned(), Want::Err("1:27: expected 'EOF', found 'go'".to_owned())),
        ("a = b".to_owned(), Want::Err("1:3: expected '==', found '='".to_owned())),
        ("(a = b)".to_owned(), Want::Err("1:4: expected '==', found '='".to_owned())),
        ("a == b = c".to_owned(), Want::Err("1:8: expected '==', found '='".to_owned())),
        ("(\n(\n(".to_owned(), Want::Err("3:2: expected operand, found 'EOF'".to_owned())),
        ("NetworkErrorRatio() > `a\nb`".to_owned(), Want::Err("expected int, got string".to_owned())),
        ("NetworkErrorRatio() >\n0.5".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("NetworkErrorRatio()\n> 0.5".to_owned(), Want::Err("2:1: expected 'EOF', found '>'".to_owned())),
        ("NetworkErrorRatio() > 0.5\n\n\nfoo".to_owned(), Want::Err("4:1: expected 'EOF', found foo".to_owned())),
        ("f(08,\n08,\n08,\n08,\n08,\n08,\n08,\n08,\n08,\n08,\n08,\n08,\n08,\n08,\n08,\n08)".to_owned(), Want::Err("1:4: invalid digit '8' in octal literal (and 15 more errors)".to_owned())),
        ("f(a b\nc d\nc d\nc d\nc d\nc d\nc d\nc d\nc d\nc d\nc d\nc d\nc d\nc d\nc d\n)".to_owned(), Want::Err("1:5: missing ',' in argument list (and 1 more errors)".to_owned())),
        ("f(\na b,\na b,\na b,\na b,\na b,\na b,\na b,\na b,\na b,\na b,\na b,\na b,\na b,\na b,\n)".to_owned(), Want::Err("2:3: missing ',' in argument list (and 1 more errors)".to_owned())),
        ("NetworkErrorRatio() > 0.5 && !".to_owned(), Want::Err("1:31: expected operand, found 'EOF'".to_owned())),
        ("LatencyAtQuantileMS(50.0) > 100 == LatencyAtQuantileMS(50.0) > 100".to_owned(), Want::Err("eq: unsupported argument: cbreaker.hpredicate".to_owned())),
        ("ResponseCodeRatio(500, 600, 0, 600) > 0.5 > 1".to_owned(), Want::Err("gt: unsupported argument: cbreaker.hpredicate".to_owned())),
        ("NetworkErrorRatio() > 1e-400".to_owned(), Want::Ok(ner(Gt, 0.0))),
        ("NetworkErrorRatio() > 0x1p-1074".to_owned(), Want::Ok(ner(Gt, 5e-324_f64))),
        ("NetworkErrorRatio() > 0x1p-1075".to_owned(), Want::Ok(ner(Gt, 0.0))),
        ("NetworkErrorRatio() > 0x1.8p-1075".to_owned(), Want::Ok(ner(Gt, 5e-324_f64))),
        ("NetworkErrorRatio() > 0x1.00000000000000000001p0".to_owned(), Want::Ok(ner(Gt, 1.0))),
        ("NetworkErrorRatio() > 0x1.00000000000008000000001p0".to_owned(), Want::Ok(ner(Gt, 1.0000000000000002))),
        ("LatencyAtQuantileMS(50.) > 1".to_owned(), Want::Ok(lat(50.0, Gt, 1))),
        ("NetworkErrorRatio() > a{}".to_owned(), Want::Err("*ast.CompositeLit is not supported".to_owned())),
        ("func() {}()".to_owned(), Want::Err("expected identifier, got: *ast.FuncLit".to_owned())),
        ("func(a int) bool { return a > 1 }".to_owned(), Want::Err("*ast.FuncLit is not supported".to_owned())),
        ("func".to_owned(), Want::Err("1:5: expected '(', found 'EOF'".to_owned())),
        ("struct".to_owned(), Want::Err("1:7: expected '{', found 'EOF'".to_owned())),
        ("map[".to_owned(), Want::Err("1:5: expected type, found 'EOF'".to_owned())),
        ("chan".to_owned(), Want::Err("1:5: expected type, found 'EOF'".to_owned())),
        ("interface{".to_owned(), Want::Err("1:11: expected '}', found 'EOF'".to_owned())),
        ("[]".to_owned(), Want::Err("1:3: expected type, found newline".to_owned())),
        ("[".to_owned(), Want::Err("1:2: expected operand, found 'EOF'".to_owned())),
        ("*".to_owned(), Want::Err("1:2: expected operand, found 'EOF'".to_owned())),
        ("a.b.c.d()".to_owned(), Want::Err("expected selector identifier, got: *ast.SelectorExpr".to_owned())),
        ("(a)(b)".to_owned(), Want::Err("expected identifier, got: *ast.ParenExpr".to_owned())),
        ("NetworkErrorRatio(NetworkErrorRatio()) > 0.5".to_owned(), Want::Err("reflect: Call with too many input arguments".to_owned())),
        ("ResponseCodeRatio(500, 600, 0, a) > 0.5".to_owned(), Want::Err("a is not defined".to_owned())),
        ("ResponseCodeRatio(500, 600, 0, 600.0) > 0.5".to_owned(), Want::Err("reflect: Call using float64 as type int".to_owned())),
        ("ResponseCodeRatio(500, 600, 0, '6') > 0.5".to_owned(), Want::Err("unsupported function argument type: 'CHAR'".to_owned())),
        ("ResponseCodeRatio(500, 600, 0, 6i) > 0.5".to_owned(), Want::Err("unsupported function argument type: 'IMAG'".to_owned())),
        ("ResponseCodeRatio(a, 600, 0, 0x1) > 0.5".to_owned(), Want::Err("a is not defined".to_owned())),
        ("ResponseCodeRatio(500, 600, 0, 0x1) > 0.5".to_owned(), Want::Err("failed to parse argument: 0x1, error: strconv.Atoi: parsing \"0x1\": invalid syntax".to_owned())),
        ("ResponseCodeRatio(500, 600, 0, 600, a) > 0.5".to_owned(), Want::Err("a is not defined".to_owned())),
        ("LatencyAtQuantileMS(1, 2) > 1".to_owned(), Want::Err("reflect: Call with too many input arguments".to_owned())),
        ("LatencyAtQuantileMS(1.0, 2) > 1".to_owned(), Want::Err("reflect: Call with too many input arguments".to_owned())),
        ("LatencyAtQuantileMS(1.0, a) > 1".to_owned(), Want::Err("a is not defined".to_owned())),
        ("ResponseCodeRatio(1e999, 600, 0, 600) > 0.5".to_owned(), Want::Err("failed to parse argument: 1e999, error: strconv.ParseFloat: parsing \"1e999\": value out of range".to_owned())),
        ("LatencyAtQuantileMS(0x1p-1) > 1".to_owned(), Want::Ok(lat(0.5, Gt, 1))),
        ("LatencyAtQuantileMS(99.9) >= 9223372036854775807".to_owned(), Want::Ok(lat(99.9, Ge, 9223372036854775807))),
        ("ResponseCodeRatio(-0, 600, 0, 600) > 0.5".to_owned(), Want::Err("*ast.UnaryExpr is not supported".to_owned())),
        ("ResponseCodeRatio(500,600,0,600) > 0.5 && (LatencyAtQuantileMS(50.0) > 100 || NetworkErrorRatio() > 0.5)".to_owned(), Want::Ok(and(rcr([500, 600], [0, 600], Gt, 0.5), or(lat(50.0, Gt, 100), ner(Gt, 0.5))))),
        ("NetworkErrorRatio() > 0.5 || NetworkErrorRatio() > 0.6 || NetworkErrorRatio() > 0.7".to_owned(), Want::Ok(or(or(ner(Gt, 0.5), ner(Gt, 0.6)), ner(Gt, 0.7)))),
        ("NetworkErrorRatio() > 0.5 && NetworkErrorRatio() > 0.6 && NetworkErrorRatio() > 0.7".to_owned(), Want::Ok(and(and(ner(Gt, 0.5), ner(Gt, 0.6)), ner(Gt, 0.7)))),
        ("NetworkErrorRatio() > 0.5 || (NetworkErrorRatio() > 0.6 || NetworkErrorRatio() > 0.7)".to_owned(), Want::Ok(or(ner(Gt, 0.5), or(ner(Gt, 0.6), ner(Gt, 0.7))))),
        ("(NetworkErrorRatio() > 0.5 && NetworkErrorRatio() > 0.6) || NetworkErrorRatio() > 0.7 && NetworkErrorRatio() > 0.8".to_owned(), Want::Ok(or(and(ner(Gt, 0.5), ner(Gt, 0.6)), and(ner(Gt, 0.7), ner(Gt, 0.8))))),
        ("NetworkErrorRatio()>=0.5".to_owned(), Want::Ok(ner(Ge, 0.5))),
        ("NetworkErrorRatio()==0.5".to_owned(), Want::Ok(ner(Eq, 0.5))),
        ("LatencyAtQuantileMS(50.0)!=0".to_owned(), Want::Ok(lat(50.0, Ne, 0))),
        ("LatencyAtQuantileMS(0.0) < 0".to_owned(), Want::Ok(lat(0.0, Lt, 0))),
        ("NetworkErrorRatio() > 0.5\t".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("\tNetworkErrorRatio() > 0.5".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("NetworkErrorRatio() > 0.5 ;".to_owned(), Want::Err("1:27: expected 'EOF', found ';'".to_owned())),
        ("NetworkErrorRatio() > 0.5\n;".to_owned(), Want::Err("2:1: expected 'EOF', found ';'".to_owned())),
        ("NetworkErrorRatio() > 0.5;\n".to_owned(), Want::Err("1:26: expected 'EOF', found ';'".to_owned())),
        ("NetworkErrorRatio() > 0.5 // a\n// b\n".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("NetworkErrorRatio() > 0.5 /* a */ /* b */".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("NetworkErrorRatio() > 0.5 /**/".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("NetworkErrorRatio() > 0.5 /*".to_owned(), Want::Err("1:27: comment not terminated".to_owned())),
        ("NetworkErrorRatio() > 0.5 /".to_owned(), Want::Err("1:28: expected operand, found 'EOF'".to_owned())),
        ("NetworkErrorRatio() > 0.5 //".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("NetworkErrorRatio() > 0.5 '".to_owned(), Want::Err("1:27: rune literal not terminated".to_owned())),
        ("NetworkErrorRatio() > 0.5 \"".to_owned(), Want::Err("1:27: string literal not terminated".to_owned())),
        ("NetworkErrorRatio() > 0.5 `".to_owned(), Want::Err("1:27: raw string literal not terminated".to_owned())),
        ("NetworkErrorRatio() > 0.5 \\".to_owned(), Want::Err("1:27: illegal character U+005C '\\'".to_owned())),
        ("NetworkErrorRatio() > 0.5 @".to_owned(), Want::Err("1:27: illegal character U+0040 '@'".to_owned())),
        ("NetworkErrorRatio() > 0.5 $".to_owned(), Want::Err("1:27: illegal character U+0024 '$'".to_owned())),
        ("NetworkErrorRatio() > 0.5 ?".to_owned(), Want::Err("1:27: illegal character U+003F '?'".to_owned())),
        ("a ? b : c".to_owned(), Want::Err("1:3: illegal character U+003F '?'".to_owned())),
        ("NetworkErrorRatio() > 0.5 ~".to_owned(), Want::Err("1:27: expected 'EOF', found '~'".to_owned())),
        ("NetworkErrorRatio() > 0.5 !".to_owned(), Want::Err("1:27: expected 'EOF', found '!'".to_owned())),
        ("NetworkErrorRatio() > 0.5 &&& NetworkErrorRatio() > 0.5".to_owned(), Want::Err("& is not supported".to_owned())),
        ("NetworkErrorRatio() > 0.5 ||| NetworkErrorRatio() > 0.5".to_owned(), Want::Err("1:29: expected operand, found '|'".to_owned())),
        ("NetworkErrorRatio() >= = 0.5".to_owned(), Want::Err("1:24: expected operand, found '='".to_owned())),
        ("NetworkErrorRatio() => 0.5".to_owned(), Want::Err("1:21: expected '==', found '='".to_owned())),
        ("NetworkErrorRatio() =< 0.5".to_owned(), Want::Err("1:21: expected '==', found '='".to_owned())),
        ("NetworkErrorRatio() <> 0.5".to_owned(), Want::Err("1:22: expected operand, found '>'".to_owned())),
        ("NetworkErrorRatio() <- 0.5".to_owned(), Want::Err("1:21: expected 'EOF', found '<-'".to_owned())),
        ("NetworkErrorRatio() -- 0.5".to_owned(), Want::Err("1:21: expected 'EOF', found '--'".to_owned())),
        ("NetworkErrorRatio() > --0.5".to_owned(), Want::Err("1:23: expected operand, found '--'".to_owned())),
        ("NetworkErrorRatio() > +0.5".to_owned(), Want::Err("+ is not supported".to_owned())),
        ("NetworkErrorRatio() > ^0".to_owned(), Want::Err("^ is not supported".to_owned())),
        ("a <<= b".to_owned(), Want::Err("1:3: expected 'EOF', found '<<='".to_owned())),
        ("a &^= b".to_owned(), Want::Err("1:3: expected 'EOF', found '&^='".to_owned())),
        ("NETWORKERRORRATIO() > 0.5".to_owned(), Want::Err("unsupported function: NETWORKERRORRATIO".to_owned())),
        ("NetworkErrorRatio ( ) > 0.5".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("NetworkErrorRatio\n() > 0.5".to_owned(), Want::Err("2:1: expected 'EOF', found '('".to_owned())),
        ("NetworkErrorRatio(\n) > 0.5 ||\n LatencyAtQuantileMS(\n50.0,\n) > 1".to_owned(), Want::Ok(or(ner(Gt, 0.5), lat(50.0, Gt, 1)))),
        ("\u{201c}NetworkErrorRatio() > 0.5\u{201d}".to_owned(), Want::Err("1:1: curly quotation mark '\u{201c}' (use neutral '\"') (and 1 more errors)".to_owned())),
        ("\"NetworkErrorRatio() > 0.5\"".to_owned(), Want::Err("expected predicate, got string".to_owned())),
        ("'NetworkErrorRatio() > 0.5'".to_owned(), Want::Err("1:1: illegal rune literal".to_owned())),
        ("true && NetworkErrorRatio() > 0.5".to_owned(), Want::Err("true is not defined".to_owned())),
        ("nil".to_owned(), Want::Err("nil is not defined".to_owned())),
        ("NetworkErrorRatio() > nil".to_owned(), Want::Err("nil is not defined".to_owned())),
        ("NetworkErrorRatio() > 0.5 && a.b".to_owned(), Want::Err("a.b is not defined".to_owned())),
        ("a.b && NetworkErrorRatio()".to_owned(), Want::Err("a.b is not defined".to_owned())),
        ("NetworkErrorRatio() > 0.5 && a[0]".to_owned(), Want::Err("properties are not supported".to_owned())),
        ("a[b] && c".to_owned(), Want::Err("properties are not supported".to_owned())),
        ("x.y.z > 0.5".to_owned(), Want::Err("x.y.z is not defined".to_owned())),
        ("f().g.h > 0.5".to_owned(), Want::Err("unsupported selector type: *ast.CallExpr".to_owned())),
        ("a[1].b > 0.5".to_owned(), Want::Err("unsupported selector type: *ast.IndexExpr".to_owned())),
        ("a[1][2]".to_owned(), Want::Err("properties are not supported".to_owned())),
        ("a[1:2][3]".to_owned(), Want::Err("properties are not supported".to_owned())),
        ("a.b[1]".to_owned(), Want::Err("properties are not supported".to_owned())),
        ("*a.b".to_owned(), Want::Err("*ast.StarExpr is not supported".to_owned())),
        ("&a.b".to_owned(), Want::Err("& is not supported".to_owned())),
        ("len(a) > 0.5".to_owned(), Want::Err("unsupported function: len".to_owned())),
        ("a[1,]".to_owned(), Want::Err("properties are not supported".to_owned())),
        ("a[1,2,]".to_owned(), Want::Err("1:5: expected type, found 2".to_owned())),
        ("a[,]".to_owned(), Want::Err("1:3: expected operand, found ','".to_owned())),
        ("a{}.b".to_owned(), Want::Err("unsupported selector type: *ast.CompositeLit".to_owned())),
        ("a{}[1]".to_owned(), Want::Err("properties are not supported".to_owned())),
        ("a{}()".to_owned(), Want::Err("expected identifier, got: *ast.CompositeLit".to_owned())),
        ("1()".to_owned(), Want::Err("expected identifier, got: *ast.BasicLit".to_owned())),
        ("1.5.x".to_owned(), Want::Err("unsupported selector type: *ast.BasicLit".to_owned())),
        ("\"a\".b".to_owned(), Want::Err("unsupported selector type: *ast.BasicLit".to_owned())),
        ("'a'.b".to_owned(), Want::Err("unsupported selector type: *ast.BasicLit".to_owned())),
        ("1 .x".to_owned(), Want::Err("unsupported selector type: *ast.BasicLit".to_owned())),
        ("(1).x".to_owned(), Want::Err("unsupported selector type: *ast.ParenExpr".to_owned())),
        ("func(a, b) {}".to_owned(), Want::Err("*ast.FuncLit is not supported".to_owned())),
        ("func(a ...int, b int) {}".to_owned(), Want::Err("1:8: can only use ... with final parameter".to_owned())),
        ("func(...int)".to_owned(), Want::Err("*ast.FuncType is not supported".to_owned())),
        ("func[T any]()".to_owned(), Want::Err("1:5: function type must have no type parameters".to_owned())),
        ("func[]()".to_owned(), Want::Err("1:6: empty type parameter list".to_owned())),
        ("interface{ m[T any]() }".to_owned(), Want::Err("1:13: interface method must have no type parameters".to_owned())),
        ("struct{ *(T) }".to_owned(), Want::Err("1:10: cannot parenthesize embedded type".to_owned())),
        ("struct{ (T) }".to_owned(), Want::Err("1:9: cannot parenthesize embedded type".to_owned())),
        ("struct{ a, b int; c string `tag` }".to_owned(), Want::Err("*ast.StructType is not supported".to_owned())),
        ("map[string]".to_owned(), Want::Err("1:12: expected type, found newline".to_owned())),
        ("[]int{1, 2, 3}[0]".to_owned(), Want::Err("properties are not supported".to_owned())),
        ("[]int{1: 2}".to_owned(), Want::Err("*ast.CompositeLit is not supported".to_owned())),
        ("chan chan<- int".to_owned(), Want::Err("*ast.ChanType is not supported".to_owned())),
        ("<-chan <-chan int".to_owned(), Want::Err("*ast.ChanType is not supported".to_owned())),
        ("[1,2]int".to_owned(), Want::Err("1:3: unexpected comma; expecting ]".to_owned())),
        ("[a]int{}".to_owned(), Want::Err("*ast.CompositeLit is not supported".to_owned())),
        ("struct{}".to_owned(), Want::Err("*ast.StructType is not supported".to_owned())),
        ("interface{ ~int | string }".to_owned(), Want::Err("*ast.InterfaceType is not supported".to_owned())),
        ("func(a [2]int) {}".to_owned(), Want::Err("*ast.FuncLit is not supported".to_owned())),
        ("func(a [n,]int) {}".to_owned(), Want::Err("1:10: unexpected comma; expecting ]".to_owned())),
        ("func(a b.c) {}".to_owned(), Want::Err("*ast.FuncLit is not supported".to_owned())),
        ("func(a, b c, d) {}".to_owned(), Want::Err("1:15: missing parameter type".to_owned())),
        ("func(a b, c) {}".to_owned(), Want::Err("1:12: missing parameter type".to_owned())),
        ("func(int, b c) {}".to_owned(), Want::Err("*ast.FuncLit is not supported".to_owned())),
        ("f(func() {})".to_owned(), Want::Err("unsupported function: f".to_owned())),
        ("LatencyAtQuantileMS(func(){}) > 1".to_owned(), Want::Err("*ast.FuncLit is not supported".to_owned())),
        ("LatencyAtQuantileMS([]int{}) > 1".to_owned(), Want::Err("*ast.CompositeLit is not supported".to_owned())),
        ("LatencyAtQuantileMS(int) > 1".to_owned(), Want::Err("int is not defined".to_owned())),
        ("NetworkErrorRatio() > 0.5 || func(){ if x { } }".to_owned(), Want::Err("*ast.FuncLit is not supported".to_owned())),
        ("a /* \n\n".to_owned(), Want::Err("1:3: comment not terminated".to_owned())),
        ("\"abc\ndef\"".to_owned(), Want::Err("1:1: string literal not terminated (and 2 more errors)".to_owned())),
        ("'a\nb'".to_owned(), Want::Err("1:1: rune literal not terminated (and 2 more errors)".to_owned())),
        ("(a\n(b\n(c".to_owned(), Want::Err("1:3: expected ')', found newline (and 2 more errors)".to_owned())),
        ("a(b(c(d(".to_owned(), Want::Err("1:9: expected ')', found 'EOF'".to_owned())),
        ("[[[[".to_owned(), Want::Err("1:5: expected operand, found 'EOF'".to_owned())),
        ("a[1\n]".to_owned(), Want::Err("1:4: expected ']', found newline (and 1 more errors)".to_owned())),
        ("a[1:\n2]".to_owned(), Want::Err("*ast.SliceExpr is not supported".to_owned())),
        ("NetworkErrorRatio() > 0.5 /*line x.go:3:4*/ foo".to_owned(), Want::Err("x.go:3:5: expected 'EOF', found foo".to_owned())),
        ("//line a/../b.go:7\nfoo bar".to_owned(), Want::Err("b.go:7: expected 'EOF', found bar".to_owned())),
        ("/*line /abs/x.go:2:3*/a b".to_owned(), Want::Err("/abs/x.go:2:5: expected 'EOF', found b".to_owned())),
        ("/*line ./x.go:2:3*/a b".to_owned(), Want::Err("x.go:2:5: expected 'EOF', found b".to_owned())),
        ("/*line :2:3*/a\nb c".to_owned(), Want::Err("3:1: expected 'EOF', found b".to_owned())),
        ("/*line x.go:2*/a b".to_owned(), Want::Err("x.go:2: expected 'EOF', found b".to_owned())),
        ("/*line x.go:2:3*/a\n/*line y.go:9:1*/b c".to_owned(), Want::Err("y.go:9:1: expected 'EOF', found b".to_owned())),
        ("a /* \0 */".to_owned(), Want::Err("1:6: illegal character NUL".to_owned())),
        ("a /* \u{feff} */ > 0.5".to_owned(), Want::Err("1:6: illegal byte order mark".to_owned())),
        ("\"\u{feff}\"".to_owned(), Want::Err("1:2: illegal byte order mark".to_owned())),
        ("func(a ...int)".to_owned(), Want::Err("*ast.FuncType is not supported".to_owned())),
        ("func(a, b ...int)".to_owned(), Want::Err("1:11: can only use ... with final parameter".to_owned())),
        ("func(a ...int, b ...int)".to_owned(), Want::Err("1:8: can only use ... with final parameter".to_owned())),
        ("func() (a, b int)".to_owned(), Want::Err("*ast.FuncType is not supported".to_owned())),
        ("func() (int, string)".to_owned(), Want::Err("*ast.FuncType is not supported".to_owned())),
        ("func() int {}".to_owned(), Want::Err("*ast.FuncLit is not supported".to_owned())),
        ("struct{a int}{}".to_owned(), Want::Err("*ast.CompositeLit is not supported".to_owned())),
        ("struct{a int}{1}".to_owned(), Want::Err("*ast.CompositeLit is not supported".to_owned())),
        ("map[string]int{\"a\": 1}".to_owned(), Want::Err("*ast.CompositeLit is not supported".to_owned())),
        ("[...]int".to_owned(), Want::Err("*ast.ArrayType is not supported".to_owned())),
        ("[...]int{}[0]".to_owned(), Want::Err("properties are not supported".to_owned())),
        ("interface{}(a)".to_owned(), Want::Err("expected identifier, got: *ast.InterfaceType".to_owned())),
        ("[]int(a)".to_owned(), Want::Err("expected identifier, got: *ast.ArrayType".to_owned())),
        ("(*T)(a)".to_owned(), Want::Err("expected identifier, got: *ast.ParenExpr".to_owned())),
        ("(chan int)(a)".to_owned(), Want::Err("expected identifier, got: *ast.ParenExpr".to_owned())),
        ("func()(a)".to_owned(), Want::Err("*ast.FuncType is not supported".to_owned())),
        ("a.(*T)".to_owned(), Want::Err("*ast.TypeAssertExpr is not supported".to_owned())),
        ("a.([]int)".to_owned(), Want::Err("*ast.TypeAssertExpr is not supported".to_owned())),
        ("a.(interface{})".to_owned(), Want::Err("*ast.TypeAssertExpr is not supported".to_owned())),
        ("a.(type).b".to_owned(), Want::Err("unsupported selector type: *ast.TypeAssertExpr".to_owned())),
        ("a[i:j:k]".to_owned(), Want::Err("*ast.SliceExpr is not supported".to_owned())),
        ("a[:]".to_owned(), Want::Err("*ast.SliceExpr is not supported".to_owned())),
        ("a[:j]".to_owned(), Want::Err("*ast.SliceExpr is not supported".to_owned())),
        ("a[i:]".to_owned(), Want::Err("*ast.SliceExpr is not supported".to_owned())),
        ("a[i:j]".to_owned(), Want::Err("*ast.SliceExpr is not supported".to_owned())),
        ("a[i,j]".to_owned(), Want::Err("*ast.IndexListExpr is not supported".to_owned())),
        ("a[i,]".to_owned(), Want::Err("properties are not supported".to_owned())),
        ("a[T[int]]".to_owned(), Want::Err("properties are not supported".to_owned())),
        ("f[int](1)".to_owned(), Want::Err("expected identifier, got: *ast.IndexExpr".to_owned())),
        ("f[[]int]".to_owned(), Want::Err("properties are not supported".to_owned())),
        ("f[map[a]b]".to_owned(), Want::Err("properties are not supported".to_owned())),
        ("x[1:2:3:4]".to_owned(), Want::Err("1:8: expected ']', found ':'".to_owned())),
        ("x[1::3]".to_owned(), Want::Err("1:4: middle index required in 3-index slice".to_owned())),
        ("x[::]".to_owned(), Want::Err("1:3: middle index required in 3-index slice".to_owned())),
        ("NetworkErrorRatio() > 0.5 && (LatencyAtQuantileMS(50.0) > 100".to_owned(), Want::Err("1:62: expected ')', found newline".to_owned())),
        ("NetworkErrorRatio() > 0.5 && LatencyAtQuantileMS(50.0) > 100)".to_owned(), Want::Err("1:61: expected 'EOF', found ')'".to_owned())),
        ("((NetworkErrorRatio() > 0.5)".to_owned(), Want::Err("1:29: expected ')', found newline".to_owned())),
        ("(NetworkErrorRatio() > 0.5))".to_owned(), Want::Err("1:28: expected 'EOF', found ')'".to_owned())),
        ("(NetworkErrorRatio() > 0.5 ||)".to_owned(), Want::Err("1:30: expected operand, found ')'".to_owned())),
        ("(|| NetworkErrorRatio() > 0.5)".to_owned(), Want::Err("1:2: expected operand, found '||'".to_owned())),
        ("NetworkErrorRatio(0.5 > 0.2)".to_owned(), Want::Err("*ast.BinaryExpr is not supported".to_owned())),
        ("NetworkErrorRatio() > (0.5)".to_owned(), Want::Ok(ner(Gt, 0.5))),
        ("NetworkErrorRatio() > (0.5 + 1)".to_owned(), Want::Err("+ is not supported".to_owned())),
        ("(NetworkErrorRatio() > 0.5)()".to_owned(), Want::Err("expected identifier, got: *ast.ParenExpr".to_owned())),
        ("LatencyAtQuantileMS(50.0) > (100)".to_owned(), Want::Ok(lat(50.0, Gt, 100))),
        ("(LatencyAtQuantileMS)(50.0) > 100".to_owned(), Want::Err("expected identifier, got: *ast.ParenExpr".to_owned())),
        ("LatencyAtQuantileMS(50.0)() > 100".to_owned(), Want::Err("expected identifier, got: *ast.CallExpr".to_owned())),
        ("LatencyAtQuantileMS(50.0).x > 100".to_owned(), Want::Err("unsupported selector type: *ast.CallExpr".to_owned())),
        ("LatencyAtQuantileMS(50.0)[0] > 100".to_owned(), Want::Err("properties are not supported".to_owned())),
        ("LatencyAtQuantileMS(50.0){} > 100".to_owned(), Want::Err("1:26: expected 'EOF', found '{'".to_owned())),
        ("LatencyAtQuantileMS{50.0} > 100".to_owned(), Want::Err("*ast.CompositeLit is not supported".to_owned())),
        ("ResponseCodeRatio[500, 600, 0, 600] > 0.5".to_owned(), Want::Err("1:24: expected type, found 600".to_owned())),
        ("ResponseCodeRatio(500, 600, 0, 600) > .5e-0".to_owned(), Want::Ok(rcr([500, 600], [0, 600], Gt, 0.5))),
        ("a || b".to_owned(), Want::Err("a is not defined".to_owned())),
        ("a && b".to_owned(), Want::Err("a is not defined".to_owned())),
        ("a > b".to_owned(), Want::Err("a is not defined".to_owned())),
        ("NetworkErrorRatio() > b".to_owned(), Want::Err("b is not defined".to_owned())),
        ("NetworkErrorRatio() > 0.5 || b".to_owned(), Want::Err("b is not defined".to_owned())),
        ("b || NetworkErrorRatio() > 0.5".to_owned(), Want::Err("b is not defined".to_owned())),
        ("NetworkErrorRatio() > 0.5 || NetworkErrorRatio() > 1".to_owned(), Want::Err("expected int, got int".to_owned())),
        ("NetworkErrorRatio() > 1 || NetworkErrorRatio() > a".to_owned(), Want::Err("expected int, got int".to_owned())),
        ("NetworkErrorRatio() > a || NetworkErrorRatio() > 1".to_owned(), Want::Err("a is not defined".to_owned())),
        ("LatencyAtQuantileMS(1e999) > 1e999".to_owned(), Want::Err("failed to parse argument: 1e999, error: strconv.ParseFloat: parsing \"1e999\": value out of range".to_owned())),
        ("LatencyAtQuantileMS(a) > 1e999".to_owned(), Want::Err("a is not defined".to_owned())),
        ("-NetworkErrorRatio() > 0.5".to_owned(), Want::Err("- is not supported".to_owned())),
        ("!NetworkErrorRatio() > 0.5".to_owned(), Want::Err("! is not supported".to_owned())),
        ("*NetworkErrorRatio() > 0.5".to_owned(), Want::Err("*ast.StarExpr is not supported".to_owned())),
        ("<-NetworkErrorRatio() > 0.5".to_owned(), Want::Err("<- is not supported".to_owned())),
        ("NetworkErrorRatio() > 0.5 || -a".to_owned(), Want::Err("- is not supported".to_owned())),
        ("NetworkErrorRatio() > 0.5 + a".to_owned(), Want::Err("a is not defined".to_owned())),
        ("a + NetworkErrorRatio() > 0.5".to_owned(), Want::Err("a is not defined".to_owned())),
        ("NetworkErrorRatio() > 0.5 || a + b".to_owned(), Want::Err("a is not defined".to_owned())),
        ("NetworkErrorRatio() > 0.5 || (a)".to_owned(), Want::Err("a is not defined".to_owned())),
        ("NetworkErrorRatio() > 0.5 || ()".to_owned(), Want::Err("1:31: expected operand, found ')'".to_owned())),
        ("()".to_owned(), Want::Err("1:2: expected operand, found ')'".to_owned())),
        ("(,)".to_owned(), Want::Err("1:2: expected operand, found ','".to_owned())),
        ("(a,)".to_owned(), Want::Err("1:3: expected ')', found ','".to_owned())),
        ("(a, b)".to_owned(), Want::Err("1:3: expected ')', found ','".to_owned())),
        ("(a b)".to_owned(), Want::Err("1:4: expected ')', found b".to_owned())),
        ("f(a, b c)".to_owned(), Want::Err("1:8: missing ',' in argument list".to_owned())),
        ("NetworkErrorRatio() > 0.5 \u{2028}".to_owned(), Want::Err("1:27: illegal character U+2028".to_owned())),
        ("NetworkErrorRatio() > 0.5\u{85}".to_owned(), Want::Err("1:26: illegal character U+0085".to_owned())),
        ("\u{e9}t\u{e9}() > 0.5".to_owned(), Want::Err("unsupported function: \u{e9}t\u{e9}".to_owned())),
        ("NetworkErrorRatio() > 0.5 || \u{e9}t\u{e9}() > 0.5".to_owned(), Want::Err("unsupported function: \u{e9}t\u{e9}".to_owned())),
        ("\u{394}() > 0.5".to_owned(), Want::Err("unsupported function: \u{394}".to_owned())),
        ("_() > 0.5".to_owned(), Want::Err("unsupported function: _".to_owned())),
        ("_ > 0.5".to_owned(), Want::Err("_ is not defined".to_owned())),
        ("NetworkErrorRatio() > 0.5 /*line x:1*/\n&& a".to_owned(), Want::Err("x:2: expected 'EOF', found '&&'".to_owned())),
        ("NetworkErrorRatio()\u{3000}> 0.5".to_owned(), Want::Err("1:20: illegal character U+3000".to_owned())),
        ("\u{ff2e}\u{ff45}\u{ff54}() > 0.5".to_owned(), Want::Err("unsupported function: \u{ff2e}\u{ff45}\u{ff54}".to_owned())),
        ([String::from("NetworkErrorRatio() > 1"), "0".repeat(200000), String::from("e-200000")].concat(), Want::Ok(ner(Gt, 0.0))),
        ([String::from("NetworkErrorRatio() > 0."), "0".repeat(200000), String::from("1e200001")].concat(), Want::Ok(ner(Gt, 0.0))),
        ("NetworkErrorRatio() > 100000000000000000000e-20".to_owned(), Want::Ok(ner(Gt, 1.0))),
        ([String::from("NetworkErrorRatio() > 0x1"), "0".repeat(30000), String::from("p-120000")].concat(), Want::Err([String::from("failed to parse argument: 0x1"), "0".repeat(30000), String::from("p-120000, error: strconv.ParseFloat: parsing \"0x1"), "0".repeat(30000), String::from("p-120000\": value out of range")].concat())),
        ([String::from("NetworkErrorRatio() > 0x0."), "0".repeat(3000), String::from("1p12004")].concat(), Want::Ok(ner(Gt, 1.0))),
        ([String::from("NetworkErrorRatio() > 1"), "0".repeat(1000), String::from("e-690")].concat(), Want::Ok(ner(Gt, 1e+109_f64))),
        ([String::from("NetworkErrorRatio() > 1"), "0".repeat(1000), String::from("e-680")].concat(), Want::Ok(ner(Gt, 1e+119_f64))),
        ([String::from("NetworkErrorRatio() > 1"), "0".repeat(1000), String::from("e-600")].concat(), Want::Ok(ner(Gt, 1e+199_f64))),
        ([String::from("NetworkErrorRatio() > 1"), "0".repeat(400), String::from("e-90")].concat(), Want::Err([String::from("failed to parse argument: 1"), "0".repeat(400), String::from("e-90, error: strconv.ParseFloat: parsing \"1"), "0".repeat(400), String::from("e-90\": value out of range")].concat())),
        ([String::from("NetworkErrorRatio() > 1"), "0".repeat(1000), String::from(".5e-600")].concat(), Want::Ok(ner(Gt, 1e+199_f64))),
        ([String::from("NetworkErrorRatio() > "), "9".repeat(901)].concat(), Want::Err([String::from("failed to parse argument: "), "9".repeat(901), String::from(", error: strconv.Atoi: parsing \""), "9".repeat(901), String::from("\": value out of range")].concat())),
    ]
}

/// Rows where this module knowingly differs: (input, Traefik, ours, why).
fn divergences() -> Vec<(String, &'static str, &'static str, &'static str)> {
    vec![
        (
            format!(
                "{}NetworkErrorRatio() > 0.5{}",
                "(".repeat(2000),
                ")".repeat(2000)
            ),
            "ok",
            "1:401: exceeded max nesting depth",
            "nesting limit",
        ),
        (
            format!(
                "{}NetworkErrorRatio() > 0.5{}",
                "(".repeat(40000),
                ")".repeat(40000)
            ),
            "ok",
            "1:401: exceeded max nesting depth",
            "nesting limit",
        ),
        (
            format!("{}a{}", "(".repeat(100_001), ")".repeat(100_001)),
            "1:100001: exceeded max nesting depth",
            "1:401: exceeded max nesting depth",
            "nesting limit",
        ),
        (
            format!("{}a", "!".repeat(100_001)),
            "1:100001: exceeded max nesting depth",
            "1:401: exceeded max nesting depth",
            "nesting limit",
        ),
        (
            vec!["NetworkErrorRatio() > 0.5"; 40000].join(" || "),
            "ok",
            "1:11534: exceeded max nesting depth",
            "nesting limit",
        ),
        (
            "func(){ x := }".to_owned(),
            "1:14: expected operand, found '}'",
            "*ast.FuncLit is not supported",
            "function bodies are not parsed",
        ),
    ]
}

// ---------------------------------------------------------------------------
// buffering's retryExpression

/// Traefik 3.7.15's verdicts on `buffering` retry expressions
/// (`docs/traefik-behaviour/breaker_oracle.py --buffering`): `json-string<TAB>ok-or-error`.
const RETRY_CORPUS: &str = include_str!("../../../docs/traefik-behaviour/buffer_retry_corpus.tsv");

fn retry_corpus() -> Vec<(String, String)> {
    RETRY_CORPUS
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (input, verdict) = l.split_once('\t').unwrap();
            (serde_json::from_str(input).unwrap(), verdict.to_owned())
        })
        .collect()
}

#[test]
fn retry_corpus_matches_traefik() {
    let rows = retry_corpus();
    assert!(rows.len() >= 300);
    let mut failures = Vec::new();
    for (input, want) in &rows {
        // Traefik parses only a non-empty expression; an empty one means no retries.
        if input.is_empty() {
            assert_eq!(want, "ok");
            continue;
        }
        let got = match parse_retry(input) {
            Ok(_) => "ok".to_owned(),
            Err(e) => e.message,
        };
        if got != *want {
            failures.push(format!(
                "{}\n  traefik: {want}\n  ours:    {got}",
                short(input)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn retry_conditions_mean_what_traefik_does() {
    use bridge_plan::{RetryCondition as R, RetryCounter as C};
    let count = |counter, op, value| R::Count { counter, op, value };
    let both = |a, b| R::And(Box::new(a), Box::new(b));
    let either = |a, b| R::Or(Box::new(a), Box::new(b));
    let cases = [
        (
            "IsNetworkError() && Attempts() <= 2",
            both(R::NetworkError, count(C::Attempts, Le, 2)),
        ),
        (
            r#"RequestMethod() == "P\x4fST" && ResponseCode() >= 500"#,
            both(
                R::Method {
                    equal: true,
                    method: "POST".into(),
                },
                count(C::ResponseCode, Ge, 500),
            ),
        ),
        // A raw string keeps its backslash: it never matches POST.
        (
            r"RequestMethod() != `P\x4fST`",
            R::Method {
                equal: false,
                method: r"P\x4fST".into(),
            },
        ),
        (
            r#"RequestMethod() == "\u0050OST" || RequestMethod() == "\120UT""#,
            either(
                R::Method {
                    equal: true,
                    method: "POST".into(),
                },
                R::Method {
                    equal: true,
                    method: "PUT".into(),
                },
            ),
        ),
        // Leading zeros are decimal to Go's strconv.Atoi.
        ("ResponseCode() == 0502", count(C::ResponseCode, Eq, 502)),
        (
            "(ResponseCode() == 502 || ResponseCode() != 504) && Attempts() < 4",
            both(
                either(
                    count(C::ResponseCode, Eq, 502),
                    count(C::ResponseCode, Ne, 504),
                ),
                count(C::Attempts, Lt, 4),
            ),
        ),
        ("Attempts() > 1", count(C::Attempts, Gt, 1)),
    ];
    for (input, want) in cases {
        assert_eq!(parse_retry(input), Ok(want), "{input}");
    }
}

#[test]
fn retry_errors_point_at_the_offending_part() {
    let cases: [(&str, &str, usize); 4] = [
        ("ResponseCode() == \"502\"", "expected int, got string", 18),
        ("502 == ResponseCode()", "unsupported argument: int", 0),
        (
            "IsNetworkError() && Attempts()",
            "reflect: cannot use buffer.toInt as type buffer.hpredicate in Call",
            20,
        ),
        (
            "Attempts(1) <= 2",
            "reflect: Call with too many input arguments",
            9,
        ),
    ];
    for (input, message, offset) in cases {
        let e = parse_retry(input).unwrap_err();
        assert_eq!(
            (e.message.as_str(), e.offset),
            (message, Some(offset)),
            "{input}"
        );
    }
}
