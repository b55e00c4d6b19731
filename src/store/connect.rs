//! Opening the database: SQLite or PostgreSQL chosen by the url, the SQLite file and
//! its directory created on first run, per-connection settings, and the migrations
//! embedded in the binary. Nothing here reads or writes bridge data.

use std::borrow::Cow;
use std::str::FromStr;

use sqlx::any::AnyPoolOptions;
use sqlx::migrate::{MigrateDatabase, Migration, MigrationType, Migrator};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{AnyConnection, AnyPool, Connection, SqlSafeStr, Sqlite};

use super::Store;
use super::error::{Result, StoreError};
use super::group_commit::GroupCommit;
use super::health::StoreHealth;
use super::settings::SqliteSync;
use super::shared_reads::SharedReads;

/// Where the store lives when the config names no database.
pub const DEFAULT_URL: &str = "sqlite://data/hitl-bridge.db";

/// A migration's SQL: one text both databases run, or one for each.
enum Schema {
    Shared(&'static str),
    PerDatabase { sqlite: &'static str, postgres: &'static str },
}

/// The schema, as `(version, description, SQL)`. Append only: sqlx refuses to start
/// when an applied migration's text has changed (moving a file keeps its text).
const MIGRATIONS: &[(i64, &str, Schema)] = &[
    (
        1,
        "init",
        Schema::PerDatabase {
            sqlite: include_str!("../../migrations/sqlite/0001_init.sql"),
            postgres: include_str!("../../migrations/postgres/0001_init.sql"),
        },
    ),
    (2, "secrets", Schema::Shared(include_str!("../../migrations/shared/0002_secrets.sql"))),
    (3, "session leases", Schema::Shared(include_str!("../../migrations/shared/0003_session_leases.sql"))),
    (4, "http api", Schema::Shared(include_str!("../../migrations/shared/0004_http_api.sql"))),
    (5, "access", Schema::Shared(include_str!("../../migrations/shared/0005_access.sql"))),
    (6, "ui state", Schema::Shared(include_str!("../../migrations/shared/0006_ui_state.sql"))),
    (8, "pending shows", Schema::Shared(include_str!("../../migrations/shared/0008_pending_shows.sql"))),
    (
        9,
        "admin commands",
        Schema::PerDatabase {
            sqlite: include_str!("../../migrations/sqlite/0009_admin.sql"),
            postgres: include_str!("../../migrations/postgres/0009_admin.sql"),
        },
    ),
    (
        10,
        "decision policies",
        Schema::PerDatabase {
            sqlite: include_str!("../../migrations/sqlite/0010_policies.sql"),
            postgres: include_str!("../../migrations/postgres/0010_policies.sql"),
        },
    ),
    (
        13,
        "refusal windows",
        Schema::PerDatabase {
            sqlite: include_str!("../../migrations/sqlite/0013_refusals.sql"),
            postgres: include_str!("../../migrations/postgres/0013_refusals.sql"),
        },
    ),
    (
        14,
        "approval keys per agent",
        Schema::PerDatabase {
            sqlite: include_str!("../../migrations/sqlite/0014_keys_per_token.sql"),
            postgres: include_str!("../../migrations/postgres/0014_keys_per_token.sql"),
        },
    ),
    (15, "telegram inbox", Schema::Shared(include_str!("../../migrations/shared/0015_telegram_inbox.sql"))),
    (
        16,
        "interaction kind",
        Schema::PerDatabase {
            sqlite: include_str!("../../migrations/sqlite/0016_interaction_kind.sql"),
            postgres: include_str!("../../migrations/postgres/0016_interaction_kind.sql"),
        },
    ),
    (17, "shown revision", Schema::Shared(include_str!("../../migrations/shared/0017_shown_revision.sql"))),
    (18, "pending list index", Schema::Shared(include_str!("../../migrations/shared/0018_pending_page_index.sql"))),
    (19, "open turns", Schema::Shared(include_str!("../../migrations/shared/0019_open_turns.sql"))),
    (
        20,
        "outbox notify",
        Schema::PerDatabase {
            sqlite: include_str!("../../migrations/sqlite/0020_outbox_notify.sql"),
            postgres: include_str!("../../migrations/postgres/0020_outbox_notify.sql"),
        },
    ),
    (
        21,
        "pending notify",
        Schema::PerDatabase {
            sqlite: include_str!("../../migrations/sqlite/0021_pending_notify.sql"),
            postgres: include_str!("../../migrations/postgres/0021_pending_notify.sql"),
        },
    ),
    (22, "web inbox", Schema::Shared(include_str!("../../migrations/shared/0022_web.sql"))),
    (23, "platform inbox", Schema::Shared(include_str!("../../migrations/shared/0023_platform_inbox.sql"))),
    (24, "turn texts shown", Schema::Shared(include_str!("../../migrations/shared/0024_turn_texts_shown.sql"))),
    (25, "pending timers", Schema::Shared(include_str!("../../migrations/shared/0025_pending_timers.sql"))),
    (26, "access facts", Schema::Shared(include_str!("../../migrations/shared/0026_access_facts.sql"))),
    (27, "pending reads", Schema::Shared(include_str!("../../migrations/shared/0027_pending_reads.sql"))),
    (28, "platform state", Schema::Shared(include_str!("../../migrations/shared/0028_platform_state.sql"))),
    (29, "refused shows", Schema::Shared(include_str!("../../migrations/shared/0029_refused_shows.sql"))),
];

/// How long a SQLite writer waits for another one before giving up.
const SQLITE_BUSY_TIMEOUT_MS: u32 = 5_000;

/// Each SQLite connection's page cache, in KiB. SQLite's default is 2,000 KiB per
/// connection; with the pool's ten connections and a database of ten thousand pending
/// requests that alone would be 20 MiB of the bridge's memory. Pages not cached are
/// read back from the operating system's file cache, which holds them anyway.
const SQLITE_CACHE_KIB: u32 = 512;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    fn from_url(url: &str) -> Result<Self> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Backend::Postgres)
        } else if url.starts_with("sqlite:") {
            Ok(Backend::Sqlite)
        } else {
            // Only the scheme: the rest of a url may hold a password.
            let scheme = url.split_once(':').map_or("", |(scheme, _)| scheme);
            Err(StoreError::UnsupportedUrl { scheme: scheme.to_owned() })
        }
    }

    fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "SQLite",
            Backend::Postgres => "PostgreSQL",
        }
    }

    fn migrator(self) -> Migrator {
        let migrations = MIGRATIONS
            .iter()
            .map(|(version, description, schema)| {
                let sql = match (schema, self) {
                    (Schema::Shared(sql), _) => *sql,
                    (Schema::PerDatabase { sqlite, .. }, Backend::Sqlite) => *sqlite,
                    (Schema::PerDatabase { postgres, .. }, Backend::Postgres) => *postgres,
                };
                Migration::new(*version, Cow::Borrowed(*description), MigrationType::Simple, sql.into_sql_str(), false)
            })
            .collect();
        Migrator::with_migrations(migrations)
    }
}

