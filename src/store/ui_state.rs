//! The `ui_state` table: what a platform needs to understand the next click or typed
//! reply, kept in the store so that any replica can handle any update (several
//! replicas behind one webhook URL, a restart in between). Telegram keeps its wizard
//! steps and ForceReply prompts here, Discord the page a message shows.
//!
//! A row is `(kind, key) → value` plus the interaction it belongs to and an expiry.
//! The store does not interpret values: each platform owns its kinds and encodes its
//! values (small JSON or a number). Rows of an interaction are removed in the
//! transaction that ends it (the settle's, whoever settles it: no platform has to
//! remember to); expired rows are never read and are deleted on the next write, so
//! the table stays as small as the set of open interactions.
//!
//! Platforms reach the table through [`UiStates`], their narrow port: they hold no
//! [`Store`].

use super::Store;
use super::error::{Result, StoreError};
use super::row::column;

/// One stored entry, as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UiState {
    pub interaction_id: String,
    pub value: String,
}

/// The `ui_state` table and nothing else of the store: what a platform is handed.
#[derive(Clone)]
pub struct UiStates {
    store: Store,
}

impl Store {
    /// The `ui_state` table, as a platform's port.
    pub fn ui_states(&self) -> UiStates {
        UiStates { store: self.clone() }
    }
}

impl UiStates {
    /// Sets `(kind, key)` to `value` until `expires_ms`, replacing what was there
    /// (the latest write wins: a new prompt replaces the person's older one). Also
    /// deletes every row expired by `now_ms`.
    pub async fn put(&self, kind: &str, key: &str, interaction_id: &str, value: &str, now_ms: i64, expires_ms: i64) -> Result<()> {
        sqlx::query("DELETE FROM ui_state WHERE expires_ms < $1").bind(now_ms).execute(&self.store.pool).await.map_err(StoreError::query("prune ui state"))?;
        sqlx::query(
            "INSERT INTO ui_state (kind, state_key, interaction_id, value, expires_ms) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (kind, state_key) DO UPDATE SET
               interaction_id = excluded.interaction_id, value = excluded.value, expires_ms = excluded.expires_ms",
        )
        .bind(kind)
        .bind(key)
        .bind(interaction_id)
        .bind(value)
        .bind(expires_ms)
        .execute(&self.store.pool)
        .await
        .map_err(StoreError::query("put ui state"))?;
        Ok(())
    }

    /// The live entry at `(kind, key)`, if any (an expired one counts as none).
    pub async fn get(&self, kind: &str, key: &str, now_ms: i64) -> Result<Option<UiState>> {
        let row = sqlx::query("SELECT interaction_id, value FROM ui_state WHERE kind = $1 AND state_key = $2 AND expires_ms >= $3")
            .bind(kind)
            .bind(key)
            .bind(now_ms)
            .fetch_optional(&self.store.pool)
            .await
            .map_err(StoreError::query("read ui state"))?;
        row.map(|row| Ok(UiState { interaction_id: column(&row, "interaction_id")?, value: column(&row, "value")? })).transpose()
    }

    /// Removes `(kind, key)` only if it still holds `value`. True for exactly one
    /// caller when several replicas race to take the same entry (a typed reply
    /// delivered twice is answered once).
    pub async fn take(&self, kind: &str, key: &str, value: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM ui_state WHERE kind = $1 AND state_key = $2 AND value = $3")
            .bind(kind)
            .bind(key)
            .bind(value)
            .execute(&self.store.pool)
            .await
            .map_err(StoreError::query("take ui state"))?;
        Ok(done.rows_affected() == 1)
    }

    /// Removes `(kind, key)` whatever it holds.
    pub async fn delete(&self, kind: &str, key: &str) -> Result<()> {
        sqlx::query("DELETE FROM ui_state WHERE kind = $1 AND state_key = $2")
            .bind(kind)
            .bind(key)
            .execute(&self.store.pool)
            .await
            .map_err(StoreError::query("delete ui state"))?;
        Ok(())
    }

    /// How many entries an interaction has (live or not): for tests and diagnostics.
    pub async fn count(&self, interaction_id: &str) -> Result<i64> {
        let row = sqlx::query("SELECT COUNT(*) AS n FROM ui_state WHERE interaction_id = $1")
            .bind(interaction_id)
            .fetch_one(&self.store.pool)
            .await
            .map_err(StoreError::query("count ui state"))?;
        column(&row, "n")
    }
}
