//! circuitBreaker expression parser (`bridgectl::breaker_expr::parse`), and the same parser in
//! `buffering`'s dialect (`parse_retry`).
//!
//! Input: the expression text (UTF-8; other inputs are skipped, as an expression only ever
//! reaches the parser as a YAML string).
//!
//! Beyond "never panics", this checks what the module documents:
//! - an error's offset, when it has one, is inside the text on a character boundary (the
//!   diagnostic points at it);
//! - a parsed condition, printed as the plan's `Display` prints it, parses back to the same
//!   condition (`bridgectl explain` shows conditions that way, and they must mean what was
//!   written);
//! - the retry dialect never panics either, and its error offsets hold to the same rule.
#![no_main]

use bridgectl::breaker_expr::{parse, parse_retry};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(e) = parse_retry(text)
        && let Some(at) = e.offset
    {
        assert!(
            at <= text.len() && text.is_char_boundary(at),
            "{text:?}: retry error offset {at} is outside the text or splits a character: {e:?}"
        );
    }
    match parse(text) {
        Ok(condition) => {
            let printed = condition.to_string();
            match parse(&printed) {
                Ok(again) => assert_eq!(
                    again, condition,
                    "{text:?} printed as {printed:?} parses back differently"
                ),
                Err(e) => panic!("{text:?} printed as {printed:?} does not parse: {e:?}"),
            }
        }
        Err(e) => {
            if let Some(at) = e.offset {
                assert!(
                    at <= text.len() && text.is_char_boundary(at),
                    "{text:?}: error offset {at} is outside the text or splits a character: {e:?}"
                );
            }
        }
    }
});
