//! Let's Encrypt's test ACME server for the end-to-end tests: Debian's `pebble` package (`pebble`
//! and `pebble-challtestsrv`, 2.4.0), started on free ports of 127.0.0.1.
//!
//! ```text
//! let Some(mut ca) = Pebble::start(PebbleOptions { http_port, tls_port, validity_secs: Some(3600), eab: None, ocsp_responder: None })
//! else { return };                                  // not installed: skipped, the reason on stderr
//! ca.directory_url();                               // https://127.0.0.1:PORT/dir
//! ca.ca_file();                                     // trust this for the directory (caCertificates)
//! ca.issuer_roots_pem();                            // verify issued certificates with this
//! ca.stop(); ca.restart();                          // a CA outage, then the same ports back
//! ```
//!
//! - `pebble-challtestsrv` is the DNS server pebble's validator asks (`-dnsserver`): every name
//!   resolves to 127.0.0.1 (A) and to nothing for AAAA, so HTTP-01 and TLS-ALPN-01 validations
//!   connect to 127.0.0.1:[`PebbleOptions::http_port`] and 127.0.0.1:[`PebbleOptions::tls_port`],
//!   where the proxy under test listens. Its own HTTP-01, HTTPS-01 and TLS-ALPN-01 responders are
//!   disabled; its management API is on a free port ([`Pebble::challtestsrv_url`]: `/add-a`,
//!   `/set-default-ipv4`, ...).
//! - pebble ships no certificate in Debian: a test CA ([`crate::tls::TestCa`]) signs a leaf for
//!   127.0.0.1 and localhost, which pebble serves on its ACME and management listeners.
//! - The environment: `PEBBLE_VA_NOSLEEP=1` (validate at once), `PEBBLE_WFE_NONCEREJECT=0` (no
//!   spurious `badNonce`), `PEBBLE_AUTHZREUSE=0` (every order needs its own challenge); never
//!   `PEBBLE_VA_ALWAYS_VALID` (removed from the environment, with the other `PEBBLE_*` knobs and the
//!   proxy variables).
//! - pebble makes a new root and intermediate at every start: [`Pebble::issuer_roots_pem`] asks
//!   the running instance, so it changes across [`Pebble::restart`]. Issued chains are the leaf
//!   and one intermediate; the root (`Pebble Root CA xxxxxx`, RSA) is only in the management API.
//! - Outputs go to `pebble.log` and `challtestsrv.log` in [`Pebble::dir`] (appended across
//!   restarts); failures panic with their tails. Both processes are killed by PID (the [`Child`]s
//!   this started) and reaped on drop.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a panic is a test failure"
)]

use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;

use crate::tls::TestCa;

/// How long a start may take before it is a failure (pebble answers in well under a second).
const START_DEADLINE: Duration = Duration::from_secs(10);

/// Environment variables never passed to pebble: the ones that change its behaviour beyond what
/// [`Pebble::start`] sets (`PEBBLE_VA_ALWAYS_VALID` would make every challenge pass untried), and
/// proxies (the validator must connect to 127.0.0.1 itself).
const SCRUBBED_ENV: &[&str] = &[
    "PEBBLE_VA_ALWAYS_VALID",
    "PEBBLE_VA_SLEEPTIME",
    "PEBBLE_ALTERNATE_ROOTS",
    "PEBBLE_CHAIN_LENGTH",
    "PEBBLE_WFE_ORDERS_PER_PAGE",
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
];

