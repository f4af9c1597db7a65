//! Active health checking of load-balancer servers.
//!
//! What a probe is and what counts as healthy follow Traefik (`pkg/healthcheck`): the probe URL is
//! the server URL with its path (and query) replaced by the check's `path`, `scheme`/`port`
//! overridden when set, `hostname` sent as `Host`, the check's `method` and `headers`, redirects
//! followed unless `follow_redirects` is false; healthy is exactly `status` when set, else
//! `200 ≤ status < 400`; a probe that errs or outlasts `timeout_ms` is unhealthy. One probe decides
//! (no rise/fall thresholds).
//!
//! What differs from Traefik, deliberately (see issue "bridge-runtime: serve the plan"):
//!
//! - Every server is probed at start, all in parallel, instead of one interval later; with
//!   `probe_before_traffic` nothing is sent to a server before it answered
//!   ([`HealthChecker::wait_ready`] lets the listener open only after the first round).
//! - Up servers are probed every `interval_ms`, Down (and not yet probed) servers every
//!   `min(unhealthy_interval_ms, down_reprobe_interval_ms)` (250 ms by default) instead of every
//!   `unhealthy_interval_ms`.
//! - A server changing state (other than its first result) triggers an immediate probe of the other
//!   servers of its load balancer, so a promoted standby gets traffic and the demoted active node
//!   loses it at the same moment.
//! - A failure on live traffic ([`Upstreams::report_failure`]) triggers an immediate probe of every
//!   server of the load balancer. A success of a probe that was already in flight when a server was
//!   marked down on live traffic is not trusted: the server is probed again at once instead.
//!
//! Task structure: [`HealthChecker::spawn`] starts one task per load balancer with a health check
//! (plus one that waits for the shutdown signal). Each task keeps, per server, the instant its next
//! probe is due, runs due probes concurrently in its own [`JoinSet`] (at most one in flight per
//! server, each bounded by `timeout_ms`), and sleeps until the next due instant, a probe's
//! completion, a wake-up from [`Upstreams::report_failure`], or shutdown. The actual HTTP request
//! is made by a [`Prober`], so the logic runs with a fake one under tokio's paused clock in tests.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bridge_plan::HealthCheck;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::upstream::{ServerState, Upstreams};

/// Probe interval used when a plan says `0` (Traefik's default).
pub(crate) const DEFAULT_INTERVAL: Duration = Duration::from_secs(30);
/// Probe timeout used when a plan says `0` (Traefik's default).
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest interval or timeout honoured; longer values are shortened to this.
pub(crate) const MAX_INTERVAL: Duration = Duration::from_secs(24 * 60 * 60);

/// One probe request, derived from a load balancer's [`HealthCheck`] and one server URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeTarget {
    /// Absolute URL to request: the server's scheme, host and port (each overridable by the
    /// check) with the check's path and query.
    pub url: String,
    /// HTTP method, upper-case.
    pub method: String,
    /// `Host` header to send; `None`: the URL's authority.
    pub host_header: Option<String>,
    /// Extra request headers, in name order.
    pub headers: Vec<(String, String)>,
    /// Give up (and count the server unhealthy) after this long.
    pub timeout: Duration,
    /// Follow redirects answered to the probe.
    pub follow_redirects: bool,
    /// The only healthy status, when set; else any `200..400`.
    pub expected_status: Option<u16>,
    /// The gRPC Health Checking Protocol instead of an HTTP request (`url` is then
    /// `h2c://host:port/grpc.health.v1.Health/Check`).
    pub grpc: bool,
}

/// Why a server URL cannot be probed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeTargetError {
    /// The server URL does not parse.
    #[error("not a URL: {0}")]
    Parse(#[from] url::ParseError),
    /// The server URL has no host.
    #[error("the URL has no host")]
    NoHost,
}

/// The method of the gRPC Health Checking Protocol v1 a gRPC check calls.
pub(crate) const GRPC_HEALTH_PATH: &str = "/grpc.health.v1.Health/Check";

