//! The `[telegram]` section: the bot's token, polling or webhook, locales and rate
//! limits, and what makes them invalid.

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use crate::texts::Locale;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelegramSettings {
    pub enabled: bool,
    /// From BotFather (env HITL_BRIDGE__TELEGRAM__TOKEN).
    #[serde(serialize_with = "crate::redact::secret")]
    pub token: Option<SecretString>,
    /// Bot API base URL: a self-hosted Bot API server, or the tests' fake.
    pub api_url: Option<String>,
    pub mode: TelegramMode,
    /// Public HTTPS URL Telegram posts updates to (webhook mode).
    pub webhook_url: Option<String>,
    /// Address the webhook server listens on.
    pub webhook_listen: String,
    /// Checked against `X-Telegram-Bot-Api-Secret-Token` on every webhook request.
    #[serde(serialize_with = "crate::redact::secret")]
    pub webhook_secret: Option<SecretString>,
    /// In groups, answer every message instead of only those addressed to the bot.
    pub respond_to_all: bool,
    /// Locale for every chat (`en`, `vi`, `zh`); else per chat, else the user's language.
    pub locale: Option<String>,
    /// Per-chat locale: chat id → `en` | `vi` | `zh`.
    pub chat_locales: std::collections::BTreeMap<String, String>,
    /// Keep to Telegram's rate limits (30 msg/s, 1/s per chat, 20/min per group);
    /// off only against a fake Bot API (benchmarks). 429s are waited out either way.
    pub rate_limits: bool,
}

impl Default for TelegramSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            token: None,
            api_url: None,
            mode: TelegramMode::Polling,
            webhook_url: None,
            webhook_listen: "0.0.0.0:8443".into(),
            webhook_secret: None,
            respond_to_all: false,
            locale: None,
            chat_locales: Default::default(),
            rate_limits: true,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TelegramMode {
    Polling,
    Webhook,
}

impl TelegramSettings {
    /// What is wrong with the section, as (key, reason); `None` when it is sound.
    pub fn check(&self) -> Option<(&'static str, &'static str)> {
        if self.enabled && self.token.as_ref().is_none_or(|t| t.expose_secret().is_empty()) {
            return Some(("telegram.token", "is required when telegram.enabled = true (env HITL_BRIDGE__TELEGRAM__TOKEN)"));
        }
        if self.enabled && self.mode == TelegramMode::Webhook && self.webhook_url.is_none() {
            return Some(("telegram.webhook_url", "is required when telegram.mode = \"webhook\""));
        }
        // BotFather's tokens are `<bot id>:<secret>`; anything else is a paste gone wrong.
        if self.enabled
            && let Some(token) = &self.token
            && !token.expose_secret().split_once(':').is_some_and(|(id, secret)| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) && !secret.is_empty())
        {
            return Some(("telegram.token", "is not a bot token: BotFather gives <bot id>:<secret>, e.g. 123456789:AAE…"));
        }
        // Telegram only calls https webhooks; plain http is allowed on loopback, for tests.
        if let Some(url) = &self.webhook_url
            && !url.starts_with("https://")
            && !["http://127.0.0.1", "http://localhost", "http://[::1]"].iter().any(|p| url.starts_with(p))
        {
            return Some(("telegram.webhook_url", "must be an https:// URL: Telegram only calls https webhooks"));
        }
        if self.locale.as_deref().is_some_and(|l| Locale::from_code(l).is_none()) {
            return Some(("telegram.locale", "must be en, vi or zh"));
        }
        None
    }
}
