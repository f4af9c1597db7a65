//! Go's `net/http` cookie parsing and printing, byte for byte, for the forwardAuth rewrite.
//!
//! When an auth server's 2xx answer carries cookies, Traefik re-reads the upstream answer's
//! `Set-Cookie` lines with Go's `Response.Cookies()` (one `ParseSetCookie` per line, lines that
//! fail dropped without a word) and writes each survivor back with `(*Cookie).String()`. That
//! round trip normalises spelling and order and forgets every attribute Go does not model, so
//! the proxy has to repeat it exactly: [`parse_set_cookie_bytes`] is Go's parser (Go 1.23+ semantics,
//! `Quoted` and `Partitioned` included), [`Cookie::to_header_value`] is Go's printer.
//!
//! `Expires` goes through Go's `time.Parse` with the two layouts Go tries (`Mon, 02 Jan 2006
//! 15:04:05 MST`, then `Mon, 02-Jan-2006 15:04:05 MST`), reimplemented here on std only. Zone
//! abbreviations are taken as Go takes them in a process whose local zone is UTC (Traefik's
//! images, unless `TZ` says otherwise): any abbreviation Go accepts, `PST` or `GMT+5` as well,
//! leaves the wall clock as the UTC instant.
//!
//! Not done here: Go's `readSetCookies` returns no cookie at all when a response has more than
//! 3000 `Set-Cookie` lines (the `httpcookiemaxnum` GODEBUG default); the caller, which sees
//! every line, applies that. `Max-Age` is read as Go's 64-bit `int`.

#![forbid(unsafe_code)]

/// Go's `SameSite` field: zero when the attribute is absent, `DefaultMode` when its value is
/// none of the three known ones. Neither is written back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SameSite {
    /// No `SameSite` attribute was read.
    Unspecified,
    /// A `SameSite` attribute whose value is not `lax`, `strict` or `none`.
    Default,
    Lax,
    Strict,
    None,
}

/// An `Expires` instant as Go's parser accepted it, in UTC, to the second (Go keeps fractions
/// but `http.TimeFormat` never prints them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Expires {
    /// 0 to 9999: `time.Parse` takes exactly four digits.
    pub(crate) year: i32,
    /// 1 to 12.
    pub(crate) month: u8,
    /// 1 to the month's length.
    pub(crate) day: u8,
    pub(crate) hour: u8,
    pub(crate) minute: u8,
    pub(crate) second: u8,
}

/// One cookie as Go's `http.Cookie` holds it after `ParseSetCookie`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cookie {
    pub(crate) name: String,
    /// Without the surrounding double quotes, if there were some.
    pub(crate) value: String,
    /// The value was written between double quotes; Go 1.23+ writes it back quoted.
    pub(crate) quoted: bool,
    /// Empty when absent (Go cannot tell `Path=` from no path either).
    pub(crate) path: String,
    /// As written, leading dot included; checked only when printed.
    pub(crate) domain: String,
    /// `None` when absent or when the last `Expires` did not parse (Go resets it to zero).
    pub(crate) expires: Option<Expires>,
    /// The last `Expires` value as written, parsed or not.
    pub(crate) raw_expires: String,
    /// Go's `MaxAge`: 0 none, negative "delete now" (always -1 from the parser), else seconds.
    pub(crate) max_age: i64,
    pub(crate) secure: bool,
    pub(crate) http_only: bool,
    pub(crate) same_site: SameSite,
    pub(crate) partitioned: bool,
    /// Attributes Go kept as raw text (unknown ones, bad values); never written back.
    pub(crate) unparsed: Vec<String>,
}

/// Go's `ParseSetCookie` for one `Set-Cookie` value; `None` where Go returns an error (and
/// `Response.Cookies()` drops the line). The tables' entry; the proxy reads raw values.
#[cfg(test)]
pub(crate) fn parse_set_cookie(line: &str) -> Option<Cookie> {
    parse_set_cookie_bytes(line.as_bytes())
}

/// Go's `ParseSetCookie` for a raw field value: Go reads header values as bytes, so a line with
/// obs-text in an attribute it ignores still yields its cookie, where `HeaderValue::to_str`
/// would refuse the whole line.
pub(crate) fn parse_set_cookie_bytes(line: &[u8]) -> Option<Cookie> {
    let line = trim(line);
    let mut parts = line.split(|&b| b == b';');
    let first = trim(parts.next().unwrap_or_default());
    let eq = first.iter().position(|&b| b == b'=')?;
    // Go 1.23+ trims around the name too, so `a =1` is cookie `a`.
    let name = trim(&first[..eq]);
    if !is_token(name) {
        return None;
    }
    let (value, quoted) = parse_value(&first[eq + 1..], true)?;
    let mut c = Cookie {
        name: ascii_string(name),
        value: ascii_string(value),
        quoted,
        path: String::new(),
        domain: String::new(),
        expires: None,
        raw_expires: String::new(),
        max_age: 0,
        secure: false,
        http_only: false,
        same_site: SameSite::Unspecified,
        partitioned: false,
        unparsed: Vec::new(),
    };
    for part in parts {
        let part = trim(part);
        if part.is_empty() {
            continue;
        }
        let (attr, raw_val) = match part.iter().position(|&b| b == b'=') {
            Some(i) => (&part[..i], &part[i + 1..]),
            None => (part, &b""[..]),
        };
        // Go skips an attribute whose name is not printable ASCII, without even keeping it.
        if !attr.iter().all(|b| (b' '..=b'~').contains(b)) {
            continue;
        }
        let keep = String::from_utf8_lossy(part).into_owned();
        let Some((val, _)) = parse_value(raw_val, false) else {
            c.unparsed.push(keep);
            continue;
        };
        match attr.to_ascii_lowercase().as_slice() {
            b"samesite" => {
                c.same_site = match val.to_ascii_lowercase().as_slice() {
                    b"lax" => SameSite::Lax,
                    b"strict" => SameSite::Strict,
                    b"none" => SameSite::None,
                    _ => SameSite::Default,
                };
            }
            b"secure" => c.secure = true,
            b"httponly" => c.http_only = true,
            b"domain" => c.domain = ascii_string(val),
            b"max-age" => match go_atoi(val) {
                // A leading zero on a non-zero count makes Go ignore the attribute, keeping an
                // earlier Max-Age; `+07` and `-07` pass since their first byte is the sign.
                Some(secs) if secs == 0 || val.first() != Some(&b'0') => {
                    c.max_age = if secs <= 0 { -1 } else { secs };
                }
                _ => c.unparsed.push(keep),
            },
            b"expires" => {
                c.raw_expires = ascii_string(val);
                c.expires = parse_expires(val);
                if c.expires.is_none() {
                    c.unparsed.push(keep);
                }
            }
            b"path" => c.path = ascii_string(val),
            b"partitioned" => c.partitioned = true,
            _ => c.unparsed.push(keep),
        }
    }
    Some(c)
}

