//! Cross-reference and value checks on the typed model (after the schema has passed).
//!
//! This is where Traefik's runtime errors (`the service "x@file" does not exist`, `recursion
//! detected`, `error while parsing rule`) become located diagnostics before anything runs, plus the
//! checks Traefik never makes (files that must exist, password hash kinds, URLs, addresses).
//! References are global across the dynamic files, as in Traefik's file provider: every name is
//! looked up in the one index, [`Symbols`], built before the checks run.
//!
//! One checker, `Ctx`, spread over one `impl` block per file: this file holds the context, its
//! location and reporting helpers, the duplicate names and the reference checks (`entity_ref`,
//! `tls_option_ref`, cycles); `static_config`, `routers`, `services`, `middlewares` (with `traffic` for
//! the traffic-shaping kinds, `compress` and `forward_auth`), `tls` and `bridge` check one part of the configuration each, and `values` has the value parsers they and
//! `crate::resolve` share.

use std::collections::{BTreeMap, BTreeSet};

use crate::diag::{Code, Diagnostic, did_you_mean};
use crate::loaded::{EntityRef, Loaded, Section, Symbols};
use crate::source::{SourceMap, Span};

mod acme;
mod bridge;
mod buffering;
mod circuit_breaker;
mod compress;
mod forward_auth;
mod middlewares;
mod routers;
mod services;
mod static_config;
mod tls;
mod traffic;
mod values;

pub use middlewares::{HashKind, check_htpasswd_line, hash_kind};
pub use values::{check_server_url, parse_address, parse_ip_or_cidr, parse_status_range};

/// Names Traefik provides itself under `@internal`.
pub const INTERNAL_SERVICES: &[&str] = &["api", "dashboard", "ping", "prometheus", "noop", "rest"];
/// Internal middlewares Traefik defines.
pub const INTERNAL_MIDDLEWARES: &[&str] = &["dashboard_redirect", "dashboard_stripprefix"];

struct Ctx<'a> {
    loaded: &'a Loaded,
    /// The names defined in `loaded`.
    symbols: &'a Symbols,
    sources: &'a SourceMap,
    diags: &'a mut Vec<Diagnostic>,
}

/// Runs every semantic check; `symbols` is the index of `loaded` ([`Symbols::build`]).
pub fn check(loaded: &Loaded, symbols: &Symbols, sources: &SourceMap, diags: &mut Vec<Diagnostic>) {
    let mut ctx = Ctx {
        loaded,
        symbols,
        sources,
        diags,
    };
    ctx.duplicates();
    ctx.check_static();
    ctx.check_routers();
    ctx.check_http3();
    ctx.check_services();
    ctx.check_middlewares();
    ctx.check_tls();
    ctx.check_resolvers();
    ctx.check_transports();
    ctx.check_bridge();
}

impl<'a> Ctx<'a> {
    fn span(&self, file: usize, pointer: &str) -> Option<Span> {
        self.loaded
            .dynamic
            .get(file)
            .and_then(|f| f.canon.value_span(pointer))
    }

    fn key_span(&self, file: usize, pointer: &str) -> Option<Span> {
        self.loaded
            .dynamic
            .get(file)
            .and_then(|f| f.canon.key_span(pointer))
    }

    fn static_span(&self, pointer: &str) -> Option<Span> {
        self.loaded.static_canon.value_span(pointer)
    }

    fn err(
        &mut self,
        code: Code,
        msg: String,
        span: Option<Span>,
        pointer: String,
    ) -> &mut Diagnostic {
        self.diags
            .push(Diagnostic::error(code, msg).at(span).pointer(pointer));
        let last = self.diags.len() - 1;
        &mut self.diags[last]
    }

    fn warn(
        &mut self,
        code: Code,
        msg: String,
        span: Option<Span>,
        pointer: String,
    ) -> &mut Diagnostic {
        self.diags
            .push(Diagnostic::warning(code, msg).at(span).pointer(pointer));
        let last = self.diags.len() - 1;
        &mut self.diags[last]
    }

    fn file_name(&self, file: usize) -> String {
        self.loaded
            .dynamic
            .get(file)
            .and_then(|f| self.sources.get(f.file))
            .map(|f| f.name.clone())
            .unwrap_or_default()
    }

    fn position(&self, span: Option<Span>) -> String {
        span.and_then(|s| self.sources.get(s.file).map(|f| (f, s)))
            .map(|(f, s)| {
                let (l, c) = f.line_col(s.start);
                format!("{}:{l}:{c}", f.name)
            })
            .unwrap_or_default()
    }

    /// A name defined twice is an error (Traefik keeps the first definition).
    fn duplicates(&mut self) {
        let symbols = self.symbols;
        for d in &symbols.duplicates {
            let first_at = self.position(self.key_span(d.first.file, &d.first.pointer));
            let span = self.key_span(d.at.file, &d.at.pointer);
            self.err(
                Code::DuplicateName,
                format!(
                    "{} `{}` is already defined in {}",
                    d.section.noun(),
                    d.name,
                    self.file_name(d.first.file)
                ),
                span,
                d.at.pointer.clone(),
            )
            .hint = Some(format!(
                "Traefik keeps the first definition ({first_at}) and drops this one; rename or remove one of them"
            ));
        }
    }

