//! The appliance around bridge-runtime, short of the container image (`image.rs`): sd_notify
//! readiness over a real `NOTIFY_SOCKET`, reload and stop messages, the `healthcheck` command's exit
//! codes, socket activation through `systemd-socket-activate`, the shipped systemd units
//! (`systemd-analyze verify` and `security`), the example compose file, and the Nix flake's
//! offline checks. Tests that need a host tool print why they are skipped when it is missing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a test failure"
)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bridge_tests::repo_root;
use bridge_tests::sim::{simulate, write_example};

fn runtime_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("bridge-runtime")
}

/// Builds the example (dev profile) for two simulated nodes on 127.0.0.1; returns the plan path
/// and its hash.
fn example_plan(dir: &Path, a_port: u16, b_port: u16) -> (PathBuf, String) {
    write_example(dir, a_port, b_port).unwrap();
    let plan = dir.join("plan.json");
    let out = Command::new(assert_cmd::cargo::cargo_bin("bridgectl"))
        .arg("build")
        .arg(dir)
        .args(["--profile", "dev", "--out"])
        .arg(&plan)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plan).unwrap()).unwrap();
    (plan, v["hash"].as_str().unwrap().to_owned())
}

fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: scadabridge.local\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let status = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (
        status,
        out.split("\r\n\r\n").nth(1).unwrap_or("").to_owned(),
    )
}

fn recv(sock: &UnixDatagram) -> String {
    let mut buf = [0u8; 4096];
    let n = sock
        .recv(&mut buf)
        .expect("a notification within the timeout");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

fn signal(child: &Child, sig: &str) {
    let status = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn wait_exit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "the process did not exit");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Kills the child if a test fails half-way.
struct Guard(Child);
impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn healthcheck(url: &str) -> (Option<i32>, String) {
    let out = Command::new(runtime_bin())
        .args(["healthcheck", "--timeout", "2", "--url", url])
        .output()
        .unwrap();
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn notify_socket_gets_ready_after_listeners_accept_then_reloading_and_stopping() {
    let (a, a_addr) = simulate("a", "127.0.0.1:0".parse().unwrap(), true).unwrap();
    let (_b, b_addr) = simulate("b", "127.0.0.1:0".parse().unwrap(), false).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (plan, hash) = example_plan(dir.path(), a_addr.port(), b_addr.port());
    let sock_path = dir.path().join("notify.sock");
    let sock = UnixDatagram::bind(&sock_path).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();

    let mut cmd = Command::new(runtime_bin());
    cmd.arg(&plan)
        .args(["--bind", "web=127.0.0.1:0", "--bind", "traefik=127.0.0.1:0"])
        .args([
            "--resolve",
            "scadabridge-central-a=127.0.0.1",
            "--resolve",
            "scadabridge-central-b=127.0.0.1",
        ])
        .env("NOTIFY_SOCKET", &sock_path);
    // The first datagram is READY: by then both entry points are bound and the first probe round
    // is done, so the very first request goes to the active node.
    let (child, addrs) = bridge_tests::spawn_serving(&mut cmd, &["web", "traefik"]);
    let mut child = Guard(child);
    let first = recv(&sock);
    assert_eq!(
        first,
        format!("READY=1\nSTATUS=serving plan {hash}\n"),
        "the first notification"
    );
    let (web, api) = (addrs[0], addrs[1]);
    let (status, body) = get(web, "/ui");
    assert_eq!(status, 200);
    assert!(body.contains("\"node\":\"central-a\""), "{body}");

    // healthcheck: 0 on a 2xx answer, 1 on anything else.
    let (code, out) = healthcheck(&format!("http://{api}/ping"));
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("answered 200"), "{out}");
    let (code, out) = healthcheck(&format!("http://{api}/no-such-page"));
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("answered 404"), "{out}");
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let (code, out) = healthcheck(&format!("http://{closed}/ping"));
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("cannot connect"), "{out}");
    let (code, out) = healthcheck(&format!("https://{api}/ping"));
    assert_eq!(code, Some(1), "{out}");
    // Nobody active: the proxy answers 503, which is unhealthy for a probe through `web`.
    a.active.store(false, std::sync::atomic::Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(10);
    while get(web, "/ui").0 != 503 {
        assert!(Instant::now() < deadline, "a stayed in the pool");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (code, out) = healthcheck(&format!("http://{web}/ui"));
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("answered 503"), "{out}");
    a.active.store(true, std::sync::atomic::Ordering::SeqCst);

    // SIGHUP with the same plan: RELOADING=1 (with MONOTONIC_USEC), then READY=1 again.
    signal(&child.0, "-HUP");
    let reloading = recv(&sock);
    assert!(
        reloading.starts_with("RELOADING=1\nMONOTONIC_USEC="),
        "{reloading}"
    );
    assert_eq!(
        recv(&sock),
        format!("READY=1\nSTATUS=serving plan {hash}\n")
    );
    // A damaged plan is rejected; the status says so and the old plan keeps serving.
    let text = std::fs::read_to_string(&plan).unwrap();
    std::fs::write(&plan, text.replace("scadabridge-central-b", "evil")).unwrap();
    signal(&child.0, "-HUP");
    assert!(recv(&sock).starts_with("RELOADING=1\n"));
    let after = recv(&sock);
    assert!(
        after.starts_with(&format!(
            "READY=1\nSTATUS=serving plan {hash}; reload rejected: "
        )),
        "{after}"
    );
    assert_eq!(get(web, "/ui").0, 200);

    // SIGTERM: STOPPING=1, then a clean exit.
    signal(&child.0, "-TERM");
    assert_eq!(
        recv(&sock),
        "STOPPING=1\nSTATUS=draining in-flight requests\n"
    );
    assert!(wait_exit(&mut child.0, Duration::from_secs(20)).success());
}

