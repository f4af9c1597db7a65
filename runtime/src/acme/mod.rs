//! ACME: certificates from the plan's `certificate_resolvers`, obtained, stored, served and
//! renewed while the proxy runs.
//!
//! - [`storage`]: Traefik's acme.json, read at load and written atomically;
//! - [`client`]: instant-acme over our own HTTP client, one order from names to chain and key;
//! - [`challenge`]: the open HTTP-01 and TLS-ALPN-01 answers the request path and the TLS
//!   resolver serve;
//! - [`dns01`]: DNS-01 records written and removed through lego's `exec` and `httpreq`
//!   providers, configured from the environment as Traefik's are, and the propagation wait;
//! - [`dns`]: the DNS queries of that wait (CNAME following, recursive and authoritative checks);
//! - [`schedule`]: renewal and retry times, pure;
//! - this file: [`Acme`], which outlives reloads. At load it serves every stored certificate at
//!   once (the SNI resolver reads [`Acme::find_exact`] and [`Acme::find_wildcard`]), then one task per resolver orders what is
//!   missing or due, without blocking traffic; failed orders are retried with backoff, never
//!   given up, and a CA that cannot be reached leaves what is served as it is.
//!
//! What a resolver must obtain follows Traefik: for each certificate the plan lists, the names
//! not covered yet (by a certificate file of the plan, or a certificate of this resolver) are
//! ordered as one certificate. Certificates no router needs any more are still served until they
//! expire but not renewed.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use bridge_plan::{CertificateResolver, Plan};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

pub(crate) mod challenge;
pub(crate) mod client;
mod dns;
mod dns01;
mod schedule;
pub(crate) mod storage;

use challenge::Challenges;
use schedule::Failure;
use storage::{BridgeAccount, StorageFile, StoredCert, StoredDomain};

/// ACME order outcomes, by resolver and outcome (process-wide, registered by
/// [`crate::observe::metrics`]).
pub(crate) static ORDERS: std::sync::LazyLock<Family<OrderLabels, Counter>> =
    std::sync::LazyLock::new(Family::default);

/// Labels of [`ORDERS`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct OrderLabels {
    resolver: String,
    /// `obtained`, `renewed`, `unreachable` (the CA could not be reached) or `refused`.
    outcome: &'static str,
}

fn count(resolver: &str, outcome: &'static str) {
    ORDERS
        .get_or_create(&OrderLabels {
            resolver: resolver.to_owned(),
            outcome,
        })
        .inc();
}

/// Why ACME cannot start from a plan.
#[derive(Debug, thiserror::Error)]
pub enum AcmeError {
    /// The storage file cannot be used.
    #[error("certificate resolver `{resolver}`: {why}")]
    Storage {
        /// The resolver.
        resolver: String,
        /// What is wrong with its storage (path included).
        why: String,
    },
    /// The ACME server's TLS settings cannot be used.
    #[error("certificate resolver `{resolver}`: {why}")]
    Client {
        /// The resolver.
        resolver: String,
        /// What is wrong.
        why: String,
    },
}

/// A certificate a resolver holds.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    /// The names the leaf covers (subject alternative names, lower-case).
    pub names: Vec<String>,
    /// As stored (the names it was ordered for, PEM).
    pub stored: StoredCert,
    /// Ready for rustls, with its OCSP staple when stapling is on.
    pub key: Arc<crate::ocsp::Served>,
    /// Validity, Unix seconds.
    pub not_before: i64,
    /// Validity, Unix seconds.
    pub not_after: i64,
    /// Serial number, hex, for the metric and the API.
    pub serial: String,
    /// Issuer common name.
    pub issuer: String,
}

