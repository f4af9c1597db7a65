//! Processes of the end-to-end tests: the binaries cargo built for them, serving processes that
//! announce their entry points, signals, waiting for an exit, and a guard that kills by PID.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a panic is a test failure"
)]

use std::io::BufRead;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// `name` on `PATH` (or in /usr/bin, where Debian puts tools a minimal `PATH` may lack).
pub fn find_binary(name: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([std::path::PathBuf::from("/usr/bin")])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// `bridge-runtime PLAN`, the binary built for this test run.
pub fn bridge_runtime(plan: &Path) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("bridge-runtime"));
    cmd.arg(plan);
    cmd
}

/// `bridgectl`, the binary built for this test run.
pub fn bridgectl() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin("bridgectl"))
}

/// A child process that is killed (by its PID) and reaped when this is dropped, so a failing test
/// leaves nothing running.
#[derive(Debug)]
pub struct KillOnDrop(pub Child);

impl std::ops::Deref for KillOnDrop {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for KillOnDrop {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Spawns a serving process (`bridge-runtime`, `bridgectl run`) with stderr piped and waits (at most
/// 20 s) until it has announced every entry point in `entrypoints`; returns their addresses in
/// that order. The rest of stderr keeps being drained so the process never blocks on it.
pub fn spawn_serving(cmd: &mut Command, entrypoints: &[&str]) -> (Child, Vec<SocketAddr>) {
    let mut child = cmd
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let Some(stderr) = child.stderr.take() else {
        panic!("stderr is piped")
    };
    let mut lines = std::io::BufReader::new(stderr).lines();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut found: Vec<Option<SocketAddr>> = vec![None; entrypoints.len()];
    while found.iter().any(Option::is_none) && Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        for (i, ep) in entrypoints.iter().enumerate() {
            let prefix = format!("bridge-runtime: entry point {ep} listening on ");
            if let Some(rest) = line.strip_prefix(&prefix) {
                found[i] = rest.trim().parse().ok();
            }
        }
    }
    // BRIDGE_TEST_ECHO=1 shows the rest of the process's log (debugging a test by hand).
    let echo = std::env::var_os("BRIDGE_TEST_ECHO").is_some();
    std::thread::spawn(move || {
        for line in lines.by_ref().map_while(Result::ok) {
            if echo {
                eprintln!("{line}");
            }
        }
    });
    let addrs = found
        .into_iter()
        .zip(entrypoints)
        .map(|(a, ep)| a.unwrap_or_else(|| panic!("the process did not announce entry point {ep}")))
        .collect();
    (child, addrs)
}

/// Sends `signal` (`-TERM`, `-HUP`, ...) to the process with this PID with `kill`, and asserts that
/// `kill` succeeded.
pub fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {signal} {pid} failed");
}

/// Waits until the child exits and returns its status; panics with `what` after `limit`.
pub fn wait_exit(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
