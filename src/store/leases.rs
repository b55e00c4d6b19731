//! Session leases (`session_leases`): with several replicas on one database, exactly
//! one holds each session's backend connection, so events are rendered once and
//! commands sent once. A lease that is not renewed lapses and another replica takes it.

use super::Store;
use super::error::{Result, StoreError};

impl Store {
    /// Takes or renews the lease on `session_id` for `owner` until `now_ms + ttl_ms`.
    /// True when `owner` holds it now; false when another owner's lease is still live.
    pub async fn try_lease(&self, session_id: &str, owner: &str, now_ms: i64, ttl_ms: i64) -> Result<bool> {
        let done = sqlx::query(
            "INSERT INTO session_leases (session_id, owner, until_ms) VALUES ($1, $2, $3)
             ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, until_ms = excluded.until_ms
             WHERE session_leases.owner = excluded.owner OR session_leases.until_ms < $4",
        )
        .bind(session_id)
        .bind(owner)
        .bind(now_ms.saturating_add(ttl_ms))
        .bind(now_ms)
        .execute(&self.pool)
        .await
        .map_err(StoreError::query("take session lease"))?;
        Ok(done.rows_affected() == 1)
    }

    /// Gives the lease up (graceful shutdown), so another replica need not wait for it
    /// to lapse.
    pub async fn release_lease(&self, session_id: &str, owner: &str) -> Result<()> {
        sqlx::query("DELETE FROM session_leases WHERE session_id = $1 AND owner = $2")
            .bind(session_id)
            .bind(owner)
            .execute(&self.pool)
            .await
            .map_err(StoreError::query("release session lease"))?;
        Ok(())
    }
}
