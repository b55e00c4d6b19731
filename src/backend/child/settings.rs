//! What the settings of every agent process the bridge starts (Kimi CLI, an ACP
//! agent) share: the keys that start it, how they are checked, and its environment
//! printed without its values (they hold API keys).

use std::collections::BTreeMap;

use serde::Serializer;

/// The config keys of one backend's process settings, for naming the wrong one.
pub struct ProcessKeys {
    pub command: &'static str,
    pub work_dir: &'static str,
    pub start_timeout_secs: &'static str,
    pub env: &'static str,
}

/// The first of a process's keys that is wrong, and why.
pub fn process_problem(
    keys: &ProcessKeys,
    command: &str,
    work_dir: &str,
    start_timeout_secs: u64,
    env: &BTreeMap<String, String>,
) -> Option<(&'static str, &'static str)> {
    if command.trim().is_empty() {
        return Some((keys.command, "must name the agent's executable"));
    }
    if work_dir.trim().is_empty() {
        return Some((keys.work_dir, "must be a directory"));
    }
    if start_timeout_secs == 0 {
        return Some((keys.start_timeout_secs, "must be at least 1"));
    }
    if env.keys().any(|k| k.is_empty() || k.contains('=')) {
        return Some((keys.env, "names must be non-empty and contain no '='"));
    }
    None
}

/// Serializes an environment with its values redacted (`serialize_with`).
pub fn redact_values<S: Serializer>(env: &BTreeMap<String, String>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_map(env.keys().map(|k| (k, "[redacted]")))
}
