//! The `[store]` section: where the bridge keeps what it must not forget, and for how
//! long.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StoreSettings {
    #[serde(serialize_with = "crate::redact::url_password")]
    pub url: String,
    /// Settled requests, their callbacks' leftovers and audit entries older than this
    /// many days are pruned (hourly); 0 keeps everything.
    #[serde(default = "default_retention_days")]
    pub retention_days: u64,
    /// SQLite only: when a commit reaches the disk ([`SqliteSync`]).
    #[serde(default)]
    pub sqlite_synchronous: SqliteSync,
}

/// SQLite's `synchronous` under WAL: what a commit the bridge has acknowledged (a
/// decision answered "saved", an update confirmed to the platform) survives.
/// <https://www.sqlite.org/pragma.html#pragma_synchronous>
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SqliteSync {
    /// Every commit is on disk before it is acknowledged: it survives a `kill -9`, an
    /// OS crash and a power cut.
    #[default]
    Full,
    /// Commits reach the disk at WAL checkpoints: an acknowledged commit survives a
    /// `kill -9` (the WAL is in the OS's cache, which outlives the process), but the
    /// last ones may be lost to an OS crash or a power cut (the database stays
    /// consistent). Saves an fsync per commit.
    Normal,
}

impl SqliteSync {
    /// The `PRAGMA synchronous` value.
    pub fn pragma(self) -> &'static str {
        match self {
            SqliteSync::Full => "FULL",
            SqliteSync::Normal => "NORMAL",
        }
    }
}

fn default_retention_days() -> u64 {
    30
}

impl StoreSettings {
    /// What is wrong with the section, as (key, reason); `None` when it is sound.
    pub fn problem(&self) -> Option<(&'static str, &'static str)> {
        let known = ["sqlite:", "postgres://", "postgresql://"].iter().any(|p| self.url.starts_with(p));
        (!known).then_some(("store.url", "must start with sqlite: or postgres://"))
    }
}
