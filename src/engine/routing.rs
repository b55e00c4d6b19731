//! Where a request is shown, as chat keys: the targets of a pushed request, and for
//! a chat turn the extra chats that `routing.target` adds besides the chat that
//! started it (approvers' DMs, ops channels, or both). Pure: no IO.
//!
//! A Discord user's DM is the chat `("discord", "user:<id>")`, which the Discord
//! platform resolves to a DM channel when it sends. A Telegram user's private chat
//! has the user's id as its chat id.

use serde::{Deserialize, Serialize};

use crate::interaction::AccessPolicy;
use crate::store::ChatKey;

/// Where a chat turn's requests are shown besides the chat that started it
/// (OpenClaw's `target = dm | channel | both`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RoutingSettings {
    pub target: RouteTarget,
    /// Chats for `channel` and `both`: `"telegram:CHAT[/TOPIC]"`, `"discord:CHANNEL"`,
    /// `"discord:user:USER"` (a DM), `"telegram:user:USER"`, or `"console"`.
    pub channels: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteTarget {
    /// Only the chat that started the turn.
    #[default]
    Origin,
    /// Also each configured approver's DM.
    Dm,
    /// Also every chat in `routing.channels`.
    Channel,
    /// Both.
    Both,
}

/// The console's one chat.
pub fn console_chat() -> ChatKey {
    ChatKey::new("console", "stdin", None)
}

/// The chat id prefix of a Discord DM target.
pub const DISCORD_DM_PREFIX: &str = "user:";

/// A user's direct messages on `platform`, if the platform has them.
pub fn dm_chat(platform: &str, user_id: &str) -> Option<ChatKey> {
    match platform {
        "telegram" => Some(ChatKey::new("telegram", user_id, None)),
        "discord" => Some(ChatKey::new("discord", &format!("{DISCORD_DM_PREFIX}{user_id}"), None)),
        _ => None,
    }
}

/// Parses a chat as written in config: `telegram:CHAT[/TOPIC]`, `telegram:user:USER`,
/// `discord:CHANNEL[/THREAD]`, `discord:user:USER`, or `console`.
pub fn parse_chat(text: &str) -> Option<ChatKey> {
    if text == "console" {
        return Some(console_chat());
    }
    let (platform, rest) = text.split_once(':')?;
    if !["telegram", "discord"].contains(&platform) || rest.is_empty() {
        return None;
    }
    if let Some(user) = rest.strip_prefix(DISCORD_DM_PREFIX) {
        return (!user.is_empty() && user.bytes().all(|b| b.is_ascii_digit())).then(|| dm_chat(platform, user)).flatten();
    }
    let (chat, thread) = match rest.split_once('/') {
        Some((chat, thread)) if !thread.is_empty() => (chat, Some(thread)),
        Some(_) => return None,
        None => (rest, None),
    };
    let numeric = |s: &str| !s.is_empty() && s.trim_start_matches('-').bytes().all(|b| b.is_ascii_digit());
    (numeric(chat) && thread.is_none_or(numeric)).then(|| ChatKey::new(platform, chat, thread))
}

/// The chats a chat turn's requests are also shown in, per `routing.target`.
pub fn extra_chats(routing: &RoutingSettings, approvers: &AccessPolicy) -> Vec<ChatKey> {
    let mut chats = Vec::new();
    if matches!(routing.target, RouteTarget::Dm | RouteTarget::Both) {
        chats.extend(approvers.approver_users.iter().filter_map(|(platform, id)| dm_chat(platform, id)));
    }
    if matches!(routing.target, RouteTarget::Channel | RouteTarget::Both) {
        chats.extend(routing.channels.iter().filter_map(|c| parse_chat(c)));
    }
    dedup(chats)
}

/// Removes repeats, keeping the first of each.
pub fn dedup(chats: Vec<ChatKey>) -> Vec<ChatKey> {
    let mut seen = std::collections::HashSet::new();
    chats.into_iter().filter(|c| seen.insert(c.clone())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chats_parse_as_written_in_config() {
        assert_eq!(parse_chat("telegram:-1001234567890/7"), Some(ChatKey::new("telegram", "-1001234567890", Some("7"))));
        assert_eq!(parse_chat("discord:1100000000000000000"), Some(ChatKey::new("discord", "1100000000000000000", None)));
        assert_eq!(parse_chat("discord:user:80351110224678912"), Some(ChatKey::new("discord", "user:80351110224678912", None)));
        assert_eq!(parse_chat("telegram:user:42"), Some(ChatKey::new("telegram", "42", None)));
        assert_eq!(parse_chat("console"), Some(ChatKey::new("console", "stdin", None)));
        for bad in ["irc:#ops", "telegram:", "telegram:abc", "discord:1/", "discord:user:", "discord:user:x1", "slack"] {
            assert_eq!(parse_chat(bad), None, "{bad}");
        }
    }

    #[test]
    fn routing_adds_dms_channels_or_both() {
        let approvers = AccessPolicy {
            approver_users: vec![("telegram".into(), "42".into()), ("discord".into(), "77".into()), ("console".into(), "c".into())],
            approver_roles: vec![],
            four_eyes: false,
        };
        let channels = vec!["telegram:-100/3".to_owned(), "telegram:42".to_owned()];
        let routing = |target| RoutingSettings { target, channels: channels.clone() };
        assert!(extra_chats(&routing(RouteTarget::Origin), &approvers).is_empty());
        let dms = vec![ChatKey::new("telegram", "42", None), ChatKey::new("discord", "user:77", None)];
        assert_eq!(extra_chats(&routing(RouteTarget::Dm), &approvers), dms);
        let ops = vec![ChatKey::new("telegram", "-100", Some("3")), ChatKey::new("telegram", "42", None)];
        assert_eq!(extra_chats(&routing(RouteTarget::Channel), &approvers), ops);
        // The approver's DM and the same chat listed as a channel show it once.
        assert_eq!(extra_chats(&routing(RouteTarget::Both), &approvers), vec![dms[0].clone(), dms[1].clone(), ops[0].clone()]);
    }
}
