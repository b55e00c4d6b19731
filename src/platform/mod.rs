//! Chat platforms: each renders interactions into its own widgets and turns clicks
//! and replies into calls on the [`EngineHandle`](crate::engine::EngineHandle).
//!
//! The engine talks to every platform through [`Platform`], the port it owns, so adding
//! a network never touches the core. Rendering must respect the platform's limits; deciding what a
//! click means is the core's job, not the platform's.

pub mod bounded;
pub mod commands;
pub mod console;
pub mod descriptor;
pub mod discord;
pub mod inbox;
pub mod kit;
pub mod refusals;
pub mod registry;
pub mod reminder;
pub mod slack;
pub mod telegram;
pub mod token;
pub mod turns;

/// The texts people read, under the name the platforms have always used.
pub use crate::texts as locale;

pub use crate::engine::{Platform, PlatformError};

pub use registry::networks;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::chat::ChatKey;

    #[test]
    fn chats_parse_as_written_in_config() {
        assert_eq!(networks().parse_chat("telegram:-1001234567890/7"), Some(ChatKey::new("telegram", "-1001234567890", Some("7"))));
        assert_eq!(networks().parse_chat("discord:1100000000000000000"), Some(ChatKey::new("discord", "1100000000000000000", None)));
        assert_eq!(networks().parse_chat("discord:user:80351110224678912"), Some(ChatKey::new("discord", "user:80351110224678912", None)));
        assert_eq!(networks().parse_chat("telegram:user:42"), Some(ChatKey::new("telegram", "42", None)));
        assert_eq!(networks().parse_chat("console"), Some(ChatKey::new("console", "stdin", None)));
        for bad in ["irc:#ops", "telegram:", "telegram:abc", "discord:1/", "discord:user:", "discord:user:x1", "slack", "slack:ops"] {
            assert_eq!(networks().parse_chat(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_networks_are_listed_as_messages_name_them() {
        assert_eq!(networks().listed(), "telegram, discord, slack or console");
        assert!(networks().knows("slack") && !networks().knows("irc"));
        assert_eq!(networks().direct_chat("console", "c"), None);
    }

    #[test]
    fn access_entries_are_read_in_each_platforms_grammar() {
        use crate::interaction::chat::AllowedChats::{Chat, Space};
        let n = networks();
        assert_eq!(n.allowed_chats("telegram:-100123"), Some(("telegram".into(), Chat("-100123".into()))));
        assert_eq!(n.allowed_chats("discord:800"), Some(("discord".into(), Chat("800".into()))));
        assert_eq!(n.allowed_chats("discord:guild:700"), Some(("discord".into(), Space("700".into()))));
        for bad in ["telegram:guild:7", "discord:guild:-7", "console:stdin", "console", "discord:#ops"] {
            assert_eq!(n.allowed_chats(bad), None, "{bad}");
        }
        assert_eq!(n.allowed_chats_forms(true), "telegram:CHAT_ID, discord:CHANNEL_ID, slack:CHANNEL_ID, discord:guild:GUILD_ID or slack:team:TEAM_ID");
        assert_eq!(n.allowed_chats_forms(false), "telegram:CHAT_ID, discord:CHANNEL_ID or slack:CHANNEL_ID");
        assert!(n.has_groups("discord") && !n.has_groups("telegram") && !n.has_groups("console"));
    }
}
