//! How Telegram's chats are written in configuration: `telegram:CHAT[/TOPIC]` (a
//! group's id is negative), `telegram:user:USER` for a person's private chat, whose
//! id is the person's own.

use super::PLATFORM;
use crate::interaction::chat::{ChatKey, ChatNetwork, numbered_chat};

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
}