impl Cookie {
    /// Go's `(*Cookie).String()`: what Traefik writes back as the `Set-Cookie` value. Empty for
    /// a name Go would refuse (never the case for a parsed cookie).
    pub(crate) fn to_header_value(&self) -> String {
        if !is_token(self.name.as_bytes()) {
            return String::new();
        }
        let mut b = String::with_capacity(self.name.len() + self.value.len() + 110);
        b.push_str(&self.name);
        b.push('=');
        let value = keep_bytes(&self.value, valid_value_byte);
        // Go quotes an empty value never, and any other when it has a space or a comma or was
        // read quoted.
        if !value.is_empty() && (self.quoted || value.contains([' ', ','])) {
            b.push('"');
            b.push_str(&value);
            b.push('"');
        } else {
            b.push_str(&value);
        }
        if !self.path.is_empty() {
            b.push_str("; Path=");
            b.push_str(&keep_bytes(&self.path, valid_path_byte));
        }
        // An invalid domain is dropped (Go logs it), leaving a host-only cookie.
        if valid_cookie_domain(self.domain.as_bytes()) {
            b.push_str("; Domain=");
            b.push_str(self.domain.strip_prefix('.').unwrap_or(&self.domain));
        }
        // RFC 6265 5.1.1: Go never writes a year before 1601 (its zero time is year 1).
        if let Some(e) = self.expires.filter(|e| e.year >= 1601) {
            b.push_str("; Expires=");
            b.push_str(&e.http_date());
        }
        if self.max_age > 0 {
            b.push_str("; Max-Age=");
            b.push_str(&self.max_age.to_string());
        } else if self.max_age < 0 {
            b.push_str("; Max-Age=0");
        }
        if self.http_only {
            b.push_str("; HttpOnly");
        }
        if self.secure {
            b.push_str("; Secure");
        }
        match self.same_site {
            SameSite::Unspecified | SameSite::Default => {}
            SameSite::None => b.push_str("; SameSite=None"),
            SameSite::Lax => b.push_str("; SameSite=Lax"),
            SameSite::Strict => b.push_str("; SameSite=Strict"),
        }
        if self.partitioned {
            b.push_str("; Partitioned");
        }
        b
    }
}

/// Go's `textproto.TrimString`: ASCII space, tab, CR and LF only (not Unicode spaces).
fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t' | b'\r' | b'\n', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t' | b'\r' | b'\n'] = s {
        s = rest;
    }
    s
}

