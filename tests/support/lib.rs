//! The test crate's support library: what the test targets share.
//!
//! - this file: locating the repository, running `check` in-process, turning a report into the
//!   stable `severity code file:line` lines expectation files list, building a plan;
//! - [`backends`]: one configurable HTTP backend (health endpoint, crash, WebSocket echo, HTTP/2,
//!   TLS, recording, custom answers);
//! - [`ocsp`]: a CA naming OCSP responders, a responder, a client that shows the staple;
//! - [`tls`]: a test CA, a client that shows which certificate is served, server configurations;
//! - [`process`]: the binaries under test, serving processes, signals, exits, kill-on-drop guards;
//! - [`sim`]: the two simulated ScadaBridge nodes (the demo and the appliance tests);
//! - [`prod`]: the prod profile of the example served for real;
//! - [`pebble`]: Let's Encrypt's test ACME server (Debian's `pebble`) and its DNS server;
//! - [`traefik`]: the real Traefik binary serving the same files, the oracle of differential tests.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

pub mod backends;
pub mod netns;
pub mod ocsp;
pub mod pebble;
pub mod process;
pub mod prod;
pub mod sim;
pub mod tls;
pub mod traefik;

pub use process::spawn_serving;

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

/// Runs `bridgectl build DIR --profile PROFILE --out DIR/<out> [extra...]` and returns the plan's
/// path; panics with bridgectl's diagnostics when the build fails.
pub fn build_plan(dir: &Path, profile: &str, out: &str, extra: &[&str]) -> PathBuf {
    let plan = dir.join(out);
    let result = process::bridgectl()
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
