//! `telegram_inbox`: Telegram updates, stored before they are confirmed to Telegram and
//! marked once handled (kept a day, so an update Telegram delivers again is still
//! recognised, then pruned). Storing is the only thing a confirmation waits for, so no
//! update (a stranger's flood, a slow handler) holds back the next batch, and a crash
//! between confirming and handling loses nothing: the row is still here, handled by the
//! next start or, once its claim lapses, by another replica.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use sqlx::AnyConnection;

use super::deferred::Deferred;
use super::error::{Result, StoreError};
use super::group_commit::Write;
use super::placeholders::{Marks, run_time_statement};
use super::row::column;
use super::{ShowClaim, Store};

/// One update as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxUpdate {
    pub update_id: i64,
    /// The chat whose lane handles it (0 for a click on an inline message).
    pub chat_id: i64,
    /// The update's JSON, as Telegram sent it.
    pub body: String,
}

impl Store {
    /// Stores `updates` claimed by `claim` in one transaction; returns the ids that
    /// were new, in the order given (an update Telegram delivered again is already
    /// here, being handled or handled, and is not handled twice). One statement per
    /// [`UPDATES_PER_STATEMENT`] updates, and on SQLite the transaction is the next
    /// group commit, shared with the decisions of the clicks stored before.
    pub async fn store_updates(&self, updates: &[InboxUpdate], claim: &ShowClaim, now_ms: i64) -> Result<Vec<i64>> {
        let new = Arc::new(Mutex::new(HashSet::new()));
        self.write(StoreUpdates { updates: updates.to_vec(), claim: claim.clone(), now_ms, new: new.clone() }).await?;
        let new = new.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        Ok(updates.iter().map(|u| u.update_id).filter(|id| new.contains(id)).collect())
    }

    /// How many updates wait in the inbox (stored, not yet handled).
    pub async fn stored_updates(&self) -> Result<i64> {
        let row = sqlx::query("SELECT COUNT(*) AS n FROM telegram_inbox WHERE handled_at_ms IS NULL")
            .fetch_one(&self.pool)
            .await
            .map_err(StoreError::query("count stored updates"))?;
        column(&row, "n")
    }

    /// The update was handled: it is never handled again (the row stays, so the same
    /// update delivered again is still a no-op, until [`Store::prune_handled_updates`]).
    /// On SQLite it shares the next group commit: a burst of clicks marks its updates
    /// handled in a few transactions, not one fsync each.
    pub async fn finish_update(&self, update_id: i64, now_ms: i64) -> Result<()> {
        self.write(FinishUpdate { update_id, now_ms }).await?;
        Ok(())
    }

    /// Claims for `claim.owner` the updates whose claim lapsed (their replica died)
    /// and returns them oldest first, so each chat's are handled in order.
    pub async fn claim_stranded_updates(&self, claim: &ShowClaim, now_ms: i64) -> Result<Vec<InboxUpdate>> {
        let rows = sqlx::query(
            "UPDATE telegram_inbox SET claimed_by = $1, claimed_until_ms = $2
             WHERE handled_at_ms IS NULL AND claimed_until_ms < $3
             RETURNING update_id, chat_id, body",
        )
        .bind(claim.owner.as_str())
        .bind(claim.until_ms)
        .bind(now_ms)
        .fetch_all(&self.pool)
        .await
        .map_err(StoreError::query("claim stranded updates"))?;
        let mut updates = rows
            .iter()
            .map(|row| Ok(InboxUpdate { update_id: column(row, "update_id")?, chat_id: column(row, "chat_id")?, body: column(row, "body")? }))
            .collect::<Result<Vec<_>>>()?;
        updates.sort_by_key(|u| u.update_id);
        Ok(updates)
    }

    /// Keeps `claim.owner`'s updates (still queued or being handled) from lapsing.
    pub async fn renew_update_claims(&self, claim: &ShowClaim) -> Result<()> {
        sqlx::query("UPDATE telegram_inbox SET claimed_until_ms = $1 WHERE claimed_by = $2 AND handled_at_ms IS NULL")
            .bind(claim.until_ms)
            .bind(claim.owner.as_str())
            .execute(&self.pool)
            .await
            .map_err(StoreError::query("renew update claims"))?;
        Ok(())
    }

    /// Frees `owner`'s claims at once: a replica starting under its own id is not
    /// handling anything yet, so what it claimed before a crash is free.
    pub async fn release_update_claims(&self, owner: &str) -> Result<()> {
        sqlx::query("UPDATE telegram_inbox SET claimed_until_ms = 0 WHERE claimed_by = $1 AND handled_at_ms IS NULL")
            .bind(owner)
            .execute(&self.pool)
            .await
            .map_err(StoreError::query("release update claims"))?;
        Ok(())
    }

    /// Forgets updates handled before `before_ms` (Telegram no longer delivers them).
    pub async fn prune_handled_updates(&self, before_ms: i64) -> Result<u64> {
        let done = sqlx::query("DELETE FROM telegram_inbox WHERE handled_at_ms < $1")
            .bind(before_ms)
            .execute(&self.pool)
            .await
            .map_err(StoreError::query("prune handled updates"))?;
        Ok(done.rows_affected())
    }
}

/// Telegram hands out at most 100 updates per `getUpdates`: one statement each.
const UPDATES_PER_STATEMENT: usize = 100;

/// Inserts a batch of updates, skipping those already stored; the ids it inserted
/// land in `new` (cleared first: a write runs again alone when its group failed).
struct StoreUpdates {
    updates: Vec<InboxUpdate>,
    claim: ShowClaim,
    now_ms: i64,
    new: Arc<Mutex<HashSet<i64>>>,
}

impl Write for StoreUpdates {
    fn apply<'a>(&'a self, conn: &'a mut AnyConnection, _deferred: &'a mut Deferred) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            let mut inserted = HashSet::new();
            for chunk in self.updates.chunks(UPDATES_PER_STATEMENT) {
                let sql = format!(
                    "INSERT INTO telegram_inbox (update_id, chat_id, body, received_at_ms, claimed_by, claimed_until_ms)
                     VALUES {} ON CONFLICT (update_id) DO NOTHING RETURNING update_id",
                    Marks::of(conn).rows(chunk.len(), 6)
                );
                // Safe: the text is only value marks; every value is bound.
                let mut insert = run_time_statement(sql);
                for update in chunk {
                    insert = insert
                        .bind(update.update_id)
                        .bind(update.chat_id)
                        .bind(update.body.as_str())
                        .bind(self.now_ms)
                        .bind(self.claim.owner.as_str())
                        .bind(self.claim.until_ms);
                }
                for row in insert.fetch_all(&mut *conn).await.map_err(StoreError::query("store updates"))? {
                    inserted.insert(column::<i64>(&row, "update_id")?);
                }
            }
            let any = !inserted.is_empty();
            *self.new.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = inserted;
            Ok(any)
        })
    }
}

/// Marks one update handled.
struct FinishUpdate {
    update_id: i64,
    now_ms: i64,
}

impl Write for FinishUpdate {
    fn apply<'a>(&'a self, _conn: &'a mut AnyConnection, deferred: &'a mut Deferred) -> BoxFuture<'a, Result<bool>> {
        deferred.mark_handled(self.update_id, self.now_ms);
        Box::pin(async { Ok(true) })
    }
}
