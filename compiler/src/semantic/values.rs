//! Parsers for values the checks and resolution share: entry point addresses, IPs and CIDR ranges,
//! server URLs and access-log status ranges.

use std::net::IpAddr;

/// Parses an access-log status filter: `404` or an inclusive range `400-499`, within 100-599.
pub fn parse_status_range(text: &str) -> Option<(u16, u16)> {
    let (a, b) = text.split_once('-').unwrap_or((text, text));
    let (a, b): (u16, u16) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
    ((100..=599).contains(&a) && (100..=599).contains(&b) && a <= b).then_some((a, b))
}

/// Validates an entry point address: `[host]:port[/tcp|/udp]`. Returns the port and protocol.
pub fn parse_address(addr: &str) -> Result<(u16, &str), String> {
    let (hostport, proto) = match addr.rsplit_once('/') {
        Some((hp, p)) => (hp, p),
        None => (addr, "tcp"),
    };
    let proto = match proto.to_ascii_lowercase().as_str() {
        "tcp" => "tcp",
        "udp" => "udp",
        _ => return Err(format!("unknown protocol `{proto}` (use tcp or udp)")),
    };
    let (host, port) = hostport.rsplit_once(':').ok_or("missing `:PORT`")?;
    let port: u16 = port
        .parse()
        .map_err(|_| format!("port `{port}` is not a number between 1 and 65535"))?;
    if port == 0 {
        return Err("port 0 is not allowed".into());
    }
    if !host.is_empty() {
        let h = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
        match h {
            Some(v6) => {
                v6.parse::<std::net::Ipv6Addr>()
                    .map_err(|_| format!("`{host}` is not an IPv6 address"))?;
            }
            None => {
                if host.parse::<IpAddr>().is_err() && !is_hostname(host) {
                    return Err(format!("`{host}` is not an IP address or host name"));
                }
            }
        }
    }
    Ok((port, proto))
}

fn is_hostname(h: &str) -> bool {
    !h.is_empty()
        && h.len() <= 253
        && h.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !l.starts_with('-')
        })
}

/// An IP or a CIDR range.
pub fn parse_ip_or_cidr(s: &str) -> Result<ipnet::IpNet, String> {
    if let Ok(net) = s.parse::<ipnet::IpNet>() {
        return Ok(net);
    }
    s.parse::<IpAddr>()
        .map(ipnet::IpNet::from)
        .map_err(|_| format!("`{s}` is not an IP or CIDR"))
}

/// A server URL must be absolute http, https or h2c with a host.
pub fn check_server_url(u: &str) -> Result<url::Url, String> {
    if !u.contains("://") {
        return Err("is not an absolute URL (missing `http://`)".into());
    }
    let url = url::Url::parse(u).map_err(|e| format!("is not an absolute URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https" | "h2c") {
        return Err(format!(
            "has scheme `{}`; use http, https or h2c",
            url.scheme()
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("has no host".into());
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(parse_address(":80"), Ok((80, "tcp")));
        assert_eq!(parse_address("0.0.0.0:443/tcp"), Ok((443, "tcp")));
        assert_eq!(parse_address("[::]:8080"), Ok((8080, "tcp")));
        assert_eq!(parse_address(":53/udp"), Ok((53, "udp")));
        assert!(parse_address("80").is_err());
        assert!(parse_address(":99999").is_err());
        assert!(parse_address(":0").is_err());
        assert!(parse_address("bad host:80").is_err());
        assert!(parse_address(":80/sctp").is_err());
    }

    #[test]
    fn urls() {
        assert!(check_server_url("http://scadabridge-central-a:5000").is_ok());
        assert!(check_server_url("h2c://x:80").is_ok());
        assert!(check_server_url("ftp://x").is_err());
        assert!(check_server_url("scadabridge-central-a:5000").is_err());
        assert!(check_server_url("/relative").is_err());
    }
}
