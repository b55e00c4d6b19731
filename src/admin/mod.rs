//! The operator's commands on a bridge's store, run from the CLI beside (or without)
//! running bridges: `hitl-bridge pending` ([`pending`]), `hitl-bridge cancel`
//! ([`cancel`]), `hitl-bridge audit export` ([`audit_export`]), `hitl-bridge rules`
//! ([`rules`]) and `hitl-bridge web login` ([`web_login`]).
//!
//! Each command opens the store named by the same config as `run`, does its work and
//! returns what to print; running bridges pick up a change at their next rescan (as
//! with `hitl-bridge pair`). Formatting is pure and lives beside each command; this
//! module holds the pieces they share (times, durations, chat names) and the error.
//! Nothing here talks to a platform or a backend.

pub mod audit_export;
pub mod cancel;
pub mod pending;
pub mod rules;
pub mod web_login;

use std::io::Write;

use chrono::SecondsFormat;

use crate::clock::now_ms;
use crate::config::Settings;
use crate::store::{ChatKey, Store, StoreError};

/// Why an admin command changed nothing.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("the store: {0}")]
    Store(#[from] StoreError),
    #[error("no request has approval key {key:?}{}", in_session(.session.as_deref()))]
    UnknownKey { key: String, session: Option<String> },
    #[error("approval key {key:?} is pending in several sessions ({}); pick one with --session", .sessions.join(", "))]
    Ambiguous { key: String, sessions: Vec<String> },
    #[error("the reason is longer than {max} characters", max = cancel::MAX_REASON_CHARS)]
    ReasonTooLong,
    #[error("no active rule has id {id:?} (unknown or already revoked); `hitl-bridge rules` lists them")]
    UnknownRule { id: String },
    #[error("writing the export: {0}")]
    Write(#[from] std::io::Error),
    #[error("writing CSV: {0}")]
    Csv(#[from] csv::Error),
    #[error("encoding an audit record: {0}")]
    Encode(#[from] serde_json::Error),
    #[error("the web inbox is off: set web.enabled = true (and web.public_url) first")]
    WebDisabled,
    #[error("{0:?} is not platform:user_id (e.g. telegram:123456789, discord:80351110224678912)")]
    NotAPerson(String),
}

fn in_session(session: Option<&str>) -> String {
    session.map(|s| format!(" in session {s:?}")).unwrap_or_default()
}

/// One admin command, as the CLI parsed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminCommand {
    Pending,
    Cancel {
        key: String,
        session: Option<String>,
        reason: Option<String>,
        /// The operator's name, for the audit log.
        by: String,
    },
    AuditExport {
        since_ms: Option<i64>,
        format: audit_export::Format,
    },
    /// `rules` / `rules list`.
    RulesList,
    RulesRevoke {
        id: String,
        /// The operator's name, for the audit log.
        by: String,
    },
    /// `web login PLATFORM:USER_ID`: a one-time sign-in link to the inbox.
    WebLogin {
        person: String,
        name: Option<String>,
        web: crate::web::WebSettings,
    },
}

/// Runs `command` against the store of `settings` (opened and migrated as `run`
/// would) and writes what it has to say to `out`.
pub async fn run_cli(settings: &Settings, command: &AdminCommand, out: &mut dyn Write) -> Result<(), AdminError> {
    let store = Store::connect_with(&settings.store.url, settings.store.sqlite_synchronous).await?;
    let result = run_on(&store, command, out).await;
    store.close().await;
    result
}

async fn run_on(store: &Store, command: &AdminCommand, out: &mut dyn Write) -> Result<(), AdminError> {
    match command {
        AdminCommand::Pending => writeln!(out, "{}", pending::run(store, now_ms()).await?)?,
        AdminCommand::Cancel { key, session, reason, by } => {
            let outcome = cancel::run(store, key, session.as_deref(), reason.as_deref(), &cancel::operator(by), now_ms()).await?;
            writeln!(out, "{}", cancel::describe(&outcome))?;
        }
        AdminCommand::AuditExport { since_ms, format } => {
            audit_export::run(store, since_ms.unwrap_or(i64::MIN), *format, out).await?;
        }
        AdminCommand::RulesList => writeln!(out, "{}", rules::list(store).await?)?,
        AdminCommand::RulesRevoke { id, by } => writeln!(out, "{}", rules::revoke(store, id, by, now_ms()).await?)?,
        AdminCommand::WebLogin { person, name, web } => writeln!(out, "{}", web_login::run(store, web, person, name.as_deref()).await?)?,
    }
    Ok(out.flush()?)
}

/// Unix ms as RFC 3339 in UTC with milliseconds, e.g. `2025-06-01T08:30:00.250Z`.
pub fn rfc3339_ms(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(|| ms.to_string(), |t| t.to_rfc3339_opts(SecondsFormat::Millis, true))
}

/// Unix ms as RFC 3339 in UTC to the second, e.g. `2025-06-01T08:30:00Z` (tables).
pub fn rfc3339_s(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(|| ms.to_string(), |t| t.to_rfc3339_opts(SecondsFormat::Secs, true))
}

/// A table: the header and one line per row, columns padded to their widest cell (two
/// spaces between; the last column unpadded).
pub fn aligned<const N: usize>(header: &[&str; N], rows: &[[String; N]]) -> String {
    let mut widths = header.map(|h| h.chars().count());
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut out = String::new();
        for (n, (cell, width)) in cells.zip(widths).enumerate() {
            out.push_str(cell);
            if n + 1 < N {
                out.push_str(&" ".repeat(width - cell.chars().count() + 2));
            }
        }
        out
    };
    std::iter::once(line(&mut header.iter().copied())).chain(rows.iter().map(|row| line(&mut row.iter().map(String::as_str)))).collect::<Vec<_>>().join("\n")
}

/// A span for people: `45s`, `3m12s`, `2h05m`, `3d04h` (two units at most; negative
/// spans count as zero).
pub fn human_duration(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    let (d, h, m) = (s / 86_400, s / 3600 % 24, s / 60 % 60);
    match () {
        _ if d > 0 => format!("{d}d{h:02}h"),
        _ if h > 0 => format!("{h}h{m:02}m"),
        _ if m > 0 => format!("{m}m{:02}s", s % 60),
        _ => format!("{s}s"),
    }
}

/// A chat as an operator names it: `telegram:-100123`, `telegram:-100123/7` (a topic
/// or thread), `discord:1100000000000000000`, or `console`.
pub fn chat_label(chat: &ChatKey) -> String {
    crate::platform::registry::networks().display_chat(chat)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_keep_two_units() {
        let cases =
            [(0, "0s"), (999, "0s"), (45_000, "45s"), (192_000, "3m12s"), (3_600_000, "1h00m"), (7_500_000, "2h05m"), (273_600_000, "3d04h"), (-5_000, "0s")];
        for (ms, want) in cases {
            assert_eq!(human_duration(ms), want, "{ms} ms");
        }
    }

    #[test]
    fn chats_are_named_as_operators_write_them() {
        assert_eq!(chat_label(&ChatKey::new("telegram", "-100123", None)), "telegram:-100123");
        assert_eq!(chat_label(&ChatKey::new("telegram", "-100123", Some("7"))), "telegram:-100123/7");
        assert_eq!(chat_label(&ChatKey::new("console", "stdin", None)), "console");
    }

    #[test]
    fn times_are_utc_with_milliseconds() {
        assert_eq!(rfc3339_ms(1_748_766_600_250), "2025-06-01T08:30:00.250Z");
    }
}
