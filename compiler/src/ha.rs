//! `bridgectl keepalived`: the keepalived configuration of one appliance of a pair.
//!
//! Two appliances serve the same plan; keepalived (VRRP, unicast) moves one virtual address between
//! them. The configuration is the template `packaging/ha/keepalived.conf.j2`, filled from a few
//! documented inputs that are checked here first, so a typo fails on the operator's desk rather
//! than as a keepalived that silently never takes the address. Only the inputs vary; the VRRP
//! settings (BACKUP + nopreempt, advert, track script timing) are the ones the pair's tests and
//! the benchmark in `bench/ha.sh` measured.

use std::net::IpAddr;

/// The track script's timing: a check every second, two failures in a row make the appliance
/// give up the address (≤ 2 s after its runtime dies), two successes bring it back as BACKUP.
const INTERVAL_S: u8 = 1;
const TIMEOUT_S: u8 = 2;
const FALL: u8 = 2;
const RISE: u8 = 2;

/// What the operator decides per appliance.
#[derive(Debug, Clone)]
pub struct Pair {
    /// keepalived's router_id (a name for the logs): `bridge-a`, the host name...
    pub name: String,
    /// The interface that carries the virtual address and the VRRP adverts.
    pub interface: String,
    /// The virtual address with its prefix, `10.0.0.100/24`.
    pub vip: String,
    /// This appliance's own address on `interface` (the adverts' source).
    pub self_addr: String,
    /// The other appliance's address.
    pub peer: String,
    /// 1..=254: the higher one takes the address first; give the two appliances different values.
    pub priority: u16,
    /// VRRP's virtual_router_id, 1..=255, the same on both and unique on the network segment.
    pub router_id: u16,
    /// Seconds between adverts; the backup takes over about 3 adverts after the master vanishes.
    pub advert: u16,
    /// This appliance's ping endpoint.
    pub ping_url: String,
    /// The bridge-runtime binary that runs the check.
    pub runtime: String,
    /// The program keepalived calls on every transition, with `INSTANCE bridge STATE PRIORITY`.
    pub notify: String,
    /// The user the check and the notify hook run as.
    pub script_user: String,
}

/// An input keepalived would reject or misread.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("--{option} {value:?}: {why}")]
pub struct HaError {
    /// The command-line option.
    pub option: &'static str,
    /// What was given.
    pub value: String,
    /// What is wrong with it.
    pub why: String,
}

fn invalid(option: &'static str, value: &str, why: impl Into<String>) -> HaError {
    HaError {
        option,
        value: value.to_owned(),
        why: why.into(),
    }
}

/// A word keepalived's parser takes as one token and a shell-free command line as one argument.
fn word(option: &'static str, value: &str) -> Result<(), HaError> {
    if value.is_empty() {
        return Err(invalid(option, value, "must not be empty"));
    }
    if let Some(c) = value.chars().find(|c| {
        c.is_whitespace()
            || c.is_control()
            || matches!(c, '"' | '\'' | '#' | '!' | '{' | '}' | '\\')
    }) {
        return Err(invalid(option, value, format!("must not contain {c:?}")));
    }
    Ok(())
}

fn address(option: &'static str, value: &str) -> Result<IpAddr, HaError> {
    value
        .parse::<IpAddr>()
        .map_err(|_| invalid(option, value, "not an IP address"))
}

