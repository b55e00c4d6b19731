//! The statements the writes of one transaction leave to its end, run once for all of
//! them just before it commits: the rows they append to the audit log and the outbox
//! (one multi-row `INSERT` per table), and the rows they remove or mark (one statement
//! each: the shows of ended requests, the commands the backend proved it read, the
//! platform updates handled). A group commit of many decisions then costs a few
//! statements instead of several per decision. Nothing inside a transaction reads
//! these rows back, so holding them to its end changes nothing but the count of
//! statements; appended rows keep the order the writes added them in.
//!
//! A write that queues a command may ask for the outbox id the row gets
//! ([`OutboxId`]), so the connector can send the command without reading it back. The
//! ids are told only once the transaction has committed ([`Assigned::publish`]): a
//! rolled-back batch tells nothing, and its writes, retried one by one, ask again.

use std::sync::{Arc, OnceLock};

use sqlx::AnyConnection;

use super::audit::bind_entry;
use super::audit_entry::AuditEntry;
use super::error::{Result, StoreError};
use super::json;
use super::placeholders::{Marks, run_time_statement};
use super::row::column;
use crate::protocol::Command;

/// Audit rows per statement: 15 values each, far below SQLite's limit of 32,766.
const AUDIT_ROWS_PER_STATEMENT: usize = 256;

/// Outbox rows per statement: 4 values each.
const COMMANDS_PER_STATEMENT: usize = 512;

/// Keys in one `IN (…)` list.
const KEYS_PER_STATEMENT: usize = 512;

/// Where a write learns the outbox id of the command it queued, once its transaction
/// has committed. Empty when the write lost, or when the ids could not be matched to
/// their rows (then the connector reads the outbox instead).
pub(super) type OutboxId = Arc<OnceLock<i64>>;

/// What the writes of one transaction leave to its end; see the module doc.
#[derive(Default)]
pub(super) struct Deferred {
    audit: Vec<AuditEntry>,
    /// Each command with the time it was queued at, and where its id is told.
    commands: Vec<(Command, i64, OutboxId)>,
    /// Interactions that ended: where they still had to be shown is forgotten.
    ended: Vec<String>,
    /// Outbox rows the backend proved it read.
    delivered: Vec<i64>,
    /// Platform updates handled, as (platform, update id), and the latest time one
    /// was.
    handled: Vec<(String, String)>,
    handled_at_ms: i64,
}

impl Deferred {
    pub fn audit(&mut self, entry: &AuditEntry) {
        self.audit.push(entry.clone());
    }

    /// Queues `command` for its backend, as of `at_ms`; `id` learns its outbox id
    /// once the transaction commits.
    pub fn command(&mut self, command: &Command, at_ms: i64, id: &OutboxId) {
        self.commands.push((command.clone(), at_ms, id.clone()));
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

    /// Marks `platform`'s update `update_id` handled at `at_ms`. Updates handled in
    /// one transaction share the latest of their times (they differ by milliseconds;
    /// the time only says when the row may be pruned).
    pub fn mark_handled(&mut self, platform: &str, update_id: &str, at_ms: i64) {
        self.handled.push((platform.to_owned(), update_id.to_owned()));
        self.handled_at_ms = self.handled_at_ms.max(at_ms);
    }

    /// Runs everything left to the end, in the transaction `conn` is in. Returns the
    /// outbox ids to tell once it has committed.
    pub async fn run(self, conn: &mut AnyConnection) -> Result<Assigned> {
        let marks = Marks::of(conn);
        let mut assigned = Assigned::default();
        for chunk in self.commands.chunks(COMMANDS_PER_STATEMENT) {
            let sql =
                format!("INSERT INTO outbox (session_id, approval_key, command, created_at_ms) VALUES {} RETURNING id, session_id", marks.rows(chunk.len(), 4));
            // Safe: the text is only value marks; every value is bound.
            let mut insert = run_time_statement(sql);
            for (command, at_ms, _) in chunk {
                let approval_key = match command {
                    Command::Approval { approval_key, .. } => Some(approval_key.clone()),
                    Command::Message { .. } | Command::Cancel { .. } => None,
                };
                insert = insert.bind(command.session_id().to_owned()).bind(approval_key).bind(json::encode(command, "command")?).bind(*at_ms);
            }
            let rows = insert.fetch_all(&mut *conn).await.map_err(StoreError::query("enqueue commands"))?;
            let mut inserted = rows.iter().map(|row| Ok((column::<i64>(row, "id")?, column::<String>(row, "session_id")?))).collect::<Result<Vec<_>>>()?;
            assigned.match_ids(chunk, &mut inserted);
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
        let mut handled = self.handled;
        handled.sort_unstable();
        for platform_updates in handled.chunk_by(|a, b| a.0 == b.0) {
            let platform = platform_updates[0].0.as_str();
            for chunk in platform_updates.chunks(KEYS_PER_STATEMENT) {
                let sql = format!(
                    "UPDATE platform_inbox SET handled_at_ms = {} WHERE platform = {} AND update_id IN ({})",
                    marks.list(1, 1),
                    marks.list(2, 1),
                    marks.list(3, chunk.len())
                );
                // Safe: the text is only value marks; every value is bound.
                let mark = chunk.iter().fold(run_time_statement(sql).bind(self.handled_at_ms).bind(platform), |query, (_, id)| query.bind(id.as_str()));
                mark.execute(&mut *conn).await.map_err(StoreError::query("mark updates handled"))?;
            }
        }
        Ok(assigned)
    }
}

/// The outbox ids one transaction gave its commands, told to their writes once it has
/// committed.
#[derive(Default)]
#[must_use = "the ids are told only by publish, after the commit"]
pub(super) struct Assigned(Vec<(OutboxId, i64)>);

impl Assigned {
    /// Pairs `chunk`'s commands with the rows one multi-row insert returned, as (id,
    /// session). `RETURNING` lists rows in no set order, but ids ascend in the order
    /// rows are inserted (the outbox's delivery order already rests on that), and a
    /// `VALUES` list is inserted in its order: sorted by id, the rows line up with the
    /// commands. Checked on each row's session; on any mismatch no id of the chunk is
    /// told, and the connector reads those commands from the outbox.
    fn match_ids(&mut self, chunk: &[(Command, i64, OutboxId)], inserted: &mut [(i64, String)]) {
        inserted.sort_unstable_by_key(|(id, _)| *id);
        let lined_up = inserted.len() == chunk.len() && inserted.iter().zip(chunk).all(|((_, session), (command, _, _))| session == command.session_id());
        if !lined_up {
            tracing::warn!(commands = chunk.len(), rows = inserted.len(), "the outbox ids did not line up with their commands; the connector reads them back");
            return;
        }
        self.0.extend(chunk.iter().zip(inserted.iter()).map(|((_, _, slot), (id, _))| (slot.clone(), *id)));
    }

    /// Tells each write its command's id. Only after the commit.
    pub fn publish(self) {
        for (slot, id) in self.0 {
            // A slot is told once: a write that runs again (its batch failed) was told
            // nothing the first time.
            let _ = slot.set(id);
        }
    }
}
