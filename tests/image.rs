//! The appliance image end to end: `packaging/image/build.sh` builds it FROM scratch with a static
//! bridge-runtime and a plan of the bundled example (twice, to prove the digest is reproducible);
//! podman runs it read-only, as uid 65532 with only CAP_NET_BIND_SERVICE, in front of two simulated
//! central nodes on 127.0.0.2 / 127.0.0.3 whose names resolve through the container's /etc/hosts;
//! traffic goes to the active node, follows a failover, and `podman stop` drains and exits 0.
//!
//! Skipped, with the reason printed, only where buildah, podman or runc are not installed or
//! podman cannot run containers at all. On this project's machines podman needs `--runtime runc`
//! (crun rejects the hybrid cgroup layout) and rlimits lower than the host's.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a test failure"
)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bridge_tests::repo_root;
use bridge_tests::sim::{simulate, write_example};

fn tool(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    })
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Why the container tools cannot be used here, if they cannot.
fn skip_reason() -> Option<String> {
    for t in ["buildah", "podman", "runc"] {
        if tool(t).is_none() {
            return Some(format!(
                "{t} is not installed (Debian packages buildah podman runc)"
            ));
        }
    }
    let info = Command::new("podman")
        .args(["--runtime", "runc", "info"])
        .output();
    match info {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "podman cannot run here: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Some(format!("podman cannot start: {e}")),
    }
}

/// Builds the image; returns its digest.
fn build_image(plan: &Path, tag: &str) -> String {
    let mut cmd = Command::new(repo_root().join("packaging/image/build.sh"));
    cmd.arg(plan).arg(tag);
    // A target directory of its own: the outer `cargo test` holds the workspace one.
    if std::env::var_os("CARGO_TARGET_DIR").is_none() {
        cmd.env("CARGO_TARGET_DIR", repo_root().join("target/appliance"));
    }
    let out = run(&mut cmd);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    let (got_tag, digest) = line.split_once(' ').expect("`TAG DIGEST` on stdout");
    assert_eq!(got_tag, tag);
    assert!(digest.starts_with("sha256:"), "{line}");
    digest.to_owned()
}

fn inspect(tag: &str, format: &str) -> String {
    let out = run(Command::new("podman").args(["image", "inspect", "--format", format, tag]));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return (0, String::new());
    };
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: localhost:9000\r\nConnection: close\r\n\r\n"
    );
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

/// Removes what this test created — its container and its image tags, by name — even when an
/// assertion fails half-way.
struct Cleanup {
    container: String,
    tags: Vec<String>,
    child: Option<Child>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = Command::new("podman")
            .args(["rm", "--force", "--time", "2", &self.container])
            .output();
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
        for tag in &self.tags {
            let _ = Command::new("podman")
                .args(["rmi", "--force", tag])
                .output();
        }
    }
}

