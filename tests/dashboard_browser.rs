//! The dashboard as a user sees it: the prod build of `examples/scadabridge` served over TLS in front
//! of two simulated central nodes, opened in Debian's headless Chromium at
//! `https://scadabridge.example.com:<port>/dashboard/` on the `traefik` entry point.
//!
//! Chromium is driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: commands on
//! its fd 3, answers on fd 4, NUL-terminated JSON), so nothing but Chromium itself is needed. The
//! test certificate is trusted through an NSS database in Chromium's `$HOME` (made with `certutil`),
//! not by ignoring certificate errors, and `scadabridge.example.com` is mapped to 127.0.0.1 by
//! `--host-resolver-rules`; every other name fails to resolve.
//!
//! Without Chromium (or `certutil`) the test prints why and passes, unless `CI` is set: then it
//! fails. With `BRIDGECTL_UPDATE_DOCS=1` it writes its screenshot to `docs/dashboard.png`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a test failure"
)]

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use bridge_tests::prod::{DASHBOARD_USER, DOMAIN, Prod, curl, start_prod};
use bridge_tests::repo_root;
use bridge_tests::sim::simulate;
use serde_json::{Value, json};

/// Flags the machine needs for Chromium (no sandbox as root, no GPU, no traffic of its own).
const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--window-size=1100,560",
    "--remote-debugging-pipe",
];

/// `name` on `PATH`, or `None`.
fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
    })
}

/// A Chromium process and its DevTools pipe.
struct Chromium {
    child: Child,
    commands: ChildStdin,
    messages: mpsc::Receiver<Value>,
    /// Events read while waiting for an answer, oldest first.
    events: VecDeque<Value>,
    next_id: u64,
    /// `Fetch.authRequired` events seen (each one is a login prompt, answered "cancel").
    auth_prompts: Vec<Value>,
    log: PathBuf,
}

impl Drop for Chromium {
    fn drop(&mut self) {
        let _ = self.send("Browser.close", &json!({}), None);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Chromium {
    /// Starts `chromium` with an empty profile and `home` as `$HOME` (where its NSS database is).
    fn launch(chromium: &Path, home: &Path) -> Chromium {
        let profile = home.join("profile");
        std::fs::create_dir_all(&profile).unwrap();
        let log = home.join("chromium.log");
        // The shell gives Chromium our stdin pipe as fd 3 and our stdout pipe as fd 4 (no unsafe
        // code needed for the descriptors) and sends its own output to the log.
        let child = Command::new("sh")
            .arg("-c")
            .arg(r#"exec "$0" "$@" 3<&0 4>&1 0</dev/null 1>&2"#)
            .arg(chromium)
            .args(CHROMIUM_FLAGS)
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(format!(
                "--host-resolver-rules=MAP {DOMAIN} 127.0.0.1, MAP * ~NOTFOUND"
            ))
            .arg("about:blank")
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_CACHE_HOME", home.join("cache"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", chromium.display()));
        let mut child = child;
        let commands = child.stdin.take().unwrap();
        let mut answers = child.stdout.take().unwrap();
        let (tx, messages) = mpsc::channel();
        std::thread::spawn(move || {
            let mut pending = Vec::new();
            let mut buf = [0u8; 65536];
            while let Ok(n) = answers.read(&mut buf) {
                if n == 0 {
                    return;
                }
                pending.extend_from_slice(&buf[..n]);
                while let Some(end) = pending.iter().position(|&b| b == 0) {
                    let message: Vec<u8> = pending.drain(..=end).collect();
                    if let Ok(value) = serde_json::from_slice(&message[..end])
                        && tx.send(value).is_err()
                    {
                        return;
                    }
                }
            }
        });
        Chromium {
            child,
            commands,
            messages,
            events: VecDeque::new(),
            next_id: 1,
            auth_prompts: Vec::new(),
            log,
        }
    }

    /// What Chromium wrote to stderr so far (for failure messages).
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }

