//! The PROXY protocol (HAProxy's, versions 1 and 2) on an entry point (`proxyProtocol`).
//!
//! A load balancer in front of the proxy that passes TCP through (HAProxy in `mode tcp`, a
//! cloud's network load balancer) opens each connection with a header naming the client's
//! address; without it every request would seem to come from the load balancer — in
//! `X-Forwarded-For`, `ipAllowList` and the access log. As in Traefik, the header is read only
//! from trusted peers (`trustedIPs`, or every peer with `insecure`) and is optional from them;
//! it comes before anything else on the connection, TLS included. The parser is pure and
//! fuzzed; [`read`] takes the header off a connection and returns the bytes read after it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

/// Version 2's signature, the first 12 bytes of its header.
const V2_SIGNATURE: &[u8; 12] = b"\r\n\r\n\0\r\nQUIT\n";
/// Longest version 1 header, CRLF included (the specification's bound).
const V1_MAX: usize = 107;
/// Version 2's fixed part: signature, version and command, family, length.
const V2_FIXED: usize = 16;
/// Longest version 2 address block (TLVs included) accepted, as Traefik's PROXY library bounds it.
const V2_MAX_BODY: usize = 4096;

/// What the bytes a connection starts with are.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Parsed {
    /// Not a PROXY header: the connection starts with its own protocol.
    Absent,
    /// The start of a header; more bytes are needed.
    Incomplete,
    /// A whole header of `len` bytes; `source` is the client's address, or `None` when the
    /// header names none (v1 `UNKNOWN`, v2 `LOCAL` or an unspecified or UNIX family): the
    /// connection's own peer is the client then.
    Header {
        len: usize,
        source: Option<SocketAddr>,
    },
    /// A header that breaks the specification: the connection is closed.
    Invalid(&'static str),
}

/// Parses the header at the start of `buf`.
pub(crate) fn parse(buf: &[u8]) -> Parsed {
    if buf.is_empty() {
        return Parsed::Incomplete;
    }
    let v1 = b"PROXY ";
    if v1.starts_with(&buf[..buf.len().min(v1.len())]) || buf.starts_with(v1) {
        return parse_v1(buf);
    }
    if V2_SIGNATURE.starts_with(&buf[..buf.len().min(V2_SIGNATURE.len())])
        || buf.starts_with(V2_SIGNATURE)
    {
        return parse_v2(buf);
    }
    Parsed::Absent
}

fn parse_v1(buf: &[u8]) -> Parsed {
    let window = &buf[..buf.len().min(V1_MAX)];
    let Some(lf) = window.iter().position(|&b| b == b'\n') else {
        return if buf.len() >= V1_MAX {
            Parsed::Invalid("version 1 header longer than 107 bytes")
        } else {
            Parsed::Incomplete
        };
    };
    if lf == 0 || window[lf - 1] != b'\r' {
        return Parsed::Invalid("version 1 header not ended by CRLF");
    }
    let Ok(line) = std::str::from_utf8(&window[..lf - 1]) else {
        return Parsed::Invalid("version 1 header is not text");
    };
    let mut parts = line.split(' ');
    let _proxy = parts.next();
    let len = lf + 1;
    match parts.next() {
        // The rest of the line is ignored (the specification's rule for UNKNOWN).
        Some("UNKNOWN") => Parsed::Header { len, source: None },
        Some(family @ ("TCP4" | "TCP6")) => {
            // Fields after the four are ignored, as Traefik's library ignores them.
            let (Some(src), Some(dst), Some(sport), Some(dport)) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return Parsed::Invalid("version 1 header without four addresses and ports");
            };
            let v4 = family == "TCP4";
            let (Some(src), Some(_)) = (ip_of(src, v4), ip_of(dst, v4)) else {
                return Parsed::Invalid("version 1 header with a bad address");
            };
            let (Some(sport), Some(_)) = (port_of(sport), port_of(dport)) else {
                return Parsed::Invalid("version 1 header with a bad port");
            };
            Parsed::Header {
                len,
                source: Some(SocketAddr::new(src, sport)),
            }
        }
        _ => Parsed::Invalid("version 1 header with an unknown protocol"),
    }
}

