//! DNS-01 through lego's two generic providers, configured as Traefik configures them: from the
//! process environment when an order needs them (never from the plan, so credentials stay out
//! of it), with lego's variable names, `_FILE` variants and defaults.
//!
//! - `exec`: runs `EXEC_PATH present|cleanup <fqdn> <value>` (`EXEC_MODE=RAW`:
//!   `present|cleanup -- <domain> <token> <keyAuth>`), no shell, its output logged line by line;
//!   a non-zero exit fails the authorization. Authorizations are solved one at a time.
//! - `httpreq`: POSTs `{"fqdn","value"}` (`RAW`: `{"domain","token","keyAuth"}`) to
//!   `HTTPREQ_ENDPOINT/present` and `/cleanup`, with basic auth when both credentials are set;
//!   any 2xx is success.
//!
//! Then the propagation wait (lego's `Solve`): one polling interval, then checks every interval
//! until the provider's timeout, each check after `delayBeforeChecks` (Traefik's wrapper runs
//! before every attempt).

use std::time::Duration;

use bridge_plan::{DnsChallenge, DnsProvider};
use bytes::Bytes;
use hickory_proto::rr::Name;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::io::AsyncBufReadExt as _;

use super::dns::{self, Checks};

/// lego's `dns01.DefaultPropagationTimeout`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// lego's `dns01.DefaultPollingInterval`.
const DEFAULT_INTERVAL: Duration = Duration::from_secs(2);
/// httpreq's default `HTTPREQ_HTTP_TIMEOUT`.
const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long an `exec` program may run (lego sets no bound; a hung script must not hold the
/// order forever).
const EXEC_TIMEOUT: Duration = Duration::from_secs(120);
/// How much of an httpreq error body goes into the message.
const ERROR_BODY_LIMIT: usize = 4096;

/// How the record is written and removed.
#[derive(Debug, Clone)]
enum Provider {
    Exec {
        path: String,
        raw: bool,
    },
    Httpreq {
        endpoint: url::Url,
        raw: bool,
        /// The `Authorization` header value, when both credentials are set.
        auth: Option<String>,
        timeout: Duration,
    },
}

/// A resolver's DNS-01 settings, the plan's and the environment's together.
#[derive(Debug, Clone)]
pub(crate) struct Dns01 {
    provider: Provider,
    timeout: Duration,
    interval: Duration,
    /// exec: the pause between two authorizations.
    sequence: Duration,
    follow_cnames: bool,
    resolvers: Vec<String>,
    checks: Checks,
    disable_checks: bool,
    delay: Duration,
}

/// One TXT record to present: the authorization's names and values.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    /// The identifier, without `*.` and without a trailing dot (what RAW mode passes).
    pub domain: String,
    pub token: String,
    pub key_auth: String,
    /// `_acme-challenge.<domain>.`, followed through CNAMEs.
    pub fqdn: Name,
    /// base64url(SHA-256(key authorization)).
    pub value: String,
}

/// lego's `env.GetOrFile`: the variable, else the content of the file `<NAME>_FILE` names
/// (trailing line ends removed).
fn get_or_file(env: &dyn Fn(&str) -> Option<String>, key: &str) -> Result<String, String> {
    if let Some(v) = env(key).filter(|v| !v.is_empty()) {
        return Ok(v);
    }
    let Some(file) = env(&format!("{key}_FILE")).filter(|v| !v.is_empty()) else {
        return Ok(String::new());
    };
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{key}_FILE {file}: {e}"))?;
    Ok(text.trim_end_matches(['\r', '\n']).to_owned())
}

/// lego's `env.GetOrDefaultSecond`: whole seconds, anything else the default.
fn seconds(env: &dyn Fn(&str) -> Option<String>, key: &str, default: Duration) -> Duration {
    get_or_file(env, key)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(default, Duration::from_secs)
}