impl Held {
    /// Parses a stored certificate; `Err` says why it cannot be served.
    pub(crate) fn from_stored(
        stored: StoredCert,
        provider: &rustls::crypto::CryptoProvider,
    ) -> Result<Self, String> {
        let chain = CertificateDer::pem_slice_iter(&stored.certificate)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("certificate: {e}"))?;
        let Some(leaf) = chain.first() else {
            return Err("no certificate in the PEM".into());
        };
        let key = PrivateKeyDer::from_pem_slice(&stored.key).map_err(|e| format!("key: {e}"))?;
        let signing = provider
            .key_provider
            .load_private_key(key)
            .map_err(|e| format!("key: {e}"))?;
        let (_, x509) = x509_parser::parse_x509_certificate(leaf.as_ref())
            .map_err(|e| format!("certificate: {e}"))?;
        let mut names: Vec<String> = Vec::new();
        if let Ok(Some(san)) = x509.subject_alternative_name() {
            for n in &san.value.general_names {
                if let x509_parser::extensions::GeneralName::DNSName(d) = n {
                    names.push(d.to_ascii_lowercase());
                }
            }
        }
        if names.is_empty()
            && let Some(cn) = x509.subject().iter_common_name().next()
            && let Ok(cn) = cn.as_str()
        {
            names.push(cn.to_ascii_lowercase());
        }
        let issuer = x509
            .issuer()
            .iter_common_name()
            .next()
            .and_then(|c| c.as_str().ok())
            .unwrap_or_default()
            .to_owned();
        let certified = CertifiedKey::new(chain.clone(), signing);
        certified
            .keys_match()
            .map_err(|e| format!("the key does not belong to the certificate: {e}"))?;
        Ok(Self {
            names,
            not_before: x509.validity().not_before.timestamp(),
            not_after: x509.validity().not_after.timestamp(),
            serial: x509.raw_serial_as_string().replace(':', ""),
            issuer,
            key: crate::ocsp::Served::new(certified),
            stored,
        })
    }
}

/// Names → certificates, exact and by the parent of a `*.parent` wildcard, for the SNI resolver.
#[derive(Debug, Default)]
struct Table {
    exact: HashMap<String, Arc<crate::ocsp::Served>>,
    wildcard: HashMap<String, Arc<crate::ocsp::Served>>,
}

