//! How Slack's chats, people and workspaces are written in configuration, policies,
//! MCP and the HTTP API:
//!
//! - a channel `slack:C…`, a thread in it `slack:C…/THREAD_TS` (the `ts` of the
//!   thread's first message), a person's DM with the bot `slack:user:U…` (opened
//!   through `conversations.open` when something is sent: the chat id keeps the
//!   `user:` prefix until then);
//! - a person `slack:U…`; a workspace, as an `access.chats` space, `slack:team:T…`;
//! - a user group (`access.roles`, `access.approver_roles`, a policy's
//!   `approver_roles`) by its id alone, `S…`, as Discord's role ids are written (its
//!   members are asked of Slack: [`super::groups`]);
//! - HTTP API targets `{"platform":"slack","channel_id":"C…","thread_ts":"…"}` and
//!   `{"platform":"slack","user_id":"U…"}`.
//!
//! Slack's ids are opaque: an upper-case letter saying what they name (`C` channel,
//! `G` private channel, `D` DM, `U`/`W` user, `T` workspace, `S` user group) and upper-case letters
//! and digits. Anything else is refused here, before it reaches Slack.

use serde_json::{Value, json};

use super::PLATFORM;
use crate::interaction::chat::{AllowedChats, ChatKey, ChatNetwork, TargetFields, target_object_schema};
use crate::platform::kit::address::SpaceGrammar;
use crate::platform::kit::address::checked_field;

/// The chat id prefix of a DM target.
pub const DM_PREFIX: &str = "user:";
/// `access.chats`: `slack:team:T…` names a whole workspace, `slack:C…` a channel.
const SPACES: SpaceGrammar = SpaceGrammar { prefix: "team:", is_space_id: is_team_id, is_chat_id: is_channel_id };
/// Slack's ids are short; anything longer is not one.
const MAX_ID: usize = 24;

/// An id of kind `first` (one of its letters) followed by upper-case letters and digits.
fn is_id(text: &str, first: &[u8]) -> bool {
    let bytes = text.as_bytes();
    bytes.len() >= 2 && bytes.len() <= MAX_ID && first.contains(&bytes[0]) && bytes[1..].iter().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
}

/// A conversation id: a channel (`C…`), a private channel (`G…`) or a DM (`D…`).
pub fn is_channel_id(text: &str) -> bool {
    is_id(text, b"CGD")
}

/// A person (`U…`, or `W…` on Enterprise Grid).
pub fn is_user_id(text: &str) -> bool {
    is_id(text, b"UW")
}

/// A workspace (`T…`).
pub fn is_team_id(text: &str) -> bool {
    is_id(text, b"T")
}

/// A user group ("subteam", `S…`).
pub fn is_group_id(text: &str) -> bool {
    is_id(text, b"S")
}

/// A message timestamp, which is also a thread's id: `1700000000.000100`.
pub fn is_ts(text: &str) -> bool {
    text.split_once('.').is_some_and(|(secs, micros)| {
        !secs.is_empty() && secs.len() <= 12 && !micros.is_empty() && micros.len() <= 8 && (secs.bytes().chain(micros.bytes())).all(|b| b.is_ascii_digit())
    })
}

/// The slack platform's [`ChatNetwork`].
pub struct Address;

impl ChatNetwork for Address {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    fn parse_chat(&self, rest: &str) -> Option<ChatKey> {
        if let Some(user) = rest.strip_prefix(DM_PREFIX) {
            return self.direct_chat(user);
        }
        let (channel, thread) = match rest.split_once('/') {
            Some((channel, thread)) => (channel, Some(thread)),
            None => (rest, None),
        };
        (is_channel_id(channel) && thread.is_none_or(is_ts)).then(|| ChatKey::new(PLATFORM, channel, thread))
    }

    fn direct_chat(&self, user_id: &str) -> Option<ChatKey> {
        is_user_id(user_id).then(|| ChatKey::new(PLATFORM, &format!("{DM_PREFIX}{user_id}"), None))
    }

    /// A channel (its threads too), or a whole workspace.
    fn allowed_chats(&self, rest: &str) -> Option<AllowedChats> {
        SPACES.allowed_chats(rest)
    }

