//! `bridge-runtime healthcheck`: a liveness probe for images without curl (a FROM-scratch image has
//! nothing but this binary and the plan). One plain HTTP/1.1 GET; healthy means a 2xx answer within
//! the timeout. Blocking std I/O only, so it starts no async runtime.

use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// Why a health probe did not get a healthy answer.
#[derive(Debug, thiserror::Error)]
pub enum HealthcheckError {
    /// The URL cannot be probed.
    #[error("`{0}`: {1}")]
    Url(String, String),
    /// The host name did not resolve.
    #[error("cannot resolve {host}: {source}")]
    Resolve {
        /// Host part of the URL.
        host: String,
        /// Why.
        source: std::io::Error,
    },
    /// No address accepted a connection.
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        /// The last address tried.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// Sending the request or reading the answer failed (or timed out).
    #[error("no answer from {addr}: {source}")]
    Io {
        /// The address connected to.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The answer is not HTTP.
    #[error("not an HTTP answer from {0}: {1:?}")]
    Protocol(SocketAddr, String),
    /// An answer that is not 2xx.
    #[error("{url} answered {status}")]
    Unhealthy {
        /// The probed URL.
        url: String,
        /// Its HTTP status.
        status: u16,
    },
}

/// Requests `url` (http only) and returns its status when it is 2xx.
pub fn probe(url: &str, timeout: Duration) -> Result<u16, HealthcheckError> {
    probe_head(url, timeout).map(|(status, _)| status)
}

/// [`probe`], also returning the `Bridge-Plan-Hash` field of the answer (what a bridge-runtime's
/// `/ping` says it serves; the pair's peer check compares it with its own).
#[allow(
    clippy::disallowed_methods,
    reason = "a blocking probe run outside any tokio runtime (or on a blocking thread): std's clock is the only one"
)]
pub fn probe_head(url: &str, timeout: Duration) -> Result<(u16, Option<String>), HealthcheckError> {
    let answer = get(url, None, "", timeout, 0)?;
    Ok((answer.status, answer.plan_hash))
}

/// A 2xx answer of [`get`].
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    /// Its `Bridge-Plan-Hash` field.
    pub(crate) plan_hash: Option<String>,
    /// At most the asked-for number of bytes of the body.
    pub(crate) body: Vec<u8>,
}

/// One GET of `url` (http only) with `Host: host` (default: the URL's) and the `extra` field lines
/// (each ending in CRLF); a 2xx answer with up to `body_limit` bytes of its body.
#[allow(
    clippy::disallowed_methods,
    reason = "a blocking probe run outside any tokio runtime (or on a blocking thread): std's clock is the only one"
)]
pub(crate) fn get(
    url: &str,
    host: Option<&str>,
    extra: &str,
    timeout: Duration,
    body_limit: usize,
) -> Result<Answer, HealthcheckError> {
    let bad = |why: &str| HealthcheckError::Url(url.to_owned(), why.to_owned());
    let parsed = url::Url::parse(url).map_err(|e| bad(&e.to_string()))?;
    if parsed.scheme() != "http" {
        return Err(bad("only http:// URLs can be probed"));
    }
    let port = parsed.port_or_known_default().unwrap_or(80);
    let (host_header, addrs): (String, Vec<SocketAddr>) = match parsed.host() {
        Some(url::Host::Ipv4(ip)) => (ip.to_string(), vec![SocketAddr::new(IpAddr::V4(ip), port)]),
        Some(url::Host::Ipv6(ip)) => (
            format!("[{ip}]"),
            vec![SocketAddr::new(IpAddr::V6(ip), port)],
        ),
        Some(url::Host::Domain(d)) => (
            d.to_owned(),
            (d, port)
                .to_socket_addrs()
                .map_err(|source| HealthcheckError::Resolve {
                    host: d.to_owned(),
                    source,
                })?
                .collect(),
        ),
        None => return Err(bad("no host")),
    };
    let deadline = Instant::now() + timeout;
    let left = || {
        deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1))
    };
    let mut last = None;
    let mut stream = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, left()) {
            Ok(s) => {
                stream = Some((s, addr));
                break;
            }
            Err(e) => last = Some((addr, e)),
        }
    }
    let (mut stream, addr) = match (stream, last) {
        (Some(s), _) => s,
        (None, Some((addr, source))) => return Err(HealthcheckError::Connect { addr, source }),
        (None, None) => return Err(bad("the host has no address")),
    };
    let io = |source| HealthcheckError::Io { addr, source };
    stream.set_write_timeout(Some(left())).map_err(io)?;
    stream.set_read_timeout(Some(left())).map_err(io)?;
    let mut target = parsed.path().to_owned();
    if let Some(q) = parsed.query() {
        target.push('?');
        target.push_str(q);
    }
    let host_header = match (host, parsed.port()) {
        (Some(h), _) => h.to_owned(),
        (None, Some(p)) => format!("{host_header}:{p}"),
        (None, None) => host_header,
    };
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: {host_header}\r\nUser-Agent: bridge-runtime-healthcheck\r\n{extra}Connection: close\r\n\r\n"
    )
    .map_err(io)?;
    let mut line = String::new();
    // The head only, bounded.
    let mut reader = BufReader::new(std::io::Read::take(
        stream,
        8 * 1024 + u64::try_from(body_limit).unwrap_or(0),
    ));
    reader.read_line(&mut line).map_err(io)?;
    let mut words = line.split_whitespace();
    let status = match (words.next(), words.next().map(str::parse::<u16>)) {
        (Some(v), Some(Ok(code))) if v.starts_with("HTTP/") => code,
        _ => return Err(HealthcheckError::Protocol(addr, line.trim_end().to_owned())),
    };
    let mut plan_hash = None;
    let mut field = String::new();
    loop {
        field.clear();
        if reader.read_line(&mut field).map_err(io)? == 0 || field.trim_end().is_empty() {
            break;
        }
        if let Some((name, value)) = field.split_once(':')
            && name.eq_ignore_ascii_case(crate::admin::PLAN_HASH_FIELD)
        {
            plan_hash = Some(value.trim().to_owned());
        }
    }
    let mut body = Vec::new();
    if body_limit > 0 {
        // Connection: close — the body ends with the connection (or at the limit).
        std::io::Read::read_to_end(
            &mut std::io::Read::take(reader, u64::try_from(body_limit).unwrap_or(0)),
            &mut body,
        )
        .map_err(io)?;
    }
    if (200..300).contains(&status) {
        Ok(Answer {
            status,
            plan_hash,
            body,
        })
    } else {
        Err(HealthcheckError::Unhealthy {
            url: url.to_owned(),
            status,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_http_urls_are_refused_before_connecting() {
        for url in ["https://127.0.0.1/ping", "ftp://x/", "not a url"] {
            assert!(
                matches!(
                    probe(url, Duration::from_secs(1)),
                    Err(HealthcheckError::Url(..))
                ),
                "{url}"
            );
        }
    }
}
