//! How Teams' conversations, people and targets are written in configuration,
//! policies, MCP and the HTTP API:
//!
//! - a conversation `teams:CONVERSATION_ID` (a channel `19:…@thread.tacv2`, a group chat
//!   `19:…@thread.v2`, a 1:1 chat `a:…`), a thread in a channel
//!   `teams:CONVERSATION_ID/MESSAGE_ID` (the id of the thread's first message, the
//!   `replyToId` of the replies), and a person's 1:1 chat with the bot
//!   `teams:user:AAD_OBJECT_ID` (created through the Connector API when something is
//!   sent: the chat id keeps the `user:` prefix until then);
//! - a person `teams:AAD_OBJECT_ID`: their Microsoft Entra object id, the same in every
//!   conversation, never the per-bot `29:…` id;
//! - HTTP API targets `{"platform":"teams","conversation_id":"…","message_id":"…"}` and
//!   `{"platform":"teams","user_id":"…"}`.
//!
//! Conversation ids are opaque to the bridge; what it accepts is the characters Teams
//! uses in them (letters, digits and `:@._-;=`), so nothing else reaches a URL path.

use serde_json::{Value, json};

use super::PLATFORM;
use super::settings::is_guid;
use crate::interaction::chat::{AllowedChats, ChatKey, ChatNetwork, TargetFields, target_object_schema};
use crate::platform::kit::address::checked_field;

/// The chat id prefix of a 1:1 target.
pub const DM_PREFIX: &str = "user:";
/// Teams' conversation ids are long (a channel's is about 60 characters, a 1:1 chat's
/// about 130); anything much longer is not one.
const MAX_CONVERSATION: usize = 400;

/// A conversation id as Teams writes them.
pub fn is_conversation_id(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= MAX_CONVERSATION
        && !text.starts_with(DM_PREFIX)
        && text.contains(':')
        && text.bytes().all(|b| b.is_ascii_alphanumeric() || b":@._-;=".contains(&b))
}

/// A message id (a channel thread's first message): digits.
pub fn is_message_id(text: &str) -> bool {
    !text.is_empty() && text.len() <= 20 && text.bytes().all(|b| b.is_ascii_digit())
}

/// A person: their Entra object id.
pub fn is_user_id(text: &str) -> bool {
    is_guid(text)
}

/// The teams platform's [`ChatNetwork`].
pub struct Address;

impl ChatNetwork for Address {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    fn parse_chat(&self, rest: &str) -> Option<ChatKey> {
        if let Some(user) = rest.strip_prefix(DM_PREFIX) {
            return self.direct_chat(user);
        }
        let (conversation, thread) = match rest.split_once('/') {
            Some((conversation, thread)) => (conversation, Some(thread)),
            None => (rest, None),
        };
        (is_conversation_id(conversation) && thread.is_none_or(is_message_id)).then(|| ChatKey::new(PLATFORM, conversation, thread))
    }

    fn direct_chat(&self, user_id: &str) -> Option<ChatKey> {
        is_user_id(user_id).then(|| ChatKey::new(PLATFORM, &format!("{DM_PREFIX}{}", user_id.to_ascii_lowercase()), None))
    }

    /// One conversation, its threads too.
    fn allowed_chats(&self, rest: &str) -> Option<AllowedChats> {
        is_conversation_id(rest).then(|| AllowedChats::Chat(rest.to_owned()))
    }

    /// A team or a channel, by its conversation id: its members, as the Connector
    /// API lists them ([`super::groups`]).
    fn has_groups(&self) -> bool {
        true
    }

    fn is_group_id(&self, id: &str) -> bool {
        is_conversation_id(id)
    }