#[test]
fn an_unreachable_notify_socket_does_not_stop_serving() {
    let (_a, a_addr) = simulate("a", "127.0.0.1:0".parse().unwrap(), true).unwrap();
    let (_b, b_addr) = simulate("b", "127.0.0.1:0".parse().unwrap(), false).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (plan, _) = example_plan(dir.path(), a_addr.port(), b_addr.port());
    let mut cmd = Command::new(runtime_bin());
    cmd.arg(&plan)
        .args(["--bind", "web=127.0.0.1:0", "--bind", "traefik=127.0.0.1:0"])
        .args(["--resolve", "scadabridge-central-a=127.0.0.1"])
        .args(["--resolve", "scadabridge-central-b=127.0.0.1"])
        .env("NOTIFY_SOCKET", dir.path().join("nobody-listens.sock"));
    let (child, addrs) = bridge_tests::spawn_serving(&mut cmd, &["web", "traefik"]);
    let _child = Guard(child);
    assert_eq!(get(addrs[0], "/ui").0, 200);
}

fn tool(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `systemd-socket-activate` binds the sockets and execs bridge-runtime on the first connection,
/// like a `.socket` unit: the entry points take the passed sockets by `FileDescriptorName`.
#[test]
fn socket_activation_serves_the_passed_sockets_by_entry_point_name() {
    let Some(activate) = tool("systemd-socket-activate") else {
        println!("SKIPPED: systemd-socket-activate is not installed (Debian package systemd)");
        return;
    };
    let (_a, a_addr) = simulate("a", "127.0.0.1:0".parse().unwrap(), true).unwrap();
    let (_b, b_addr) = simulate("b", "127.0.0.1:0".parse().unwrap(), false).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (plan, _) = example_plan(dir.path(), a_addr.port(), b_addr.port());
    let (web_port, api_port) = (free_port(), free_port());
    let mut child = Guard(
        Command::new(&activate)
            .arg(format!("--listen=127.0.0.1:{web_port}"))
            .arg(format!("--listen=127.0.0.1:{api_port}"))
            .arg("--fdname=web:traefik")
            .arg(runtime_bin())
            .arg(&plan)
            .args(["--resolve", "scadabridge-central-a=127.0.0.1"])
            .args(["--resolve", "scadabridge-central-b=127.0.0.1"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // Wait until systemd-socket-activate listens, then the first connection starts the runtime.
    let web: SocketAddr = format!("127.0.0.1:{web_port}").parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(web).is_err() {
        assert!(
            Instant::now() < deadline,
            "systemd-socket-activate did not listen"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (status, body) = get(web, "/ui");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"node\":\"central-a\""), "{body}");
    let api: SocketAddr = format!("127.0.0.1:{api_port}").parse().unwrap();
    assert_eq!(get(api, "/ping"), (200, "OK".to_owned()));
    signal(&child.0, "-TERM");
    assert!(wait_exit(&mut child.0, Duration::from_secs(20)).success());
    let mut err = String::new();
    child
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        err.contains("socket activation: 2 listening socket(s) passed"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "entry point web listening on 127.0.0.1:{web_port}"
        )),
        "{err}"
    );
}

#[test]
fn socket_activation_refuses_a_socket_named_after_no_entry_point() {
    let Some(activate) = tool("systemd-socket-activate") else {
        println!("SKIPPED: systemd-socket-activate is not installed (Debian package systemd)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (plan, _) = example_plan(dir.path(), 5000, 5000);
    let port = free_port();
    let mut child = Guard(
        Command::new(&activate)
            .arg(format!("--listen=127.0.0.1:{port}"))
            .arg("--fdname=http")
            .arg(runtime_bin())
            .arg(&plan)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(addr).is_err() {
        assert!(
            Instant::now() < deadline,
            "systemd-socket-activate did not listen"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = wait_exit(&mut child.0, Duration::from_secs(20));
    assert_eq!(status.code(), Some(2));
    let mut err = String::new();
    child
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        err.contains("no entry point named http in the plan (it has traefik, web)"),
        "{err}"
    );
}

/// The shipped units verify, and the service's `systemd-analyze security` exposure stays at 2.0 or
/// below (the "OK" band is 1.0–4.9; it scores 1.6 today). `verify` needs the ExecStart binary to
/// exist, so it checks a copy whose only change is the binary's path.
#[test]
fn systemd_units_verify_and_pass_the_security_threshold() {
    let Some(analyze) = tool("systemd-analyze") else {
        println!("SKIPPED: systemd-analyze is not installed (Debian package systemd)");
        return;
    };
    let units = repo_root().join("packaging/systemd");
    let service = std::fs::read_to_string(units.join("bridge-runtime.service")).unwrap();
    for required in [
        "Type=notify",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "AmbientCapabilities=CAP_NET_BIND_SERVICE\n",
        "CapabilityBoundingSet=CAP_NET_BIND_SERVICE\n",
        "ProtectSystem=strict",
        "DynamicUser=yes",
        "NoNewPrivileges=yes",
    ] {
        assert!(service.contains(required), "the unit lacks {required}");
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = runtime_bin();
    let copy = service.replace("/usr/local/bin/bridge-runtime", &bin.to_string_lossy());
    assert_ne!(
        copy, service,
        "ExecStart names /usr/local/bin/bridge-runtime"
    );
    std::fs::write(dir.path().join("bridge-runtime.service"), copy).unwrap();
    std::fs::copy(
        units.join("bridge-runtime.socket"),
        dir.path().join("bridge-runtime.socket"),
    )
    .unwrap();
    let out = Command::new(&analyze)
        .arg("verify")
        .arg(dir.path().join("bridge-runtime.service"))
        .arg(dir.path().join("bridge-runtime.socket"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "systemd-analyze verify: {err}");
    // verify exits 0 on unknown settings too; they are warnings on stderr.
    assert!(
        !err.contains("Unknown") && !err.contains("Failed to parse") && !err.contains("ignoring"),
        "systemd-analyze verify warned: {err}"
    );
    let out = Command::new(&analyze)
        .args(["security", "--offline=true", "--threshold=20", "--no-pager"])
        .arg(dir.path().join("bridge-runtime.service"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    assert!(
        out.status.success(),
        "exposure above 2.0: {last}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(last.contains(" OK ") || last.contains(" SAFE "), "{last}");
}