/// One resolver's worker and what it was started with.
#[derive(Debug)]
struct Worker {
    config: CertificateResolver,
    wanted: tokio::sync::watch::Sender<Wanted>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

/// What a resolver must obtain, sent to its worker at load and on every reload.
#[derive(Debug, Clone, Default)]
struct Wanted {
    /// Each certificate's names, main first (the plan's `domains`).
    domains: Vec<Vec<String>>,
    /// Names the plan's certificate files cover (exact or `*.` patterns): never ordered.
    covered: Arc<Vec<String>>,
}

#[derive(Debug, Default)]
struct State {
    workers: HashMap<String, Worker>,
    held: HashMap<String, Vec<Held>>,
    storages: HashMap<PathBuf, Arc<StorageFile>>,
}

/// ACME for the whole process (kept across reloads).
#[derive(Debug, Default)]
pub(crate) struct Acme {
    /// Open challenge answers.
    pub(crate) challenges: Arc<Challenges>,
    table: ArcSwap<Table>,
    state: Mutex<State>,
    /// OCSP stapling of the plan being served (`None`: off), and the runtime's stapler.
    stapling: Mutex<Option<(Arc<crate::ocsp::Stapler>, bridge_plan::Ocsp)>>,
}

/// Seconds since the Unix epoch.
fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

impl Acme {
    /// Sets up (or, on reload, updates) every resolver of `plan`: storage opened and checked,
    /// stored certificates served at once, a worker per resolver started or told what is wanted
    /// now. `covered` are the names of the plan's certificate files.
    pub(crate) fn configure(
        self: &Arc<Self>,
        plan: &Plan,
        covered: Vec<String>,
        stapler: &Arc<crate::ocsp::Stapler>,
    ) -> Result<(), AcmeError> {
        let covered = Arc::new(covered);
        let provider = rustls::crypto::aws_lc_rs::default_provider();
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Check everything before changing anything, so a bad reload leaves the old state.
        let mut opened: Vec<(String, Arc<StorageFile>, Vec<Held>, bool)> = Vec::new();
        for (name, res) in &plan.certificate_resolvers {
            client::tls_config(res).map_err(|why| AcmeError::Client {
                resolver: name.clone(),
                why,
            })?;
            let path = PathBuf::from(&res.storage);
            let file = match state.storages.get(&path) {
                Some(f) => f.clone(),
                None => match opened.iter().find(|(_, f, _, _)| f.path() == path) {
                    Some((_, f, _, _)) => f.clone(),
                    None => Arc::new(StorageFile::open(&path).map_err(|e| AcmeError::Storage {
                        resolver: name.clone(),
                        why: e.to_string(),
                    })?),
                },
            };
            let data = file.resolver(name).map_err(|e| AcmeError::Storage {
                resolver: name.clone(),
                why: e.to_string(),
            })?;
            let mut held = Vec::new();
            for stored in data.certificates {
                let names = stored.domain.names().join(", ");
                match Held::from_stored(stored, &provider) {
                    Ok(h) => held.push(h),
                    Err(why) => tracing::warn!(
                        resolver = %name,
                        storage = %path.display(),
                        "stored certificate for {names} cannot be served ({why}); it is ordered again"
                    ),
                }
            }
            opened.push((name.clone(), file, held, data.traefik_account));
        }
        let same = |w: &Worker, res: &CertificateResolver| {
            let mut a = w.config.clone();
            a.domains.clear();
            a.source = res.source.clone();
            let mut b = res.clone();
            b.domains.clear();
            a == b
        };
        state.workers.retain(|name, w| {
            plan.certificate_resolvers
                .get(name)
                .is_some_and(|r| same(w, r))
        });
        state
            .held
            .retain(|name, _| plan.certificate_resolvers.contains_key(name));
        let mut storages = HashMap::new();
        let handle = tokio::runtime::Handle::try_current().ok();
        for (name, file, held, traefik_account) in opened {
            let res = &plan.certificate_resolvers[&name];
            storages.insert(file.path().to_path_buf(), file.clone());
            let wanted = Wanted {
                domains: res
                    .domains
                    .iter()
                    .map(|d| d.names().map(str::to_owned).collect())
                    .collect(),
                covered: covered.clone(),
            };
            log_default_certificate(&name, res, &held, &covered);
            if let Some(w) = state.workers.get(&name) {
                let _ = w.wanted.send(wanted);
                continue;
            }
            if traefik_account {
                tracing::info!(
                    resolver = %name,
                    storage = %file.path().display(),
                    "the storage holds Traefik's account (an RSA key this ACME client cannot sign with); a new account is registered when one is needed, Traefik's is left as it is and the certificates are kept"
                );
            }
            state.held.insert(name.clone(), held);
            let (tx, rx) = tokio::sync::watch::channel(wanted);
            let task = handle.as_ref().map(|h| {
                h.spawn(run(
                    Arc::downgrade(self),
                    name.clone(),
                    res.clone(),
                    file.clone(),
                    rx,
                ))
            });
            state.workers.insert(
                name.clone(),
                Worker {
                    config: res.clone(),
                    wanted: tx,
                    task,
                },
            );
        }
        state.storages = storages;
        *self
            .stapling
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) =
            plan.ocsp.clone().map(|o| (stapler.clone(), o));
        self.publish(&state);
        Ok(())
    }

    /// The certificate for an SNI name: exact, else the `*.parent` wildcard.
    pub(crate) fn find_exact(&self, name: &str) -> Option<Arc<CertifiedKey>> {
        self.table.load().exact.get(name).map(|s| s.key())
    }

    /// The wildcard certificate covering an SNI name.
    pub(crate) fn find_wildcard(&self, name: &str) -> Option<Arc<CertifiedKey>> {
        let (_, parent) = name.split_once('.')?;
        self.table.load().wildcard.get(parent).map(|s| s.key())
    }

    /// Every held certificate, by resolver, for the API and metrics.
    pub(crate) fn held(&self) -> Vec<(String, Held)> {
        let state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut out: Vec<(String, Held)> = state
            .held
            .iter()
            .flat_map(|(r, hs)| hs.iter().map(|h| (r.clone(), h.clone())))
            .collect();
        out.sort_by(|a, b| (&a.0, &a.1.names).cmp(&(&b.0, &b.1.names)));
        out
    }

    fn held_of(&self, resolver: &str) -> Vec<Held> {
        let state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        state.held.get(resolver).cloned().unwrap_or_default()
    }

