//! The `[backend]` section: which backend serves chat sessions, and how the
//! connection-based ones connect (the stream protocol's URL, leases, pings). A backend
//! with keys of its own has its own section besides, read by its descriptor
//! ([`super::descriptor`]); the names are the backend registry's.

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BackendSettings {
    /// Which backend serves chat sessions: a name of the backend registry (checked at
    /// load, where the registry is read). Its default is `config/default.toml`'s.
    pub kind: String,
    /// The stream protocol's WebSocket URL, `{session_id}` replaced (kind `stream`).
    #[serde(default)]
    pub url: String,
    #[serde(default, serialize_with = "crate::redact::secret")]
    pub token: Option<SecretString>,
    #[serde(default)]
    pub history_url: Option<String>,
    #[serde(default = "default_reconnect_max")]
    pub reconnect_max_secs: u64,
    /// With several replicas on one database, one holds each session's connection under
    /// a lease renewed every third of this; another takes over when it lapses.
    #[serde(default = "default_lease")]
    pub lease_secs: u64,
    /// This replica's name in the lease table. Stable across restarts (default: the
    /// host name, as a StatefulSet pod keeps it), so a replica restarted after a crash
    /// takes its own leases back at once instead of waiting `lease_secs` for them to
    /// lapse. Distinct per replica: two live processes with one id would both deliver.
    #[serde(default)]
    pub replica_id: Option<String>,
    /// A WebSocket ping goes out this often (and right after every command, whose
    /// pong proves the backend read it).
    #[serde(default = "default_ping")]
    pub ping_secs: u64,
    /// A connection with no frame at all (not even a pong) for this long is half-open:
    /// it is dropped and reconnected, and unproven commands are sent again.
    #[serde(default = "default_read_timeout")]
    pub read_timeout_secs: u64,
    /// A session with nothing to do (no open turn, nothing pending, nothing queued)
    /// closes its connection after this long.
    #[serde(default = "default_idle_close")]
    pub idle_close_secs: u64,
}

fn default_reconnect_max() -> u64 {
    30
}

impl BackendSettings {
    /// `replica_id`, else the host name (stable across restarts, as a StatefulSet pod's
    /// is), else a name for this process alone (a restart after a crash then waits
    /// `lease_secs` for its leases).
    pub fn replica_id(&self) -> String {
        if let Some(id) = self.replica_id.as_deref().map(str::trim).filter(|id| !id.is_empty()) {
            return id.to_owned();
        }
        let from_file = |path: &str| std::fs::read_to_string(path).ok().map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
        std::env::var("HOSTNAME")
            .ok()
            .filter(|h| !h.trim().is_empty())
            .or_else(|| from_file("/proc/sys/kernel/hostname"))
            .or_else(|| from_file("/etc/hostname"))
            .unwrap_or_else(|| format!("process-{}", uuid::Uuid::new_v4().simple()))
    }
}

fn default_lease() -> u64 {
    15
}

fn default_ping() -> u64 {
    10
}

fn default_read_timeout() -> u64 {
    30
}

fn default_idle_close() -> u64 {
    60
}

impl BackendSettings {
    /// What is wrong with the connection keys, checked after the backend's own section.
    pub fn connection_problem(&self) -> Option<(&'static str, &'static str)> {
        if let Some(h) = &self.history_url
            && !(h.starts_with("http://") || h.starts_with("https://"))
        {
            return Some(("backend.history_url", "must start with http:// or https://"));
        }
        if self.lease_secs < 3 {
            return Some(("backend.lease_secs", "must be at least 3"));
        }
        if self.reconnect_max_secs == 0 {
            return Some(("backend.reconnect_max_secs", "must be at least 1"));
        }
        None
    }
}