impl Store {
    /// Opens (creating if needed) and migrates the database at `url`: `sqlite://path`
    /// or `postgres://…` / `postgresql://…`.
    pub async fn connect(url: &str) -> Result<Store> {
        Self::connect_with(url, SqliteSync::default()).await
    }

    /// [`Store::connect`] with SQLite's `synchronous` set to `sync` (ignored on
    /// PostgreSQL, whose own settings decide).
    pub async fn connect_with(url: &str, sync: SqliteSync) -> Result<Store> {
        // The Any driver dispatches on the url; it needs the drivers registered once.
        // Calling it again is a no-op.
        sqlx::any::install_default_drivers();
        let backend = Backend::from_url(url)?;
        let connect_error = |source| StoreError::Connect { kind: backend.name(), source };
        let options = match backend {
            Backend::Sqlite => {
                let in_memory = is_in_memory(url);
                if !in_memory {
                    create_sqlite_file(url).await?;
                }
                sqlite_pool_options(in_memory, sync)
            }
            Backend::Postgres => postgres_pool_options(),
        };
        let pool: AnyPool = options.connect(url).await.map_err(connect_error)?;
        migrate(backend, &pool).await?;
        let health = StoreHealth::start((*pool.connect_options()).clone(), pool.close_event());
        health.answered();
        let group = GroupCommit::start(pool.clone(), health.clone());
        let listen_url = (backend == Backend::Postgres).then(|| std::sync::Arc::from(url));
        let showing_reads = SharedReads::start(pool.clone(), health.clone());
        let loads = SharedReads::start(pool.clone(), health.clone());
        let session_chats = SharedReads::start(pool.clone(), health.clone());
        let chats_memo = (backend == Backend::Sqlite).then(std::sync::Arc::default);
        Ok(Store { pool, group, listen_url, showing_reads, loads, session_chats, chats_memo, health })
    }
}