impl Dns01 {
    /// The settings for `plan`, reading lego's variables through `env` (`std::env::var` in the
    /// runtime). `Err`: a required variable is missing, as lego words it.
    pub(crate) fn from_env(
        plan: &DnsChallenge,
        env: &dyn Fn(&str) -> Option<String>,
        resolv_conf: &dyn Fn() -> Option<String>,
    ) -> Result<Self, String> {
        let (provider, prefix) = match plan.provider {
            DnsProvider::Exec => {
                let path = get_or_file(env, "EXEC_PATH")?;
                if path.is_empty() {
                    return Err(
                        "exec: some credentials information are missing: EXEC_PATH".to_owned()
                    );
                }
                let raw = env("EXEC_MODE").as_deref() == Some("RAW");
                (Provider::Exec { path, raw }, "EXEC")
            }
            DnsProvider::Httpreq => {
                let endpoint = get_or_file(env, "HTTPREQ_ENDPOINT")?;
                if endpoint.is_empty() {
                    return Err(
                        "httpreq: some credentials information are missing: HTTPREQ_ENDPOINT"
                            .to_owned(),
                    );
                }
                let endpoint = url::Url::parse(&endpoint)
                    .ok()
                    .filter(|u| matches!(u.scheme(), "http" | "https") && u.has_host())
                    .ok_or_else(|| {
                        format!("httpreq: HTTPREQ_ENDPOINT `{endpoint}` is not an http(s) URL")
                    })?;
                let raw = get_or_file(env, "HTTPREQ_MODE")? == "RAW";
                let user = get_or_file(env, "HTTPREQ_USERNAME")?;
                let pass = get_or_file(env, "HTTPREQ_PASSWORD")?;
                let auth = (!user.is_empty() && !pass.is_empty()).then(|| {
                    use base64::Engine as _;
                    format!(
                        "Basic {}",
                        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"))
                    )
                });
                let timeout = seconds(env, "HTTPREQ_HTTP_TIMEOUT", DEFAULT_HTTP_TIMEOUT);
                (
                    Provider::Httpreq {
                        endpoint,
                        raw,
                        auth,
                        timeout,
                    },
                    "HTTPREQ",
                )
            }
        };
        let resolvers = if plan.resolvers.is_empty() {
            let found = resolv_conf()
                .map(|t| dns::system_resolvers(&t))
                .unwrap_or_default();
            if found.is_empty() && !(plan.disable_checks && no_cname_lookup(env)) {
                return Err(
                    "dns01: /etc/resolv.conf names no nameserver: set dnsChallenge.resolvers"
                        .to_owned(),
                );
            }
            found
        } else {
            plan.resolvers.clone()
        };
        Ok(Self {
            provider,
            timeout: seconds(
                env,
                &format!("{prefix}_PROPAGATION_TIMEOUT"),
                DEFAULT_TIMEOUT,
            ),
            interval: seconds(env, &format!("{prefix}_POLLING_INTERVAL"), DEFAULT_INTERVAL),
            sequence: seconds(env, "EXEC_SEQUENCE_INTERVAL", DEFAULT_TIMEOUT),
            follow_cnames: !no_cname_lookup(env),
            resolvers,
            checks: Checks {
                recursive: plan.check_recursive,
                authoritative: plan.check_authoritative,
            },
            disable_checks: plan.disable_checks,
            delay: Duration::from_millis(plan.delay_before_checks_ms),
        })
    }

    /// exec solves one authorization at a time (present, wait, validate, clean up); httpreq
    /// presents them all first.
    pub(crate) fn sequential(&self) -> bool {
        matches!(self.provider, Provider::Exec { .. })
    }

    /// exec's pause between two authorizations (`EXEC_SEQUENCE_INTERVAL`).
    pub(crate) fn sequence_interval(&self) -> Duration {
        self.sequence
    }

    /// The record answering an authorization of `domain` (no `*.`).
    pub(crate) async fn record(
        &self,
        domain: &str,
        token: &str,
        key_auth: &str,
        value: String,
    ) -> Result<Record, String> {
        let fqdn = Name::from_ascii(format!("_acme-challenge.{domain}."))
            .map_err(|e| format!("dns01: `{domain}`: {e}"))?;
        let fqdn = if self.follow_cnames {
            dns::effective_fqdn(&self.resolvers, &fqdn).await
        } else {
            fqdn
        };
        Ok(Record {
            domain: domain.to_owned(),
            token: token.to_owned(),
            key_auth: key_auth.to_owned(),
            fqdn,
            value,
        })
    }

