//! How Discord's chats are written in configuration: `discord:CHANNEL[/THREAD]`, and
//! `discord:user:USER` for a person's DMs, which the platform resolves to a DM channel
//! when it sends (the chat id keeps the `user:` prefix until then). In `access.chats`,
//! `discord:CHANNEL` opens a channel and `discord:guild:GUILD` a whole guild (a space);
//! a member's roles are the groups `access.roles` names.

use super::PLATFORM;
use serde_json::{Value, json};

use crate::platform::kit::address::SpaceGrammar;

use crate::interaction::chat::{AllowedChats, ChatKey, ChatNetwork, TargetFields, chat_target, id_field, is_numeric_id, numbered_chat, target_object_schema};

/// The chat id prefix of a DM target.
pub const DM_PREFIX: &str = "user:";

/// `access.chats`: `discord:guild:ID` names a whole guild, `discord:CHANNEL` a
/// channel. A guild id is unsigned, unlike a chat id in general.
const SPACES: SpaceGrammar =
    SpaceGrammar { prefix: "guild:", is_space_id: |guild| !guild.is_empty() && guild.bytes().all(|b| b.is_ascii_digit()), is_chat_id: is_numeric_id };

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

    /// A channel (its threads too) or DM channel, or a whole guild.
    fn allowed_chats(&self, rest: &str) -> Option<AllowedChats> {
        SPACES.allowed_chats(rest)
    }

    fn chat_form(&self) -> Option<&'static str> {
        Some("discord:CHANNEL_ID")
    }

    fn chat_forms(&self) -> &'static [&'static str] {
        &["discord:CHANNEL_ID", "discord:CHANNEL_ID/THREAD_ID", "discord:user:USER_ID"]
    }

    fn chat_examples(&self) -> &'static [&'static str] {
        &["discord:1100…", "discord:user:80…"]
    }

    fn space_form(&self) -> Option<&'static str> {
        Some("discord:guild:GUILD_ID")
    }

    /// `channel_id` (and a thread's `thread_id`), or `user_id` for a DM.
    fn target_chat(&self, fields: &TargetFields) -> Result<ChatKey, (&'static str, String)> {
        match (id_field(fields, "channel_id", false)?, id_field(fields, "user_id", false)?) {
            (Some(channel), None) => Ok(ChatKey::new(PLATFORM, &channel, id_field(fields, "thread_id", false)?.as_deref())),
            (None, Some(user)) => Ok(ChatKey::new(PLATFORM, &format!("{DM_PREFIX}{user}"), None)),
            _ => Err(("channel_id", "a Discord target needs channel_id or user_id (one of them)".into())),
        }
    }

    fn target_of(&self, chat: &ChatKey) -> Value {
        if let Some(user) = chat.chat_id.strip_prefix(DM_PREFIX) {
            return json!({ "platform": PLATFORM, "user_id": user });
        }
        chat_target(chat, "channel_id")
    }

    fn target_schema(&self) -> Value {
        target_object_schema(
            PLATFORM,
            &[
                ("channel_id", "Discord channel id."),
                ("thread_id", "A thread under the channel."),
                ("user_id", "A person: their DM with the bot (instead of channel_id)."),
            ],
        )
    }

    /// Roles: a member's are looked up in the guild the message or click came from.
    fn has_groups(&self) -> bool {
        true
    }

    /// A role id: a snowflake, digits.
    fn is_group_id(&self, id: &str) -> bool {
        !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())
    }

    fn group_form(&self) -> Option<&'static str> {
        Some("a Discord role id (digits)")
    }
}
