//! The pair: two appliances, each a bridge-runtime and a keepalived configured by
//! `bridgectl keepalived`, sharing the virtual address 10.77.0.100 in network namespaces this test
//! creates (and deletes, also on failure). A client namespace, which also holds the two ScadaBridge
//! nodes (10.77.0.11 and .12, port 5000), sends a request every 20 ms to the virtual address.
//!
//! ```text
//!   client + nodes (10.77.0.10-.12) ──┐
//!   appliance a (10.77.0.1) ──────────┼── switch (a bridge in its own namespace)
//!   appliance b (10.77.0.2) ──────────┘      VIP 10.77.0.100 on the master's eth0
//! ```
//!
//! Skipped, with the reason printed, where `ip netns` or keepalived cannot run. The tests share
//! one lock: their outage figures are timings, and two pairs switching at once on two cores would
//! measure each other.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests: a panic is a test failure"
)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bridge_tests::backends::{Backend, backend};
use bridge_tests::netns::{Host, Lab};
use bridge_tests::process::{bridgectl, find_binary, signal};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const VIP: &str = "10.77.0.100";

const TRAEFIK_YML: &str = r#"
entryPoints:
  web:
    address: ":80"
    transport:
      lifeCycle:
        requestAcceptGraceTimeout: 5s
        graceTimeOut: 3s
  traefik:
    address: ":8080"
    transport:
      lifeCycle:
        requestAcceptGraceTimeout: 5s
        graceTimeOut: 3s
api:
  dashboard: true
  insecure: true
ping: {}
providers:
  file:
    filename: /etc/traefik/dynamic.yml
"#;

const DYNAMIC_YML: &str = r#"
http:
  routers:
    central:
      rule: "PathPrefix(`/`)"
      service: central
      entryPoints: [web]
  services:
    central:
      loadBalancer:
        healthCheck:
          path: /health/active
          interval: 500ms
          timeout: 400ms
        servers:
          - url: "http://scadabridge-central-a:5000"
          - url: "http://scadabridge-central-b:5000"
"#;

/// HAProxy under the same keepalived settings, for the benchmark (bench/ha.sh): best practice for
/// a planned stop is SIGUSR1 with `grace`, during which `monitor fail if { stopping }` makes the
/// check fail while the listeners still accept, as `requestAcceptGraceTimeout` does for us.
const HAPROXY_CFG: &str = r#"
global
  grace 5s
defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s
frontend web
  bind :80
  default_backend central
frontend ping
  bind :8080
  monitor-uri /ping
  monitor fail if { stopping }
backend central
  option httpchk GET /health/active
  http-check expect status 200
  default-server inter 500ms fall 1 rise 1
  server a 10.77.0.11:5000 check
  server b 10.77.0.12:5000 check
"#;

/// What the two appliances run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Proxy {
    Bridge,
    Haproxy,
}

impl Proxy {
    /// The planned stop: SIGTERM for bridge-runtime, SIGUSR1 (soft stop) for HAProxy.
    fn stop_signal(self) -> &'static str {
        match self {
            Proxy::Bridge => "-TERM",
            Proxy::Haproxy => "-USR1",
        }
    }
}

/// One appliance: its namespace, its runtime and its keepalived.
struct Appliance {
    host: Host,
    name: &'static str,
    runtime: Option<u32>,
    keepalived_pid_file: PathBuf,
    log: PathBuf,
}

struct Pair {
    proxy: Proxy,
    // Dropped last: the processes and namespaces go when the test ends, however it ends.
    lab: Lab,
    dir: tempfile::TempDir,
    plan: PathBuf,
    a: Appliance,
    b: Appliance,
    client: Host,
    node_a: Backend,
    node_b: Backend,
}

fn runtime_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("bridge-runtime")
}

impl Pair {
    fn start(tag: &str) -> Option<Pair> {
        Pair::start_with(tag, Proxy::Bridge)
    }

