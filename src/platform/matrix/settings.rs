//! The `[matrix]` section: the homeserver, the bot account (an access token, or a
//! password that logs in once), the rooms people talk in, where the device and its
//! encryption keys are kept, and what makes them invalid. Secrets are `secrecy`
//! strings, printed `[redacted]`.

use std::path::PathBuf;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use super::address::{is_room_id, is_user_id};
use crate::texts::Locale;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct MatrixSettings {
    pub enabled: bool,
    /// The client-server API's address, `https://matrix.example.org`.
    pub homeserver_url: String,
    /// The bot account, `@name:server`.
    pub user_id: String,
    /// Its access token (env HITL_BRIDGE__MATRIX__ACCESS_TOKEN).
    #[serde(serialize_with = "crate::redact::secret")]
    pub access_token: Option<SecretString>,
    /// Or its password: logs in once, then the kept device is used.
    #[serde(serialize_with = "crate::redact::secret")]
    pub password: Option<SecretString>,
    /// Room ids whose every message goes to the agent.
    pub rooms: Vec<String>,
    /// The device's store: its keys, its session, the rooms' state.
    pub store_path: PathBuf,
    /// The store's passphrase (env HITL_BRIDGE__MATRIX__STORE_PASSPHRASE).
    #[serde(serialize_with = "crate::redact::secret")]
    pub store_passphrase: Option<SecretString>,
    /// The device's display name.
    pub device_name: String,
    /// Fixed locale (`en`, `vi`, `zh`) for cards and notices; else English.
    pub locale: Option<String>,
}

impl Default for MatrixSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            homeserver_url: String::new(),
            user_id: String::new(),
            access_token: None,
            password: None,
            rooms: Vec::new(),
            store_path: PathBuf::from("matrix-store"),
            store_passphrase: None,
            device_name: "hitl-bridge".into(),
            locale: None,
        }
    }
}

fn secret_of(secret: &Option<SecretString>) -> Option<&str> {
    secret.as_ref().map(|s| s.expose_secret()).filter(|s| !s.is_empty())
}

impl MatrixSettings {
    pub fn access_token(&self) -> Option<&str> {
        secret_of(&self.access_token)
    }

    pub fn password(&self) -> Option<&str> {
        secret_of(&self.password)
    }

    pub fn store_passphrase(&self) -> Option<&str> {
        secret_of(&self.store_passphrase)
    }

    pub fn locale(&self) -> Locale {
        Locale::pick([self.locale.as_deref()])
    }

    /// The homeserver's address without a trailing `/`.
    pub fn homeserver(&self) -> &str {
        self.homeserver_url.trim_end_matches('/')
    }

    /// What is wrong with the section, as (key, reason); `None` when it is sound.
    pub fn check(&self) -> Option<(&'static str, &'static str)> {
        if self.enabled {
            let url = self.homeserver();
            if !(url.starts_with("https://") || url.starts_with("http://")) || url.len() <= "http://".len() || url.contains(char::is_whitespace) {
                return Some(("matrix.homeserver_url", "must be the homeserver's http(s) address, e.g. https://matrix.example.org"));
            }
            if !is_user_id(&self.user_id) {
                return Some(("matrix.user_id", "must be the bot account's Matrix id, @name:server"));
            }
            if self.access_token().is_none() && self.password().is_none() {
                return Some(("matrix.access_token", "or matrix.password is required when matrix.enabled = true (env HITL_BRIDGE__MATRIX__ACCESS_TOKEN)"));
            }
            if self.store_path.as_os_str().is_empty() {
                return Some(("matrix.store_path", "must name a folder for the device's keys"));
            }
        }
        if self.rooms.iter().any(|room| !is_room_id(room)) {
            return Some(("matrix.rooms", "must be room ids (!opaque:server, under the room's Settings > Advanced), not aliases"));
        }
        if self.device_name.trim().is_empty() || self.device_name.chars().count() > 100 {
            return Some(("matrix.device_name", "must be a name of 1 to 100 characters"));
        }
        if self.locale.as_deref().is_some_and(|l| Locale::from_code(l).is_none()) {
            return Some(("matrix.locale", "must be en, vi or zh"));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enabled() -> MatrixSettings {
        MatrixSettings {
            enabled: true,
            homeserver_url: "https://matrix.example.org/".into(),
            user_id: "@hitl:example.org".into(),
            access_token: Some("syt_secret".into()),
            ..MatrixSettings::default()
        }
    }

    #[test]
    fn a_sound_section_has_no_problem_and_off_needs_nothing() {
        assert_eq!(enabled().check(), None);
        assert_eq!(enabled().homeserver(), "https://matrix.example.org");
        assert_eq!(MatrixSettings::default().check(), None);
        let with_password = MatrixSettings { access_token: None, password: Some("pw".into()), ..enabled() };
        assert_eq!(with_password.check(), None);
    }

    #[test]
    fn each_bad_key_is_named() {
        let key = |change: fn(&mut MatrixSettings)| {
            let mut s = enabled();
            change(&mut s);
            s.check().map(|p| p.0)
        };
        assert_eq!(key(|s| s.homeserver_url = "matrix.example.org".into()), Some("matrix.homeserver_url"));
        assert_eq!(key(|s| s.user_id = "hitl".into()), Some("matrix.user_id"));
        assert_eq!(key(|s| s.access_token = None), Some("matrix.access_token"));
        assert_eq!(key(|s| s.store_path = PathBuf::new()), Some("matrix.store_path"));
        assert_eq!(key(|s| s.rooms = vec!["#ops:example.org".into()]), Some("matrix.rooms"));
        assert_eq!(key(|s| s.device_name = " ".into()), Some("matrix.device_name"));
        assert_eq!(key(|s| s.locale = Some("fr".into())), Some("matrix.locale"));
    }

    #[test]
    fn secrets_are_redacted_in_the_printed_section() {
        let mut s = enabled();
        s.password = Some("hunter2".into());
        let printed = serde_json::to_value(&s).unwrap();
        assert_eq!(printed["access_token"], "[redacted]");
        assert_eq!(printed["password"], "[redacted]");
        assert!(!format!("{s:?}").contains("syt_secret") && !format!("{s:?}").contains("hunter2"));
    }
}