    fn group_form(&self) -> Option<&'static str> {
        Some("a Teams team or channel id (19:…@thread.tacv2)")
    }

    fn chat_form(&self) -> Option<&'static str> {
        Some("teams:CONVERSATION_ID")
    }

    fn chat_forms(&self) -> &'static [&'static str] {
        &["teams:CONVERSATION_ID", "teams:CONVERSATION_ID/MESSAGE_ID", "teams:user:AAD_OBJECT_ID"]
    }

    fn chat_examples(&self) -> &'static [&'static str] {
        &["teams:19:…@thread.tacv2", "teams:user:2f1c…"]
    }

    /// `conversation_id` (and a thread's `message_id`), or `user_id` for a 1:1 chat.
    fn target_chat(&self, fields: &TargetFields) -> Result<ChatKey, (&'static str, String)> {
        let conversation = checked_field(fields, "conversation_id", is_conversation_id, "a Teams conversation id (19:…@thread.tacv2)")?;
        let user = checked_field(fields, "user_id", is_user_id, "an Entra object id (a GUID)")?;
        let thread = checked_field(fields, "message_id", is_message_id, "a Teams message id (digits)")?;
        match (conversation, user, thread) {
            (Some(conversation), None, thread) => Ok(ChatKey::new(PLATFORM, &conversation, thread.as_deref())),
            (None, Some(user), None) => Ok(ChatKey::new(PLATFORM, &format!("{DM_PREFIX}{}", user.to_ascii_lowercase()), None)),
            (None, Some(_), Some(_)) => Err(("message_id", "a 1:1 target takes no message_id".into())),
            _ => Err(("conversation_id", "a Teams target needs conversation_id or user_id (one of them)".into())),
        }
    }

    fn target_of(&self, chat: &ChatKey) -> Value {
        if let Some(user) = chat.chat_id.strip_prefix(DM_PREFIX) {
            return json!({ "platform": PLATFORM, "user_id": user });
        }
        let mut target = json!({ "platform": PLATFORM, "conversation_id": chat.chat_id });
        if let Some(thread) = &chat.thread_id {
            target["message_id"] = json!(thread);
        }
        target
    }

    fn target_schema(&self) -> Value {
        target_object_schema(
            PLATFORM,
            &[
                ("conversation_id", "Teams conversation id (19:…@thread.tacv2, or a chat's)."),
                ("message_id", "A thread in a channel: the id of its first message."),
                ("user_id", "A person (their Entra object id): their 1:1 chat with the bot (instead of conversation_id)."),
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::chat::Networks;
    use std::sync::Arc;

    const CHANNEL: &str = "19:a8f3e1b2c4d5@thread.tacv2";
    const ANA: &str = "6b1e3f0a-2c4d-4e5f-8a9b-0c1d2e3f4a5b";

    fn networks() -> Networks {
        Networks::new(vec![Arc::new(Address)])
    }

    #[test]
    fn chats_parse_as_written_and_display_back() {
        let n = networks();
        for (written, key) in [
            (format!("teams:{CHANNEL}"), ChatKey::new("teams", CHANNEL, None)),
            (format!("teams:{CHANNEL}/1700000000123"), ChatKey::new("teams", CHANNEL, Some("1700000000123"))),
            (format!("teams:user:{ANA}"), ChatKey::new("teams", &format!("user:{ANA}"), None)),
            ("teams:a:1xZq-Pp_Kk".to_owned(), ChatKey::new("teams", "a:1xZq-Pp_Kk", None)),
        ] {
            assert_eq!(n.parse_chat(&written), Some(key.clone()), "{written}");
            assert_eq!(n.display_chat(&key), written);
        }
        for bad in
            ["teams:", "teams:ops", "teams:19:x y", "teams:19:x/abc", "teams:19:x/", "teams:user:", "teams:user:29:1abc", "teams:19:x?a=b", "teams:19:<at>"]
        {
            assert_eq!(n.parse_chat(bad), None, "{bad}");
        }
    }

    #[test]
    fn people_are_entra_object_ids() {
        let n = networks();
        assert_eq!(n.parse_user(&format!("teams:{ANA}")), Some(("teams".into(), ANA.into())));
        assert_eq!(n.direct_chat("teams", ANA), Some(ChatKey::new("teams", &format!("user:{ANA}"), None)));
        assert_eq!(n.direct_chat("teams", "29:1abc"), None, "the per-bot id is not a person's address");
        assert_eq!(n.allowed_chats(&format!("teams:{CHANNEL}")), Some(("teams".into(), AllowedChats::Chat(CHANNEL.into()))));
        assert_eq!(n.allowed_chats("teams:user:x"), None);
    }

    #[test]
    fn teams_and_channels_are_groups_by_their_conversation_id() {
        let n = networks();
        assert!(n.has_groups("teams"));
        assert!(n.is_group_id(CHANNEL) && n.is_group_id("19:team0a1b2c@thread.tacv2"));
        for bad in ["S0SRE", "900100200", "user:6b1e3f0a", "#ops", ""] {
            assert!(!n.is_group_id(bad), "{bad}");
        }
        assert_eq!(n.group_forms(), "a Teams team or channel id (19:…@thread.tacv2)");
    }

    #[test]
    fn http_targets_round_trip_and_name_the_bad_field() {
        for target in [
            json!({"platform": "teams", "conversation_id": CHANNEL}),
            json!({"platform": "teams", "conversation_id": CHANNEL, "message_id": "1700000000123"}),
            json!({"platform": "teams", "user_id": ANA}),
        ] {
            let mut fields = target.as_object().cloned().unwrap();
            fields.remove("platform");
            assert_eq!(Address.target_of(&Address.target_chat(&fields).unwrap()), target);
        }
        let err = |v: Value| Address.target_chat(v.as_object().unwrap()).unwrap_err();
        assert_eq!(err(json!({})).0, "conversation_id");
        assert_eq!(err(json!({"conversation_id": CHANNEL, "user_id": ANA})).0, "conversation_id");
        assert_eq!(err(json!({"conversation_id": "ops"})), ("conversation_id", "`ops` is not a Teams conversation id (19:…@thread.tacv2)".into()));
        assert_eq!(err(json!({"user_id": "29:1abc"})).0, "user_id");
        assert_eq!(err(json!({"user_id": ANA, "message_id": "17"})).0, "message_id");
        assert_eq!(err(json!({"conversation_id": CHANNEL, "message_id": 5})).0, "message_id");
    }
}
