//! The `message_refs` table: which platform messages show an interaction, so the
//! platform can edit them (outcome, keyboard removed) when it ends.

use futures_util::future::BoxFuture;
use sqlx::AnyConnection;

use super::Store;
use super::chats::ChatKey;
use super::deferred::Deferred;
use super::error::{Result, StoreError};
use super::group_commit::Write;
use super::message_ref::MessageRef;
use super::row::column;

impl Store {
    /// Remembers a message. Adding the same one twice is harmless (a retried send).
    pub async fn add_message_ref(&self, r: &MessageRef) -> Result<()> {
        insert_message_ref(&self.pool, r).await
    }

    /// `r` now shows the interaction at `revision`. Shares a commit with the writes
    /// around it on SQLite: recorded after every card edit (a decision's included), it
    /// cost a commit of its own each, a sync of the log on every edit of a burst.
    pub async fn mark_shown(&self, r: &MessageRef, revision: i64) -> Result<()> {
        self.write(MarkShown { message: r.clone(), revision }).await?;
        Ok(())
    }

    /// Messages that do not show their interaction's current revision, with their chat,
    /// oldest first: what must be rendered again after a restart. Every pending
    /// interaction's (a platform that keeps no messages never records one, and prints
    /// what is pending again), and those of interactions ended since `ended_since_ms`
    /// (a deadline after it) whose message recorded what it showed: a decision saved
    /// just before a kill, whose card still shows its buttons.
    pub async fn stale_messages(&self, ended_since_ms: i64) -> Result<Vec<(String, ChatKey)>> {
        let rows = sqlx::query(
            "SELECT DISTINCT m.interaction_id, m.platform, m.chat_id, m.thread_id, i.created_at_ms
             FROM message_refs m JOIN interactions i ON i.id = m.interaction_id
             WHERE i.status = 'pending' AND m.shown_revision <> i.revision
             UNION
             SELECT m.interaction_id, m.platform, m.chat_id, m.thread_id, i.created_at_ms
             FROM message_refs m JOIN interactions i ON i.id = m.interaction_id
             WHERE i.status <> 'pending' AND i.deadline_ms > $1 AND m.shown_revision >= 0 AND m.shown_revision <> i.revision
             ORDER BY 5, 1",
        )
        .bind(ended_since_ms)
        .fetch_all(&self.pool)
        .await
        .map_err(StoreError::query("list messages to render again"))?;
        rows.iter().map(|row| Ok((column(row, "interaction_id")?, ChatKey::from_row(row)?))).collect()
    }

    /// The interaction's messages, in the order they were sent.
    pub async fn message_refs(&self, interaction_id: &str) -> Result<Vec<MessageRef>> {
        let rows = sqlx::query("SELECT platform, chat_id, thread_id, message_id FROM message_refs WHERE interaction_id = $1 ORDER BY id")
            .bind(interaction_id)
            .fetch_all(&self.pool)
            .await
            .map_err(StoreError::query("list message refs"))?;
        rows.iter()
            .map(|row| Ok(MessageRef { interaction_id: interaction_id.to_owned(), chat: ChatKey::from_row(row)?, message_id: column(row, "message_id")? }))
            .collect()
    }
}

/// [`Store::mark_shown`] as a write of a group commit.
struct MarkShown {
    message: MessageRef,
    revision: i64,
}

impl Write for MarkShown {
    fn apply<'a>(&'a self, _conn: &'a mut AnyConnection, deferred: &'a mut Deferred) -> BoxFuture<'a, Result<bool>> {
        // One statement for every message its transaction marks.
        deferred.mark_shown(&self.message, self.revision);
        Box::pin(async { Ok(true) })
    }

    fn is_one_statement(&self) -> bool {
        true
    }
}

/// Inserts on any executor, so a show can record its message in its transaction.
pub(super) async fn insert_message_ref<'e>(executor: impl sqlx::AnyExecutor<'e>, r: &MessageRef) -> Result<()> {
    sqlx::query(
        "INSERT INTO message_refs (interaction_id, platform, chat_id, thread_id, message_id)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (interaction_id, platform, chat_id, thread_id, message_id) DO NOTHING",
    )
    .bind(r.interaction_id.as_str())
    .bind(r.chat.platform.as_str())
    .bind(r.chat.chat_id.as_str())
    .bind(r.chat.thread_column())
    .bind(r.message_id.as_str())
    .execute(executor)
    .await
    .map_err(StoreError::query("add message ref"))?;
    Ok(())
}