/// Runs the migrations this binary does not find applied. A database that holds a
/// migration this binary does not know was upgraded by a newer one: refused before
/// anything is run, with what to do ([`StoreError::NewerSchema`]).
async fn migrate(backend: Backend, pool: &AnyPool) -> Result<()> {
    let migrator = backend.migrator();
    let known = migrator.iter().map(|m| m.version).max().unwrap_or(0);
    match migrator.run(pool).await {
        Err(sqlx::migrate::MigrateError::VersionMissing(found)) => {
            let newest: Option<i64> = sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations").fetch_one(pool).await.ok().flatten();
            Err(StoreError::NewerSchema { found: newest.unwrap_or(found).max(found), known })
        }
        other => Ok(other?),
    }
}

/// `sqlite::memory:` and friends: every connection would get its own empty database.
fn is_in_memory(url: &str) -> bool {
    url.contains(":memory:") || url.contains("mode=memory")
}

/// Creates the database file and its parent directory on first run.
async fn create_sqlite_file(url: &str) -> Result<()> {
    let connect_error = |source| StoreError::Connect { kind: "SQLite", source };
    let options = SqliteConnectOptions::from_str(url).map_err(connect_error)?;
    if let Some(dir) = options.get_filename().parent().filter(|dir| !dir.as_os_str().is_empty()) {
        tokio::fs::create_dir_all(dir).await.map_err(|source| StoreError::CreateDir { path: dir.to_owned(), source })?;
    }
    if !Sqlite::database_exists(url).await.map_err(connect_error)? {
        Sqlite::create_database(url).await.map_err(connect_error)?;
    }
    Ok(())
}

fn sqlite_pool_options(in_memory: bool, sync: SqliteSync) -> AnyPoolOptions {
    // No ping before each use: a SQLite connection is an open file, which no server can
    // have closed meanwhile, and the ping is a round trip to the connection's thread
    // on every query (measured: ~1 % of a burst's CPU, and a hand-off each time).
    let options =
        AnyPoolOptions::new().after_connect(move |conn, _| Box::pin(async move { sqlite_session_settings(conn, sync).await })).test_before_acquire(false);
    if in_memory {
        // One connection kept forever, so the database lives as long as the Store
        // (closing it, even a stuck one, would lose the database).
        options.max_connections(1).idle_timeout(None).max_lifetime(None)
    } else {
        options.before_acquire(|conn, _| Box::pin(async move { Ok(!left_in_transaction(conn)) }))
    }
}

/// True for an idle connection that sqlx still counts as inside a transaction: one
/// whose transaction failed in a way sqlx could not end. A COMMIT that fails on a
/// full disk or an I/O error is rolled back by SQLite itself, but sqlx still counts
/// the transaction as open and its ROLLBACK then fails; its next `begin` would be a
/// SAVEPOINT, and a rollback to it leaves a real transaction open holding the write
/// lock, so every other connection would get "database is locked" until a restart.
/// Such a connection is closed (which ends whatever it holds) and a fresh one opened.
fn left_in_transaction(conn: &AnyConnection) -> bool {
    let stuck = conn.is_in_transaction();
    if stuck {
        tracing::warn!("a database connection was left inside a failed transaction; closing it");
    }
    stuck
}

/// A PostgreSQL connection is tested (a round trip) before use only when it has been
/// idle for a while: one in steady use is known to work, and sqlx's default, a test
/// before every use, made each statement from the pool cost a second round trip (a
/// third with the test sqlx makes as it goes back). One that idled may have been cut
/// (a restarted server, a proxy's timeout) and is replaced instead of failing a query.
fn postgres_pool_options() -> AnyPoolOptions {
    AnyPoolOptions::new().test_before_acquire(false).before_acquire(|conn, meta| {
        Box::pin(async move {
            if left_in_transaction(conn) {
                return Ok(false);
            }
            if meta.idle_for >= POSTGRES_TRUSTED_IDLE {
                conn.ping().await?;
            }
            Ok(true)
        })
    })
}

/// How long a PostgreSQL connection may idle and still be used untested.
const POSTGRES_TRUSTED_IDLE: std::time::Duration = std::time::Duration::from_secs(1);

/// Run on every new SQLite connection. The Any driver only takes settings from the
/// url, which has no parameters for these, so they are set here instead.
async fn sqlite_session_settings(conn: &mut AnyConnection, sync: SqliteSync) -> Result<(), sqlx::Error> {
    // WAL lets readers (listing, rendering) proceed while a decision commits. It is
    // stored in the file, so after the first connection this is a no-op.
    sqlx::query("PRAGMA journal_mode = WAL").execute(&mut *conn).await?;
    // Several writers (timers, clicks) queue for the lock instead of failing at once.
    sqlx::query(sqlx::AssertSqlSafe(format!("PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}"))).execute(&mut *conn).await?;
    sqlx::query(sqlx::AssertSqlSafe(format!("PRAGMA cache_size = -{SQLITE_CACHE_KIB}"))).execute(&mut *conn).await?;
    // Off by default in SQLite; message refs rely on their interaction existing.
    sqlx::query("PRAGMA foreign_keys = ON").execute(&mut *conn).await?;
    // Set whatever the default: `store.sqlite_synchronous` says what it keeps.
    sqlx::query(sqlx::AssertSqlSafe(format!("PRAGMA synchronous = {}", sync.pragma()))).execute(&mut *conn).await?;
    Ok(())
}

