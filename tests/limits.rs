//! Greedy clients against the real `bridge-runtime`: descriptor exhaustion, accept bursts, huge
//! heads and slow clients. The proxy must shed them by its limits while it keeps serving others,
//! and never spin.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a test failure"
)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use bridge_tests::backends::Reply;
use bridge_tests::process::KillOnDrop;

/// A keep-alive backend answering every request with `ok`.
fn backend() -> SocketAddr {
    bridge_tests::backends::backend("ok")
        .answer(|_| Reply::ok("ok"))
        .start()
        .addr
}

struct Proxy {
    child: KillOnDrop,
    web: SocketAddr,
}

/// Builds a one-router plan in front of `server` and starts it, prefixed by `wrap` (e.g.
/// `prlimit`), with `static_extra` appended to the web entry point.
fn start(dir: &std::path::Path, server: SocketAddr, wrap: &[&str], entry_extra: &str) -> Proxy {
    std::fs::write(
        dir.join("traefik.yml"),
        format!(
            "entryPoints:\n  web:\n    address: \":8080\"\n{entry_extra}providers:\n  file:\n    filename: /etc/traefik/dynamic.yml\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("dynamic.yml"),
        format!(
            "http:\n  routers:\n    all:\n      rule: \"PathPrefix(`/`)\"\n      service: app\n  services:\n    app:\n      loadBalancer:\n        servers:\n          - url: \"http://backend:{}\"\n",
            server.port()
        ),
    )
    .unwrap();
    let plan = bridge_tests::build_plan(dir, "dev", "plan.json", &[]);
    let runtime = assert_cmd::cargo::cargo_bin("bridge-runtime");
    let mut cmd = match wrap.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(runtime);
            c
        }
        None => Command::new(runtime),
    };
    cmd.arg(&plan).args([
        "--bind",
        "web=127.0.0.1:0",
        "--resolve",
        "backend=127.0.0.1",
    ]);
    let (child, addrs) = bridge_tests::spawn_serving(&mut cmd, &["web"]);
    Proxy {
        child: KillOnDrop(child),
        web: addrs[0],
    }
}

/// Sends one keep-alive GET on `s` and returns the status line.
fn get_on(s: &mut TcpStream) -> String {
    s.write_all(b"GET / HTTP/1.1\r\nHost: app\r\n\r\n").unwrap();
    let mut buf = [0u8; 1024];
    let mut got = Vec::new();
    while !got.ends_with(b"ok") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed after {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&got)
        .lines()
        .next()
        .unwrap_or("")
        .to_owned()
}

/// User + system CPU time of `pid`, in clock ticks (100 per second on Linux).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which is in parentheses and may contain spaces).
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[test]
fn out_of_descriptors_the_proxy_pauses_accepting_keeps_serving_and_recovers() {
    if Command::new("prlimit").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("CI").is_none(),
            "prlimit (util-linux) must be installed in CI"
        );
        eprintln!("SKIPPED: prlimit not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = backend();
    // 64 descriptors in all (soft = hard: raising the soft limit gains nothing).
    let proxy = start(dir.path(), server, &["prlimit", "--nofile=64:64"], "");
    let mut kept = TcpStream::connect(proxy.web).unwrap();
    kept.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert!(get_on(&mut kept).starts_with("HTTP/1.1 200"));
    // More idle connections than descriptors: the rest wait in the accept queue.
    let idle: Vec<TcpStream> = (0..100)
        .map(|_| TcpStream::connect(proxy.web).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let before = cpu_ticks(proxy.child.id());
    std::thread::sleep(Duration::from_secs(2));
    let spent = cpu_ticks(proxy.child.id()) - before;
    eprintln!("spent {spent} ticks, pid {}", proxy.child.id());
    // A loop retrying accept at once burns a whole core (about 200 ticks in 2 s).
    assert!(
        spent < 40,
        "{spent} ticks of CPU in 2 s while out of descriptors"
    );
    // The connection it already has is served meanwhile (its server connection is pooled).
    assert!(get_on(&mut kept).starts_with("HTTP/1.1 200"));
    // Descriptors free up: new connections are accepted and served again.
    drop(idle);
    let started = Instant::now();
    loop {
        let mut s = TcpStream::connect(proxy.web).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let _ = s.write_all(b"GET / HTTP/1.1\r\nHost: app\r\nConnection: close\r\n\r\n");
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        if out.starts_with(b"HTTP/1.1 200") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "not serving new connections again: {}",
            String::from_utf8_lossy(&out)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_listen_backlog_is_the_kernels_maximum() {
    let Ok(out) = Command::new("ss").args(["-ltnH"]).output() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "ss (iproute2) must be installed in CI"
        );
        eprintln!("SKIPPED: ss not installed");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let proxy = start(dir.path(), backend(), &[], "");
    let want = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(4096)
        .min(65_535);
    let out = Command::new("ss").args(["-ltnH"]).output().unwrap_or(out);
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains(&proxy.web.to_string()))
        .unwrap_or_else(|| panic!("{} not listed:\n{text}", proxy.web));
    // State, Recv-Q, Send-Q (for a listener: the backlog), local address.
    let backlog: u64 = line.split_whitespace().nth(2).unwrap().parse().unwrap();
    assert_eq!(backlog, want, "{line}");
    // And a burst of connections opens at once, none waiting for a SYN retry.
    let started = Instant::now();
    let burst: Vec<TcpStream> = (0..1000)
        .map(|_| TcpStream::connect(proxy.web).unwrap())
        .collect();
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "1000 connections took {:?}",
        started.elapsed()
    );
    drop(burst);
}

#[test]
fn a_megabyte_of_headers_is_refused_while_other_clients_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let proxy = start(dir.path(), backend(), &[], "");
    let mut other = TcpStream::connect(proxy.web).unwrap();
    other
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut greedy = TcpStream::connect(proxy.web).unwrap();
    greedy
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    greedy
        .write_all(b"GET / HTTP/1.1\r\nHost: app\r\n")
        .unwrap();
    // 1 MiB of header lines, then another client's request before the greedy head ends.
    let line = format!("X-Filler: {}\r\n", "a".repeat(1000));
    let mut sent = 0;
    while sent < (1 << 20) {
        if greedy.write_all(line.as_bytes()).is_err() {
            break;
        }
        sent += line.len();
    }
    assert!(get_on(&mut other).starts_with("HTTP/1.1 200"));
    let _ = greedy.write_all(b"\r\n");
    let mut out = Vec::new();
    let _ = greedy.read_to_end(&mut out);
    assert!(
        out.starts_with(b"HTTP/1.1 431"),
        "{}",
        String::from_utf8_lossy(&out[..out.len().min(200)])
    );
}