impl ProbeTarget {
    /// The probe of `server_url` under `check`.
    ///
    /// The port is kept only when the server URL names a non-default one (as written, after URL
    /// normalisation), so overriding only the scheme probes that scheme's default port, as in
    /// Traefik. User information in the server URL is kept.
    pub fn new(check: &HealthCheck, server_url: &str) -> Result<Self, ProbeTargetError> {
        let parsed = url::Url::parse(server_url)?;
        let host = parsed.host_str().ok_or(ProbeTargetError::NoHost)?;
        if check.mode == bridge_plan::HealthCheckMode::Grpc {
            // As Traefik dials it: HTTP/2 without TLS to the server's host and port (or the
            // check's port); path, method, hostname and headers do not take part.
            let port = check.port.or(parsed.port_or_known_default()).unwrap_or(80);
            let host = match parsed.host() {
                Some(url::Host::Ipv6(ip)) => format!("[{ip}]"),
                _ => host.to_owned(),
            };
            return Ok(Self {
                url: format!("h2c://{host}:{port}{GRPC_HEALTH_PATH}"),
                method: "POST".to_owned(),
                host_header: None,
                headers: Vec::new(),
                timeout: millis_or(check.timeout_ms, DEFAULT_TIMEOUT),
                follow_redirects: false,
                expected_status: None,
                grpc: true,
            });
        }
        let scheme = check.scheme.as_deref().unwrap_or(parsed.scheme());
        let mut url = format!("{scheme}://");
        if !parsed.username().is_empty() || parsed.password().is_some() {
            url.push_str(parsed.username());
            if let Some(password) = parsed.password() {
                url.push(':');
                url.push_str(password);
            }
            url.push('@');
        }
        url.push_str(host);
        if let Some(port) = check.port.or(parsed.port()) {
            url.push(':');
            url.push_str(&port.to_string());
        }
        if !check.path.starts_with('/') {
            url.push('/');
        }
        url.push_str(&check.path);
        Ok(Self {
            url,
            method: if check.method.is_empty() {
                "GET".to_owned()
            } else {
                check.method.clone()
            },
            host_header: check.hostname.clone(),
            headers: check
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            timeout: millis_or(check.timeout_ms, DEFAULT_TIMEOUT),
            follow_redirects: check.follow_redirects,
            expected_status: check.status,
            grpc: false,
        })
    }

    /// Whether `result` counts as healthy for this target (see [`is_healthy`]).
    pub fn is_healthy(&self, result: &ProbeResult) -> bool {
        is_healthy(self.expected_status, result)
    }
}

/// Healthy = no error and a status equal to `expected` when set, else `200 ≤ status < 400`.
pub(crate) fn is_healthy(expected: Option<u16>, result: &ProbeResult) -> bool {
    if result.error.is_some() {
        return false;
    }
    match (result.status, expected) {
        (None, _) => false,
        (Some(status), Some(expected)) => status == expected,
        (Some(status), None) => (200..400).contains(&status),
    }
}

/// What one probe saw.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProbeResult {
    /// The response status, if a response arrived.
    pub status: Option<u16>,
    /// Why no usable response arrived (connect error, TLS error, …).
    pub error: Option<String>,
}

impl ProbeResult {
    /// A response with `status`.
    pub fn status(status: u16) -> Self {
        Self {
            status: Some(status),
            error: None,
        }
    }

    /// No response, because of `error`.
    pub fn failed(error: impl Into<String>) -> Self {
        Self {
            status: None,
            error: Some(error.into()),
        }
    }

    fn describe(&self) -> String {
        match (&self.error, self.status) {
            (Some(error), _) => format!("probe failed: {error}"),
            (None, Some(status)) => format!("probe answered {status}"),
            (None, None) => "probe got no answer".to_owned(),
        }
    }
}

/// Sends one probe. The real implementation is an HTTP client; tests use a fake.
///
/// The health checker bounds every probe by the probe target's `timeout` itself, so an implementation
/// may but need not enforce it.
pub trait Prober: Send + Sync + 'static {
    /// Probes `target` once.
    fn probe(&self, target: &ProbeTarget) -> impl Future<Output = ProbeResult> + Send;
}

/// When probes are due for one load balancer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Schedule {
    up: Duration,
    down: Duration,
    timeout: Duration,
}

impl Schedule {
    fn of(check: &HealthCheck) -> Self {
        let up = millis_or(check.interval_ms, DEFAULT_INTERVAL);
        let down = [check.unhealthy_interval_ms, check.down_reprobe_interval_ms]
            .into_iter()
            .filter(|&ms| ms > 0)
            .min()
            .map_or(up, |ms| millis_or(ms, up));
        Self {
            up,
            down,
            timeout: millis_or(check.timeout_ms, DEFAULT_TIMEOUT),
        }
    }
}

/// `ms` milliseconds, `default` when `0`, at most [`MAX_INTERVAL`].
fn millis_or(ms: u64, default: Duration) -> Duration {
    if ms == 0 {
        default
    } else {
        Duration::from_millis(ms).min(MAX_INTERVAL)
    }
}

/// The running health checks of one [`Upstreams`].
///
/// Dropping it stops every check at once; [`HealthChecker::join`] waits for them to stop after the
/// shutdown signal.
#[derive(Debug)]
pub struct HealthChecker {
    tasks: JoinSet<()>,
    unprobed: watch::Receiver<usize>,
}

