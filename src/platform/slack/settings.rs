//! The `[slack]` section: the bot and app-level tokens, the transport (Socket Mode or
//! HTTP events), the Web API's address and the channels people talk in, and what makes
//! them invalid. Secrets are `secrecy` strings, printed `[redacted]`.

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use crate::texts::Locale;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SlackSettings {
    pub enabled: bool,
    /// The bot token, `xoxb-…` (env HITL_BRIDGE__SLACK__BOT_TOKEN): every Web API call.
    #[serde(serialize_with = "crate::redact::secret")]
    pub bot_token: Option<SecretString>,
    /// The app-level token, `xapp-…` (env HITL_BRIDGE__SLACK__APP_TOKEN): opens the
    /// Socket Mode connection.
    #[serde(serialize_with = "crate::redact::secret")]
    pub app_token: Option<SecretString>,
    pub mode: SlackMode,
    /// Checks the `X-Slack-Signature` of every HTTP event (HTTP mode).
    #[serde(serialize_with = "crate::redact::secret")]
    pub signing_secret: Option<SecretString>,
    /// Where the HTTP events endpoint listens (HTTP mode).
    pub events_listen: String,
    /// The Web API's base URL, ending in `/`: Slack's, or the tests' fake.
    pub api_url: String,
    /// Channel ids (`C…`) whose every message goes to the agent.
    pub channels: Vec<String>,
    /// Fixed locale (`en`, `vi`, `zh`) for cards and notices; else English.
    pub locale: Option<String>,
    /// The least time between two new messages in one channel: Slack's documented
    /// pace for `chat.postMessage` is about one a second. 0: no pacing of the bridge's
    /// own, neither per channel nor per method tier (only against a fake Slack); 429s
    /// are waited out either way.
    pub post_interval_ms: u64,
    /// How often the members of a user group (`S…`) named as approvers are asked of
    /// Slack again (`usergroups.users.list`); they are asked at first need.
    pub group_refresh_secs: u64,
}

impl Default for SlackSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            bot_token: None,
            app_token: None,
            mode: SlackMode::Socket,
            signing_secret: None,
            events_listen: "0.0.0.0:3000".into(),
            api_url: "https://slack.com/api/".into(),
            channels: Vec::new(),
            locale: None,
            post_interval_ms: 1000,
            group_refresh_secs: 300,
        }
    }
}

/// How Slack reaches the bridge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SlackMode {
    /// The bridge opens a WebSocket to Slack: no public URL needed.
    Socket,
    /// Slack posts events and clicks to `slack.events_listen` (several replicas behind
    /// a load balancer).
    Http,
}

fn secret_of(secret: &Option<SecretString>) -> Option<&str> {
    secret.as_ref().map(|s| s.expose_secret()).filter(|s| !s.is_empty())
}

impl SlackSettings {
    /// The bot token, when set.
    pub fn bot_token(&self) -> Option<&str> {
        secret_of(&self.bot_token)
    }

    /// The app-level token, when set.
    pub fn app_token(&self) -> Option<&str> {
        secret_of(&self.app_token)
    }

    /// The locale of cards and notices.
    pub fn locale(&self) -> Locale {
        Locale::pick([self.locale.as_deref()])
    }