/// Checks the inputs and renders the configuration.
pub fn render(p: &Pair) -> Result<String, HaError> {
    word("name", &p.name)?;
    word("interface", &p.interface)?;
    if p.interface.len() > 15 || p.interface.contains('/') {
        return Err(invalid(
            "interface",
            &p.interface,
            "not an interface name (at most 15 characters, no '/')",
        ));
    }
    let (vip_addr, prefix) = p
        .vip
        .split_once('/')
        .ok_or_else(|| invalid("vip", &p.vip, "needs a prefix length, as in 10.0.0.100/24"))?;
    let vip = address("vip", vip_addr).map_err(|mut e| {
        e.value.clone_from(&p.vip);
        e
    })?;
    let max = if vip.is_ipv4() { 32 } else { 128 };
    match prefix.parse::<u8>() {
        Ok(n) if n <= max => {}
        _ => {
            return Err(invalid(
                "vip",
                &p.vip,
                format!("the prefix length must be 0..={max}"),
            ));
        }
    }
    let me = address("self", &p.self_addr)?;
    let peer = address("peer", &p.peer)?;
    for (option, value, a) in [("self", &p.self_addr, me), ("peer", &p.peer, peer)] {
        if a.is_ipv4() != vip.is_ipv4() {
            return Err(invalid(
                option,
                value,
                "must be of the virtual address's family (VRRP runs one instance per family)",
            ));
        }
        if a == vip {
            return Err(invalid(
                option,
                value,
                "is the virtual address; give the appliance's own address",
            ));
        }
    }
    if me == peer {
        return Err(invalid(
            "peer",
            &p.peer,
            "is this appliance's own address (--self)",
        ));
    }
    if !(1..=254).contains(&p.priority) {
        return Err(invalid(
            "priority",
            &p.priority.to_string(),
            "must be 1..=254 (255 is reserved for an address owner)",
        ));
    }
    if !(1..=255).contains(&p.router_id) {
        return Err(invalid(
            "router-id",
            &p.router_id.to_string(),
            "must be 1..=255",
        ));
    }
    if !(1..=255).contains(&p.advert) {
        return Err(invalid(
            "advert",
            &p.advert.to_string(),
            "must be 1..=255 seconds",
        ));
    }
    word("ping-url", &p.ping_url)?;
    if !(p.ping_url.starts_with("http://") || p.ping_url.starts_with("https://")) {
        return Err(invalid(
            "ping-url",
            &p.ping_url,
            "must be an http:// or https:// URL",
        ));
    }
    word("runtime", &p.runtime)?;
    if !p.runtime.starts_with('/') {
        return Err(invalid(
            "runtime",
            &p.runtime,
            "must be an absolute path (keepalived's script security runs no PATH lookups)",
        ));
    }
    let notify_program = p.notify.split(' ').next().unwrap_or_default();
    if !notify_program.starts_with('/') {
        return Err(invalid(
            "notify",
            &p.notify,
            "must start with an absolute path",
        ));
    }
    for part in p.notify.split(' ').filter(|s| !s.is_empty()) {
        word("notify", part).map_err(|mut e| {
            e.value.clone_from(&p.notify);
            e
        })?;
    }
    word("script-user", &p.script_user)?;

    let check = format!("{} healthcheck --url {} --timeout 1", p.runtime, p.ping_url);
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    let template = include_str!("../../packaging/ha/keepalived.conf.j2");
    let ctx = minijinja::context! {
        name => &p.name,
        interface => &p.interface,
        vip => &p.vip,
        self_addr => &p.self_addr,
        peer => &p.peer,
        priority => p.priority,
        router_id => p.router_id,
        advert => p.advert,
        check => check,
        notify => p.notify.trim(),
        script_user => &p.script_user,
        interval => INTERVAL_S,
        timeout => TIMEOUT_S,
        fall => FALL,
        rise => RISE,
    };
    // The template is this crate's own and its variables are all set above: a failure here is a
    // bug in the template, reported rather than panicking.
    let mut text = env
        .render_str(template, ctx)
        .map_err(|e| invalid("template", "packaging/ha/keepalived.conf.j2", e.to_string()))?;
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> Pair {
        Pair {
            name: "bridge-a".into(),
            interface: "eth0".into(),
            vip: "10.0.0.100/24".into(),
            self_addr: "10.0.0.1".into(),
            peer: "10.0.0.2".into(),
            priority: 150,
            router_id: 51,
            advert: 1,
            ping_url: "http://127.0.0.1:8080/ping".into(),
            runtime: "/usr/bin/bridge-runtime".into(),
            notify: "/usr/bin/logger -t bridge-ha".into(),
            script_user: "root".into(),
        }
    }

    #[test]
    fn renders_the_inputs_into_the_template() {
        let text = render(&pair()).unwrap();
        for line in [
            "  router_id bridge-a",
            "  state BACKUP",
            "  nopreempt",
            "  interface eth0",
            "  virtual_router_id 51",
            "  priority 150",
            "  advert_int 1",
            "  unicast_src_ip 10.0.0.1",
            "    10.0.0.2",
            "    10.0.0.100/24 dev eth0",
            "  script \"/usr/bin/bridge-runtime healthcheck --url http://127.0.0.1:8080/ping --timeout 1\"",
            "  fall 2",
            "  notify \"/usr/bin/logger -t bridge-ha\"",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
        assert!(!text.contains("{{"), "{text}");
    }

    #[test]
    fn refuses_what_keepalived_would_misread() {
        type Edit = fn(&mut Pair);
        let cases: &[(Edit, &str)] = &[
            (
                |p| p.interface = "eth 0".into(),
                "--interface \"eth 0\": must not contain ' '",
            ),
            (
                |p| p.interface = "a-very-long-interface".into(),
                "at most 15 characters",
            ),
            (|p| p.vip = "10.0.0.100".into(), "needs a prefix length"),
            (
                |p| p.vip = "10.0.0.300/24".into(),
                "--vip \"10.0.0.300/24\": not an IP address",
            ),
            (
                |p| p.vip = "10.0.0.100/33".into(),
                "prefix length must be 0..=32",
            ),
            (
                |p| p.self_addr = "fe80::1".into(),
                "virtual address's family",
            ),
            (|p| p.peer = "10.0.0.100".into(), "is the virtual address"),
            (|p| p.peer = "10.0.0.1".into(), "own address (--self)"),
            (|p| p.priority = 255, "reserved"),
            (|p| p.priority = 0, "1..=254"),
            (|p| p.router_id = 256, "1..=255"),
            (|p| p.advert = 0, "seconds"),
            (
                |p| p.ping_url = "127.0.0.1:8080/ping".into(),
                "http:// or https://",
            ),
            (
                |p| p.ping_url = "http://x/\"; rm".into(),
                "must not contain",
            ),
            (|p| p.runtime = "bridge-runtime".into(), "absolute path"),
            (|p| p.notify = "logger".into(), "absolute path"),
            (
                |p| p.notify = "/usr/bin/logger -t {x}".into(),
                "must not contain '{'",
            ),
        ];
        for (edit, want) in cases {
            let mut p = pair();
            edit(&mut p);
            let e = render(&p).unwrap_err().to_string();
            assert!(e.contains(want), "{e:?} should say {want:?}");
        }
    }

    #[test]
    fn ipv6_pairs_render() {
        let mut p = pair();
        p.vip = "fd00::100/64".into();
        p.self_addr = "fd00::1".into();
        p.peer = "fd00::2".into();
        let text = render(&p).unwrap();
        assert!(text.contains("    fd00::100/64 dev eth0"), "{text}");
    }
}
