//! Session leases (`session_leases`): with several replicas on one database, exactly
//! one holds each session's backend connection, so events are rendered once and
//! commands sent once. A lease that is not renewed lapses and another replica takes it.
//!
//! Every connected session renews its lease every few seconds; on SQLite the renewals
//! share the group commit (and its fsync) with the other writes of the moment, rather
//! than each taking the write lock and syncing alone in the middle of a burst.

use futures_util::future::BoxFuture;
use sqlx::AnyConnection;

use super::Store;
use super::deferred::Deferred;
use super::error::{Result, StoreError};
use super::group_commit::Write;

impl Store {
    /// Takes or renews the lease on `session_id` for `owner` until `now_ms + ttl_ms`.
    /// True when `owner` holds it now; false when another owner's lease is still live.
    pub async fn try_lease(&self, session_id: &str, owner: &str, now_ms: i64, ttl_ms: i64) -> Result<bool> {
        self.write(TakeLease { session_id: session_id.to_owned(), owner: owner.to_owned(), now_ms, until_ms: now_ms.saturating_add(ttl_ms) }).await
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

/// Takes or renews one lease: nothing when another owner's lease is still live.
struct TakeLease {
    session_id: String,
    owner: String,
    now_ms: i64,
    until_ms: i64,
}

impl Write for TakeLease {
    fn apply<'a>(&'a self, conn: &'a mut AnyConnection, _deferred: &'a mut Deferred) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            let done = sqlx::query(
                "INSERT INTO session_leases (session_id, owner, until_ms) VALUES ($1, $2, $3)
                 ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, until_ms = excluded.until_ms
                 WHERE session_leases.owner = excluded.owner OR session_leases.until_ms < $4",
            )
            .bind(self.session_id.as_str())
            .bind(self.owner.as_str())
            .bind(self.until_ms)
            .bind(self.now_ms)
            .execute(conn)
            .await
            .map_err(StoreError::query("take session lease"))?;
            Ok(done.rows_affected() == 1)
        })
    }
}