    fn start_with(tag: &str, proxy: Proxy) -> Option<Pair> {
        if proxy == Proxy::Haproxy && find_binary("haproxy").is_none() {
            eprintln!("skipped: haproxy is not installed");
            return None;
        }
        if find_binary("keepalived").is_none() {
            eprintln!("skipped: keepalived is not installed (apt install keepalived)");
            return None;
        }
        let lab = Lab::new(tag)?;
        let a = lab.host("a", &["10.77.0.1/24"]);
        let b = lab.host("b", &["10.77.0.2/24"]);
        let client = lab.host("c", &["10.77.0.10/24", "10.77.0.11/24", "10.77.0.12/24"]);
        // The host setup packaging/ha/README.md asks for: the address on lo of both, answered in
        // ARP only where keepalived put it on eth0.
        for host in [&a, &b] {
            lab.vip_on_loopback(host, VIP);
        }
        let (node_a, node_b) = lab.within(&client, || {
            (
                backend("a")
                    .bind("10.77.0.11:5000".parse().unwrap())
                    .start(),
                backend("b")
                    .active(false)
                    .bind("10.77.0.12:5000".parse().unwrap())
                    .start(),
            )
        });
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("conf");
        std::fs::create_dir(&conf).unwrap();
        std::fs::write(conf.join("traefik.yml"), TRAEFIK_YML).unwrap();
        std::fs::write(conf.join("dynamic.yml"), DYNAMIC_YML).unwrap();
        std::fs::write(dir.path().join("haproxy.cfg"), HAPROXY_CFG).unwrap();
        let plan = bridge_tests::build_plan(&conf, "dev", "plan.json", &[]);
        let appliance = |host: Host, name: &'static str| Appliance {
            keepalived_pid_file: dir.path().join(format!("keepalived-{name}.pid")),
            log: dir.path().join(format!("keepalived-{name}.log")),
            host,
            name,
            runtime: None,
        };
        let mut pair = Pair {
            proxy,
            a: appliance(a, "a"),
            b: appliance(b, "b"),
            lab,
            plan,
            client,
            node_a,
            node_b,
            dir,
        };
        pair.start_runtime(Side::A);
        pair.start_runtime(Side::B);
        pair.start_keepalived(Side::A, "10.77.0.1", "10.77.0.2", 150);
        // The first one takes the address (it waits three adverts for a master first), then the second
        // joins as its backup.
        pair.wait_for_vip(Side::A, Duration::from_secs(10));
        pair.start_keepalived(Side::B, "10.77.0.2", "10.77.0.1", 100);
        std::thread::sleep(Duration::from_millis(1500));
        assert!(pair.holds_vip(Side::A) && !pair.holds_vip(Side::B));
        Some(pair)
    }

    fn side(&self, side: Side) -> &Appliance {
        match side {
            Side::A => &self.a,
            Side::B => &self.b,
        }
    }

    fn start_runtime(&mut self, side: Side) {
        if self.proxy == Proxy::Haproxy {
            return self.start_haproxy(side);
        }
        let mut cmd = self.lab.exec(&self.side(side).host, runtime_bin());
        let peer = match side {
            Side::A => "http://10.77.0.2:8080/ping",
            Side::B => "http://10.77.0.1:8080/ping",
        };
        cmd.arg(&self.plan).args([
            "--resolve",
            "scadabridge-central-a=10.77.0.11",
            "--resolve",
            "scadabridge-central-b=10.77.0.12",
            "--peer",
            peer,
        ]);
        let (child, _) = bridge_tests::spawn_serving(&mut cmd, &["web", "traefik"]);
        let pid = self.lab.adopt(child);
        match side {
            Side::A => self.a.runtime = Some(pid),
            Side::B => self.b.runtime = Some(pid),
        }
    }

    fn start_haproxy(&mut self, side: Side) {
        let host = self.side(side).host.clone();
        let child = self
            .lab
            .exec(&host, "haproxy")
            .arg("-db")
            .arg("-f")
            .arg(self.dir.path().join("haproxy.cfg"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = self.lab.adopt(child);
        let start = Instant::now();
        while !self.lab.within(&host, || {
            TcpStream::connect_timeout(
                &"127.0.0.1:8080".parse().unwrap(),
                Duration::from_millis(100),
            )
            .is_ok()
        }) {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "haproxy did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        match side {
            Side::A => self.a.runtime = Some(pid),
            Side::B => self.b.runtime = Some(pid),
        }
    }

    fn start_keepalived(&self, side: Side, me: &str, peer: &str, priority: u16) {
        let ap = self.side(side);
        let conf = self.dir.path().join(format!("keepalived-{}.conf", ap.name));
        let out = bridgectl()
            .args(["keepalived", "--name", &format!("bridge-{}", ap.name)])
            .args(["--interface", "eth0", "--vip", &format!("{VIP}/24")])
            .args([
                "--self",
                me,
                "--peer",
                peer,
                "--priority",
                &priority.to_string(),
            ])
            .arg("--runtime")
            .arg(runtime_bin())
            .arg("--out")
            .arg(&conf)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let log = std::fs::File::create(&ap.log).unwrap();
        let child = self
            .lab
            .exec(&ap.host, "keepalived")
            .args([
                "--dont-fork",
                "--log-console",
                "--log-detail",
                "--vrrp",
                "--no-syslog",
            ])
            .arg("--use-file")
            .arg(&conf)
            .arg("--pid")
            .arg(&ap.keepalived_pid_file)
            .arg("--vrrp_pid")
            .arg(
                self.dir
                    .path()
                    .join(format!("keepalived-{}-vrrp.pid", ap.name)),
            )
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        self.lab.adopt(child);
    }

    fn holds_vip(&self, side: Side) -> bool {
        self.lab
            .addresses(&self.side(side).host)
            .contains(&format!("{VIP}/24"))
    }

    fn wait_for_vip(&self, side: Side, limit: Duration) -> Duration {
        let start = Instant::now();
        while !self.holds_vip(side) {
            assert!(
                start.elapsed() < limit,
                "appliance {side:?} did not take {VIP} within {limit:?}\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        start.elapsed()
    }

    fn logs(&self) -> String {
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        format!(
            "--- keepalived a:\n{}\n--- keepalived b:\n{}",
            read(&self.a.log),
            read(&self.b.log)
        )
    }

    /// Starts the client: a request every 20 ms to the virtual address, from the client namespace.
    fn probe(&self) -> Probe {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = self.lab.within(&self.client, move || {
            std::thread::spawn(move || {
                let start = Instant::now();
                let mut samples = Vec::new();
                let mut next = Instant::now();
                while !flag.load(Ordering::Relaxed) && start.elapsed() < Duration::from_secs(120) {
                    let at = start.elapsed();
                    let answer = request(SocketAddr::from(([10, 77, 0, 100], 80)));
                    samples.push(Sample { at, answer });
                    next += Duration::from_millis(20);
                    let now = Instant::now();
                    if next > now {
                        std::thread::sleep(next - now);
                    } else {
                        next = now;
                    }
                }
                samples
            })
        });
        Probe { stop, handle }
    }
}

#[derive(Debug, Clone, Copy)]
enum Side {
    A,
    B,
}

struct Sample {
    at: Duration,
    /// The node that answered, or why the request failed.
    answer: Result<String, String>,
}

struct Probe {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Vec<Sample>>,
}

struct Run {
    samples: Vec<Sample>,
}

impl Probe {
    fn finish(self) -> Run {
        self.stop.store(true, Ordering::Relaxed);
        Run {
            samples: self.handle.join().unwrap(),
        }
    }
}

impl Run {
    fn failures(&self) -> Vec<String> {
        self.samples
            .iter()
            .filter_map(|s| s.answer.as_ref().err().map(|e| format!("{:?}: {e}", s.at)))
            .collect()
    }

    /// The longest time between two answered requests.
    fn outage(&self) -> Duration {
        let ok: Vec<Duration> = self
            .samples
            .iter()
            .filter(|s| s.answer.is_ok())
            .map(|s| s.at)
            .collect();
        ok.windows(2).map(|w| w[1] - w[0]).max().unwrap_or_default()
    }

    fn answered_last(&self) -> Option<&str> {
        self.samples.last().and_then(|s| s.answer.as_deref().ok())
    }
}

/// One `GET /ui` on a new connection, as a CLI or a browser's first request does. A complete
/// answer counts even if the connection is reset after it (the client has what it asked for).
fn request(addr: SocketAddr) -> Result<String, String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(3))
        .map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(3)))
        .map_err(|e| e.to_string())?;
    s.write_all(b"GET /ui HTTP/1.1\r\nHost: scadabridge\r\nConnection: close\r\n\r\n")
        .map_err(|e| format!("write: {e}"))?;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if complete(&got) => {
                let _ = e;
                break;
            }
            Err(e) => return Err(format!("read: {e} after {} bytes", got.len())),
        }
        if complete(&got) {
            break;
        }
    }
    let text = String::from_utf8_lossy(&got);
    if !complete(&got) {
        return Err(format!("incomplete answer: {text:?}"));
    }
    if !text.starts_with("HTTP/1.1 200") {
        return Err(text.lines().next().unwrap_or_default().to_owned());
    }
    let body = text.split("\r\n\r\n").nth(1).unwrap_or_default();
    Ok(body.split(' ').next().unwrap_or_default().to_owned())
}

