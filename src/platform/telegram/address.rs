//! How Telegram's chats are written in configuration: `telegram:CHAT[/TOPIC]` (a
//! group's id is negative), `telegram:user:USER` for a person's private chat, whose
//! id is the person's own. Numbers throughout: the kit's [`NumberedAddress`].

use super::PLATFORM;
use crate::platform::kit::address::NumberedAddress;

/// The telegram platform's [`ChatNetwork`](crate::interaction::chat::ChatNetwork).
pub const ADDRESS: NumberedAddress = NumberedAddress {
    name: PLATFORM,
    title: "Telegram",
    chat_field: "chat_id",
    signed_chats: true,
    direct_prefix: "",
    spaces: None,
    chat_forms: &["telegram:CHAT_ID", "telegram:CHAT_ID/TOPIC_ID", "telegram:user:USER_ID"],
    chat_examples: &["telegram:-100123/7"],
    space_form: None,
    group_form: None,
    field_docs: ["Telegram chat id (groups are negative).", "A forum topic in the chat.", "A person: their private chat with the bot (instead of chat_id)."],
};
