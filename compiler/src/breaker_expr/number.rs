//! Go's `strconv.Atoi` and `strconv.ParseFloat` for the literals the walker converts, with
//! their error texts and Go's rounding (hex floats and subnormals included).

/// Why `strconv` rejected a literal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NumError {
    Syntax,
    Range,
}

impl NumError {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            NumError::Syntax => "invalid syntax",
            NumError::Range => "value out of range",
        }
    }
}

/// Go's `strconv.Atoi` on a 64-bit platform: decimal digits only, no `_`, no prefix.
pub(super) fn go_atoi(s: &str) -> Result<i64, NumError> {
    if s.is_empty() {
        return Err(NumError::Syntax);
    }
    if s.len() < 19 {
        // fast path: cannot overflow
        let mut n: i64 = 0;
        for b in s.bytes() {
            if !b.is_ascii_digit() {
                return Err(NumError::Syntax);
            }
            n = n * 10 + i64::from(b - b'0');
        }
        return Ok(n);
    }
    // ParseUint semantics: the checks run per character, so an overflow found before a
    // bad character is reported as a range error.
    const CUTOFF: u64 = u64::MAX / 10 + 1;
    let mut n: u64 = 0;
    for b in s.bytes() {
        if !b.is_ascii_digit() {
            return Err(NumError::Syntax);
        }
        if n >= CUTOFF {
            return Err(NumError::Range);
        }
        n *= 10;
        n = n.checked_add(u64::from(b - b'0')).ok_or(NumError::Range)?;
    }
    i64::try_from(n).map_err(|_| NumError::Range)
}

/// Go's `underscoreOK`: `_` only between digits (a base prefix counts as a digit).
pub(super) fn underscore_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let mut saw = b'^';
    let mut i = 0;
    let mut hex = false;
    if b.first() == Some(&b'0')
        && let Some(&p) = b.get(1)
        && matches!(p | 0x20, b'b' | b'o' | b'x')
    {
        i = 2;
        saw = b'0';
        hex = p | 0x20 == b'x';
    }
    while let Some(&c) = b.get(i) {
        i += 1;
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw = b'0';
            continue;
        }
        if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
            continue;
        }
        if saw == b'_' {
            return false;
        }
        saw = b'!';
    }
    saw != b'_'
}

/// Reads Go's decimal exponent digits, capping like `readFloat` (`if e < 10000`).
pub(super) fn go_exponent(s: &str) -> Result<i64, NumError> {
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'+') => (false, s.get(1..).unwrap_or("")),
        Some(b'-') => (true, s.get(1..).unwrap_or("")),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(NumError::Syntax);
    }
    let mut e: i64 = 0;
    for b in digits.bytes() {
        if e < 10000 {
            e = e * 10 + i64::from(b - b'0');
        }
    }
    Ok(if neg { -e } else { e })
}

/// Go's `strconv.ParseFloat(s, 64)` for an unsigned Go FLOAT literal.
/// Correctly rounded like Go; overflow is a range error, underflow gives 0.
pub(super) fn go_parse_float(lit: &str) -> Result<f64, NumError> {
    if lit.contains('_') && !underscore_ok(lit) {
        return Err(NumError::Syntax);
    }
    let s: String = lit.chars().filter(|&c| c != '_').collect();
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => parse_hex_float(hex)?,
        None => parse_dec_float(&s)?,
    };
    if v.is_finite() {
        Ok(v)
    } else {
        Err(NumError::Range)
    }
}

