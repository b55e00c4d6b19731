//! One person's chat with the bot on the fake Telegram, as the backend connector tests
//! drive it: say something, wait for a message or an edit, click a button and get its
//! toast, answer a prompt.

// Each test binary uses the part it needs.
#![allow(dead_code)]

use std::time::Duration;

use serde_json::Value;

use super::fake_telegram::{FakeTelegram, User, button};
use super::{WAIT, wait_until};

pub struct TelegramChat<'a> {
    pub fake: &'a FakeTelegram,
    pub chat: i64,
    pub user: User,
}

impl TelegramChat<'_> {
    pub fn say(&self, text: &str) {
        self.fake.push_message(self.chat, &self.user, text, None, None);
    }

    /// Waits for a bot message whose text contains `needle`; fails with the chat's
    /// transcript, which is what one needs to see when a backend said something else.
    pub async fn message_with(&self, needle: &str) -> Value {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let messages = self.fake.bot_messages(self.chat);
            if let Some(found) = messages.iter().find(|m| text_of(m).contains(needle)) {
                return found.clone();
            }
            if tokio::time::Instant::now() > deadline {
                let transcript: Vec<&str> = messages.iter().map(text_of).collect();
                panic!("no message with {needle:?}; the chat shows:\n{}", transcript.join("\n---\n"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until message `id` (edited in place) shows `needle`.
    pub async fn message_shows(&self, id: i64, needle: &str) -> Value {
        wait_until(|| async { self.fake.message(self.chat, id).filter(|m| text_of(m).contains(needle)) }).await
    }

    /// Answers the newest ForceReply prompt containing `needle` with `text`.
    pub async fn reply_to_prompt(&self, needle: &str, text: &str) {
        let prompt = self.message_with(needle).await;
        self.fake.push_message(self.chat, &self.user, text, None, prompt["message_id"].as_i64());
    }

    /// Clicks the first button of message `id` whose label contains `label`; returns
    /// the toast the bridge answered with.
    pub async fn click(&self, id: i64, label: &str) -> Value {
        let message = self.fake.message(self.chat, id).expect("message exists");
        let query = self.fake.push_click(self.chat, &self.user, id, &button(&message, label));
        wait_until(|| async { self.fake.answer_to(&query) }).await
    }
}

/// A message's text ("" when it has none).
pub fn text_of(message: &Value) -> &str {
    message["text"].as_str().unwrap_or("")
}

/// A message's id.
pub fn id_of(message: &Value) -> i64 {
    message["message_id"].as_i64().expect("message id")
}

/// The labels of a message's inline keyboard, row by row.
pub fn labels(message: &Value) -> Vec<String> {
    message["reply_markup"]["inline_keyboard"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row.as_array().cloned().unwrap_or_default())
        .filter_map(|b| b["text"].as_str().map(str::to_owned))
        .collect()
}
