//! Turns in progress (`open_turns`): a session whose agent got a message and has not
//! ended its turn yet. Kept in the store, not only in the connection's memory, so that
//! a bridge killed mid-turn, or a replica taking over a dead one's sessions, connects
//! the session again and hears what the agent says next (or said meanwhile).

use super::Store;
use super::error::{Result, StoreError};
use super::row::column;

impl Store {
    /// Notes that `session_id`'s agent is in a turn (a message went to it). A turn
    /// already open keeps when it was opened.
    pub async fn open_turn(&self, session_id: &str, now_ms: i64) -> Result<()> {
        sqlx::query("INSERT INTO open_turns (session_id, opened_at_ms) VALUES ($1, $2) ON CONFLICT (session_id) DO NOTHING")
            .bind(session_id)
            .bind(now_ms)
            .execute(&self.pool)
            .await
            .map_err(StoreError::query("note an open turn"))?;
        Ok(())
    }

    /// Notes that `session_id`'s turn ended (or that nobody will hear it end).
    pub async fn close_turn(&self, session_id: &str) -> Result<()> {
        sqlx::query("DELETE FROM open_turns WHERE session_id = $1")
            .bind(session_id)
            .execute(&self.pool)
            .await
            .map_err(StoreError::query("note a turn's end"))?;
        Ok(())
    }

    /// Whether `session_id`'s agent is in a turn, as far as the store knows.
    pub async fn has_open_turn(&self, session_id: &str) -> Result<bool> {
        let row = sqlx::query("SELECT session_id FROM open_turns WHERE session_id = $1")
            .bind(session_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(StoreError::query("look for an open turn"))?;
        Ok(row.is_some())
    }

    /// Sessions in a turn that no replica holds (no lease, or one that lapsed before
    /// `now_ms`): a replica that died mid-turn left them; the caller takes them over.
    pub async fn orphaned_turns(&self, now_ms: i64) -> Result<Vec<String>> {
        let rows = sqlx::query(
            "SELECT t.session_id FROM open_turns t LEFT JOIN session_leases l ON l.session_id = t.session_id
             WHERE l.session_id IS NULL OR l.until_ms < $1 ORDER BY t.session_id",
        )
        .bind(now_ms)
        .fetch_all(&self.pool)
        .await
        .map_err(StoreError::query("list turns no replica holds"))?;
        rows.iter().map(|row| column(row, "session_id")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::Store;

    #[tokio::test]
    async fn an_open_turn_is_work_until_it_ends_and_one_nobody_holds_is_orphaned() {
        let store = Store::connect("sqlite::memory:").await.expect("store");
        assert!(store.sessions_with_work().await.expect("work").is_empty());
        store.open_turn("s1", 1_000).await.expect("open");
        store.open_turn("s1", 2_000).await.expect("open again");
        store.open_turn("s2", 1_000).await.expect("open");
        assert!(store.has_open_turn("s1").await.expect("read"));
        assert_eq!(store.sessions_with_work().await.expect("work"), ["s1", "s2"]);

        // s1 is held by a live lease, s2's holder stopped renewing at 5 000.
        assert!(store.try_lease("s1", "replica-a", 1_000, 10_000).await.expect("lease"));
        assert!(store.try_lease("s2", "replica-b", 1_000, 4_000).await.expect("lease"));
        assert_eq!(store.orphaned_turns(3_000).await.expect("orphans"), Vec::<String>::new());
        assert_eq!(store.orphaned_turns(6_000).await.expect("orphans"), ["s2"]);

        store.close_turn("s1").await.expect("close");
        store.close_turn("s2").await.expect("close");
        assert!(!store.has_open_turn("s1").await.expect("read"));
        assert!(store.sessions_with_work().await.expect("work").is_empty());
        assert!(store.orphaned_turns(6_000).await.expect("orphans").is_empty());
    }
}