pub(super) fn parse_dec_float(s: &str) -> Result<f64, NumError> {
    let (mant, exp) = match s.find(['e', 'E']) {
        Some(i) => (s.get(..i).unwrap_or(""), Some(s.get(i + 1..).unwrap_or(""))),
        None => (s, None),
    };
    let mut digits = String::with_capacity(mant.len());
    let mut frac_len: i64 = 0;
    let mut saw_dot = false;
    for c in mant.chars() {
        match c {
            '.' if !saw_dot => saw_dot = true,
            '0'..='9' => {
                digits.push(c);
                if saw_dot {
                    frac_len += 1;
                }
            }
            _ => return Err(NumError::Syntax),
        }
    }
    if digits.is_empty() {
        return Err(NumError::Syntax);
    }
    let e = exp.map_or(Ok(0), go_exponent)?;
    let parse = |text: String| text.parse::<f64>().map_err(|_| NumError::Syntax);
    // Rust's parser is correctly rounded like Go's; only the exponent cap differs, so
    // hand it an already-capped exponent.
    let value = parse(format!("{digits}e{}", e - frac_len))?;

    // Go quirk: when its fast paths (exact arithmetic, Eisel-Lemire) give up, Go falls
    // back to a decimal of at most 800 digits whose decimal point is placed after at
    // most 800 digits, so a literal with more than 800 significant integer digits is
    // scaled down by 10^(digits - 800). Eisel-Lemire gives up for decimal exponents
    // outside [-348, 347] and for results that are not normal floats.
    let significant = digits.trim_start_matches('0');
    let int_digits = i64::try_from(significant.len()).unwrap_or(i64::MAX) - frac_len;
    if int_digits > 800 {
        let exp10 = int_digits + e - 19;
        if !(-348..=347).contains(&exp10) || !value.is_normal() {
            return parse(format!("0.{significant}e{}", 800 + e));
        }
    }
    Ok(value)
}

pub(super) fn parse_hex_float(s: &str) -> Result<f64, NumError> {
    let (mant, exp) = match s.find(['p', 'P']) {
        Some(i) => (s.get(..i).unwrap_or(""), s.get(i + 1..).unwrap_or("")),
        None => return Err(NumError::Syntax), // hex floats need a 'p' exponent
    };
    // Like Go's readFloat: keep the first 16 significant hex digits, remember whether a
    // non-zero digit was dropped, and track the binary point.
    let mut mantissa: u64 = 0;
    let (mut nd, mut nd_mant, mut dp): (i64, i64, i64) = (0, 0, 0);
    let (mut saw_dot, mut saw_digits, mut trunc) = (false, false, false);
    for c in mant.chars() {
        if c == '.' {
            if saw_dot {
                return Err(NumError::Syntax);
            }
            saw_dot = true;
            dp = nd;
            continue;
        }
        let d = c.to_digit(16).ok_or(NumError::Syntax)?;
        saw_digits = true;
        if d == 0 && nd == 0 {
            dp -= 1; // leading zero
            continue;
        }
        nd += 1;
        if nd_mant < 16 {
            mantissa = mantissa * 16 + u64::from(d);
            nd_mant += 1;
        } else if d != 0 {
            trunc = true;
        }
    }
    if !saw_digits {
        return Err(NumError::Syntax);
    }
    if !saw_dot {
        dp = nd;
    }
    let exp2 = dp * 4 + go_exponent(exp)? - nd_mant * 4;
    round_binary(mantissa, exp2, trunc)
}

/// Rounds `mantissa * 2^exp2` (plus a sticky "more non-zero bits" flag) to the nearest
/// f64, ties to even, with subnormals; overflow is a range error.
pub(super) fn round_binary(mantissa: u64, exp2: i64, sticky: bool) -> Result<f64, NumError> {
    if mantissa == 0 {
        return Ok(0.0);
    }
    let bitlen = i64::from(64 - mantissa.leading_zeros());
    let msb = exp2 + bitlen - 1;
    // exponent of the last bit kept: 53 significant bits, or fewer for subnormals
    let mut lsb = (msb - 52).max(-1074);
    let shift = lsb - exp2;
    let mut q: u64 = if shift <= 0 {
        // exact; shift < 53 because the result has at most 53 bits
        mantissa << (-shift).clamp(0, 63)
    } else {
        let m = u128::from(mantissa);
        let shift = u32::try_from(shift.min(127)).unwrap_or(127);
        let q0 = m >> shift;
        let guard = (m >> (shift - 1)) & 1 == 1;
        let below = m & ((1u128 << (shift - 1)) - 1) != 0 || sticky;
        let up = guard && (below || q0 & 1 == 1);
        u64::try_from(q0 + u128::from(up)).unwrap_or(u64::MAX)
    };
    if q == 1 << 53 {
        q >>= 1;
        lsb += 1;
    }
    let bits = if q >= 1 << 52 {
        let biased = lsb + 1075;
        if biased >= 2047 {
            return Err(NumError::Range);
        }
        (u64::try_from(biased).unwrap_or(0) << 52) | (q & ((1 << 52) - 1))
    } else {
        q // subnormal: the value is q * 2^-1074
    };
    Ok(f64::from_bits(bits))
}
