//! Secrets the bridge makes for itself (`secrets`): created once, then the same for
//! every restart and every replica on the same database.

use super::Store;
use super::error::{Result, StoreError};
use super::row::column;

impl Store {
    /// The secret called `name`, created with `generate` if it does not exist yet.
    /// When two replicas race, both end up with the first one written.
    pub async fn secret(&self, name: &str, generate: impl FnOnce() -> String) -> Result<String> {
        sqlx::query("INSERT INTO secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING")
            .bind(name)
            .bind(generate())
            .execute(&self.pool)
            .await
            .map_err(StoreError::query("create secret"))?;
        let row = sqlx::query("SELECT value FROM secrets WHERE name = $1").bind(name).fetch_one(&self.pool).await.map_err(StoreError::query("load secret"))?;
        column(&row, "value")
    }
}
