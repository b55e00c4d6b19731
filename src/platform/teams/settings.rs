//! The `[teams]` section: the bot's Microsoft app id and password, its tenant, where
//! Microsoft's keys and tokens come from (the tests point both at a fake), where the
//! Connector API is reached before a conversation has told its own address, the
//! messaging endpoint's listen address and the conversations people talk in, and
//! what makes them invalid. The password is a `secrecy` string, printed `[redacted]`.

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use crate::texts::Locale;

/// Where Microsoft publishes the keys that sign the Bot Connector's requests
/// (learn.microsoft.com, "Authentication with the Bot Connector API", step 2).
pub const MICROSOFT_OPENID_METADATA: &str = "https://login.botframework.com/v1/.well-known/openidconfiguration";
/// The tenant a multi-tenant bot asks its tokens of.
pub const MULTI_TENANT: &str = "botframework.com";

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TeamsSettings {
    pub enabled: bool,
    /// The bot's Microsoft App ID (a GUID), as the Azure Bot resource shows it: the
    /// audience of every request Teams sends, and the client of the bridge's tokens.
    pub app_id: String,
    /// The client secret of that app (env HITL_BRIDGE__TEAMS__APP_PASSWORD).
    #[serde(serialize_with = "crate::redact::secret")]
    pub app_password: Option<SecretString>,
    /// The tenant (a GUID) of a single-tenant bot; empty for a multi-tenant one.
    pub tenant_id: String,
    /// The OpenID metadata whose `jwks_uri` lists the keys that sign Teams' requests.
    pub openid_metadata_url: String,
    /// Where the bridge's tokens come from; empty: Microsoft's for `tenant_id` (or
    /// `botframework.com` for a multi-tenant bot).
    pub token_url: String,
    /// The Connector API's address for a conversation that has not written to the bot
    /// since the bridge started (each activity carries its own `serviceUrl`, which wins).
    pub service_url: String,
    /// Where the messaging endpoint (`/teams/messages`) listens.
    pub messages_listen: String,
    /// Conversation ids (`19:…@thread.tacv2`) whose every message goes to the agent;
    /// elsewhere the bot hears DMs and @mentions.
    pub channels: Vec<String>,
    /// How long a team's or channel's member list (an approver group) is trusted
    /// before Teams is asked again, in seconds.
    pub group_refresh_secs: u64,
    /// Fixed locale (`en`, `vi`, `zh`) for cards and notices; else English.
    pub locale: Option<String>,
}

impl Default for TeamsSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            app_id: String::new(),
            app_password: None,
            tenant_id: String::new(),
            openid_metadata_url: MICROSOFT_OPENID_METADATA.into(),
            token_url: String::new(),
            service_url: "https://smba.trafficmanager.net/teams/".into(),
            messages_listen: "0.0.0.0:3978".into(),
            channels: Vec::new(),
            group_refresh_secs: 300,
            locale: None,
        }
    }
}

/// A GUID as Microsoft writes app, tenant and Entra object ids:
/// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, hexadecimal.
pub fn is_guid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.len() == 5 && groups.iter().zip([8, 4, 4, 4, 12]).all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn is_http_url(url: &str) -> bool {
    (url.starts_with("https://") || url.starts_with("http://")) && url::Url::parse(url).is_ok()
}

impl TeamsSettings {
    /// The app password, when set.
    pub fn app_password(&self) -> Option<&str> {
        self.app_password.as_ref().map(|s| s.expose_secret()).filter(|s| !s.is_empty())
    }

    /// The locale of cards and notices.
    pub fn locale(&self) -> Locale {
        Locale::pick([self.locale.as_deref()])
    }

    /// Where the bridge asks for its tokens: `token_url`, else Microsoft's for the
    /// tenant (learn.microsoft.com, "Authentication with the Bot Connector API", step 1).
    pub fn token_url(&self) -> String {
        if !self.token_url.is_empty() {
            return self.token_url.clone();
        }
        let tenant = if self.tenant_id.is_empty() { MULTI_TENANT } else { self.tenant_id.as_str() };
        format!("https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token")
    }