    fn chat_form(&self) -> Option<&'static str> {
        Some("slack:CHANNEL_ID")
    }

    fn chat_forms(&self) -> &'static [&'static str] {
        &["slack:CHANNEL_ID", "slack:CHANNEL_ID/THREAD_TS", "slack:user:USER_ID"]
    }

    fn chat_examples(&self) -> &'static [&'static str] {
        &["slack:C0123…", "slack:user:U0123…"]
    }

    fn space_form(&self) -> Option<&'static str> {
        Some("slack:team:TEAM_ID")
    }

    /// User groups: a person's are looked up in the groups the configuration and the
    /// request name (`usergroups.users.list`).
    fn has_groups(&self) -> bool {
        true
    }

    fn is_group_id(&self, id: &str) -> bool {
        is_group_id(id)
    }

    fn group_form(&self) -> Option<&'static str> {
        Some("a Slack user group id (S…)")
    }

    /// `channel_id` (and a thread's `thread_ts`), or `user_id` for a DM.
    fn target_chat(&self, fields: &TargetFields) -> Result<ChatKey, (&'static str, String)> {
        let channel = checked_field(fields, "channel_id", is_channel_id, "a Slack channel id (C…)")?;
        let user = checked_field(fields, "user_id", is_user_id, "a Slack user id (U…)")?;
        match (channel, user) {
            (Some(channel), None) => {
                let thread = checked_field(fields, "thread_ts", is_ts, "a message timestamp (1700000000.000100)")?;
                Ok(ChatKey::new(PLATFORM, &channel, thread.as_deref()))
            }
            (None, Some(user)) if fields.get("thread_ts").is_none_or(Value::is_null) => Ok(ChatKey::new(PLATFORM, &format!("{DM_PREFIX}{user}"), None)),
            (None, Some(_)) => Err(("thread_ts", "a DM target takes no thread_ts".into())),
            _ => Err(("channel_id", "a Slack target needs channel_id or user_id (one of them)".into())),
        }
    }

    fn target_of(&self, chat: &ChatKey) -> Value {
        if let Some(user) = chat.chat_id.strip_prefix(DM_PREFIX) {
            return json!({ "platform": PLATFORM, "user_id": user });
        }
        let mut target = json!({ "platform": PLATFORM, "channel_id": chat.chat_id });
        if let Some(thread) = &chat.thread_id {
            target["thread_ts"] = json!(thread);
        }
        target
    }

    fn target_schema(&self) -> Value {
        target_object_schema(
            PLATFORM,
            &[
                ("channel_id", "Slack channel id (C…)."),
                ("thread_ts", "A thread in the channel: the ts of its first message."),
                ("user_id", "A person (U…): their DM with the bot (instead of channel_id)."),
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::chat::Networks;
    use std::sync::Arc;

    fn networks() -> Networks {
        Networks::new(vec![Arc::new(Address)])
    }

    fn fields(value: Value) -> TargetFields {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn chats_parse_as_written_and_display_back() {
        let n = networks();
        for (written, key) in [
            ("slack:C0123ABC", ChatKey::new("slack", "C0123ABC", None)),
            ("slack:C0123ABC/1700000000.000100", ChatKey::new("slack", "C0123ABC", Some("1700000000.000100"))),
            ("slack:G0PRIV", ChatKey::new("slack", "G0PRIV", None)),
            ("slack:user:U0ANA", ChatKey::new("slack", "user:U0ANA", None)),
        ] {
            assert_eq!(n.parse_chat(written), Some(key.clone()), "{written}");
            assert_eq!(n.display_chat(&key), written);
        }
        for bad in [
            "slack:",
            "slack:#ops",
            "slack:c0123",
            "slack:C",
            "slack:C0123/",
            "slack:C0123/abc",
            "slack:C0123/17.",
            "slack:user:",
            "slack:user:C0123",
            "slack:U0ANA",
            "slack:C0123<!channel>",
        ] {
            assert_eq!(n.parse_chat(bad), None, "{bad}");
        }
    }

    #[test]
    fn access_entries_open_a_channel_or_a_workspace() {
        let n = networks();
        assert_eq!(n.allowed_chats("slack:C0OPS"), Some(("slack".into(), AllowedChats::Chat("C0OPS".into()))));
        assert_eq!(n.allowed_chats("slack:team:T0ACME"), Some(("slack".into(), AllowedChats::Space("T0ACME".into()))));
        for bad in ["slack:team:", "slack:team:C0OPS", "slack:user:U1", "slack:ops"] {
            assert_eq!(n.allowed_chats(bad), None, "{bad}");
        }
        assert_eq!(n.allowed_chats_forms(true), "slack:CHANNEL_ID or slack:team:TEAM_ID");
        assert_eq!(n.parse_user("slack:U0ANA"), Some(("slack".into(), "U0ANA".into())));
        assert_eq!(n.direct_chat("slack", "U0ANA"), Some(ChatKey::new("slack", "user:U0ANA", None)));
        assert_eq!(n.direct_chat("slack", "ana"), None);
    }

    #[test]
    fn user_groups_are_written_by_their_id() {
        let n = networks();
        assert!(n.has_groups("slack"));
        for good in ["S0OPS", "S0614TZR7"] {
            assert!(n.is_group_id(good), "{good}");
        }
        for bad in ["S", "s0ops", "C0OPS", "slack:S0OPS", "S0OPS<!here>", "900"] {
            assert!(!n.is_group_id(bad), "{bad}");
        }
        assert_eq!(n.group_forms(), "a Slack user group id (S…)");
    }

    #[test]
    fn http_targets_round_trip() {
        for target in [
            json!({"platform": "slack", "channel_id": "C0OPS"}),
            json!({"platform": "slack", "channel_id": "C0OPS", "thread_ts": "1700000000.000100"}),
            json!({"platform": "slack", "user_id": "U0ANA"}),
        ] {
            let mut f = fields(target.clone());
            f.remove("platform");
            let chat = Address.target_chat(&f).unwrap();
            assert_eq!(Address.target_of(&chat), target);
        }
    }

    #[test]
    fn bad_http_targets_name_the_field() {
        let err = |v: Value| Address.target_chat(&fields(v)).unwrap_err();
        assert_eq!(err(json!({})).0, "channel_id");
        assert_eq!(err(json!({"channel_id": "C1", "user_id": "U1"})).0, "channel_id");
        assert_eq!(err(json!({"channel_id": "ops"})), ("channel_id", "`ops` is not a Slack channel id (C…)".into()));
        assert_eq!(err(json!({"channel_id": 5})), ("channel_id", "`5` is not a string".into()));
        assert_eq!(err(json!({"channel_id": "C1", "thread_ts": "soon"})).0, "thread_ts");
        assert_eq!(err(json!({"user_id": "U1", "thread_ts": "1.2"})).0, "thread_ts");
        assert_eq!(err(json!({"user_id": "@ana"})).0, "user_id");
    }
}
