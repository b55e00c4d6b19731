//! [`StoreError`]: what went wrong in the store, naming the operation that failed.
//!
//! Connection URLs are never part of an error message: they may carry a password.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("unsupported database url scheme {scheme:?} (use sqlite:// or postgres://)")]
    UnsupportedUrl { scheme: String },
    #[error("creating the database directory {path}: {source}")]
    CreateDir { path: PathBuf, source: std::io::Error },
    #[error("opening the {kind} database: {source}")]
    Connect { kind: &'static str, source: sqlx::Error },
    #[error("migrating the database: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The database was migrated by a newer hitl-bridge: this binary would not know
    /// its tables, so it refuses to start and changes nothing.
    #[error(
        "the store was upgraded by a newer hitl-bridge (it has schema version {found}; this binary knows versions up to {known}) and is left untouched: \
         run that version or a newer one, or restore the backup taken before the upgrade (docs/operations.md#upgrading)"
    )]
    NewerSchema { found: i64, known: i64 },
    /// A query failed; `what` names the store operation.
    #[error("{what}: {source}")]
    Query { what: &'static str, source: sqlx::Error },
    #[error("reading column {column}: {source}")]
    Column { column: &'static str, source: sqlx::Error },
    #[error("encoding {what} as JSON: {source}")]
    Encode { what: &'static str, source: serde_json::Error },
    /// A stored row that no longer deserializes (a bug or a hand edit).
    #[error("stored {what} {id} is unreadable: {source}")]
    Corrupt { what: &'static str, id: String, source: serde_json::Error },
    /// A platform asked to keep a value larger than its own store takes
    /// ([`super::platform_state::MAX_VALUE_BYTES`]); nothing was written.
    #[error("{platform} cannot keep {key:?}: its value is {bytes} bytes, over the {limit} a platform's stored value may have")]
    TooLarge { platform: &'static str, key: String, bytes: usize, limit: usize },
    /// The caller passed an interaction in the wrong state for this operation.
    #[error("cannot {op} interaction {id}: {reason}")]
    WrongState { op: &'static str, id: String, reason: &'static str },
}

impl StoreError {
    /// For `map_err`: a failed query, named by the store operation it served, and
    /// counted under that name ([`error_counts`]).
    pub(crate) fn query(what: &'static str) -> impl FnOnce(sqlx::Error) -> StoreError {
        move |source| {
            count(what);
            StoreError::Query { what, source }
        }
    }

    /// True when the store itself is failing, not the request: the disk is full, the
    /// database cannot be reached, answered with an I/O error or stayed locked. Nothing
    /// was kept, and the same thing tried again once the store recovers can work; a
    /// person is told so. False for what trying again cannot mend (a constraint, an
    /// unreadable row, a caller's mistake).
    pub fn is_outage(&self) -> bool {
        match self {
            StoreError::Query { source, .. } | StoreError::Connect { source, .. } | StoreError::Column { source, .. } => is_outage(source),
            StoreError::CreateDir { .. } => true,
            _ => false,
        }
    }
}

/// Whether `e` says the database is unavailable rather than the statement wrong.
fn is_outage(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| is_outage_code(&code)),
        _ => false,
    }
}

/// SQLite's result codes (the primary code is the low byte of an extended one) and
/// PostgreSQL's SQLSTATE classes that mean the database, not the statement, failed.
fn is_outage_code(code: &str) -> bool {
    // A SQLSTATE is five characters, digits ones included ("53100"); SQLite's extended
    // codes have at most four digits.
    if let Some(sqlite) = code.parse::<i32>().ok().filter(|_| code.len() < 5) {
        // BUSY, LOCKED, NOMEM, READONLY, IOERR, CORRUPT, FULL, CANTOPEN, PROTOCOL.
        return matches!(sqlite & 0xff, 5 | 6 | 7 | 8 | 10 | 11 | 13 | 14 | 15);
    }
    // 08 connection exception, 53 insufficient resources (53100 disk full), 57
    // operator intervention (a shutdown, a restart), 58 system error (I/O).
    matches!(code.get(..2), Some("08" | "53" | "57" | "58"))
}

/// Failed queries by store operation, since the process started: the source of
/// `hitl_bridge_store_errors_total`. Kept for the process, not per store, because
/// errors are named where they happen, which knows no bridge; a process runs one
/// bridge (tests, which run several, read it as a lower bound).
static ERRORS: std::sync::Mutex<std::collections::BTreeMap<&'static str, u64>> = std::sync::Mutex::new(std::collections::BTreeMap::new());

fn count(what: &'static str) {
    let mut errors = ERRORS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    *errors.entry(what).or_default() += 1;
}

/// Every store operation that has failed in this process, with how many times.
pub fn error_counts() -> Vec<(&'static str, u64)> {
    let errors = ERRORS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    errors.iter().map(|(&what, &n)| (what, n)).collect()
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_failing_is_told_apart_from_a_wrong_statement() {
        let outage = |code: &str| is_outage_code(code);
        // SQLite: a full disk, a lock kept, an I/O error (extended: IOERR_WRITE).
        assert!(outage("13") && outage("5") && outage("778"));
        // A constraint or a syntax error is the statement's own.
        assert!(!outage("19") && !outage("787") && !outage("1"));
        // PostgreSQL: a shutdown, a lost connection, a full disk.
        assert!(outage("57P01") && outage("08006") && outage("53100"));
        assert!(!outage("23505") && !outage("42P01") && !outage("40001"));
        let lost = StoreError::Query { what: "settle", source: sqlx::Error::PoolTimedOut };
        assert!(lost.is_outage());
        let gone = StoreError::Query { what: "settle", source: sqlx::Error::RowNotFound };
        assert!(!gone.is_outage());
    }

    #[test]
    fn failed_queries_are_counted_by_operation() {
        let before = error_counts().into_iter().find(|(what, _)| *what == "count me").map_or(0, |(_, n)| n);
        let _ = StoreError::query("count me")(sqlx::Error::PoolTimedOut);
        let _ = StoreError::query("count me")(sqlx::Error::PoolTimedOut);
        let after = error_counts().into_iter().find(|(what, _)| *what == "count me").map_or(0, |(_, n)| n);
        assert_eq!(after - before, 2);
    }
}
