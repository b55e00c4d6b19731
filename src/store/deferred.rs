//! The statements the writes of one transaction leave to its end, run once for all of
//! them just before it commits: the rows they append to the audit log and the outbox
//! (one multi-row `INSERT` per table), and the rows they remove or mark (one statement
//! each: the shows of ended requests, the commands the backend proved it read, the
//! Telegram updates handled). A group commit of many decisions then costs a few
//! statements instead of several per decision. Nothing inside a transaction reads
//! these rows back, so holding them to its end changes nothing but the count of
//! statements; appended rows keep the order the writes added them in.

use sqlx::AnyConnection;

use super::audit::bind_entry;
use super::audit_entry::AuditEntry;
use super::error::{Result, StoreError};
use super::json;
use super::placeholders::{Marks, run_time_statement};
use crate::protocol::Command;

/// Audit rows per statement: 15 values each, far below SQLite's limit of 32,766.
const AUDIT_ROWS_PER_STATEMENT: usize = 256;

/// Outbox rows per statement: 4 values each.
const COMMANDS_PER_STATEMENT: usize = 512;

/// Keys in one `IN (…)` list.
const KEYS_PER_STATEMENT: usize = 512;

/// What the writes of one transaction leave to its end; see the module doc.
#[derive(Default)]
pub(super) struct Deferred {
    audit: Vec<AuditEntry>,
    /// Each command with the time it was queued at.
    commands: Vec<(Command, i64)>,
    /// Interactions that ended: where they still had to be shown is forgotten.
    ended: Vec<String>,
    /// Outbox rows the backend proved it read.
    delivered: Vec<i64>,
    /// Telegram updates handled, and the latest time one was.
    handled: Vec<i64>,
    handled_at_ms: i64,
}

impl Deferred {
    pub fn audit(&mut self, entry: &AuditEntry) {
        self.audit.push(entry.clone());
    }

    /// Queues `command` for its backend, as of `at_ms`.
    pub fn command(&mut self, command: &Command, at_ms: i64) {
        self.commands.push((command.clone(), at_ms));
    }

    /// Forgets where `interaction_id` still had to be shown: it ended, and an ended
    /// request is never shown late.
    pub fn drop_shows(&mut self, interaction_id: &str) {
        self.ended.push(interaction_id.to_owned());
    }

    /// Removes the outbox row `id`.
    pub fn remove_command(&mut self, id: i64) {
        self.delivered.push(id);
    }

    /// Marks Telegram update `update_id` handled at `at_ms`. Updates handled in one
    /// transaction share the latest of their times (they differ by milliseconds; the
    /// time only says when the row may be pruned).
    pub fn mark_handled(&mut self, update_id: i64, at_ms: i64) {
        self.handled.push(update_id);
        self.handled_at_ms = self.handled_at_ms.max(at_ms);
    }

    /// Runs everything left to the end, in the transaction `conn` is in.
    pub async fn run(self, conn: &mut AnyConnection) -> Result<()> {
        let marks = Marks::of(conn);
        for chunk in self.commands.chunks(COMMANDS_PER_STATEMENT) {
            let sql = format!("INSERT INTO outbox (session_id, approval_key, command, created_at_ms) VALUES {}", marks.rows(chunk.len(), 4));
            // Safe: the text is only value marks; every value is bound.
            let mut insert = run_time_statement(sql);
            for (command, at_ms) in chunk {
                let approval_key = match command {
                    Command::Approval { approval_key, .. } => Some(approval_key.clone()),
                    Command::Message { .. } | Command::Cancel { .. } => None,
                };
                insert = insert.bind(command.session_id().to_owned()).bind(approval_key).bind(json::encode(command, "command")?).bind(*at_ms);
            }
            insert.execute(&mut *conn).await.map_err(StoreError::query("enqueue commands"))?;
        }
        for chunk in self.audit.chunks(AUDIT_ROWS_PER_STATEMENT) {
            let sql = format!(
                "INSERT INTO audit_log (at_ms, session_id, approval_key, interaction_id, actor, outcome, reply,
                                        original_args, edited_args, latency_ms, agent, kind, tools, reason, attempts)
                 VALUES {}",
                marks.rows(chunk.len(), 15)
            );
            // Safe: the text is only value marks; every value is bound.
            let mut insert = run_time_statement(sql);
            for entry in chunk {
                insert = bind_entry(insert, entry)?;
            }
            insert.execute(&mut *conn).await.map_err(StoreError::query("append audit entries"))?;
        }
        for chunk in self.ended.chunks(KEYS_PER_STATEMENT) {
            let sql = format!("DELETE FROM pending_shows WHERE interaction_id IN ({})", marks.list(1, chunk.len()));
            // Safe: the text is only value marks; every value is bound.
            let delete = chunk.iter().fold(run_time_statement(sql), |query, id| query.bind(id.as_str()));
            delete.execute(&mut *conn).await.map_err(StoreError::query("drop the shows of ended interactions"))?;
        }
        for chunk in self.delivered.chunks(KEYS_PER_STATEMENT) {
            let sql = format!("DELETE FROM outbox WHERE id IN ({})", marks.list(1, chunk.len()));
            // Safe: the text is only value marks; every value is bound.
            let delete = chunk.iter().fold(run_time_statement(sql), |query, id| query.bind(*id));
            delete.execute(&mut *conn).await.map_err(StoreError::query("remove delivered commands"))?;
        }
        for chunk in self.handled.chunks(KEYS_PER_STATEMENT) {
            let sql = format!("UPDATE telegram_inbox SET handled_at_ms = {} WHERE update_id IN ({})", marks.list(1, 1), marks.list(2, chunk.len()));
            // Safe: the text is only value marks; every value is bound.
            let mark = chunk.iter().fold(run_time_statement(sql).bind(self.handled_at_ms), |query, id| query.bind(*id));
            mark.execute(&mut *conn).await.map_err(StoreError::query("mark updates handled"))?;
        }
        Ok(())
    }
}