    /// Writes the record.
    pub(crate) async fn present(&self, r: &Record) -> Result<(), String> {
        self.act("present", r)
            .await
            .map_err(|e| format!("dns01: error presenting token ({}): {e}", r.domain))
    }

    /// Removes the record (its value only).
    pub(crate) async fn cleanup(&self, r: &Record) -> Result<(), String> {
        self.act("cleanup", r)
            .await
            .map_err(|e| format!("dns01: error cleaning up {}: {e}", r.domain))
    }

    async fn act(&self, verb: &str, r: &Record) -> Result<(), String> {
        match &self.provider {
            Provider::Exec { path, raw } => {
                let fqdn = r.fqdn.to_ascii();
                let args: Vec<&str> = if *raw {
                    vec![verb, "--", &r.domain, &r.token, &r.key_auth]
                } else {
                    vec![verb, &fqdn, &r.value]
                };
                run(path, &args).await
            }
            Provider::Httpreq {
                endpoint,
                raw,
                auth,
                timeout,
            } => {
                let body = if *raw {
                    serde_json::json!({"domain": r.domain, "token": r.token, "keyAuth": r.key_auth})
                } else {
                    serde_json::json!({"fqdn": r.fqdn.to_ascii(), "value": r.value})
                };
                let mut url = endpoint.clone();
                let path = format!("{}/{verb}", url.path().trim_end_matches('/'));
                url.set_path(&path);
                post(&url, body, auth.as_deref(), *timeout).await
            }
        }
    }

    /// Waits until the record has propagated (or the checks are off), then returns; `Err`
    /// after the provider's timeout with the last check's failure.
    pub(crate) async fn wait_propagation(&self, r: &Record) -> Result<(), String> {
        tracing::info!(target: "acme", "dns01: waiting for record propagation of {}", r.fqdn);
        tokio::time::sleep(self.interval).await;
        let deadline = tokio::time::Instant::now() + self.timeout;
        loop {
            tokio::time::sleep(self.delay).await;
            if self.disable_checks {
                return Ok(());
            }
            let last = match dns::check_propagation(&self.resolvers, &r.fqdn, &r.value, self.checks)
                .await
            {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            tokio::time::sleep(self.interval).await;
            if tokio::time::Instant::now() >= deadline {
                return Err(format!(
                    "dns01: time limit exceeded for {}: last error: {last}",
                    r.domain
                ));
            }
        }
    }
}

/// `LEGO_DISABLE_CNAME_SUPPORT` as Go's `strconv.ParseBool` reads it.
fn no_cname_lookup(env: &dyn Fn(&str) -> Option<String>) -> bool {
    matches!(
        env("LEGO_DISABLE_CNAME_SUPPORT").as_deref(),
        Some("1" | "t" | "T" | "true" | "TRUE" | "True")
    )
}

/// Runs the exec program; its output (stdout and stderr) logged line by line.
async fn run(path: &str, args: &[&str]) -> Result<(), String> {
    let mut child = tokio::process::Command::new(path)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("exec: start command: {e}"))?;
    let log = |pipe: Option<Box<dyn tokio::io::AsyncRead + Unpin + Send>>| async move {
        let Some(pipe) = pipe else { return };
        let mut lines = tokio::io::BufReader::new(pipe).lines();
        while let Ok(Some(l)) = lines.next_line().await {
            tracing::info!(target: "acme", "exec: {l}");
        }
    };
    let out = child
        .stdout
        .take()
        .map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Unpin + Send>);
    let err = child
        .stderr
        .take()
        .map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Unpin + Send>);
    // The output is logged by tasks of its own: a program that leaves a background process
    // holding its pipes is done when it exits, not when the pipes close.
    let logs = (tokio::spawn(log(out)), tokio::spawn(log(err)));
    let waited = tokio::time::timeout(EXEC_TIMEOUT, child.wait()).await;
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = logs.0.await;
        let _ = logs.1.await;
    })
    .await;
    match waited {
        Err(_) => {
            let _ = child.kill().await;
            Err(format!(
                "exec: {path} did not finish within {}s",
                EXEC_TIMEOUT.as_secs()
            ))
        }
        Ok(Err(e)) => Err(format!("exec: wait command: {e}")),
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => Err(match status.code() {
            Some(c) => format!("exec: wait command: exit status {c}"),
            None => format!("exec: wait command: {status}"),
        }),
    }
}

