//! Log output for the `hitl-bridge` process: the filter (`log.filter`, `RUST_LOG` wins)
//! and the format (`log.format`): `pretty` for people, `json` for log pipelines.
//!
//! JSON lines have one fixed shape, so a pipeline can rely on it:
//! `{"timestamp","level","target","message","fields":{…},"span":"…"}`. The fields of
//! every enclosing span are merged into `fields` (the event's own win on a clash), so
//! every line logged while handling a request carries its `approval_key` and
//! `session_id` (see [`interaction_span`]) and can be found by grepping the key.
//! Colour codes are written only when stderr is a terminal and `NO_COLOR` is unset.

use std::fmt;
use std::io::IsTerminal as _;

use serde_json::{Map, Value};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::{JsonFields, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

use crate::interaction::Interaction;
use serde::{Deserialize, Serialize};

/// The `[log]` section.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogSettings {
    pub filter: String,
    /// `pretty` (for people) or `json` (one object per line, for log pipelines).
    pub format: LogFormat,
}

impl Default for LogSettings {
    fn default() -> Self {
        Self { filter: "info".into(), format: LogFormat::Pretty }
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    #[default]
    Pretty,
    Json,
}

/// Installs the process-wide subscriber, writing to stderr. Call once, first thing.
pub fn init(settings: &LogSettings) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&settings.filter));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match settings.format {
        LogFormat::Pretty => builder.with_ansi(colour_wanted()).init(),
        LogFormat::Json => builder.with_ansi(false).fmt_fields(JsonFields::new()).event_format(JsonLine).init(),
    }
}

/// Colour only for a person at a terminal who has not asked for none (no-color.org).
fn colour_wanted() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The span every line about one request is logged in: the engine enters it while it
/// handles the request, and the chat lanes while they show or edit it.
pub fn interaction_span(interaction: &Interaction) -> tracing::Span {
    tracing::info_span!("interaction", approval_key = %interaction.approval_key(), session_id = %interaction.session_id)
}

/// Fills in the current [`interaction_span`]-shaped span (declared with empty
/// `approval_key` and `session_id`) once the interaction is known.
pub fn record_interaction(interaction: &Interaction) {
    let span = tracing::Span::current();
    span.record("approval_key", tracing::field::display(interaction.approval_key()));
    span.record("session_id", tracing::field::display(&interaction.session_id));
}

/// Formats an event as one JSON object on one line (see the module doc for its shape).
pub struct JsonLine;

impl<S, N> FormatEvent<S, N> for JsonLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let mut fields = Map::new();
        let mut innermost = None;
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                innermost = Some(span.name());
                let extensions = span.extensions();
                // The fmt layer stored the span's fields as JSON text (`JsonFields`).
                if let Some(stored) = extensions.get::<FormattedFields<N>>()
                    && let Ok(Value::Object(span_fields)) = serde_json::from_str::<Value>(stored)
                {
                    fields.extend(span_fields);
                }
            }
        }
        let mut own = String::new();
        ctx.format_fields(Writer::new(&mut own), event)?;
        let mut own = match serde_json::from_str::<Value>(&own) {
            Ok(Value::Object(own)) => own,
            _ => Map::new(),
        };
        let message = own.remove("message").unwrap_or(Value::String(String::new()));
        fields.extend(own);

        let metadata = event.metadata();
        let mut line = Map::new();
        line.insert("timestamp".into(), Value::String(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)));
        line.insert("level".into(), Value::String(metadata.level().to_string()));
        line.insert("target".into(), Value::String(metadata.target().to_owned()));
        line.insert("message".into(), message);
        line.insert("fields".into(), Value::Object(fields));
        if let Some(span) = innermost {
            line.insert("span".into(), Value::String(span.to_owned()));
        }
        let text = serde_json::to_string(&Value::Object(line)).map_err(|_| fmt::Error)?;
        writeln!(writer, "{text}")
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use super::*;

    /// Collects what the subscriber writes.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn json_lines(log: impl FnOnce()) -> Vec<Value> {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber =
            tracing_subscriber::fmt().with_writer(move || writer.clone()).with_ansi(false).fmt_fields(JsonFields::new()).event_format(JsonLine).finish();
        tracing::subscriber::with_default(subscriber, log);
        let text = String::from_utf8(captured.0.lock().expect("lock").clone()).expect("utf-8");
        text.lines().map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))).collect()
    }

    #[test]
    fn an_event_is_one_json_object_with_the_fixed_shape() {
        let lines = json_lines(|| tracing::warn!(attempts = 3, chat = "-100", "showing a request again"));
        assert_eq!(lines.len(), 1);
        let line = &lines[0];
        assert_eq!(line["level"], "WARN");
        assert_eq!(line["target"], "hitl_bridge::logging::tests");
        assert_eq!(line["message"], "showing a request again");
        assert_eq!(line["fields"], serde_json::json!({"attempts": 3, "chat": "-100"}));
        assert!(line.get("span").is_none(), "no span was entered");
        let stamp = line["timestamp"].as_str().expect("timestamp");
        assert!(chrono::DateTime::parse_from_rfc3339(stamp).is_ok(), "{stamp}");
    }

    /// Every line inside an interaction's span carries its key and session, nested
    /// spans included; the event's own field wins over a span's of the same name.
    #[test]
    fn span_fields_reach_every_line_inside_the_span() {
        let lines = json_lines(|| {
            let span = tracing::info_span!("interaction", approval_key = "trade_1", session_id = "s-9");
            let _entered = span.enter();
            tracing::info!("decided");
            let inner = tracing::info_span!("send", platform = "telegram");
            inner.in_scope(|| tracing::info!(platform = "console", "sent"));
        });
        assert_eq!(lines[0]["fields"], serde_json::json!({"approval_key": "trade_1", "session_id": "s-9"}));
        assert_eq!(lines[0]["span"], "interaction");
        assert_eq!(lines[1]["fields"], serde_json::json!({"approval_key": "trade_1", "session_id": "s-9", "platform": "console"}));
        assert_eq!(lines[1]["span"], "send");
    }

    /// Messages with quotes, newlines and non-ASCII stay one valid line.
    #[test]
    fn awkward_text_stays_one_valid_line() {
        let lines = json_lines(|| tracing::error!(reason = "bad \"json\"\nline 2", "Thảo: {}", "x\ty"));
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0]["message"], "Thảo: x\ty");
        assert_eq!(lines[0]["fields"]["reason"], "bad \"json\"\nline 2");
    }
}