    /// Rebuilds the name table from every resolver's unexpired certificates (the one valid
    /// longest wins a name).
    fn publish(&self, state: &State) {
        let now = unix_now();
        let mut best: HashMap<(bool, String), (i64, Arc<crate::ocsp::Served>)> = HashMap::new();
        for h in state.held.values().flatten() {
            if h.not_after <= now {
                continue;
            }
            for n in &h.names {
                let key = match n.strip_prefix("*.") {
                    Some(parent) => (true, parent.to_owned()),
                    None => (false, n.clone()),
                };
                let better = best.get(&key).is_none_or(|(t, _)| h.not_after > *t);
                if better {
                    best.insert(key, (h.not_after, h.key.clone()));
                }
            }
        }
        let mut table = Table::default();
        for ((wild, name), (_, key)) in best {
            if wild {
                table.wildcard.insert(name, key);
            } else {
                table.exact.insert(name, key);
            }
        }
        self.table.store(Arc::new(table));
        // ACME certificates are stapled as Traefik staples them: as any other certificate
        // whose leaf names a responder, the issuer being the next certificate of the chain.
        let stapling = self
            .stapling
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Some((stapler, ocsp)) = stapling {
            let mut batch = crate::ocsp::Batch::new(&ocsp);
            for (resolver, list) in &state.held {
                for h in list.iter().filter(|h| h.not_after > now) {
                    batch.add(&h.key, &format!("{resolver} ({})", h.stored.domain.main));
                }
            }
            stapler.add(batch);
        }
    }

    /// A new certificate for `resolver`, replacing the one ordered for `replaces` (if any):
    /// stored first, then served.
    fn install(
        &self,
        resolver: &str,
        file: &StorageFile,
        held: Held,
        replaces: Option<&[String]>,
    ) -> Result<(), storage::StorageError> {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut list = state.held.get(resolver).cloned().unwrap_or_default();
        let target = replaces.map_or_else(|| held.stored.domain.names(), <[String]>::to_vec);
        list.retain(|h| sorted(&h.stored.domain.names()) != sorted(&target));
        list.push(held);
        let stored: Vec<StoredCert> = list.iter().map(|h| h.stored.clone()).collect();
        file.save_certificates(resolver, &stored)?;
        state.held.insert(resolver.to_owned(), list);
        self.publish(&state);
        Ok(())
    }
}

fn sorted(names: &[String]) -> Vec<String> {
    let mut v = names.to_vec();
    v.sort();
    v
}

/// Does a certificate name (possibly `*.parent`) cover `name`?
fn covers(pattern: &str, name: &str) -> bool {
    if pattern == name {
        return true;
    }
    match (pattern.strip_prefix("*."), name.split_once('.')) {
        (Some(parent), Some((label, rest))) => !label.is_empty() && rest == parent,
        _ => false,
    }
}

/// Says once per load which routers are served with the default certificate for now.
fn log_default_certificate(
    name: &str,
    res: &CertificateResolver,
    held: &[Held],
    covered: &[String],
) {
    for d in &res.domains {
        let missing: Vec<&str> = d
            .names()
            .filter(|n| {
                !covered.iter().any(|c| covers(c, n))
                    && !held.iter().any(|h| h.names.iter().any(|c| covers(c, n)))
            })
            .collect();
        if !missing.is_empty() {
            tracing::info!(
                resolver = %name,
                routers = %d.routers.join(", "),
                "no certificate for {} yet: served with the default certificate until the resolver obtains one",
                missing.join(", ")
            );
        }
    }
}

/// One order to place.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Job {
    /// Names to order, main first.
    names: Vec<String>,
    /// The names of the held certificate it renews.
    replaces: Option<Vec<String>>,
    /// When it is due (Unix seconds).
    at: i64,
}