    /// The least time between two new messages in one channel.
    pub fn post_interval(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.post_interval_ms)
    }

    /// How long a user group's members are trusted before Slack is asked again.
    pub fn group_refresh(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.group_refresh_secs)
    }

    /// What is wrong with the section, as (key, reason); `None` when it is sound. A
    /// token of the wrong kind is the usual paste gone wrong (the bot token in the app
    /// token's place), so its prefix is checked before anything is sent.
    pub fn check(&self) -> Option<(&'static str, &'static str)> {
        if self.enabled {
            match self.bot_token() {
                None => return Some(("slack.bot_token", "is required when slack.enabled = true (env HITL_BRIDGE__SLACK__BOT_TOKEN)")),
                Some(t) if !t.starts_with("xoxb-") => {
                    return Some(("slack.bot_token", "is not a bot token: Slack's bot tokens start with xoxb- (OAuth & Permissions, Bot User OAuth Token)"));
                }
                Some(_) => {}
            }
            match (self.mode, self.app_token()) {
                (SlackMode::Socket, None) => {
                    return Some(("slack.app_token", "is required when slack.mode = \"socket\" (env HITL_BRIDGE__SLACK__APP_TOKEN)"));
                }
                (SlackMode::Socket, Some(t)) if !t.starts_with("xapp-") => {
                    return Some((
                        "slack.app_token",
                        "is not an app-level token: they start with xapp- (Basic Information, App-Level Tokens, scope connections:write)",
                    ));
                }
                (SlackMode::Http, _) if secret_of(&self.signing_secret).is_none() => {
                    return Some(("slack.signing_secret", "is required when slack.mode = \"http\" (env HITL_BRIDGE__SLACK__SIGNING_SECRET)"));
                }
                _ => {}
            }
        }
        if !(self.api_url.starts_with("https://") || self.api_url.starts_with("http://")) || !self.api_url.ends_with('/') {
            return Some(("slack.api_url", "must be an http(s) URL ending in / (e.g. https://slack.com/api/)"));
        }
        if let Some(bad) = self.channels.iter().find(|c| !super::address::is_channel_id(c)) {
            tracing::debug!(channel = %bad, "not a Slack channel id");
            return Some(("slack.channels", "must be channel ids (C…, G…), as Slack shows them under the channel's details"));
        }
        if self.locale.as_deref().is_some_and(|l| Locale::from_code(l).is_none()) {
            return Some(("slack.locale", "must be en, vi or zh"));
        }
        if self.group_refresh_secs == 0 {
            return Some(("slack.group_refresh_secs", "must be at least 1 (Slack's usergroups.users.list allows about 20 calls a minute)"));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enabled(bot: &str, app: Option<&str>) -> SlackSettings {
        SlackSettings { enabled: true, bot_token: Some(bot.into()), app_token: app.map(|a| SecretString::from(a.to_owned())), ..SlackSettings::default() }
    }

    #[test]
    fn tokens_are_checked_by_their_prefix() {
        assert_eq!(enabled("xoxb-1-2", Some("xapp-1-A-2")).check(), None);
        assert_eq!(enabled("xapp-1-A-2", Some("xapp-1-A-2")).check().map(|p| p.0), Some("slack.bot_token"));
        assert_eq!(enabled("xoxb-1-2", Some("xoxb-1-2")).check().map(|p| p.0), Some("slack.app_token"));
        assert_eq!(enabled("xoxb-1-2", None).check().map(|p| p.0), Some("slack.app_token"));
        assert_eq!(enabled("", None).check().map(|p| p.0), Some("slack.bot_token"));
        // Off, nothing is required.
        assert_eq!(SlackSettings::default().check(), None);
    }

    #[test]
    fn http_mode_needs_the_signing_secret_not_the_app_token() {
        let mut s = enabled("xoxb-1-2", None);
        s.mode = SlackMode::Http;
        assert_eq!(s.check().map(|p| p.0), Some("slack.signing_secret"));
        s.signing_secret = Some("abc".into());
        assert_eq!(s.check(), None);
    }

    #[test]
    fn the_api_url_channels_and_locale_are_checked() {
        let mut s = SlackSettings { api_url: "https://slack.com/api".into(), ..SlackSettings::default() };
        assert_eq!(s.check().map(|p| p.0), Some("slack.api_url"));
        s.api_url = "http://127.0.0.1:9/api/".into();
        s.channels = vec!["C0123ABC".into(), "#ops".into()];
        assert_eq!(s.check().map(|p| p.0), Some("slack.channels"));
        s.channels = vec!["C0123ABC".into()];
        s.locale = Some("fr".into());
        assert_eq!(s.check().map(|p| p.0), Some("slack.locale"));
        s.locale = None;
        s.group_refresh_secs = 0;
        assert_eq!(s.check().map(|p| p.0), Some("slack.group_refresh_secs"));
    }

    #[test]
    fn secrets_are_redacted_in_the_printed_section() {
        let s = enabled("xoxb-secret", Some("xapp-secret"));
        let printed = serde_json::to_value(&s).unwrap();
        assert_eq!(printed["bot_token"], "[redacted]");
        assert_eq!(printed["app_token"], "[redacted]");
        assert_eq!(printed["signing_secret"], serde_json::Value::Null);
        assert_eq!(printed["mode"], "socket");
        assert!(!format!("{s:?}").contains("xoxb-secret") && !format!("{s:?}").contains("xapp-secret"));
    }
}
