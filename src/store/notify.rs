//! PostgreSQL's announcements, heard by every replica at once:
//! - queued commands (`LISTEN hitl_bridge_outbox`): a trigger on `outbox` notifies at
//!   commit, from whichever replica queued the command (or `hitl-bridge cancel` beside
//!   them), so the session's holder sends it;
//! - new pending requests (`LISTEN hitl_bridge_pending`): a trigger on `interactions`
//!   notifies at commit, so every replica watches the request's deadline.
//!
//! SQLite has one process, which hands both over in memory: no listener.

use sqlx::postgres::PgListener;

use super::Store;
use super::error::{Result, StoreError};
use super::row::column;

/// The channel the outbox trigger notifies on (migration 20).
const CHANNEL: &str = "hitl_bridge_outbox";
/// The channel the interactions trigger notifies on (migration 21).
const PENDING_CHANNEL: &str = "hitl_bridge_pending";

/// A command queued in the outbox, as announced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedNotice {
    pub session_id: String,
    /// The outbox row's id.
    pub id: i64,
}

/// Hears the outbox's announcements for this store's schema (other deployments on the
/// same database announce on the same channel and are skipped).
pub struct OutboxListener {
    listener: PgListener,
    schema: String,
}

/// Hears the announcements of requests stored pending in this store's schema.
pub struct PendingListener {
    listener: PgListener,
    schema: String,
}

impl Store {
    /// A listener for commands queued by any replica; `None` on SQLite.
    pub async fn outbox_listener(&self) -> Result<Option<OutboxListener>> {
        Ok(self.listen(CHANNEL, "listen for queued commands").await?.map(|(listener, schema)| OutboxListener { listener, schema }))
    }

    /// A listener for requests stored pending by any replica; `None` on SQLite.
    pub async fn pending_listener(&self) -> Result<Option<PendingListener>> {
        Ok(self.listen(PENDING_CHANNEL, "listen for new requests").await?.map(|(listener, schema)| PendingListener { listener, schema }))
    }

    /// A connection listening on `channel`, with this store's schema (what the
    /// triggers put first in each payload); `None` on SQLite.
    async fn listen(&self, channel: &str, doing: &'static str) -> Result<Option<(PgListener, String)>> {
        let Some(url) = &self.listen_url else { return Ok(None) };
        let row = sqlx::query("SELECT current_schema()::text AS schema").fetch_one(&self.pool).await.map_err(StoreError::query("read the current schema"))?;
        let schema: String = column(&row, "schema")?;
        let mut listener = PgListener::connect(url).await.map_err(StoreError::query("connect a listener"))?;
        listener.listen(channel).await.map_err(StoreError::query(doing))?;
        Ok(Some((listener, schema)))
    }
}

impl OutboxListener {
    /// The next command queued in this store. Reconnects by itself when the connection
    /// drops (announcements made meanwhile are lost: the outbox count is the safety
    /// net); an error is a connection that cannot be made again.
    pub async fn recv(&mut self) -> Result<QueuedNotice> {
        loop {
            let notification = self.listener.recv().await.map_err(StoreError::query("receive a queued command's notice"))?;
            if let Some(notice) = parse(notification.payload(), &self.schema) {
                return Ok(notice);
            }
        }
    }
}

impl PendingListener {
    /// The id of the next request stored pending in this store. Reconnects by itself
    /// as [`OutboxListener::recv`] does (the rescan is the safety net).
    pub async fn recv(&mut self) -> Result<String> {
        loop {
            let notification = self.listener.recv().await.map_err(StoreError::query("receive a new request's notice"))?;
            if let Some(id) = parse_pending(notification.payload(), &self.schema) {
                return Ok(id);
            }
        }
    }
}

/// `"<schema> <interaction id>"`, if it is of `schema`.
fn parse_pending(payload: &str, schema: &str) -> Option<String> {
    let (of, id) = payload.split_once(' ')?;
    (of == schema && !id.is_empty()).then(|| id.to_owned())
}

/// `"<schema> <session_id> <id>"`, if it is of `schema`.
fn parse(payload: &str, schema: &str) -> Option<QueuedNotice> {
    let (of, rest) = payload.split_once(' ')?;
    let (session_id, id) = rest.rsplit_once(' ')?;
    (of == schema && !session_id.is_empty()).then(|| Some(QueuedNotice { session_id: session_id.to_owned(), id: id.parse().ok()? }))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_of_this_schema_is_read_and_others_are_skipped() {
        assert_eq!(parse("public s-1 42", "public"), Some(QueuedNotice { session_id: "s-1".into(), id: 42 }));
        assert_eq!(parse("public api:agent one 7", "public"), Some(QueuedNotice { session_id: "api:agent one".into(), id: 7 }));
        assert_eq!(parse("t_other s-1 42", "public"), None);
        assert_eq!(parse("public s-1 x", "public"), None);
        assert_eq!(parse("public  42", "public"), None);
        assert_eq!(parse("garbage", "public"), None);
    }

    #[test]
    fn a_pending_notice_of_this_schema_is_read_and_others_are_skipped() {
        assert_eq!(parse_pending("public 0b7c-41", "public"), Some("0b7c-41".to_owned()));
        assert_eq!(parse_pending("t_other 0b7c-41", "public"), None);
        assert_eq!(parse_pending("public ", "public"), None);
        assert_eq!(parse_pending("garbage", "public"), None);
    }
}
