//! How Discord's chats are written in configuration: `discord:CHANNEL[/THREAD]`, and
//! `discord:user:USER` for a person's DMs, which the platform resolves to a DM channel
//! when it sends (the chat id keeps the `user:` prefix until then). In `access.chats`,
//! `discord:CHANNEL` opens a channel and `discord:guild:GUILD` a whole guild (a space);
//! a member's roles are the groups `access.roles` names. Numbers throughout: the
//! kit's [`NumberedAddress`].

use super::PLATFORM;
use crate::interaction::chat::is_numeric_id;
use crate::platform::kit::address::{NumberedAddress, SpaceGrammar};

/// The chat id prefix of a DM target.
pub const DM_PREFIX: &str = "user:";

/// The discord platform's [`ChatNetwork`](crate::interaction::chat::ChatNetwork).
pub const ADDRESS: NumberedAddress = NumberedAddress {
    name: PLATFORM,
    title: "Discord",
    chat_field: "channel_id",
    signed_chats: false,
    direct_prefix: DM_PREFIX,
    // A guild id is unsigned, unlike a chat id in general.
    spaces: Some(SpaceGrammar {
        prefix: "guild:",
        is_space_id: |guild| !guild.is_empty() && guild.bytes().all(|b| b.is_ascii_digit()),
        is_chat_id: is_numeric_id,
    }),
    chat_forms: &["discord:CHANNEL_ID", "discord:CHANNEL_ID/THREAD_ID", "discord:user:USER_ID"],
    chat_examples: &["discord:1100…", "discord:user:80…"],
    space_form: Some("discord:guild:GUILD_ID"),
    group_form: Some("a Discord role id (digits)"),
    field_docs: ["Discord channel id.", "A thread under the channel.", "A person: their DM with the bot (instead of channel_id)."],
};
