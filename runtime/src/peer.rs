//! The other appliance of a pair (`--peer URL`, its `/ping`): asked every few seconds which plan it
//! serves (the `Bridge-Plan-Hash` field of its `/ping` answer), so that two appliances serving
//! different plans — one reload missed, a build not rolled out — show in the API
//! (`/api/bridge/peer`), on the dashboard, in the metrics and in the log, before a switchover makes
//! the difference matter. Watching is advisory: it never changes what this process serves or what
//! its own `/ping` answers (keepalived must not move the address because of it).

use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

/// `bridge_peer_plan{state}`: 1 for the current comparison with the peer (absent without `--peer`).
pub(crate) static PLAN: LazyLock<Family<PeerLabels, Gauge>> = LazyLock::new(Family::default);

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct PeerLabels {
    state: &'static str,
}

/// How often the peer is asked, and how long an answer may take.
const EVERY: Duration = Duration::from_secs(5);
const TIMEOUT: Duration = Duration::from_secs(2);

/// What the last look at the peer found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Seen {
    /// RFC 3339 time of the last attempt; `None` before the first.
    pub(crate) checked: Option<String>,
    /// The peer's plan hash, when it answered with one.
    pub(crate) plan_hash: Option<String>,
    /// Why the last attempt got no hash.
    pub(crate) error: Option<String>,
}

/// How this process's plan compares with the peer's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Not asked yet.
    Unknown,
    /// The peer serves this plan.
    Same,
    /// The peer serves another plan.
    Different,
    /// The peer did not answer, or not with a hash.
    Unreachable,
}

impl Verdict {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::Same => "same",
            Self::Different => "different",
            Self::Unreachable => "unreachable",
        }
    }
}

/// The peer and what was last seen of it.
#[derive(Debug)]
pub struct Peer {
    pub(crate) url: String,
    /// The URL's host as written there (`10.0.0.2`, `[fd00::2]`, a name): where challenges are relayed.
    host: Option<String>,
    seen: Mutex<Seen>,
}

/// Marks an ACME HTTP-01 request relayed by the peer: answered from what this process holds, never
/// relayed back (two appliances without the token would otherwise ask each other in a loop).
pub(crate) const RELAYED_FIELD: &str = "bridge-acme-relayed";

impl Peer {
    /// A peer whose `/ping` is at `url` (http://).
    pub fn new(url: String) -> Self {
        let host = url::Url::parse(&url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned));
        Self {
            url,
            host,
            seen: Mutex::new(Seen::default()),
        }
    }

    /// The peer's answer to an ACME HTTP-01 request this process has no token for: the CA's
    /// validation reaches only the appliance holding the virtual address, while the order may be
    /// the other one's. Asked on the same entry-point port (the pair serves one plan), with the
    /// request's `Host`; `None` unless the peer answers 200 within the timeout.
    pub(crate) async fn relay_challenge(
        &self,
        port: u16,
        path: &str,
        host: &str,
    ) -> Option<String> {
        let base = self.host.as_ref()?;
        let url = format!("http://{base}:{port}{path}");
        let host = host.to_owned();
        let answer = tokio::task::spawn_blocking(move || {
            crate::self_probe::get(
                &url,
                Some(&host),
                &format!("{RELAYED_FIELD}: 1\r\n"),
                TIMEOUT,
                4096,
            )
        })
        .await
        .ok()?
        .ok()?;
        String::from_utf8(answer.body).ok()
    }

    pub(crate) fn seen(&self) -> Seen {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    #[cfg(test)]
    fn verdict(&self, own_hash: &str) -> Verdict {
        self.seen().verdict(own_hash)
    }

    /// Records one attempt; returns the verdict when it changed (to be logged once).
    fn record(&self, seen: Seen, own_hash: &str) -> Option<Verdict> {
        let Ok(mut guard) = self.seen.lock() else {
            return None;
        };
        let before = guard.verdict(own_hash);
        let after = seen.verdict(own_hash);
        *guard = seen;
        (before != after).then_some(after)
    }

    /// Asks the peer every [`EVERY`] until `stop` turns true; `own` gives the hash this process
    /// serves now (it changes on reload).
    pub(crate) async fn watch(
        self: Arc<Self>,
        own: impl Fn() -> String,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) {
        loop {
            let url = self.url.clone();
            let answer =
                tokio::task::spawn_blocking(move || crate::self_probe::probe_head(&url, TIMEOUT))
                    .await;
            let found = match answer {
                Ok(Ok((_, Some(hash)))) => Ok(hash),
                Ok(Ok((status, None))) => Err(format!(
                    "answered {status} without a plan hash (not a bridge-runtime?)"
                )),
                Ok(Err(e)) => Err(e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            let seen = Seen {
                checked: Some(crate::observe::rfc3339_now()),
                plan_hash: found.as_ref().ok().cloned(),
                error: found.as_ref().err().cloned(),
            };
            let own_hash = own();
            let now = seen.verdict(&own_hash);
            if let Some(v) = self.record(seen, &own_hash) {
                match (v, &found) {
                    (Verdict::Same, _) => {
                        tracing::info!("peer {}: serves the same plan", self.url);
                    }
                    (Verdict::Different, Ok(peer_hash)) => tracing::warn!(
                        "peer {}: serves plan {peer_hash}, this appliance {own_hash}: the pair differs",
                        self.url
                    ),
                    (Verdict::Unreachable, Err(error)) => {
                        tracing::warn!("peer {}: {error}", self.url);
                    }
                    _ => {}
                }
            }
            for v in [Verdict::Same, Verdict::Different, Verdict::Unreachable] {
                PLAN.get_or_create(&PeerLabels { state: v.as_str() })
                    .set(i64::from(v == now));
            }
            tokio::select! {
                () = tokio::time::sleep(EVERY) => {}
                _ = stop.changed() => return,
            }
        }
    }
}

impl Seen {
    /// How this process's plan (`own_hash`) compares with what was seen of the peer.
    pub(crate) fn verdict(&self, own_hash: &str) -> Verdict {
        match (&self.checked, &self.plan_hash) {
            (None, _) => Verdict::Unknown,
            (Some(_), Some(h)) if h == own_hash => Verdict::Same,
            (Some(_), Some(_)) => Verdict::Different,
            (Some(_), None) => Verdict::Unreachable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_and_their_changes() {
        let p = Peer::new("http://10.0.0.2:8080/ping".into());
        assert_eq!(p.verdict("sha256:a"), Verdict::Unknown);
        let seen = |hash: Option<&str>| Seen {
            checked: Some("t".into()),
            plan_hash: hash.map(str::to_owned),
            error: hash.is_none().then(|| "refused".to_owned()),
        };
        assert_eq!(
            p.record(seen(Some("sha256:a")), "sha256:a"),
            Some(Verdict::Same)
        );
        assert_eq!(
            p.record(seen(Some("sha256:a")), "sha256:a"),
            None,
            "logged once"
        );
        // This appliance reloaded a new plan, the peer did not.
        assert_eq!(p.verdict("sha256:b"), Verdict::Different);
        assert_eq!(p.record(seen(None), "sha256:b"), Some(Verdict::Unreachable));
        assert_eq!(p.seen().error.as_deref(), Some("refused"));
    }
}
