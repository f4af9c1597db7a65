//! The `bridge:` section (bridgectl's extensions to Traefik's configuration): per-service
//! health-check settings and the file-wide defaults.

use std::collections::BTreeMap;

use crate::canon::escape;
use crate::diag::{Code, did_you_mean};
use crate::loaded::Section;
use crate::model::dynamic::Service;

use super::Ctx;

impl Ctx<'_> {
    /// The `bridge:` section: at most one file sets the defaults, each named service exists (in
    /// some file) and is a load balancer with a health check, durations are not negative.
    pub(super) fn check_bridge(&mut self) {
        let mut defaults_at: Option<usize> = None;
        let mut named: BTreeMap<String, usize> = BTreeMap::new();
        for (fi, f) in self.loaded.dynamic.iter().enumerate() {
            let Some(b) = &f.model.bridge else { continue };
            if let Some(hc) = &b.health_check {
                if let Some(first) = defaults_at {
                    let span = self.key_span(fi, "/bridge/healthCheck");
                    let other = self.file_name(first);
                    self.err(
                        Code::DuplicateName,
                        format!("`bridge.healthCheck` is also set in {other}; set the defaults in one file"),
                        span,
                        "/bridge/healthCheck".into(),
                    );
                } else {
                    defaults_at = Some(fi);
                }
                self.check_bridge_durations(fi, "/bridge/healthCheck", "bridge.healthCheck", hc);
            }
            for (name, hc) in b.services.iter().flatten() {
                let p = format!("/bridge/services/{}", escape(name));
                let span = self.key_span(fi, &p);
                if let Some(first) = named.get(name) {
                    let other = self.file_name(*first);
                    self.err(
                        Code::DuplicateName,
                        format!("`bridge.services.{name}` is also set in {other}"),
                        span,
                        p.clone(),
                    );
                } else {
                    named.insert(name.clone(), fi);
                }
                match self
                    .symbols
                    .get::<Service>(self.loaded, name)
                    .map(|d| d.value)
                {
                    None if self.symbols.is_broken(Section::Services, name) => {}
                    None => {
                        let hint =
                            did_you_mean(name, self.symbols.services.keys().map(String::as_str))
                                .map(|s| format!("did you mean `{s}`?"));
                        self.err(
                            Code::UndefinedReference,
                            format!("`bridge.services.{name}`: service `{name}` is not defined"),
                            span,
                            p.clone(),
                        )
                        .hint = hint;
                    }
                    Some(s)
                        if s.load_balancer
                            .as_ref()
                            .is_none_or(|l| l.health_check.is_none()) =>
                    {
                        self.err(
                            Code::InvalidValue,
                            format!("`bridge.services.{name}`: service `{name}` is not a load balancer with a health check, so these settings would have no effect"),
                            span,
                            p.clone(),
                        );
                    }
                    Some(_) => {}
                }
                self.check_bridge_durations(fi, &p, &format!("bridge.services.{name}"), hc);
            }
        }
    }

    fn check_bridge_durations(
        &mut self,
        fi: usize,
        p: &str,
        label: &str,
        hc: &crate::model::dynamic::BridgeHealthCheck,
    ) {
        for (field, v) in [
            ("downReprobeInterval", hc.down_reprobe_interval),
            ("hold", hc.hold),
            ("tunnelGrace", hc.tunnel_grace),
        ] {
            if let Some(d) = v
                && d.nanos < 0
            {
                let ptr = format!("{p}/{field}");
                let span = self.span(fi, &ptr);
                self.err(
                    Code::InvalidDuration,
                    format!("`{label}.{field}` must not be negative"),
                    span,
                    ptr,
                );
            }
        }
        if let Some(d) = hc.hold
            && d.nanos > 60_000_000_000
        {
            let ptr = format!("{p}/hold");
            let span = self.span(fi, &ptr);
            self.err(
                Code::InvalidDuration,
                format!("`{label}.hold` is longer than 60s, longer than most clients wait; use at most 60s"),
                span,
                ptr,
            );
        }
        if let Some(d) = hc.tunnel_grace
            && d.nanos > 60_000_000_000
        {
            let ptr = format!("{p}/tunnelGrace");
            let span = self.span(fi, &ptr);
            self.err(
                Code::InvalidDuration,
                format!("`{label}.tunnelGrace` is longer than 60s: clients would stay on a server that is down; use at most 60s"),
                span,
                ptr,
            );
        }
        if hc.close_tunnels_on_down == Some(false)
            && let Some(d) = hc.tunnel_grace
        {
            let _ = d;
            let ptr = format!("{p}/tunnelGrace");
            let span = self.key_span(fi, &ptr);
            self.warn(
                Code::Ignored,
                format!("`{label}.tunnelGrace` has no effect with `closeTunnelsOnDown: false`"),
                span,
                ptr,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::check::{CheckOptions, check};
    use crate::diag::Code;

    /// A service cut for an invalid value is reported once, where the value is wrong: the
    /// `bridge:` entry naming it gets no second "is not defined" error.
    #[test]
    fn bridge_settings_of_a_broken_service_add_no_undefined_reference() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("traefik.yml"),
            "entryPoints:\n  web:\n    address: \":80\"\nproviders:\n  file:\n    filename: /etc/traefik/dynamic.yml\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("dynamic.yml"),
            "http:\n  routers:\n    r:\n      rule: \"PathPrefix(`/`)\"\n      service: s\n  services:\n    s: 5\nbridge:\n  services:\n    s:\n      hold: 2s\n",
        )
        .unwrap();
        let report = check(&CheckOptions {
            dir: dir.path().to_path_buf(),
            ..Default::default()
        })
        .unwrap();
        let undefined: Vec<_> = report
            .diagnostics
            .iter()
            .filter(|d| d.code == Code::UndefinedReference)
            .map(|d| d.message.clone())
            .collect();
        assert!(undefined.is_empty(), "{undefined:?}");
        assert!(!report.ok(), "the broken service itself is reported");
    }
}
