//! The DNS side of DNS-01: following the record's name through CNAMEs and checking that the TXT
//! value has propagated before the CA is told to look, with lego's rules (what Traefik runs):
//!
//! - every query carries EDNS0 (4096-byte buffer), goes over UDP and again over TCP when the
//!   answer is truncated, and gets 10 s per exchange;
//! - the recursive resolvers are asked in order and the first answer with records wins;
//! - the recursive check asks *every* resolver, the authoritative check every nameserver of the
//!   record's zone on port 53 without recursion; each must hold the value.
//!
//! hickory-proto encodes and decodes the messages (no resolver of its own: the queries go out on
//! tokio sockets here), so no DNS wire format is parsed by hand.

use std::net::SocketAddr;
use std::time::Duration;

use hickory_proto::op::{Edns, Message, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, RecordType};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// lego's timeout of one exchange.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(10);
/// lego's bound on CNAME hops.
const MAX_CNAME_HOPS: usize = 50;
/// The port lego asks authoritative nameservers on (not configurable there either).
const AUTHORITATIVE_PORT: u16 = 53;

/// Which checks one propagation attempt makes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Checks {
    pub recursive: bool,
    pub authoritative: bool,
}

/// One query/answer exchange with `server` (`host:port`; a host name is looked up by the system).
pub(crate) async fn exchange(
    server: &str,
    name: &Name,
    kind: RecordType,
    recursion: bool,
) -> Result<Message, String> {
    let addr = tokio::time::timeout(EXCHANGE_TIMEOUT, tokio::net::lookup_host(server))
        .await
        .map_err(|_| format!("looking up {server}: timed out"))?
        .map_err(|e| format!("looking up {server}: {e}"))?
        .next()
        .ok_or_else(|| format!("looking up {server}: no address"))?;
    let mut q = Message::query();
    q.metadata.recursion_desired = recursion;
    q.add_query(Query::query(name.clone(), kind));
    let mut edns = Edns::new();
    edns.set_max_payload(4096);
    q.set_edns(edns);
    let wire = q.to_vec().map_err(|e| format!("encoding a query: {e}"))?;
    let answer = tokio::time::timeout(EXCHANGE_TIMEOUT, async {
        let udp = udp_exchange(addr, &wire, q.metadata.id).await?;
        if udp.metadata.truncation {
            tcp_exchange(addr, &wire).await
        } else {
            Ok(udp)
        }
    })
    .await
    .map_err(|_| format!("{server}: no answer within 10s"))??;
    if answer.metadata.id != q.metadata.id {
        return Err(format!("{server}: an answer to another query"));
    }
    Ok(answer)
}

async fn udp_exchange(addr: SocketAddr, wire: &[u8], id: u16) -> Result<Message, String> {
    let local: SocketAddr = if addr.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        ([0u16; 8], 0).into()
    };
    let sock = tokio::net::UdpSocket::bind(local)
        .await
        .map_err(|e| format!("{addr}: {e}"))?;
    sock.connect(addr)
        .await
        .map_err(|e| format!("{addr}: {e}"))?;
    sock.send(wire).await.map_err(|e| format!("{addr}: {e}"))?;
    let mut buf = vec![0u8; 4096];
    loop {
        let n = sock
            .recv(&mut buf)
            .await
            .map_err(|e| format!("{addr}: {e}"))?;
        // A stray datagram (or garbage) is not the answer: wait for the one with our id.
        if let Ok(m) = Message::from_vec(buf.get(..n).unwrap_or_default())
            && m.metadata.id == id
        {
            return Ok(m);
        }
    }
}

async fn tcp_exchange(addr: SocketAddr, wire: &[u8]) -> Result<Message, String> {
    let mut tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("{addr} (TCP): {e}"))?;
    let len = u16::try_from(wire.len()).map_err(|_| "query too long".to_owned())?;
    let mut out = len.to_be_bytes().to_vec();
    out.extend_from_slice(wire);
    tcp.write_all(&out)
        .await
        .map_err(|e| format!("{addr} (TCP): {e}"))?;
    let n = tcp
        .read_u16()
        .await
        .map_err(|e| format!("{addr} (TCP): {e}"))?;
    let mut buf = vec![0u8; usize::from(n)];
    tcp.read_exact(&mut buf)
        .await
        .map_err(|e| format!("{addr} (TCP): {e}"))?;
    Message::from_vec(&buf).map_err(|e| format!("{addr} (TCP): {e}"))
}

