//! OCSP stapling (RFC 6066 §8, RFC 6960), on when the plan has `ocsp` (Traefik's static
//! section): every served certificate whose leaf names an OCSP responder gets its status from
//! that responder, and the answer is stapled to the handshakes that serve it.
//!
//! - [`Served`]: a certificate as the SNI resolver hands it to rustls, swapped whole when its
//!   staple changes (one atomic load per handshake).
//! - [`Stapler`]: one entry per distinct leaf (kept across reloads, so a reload or a certificate
//!   that comes back keeps its staple), one background task that asks the responders.
//! - `der`: the request and the checks an answer passes; `fetch`: the HTTP exchange.
//!
//! Traefik's rules (docs/traefik-behaviour/ocsp.md), and where this is stricter or sooner on
//! purpose (docs/compatibility.md):
//! - issuer: the second certificate of the file. Traefik then uses the leaf itself, so such a
//!   certificate is never stapled; here it is not asked for and a warning says why.
//! - responders: the leaf's AIA OCSP URLs in order, each replaced by its `responder_overrides`
//!   entry; the first good answer wins.
//! - when: at once for a certificate without a staple, again halfway from the answer's
//!   `thisUpdate` to its `nextUpdate` (hourly without one), after every applied reload for those
//!   without a staple. Traefik retries a failure only at the next reload or hourly tick; here a
//!   failure is retried after 1 min, doubling to 1 h.
//! - answers: `good`, `revoked` and `unknown` are all stapled (a revoked certificate is logged);
//!   one that is out of date is refused, and a staple past its `nextUpdate` is withdrawn — a
//!   client refuses a stale staple, where Traefik keeps serving it.
//! - a certificate that left the configuration keeps its entry for 24 h, as in Traefik (noticed
//!   within 5 min: the task wakes at least that often); an answer older than the staple does not
//!   replace it.

mod der;
mod fetch;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use rustls::sign::CertifiedKey;
use rustls_pki_types::CertificateDer;
use tokio::sync::Notify;
use tokio::time::Instant;

pub(crate) use der::{CertId, CertStatus, SLACK, Staple};

/// How long an entry whose certificate left the configuration is kept (Traefik's cache TTL).
const UNUSED_TTL: Duration = Duration::from_secs(24 * 3600);
/// The first retry after a failure; doubled per failure up to [`MAX_RETRY`].
const FIRST_RETRY: Duration = Duration::from_secs(60);
const MAX_RETRY: Duration = Duration::from_secs(3600);
/// Refetch interval for an answer without `nextUpdate` (Traefik's hourly pass).
const NO_NEXT_UPDATE: Duration = Duration::from_secs(3600);
/// How long an answer without `nextUpdate` is served after its `thisUpdate` when no newer one
/// comes (RFC 6960 sets no end; a client would not take one much older).
const NO_NEXT_UPDATE_LIFE: Duration = Duration::from_secs(24 * 3600);
/// The longest the task sleeps: how soon a certificate no longer served is noticed (go-cache's
/// janitor runs as often), and the longest wait for a halfway point far ahead.
const JANITOR: Duration = Duration::from_secs(5 * 60);
/// The longest wait before asking again, whatever the answer's `nextUpdate`.
const MAX_WAIT: Duration = Duration::from_secs(7 * 24 * 3600);

/// A certificate as handshakes get it, its staple included.
#[derive(Debug)]
pub(crate) struct Served(ArcSwap<CertifiedKey>);

impl Served {
    pub(crate) fn new(key: CertifiedKey) -> Arc<Self> {
        Arc::new(Self(ArcSwap::from_pointee(key)))
    }

    /// The certificate with its current staple.
    pub(crate) fn key(&self) -> Arc<CertifiedKey> {
        self.0.load_full()
    }

    fn set_staple(&self, der: Option<&[u8]>) {
        let current = self.0.load();
        if current.ocsp.as_deref() == der {
            return;
        }
        let mut k = CertifiedKey::clone(&current);
        k.ocsp = der.map(<[u8]>::to_vec);
        self.0.store(Arc::new(k));
    }
}

/// Asks one responder: the answer's bytes, or why there are none.
pub(crate) type Fetch = Arc<
    dyn Fn(String, Vec<u8>) -> Pin<Box<dyn Future<Output = Result<Vec<u8>, String>> + Send>>
        + Send
        + Sync,