/// An address of the family the header names: dotted IPv4 for `TCP4` (no leading zeros);
/// for `TCP6` an IPv6 address, its zone dropped, or — as Traefik's library takes it — IPv4.
fn ip_of(text: &str, v4: bool) -> Option<IpAddr> {
    if v4 {
        return text.parse::<Ipv4Addr>().ok().map(IpAddr::V4);
    }
    let text = text.split_once('%').map_or(text, |(ip, _zone)| ip);
    text.parse::<IpAddr>().ok()
}

/// A port in decimal, 0 to 65535; a `+` sign and leading zeros are taken, as Go's `Atoi` takes
/// them in Traefik's library.
fn port_of(text: &str) -> Option<u16> {
    let digits = text.strip_prefix('+').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let trimmed = digits.trim_start_matches('0');
    if trimmed.len() > 5 {
        return None;
    }
    if trimmed.is_empty() {
        return Some(0);
    }
    trimmed.parse().ok()
}

fn parse_v2(buf: &[u8]) -> Parsed {
    if buf.len() < V2_FIXED {
        return Parsed::Incomplete;
    }
    let (ver_cmd, family) = (buf[12], buf[13]);
    if ver_cmd >> 4 != 2 {
        return Parsed::Invalid("version 2 signature with another version");
    }
    let command = ver_cmd & 0x0f;
    if command > 1 {
        return Parsed::Invalid("version 2 header with an unknown command");
    }
    let body = usize::from(u16::from_be_bytes([buf[14], buf[15]]));
    if body > V2_MAX_BODY {
        return Parsed::Invalid("version 2 header longer than 4096 bytes");
    }
    let len = V2_FIXED + body;
    if buf.len() < len {
        return Parsed::Incomplete;
    }
    let addresses = &buf[V2_FIXED..len];
    // LOCAL: the load balancer's own connection (a health check): its address is the peer's.
    if command == 0 {
        return Parsed::Header { len, source: None };
    }
    // PROXY names a client: over IPv4 or IPv6, by stream or datagram (Traefik's library takes
    // both); an unspecified or UNIX family or transport names none and is refused.
    if !matches!(family & 0x0f, 1 | 2) {
        return Parsed::Invalid("version 2 PROXY header without a stream or datagram transport");
    }
    let source = match family >> 4 {
        1 => {
            let Some(a) = addresses.get(..12) else {
                return Parsed::Invalid("version 2 header too short for IPv4 addresses");
            };
            let ip = Ipv4Addr::new(a[0], a[1], a[2], a[3]);
            Some(SocketAddr::new(
                IpAddr::V4(ip),
                u16::from_be_bytes([a[8], a[9]]),
            ))
        }
        2 => {
            let Some(a) = addresses.get(..36) else {
                return Parsed::Invalid("version 2 header too short for IPv6 addresses");
            };
            let mut octets = [0u8; 16];
            octets.copy_from_slice(&a[..16]);
            Some(SocketAddr::new(
                IpAddr::V6(Ipv6Addr::from(octets)),
                u16::from_be_bytes([a[32], a[33]]),
            ))
        }
        _ => return Parsed::Invalid("version 2 PROXY header without an IP family"),
    };
    Parsed::Header { len, source }
}

