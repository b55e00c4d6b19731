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
use super::message_ref::MessageRef;
use super::placeholders::{Marks, bind_keys, list_statement, padded_len, run_time_statement};
use super::row::column;
use crate::protocol::Command;

/// Audit rows per statement: 15 values each, far below SQLite's limit of 32,766.
const AUDIT_ROWS_PER_STATEMENT: usize = 256;

/// Outbox rows per statement: 4 values each.
const COMMANDS_PER_STATEMENT: usize = 512;

/// Keys in one `IN (…)` list.
const KEYS_PER_STATEMENT: usize = 512;

/// Messages marked shown per statement: 6 values each.
const SHOWN_PER_STATEMENT: usize = 256;

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
    /// Interactions that ended: where they still had to be shown, and the UI state
    /// platforms kept for their clicks, are forgotten.
    ended: Vec<String>,
    /// Messages whose revision shown was recorded, the last record of each winning.
    shown: Vec<(MessageRef, i64)>,
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

    /// Forgets where `interaction_id` still had to be shown (an ended request is never
    /// shown late) and the UI state kept for its clicks (no click can act on it any
    /// more): it ended.
    pub fn forget_ended(&mut self, interaction_id: &str) {
        self.ended.push(interaction_id.to_owned());
    }

    /// Records that `message` shows its interaction at `revision`.
    pub fn mark_shown(&mut self, message: &MessageRef, revision: i64) {
        self.shown.push((message.clone(), revision));
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
            for (table, doing) in [("pending_shows", "drop the shows of ended interactions"), ("ui_state", "forget the UI state of ended interactions")] {
                let sql = format!("DELETE FROM {table} WHERE interaction_id IN ({})", marks.list(1, padded_len(chunk.len())));
                // Safe: the table is one of two names above; the rest is value marks,
                // every value bound.
                let delete = bind_keys(list_statement(sql), chunk, String::as_str);
                delete.execute(&mut *conn).await.map_err(StoreError::query(doing))?;
            }
        }
        mark_shown(conn, marks, self.shown).await?;
        for chunk in self.delivered.chunks(KEYS_PER_STATEMENT) {
            let sql = format!("DELETE FROM outbox WHERE id IN ({})", marks.list(1, padded_len(chunk.len())));
            // Safe: the text is only value marks; every value is bound.
            let delete = bind_keys(list_statement(sql), chunk, |id| *id);
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
                    marks.list(3, padded_len(chunk.len()))
                );
                // Safe: the text is only value marks; every value is bound.
                let mark = bind_keys(list_statement(sql).bind(self.handled_at_ms).bind(platform), chunk, |(_, id)| id.as_str());
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

/// The last record of each message, in the order of the messages: a stable sort by
/// message keeps each one's records in order, and the last of each run is kept.
fn last_of_each(mut shown: Vec<(MessageRef, i64)>) -> Vec<(MessageRef, i64)> {
    fn key(m: &MessageRef) -> (&str, &str, &str, Option<&str>, &str) {
        (&m.interaction_id, &m.chat.platform, &m.chat.chat_id, m.chat.thread_id.as_deref(), &m.message_id)
    }
    shown.sort_by(|(a, _), (b, _)| key(a).cmp(&key(b)));
    let mut last: Vec<(MessageRef, i64)> = Vec::with_capacity(shown.len());
    for record in shown {
        match last.last_mut() {
            Some(previous) if key(&previous.0) == key(&record.0) => *previous = record,
            _ => last.push(record),
        }
    }
    last
}

/// Records the revisions shown, one statement per chunk: a message recorded more than
/// once in the transaction keeps its last record, as one statement each would have.
async fn mark_shown(conn: &mut AnyConnection, marks: Marks, shown: Vec<(MessageRef, i64)>) -> Result<()> {
    for chunk in last_of_each(shown).chunks(SHOWN_PER_STATEMENT) {
        // Both databases take `UPDATE … FROM` a named list of values (SQLite 3.33 on).
        let sql = format!(
            "WITH shown (revision, interaction_id, platform, chat_id, thread_id, message_id) AS (VALUES {})
             UPDATE message_refs SET shown_revision = shown.revision FROM shown
             WHERE message_refs.interaction_id = shown.interaction_id AND message_refs.platform = shown.platform
               AND message_refs.chat_id = shown.chat_id AND message_refs.thread_id = shown.thread_id
               AND message_refs.message_id = shown.message_id",
            marks.rows(chunk.len(), 6)
        );
        // Safe: the text is only value marks; every value is bound.
        let update = chunk.iter().fold(run_time_statement(sql), |query, (m, revision)| {
            query
                .bind(*revision)
                .bind(m.interaction_id.as_str())
                .bind(m.chat.platform.as_str())
                .bind(m.chat.chat_id.as_str())
                .bind(m.chat.thread_column())
                .bind(m.message_id.as_str())
        });
        update.execute(&mut *conn).await.map_err(StoreError::query("mark messages shown"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::ChatKey;

    fn message(id: &str) -> MessageRef {
        MessageRef { interaction_id: "i".into(), chat: ChatKey::new("telegram", "-100", None), message_id: id.into() }
    }

    #[test]
    fn a_message_marked_twice_in_one_transaction_keeps_its_last_revision() {
        let marked = vec![(message("2"), 5), (message("1"), 3), (message("2"), 7), (message("2"), 6), (message("1"), 4)];
        assert_eq!(last_of_each(marked), vec![(message("1"), 4), (message("2"), 6)]);
        assert_eq!(last_of_each(Vec::new()), Vec::new());
    }
}