>;

/// The wall clock the answers' times are compared with.
#[derive(Debug, Clone, Copy)]
enum Clock {
    System,
    /// Tests: a fixed wall time at a tokio instant, moving with (paused) tokio time.
    #[cfg(test)]
    Fixed(SystemTime, Instant),
}

impl Clock {
    fn wall(self) -> SystemTime {
        match self {
            Self::System => SystemTime::now(),
            #[cfg(test)]
            Self::Fixed(wall, at) => wall + at.elapsed(),
        }
    }
}

/// The certificates to staple that one plan serves; applied by [`Stapler::commit`] once the
/// plan is ready to serve, so a failed reload changes nothing.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    overrides: BTreeMap<String, String>,
    wanted: Vec<Wanted>,
}

#[derive(Debug)]
struct Wanted {
    leaf: Vec<u8>,
    name: String,
    id: CertId,
    issuer: CertificateDer<'static>,
    responders: Vec<String>,
    slot: Weak<Served>,
}

impl Batch {
    /// Stapling with the plan's `responder_overrides`.
    pub(crate) fn new(plan: &bridge_plan::Ocsp) -> Self {
        Self {
            overrides: plan.responder_overrides.clone(),
            wanted: Vec::new(),
        }
    }

    /// Adds a served certificate, if its leaf names an OCSP responder. `file` names it in the
    /// log when it cannot be stapled.
    pub(crate) fn add(&mut self, served: &Arc<Served>, file: &str) {
        let key = served.key();
        let Some(leaf) = key.cert.first() else {
            return;
        };
        let Ok((_, parsed)) = x509_parser::parse_x509_certificate(leaf.as_ref()) else {
            return;
        };
        let urls = ocsp_urls(&parsed);
        if urls.is_empty() {
            return; // Nothing to ask, as Traefik: silently.
        }
        let name = parsed
            .subject()
            .iter_common_name()
            .find_map(|cn| cn.as_str().ok())
            .unwrap_or_default()
            .to_owned();
        let Some(issuer) = key.cert.get(1) else {
            tracing::warn!(
                certificate = %file,
                "the certificate names an OCSP responder, but its file holds no issuer certificate after it; it is not stapled (put the issuing CA's certificate second in the file)"
            );
            return;
        };
        let id = match CertId::of(leaf, issuer) {
            Ok(id) => id,
            Err(e) => {
                tracing::error!(
                    certificate = %file,
                    error = %e,
                    "Unable to parse issuer certificate; the certificate is not stapled"
                );
                return;
            }
        };
        let responders = urls
            .into_iter()
            .map(|u| self.overrides.get(&u).cloned().unwrap_or(u))
            .collect();
        self.wanted.push(Wanted {
            leaf: leaf.as_ref().to_vec(),
            name,
            id,
            issuer: issuer.clone().into_owned(),
            responders,
            slot: Arc::downgrade(served),
        });
    }
}

/// The leaf's AIA OCSP URLs (URIs only, in order), as Go's `x509.Certificate.OCSPServer`.
fn ocsp_urls(cert: &x509_parser::certificate::X509Certificate<'_>) -> Vec<String> {
    use x509_parser::extensions::{GeneralName, ParsedExtension};
    let mut out = Vec::new();
    for ext in cert.extensions() {
        if let ParsedExtension::AuthorityInfoAccess(aia) = ext.parsed_extension() {
            for d in aia.iter() {
                if d.access_method == x509_parser::oid_registry::OID_PKIX_ACCESS_DESCRIPTOR_OCSP
                    && let GeneralName::URI(u) = d.access_location
                {
                    out.push(u.to_owned());
                }
            }
        }
    }
    out
}

/// One distinct leaf.
#[derive(Debug)]
struct Entry {
    /// The leaf's common name, for the log (Traefik's identification).
    name: String,
    id: CertId,
    issuer: CertificateDer<'static>,
    responders: Vec<String>,
    staple: Option<Staple>,
    /// When the staple stops holding (its `nextUpdate`).
    expires: Option<Instant>,
    /// When to ask next.
    due: Instant,
    failures: u32,
    /// Bumped by every [`Stapler::add`]: a fetch that was under way when the configuration
    /// changed does not postpone the fetch that change asked for.
    generation: u64,
    /// Where it is served.
    slots: Vec<Weak<Served>>,
    /// Since when no plan serves it.
    unused_since: Option<Instant>,
}

