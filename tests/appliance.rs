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
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bridge_tests::process::{KillOnDrop, signal, wait_exit};
use bridge_tests::repo_root;
use bridge_tests::sim::{simulate, write_example};

fn runtime_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("bridge-runtime")
}

/// Builds the example (dev profile) for two simulated nodes on 127.0.0.1; returns the plan path
/// and its hash.
fn example_plan(dir: &Path, a_port: u16, b_port: u16) -> (PathBuf, String) {
    write_example(dir, a_port, b_port).unwrap();
    let plan = bridge_tests::build_plan(dir, "dev", "plan.json", &[]);
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
    let mut child = KillOnDrop(child);
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
    signal(child.id(), "-HUP");
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
    signal(child.id(), "-HUP");
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
    signal(child.id(), "-TERM");
    assert_eq!(
        recv(&sock),
        "STOPPING=1\nSTATUS=draining in-flight requests\n"
    );
    assert!(
        wait_exit(
            &mut child,
            Duration::from_secs(20),
            "the process did not exit"
        )
        .success()
    );
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
    let _child = KillOnDrop(child);
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
    let mut child = KillOnDrop(
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
    signal(child.id(), "-TERM");
    assert!(
        wait_exit(
            &mut child,
            Duration::from_secs(20),
            "the process did not exit"
        )
        .success()
    );
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
    let mut child = KillOnDrop(
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
    let status = wait_exit(
        &mut child,
        Duration::from_secs(20),
        "the process did not exit",
    );
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
        // The one writable place, for ACME storage.
        "StateDirectory=bridge\n",
        "StateDirectoryMode=0700\n",
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

/// Looks up `path` (mapping keys) in a parsed YAML document.
fn yaml_at<'a>(
    node: &'a bridgectl::yaml::Node,
    path: &[&str],
) -> Option<&'a bridgectl::yaml::NodeKind> {
    let mut cur = node;
    for key in path {
        let bridgectl::yaml::NodeKind::Map(entries) = &cur.kind else {
            return None;
        };
        cur = &entries.iter().find(|(k, _)| k.text == *key)?.1;
    }
    Some(&cur.kind)
}

fn yaml_strings(kind: Option<&bridgectl::yaml::NodeKind>) -> Vec<String> {
    match kind {
        Some(bridgectl::yaml::NodeKind::Seq(items)) => items
            .iter()
            .filter_map(|n| match &n.kind {
                bridgectl::yaml::NodeKind::Str(s) => Some(s.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn yaml_str(kind: Option<&bridgectl::yaml::NodeKind>) -> Option<&str> {
    match kind {
        Some(bridgectl::yaml::NodeKind::Str(s)) => Some(s),
        _ => None,
    }
}

/// `examples/scadabridge/<file>`: its text, its YAML and the names of its services in order.
fn compose_file(file: &str) -> (String, bridgectl::yaml::Node, Vec<String>) {
    let path = repo_root().join("examples/scadabridge").join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let doc = bridgectl::yaml::parse(bridgectl::source::FileId(0), &text)
        .unwrap_or_else(|d| panic!("{}: {d:?}", path.display()))
        .unwrap();
    let Some(bridgectl::yaml::NodeKind::Map(services)) = yaml_at(&doc, &["services"]) else {
        panic!("{file}: no services")
    };
    let names = services.iter().map(|(k, _)| k.text.clone()).collect();
    (text, doc, names)
}

/// The example compose file keeps the seed's ports, network and node names, runs the appliance
/// hardened, and maps exactly the entry points of the plan built from the same directory.
#[test]
fn the_example_compose_file_replaces_traefik_with_the_appliance() {
    let (text, doc, names) = compose_file("docker-compose.yml");
    assert_eq!(
        names,
        [
            "scadabridge-bridge",
            "scadabridge-central-a",
            "scadabridge-central-b"
        ]
    );
    assert!(
        !text.contains("traefik:v"),
        "a Traefik image is still referenced"
    );
    let proxy = ["services", "scadabridge-bridge"];
    let at = |rest: &[&str]| {
        let mut p = proxy.to_vec();
        p.extend_from_slice(rest);
        yaml_at(&doc, &p)
    };
    assert_eq!(yaml_strings(at(&["ports"])), ["9000:80", "8180:8080"]);
    assert_eq!(yaml_strings(at(&["networks"])), ["scadabridge-net"]);
    assert_eq!(yaml_str(at(&["user"])), Some("65532:65532"));
    assert_eq!(
        at(&["read_only"]),
        Some(&bridgectl::yaml::NodeKind::Bool(true))
    );
    assert_eq!(yaml_strings(at(&["cap_drop"])), ["ALL"]);
    // ACME storage survives the container: the only writable place is a volume.
    assert_eq!(
        yaml_strings(at(&["volumes"])),
        ["bridge-state:/var/lib/bridge"]
    );
    assert_eq!(yaml_strings(at(&["cap_add"])), ["NET_BIND_SERVICE"]);
    let health = yaml_strings(at(&["healthcheck", "test"]));
    assert_eq!(&health[..3], ["CMD", "/bridge-runtime", "healthcheck"]);
    assert!(
        yaml_str(at(&["image"])).is_some_and(|i| i.contains("bridge-runtime")),
        "the proxy runs the appliance image"
    );
    for node in ["scadabridge-central-a", "scadabridge-central-b"] {
        let n = |rest: &str| yaml_at(&doc, &["services", node, rest]);
        assert_eq!(yaml_str(n("hostname")), Some(node));
        assert_eq!(yaml_strings(n("networks")), ["scadabridge-net"]);
        assert_eq!(yaml_strings(n("expose")), ["5000"]);
    }
    assert_eq!(
        yaml_str(yaml_at(&doc, &["networks", "scadabridge-net", "name"])),
        Some("scadabridge-net")
    );
    // The container ports are the entry points of the dev plan of this directory, and the
    // healthcheck's default URL is the API entry point's ping.
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.json");
    let out = Command::new(assert_cmd::cargo::cargo_bin("bridgectl"))
        .args(["build", "examples/scadabridge", "--profile", "dev", "--out"])
        .arg(&plan)
        .current_dir(repo_root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plan).unwrap()).unwrap();
    let eps = v["entrypoints"].as_object().unwrap();
    assert_eq!(eps["web"]["address"], ":80");
    assert_eq!(eps["traefik"]["address"], ":8080");
    assert_eq!(eps.len(), 2);
    assert!(
        health.iter().any(|a| a == "http://127.0.0.1:8080/ping"),
        "{health:?}"
    );
    // The seed's host names are the ones the plan sends traffic to.
    assert!(v.to_string().contains("http://scadabridge-central-a:5000"));
    assert!(v.to_string().contains("http://scadabridge-central-b:5000"));
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

fn nix(args: &[&str]) -> Command {
    let mut cmd = Command::new(args[0]);
    cmd.args(&args[1..])
        // Single-user store without a daemon (Debian's nix-bin), flakes on, never a substituter.
        .env(
            "NIX_CONFIG",
            "experimental-features = nix-command flakes\nbuild-users-group =\nsubstituters =",
        )
        .stdin(Stdio::null());
    cmd
}

fn nix_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" {
                nix_files(&path, out);
            }
        } else if name.ends_with(".nix") {
            out.push(path);
        }
    }
}

/// What can be checked of the flake without nixpkgs: every .nix file parses; with the stub nixpkgs
/// (packaging/nix/stub-nixpkgs) the flake evaluates, has the promised outputs and passes
/// `nix flake check --no-build`; the NixOS module generates the unit of
/// packaging/systemd/bridge-runtime.service and compiles the plan at build time. Real builds
/// (crates, image, VM test) need nixpkgs and are not run here.
#[test]
fn nix_flake_parses_evaluates_against_the_stub_and_the_module_matches_the_unit() {
    let (Some(_), Some(_)) = (tool("nix"), tool("nix-instantiate")) else {
        println!("SKIPPED: nix is not installed (Debian package nix-bin)");
        return;
    };
    let root = repo_root();
    let mut files = Vec::new();
    nix_files(&root, &mut files);
    assert!(files.iter().any(|f| f.ends_with("flake.nix")), "{files:?}");
    for f in &files {
        let out = nix(&["nix-instantiate", "--parse"])
            .arg(f)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            f.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // A copy holding what the flake reads, as a path: flake (a git flake sees only tracked files).
    let dir = tempfile::tempdir().unwrap();
    let flake = dir.path();
    for f in ["flake.nix", "Cargo.toml", "Cargo.lock"] {
        std::fs::copy(root.join(f), flake.join(f)).unwrap();
    }
    for d in [
        "packaging/nix",
        "examples/scadabridge",
        "tests/fixtures/bad/03-yaml-duplicate-key",
    ] {
        copy_tree(&root.join(d), &flake.join(d));
    }
    let stub = format!(
        "path:{}",
        flake.join("packaging/nix/stub-nixpkgs").display()
    );
    let flake_ref = format!("path:{}", flake.display());
    let common = [
        "--no-write-lock-file",
        "--offline",
        "--override-input",
        "nixpkgs",
        &stub,
        &flake_ref,
    ];
    let out = nix(&["nix", "flake", "show", "--json"])
        .args(common)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys = |v: &serde_json::Value| {
        let mut k: Vec<String> = v
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        k.sort();
        k
    };
    for system in ["x86_64-linux", "aarch64-linux"] {
        assert_eq!(
            keys(&shown["packages"][system]),
            [
                "bridge-runtime",
                "bridge-runtime-static",
                "bridgectl",
                "default",
                "image",
                "plan-example"
            ]
        );
        assert_eq!(keys(&shown["apps"][system]), ["bridge-runtime", "default"]);
        assert_eq!(
            keys(&shown["checks"][system]),
            ["bad-config-fails", "example-plan", "module", "tests"]
        );
        assert_eq!(keys(&shown["devShells"][system]), ["default"]);
        assert_eq!(shown["formatter"][system]["type"], "derivation");
    }
    assert_eq!(keys(&shown["nixosModules"]), ["default"]);
    let out = nix(&["nix", "flake", "check", "--no-build"])
        .args(common)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The module, evaluated with the stub lib.
    let out = nix(&["nix-instantiate", "--eval", "--strict", "--json"])
        .arg(flake.join("packaging/nix/stub-nixpkgs/eval-module.nix"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        m["disabled"],
        serde_json::json!({}),
        "a disabled module adds nothing"
    );
    let build = m["planBuild"].as_str().unwrap();
    assert!(build.contains("bridgectl build /nix/store/"), "{build}");
    assert!(build.contains("--profile 'prod'"), "{build}");
    assert!(
        build.contains("--var 'domain=scadabridge.example.com'"),
        "{build}"
    );
    assert_eq!(m["planInputs"], serde_json::json!(["bridgectl"]));
    assert_eq!(m["planReadOnly"], true);
    assert_eq!(m["reloadTriggers"], serde_json::json!([m["planName"]]));
    let etc = m["etc"]["bridge/plan.json"]["source"].as_str().unwrap();
    assert!(etc.ends_with("-bridge-plan-nixos/plan.json"), "{etc}");
    let sc = &m["service"]["serviceConfig"];
    let exec = sc["ExecStart"].as_str().unwrap();
    assert!(
        exec.ends_with("/bin/bridge-runtime' '/etc/bridge/plan.json' '--bind' 'web=0.0.0.0:80' '--resolve' 'scadabridge-central-a=10.0.0.11'"),
        "{exec}"
    );
    assert!(
        sc["ExecReload"]
            .as_str()
            .unwrap()
            .ends_with("/bin/kill -HUP $MAINPID")
    );

    // Every other [Service] setting of the shipped unit is the module's too, with the same value.
    let unit =
        std::fs::read_to_string(root.join("packaging/systemd/bridge-runtime.service")).unwrap();
    let mut settings: Vec<(String, Vec<String>)> = Vec::new();
    let mut in_service = false;
    for line in unit.lines().map(str::trim) {
        if line.starts_with('[') {
            in_service = line == "[Service]";
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        if !in_service || line.starts_with('#') {
            continue;
        }
        match settings.iter_mut().find(|(key, _)| key == k) {
            Some((_, vs)) => vs.push(v.to_owned()),
            None => settings.push((k.to_owned(), vec![v.to_owned()])),
        }
    }
    assert!(settings.len() > 30, "{settings:?}");
    for (key, values) in &settings {
        if ["ExecStart", "ExecReload", "EnvironmentFile"].contains(&key.as_str()) {
            continue;
        }
        let got = &sc[key.as_str()];
        let as_unit: Vec<String> = match got {
            serde_json::Value::Bool(b) => vec![if *b { "yes" } else { "no" }.to_owned()],
            serde_json::Value::Number(n) => vec![n.to_string()],
            serde_json::Value::String(s) => vec![s.clone()],
            serde_json::Value::Array(a) if values.len() == 1 => vec![
                a.iter()
                    .filter_map(|x| x.as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
            ],
            serde_json::Value::Array(a) => a
                .iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect(),
            _ => panic!("the module does not set {key} (the unit has {key}={values:?})"),
        };
        assert_eq!(&as_unit, values, "{key}: module vs packaging/systemd unit");
    }
    let limits = |k: &str| m["service"][k].as_i64();
    assert_eq!(limits("startLimitIntervalSec"), Some(300));
    assert_eq!(limits("startLimitBurst"), Some(5));

    // services.bridge.ha: nothing without it; with it keepalived beside the runtime, the host
    // step of packaging/ha/README.md, and a configuration the real `bridgectl keepalived` renders.
    assert_eq!(m["haUnpaired"], false, "no keepalived unless ha.enable");
    assert_eq!(m["pairedKeepsBridge"], true);
    let paired = m["pairedRuntimeExec"].as_str().unwrap();
    assert!(
        paired.ends_with("'--peer' 'http://10.0.0.2:8080/ping'"),
        "the runtime compares plans with its peer: {paired}"
    );
    for o in [
        "enable",
        "interface",
        "virtualAddress",
        "self",
        "peer",
        "priority",
        "routerId",
    ] {
        assert!(
            m["haOptions"].as_array().unwrap().iter().any(|x| x == o),
            "{o}"
        );
    }
    let exec = m["haExec"].as_str().unwrap();
    assert!(
        exec.contains(
            "/bin/keepalived' '--dont-fork' '--log-console' '--vrrp' '--use-file' '/nix/store/"
        ),
        "{exec}"
    );
    assert_eq!(m["haSysctl"]["net.ipv4.conf.eth0.arp_ignore"], 1);
    assert_eq!(m["haSysctl"]["net.ipv4.conf.eth0.arp_announce"], 2);
    assert_eq!(
        m["haLo"],
        serde_json::json!([{"address": "10.0.0.100", "prefixLength": 32}])
    );
    let build = m["haConfBuild"].as_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("keepalived.conf");
    let bin = assert_cmd::cargo::cargo_bin("bridgectl");
    let status = Command::new("/bin/sh")
        .arg("-c")
        .arg(build)
        .env("PATH", bin.parent().unwrap())
        .env("out", &out)
        .status()
        .unwrap();
    assert!(status.success(), "{build}");
    let conf = std::fs::read_to_string(&out).unwrap();
    for line in ["  unicast_src_ip 10.0.0.1", "  priority 150", "  nopreempt"] {
        assert!(conf.lines().any(|l| l == line), "{line:?} in\n{conf}");
    }
    assert!(
        conf.contains("util-linux/bin/logger -t bridge-ha"),
        "{conf}"
    );
}

/// The pair's compose file: the appliance and keepalived on the host's network, keepalived with
/// only the capabilities VRRP needs, running the configuration `bridgectl keepalived` writes.
#[test]
fn the_pair_compose_file_runs_the_appliance_beside_keepalived() {
    let (text, doc, names) = compose_file("docker-compose.pair.yml");
    assert_eq!(names, ["bridge", "keepalived"]);
    for s in ["bridge", "keepalived"] {
        assert_eq!(
            yaml_str(yaml_at(&doc, &["services", s, "network_mode"])),
            Some("host"),
            "{s}"
        );
        assert_eq!(
            yaml_strings(yaml_at(&doc, &["services", s, "cap_drop"])),
            ["ALL"]
        );
    }
    assert_eq!(
        yaml_strings(yaml_at(&doc, &["services", "keepalived", "cap_add"])),
        ["NET_ADMIN", "NET_RAW"]
    );
    assert_eq!(
        yaml_strings(yaml_at(&doc, &["services", "bridge", "cap_add"])),
        ["NET_BIND_SERVICE"]
    );
    let cmd = yaml_strings(yaml_at(&doc, &["services", "keepalived", "command"]));
    assert_eq!(
        cmd[..4],
        ["keepalived", "--dont-fork", "--log-console", "--vrrp"]
    );
    // The documented generation command is the real one: run it as written.
    let line = text
        .lines()
        .skip_while(|l| !l.contains("bridgectl keepalived"))
        .take_while(|l| !l.contains("(the second host"))
        .map(|l| {
            l.trim_start_matches('#')
                .trim()
                .trim_end_matches('\\')
                .to_owned()
        })
        .collect::<Vec<_>>()
        .join(" ");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("keepalived.conf");
    let line = line.replace("/etc/bridge/keepalived.conf", out.to_str().unwrap());
    let args: Vec<String> = split_shell_words(&line);
    assert_eq!(args[..2], ["bridgectl", "keepalived"], "{line}");
    let run = bridge_tests::process::bridgectl()
        .args(&args[1..])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let conf = std::fs::read_to_string(&out).unwrap();
    assert!(
        conf.contains("/usr/local/bin/bridge-runtime healthcheck"),
        "{conf}"
    );
    // What the keepalived container mounts is what the configuration runs.
    let mounts = yaml_strings(yaml_at(&doc, &["services", "keepalived", "volumes"]));
    assert!(
        mounts
            .iter()
            .any(|m| m.starts_with("/usr/local/bin/bridge-runtime:"))
    );
    assert!(
        mounts
            .iter()
            .any(|m| m.starts_with("/etc/bridge/keepalived.conf:"))
    );
    // A bad input is refused by name with exit 2, and nothing is written.
    std::fs::remove_file(&out).unwrap();
    let mut bad = args[1..].to_vec();
    let at = bad.iter().position(|a| a == "--priority").unwrap();
    bad[at + 1] = "255".into();
    let run = bridge_tests::process::bridgectl()
        .args(&bad)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("--priority \"255\": must be 1..=254"), "{err}");
    assert!(!out.exists());
}

/// Words of a documented command line: spaces separate, double quotes group.
fn split_shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// The CI examples in docs/ci parse, and the plain git hook blocks a commit of a broken
/// configuration and lets a good one through.
#[test]
fn ci_examples_parse_and_the_pre_commit_hook_blocks_a_bad_config() {
    let ci = repo_root().join("docs/ci");
    for f in ["github-workflow.yml", "pre-commit-config.yaml"] {
        let text = std::fs::read_to_string(ci.join(f)).unwrap();
        let doc = bridgectl::yaml::parse(bridgectl::source::FileId(0), &text)
            .unwrap_or_else(|d| panic!("{f}: {d:?}"))
            .unwrap();
        assert!(matches!(doc.kind, bridgectl::yaml::NodeKind::Map(_)), "{f}");
        assert!(text.contains("bridgectl check"), "{f}");
    }
    let workflow = std::fs::read_to_string(ci.join("github-workflow.yml")).unwrap();
    assert!(workflow.contains("--format github") && workflow.contains("--format sarif"));

    let Some(git) = tool("git") else {
        println!("SKIPPED (hook part): git is not installed");
        return;
    };
    let repo = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let out = Command::new(&git)
            .args(args)
            .current_dir(repo.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["init", "-q"]);
    let conf = repo.path().join("docker/traefik");
    copy_tree(
        &repo_root().join("tests/fixtures/bad/03-yaml-duplicate-key"),
        &conf,
    );
    std::fs::remove_file(conf.join("expected.txt")).unwrap();
    git(&["add", "docker"]);
    let bin_dir = assert_cmd::cargo::cargo_bin("bridgectl")
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let hook = |expect: i32| {
        let out = Command::new("sh")
            .arg(ci.join("pre-commit"))
            .current_dir(repo.path())
            .env("PATH", &path)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(expect),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    hook(1);
    let seed = repo_root().join("examples/scadabridge");
    for f in ["traefik.yml", "dynamic.yml"] {
        std::fs::copy(seed.join(f), conf.join(f)).unwrap();
    }
    git(&["add", "docker"]);
    hook(0);
}
