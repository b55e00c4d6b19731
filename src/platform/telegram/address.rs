//! How Telegram's chats are written in configuration: `telegram:CHAT[/TOPIC]` (a
//! group's id is negative), `telegram:user:USER` for a person's private chat, whose
//! id is the person's own.

use super::PLATFORM;
use serde_json::Value;

use crate::interaction::chat::{AllowedChats, ChatKey, ChatNetwork, TargetFields, chat_target, id_field, is_numeric_id, numbered_chat, target_object_schema};

/// The telegram platform's [`ChatNetwork`].
pub struct Address;

impl ChatNetwork for Address {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    fn parse_chat(&self, rest: &str) -> Option<ChatKey> {
        numbered_chat(self, rest)
    }

    fn direct_chat(&self, user_id: &str) -> Option<ChatKey> {
        Some(ChatKey::new(PLATFORM, user_id, None))
    }

    fn allowed_chats(&self, rest: &str) -> Option<AllowedChats> {
        is_numeric_id(rest).then(|| AllowedChats::Chat(rest.to_owned()))
    }

    fn chat_form(&self) -> Option<&'static str> {
        Some("telegram:CHAT_ID")
    }

    fn chat_forms(&self) -> &'static [&'static str] {
        &["telegram:CHAT_ID", "telegram:CHAT_ID/TOPIC_ID", "telegram:user:USER_ID"]
    }

    fn chat_examples(&self) -> &'static [&'static str] {
        &["telegram:-100123/7"]
    }

    /// `chat_id` (and a forum topic's `thread_id`), or `user_id` for a private chat.
    fn target_chat(&self, fields: &TargetFields) -> Result<ChatKey, (&'static str, String)> {
        match (id_field(fields, "chat_id", true)?, id_field(fields, "user_id", false)?) {
            (Some(chat), None) => Ok(ChatKey::new(PLATFORM, &chat, id_field(fields, "thread_id", false)?.as_deref())),
            (None, Some(user)) => Ok(ChatKey::new(PLATFORM, &user, None)),
            _ => Err(("chat_id", "a Telegram target needs chat_id or user_id (one of them)".into())),
        }
    }

    fn target_of(&self, chat: &ChatKey) -> Value {
        chat_target(chat, "chat_id")
    }

    fn target_schema(&self) -> Value {
        target_object_schema(
            PLATFORM,
            &[
                ("chat_id", "Telegram chat id (groups are negative)."),
                ("thread_id", "A forum topic in the chat."),
                ("user_id", "A person: their private chat with the bot (instead of chat_id)."),
            ],
        )
    }
}
