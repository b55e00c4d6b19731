//! Where a request is shown, as chat keys: the targets of a pushed request, and for
//! a chat turn the extra chats that `routing.target` adds besides the chat that
//! started it (approvers' DMs, ops channels, or both). Pure: no IO.
//!
//! How each platform writes its chats and where a person's direct chat is, is the
//! platform's own business ([`Networks`]).

use serde::{Deserialize, Serialize};

use crate::interaction::AccessPolicy;
use crate::interaction::chat::Networks;
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

/// The chats a chat turn's requests are also shown in, per `routing.target`.
pub fn extra_chats(routing: &RoutingSettings, approvers: &AccessPolicy, networks: &Networks) -> Vec<ChatKey> {
    let mut chats = Vec::new();
    if matches!(routing.target, RouteTarget::Dm | RouteTarget::Both) {
        chats.extend(approvers.approver_users.iter().filter_map(|(platform, id)| networks.direct_chat(platform, id)));
    }
    if matches!(routing.target, RouteTarget::Channel | RouteTarget::Both) {
        chats.extend(routing.channels.iter().filter_map(|c| networks.parse_chat(c)));
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
    fn routing_adds_dms_channels_or_both() {
        let approvers = AccessPolicy {
            approver_users: vec![("telegram".into(), "42".into()), ("discord".into(), "77".into()), ("console".into(), "c".into())],
            approver_roles: vec![],
            four_eyes: false,
        };
        let channels = vec!["telegram:-100/3".to_owned(), "telegram:42".to_owned()];
        let routing = |target| RoutingSettings { target, channels: channels.clone() };
        let networks = crate::interaction::test_networks::networks();
        assert!(extra_chats(&routing(RouteTarget::Origin), &approvers, &networks).is_empty());
        let dms = vec![ChatKey::new("telegram", "42", None), ChatKey::new("discord", "user:77", None)];
        assert_eq!(extra_chats(&routing(RouteTarget::Dm), &approvers, &networks), dms);
        let ops = vec![ChatKey::new("telegram", "-100", Some("3")), ChatKey::new("telegram", "42", None)];
        assert_eq!(extra_chats(&routing(RouteTarget::Channel), &approvers, &networks), ops);
        // The approver's DM and the same chat listed as a channel show it once.
        assert_eq!(extra_chats(&routing(RouteTarget::Both), &approvers, &networks), vec![dms[0].clone(), dms[1].clone(), ops[0].clone()]);
    }
}
