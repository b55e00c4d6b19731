//! The chat platforms this bridge has: one line each. The only file that names them:
//! a new platform is its folder and its line here. The assembly (configuration, the
//! app, `main`, pairing, the admin commands and the demo) reads this list and hands
//! what the rest needs down to it (the address grammars as [`Networks`], each
//! platform's section in [`Sections`]); nothing else imports it, and no platform does
//! (`tests/layers.rs`).

use std::sync::Arc;

use super::descriptor::{Descriptor, Sections};
use super::{console, discord, mattermost, slack, teams, telegram};
use crate::interaction::chat::Networks;

/// Every platform, in the order messages list them.
pub static DESCRIPTORS: &[&dyn Descriptor] = &[
    &telegram::descriptor::Telegram,
    &discord::descriptor::Discord,
    &slack::descriptor::Slack,
    &teams::descriptor::Teams,
    &mattermost::descriptor::Mattermost,
    #[cfg(feature = "matrix")]
    &super::matrix::descriptor::Matrix,
    &console::descriptor::Console,
];

/// The platforms this build was compiled without (their cargo feature off), with the
/// feature that brings each. Their sections in a configuration file (the shipped
/// `config/default.toml` has them all) are read and ignored, and enabling one is
/// refused with the feature's name, rather than either being an unknown key.
pub static LEFT_OUT: &[(&str, &str)] = &[
    #[cfg(not(feature = "matrix"))]
    ("matrix", "matrix"),
];

/// Every platform's address grammar: what the core, the engine and the HTTP API know
/// of the platforms.
pub fn networks() -> Networks {
    Networks::new(DESCRIPTORS.iter().map(|d| d.network()).collect::<Vec<Arc<_>>>())
}

/// The docs' table of every platform's addresses (docs/configuration.md,
/// "Addresses"; `tests/docs.rs` keeps that copy current): how its chats, people,
/// groups and spaces are written in configuration, and the fields of its HTTP API
/// target object.
pub fn addresses_table() -> String {
    let mut table = String::from(
        "| platform | a chat (`routing.channels`, `access.chats`, MCP `targets`) | a person (`access.users`, `access.approvers`, `access.admins`) | a space (`access.chats`) | a group (`access.roles`, `access.approver_roles`) | HTTP API target (`targets`) |\n|---|---|---|---|---|---|\n",
    );
    let code = |text: &str| format!("`{text}`");
    for descriptor in DESCRIPTORS {
        let network = descriptor.network();
        let name = network.name();
        let chats: Vec<String> = network.chat_forms().iter().map(|form| code(form)).collect();
        let person = if network.always_open() { "anyone at it".to_owned() } else { code(&format!("{name}:USER_ID")) };
        let space = network.space_form().map_or_else(|| "—".to_owned(), code);
        let group = if network.has_groups() { network.group_form().unwrap_or("—").to_owned() } else { "—".to_owned() };
        let schema = network.target_schema();
        let fields: Vec<String> = schema["properties"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(field, _)| field.as_str() != "platform")
            .map(|(field, property)| format!("`{field}`: {}", property["description"].as_str().unwrap_or("").trim_end_matches('.')))
            .collect();
        let target = std::iter::once(code(&format!("\"platform\": \"{name}\""))).chain(fields).collect::<Vec<_>>().join("; ");
        table.push_str(&format!("| {} | {} | {person} | {space} | {group} | {target} |\n", descriptor.title(), chats.join(", ")));
    }
    table
}

/// The docs' table of every platform's configuration section and the page that
/// documents its keys (docs/configuration.md, "Chat platforms"; `tests/docs.rs` keeps
/// that copy current, and checks each page documents every key of its section).
pub fn sections_table() -> String {
    let mut table = String::from("| section | platform | its keys |\n|---|---|---|\n");
    for descriptor in DESCRIPTORS {
        let name = descriptor.network().name();
        let page = docs_page(*descriptor);
        let link = page.trim_start_matches("docs/");
        table.push_str(&format!("| `[{name}]` | {} | [{page}]({link}#configuration) |\n", descriptor.title()));
    }
    table
}

/// Every platform's section of `config/default.toml`, in the registry's order (the
/// file's generated block; `tests/docs.rs` keeps that copy current).
pub fn default_sections() -> String {
    DESCRIPTORS.iter().map(|d| d.defaults()).collect::<Vec<_>>().join("\n")
}

/// Where a platform's keys are documented: its page, `docs/<name>.md`.
pub fn docs_page(descriptor: &dyn Descriptor) -> String {
    format!("docs/{}.md", descriptor.network().name())
}

/// The platform named `name`.
pub fn descriptor(name: &str) -> Option<&'static dyn Descriptor> {
    DESCRIPTORS.iter().copied().find(|d| d.network().name() == name)
}

impl Default for Sections {
    /// Every registered platform's defaults. Here, not beside [`Sections`]: only the
    /// registry knows every platform, and the descriptors it lists import that file.
    fn default() -> Self {
        let empty = config::Config::default();
        let defaults = DESCRIPTORS.iter().map(|d| (d.network().name(), d.read_section(&empty).expect("an empty configuration reads as the defaults")));
        Self::new(defaults.collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::chat::ChatKey;
    use crate::platform::telegram::settings::TelegramSettings;

    #[test]
    fn every_platform_has_its_defaults_without_configuration() {
        let sections = Sections::default();
        let names: Vec<&str> = sections.iter().map(|(name, _)| name).collect();
        assert_eq!(names, ["telegram", "discord", "slack", "teams", "mattermost", "matrix", "console"]);
        assert!(sections.enabled().next().is_none(), "every platform is off by default");
        assert!(sections.get::<TelegramSettings>().rate_limits);
    }

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
        assert_eq!(networks().listed(), "telegram, discord, slack, teams, mattermost, matrix or console");
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
        assert_eq!(
            n.allowed_chats_forms(true),
            "telegram:CHAT_ID, discord:CHANNEL_ID, slack:CHANNEL_ID, teams:CONVERSATION_ID, mattermost:CHANNEL_ID, matrix:!ROOM_ID, discord:guild:GUILD_ID, slack:team:TEAM_ID or mattermost:team:TEAM_ID"
        );
        assert_eq!(
            n.allowed_chats_forms(false),
            "telegram:CHAT_ID, discord:CHANNEL_ID, slack:CHANNEL_ID, teams:CONVERSATION_ID, mattermost:CHANNEL_ID or matrix:!ROOM_ID"
        );
        assert!(n.has_groups("discord") && !n.has_groups("telegram") && !n.has_groups("console"));
    }
}
