//! The TOML front end of `bridgectl check` (compiler/src/toml_doc.rs): `toml_doc::parse` on any
//! text, and the tree it gives through the stages a `.toml` file goes through next
//! (`canon::canonicalize`, `validate::validate`/`into_model`), read as a dynamic and as a static
//! configuration. The stages after those are the YAML front end's (`yaml_front_end`), which
//! covers them. Spans must lie inside the text and on character boundaries.
#![no_main]

use bridgectl::canon::canonicalize;
use bridgectl::model::dynamic::DynamicConfig;
use bridgectl::model::static_config::StaticConfig;
use bridgectl::schema::ConfigKind;
use bridgectl::source::{SourceFile, SourceMap};
use bridgectl::{toml_doc, validate, yaml};
use libfuzzer_sys::fuzz_target;

/// Every span of the tree lies inside `text` and on character boundaries.
fn spans_fit(node: &yaml::Node, text: &str) {
    let fits = |s: bridgectl::source::Span| {
        assert!(
            s.start <= s.end && s.end <= text.len(),
            "span {}..{} outside {} bytes",
            s.start,
            s.end,
            text.len()
        );
        assert!(text.is_char_boundary(s.start) && text.is_char_boundary(s.end));
    };
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        fits(n.span);
        match &n.kind {
            yaml::NodeKind::Seq(items) => stack.extend(items),
            yaml::NodeKind::Map(entries) => {
                for (k, v) in entries {
                    fits(k.span);
                    stack.push(v);
                }
            }
            _ => {}
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut sources = SourceMap::default();
    let id = sources.add(SourceFile::new(
        "dynamic.toml",
        "/etc/traefik/dynamic.toml",
        text.to_owned(),
    ));
    let node = match toml_doc::parse(id, text) {
        Ok(node) => node,
        Err(d) => {
            if let Some(s) = d.span {
                assert!(s.start <= s.end && s.end <= text.len(), "error span outside");
            }
            return;
        }
    };
    if let Some(n) = &node {
        spans_fit(n, text);
    }
    for kind in [ConfigKind::Dynamic, ConfigKind::Static] {
        let mut diags = Vec::new();
        let canon = canonicalize(node.as_ref(), kind, &mut diags);
        let broken = validate::validate(kind, &canon, &mut diags);
        match kind {
            ConfigKind::Dynamic => {
                let _: DynamicConfig = validate::into_model(&canon, &broken, &mut diags);
            }
            ConfigKind::Static => {
                let _: StaticConfig = validate::into_model(&canon, &broken, &mut diags);
            }
        }
    }
});