    /// `group_refresh_secs`, at least a second.
    pub fn group_refresh(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.group_refresh_secs.max(1))
    }

    /// `service_url`, ending in `/`.
    pub fn service_url(&self) -> String {
        if self.service_url.ends_with('/') { self.service_url.clone() } else { format!("{}/", self.service_url) }
    }

    /// What is wrong with the section, as (key, reason); `None` when it is sound.
    pub fn check(&self) -> Option<(&'static str, &'static str)> {
        if self.enabled {
            if self.app_id.is_empty() {
                return Some(("teams.app_id", "is required when teams.enabled = true: the Microsoft App ID of the Azure Bot (a GUID)"));
            }
            if !is_guid(&self.app_id) {
                return Some(("teams.app_id", "is not a Microsoft App ID: a GUID such as 00000000-0000-0000-0000-000000000000 (Azure Bot, Configuration)"));
            }
            if self.app_password().is_none() {
                return Some(("teams.app_password", "is required when teams.enabled = true (env HITL_BRIDGE__TEAMS__APP_PASSWORD)"));
            }
        }
        if !self.tenant_id.is_empty() && !is_guid(&self.tenant_id) {
            return Some(("teams.tenant_id", "must be a tenant id (a GUID), or empty for a multi-tenant bot"));
        }
        if !is_http_url(&self.openid_metadata_url) {
            return Some(("teams.openid_metadata_url", "must be an http(s) URL"));
        }
        if !self.token_url.is_empty() && !is_http_url(&self.token_url) {
            return Some(("teams.token_url", "must be an http(s) URL, or empty for Microsoft's"));
        }
        if !is_http_url(&self.service_url) {
            return Some(("teams.service_url", "must be an http(s) URL (e.g. https://smba.trafficmanager.net/teams/)"));
        }
        if self.messages_listen.parse::<std::net::SocketAddr>().is_err() {
            return Some(("teams.messages_listen", "must be an address and port, such as 0.0.0.0:3978"));
        }
        if self.channels.iter().any(|c| !super::address::is_conversation_id(c)) {
            return Some(("teams.channels", "must be conversation ids (19:…@thread.tacv2), as /id shows them in the channel"));
        }
        if self.locale.as_deref().is_some_and(|l| Locale::from_code(l).is_none()) {
            return Some(("teams.locale", "must be en, vi or zh"));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const APP: &str = "2f1c9a64-8d0e-4c3b-9a51-7e2d4b6c8f10";

    fn enabled() -> TeamsSettings {
        TeamsSettings { enabled: true, app_id: APP.into(), app_password: Some("s3cret".into()), ..TeamsSettings::default() }
    }

    #[test]
    fn the_app_id_and_password_are_required_and_checked() {
        assert_eq!(enabled().check(), None);
        assert_eq!(TeamsSettings::default().check(), None, "off, nothing is required");
        let mut s = enabled();
        s.app_id = String::new();
        assert_eq!(s.check().map(|p| p.0), Some("teams.app_id"));
        s.app_id = "my-bot".into();
        assert_eq!(s.check().map(|p| p.0), Some("teams.app_id"));
        let mut s = enabled();
        s.app_password = Some(String::new().into());
        assert_eq!(s.check().map(|p| p.0), Some("teams.app_password"));
    }

    #[test]
    fn every_other_key_names_itself() {
        type Spoil = fn(&mut TeamsSettings);
        let bad: [(&str, Spoil); 7] = [
            ("teams.tenant_id", |s| s.tenant_id = "contoso".into()),
            ("teams.openid_metadata_url", |s| s.openid_metadata_url = "login.botframework.com".into()),
            ("teams.token_url", |s| s.token_url = "ftp://x".into()),
            ("teams.service_url", |s| s.service_url = String::new()),
            ("teams.messages_listen", |s| s.messages_listen = "3978".into()),
            ("teams.channels", |s| s.channels = vec!["#ops".into()]),
            ("teams.locale", |s| s.locale = Some("fr".into())),
        ];
        for (key, spoil) in bad {
            let mut s = enabled();
            spoil(&mut s);
            assert_eq!(s.check().map(|p| p.0), Some(key));
        }
    }

    #[test]
    fn the_token_url_follows_the_tenant() {
        let mut s = enabled();
        assert_eq!(s.token_url(), "https://login.microsoftonline.com/botframework.com/oauth2/v2.0/token");
        s.tenant_id = APP.into();
        assert_eq!(s.token_url(), format!("https://login.microsoftonline.com/{APP}/oauth2/v2.0/token"));
        s.token_url = "http://127.0.0.1:9/token".into();
        assert_eq!(s.token_url(), "http://127.0.0.1:9/token");
    }

    #[test]
    fn the_password_is_redacted() {
        let printed = serde_json::to_value(enabled()).unwrap();
        assert_eq!(printed["app_password"], "[redacted]");
        assert!(!format!("{:?}", enabled()).contains("s3cret"));
    }
}
