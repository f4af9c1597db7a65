//! The README's demo (`cargo run -p bridge-tests --example scadabridge-demo`) starts, serves the
//! bundled example through the simulated nodes, reacts to a failover command, and exits when its
//! input ends.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a test failure"
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The demo's executable, built for this run.
///
/// The demo is a cargo example, and cargo gives tests a `CARGO_BIN_EXE_*` path for binaries only.
/// `cargo test` builds the package's examples too, but not when targets are selected
/// (`cargo test --test demo_smoke`), so a file under `target/<profile>/examples/` may be missing
/// or stale. This runs `cargo build --example scadabridge-demo` with the cargo that runs the
/// tests, into this test binary's target directory and profile: a no-op when `cargo test` already
/// built it (cargo holds no lock on the target directory while tests run), a build otherwise.
fn demo_binary() -> PathBuf {
    // <target dir>/<profile dir>/deps/demo_smoke-<hash>
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    let target_dir = profile_dir.parent().unwrap();
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev",
        Some(other) => other,
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--quiet", "--locked", "-p", "bridge-tests"])
        .args(["--example", "scadabridge-demo", "--profile", profile])
        .arg("--target-dir")
        .arg(target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .unwrap();
    assert!(
        status.success(),
        "cargo build --example scadabridge-demo failed"
    );
    profile_dir
        .join("examples")
        .join(format!("scadabridge-demo{}", std::env::consts::EXE_SUFFIX))
}

fn get(addr: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET /ui HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn demo_serves_the_example_and_fails_over_on_command() {
    let mut child = Command::new(demo_binary())
        .args([
            "--web",
            "127.0.0.1:0",
            "--dashboard",
            "127.0.0.1:0",
            "--node-a",
            "127.0.0.2:0",
            "--node-b",
            "127.0.0.3:0",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut web = None;
    while web.is_none() && Instant::now() < deadline {
        let line = lines.next().unwrap().unwrap();
        if let Some(rest) = line.strip_prefix("ScadaBridge via bridge-runtime:") {
            web = Some(
                rest.trim()
                    .trim_start_matches("http://")
                    .trim_end_matches('/')
                    .to_owned(),
            );
        }
    }
    let web = web.expect("demo announced its address");
    assert!(get(&web).contains("\"node\":\"central-a\""));
    writeln!(stdin, "failover").unwrap();
    let started = Instant::now();
    while !get(&web).contains("\"node\":\"central-b\"") {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "failover not followed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(stdin); // end of input: the demo stops
    std::thread::spawn(move || for _ in lines {});
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success());
            break;
        }
        assert!(Instant::now() < deadline, "demo did not exit");
        std::thread::sleep(Duration::from_millis(50));
    }
}