/// The head has arrived and the body its `Content-Length` announces.
fn complete(got: &[u8]) -> bool {
    let text = String::from_utf8_lossy(got);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    let len = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    body.len() >= len
}

/// SIGTERM (SIGUSR1 for HAProxy) of the master's proxy; returns the client's run and how long the
/// address took to reach b.
fn planned_stop(pair: &Pair) -> (Run, Duration) {
    let probe = pair.probe();
    std::thread::sleep(Duration::from_millis(1000));
    signal(pair.a.runtime.unwrap(), pair.proxy.stop_signal());
    let moved = pair.wait_for_vip(Side::B, Duration::from_secs(8));
    std::thread::sleep(Duration::from_millis(1500));
    let run = probe.finish();
    assert!(
        !pair.holds_vip(Side::A),
        "both hold the address\n{}",
        pair.logs()
    );
    (run, moved)
}

/// kill -9 of the master's proxy.
fn crash(pair: &Pair) -> (Run, Duration) {
    let probe = pair.probe();
    std::thread::sleep(Duration::from_millis(1000));
    signal(pair.a.runtime.unwrap(), "-KILL");
    let moved = pair.wait_for_vip(Side::B, Duration::from_secs(8));
    std::thread::sleep(Duration::from_millis(1500));
    (probe.finish(), moved)
}

