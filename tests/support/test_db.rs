//! A database of its own for one test: a SQLite file in a temp dir, or a fresh
//! PostgreSQL schema (dropped by [`TestDatabase::finish`]) so tests running in
//! parallel never see each other's rows; and [`TestStore`], a store open on one, as
//! the store and retention suites test it. Shared by the store, retention, UI-state,
//! admin CLI and replica suites.

#![allow(dead_code)]

use std::time::Duration;

use hitl_bridge::store::Store;
use sqlx::any::AnyPoolOptions;
use sqlx::{AnyPool, AssertSqlSafe, Row};

/// The PostgreSQL the suites use when set (CI sets it), e.g.
/// `postgres://postgres@127.0.0.1:5432/test`.
pub const POSTGRES_ENV: &str = "HITL_BRIDGE_TEST_POSTGRES_URL";

pub struct TestDatabase {
    pub url: String,
    /// Removed when dropped.
    _dir: Option<tempfile::TempDir>,
    /// The admin connection and the schema to drop.
    schema: Option<(AnyPool, String)>,
}

impl TestDatabase {
    /// A SQLite file in a directory that does not exist yet: connect must create it.
    pub fn sqlite() -> TestDatabase {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}/data/hitl-bridge.db", dir.path().display());
        TestDatabase { url, _dir: Some(dir), schema: None }
    }

    /// A fresh schema on the PostgreSQL named by [`POSTGRES_ENV`]. Always `Some`: the
    /// PostgreSQL tests are `#[ignore]`d, and one run on purpose without the variable
    /// fails saying so (the `Option` lets callers use `let … else`).
    pub async fn postgres() -> Option<TestDatabase> {
        let Ok(base) = std::env::var(POSTGRES_ENV) else {
            panic!("{POSTGRES_ENV} is unset: point it at a PostgreSQL database (e.g. postgres://postgres@127.0.0.1:5432/test)");
        };
        Some(TestDatabase::schema_on(&base).await.expect("connect to PostgreSQL"))
    }

    /// A fresh schema on the PostgreSQL named by [`POSTGRES_ENV`], or `None` when it is
    /// unset (the benchmark then skips its PostgreSQL figures with a line).
    pub async fn postgres_if_set() -> Option<TestDatabase> {
        let base = std::env::var(POSTGRES_ENV).ok()?;
        Some(TestDatabase::schema_on(&base).await.expect("connect to PostgreSQL"))
    }

    pub fn is_postgres(&self) -> bool {
        self.schema.is_some()
    }

    /// A fresh schema on the PostgreSQL at `base`.
    pub async fn schema_on(base: &str) -> Result<TestDatabase, sqlx::Error> {
        sqlx::any::install_default_drivers();
        let admin = AnyPoolOptions::new().max_connections(1).acquire_timeout(Duration::from_secs(5)).connect(base).await?;
        let name = format!("t_{}", uuid::Uuid::new_v4().simple());
        execute(&admin, &format!("CREATE SCHEMA {name}")).await;
        let separator = if base.contains('?') { '&' } else { '?' };
        let url = format!("{base}{separator}options=-c%20search_path%3D{name}");
        Ok(TestDatabase { url, _dir: None, schema: Some((admin, name)) })
    }

    /// A store on this database: call twice for two replicas.
    pub async fn store(&self) -> Store {
        Store::connect(&self.url).await.expect("open store")
    }

    /// A raw connection, to do or see what the store never would.
    pub async fn raw(&self) -> AnyPool {
        AnyPoolOptions::new().max_connections(1).connect(&self.url).await.expect("raw connection")
    }

    /// Drops the PostgreSQL schema; the SQLite directory goes with `self`.
    pub async fn finish(self) {
        if let Some((admin, name)) = self.schema {
            execute(&admin, &format!("DROP SCHEMA {name} CASCADE")).await;
            admin.close().await;
        }
    }
}

/// A [`Store`] open on a database of its own: the suites that test the store itself
/// (tests/store.rs, tests/retention.rs) get one per test, on SQLite and on PostgreSQL.
pub struct TestStore {
    pub db: TestDatabase,
    pub store: Store,
}

impl TestStore {
    pub async fn sqlite() -> TestStore {
        TestStore::on(TestDatabase::sqlite()).await
    }

    /// A fresh PostgreSQL schema; see [`TestDatabase::postgres`].
    pub async fn postgres() -> Option<TestStore> {
        Some(TestStore::on(TestDatabase::postgres().await?).await)
    }

    pub async fn on(db: TestDatabase) -> TestStore {
        let store = db.store().await;
        TestStore { db, store }
    }

    /// Closes the store and opens a new one on the same database, like a restart.
    pub async fn reopen(&mut self) {
        self.store.close().await;
        self.store = self.db.store().await;
    }

    /// A raw connection, to do what the store never would (corrupt a row).
    pub async fn raw(&self) -> AnyPool {
        self.db.raw().await
    }

    /// How many rows `table` has, read behind the store's back.
    pub async fn count(&self, table: &str) -> i64 {
        let raw = self.raw().await;
        let row = sqlx::query(AssertSqlSafe(format!("SELECT COUNT(*) AS n FROM {table}"))).fetch_one(&raw).await.expect("count");
        let n: i64 = row.try_get("n").expect("n");
        raw.close().await;
        n
    }

    /// Closes the store, then drops the database.
    pub async fn finish(self) {
        self.store.close().await;
        self.db.finish().await;
    }
}

pub async fn execute(pool: &AnyPool, sql: &str) {
    sqlx::query(AssertSqlSafe(sql.to_owned())).execute(pool).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
}