#[test]
fn the_image_builds_reproducibly_and_serves_the_example_with_failover_under_podman() {
    if let Some(reason) = skip_reason() {
        println!("SKIPPED: {reason}");
        return;
    }
    let id = std::process::id();
    let tag = format!("localhost/bridge-image-test:{id}");
    let other_tag = format!("localhost/bridge-image-test:{id}-other");
    let mut cleanup = Cleanup {
        container: format!("bridge-image-test-{id}"),
        tags: vec![tag.clone(), other_tag.clone()],
        child: None,
    };

    // The seed's topology on loopback aliases, like the demo: a active, b standby.
    let (a, a_addr) = simulate("a", "127.0.0.2:0".parse().unwrap(), true).unwrap();
    let (b, b_addr) = simulate("b", "127.0.0.3:0".parse().unwrap(), false).unwrap();
    let dir = tempfile::tempdir().unwrap();
    write_example(dir.path(), a_addr.port(), b_addr.port()).unwrap();
    let dynamic = dir.path().join("dynamic.yml");
    let text = std::fs::read_to_string(&dynamic).unwrap();
    std::fs::write(&dynamic, text.replace("interval: 5s", "interval: 1s")).unwrap();
    let plan = dir.path().join("plan.json");
    run(Command::new(assert_cmd::cargo::cargo_bin("bridgectl"))
        .arg("build")
        .arg(dir.path())
        .args(["--profile", "dev", "--out"])
        .arg(&plan));
    let hash = serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(&plan).unwrap())
        .unwrap()["hash"]
        .as_str()
        .unwrap()
        .to_owned();

    // Reproducible: removing the image and building again gives the same digest; another plan
    // gives another one.
    let first = build_image(&plan, &tag);
    run(Command::new("podman").args(["rmi", "--force", &tag]));
    let second = build_image(&plan, &tag);
    assert_eq!(first, second, "the same plan gave two image digests");
    let other_plan = dir.path().join("other.json");
    std::fs::write(&dynamic, text.replace("interval: 5s", "interval: 2s")).unwrap();
    run(Command::new(assert_cmd::cargo::cargo_bin("bridgectl"))
        .arg("build")
        .arg(dir.path())
        .args(["--profile", "dev", "--out"])
        .arg(&other_plan));
    assert_ne!(build_image(&other_plan, &other_tag), first);

    // What is in the image: one layer, two files, a non-root user, the plan's hash as a label.
    assert_eq!(inspect(&tag, "{{len .RootFS.Layers}}"), "1");
    assert_eq!(inspect(&tag, "{{.Config.User}}"), "65532:65532");
    assert_eq!(
        inspect(&tag, "{{index .Config.Labels \"io.bridgectl.plan.hash\"}}"),
        hash
    );
    let created = run(Command::new("podman").args(["create", "--name", &cleanup.container, &tag]));
    assert!(!created.stdout.is_empty());
    let export = run(Command::new("podman").args(["export", &cleanup.container]));
    run(Command::new("podman").args(["rm", &cleanup.container]));
    let listing = {
        let mut tar = Command::new("tar")
            .args(["-t", "-f", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        tar.stdin.take().unwrap().write_all(&export.stdout).unwrap();
        let out = tar.wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let mut files: Vec<&str> = listing.lines().filter(|l| !l.ends_with('/')).collect();
    files.sort_unstable();
    assert_eq!(
        files,
        ["bridge-runtime", "etc/bridge/plan.json"],
        "{listing}"
    );

    // Run it as deployed: read-only root, no capability but NET_BIND_SERVICE, no new privileges,
    // the node names from /etc/hosts (the static binary resolves them itself, no --resolve).
    let mut podman = Command::new("podman");
    podman
        .args([
            "--runtime",
            "runc",
            "run",
            "--rm",
            "--name",
            &cleanup.container,
        ])
        .args(["--network", "host", "--read-only", "--cap-drop", "all"])
        .args(["--cap-add", "NET_BIND_SERVICE"])
        .args(["--security-opt", "no-new-privileges"])
        .args([
            "--ulimit",
            "nofile=1024:1024",
            "--ulimit",
            "nproc=1024:1024",
        ])
        .args(["--add-host", "scadabridge-central-a:127.0.0.2"])
        .args(["--add-host", "scadabridge-central-b:127.0.0.3"])
        .arg(&tag)
        .args(["--bind", "web=127.0.0.1:0", "--bind", "traefik=127.0.0.1:0"]);
    let (child, addrs) = bridge_tests::spawn_serving(&mut podman, &["web", "traefik"]);
    cleanup.child = Some(child);
    let (web, api) = (addrs[0], addrs[1]);
    for _ in 0..5 {
        let (status, body) = get(web, "/ui");
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("\"node\":\"central-a\""), "{body}");
    }
    let health = run(Command::new("podman").args([
        "exec",
        &cleanup.container,
        "/bridge-runtime",
        "healthcheck",
        "--url",
        &format!("http://{api}/ping"),
    ]));
    assert!(String::from_utf8_lossy(&health.stdout).contains("answered 200"));
    let user = run(Command::new("podman").args(["top", &cleanup.container, "user", "capeff"]));
    let top = String::from_utf8_lossy(&user.stdout);
    assert!(top.contains("65532"), "{top}");
    assert!(top.to_lowercase().contains("net_bind_service"), "{top}");

    // Failover: a goes standby, b becomes active.
    a.active.store(false, Ordering::SeqCst);
    b.active.store(true, Ordering::SeqCst);
    let started = Instant::now();
    while !get(web, "/ui").1.contains("\"node\":\"central-b\"") {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the failover was not followed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    for _ in 0..5 {
        assert!(get(web, "/ui").1.contains("\"node\":\"central-b\""));
    }

    // `podman stop` sends SIGTERM: the runtime drains and exits 0 well before the kill timeout.
    let stopping = Instant::now();
    run(Command::new("podman").args(["stop", "--time", "15", &cleanup.container]));
    assert!(
        stopping.elapsed() < Duration::from_secs(14),
        "SIGTERM was not honoured"
    );
    let mut child = cleanup.child.take().unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "the container exited with {status:?}");
}
