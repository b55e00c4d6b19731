//! The `message_refs` table: which platform messages show an interaction, so the
//! platform can edit them (outcome, keyboard removed) when it ends.

use super::chats::ChatKey;
use super::error::{Result, StoreError};
use super::Store;
use super::row::column;

/// A platform message that shows an interaction, so it can be edited when it ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageRef {
    pub interaction_id: String,
    pub chat: ChatKey,
    pub message_id: String,
}

impl Store {
    /// Remembers a message. Adding the same one twice is harmless (a retried send).
    pub async fn add_message_ref(&self, r: &MessageRef) -> Result<()> {
        insert_message_ref(&self.pool, r).await
    }

    /// The interaction's messages, in the order they were sent.
    pub async fn message_refs(&self, interaction_id: &str) -> Result<Vec<MessageRef>> {
        let rows = sqlx::query(
            "SELECT platform, chat_id, thread_id, message_id FROM message_refs WHERE interaction_id = $1 ORDER BY id",
        )
        .bind(interaction_id)
        .fetch_all(&self.pool)
        .await
        .map_err(StoreError::query("list message refs"))?;
        rows.iter()
            .map(|row| {
                Ok(MessageRef {
                    interaction_id: interaction_id.to_owned(),
                    chat: ChatKey::from_row(row)?,
                    message_id: column(row, "message_id")?,
                })
            })
            .collect()
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