/// lego's `SendQuery`: the resolvers in order; the first answer without error that holds
/// records wins, else the last answer (an error only when the last exchange failed).
async fn ask_resolvers(
    resolvers: &[String],
    name: &Name,
    kind: RecordType,
) -> Result<Message, String> {
    let mut last = Err("no DNS resolver to ask".to_owned());
    for r in resolvers {
        last = exchange(r, name, kind, true).await;
        if let Ok(m) = &last
            && m.metadata.response_code == ResponseCode::NoError
            && !m.answers.is_empty()
        {
            break;
        }
    }
    last
}

/// The CNAME target of `name` in `m`'s answers, if one is there.
fn cname_of(m: &Message, name: &Name) -> Option<Name> {
    m.answers.iter().find_map(|r| match &r.data {
        // Name equality ignores case, as lego's owner comparison does.
        RData::CNAME(c) if r.name == *name => Some(c.0.clone()),
        _ => None,
    })
}

/// Where the record really goes: `fqdn` followed through CNAMEs (at most 50), stopping at the
/// first error, non-NOERROR answer or name without CNAME (lego's `lookupCNAME`).
pub(crate) async fn effective_fqdn(resolvers: &[String], fqdn: &Name) -> Name {
    let mut name = fqdn.clone();
    for _ in 0..MAX_CNAME_HOPS {
        let Ok(m) = ask_resolvers(resolvers, &name, RecordType::CNAME).await else {
            break;
        };
        if m.metadata.response_code != ResponseCode::NoError {
            break;
        }
        match cname_of(&m, &name) {
            Some(next) => name = next,
            None => break,
        }
    }
    name
}

/// An rcode as DNS tools (and lego's messages) name it.
fn rcode(rc: ResponseCode) -> String {
    match rc {
        ResponseCode::NoError => "NOERROR".into(),
        ResponseCode::FormErr => "FORMERR".into(),
        ResponseCode::ServFail => "SERVFAIL".into(),
        ResponseCode::NXDomain => "NXDOMAIN".into(),
        ResponseCode::NotImp => "NOTIMP".into(),
        ResponseCode::Refused => "REFUSED".into(),
        other => format!("RCODE{}", u16::from(other)),
    }
}

/// Whether `m` answers `value` for `fqdn`: NOERROR and a TXT record whose strings, joined,
/// equal it. `Err`: what the server answered instead.
fn holds_value(m: &Message, server: &str, fqdn: &Name, value: &str) -> Result<(), String> {
    if m.metadata.response_code != ResponseCode::NoError {
        return Err(format!(
            "NS {server} returned {} for {fqdn}",
            rcode(m.metadata.response_code)
        ));
    }
    let mut seen = Vec::new();
    for r in &m.answers {
        if let RData::TXT(t) = &r.data {
            let joined: Vec<u8> = t.txt_data.iter().flat_map(|s| s.iter().copied()).collect();
            if joined == value.as_bytes() {
                return Ok(());
            }
            seen.push(String::from_utf8_lossy(&joined).into_owned());
        }
    }
    Err(format!(
        "NS {server} did not return the expected TXT record [fqdn: {fqdn}, value: {value}]: {}",
        seen.join(" ,")
    ))
}

/// Every server in `servers` holds `value` at `fqdn`.
async fn all_hold(
    servers: &[String],
    fqdn: &Name,
    value: &str,
    recursion: bool,
) -> Result<(), String> {
    for s in servers {
        let m = exchange(s, fqdn, RecordType::TXT, recursion).await?;
        holds_value(&m, s, fqdn, value)?;
    }
    Ok(())
}

