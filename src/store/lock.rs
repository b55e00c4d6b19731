//! One process per SQLite store. SQLite has no leases between processes worth the
//! name, so the bridge makes the file single-process by construction: `run` and `demo`
//! hold an exclusive advisory lock (`flock`) on the database file for their lifetime,
//! and a second bridge on the same file stops at start with an error naming it. The
//! OS drops the lock when the process dies, `kill -9` included, so a restart after a
//! crash never waits or cleans up, and, being the only process, it takes every
//! session lease at once. The admin commands (`pending`, `cancel`, `audit`, `rules`,
//! `pair`) do not take the lock: they run beside a live bridge, through SQLite's own
//! locking. (SQLite's locks are POSIX `fcntl` locks, which `flock` does not touch.)

use std::fs::{File, OpenOptions, TryLockError};
use std::path::PathBuf;
use std::str::FromStr;

use sqlx::sqlite::SqliteConnectOptions;

/// Held while the process owns the store; dropping it (or exiting) releases the lock.
#[derive(Debug)]
pub struct StoreLock {
    _file: File,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("another hitl-bridge process is using the SQLite store {path} (it holds its lock); stop it first, or use PostgreSQL to run several replicas")]
    Taken { path: PathBuf },
    #[error("cannot open the SQLite store {path} to lock it: {source}")]
    Open { path: PathBuf, source: std::io::Error },
}

/// Locks the file of a SQLite `url` (creating the file and its directory if needed);
/// `None` for PostgreSQL and in-memory SQLite, which need no lock.
pub fn lock_store(url: &str) -> Result<Option<StoreLock>, LockError> {
    let Some(path) = sqlite_file(url) else { return Ok(None) };
    let open_error = |source| LockError::Open { path: path.clone(), source };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(open_error)?;
    }
    // An empty file is a valid new SQLite database.
    let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(open_error)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(StoreLock { _file: file })),
        Err(TryLockError::WouldBlock) => Err(LockError::Taken { path }),
        Err(TryLockError::Error(source)) => Err(LockError::Open { path, source }),
    }
}

/// The database file of a SQLite url, or `None` when it is not one (or in memory).
pub fn sqlite_file(url: &str) -> Option<PathBuf> {
    if !url.starts_with("sqlite:") || url.contains(":memory:") || url.contains("mode=memory") {
        return None;
    }
    let options = SqliteConnectOptions::from_str(url).ok()?;
    Some(options.get_filename().to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_same_file_is_refused_and_freed_with_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/data/bridge.db", dir.path().display());
        let first = lock_store(&url).unwrap().expect("a file store is locked");
        let second = lock_store(&url).unwrap_err();
        assert!(second.to_string().starts_with("another hitl-bridge process is using the SQLite store "), "{second}");
        assert!(second.to_string().contains("data/bridge.db"), "{second}");
        drop(first);
        assert!(lock_store(&url).unwrap().is_some(), "free again once the holder is gone");
    }

    #[test]
    fn postgres_and_memory_need_no_lock() {
        assert!(lock_store("postgres://u@localhost/db").unwrap().is_none());
        assert!(lock_store("sqlite::memory:").unwrap().is_none());
    }
}
