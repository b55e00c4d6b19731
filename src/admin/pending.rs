//! `hitl-bridge pending`: one aligned row per pending request (key, the agent that
//! pushed it, session, where it is shown, what it asks, how long it has waited, when it
//! ends), oldest first. Keys are per agent, so the agent tells two same keys apart. Reads
//! only; the table itself is built by pure functions.

use super::{AdminError, chat_label, human_duration};
use crate::interaction::{Interaction, Origin, RequestKind};
use crate::store::{ChatKey, Store};

/// The column titles, in order.
pub const HEADER: [&str; 7] = ["KEY", "AGENT", "SESSION", "TARGET", "KIND", "AGE", "DEADLINE"];

/// What `pending` prints when nothing waits.
pub const EMPTY: &str = "no pending requests";

/// One pending request, formatted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingRow {
    pub key: String,
    /// The HTTP API token's name for a pushed request; `-` for a chat turn's.
    pub agent: String,
    pub session: String,
    /// The chats it is shown in, comma-separated; `-` when none (a chat turn whose
    /// session has no chat bound, say).
    pub target: String,
    /// `approval:tool,tool` or `question`.
    pub kind: String,
    pub age: String,
    /// `in 4m48s`, or `overdue 12s` when the deadline passed (a running bridge
    /// expires it after its grace period).
    pub deadline: String,
}

impl PendingRow {
    fn cells(&self) -> [&str; 7] {
        [&self.key, &self.agent, &self.session, &self.target, &self.kind, &self.age, &self.deadline]
    }
}

/// The row for `i`, shown in `targets`, at `now_ms`.
pub fn row(i: &Interaction, targets: &[ChatKey], now_ms: i64) -> PendingRow {
    let target = if targets.is_empty() { "-".to_owned() } else { targets.iter().map(chat_label).collect::<Vec<_>>().join(",") };
    let kind = match &i.request.kind {
        RequestKind::Approval { actions } => {
            format!("approval:{}", actions.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(","))
        }
        RequestKind::Questions { .. } => "question".to_owned(),
    };
    let left = i.deadline_ms - now_ms;
    let deadline = if left >= 0 { format!("in {}", human_duration(left)) } else { format!("overdue {}", human_duration(-left)) };
    PendingRow {
        key: i.approval_key().to_owned(),
        agent: match &i.origin {
            Origin::Pushed { agent, .. } => agent.clone(),
            Origin::Chat => "-".to_owned(),
        },
        session: i.session_id.clone(),
        target,
        kind,
        age: human_duration(now_ms - i.created_at_ms),
        deadline,
    }
}

/// The table: a header and one line per row, columns padded to their widest cell
/// (two spaces between; the last column unpadded), or [`EMPTY`].
pub fn table(rows: &[PendingRow]) -> String {
    if rows.is_empty() {
        return EMPTY.to_owned();
    }
    let mut widths = HEADER.map(|h| h.chars().count());
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row.cells()) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 7]| {
        let mut out = String::new();
        for (n, (cell, width)) in cells.iter().zip(widths).enumerate() {
            if n + 1 == cells.len() {
                out.push_str(cell);
            } else {
                out.push_str(cell);
                out.push_str(&" ".repeat(width - cell.chars().count() + 2));
            }
        }
        out
    };
    std::iter::once(line(HEADER)).chain(rows.iter().map(|r| line(r.cells()))).collect::<Vec<_>>().join("\n")
}

/// Reads the pending requests of `store` and formats them at `now_ms`.
pub async fn run(store: &Store, now_ms: i64) -> Result<String, AdminError> {
    let targets = store.pending_targets().await?;
    let rows: Vec<PendingRow> = store.pending_interactions().await?.iter().map(|i| row(i, targets.get(&i.id).map_or(&[][..], Vec::as_slice), now_ms)).collect();
    Ok(table(&rows))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::{RequestBuilder, TimeoutDefaults};
    use crate::protocol::ActionRequest;
    use serde_json::json;

    const NOW: i64 = 1_748_766_600_000;

    fn interaction(key: &str, names: &[&str], created: i64, timeout_secs: u64) -> Interaction {
        let args = |n: &str| if n == "ask_user_question" { json!({"questions": [{"question": "Q?", "options": [{"label": "A"}]}]}) } else { json!({}) };
        let actions = names.iter().map(|n| ActionRequest { name: (*n).into(), args: args(n), description: None, tool_use_id: None }).collect();
        let request = RequestBuilder::start(key, actions, vec![], Some(timeout_secs)).finish(TimeoutDefaults::default()).expect("request");
        Interaction::new(format!("id-{key}"), "S".into(), request, None, created)
    }

    #[test]
    fn rows_name_targets_kind_age_and_deadline() {
        let i = interaction("S_1", &["execute_trade", "send_report"], NOW - 192_000, 300);
        let chats = [ChatKey::new("telegram", "-100123", None), ChatKey::new("telegram", "-100123", Some("7"))];
        assert_eq!(
            row(&i, &chats, NOW),
            PendingRow {
                key: "S_1".into(),
                agent: "-".into(),
                session: "S".into(),
                target: "telegram:-100123,telegram:-100123/7".into(),
                kind: "approval:execute_trade,send_report".into(),
                age: "3m12s".into(),
                deadline: "in 1m48s".into(),
            }
        );
        let q = interaction("S_2", &["ask_user_question"], NOW - 700_000, 600);
        let r = row(&q, &[], NOW);
        assert_eq!((r.target.as_str(), r.kind.as_str(), r.deadline.as_str()), ("-", "question", "overdue 1m40s"));
    }

    #[test]
    fn table_aligns_columns_and_says_when_empty() {
        let rows = [
            row(&interaction("S_1", &["execute_trade"], NOW - 45_000, 300), &[ChatKey::new("console", "stdin", None)], NOW),
            row(&interaction("deploy-42_1", &["deploy"], NOW - 7_500_000, 86_400), &[ChatKey::new("discord", "11", None)], NOW),
        ];
        assert_eq!(
            table(&rows),
            "KEY          AGENT  SESSION  TARGET      KIND                    AGE    DEADLINE\n\
             S_1          -      S        console     approval:execute_trade  45s    in 4m15s\n\
             deploy-42_1  -      S        discord:11  approval:deploy         2h05m  in 21h55m"
        );
        assert_eq!(table(&[]), "no pending requests");
    }
}