/// What the test chooses about the CA.
#[derive(Debug, Clone)]
pub struct PebbleOptions {
    /// The port pebble's validator connects to for HTTP-01 (config `httpPort`), on 127.0.0.1.
    pub http_port: u16,
    /// The port pebble's validator connects to for TLS-ALPN-01 (config `tlsPort`), on 127.0.0.1.
    pub tls_port: u16,
    /// The lifetime of issued certificates in seconds (config `certificateValidityPeriod`); pebble's
    /// default (5 years) when `None`. The leaf's notAfter is notBefore + this − 1 s.
    pub validity_secs: Option<u64>,
    /// External account binding required, with this (key id, base64url HMAC key) as the only
    /// accepted binding (config `externalAccountBindingRequired`, `externalAccountMACKeys`).
    pub eab: Option<(&'static str, &'static str)>,
    /// The OCSP URL pebble writes into the certificates it issues (config `ocspResponderURL`;
    /// `None`: none).
    pub ocsp_responder: Option<String>,
}

/// A running pebble and its DNS server, killed on drop.
#[derive(Debug)]
pub struct Pebble {
    dir: tempfile::TempDir,
    /// `dir/ca.crt`, written by [`TestCa::new`].
    ca_file: PathBuf,
    opts: PebbleOptions,
    pebble_bin: PathBuf,
    challtestsrv_bin: PathBuf,
    /// pebble's ACME listener (`listenAddress`).
    acme_port: u16,
    /// pebble's management listener (`managementListenAddress`).
    management_port: u16,
    /// pebble-challtestsrv's DNS server (TCP and UDP).
    dns_port: u16,
    /// pebble-challtestsrv's management API (plain HTTP).
    challtestsrv_port: u16,
    pebble: Option<Child>,
    challtestsrv: Option<Child>,
    tls: Arc<rustls::ClientConfig>,
}

impl Pebble {
    /// Starts pebble-challtestsrv and pebble on free ports of 127.0.0.1 and waits (at most 10 s)
    /// until the directory answers. `None`, with the reason on stderr, when either binary is not
    /// installed (`apt-get install pebble`); panics on any other failure.
    pub fn start(opts: PebbleOptions) -> Option<Pebble> {
        let (Some(pebble_bin), Some(challtestsrv_bin)) = (
            crate::process::find_binary("pebble"),
            crate::process::find_binary("pebble-challtestsrv"),
        ) else {
            eprintln!(
                "pebble or pebble-challtestsrv is not installed (Debian: apt-get install pebble); \
                 skipping the ACME test"
            );
            return None;
        };
        let dir = tempfile::tempdir().expect("a temporary directory for pebble");
        let ca = TestCa::new(dir.path());
        ca.issue(dir.path(), "pebble", &["127.0.0.1", "localhost"]);
        let ca_file = dir.path().join("ca.crt");
        let tls = client_config(&ca_file);
        let mut p = Pebble {
            dir,
            ca_file,
            opts,
            pebble_bin,
            challtestsrv_bin,
            acme_port: 0,
            management_port: 0,
            dns_port: 0,
            challtestsrv_port: 0,
            pebble: None,
            challtestsrv: None,
            tls,
        };
        // Ports are free when picked but not held while the processes start: a second try with
        // new ports if one was taken in between.
        let mut last_failure = String::new();
        for _attempt in 0..2 {
            p.pick_ports();
            p.write_config();
            match p.spawn_challtestsrv().and_then(|()| p.spawn_pebble()) {
                Ok(()) => return Some(p),
                Err(e) => {
                    p.kill_all();
                    last_failure = format!("{e}\n{}", p.logs());
                    if !last_failure.contains("address already in use") {
                        panic!("pebble did not start: {last_failure}");
                    }
                }
            }
        }
        panic!("pebble did not start (twice a port was taken): {last_failure}")
    }

    /// The ACME directory: `https://127.0.0.1:PORT/dir`.
    pub fn directory_url(&self) -> String {
        format!("https://127.0.0.1:{}/dir", self.acme_port)
    }

    /// pebble's management API: `https://127.0.0.1:PORT` (`/roots/0`, `/intermediates/0`,
    /// `/cert-status-by-serial/HEX`, ...), served with the same certificate as the directory.
    pub fn management_url(&self) -> String {
        format!("https://127.0.0.1:{}", self.management_port)
    }

