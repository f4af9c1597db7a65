//! Router rule parser (`bridgectl::rule::parse_rule`), both syntaxes.
//!
//! Input: the first byte picks the syntax (odd: v3, even: v2, so seed files read `3Host(...)` and
//! `2Host(...)`), the rest is the rule text (UTF-8; other inputs are skipped, as a rule only ever
//! reaches the parser as a YAML string).
//!
//! Beyond "never panics", this checks what the module documents:
//! - every error points at a byte range inside the rule, on character boundaries, and a failed parse
//!   reports at least one error (the diagnostics underline these spans);
//! - a parsed tree, rendered with `to_rule_string`, parses back under v3 to the same tree
//!   (`bridgectl explain` and the plan show rules rendered that way).
#![no_main]

use bridgectl::rule::{RuleSyntax, default_priority, parse_rule, to_rule_string};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let syntax = if selector & 1 == 1 {
        RuleSyntax::V3
    } else {
        RuleSyntax::V2
    };
    let _ = default_priority(text);
    match parse_rule(text, syntax) {
        Ok(tree) => {
            let rendered = to_rule_string(&tree);
            match parse_rule(&rendered, RuleSyntax::V3) {
                Ok(again) => assert_eq!(
                    again, tree,
                    "{syntax:?} rule {text:?} rendered as {rendered:?} parses back differently"
                ),
                Err(errors) => panic!(
                    "{syntax:?} rule {text:?} rendered as {rendered:?} does not parse under v3: {errors:?}"
                ),
            }
        }
        Err(errors) => {
            assert!(
                !errors.is_empty(),
                "{syntax:?} rule {text:?}: failed without an error"
            );
            for e in &errors {
                let end = e.offset.checked_add(e.len);
                assert!(
                    end.is_some_and(|end| end <= text.len()
                        && text.is_char_boundary(e.offset)
                        && text.is_char_boundary(end)),
                    "{syntax:?} rule {text:?}: error span {}+{} is outside the rule or splits a character: {e:?}",
                    e.offset,
                    e.len
                );
            }
        }
    }
});
