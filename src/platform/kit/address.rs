//! Address grammars platforms share, given as data rather than written again:
//! - [`SpaceGrammar`]: the `access.chats` grammar of platforms with spaces (a Discord
//!   guild, a Slack workspace): `PREFIX:ID` opens the whole space, anything else names
//!   one chat;
//! - [`checked_field`]: one field of an HTTP API target, checked by the platform's own
//!   test of its ids;
//! - [`NumberedAddress`]: the whole address grammar of platforms whose chats and
//!   people are numbers (Telegram, Discord): `NAME:CHAT[/THREAD]`, `NAME:user:USER`,
//!   and the HTTP API target `{CHAT_FIELD, thread_id} | {user_id}`.

use serde_json::{Value, json};

use crate::interaction::chat::{AllowedChats, ChatKey, ChatNetwork, TargetFields, chat_target, id_field, is_numeric_id, numbered_chat, target_object_schema};

/// A space's entry needs a prefix of its own, so that it never reads as a chat.
#[derive(Debug, Clone, Copy)]
pub struct SpaceGrammar {
    /// `guild:`, `team:`.
    pub prefix: &'static str,
    pub is_space_id: fn(&str) -> bool,
    pub is_chat_id: fn(&str) -> bool,
}

impl SpaceGrammar {
    /// What the part of an `access.chats` entry after `platform:` opens; `None` when
    /// it is neither a well-formed space nor a well-formed chat.
    pub fn allowed_chats(&self, rest: &str) -> Option<AllowedChats> {
        match rest.strip_prefix(self.prefix) {
            Some(space) => (self.is_space_id)(space).then(|| AllowedChats::Space(space.to_owned())),
            None => (self.is_chat_id)(rest).then(|| AllowedChats::Chat(rest.to_owned())),
        }
    }
}

/// A platform whose chats, threads and people are numeric ids, as data: its
/// [`ChatNetwork`] is this value.
pub struct NumberedAddress {
    /// The name in chat keys and configuration (`telegram`).
    pub name: &'static str,
    /// As people read it, in error messages (`Telegram`).
    pub title: &'static str,
    /// The target field naming a chat (`chat_id`, `channel_id`).
    pub chat_field: &'static str,
    /// Whether a chat id may be negative (Telegram's groups are).
    pub signed_chats: bool,
    /// What a person's direct chat id is: the person's own id after this prefix (none
    /// on Telegram, where the private chat's id is the person's; `user:` on Discord,
    /// resolved to a DM channel when the platform sends).
    pub direct_prefix: &'static str,
    /// `access.chats`: one chat, or with spaces a whole space too.
    pub spaces: Option<SpaceGrammar>,
    /// Every form of its chats as configuration writes them, the first the usual one.
    pub chat_forms: &'static [&'static str],
    pub chat_examples: &'static [&'static str],
    pub space_form: Option<&'static str>,
    /// How a group id is written, when its people are in groups the configuration may
    /// name (Discord's roles: digits).
    pub group_form: Option<&'static str>,
    /// The target fields' descriptions: the chat's, a thread's, a person's.
    pub field_docs: [&'static str; 3],
}

impl ChatNetwork for NumberedAddress {
    fn name(&self) -> &'static str {
        self.name
    }

    fn parse_chat(&self, rest: &str) -> Option<ChatKey> {
        numbered_chat(self, rest)
    }

    fn direct_chat(&self, user_id: &str) -> Option<ChatKey> {
        Some(ChatKey::new(self.name, &format!("{}{user_id}", self.direct_prefix), None))
    }

    fn allowed_chats(&self, rest: &str) -> Option<AllowedChats> {
        match &self.spaces {
            Some(spaces) => spaces.allowed_chats(rest),
            None => is_numeric_id(rest).then(|| AllowedChats::Chat(rest.to_owned())),
        }
    }

    fn chat_form(&self) -> Option<&'static str> {
        self.chat_forms.first().copied()
    }

    fn chat_forms(&self) -> &'static [&'static str] {
        self.chat_forms
    }

    fn chat_examples(&self) -> &'static [&'static str] {
        self.chat_examples
    }

    fn space_form(&self) -> Option<&'static str> {
        self.space_form
    }

    fn has_groups(&self) -> bool {
        self.group_form.is_some()
    }

    /// A group id: digits (a snowflake, at most 20 of them).
    fn is_group_id(&self, id: &str) -> bool {
        !id.is_empty() && id.len() <= 20 && id.bytes().all(|b| b.is_ascii_digit())
    }

    fn group_form(&self) -> Option<&'static str> {
        self.group_form
    }

    /// The chat field (and a thread's `thread_id`), or `user_id` for a direct chat.
    fn target_chat(&self, fields: &TargetFields) -> Result<ChatKey, (&'static str, String)> {
        match (id_field(fields, self.chat_field, self.signed_chats)?, id_field(fields, "user_id", false)?) {
            (Some(chat), None) => Ok(ChatKey::new(self.name, &chat, id_field(fields, "thread_id", false)?.as_deref())),
            (None, Some(user)) => Ok(ChatKey::new(self.name, &format!("{}{user}", self.direct_prefix), None)),
            _ => Err((self.chat_field, format!("a {} target needs {} or user_id (one of them)", self.title, self.chat_field))),
        }
    }

    fn target_of(&self, chat: &ChatKey) -> Value {
        if let Some(user) = chat.chat_id.strip_prefix(self.direct_prefix).filter(|_| !self.direct_prefix.is_empty()) {
            return json!({ "platform": self.name, "user_id": user });
        }
        chat_target(chat, self.chat_field)
    }

    fn target_schema(&self) -> Value {
        let [chat, thread, user] = self.field_docs;
        target_object_schema(self.name, &[(self.chat_field, chat), ("thread_id", thread), ("user_id", user)])
    }
}

/// A target's field `name`, which must be a string `valid` accepts (`what` says what
/// it should be, in the error): `None` when absent or null.
pub fn checked_field(fields: &TargetFields, name: &'static str, valid: fn(&str) -> bool, what: &str) -> Result<Option<String>, (&'static str, String)> {
    match fields.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(value)) if valid(value) => Ok(Some(value.clone())),
        Some(Value::String(value)) => Err((name, format!("`{value}` is not {what}"))),
        Some(other) => Err((name, format!("`{other}` is not a string"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_decides_between_space_and_chat() {
        let grammar = SpaceGrammar { prefix: "guild:", is_space_id: |id| id == "7", is_chat_id: |id| id == "8" };
        assert_eq!(grammar.allowed_chats("guild:7"), Some(AllowedChats::Space("7".into())));
        assert_eq!(grammar.allowed_chats("8"), Some(AllowedChats::Chat("8".into())));
        for bad in ["guild:8", "guild:", "7", "guild:guild:7"] {
            assert_eq!(grammar.allowed_chats(bad), None, "{bad}");
        }
    }
}
