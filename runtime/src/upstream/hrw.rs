//! Traefik's `hrw` strategy (highest random weight, rendezvous hashing), as measured against
//! Traefik 3.7.15 in `docs/traefik-behaviour/load-balancing.md` §5: every available server of
//! weight 1 or more scores `weight / −ln(FNV-1a-64(client IP + server URL) / 2^64)`, and the
//! strictly highest wins (the earlier server on a tie). The key is the connection's address as
//! text, without port (IPv6 unbracketed); forwarding fields are not read. So a client stays on
//! its server as long as that server is available, and only the clients of a server that left
//! move.

use std::io::Write as _;
use std::net::IpAddr;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// The position of the winner among `servers` (URL, weight, available), or `None` when no
/// server is available with a weight.
pub(super) fn pick<'a>(
    client: Option<IpAddr>,
    servers: impl Iterator<Item = (&'a str, u32, bool)>,
) -> Option<usize> {
    // The key as Go prints the address: at most 45 bytes (an IPv4-mapped IPv6 address).
    let mut text = [0u8; 64];
    let len = match client {
        Some(ip) => {
            let mut cursor = &mut text[..];
            let room = cursor.len();
            match write!(cursor, "{ip}") {
                Ok(()) => room - cursor.len(),
                Err(_) => 0,
            }
        }
        None => 0,
    };
    let keyed = fnv1a(FNV_OFFSET, text.get(..len).unwrap_or_default());
    let mut best: Option<(usize, f64)> = None;
    for (i, (url, weight, available)) in servers.enumerate() {
        if !available || weight == 0 {
            continue;
        }
        let h = fnv1a(keyed, url.as_bytes());
        // As Go computes it, in float64: 2^64 is exact, so is the division's rounding.
        let x = h as f64 / 18_446_744_073_709_551_616.0;
        let score = f64::from(weight) * (1.0 / -x.ln());
        if best.is_none_or(|(_, b)| score > b) {
            best = Some((i, score));
        }
    }
    best.map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn winner(client: &str, servers: &[(&str, u32)]) -> Option<usize> {
        pick(
            Some(client.parse().unwrap()),
            servers.iter().map(|(u, w)| (*u, *w, true)),
        )
    }

    #[test]
    fn fnv1a_is_the_reference_hash() {
        // Published FNV-1a-64 test vectors.
        assert_eq!(fnv1a(FNV_OFFSET, b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(FNV_OFFSET, b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(FNV_OFFSET, b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn a_client_keeps_its_server_while_the_others_come_and_go() {
        let servers = [("http://a:1", 1), ("http://b:1", 1), ("http://c:1", 1)];
        for last in 1..=250u8 {
            let client = format!("10.0.0.{last}");
            let w = winner(&client, &servers).unwrap();
            // Taking away another server never moves this client.
            for gone in (0..3).filter(|&g| g != w) {
                let left = pick(
                    Some(client.parse().unwrap()),
                    servers
                        .iter()
                        .enumerate()
                        .map(|(i, (u, wt))| (*u, *wt, i != gone)),
                );
                assert_eq!(left, Some(w), "{client} without {gone}");
            }
        }
    }

    #[test]
    fn weight_zero_and_unavailable_servers_never_win() {
        assert_eq!(
            winner("::1", &[("http://a:1", 0), ("http://b:1", 1)]),
            Some(1)
        );
        assert_eq!(pick(None, [("http://a:1", 1, false)].into_iter()), None);
    }
}