impl Entry {
    fn serve(&self) {
        let der = self.staple.as_ref().map(|s| s.der.as_slice());
        for slot in self.slots.iter().filter_map(Weak::upgrade) {
            slot.set_staple(der);
        }
    }
}

#[derive(Debug, Default)]
struct State {
    /// By leaf DER.
    entries: HashMap<Vec<u8>, Entry>,
    task: bool,
}

/// The OCSP stapler of a runtime (kept across reloads).
pub(crate) struct Stapler {
    state: Mutex<State>,
    /// Wakes the task: a commit, or the stapler going away.
    wake: Arc<Notify>,
    fetch: Fetch,
    clock: Clock,
}

impl std::fmt::Debug for Stapler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stapler")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl Default for Stapler {
    fn default() -> Self {
        let http = fetch::Http::new();
        let fetch: Fetch = Arc::new(move |url, request| {
            let http = http.clone();
            Box::pin(async move { http.post(&url, &request).await })
        });
        Self::with(fetch, Clock::System)
    }
}

impl Drop for Stapler {
    fn drop(&mut self) {
        self.wake.notify_one();
    }
}

/// A fetch the task makes, taken out of the state so no lock is held while it waits.
struct Job {
    leaf: Vec<u8>,
    generation: u64,
    name: String,
    id: CertId,
    issuer: CertificateDer<'static>,
    responders: Vec<String>,
}

