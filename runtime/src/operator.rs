//! `bridge-runtime server STATE`: an operator takes a server out of rotation (`drain`,
//! `maintenance`) or back (`ready`) through the running proxy's API
//! (`POST {api}/api/bridge/servers`). Blocking std I/O and rustls, so no async runtime starts;
//! HTTPS for the prod dashboard (trusting the system store, a `--cacert` file, or with
//! `--insecure` anything), basic credentials for its basicAuth.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};

/// What a call needs.
#[derive(Debug, Clone)]
pub struct Request {
    /// The API entry point, e.g. `https://proxy:8080` (a base path may follow).
    pub api: String,
    /// The load-balancer service, as in the plan (`central` or `central@file`).
    pub service: String,
    /// The server's URL as in the plan.
    pub server: String,
    /// `ready`, `drain` or `maintenance`.
    pub state: String,
    /// `user:password` for the dashboard's basicAuth.
    pub user: Option<String>,
    /// PEM CA file trusted for an `https` API.
    pub cacert: Option<String>,
    /// Accept any certificate of an `https` API.
    pub insecure: bool,
    /// Whole exchange bound.
    pub timeout: Duration,
}

/// Why the call failed.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// The arguments cannot make a request.
    #[error("{0}")]
    Usage(String),
    /// Connecting, TLS, or reading the answer failed.
    #[error("{0}")]
    Io(String),
    /// The proxy refused (status and its message).
    #[error("the proxy answered {status}: {body}")]
    Refused {
        /// HTTP status.
        status: u16,
        /// Its body.
        body: String,
    },
}

fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// Sends the request; returns the server's entry as the proxy reports it (JSON).
pub fn set_state(r: &Request) -> Result<String, OperatorError> {
    let usage = |m: String| OperatorError::Usage(m);
    let io = |e: &dyn std::fmt::Display| OperatorError::Io(e.to_string());
    let api = url::Url::parse(&r.api).map_err(|e| usage(format!("--api `{}`: {e}", r.api)))?;
    let https = match api.scheme() {
        "http" => false,
        "https" => true,
        other => return Err(usage(format!("--api: `{other}` is not http or https"))),
    };
    let host = api
        .host_str()
        .ok_or_else(|| usage("--api has no host".into()))?
        .to_owned();
    let port = api.port_or_known_default().unwrap_or(80);
    let base = api.path().trim_end_matches('/');
    let target = format!(
        "{base}/api/bridge/servers?service={}&url={}&state={}",
        enc(&r.service),
        enc(&r.server),
        enc(&r.state)
    );
    let addr = (host.trim_start_matches('[').trim_end_matches(']'), port)
        .to_socket_addrs()
        .map_err(|e| io(&format!("cannot resolve {host}: {e}")))?
        .next()
        .ok_or_else(|| OperatorError::Io(format!("{host} has no address")))?;
    let tcp = TcpStream::connect_timeout(&addr, r.timeout)
        .map_err(|e| io(&format!("cannot connect to {addr}: {e}")))?;
    tcp.set_read_timeout(Some(r.timeout)).map_err(|e| io(&e))?;
    tcp.set_write_timeout(Some(r.timeout)).map_err(|e| io(&e))?;
    let auth = r.user.as_ref().map_or_else(String::new, |u| {
        format!(
            "Authorization: Basic {}\r\n",
            base64::engine::general_purpose::STANDARD.encode(u)
        )
    });
    let authority = match api.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.clone(),
    };
    let head = format!(
        "POST {target} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: bridge-runtime-server\r\n{auth}Content-Length: 0\r\nConnection: close\r\n\r\n"
    );
    let mut answer = Vec::new();
    if https {
        let cfg = client_config(r)?;
        let name = ServerName::try_from(
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
        )
        .map_err(|_| usage(format!("`{host}` is not a TLS server name")))?;
        let conn = rustls::ClientConnection::new(cfg, name).map_err(|e| io(&e))?;
        let mut s = rustls::StreamOwned::new(conn, tcp);
        s.write_all(head.as_bytes())
            .map_err(|e| io(&format!("TLS: {e}")))?;
        read_all(&mut s, &mut answer).map_err(|e| io(&e))?;
    } else {
        let mut s = tcp;
        s.write_all(head.as_bytes()).map_err(|e| io(&e))?;
        read_all(&mut s, &mut answer).map_err(|e| io(&e))?;
    }
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse::<u16>().ok())
        .ok_or_else(|| {
            OperatorError::Io(format!("not an HTTP answer: {:?}", head.lines().next()))
        })?;
    if status == 200 {
        Ok(body.trim().to_owned())
    } else {
        Err(OperatorError::Refused {
            status,
            body: body.trim().to_owned(),
        })
    }
}

/// Reads to the end (bounded to 1 MiB); a TLS peer closing without close_notify after the whole
/// answer is fine.
fn read_all(s: &mut impl Read, out: &mut Vec<u8>) -> std::io::Result<()> {
    let mut limited = s.take(1 << 20);
    match limited.read_to_end(out) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !out.is_empty() => Ok(()),
        Err(e) => Err(e),
    }
}

fn client_config(r: &Request) -> Result<Arc<rustls::ClientConfig>, OperatorError> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| OperatorError::Io(e.to_string()))?;
    // `--insecure`: any certificate (handshake signatures still verified), as the servers
    // transport's `insecureSkipVerify`.
    if r.insecure {
        return Ok(Arc::new(
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(crate::transport::AnyCertificate(
                    provider,
                )))
                .with_no_client_auth(),
        ));
    }
    let mut roots = rustls::RootCertStore::empty();
    match &r.cacert {
        Some(file) => {
            for c in CertificateDer::pem_file_iter(file)
                .map_err(|e| OperatorError::Usage(format!("--cacert {file}: {e}")))?
            {
                let c = c.map_err(|e| OperatorError::Usage(format!("--cacert {file}: {e}")))?;
                roots
                    .add(c)
                    .map_err(|e| OperatorError::Usage(format!("--cacert {file}: {e}")))?;
            }
        }
        None => {
            let _ = roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        }
    }
    Ok(Arc::new(
        builder.with_root_certificates(roots).with_no_client_auth(),
    ))
}