    fn send(
        &mut self,
        method: &str,
        params: &Value,
        session: Option<&str>,
    ) -> std::io::Result<u64> {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            message["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&message)?;
        bytes.push(0);
        self.commands.write_all(&bytes)?;
        self.commands.flush()?;
        Ok(id)
    }

    /// The next message, answering the requests the Fetch domain pauses (let through) and every
    /// login prompt (cancelled, as a user without the password would); `None` at `deadline`.
    fn next_message(&mut self, deadline: Instant) -> Option<Value> {
        let wait = deadline.saturating_duration_since(Instant::now());
        let message = match self.messages.recv_timeout(wait) {
            Ok(m) => m,
            Err(mpsc::RecvTimeoutError::Timeout) => return None,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                panic!("Chromium closed its DevTools pipe:\n{}", self.log_tail())
            }
        };
        let session = message["sessionId"].as_str().map(str::to_owned);
        let request = message["params"]["requestId"].clone();
        match message["method"].as_str() {
            Some("Fetch.requestPaused") => {
                self.send(
                    "Fetch.continueRequest",
                    &json!({"requestId": request}),
                    session.as_deref(),
                )
                .unwrap();
            }
            Some("Fetch.authRequired") => {
                self.auth_prompts.push(message["params"].clone());
                self.send(
                    "Fetch.continueWithAuth",
                    &json!({"requestId": request, "authChallengeResponse": {"response": "CancelAuth"}}),
                    session.as_deref(),
                )
                .unwrap();
            }
            _ => {}
        }
        Some(message)
    }

    /// Sends a command and waits (at most 20 s) for its result.
    fn call(&mut self, method: &str, params: Value, session: Option<&str>) -> Value {
        let id = self.send(method, &params, session).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let Some(message) = self.next_message(deadline) else {
                panic!("no answer to {method}:\n{}", self.log_tail());
            };
            if message["id"] == json!(id) {
                if let Some(error) = message.get("error") {
                    panic!("{method} failed: {error}");
                }
                return message["result"].clone();
            }
            if message.get("method").is_some() {
                self.events.push_back(message);
            }
        }
    }

    /// Waits (at most `limit`) for an event `method` whose params satisfy `want`.
    fn event(&mut self, method: &str, limit: Duration, want: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self
            .events
            .iter()
            .position(|e| e["method"] == method && want(&e["params"]))
        {
            let event = self.events.remove(i).unwrap();
            self.events.drain(..i);
            return event["params"].clone();
        }
        self.events.clear();
        let deadline = Instant::now() + limit;
        while let Some(message) = self.next_message(deadline) {
            if message["method"] == method && want(&message["params"]) {
                return message["params"].clone();
            }
        }
        panic!("no {method} event within {limit:?}:\n{}", self.log_tail());
    }

    /// Evaluates `expression` in the page (promises awaited) and returns its value.
    fn eval(&mut self, session: &str, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            Some(session),
        );
        if let Some(exception) = result.get("exceptionDetails") {
            panic!("{expression} threw: {exception}");
        }
        result["result"]["value"].clone()
    }

    /// Opens `url` and waits for its load event; returns the HTTP status of the document.
    fn open(&mut self, session: &str, url: &str) -> u64 {
        self.events.clear();
        let frame = self.call("Page.navigate", json!({"url": url}), Some(session));
        assert!(
            frame.get("errorText").is_none(),
            "cannot open {url}: {frame}"
        );
        let response = self.event("Network.responseReceived", Duration::from_secs(20), |p| {
            p["type"] == "Document"
        });
        self.event("Page.loadEventFired", Duration::from_secs(20), |_| true);
        response["response"]["status"].as_u64().unwrap_or(0)
    }
}

/// What the page shows: the visible text of every table row, the server states with their colours,
/// the status line and whether the dashboard's tables are there at all.
const READ_PAGE: &str = r##"(() => {
  const rows = (id) => Array.from(document.querySelectorAll("#" + id + " tr"),
    (tr) => Array.from(tr.cells, (td) => td.innerText.trim()));
  const states = Array.from(document.querySelectorAll("#services .up, #services .down"),
    (s) => [s.innerText, s.nextElementSibling ? s.nextElementSibling.innerText : "",
            getComputedStyle(s).color]);
  const status = document.getElementById("status");
  return {
    dashboard: document.getElementById("routers") !== null,
    text: document.body ? document.body.innerText : "",
    status: status ? status.innerText : "",
    routers: document.getElementById("routers") ? rows("routers") : [],
    services: document.getElementById("services") ? rows("services") : [],
    states: states,
  };
})()"##;

/// The state shown for each server of `central@file`: `(state, url, colour)`.
fn states(page: &Value) -> Vec<(String, String, String)> {
    page["states"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| {
                    let field = |i: usize| s[i].as_str().unwrap_or("").to_owned();
                    (field(0), field(1), field(2))
                })
                .collect()
        })
        .unwrap_or_default()
}

const GREEN: &str = "rgb(26, 127, 55)";
const RED: &str = "rgb(207, 34, 46)";

