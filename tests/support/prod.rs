//! The prod profile of `examples/scadabridge` served for real: a test certificate for [`DOMAIN`], the
//! dashboard users file `admin` / `s3cret`, `bridgectl build --profile prod`, then `bridge-runtime`
//! on loopback with every entry point on a free port. Shared by the HTTPS end-to-end tests and the
//! dashboard's browser test.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a panic is a test failure"
)]

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

use crate::process::{KillOnDrop, bridge_runtime};
use crate::repo_root;

/// The host name the test certificate covers.
pub const DOMAIN: &str = "scadabridge.example.com";

/// The dashboard user of [`start_prod`]'s users file.
pub const DASHBOARD_USER: (&str, &str) = ("admin", "s3cret");

/// Writes a self-signed certificate for [`DOMAIN`] as `dir/NAME.crt` and `dir/NAME.key` (PEM).
pub fn write_test_cert(dir: &Path, name: &str) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec![DOMAIN.to_owned()]).unwrap();
    params.not_before = time::OffsetDateTime::now_utc() - time::Duration::days(1);
    params.not_after = time::OffsetDateTime::now_utc() + time::Duration::days(400);
    let cert = params.self_signed(&key).unwrap();
    std::fs::write(dir.join(format!("{name}.crt")), cert.pem()).unwrap();
    std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
}

/// A running prod deployment; the process is killed when this is dropped.
#[derive(Debug)]
pub struct Prod {
    /// The `bridge-runtime` process.
    pub child: KillOnDrop,
    /// `web` (plain HTTP, redirects to HTTPS).
    pub web: SocketAddr,
    /// `websecure` (HTTPS, the routers of the example).
    pub websecure: SocketAddr,
    /// `traefik` (HTTPS, dashboard and API behind basicAuth).
    pub api: SocketAddr,
    /// Holds the configuration, the plan, `bridge.crt`/`bridge.key` and `dashboard.htpasswd`.
    pub dir: tempfile::TempDir,
}

/// Builds the prod profile of the example with its two nodes on 127.0.0.1:`a_port` and
/// 127.0.0.1:`b_port` (health checks every second) and serves it.
pub fn start_prod(a_port: u16, b_port: u16) -> Prod {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_test_cert(d, "bridge");
    // admin / s3cret (MD5-crypt, as `htpasswd -m` writes it).
    std::fs::write(
        d.join("dashboard.htpasswd"),
        "admin:$apr1$abcdefgh$M2T3erDstkD7SsE2QQnfH0\n",
    )
    .unwrap();
    let seed = repo_root().join("examples/scadabridge");
    std::fs::copy(seed.join("traefik.yml"), d.join("traefik.yml")).unwrap();
    let dynamic = std::fs::read_to_string(seed.join("dynamic.yml"))
        .unwrap()
        .replace(
            "http://scadabridge-central-a:5000",
            &format!("http://scadabridge-central-a:{a_port}"),
        )
        .replace(
            "http://scadabridge-central-b:5000",
            &format!("http://scadabridge-central-b:{b_port}"),
        )
        .replace("interval: 5s", "interval: 1s");
    std::fs::write(d.join("dynamic.yml"), dynamic).unwrap();
    let path = |n: &str| d.join(n).to_string_lossy().into_owned();
    let vars = [
        format!("domain={DOMAIN}"),
        format!("tls_cert={}", path("bridge.crt")),
        format!("tls_key={}", path("bridge.key")),
        format!("dashboard_users_file={}", path("dashboard.htpasswd")),
    ];
    let args: Vec<&str> = vars.iter().flat_map(|v| ["--var", v.as_str()]).collect();
    let plan = crate::build_plan(d, "prod", "plan.json", &args);
    let (child, addrs) = crate::spawn_serving(
        bridge_runtime(&plan)
            .args([
                "--bind",
                "web=127.0.0.1:0",
                "--bind",
                "websecure=127.0.0.1:0",
                "--bind",
                "traefik=127.0.0.1:0",
            ])
            .args([
                "--resolve",
                "scadabridge-central-a=127.0.0.1",
                "--resolve",
                "scadabridge-central-b=127.0.0.1",
            ]),
        &["web", "websecure", "traefik"],
    );
    Prod {
        child: KillOnDrop(child),
        web: addrs[0],
        websecure: addrs[1],
        api: addrs[2],
        dir,
    }
}

/// `curl` against `https://DOMAIN:<port>PATH` pinned to `addr`, trusting the test certificate.
/// Returns (status, lower-cased headers, body).
pub fn curl(p: &Prod, addr: SocketAddr, path: &str, extra: &[&str]) -> (u16, String, String) {
    let out = Command::new("curl")
        .args(["-sS", "-i", "--max-time", "10"])
        .arg("--cacert")
        .arg(p.dir.path().join("bridge.crt"))
        .arg("--resolve")
        .arg(format!("{DOMAIN}:{}:127.0.0.1", addr.port()))
        .args(extra)
        .arg(format!("https://{DOMAIN}:{}{path}", addr.port()))
        .output()
        .expect("curl is installed");
    let text = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
    let (head, body) = text.split_once("\n\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, head.to_ascii_lowercase(), body.to_owned())
}