/// Only called on bytes already checked to be printable ASCII.
fn ascii_string(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// An RFC 7230 token, as Go checks a cookie name (`isToken`).
fn is_token(s: &[u8]) -> bool {
    !s.is_empty()
        && s.iter()
            .all(|&b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Go's `validCookieValueByte`: looser than RFC 6265, as space and comma are common in values.
fn valid_value_byte(b: u8) -> bool {
    (0x20..0x7f).contains(&b) && b != b'"' && b != b';' && b != b'\\'
}

/// Go's `validCookiePathByte`.
fn valid_path_byte(b: u8) -> bool {
    (0x20..0x7f).contains(&b) && b != b';'
}

/// Go's `parseCookieValue`: the cookie's own value may sit in one pair of double quotes (then
/// `quoted`), an attribute's may not; every byte left must be a valid value byte.
fn parse_value(raw: &[u8], allow_quotes: bool) -> Option<(&[u8], bool)> {
    let (inner, quoted) = match raw {
        [b'"', inner @ .., b'"'] if allow_quotes => (inner, true),
        _ => (raw, false),
    };
    inner
        .iter()
        .all(|&b| valid_value_byte(b))
        .then_some((inner, quoted))
}

/// Go's `sanitizeOrWarn`: drops the bytes `valid` refuses (Go logs that it did).
fn keep_bytes(s: &str, valid: fn(u8) -> bool) -> String {
    if s.bytes().all(valid) {
        return s.to_owned();
    }
    ascii_string(&s.bytes().filter(|&b| valid(b)).collect::<Vec<u8>>())
}

/// Go's `strconv.Atoi` on a 64-bit platform: optional sign, at least one digit, nothing else,
/// within `i64`.
fn go_atoi(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut n: u64 = 0;
    for &d in digits {
        n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    if neg {
        0i64.checked_sub_unsigned(n)
    } else {
        i64::try_from(n).ok()
    }
}

/// Go's `validCookieDomain`: a cookie domain name, or an IPv4 address.
fn valid_cookie_domain(v: &[u8]) -> bool {
    is_cookie_domain_name(v) || is_ipv4(v)
}

/// Go's `isCookieDomainName`: a DNS name (letters, digits, inner dashes, labels of 1 to 63
/// bytes, at least one letter somewhere, 255 bytes at most) with an optional leading dot. No
/// underscore, and a trailing dot is accepted, as in Go.
fn is_cookie_domain_name(s: &[u8]) -> bool {
    if s.is_empty() || s.len() > 255 {
        return false;
    }
    let s = s.strip_prefix(b".").unwrap_or(s);
    let mut last = b'.';
    let mut letter = false;
    let mut label = 0usize;
    for &c in s {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {
                letter = true;
                label += 1;
            }
            b'0'..=b'9' => label += 1,
            b'-' => {
                if last == b'.' {
                    return false;
                }
                label += 1;
            }
            b'.' => {
                if last == b'.' || last == b'-' || label == 0 || label > 63 {
                    return false;
                }
                label = 0;
            }
            _ => return false,
        }
        last = c;
    }
    last != b'-' && label <= 63 && letter
}

/// Go's `net.ParseIP` for a string without `:`: four decimal octets up to 255, no leading
/// zeros, nothing else.
fn is_ipv4(s: &[u8]) -> bool {
    let mut fields = 0;
    for field in s.split(|&b| b == b'.') {
        fields += 1;
        let ok = match field {
            [] => false,
            [b'0'] => true,
            [b'0', ..] => false,
            _ => {
                field.len() <= 3
                    && field.iter().all(u8::is_ascii_digit)
                    && field
                        .iter()
                        .fold(0u32, |n, &d| n * 10 + u32::from(d - b'0'))
                        <= 255
            }
        };
        if !ok || fields > 4 {
            return false;
        }
    }
    fields == 4
}

const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// What Go's cookie parser does with `Expires`: `time.RFC1123`, then the Netscape variant with
/// dashes in the date.
fn parse_expires(v: &[u8]) -> Option<Expires> {
    go_time_parse(v, b' ').or_else(|| go_time_parse(v, b'-'))
}

/// Go's `time.Parse` for `Mon, 02<sep>Jan<sep>2006 15:04:05 MST`, with its leniencies: names in
/// any case, the weekday checked for spelling only, a layout space matching any run of spaces,
/// a one-digit hour, a fraction after the seconds, any zone abbreviation shape Go accepts.
fn go_time_parse(v: &[u8], sep: u8) -> Option<Expires> {
    let v = lookup(v, &DAYS)?.1;
    let v = skip(v, b", ")?;
    let (day, v) = getnum(v, true)?;
    let v = skip(v, &[sep])?;
    let (month, v) = lookup(v, &MONTHS)?;
    let v = skip(v, &[sep])?;
    let (year, v) = match v {
        [a, b, c, d, rest @ ..] if [a, b, c, d].iter().all(|x| x.is_ascii_digit()) => {
            let y = [a, b, c, d]
                .iter()
                .fold(0i32, |n, &&x| n * 10 + i32::from(x - b'0'));
            (y, rest)
        }
        _ => return None,
    };
    let v = skip(v, b" ")?;
    let (hour, v) = getnum(v, false)?;
    let v = skip(v, b":")?;
    let (minute, v) = getnum(v, true)?;
    let v = skip(v, b":")?;
    let (second, mut v) = getnum(v, true)?;
    if hour >= 24 || minute >= 60 || second >= 60 {
        return None;
    }
    // Go takes `.123` or `,123` after the seconds even when the layout has no fraction.
    if let [b'.' | b',', d, ..] = v
        && d.is_ascii_digit()
    {
        let n = 1 + v[1..].iter().take_while(|b| b.is_ascii_digit()).count();
        v = &v[n..];
    }
    let v = skip(v, b" ")?;
    let zone = if v.starts_with(b"UTC") {
        3
    } else {
        time_zone_len(v)?
    };
    if v.len() != zone {
        return None;
    }
    let month = month + 1;
    if day == 0 || day > days_in_month(month, year) {
        return None;
    }
    Some(Expires {
        year,
        month,
        day,
        hour,
        minute,
        second,
    })
}

/// Go's `lookup`: a table entry as a prefix, ASCII letters compared in any case.
fn lookup<'a>(v: &'a [u8], table: &[&str]) -> Option<(u8, &'a [u8])> {
    let head = v.get(..3)?;
    let i = table
        .iter()
        .position(|name| head.eq_ignore_ascii_case(name.as_bytes()))?;
    Some((u8::try_from(i).ok()?, &v[3..]))
}

/// Go's `skip`: layout text must match exactly, except that a space in the layout matches any
/// run of spaces, or the end of the value.
fn skip<'a>(mut v: &'a [u8], mut prefix: &[u8]) -> Option<&'a [u8]> {
    while let Some(&p) = prefix.first() {
        if p == b' ' {
            if v.first().is_some_and(|&b| b != b' ') {
                return None;
            }
            prefix = strip_spaces(prefix);
            v = strip_spaces(v);
            continue;
        }
        if v.first() != Some(&p) {
            return None;
        }
        prefix = &prefix[1..];
        v = &v[1..];
    }
    Some(v)
}

