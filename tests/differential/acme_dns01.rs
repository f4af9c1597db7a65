//! ACME DNS-01 with lego's `exec` provider, against one pebble: what the program is given and
//! in which order, by Traefik and by bridge-runtime (docs/traefik-behaviour/dns01.md §2): the
//! default arguments (`present <fqdn> <value>`) with a wildcard and its base name (two
//! authorizations, one record name: solved one at a time), and `EXEC_MODE=RAW`
//! (`present -- <domain> <token> <keyAuth>`). Values differ per order, so they are compared by
//! shape and by where they repeat.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bridge_tests::pebble::{Pebble, PebbleOptions};
use bridge_tests::process::{KillOnDrop, bridge_runtime, find_binary, spawn_serving};
use bridge_tests::traefik::{free_port, oracle};

/// The hook: logs its arguments, then writes or clears the TXT record in challtestsrv (in RAW
/// mode it computes the value from the key authorization, as a RAW user's program must).
fn hook(dir: &Path, pebble: &Pebble) -> (PathBuf, PathBuf) {
    let log = dir.join("argv");
    let script = dir.join("hook.sh");
    let api = pebble.challtestsrv_url();
    std::fs::write(
        &script,
        format!(
            r#"#!/bin/sh
echo "$@" >> {log}
if [ "$2" = "--" ]; then
  host="_acme-challenge.$3."
  value=$(printf %s "$5" | openssl dgst -sha256 -binary | openssl base64 -A | tr '+/' '-_' | tr -d '=')
else
  host="$2"; value="$3"
fi
case "$1" in
  present) curl -sf -X POST -d "{{\"host\":\"$host\",\"value\":\"$value\"}}" {api}/set-txt ;;
  cleanup) curl -sf -X POST -d "{{\"host\":\"$host\"}}" {api}/clear-txt ;;
esac
"#,
            log = log.display()
        ),
    )
    .unwrap();
    let mut perm = std::fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&script, perm).unwrap();
    (script, log)
}

