//! How Telegram's chats are written in configuration: `telegram:CHAT[/TOPIC]` (a
//! group's id is negative), `telegram:user:USER` for a person's private chat, whose
//! id is the person's own.

use super::PLATFORM;
use crate::interaction::chat::{AllowedChats, ChatKey, ChatNetwork, is_numeric_id, numbered_chat};

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
}
