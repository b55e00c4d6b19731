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
    /// The caller passed an interaction in the wrong state for this operation.
    #[error("cannot {op} interaction {id}: {reason}")]
    WrongState { op: &'static str, id: String, reason: &'static str },
}

impl StoreError {
    /// For `map_err`: a failed query, named by the store operation it served.
    pub(crate) fn query(what: &'static str) -> impl FnOnce(sqlx::Error) -> StoreError {
        move |source| StoreError::Query { what, source }
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;