/// What a resolver must order, now or later: renewals of the certificates routers still need,
/// and certificates for names nothing covers yet. Pure.
fn jobs(wanted: &Wanted, held: &[Held], windows: &HashMap<String, Window>, now: i64) -> Vec<Job> {
    let wanted_names: Vec<&str> = wanted
        .domains
        .iter()
        .flatten()
        .map(String::as_str)
        .collect();
    let mut out: Vec<Job> = Vec::new();
    for h in held {
        let needed = wanted_names
            .iter()
            .any(|w| h.names.iter().any(|n| covers(n, w)));
        if !needed {
            continue;
        }
        let names = h.stored.domain.names();
        let names = if names.is_empty() {
            h.names.clone()
        } else {
            names
        };
        let own = schedule::renew_at(h.not_before, h.not_after);
        let window = windows.get(&h.serial).and_then(|w| w.window);
        out.push(Job {
            at: schedule::with_window(own, window, spread(&h.serial), now),
            replaces: Some(h.stored.domain.names()),
            names,
        });
    }
    let mut ordering: HashSet<String> = HashSet::new();
    for d in &wanted.domains {
        let uncovered: Vec<String> = d
            .iter()
            .filter(|n| {
                !wanted.covered.iter().any(|c| covers(c, n))
                    && !held.iter().any(|h| h.names.iter().any(|c| covers(c, n)))
                    && !ordering.contains(*n)
            })
            .cloned()
            .collect();
        if uncovered.is_empty() {
            continue;
        }
        ordering.extend(uncovered.iter().cloned());
        out.push(Job {
            names: uncovered,
            replaces: None,
            at: now,
        });
    }
    out
}

/// Where in the CA's window a certificate renews: from its serial, so renewals of many
/// certificates spread over the window but each stays put between checks.
fn spread(serial: &str) -> u16 {
    let h = serial
        .bytes()
        .fold(0u32, |a, b| a.wrapping_mul(31).wrapping_add(u32::from(b)));
    u16::try_from(h % 1001).unwrap_or(500)
}

/// The CA's renewal window of one certificate (ARI, RFC 9773).
#[derive(Debug, Clone, Copy)]
struct Window {
    window: Option<(i64, i64)>,
    /// When to ask again (the CA's Retry-After).
    next: i64,
}

/// ARI state of one resolver: off for good once the CA says it has none.
#[derive(Debug)]
struct Ari {
    supported: bool,
    /// By certificate serial.
    windows: HashMap<String, Window>,
}

impl Ari {
    /// Asks the CA for the windows of the certificates not asked about lately. Needs an account
    /// (instant-acme asks through one), so only a stored account is loaded for it: no CA sees a
    /// new registration just for ARI.
    async fn refresh(
        &mut self,
        name: &str,
        res: &CertificateResolver,
        file: &StorageFile,
        account: &mut Option<instant_acme::Account>,
        held: &[Held],
    ) {
        let now = unix_now();
        self.windows
            .retain(|serial, _| held.iter().any(|h| &h.serial == serial));
        let due: Vec<&Held> = held
            .iter()
            .filter(|h| h.not_after > now)
            .filter(|h| self.windows.get(&h.serial).is_none_or(|w| w.next <= now))
            .collect();
        if due.is_empty() {
            return;
        }
        if account.is_none() {
            let Some(stored) = file.resolver(name).ok().and_then(|d| d.account) else {
                return;
            };
            match client::account(res, Some(&stored.credentials)).await {
                Ok((a, None)) => *account = Some(a),
                _ => return,
            }
        }
        let Some(acct) = account.as_ref() else { return };
        for h in due {
            let key = h.key.key();
            let Some(leaf) = key.cert.first() else {
                continue;
            };
            let Ok(id) = instant_acme::CertificateIdentifier::try_from(leaf) else {
                // No authority key identifier: the CA cannot name it either.
                self.windows.insert(
                    h.serial.clone(),
                    Window {
                        window: None,
                        next: i64::MAX,
                    },
                );
                continue;
            };
            match acct.renewal_info(&id).await {
                Ok((info, retry)) => {
                    let w = info.suggested_window;
                    let retry = i64::try_from(retry.as_secs())
                        .unwrap_or(21_600)
                        .clamp(60, 86_400);
                    self.windows.insert(
                        h.serial.clone(),
                        Window {
                            window: Some((w.start.unix_timestamp(), w.end.unix_timestamp())),
                            next: now + retry,
                        },
                    );
                }
                Err(instant_acme::Error::Unsupported(_)) => {
                    tracing::debug!(resolver = %name, "the CA offers no renewal information (ARI); renewing by lifetime");
                    self.supported = false;
                    return;
                }
                Err(e) => {
                    tracing::debug!(resolver = %name, "renewal information: {e}");
                    self.windows.insert(
                        h.serial.clone(),
                        Window {
                            window: None,
                            next: now + 3_600,
                        },
                    );
                }
            }
        }
    }
}

