//! Hostile input against the real `bridge-runtime`, byte for byte over raw sockets on 127.0.0.1.
//!
//! Client-side families put a *recording backend* behind the proxy: it parses what it gets
//! strictly, records every request, and flags a desync (bytes that are no request start, or a
//! request the test only hid inside a body). Upstream families put a *crafted-response backend*
//! behind it: the test scripts the exact response bytes per connection and request, and counts
//! the connections the proxy opened.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a test failure"
)]

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The longest any single wait for the proxy may take.
const TIMEOUT: Duration = Duration::from_secs(3);
/// How long a backend accepts and serves connections at most.
const BACKEND_LIFETIME: Duration = Duration::from_secs(120);
/// A request the tests only ever hide inside another one: a backend seeing it is a desync.
const SMUGGLED: &[u8] = b"GET /smuggled HTTP/1.1\r\nHost: app\r\n\r\n";
/// What every crafted backend connection but the first answers.
const GOOD: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\ngood";
/// What the first crafted connection answers after its first request: no test wants to see it.
const REUSED: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nreused";
/// A stray response that must never reach a client.
const POISON: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\npoison";

// ---------------------------------------------------------------------------------------------
// HTTP/1.1 framing, shared by the backends and the client

/// Where `needle` first occurs in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// `b` split at every CRLF.
fn split_crlf(mut b: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while let Some(i) = find(b, b"\r\n") {
        out.push(&b[..i]);
        b = &b[i + 2..];
    }
    out.push(b);
    out
}

/// A token character (RFC 9110 `tchar`).
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A byte allowed in a field value: HTAB, SP, visible ASCII, obs-text.
fn is_value_byte(b: u8) -> bool {
    b == b'\t' || (b >= 0x20 && b != 0x7f)
}

/// A field line as `(lower-case name, value without surrounding blanks)`.
fn field(line: &str) -> (String, String) {
    let (name, value) = line.split_once(':').unwrap_or((line, ""));
    let value = value.trim_matches([' ', '\t']).to_owned();
    (name.to_ascii_lowercase(), value)
}

/// Checks a field line strictly: a token name right before the colon (so no folding and no
/// space before the colon), a value without control bytes.
fn field_line(raw: &[u8]) -> Result<(), String> {
    let colon = raw.iter().position(|&b| b == b':').unwrap_or(0);
    let name_ok = colon > 0 && raw[..colon].iter().all(|&b| is_tchar(b));
    if !name_ok || !raw[colon + 1..].iter().all(|&b| is_value_byte(b)) {
        return Err(format!(
            "a bad field line: {:?}",
            String::from_utf8_lossy(raw)
        ));
    }
    Ok(())
}

/// Decodes a chunked body strictly (1 to 16 hex digits of size, at most 1 MiB a chunk,
/// extensions without control bytes, CRLF line ends, CRLF after each chunk's data): the data
/// decoded so far, and how many bytes of `buf` the body took once it is complete.
fn decode_chunked(buf: &[u8]) -> Result<(Vec<u8>, Option<usize>), String> {
    let (mut body, mut pos) = (Vec::new(), 0);
    loop {
        let Some(end) = find(&buf[pos..], b"\r\n") else {
            if buf[pos..].contains(&b'\n') || buf.len() - pos > 4096 {
                return Err("a bad chunk-size line".into());
            }
            return Ok((body, None));
        };
        let line = &buf[pos..pos + end];
        let (size, ext) = line.split_at(line.iter().position(|&b| b == b';').unwrap_or(end));
        let hex = (1..=16).contains(&size.len()) && size.iter().all(u8::is_ascii_hexdigit);
        if !hex || ext.len() > 4096 || !ext.iter().all(|&b| is_value_byte(b)) {
            let shown = String::from_utf8_lossy(&line[..end.min(60)]);
            return Err(format!("a bad chunk-size line {shown:?}"));
        }
        let size = u64::from_str_radix(std::str::from_utf8(size).unwrap(), 16).unwrap();
        let size = usize::try_from(size)
            .ok()
            .filter(|&s| s <= 1 << 20)
            .ok_or_else(|| format!("a chunk of {size} bytes"))?;
        pos += end + 2;
        if size == 0 {
            // The trailer section, up to an empty line.
            while let Some(end) = find(&buf[pos..], b"\r\n") {
                let line = &buf[pos..pos + end];
                pos += end + 2;
                if line.is_empty() {
                    return Ok((body, Some(pos)));
                }
                field_line(line)?;
            }
            return Ok((body, None));
        }
        body.extend_from_slice(&buf[pos..buf.len().min(pos + size)]);
        if buf.len() < pos + size + 2 {
            return Ok((body, None));
        }
        if &buf[pos + size..pos + size + 2] != b"\r\n" {
            return Err("chunk data not followed by CRLF".into());
        }
        pos += size + 2;
    }
}

/// A request as a backend received it.
#[derive(Clone, Debug)]
struct Seen {
    /// The backend connection that carried it (0 = the first accepted).
    conn: usize,
    method: String,
    target: String,
    /// Every field line exactly as received, without its CRLF.
    lines: Vec<String>,
    body: Vec<u8>,
}

impl Seen {
    /// The values of every field line named `name` (any case), in order.
    fn values(&self, name: &str) -> Vec<String> {
        let fields = self.lines.iter().map(|l| field(l));
        fields.filter(|(n, _)| n == name).map(|(_, v)| v).collect()
    }
}

/// Parses one request strictly (RFC 9112) from the start of `buf`: the request line (origin form
/// or `*`) is checked as soon as it is whole, so garbage is flagged at once; field lines as
/// [`field_line`]; a body framed by one `Content-Length` line or by `Transfer-Encoding: chunked`
/// alone. `Ok(None)`: more bytes are needed; else the request and how many bytes it took.
fn parse_request(buf: &[u8]) -> Result<Option<(Seen, usize)>, String> {
    let Some(line_end) = find(buf, b"\r\n") else {
        if buf.contains(&b'\n') || buf.len() > 8192 {
            return Err("a bad request line".into());
        }
        return Ok(None);
    };
    let text = String::from_utf8_lossy(&buf[..line_end]);
    let parts: Vec<&str> = text.split(' ').collect();
    let ok = matches!(parts.as_slice(), [m, t, v] if !m.is_empty()
        && m.bytes().all(is_tchar)
        && (t.starts_with('/') || *t == "*")
        && t.bytes().all(|b| (0x21..0x7f).contains(&b))
        && (*v == "HTTP/1.1" || *v == "HTTP/1.0"));
    if !ok {
        return Err(format!("not a request line: {text:?}"));
    }
    let Some(head_end) = find(buf, b"\r\n\r\n") else {
        if buf.len() > 64 * 1024 {
            return Err("a request head over 64 KiB".into());
        }
        return Ok(None);
    };
    let mut lines = Vec::new();
    for raw in split_crlf(&buf[line_end..head_end]).into_iter().skip(1) {
        field_line(raw)?;
        lines.push(String::from_utf8_lossy(raw).into_owned());
    }
    let (method, target) = (parts[0].to_owned(), parts[1].to_owned());
    let mut seen = Seen {
        conn: 0,
        method,
        target,
        lines,
        body: Vec::new(),
    };
    let at = head_end + 4;
    let (te, cl) = (
        seen.values("transfer-encoding"),
        seen.values("content-length"),
    );
    let end = if te.is_empty() {
        let length = match cl.as_slice() {
            [] => 0,
            [one] if (1..=7).contains(&one.len()) && one.bytes().all(|b| b.is_ascii_digit()) => {
                one.parse::<usize>().unwrap()
            }
            _ => return Err(format!("Content-Length {cl:?}")),
        };
        if buf.len() < at + length {
            return Ok(None);
        }
        seen.body = buf[at..at + length].to_vec();
        at + length
    } else if cl.is_empty() && te.len() == 1 && te[0].eq_ignore_ascii_case("chunked") {
        let (body, used) = decode_chunked(&buf[at..])?;
        let Some(used) = used else { return Ok(None) };
        seen.body = body;
        at + used
    } else {
        return Err(format!(
            "framing by Transfer-Encoding {te:?} and Content-Length {cl:?}"
        ));
    };
    Ok(Some((seen, end)))
}

