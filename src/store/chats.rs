//! Which session each chat talks to (`chat_bindings`) and whose message started each
//! session's current turn (`session_requesters`). Routing decisions are the engine's;
//! this only remembers them.

use std::collections::HashMap;

use futures_util::future::BoxFuture;
use sqlx::AnyConnection;
use sqlx::any::AnyRow;

use super::Store;
use super::error::{Result, StoreError};
use super::json;
use super::placeholders::{Marks, bind_keys, list_statement, padded_len};
use super::row::column;
use super::shared_reads::SharedRead;
use crate::interaction::Actor;
pub use crate::interaction::chat::ChatKey;

impl ChatKey {
    /// The `thread_id` column: '' stands for "no thread" because the column is part of
    /// unique keys, where NULLs never collide. No platform uses an empty thread id.
    pub(super) fn thread_column(&self) -> &str {
        self.thread_id.as_deref().unwrap_or("")
    }

    /// From the `platform`, `chat_id` and `thread_id` columns of a row.
    pub(super) fn from_row(row: &AnyRow) -> Result<Self> {
        let thread: String = column(row, "thread_id")?;
        Ok(Self { platform: column(row, "platform")?, chat_id: column(row, "chat_id")?, thread_id: (!thread.is_empty()).then_some(thread) })
    }
}

impl Store {
    /// Points a chat at a session, replacing its previous one: a chat has one current
    /// session.
    pub async fn bind_chat(&self, chat: &ChatKey, session_id: &str, now_ms: i64) -> Result<()> {
        let bound = sqlx::query(
            "INSERT INTO chat_bindings (platform, chat_id, thread_id, session_id, bound_at_ms)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (platform, chat_id, thread_id)
             DO UPDATE SET session_id = excluded.session_id, bound_at_ms = excluded.bound_at_ms",
        )
        .bind(chat.platform.as_str())
        .bind(chat.chat_id.as_str())
        .bind(chat.thread_column())
        .bind(session_id)
        .bind(now_ms)
        .execute(&self.pool)
        .await;
        // Told whatever the outcome: a failed write may have committed all the same.
        if let Some(memo) = &self.chats_memo {
            memo.rebound(chat, session_id);
        }
        bound.map_err(StoreError::query("bind chat"))?;
        Ok(())
    }

    pub async fn session_for_chat(&self, chat: &ChatKey) -> Result<Option<String>> {
        let row = sqlx::query("SELECT session_id FROM chat_bindings WHERE platform = $1 AND chat_id = $2 AND thread_id = $3")
            .bind(chat.platform.as_str())
            .bind(chat.chat_id.as_str())
            .bind(chat.thread_column())
            .fetch_optional(&self.pool)
            .await
            .map_err(StoreError::query("find the session of a chat"))?;
        row.map(|row| column(&row, "session_id")).transpose()
    }

    /// Every chat bound to the session, in the order they were bound (where to show
    /// its requests): on SQLite as kept ([`ChatsMemo`](super::chats_memo::ChatsMemo)),
    /// else read with the asks made meanwhile ([`SessionChats`]).
    pub async fn chats_for_session(&self, session_id: &str) -> Result<Vec<ChatKey>> {
        let Some(memo) = &self.chats_memo else {
            return self.session_chats.ask(session_id.to_owned()).await?;
        };
        if let Some(chats) = memo.get(session_id) {
            return Ok(chats);
        }
        let generation = memo.generation();
        let chats = self.session_chats.ask(session_id.to_owned()).await??;
        memo.keep(session_id, &chats, generation);
        Ok(chats)
    }

    /// Whose message started the session's current turn; replaces the previous one.
    pub async fn set_requester(&self, session_id: &str, actor: &Actor) -> Result<()> {
        sqlx::query(
            "INSERT INTO session_requesters (session_id, actor) VALUES ($1, $2)
             ON CONFLICT (session_id) DO UPDATE SET actor = excluded.actor",
        )
        .bind(session_id)
        .bind(json::encode(actor, "requester")?)
        .execute(&self.pool)
        .await
        .map_err(StoreError::query("set requester"))?;
        Ok(())
    }

    /// The session's requester. An unreadable row reads as none (logged): the only
    /// effect is that fewer people may answer, never more.
    pub async fn requester(&self, session_id: &str) -> Result<Option<Actor>> {
        let row = sqlx::query("SELECT actor FROM session_requesters WHERE session_id = $1")
            .bind(session_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(StoreError::query("load requester"))?;
        let Some(row) = row else { return Ok(None) };
        Ok(json::skip_corrupt(json::decode(column(&row, "actor")?, "requester of session", session_id)))
    }
}

/// The chats of sessions, a read that asks share
/// ([`SharedReads`](super::shared_reads::SharedReads)): each text an agent sends, and
/// each turn it ends, asks where its session is shown, so a burst of replies asks it
/// hundreds of times at once (three asks a decision, a third of a burst's statements
/// on SQLite, docs/performance.md "2026-12-03"). Each ask gets its session's chats in
/// the order they were bound, or the error its rows alone gave. On SQLite most asks
/// are answered from memory before they get here ([`ChatsMemo`](super::chats_memo::ChatsMemo)).
pub(super) struct SessionChats;

impl SharedRead for SessionChats {
    type Ask = String;
    type Answer = Result<Vec<ChatKey>>;
    const WHAT: &'static str = "list chats of a session";

    fn read<'a>(conn: &'a mut AnyConnection, sessions: &'a [String]) -> BoxFuture<'a, Result<Vec<Self::Answer>>> {
        Box::pin(async move {
            let sql = format!(
                "SELECT session_id, platform, chat_id, thread_id FROM chat_bindings WHERE session_id IN ({})
                 ORDER BY bound_at_ms, platform, chat_id, thread_id",
                Marks::of(conn).list(1, padded_len(sessions.len()))
            );
            // Safe: the text is only value marks; every value is bound.
            let select = bind_keys(list_statement(sql), sessions, String::as_str);
            let rows = select.fetch_all(&mut *conn).await.map_err(StoreError::query(Self::WHAT))?;
            // In bound order within each session, as the statement sorted them.
            let mut by_session: HashMap<&str, Vec<&AnyRow>> = HashMap::with_capacity(sessions.len());
            for row in &rows {
                by_session.entry(column(row, "session_id")?).or_default().push(row);
            }
            Ok(sessions
                .iter()
                .map(|session| by_session.get(session.as_str()).map_or_else(|| Ok(Vec::new()), |rows| rows.iter().map(|row| ChatKey::from_row(row)).collect()))
                .collect())
        })
    }
}
