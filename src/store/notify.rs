//! PostgreSQL's announcements of queued commands (`LISTEN hitl_bridge_outbox`): a
//! trigger on `outbox` notifies at commit, from whichever replica queued the command
//! (or `hitl-bridge cancel` beside them), and every replica listening hears it at once.
//! SQLite has one process, which hands its commands over in memory: no listener.

use sqlx::postgres::PgListener;

use super::Store;
use super::error::{Result, StoreError};
use super::row::column;

/// The channel the outbox trigger notifies on (migration 20).
const CHANNEL: &str = "hitl_bridge_outbox";

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

impl Store {
    /// A listener for commands queued by any replica; `None` on SQLite.
    pub async fn outbox_listener(&self) -> Result<Option<OutboxListener>> {
        let Some(url) = &self.listen_url else { return Ok(None) };
        let row = sqlx::query("SELECT current_schema()::text AS schema").fetch_one(&self.pool).await.map_err(StoreError::query("read the current schema"))?;
        let schema: String = column(&row, "schema")?;
        let mut listener = PgListener::connect(url).await.map_err(StoreError::query("connect a listener"))?;
        listener.listen(CHANNEL).await.map_err(StoreError::query("listen for queued commands"))?;
        Ok(Some(OutboxListener { listener, schema }))
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
}
