//! Routers: rules (parsed with `crate::rule`, errors located inside the rule string), priorities,
//! service and middleware references, entry points, router TLS.

use crate::diag::{Code, did_you_mean};
use crate::loaded::{Found, Section};
use crate::model::dynamic::Router;
use crate::rule::{RuleSyntax, parse_rule};
use crate::source::Span;

use super::Ctx;

impl<'a> Ctx<'a> {
    fn default_syntax(&self) -> RuleSyntax {
        match self
            .loaded
            .static_cfg
            .core
            .as_ref()
            .and_then(|c| c.default_rule_syntax.as_deref())
        {
            Some("v2") => RuleSyntax::V2,
            _ => RuleSyntax::V3,
        }
    }

    pub(super) fn check_routers(&mut self) {
        let eps = self.entry_points();
        let have_static = self.loaded.static_file.is_some();
        let routers: Vec<Found<'a, Router>> = self.symbols.iter(self.loaded).collect();
        let default_syntax = self.default_syntax();
        for def in routers {
            let (name, r) = (def.name, def.value);
            let base = def.pointer.to_owned();
            let fi = def.file;
            // Rule.
            let syntax = RuleSyntax::from_router(r.rule_syntax.as_deref(), default_syntax);
            if r.rule.trim().is_empty() {
                let span = self.span(fi, &format!("{base}/rule"));
                self.err(
                    Code::Rule,
                    format!("router `{name}` has an empty rule"),
                    span,
                    format!("{base}/rule"),
                )
                .hint = Some("for example rule: \"PathPrefix(`/`)\"".into());
            } else if let Err(errors) = parse_rule(&r.rule, syntax) {
                let vspan = self.span(fi, &format!("{base}/rule"));
                for e in errors {
                    let span = vspan.map(|s| self.rule_span(s, &r.rule, e.offset, e.len));
                    self.err(
                        Code::Rule,
                        format!("router `{name}`: {}", e.message),
                        span,
                        format!("{base}/rule"),
                    )
                    .hint = e.hint.clone();
                }
            }
            if let Some(p) = r.priority
                && p > i64::from(i32::MAX) - 1000
            {
                let span = self.span(fi, &format!("{base}/priority"));
                self.err(Code::Priority, format!("router `{name}`: priority {p} exceeds the maximum user-defined priority {}", i64::from(i32::MAX) - 1000), span, format!("{base}/priority"))
                    .hint = Some("Traefik disables such a router; higher values are reserved for internal routers".into());
            }
            // Service.
            self.entity_ref(
                Section::Services,
                &r.service,
                Some(fi),
                &format!("{base}/service"),
            );
            for (i, m) in r.middlewares.iter().flatten().enumerate() {
                self.entity_ref(
                    Section::Middlewares,
                    m,
                    Some(fi),
                    &format!("{base}/middlewares/{i}"),
                );
            }
            // Entry points.
            if have_static {
                match &r.entry_points {
                    Some(list) => {
                        for (i, ep) in list.iter().enumerate() {
                            if !eps.contains(ep) {
                                let p = format!("{base}/entryPoints/{i}");
                                let span = self.span(fi, &p);
                                let hint = did_you_mean(ep, eps.iter().map(String::as_str))
                                    .map(|s| format!("did you mean `{s}`?"))
                                    .unwrap_or_else(|| {
                                        format!(
                                            "defined entry points: {}",
                                            eps.iter().cloned().collect::<Vec<_>>().join(", ")
                                        )
                                    });
                                self.err(Code::UndefinedReference, format!("router `{name}`: entry point `{ep}` is not defined in the static configuration"), span, p).hint = Some(hint);
                            }
                        }
                    }
                    None => {
                        let defaults = self.default_entry_points();
                        if defaults.is_empty() {
                            let span = self.key_span(fi, &base);
                            self.warn(Code::NoEntryPoint, format!("router `{name}` lists no entryPoints and no entry point is a default; it is never served"), span, base.clone())
                                .hint = Some("add `entryPoints: [web]`".into());
                        }
                    }
                }
            }
            if let Some(opt) = r.tls.as_ref().and_then(|t| t.options.as_ref()) {
                self.tls_option_ref(opt, Some(fi), &format!("{base}/tls/options"));
            }
            // Certificates from a resolver: the router's own `tls`, else its entry point's.
            if let Some(tls) = &r.tls {
                if let Some(res) = &tls.cert_resolver {
                    self.check_router_certificates(
                        name,
                        res,
                        tls.domains.as_deref(),
                        (&r.rule, syntax),
                        Some(fi),
                        &format!("{base}/tls/certResolver"),
                    );
                }
            } else {
                let on: Vec<String> = r
                    .entry_points
                    .clone()
                    .unwrap_or_else(|| self.default_entry_points());
                let inherited = on.iter().find_map(|ep| {
                    let t = self
                        .loaded
                        .static_cfg
                        .entry_points
                        .as_ref()?
                        .get(ep)?
                        .http
                        .as_ref()?
                        .tls
                        .as_ref()?;
                    Some((ep.clone(), t.cert_resolver.clone()?, t.domains.clone()))
                });
                if let Some((ep, res, domains)) = inherited {
                    let domains: Option<Vec<crate::model::dynamic::Domain>> = domains.map(|ds| {
                        ds.into_iter()
                            .map(|d| crate::model::dynamic::Domain {
                                main: d.main,
                                sans: d.sans,
                            })
                            .collect()
                    });
                    self.check_router_certificates(
                        name,
                        &res,
                        domains.as_deref(),
                        (&r.rule, syntax),
                        None,
                        &format!(
                            "/entryPoints/{}/http/tls/certResolver",
                            crate::canon::escape(&ep)
                        ),
                    );
                }
            }
        }
    }

    fn default_entry_points(&self) -> Vec<String> {
        self.loaded.default_entry_points()
    }

    /// Maps a byte range inside a rule string to the source, accounting for the opening quote.
    pub(super) fn rule_span(&self, value: Span, rule: &str, offset: usize, len: usize) -> Span {
        let text = self
            .sources
            .get(value.file)
            .map(|f| f.text.as_str())
            .unwrap_or("");
        let raw = text.get(value.start..).unwrap_or("");
        let quoted = raw.starts_with('"') || raw.starts_with('\'');
        let start = value.start + usize::from(quoted);
        // Only exact when the written form equals the value (no escapes, single line).
        if raw.get(usize::from(quoted)..usize::from(quoted) + rule.len()) == Some(rule) {
            Span::new(value.file, start + offset, start + offset + len.max(1))
        } else {
            value
        }
    }
}
