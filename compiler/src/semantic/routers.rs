//! Routers: rules (parsed with `crate::rule`, errors located inside the rule string), priorities,
//! service and middleware references, entry points, router TLS.

use std::collections::{BTreeMap, BTreeSet};

use crate::diag::{Code, did_you_mean};
use crate::loaded::{EntityRef, Found, Section};
use crate::model::dynamic::Router;
use crate::rule::{RuleSyntax, parse_rule};
use crate::source::Span;

use super::Ctx;

/// A TLS router on one entry point: its name, options, hosts, and where its options are written
/// (pointer, file).
type TlsRouter<'n> = (&'n str, String, Vec<String>, String, usize);

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
        for def in &routers {
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
            // Service (a parent router has none: its children are checked below).
            if !r.service.is_empty() {
                self.entity_ref(
                    Section::Services,
                    &r.service,
                    Some(fi),
                    &format!("{base}/service"),
                );
            }
            for (i, m) in r.middlewares.iter().flatten().enumerate() {
                self.entity_ref(
                    Section::Middlewares,
                    m,
                    Some(fi),
                    &format!("{base}/middlewares/{i}"),
                );
            }
            // Entry points (a child router has none: it is reached through its parents).
            if have_static && r.parent_refs.is_none() {
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
            } else if r.parent_refs.is_none() {
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
        self.check_router_tree(&routers);
        self.check_tls_options_by_sni(&routers);
    }

    /// On an entry point whose TLS routers use several TLS option sets, a handshake gets the
    /// options of the router whose `Host` its server name (SNI) names, the `default` options for
    /// any other name. As Traefik resolves it, a router that cannot be chosen that way — no
    /// host in its rule but other options than `default`, or a host other routers with other
    /// options name too — gets the `default` options: each is warned about, where its options
    /// are written.
    fn check_tls_options_by_sni(&mut self, routers: &[Found<'a, Router>]) {
        let default_syntax = self.default_syntax();
        let static_eps = self.loaded.static_cfg.entry_points.as_ref();
        let ep_options = |ep: &str| -> Option<String> {
            let t = static_eps?.get(ep)?.http.as_ref()?.tls.as_ref()?;
            Some(t.options.clone().unwrap_or_else(|| "default".into()))
        };
        let mut by_ep: BTreeMap<String, Vec<TlsRouter<'_>>> = BTreeMap::new();
        for def in routers {
            let r = def.value;
            if r.parent_refs.is_some() {
                continue;
            }
            let on = r
                .entry_points
                .clone()
                .unwrap_or_else(|| self.default_entry_points());
            let syntax = RuleSyntax::from_router(r.rule_syntax.as_deref(), default_syntax);
            let Ok(rule) = parse_rule(&r.rule, syntax) else {
                continue;
            };
            let hosts = crate::acme::rule_hosts(&rule);
            for ep in on {
                let (options, at) = match &r.tls {
                    Some(t) => (
                        t.options.clone().unwrap_or_else(|| "default".into()),
                        if t.options.is_some() {
                            format!("{}/tls/options", def.pointer)
                        } else {
                            format!("{}/tls", def.pointer)
                        },
                    ),
                    None => match ep_options(&ep) {
                        Some(o) => (o, format!("{}/rule", def.pointer)),
                        None => continue,
                    },
                };
                let options = options
                    .strip_suffix("@file")
                    .map_or(options.clone(), str::to_owned);
                by_ep
                    .entry(ep)
                    .or_default()
                    .push((def.name, options, hosts.clone(), at, def.file));
            }
        }
        for (ep, list) in by_ep {
            let distinct: BTreeSet<String> = list
                .iter()
                .map(|(_, o, ..)| o.clone())
                .chain(ep_options(&ep))
                .collect();
            if distinct.len() < 2 {
                continue;
            }
            let mut per_host: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
            for (_, o, hosts, ..) in &list {
                for h in hosts {
                    per_host.entry(h.as_str()).or_default().insert(o.as_str());
                }
            }
            let mut found = Vec::new();
            for (name, o, hosts, at, file) in &list {
                if o == "default" {
                    continue;
                }
                let why = if hosts.is_empty() {
                    Some("its rule names no host, and TLS options are chosen by the name a client asks for (SNI)".to_owned())
                } else {
                    hosts.iter().find_map(|h| {
                        let set = per_host.get(h.as_str())?;
                        (set.len() > 1).then(|| {
                            format!(
                                "host `{h}` is named by routers with different TLS options ({})",
                                set.iter()
                                    .map(|s| format!("`{s}`"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                        })
                    })
                };
                if let Some(why) = why {
                    found.push((format!("router `{name}` gets the `default` TLS options on entry point `{ep}`, not `{o}`: {why} (as in Traefik)"), at.clone(), *file));
                }
            }
            for (msg, at, file) in found {
                let span = self.span(file, &at);
                self.warn(Code::InvalidValue, msg, span, at).hint = Some(
                    "give the router a `Host` rule of its own, or the same TLS options as the other routers of its hosts".into(),
                );
            }
        }
    }

    /// Traefik's router tree (`parentRefs`, v3.6; its `ParseRouterTree`): every parent exists in
    /// the file provider, a child router has no `entryPoints`, `tls` or `observability` of its
    /// own, a parent has no service, every router has a service or children, and no router is
    /// its own ancestor. Traefik disables such routers at run time (and only warns of a cycle,
    /// dropping one link); here each is an error, located.
    fn check_router_tree(&mut self, routers: &[Found<'a, Router>]) {
        let table = self.symbols.table(Section::Routers);
        let mut children: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for def in routers {
            let (name, r, fi) = (def.name, def.value, def.file);
            let base = def.pointer;
            let Some(parents) = &r.parent_refs else {
                continue;
            };
            for (i, written) in parents.iter().enumerate() {
                let p = format!("{base}/parentRefs/{i}");
                let span = self.span(fi, &p);
                let parent = EntityRef::parse(written);
                match parent.provider {
                    None | Some("file") if table.contains_key(parent.name) => {
                        children.entry(parent.name).or_default().push(name);
                    }
                    None | Some("file") => {
                        if !self.symbols.is_broken(Section::Routers, parent.name) {
                            let hint = did_you_mean(parent.name, table.keys().map(String::as_str))
                                .map(|s| format!("did you mean `{s}`?"));
                            self.err(
                                Code::UndefinedReference,
                                format!(
                                    "router `{name}`: parent router `{written}` is not defined"
                                ),
                                span,
                                p,
                            )
                            .hint = hint;
                        }
                    }
                    Some(other) => {
                        self.err(
                            Code::Unsupported,
                            format!("router `{name}`: parent router `{written}` comes from provider `{other}`, which is valid Traefik, but not supported by bridgectl (only `file`)"),
                            span,
                            p,
                        );
                    }
                }
            }
            for (key, set, why) in [
                ("entryPoints", r.entry_points.is_some(), "Entrypoints"),
                ("tls", r.tls.is_some(), "TLS"),
                ("observability", r.observability.is_some(), "Observability"),
            ] {
                if set {
                    let p = format!("{base}/{key}");
                    let span = self.key_span(fi, &p);
                    self.err(
                        Code::InvalidValue,
                        format!("router `{name}`: non-root router cannot have {why} configuration (it has `parentRefs`)"),
                        span,
                        p,
                    )
                    .hint = Some(format!("remove `{key}`: a child router is served where its parents are, as they are"));
                }
            }
        }
        for def in routers {
            let (name, r, fi) = (def.name, def.value, def.file);
            let base = def.pointer;
            let has_children = children.contains_key(name);
            if has_children && !r.service.is_empty() {
                let p = format!("{base}/service");
                let span = self.span(fi, &p);
                let kids = children
                    .get(name)
                    .map(|k| k.join("`, `"))
                    .unwrap_or_default();
                self.err(
                    Code::InvalidValue,
                    format!("router `{name}` has both a service and is referenced as a parent by other routers (`{kids}`)"),
                    span,
                    p,
                )
                .hint = Some("a parent router hands requests to its children: remove its `service`".into());
            } else if !has_children && r.service.is_empty() {
                let span = self.key_span(fi, base);
                self.err(
                    Code::MissingKey,
                    format!("router `{name}` has no service and no child routers"),
                    span,
                    base.to_owned(),
                )
                .hint = Some(
                    "add `service: <name>`, or name this router in another router's `parentRefs`"
                        .into(),
                );
            }
        }
        // Cycles: each reported once, at the link that closes it from its smallest member.
        let mut reported: BTreeSet<Vec<&str>> = BTreeSet::new();
        for start in children.keys().copied() {
            let Some(cycle) = router_cycle(start, &children) else {
                continue;
            };
            let mut members: Vec<&str> = cycle[..cycle.len() - 1].to_vec();
            members.sort_unstable();
            if members.first() != Some(&start) || !reported.insert(members) {
                continue;
            }
            // The link closing the cycle: the last router names `start` among its parents.
            let Some(last) = cycle.get(cycle.len().saturating_sub(2)).copied() else {
                continue;
            };
            let Some(def) = routers.iter().find(|d| d.name == last) else {
                continue;
            };
            let i = def
                .value
                .parent_refs
                .iter()
                .flatten()
                .position(|p| EntityRef::parse(p).name == start)
                .unwrap_or(0);
            let p = format!("{}/parentRefs/{i}", def.pointer);
            let span = self.span(def.file, &p);
            self.err(
                Code::ReferenceCycle,
                format!(
                    "cyclic reference detected in router tree: {}",
                    cycle.join(" -> ")
                ),
                span,
                p,
            )
            .hint = Some(
                "Traefik drops this link and serves the rest; bridgectl refuses the loop".into(),
            );
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

/// A path of parent-to-child links from `start` back to `start` (`start` first and last), if
/// `start` is its own ancestor.
fn router_cycle<'n>(
    start: &'n str,
    children: &BTreeMap<&'n str, Vec<&'n str>>,
) -> Option<Vec<&'n str>> {
    let mut path = vec![start];
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    fn walk<'n>(
        at: &'n str,
        start: &'n str,
        children: &BTreeMap<&'n str, Vec<&'n str>>,
        path: &mut Vec<&'n str>,
        seen: &mut BTreeSet<&'n str>,
    ) -> bool {
        for &c in children.get(at).into_iter().flatten() {
            if c == start {
                path.push(c);
                return true;
            }
            if seen.insert(c) {
                path.push(c);
                if walk(c, start, children, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    walk(start, start, children, &mut path, &mut seen).then_some(path)
}