// ---------------------------------------------------------------------------------------------
// Backends

/// One step of a backend's answer.
#[derive(Clone, Debug)]
enum Act {
    Write(Vec<u8>),
    Sleep(Duration),
    Close,
}

/// What a backend saw.
#[derive(Debug, Default)]
struct Record {
    /// Every complete request, in arrival order.
    requests: Vec<Seen>,
    /// Why a connection stopped making sense: bytes that are no request, a hidden request.
    desyncs: Vec<String>,
    /// Connections that ended inside a request (the proxy gave up on it).
    aborted: usize,
    accepted: usize,
}

/// A raw backend on 127.0.0.1: parses every request strictly, records it, and runs what
/// `respond(connection, request index on it, request)` returns (both indexes from 0).
struct Backend {
    addr: SocketAddr,
    record: Arc<Mutex<Record>>,
    stop: Arc<AtomicBool>,
}

impl Backend {
    fn start(respond: impl Fn(usize, usize, &Seen) -> Vec<Act> + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        listener.set_nonblocking(true).unwrap();
        let record: Arc<Mutex<Record>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (r, s, respond) = (Arc::clone(&record), stop.clone(), Arc::new(respond));
        std::thread::spawn(move || {
            let started = Instant::now();
            while !s.load(Ordering::SeqCst) && started.elapsed() < BACKEND_LIFETIME {
                let Ok((stream, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                let conn = {
                    let mut rec = r.lock().unwrap();
                    rec.accepted += 1;
                    rec.accepted - 1
                };
                let (r, respond) = (r.clone(), respond.clone());
                std::thread::spawn(move || serve(stream, conn, &r, &*respond));
            }
        });
        Self { addr, record, stop }
    }

    /// Answers every request `seen <method> <target> <body length>`.
    fn recording() -> Self {
        Self::start(|_, _, seen| {
            let text = format!("seen {} {} {}", seen.method, seen.target, seen.body.len());
            let mut out = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", text.len());
            if seen.method != "HEAD" {
                out.push_str(&text);
            }
            vec![Act::Write(out.into_bytes())]
        })
    }

    /// Connection 0 runs `first` for its first request and answers `reused` after it; every
    /// other connection answers `good` — so `good` proves a new backend connection.
    fn crafted(first: Vec<Act>) -> Self {
        Self::start(move |conn, req, _| match (conn, req) {
            (0, 0) => first.clone(),
            (0, _) => vec![Act::Write(REUSED.to_vec())],
            _ => vec![Act::Write(GOOD.to_vec())],
        })
    }

    fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Every complete request so far, after a short settle; fails `case` on any desync.
    fn seen(&self, case: &str) -> Vec<Seen> {
        std::thread::sleep(Duration::from_millis(50));
        let rec = self.record.lock().unwrap();
        assert!(
            rec.desyncs.is_empty(),
            "{case}: the backend desynchronised: {:?}",
            rec.desyncs
        );
        rec.requests.clone()
    }

    /// The requests after the first `since` ones (see [`Backend::seen`]).
    fn since(&self, case: &str, since: usize) -> Vec<Seen> {
        self.seen(case).split_off(since)
    }

    fn aborted(&self) -> usize {
        self.record.lock().unwrap().aborted
    }

    /// How many connections the proxy opened to it.
    fn accepted(&self) -> usize {
        self.record.lock().unwrap().accepted
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Serves one backend connection (bounded by [`BACKEND_LIFETIME`]): parses requests one after
/// another, records each and runs its answer; at the end a request cut short counts as aborted,
/// any other leftover or unparsable byte as a desync, as does a target the tests only hide.
fn serve(
    mut stream: TcpStream,
    conn: usize,
    record: &Mutex<Record>,
    respond: &dyn Fn(usize, usize, &Seen) -> Vec<Act>,
) {
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    stream.set_write_timeout(Some(TIMEOUT)).unwrap();
    let desync = |why: String| {
        record
            .lock()
            .unwrap()
            .desyncs
            .push(format!("connection {conn}: {why}"))
    };
    let started = Instant::now();
    let (mut buf, mut chunk, mut index) = (Vec::new(), vec![0u8; 16 * 1024], 0);
    loop {
        loop {
            let (mut seen, used) = match parse_request(&buf) {
                Ok(Some(done)) => done,
                Ok(None) => break,
                Err(why) => {
                    let start = String::from_utf8_lossy(&buf[..buf.len().min(120)]);
                    return desync(format!("{why} (bytes: {start:?})"));
                }
            };
            buf.drain(..used);
            seen.conn = conn;
            let acts = respond(conn, index, &seen);
            index += 1;
            let hidden = seen.target.contains("smuggled");
            record.lock().unwrap().requests.push(seen);
            if hidden {
                return desync("a request to /smuggled, which the tests only hide".into());
            }
            for act in acts {
                match act {
                    Act::Write(bytes) if stream.write_all(&bytes).is_ok() => {}
                    Act::Sleep(d) => std::thread::sleep(d),
                    Act::Write(_) | Act::Close => return,
                }
            }
        }
        if started.elapsed() > BACKEND_LIFETIME {
            return;
        }
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
    }
    if buf.is_empty() {
        return;
    }
    if find(&buf, b"\r\n").is_some() || buf.iter().all(|b| (0x20..0x7f).contains(b)) {
        record.lock().unwrap().aborted += 1;
    } else {
        desync(format!(
            "bytes that are no request at the end: {:?}",
            String::from_utf8_lossy(&buf)
        ));
    }
}

// ---------------------------------------------------------------------------------------------
// The proxy and a raw client

/// A running `bridge-runtime` serving a plan built in its own temporary directory.
struct Proxy {
    child: Child,
    web: SocketAddr,
    traefik: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const STATIC_YML: &str = "entryPoints:\n  web:\n    address: \":8080\"\n  traefik:\n    address: \":9100\"\nmetrics:\n  prometheus:\n    entryPoint: traefik\nproviders:\n  file:\n    filename: /etc/traefik/dynamic.yml\n";

/// Builds a plan with `routes` — `(name, rule, priority, port)`: a router with its own load
/// balancer of one server `http://backend:<port>` — and serves it, `backend` resolved to
/// 127.0.0.1 (the temporary directory plays /etc/traefik).
fn start_proxy(routes: &[(&str, &str, u32, u16)]) -> Proxy {
    let dir = tempfile::tempdir().unwrap();
    let (mut routers, mut services) = (String::new(), String::new());
    for (name, rule, priority, port) in routes {
        routers.push_str(&format!(
            "    {name}:\n      rule: \"{rule}\"\n      priority: {priority}\n      service: {name}\n"
        ));
        services.push_str(&format!(
            "    {name}:\n      loadBalancer:\n        servers:\n          - url: \"http://backend:{port}\"\n"
        ));
    }
    let dynamic = format!("http:\n  routers:\n{routers}  services:\n{services}");
    std::fs::write(dir.path().join("traefik.yml"), STATIC_YML).unwrap();
    std::fs::write(dir.path().join("dynamic.yml"), dynamic).unwrap();
    let plan = bridge_tests::build_plan(dir.path(), "dev", "plan.json", &[]);
    let (child, addrs) = bridge_tests::spawn_serving(
        Command::new(assert_cmd::cargo::cargo_bin("bridge-runtime"))
            .arg(&plan)
            .args(["--bind", "web=127.0.0.1:0", "--bind", "traefik=127.0.0.1:0"])
            .args(["--resolve", "backend=127.0.0.1"]),
        &["web", "traefik"],
    );
    let (web, traefik) = (addrs[0], addrs[1]);
    Proxy {
        child,
        web,
        traefik,
        _dir: dir,
    }
}

/// A recording backend and a proxy sending every request to it.
fn recorded() -> (Backend, Proxy) {
    let rec = Backend::recording();
    let p = start_proxy(&[("app", "PathPrefix(`/`)", 1, rec.port())]);
    (rec, p)
}

/// The proxy for the upstream families: `Host: c<i>` goes to `backends[i]`.
fn crafted_proxy(backends: &[&Backend]) -> Proxy {
    let names: Vec<(String, String)> = (0..backends.len())
        .map(|i| (format!("c{i}"), format!("Host(`c{i}`)")))
        .collect();
    let routes: Vec<_> = names
        .iter()
        .zip(backends)
        .map(|((n, r), b)| (n.as_str(), r.as_str(), 10, b.port()))
        .collect();
    start_proxy(&routes)
}

/// A response as the client read it.
#[derive(Debug)]
struct Resp {
    status: u16,
    /// Field lines as `(lower-case name, value)`.
    fields: Vec<(String, String)>,
    body: Vec<u8>,
    /// Whether the body ended as its framing said (false: the connection ended or went quiet).
    complete: bool,
}

impl Resp {
    fn values(&self, name: &str) -> Vec<&str> {
        self.fields
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A raw client connection to the proxy; bytes read past one response are kept for the next.
struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
    eof: bool,
}

impl Client {
    fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_write_timeout(Some(TIMEOUT)).unwrap();
        Self {
            stream,
            buf: Vec::new(),
            eof: false,
        }
    }

    /// Writes `bytes` as one write; a proxy that already closed shows in the reads.
    fn send(&mut self, bytes: &[u8]) {
        let _ = self.stream.write_all(bytes);
    }

    /// Reads once, waiting until `deadline` at most: whether bytes came. The end of the connection
    /// (a reset too) sets `eof`.
    fn fill(&mut self, deadline: Instant) -> bool {
        let left = deadline.saturating_duration_since(Instant::now());
        if self.eof || left.is_zero() {
            return false;
        }
        self.stream.set_read_timeout(Some(left)).unwrap();
        let mut chunk = [0u8; 16 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(n) if n > 0 => {
                self.buf.extend_from_slice(&chunk[..n]);
                true
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => false,
            _ => {
                self.eof = true;
                false
            }
        }
    }

    /// Reads the next response (a 1xx counts) within [`TIMEOUT`], framed by the status,
    /// `Transfer-Encoding: chunked`, `Content-Length` or the end of the connection; `None` when no
    /// whole head arrived. `head`: the answer to a HEAD request.
    fn response(&mut self, head: bool) -> Option<Resp> {
        let deadline = Instant::now() + TIMEOUT;
        let head_end = loop {
            if let Some(i) = find(&self.buf, b"\r\n\r\n") {
                break i;
            }
            if !self.fill(deadline) {
                return None;
            }
        };
        let text = String::from_utf8_lossy(&self.buf[..head_end]).into_owned();
        self.buf.drain(..head_end + 4);
        let mut lines = text.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let status = status_line
            .strip_prefix("HTTP/1.")
            .and_then(|s| s.get(2..5))
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let mut resp = Resp {
            status,
            fields: lines.map(field).collect(),
            body: Vec::new(),
            complete: true,
        };
        if head || (100..200).contains(&status) || status == 204 || status == 304 {
            return Some(resp);
        }
        let chunked = resp
            .values("transfer-encoding")
            .iter()
            .any(|v| v.eq_ignore_ascii_case("chunked"));
        let length = resp.values("content-length").first().map(|v| {
            v.parse::<usize>()
                .unwrap_or_else(|_| panic!("the proxy sent content-length {v:?}"))
        });
        if chunked {
            loop {
                let (body, used) = decode_chunked(&self.buf)
                    .unwrap_or_else(|why| panic!("the proxy sent a bad chunked body: {why}"));
                if let Some(used) = used {
                    self.buf.drain(..used);
                    resp.body = body;
                    return Some(resp);
                }
                if !self.fill(deadline) {
                    (resp.body, resp.complete) = (body, false);
                    return Some(resp);
                }
            }
        }
        if let Some(n) = length {
            while self.buf.len() < n && self.fill(deadline) {}
            let take = n.min(self.buf.len());
            resp.body = self.buf.drain(..take).collect();
            resp.complete = take == n;
            return Some(resp);
        }
        while self.fill(deadline) {}
        resp.body = std::mem::take(&mut self.buf);
        resp.complete = self.eof;
        Some(resp)
    }

    /// The next final response: interim (1xx) responses are skipped (at most 100).
    fn final_response(&mut self, head: bool) -> Option<Resp> {
        for _ in 0..100 {
            let resp = self.response(head)?;
            if !(100..200).contains(&resp.status) || resp.status == 101 {
                return Some(resp);
            }
        }
        None
    }

    /// Ok when the proxy ends the connection within [`TIMEOUT`] without sending another byte.
    fn closed(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + TIMEOUT;
        while self.buf.is_empty() && self.fill(deadline) {}
        if !self.buf.is_empty() {
            let extra = String::from_utf8_lossy(&self.buf);
            Err(format!("more bytes after the response: {extra:?}"))
        } else if self.eof {
            Ok(())
        } else {
            Err("still open after 3 s".into())
        }
    }

    /// Whatever arrives within `wait` (nothing should, after a complete response).
    fn stray(&mut self, wait: Duration) -> Vec<u8> {
        let deadline = Instant::now() + wait;
        while self.buf.is_empty() && self.fill(deadline) {}
        self.buf.clone()
    }
}

/// Sends `req` on a new connection and reads the first final response.
fn exchange(addr: SocketAddr, req: &[u8]) -> (Client, Option<Resp>) {
    let mut c = Client::connect(addr);
    c.send(req);
    let resp = c.final_response(req.starts_with(b"HEAD "));
    (c, resp)
}

/// Asserts the proxy answers `req` with one of `statuses`, then closes the connection, and that
/// the backend got nothing of it.
fn assert_refused(case: &str, p: &Proxy, rec: &Backend, req: &[u8], statuses: &[u16]) {
    let (before, aborted) = (rec.seen(case).len(), rec.aborted());
    let (mut c, resp) = exchange(p.web, req);
    assert!(
        resp.as_ref().is_some_and(|r| statuses.contains(&r.status)),
        "{case}: wanted a status in {statuses:?}, got {resp:?}"
    );
    if let Err(e) = c.closed() {
        panic!("{case}: the proxy did not close the connection: {e}");
    }
    let after = rec.since(case, before);
    assert!(after.is_empty(), "{case}: the backend got {after:?}");
    assert_eq!(rec.aborted(), aborted, "{case}: the backend got part of it");
}

/// Sends `req` on a new connection, asserts a complete 200 from the recorder, and returns the
/// response and the one request the backend saw.
fn assert_served(case: &str, p: &Proxy, rec: &Backend, req: &[u8]) -> (Resp, Seen) {
    let before = rec.seen(case).len();
    let (_, resp) = exchange(p.web, req);
    let resp = resp.unwrap_or_else(|| panic!("{case}: no response"));
    assert!(
        resp.status == 200 && resp.complete && resp.text().starts_with("seen "),
        "{case}: {resp:?}"
    );
    let mut after = rec.since(case, before);
    assert_eq!(after.len(), 1, "{case}: the backend saw {after:?}");
    (resp, after.remove(0))
}

/// Asserts `resp` is the crafted `good` answer, which only a new backend connection gives.
fn assert_good(case: &str, how: &str, resp: Option<Resp>) {
    let resp = resp.unwrap_or_else(|| panic!("{case}, request 2 on {how}: no response"));
    assert_eq!(
        (resp.status, resp.text().as_str(), resp.complete),
        (200, "good", true),
        "{case}, request 2 on {how}: {resp:?}"
    );
}

/// Request 2 after request 1 was answered on `same`: on a new client connection, then (when
/// given) on `same`; both must be `good`, from a backend connection other than the first.
fn assert_follow_ups(case: &str, p: &Proxy, b: &Backend, req: &[u8], same: Option<&mut Client>) {
    assert_good(case, "a new client connection", exchange(p.web, req).1);
    if let Some(c) = same {
        c.send(req);
        assert_good(case, "the same client connection", c.final_response(false));
    }
    assert!(
        b.accepted() >= 2,
        "{case}: the backend connection was reused ({} accepted)",
        b.accepted()
    );
}

/// The sum of every sample of counter `name` on the metrics endpoint, polled (within
/// [`TIMEOUT`]) until it is at least `at_least`.
fn metric(p: &Proxy, name: &str, at_least: f64) -> f64 {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let req = b"GET /metrics HTTP/1.1\r\nHost: metrics\r\nConnection: close\r\n\r\n";
        let text = exchange(p.traefik, req)
            .1
            .map(|r| r.text())
            .unwrap_or_default();
        let sum: f64 = text
            .lines()
            .filter_map(|line| {
                let rest = line.strip_prefix(name)?;
                let rest = match rest.strip_prefix('{') {
                    Some(labels) => &labels[labels.find('}')? + 1..],
                    None if rest.starts_with(' ') => rest,
                    None => return None,
                };
                rest.split_whitespace().next()?.parse::<f64>().ok()
            })
            .sum();
        if sum >= at_least || Instant::now() > deadline {
            return sum;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `GET / HTTP/1.1` to `host`.
fn get(host: &str) -> Vec<u8> {
    format!("GET / HTTP/1.1\r\nHost: {host}\r\n\r\n").into_bytes()
}

/// `POST / HTTP/1.1` to `host` with the body `hello`.
fn post(host: &str) -> Vec<u8> {
    format!("POST / HTTP/1.1\r\nHost: {host}\r\nContent-Length: 5\r\n\r\nhello").into_bytes()
}

/// The concatenation of `parts`.
fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

// ---------------------------------------------------------------------------------------------
// Client-side families

#[test]
fn two_host_fields_are_refused() {
    let (rec, p) = recorded();
    let cases: &[(&str, &[u8])] = &[
        ("same Host twice", b"GET / HTTP/1.1\r\nHost: app\r\nHost: app\r\n\r\n"),
        (
            "two Host values",
            b"GET / HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n",
        ),
        (
            "two Host values on a POST",
            b"POST / HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\nContent-Length: 5\r\n\r\nhello",
        ),
    ];
    for &(case, req) in cases {
        assert_refused(case, &p, &rec, req, &[400]);
    }
    let refused = metric(&p, "bridge_requests_refused_total", 1.0);
    assert!(refused >= 1.0, "bridge_requests_refused_total is {refused}");
}

#[test]
fn host_is_required_in_http_1_1_only() {
    let (rec, p) = recorded();
    let req = b"GET / HTTP/1.1\r\n\r\n";
    assert_refused("HTTP/1.1 without Host", &p, &rec, req, &[400]);
    let case = "HTTP/1.0 without Host";
    let (resp, seen) = assert_served(case, &p, &rec, b"GET /ten HTTP/1.0\r\n\r\n");
    assert_eq!(resp.text(), "seen GET /ten 0", "{case}");
    assert_eq!(seen.target, "/ten", "{case}");
}

#[test]
fn invalid_host_values_are_refused() {
    let (rec, p) = recorded();
    let invalid: &[(&str, &[u8])] = &[
        ("a space", b"a b"),
        ("a comma", b"a,b"),
        ("userinfo", b"user@app"),
        ("port out of range", b"app:99999"),
        ("port not a number", b"app:8x"),
        ("unclosed IPv6 literal", b"[::1"),
        ("a DEL byte", b"app\x7f"),
    ];
    for &(case, value) in invalid {
        let req = cat(&[b"GET / HTTP/1.1\r\nHost: ", value, b"\r\n\r\n"]);
        assert_refused(case, &p, &rec, &req, &[400]);
    }
    for (i, (case, value)) in [
        ("a port", "app:8080"),
        ("an IPv6 literal with a port", "[::1]:80"),
        ("an empty value", ""),
    ]
    .into_iter()
    .enumerate()
    {
        let req = format!("GET /valid{i} HTTP/1.1\r\nHost: {value}\r\n\r\n");
        let (resp, seen) = assert_served(case, &p, &rec, req.as_bytes());
        assert_eq!(resp.text(), format!("seen GET /valid{i} 0"), "{case}");
        let hosts = seen.values("host");
        if value.is_empty() {
            assert!(hosts.len() <= 1, "{case}: {:?}", seen.lines);
        } else {
            assert_eq!(hosts, [value], "{case}: {:?}", seen.lines);
        }
    }
}

#[test]
fn absolute_form_targets() {
    let (rec, p) = recorded();
    let req = b"GET http://user@app/ HTTP/1.1\r\nHost: app\r\n\r\n";
    assert_refused("userinfo in an absolute-form target", &p, &rec, req, &[400]);
    let case = "absolute form overrides Host";
    let req = b"GET http://a.example/x HTTP/1.1\r\nHost: b.example\r\n\r\n";
    let (resp, seen) = assert_served(case, &p, &rec, req);
    assert_eq!(resp.text(), "seen GET /x 0", "{case}");
    assert_eq!(seen.target, "/x", "{case}: origin form upstream");
    assert_eq!(
        seen.values("host"),
        ["a.example"],
        "{case}: {:?}",
        seen.lines
    );
}

#[test]
fn malformed_percent_escapes_in_the_path_are_refused_before_routing() {
    let (rec, p) = recorded();
    for (case, req) in [
        (
            "a lone % at the end",
            &b"GET /100% HTTP/1.1\r\nHost: app\r\n\r\n"[..],
        ),
        ("non-hex digits", b"GET /a%zz HTTP/1.1\r\nHost: app\r\n\r\n"),
        (
            "a body request (hyper's path)",
            b"POST /a%g0 HTTP/1.1\r\nHost: app\r\nContent-Length: 2\r\n\r\nhi",
        ),
    ] {
        assert_refused(case, &p, &rec, req, &[400]);
    }
    let case = "well-formed escapes, and a % in the query";
    let req = b"GET /a%20b?q=100% HTTP/1.1\r\nHost: app\r\n\r\n";
    let (resp, seen) = assert_served(case, &p, &rec, req);
    assert_eq!(resp.text(), "seen GET /a%20b?q=100% 0", "{case}");
    assert_eq!(
        seen.target, "/a%20b?q=100%",
        "{case}: forwarded as received"
    );
}

#[test]
fn bad_transfer_encodings_are_refused() {
    let (rec, p) = recorded();
    let chunked: &[u8] = b"5\r\nhello\r\n0\r\n\r\n";
    let te_post = |fields: &str| {
        cat(&[
            b"POST / HTTP/1.1\r\nHost: app\r\n",
            fields.as_bytes(),
            b"\r\n",
            chunked,
            SMUGGLED,
        ])
    };
    let cl_te_body = cat(&[b"0\r\n\r\n", SMUGGLED]);
    let cl_te = cat(&[
        format!(
            "POST / HTTP/1.1\r\nHost: app\r\nContent-Length: {}\r\nTransfer-Encoding: chunked\r\n\r\n",
            cl_te_body.len()
        )
        .as_bytes(),
        &cl_te_body,
    ]);
    let te_cl = cat(&[
        b"POST / HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n",
        format!("{:x}\r\n", SMUGGLED.len()).as_bytes(),
        SMUGGLED,
        b"\r\n0\r\n\r\n",
    ]);
    let http10 = cat(&[
        b"POST / HTTP/1.0\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n",
        chunked,
        SMUGGLED,
    ]);
    // Codings are refused as bad (400) or as not implemented (501), never forwarded.
    let te = |value: &str| te_post(&format!("Transfer-Encoding: {value}\r\n"));
    let cases: Vec<(&str, Vec<u8>, &[u16])> = vec![
        ("chunked, chunked", te("chunked, chunked"), &[400]),
        (
            "two chunked lines",
            te("chunked\r\nTransfer-Encoding: chunked"),
            &[400],
        ),
        ("gzip, chunked", te("gzip, chunked"), &[501]),
        ("identity", te("identity"), &[400, 501]),
        ("xchunked", te("xchunked"), &[400, 501]),
        ("chunked, gzip", te("chunked, gzip"), &[400, 501]),
        ("Transfer-Encoding in HTTP/1.0", http10, &[400]),
    ];
    for (case, req, statuses) in cases {
        assert_refused(case, &p, &rec, &req, statuses);
    }
    // Both framings: the transfer coding alone decides (RFC 9112 §6.1, as Go's server and hyper
    // do), the length never reaches the server, and the connection is closed after the answer,
    // so whatever the length would have delimited differently is never read as a request.
    for (case, req, body) in [("CL.TE", cl_te, &b""[..]), ("TE.CL", te_cl, SMUGGLED)] {
        let before = rec.seen(case).len();
        let (mut c, resp) = exchange(p.web, &req);
        let resp = resp.unwrap_or_else(|| panic!("{case}: no response"));
        assert_eq!(resp.status, 200, "{case}: {resp:?}");
        if let Err(e) = c.closed() {
            panic!("{case}: the proxy did not close the connection: {e}");
        }
        let after = rec.since(case, before);
        assert_eq!(after.len(), 1, "{case}: the backend saw {after:?}");
        assert_eq!(after[0].body, body, "{case}");
        assert!(
            after[0].values("content-length").is_empty(),
            "{case}: the client's Content-Length reached the server: {:?}",
            after[0].lines
        );
    }
}

#[test]
fn content_length_must_be_one_decimal_value() {
    let (rec, p) = recorded();
    let case = "the same Content-Length twice";
    let req =
        b"POST / HTTP/1.1\r\nHost: app\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello";
    let (resp, seen) = assert_served(case, &p, &rec, req);
    assert_eq!(resp.text(), "seen POST / 5", "{case}");
    let lines = &seen.lines;
    assert_eq!(seen.values("content-length"), ["5"], "{case}: {lines:?}");
    assert_eq!(seen.body, b"hello", "{case}");
    for (case, fields) in [
        ("two values", "Content-Length: 5\r\nContent-Length: 6\r\n"),
        ("a plus sign", "Content-Length: +5\r\n"),
        ("negative", "Content-Length: -1\r\n"),
        ("two numbers", "Content-Length: 5 5\r\n"),
        ("hexadecimal", "Content-Length: 0x5\r\n"),
        ("empty", "Content-Length: \r\n"),
    ] {
        let req = cat(&[
            b"POST / HTTP/1.1\r\nHost: app\r\n",
            fields.as_bytes(),
            b"\r\nhello!",
            SMUGGLED,
        ]);
        assert_refused(case, &p, &rec, &req, &[400]);
    }
}

#[test]
fn broken_chunked_bodies_never_reach_the_backend() {
    let (rec, p) = recorded();
    let long_ext = format!("5;a={}\r\nhello\r\n0\r\n\r\n", "b".repeat(21 * 1024));
    let cases: &[(&str, &[u8])] = &[
        ("size overflow", b"ffffffffffffffffff\r\nhello\r\n0\r\n\r\n"),
        ("non-hex size", b"zz\r\nhello\r\n0\r\n\r\n"),
        ("bare LF in an extension", b"5;a=b\nc\r\nhello\r\n0\r\n\r\n"),
        ("extension over 20 KiB", long_ext.as_bytes()),
        ("data not followed by CRLF", b"5\r\nhelloXX\r\n0\r\n\r\n"),
    ];
    for &(case, body) in cases {
        let before = rec.seen(case).len();
        let req = cat(&[
            b"POST /c HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n",
            body,
            SMUGGLED,
        ]);
        let (mut c, resp) = exchange(p.web, &req);
        if let Some(r) = &resp {
            assert!([400, 502].contains(&r.status), "{case}: {r:?}");
        }
        if let Err(e) = c.closed() {
            panic!("{case}: the proxy did not close the connection: {e}");
        }
        let after = rec.since(case, before);
        assert!(
            after.is_empty(),
            "{case}: a broken body reached the backend as a whole request: {after:?}"
        );
    }
    let case = "a valid body with an extension";
    let req = b"POST /c HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n0\r\n\r\n";
    let (resp, seen) = assert_served(case, &p, &rec, req);
    assert_eq!(resp.text(), "seen POST /c 5", "{case}");
    assert_eq!(seen.body, b"hello", "{case}");
}

/// Sends `bytes` (several requests) in one write and asserts the answers, in order, and the
/// requests the backend saw are exactly `want` (method, target, body length); returns them.
fn assert_pipelined(
    case: &str,
    p: &Proxy,
    rec: &Backend,
    bytes: &[u8],
    want: &[(&str, &str, usize)],
) -> Vec<Seen> {
    let before = rec.seen(case).len();
    let mut c = Client::connect(p.web);
    c.send(bytes);
    for (method, target, len) in want {
        let resp = c.final_response(false);
        let text = resp.as_ref().map(Resp::text);
        assert_eq!(
            text,
            Some(format!("seen {method} {target} {len}")),
            "{case}: {resp:?}"
        );
    }
    let seen = rec.since(case, before);
    let got: Vec<_> = seen
        .iter()
        .map(|s| (s.method.clone(), s.target.clone(), s.body.len()))
        .collect();
    let want: Vec<_> = want
        .iter()
        .map(|&(m, t, l)| (m.to_owned(), t.to_owned(), l))
        .collect();
    let conns: Vec<usize> = seen.iter().map(|s| s.conn).collect();
    assert_eq!(got, want, "{case} (backend connections {conns:?})");
    seen
}

#[test]
fn pipelined_requests_after_bodies_keep_their_boundaries() {
    let (rec, p) = recorded();
    let get_b: &[u8] = b"GET /b HTTP/1.1\r\nHost: app\r\n\r\n";
    let want = [("POST", "/a", 5), ("GET", "/b", 0)];
    let sized: &[u8] = b"POST /a HTTP/1.1\r\nHost: app\r\nContent-Length: 5\r\n\r\nhello";
    assert_pipelined(
        "Content-Length body, then GET",
        &p,
        &rec,
        &cat(&[sized, get_b]),
        &want,
    );
    let chunked: &[u8] =
        b"POST /a HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
    assert_pipelined(
        "chunked body, then GET",
        &p,
        &rec,
        &cat(&[chunked, get_b]),
        &want,
    );
    let case = "a body that is a request";
    let head = format!(
        "POST /c HTTP/1.1\r\nHost: app\r\nContent-Length: {}\r\n\r\n",
        SMUGGLED.len()
    );
    let after: &[u8] = b"GET /after HTTP/1.1\r\nHost: app\r\n\r\n";
    let bytes = cat(&[head.as_bytes(), SMUGGLED, after]);
    let want = [("POST", "/c", SMUGGLED.len()), ("GET", "/after", 0)];
    let seen = assert_pipelined(case, &p, &rec, &bytes, &want);
    assert_eq!(seen[0].body, SMUGGLED, "{case}");
}

#[test]
fn upgrade_requests_that_are_not_upgrades() {
    let rec = Backend::recording();
    let answer_101: &[u8] =
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
    let switching = Backend::start(move |_, _, _| vec![Act::Write(answer_101.to_vec())]);
    let p = start_proxy(&[
        ("app", "PathPrefix(`/`)", 1, rec.port()),
        ("craft", "PathPrefix(`/craft`)", 10, switching.port()),
    ]);
    let cases: &[(&str, &[u8])] = &[
        (
            "h2c upgrade",
            b"GET /h2c HTTP/1.1\r\nHost: app\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n",
        ),
        (
            "websocket Upgrade without Connection: upgrade",
            b"GET /ws HTTP/1.1\r\nHost: app\r\nUpgrade: websocket\r\n\r\n",
        ),
    ];
    for &(case, req) in cases {
        let (_, seen) = assert_served(case, &p, &rec, req);
        let upgrade_lines: Vec<&String> = seen
            .lines
            .iter()
            .filter(|l| {
                let (name, value) = field(l);
                name == "upgrade"
                    || name == "http2-settings"
                    || (name == "connection" && value.to_ascii_lowercase().contains("upgrade"))
            })
            .collect();
        assert!(upgrade_lines.is_empty(), "{case}: {:?}", seen.lines);
    }
    let case = "101 to a request that did not ask to upgrade";
    let (_, resp) = exchange(p.web, b"GET /craft HTTP/1.1\r\nHost: app\r\n\r\n");
    assert_eq!(
        resp.as_ref().map(|r| r.status),
        Some(502),
        "{case}: {resp:?}"
    );
}

#[test]
fn bad_field_syntax_is_refused() {
    let (rec, p) = recorded();
    let cases: &[(&str, &[u8])] = &[
        ("obs-fold", b"Host: app\r\nX-A: 1\r\n  continued\r\n"),
        ("bare CR in a value", b"Host: app\r\nX-A: a\rb\r\n"),
        ("NUL in a value", b"Host: app\r\nX-A: a\0b\r\n"),
        ("0x01 in a value", b"Host: app\r\nX-A: a\x01b\r\n"),
        ("space before the colon of Host", b"Host : app\r\n"),
        ("space before a colon", b"Host: app\r\nX-A : 1\r\n"),
        ("a line without a colon", b"Host: app\r\nX-A 1\r\n"),
    ];
    for &(case, fields) in cases {
        let bodiless = cat(&[b"GET / HTTP/1.1\r\n", fields, b"\r\n"]);
        assert_refused(&format!("GET, {case}"), &p, &rec, &bodiless, &[400]);
        let with_body = cat(&[
            b"POST / HTTP/1.1\r\nContent-Length: 5\r\n",
            fields,
            b"\r\nhello",
        ]);
        assert_refused(&format!("POST, {case}"), &p, &rec, &with_body, &[400]);
    }
}

/// The forwarding fields a client without trusted IPs must get from the proxy, whatever it sent.
fn assert_forwarding(case: &str, seen: &Seen) {
    let got = ["x-forwarded-proto", "x-forwarded-for", "x-real-ip"].map(|n| seen.values(n));
    let want = [vec!["http"], vec!["127.0.0.1"], vec!["127.0.0.1"]];
    assert_eq!(got, want, "{case}: {:?}", seen.lines);
    let underscore = seen
        .lines
        .iter()
        .any(|l| l.to_ascii_lowercase().starts_with("x_forwarded"));
    assert!(!underscore, "{case}: {:?}", seen.lines);
}

/// Matches only a request the proxy considers HTTPS (never a plain-HTTP client's claim).
const SECURE_RULE: &str = "Header(`X-Forwarded-Proto`, `https`)";
/// Matches every request once the proxy has set `X-Forwarded-Proto` (below `/re`).
const REGEXP_RULE: &str = "HeaderRegexp(`X-Forwarded-Proto`, `^https?$`) && PathPrefix(`/re`)";

#[test]
fn forged_forwarding_headers_do_not_route_or_pass() {
    let [app, secure, re] = [(); 3].map(|()| Backend::recording());
    let p = start_proxy(&[
        ("app", "PathPrefix(`/`)", 1, app.port()),
        ("secure", SECURE_RULE, 1000, secure.port()),
        ("re", REGEXP_RULE, 900, re.port()),
    ]);
    let forged = "X-Forwarded-Proto: https\r\nX-Forwarded-For: 6.6.6.6\r\nX-Real-Ip: 6.6.6.6\r\n";
    for (case, target, fields, backend) in [
        ("forged https", "/forged", forged, &app),
        ("no X-Forwarded-Proto", "/re/plain", "", &re),
        (
            "forged https on the regexp router",
            "/re/forged",
            forged,
            &re,
        ),
        (
            "underscore variant",
            "/underscore",
            "X_Forwarded_Proto: https\r\n",
            &app,
        ),
    ] {
        let req = format!("GET {target} HTTP/1.1\r\nHost: app\r\n{fields}\r\n");
        let (resp, seen) = assert_served(case, &p, backend, req.as_bytes());
        assert_eq!(resp.text(), format!("seen GET {target} 0"), "{case}");
        assert_forwarding(case, &seen);
    }
    let wrong = secure.seen(SECURE_RULE);
    assert!(wrong.is_empty(), "a forged field matched: {wrong:?}");
}

// ---------------------------------------------------------------------------------------------
// Upstream-response families

/// `HTTP/1.1 200` with the body `ok` by Content-Length.
const OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";

/// The stray-bytes pattern: request 1 (`req`, to a backend whose first connection runs
/// `first`) must get exactly `ok`; after `pause`, request 2 must get `good` — from a second
/// backend connection — on a new client connection and then on the first one.
fn stray_family(case: &str, first: Vec<Act>, req: &[u8], pause: Duration) -> Proxy {
    let b = Backend::crafted(first);
    let p = crafted_proxy(&[&b]);
    let (mut c, resp) = exchange(p.web, req);
    assert!(
        resp.as_ref()
            .is_some_and(|r| r.status == 200 && r.body == b"ok" && r.complete),
        "{case}, request 1: {resp:?}"
    );
    std::thread::sleep(pause);
    assert_good(case, "a new client connection", exchange(p.web, req).1);
    assert_eq!(b.accepted(), 2, "{case}: backend connections");
    c.send(req);
    assert_good(case, "the same client connection", c.final_response(false));
    p
}

#[test]
fn stray_bytes_after_a_content_length_body_discard_the_connection() {
    let first = vec![Act::Write(cat(&[OK, POISON]))];
    let p = stray_family(
        "a stray response in the same write",
        first,
        &get("c0"),
        Duration::ZERO,
    );
    let discarded = metric(&p, "bridge_upstream_connections_discarded_total", 1.0);
    assert!(
        discarded >= 1.0,
        "bridge_upstream_connections_discarded_total is {discarded}"
    );
}

#[test]
fn stray_bytes_on_an_idle_pooled_connection_discard_it() {
    let later = Duration::from_millis(100);
    let first = vec![
        Act::Write(OK.to_vec()),
        Act::Sleep(later),
        Act::Write(POISON.to_vec()),
    ];
    let case = "a stray response 100 ms after the answer";
    stray_family(case, first, &get("c0"), Duration::from_millis(400));
}

#[test]
fn stray_bytes_after_the_last_chunk_discard_the_connection() {
    let chunked: &[u8] =
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n";
    let first = vec![Act::Write(cat(&[chunked, POISON]))];
    stray_family(
        "a stray response after the last chunk",
        first,
        &get("c0"),
        Duration::ZERO,
    );
}

#[test]
fn bodies_on_bodiless_responses_are_dropped() {
    let cases: [(&str, &[u8], u16, bool); 3] = [
        (
            "a body on a 204",
            b"HTTP/1.1 204 No Content\r\ncontent-length: 6\r\n\r\npoison",
            204,
            false,
        ),
        (
            "a body on a 304",
            b"HTTP/1.1 304 Not Modified\r\ncontent-length: 6\r\n\r\npoison",
            304,
            false,
        ),
        (
            "a body after the answer to HEAD",
            b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\npoison",
            200,
            true,
        ),
    ];
    let backends: Vec<Backend> = cases
        .iter()
        .map(|(_, bytes, _, _)| Backend::crafted(vec![Act::Write(bytes.to_vec())]))
        .collect();
    let p = crafted_proxy(&backends.iter().collect::<Vec<_>>());
    for (i, ((case, _, status, head), b)) in cases.into_iter().zip(&backends).enumerate() {
        let host = format!("c{i}");
        let req = if head {
            format!("HEAD / HTTP/1.1\r\nHost: {host}\r\n\r\n").into_bytes()
        } else {
            get(&host)
        };
        let (mut c, resp) = exchange(p.web, &req);
        let resp = resp.unwrap_or_else(|| panic!("{case}, request 1: no response"));
        assert_eq!(resp.status, status, "{case}, request 1: {resp:?}");
        let stray = c.stray(Duration::from_millis(300));
        assert!(
            stray.is_empty(),
            "{case}: body bytes reached the client: {:?}",
            String::from_utf8_lossy(&stray)
        );
        assert_follow_ups(case, &p, b, &get(&host), Some(&mut c));
    }
}

#[test]
fn content_length_with_chunked_response_uses_chunked() {
    let case = "Content-Length: 3 and Transfer-Encoding: chunked";
    let b = Backend::crafted(vec![Act::Write(
        b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
            .to_vec(),
    )]);
    let p = crafted_proxy(&[&b]);
    let (mut c, resp) = exchange(p.web, &get("c0"));
    let resp = resp.unwrap_or_else(|| panic!("{case}, request 1: no response"));
    assert_eq!(
        (resp.status, resp.text().as_str(), resp.complete),
        (200, "hello", true),
        "{case}, request 1: {resp:?}"
    );
    assert!(
        !resp.values("content-length").contains(&"3"),
        "{case}: the server's content-length reached the client: {resp:?}"
    );
    assert_follow_ups(case, &p, &b, &get("c0"), Some(&mut c));
}

#[test]
fn invalid_responses_become_502() {
    let big_head = cat(&[
        b"HTTP/1.1 200 OK\r\n",
        format!("x-big: {}\r\n", "a".repeat(2000))
            .repeat(40)
            .as_bytes(),
        b"content-length: 2\r\n\r\nok",
    ]);
    let flood = cat(&[b"HTTP/1.1 100 Continue\r\n\r\n".repeat(50).as_slice(), OK]);
    let cases: [(&str, Vec<u8>); 5] = [
        (
            "Content-Length: abc",
            b"HTTP/1.1 200 OK\r\ncontent-length: abc\r\n\r\nabc".to_vec(),
        ),
        (
            "two Content-Length values",
            b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\nokk".to_vec(),
        ),
        (
            "a status line that is not HTTP",
            b"ICY 200 OK\r\ncontent-length: 2\r\n\r\nok".to_vec(),
        ),
        ("a head over 64 KiB", big_head),
        ("50 interim responses", flood),
    ];
    let mut backends: Vec<Backend> = cases
        .iter()
        .map(|(_, bytes)| Backend::crafted(vec![Act::Write(bytes.clone())]))
        .collect();
    let hints = cat(&[
        b"HTTP/1.1 103 Early Hints\r\nlink: </s.css>; rel=preload\r\n\r\n",
        OK,
    ]);
    // A valid answer: the connection may be reused, so every later request gets `good`.
    backends.push(Backend::start(move |conn, req, _| {
        let first = (conn, req) == (0, 0);
        vec![Act::Write(if first {
            hints.clone()
        } else {
            GOOD.to_vec()
        })]
    }));
    let p = crafted_proxy(&backends.iter().collect::<Vec<_>>());
    for (i, ((case, _), b)) in cases.iter().zip(&backends).enumerate() {
        let req = get(&format!("c{i}"));
        let (mut c, resp) = exchange(p.web, &req);
        assert_eq!(
            resp.as_ref().map(|r| r.status),
            Some(502),
            "{case}, request 1: {resp:?}"
        );
        assert_follow_ups(case, &p, b, &req, Some(&mut c));
    }
    let case = "one 103 Early Hints";
    let req = get(&format!("c{}", cases.len()));
    let mut c = Client::connect(p.web);
    c.send(&req);
    let early = c.response(false);
    assert!(
        early
            .as_ref()
            .is_some_and(|r| r.status == 103 && r.values("link") == ["</s.css>; rel=preload"]),
        "{case}: wanted the 103 first, got {early:?}"
    );
    let last = c.response(false);
    assert!(
        last.as_ref()
            .is_some_and(|r| r.status == 200 && r.body == b"ok" && r.complete),
        "{case}: wanted 200 ok after the 103, got {last:?}"
    );
}

#[test]
fn interim_responses_are_forwarded_as_they_arrive() {
    // RFC 9110 §15.2: a proxy MUST forward the 1xx responses it did not ask for. Forwarded as
    // they arrive (a 103 that comes with the final answer is of no use to a browser), over
    // HTTP/1.1 and HTTP/2 (browsers act on 103 Early Hints over HTTP/2 only: interim HEADERS
    // frames), for requests the own codec sends (no body) and ones hyper's client sends (a
    // body); hop-by-hop fields of the 1xx are not forwarded.
    let pause = Duration::from_millis(700);
    let b = Backend::start(move |_, _, _| {
        vec![
            Act::Write(
                b"HTTP/1.1 103 Early Hints\r\nlink: </s.css>; rel=preload\r\nconnection: x-hop\r\nx-hop: 1\r\n\r\n"
                    .to_vec(),
            ),
            Act::Sleep(pause),
            Act::Write(cat(&[b"HTTP/1.1 102 Processing\r\n\r\n", OK])),
        ]
    });
    let p = crafted_proxy(&[&b]);
    let url = format!("http://{}/", p.web);
    let mut sent = bridge_tests::assert_interims_relayed(&url, "c0", pause, "own codec and hyper");
    // A client that waits for 100 Continue gets it when the body is wanted, before the
    // server's 1xx; over HTTP/2 at once (as Traefik answers there).
    for (case, version, extra) in [
        ("HTTP/1.1 POST, Expect", "http/1.1", vec![]),
        (
            "h2c POST, Expect",
            "http/2",
            vec!["--http2-prior-knowledge"],
        ),
    ] {
        let mut args = extra.clone();
        args.extend(["-H", "Expect: 100-continue", "--data-binary", "abc"]);
        let heads = bridge_tests::curl_heads(&url, "c0", &args);
        sent += 1;
        let lines: Vec<&str> = heads.iter().map(|(_, l)| l.as_str()).collect();
        let continued = if version == "http/2" {
            "http/2 100"
        } else {
            "http/1.1 100 continue"
        };
        assert_eq!(lines.first().copied(), Some(continued), "{case}: {lines:?}");
        assert_eq!(lines.len(), 5, "{case}: {lines:?}");
    }
    let seen = b.seen("interim responses");
    assert_eq!(seen.len(), sent, "{seen:?}");
    for s in &seen {
        if s.method == "POST" {
            assert_eq!(s.body, b"abc", "{seen:?}");
        }
    }
}

#[test]
fn early_upstream_close() {
    let case_a = "closed without an answer";
    let case_b = "closed after 5 of 10 body bytes";
    let silent = Backend::crafted(vec![Act::Close]);
    let short = Backend::crafted(vec![
        Act::Write(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhello".to_vec()),
        Act::Close,
    ]);
    let p = crafted_proxy(&[&silent, &short]);

    let (mut c, resp) = exchange(p.web, &get("c0"));
    assert_eq!(
        resp.as_ref().map(|r| r.status),
        Some(502),
        "{case_a}, request 1: {resp:?}"
    );
    assert_follow_ups(case_a, &p, &silent, &get("c0"), Some(&mut c));

    let mut c = Client::connect(p.web);
    c.send(&get("c1"));
    let resp = c.response(false);
    // A 502 made before any byte of the answer reached the client claims nothing either.
    if resp.as_ref().is_none_or(|r| r.status != 502) {
        assert!(
            resp.as_ref()
                .is_none_or(|r| !r.complete && r.body.len() < 10),
            "{case_b}: the client got a response that claims to be whole: {resp:?}"
        );
        if let Err(e) = c.closed() {
            panic!("{case_b}: the client connection was not closed: {e}");
        }
    }
    assert_follow_ups(case_b, &p, &short, &get("c1"), None);
}

#[test]
fn stray_bytes_after_a_post_response() {
    // Requests with a body take another client path inside the proxy.
    let first = vec![Act::Write(cat(&[OK, POISON]))];
    let case = "a stray response after the answer to a POST";
    stray_family(case, first, &post("c0"), Duration::ZERO);
}
