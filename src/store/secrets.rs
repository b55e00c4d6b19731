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

    /// This store's identity: made once, the same for every restart and replica on
    /// this database, and different for every other database. What the bridges sharing
    /// it are told apart from other deployments on the same host by (the registry of
    /// agent processes, [`crate::backend::child::Agents`]).
    pub async fn deployment_id(&self) -> Result<String> {
        self.secret("deployment_id", || uuid::Uuid::new_v4().simple().to_string()).await
    }
}

#[cfg(test)]
mod tests {
    use super::super::Store;

    #[tokio::test]
    async fn a_store_keeps_its_identity_across_reopening_and_another_store_has_its_own() {
        let dir = tempfile::tempdir().expect("tempdir");
        let url_a = format!("sqlite://{}/a.db", dir.path().display());
        let a = Store::connect(&url_a).await.expect("store a");
        let first = a.deployment_id().await.expect("id");
        assert_eq!(first.len(), 32, "{first}");
        assert!(first.chars().all(|c| c.is_ascii_hexdigit()), "a plain file name: {first}");
        assert_eq!(a.deployment_id().await.expect("id"), first, "made once");
        drop(a);
        let reopened = Store::connect(&url_a).await.expect("store a again");
        assert_eq!(reopened.deployment_id().await.expect("id"), first, "the same after a restart");
        let b = Store::connect(&format!("sqlite://{}/b.db", dir.path().display())).await.expect("store b");
        assert_ne!(b.deployment_id().await.expect("id"), first, "another store, another deployment");
    }
}