/// Polls the page (without reloading it) until `done` holds, at most `limit`; returns the last read.
fn watch(
    browser: &mut Chromium,
    session: &str,
    limit: Duration,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let started = Instant::now();
    loop {
        let page = browser.eval(session, READ_PAGE);
        if done(&page) {
            return page;
        }
        assert!(
            started.elapsed() < limit,
            "the dashboard did not show what was expected within {limit:?}; it shows:\n{}\n{}",
            serde_json::to_string_pretty(&page).unwrap(),
            browser.log_tail()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn server_urls(a: SocketAddr, b: SocketAddr) -> (String, String) {
    (
        format!("http://scadabridge-central-a:{}", a.port()),
        format!("http://scadabridge-central-b:{}", b.port()),
    )
}

/// Makes `home/.pki/nssdb`, Chromium's certificate database on Linux, trusting `cert` for TLS
/// servers (a self-signed leaf, so as a trusted peer).
fn trust_in_nss(certutil: &Path, home: &Path, cert: &Path) {
    let db = home.join(".pki/nssdb");
    std::fs::create_dir_all(&db).unwrap();
    let db = format!("sql:{}", db.display());
    for args in [
        vec!["-N", "-d", &db, "--empty-password"],
        vec![
            "-A",
            "-d",
            &db,
            "-n",
            "bridgectl test",
            "-t",
            "P,,",
            "-i",
            cert.to_str().unwrap(),
        ],
    ] {
        let out = Command::new(certutil).args(&args).output().unwrap();
        assert!(
            out.status.success(),
            "certutil {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn the_dashboard_shows_live_server_states_over_tls_behind_basic_auth() {
    let ci = std::env::var_os("CI").is_some();
    let tools = (on_path("chromium"), on_path("certutil"));
    let (Some(chromium), Some(certutil)) = tools else {
        let reason = "needs Debian's chromium and certutil (libnss3-tools); .ci/run installs them";
        assert!(!ci, "CI is set but the dashboard browser test {reason}");
        eprintln!("skipped: the dashboard browser test {reason}");
        return;
    };

    let (a, a_addr) = simulate("a", "127.0.0.1:0".parse().unwrap(), true).unwrap();
    let (b, b_addr) = simulate("b", "127.0.0.1:0".parse().unwrap(), false).unwrap();
    let p: Prod = start_prod(a_addr.port(), b_addr.port());
    let (a_url, b_url) = server_urls(a_addr, b_addr);
    // Both nodes have been probed once the API says so (the page is then deterministic).
    let started = Instant::now();
    loop {
        let (_, _, body) = curl(
            &p,
            p.api,
            "/api/http/services/central@file",
            &["-u", "admin:s3cret"],
        );
        if body.contains(&format!("\"{a_url}\":\"UP\""))
            && body.contains(&format!("\"{b_url}\":\"DOWN\""))
        {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{body}");
        std::thread::sleep(Duration::from_millis(100));
    }

    let home = tempfile::tempdir().unwrap();
    trust_in_nss(&certutil, home.path(), &p.dir.path().join("bridge.crt"));
    let mut browser = Chromium::launch(&chromium, home.path());
    let target = browser.call("Target.createTarget", json!({"url": "about:blank"}), None);
    let attached = browser.call(
        "Target.attachToTarget",
        json!({"targetId": target["targetId"], "flatten": true}),
        None,
    );
    let session = attached["sessionId"].as_str().unwrap().to_owned();
    let s = session.as_str();
    browser.call("Page.enable", json!({}), Some(s));
    browser.call("Network.enable", json!({}), Some(s));
    browser.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 1100, "height": 560, "deviceScaleFactor": 1, "mobile": false}),
        Some(s),
    );

    // Without credentials, or with a wrong password, the browser gets a Basic challenge (its login
    // prompt, cancelled here) and the page shows the 401 answer, not the dashboard.
    let port = p.api.port();
    let base = format!("https://{DOMAIN}:{port}/dashboard/");
    browser.call(
        "Fetch.enable",
        json!({"handleAuthRequests": true, "patterns": [{"urlPattern": "*"}]}),
        Some(s),
    );
    for url in [
        base,
        format!("https://admin:wrong@{DOMAIN}:{port}/dashboard/"),
    ] {
        let prompts = browser.auth_prompts.len();
        let status = browser.open(s, &url);
        assert_eq!(status, 401, "{url}");
        assert_eq!(
            browser.auth_prompts.len(),
            prompts + 1,
            "{url}: no login prompt"
        );
        let challenge = &browser.auth_prompts[prompts]["authChallenge"];
        assert_eq!(challenge["scheme"], "basic", "{challenge}");
        assert_eq!(challenge["realm"], "bridgectl", "{challenge}");
        let page = browser.eval(s, READ_PAGE);
        assert_eq!(page["dashboard"], false, "{url}: {page}");
        assert!(
            !page["text"].as_str().unwrap().contains("central"),
            "{page}"
        );
        assert!(
            page["text"].as_str().unwrap().contains("401 Unauthorized"),
            "{page}"
        );
    }
    browser.call("Fetch.disable", json!({}), Some(s));

    // With the credentials in the address (the browser authenticates the page, and its API calls
    // with the same credentials): routers, services and both servers with their live states.
    let (user, password) = DASHBOARD_USER;
    let status = browser.open(
        s,
        &format!("https://{user}:{password}@{DOMAIN}:{port}/dashboard/"),
    );
    assert_eq!(status, 200);
    let a_up_b_down = |page: &Value| {
        states(page)
            == vec![
                ("UP".to_owned(), a_url.clone(), GREEN.to_owned()),
                ("DOWN".to_owned(), b_url.clone(), RED.to_owned()),
            ]
    };
    let page = watch(&mut browser, s, Duration::from_secs(10), a_up_b_down);
    let routers = page["routers"].as_array().unwrap();
    assert!(
        routers.iter().any(|r| r[0] == "central@file"
            && r[1] == "PathPrefix(`/`)"
            && r[2] == "websecure"
            && r[3] == "central@file"),
        "router central@file: {page}"
    );
    let services = page["services"].as_array().unwrap();
    let central = services
        .iter()
        .find(|r| r[0] == "central@file")
        .unwrap_or_else(|| panic!("service central@file: {page}"));
    assert_eq!(central[1], "loadbalancer", "{page}");
    assert_eq!(
        central[2],
        json!(format!("UP {a_url}\nDOWN {b_url}")),
        "{page}"
    );
    let status_line = page["status"].as_str().unwrap().to_owned();
    assert!(status_line.starts_with("updated "), "{page}");
    assert!(
        !browser.log_tail().contains("ERR_CERT"),
        "{}",
        browser.log_tail()
    );

    let shot = browser.call("Page.captureScreenshot", json!({"format": "png"}), Some(s));
    let png = base64::engine::general_purpose::STANDARD
        .decode(shot["data"].as_str().unwrap())
        .unwrap();
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
    if std::env::var_os("BRIDGECTL_UPDATE_DOCS").is_some_and(|v| v == "1") {
        std::fs::write(repo_root().join("docs/dashboard.png"), &png).unwrap();
    }

    // Failover: the page follows on its own (no reload: a mark set on the window survives).
    browser.eval(s, "window.bridgectlTestMark = 'same page'; true");
    a.active.store(false, Ordering::SeqCst);
    b.active.store(true, Ordering::SeqCst);
    let a_down_b_up = |page: &Value| {
        states(page)
            == vec![
                ("DOWN".to_owned(), a_url.clone(), RED.to_owned()),
                ("UP".to_owned(), b_url.clone(), GREEN.to_owned()),
            ]
    };
    let page = watch(&mut browser, s, Duration::from_secs(15), a_down_b_up);
    assert_eq!(browser.eval(s, "window.bridgectlTestMark"), "same page");
    assert_ne!(page["status"], json!(status_line), "{page}");
    assert!(
        page["status"].as_str().unwrap().starts_with("updated "),
        "{page}"
    );

    // An operator drains the new active node (`bridge-runtime server`, with the dashboard's
    // credentials): the page marks it, still without a reload.
    let out = Command::new(assert_cmd::cargo::cargo_bin("bridge-runtime"))
        .args([
            "server",
            "drain",
            "--api",
            &format!("https://127.0.0.1:{port}"),
        ])
        .args(["--insecure", "--user", &format!("{user}:{password}")])
        .args(["--service", "central", "--url", &b_url])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let drained = |page: &Value| {
        page["services"].as_array().is_some_and(|rows| {
            rows.iter().any(|r| {
                r[0] == "central@file"
                    && r[2]
                        .as_str()
                        .is_some_and(|t| t.contains(&format!("{b_url} drain")))
            })
        })
    };
    watch(&mut browser, s, Duration::from_secs(10), drained);
    assert_eq!(browser.eval(s, "window.bridgectlTestMark"), "same page");
}
