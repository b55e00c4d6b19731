//! The `[mattermost]` section: the server's address and the bot account's token, the
//! channels people talk in, where Mattermost posts button clicks and dialogs (the
//! bridge's public address and the listener behind it), the slash command's token,
//! and what makes them invalid. Secrets are `secrecy` strings, printed `[redacted]`.

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use crate::texts::Locale;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct MattermostSettings {
    pub enabled: bool,
    /// The server's address, `https://chat.example.com` (REST v4 under `/api/v4`).
    pub url: String,
    /// The bot account's access token (env HITL_BRIDGE__MATTERMOST__BOT_TOKEN).
    #[serde(serialize_with = "crate::redact::secret")]
    pub bot_token: Option<SecretString>,
    /// The team the bot belongs to (its id, or its name as in the team's URL).
    pub team: Option<String>,
    /// Channel ids whose every post goes to the agent.
    pub channels: Vec<String>,
    /// The bridge's address as Mattermost reaches it: buttons and dialogs post to
    /// `<public_url>/mattermost/actions` and `/mattermost/dialogs`.
    pub public_url: Option<String>,
    /// Where that endpoint listens.
    pub listen: String,
    /// The slash command's token, checked on every `/hitl` post (env
    /// HITL_BRIDGE__MATTERMOST__SLASH_TOKEN).
    #[serde(serialize_with = "crate::redact::secret")]
    pub slash_token: Option<SecretString>,
    /// Fixed locale (`en`, `vi`, `zh`) for cards and notices; else English.
    pub locale: Option<String>,
    /// The least time between two new posts in one channel, in ms (0: not paced by
    /// the bridge; a 429 is waited out either way).
    pub post_interval_ms: u64,
}

impl Default for MattermostSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            url: String::new(),
            bot_token: None,
            team: None,
            channels: Vec::new(),
            public_url: None,
            listen: "0.0.0.0:3002".into(),
            slash_token: None,
            locale: None,
            post_interval_ms: 200,
        }
    }
}

fn secret_of(secret: &Option<SecretString>) -> Option<&str> {
    secret.as_ref().map(|s| s.expose_secret()).filter(|s| !s.is_empty())
}

fn is_http_url(text: &str) -> bool {
    (text.starts_with("https://") || text.starts_with("http://")) && text.len() > "http://".len() && !text.contains(char::is_whitespace)
}

impl MattermostSettings {
    pub fn bot_token(&self) -> Option<&str> {
        secret_of(&self.bot_token)
    }

    pub fn slash_token(&self) -> Option<&str> {
        secret_of(&self.slash_token)
    }

    pub fn locale(&self) -> Locale {
        Locale::pick([self.locale.as_deref()])
    }

    pub fn post_interval(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.post_interval_ms)
    }

    /// The server's address without a trailing `/`.
    pub fn server(&self) -> &str {
        self.url.trim_end_matches('/')
    }

    /// The public address without a trailing `/`.
    pub fn public(&self) -> &str {
        self.public_url.as_deref().unwrap_or_default().trim_end_matches('/')
    }

    /// What is wrong with the section, as (key, reason); `None` when it is sound.
    pub fn check(&self) -> Option<(&'static str, &'static str)> {
        if self.enabled {
            if !is_http_url(&self.url) {
                return Some(("mattermost.url", "must be the server's http(s) address, e.g. https://chat.example.com"));
            }
            match self.bot_token() {
                None => return Some(("mattermost.bot_token", "is required when mattermost.enabled = true (env HITL_BRIDGE__MATTERMOST__BOT_TOKEN)")),
                Some(t) if !super::address::is_id(t) => {
                    return Some((
                        "mattermost.bot_token",
                        "is not a Mattermost access token: they are 26 lower-case letters and digits (System Console, Bot Accounts)",
                    ));
                }
                Some(_) => {}
            }
            if !self.public_url.as_deref().is_some_and(is_http_url) {
                return Some(("mattermost.public_url", "is required: the http(s) address Mattermost posts button clicks and dialogs to"));
            }
        }
        if let Some(bad) = self.channels.iter().find(|c| !super::address::is_id(c)) {
            tracing::debug!(channel = %bad, "not a Mattermost channel id");
            return Some(("mattermost.channels", "must be channel ids (26 lower-case letters and digits, under the channel's View Info)"));
        }
        if self.team.as_deref().is_some_and(|t| t.is_empty() || t.contains(char::is_whitespace)) {
            return Some(("mattermost.team", "must be the team's id or its name as in its URL"));
        }
        if self.locale.as_deref().is_some_and(|l| Locale::from_code(l).is_none()) {
            return Some(("mattermost.locale", "must be en, vi or zh"));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "xi4ec1tsxpgztr8ejmxy1rbnew";

    fn enabled() -> MattermostSettings {
        MattermostSettings {
            enabled: true,
            url: "https://chat.example.com".into(),
            bot_token: Some(TOKEN.into()),
            public_url: Some("https://bridge.example.com".into()),
            ..MattermostSettings::default()
        }
    }

    #[test]
    fn a_sound_section_has_no_problem_and_off_needs_nothing() {
        assert_eq!(enabled().check(), None);
        assert_eq!(MattermostSettings::default().check(), None);
    }

    #[test]
    fn each_bad_key_is_named() {
        let key = |change: fn(&mut MattermostSettings)| {
            let mut s = enabled();
            change(&mut s);
            s.check().map(|p| p.0)
        };
        assert_eq!(key(|s| s.url = "chat.example.com".into()), Some("mattermost.url"));
        assert_eq!(key(|s| s.bot_token = None), Some("mattermost.bot_token"));
        assert_eq!(key(|s| s.bot_token = Some("xoxb-1-2".into())), Some("mattermost.bot_token"));
        assert_eq!(key(|s| s.public_url = None), Some("mattermost.public_url"));
        assert_eq!(key(|s| s.public_url = Some("bridge:3002".into())), Some("mattermost.public_url"));
        assert_eq!(key(|s| s.channels = vec!["town-square".into()]), Some("mattermost.channels"));
        assert_eq!(key(|s| s.team = Some("my team".into())), Some("mattermost.team"));
        assert_eq!(key(|s| s.locale = Some("fr".into())), Some("mattermost.locale"));
    }

    #[test]
    fn secrets_are_redacted_in_the_printed_section() {
        let mut s = enabled();
        s.slash_token = Some("slashsecret".into());
        let printed = serde_json::to_value(&s).unwrap();
        assert_eq!(printed["bot_token"], "[redacted]");
        assert_eq!(printed["slash_token"], "[redacted]");
        assert!(!format!("{s:?}").contains(TOKEN) && !format!("{s:?}").contains("slashsecret"));
    }
}