impl HealthChecker {
    /// Starts checking every load balancer of `upstreams` that has a health check, with `prober`,
    /// until `shutdown` completes. Must be called inside a tokio runtime.
    pub fn spawn<P: Prober>(
        upstreams: &Upstreams,
        prober: Arc<P>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Self {
        let checked = upstreams.health_checked();
        let total = checked
            .iter()
            .filter_map(|&node| upstreams.lb(node))
            .map(|lb| lb.servers.iter().filter(|s| s.probe.is_some()).count())
            .sum();
        let (unprobed_tx, unprobed) = watch::channel(total);
        let unprobed_tx = Arc::new(unprobed_tx);
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut tasks = JoinSet::new();
        for node in checked {
            tasks.spawn(check_service(
                upstreams.clone(),
                node,
                prober.clone(),
                stop_rx.clone(),
                unprobed_tx.clone(),
            ));
        }
        tasks.spawn(async move {
            shutdown.await;
            // An error only means every check has already stopped.
            let _ = stop_tx.send(true);
        });
        Self { tasks, unprobed }
    }

    /// Resolves once every health-checked server has been probed once (answered, failed or timed
    /// out), or the checks have stopped.
    pub async fn wait_ready(&self) {
        let mut unprobed = self.unprobed.clone();
        // An error means the checks stopped: nothing more to wait for.
        let _ = unprobed.wait_for(|n| *n == 0).await;
    }

    /// How many health-checked servers have not been probed yet.
    pub fn unprobed(&self) -> usize {
        *self.unprobed.borrow()
    }

    /// Waits until every check has stopped (after the shutdown signal).
    pub async fn join(mut self) {
        while self.tasks.join_next().await.is_some() {}
    }
}

/// Per-server bookkeeping of one check task.
#[derive(Debug)]
struct Probed {
    /// Position in the load balancer's servers.
    index: usize,
    target: Arc<ProbeTarget>,
    /// When the next probe is due; `None` while one is in flight.
    due: Option<Instant>,
    /// The in-flight probe, to recognise it if it panics.
    task: Option<tokio::task::Id>,
    /// Probe again as soon as the in-flight probe completes.
    again: bool,
    /// The server was marked down on live traffic while a probe was in flight: a success of that
    /// probe may predate the failure and is not trusted.
    distrust_success: bool,
    /// Its first result has been recorded.
    probed: bool,
}

impl Probed {
    /// Asks for a probe now, or right after the one in flight.
    fn request(&mut self, now: Instant, distrust_success: bool) {
        if self.task.is_some() {
            self.again = true;
            self.distrust_success |= distrust_success;
        } else {
            self.due = Some(now);
        }
    }
}

/// The check loop of one load balancer (see the module documentation).
async fn check_service<P: Prober>(
    upstreams: Upstreams,
    node: usize,
    prober: Arc<P>,
    mut stop: watch::Receiver<bool>,
    unprobed: Arc<watch::Sender<usize>>,
) {
    let Some(lb) = upstreams.lb(node) else {
        return;
    };
    let Some(check) = &lb.health_check else {
        return;
    };
    let schedule = Schedule::of(check);
    let start = Instant::now();
    let mut servers: Vec<Probed> = lb
        .servers
        .iter()
        .enumerate()
        .filter_map(|(index, slot)| {
            Some(Probed {
                index,
                target: slot.probe.clone()?,
                due: Some(start),
                task: None,
                again: false,
                distrust_success: false,
                probed: false,
            })
        })
        .collect();
    let mut in_flight: JoinSet<(usize, Instant, ProbeResult)> = JoinSet::new();
    loop {
        let now = Instant::now();
        for (pos, server) in servers.iter_mut().enumerate() {
            if server.due.is_none_or(|due| due > now) {
                continue;
            }
            server.due = None;
            let target = server.target.clone();
            let prober = prober.clone();
            let timeout = schedule.timeout;
            let handle = in_flight.spawn(async move {
                let started = Instant::now();
                let result = match tokio::time::timeout(timeout, prober.probe(&target)).await {
                    Ok(result) => result,
                    Err(_) => {
                        ProbeResult::failed(format!("no answer within {} ms", timeout.as_millis()))
                    }
                };
                (pos, started, result)
            });
            server.task = Some(handle.id());
        }
        let next_due = servers.iter().filter_map(|s| s.due).min();

        tokio::select! {
            biased;
            _ = stop.wait_for(|stop| *stop) => return,
            joined = in_flight.join_next_with_id(), if !in_flight.is_empty() => {
                let (pos, started, result) = match joined {
                    Some(Ok((_, done))) => done,
                    Some(Err(error)) => {
                        let Some(pos) = servers.iter().position(|s| s.task == Some(error.id())) else {
                            continue;
                        };
                        (pos, Instant::now(), ProbeResult::failed(format!("the probe task failed: {error}")))
                    }
                    None => continue,
                };
                record(&upstreams, node, &schedule, &mut servers, pos, started, &result, &unprobed);
            }
            () = lb.reprobe.notified() => {
                let now = Instant::now();
                for server in &mut servers {
                    server.request(now, true);
                }
            }
            () = tokio::time::sleep_until(next_due.unwrap_or(now)), if next_due.is_some() => {}
        }
    }
}

/// Applies one probe result and schedules what follows.
#[allow(
    clippy::too_many_arguments,
    reason = "the probe loop's state, passed apart so the loop can keep borrowing it"
)]
fn record(
    upstreams: &Upstreams,
    node: usize,
    schedule: &Schedule,
    servers: &mut [Probed],
    pos: usize,
    started: Instant,
    result: &ProbeResult,
    unprobed: &watch::Sender<usize>,
) {
    let now = Instant::now();
    let Some(server) = servers.get_mut(pos) else {
        return;
    };
    server.task = None;
    let again = std::mem::take(&mut server.again);
    let distrust_success = std::mem::take(&mut server.distrust_success);
    let healthy = server.target.is_healthy(result);
    if healthy
        && distrust_success
        && upstreams.state_at(node, server.index) != Some(ServerState::Up)
    {
        server.due = Some(now);
        return;
    }
    let to = if healthy {
        ServerState::Up
    } else {
        ServerState::Down
    };
    let change = upstreams.set_state_at(node, server.index, to, &result.describe());
    upstreams.probe_recorded(node);
    if !std::mem::replace(&mut server.probed, true) {
        unprobed.send_modify(|n| *n = n.saturating_sub(1));
    }
    server.due = Some(if again {
        now
    } else {
        let interval = if healthy { schedule.up } else { schedule.down };
        (started + interval).max(now)
    });
    // A real change (not a first result) hints that the other servers changed too: an active node
    // demoted, a standby promoted. Look at them now.
    if change.is_some_and(|c| c.from != ServerState::Unknown) {
        for (other_pos, other) in servers.iter_mut().enumerate() {
            if other_pos != pos {
                other.request(now, false);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};
    use std::sync::Mutex;

    use bridge_plan::{Failover, ServiceKind};
    use tokio::time::advance;

    use super::*;
    use crate::upstream::tests::{lb, plan, seed_check};
    use crate::upstream::{FailureKind, Pick, StateChange};

    const A: &str = "http://10.0.0.11:8080";
    const B: &str = "http://10.0.0.12:8080";

    /// A prober whose answer per probe URL can be changed at any time, with optional latency
    /// (which the paused clock turns into virtual time). Records every probe.
    #[derive(Debug, Clone, Default)]
    struct FakeProber {
        inner: Arc<Mutex<Fake>>,
    }

    #[derive(Debug, Default)]
    struct Fake {
        answers: HashMap<String, (ProbeResult, Duration)>,
        calls: Vec<(Instant, String)>,
    }

    /// The seed's probe URL of a server.
    fn probe_url(server: &str) -> String {
        format!("{server}/health/active")
    }

    impl FakeProber {
        fn answer(&self, server: &str, result: ProbeResult, latency: Duration) {
            self.inner
                .lock()
                .unwrap()
                .answers
                .insert(probe_url(server), (result, latency));
        }

        fn status(&self, server: &str, status: u16) {
            self.answer(server, ProbeResult::status(status), Duration::ZERO);
        }

        fn calls(&self, server: &str) -> usize {
            let url = probe_url(server);
            let inner = self.inner.lock().unwrap();
            inner.calls.iter().filter(|(_, u)| *u == url).count()
        }
    }

    impl Prober for FakeProber {
        fn probe(&self, target: &ProbeTarget) -> impl Future<Output = ProbeResult> + Send {
            let (result, latency) =
                {
                    let mut inner = self.inner.lock().unwrap();
                    inner.calls.push((Instant::now(), target.url.clone()));
                    inner.answers.get(&target.url).cloned().unwrap_or_else(|| {
                        (ProbeResult::failed("connection refused"), Duration::ZERO)
                    })
                };
            async move {
                if !latency.is_zero() {
                    tokio::time::sleep(latency).await;
                }
                result
            }
        }
    }

    /// Lets every ready task run (the clock does not move).
    async fn settle() {
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
    }

    /// Lets `total` of virtual time pass: the paused clock jumps from one timer to the next, every
    /// task running at each instant; then lets the tasks due at the end run too.
    async fn run_for(total: Duration) {
        tokio::time::sleep(total).await;
        settle().await;
    }

    fn url_of(pick: Pick) -> Option<String> {
        match pick {
            Pick::Server(s) => Some(s.url().to_owned()),
            _ => None,
        }
    }

    /// The seed: one load balancer `central` over the two nodes with the seed's check.
    fn seed() -> (Upstreams, FakeProber) {
        let up = Upstreams::from_plan(&plan(vec![(
            "central",
            lb(&[(A, 1), (B, 1)], Some(seed_check())),
        )]))
        .unwrap();
        (up, FakeProber::default())
    }

    fn spawn(up: &Upstreams, fake: &FakeProber) -> HealthChecker {
        HealthChecker::spawn(up, Arc::new(fake.clone()), std::future::pending())
    }

    fn state(up: &Upstreams, service: &str, url: &str) -> ServerState {
        up.state(&up.server_ref(service, url).unwrap()).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn seed_failover_within_a_quarter_second() {
        let (up, fake) = seed();
        fake.status(A, 200);
        fake.status(B, 503);
        let start = Instant::now();
        let checker = spawn(&up, &fake);
        // Before the first probe answered, nothing is picked.
        assert_eq!(up.pick("central"), Pick::NoAvailableServer);
        assert_eq!(checker.unprobed(), 2);

        checker.wait_ready().await;
        assert_eq!(Instant::now(), start, "the first round runs at once");
        assert_eq!(checker.unprobed(), 0);
        assert_eq!(state(&up, "central", A), ServerState::Up);
        assert_eq!(state(&up, "central", B), ServerState::Down);
        for _ in 0..20 {
            assert_eq!(url_of(up.pick("central")).as_deref(), Some(A));
        }
        run_for(Duration::from_millis(1_003)).await;
        for _ in 0..20 {
            assert_eq!(url_of(up.pick("central")).as_deref(), Some(A));
        }

        // The active node is demoted and the standby promoted.
        fake.status(A, 503);
        fake.status(B, 200);
        let flip = Instant::now();
        let mut first_b = None;
        let mut picks = Vec::new();
        for _ in 0..250 {
            advance(Duration::from_millis(1)).await;
            settle().await;
            let pick = url_of(up.pick("central"));
            if pick.as_deref() == Some(B) && first_b.is_none() {
                first_b = Some(Instant::now());
            }
            picks.push(pick);
        }
        let first_b = first_b.expect("B was not picked within 250 ms");
        assert!(first_b - flip <= Duration::from_millis(250));
        // From the first B on, never A again: the promotion triggered an immediate probe of A.
        let from_b = picks.iter().position(|p| p.as_deref() == Some(B)).unwrap();
        assert!(
            picks[from_b..].iter().all(|p| p.as_deref() == Some(B)),
            "{picks:?}"
        );
        assert_eq!(state(&up, "central", A), ServerState::Down);
        for _ in 0..40 {
            run_for(Duration::from_millis(250)).await;
            for _ in 0..10 {
                assert_eq!(url_of(up.pick("central")).as_deref(), Some(B));
            }
        }

        // Both down: no available server.
        fake.status(B, 503);
        run_for(Duration::from_millis(5_001)).await;
        assert_eq!(up.pick("central"), Pick::NoAvailableServer);
        assert_eq!(up.is_available("central"), Some(false));

        // Recovery of one node: back within 250 ms.
        fake.status(A, 200);
        run_for(Duration::from_millis(250)).await;
        assert_eq!(url_of(up.pick("central")).as_deref(), Some(A));
    }

    #[tokio::test(start_paused = true)]
    async fn first_round_is_parallel() {
        let (up, fake) = seed();
        fake.answer(A, ProbeResult::status(200), Duration::from_secs(1));
        fake.answer(B, ProbeResult::status(200), Duration::from_secs(1));
        let start = Instant::now();
        let checker = spawn(&up, &fake);
        settle().await;
        assert_eq!(up.pick("central"), Pick::NoAvailableServer);
        checker.wait_ready().await;
        assert_eq!(Instant::now() - start, Duration::from_secs(1));
        assert!(up.is_available("central").unwrap());
    }

    #[tokio::test(start_paused = true)]
    async fn probe_intervals_up_and_down() {
        let (up, fake) = seed();
        fake.status(A, 200);
        fake.status(B, 503);
        let checker = spawn(&up, &fake);
        checker.wait_ready().await;
        run_for(Duration::from_millis(5_000)).await;
        // Up: at 0 and 5 s. Down: at 0, 250, …, 5000 ms.
        assert_eq!(fake.calls(A), 2);
        assert_eq!(fake.calls(B), 21);

        // min(unhealthy_interval_ms, down_reprobe_interval_ms): here the unhealthy interval.
        let mut check = seed_check();
        check.unhealthy_interval_ms = 100;
        let up =
            Upstreams::from_plan(&plan(vec![("central", lb(&[(B, 1)], Some(check)))])).unwrap();
        let fake = FakeProber::default();
        fake.status(B, 503);
        let checker = spawn(&up, &fake);
        checker.wait_ready().await;
        run_for(Duration::from_millis(1_000)).await;
        assert_eq!(fake.calls(B), 11);
    }

    #[tokio::test(start_paused = true)]
    async fn report_failure_marks_down_and_probes_at_once() {
        let (up, fake) = seed();
        fake.status(A, 200);
        fake.status(B, 503);
        let checker = spawn(&up, &fake);
        checker.wait_ready().await;
        run_for(Duration::from_millis(100)).await;
        let (calls_a, calls_b) = (fake.calls(A), fake.calls(B));

        // The active node dies: live traffic sees the refused connection first.
        fake.answer(A, ProbeResult::failed("connection refused"), Duration::ZERO);
        let Pick::Server(current) = up.pick("central") else {
            panic!("A should be picked");
        };
        assert_eq!(current.url(), A);
        assert_eq!(
            up.report_failure(&current, FailureKind::ConnectRefused)
                .as_deref(),
            Some("central")
        );
        assert_eq!(
            up.state(&current),
            Some(ServerState::Down),
            "marked down at once"
        );
        assert_eq!(up.pick("central"), Pick::NoAvailableServer);
        settle().await;
        // Both servers probed again without the clock moving.
        assert_eq!(fake.calls(A), calls_a + 1);
        assert_eq!(fake.calls(B), calls_b + 1);
        assert_eq!(up.state(&current), Some(ServerState::Down));

        // The node comes back: the next down re-probe (≤ 250 ms) brings it up.
        fake.status(A, 200);
        run_for(Duration::from_millis(250)).await;
        assert_eq!(up.state(&current), Some(ServerState::Up));

        // A 5xx on live traffic does not mark down, but probes at once.
        let calls_a = fake.calls(A);
        assert_eq!(
            up.report_failure(&current, FailureKind::Status5xx)
                .as_deref(),
            Some("central")
        );
        assert_eq!(up.state(&current), Some(ServerState::Up));
        settle().await;
        assert_eq!(fake.calls(A), calls_a + 1);
    }

    #[tokio::test(start_paused = true)]
    async fn stale_success_after_passive_failure_is_not_trusted() {
        let (up, fake) = seed();
        fake.answer(A, ProbeResult::status(200), Duration::from_millis(100));
        fake.status(B, 503);
        let checker = spawn(&up, &fake);
        checker.wait_ready().await;
        // Now 100 ms in; A's next probe starts at 5 s and answers 200 100 ms later.
        run_for(Duration::from_millis(4_950)).await;
        let a = up.server_ref("central", A).unwrap();
        assert_eq!(fake.calls(A), 2, "a probe of A is in flight");
        // A dies while that probe is in flight.
        fake.answer(A, ProbeResult::failed("connection refused"), Duration::ZERO);
        let mut rx = up.subscribe();
        up.report_failure(&a, FailureKind::Reset);
        run_for(Duration::from_millis(60)).await;
        // The in-flight success was discarded and A probed again at once: still down, and never
        // up in between.
        assert_eq!(fake.calls(A), 3);
        assert_eq!(up.state(&a), Some(ServerState::Down));
        let change = rx.try_recv().unwrap();
        assert_eq!(
            (change.from, change.to),
            (ServerState::Up, ServerState::Down)
        );
        assert!(rx.try_recv().is_err(), "A went up again in between");
    }

    #[tokio::test(start_paused = true)]
    async fn a_hanging_probe_counts_as_down() {
        let (up, fake) = seed();
        fake.answer(A, ProbeResult::status(200), Duration::from_secs(10));
        fake.status(B, 200);
        let mut rx = up.subscribe();
        let start = Instant::now();
        let checker = spawn(&up, &fake);
        checker.wait_ready().await;
        assert_eq!(
            Instant::now() - start,
            Duration::from_secs(3),
            "timeout_ms bounds the probe"
        );
        assert_eq!(state(&up, "central", A), ServerState::Down);
        let mut changes = [rx.recv().await.unwrap(), rx.recv().await.unwrap()];
        changes.sort_by(|x, y| x.url.cmp(&y.url));
        assert_eq!(changes[0].reason, "probe failed: no answer within 3000 ms");
        assert_eq!(changes[0].at, start + Duration::from_secs(3));
        for _ in 0..5 {
            assert_eq!(url_of(up.pick("central")).as_deref(), Some(B));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn state_changes_are_broadcast() {
        let (up, fake) = seed();
        fake.status(A, 200);
        fake.status(B, 503);
        let mut rx = up.subscribe();
        let start = Instant::now();
        let checker = spawn(&up, &fake);
        checker.wait_ready().await;
        let mut changes = vec![rx.recv().await.unwrap(), rx.recv().await.unwrap()];
        changes.sort_by(|x, y| x.url.cmp(&y.url));
        let change = |url: &str, to, reason: &str| StateChange {
            service: "central".into(),
            url: url.into(),
            from: ServerState::Unknown,
            to,
            at: start,
            reason: reason.into(),
        };
        assert_eq!(
            changes,
            [
                change(A, ServerState::Up, "probe answered 200"),
                change(B, ServerState::Down, "probe answered 503"),
            ]
        );
        assert!(rx.try_recv().is_err(), "no change, no event");

        fake.status(B, 200);
        run_for(Duration::from_millis(250)).await;
        let change = rx.recv().await.unwrap();
        assert_eq!(
            (change.url.as_ref(), change.from, change.to),
            (B, ServerState::Down, ServerState::Up)
        );
        assert_eq!(change.at, start + Duration::from_millis(250));
    }

    #[tokio::test(start_paused = true)]
    async fn failover_switches_to_fallback_and_back() {
        let up = Upstreams::from_plan(&plan(vec![
            ("main", lb(&[(A, 1)], Some(seed_check()))),
            ("backup", lb(&[(B, 1)], Some(seed_check()))),
            (
                "central",
                ServiceKind::Failover(Failover {
                    service: "main".into(),
                    fallback: "backup".into(),
                    health_check: true,
                    errors: None,
                }),
            ),
        ]))
        .unwrap();
        let fake = FakeProber::default();
        fake.status(A, 200);
        fake.status(B, 200);
        let checker = spawn(&up, &fake);
        assert_eq!(up.pick("central"), Pick::NoAvailableServer);
        checker.wait_ready().await;
        assert_eq!(url_of(up.pick("central")).as_deref(), Some(A));

        fake.status(A, 503);
        run_for(Duration::from_millis(5_000)).await;
        assert_eq!(url_of(up.pick("central")).as_deref(), Some(B));

        fake.status(A, 200);
        run_for(Duration::from_millis(250)).await;
        assert_eq!(url_of(up.pick("central")).as_deref(), Some(A));

        fake.status(A, 503);
        fake.status(B, 503);
        run_for(Duration::from_millis(5_000)).await;
        assert_eq!(up.pick("central"), Pick::NoAvailableServer);
    }

    #[tokio::test(start_paused = true)]
    async fn expected_status_is_exact_when_set() {
        let ok = |s| ProbeResult::status(s);
        for status in [200, 204, 301, 302, 399] {
            assert!(is_healthy(None, &ok(status)), "{status}");
        }
        for status in [100, 199, 400, 404, 500, 503] {
            assert!(!is_healthy(None, &ok(status)), "{status}");
        }
        assert!(is_healthy(Some(200), &ok(200)));
        for status in [204, 301, 500] {
            assert!(!is_healthy(Some(200), &ok(status)), "{status}");
        }
        assert!(is_healthy(Some(503), &ok(503)));
        assert!(!is_healthy(None, &ProbeResult::failed("refused")));
        assert!(!is_healthy(None, &ProbeResult::default()));
        let errored = ProbeResult {
            status: Some(200),
            error: Some("body cut".into()),
        };
        assert!(!is_healthy(None, &errored));

        // End to end: with `status: 200`, a node answering 204 is down.
        let mut check = seed_check();
        check.status = Some(200);
        let up = Upstreams::from_plan(&plan(vec![("central", lb(&[(A, 1), (B, 1)], Some(check)))]))
            .unwrap();
        let fake = FakeProber::default();
        fake.status(A, 204);
        fake.status(B, 200);
        let checker = spawn(&up, &fake);
        checker.wait_ready().await;
        assert_eq!(state(&up, "central", A), ServerState::Down);
        assert_eq!(state(&up, "central", B), ServerState::Up);
    }

    #[tokio::test(start_paused = true)]
    async fn unchecked_services_and_shutdown() {
        let up = Upstreams::from_plan(&plan(vec![
            ("plain", lb(&[(A, 1)], None)),
            ("central", lb(&[(B, 1)], Some(seed_check()))),
        ]))
        .unwrap();
        let fake = FakeProber::default();
        fake.status(A, 200);
        fake.status(B, 200);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let checker = HealthChecker::spawn(&up, Arc::new(fake.clone()), async move {
            let _ = rx.await;
        });
        assert_eq!(
            checker.unprobed(),
            1,
            "only health-checked servers are waited for"
        );
        checker.wait_ready().await;
        assert_eq!(
            fake.calls(A),
            0,
            "a load balancer without health check is not probed"
        );
        assert_eq!(url_of(up.pick("plain")).as_deref(), Some(A));

        tx.send(()).unwrap();
        checker.join().await;
        let calls = fake.calls(B);
        run_for(Duration::from_millis(20_000)).await;
        assert_eq!(fake.calls(B), calls, "no probe after shutdown");

        // Nothing to check: ready at once.
        let up = Upstreams::from_plan(&plan(vec![("plain", lb(&[(A, 1)], None))])).unwrap();
        let checker = spawn(&up, &fake);
        checker.wait_ready().await;
        assert_eq!(checker.unprobed(), 0);
    }

    #[test]
    fn probe_targets() {
        let check = seed_check();
        let t = ProbeTarget::new(&check, "http://10.0.0.11:8080").unwrap();
        assert_eq!(
            t,
            ProbeTarget {
                url: "http://10.0.0.11:8080/health/active".into(),
                method: "GET".into(),
                host_header: None,
                headers: vec![],
                timeout: Duration::from_secs(3),
                follow_redirects: true,
                expected_status: None,
                grpc: false,
            }
        );
        // gRPC: HTTP/2 without TLS to the server's (or the check's) port, the one method.
        let mut grpc = seed_check();
        grpc.mode = bridge_plan::HealthCheckMode::Grpc;
        let t = ProbeTarget::new(&grpc, "https://[::1]/app").unwrap();
        assert_eq!(t.url, "h2c://[::1]:443/grpc.health.v1.Health/Check");
        assert!(t.grpc && t.expected_status.is_none());
        grpc.port = Some(9090);
        let t = ProbeTarget::new(&grpc, "http://10.0.0.11:8080").unwrap();
        assert_eq!(t.url, "h2c://10.0.0.11:9090/grpc.health.v1.Health/Check");
        // The server URL's own path and query are replaced; the check's query is kept.
        let mut check = seed_check();
        check.path = "/health/active?verbose=1".into();
        check.scheme = Some("https".into());
        check.port = Some(8443);
        check.hostname = Some("central.example.com".into());
        check.method = "HEAD".into();
        check.headers = BTreeMap::from([("X-Probe".to_owned(), "bridgectl".to_owned())]);
        check.status = Some(200);
        check.follow_redirects = false;
        let t = ProbeTarget::new(&check, "http://node-a:8080/base/?x=1").unwrap();
        assert_eq!(t.url, "https://node-a:8443/health/active?verbose=1");
        assert_eq!(t.host_header.as_deref(), Some("central.example.com"));
        assert_eq!(t.method, "HEAD");
        assert_eq!(t.headers, [("X-Probe".to_owned(), "bridgectl".to_owned())]);
        assert_eq!(t.expected_status, Some(200));
        assert!(!t.follow_redirects);

        let check = seed_check();
        let url = |server: &str| ProbeTarget::new(&check, server).unwrap().url;
        assert_eq!(
            url("http://[::1]:8080/x"),
            "http://[::1]:8080/health/active"
        );
        assert_eq!(
            url("h2c://backend:9000"),
            "h2c://backend:9000/health/active"
        );
        assert_eq!(url("https://backend"), "https://backend/health/active");
        assert_eq!(
            url("http://u:p@backend:81"),
            "http://u:p@backend:81/health/active"
        );
        let mut only_scheme = seed_check();
        only_scheme.scheme = Some("https".into());
        only_scheme.path = "health".into();
        assert_eq!(
            ProbeTarget::new(&only_scheme, "http://backend")
                .unwrap()
                .url,
            "https://backend/health"
        );
        assert!(matches!(
            ProbeTarget::new(&check, "backend:8080/x"),
            Err(ProbeTargetError::Parse(_) | ProbeTargetError::NoHost)
        ));
    }

    #[test]
    fn schedules() {
        let s = Schedule::of(&seed_check());
        assert_eq!(
            s,
            Schedule {
                up: Duration::from_secs(5),
                down: Duration::from_millis(250),
                timeout: Duration::from_secs(3),
            }
        );
        let mut check = seed_check();
        check.interval_ms = 0;
        check.timeout_ms = 0;
        check.unhealthy_interval_ms = 0;
        check.down_reprobe_interval_ms = 0;
        let s = Schedule::of(&check);
        assert_eq!(
            (s.up, s.down, s.timeout),
            (DEFAULT_INTERVAL, DEFAULT_INTERVAL, DEFAULT_TIMEOUT)
        );
        check.unhealthy_interval_ms = 700;
        assert_eq!(Schedule::of(&check).down, Duration::from_millis(700));
    }
}
