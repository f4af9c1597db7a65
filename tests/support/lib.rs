//! The test crate's support library: what the test targets share.
//!
//! - this file: locating the repository, running `check` in-process, turning a report into the
//!   stable `severity code file:line` lines expectation files list, building a plan;
//! - [`backends`]: one configurable HTTP backend (health endpoint, crash, WebSocket echo, HTTP/2,
//!   TLS, recording, custom answers);
//! - [`h2server`]: a bare HTTP/2 server that sends interim (1xx) responses;
//! - [`ocsp`]: a CA naming OCSP responders, a responder, a client that shows the staple;
//! - [`tls`]: a test CA, a client that shows which certificate is served, server configurations;
//! - [`process`]: the binaries under test, serving processes, signals, exits, kill-on-drop guards;
//! - [`sim`]: the two simulated ScadaBridge nodes (the demo and the appliance tests);
//! - [`prod`]: the prod profile of the example served for real;
//! - [`pebble`]: Let's Encrypt's test ACME server (Debian's `pebble`) and its DNS server;
//! - [`traefik`]: the real Traefik binary serving the same files, the oracle of differential tests.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

pub mod backends;
pub mod h2server;
pub mod h3client;
pub mod netns;
pub mod ocsp;
pub mod pebble;
pub mod process;
pub mod prod;
pub mod sim;
pub mod tls;
pub mod traefik;

pub use process::spawn_serving;

use bridgectl::check::{CheckOptions, CheckReport, check};
use bridgectl::diag::Severity;
use bridgectl::render;

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Runs `check` on a directory as `bridgectl check DIR` would.
pub fn check_dir(dir: &Path) -> CheckReport {
    check(&CheckOptions {
        dir: dir.to_path_buf(),
        ..CheckOptions::default()
    })
    .unwrap_or_else(|e| panic!("check {} failed to start: {e}", dir.display()))
}

/// `severity code file:line` for every error and warning (notes are style only).
pub fn finding_lines(report: &CheckReport) -> Vec<String> {
    render::locate(&report.sources, &report.diagnostics)
        .into_iter()
        .filter(|l| l.diag.severity != Severity::Note)
        .map(|l| {
            format!(
                "{} {} {}:{}",
                l.diag.severity.as_str(),
                l.diag.code.as_str(),
                l.file.unwrap_or("-"),
                l.line.map_or_else(|| "-".to_owned(), |n| n.to_string())
            )
        })
        .collect()
}

/// The human rendering without colours, as a user sees it.
pub fn human(report: &CheckReport) -> String {
    let mut out = render::human(&report.sources, &report.diagnostics, "", false);
    out.push_str(&render::summary(&report.diagnostics, report.file_count()));
    out.push('\n');
    out
}

/// Runs `bridgectl build DIR --profile PROFILE --out DIR/<out> [extra...]` and returns the plan's
/// path; panics with bridgectl's diagnostics when the build fails.
pub fn build_plan(dir: &Path, profile: &str, out: &str, extra: &[&str]) -> PathBuf {
    let plan = dir.join(out);
    let result = process::bridgectl()
        .arg("build")
        .arg(dir)
        .args(["--profile", profile, "--out"])
        .arg(&plan)
        .args(extra)
        .output()
        .unwrap_or_else(|e| panic!("cannot run bridgectl: {e}"));
    assert!(
        result.status.success(),
        "bridgectl build {} failed:\n{}",
        dir.display(),
        String::from_utf8_lossy(&result.stderr)
    );
    plan
}

/// The response lines curl shows for one request (`< http/2 103`, `< link: …`; status lines,
/// `link` and the hop-by-hop fields the test's server sends, lower-cased), each with the time
/// it appeared after the start.
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helper: a panic is a test failure"
)]
pub fn curl_heads(url: &str, host: &str, extra: &[&str]) -> Vec<(std::time::Duration, String)> {
    use std::io::BufRead as _;
    let start = std::time::Instant::now();
    let mut child = std::process::Command::new("curl")
        .args(["-sv", "--max-time", "10", "-o", "/dev/null", "-H"])
        .arg(format!("Host: {host}"))
        .args(extra)
        .arg(url)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("curl runs");
    let stderr = child.stderr.take().unwrap();
    let mut lines = Vec::new();
    for line in std::io::BufReader::new(stderr).lines() {
        let Ok(line) = line else { break };
        let Some(line) = line.strip_prefix("< ") else {
            continue;
        };
        let line = line.trim_end().to_ascii_lowercase();
        if ["http/", "link:", "x-hop", "connection:"]
            .iter()
            .any(|p| line.starts_with(p))
        {
            lines.push((start.elapsed(), line));
        }
    }
    let _ = child.wait();
    lines
}

/// Listens on 127.0.0.1 (a free port) and hands each accepted connection to `conn`, in a task
/// of its own, on a runtime in a background thread; the address to connect to.
#[allow(clippy::unwrap_used, reason = "test helper: a panic is a test failure")]
pub fn serve_connections<F, Fut>(conn: F) -> std::net::SocketAddr
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                if let Ok((tcp, _)) = listener.accept().await {
                    tokio::spawn(conn(tcp));
                }
            }
        });
    });
    addr
}

/// Serves HTTP/2 with prior knowledge (h2c) by hyper on each connection of
/// [`serve_connections`], answering with `svc`.
pub fn serve_h2c<S, B>(svc: S) -> std::net::SocketAddr
where
    S: hyper::service::Service<
            hyper::Request<hyper::body::Incoming>,
            Response = hyper::Response<B>,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    serve_connections(move |tcp| {
        let svc = svc.clone();
        async move {
            let _ = hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                .serve_connection(hyper_util::rt::TokioIo::new(tcp), svc)
                .await;
        }
    })
}

/// The client side of the interim-response tests: a GET and a POST (`abc`) to `url` over
/// HTTP/1.1 and over h2c, the server sending `103 Early Hints` with a `link`, then after `pause`
/// `102 Processing` and the final `200`. Each must see the interim responses, in order, before
/// the final one, the 103 at least half the pause ahead of it. The number of requests sent.
pub fn assert_interims_relayed(
    url: &str,
    host: &str,
    pause: std::time::Duration,
    what: &str,
) -> usize {
    let cases: [(&str, &str, &[&str]); 4] = [
        ("HTTP/1.1 GET", "http/1.1", &[]),
        ("HTTP/1.1 POST", "http/1.1", &["--data-binary", "abc"]),
        ("h2c GET", "http/2", &["--http2-prior-knowledge"]),
        (
            "h2c POST",
            "http/2",
            &["--http2-prior-knowledge", "--data-binary", "abc"],
        ),
    ];
    for (case, version, extra) in cases {
        let heads = curl_heads(url, host, extra);
        let lines: Vec<&str> = heads.iter().map(|(_, l)| l.as_str()).collect();
        let status = |code: &str, reason: &str| {
            if version == "http/2" {
                format!("{version} {code}")
            } else {
                format!("{version} {code} {reason}")
            }
        };
        assert_eq!(
            lines,
            [
                status("103", "early hints"),
                "link: </s.css>; rel=preload".to_owned(),
                status("102", "processing"),
                status("200", "ok"),
            ],
            "{what}, {case}"
        );
        assert!(
            heads[3].0 >= heads[0].0 + pause / 2,
            "{what}, {case}: the 103 came with the final answer: {heads:?}"
        );
    }
    cases.len()
}
