//! The `platform_state` table: what a chat platform keeps for itself across restarts
//! and shares with its other replicas, so a new platform needs no table, no store
//! code and no change to the app. Matrix's `/sync` token, a cache of who is in a
//! group, a remembered view.
//!
//! A row is `(platform, key) → value` with a version and an optional expiry. The store
//! does not interpret values: each platform owns its keys and encodes its values
//! (small JSON or a token), at most [`MAX_VALUE_BYTES`] each. A plain write
//! ([`PlatformState::put`]) replaces what was there; a cursor moves by
//! compare-and-set ([`PlatformState::advance`]), so of several replicas moving it
//! from the version they read, one wins and the others read again. Expired rows are
//! never read and are deleted on the platform's next write.
//!
//! A platform reaches its own rows through [`PlatformState`], its narrow port, bound
//! to its name when made: it holds no [`Store`] and cannot read or write another
//! platform's rows.

use std::time::Duration;

use super::Store;
use super::error::{Result, StoreError};
use super::row::column;

/// The largest value a platform may keep under one key: a token or a cache entry,
/// not a document.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;

/// A value as read back, with the version a compare-and-set moves it from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub value: String,
    /// How many times the row was written (1 for the first write).
    pub version: i64,
}

/// One platform's rows of `platform_state` and nothing else of the store: what a
/// platform is handed.
#[derive(Clone)]
pub struct PlatformState {
    store: Store,
    platform: &'static str,
}

/// Every platform's own state, each reached by its platform's name: what the app
/// hands the platforms.
#[derive(Clone)]
pub struct PlatformStates {
    store: Store,
}

impl Store {
    /// Platform `platform`'s own state, as its port.
    pub fn platform_state(&self, platform: &'static str) -> PlatformState {
        PlatformState { store: self.clone(), platform }
    }

    /// Every platform's own state, as the app hands it out.
    pub fn platform_states(&self) -> PlatformStates {
        PlatformStates { store: self.clone() }
    }
}

impl PlatformStates {
    /// Platform `platform`'s own state.
    pub fn of(&self, platform: &'static str) -> PlatformState {
        self.store.platform_state(platform)
    }
}

impl PlatformState {
    /// The live value at `key`, if any (an expired one counts as none).
    pub async fn get(&self, key: &str, now_ms: i64) -> Result<Option<Stored>> {
        let row = sqlx::query(
            "SELECT value, version FROM platform_state
             WHERE platform = $1 AND state_key = $2 AND (expires_ms IS NULL OR expires_ms >= $3)",
        )
        .bind(self.platform)
        .bind(key)
        .bind(now_ms)
        .fetch_optional(&self.store.pool)
        .await
        .map_err(StoreError::query("read platform state"))?;
        row.map(|row| Ok(Stored { value: column(&row, "value")?, version: column(&row, "version")? })).transpose()
    }

    /// Sets `key` to `value`, kept for `ttl` (`None`: until replaced or deleted),
    /// replacing what was there: the latest write wins.
    pub async fn put(&self, key: &str, value: &str, now_ms: i64, ttl: Option<Duration>) -> Result<()> {
        self.check_size(key, value)?;
        self.prune(now_ms).await?;
        let expires_ms = ttl.map(|ttl| now_ms.saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX)));
        sqlx::query(
            "INSERT INTO platform_state (platform, state_key, value, version, expires_ms, updated_ms) VALUES ($1, $2, $3, 1, $4, $5)
             ON CONFLICT (platform, state_key) DO UPDATE SET
               value = excluded.value, version = platform_state.version + 1, expires_ms = excluded.expires_ms, updated_ms = excluded.updated_ms",
        )
        .bind(self.platform)
        .bind(key)
        .bind(value)
        .bind(expires_ms)
        .bind(now_ms)
        .execute(&self.store.pool)
        .await
        .map_err(StoreError::query("put platform state"))?;
        Ok(())
    }

    /// Moves the cursor at `key` to `value` if it is still at `expected` (the version
    /// read; `None`: there is none yet). True when this call moved it; false when
    /// another replica moved it first, which then holds the newer value: read it
    /// again. A cursor does not expire.
    pub async fn advance(&self, key: &str, expected: Option<i64>, value: &str, now_ms: i64) -> Result<bool> {
        self.check_size(key, value)?;
        self.prune(now_ms).await?;
        let query = match expected {
            // An expired row counts as none: the first cursor written over it wins.
            None => sqlx::query(
                "INSERT INTO platform_state (platform, state_key, value, version, expires_ms, updated_ms) VALUES ($1, $2, $3, 1, NULL, $4)
                 ON CONFLICT (platform, state_key) DO UPDATE SET
                   value = excluded.value, version = platform_state.version + 1, expires_ms = NULL, updated_ms = excluded.updated_ms
                 WHERE platform_state.expires_ms < excluded.updated_ms",
            )
            .bind(self.platform)
            .bind(key)
            .bind(value)
            .bind(now_ms),
            Some(version) => sqlx::query(
                "UPDATE platform_state SET value = $3, version = version + 1, expires_ms = NULL, updated_ms = $4
                 WHERE platform = $1 AND state_key = $2 AND version = $5 AND (expires_ms IS NULL OR expires_ms >= $4)",
            )
            .bind(self.platform)
            .bind(key)
            .bind(value)
            .bind(now_ms)
            .bind(version),
        };
        let done = query.execute(&self.store.pool).await.map_err(StoreError::query("advance platform state"))?;
        Ok(done.rows_affected() == 1)
    }

    /// Removes `key` whatever it holds.
    pub async fn delete(&self, key: &str) -> Result<()> {
        sqlx::query("DELETE FROM platform_state WHERE platform = $1 AND state_key = $2")
            .bind(self.platform)
            .bind(key)
            .execute(&self.store.pool)
            .await
            .map_err(StoreError::query("delete platform state"))?;
        Ok(())
    }

    /// Deletes this platform's rows expired by `now_ms`.
    async fn prune(&self, now_ms: i64) -> Result<()> {
        sqlx::query("DELETE FROM platform_state WHERE platform = $1 AND expires_ms < $2")
            .bind(self.platform)
            .bind(now_ms)
            .execute(&self.store.pool)
            .await
            .map_err(StoreError::query("prune platform state"))?;
        Ok(())
    }

    fn check_size(&self, key: &str, value: &str) -> Result<()> {
        if value.len() > MAX_VALUE_BYTES {
            return Err(StoreError::TooLarge { platform: self.platform, key: key.to_owned(), bytes: value.len(), limit: MAX_VALUE_BYTES });
        }
        Ok(())
    }
}
