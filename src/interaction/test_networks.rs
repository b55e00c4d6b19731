//! A registry of chat platforms for the core's own unit tests: grammars shaped like
//! Telegram's (numeric chats, private chats at the person's id), Discord's (channels,
//! DMs, guilds as spaces, roles as groups) and the terminal's, under those names, so
//! the core's tests need no real platform (the real descriptors are tested in their
//! folders).

use std::sync::Arc;

use serde_json::{Value, json};

use super::chat::{AllowedChats, ChatKey, ChatNetwork, Networks, TargetFields, id_field, is_numeric_id, numbered_chat, target_object_schema};

/// `telegram`, `discord` and `console`, in that order.
pub fn networks() -> Networks {
    Networks::new(vec![Arc::new(Numbered { name: "telegram", spaces: false }), Arc::new(Numbered { name: "discord", spaces: true }), Arc::new(Terminal)])
}

/// A platform whose chats are numeric ids; with `spaces`, whose people are in spaces
/// (`name:guild:ID`) and groups, and whose direct chats are `user:ID`.
struct Numbered {
    name: &'static str,
    spaces: bool,
}

impl ChatNetwork for Numbered {
    fn name(&self) -> &'static str {
        self.name
    }
    fn parse_chat(&self, rest: &str) -> Option<ChatKey> {
        numbered_chat(self, rest)
    }
    fn direct_chat(&self, user_id: &str) -> Option<ChatKey> {
        let chat = if self.spaces { format!("user:{user_id}") } else { user_id.to_owned() };
        Some(ChatKey::new(self.name, &chat, None))
    }
    fn allowed_chats(&self, rest: &str) -> Option<AllowedChats> {
        match rest.strip_prefix("guild:").filter(|_| self.spaces) {
            Some(space) => (!space.is_empty() && space.bytes().all(|b| b.is_ascii_digit())).then(|| AllowedChats::Space(space.to_owned())),
            None => is_numeric_id(rest).then(|| AllowedChats::Chat(rest.to_owned())),
        }
    }
    fn chat_form(&self) -> Option<&'static str> {
        Some(if self.spaces { "discord:CHANNEL_ID" } else { "telegram:CHAT_ID" })
    }
    fn space_form(&self) -> Option<&'static str> {
        self.spaces.then_some("discord:guild:GUILD_ID")
    }
    fn has_groups(&self) -> bool {
        self.spaces
    }
    fn is_group_id(&self, id: &str) -> bool {
        !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())
    }
    fn group_form(&self) -> Option<&'static str> {
        self.spaces.then_some("a Discord role id (digits)")
    }
    fn target_chat(&self, fields: &TargetFields) -> Result<ChatKey, (&'static str, String)> {
        let chat = id_field(fields, "chat_id", true)?.ok_or(("chat_id", "needs chat_id".to_owned()))?;
        Ok(ChatKey::new(self.name, &chat, None))
    }
    fn target_of(&self, chat: &ChatKey) -> Value {
        json!({ "platform": self.name, "chat_id": chat.chat_id })
    }
    fn target_schema(&self) -> Value {
        target_object_schema(self.name, &[("chat_id", "a chat")])
    }
}

/// The terminal: one chat, always open.
struct Terminal;

impl ChatNetwork for Terminal {
    fn name(&self) -> &'static str {
        "console"
    }
    fn parse_chat(&self, rest: &str) -> Option<ChatKey> {
        rest.is_empty().then(|| ChatKey::new("console", "stdin", None))
    }
    fn direct_chat(&self, _user_id: &str) -> Option<ChatKey> {
        None
    }
    fn always_open(&self) -> bool {
        true
    }
    fn display_chat(&self, _chat: &ChatKey) -> String {
        "console".to_owned()
    }
    fn target_chat(&self, _fields: &TargetFields) -> Result<ChatKey, (&'static str, String)> {
        Ok(ChatKey::new("console", "stdin", None))
    }
    fn target_of(&self, _chat: &ChatKey) -> Value {
        json!({ "platform": "console" })
    }
    fn target_schema(&self) -> Value {
        target_object_schema("console", &[])
    }
}
