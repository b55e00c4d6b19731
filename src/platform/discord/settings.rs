//! The `[discord]` section: the bot's token, the gateway and the interactions
//! endpoint, channels, locale and the guild whose roles count, and what makes them
//! invalid.

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use crate::texts::Locale;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct DiscordSettings {
    pub enabled: bool,
    /// Bot token (env HITL_BRIDGE__DISCORD__TOKEN).
    #[serde(serialize_with = "crate::redact::secret")]
    pub token: Option<SecretString>,
    /// REST base URL (and gateway lookup): the tests' fake, or a proxy.
    pub api_url: Option<String>,
    /// Channel ids whose every message goes to the agent (DMs and mentions always do).
    pub channels: Vec<String>,
    /// Open a thread for each new conversation.
    pub thread_per_session: bool,
    /// Application public key: enables the HTTP interactions endpoint.
    pub public_key: Option<String>,
    /// Address the interactions endpoint listens on.
    pub interactions_listen: String,
    /// Fixed locale (`en`, `vi`, `zh`); else the interaction's locale.
    pub locale: Option<String>,
    /// Connect the gateway (messages, slash commands, clicks). A replica that only
    /// serves the HTTP interactions endpoint turns it off.
    pub gateway: bool,
    /// The guild whose roles count for clicks and messages in DMs (a DM carries no
    /// member roles): the bridge looks the member up there.
    pub guild_id: Option<String>,
}

impl Default for DiscordSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            token: None,
            api_url: None,
            channels: Vec::new(),
            thread_per_session: false,
            public_key: None,
            interactions_listen: "0.0.0.0:8080".into(),
            locale: None,
            gateway: true,
            guild_id: None,
        }
    }
}

impl DiscordSettings {
    /// What is wrong with the section, as (key, reason); `None` when it is sound.
    pub fn check(&self) -> Option<(&'static str, &'static str)> {
        if self.enabled && self.token.as_ref().is_none_or(|t| t.expose_secret().is_empty()) {
            return Some(("discord.token", "is required when discord.enabled = true (env HITL_BRIDGE__DISCORD__TOKEN)"));
        }
        if self.locale.as_deref().is_some_and(|l| Locale::from_code(l).is_none()) {
            return Some(("discord.locale", "must be en, vi or zh"));
        }
        if self.guild_id.as_deref().is_some_and(|g| g.is_empty() || !g.bytes().all(|b| b.is_ascii_digit())) {
            return Some(("discord.guild_id", "must be a guild id (digits)"));
        }
        None
    }
}
