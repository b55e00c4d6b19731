//! The `outbox` table: commands for the backend, written before they are sent and
//! removed after, so a crash or a dropped connection never loses a decision. The
//! backend connector drains it; nothing here sends anything.

use futures_util::future::BoxFuture;
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, AnyExecutor};

use super::Store;
use super::deferred::Deferred;
use super::error::{Result, StoreError};
use super::group_commit::Write;
use super::json::{self, skip_corrupt};
use super::row::column;
use crate::protocol::Command;

impl Store {
    /// Queues a command; returns its outbox id.
    pub async fn enqueue(&self, command: &Command, now_ms: i64) -> Result<i64> {
        insert_command(&self.pool, command, now_ms).await
    }

    /// The session's queued commands, oldest first, to send in that order.
    pub async fn outbox_for_session(&self, session_id: &str) -> Result<Vec<(i64, Command)>> {
        let rows = sqlx::query("SELECT id, command FROM outbox WHERE session_id = $1 ORDER BY id")
            .bind(session_id)
            .fetch_all(&self.pool)
            .await
            .map_err(StoreError::query("list outbox"))?;
        Ok(rows.iter().map(decode_row).filter_map(skip_corrupt).collect())
    }

    /// The session's queued commands, oldest first, but only while `owner` holds the
    /// session's lease at `now_ms`: a replica whose lease lapsed (a long pause, a lost
    /// database connection) reads nothing, so two replicas never send the same rows.
    pub async fn outbox_if_leased(&self, session_id: &str, owner: &str, now_ms: i64) -> Result<Vec<Queued>> {
        let rows = sqlx::query(
            "SELECT o.id, o.command, o.created_at_ms FROM outbox o
             JOIN session_leases l ON l.session_id = o.session_id
             WHERE o.session_id = $1 AND l.owner = $2 AND l.until_ms >= $3
             ORDER BY o.id",
        )
        .bind(session_id)
        .bind(owner)
        .bind(now_ms)
        .fetch_all(&self.pool)
        .await
        .map_err(StoreError::query("list outbox under lease"))?;
        Ok(rows.iter().map(decode_queued).filter_map(skip_corrupt).collect())
    }

    /// Once the backend proved it read the command.
    /// One per decision: grouped with concurrent writes on SQLite.
    pub async fn remove_outbox(&self, id: i64) -> Result<()> {
        self.write(RemoveOutbox(id)).await?;
        Ok(())
    }

    /// Drops queued replies for one request, when history shows the backend already
    /// has an answer for it (sending another would be a second reply). Returns the ids
    /// dropped.
    pub async fn drop_outbox_for_key(&self, session_id: &str, approval_key: &str) -> Result<Vec<i64>> {
        sqlx::query_scalar("DELETE FROM outbox WHERE session_id = $1 AND approval_key = $2 RETURNING id")
            .bind(session_id)
            .bind(approval_key)
            .fetch_all(&self.pool)
            .await
            .map_err(StoreError::query("drop outbox entries for an approval key"))
    }

    /// Whether `session_id` has commands queued.
    pub async fn has_commands(&self, session_id: &str) -> Result<bool> {
        let row = sqlx::query("SELECT id FROM outbox WHERE session_id = $1 LIMIT 1")
            .bind(session_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(StoreError::query("look for queued commands"))?;
        Ok(row.is_some())
    }

    /// How many commands each session has queued (sessions with none are left out):
    /// one count on the `(session_id, id)` index, whatever the number of sessions.
    pub async fn outbox_by_session(&self) -> Result<Vec<(String, usize)>> {
        let rows = sqlx::query("SELECT session_id, COUNT(*) AS queued FROM outbox GROUP BY session_id")
            .fetch_all(&self.pool)
            .await
            .map_err(StoreError::query("count the outbox by session"))?;
        rows.iter().map(|row| Ok((column(row, "session_id")?, column::<i64>(row, "queued")?.max(0) as usize))).collect()
    }

    /// How many commands wait in the outbox, all sessions together (`/metrics`).
    pub async fn outbox_depth(&self) -> Result<i64> {
        let row = sqlx::query("SELECT COUNT(*) AS depth FROM outbox").fetch_one(&self.pool).await.map_err(StoreError::query("count the outbox"))?;
        column(&row, "depth")
    }

    /// Sessions that need a backend connection: pending interactions, unsent commands
    /// or a turn in progress. Sorted, no duplicates.
    pub async fn sessions_with_work(&self) -> Result<Vec<String>> {
        let rows = sqlx::query(
            "SELECT session_id FROM interactions WHERE status = $1
             UNION
             SELECT session_id FROM outbox
             UNION
             SELECT session_id FROM open_turns
             ORDER BY 1",
        )
        .bind(crate::interaction::Status::Pending.name())
        .fetch_all(&self.pool)
        .await
        .map_err(StoreError::query("list sessions with work"))?;
        rows.iter().map(|row| column(row, "session_id")).collect()
    }
}

/// Inserts into the outbox on any executor, so [`Store::settle`] can do it inside its
/// transaction.
pub(super) async fn insert_command<'e>(executor: impl AnyExecutor<'e>, command: &Command, now_ms: i64) -> Result<i64> {
    let approval_key = match command {
        Command::Approval { approval_key, .. } => Some(approval_key.as_str()),
        Command::Message { .. } | Command::Cancel { .. } => None,
    };
    let row = sqlx::query("INSERT INTO outbox (session_id, approval_key, command, created_at_ms) VALUES ($1, $2, $3, $4) RETURNING id")
        .bind(command.session_id())
        .bind(approval_key)
        .bind(json::encode(command, "command")?)
        .bind(now_ms)
        .fetch_one(executor)
        .await
        .map_err(StoreError::query("enqueue command"))?;
    column(&row, "id")
}

/// One queued command, as the connector delivering it sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Queued {
    pub id: i64,
    pub created_at_ms: i64,
    pub command: Command,
}

impl Queued {
    /// An id for the command that stays the same for as long as it is queued and is
    /// not reused by a later command, even if the database's row ids restart (a new
    /// store file): the row id with the moment it was queued.
    pub fn stable_id(&self) -> String {
        format!("{}-{}", self.id, self.created_at_ms)
    }
}

fn decode_queued(row: &AnyRow) -> Result<Queued> {
    let (id, command) = decode_row(row)?;
    Ok(Queued { id, created_at_ms: column(row, "created_at_ms")?, command })
}

fn decode_row(row: &AnyRow) -> Result<(i64, Command)> {
    let id: i64 = column(row, "id")?;
    Ok((id, json::decode(column(row, "command")?, "outbox command", id)?))
}

/// Removes one delivered command.
struct RemoveOutbox(i64);

impl Write for RemoveOutbox {
    fn apply<'a>(&'a self, _conn: &'a mut AnyConnection, deferred: &'a mut Deferred) -> BoxFuture<'a, Result<bool>> {
        deferred.remove_command(self.0);
        Box::pin(async { Ok(true) })
    }

    fn is_one_statement(&self) -> bool {
        true
    }
}