/// Why no header could be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    #[error("invalid PROXY protocol header: {0}")]
    Invalid(&'static str),
    #[error("connection closed inside the PROXY protocol header")]
    Closed,
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Reads the optional header at the start of `io`: the client's address it names (if any) and
/// the bytes read after it, which belong to the connection's own protocol.
pub(crate) async fn read<I: AsyncRead + Unpin>(
    io: &mut I,
) -> Result<(Option<SocketAddr>, BytesMut), ReadError> {
    let mut buf = BytesMut::with_capacity(256);
    loop {
        match parse(&buf) {
            Parsed::Absent => return Ok((None, buf)),
            Parsed::Header { len, source } => {
                buf.advance(len);
                return Ok((source, buf));
            }
            Parsed::Invalid(why) => return Err(ReadError::Invalid(why)),
            Parsed::Incomplete => {
                buf.reserve(256);
                if io.read_buf(&mut buf).await? == 0 {
                    return Err(ReadError::Closed);
                }
            }
        }
    }
}

/// Fuzzing entry point (`fuzz/`): any bytes, parsed as the start of a connection; a header
/// found never claims more bytes than there are, and parsing its own bytes again agrees.
#[doc(hidden)]
pub(crate) fn fuzz(data: &[u8]) {
    if let Parsed::Header { len, source } = parse(data) {
        assert!(len <= data.len());
        assert_eq!(parse(&data[..len]), Parsed::Header { len, source });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v2(command: u8, family: u8, addresses: &[u8]) -> Vec<u8> {
        let mut out = V2_SIGNATURE.to_vec();
        out.push(0x20 | command);
        out.push(family);
        out.extend_from_slice(&u16::try_from(addresses.len()).unwrap_or(0).to_be_bytes());
        out.extend_from_slice(addresses);
        out
    }

    fn addr(s: &str) -> Option<SocketAddr> {
        s.parse().ok()
    }

    #[test]
    fn version_1_headers() {
        let ok = b"PROXY TCP4 203.0.113.7 127.0.0.1 5555 80\r\nGET /";
        assert_eq!(
            parse(ok),
            Parsed::Header {
                len: 42,
                source: addr("203.0.113.7:5555")
            }
        );
        assert_eq!(
            parse(b"PROXY TCP6 2001:db8::1 ::1 40000 443\r\n"),
            Parsed::Header {
                len: 38,
                source: addr("[2001:db8::1]:40000")
            }
        );
        assert_eq!(
            parse(b"PROXY UNKNOWN whatever\r\n"),
            Parsed::Header {
                len: 24,
                source: None
            }
        );
        for partial in [&b"P"[..], b"PROX", b"PROXY TCP4 1.2.3.4"] {
            assert_eq!(parse(partial), Parsed::Incomplete, "{partial:?}");
        }
        for bad in [
            &b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n"[..],
            b"PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n",
            b"PROXY TCP4 ::1 5.6.7.8 1 2\r\n",
            b"PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n",
            b"PROXY TCP4 1.2.3.4 5.6.7.8 -1 2\r\n",
            b"PROXY TCP4 01.2.3.4 5.6.7.8 1 2\r\n",
            b"PROXY tcp4 1.2.3.4 5.6.7.8 1 2\r\n",
            b"PROXY UDP4 1.2.3.4 5.6.7.8 1 2\r\n",
            b"PROXY  TCP4 1.2.3.4 5.6.7.8 1 2\r\n",
        ] {
            assert!(
                matches!(parse(bad), Parsed::Invalid(_)),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let long = format!("PROXY UNKNOWN {}\r\n", "x".repeat(100));
        assert!(matches!(parse(long.as_bytes()), Parsed::Invalid(_)));
        // 107 bytes with the CRLF is the longest.
        let longest = format!("PROXY UNKNOWN {}\r\n", "x".repeat(91));
        assert_eq!(longest.len(), 107);
        assert!(matches!(
            parse(longest.as_bytes()),
            Parsed::Header { len: 107, .. }
        ));
        // Traefik's library's leniencies, kept: extra fields, a sign or leading zeros in a port,
        // IPv4 or a zone in a TCP6 line.
        for (lenient, source) in [
            (
                &b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2 extra\r\n"[..],
                "1.2.3.4:1",
            ),
            (b"PROXY TCP4 1.2.3.4 5.6.7.8 +80 0080\r\n", "1.2.3.4:80"),
            (b"PROXY TCP4 1.2.3.4 5.6.7.8 0 0\r\n", "1.2.3.4:0"),
            (b"PROXY TCP6 1.2.3.4 ::1 7 8\r\n", "1.2.3.4:7"),
            (b"PROXY TCP6 fe80::1%eth0 ::1 7 8\r\n", "[fe80::1]:7"),
        ] {
            assert!(
                matches!(parse(lenient), Parsed::Header { source: Some(s), .. } if s == source.parse().unwrap()),
                "{}",
                String::from_utf8_lossy(lenient)
            );
        }
    }

    #[test]
    fn version_2_headers() {
        let inet = [203, 0, 113, 9, 127, 0, 0, 1, 0x1f, 0x90, 0, 80];
        let h = v2(1, 0x11, &inet);
        assert_eq!(
            parse(&h),
            Parsed::Header {
                len: 28,
                source: addr("203.0.113.9:8080")
            }
        );
        // TLVs after the addresses are read past, not interpreted.
        let mut with_tlv = inet.to_vec();
        with_tlv.extend_from_slice(&[0x02, 0x00, 0x03, b'a', b'p', b'p']);
        assert_eq!(
            parse(&v2(1, 0x11, &with_tlv)),
            Parsed::Header {
                len: 34,
                source: addr("203.0.113.9:8080")
            }
        );
        let mut inet6 = vec![0u8; 36];
        inet6[0] = 0x20;
        inet6[1] = 0x01;
        inet6[15] = 1;
        inet6[32] = 0x01;
        inet6[33] = 0xbb;
        assert_eq!(
            parse(&v2(1, 0x21, &inet6)),
            Parsed::Header {
                len: 52,
                source: addr("[2001::1]:443")
            }
        );
        assert_eq!(
            parse(&v2(0, 0x11, &inet)),
            Parsed::Header {
                len: 28,
                source: None
            }
        );
        assert_eq!(
            parse(&v2(0, 0x00, &[])),
            Parsed::Header {
                len: 16,
                source: None
            }
        );
        // A datagram family is taken like a stream one.
        assert!(matches!(
            parse(&v2(1, 0x12, &inet)),
            Parsed::Header {
                source: Some(_),
                ..
            }
        ));
        // PROXY without an IP family and stream or datagram transport is refused (Traefik's
        // connection task crashes on some of these and leaves the socket open).
        for family in [0x00, 0x10, 0x20, 0x01, 0x13, 0x31] {
            assert!(
                matches!(parse(&v2(1, family, &[0u8; 216])), Parsed::Invalid(_)),
                "{family:#x}"
            );
        }
        assert!(matches!(
            parse(&v2(1, 0x11, &[0u8; 4097])),
            Parsed::Invalid(_)
        ));
        assert!(matches!(
            parse(&v2(0, 0x11, &[0u8; 4096])),
            Parsed::Header { .. }
        ));
        assert_eq!(parse(&h[..20]), Parsed::Incomplete);
        assert_eq!(parse(&h[..5]), Parsed::Incomplete);
        assert!(matches!(
            parse(&v2(1, 0x11, &inet[..8])),
            Parsed::Invalid(_)
        ));
        assert!(matches!(parse(&v2(2, 0x11, &inet)), Parsed::Invalid(_)));
        let mut v3 = h;
        v3[12] = 0x31;
        assert!(matches!(parse(&v3), Parsed::Invalid(_)));
    }

    #[test]
    fn other_protocols_are_not_headers() {
        for other in [
            &b"GET / HTTP/1.1\r\n"[..],
            b"\x16\x03\x01",
            b"PRI * HTTP/2.0",
            b"\r\nX",
            b"proxy ",
        ] {
            assert_eq!(parse(other), Parsed::Absent, "{other:?}");
        }
    }

    #[tokio::test]
    async fn the_bytes_after_the_header_stay_for_the_connection() {
        let (mut client, mut server) = tokio::io::duplex(1024);
        let sent = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt as _;
            client.write_all(b"PROXY TCP4 203.0.113.7 ").await.ok();
            client
                .write_all(b"127.0.0.1 5555 80\r\nGET / HTTP/1.1\r\n")
                .await
                .ok();
            client
        });
        let (source, rest) = read(&mut server).await.unwrap();
        assert_eq!(source, addr("203.0.113.7:5555"));
        let _client = sent.await;
        let mut rest = rest.to_vec();
        let mut more = vec![0u8; 64];
        if rest.len() < 16 {
            let n = server.read(&mut more).await.unwrap_or(0);
            rest.extend_from_slice(&more[..n]);
        }
        assert_eq!(rest, b"GET / HTTP/1.1\r\n");
    }
}