impl Stapler {
    fn with(fetch: Fetch, clock: Clock) -> Self {
        Self {
            state: Mutex::default(),
            wake: Arc::new(Notify::new()),
            fetch,
            clock,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The certificates a plan now being served staples (`None`: stapling is off, every entry
    /// goes). See [`Stapler::add`].
    pub(crate) fn commit(self: &Arc<Self>, batch: Option<Batch>) {
        match batch {
            Some(b) => self.add(b),
            None => {
                let mut state = self.state();
                for e in state.entries.values_mut() {
                    e.staple = None;
                    e.serve();
                }
                state.entries.clear();
            }
        }
    }

    /// Certificates now served (from the plan's files, or just obtained by ACME). Those already
    /// known get their staple at once; new ones, and those still without a staple, are asked for
    /// now (Traefik's pass after a configuration change). An entry none of whose certificates
    /// is served any more is forgotten a day later.
    pub(crate) fn add(self: &Arc<Self>, batch: Batch) {
        let now = Instant::now();
        let mut state = self.state();
        for w in batch.wanted {
            let e = state.entries.entry(w.leaf).or_insert_with(|| Entry {
                name: String::new(),
                id: w.id.clone(),
                issuer: w.issuer.clone(),
                responders: Vec::new(),
                staple: None,
                expires: None,
                due: now,
                failures: 0,
                generation: 0,
                slots: Vec::new(),
                unused_since: None,
            });
            e.generation = e.generation.wrapping_add(1);
            // The latest configuration decides (Traefik keeps the first issuer and responders
            // until the entry expires; a corrected file takes effect here at once).
            if e.id != w.id {
                e.staple = None;
                e.expires = None;
            }
            e.name = w.name;
            e.id = w.id;
            e.issuer = w.issuer;
            e.responders = w.responders;
            e.unused_since = None;
            e.slots.retain(|s| s.strong_count() > 0);
            e.slots.push(w.slot);
            if e.staple.is_none() {
                e.due = now;
            }
            e.serve();
        }
        if !state.entries.is_empty() && !state.task {
            match tokio::runtime::Handle::try_current() {
                Ok(h) => {
                    state.task = true;
                    h.spawn(run(Arc::downgrade(self), self.wake.clone()));
                }
                Err(_) => tracing::error!("OCSP stapling needs the async runtime; not started"),
            }
        }
        drop(state);
        self.wake.notify_one();
    }

    /// Withdraws expired staples and takes the entries due now; the next time anything is due.
    fn due(&self) -> (Vec<Job>, Option<Instant>) {
        let now = Instant::now();
        let mut state = self.state();
        for e in state.entries.values_mut() {
            e.slots.retain(|s| s.strong_count() > 0);
            if e.slots.is_empty() {
                e.unused_since.get_or_insert(now);
            } else {
                e.unused_since = None;
            }
        }
        state
            .entries
            .retain(|_, e| e.unused_since.is_none_or(|t| now - t < UNUSED_TTL));
        let mut jobs = Vec::new();
        let mut next: Option<Instant> = None;
        for (leaf, e) in &mut state.entries {
            if e.expires.is_some_and(|t| t <= now) {
                tracing::warn!(
                    certificate = %e.name,
                    "the OCSP staple reached its nextUpdate without a newer answer; handshakes go without a staple until a responder answers"
                );
                e.staple = None;
                e.expires = None;
                e.serve();
            }
            if e.due <= now {
                jobs.push(Job {
                    leaf: leaf.clone(),
                    generation: e.generation,
                    name: e.name.clone(),
                    id: e.id.clone(),
                    issuer: e.issuer.clone(),
                    responders: e.responders.clone(),
                });
                continue;
            }
            for t in [
                Some(e.due),
                e.expires,
                e.unused_since.map(|t| t + UNUSED_TTL),
            ]
            .into_iter()
            .flatten()
            {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        }
        (jobs, next)
    }

    /// Asks the responders of `job` in order until one gives an answer that holds.
    async fn ask(&self, job: &Job) -> Result<Staple, ()> {
        let request = job.id.request();
        for url in &job.responders {
            let answer = match (self.fetch)(url.clone(), request.clone()).await {
                Ok(a) => a,
                Err(e) => {
                    tracing::debug!(certificate = %job.name, responder = %url, error = %e, "Unable to obtain OCSP response");
                    continue;
                }
            };
            match der::check(&answer, &job.id, &job.issuer, self.clock.wall()) {
                Ok(s) => return Ok(s),
                Err(e) => {
                    tracing::debug!(certificate = %job.name, responder = %url, error = %e, "Unable to parse OCSP response");
                }
            }
        }
        Err(())
    }

    /// Records the outcome of `job` and schedules its next fetch.
    fn record(&self, job: &Job, outcome: Result<Staple, ()>) {
        let now = Instant::now();
        let wall = self.clock.wall();
        let mut state = self.state();
        let Some(e) = state.entries.get_mut(&job.leaf) else {
            return;
        };
        if e.id != job.id {
            return; // Reconfigured meanwhile: the new identity is asked for already.
        }
        // An answer older than the one stapled (a replay on the way from the responder, or a
        // responder behind its peers) does not replace it.
        let outcome = outcome.and_then(|staple| match &e.staple {
            Some(current) if staple.this_update < current.this_update => {
                tracing::debug!(
                    certificate = %e.name,
                    "Unable to parse OCSP response: older than the stapled answer"
                );
                Err(())
            }
            _ => Ok(staple),
        });
        let reconfigured = e.generation != job.generation;
        match outcome {
            Ok(staple) => {
                let (due, expires) = schedule(&staple, now, wall);
                if staple.status != CertStatus::Good
                    && e.staple.as_ref().is_none_or(|s| s.status != staple.status)
                {
                    tracing::warn!(
                        certificate = %e.name,
                        status = ?staple.status,
                        "the OCSP responder does not vouch for this certificate; the answer is stapled and clients will likely refuse it"
                    );
                }
                e.failures = 0;
                e.due = due;
                e.expires = expires;
                e.staple = Some(staple);
                e.serve();
            }
            Err(()) => {
                e.failures = e.failures.saturating_add(1);
                let wait = FIRST_RETRY
                    .saturating_mul(1 << (e.failures.saturating_sub(1)).min(6))
                    .min(MAX_RETRY);
                if !reconfigured {
                    e.due = now + wait;
                }
                tracing::error!(
                    certificate = %e.name,
                    retry_in_s = wait.as_secs(),
                    error = "no OCSP staple obtained from any responders",
                    "Unable to retrieve OCSP staple for: {}",
                    e.name
                );
            }
        }
    }
}

/// When to ask again after `staple` (at `now`, wall time `wall`), and when it stops holding:
/// halfway from `thisUpdate` to `nextUpdate`, as Traefik; an answer already past halfway (a
/// responder serving a cached answer) again halfway to its end, between 1 min and 1 h away;
/// never later than [`MAX_WAIT`]. It holds until its `nextUpdate` (with the clock slack the
/// checks allow), or [`NO_NEXT_UPDATE_LIFE`] after its `thisUpdate` without one.
fn schedule(staple: &Staple, now: Instant, wall: SystemTime) -> (Instant, Option<Instant>) {
    let after = |d: Duration| now.checked_add(d.min(MAX_WAIT)).unwrap_or(now);
    let Some(next) = staple.next_update else {
        let end = staple.this_update + NO_NEXT_UPDATE_LIFE;
        let life = end.duration_since(wall).unwrap_or_default();
        return (after(NO_NEXT_UPDATE), Some(after(life)));
    };
    let left = (next + SLACK).duration_since(wall).unwrap_or_default();
    let span = next.duration_since(staple.this_update).unwrap_or_default();
    let halfway = staple.this_update + span / 2;
    let wait = match halfway.duration_since(wall) {
        Ok(w) if !w.is_zero() => w,
        _ => (left / 2).clamp(FIRST_RETRY, MAX_RETRY),
    };
    // A staple held past MAX_WAIT is asked for again before then; its end is kept as far as
    // an Instant reaches.
    let expires = now.checked_add(left);
    (after(wait), expires)
}

/// For the `ocsp_answer` fuzz target ([`crate::fuzzing::ocsp_answer`]).
pub(crate) fn fuzz_answer(data: &[u8]) {
    use rustls_pki_types::pem::PemObject as _;
    let (Ok(leaf), Ok(ca)) = (
        CertificateDer::from_pem_slice(include_bytes!("../../tests/fixtures/ocsp/good.crt")),
        CertificateDer::from_pem_slice(include_bytes!("../../tests/fixtures/ocsp/ca.crt")),
    ) else {
        return;
    };
    let Ok(id) = CertId::of(&leaf, &ca) else {
        return;
    };
    // 2026-12-05: inside the fixtures' answers.
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_428_800);
    if let Ok(staple) = der::check(data, &id, &ca, now) {
        assert_eq!(staple.der, data, "an accepted answer is stapled as it came");
        let wall = now;
        let _ = schedule(&staple, Instant::now(), wall);
    }
}

/// The stapler's task: fetches what is due, one at a time (as Traefik's single worker), then
/// sleeps until the next due time or a commit. Ends when the stapler is dropped.
async fn run(stapler: Weak<Stapler>, wake: Arc<Notify>) {
    /// Lets the next [`Stapler::add`] start the task again should this one end early.
    struct Running(Weak<Stapler>);
    impl Drop for Running {
        fn drop(&mut self) {
            if let Some(s) = self.0.upgrade() {
                s.state().task = false;
            }
        }
    }
    let _running = Running(stapler.clone());
    loop {
        let notified = wake.notified();
        let next = {
            let Some(s) = stapler.upgrade() else {
                return;
            };
            let (jobs, _) = s.due();
            for job in &jobs {
                let outcome = s.ask(job).await;
                s.record(job, outcome);
            }
            let (more, next) = s.due();
            if !more.is_empty() {
                continue; // Became due while fetching.
            }
            next
        };
        let janitor = Instant::now() + JANITOR;
        let t = next.map_or(janitor, |t| t.min(janitor));
        tokio::select! {
            () = tokio::time::sleep_until(t) => {}
            () = notified => {}
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code: a panic is a test failure")]

    use super::*;
    use rustls_pki_types::pem::PemObject as _;

    const DAY: Duration = Duration::from_secs(24 * 3600);
    const AIA: &str = "http://127.0.0.1:18610";

    fn pem(text: &str) -> CertificateDer<'static> {
        CertificateDer::from_pem_slice(text.as_bytes()).unwrap()
    }
    fn ca() -> CertificateDer<'static> {
        pem(include_str!("../../tests/fixtures/ocsp/ca.crt"))
    }
    fn good() -> CertificateDer<'static> {
        pem(include_str!("../../tests/fixtures/ocsp/good.crt"))
    }
    const GOOD: &[u8] = include_bytes!("../../tests/fixtures/ocsp/resp-good-ca.der");
    const REVOKED: &[u8] = include_bytes!("../../tests/fixtures/ocsp/resp-revoked.der");

    /// A certificate as the resolver serves it (the key does not matter to the stapler).
    fn served(chain: Vec<CertificateDer<'static>>) -> Arc<Served> {
        let key = rcgen::KeyPair::generate().unwrap();
        let der = rustls_pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap();
        let signer = rustls::crypto::aws_lc_rs::sign::any_supported_type(&der).unwrap();
        Served::new(CertifiedKey::new(chain, signer))
    }

    /// Responders by URL (absent: connection refused), and every request made.
    #[derive(Default)]
    struct Responders {
        answers: Mutex<HashMap<String, Result<Vec<u8>, String>>>,
        asked: Mutex<Vec<(String, Vec<u8>)>>,
        /// How long each answer takes.
        delay: Mutex<Duration>,
    }

    impl Responders {
        fn answer(&self, url: &str, answer: Result<&[u8], &str>) {
            self.answers.lock().unwrap().insert(
                url.to_owned(),
                answer.map(<[u8]>::to_vec).map_err(str::to_owned),
            );
        }
        fn asked(&self) -> Vec<String> {
            self.asked
                .lock()
                .unwrap()
                .iter()
                .map(|(u, _)| u.clone())
                .collect()
        }
    }

    /// A stapler on 2026-12-05 00:00 UTC (inside the fixtures' answers: thisUpdate
    /// 2026-12-04 02:57:56, nextUpdate 7 days later, so halfway is 2 d 14:57:56 away).
    fn stapler() -> (Arc<Stapler>, Arc<Responders>) {
        let r = Arc::new(Responders::default());
        let r2 = r.clone();
        let fetch: Fetch = Arc::new(move |url, body| {
            r2.asked.lock().unwrap().push((url.clone(), body));
            let a = r2
                .answers
                .lock()
                .unwrap()
                .get(&url)
                .cloned()
                .unwrap_or_else(|| Err("connection refused".into()));
            let delay = *r2.delay.lock().unwrap();
            Box::pin(async move {
                tokio::time::sleep(delay).await;
                a
            })
        });
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_428_800);
        (
            Arc::new(Stapler::with(fetch, Clock::Fixed(wall, Instant::now()))),
            r,
        )
    }

    fn batch(overrides: &[(&str, &str)], certs: &[&Arc<Served>]) -> Option<Batch> {
        let mut b = Batch::new(&bridge_plan::Ocsp {
            responder_overrides: overrides
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        });
        for c in certs {
            b.add(c, "test.crt");
        }
        Some(b)
    }

    /// Lets the stapler's task run, then moves (paused) time on by `d`.
    async fn after(d: Duration) {
        tokio::task::yield_now().await;
        tokio::time::sleep(d).await;
        tokio::task::yield_now().await;
    }

    fn staple(s: &Served) -> Option<Vec<u8>> {
        s.key().ocsp.clone()
    }

    #[tokio::test(start_paused = true)]
    async fn a_good_answer_is_stapled_at_once_and_asked_again_halfway() {
        let (st, r) = stapler();
        r.answer(AIA, Ok(GOOD));
        let s = served(vec![good(), ca()]);
        st.commit(batch(&[], &[&s]));
        after(Duration::from_millis(1)).await;
        assert_eq!(staple(&s).as_deref(), Some(GOOD));
        let asked = r.asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].0, AIA);
        assert_eq!(
            asked[0].1,
            include_bytes!("../../tests/fixtures/ocsp/req-good.der")
        );
        // Halfway from thisUpdate to nextUpdate: 2 d 14:57:56 from the start.
        let halfway = Duration::from_secs(2 * 86_400 + 14 * 3600 + 57 * 60 + 56);
        after(halfway - Duration::from_secs(2)).await;
        assert_eq!(r.asked().len(), 1);
        after(Duration::from_secs(3)).await;
        assert_eq!(r.asked().len(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn failures_keep_the_old_staple_retry_sooner_and_a_stale_one_is_withdrawn() {
        let (st, r) = stapler();
        r.answer(AIA, Err("due to status code: 500"));
        let s = served(vec![good(), ca()]);
        st.commit(batch(&[], &[&s]));
        after(Duration::from_millis(1)).await;
        assert_eq!(staple(&s), None);
        // Retries after 1 min, then 2 min more (Traefik waits for a reload or the hour).
        after(Duration::from_secs(61)).await;
        assert_eq!(r.asked().len(), 2);
        after(Duration::from_secs(60)).await;
        assert_eq!(r.asked().len(), 2);
        after(Duration::from_secs(61)).await;
        assert_eq!(r.asked().len(), 3);
        // Answers again: stapled at the next retry (4 min later).
        r.answer(AIA, Ok(GOOD));
        after(Duration::from_secs(241)).await;
        assert_eq!(staple(&s).as_deref(), Some(GOOD));
        // The responder fails from halfway on: the staple stays until its nextUpdate
        // (2026-12-11 02:57:56, 6 d 02:57:56 from the start) and the minute of clock slack the
        // checks allow, then goes.
        r.answer(AIA, Err("connection refused"));
        let next_update = Duration::from_secs(6 * 86_400 + 2 * 3600 + 57 * 60 + 56);
        after(next_update - Duration::from_secs(600) - Duration::from_secs(61 + 60 + 61 + 241))
            .await;
        assert_eq!(staple(&s).as_deref(), Some(GOOD));
        assert!(r.asked().len() > 5, "{}", r.asked().len());
        after(Duration::from_secs(650)).await;
        assert_eq!(staple(&s).as_deref(), Some(GOOD));
        after(Duration::from_secs(11)).await;
        assert_eq!(staple(&s), None);
    }

    #[tokio::test(start_paused = true)]
    async fn overrides_replace_the_named_responder_and_revoked_is_stapled() {
        let (st, r) = stapler();
        r.answer("http://127.0.0.1:9/over", Ok(REVOKED));
        let revoked = served(vec![
            pem(include_str!("../../tests/fixtures/ocsp/revoked.crt")),
            ca(),
        ]);
        st.commit(batch(&[(AIA, "http://127.0.0.1:9/over")], &[&revoked]));
        after(Duration::from_millis(1)).await;
        assert_eq!(r.asked(), ["http://127.0.0.1:9/over"]);
        assert_eq!(staple(&revoked).as_deref(), Some(REVOKED));
        // An override that differs by case does not apply: the certificate's URL is asked.
        let (st, r) = stapler();
        let s = served(vec![good(), ca()]);
        st.commit(batch(&[("HTTP://127.0.0.1:18610", "http://x")], &[&s]));
        after(Duration::from_millis(1)).await;
        assert_eq!(r.asked(), [AIA]);
        // The answer for another certificate is not stapled.
        r.answer(AIA, Ok(REVOKED));
        st.commit(batch(&[], &[&s]));
        after(Duration::from_millis(1)).await;
        assert_eq!(r.asked().len(), 2);
        assert_eq!(staple(&s), None);
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_responder_or_an_issuer_nothing_is_asked() {
        let (st, r) = stapler();
        let no_aia = served(vec![pem(include_str!(
            "../../tests/fixtures/ocsp/other-ca.crt"
        ))]);
        let leaf_only = served(vec![good()]);
        st.commit(batch(&[], &[&no_aia, &leaf_only]));
        after(Duration::from_secs(7200)).await;
        assert!(r.asked().is_empty());
        assert!(st.state().entries.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn reloads_keep_staples_and_a_removed_certificate_is_forgotten_after_a_day() {
        let (st, r) = stapler();
        r.answer(AIA, Ok(GOOD));
        let first = served(vec![good(), ca()]);
        st.commit(batch(&[], &[&first]));
        after(Duration::from_millis(1)).await;
        assert_eq!(r.asked().len(), 1);
        // A reload serves the same file anew: stapled at once, not asked again (the old
        // runtime still serves until the new one takes over).
        let second = served(vec![good(), ca()]);
        st.commit(batch(&[], &[&second]));
        drop(first);
        after(Duration::from_millis(1)).await;
        assert_eq!(staple(&second).as_deref(), Some(GOOD));
        assert_eq!(r.asked().len(), 1);
        // Removed (the old runtime dropped after the new one took over), then back within a
        // day: still stapled without asking.
        st.commit(batch(&[], &[]));
        drop(second);
        after(DAY / 2).await;
        let third = served(vec![good(), ca()]);
        st.commit(batch(&[], &[&third]));
        after(Duration::from_millis(1)).await;
        assert_eq!(staple(&third).as_deref(), Some(GOOD));
        assert_eq!(r.asked().len(), 1);
        // Removed for longer than a day: forgotten (noticed within the janitor's 5 min).
        st.commit(batch(&[], &[]));
        drop(third);
        after(DAY + JANITOR + Duration::from_secs(1)).await;
        assert!(st.state().entries.is_empty());
        // Stapling turned off: nothing kept, and what is still served loses its staple.
        let fourth = served(vec![good(), ca()]);
        st.commit(batch(&[], &[&fourth]));
        after(Duration::from_millis(1)).await;
        assert_eq!(staple(&fourth).as_deref(), Some(GOOD));
        st.commit(None);
        assert!(st.state().entries.is_empty());
        assert_eq!(staple(&fourth), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_reload_during_a_failing_fetch_still_asks_at_once() {
        let (st, r) = stapler();
        *r.delay.lock().unwrap() = Duration::from_secs(5);
        let s = served(vec![good(), ca()]);
        st.commit(batch(&[], &[&s]));
        after(Duration::from_secs(1)).await;
        assert_eq!(r.asked().len(), 1);
        // The responder is fixed and a reload says so while the first fetch is under way.
        r.answer(AIA, Ok(GOOD));
        st.commit(batch(&[], &[&s]));
        after(Duration::from_secs(10)).await;
        assert_eq!(r.asked().len(), 2, "asked again without the 1 min backoff");
        assert_eq!(staple(&s).as_deref(), Some(GOOD));
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_older_than_the_staple_does_not_replace_it_and_a_delegated_one_is_taken() {
        let (st, r) = stapler();
        let signer: &[u8] = include_bytes!("../../tests/fixtures/ocsp/resp-good-signer.der");
        r.answer(AIA, Ok(signer));
        let s = served(vec![good(), ca()]);
        st.commit(batch(&[], &[&s]));
        after(Duration::from_millis(1)).await;
        assert_eq!(staple(&s).as_deref(), Some(signer));
        let (leaf, generation, id, this_update) = {
            let state = st.state();
            let (leaf, e) = state.entries.iter().next().unwrap();
            let this = e.staple.as_ref().unwrap().this_update;
            (leaf.clone(), e.generation, e.id.clone(), this)
        };
        let job = Job {
            leaf,
            generation,
            name: String::new(),
            id,
            issuer: ca(),
            responders: Vec::new(),
        };
        let older = Staple {
            der: b"older".to_vec(),
            status: CertStatus::Good,
            this_update: this_update - Duration::from_secs(3600),
            next_update: None,
        };
        st.record(&job, Ok(older));
        assert_eq!(staple(&s).as_deref(), Some(signer));
    }

    #[test]
    fn the_schedule_is_halfway_capped_and_ends_at_next_update() {
        let now = Instant::now();
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let at = |secs: i64| {
            let d = Duration::from_secs(secs.unsigned_abs());
            if secs < 0 { wall - d } else { wall + d }
        };
        let staple = |this: i64, next: Option<i64>| Staple {
            der: Vec::new(),
            status: CertStatus::Good,
            this_update: at(this),
            next_update: next.map(at),
        };
        // Halfway from thisUpdate to nextUpdate; the end at nextUpdate plus the clock slack.
        let (due, expires) = schedule(&staple(-3600, Some(7 * 3600)), now, wall);
        assert_eq!(due - now, Duration::from_secs(3 * 3600));
        assert_eq!(expires.unwrap() - now, Duration::from_secs(7 * 3600 + 60));
        // Past halfway: again halfway to the end, at least a minute, at most an hour away.
        let (due, _) = schedule(&staple(-7200, Some(600)), now, wall);
        assert_eq!(due - now, Duration::from_secs(330));
        let (due, _) = schedule(&staple(-86_400, Some(30)), now, wall);
        assert_eq!(due - now, FIRST_RETRY);
        // Without nextUpdate: hourly, held a day from thisUpdate.
        let (due, expires) = schedule(&staple(-600, None), now, wall);
        assert_eq!(due - now, Duration::from_secs(3600));
        assert_eq!(expires.unwrap() - now, Duration::from_secs(86_400 - 600));
        // A nextUpdate years ahead: asked again within a week, no overflow.
        let (due, expires) = schedule(&staple(0, Some(200 * 365 * 86_400)), now, wall);
        assert_eq!(due - now, MAX_WAIT);
        assert!(expires.is_some());
    }

    #[test]
    fn the_aia_ocsp_urls_are_read_in_order() {
        let leaf = good();
        let (_, parsed) = x509_parser::parse_x509_certificate(leaf.as_ref()).unwrap();
        assert_eq!(ocsp_urls(&parsed), [AIA]);
        let ca = ca();
        let (_, parsed) = x509_parser::parse_x509_certificate(ca.as_ref()).unwrap();
        assert!(ocsp_urls(&parsed).is_empty());
    }
}
