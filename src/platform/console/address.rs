//! How the console's one chat is written in configuration: `console`.

use super::PLATFORM;
use serde_json::{Value, json};

use crate::interaction::chat::{ChatKey, ChatNetwork, TargetFields, target_object_schema};

/// The console platform's [`ChatNetwork`].
pub struct Address;

impl ChatNetwork for Address {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    fn parse_chat(&self, rest: &str) -> Option<ChatKey> {
        rest.is_empty().then(super::Console::chat)
    }

    /// The terminal is the only chat: there are no direct ones.
    fn direct_chat(&self, _user_id: &str) -> Option<ChatKey> {
        None
    }

    /// Whoever types at the terminal started the bridge.
    fn always_open(&self) -> bool {
        true
    }

    fn chat_forms(&self) -> &'static [&'static str] {
        &["console"]
    }

    fn chat_examples(&self) -> &'static [&'static str] {
        &["console"]
    }

    fn display_chat(&self, _chat: &ChatKey) -> String {
        PLATFORM.to_owned()
    }

    /// The terminal: nothing to name.
    fn target_chat(&self, _fields: &TargetFields) -> Result<ChatKey, (&'static str, String)> {
        Ok(super::Console::chat())
    }

    fn target_of(&self, _chat: &ChatKey) -> Value {
        json!({ "platform": PLATFORM })
    }

    fn target_schema(&self) -> Value {
        target_object_schema(PLATFORM, &[])
    }
}