/// Longest sleep between checks, so a changed clock or a certificate renewed elsewhere is
/// noticed.
const MAX_SLEEP_SECS: i64 = 12 * 3600;

/// One resolver's worker: order what is due, sleep until the next due time, a retry, or a
/// reload; never gives up and never blocks traffic.
async fn run(
    acme: std::sync::Weak<Acme>,
    name: String,
    res: CertificateResolver,
    file: Arc<StorageFile>,
    mut wanted: tokio::sync::watch::Receiver<Wanted>,
) {
    let mut account: Option<instant_acme::Account> = None;
    // By the names of a job: failures in a row, when to try again.
    let mut failures: HashMap<Vec<String>, (u32, i64)> = HashMap::new();
    let mut ari = Ari {
        supported: true,
        windows: HashMap::new(),
    };
    loop {
        let Some(me) = acme.upgrade() else { return };
        let want = wanted.borrow_and_update().clone();
        let held = me.held_of(&name);
        if ari.supported {
            ari.refresh(&name, &res, &file, &mut account, &held).await;
        }
        let now = unix_now();
        let todo = jobs(&want, &held, &ari.windows, now);
        let mut next = now + MAX_SLEEP_SECS;
        let mut installed = false;
        for job in todo {
            let retry_at = failures.get(&job.names).map_or(i64::MIN, |f| f.1);
            let at = job.at.max(retry_at);
            if at > now {
                next = next.min(at);
                continue;
            }
            match order(&me, &name, &res, &file, &mut account, &job).await {
                Ok(()) => {
                    count(
                        &name,
                        if job.replaces.is_some() {
                            "renewed"
                        } else {
                            "obtained"
                        },
                    );
                    failures.remove(&job.names);
                    installed = true;
                }
                Err(e) => {
                    count(
                        &name,
                        match e.kind {
                            Failure::Unreachable => "unreachable",
                            Failure::Refused => "refused",
                        },
                    );
                    let f = failures.entry(job.names.clone()).or_insert((0, 0));
                    f.0 += 1;
                    let wait = i64::try_from(schedule::backoff_secs(e.kind, f.0)).unwrap_or(3600);
                    f.1 = unix_now() + wait;
                    next = next.min(f.1);
                    if e.kind == Failure::Unreachable {
                        account = None;
                    }
                    tracing::warn!(
                        resolver = %name,
                        names = %job.names.join(", "),
                        attempt = f.0,
                        "ACME order failed: {}; retrying in {wait}s",
                        e.why
                    );
                }
            }
        }
        failures.retain(|names, _| want.domains.iter().flatten().any(|w| names.contains(w)));
        drop(me);
        if installed {
            continue; // what is held changed: its renewal times count from now on
        }
        let wait = u64::try_from((next - unix_now()).max(1)).unwrap_or(1);
        tokio::select! {
            () = tokio::time::sleep(std::time::Duration::from_secs(wait)) => {}
            changed = wanted.changed() => if changed.is_err() { return },
        }
    }
}