    /// pebble-challtestsrv's management API: `http://127.0.0.1:PORT` (`/add-a`, `/clear-a`,
    /// `/set-default-ipv4`, ... with JSON bodies).
    pub fn challtestsrv_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.challtestsrv_port)
    }

    /// The DNS server pebble's validator asks (`pebble -dnsserver`), TCP and UDP.
    pub fn dns_addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.dns_port))
    }

    /// The PEM file of the CA that signed pebble's own HTTPS certificate (what an ACME client's
    /// `caCertificates` must hold to reach the directory).
    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }

    /// The temporary directory: `ca.crt`, `pebble.crt`/`pebble.key` (pebble's HTTPS certificate),
    /// `pebble-config.json`, `pebble.log`, `challtestsrv.log`.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The options it was started with.
    pub fn options(&self) -> &PebbleOptions {
        &self.opts
    }

    /// The root certificate pebble issues from (management `GET /roots/0`), PEM; it is made anew
    /// at every start. Panics when pebble is stopped.
    pub fn issuer_roots_pem(&self) -> String {
        self.management_pem("/roots/0")
    }

    /// The intermediate pebble signs leaves with (management `GET /intermediates/0`), PEM; issued
    /// chains already carry it. Panics when pebble is stopped.
    pub fn issuer_intermediate_pem(&self) -> String {
        self.management_pem("/intermediates/0")
    }

    /// An HTTPS GET of a URL of this pebble (ACME or management), trusting only [`Self::ca_file`]:
    /// (status, body). An error when nothing answers (e.g. after [`Self::stop`]).
    pub fn get(&self, url: &str) -> std::io::Result<(u16, String)> {
        let rest = url
            .strip_prefix("https://127.0.0.1:")
            .ok_or_else(|| std::io::Error::other(format!("not an https://127.0.0.1 URL: {url}")))?;
        let (port, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let port: u16 = port
            .parse()
            .map_err(|_| std::io::Error::other(format!("no port in {url}")))?;
        let path = if path.is_empty() { "/" } else { path };
        https_get(&self.tls, port, path)
    }

    /// The directory as JSON. Panics when it does not answer 200 with JSON.
    pub fn directory(&self) -> serde_json::Value {
        let (status, body) = self
            .get(&self.directory_url())
            .unwrap_or_else(|e| panic!("GET {}: {e}\n{}", self.directory_url(), self.logs()));
        assert_eq!(status, 200, "GET {}: {body}", self.directory_url());
        serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("the directory is not JSON ({e}): {body}"))
    }

    /// Whether pebble (the CA, not its DNS server) is running.
    pub fn is_running(&self) -> bool {
        self.pebble.is_some()
    }

    /// Stops pebble: the CA is down (connections to its ports are refused) until
    /// [`Self::restart`]. The DNS server keeps running. Does nothing when already stopped.
    pub fn stop(&mut self) {
        if let Some(child) = self.pebble.take() {
            kill(child);
        }
    }

    /// Stops pebble if it runs and starts it again on the same ports with the same configuration
    /// (a new root and intermediate: pebble keeps no state); waits until the directory answers.
    /// Panics when it does not come back (e.g. a port was taken while it was down).
    pub fn restart(&mut self) {
        self.stop();
        if let Err(e) = self.spawn_pebble() {
            self.stop();
            panic!(
                "pebble did not restart on the same ports: {e}\n{}",
                self.logs()
            );
        }
    }

    /// The last lines of both logs, for a failure message.
    pub fn logs(&self) -> String {
        format!(
            "--- pebble.log (tail) ---\n{}\n--- challtestsrv.log (tail) ---\n{}",
            self.log_tail("pebble.log"),
            self.log_tail("challtestsrv.log")
        )
    }

    fn pick_ports(&mut self) {
        let [acme, management, challtestsrv] =
            free_tcp_ports([self.opts.http_port, self.opts.tls_port]);
        self.acme_port = acme;
        self.management_port = management;
        self.challtestsrv_port = challtestsrv;
        self.dns_port = free_dns_port(&[
            self.opts.http_port,
            self.opts.tls_port,
            acme,
            management,
            challtestsrv,
        ]);
    }

    fn management_pem(&self, path: &str) -> String {
        let url = format!("{}{path}", self.management_url());
        let (status, body) = self
            .get(&url)
            .unwrap_or_else(|e| panic!("GET {url}: {e}\n{}", self.logs()));
        assert_eq!(status, 200, "GET {url}: {body}");
        assert!(
            body.contains("-----BEGIN CERTIFICATE-----"),
            "GET {url} is not PEM: {body}"
        );
        body
    }

    fn write_config(&self) {
        let mut pebble = serde_json::json!({
            "listenAddress": format!("127.0.0.1:{}", self.acme_port),
            "managementListenAddress": format!("127.0.0.1:{}", self.management_port),
            "certificate": self.dir().join("pebble.crt"),
            "privateKey": self.dir().join("pebble.key"),
            "httpPort": self.opts.http_port,
            "tlsPort": self.opts.tls_port,
            "ocspResponderURL": self.opts.ocsp_responder.clone().unwrap_or_default(),
            "externalAccountBindingRequired": false,
        });
        if let Some(secs) = self.opts.validity_secs {
            pebble["certificateValidityPeriod"] = secs.into();
        }
        if let Some((kid, hmac)) = self.opts.eab {
            pebble["externalAccountBindingRequired"] = true.into();
            pebble["externalAccountMACKeys"] = serde_json::json!({ kid: hmac });
        }
        let config = serde_json::json!({ "pebble": pebble });
        std::fs::write(
            self.dir().join("pebble-config.json"),
            serde_json::to_string_pretty(&config).expect("JSON"),
        )
        .expect("write pebble-config.json");
    }

    fn spawn_challtestsrv(&mut self) -> Result<(), String> {
        let mut cmd = Command::new(&self.challtestsrv_bin);
        cmd.args(["-dns01", &format!("127.0.0.1:{}", self.dns_port)])
            .args([
                "-management",
                &format!("127.0.0.1:{}", self.challtestsrv_port),
            ])
            // Empty disables the responders (not -management: empty binds :80).
            .args(["-http01", "", "-https01", "", "-tlsalpn01", ""])
            .args(["-defaultIPv4", "127.0.0.1", "-defaultIPv6", ""]);
        let (child, from) = spawn_logged(&mut cmd, &self.dir().join("challtestsrv.log"));
        self.challtestsrv = Some(child);
        let dns = self.dns_addr();
        let management = SocketAddr::from(([127, 0, 0, 1], self.challtestsrv_port));
        self.wait_ready("pebble-challtestsrv", "challtestsrv.log", from, |_| {
            dns_answers_loopback(dns)
                && TcpStream::connect_timeout(&dns, Duration::from_millis(200)).is_ok()
                && TcpStream::connect_timeout(&management, Duration::from_millis(200)).is_ok()
        })?;
        // It logs a port it could not bind and goes on without it.
        if self
            .log_since("challtestsrv.log", from)
            .contains("address already in use")
        {
            return Err("pebble-challtestsrv could not bind a port".to_owned());
        }
        Ok(())
    }

    fn spawn_pebble(&mut self) -> Result<(), String> {
        let mut cmd = Command::new(&self.pebble_bin);
        cmd.arg("-config")
            .arg(self.dir().join("pebble-config.json"))
            .args(["-dnsserver", &self.dns_addr().to_string(), "-strict=false"])
            .env("PEBBLE_VA_NOSLEEP", "1")
            .env("PEBBLE_WFE_NONCEREJECT", "0")
            .env("PEBBLE_AUTHZREUSE", "0");
        for var in SCRUBBED_ENV {
            cmd.env_remove(var);
        }
        let (child, from) = spawn_logged(&mut cmd, &self.dir().join("pebble.log"));
        self.pebble = Some(child);
        let url = self.directory_url();
        self.wait_ready(
            "pebble",
            "pebble.log",
            from,
            |p| matches!(p.get(&url), Ok((200, body)) if body.contains("newOrder")),
        )
    }

    /// Polls `ready` until it holds; an error when a child exited, when `log` (from byte `from`:
    /// this start's output) tells of a port that could not be bound, or after [`START_DEADLINE`].
    fn wait_ready(
        &mut self,
        what: &str,
        log: &str,
        from: u64,
        ready: impl Fn(&Pebble) -> bool,
    ) -> Result<(), String> {
        let started = Instant::now();
        loop {
            let mut exited = None;
            for (name, child) in [
                ("pebble", &mut self.pebble),
                ("pebble-challtestsrv", &mut self.challtestsrv),
            ] {
                if let Some(c) = child
                    && let Ok(Some(status)) = c.try_wait()
                {
                    *child = None;
                    exited = Some((name, status));
                }
            }
            if let Some((name, status)) = exited {
                let busy = if self.log_since(log, from).contains("address already in use") {
                    ": a port was taken (address already in use)"
                } else {
                    ""
                };
                return Err(format!(
                    "{name} exited ({status}) while starting {what}{busy}"
                ));
            }
            if self.log_since(log, from).contains("address already in use") {
                return Err(format!(
                    "{what} could not bind a port (address already in use)"
                ));
            }
            if ready(self) {
                return Ok(());
            }
            if started.elapsed() > START_DEADLINE {
                return Err(format!("{what} not ready after {START_DEADLINE:?}"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn kill_all(&mut self) {
        for child in [self.pebble.take(), self.challtestsrv.take()]
            .into_iter()
            .flatten()
        {
            kill(child);
        }
    }

    /// The log from byte `from` on.
    fn log_since(&self, name: &str, from: u64) -> String {
        let text = std::fs::read(self.dir().join(name)).unwrap_or_default();
        let from = usize::try_from(from).unwrap_or(usize::MAX).min(text.len());
        String::from_utf8_lossy(&text[from..]).into_owned()
    }

    fn log_tail(&self, name: &str) -> String {
        let text = std::fs::read_to_string(self.dir().join(name)).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

impl Drop for Pebble {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// Kills a child this module started (by its PID, SIGKILL) and reaps it.
fn kill(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Spawns `cmd` with stdin closed and stdout and stderr appended to `log` after a marker line;
/// returns the child and the length of the log before its output.
fn spawn_logged(cmd: &mut Command, log: &Path) -> (Child, u64) {
    let mut out = File::options()
        .create(true)
        .append(true)
        .open(log)
        .unwrap_or_else(|e| panic!("open {}: {e}", log.display()));
    writeln!(out, "--- {cmd:?}").expect("write the log");
    let from = out.metadata().expect("the log's length").len();
    let err = out.try_clone().expect("clone the log file");
    let child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    (child, from)
}

/// The binary in `PATH` (or `/usr/bin`, where Debian puts it).
/// `N` distinct free TCP ports of 127.0.0.1, none in `exclude`.
fn free_tcp_ports<const N: usize>(exclude: [u16; 2]) -> [u16; N] {
    let mut held = Vec::new();
    let mut ports = [0u16; N];
    let mut i = 0;
    while i < N {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = l.local_addr().expect("local address").port();
        held.push(l);
        if !exclude.contains(&port) {
            ports[i] = port;
            i += 1;
        }
    }
    ports
}

/// A port of 127.0.0.1 free for both UDP and TCP (the DNS server takes both), none in `exclude`.
fn free_dns_port(exclude: &[u16]) -> u16 {
    for _ in 0..100 {
        let udp = UdpSocket::bind("127.0.0.1:0").expect("bind UDP 127.0.0.1:0");
        let port = udp.local_addr().expect("local address").port();
        if !exclude.contains(&port) && TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no port of 127.0.0.1 free for both UDP and TCP")
}

/// Whether the DNS server at `addr` answers an A query (UDP, as pebble's validator asks) for
/// `ready.test` with 127.0.0.1.
fn dns_answers_loopback(addr: SocketAddr) -> bool {
    let Ok(sock) = UdpSocket::bind("127.0.0.1:0") else {
        return false;
    };
    let _ = sock.set_read_timeout(Some(Duration::from_millis(200)));
    // Header: id 0x5eb1, recursion desired, 1 question; then ready.test A IN.
    let mut query = vec![0x5e, 0xb1, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    for label in ["ready", "test"] {
        query.push(label.len() as u8);
        query.extend_from_slice(label.as_bytes());
    }
    query.extend_from_slice(&[0, 0, 1, 0, 1]);
    if sock.send_to(&query, addr).is_err() {
        return false;
    }
    let mut buf = [0u8; 512];
    match sock.recv(&mut buf) {
        // Same id, an answer (ANCOUNT) and, past the question, RDLENGTH 4 with 127.0.0.1 (an
        // authority SOA record follows the answer).
        Ok(n) => {
            n > query.len()
                && buf[..2] == query[..2]
                && buf[6..8] != [0, 0]
                && buf[query.len()..n]
                    .windows(6)
                    .any(|w| w == [0, 4, 127, 0, 0, 1])
        }
        Err(_) => false,
    }
}

/// A rustls client trusting only the certificates of this PEM file.
fn client_config(ca: &Path) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_file_iter(ca).expect("read ca.crt") {
        roots
            .add(cert.expect("a PEM certificate"))
            .expect("a CA certificate");
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(cfg)
}

/// One HTTP/1.1 GET over TLS to 127.0.0.1:`port` (server name 127.0.0.1), `Connection: close`:
/// (status, body), the body decoded when chunked.
fn https_get(
    tls: &Arc<rustls::ClientConfig>,
    port: u16,
    path: &str,
) -> std::io::Result<(u16, String)> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let tcp = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    tcp.set_read_timeout(Some(Duration::from_secs(5)))?;
    tcp.set_write_timeout(Some(Duration::from_secs(5)))?;
    let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
    let conn = rustls::ClientConnection::new(tls.clone(), name).map_err(std::io::Error::other)?;
    let mut s = rustls::StreamOwned::new(conn, tcp);
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    )?;
    s.flush()?;
    let mut raw = Vec::new();
    match s.read_to_end(&mut raw) {
        Ok(_) => {}
        // A peer closing without close_notify after a complete `Connection: close` answer.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !raw.is_empty() => {}
        Err(e) => return Err(e),
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| std::io::Error::other(format!("no HTTP answer: {text}")))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status: {head}")))?;
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Ok((status, body))
}

/// A chunked body, decoded (trailers ignored).
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size =
            usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16).unwrap_or(0);
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].strip_prefix("\r\n").unwrap_or(&rest[size..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use rustls::client::danger::ServerCertVerifier;
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

    fn free_port() -> u16 {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    }

    fn options(validity_secs: Option<u64>) -> PebbleOptions {
        let [http_port, tls_port] = free_tcp_ports([0, 0]);
        PebbleOptions {
            http_port,
            tls_port,
            validity_secs,
            eab: None,
            ocsp_responder: None,
        }
    }

    fn certs(pem: &str) -> Vec<CertificateDer<'static>> {
        CertificateDer::pem_slice_iter(pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap()
    }

    /// `curl --cacert ca_file URL` (skipped without curl): the certificate pebble serves is
    /// trusted through `ca_file` alone, as another TLS stack sees it.
    fn curl_directory(p: &Pebble) -> Option<serde_json::Value> {
        crate::process::find_binary("curl")?;
        let out = Command::new("curl")
            .args([
                "-sS",
                "--fail",
                "--max-time",
                "5",
                "--noproxy",
                "*",
                "--cacert",
            ])
            .arg(p.ca_file())
            .arg(p.directory_url())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "curl --cacert: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Without the test CA the certificate is not trusted.
        let untrusted = Command::new("curl")
            .args(["-sS", "--max-time", "5", "--noproxy", "*"])
            .arg(p.directory_url())
            .output()
            .unwrap();
        assert!(
            !untrusted.status.success(),
            "pebble's certificate trusted without ca_file"
        );
        Some(serde_json::from_slice(&out.stdout).unwrap())
    }

    #[test]
    fn pebble_serves_the_directory_stops_and_restarts_on_the_same_ports() {
        let started = Instant::now();
        let Some(mut p) = Pebble::start(options(Some(3600))) else {
            return;
        };
        eprintln!("pebble started in {:?}", started.elapsed());
        let dir = p.directory();
        eprintln!("directory: {}", serde_json::to_string_pretty(&dir).unwrap());
        for key in [
            "newNonce",
            "newAccount",
            "newOrder",
            "revokeCert",
            "keyChange",
        ] {
            let url = dir[key]
                .as_str()
                .unwrap_or_else(|| panic!("no {key}: {dir}"));
            assert!(url.starts_with("https://127.0.0.1:"), "{key}: {url}");
        }
        assert_eq!(dir["meta"]["externalAccountRequired"], false, "{dir}");
        if let Some(curl) = curl_directory(&p) {
            assert!(curl["newOrder"].is_string(), "{curl}");
        }
        let config: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(p.dir().join("pebble-config.json")).unwrap(),
        )
        .unwrap();
        eprintln!("config: {config}");
        assert_eq!(config["pebble"]["httpPort"], p.options().http_port);
        assert_eq!(config["pebble"]["certificateValidityPeriod"], 3600);

        let root = p.issuer_roots_pem();
        assert_eq!(certs(&root).len(), 1, "{root}");
        assert_eq!(certs(&p.issuer_intermediate_pem()).len(), 1);

        let url = p.directory_url();
        p.stop();
        assert!(!p.is_running());
        let down = p.get(&url);
        assert!(down.is_err(), "the directory still answers: {down:?}");
        p.stop(); // idempotent

        let restarted = Instant::now();
        p.restart();
        eprintln!("pebble restarted in {:?}", restarted.elapsed());
        assert_eq!(p.directory_url(), url, "same ports");
        assert!(p.directory()["newOrder"].is_string());
        let new_root = p.issuer_roots_pem();
        assert_ne!(new_root, root, "pebble makes a new root at every start");
        p.restart(); // while running: stops first
        assert!(p.directory()["newOrder"].is_string());
        assert!(
            p.logs()
                .contains("Using certificate validity period of 3600 seconds")
        );
    }

    #[test]
    fn ports_are_distinct_and_avoid_the_validation_ports() {
        let http = free_port();
        let ports: [u16; 3] = free_tcp_ports([http, http]);
        let dns = free_dns_port(&ports);
        let mut all = vec![http, dns];
        all.extend(ports);
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 5, "{all:?}");
    }

    /// A port taken between picking and starting is an error that names it (what `start` retries
    /// on, and what `restart` panics with), for both processes.
    #[test]
    fn a_taken_port_is_an_address_in_use_error() {
        let Some(mut p) = Pebble::start(options(None)) else {
            return;
        };
        p.stop();
        let squatter = TcpListener::bind(("127.0.0.1", p.acme_port)).unwrap();
        let err = p.spawn_pebble().unwrap_err();
        assert!(
            err.contains("address already in use"),
            "{err}\n{}",
            p.logs()
        );
        drop(squatter);
        p.stop();
        p.restart();
        assert!(
            p.directory()["newOrder"].is_string(),
            "back once the port is free"
        );

        // pebble-challtestsrv logs the port it could not bind (TCP here) and runs on without it.
        if let Some(c) = p.challtestsrv.take() {
            kill(c);
        }
        let squatter = TcpListener::bind(("127.0.0.1", p.dns_port)).unwrap();
        let started = Instant::now();
        let err = p.spawn_challtestsrv().unwrap_err();
        assert!(
            err.contains("address already in use"),
            "{err}\n{}",
            p.logs()
        );
        assert!(started.elapsed() < START_DEADLINE, "found at once");
        drop(squatter);
    }

    #[test]
    fn chunked_bodies_are_decoded() {
        assert_eq!(dechunk("4\r\nabcd\r\n3;x=y\r\nefg\r\n0\r\n\r\n"), "abcdefg");
    }

    /// A whole issuance with an independent ACME client (Debian's `lego`, skipped when not
    /// installed): account, order, HTTP-01 answered by lego's own server on `http_port` (the name
    /// resolved through pebble-challtestsrv), finalize, download. The chain is leaf +
    /// intermediate, verifies against `issuer_roots_pem` with rustls and expires after
    /// `validity_secs`.
    #[test]
    fn lego_obtains_a_certificate_over_http01() {
        let Some(lego) = crate::process::find_binary("lego") else {
            eprintln!("lego is not installed (Debian: apt-get install lego); skipping");
            return;
        };
        let opts = options(Some(3600));
        let Some(p) = Pebble::start(opts.clone()) else {
            return;
        };
        let work = p.dir().join("lego");
        let log = p.dir().join("lego.log");
        let started = Instant::now();
        let mut cmd = Command::new(lego);
        cmd.env("LEGO_CA_CERTIFICATES", p.ca_file())
            .args(["--server", &p.directory_url()])
            .args(["--email", "acme@example.com", "--accept-tos", "--path"])
            .arg(&work)
            .args(["--domains", "acme.test", "--http", "--http.port"])
            .arg(format!("127.0.0.1:{}", opts.http_port))
            .arg("run");
        for var in SCRUBBED_ENV {
            cmd.env_remove(var);
        }
        let (mut child, _) = spawn_logged(&mut cmd, &log);
        let status = crate::process::wait_exit(
            &mut child,
            Duration::from_secs(60),
            "lego did not finish in 60 s",
        );
        let lego_log = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(status.success(), "lego failed:\n{lego_log}\n{}", p.logs());
        eprintln!("lego obtained a certificate in {:?}", started.elapsed());

        let chain_pem = std::fs::read_to_string(work.join("certificates/acme.test.crt")).unwrap();
        let chain = certs(&chain_pem);
        assert_eq!(chain.len(), 2, "leaf + intermediate: {chain_pem}");
        assert_eq!(
            certs(&p.issuer_intermediate_pem()),
            chain[1..].to_vec(),
            "the chain's second certificate is pebble's intermediate"
        );

        let mut roots = rustls::RootCertStore::empty();
        for c in certs(&p.issuer_roots_pem()) {
            roots.add(c).unwrap();
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let verifier =
            rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .unwrap();
        let name = ServerName::try_from("acme.test").unwrap();
        let now = UnixTime::now();
        verifier
            .verify_server_cert(&chain[0], &chain[1..], &name, &[], now)
            .unwrap_or_else(|e| panic!("the issued chain does not verify: {e}"));
        let later = UnixTime::since_unix_epoch(Duration::from_secs(now.as_secs() + 2 * 3600));
        let expired = verifier.verify_server_cert(&chain[0], &chain[1..], &name, &[], later);
        assert!(expired.is_err(), "valid in 2 h with validity_secs 3600");
        let other = ServerName::try_from("other.test").unwrap();
        assert!(
            verifier
                .verify_server_cert(&chain[0], &chain[1..], &other, &[], now)
                .is_err()
        );
    }
}