impl Store {
    /// Closes the pool and waits for its connections to finish (graceful shutdown).
    /// Clones of this Store can no longer query afterwards.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `store.sqlite_synchronous` is what every connection of the pool runs with, not
    /// only the first.
    #[tokio::test]
    async fn sqlite_synchronous_is_set_on_every_connection() {
        for (sync, expected) in [(SqliteSync::Full, 2), (SqliteSync::Normal, 1)] {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::connect_with(&format!("sqlite://{}", dir.path().join("s.db").display()), sync).await.unwrap();
            let mut held = Vec::new();
            for _ in 0..3 {
                let mut conn = store.pool.acquire().await.unwrap();
                let (value,): (i64,) = sqlx::query_as("PRAGMA synchronous").fetch_one(&mut *conn).await.unwrap();
                assert_eq!(value, expected, "{sync:?}");
                held.push(conn);
            }
        }
    }

    /// A connection whose transaction SQLite ended behind sqlx's back (as a COMMIT
    /// refused on a full disk does) is not handed out again: had it been, its next
    /// transaction would be a SAVEPOINT whose rollback leaves a real transaction open,
    /// holding the write lock, and every other connection would get "database is
    /// locked". Simulated here with a ROLLBACK sqlx does not see.
    #[tokio::test]
    async fn a_connection_left_in_a_transaction_is_not_handed_out_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::connect(&format!("sqlite://{}", dir.path().join("s.db").display())).await.unwrap();
        let mut conn = store.pool.acquire().await.unwrap();
        let tx = conn.begin().await.unwrap();
        let mut tx = tx;
        sqlx::query("ROLLBACK").execute(&mut *tx).await.unwrap();
        drop(tx); // its own ROLLBACK fails now: sqlx still counts a transaction
        assert!(conn.is_in_transaction(), "the simulation no longer leaves sqlx counting a transaction");
        drop(conn);

        for _ in 0..3 {
            let mut held = Vec::new();
            for _ in 0..4 {
                let conn = store.pool.acquire().await.unwrap();
                assert!(!conn.is_in_transaction(), "a stuck connection was handed out");
                held.push(conn);
            }
        }
        // Writes from every path still commit, and nothing is locked.
        for n in 0..20 {
            let lease = store.try_lease(&format!("s{n}"), "me", 0, 1_000).await.unwrap();
            assert!(lease);
            assert!(!store.try_lease(&format!("s{n}"), "other", 0, 1_000).await.unwrap(), "a write that does nothing");
        }
        store.close().await;
        let reopened = Store::connect(&format!("sqlite://{}", dir.path().join("s.db").display())).await.unwrap();
        let (leases,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM session_leases").fetch_one(&reopened.pool).await.unwrap();
        assert_eq!(leases, 20, "every lease was committed");
    }

    /// A store a newer binary migrated (here: a migration this binary does not know) is
    /// refused with the versions and what to do, and left exactly as it was.
    #[tokio::test]
    async fn a_store_from_a_newer_binary_is_refused_and_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("s.db").display());
        let store = Store::connect(&url).await.unwrap();
        let known = MIGRATIONS.iter().map(|(version, _, _)| *version).max().unwrap();
        let newer = known + 1;
        sqlx::query("INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES ($1, 'from the future', TRUE, X'00', 0)")
            .bind(newer)
            .execute(&store.pool)
            .await
            .unwrap();
        assert!(store.try_lease("s1", "me", 0, 1_000).await.unwrap());
        store.close().await;
        let before = std::fs::read(dir.path().join("s.db")).unwrap();

        let refused = Store::connect(&url).await.unwrap_err();
        assert_eq!(
            refused.to_string(),
            format!(
                "the store was upgraded by a newer hitl-bridge (it has schema version {newer}; this binary knows versions up to {known}) and is left untouched: \
                 run that version or a newer one, or restore the backup taken before the upgrade (docs/operations.md#upgrading)"
            )
        );
        assert_eq!(std::fs::read(dir.path().join("s.db")).unwrap(), before, "not a byte changed");
    }
}
