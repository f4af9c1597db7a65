//! Helpers shared by the end-to-end tests: locating the repository, running `check` in-process, and
//! turning a report into stable `severity code file:line` lines that expectation files list.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

pub mod prod;
pub mod sim;

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

/// Spawns a serving process (`bridge-runtime`, `bridgectl run`) with stderr piped and waits (at most
/// 20 s) until it has announced every entry point in `entrypoints`; returns their addresses in
/// that order. The rest of stderr keeps being drained so the process never blocks on it.
pub fn spawn_serving(
    cmd: &mut std::process::Command,
    entrypoints: &[&str],
) -> (std::process::Child, Vec<std::net::SocketAddr>) {
    use std::io::BufRead;
    let mut child = cmd
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let Some(stderr) = child.stderr.take() else {
        panic!("stderr is piped")
    };
    let mut lines = std::io::BufReader::new(stderr).lines();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut found: Vec<Option<std::net::SocketAddr>> = vec![None; entrypoints.len()];
    while found.iter().any(Option::is_none) && std::time::Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        for (i, ep) in entrypoints.iter().enumerate() {
            let prefix = format!("bridge-runtime: entry point {ep} listening on ");
            if let Some(rest) = line.strip_prefix(&prefix) {
                found[i] = rest.trim().parse().ok();
            }
        }
    }
    std::thread::spawn(move || for _ in lines.by_ref() {});
    let addrs = found
        .into_iter()
        .zip(entrypoints)
        .map(|(a, ep)| a.unwrap_or_else(|| panic!("the process did not announce entry point {ep}")))
        .collect();
    (child, addrs)
}

/// Runs `bridgectl build DIR --profile PROFILE --out DIR/<out> [extra...]` and returns the plan's
/// path; panics with bridgectl's diagnostics when the build fails.
pub fn build_plan(dir: &Path, profile: &str, out: &str, extra: &[&str]) -> PathBuf {
    let plan = dir.join(out);
    let result = std::process::Command::new(assert_cmd::cargo::cargo_bin("bridgectl"))
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
