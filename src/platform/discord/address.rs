//! How Discord's chats are written in configuration: `discord:CHANNEL[/THREAD]`, and
//! `discord:user:USER` for a person's DMs, which the platform resolves to a DM channel
//! when it sends (the chat id keeps the `user:` prefix until then).

use super::PLATFORM;
use crate::interaction::chat::{ChatKey, ChatNetwork, numbered_chat};

/// The chat id prefix of a DM target.
pub const DM_PREFIX: &str = "user:";

/// The discord platform's [`ChatNetwork`].
pub struct Address;

impl ChatNetwork for Address {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    fn parse_chat(&self, rest: &str) -> Option<ChatKey> {
        numbered_chat(self, rest)
    }

    fn direct_chat(&self, user_id: &str) -> Option<ChatKey> {
        Some(ChatKey::new(PLATFORM, &format!("{DM_PREFIX}{user_id}"), None))
    }
}