/// The httpreq POST: JSON, one line, any 2xx is success.
async fn post(
    url: &url::Url,
    body: serde_json::Value,
    auth: Option<&str>,
    timeout: Duration,
) -> Result<(), String> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(Some(timeout));
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build(
        super::client::Connector::new(http, super::client::system_tls(), None),
    );
    let mut line = body.to_string();
    line.push('\n');
    let mut req = http::Request::post(url.as_str())
        .header(http::header::ACCEPT, "application/json")
        .header(http::header::CONTENT_TYPE, "application/json");
    if let Some(a) = auth {
        req = req.header(http::header::AUTHORIZATION, a);
    }
    let req = req
        .body(Full::new(Bytes::from(line)))
        .map_err(|e| format!("httpreq: {e}"))?;
    let exchange = async {
        let rsp = client
            .request(req)
            .await
            .map_err(|e| format!("httpreq: {url}: {e}"))?;
        let status = rsp.status();
        if status.is_success() {
            return Ok(());
        }
        let body = http_body_util::Limited::new(rsp.into_body(), ERROR_BODY_LIMIT)
            .collect()
            .await
            .map(|b| String::from_utf8_lossy(&b.to_bytes()).trim().to_owned())
            .unwrap_or_default();
        Err(format!(
            "httpreq: unexpected status code: [status code: {}] body: {body}",
            status.as_u16()
        ))
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| format!("httpreq: {url}: no answer within {}s", timeout.as_secs()))?
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn plan(provider: DnsProvider) -> DnsChallenge {
        DnsChallenge {
            provider,
            resolvers: vec!["127.0.0.1:1".into()],
            check_recursive: true,
            check_authoritative: false,
            disable_checks: false,
            delay_before_checks_ms: 0,
        }
    }

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |k| m.get(k).cloned()
    }

    fn no_resolv() -> Option<String> {
        None
    }

    #[test]
    fn lego_s_variables_defaults_and_file_variants() {
        let e = Dns01::from_env(&plan(DnsProvider::Exec), &env(&[]), &no_resolv).unwrap_err();
        assert_eq!(
            e,
            "exec: some credentials information are missing: EXEC_PATH"
        );
        let d = Dns01::from_env(
            &plan(DnsProvider::Exec),
            &env(&[("EXEC_PATH", "/bin/dns"), ("EXEC_POLLING_INTERVAL", "x")]),
            &no_resolv,
        )
        .unwrap();
        assert_eq!(
            (d.timeout, d.interval, d.sequence),
            (DEFAULT_TIMEOUT, DEFAULT_INTERVAL, DEFAULT_TIMEOUT)
        );
        assert!(d.sequential() && d.follow_cnames);
        let dir = tempfile::tempdir().unwrap();
        let pass = dir.path().join("pass");
        std::fs::write(&pass, "s3cret\r\n").unwrap();
        let pass = pass.to_string_lossy().into_owned();
        let d = Dns01::from_env(
            &plan(DnsProvider::Httpreq),
            &env(&[
                ("HTTPREQ_ENDPOINT", "http://127.0.0.1:9/api/"),
                ("HTTPREQ_USERNAME", "lego"),
                ("HTTPREQ_PASSWORD_FILE", &pass),
                ("HTTPREQ_PROPAGATION_TIMEOUT", "5"),
                ("HTTPREQ_POLLING_INTERVAL", "1"),
                ("LEGO_DISABLE_CNAME_SUPPORT", "true"),
            ]),
            &no_resolv,
        )
        .unwrap();
        assert_eq!(
            (d.timeout, d.interval),
            (Duration::from_secs(5), Duration::from_secs(1))
        );
        assert!(!d.sequential() && !d.follow_cnames);
        let Provider::Httpreq { auth, .. } = &d.provider else {
            panic!()
        };
        // base64("lego:s3cret")
        assert_eq!(auth.as_deref(), Some("Basic bGVnbzpzM2NyZXQ="));
        let e = Dns01::from_env(
            &plan(DnsProvider::Httpreq),
            &env(&[("HTTPREQ_ENDPOINT", "ftp://x")]),
            &no_resolv,
        )
        .unwrap_err();
        assert!(e.contains("not an http(s) URL"), "{e}");
    }

    #[test]
    fn without_resolvers_the_system_s_are_used_or_the_order_is_refused() {
        let mut p = plan(DnsProvider::Exec);
        p.resolvers.clear();
        let vars = env(&[("EXEC_PATH", "/bin/dns")]);
        let d = Dns01::from_env(&p, &vars, &|| Some("nameserver 192.0.2.7\n".into())).unwrap();
        assert_eq!(d.resolvers, ["192.0.2.7:53"]);
        let e = Dns01::from_env(&p, &vars, &|| Some("# none\n".into())).unwrap_err();
        assert!(e.contains("set dnsChallenge.resolvers"), "{e}");
    }

    #[tokio::test]
    async fn exec_gets_lego_s_arguments_in_both_modes_and_its_exit_status_counts() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("argv");
        let script = dir.path().join("dns.sh");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\necho \"$@\" >> {}\necho to-stderr >&2\n[ \"$2\" != fail.test. ]\n",
                log.display()
            ),
        )
        .unwrap();
        let mut perm = std::fs::metadata(&script).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
        std::fs::set_permissions(&script, perm).unwrap();
        let path = script.to_string_lossy().into_owned();
        let record = Record {
            domain: "example.test".into(),
            token: "-tok".into(),
            key_auth: "-tok.thumb".into(),
            fqdn: Name::from_ascii("_acme-challenge.example.test.").unwrap(),
            value: "digest".into(),
        };
        let mut p = plan(DnsProvider::Exec);
        p.disable_checks = true;
        let d = Dns01::from_env(&p, &env(&[("EXEC_PATH", &path)]), &no_resolv).unwrap();
        d.present(&record).await.unwrap();
        d.cleanup(&record).await.unwrap();
        let raw = Dns01::from_env(
            &p,
            &env(&[("EXEC_PATH", &path), ("EXEC_MODE", "RAW")]),
            &no_resolv,
        )
        .unwrap();
        raw.present(&record).await.unwrap();
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "present _acme-challenge.example.test. digest\n\
             cleanup _acme-challenge.example.test. digest\n\
             present -- example.test -tok -tok.thumb\n"
        );
        let mut failing = record.clone();
        failing.fqdn = Name::from_ascii("fail.test.").unwrap();
        let e = d.present(&failing).await.unwrap_err();
        assert_eq!(
            e,
            "dns01: error presenting token (example.test): exec: wait command: exit status 1"
        );
        let missing =
            Dns01::from_env(&p, &env(&[("EXEC_PATH", "/nonexistent/dns")]), &no_resolv).unwrap();
        let e = missing.present(&record).await.unwrap_err();
        assert!(e.contains("exec: start command"), "{e}");
    }

    #[tokio::test(start_paused = true)]
    async fn the_wait_is_one_interval_then_the_delay_before_each_check_until_the_timeout() {
        let mut p = plan(DnsProvider::Exec);
        p.delay_before_checks_ms = 30_000;
        p.disable_checks = true;
        let vars = env(&[("EXEC_PATH", "/bin/true")]);
        let d = Dns01::from_env(&p, &vars, &no_resolv).unwrap();
        let r = Record {
            domain: "x.test".into(),
            token: String::new(),
            key_auth: String::new(),
            fqdn: Name::from_ascii("_acme-challenge.x.test.").unwrap(),
            value: "v".into(),
        };
        let t0 = tokio::time::Instant::now();
        d.wait_propagation(&r).await.unwrap();
        assert_eq!(
            t0.elapsed(),
            Duration::from_secs(32),
            "interval 2s + delay 30s"
        );
    }
}