/// The zone `fqdn` lives in: SOA queries from the full name up, label by label (lego's
/// `FindZoneByFqdn`).
async fn find_zone(resolvers: &[String], fqdn: &Name) -> Result<Name, String> {
    let mut name = fqdn.clone();
    loop {
        let m = ask_resolvers(resolvers, &name, RecordType::SOA).await?;
        let rc = m.metadata.response_code;
        let has_cname = m
            .answers
            .iter()
            .any(|r| r.record_type() == RecordType::CNAME);
        if rc == ResponseCode::NoError && !has_cname {
            if let Some(soa) = m
                .answers
                .iter()
                .find(|r| r.record_type() == RecordType::SOA)
            {
                return Ok(soa.name.clone());
            }
        } else if rc != ResponseCode::NXDomain && rc != ResponseCode::NoError {
            return Err(format!("unexpected response for '{name}': {}", rcode(rc)));
        }
        if name.num_labels() == 0 {
            return Err(format!("could not find the zone for domain {fqdn}"));
        }
        name = name.base_name();
    }
}

/// The nameservers of `zone`, lower-cased, as `name:53`.
async fn authoritative_servers(resolvers: &[String], zone: &Name) -> Result<Vec<String>, String> {
    let m = ask_resolvers(resolvers, zone, RecordType::NS).await?;
    let out: Vec<String> = m
        .answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::NS(ns) => Some(format!(
                "{}:{AUTHORITATIVE_PORT}",
                ns.0.to_lowercase().to_ascii().trim_end_matches('.')
            )),
            _ => None,
        })
        .collect();
    if out.is_empty() {
        return Err(format!(
            "[zone={zone}] could not determine authoritative nameservers"
        ));
    }
    Ok(out)
}

/// One propagation check (lego's `checkDNSPropagation`): `Ok(())` when every server the checks
/// ask holds `value` at `fqdn` (or its CNAME target).
pub(crate) async fn check_propagation(
    resolvers: &[String],
    fqdn: &Name,
    value: &str,
    checks: Checks,
) -> Result<(), String> {
    let first = ask_resolvers(resolvers, fqdn, RecordType::TXT)
        .await
        .map_err(|e| format!("initial recursive nameserver: {e}"))?;
    let fqdn = match first.metadata.response_code {
        ResponseCode::NoError => cname_of(&first, fqdn).unwrap_or_else(|| fqdn.clone()),
        _ => fqdn.clone(),
    };
    if checks.recursive {
        all_hold(resolvers, &fqdn, value, true).await?;
    }
    if checks.authoritative {
        let zone = find_zone(resolvers, &fqdn).await?;
        let servers = authoritative_servers(resolvers, &zone).await?;
        all_hold(&servers, &fqdn, value, false).await?;
    }
    Ok(())
}

