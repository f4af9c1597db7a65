//! `buffering`: its sizes (Traefik refuses a negative one and then answers 404 on every router
//! using it — here `check` fails) and its `retryExpression`, parsed as Traefik parses it.

use crate::breaker_expr;
use crate::diag::Code;
use crate::model::dynamic::Buffering;

use super::Ctx;

impl Ctx<'_> {
    pub(super) fn check_buffering(&mut self, name: &str, fi: usize, base: &str, b: &Buffering) {
        for (key, value, kind) in [
            ("maxRequestBodyBytes", b.max_request_body_bytes, "max"),
            ("memRequestBodyBytes", b.mem_request_body_bytes, "mem"),
            ("maxResponseBodyBytes", b.max_response_body_bytes, "max"),
            ("memResponseBodyBytes", b.mem_response_body_bytes, "mem"),
        ] {
            if let Some(v) = value
                && v < 0
            {
                let p = format!("{base}/{key}");
                let span = self.span(fi, &p);
                self.err(
                    Code::InvalidValue,
                    format!(
                        "middleware `{name}`: buffering {key}: {kind} bytes should be >= 0 got {v}"
                    ),
                    span,
                    p,
                )
                .hint = Some(format!(
                    "Traefik disables the middleware and answers 404 on its routers; use 0 for {}",
                    if kind == "max" {
                        "no limit"
                    } else {
                        "the default of 1 MiB"
                    }
                ));
            }
        }
        let Some(written) = b.retry_expression.as_deref().filter(|e| !e.is_empty()) else {
            return;
        };
        if let Err(e) = breaker_expr::parse_retry(written) {
            let p = format!("{base}/retryExpression");
            let span = self.span(fi, &p).map(|value| match e.offset {
                Some(at) => self.rule_span(value, written, at, 1),
                None => value,
            });
            self.err(
                Code::InvalidValue,
                format!("middleware `{name}`: buffering retryExpression: {}", e.message),
                span,
                p,
            )
            .hint = Some(
                "for example `IsNetworkError() && Attempts() <= 2`: `Attempts()` and `ResponseCode()` compared with whole numbers, `RequestMethod() == \"POST\"`, joined with && and ||".into(),
            );
        }
    }
}
