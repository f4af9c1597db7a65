//! `forwardAuth`: an address the runtime can call (Traefik accepts any and answers every request
//! with 500 when it cannot), Traefik's TLS constraint (a certificate and its key together), field
//! names that can be copied, and a warning for Traefik's legacy `trustForwardHeader` mode.

use crate::diag::Code;
use crate::model::dynamic::ForwardAuth;

use super::{Ctx, check_server_url};

impl Ctx<'_> {
    pub(super) fn check_forward_auth(
        &mut self,
        name: &str,
        fi: usize,
        base: &str,
        f: &ForwardAuth,
    ) {
        match f.address.as_deref() {
            None | Some("") => {
                let span = self.key_span(fi, base);
                self.err(
                    Code::InvalidValue,
                    format!("middleware `{name}`: forwardAuth needs an `address` (Traefik answers every request with 500 without one)"),
                    span,
                    format!("{base}/address"),
                );
            }
            Some(a) => {
                let why = match check_server_url(a) {
                    Ok(u) if u.scheme() == "h2c" => {
                        Some("has scheme `h2c`; use http or https".to_owned())
                    }
                    Ok(_) => None,
                    Err(why) => Some(why),
                };
                if let Some(why) = why {
                    let p = format!("{base}/address");
                    let span = self.span(fi, &p);
                    self.err(
                        Code::InvalidUrl,
                        format!("middleware `{name}`: forwardAuth address `{a}` {why} (Traefik answers every request with 500)"),
                        span,
                        p,
                    );
                }
            }
        }
        if let Some(t) = &f.tls {
            let set = |v: &Option<String>| v.as_deref().is_some_and(|s| !s.is_empty());
            if set(&t.cert) != set(&t.key) {
                let p = format!("{base}/tls");
                let span = self.key_span(fi, &p);
                self.err(
                    Code::InvalidValue,
                    format!("middleware `{name}`: unable to create client TLS configuration: both TLS cert and key must be defined"),
                    span,
                    p,
                );
            }
        }
        for (key, list) in [
            ("authResponseHeaders", &f.auth_response_headers),
            ("authRequestHeaders", &f.auth_request_headers),
        ] {
            for (i, h) in list.iter().flatten().enumerate() {
                if !super::traffic::is_field_name(h) {
                    let p = format!("{base}/{key}/{i}");
                    let span = self.span(fi, &p);
                    self.err(
                        Code::InvalidValue,
                        format!("middleware `{name}`: `{h}` is not a header field name"),
                        span,
                        p,
                    );
                }
            }
        }
        if f.forward_body == Some(true) && f.max_body_size.is_none() {
            let p = format!("{base}/forwardBody");
            let span = self.span(fi, &p);
            self.warn(
                Code::InvalidValue,
                format!("middleware `{name}`: forwardBody without maxBodySize reads request bodies of any size into memory (Traefik warns too); set maxBodySize"),
                span,
                p,
            );
        }
        if f.trust_forward_header.is_none() {
            let span = self.key_span(fi, base);
            self.warn(
                Code::InvalidValue,
                format!("middleware `{name}`: trustForwardHeader is not set: as Traefik, X-Forwarded-For, -Proto, -Method, -Host and -Uri are overwritten and the other X-Forwarded fields the client sent reach the auth server; set it to false to send only the proxy's, or true to trust the client's"),
                span,
                format!("{base}/trustForwardHeader"),
            );
        }
    }
}