/// The recursive resolvers of the system: the `nameserver` lines of `/etc/resolv.conf`, each
/// `addr:53`. Read at each order (lego reads it once at start).
pub(crate) fn system_resolvers(resolv_conf: &str) -> Vec<String> {
    resolv_conf
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some("nameserver")).then(|| w.next()).flatten()
        })
        .filter_map(|a| {
            // A scoped IPv6 address (fe80::1%eth0) is not dialled by SocketAddr; skip it.
            a.parse::<std::net::IpAddr>()
                .ok()
                .map(|ip| SocketAddr::new(ip, 53).to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::rr::Record;
    use hickory_proto::rr::rdata::{CNAME, NS, SOA, TXT};
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    type Zone = HashMap<(String, RecordType), Vec<RData>>;

    /// A DNS server on 127.0.0.1 answering from `zone` (names lower-case with the dot); unknown
    /// names NXDOMAIN, known names without the type NOERROR/empty. Answers longer than `udp_max`
    /// bytes are truncated over UDP. Counts the TCP queries.
    async fn server(zone: Zone, udp_max: usize) -> (String, Arc<Mutex<Vec<(String, bool)>>>) {
        let zone = Arc::new(zone);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let udp = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = udp.local_addr().unwrap();
        let tcp = tokio::net::TcpListener::bind(addr).await.unwrap();
        let answer = {
            let zone = zone.clone();
            move |q: &Message| -> Message {
                let mut r = Message::response(q.metadata.id, q.metadata.op_code);
                r.metadata.recursion_desired = q.metadata.recursion_desired;
                let query = q.queries[0].clone();
                let key = query.name.to_lowercase().to_ascii();
                let known = zone.keys().any(|(n, _)| *n == key);
                if let Some(rs) = zone.get(&(key.clone(), query.query_type)) {
                    for d in rs {
                        r.add_answer(Record::from_rdata(query.name.clone(), 60, d.clone()));
                    }
                } else if let Some(rs) = zone.get(&(key, RecordType::CNAME)) {
                    for d in rs {
                        r.add_answer(Record::from_rdata(query.name.clone(), 60, d.clone()));
                    }
                } else if !known {
                    r.metadata.response_code = ResponseCode::NXDomain;
                }
                r.add_query(query);
                r
            }
        };
        let (a1, s1, seen_out) = (answer.clone(), seen.clone(), seen.clone());
        tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            while let Ok((n, from)) = udp.recv_from(&mut buf).await {
                let q = Message::from_vec(&buf[..n]).unwrap();
                s1.lock()
                    .unwrap()
                    .push((q.queries[0].name.to_ascii(), false));
                let mut r = a1(&q);
                let mut wire = r.to_vec().unwrap();
                if wire.len() > udp_max {
                    r.answers.clear();
                    r.metadata.truncation = true;
                    wire = r.to_vec().unwrap();
                }
                udp.send_to(&wire, from).await.unwrap();
            }
        });
        tokio::spawn(async move {
            while let Ok((mut c, _)) = tcp.accept().await {
                let n = c.read_u16().await.unwrap();
                let mut buf = vec![0u8; usize::from(n)];
                c.read_exact(&mut buf).await.unwrap();
                let q = Message::from_vec(&buf).unwrap();
                seen.lock()
                    .unwrap()
                    .push((q.queries[0].name.to_ascii(), true));
                let wire = answer(&q).to_vec().unwrap();
                let mut out = u16::try_from(wire.len()).unwrap().to_be_bytes().to_vec();
                out.extend_from_slice(&wire);
                c.write_all(&out).await.unwrap();
            }
        });
        (addr.to_string(), seen_out)
    }

    fn name(s: &str) -> Name {
        Name::from_ascii(s).unwrap()
    }

    fn txt(v: &[&str]) -> RData {
        RData::TXT(TXT::new(v.iter().map(|s| (*s).to_owned()).collect()))
    }

    const ALL: Checks = Checks {
        recursive: true,
        authoritative: false,
    };

    #[tokio::test]
    async fn the_value_must_be_on_every_resolver_and_split_strings_count_joined() {
        let fqdn = "_acme-challenge.example.test.";
        let mut z = Zone::new();
        z.insert(
            (fqdn.into(), RecordType::TXT),
            vec![txt(&["other"]), txt(&["abc", "def"])],
        );
        let (good, _) = server(z, 4096).await;
        let (empty, _) = server(Zone::new(), 4096).await;
        let r = [good.clone()];
        check_propagation(&r, &name(fqdn), "abcdef", ALL)
            .await
            .unwrap();
        let e = check_propagation(&r, &name(fqdn), "abc", ALL)
            .await
            .unwrap_err();
        assert!(e.contains("did not return the expected TXT record"), "{e}");
        // The first resolver answers, the second does not know the name: not propagated.
        let both = [good, empty.clone()];
        let e = check_propagation(&both, &name(fqdn), "abcdef", ALL)
            .await
            .unwrap_err();
        assert_eq!(e, format!("NS {empty} returned NXDOMAIN for {fqdn}"));
        // Without the recursive check, the first answer is enough.
        let none = Checks {
            recursive: false,
            authoritative: false,
        };
        check_propagation(&both, &name(fqdn), "abcdef", none)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_truncated_answer_is_asked_again_over_tcp() {
        let fqdn = "_acme-challenge.big.test.";
        let long: Vec<String> = (0..40).map(|i| format!("{i:0>60}")).collect();
        let mut rs: Vec<RData> = long.iter().map(|v| txt(&[v])).collect();
        rs.push(txt(&["the-value"]));
        let mut z = Zone::new();
        z.insert((fqdn.into(), RecordType::TXT), rs);
        let (s, seen) = server(z, 512).await;
        check_propagation(&[s], &name(fqdn), "the-value", ALL)
            .await
            .unwrap();
        assert!(
            seen.lock().unwrap().iter().any(|(_, tcp)| *tcp),
            "asked over TCP"
        );
    }

    #[tokio::test]
    async fn cnames_are_followed_to_where_the_record_goes() {
        let mut z = Zone::new();
        z.insert(
            ("_acme-challenge.example.test.".into(), RecordType::CNAME),
            vec![RData::CNAME(CNAME(name("a.delegated.test.")))],
        );
        z.insert(
            ("a.delegated.test.".into(), RecordType::CNAME),
            vec![RData::CNAME(CNAME(name("b.delegated.test.")))],
        );
        z.insert(
            ("b.delegated.test.".into(), RecordType::TXT),
            vec![txt(&["v"])],
        );
        let (s, _) = server(z, 4096).await;
        let r = [s];
        let got = effective_fqdn(&r, &name("_acme-challenge.example.test.")).await;
        assert_eq!(got.to_ascii(), "b.delegated.test.");
        // A name without CNAME stays itself; an unreachable resolver changes nothing.
        let same = effective_fqdn(&r, &name("_acme-challenge.plain.test.")).await;
        assert_eq!(same.to_ascii(), "_acme-challenge.plain.test.");
        let none = effective_fqdn(&["127.0.0.1:1".to_owned()], &name("x.test.")).await;
        assert_eq!(none.to_ascii(), "x.test.");
    }

    #[tokio::test]
    async fn the_authoritative_check_finds_the_zone_and_asks_its_nameservers() {
        let mut z = Zone::new();
        z.insert(
            ("example.test.".into(), RecordType::SOA),
            vec![RData::SOA(SOA::new(
                name("ns1.example.test."),
                name("hostmaster.example.test."),
                1,
                3600,
                600,
                86400,
                60,
            ))],
        );
        // The zone's nameserver cannot be asked here (port 53): the failure names it.
        z.insert(
            ("example.test.".into(), RecordType::NS),
            vec![RData::NS(NS(name("NS1.nowhere.invalid.")))],
        );
        z.insert(
            ("_acme-challenge.www.example.test.".into(), RecordType::TXT),
            vec![txt(&["v"])],
        );
        let (s, _) = server(z, 4096).await;
        let r = [s];
        let fqdn = name("_acme-challenge.www.example.test.");
        assert_eq!(
            find_zone(&r, &fqdn).await.unwrap().to_ascii(),
            "example.test."
        );
        let ns = authoritative_servers(&r, &name("example.test."))
            .await
            .unwrap();
        assert_eq!(ns, ["ns1.nowhere.invalid:53"]);
        let checks = Checks {
            recursive: true,
            authoritative: true,
        };
        let e = check_propagation(&r, &fqdn, "v", checks).await.unwrap_err();
        assert!(e.contains("ns1.nowhere.invalid:53"), "{e}");
        // No SOA anywhere up the tree.
        let (empty, _) = server(Zone::new(), 4096).await;
        let e = find_zone(&[empty], &fqdn).await.unwrap_err();
        assert!(e.contains("could not find the zone"), "{e}");
    }

    #[test]
    fn resolv_conf_nameservers_get_port_53() {
        let conf = "# comment\nsearch lan\nnameserver 192.0.2.1\nnameserver ::1\nnameserver fe80::1%eth0\noptions ndots:2\n";
        assert_eq!(system_resolvers(conf), ["192.0.2.1:53", "[::1]:53"]);
    }
}