/// Places one order (registering the account first when needed) and installs the result.
async fn order(
    acme: &Acme,
    name: &str,
    res: &CertificateResolver,
    file: &StorageFile,
    account: &mut Option<instant_acme::Account>,
    job: &Job,
) -> Result<(), client::OrderError> {
    if account.is_none() {
        let stored = file
            .resolver(name)
            .ok()
            .and_then(|d| d.account)
            .map(|a| a.credentials);
        let (acct, fresh) = client::account(res, stored.as_ref()).await?;
        if let Some(credentials) = fresh {
            tracing::info!(resolver = %name, ca = %res.ca_server, "ACME account registered");
            let saved = file.save_account(
                name,
                &BridgeAccount {
                    email: res.email.clone().unwrap_or_default(),
                    credentials,
                },
            );
            if let Err(e) = saved {
                tracing::warn!(resolver = %name, "{e}");
            }
        }
        *account = Some(acct);
    }
    let Some(acct) = account.as_ref() else {
        return Ok(());
    };
    let renewing = job.replaces.is_some();
    tracing::info!(
        resolver = %name,
        names = %job.names.join(", "),
        "{} an ACME certificate",
        if renewing { "renewing" } else { "ordering" }
    );
    let issued = client::obtain(acct, res, &job.names, &acme.challenges).await?;
    let provider = rustls::crypto::aws_lc_rs::default_provider();
    let stored = StoredCert {
        domain: StoredDomain {
            main: job.names[0].clone(),
            sans: job.names[1..].to_vec(),
        },
        certificate: issued.chain_pem.into_bytes(),
        key: issued.key_pem.into_bytes(),
        store: "default".into(),
    };
    let held = Held::from_stored(stored, &provider).map_err(|why| client::OrderError {
        kind: Failure::Refused,
        why: format!("the CA's certificate cannot be served: {why}"),
    })?;
    let until = held.not_after;
    acme.install(name, file, held, job.replaces.as_deref())
        .map_err(|e| client::OrderError {
            kind: Failure::Unreachable,
            why: e.to_string(),
        })?;
    tracing::info!(
        resolver = %name,
        names = %job.names.join(", "),
        not_after = until,
        "ACME certificate {}",
        if renewing { "renewed" } else { "obtained" }
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(names: &[&str], not_before: i64, not_after: i64) -> Held {
        let ck = challenge::alpn_certificate(
            "x.example",
            &[0; 32],
            &rustls::crypto::aws_lc_rs::default_provider(),
        )
        .unwrap();
        Held {
            names: names.iter().map(|s| (*s).to_owned()).collect(),
            stored: StoredCert {
                domain: StoredDomain {
                    main: names[0].to_owned(),
                    sans: names[1..].iter().map(|s| (*s).to_owned()).collect(),
                },
                certificate: vec![],
                key: vec![],
                store: "default".into(),
            },
            key: crate::ocsp::Served::new(CertifiedKey::clone(&ck)),
            not_before,
            not_after,
            serial: String::new(),
            issuer: String::new(),
        }
    }

    fn wanted(domains: &[&[&str]], covered: &[&str]) -> Wanted {
        Wanted {
            domains: domains
                .iter()
                .map(|d| d.iter().map(|s| (*s).to_owned()).collect())
                .collect(),
            covered: Arc::new(covered.iter().map(|s| (*s).to_owned()).collect()),
        }
    }

    fn v(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn only_names_nothing_covers_are_ordered() {
        let w = wanted(
            &[
                &["a.example", "b.example", "c.example"],
                &["d.example"],
                &["b.example"],
            ],
            &["*.files.example", "c.example"],
        );
        let h = [held(&["d.example"], 0, 9_000)];
        let got = jobs(&w, &h, &HashMap::new(), 100);
        assert_eq!(
            got,
            vec![
                Job {
                    names: v(&["d.example"]),
                    replaces: Some(v(&["d.example"])),
                    at: 6_000
                },
                Job {
                    names: v(&["a.example", "b.example"]),
                    replaces: None,
                    at: 100
                },
            ]
        );
        // Covered by a certificate file's wildcard: nothing to order.
        assert!(
            jobs(
                &wanted(&[&["x.files.example"]], &["*.files.example"]),
                &[],
                &HashMap::new(),
                0
            )
            .is_empty()
        );
    }

    #[test]
    fn certificates_no_router_needs_are_not_renewed() {
        let h = [held(&["old.example"], 0, 300), held(&["a.example"], 0, 300)];
        let got = jobs(&wanted(&[&["a.example"]], &[]), &h, &HashMap::new(), 1_000);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].names, v(&["a.example"]));
        assert_eq!(got[0].at, 200);
    }

    #[test]
    fn the_table_serves_unexpired_certificates_and_the_longest_lived_wins() {
        let acme = Acme::default();
        let now = unix_now();
        let mut state = State::default();
        let short = held(&["a.example", "*.w.example"], now - 10, now + 100);
        let long = held(&["a.example"], now - 10, now + 1_000);
        let expired = held(&["e.example"], now - 100, now - 1);
        let long_key = long.key.clone();
        state.held.insert("r".into(), vec![short, long, expired]);
        acme.publish(&state);
        assert!(Arc::ptr_eq(
            &acme.find_exact("a.example").unwrap(),
            &long_key.key()
        ));
        assert!(acme.find_wildcard("x.w.example").is_some());
        assert!(acme.find_wildcard("x.y.w.example").is_none());
        assert!(acme.find_exact("e.example").is_none());
    }
}
