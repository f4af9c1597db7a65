//! Property: the plan hash depends on what the configuration means, not on how it is laid out.
//! Mapping keys in any order, routers/services/middlewares spread over any number of files with any
//! names, in a provider directory — the same routing gives the same hash. And building twice gives
//! identical bytes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a test failure"
)]

use std::fs;
use std::path::Path;

use bridgectl::check::{CheckOptions, check};
use bridgectl::profile::ProfileSelector;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn static_config() -> Value {
    json!({
        "entryPoints": {"web": {"address": ":80"}, "admin": {"address": ":9000"}},
        "api": {"dashboard": true, "insecure": true},
        "providers": {"file": {"directory": "/etc/traefik/conf.d"}}
    })
}

/// Sections of the dynamic configuration as (kind, name, value).
fn entities() -> Vec<(&'static str, String, Value)> {
    let mut out = Vec::new();
    for i in 0..6 {
        out.push((
            "routers",
            format!("r{i}"),
            json!({"rule": format!("Host(`app{i}.example.com`) && PathPrefix(`/api`)"), "service": format!("s{}", i % 3),
                   "entryPoints": ["web"], "middlewares": ["strip", "secure"], "priority": i * 10}),
        ));
    }
    for i in 0..3 {
        out.push((
            "services",
            format!("s{i}"),
            json!({"loadBalancer": {"servers": [{"url": format!("http://10.0.0.{i}:80")}, {"url": format!("http://10.0.1.{i}:80"), "weight": 2}],
                   "healthCheck": {"path": "/health/active", "interval": "5s", "timeout": "3s"}}}),
        ));
    }
    out.push((
        "middlewares",
        "strip".into(),
        json!({"stripPrefix": {"prefixes": ["/api"]}}),
    ));
    out.push((
        "middlewares",
        "secure".into(),
        json!({"chain": {"middlewares": ["hsts"]}}),
    ));
    out.push((
        "middlewares",
        "hsts".into(),
        json!({"headers": {"stsSeconds": 300, "frameDeny": true}}),
    ));
    out
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Rebuilds every object with its keys in a random order (serde_json keeps insertion order here).
fn shuffle(v: &Value, rng: &mut Rng) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            for i in (1..keys.len()).rev() {
                keys.swap(i, rng.below(i + 1));
            }
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), shuffle(&m[k], rng)))
                    .collect::<Map<_, _>>(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(|i| shuffle(i, rng)).collect()),
        other => other.clone(),
    }
}

/// Writes the configuration with entities spread over `files` files; JSON is valid YAML.
fn write_config(dir: &Path, files: usize, rng: &mut Rng) {
    fs::write(
        dir.join("traefik.yml"),
        serde_json::to_string_pretty(&shuffle(&static_config(), rng)).unwrap(),
    )
    .unwrap();
    let conf = dir.join("conf.d");
    fs::create_dir_all(&conf).unwrap();
    let mut docs: Vec<Map<String, Value>> = vec![Map::new(); files];
    let mut ents = entities();
    for i in (1..ents.len()).rev() {
        ents.swap(i, rng.below(i + 1));
    }
    for (kind, name, value) in ents {
        let doc = &mut docs[rng.below(files)];
        let http = doc
            .entry("http")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .unwrap();
        http.entry(kind)
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .unwrap()
            .insert(name, value);
    }
    for (i, doc) in docs.into_iter().enumerate() {
        let name = format!("{:x}-{i}.yml", rng.next() % 0xffff);
        let text = serde_json::to_string_pretty(&shuffle(&Value::Object(doc), rng)).unwrap();
        fs::write(conf.join(name), text).unwrap();
    }
}

fn plan_hash_and_text(dir: &Path) -> (String, String) {
    let report = check(&CheckOptions {
        dir: dir.to_path_buf(),
        profile: Some(ProfileSelector::parse("dev")),
        ..CheckOptions::default()
    })
    .unwrap();
    assert!(report.ok(), "{:?}", report.diagnostics);
    let plan = bridgectl::resolve::build_plan(&report, "dev").unwrap();
    let text = plan.to_file_string().unwrap();
    (plan.hash, text)
}

fn baseline() -> String {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), 1, &mut Rng(0x9e37_79b9_7f4a_7c15));
    plan_hash_and_text(dir.path()).0
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn layout_never_changes_the_hash(seed in 1u64.., files in 1usize..5) {
        let dir = tempfile::tempdir().unwrap();
        write_config(dir.path(), files, &mut Rng(seed));
        let (hash, _) = plan_hash_and_text(dir.path());
        prop_assert_eq!(hash, baseline());
    }
}

#[test]
fn building_twice_gives_identical_bytes_and_meaning_changes_the_hash() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), 3, &mut Rng(42));
    let (h1, t1) = plan_hash_and_text(dir.path());
    let (h2, t2) = plan_hash_and_text(dir.path());
    assert_eq!((h1.clone(), t1), (h2, t2));
    // A real change (a server URL) changes the hash.
    for entry in fs::read_dir(dir.path().join("conf.d")).unwrap() {
        let p = entry.unwrap().path();
        let t = fs::read_to_string(&p)
            .unwrap()
            .replace("10.0.1.2:80", "10.0.1.2:81");
        fs::write(&p, t).unwrap();
    }
    assert_ne!(plan_hash_and_text(dir.path()).0, h1);
}
