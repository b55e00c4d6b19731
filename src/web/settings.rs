//! The `[web]` section: the inbox at `/inbox` on the HTTP listener.

use serde::{Deserialize, Serialize};

/// The web inbox (docs/web.md).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct WebSettings {
    pub enabled: bool,
    /// The inbox's external base URL as browsers reach it (behind a reverse proxy:
    /// the proxy's), used in the links the bridge hands out; `https://` also marks the
    /// session cookie `Secure`.
    pub public_url: String,
    /// A session unused this long is ended.
    pub session_idle_secs: u64,
}

impl Default for WebSettings {
    fn default() -> Self {
        Self { enabled: false, public_url: "http://127.0.0.1:8790".to_owned(), session_idle_secs: 12 * 3600 }
    }
}

impl WebSettings {
    /// What is wrong with the section, as (key, reason); `None` when it is sound.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        let url = url::Url::parse(&self.public_url);
        match url {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() && u.query().is_none() => {}
            _ => return Some(("web.public_url", format!("`{}` is not an http:// or https:// base URL (e.g. https://bridge.example.com)", self.public_url))),
        }
        if self.session_idle_secs < 60 {
            return Some(("web.session_idle_secs", "must be at least 60".to_owned()));
        }
        None
    }

    /// The base URL without a trailing slash.
    pub fn base(&self) -> &str {
        self.public_url.trim_end_matches('/')
    }

    /// Whether browsers reach the inbox over https (the cookie is then `Secure`).
    pub fn https(&self) -> bool {
        self.public_url.starts_with("https://")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_url_and_idle_time_are_checked() {
        assert_eq!(WebSettings::default().problem(), None);
        let bad = WebSettings { public_url: "bridge.example.com".into(), ..WebSettings::default() };
        assert_eq!(bad.problem().map(|p| p.0), Some("web.public_url"));
        let short = WebSettings { session_idle_secs: 5, ..WebSettings::default() };
        assert_eq!(short.problem().map(|p| p.0), Some("web.session_idle_secs"));
        let proxied = WebSettings { public_url: "https://ops.example.com/bridge/".into(), ..WebSettings::default() };
        assert_eq!(proxied.problem(), None);
        assert_eq!(proxied.base(), "https://ops.example.com/bridge");
        assert!(proxied.https());
    }
}