/// The master host gone: its cable pulled, its keepalived and proxy killed.
fn host_loss(pair: &Pair) -> (Run, Duration) {
    let probe = pair.probe();
    std::thread::sleep(Duration::from_millis(1000));
    // The cable first, so nothing a dying process sends reaches the network.
    pair.lab.unplug(&pair.a.host);
    for pid_file in [
        pair.a.keepalived_pid_file.clone(),
        pair.dir.path().join("keepalived-a-vrrp.pid"),
    ] {
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        signal(pid.trim().parse().unwrap(), "-KILL");
    }
    signal(pair.a.runtime.unwrap(), "-KILL");
    let moved = pair.wait_for_vip(Side::B, Duration::from_secs(8));
    std::thread::sleep(Duration::from_millis(1500));
    (probe.finish(), moved)
}

fn lock() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[test]
fn a_planned_stop_of_the_master_loses_no_request() {
    let _one = lock();
    let Some(pair) = Pair::start("s") else { return };
    let (run, moved) = planned_stop(&pair);
    assert_eq!(run.failures(), Vec::<String>::new(), "{}", pair.logs());
    assert_eq!(
        run.answered_last(),
        Some("a"),
        "node a still serves, through b"
    );
    eprintln!(
        "planned switchover: address on b {moved:?} after SIGTERM, {} requests, 0 failed, longest gap {:?}",
        run.samples.len(),
        run.outage()
    );
}

#[test]
fn a_crashed_master_runtime_is_replaced_within_3_s() {
    let _one = lock();
    let Some(pair) = Pair::start("k") else { return };
    let (run, _) = crash(&pair);
    let outage = run.outage();
    assert!(
        outage <= Duration::from_secs(3),
        "outage {outage:?}\n{}",
        pair.logs()
    );
    assert_eq!(run.answered_last(), Some("a"));
    eprintln!(
        "crash of the master runtime: outage {outage:?}, {} of {} requests failed",
        run.failures().len(),
        run.samples.len()
    );
}

