//! Bridge → backend commands (PROTOCOL.md §2): parses a text frame, records it (every
//! JSON value is recorded, even an invalid command), and dispatches `message`, `approval`
//! and `cancel`. Bad input is logged and skipped; an approval with the wrong shape for a
//! pending request is answered with an `error` event and the request keeps waiting.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::events;
use super::history;
use super::hub::Hub;
use super::runner;
use super::session::UserMessage;
use super::validate;

pub(crate) fn handle_frame(hub: &Arc<Hub>, session_id: &str, text: &str) {
    let command: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(e) => {
            tracing::warn!(%session_id, error = %e, "skipping unparseable frame");
            return;
        }
    };
    hub.record_command(command.clone());
    let Some(command) = command.as_object() else {
        tracing::warn!(%session_id, "skipping command that is not a JSON object");
        return;
    };
    // The connection decides the session; a different claim is a bridge bug worth seeing.
    if let Some(claimed) = command.get("session_id").and_then(Value::as_str)
        && claimed != session_id
    {
        tracing::warn!(%session_id, %claimed, "command names another session; using the connection's");
    }
    match command.get("type").and_then(Value::as_str) {
        Some("message") => message(hub, session_id, command),
        Some("approval") => approval(hub, session_id, command),
        Some("cancel") => runner::cancel(hub, session_id),
        other => tracing::warn!(%session_id, kind = ?other, "skipping command of unknown type"),
    }
}

fn message(hub: &Arc<Hub>, session_id: &str, command: &Map<String, Value>) {
    let Some(content) = command.get("content").and_then(Value::as_array) else {
        tracing::warn!(%session_id, "skipping message without a content array");
        return;
    };
    let texts: Vec<&str> = content
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    if texts.is_empty() {
        tracing::warn!(%session_id, "skipping message without text blocks");
        return;
    }
    // The bridge writes a message again when it cannot prove the first write arrived
    // (a crash, a lost connection); the same `message_id` means the same message.
    if let Some(id) = command.get("message_id").and_then(Value::as_str)
        && !hub.with_session(session_id, |s| s.first_sight_of_message(id))
    {
        tracing::info!(%session_id, message_id = %id, "a message already received; not running it again");
        return;
    }
    runner::enqueue(hub, session_id, UserMessage { text: texts.join("\n") });
}

fn approval(hub: &Hub, session_id: &str, command: &Map<String, Value>) {
    let Some(key) = command.get("approval_key").and_then(Value::as_str) else {
        tracing::warn!(%session_id, "skipping approval without an approval_key");
        return;
    };
    hub.with_session(session_id, |s| {
        let Some(pending) = s.pending.get(key) else {
            tracing::warn!(%session_id, approval_key = %key, "approval for an unknown or resolved key; ignored");
            return;
        };
        match validate::check(&pending.expect, command) {
            Err(why) => {
                tracing::warn!(%session_id, approval_key = %key, %why, "invalid approval");
                s.emit_json(events::error(&format!("invalid approval: {why}")));
            }
            Ok(reply) => {
                let Some(pending) = s.pending.remove(key) else { return };
                if let Some(entry) = s.history.get_mut(pending.history_pos) {
                    history::mark_resolved(entry, Some(&reply));
                }
                tracing::info!(%session_id, approval_key = %key, "request answered");
                // Fails only if the turn was just dropped (shutdown); nothing to tell then.
                let _ = pending.reply.send(reply);
            }
        }
    });
}