fn strip_spaces(mut s: &[u8]) -> &[u8] {
    while let [b' ', rest @ ..] = s {
        s = rest;
    }
    s
}

/// Go's `getnum`: one or two digits, exactly two when `fixed`.
fn getnum(v: &[u8], fixed: bool) -> Option<(u8, &[u8])> {
    match v {
        [a, b, rest @ ..] if a.is_ascii_digit() && b.is_ascii_digit() => {
            Some(((a - b'0') * 10 + (b - b'0'), rest))
        }
        [a, rest @ ..] if a.is_ascii_digit() && !fixed => Some((a - b'0', rest)),
        _ => None,
    }
}

/// Go's `parseTimeZone` (with the `UTC` case left to the caller): how many bytes of `v` Go
/// takes as a zone abbreviation, if any.
fn time_zone_len(v: &[u8]) -> Option<usize> {
    if v.len() < 3 {
        return None;
    }
    if v.starts_with(b"ChST") || v.starts_with(b"MeST") {
        return Some(4);
    }
    if let Some(rest) = v.strip_prefix(b"GMT") {
        // A bad offset is not a refusal here: it is left over and fails as extra text.
        return Some(3 + signed_offset_len(rest));
    }
    if v[0] == b'+' || v[0] == b'-' {
        return Some(signed_offset_len(v)).filter(|&n| n > 0);
    }
    let upper = v
        .iter()
        .take(6)
        .take_while(|b| b.is_ascii_uppercase())
        .count();
    match upper {
        3 => Some(3),
        4 if v[3] == b'T' || v.starts_with(b"WITA") => Some(4),
        5 if v[4] == b'T' => Some(5),
        _ => None,
    }
}

/// Go's `parseSignedOffset`: a sign and a whole number of hours up to 23; its length, or 0.
fn signed_offset_len(v: &[u8]) -> usize {
    let Some((b'+' | b'-', rest)) = v.split_first() else {
        return 0;
    };
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return 0;
    }
    // Go accumulates in a u64 and gives up on overflow; only "fits and is at most 23" matters.
    let mut x: u64 = 0;
    for &d in &rest[..digits] {
        match x
            .checked_mul(10)
            .and_then(|x| x.checked_add(u64::from(d - b'0')))
        {
            Some(n) => x = n,
            None => return 0,
        }
    }
    if x > 23 { 0 } else { 1 + digits }
}