    // ---- references -----------------------------------------------------------------------------

    fn ref_span(&self, file: Option<usize>, pointer: &str) -> Option<Span> {
        match file {
            Some(fi) => self.span(fi, pointer),
            None => self.static_span(pointer),
        }
    }

    /// A reference to a service or middleware: `@internal` ones must be Traefik's, file ones
    /// defined (or broken, already reported), other providers are not supported.
    fn entity_ref(&mut self, section: Section, name: &str, file: Option<usize>, pointer: &str) {
        let r = EntityRef::parse(name);
        let noun = section.noun();
        let span = self.ref_span(file, pointer);
        let internal = match section {
            Section::Services => INTERNAL_SERVICES,
            _ => INTERNAL_MIDDLEWARES,
        };
        match r.provider {
            Some("internal") => {
                if !internal.contains(&r.name) {
                    let message = match section {
                        Section::Services => format!(
                            "service `{name}` does not exist; internal services are {}",
                            INTERNAL_SERVICES
                                .iter()
                                .map(|s| format!("{s}@internal"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                        _ => format!("{noun} `{name}` does not exist"),
                    };
                    self.err(Code::UndefinedReference, message, span, pointer.into());
                }
            }
            Some("file") | None => {
                let table = self.symbols.table(section);
                if !table.contains_key(r.name) && !self.symbols.is_broken(section, r.name) {
                    let hint = did_you_mean(r.name, table.keys().map(String::as_str))
                        .map(|s| format!("did you mean `{s}`?"));
                    self.err(
                        Code::UndefinedReference,
                        format!("{noun} `{name}` is not defined"),
                        span,
                        pointer.into(),
                    )
                    .hint = hint;
                }
            }
            Some(p) => {
                let only = match section {
                    Section::Services => " (only `file` and `internal`)",
                    _ => "",
                };
                self.err(Code::Unsupported, format!("{noun} `{name}` comes from provider `{p}`, which is valid Traefik, but not supported by bridgectl{only}"), span, pointer.into());
            }
        }
    }

    fn tls_option_ref(&mut self, name: &str, file: Option<usize>, pointer: &str) {
        let n = EntityRef::parse(name).name;
        if n == "default" || self.symbols.tls_options.contains(n) {
            return;
        }
        let span = self.ref_span(file, pointer);
        let hint = did_you_mean(n, self.symbols.tls_options.iter().map(String::as_str))
            .map(|s| format!("did you mean `{s}`?"));
        self.err(
            Code::UndefinedReference,
            format!("TLS options `{name}` are not defined under tls.options"),
            span,
            pointer.into(),
        )
        .hint = hint;
    }
}

/// A cycle reachable from `start` that returns to `start`, as a list of names ending with `start`.
fn find_cycle(start: &str, graph: &BTreeMap<String, Vec<(String, String)>>) -> Option<Vec<String>> {
    let mut stack: Vec<(String, usize)> = vec![(start.to_owned(), 0)];
    let mut on_path: Vec<String> = vec![start.to_owned()];
    let mut visited: BTreeSet<String> = BTreeSet::new();
    while let Some((node, idx)) = stack.pop() {
        let children = graph.get(&node).map(Vec::as_slice).unwrap_or(&[]);
        if let Some((child, _)) = children.get(idx) {
            stack.push((node.clone(), idx + 1));
            let child = EntityRef::parse(child).name.to_owned();
            if child == start {
                let mut c = on_path.clone();
                c.push(start.to_owned());
                return Some(c);
            }
            if visited.insert(child.clone()) && graph.contains_key(&child) {
                on_path.push(child.clone());
                stack.push((child, 0));
            }
        } else {
            on_path.pop();
        }
    }
    None
}

fn canonical_cycle(cycle: &[String]) -> Vec<String> {
    let mut v: Vec<String> = cycle[..cycle.len().saturating_sub(1)].to_vec();
    v.sort();
    v
}

/// The pointer of the edge leaving the first node of a cycle.
fn cycle_pointer(graph: &BTreeMap<String, Vec<(String, String)>>, cycle: &[String]) -> String {
    let (from, to) = (&cycle[0], cycle.get(1).cloned().unwrap_or_default());
    graph
        .get(from)
        .and_then(|edges| edges.iter().find(|(c, _)| EntityRef::parse(c).name == to))
        .map(|(_, p)| p.clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles() {
        let mut g: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        g.insert("a".into(), vec![("b".into(), "/pa".into())]);
        g.insert("b".into(), vec![("a@file".into(), "/pb".into())]);
        g.insert("c".into(), vec![("a".into(), "/pc".into())]);
        assert_eq!(
            find_cycle("a", &g),
            Some(vec!["a".into(), "b".into(), "a".into()])
        );
        assert_eq!(find_cycle("c", &g), None);
    }
}