#[test]
fn losing_the_master_host_moves_the_address_within_4_s() {
    let _one = lock();
    let Some(pair) = Pair::start("h") else { return };
    let (run, _) = host_loss(&pair);
    let outage = run.outage();
    assert!(
        outage <= Duration::from_secs(4),
        "outage {outage:?}\n{}",
        pair.logs()
    );
    assert_eq!(run.answered_last(), Some("a"));
    eprintln!(
        "loss of the master host: outage {outage:?}, {} of {} requests failed",
        run.failures().len(),
        run.samples.len()
    );
}

#[test]
fn a_scadabridge_failover_behind_the_pair_moves_traffic_not_the_address() {
    let _one = lock();
    let Some(pair) = Pair::start("f") else { return };
    let probe = pair.probe();
    std::thread::sleep(Duration::from_millis(1000));
    // Node a steps down; b becomes active a moment later, as ScadaBridge's failover does.
    pair.node_a.active.store(false, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(300));
    pair.node_b.active.store(true, Ordering::SeqCst);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(6) {
        assert!(
            pair.holds_vip(Side::A) && !pair.holds_vip(Side::B),
            "the address moved\n{}",
            pair.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let run = probe.finish();
    assert_eq!(
        run.answered_last(),
        Some("b"),
        "traffic follows the active node"
    );
    // Each appliance sees the other serve the same plan (--peer).
    for api in ["10.77.0.1:8080", "10.77.0.2:8080"] {
        let addr: SocketAddr = api.parse().unwrap();
        let body = pair.lab.within(&pair.client, move || {
            let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
            s.write_all(b"GET /api/bridge/peer HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .unwrap();
            let mut out = String::new();
            let _ = s.read_to_string(&mut out);
            out
        });
        assert!(body.contains(r#""state":"same""#), "{api}: {body}");
    }
    let a_log = std::fs::read_to_string(&pair.a.log).unwrap();
    assert!(
        !a_log.contains("FAULT"),
        "the master's check failed on a backend failover:\n{a_log}"
    );
    eprintln!(
        "ScadaBridge failover behind the pair: {} of {} requests failed",
        run.failures().len(),
        run.samples.len()
    );
}

/// bench/ha.sh: every scenario `BENCH_ROUNDS` times (default 5) for bridge-runtime and HAProxy
/// under the same keepalived settings; a Markdown table of medians to `BENCH_OUT` (or stderr).
#[test]
#[ignore = "benchmark: run by bench/ha.sh"]
fn bench_pair() {
    let _one = lock();
    let rounds: usize = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    type Scenario = fn(&Pair) -> (Run, Duration);
    let scenarios: [(&str, Scenario); 3] = [
        (
            "planned stop (SIGTERM / HAProxy SIGUSR1 + grace)",
            planned_stop,
        ),
        ("crash of the proxy (kill -9)", crash),
        ("loss of the master host", host_loss),
    ];
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let mut table = String::from(
        "| scenario | proxy | rounds | failed requests (median, max) | longest gap between answers, ms (median, max) | address moved after, ms (median) |\n|---|---|---|---|---|---|\n",
    );
    for (name, scenario) in scenarios {
        for proxy in [Proxy::Bridge, Proxy::Haproxy] {
            let (mut failed, mut gaps, mut moved) = (Vec::new(), Vec::new(), Vec::new());
            for round in 0..rounds {
                let Some(pair) = Pair::start_with(&format!("x{round}"), proxy) else {
                    break;
                };
                let (run, m) = scenario(&pair);
                failed.push(run.failures().len() as f64);
                gaps.push(run.outage().as_secs_f64() * 1000.0);
                moved.push(m.as_secs_f64() * 1000.0);
            }
            if failed.is_empty() {
                continue;
            }
            let max = |v: &[f64]| v.iter().copied().fold(f64::NAN, f64::max);
            table.push_str(&format!(
                "| {name} | {proxy:?} | {} | {:.0}, {:.0} | {:.0}, {:.0} | {:.0} |\n",
                failed.len(),
                median(failed.clone()),
                max(&failed),
                median(gaps.clone()),
                max(&gaps),
                median(moved)
            ));
            eprintln!("{name} {proxy:?}: failed {failed:?}, gaps {gaps:?}");
        }
    }
    match std::env::var_os("BENCH_OUT") {
        Some(path) => std::fs::write(path, &table).unwrap(),
        None => eprintln!("{table}"),
    }
}