fn is_leap(year: i32) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(month: u8, year: i32) -> u8 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i32, month: u8, day: u8) -> i64 {
    let y = i64::from(year) - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(month) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

impl Expires {
    /// Go's `http.TimeFormat` (`Mon, 02 Jan 2006 15:04:05 GMT`), the weekday recomputed from
    /// the date, as Go never keeps the parsed one.
    fn http_date(self) -> String {
        // 1970-01-01 was a Thursday.
        let weekday = (days_from_civil(self.year, self.month, self.day) + 4).rem_euclid(7);
        let day_name = usize::try_from(weekday).ok().and_then(|i| DAYS.get(i));
        let month_name = usize::from(self.month)
            .checked_sub(1)
            .and_then(|i| MONTHS.get(i));
        format!(
            "{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT",
            day_name.unwrap_or(&"???"),
            self.day,
            month_name.unwrap_or(&"???"),
            self.year,
            self.hour,
            self.minute,
            self.second
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each line against what Go answers: `None` where `Response.Cookies()` drops the line,
    /// else `String()` of the cookie. Every row was checked against Go: Go 1.19's own
    /// `net/http`, and a port of master's `ParseSetCookie`/`String` run on it (its `time.Parse`
    /// and `net.ParseIP` behave as master's for these inputs); the rows marked Go 1.23+ are
    /// where the two differ (name trimming, `Quoted`, `Partitioned`) and follow master. Local
    /// zone UTC, as in Traefik's images.
    fn check(cases: &[(&str, Option<&str>)]) {
        for &(line, want) in cases {
            let got = parse_set_cookie(line).map(|c| c.to_header_value());
            assert_eq!(got.as_deref(), want, "{line:?}");
        }
    }

    #[test]
    fn values_names_and_blank_lines() {
        check(&[
            (
                "Keep=1; path=/; secure; samesite=lax; max-age=60",
                Some("Keep=1; Path=/; Max-Age=60; Secure; SameSite=Lax"),
            ),
            ("a=\"quoted\"", Some("a=\"quoted\"")), // Go 1.23+
            ("a=\"with space\"", Some("a=\"with space\"")),
            ("a=with space", Some("a=\"with space\"")),
            ("a=with,comma", Some("a=\"with,comma\"")),
            ("a=\"\"", Some("a=")),
            ("a=\"", None),
            ("a=\"x", None),
            ("a=x\"", None),
            ("a=\"\"x\"\"", None),
            ("a=\"a\\\"b\"", None),
            ("a=\"x\"; Path=/", Some("a=\"x\"; Path=/")), // Go 1.23+
            ("a=", Some("a=")),
            ("a=; Path=/", Some("a=; Path=/")),
            ("a=b=c", Some("a=b=c")),
            ("a==", Some("a==")),
            ("=x", None),
            ("a b=1", None),
            ("a;b=1", None),
            ("a(b)=1", None),
            ("\u{e4}=1", None),
            ("a,b=1", None),
            ("a =1", Some("a=1")),         // Go 1.23+
            (" a = 1 ", Some("a=\" 1\"")), // Go 1.23+
            ("a\t=1", Some("a=1")),        // Go 1.23+
            ("\u{a0}a=1", None),
            ("a'b=1", Some("a'b=1")),
            ("a.b-c_d~e=1", Some("a.b-c_d~e=1")),
            ("a@b=1", None),
            ("a=b\\c", None),
            ("a=b;c", Some("a=b")),
            ("a=\u{e9}", None),
            ("a=x\x7f", None),
            ("a=tab\there", None),
            ("a=x\x01", None),
            ("novalue", None),
            ("", None),
            ("   ", None),
            (";", None),
            ("; a=1", None),
            ("a=1;;; Secure", Some("a=1; Secure")),
            ("\t a=1 \r\n", Some("a=1")),
        ]);
    }

    #[test]
    fn max_age() {
        check(&[
            ("a=1; Max-Age=0", Some("a=1; Max-Age=0")),
            ("a=1; Max-Age=-1", Some("a=1; Max-Age=0")),
            ("a=1; Max-Age=007", Some("a=1")),
            ("a=1; Max-Age=abc", Some("a=1")),
            ("a=1; Max-Age=+60", Some("a=1; Max-Age=60")),
            ("a=1; Max-Age=-007", Some("a=1; Max-Age=0")),
            ("a=1; Max-Age=00", Some("a=1; Max-Age=0")),
            ("a=1; Max-Age=+0", Some("a=1; Max-Age=0")),
            ("a=1; Max-Age=", Some("a=1")),
            ("a=1; Max-Age", Some("a=1")),
            (
                "a=1; Max-Age=9223372036854775807",
                Some("a=1; Max-Age=9223372036854775807"),
            ),
            ("a=1; Max-Age=9223372036854775808", Some("a=1")),
            ("a=1; Max-Age=-9223372036854775808", Some("a=1; Max-Age=0")),
            ("a=1; Max-Age=-9223372036854775809", Some("a=1")),
            ("a=1; Max-Age= 60", Some("a=1")),
            ("a=1; Max-Age=60; Max-Age=abc", Some("a=1; Max-Age=60")),
            ("a=1; Max-Age=60; Max-Age=0", Some("a=1; Max-Age=0")),
            ("a=1; Max-Age=1_000", Some("a=1")),
            ("a=1; Max-Age=60s", Some("a=1")),
            ("a=1; Max-Age=+", Some("a=1")),
            ("a=1; Max-Age=-", Some("a=1")),
            ("a=1; Max-Age=+07", Some("a=1; Max-Age=7")),
            ("a=1; max-age=60; Max-Age=007", Some("a=1; Max-Age=60")),
        ]);
    }

    #[test]
    fn expires() {
        check(&[
            (
                "a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT",
                Some("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT"),
            ),
            (
                "a=1; expires=Wed, 21-Oct-2015 07:28:00 GMT",
                Some("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT"),
            ),
            (
                "a=1; expires=wED, 21 oCT 2015 07:28:00 GMT",
                Some("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT"),
            ),
            (
                "a=1; Expires=Thu, 21 Oct 2015 07:28:00 GMT",
                Some("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT"),
            ),
            (
                "a=1; Expires=Wed, 21 Oct 2015 07:28:00 PST",
                Some("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT"),
            ),
            (
                "a=1; Expires=Wed, 21 Oct 2015 07:28:00 UTC",
                Some("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT"),
            ),
            (
                "a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT+2",
                Some("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT"),
            ),
            (
                "a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT-23",
                Some("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT"),
            ),
            ("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT+24", Some("a=1")),
            (
                "a=1; Expires=Wed, 21 Oct 2015 07:28:00 +03",
                Some("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT"),
            ),
            ("a=1; Expires=Wed, 21 Oct 2015 07:28:00 -0100", Some("a=1")),
            (
                "a=1; Expires=Wed, 21 Oct 2015 07:28:00 CEST",
                Some("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT"),
            ),
            (
                "a=1; Expires=Wed, 21 Oct 2015 07:28:00 WITA",
                Some("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT"),
            ),
            (
                "a=1; Expires=Wed, 21 Oct 2015 07:28:00 ChST",
                Some("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT"),
            ),
            ("a=1; Expires=Wed, 21 Oct 2015 07:28:00 EDT5", Some("a=1")),
            ("a=1; Expires=Wed, 21 Oct 2015 07:28:00 gmt", Some("a=1")),
            ("a=1; Expires=Wed, 21 Oct 2015 07:28:00 Z", Some("a=1")),
            ("a=1; Expires=Wed, 21 Oct 2015 07:28:00 UTCX", Some("a=1")),
            ("a=1; Expires=Wed, 21 Oct 2015 07:28:00 ABCDEF", Some("a=1")),
            (
                "a=1; Expires=Wed, 21 Oct 2015 07:28:00 ABCDT",
                Some("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT"),
            ),
            ("a=1; Expires=Wed, 21 Oct 2015 07:28:00 ABCD", Some("a=1")),
            ("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMTX", Some("a=1")),
            ("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT+", Some("a=1")),
            ("a=1; Expires=Wed, 21 Oct 2015 07:28:00 +3", Some("a=1")),
            ("a=1; Expires=Wed, 21 Oct 2015 07:28:00 +24", Some("a=1")),
            (
                "a=1; Expires=Wed, 21 Oct 2015 07:28:00 MeST",
                Some("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT"),
            ),
            (
                "a=1; Expires=Wed, 21 Oct 2015 7:28:00 GMT",
                Some("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT"),
            ),
            ("a=1; Expires=Wed, 1 Oct 2015 07:28:00 GMT", Some("a=1")),
            (
                "a=1; Expires=Wed,  21  Oct  2015   07:28:00   GMT",
                Some("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT"),
            ),
            ("a=1; Expires=Wed,21 Oct 2015 07:28:00 GMT", Some("a=1")),
            ("a=1; Expires=Wed, 21 Oct 15 07:28:00 GMT", Some("a=1")),
            ("a=1; Expires=Sun, 29 Feb 2015 00:00:00 GMT", Some("a=1")),
            (
                "a=1; Expires=Mon, 29 Feb 2016 00:00:00 GMT",
                Some("a=1; Expires=Mon, 29 Feb 2016 00:00:00 GMT"),
            ),
            (
                "a=1; Expires=Mon, 29 Feb 2000 00:00:00 GMT",
                Some("a=1; Expires=Tue, 29 Feb 2000 00:00:00 GMT"),
            ),
            ("a=1; Expires=Mon, 29 Feb 1900 00:00:00 GMT", Some("a=1")),
            ("a=1; Expires=Mon, 31 Apr 2016 00:00:00 GMT", Some("a=1")),
            ("a=1; Expires=Mon, 00 Apr 2016 00:00:00 GMT", Some("a=1")),
            (
                "a=1; Expires=Mon, 01 Jan 1601 00:00:00 GMT",
                Some("a=1; Expires=Mon, 01 Jan 1601 00:00:00 GMT"),
            ),
            ("a=1; Expires=Sun, 31 Dec 1600 23:59:59 GMT", Some("a=1")),
            ("a=1; Expires=Sat, 01 Jan 0000 00:00:00 GMT", Some("a=1")),
            (
                "a=1; Expires=Fri, 31 Dec 9999 23:59:59 GMT",
                Some("a=1; Expires=Fri, 31 Dec 9999 23:59:59 GMT"),
            ),
            (
                "a=1; Expires=Thu, 01 Jan 1970 00:00:00 GMT",
                Some("a=1; Expires=Thu, 01 Jan 1970 00:00:00 GMT"),
            ),
            (
                "a=1; Expires=Tue, 19 Jan 2038 03:14:08 GMT",
                Some("a=1; Expires=Tue, 19 Jan 2038 03:14:08 GMT"),
            ),
            (
                "a=1; Expires=Sat, 01 Mar 2400 00:00:00 GMT",
                Some("a=1; Expires=Wed, 01 Mar 2400 00:00:00 GMT"),
            ),
            (
                "a=1; Expires=Wed, 21 Oct 2015 07:28:00.123 GMT",
                Some("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT"),
            ),
            (
                "a=1; Expires=Wed, 21 Oct 2015 07:28:00,5 GMT",
                Some("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT"),
            ),
            (
                "a=1; Expires=Wed, 21 Oct 2015 07:28:00.1234567890123 GMT",
                Some("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT"),
            ),
            ("a=1; Expires=Wed, 21 Oct 2015 07:28:00. GMT", Some("a=1")),
            ("a=1; Expires=Wed, 21 Oct 2015 07:28:60 GMT", Some("a=1")),
            ("a=1; Expires=Wed, 21 Oct 2015 24:00:00 GMT", Some("a=1")),
            ("a=1; Expires=Wed, 21 Oct 2015 07:60:00 GMT", Some("a=1")),
            ("a=1; Expires=Wed, 21 Oct 2015 07:2:00 GMT", Some("a=1")),
            ("a=1; Expires=Wed, 21 Oct 2015 007:28:00 GMT", Some("a=1")),
            (
                "a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT; Expires=junk",
                Some("a=1"),
            ),
            (
                "a=1; Expires=junk; Expires=Wed, 21 Oct 2015 07:28:00 GMT",
                Some("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT"),
            ),
            (
                "a=1; Expires=Wednesday, 21 Oct 2015 07:28:00 GMT",
                Some("a=1"),
            ),
            ("a=1; Expires=Wed, 21 Oct 2015 07:28:00", Some("a=1")),
            (
                "a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT extra",
                Some("a=1"),
            ),
            ("a=1; Expires=Wed, 21 Oct 2015 07:28:00 ", Some("a=1")),
            (
                "a=1; Expires=Wed, 21 - Oct - 2015 07:28:00 GMT",
                Some("a=1"),
            ),
            ("a=1; Expires=Wed, 21-Oct 2015 07:28:00 GMT", Some("a=1")),
            ("a=1; Expires=Wed, 21 Oct-2015 07:28:00 GMT", Some("a=1")),
            ("a=1; Expires=Xyz, 21 Oct 2015 07:28:00 GMT", Some("a=1")),
            ("a=1; Expires=Wed, 21 Okt 2015 07:28:00 GMT", Some("a=1")),
            ("a=1; Expires=Wed, 21 Oct 2O15 07:28:00 GMT", Some("a=1")),
            ("a=1; Expires=", Some("a=1")),
            ("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT+2x", Some("a=1")),
            ("a=1; Expires=Wed,21-Oct-2015 07:28:00 GMT", Some("a=1")),
            (
                "a=1; Expires=Wed,   21-Oct-2015 07:28:00 GMT",
                Some("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT"),
            ),
        ]);
    }

    #[test]
    fn domain() {
        check(&[
            ("a=1; Domain=.example.com", Some("a=1; Domain=example.com")),
            ("a=1; Domain=example.com", Some("a=1; Domain=example.com")),
            ("a=1; Domain=EXAMPLE.com", Some("a=1; Domain=EXAMPLE.com")),
            ("a=1; Domain=1.2.3.4", Some("a=1; Domain=1.2.3.4")),
            ("a=1; Domain=.1.2.3.4", Some("a=1")),
            ("a=1; Domain=01.2.3.4", Some("a=1")),
            ("a=1; Domain=256.1.1.1", Some("a=1")),
            ("a=1; Domain=1.2.3", Some("a=1")),
            ("a=1; Domain=1.2.3.4.5", Some("a=1")),
            ("a=1; Domain=0.0.0.0", Some("a=1; Domain=0.0.0.0")),
            ("a=1; Domain=::1", Some("a=1")),
            ("a=1; Domain=[::1]", Some("a=1")),
            ("a=1; Domain=exa_mple.com", Some("a=1")),
            ("a=1; Domain=-a.com", Some("a=1")),
            ("a=1; Domain=a-.com", Some("a=1")),
            ("a=1; Domain=a..com", Some("a=1")),
            ("a=1; Domain=example.com.", Some("a=1; Domain=example.com.")),
            ("a=1; Domain=localhost", Some("a=1; Domain=localhost")),
            ("a=1; Domain=123", Some("a=1")),
            ("a=1; Domain=.", Some("a=1")),
            ("a=1; Domain=", Some("a=1")),
            ("a=1; Domain=\"x.com\"", Some("a=1")),
            ("a=1; Domain=..x.com", Some("a=1")),
            ("a=1; Domain=a-b.c0m", Some("a=1; Domain=a-b.c0m")),
            ("a=1; Domain=1.2.3.a", Some("a=1; Domain=1.2.3.a")),
            ("a=1; Domain=x.com; Domain=", Some("a=1")),
            ("a=1; Domain=1.2.3.4%eth0", Some("a=1")),
            ("a=1; Domain=1.2.3.04", Some("a=1")),
            ("a=1; Domain=a.b c", Some("a=1")),
        ]);
    }

    #[test]
    fn same_site() {
        check(&[
            ("a=1; SameSite=lax", Some("a=1; SameSite=Lax")),
            ("a=1; SameSite=Strict", Some("a=1; SameSite=Strict")),
            ("a=1; SameSite=NONE", Some("a=1; SameSite=None")),
            ("a=1; SameSite=foo", Some("a=1")),
            ("a=1; SameSite", Some("a=1")),
            ("a=1; samesite=", Some("a=1")),
            ("a=1; SameSite=Lax; SameSite=bogus", Some("a=1")),
            (
                "a=1; SameSite=bogus; SameSite=None",
                Some("a=1; SameSite=None"),
            ),
            ("a=1; SameSite= lax", Some("a=1")),
        ]);
    }

    #[test]
    fn path() {
        check(&[
            ("a=1; Path=/a\\b", Some("a=1")),
            ("a=1; Path=/\"x\"", Some("a=1")),
            ("a=1; Path=/a b", Some("a=1; Path=/a b")),
            ("a=1; Path=/x; Path=", Some("a=1")),
            ("a=1; path=/\u{e9}", Some("a=1")),
            ("a=1; path= /x", Some("a=1; Path= /x")),
            ("a=1; Path=/x; Path=/y\\z", Some("a=1; Path=/x")),
            ("a=1; Path=/a=b", Some("a=1; Path=/a=b")),
            ("a=1; Path=/a,b", Some("a=1; Path=/a,b")),
            ("a=1; Path = /x", Some("a=1")),
            ("a=1; Path=/\t/x", Some("a=1")),
        ]);
    }

    #[test]
    fn mixed_attributes() {
        check(&[
            (
                "ID=abc; DOMAIN=Example.COM; PATH=/Docs; HTTPONLY; SECURE; \
                SAMESITE=STRICT; MAX-AGE=3600; EXPIRES=Wed, 21 Oct 2015 07:28:00 GMT",
                Some(
                    "ID=abc; Path=/Docs; Domain=Example.COM; \
                    Expires=Wed, 21 Oct 2015 07:28:00 GMT; Max-Age=3600; \
                    HttpOnly; Secure; SameSite=Strict",
                ),
            ),
            ("a=1; Partitioned; Secure", Some("a=1; Secure; Partitioned")), // Go 1.23+
            ("a=1; partitioned=no", Some("a=1; Partitioned")),              // Go 1.23+
            (
                "a=1; PARTITIONED; SameSite=None; Secure; HttpOnly; Max-Age=5; \
                Expires=Wed, 21 Oct 2015 07:28:00 GMT; Domain=x.org; Path=/",
                Some(
                    "a=1; Path=/; Domain=x.org; Expires=Wed, 21 Oct 2015 07:28:00 GMT; \
                    Max-Age=5; HttpOnly; Secure; SameSite=None; Partitioned",
                ),
            ), // Go 1.23+
            ("a=1; Comment=hi; Version=1; Priority=High", Some("a=1")),
            ("a=1; max-age\t=5", Some("a=1")),
            ("a=1;\tSecure\t", Some("a=1; Secure")),
            ("a=1; Secure=false", Some("a=1; Secure")),
            ("a=1; HttpOnly=", Some("a=1; HttpOnly")),
            ("a=1; Comm\u{e9}nt=x; Secure", Some("a=1; Secure")),
            ("a=1; Comment=\u{e9}; Secure", Some("a=1; Secure")),
            ("a=1; =x", Some("a=1")),
            ("a=1; Secure ", Some("a=1; Secure")),
            ("a=1; Secure x", Some("a=1")),
            ("a=1; HttpOnly\x01", Some("a=1")),
            ("a=1; Secure=\"x\"", Some("a=1")),
            ("a=1; Max-Age=\"60\"", Some("a=1")),
        ]);
    }

    #[test]
    fn domain_length_limits() {
        let label = |n: usize| "a".repeat(n);
        let four = format!("{0}.{0}.{0}.{0}.", label(62));
        for (domain, kept) in [
            (format!("{}.com", label(63)), true),
            (format!("{}.com", label(64)), false),
            (format!("{0}.{0}.{0}.{0}.{0}.com", label(50)), false),
            (format!("{four}ccc"), true),
            (format!("{four}cccc"), false),
            (format!(".{four}cc"), true),
            (format!(".{four}ccc"), false),
        ] {
            let got =
                parse_set_cookie(&format!("a=1; Domain={domain}")).map(|c| c.to_header_value());
            let want = if kept {
                format!("a=1; Domain={}", domain.trim_start_matches('.'))
            } else {
                "a=1".to_owned()
            };
            assert_eq!(got, Some(want), "{} bytes", domain.len());
        }
    }

    #[test]
    fn parsed_fields() {
        let c = parse_set_cookie(
            "sid=\"x y\"; Path=/p; Comment=hi; Max-Age=007; Expires=Sun, 31 Dec 1600 23:59:59 \
             GMT; SameSite=bogus",
        );
        let Some(c) = c else {
            panic!("Go keeps this cookie");
        };
        assert_eq!(
            (c.name.as_str(), c.value.as_str(), c.quoted),
            ("sid", "x y", true)
        );
        assert_eq!(c.path, "/p");
        assert_eq!(c.max_age, 0);
        assert_eq!(c.unparsed, ["Comment=hi", "Max-Age=007"]);
        assert_eq!(c.raw_expires, "Sun, 31 Dec 1600 23:59:59 GMT");
        let e = Expires {
            year: 1600,
            month: 12,
            day: 31,
            hour: 23,
            minute: 59,
            second: 59,
        };
        assert_eq!(c.expires, Some(e));
        assert_eq!(c.same_site, SameSite::Default);
        // Kept, but Go prints no year before 1601 and no default SameSite.
        assert_eq!(c.to_header_value(), "sid=\"x y\"; Path=/p");

        let bad = parse_set_cookie("a=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT; Expires=junk");
        assert_eq!(
            bad.map(|c| (c.expires, c.raw_expires)),
            Some((None, "junk".to_owned()))
        );
    }

    #[test]
    fn raw_bytes_as_go_reads_them() {
        // Go keeps a cookie whose ignored parts are not ASCII, checked with Go 1.19.
        let c = parse_set_cookie_bytes(b"a=1; Comment=\xff; Secure");
        assert_eq!(
            c.as_ref().map(Cookie::to_header_value).as_deref(),
            Some("a=1; Secure")
        );
        assert_eq!(
            c.map(|c| c.unparsed),
            Some(vec!["Comment=\u{fffd}".to_owned()])
        );
        let c = parse_set_cookie_bytes(b"c=1; \xffx=1; Secure")
            .map(|c| (c.to_header_value(), c.unparsed));
        assert_eq!(c, Some(("c=1; Secure".to_owned(), Vec::new())));
        assert_eq!(parse_set_cookie_bytes(b"b=\xff"), None);
    }

    #[test]
    fn printing_sanitises_as_go_does() {
        // Cookies built by hand, printed by Go 1.19's `String()` for the expected values.
        let Some(base) = parse_set_cookie("a=x") else {
            panic!("valid cookie");
        };
        let with = |f: fn(&mut Cookie)| {
            let mut c = base.clone();
            f(&mut c);
            c.to_header_value()
        };
        assert_eq!(with(|c| c.value = "a\"b;c\\d \u{e9}".into()), "a=\"abcd \"");
        assert_eq!(with(|c| c.path = "/x;y\x01z\x7f".into()), "a=x; Path=/xyz");
        assert_eq!(with(|c| c.path = ";".into()), "a=x; Path=");
        assert_eq!(with(|c| c.domain = "bad_domain".into()), "a=x");
        assert_eq!(with(|c| c.name = "bad name".into()), "");
        assert_eq!(with(|c| c.value = ";;".into()), "a=");
        assert_eq!(with(|c| c.max_age = -5), "a=x; Max-Age=0");
        assert_eq!(with(|c| c.quoted = true), "a=\"x\"");
    }

    #[test]
    fn http_dates() {
        // Weekdays from the date alone, across leap rules and the proleptic calendar.
        for (y, m, d, want) in [
            (1601, 1, 1, "Mon, 01 Jan 1601 00:00:00 GMT"),
            (1970, 1, 1, "Thu, 01 Jan 1970 00:00:00 GMT"),
            (2000, 2, 29, "Tue, 29 Feb 2000 00:00:00 GMT"),
            (2038, 1, 19, "Tue, 19 Jan 2038 00:00:00 GMT"),
            (2400, 3, 1, "Wed, 01 Mar 2400 00:00:00 GMT"),
            (9999, 12, 31, "Fri, 31 Dec 9999 00:00:00 GMT"),
        ] {
            let e = Expires {
                year: y,
                month: m,
                day: d,
                hour: 0,
                minute: 0,
                second: 0,
            };
            assert_eq!(e.http_date(), want);
        }
    }
}
