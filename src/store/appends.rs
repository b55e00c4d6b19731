//! Rows the writes of one transaction append to the audit log and the outbox, inserted
//! together just before it commits: a group commit of many decisions costs one
//! multi-row `INSERT` per table instead of two statements per decision. Nothing inside
//! a transaction reads these rows back, so holding them to its end changes nothing but
//! the count of statements; they keep the order the writes added them in.

use sqlx::AnyConnection;

use super::audit::bind_entry;
use super::audit_entry::AuditEntry;
use super::error::{Result, StoreError};
use super::json;
use crate::protocol::Command;

/// Audit rows per statement: 15 values each, far below SQLite's limit of 32,766.
const AUDIT_ROWS_PER_STATEMENT: usize = 256;

/// Outbox rows per statement: 4 values each.
const COMMANDS_PER_STATEMENT: usize = 512;

/// What the writes of one transaction append; see the module doc.
#[derive(Default)]
pub(super) struct Appends {
    audit: Vec<AuditEntry>,
    /// Each command with the time it was queued at.
    commands: Vec<(Command, i64)>,
}

impl Appends {
    pub fn audit(&mut self, entry: &AuditEntry) {
        self.audit.push(entry.clone());
    }

    /// Queues `command` for its backend, as of `at_ms`.
    pub fn command(&mut self, command: &Command, at_ms: i64) {
        self.commands.push((command.clone(), at_ms));
    }

    /// Inserts everything appended, in the transaction `conn` is in.
    pub async fn insert(self, conn: &mut AnyConnection) -> Result<()> {
        for chunk in self.commands.chunks(COMMANDS_PER_STATEMENT) {
            let sql = format!("INSERT INTO outbox (session_id, approval_key, command, created_at_ms) VALUES {}", placeholders(chunk.len(), 4));
            // Safe: the text is only numbered placeholders; every value is bound.
            let mut insert = sqlx::query(sqlx::AssertSqlSafe(sql));
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
                placeholders(chunk.len(), 15)
            );
            // Safe: the text is only numbered placeholders; every value is bound.
            let mut insert = sqlx::query(sqlx::AssertSqlSafe(sql));
            for entry in chunk {
                insert = bind_entry(insert, entry)?;
            }
            insert.execute(&mut *conn).await.map_err(StoreError::query("append audit entries"))?;
        }
        Ok(())
    }
}

/// `($1, $2), ($3, $4)` for two rows of two values.
fn placeholders(rows: usize, columns: usize) -> String {
    let row = |r: usize| format!("({})", (1..=columns).map(|c| format!("${}", r * columns + c)).collect::<Vec<_>>().join(", "));
    (0..rows).map(row).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::placeholders;

    #[test]
    fn placeholders_number_every_value_once() {
        assert_eq!(placeholders(2, 3), "($1, $2, $3), ($4, $5, $6)");
        assert_eq!(placeholders(1, 1), "($1)");
    }
}