/// Static and dynamic files for one server of the comparison (`dynamic` is the path the static
/// file names).
fn files(dir: &Path, pebble: &Pebble, port: u16, domains: &str, dynamic: &str) {
    std::fs::write(
        dir.join("traefik.yml"),
        format!(
            "entryPoints:\n  websecure:\n    address: \"127.0.0.1:{port}\"\n\
             certificatesResolvers:\n  le:\n    acme:\n      email: ops@acme.test\n      storage: {storage}\n      caServer: {ca}\n      caCertificates: [\"{cafile}\"]\n      keyType: EC256\n\
             \x20     dnsChallenge:\n        provider: exec\n        resolvers: [\"{dns}\"]\n        propagation:\n          requireAllRNS: true\n          disableANSChecks: true\n\
             providers:\n  file:\n    filename: {dynamic}\n",
            storage = dir.join("acme.json").display(),
            ca = pebble.directory_url(),
            cafile = pebble.ca_file().display(),
            dns = pebble.dns_addr(),
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("dynamic.yml"),
        format!(
            "http:\n  routers:\n    hmi:\n      rule: Host(`dns.acme.test`)\n      service: hmi\n      tls:\n        certResolver: le\n        domains:\n{domains}\
             \x20 services:\n    hmi:\n      loadBalancer:\n        servers:\n          - url: http://127.0.0.1:9\n"
        ),
    )
    .unwrap();
}

/// Waits until the hook has logged `cleanups` cleanups (at most 60 s), then a moment for any
/// call that would come after; the calls, one per line.
fn calls(log: &Path, cleanups: usize, who: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.lines().filter(|l| l.starts_with("cleanup")).count() >= cleanups {
            std::thread::sleep(Duration::from_millis(500));
            let text = std::fs::read_to_string(log).unwrap_or_default();
            return text.lines().map(str::to_owned).collect();
        }
        assert!(
            Instant::now() < deadline,
            "{who}: the hook saw {text:?} within 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The calls with every value replaced by `<vN>` (N: the order the values first appear in),
/// after checking its shape: 43 base64url characters, or a token and `<token>.<thumbprint>`.
fn shapes(calls: &[String]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    let name = |v: &str, seen: &mut Vec<String>| {
        let i = seen.iter().position(|s| s == v).unwrap_or_else(|| {
            seen.push(v.to_owned());
            seen.len() - 1
        });
        format!("<v{}>", i + 1)
    };
    calls
        .iter()
        .map(|line| {
            let w: Vec<&str> = line.split(' ').collect();
            match w.as_slice() {
                [verb, "--", domain, token, key_auth] => {
                    assert!(key_auth.starts_with(&format!("{token}.")), "{line}");
                    format!(
                        "{verb} -- {domain} {} <token>.<thumbprint>",
                        name(token, &mut seen)
                    )
                }
                [verb, fqdn, value] => {
                    assert_eq!(value.len(), 43, "{line}");
                    assert!(
                        value
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
                        "{line}"
                    );
                    format!("{verb} {fqdn} {}", name(value, &mut seen))
                }
                _ => panic!("unexpected arguments: {line}"),
            }
        })
        .collect()
}

/// Runs one server over the files in `dir` with `env`, returns the hook's calls.
fn run(
    dir: &Path,
    traefik: Option<&Path>,
    pebble: &Pebble,
    env: &[(&str, &str)],
    cleanups: usize,
) -> Vec<String> {
    let (script, log) = hook(dir, pebble);
    let mut env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    env.push(("EXEC_PATH".into(), script.to_string_lossy().into_owned()));
    let who = if traefik.is_some() {
        "Traefik"
    } else {
        "bridge-runtime"
    };
    let _server = match traefik {
        Some(bin) => KillOnDrop(
            Command::new(bin)
                .arg(format!(
                    "--configFile={}",
                    dir.join("traefik.yml").display()
                ))
                .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        ),
        None => {
            let plan = bridge_tests::build_plan(dir, "dev", "plan.json", &[]);
            let mut cmd = bridge_runtime(&plan);
            cmd.envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            KillOnDrop(spawn_serving(&mut cmd, &["websecure"]).0)
        }
    };
    calls(&log, cleanups, who)
}

fn compare(domains: &str, env: &[(&str, &str)], cleanups: usize, want: &[&str]) {
    if find_binary("curl").is_none() || find_binary("openssl").is_none() {
        eprintln!("curl or openssl is not installed; skipping the DNS-01 comparison");
        return;
    }
    let traefik = oracle("acme_dns01");
    let Some(pebble) = Pebble::start(PebbleOptions {
        http_port: free_port(),
        tls_port: free_port(),
        validity_secs: None,
        eab: None,
        ocsp_responder: None,
    }) else {
        return;
    };
    let env: Vec<(&str, &str)> = [
        ("EXEC_POLLING_INTERVAL", "1"),
        ("EXEC_PROPAGATION_TIMEOUT", "20"),
        ("EXEC_SEQUENCE_INTERVAL", "0"),
    ]
    .into_iter()
    .chain(env.iter().copied())
    .collect();
    let root = tempfile::tempdir().unwrap();
    let bdir = root.path().join("bridge");
    std::fs::create_dir_all(&bdir).unwrap();
    files(
        &bdir,
        &pebble,
        free_port(),
        domains,
        "/etc/traefik/dynamic.yml",
    );
    let ours = shapes(&run(&bdir, None, &pebble, &env, cleanups));
    assert_eq!(ours, want, "bridge-runtime");
    if let Some(bin) = traefik {
        let tdir = root.path().join("traefik");
        std::fs::create_dir_all(&tdir).unwrap();
        let dynamic = tdir.join("dynamic.yml").to_string_lossy().into_owned();
        files(&tdir, &pebble, free_port(), domains, &dynamic);
        let theirs = shapes(&run(&tdir, Some(&bin), &pebble, &env, cleanups));
        eprintln!("Traefik ({}) gave the hook: {theirs:#?}", bin.display());
        assert_eq!(
            ours, theirs,
            "bridge-runtime and Traefik give the hook the same calls"
        );
    }
}

#[test]
fn exec_gets_traefik_s_arguments_one_authorization_at_a_time() {
    compare(
        "          - main: \"*.dns.acme.test\"\n            sans: [dns.acme.test]\n",
        &[],
        2,
        &[
            "present _acme-challenge.dns.acme.test. <v1>",
            "cleanup _acme-challenge.dns.acme.test. <v1>",
            "present _acme-challenge.dns.acme.test. <v2>",
            "cleanup _acme-challenge.dns.acme.test. <v2>",
        ],
    );
}

#[test]
fn exec_raw_mode_gets_the_domain_token_and_key_authorization() {
    compare(
        "          - main: dns.acme.test\n",
        &[("EXEC_MODE", "RAW")],
        1,
        &[
            "present -- dns.acme.test <v1> <token>.<thumbprint>",
            "cleanup -- dns.acme.test <v1> <token>.<thumbprint>",
        ],
    );
}
