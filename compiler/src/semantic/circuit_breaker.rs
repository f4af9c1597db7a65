//! `circuitBreaker`: the expression parsed as Traefik parses it (an error stops the router in
//! Traefik, which then answers 404 — here `check` fails), a fallback status Traefik can answer
//! with, and warnings where Traefik silently takes a duration of zero or less as its default.

use crate::breaker_expr;
use crate::diag::Code;
use crate::model::dynamic::CircuitBreaker;

use super::Ctx;

impl Ctx<'_> {
    pub(super) fn check_circuit_breaker(
        &mut self,
        name: &str,
        fi: usize,
        base: &str,
        c: &CircuitBreaker,
    ) {
        let p = format!("{base}/expression");
        let written = c.expression.as_deref().unwrap_or_default();
        if let Err(e) = breaker_expr::parse(written) {
            let span = match (c.expression.is_some(), self.span(fi, &p)) {
                (true, Some(value)) => Some(match e.offset {
                    Some(at) => self.rule_span(value, written, at, 1),
                    None => value,
                }),
                _ => self.key_span(fi, base),
            };
            self.err(
                Code::InvalidValue,
                format!("middleware `{name}`: circuitBreaker expression: {}", e.message),
                span,
                p,
            )
            .hint = Some(
                "for example `NetworkErrorRatio() > 0.30`, `ResponseCodeRatio(500, 600, 0, 600) > 0.25` or `LatencyAtQuantileMS(50.0) > 100`, joined with && and ||".into(),
            );
        }
        if let Some(code) = c.response_code
            && !(200..=999).contains(&code)
        {
            let p = format!("{base}/responseCode");
            let span = self.span(fi, &p);
            let what = if (100..200).contains(&code) {
                "an interim status, which Traefik sends followed by a `200 OK` nobody asked for"
            } else {
                "not a status Go can write: Traefik closes the client's connection without an answer"
            };
            self.err(
                Code::InvalidValue,
                format!("middleware `{name}`: circuitBreaker responseCode {code} is {what}"),
                span,
                p,
            )
            .hint = Some("use a final status from 200 to 999; Traefik's default is 503".into());
        }
        for (key, d, default) in [
            ("checkPeriod", c.check_period, "100ms"),
            ("fallbackDuration", c.fallback_duration, "10s"),
            ("recoveryDuration", c.recovery_duration, "10s"),
        ] {
            if let Some(d) = d
                && d.nanos <= 0
            {
                let p = format!("{base}/{key}");
                let span = self.span(fi, &p);
                self.warn(
                    Code::InvalidValue,
                    format!("middleware `{name}`: circuitBreaker {key} of zero or less is taken as the default {default}, as Traefik takes it"),
                    span,
                    p,
                );
            }
        }
    }
}
