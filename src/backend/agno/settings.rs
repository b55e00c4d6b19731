//! The `[agno]` section: where AgentOS listens and which of its agents serves the
//! bridge's chat sessions (`backend.kind = "agno"`).

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize, Serializer};

/// Optional in the file: only read when `backend.kind = "agno"`, and then `agent_id`
/// must be set.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgnoSettings {
    /// AgentOS's base URL, e.g. `http://127.0.0.1:7777` (no trailing path).
    pub url: String,
    /// The agent that runs the chat: `POST {url}/agents/{agent_id}/runs`.
    pub agent_id: String,
    /// Sent as `Authorization: Bearer <token>` when AgentOS has a security key or
    /// JWT authorization on.
    #[serde(serialize_with = "redact")]
    pub token: Option<SecretString>,
    /// How long a call that is not an event stream (run lookups, cancel) may take.
    pub request_timeout_secs: u64,
}

impl Default for AgnoSettings {
    fn default() -> Self {
        Self { url: "http://127.0.0.1:7777".into(), agent_id: String::new(), token: None, request_timeout_secs: 10 }
    }
}

fn redact<S: Serializer>(secret: &Option<SecretString>, serializer: S) -> Result<S::Ok, S::Error> {
    match secret {
        Some(s) if !s.expose_secret().is_empty() => serializer.serialize_str("[redacted]"),
        _ => serializer.serialize_none(),
    }
}

impl AgnoSettings {
    /// The first bad key and why, for `Settings::validate`.
    pub fn problem(&self) -> Option<(&'static str, &'static str)> {
        if !(self.url.starts_with("http://") || self.url.starts_with("https://")) {
            return Some(("agno.url", "must start with http:// or https://"));
        }
        if self.agent_id.trim().is_empty() || self.agent_id.contains('/') {
            return Some(("agno.agent_id", "must be an agent id (non-empty, no '/')"));
        }
        if self.request_timeout_secs == 0 {
            return Some(("agno.request_timeout_secs", "must be at least 1"));
        }
        None
    }

    /// `url` without a trailing slash.
    pub fn base(&self) -> &str {
        self.url.trim_end_matches('/')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_keys_are_named() {
        let bad = |change: fn(&mut AgnoSettings)| {
            let mut s = AgnoSettings { agent_id: "ops".into(), ..AgnoSettings::default() };
            change(&mut s);
            s.problem().map(|(key, _)| key)
        };
        assert_eq!(bad(|_| {}), None);
        assert_eq!(bad(|s| s.agent_id = String::new()), Some("agno.agent_id"), "required");
        assert_eq!(bad(|s| s.agent_id = "a/b".into()), Some("agno.agent_id"));
        assert_eq!(bad(|s| s.url = "ws://x".into()), Some("agno.url"));
        assert_eq!(bad(|s| s.request_timeout_secs = 0), Some("agno.request_timeout_secs"));
    }

    #[test]
    fn the_token_is_redacted_and_the_base_has_no_trailing_slash() {
        let s = AgnoSettings { url: "http://127.0.0.1:7777/".into(), token: Some("agno-s3cret".to_owned().into()), ..AgnoSettings::default() };
        assert!(!serde_json::to_string(&s).unwrap().contains("agno-s3cret"));
        assert_eq!(s.base(), "http://127.0.0.1:7777");
    }
}
