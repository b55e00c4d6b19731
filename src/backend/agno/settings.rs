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
    use crate::config::{ConfigError, Settings};

    fn invalid_key(pairs: &[(&str, &str)]) -> Option<&'static str> {
        match Settings::from_pairs(pairs) {
            Err(ConfigError::Invalid { key, .. }) => Some(key),
            Err(other) => panic!("{other}"),
            Ok(_) => None,
        }
    }

    #[test]
    fn the_agno_section_is_checked_only_for_its_kind() {
        assert_eq!(invalid_key(&[("backend.kind", "agno")]), Some("agno.agent_id"));
        assert_eq!(invalid_key(&[("backend.kind", "agno"), ("agno.agent_id", "ops"), ("agno.url", "ws://x")]), Some("agno.url"));
        assert_eq!(invalid_key(&[("backend.kind", "agno"), ("agno.agent_id", "ops"), ("agno.request_timeout_secs", "0")]), Some("agno.request_timeout_secs"));
        assert_eq!(invalid_key(&[("backend.kind", "agno"), ("agno.agent_id", "ops"), ("backend.url", "")]), None, "backend.url is the stream kind's");
        assert_eq!(invalid_key(&[("agno.agent_id", "")]), None, "not read for the stream kind");
    }

    #[test]
    fn the_token_is_redacted() {
        let s = Settings::from_pairs(&[("backend.kind", "agno"), ("agno.agent_id", "ops"), ("agno.token", "agno-s3cret")]).unwrap();
        assert!(!s.redacted_json().contains("agno-s3cret"));
        assert_eq!(s.backends.get::<super::AgnoSettings>().base(), "http://127.0.0.1:7777");
    }
}
