//! Application logs (Traefik's `log`): `tracing` events written to standard error, either as
//! one human line per event (`common`: `bridge-runtime: message`, warnings and errors prefixed
//! with their level) or as one JSON object per line (`json`: `time`, `level`, `msg` and the
//! event's fields), filtered by the plan's level.
//!
//! Standard error, not standard output: the access log defaults to standard output, so the two
//! streams can be collected separately. Set once per process; a reload does not change the
//! format (the subscriber is global).

use std::fmt;

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use bridge_plan::{LogFormat, LogLevel};

/// Installs the process's log subscriber for `log` (only the first call has an effect).
pub fn init(log: &bridge_plan::Log) {
    let level = match log.level {
        LogLevel::Debug => Level::DEBUG,
        LogLevel::Info => Level::INFO,
        LogLevel::Warn => Level::WARN,
        LogLevel::Error => Level::ERROR,
    };
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .with_ansi(false);
    let _ = if log.format == LogFormat::Json {
        tracing::subscriber::set_global_default(
            builder
                .json()
                .flatten_event(true)
                .with_current_span(false)
                .with_span_list(false)
                .finish(),
        )
    } else {
        tracing::subscriber::set_global_default(builder.event_format(Human).finish())
    };
}

/// `bridge-runtime: message key=value`, with `warning: ` / `error: ` before the message.
#[derive(Debug)]
struct Human;

impl<S, N> FormatEvent<S, N> for Human
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        write!(writer, "bridge-runtime: ")?;
        match *event.metadata().level() {
            Level::ERROR => write!(writer, "error: ")?,
            Level::WARN => write!(writer, "warning: ")?,
            Level::DEBUG | Level::TRACE => write!(writer, "debug: ")?,
            Level::INFO => {}
        }
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}
