//! What the Telegram front end remembers between updates.
//!
//! In the store ([`crate::store::UiStates::put`]), so that any replica behind a
//! load balancer can handle the next update: the view each question message shows
//! (wizard step and page of a long option list; the engine writes it with the click
//! that changes it, see [`view_state`]) and the ForceReply prompts waiting for
//! typed text (Other text, Edit JSON, a comment). Both belong to their interaction and
//! are removed when it ends; both expire with it.
//!
//! In memory, bounded ([`Caches`]): what only makes rendering nicer, the status message
//! of each tool group and the language each chat was last seen in. Losing them costs a
//! new status message or an English reply, never an answer.

use serde::{Deserialize, Serialize};

use crate::clock::now_ms;
use crate::engine::UiStateWrite;
use crate::interaction::Interaction;
use crate::platform::kit::bounded::BoundedMap;
use crate::store::{StoreError, UiStates};

/// What typed text answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PromptKind {
    /// Free text for a question ("Other" or the input option).
    Text { question: usize },
    /// New args as a JSON object.
    Edit { action: usize },
    /// A comment (respond / user_edit_content).
    Comment { action: usize },
}

/// A ForceReply message waiting for one person's reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prompt {
    pub chat_id: i64,
    pub message_id: i32,
    pub user_id: u64,
    pub interaction_id: String,
    pub kind: PromptKind,
}

/// What a question message shows: a wizard step (a question, or the summary when it is
/// the question count) and, for a long option list, which page of its buttons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct View {
    pub step: usize,
    #[serde(default)]
    pub page: usize,
}

const VIEW_KIND: &str = "telegram.view";
const PROMPT_KIND: &str = "telegram.prompt";
/// Kept this long after the interaction's deadline (a late click still renders right
/// until the expiry timer ends it).
const GRACE_MS: i64 = 60_000;
/// A prompt nobody answered stops catching a private chat's messages after this long,
/// even when the interaction waits longer: the person has moved on.
const PROMPT_TTL_MS: i64 = 6 * 3600 * 1000;

fn expiry(interaction: &Interaction) -> i64 {
    interaction.deadline_ms.max(now_ms()).saturating_add(GRACE_MS)
}

/// The row that makes `view` the one `interaction`'s question message shows. A click
/// hands it to the engine ([`crate::engine::Click::keeping`]), which writes it with
/// the click's action, so a refused click leaves the view as it was.
pub fn view_state(interaction: &Interaction, view: View) -> UiStateWrite {
    UiStateWrite { kind: VIEW_KIND, key: interaction.id.clone(), value: serde_json::to_string(&view).unwrap_or_default(), expires_ms: expiry(interaction) }
}

fn prompt_key(chat_id: i64, user_id: u64) -> String {
    format!("{chat_id}:{user_id}")
}

/// Steps and prompts, in the store.
#[derive(Clone)]
pub struct Wizard {
    states: UiStates,
}

impl Wizard {
    pub fn new(states: UiStates) -> Self {
        Self { states }
    }

    /// The remembered view of an interaction. A store error is logged and reads as
    /// none: the view is then derived from the stored draft, which is always valid.
    pub async fn view(&self, interaction_id: &str) -> Option<View> {
        match self.states.get(VIEW_KIND, interaction_id, now_ms()).await {
            Ok(found) => found.and_then(|s| serde_json::from_str(&s.value).ok()),
            Err(e) => {
                tracing::warn!(error = %e, interaction = %interaction_id, "cannot read the wizard view");
                None
            }
        }
    }

    /// A new prompt replaces an older one from the same person in the same chat: only
    /// the latest question asked of someone is waiting for their text.
    pub async fn add_prompt(&self, prompt: &Prompt, interaction: &Interaction) -> Result<(), StoreError> {
        let now = now_ms();
        let expires = expiry(interaction).min(now.saturating_add(PROMPT_TTL_MS));
        let value = serde_json::to_string(prompt).unwrap_or_default();
        self.states.put(PROMPT_KIND, &prompt_key(prompt.chat_id, prompt.user_id), &prompt.interaction_id, &value, now, expires).await
    }

    /// The prompt a message answers: the one it replies to, else (when `fallback`) the
    /// person's open prompt in that chat. Removes it; when two replicas see the same
    /// reply, one of them gets it.
    pub async fn take_prompt(&self, chat_id: i64, user_id: u64, reply_to: Option<i32>, fallback: bool) -> Result<Option<Prompt>, StoreError> {
        let key = prompt_key(chat_id, user_id);
        let Some(stored) = self.states.get(PROMPT_KIND, &key, now_ms()).await? else { return Ok(None) };
        let Ok(prompt) = serde_json::from_str::<Prompt>(&stored.value) else {
            tracing::warn!(%key, "an unreadable stored prompt; dropped");
            self.states.delete(PROMPT_KIND, &key).await?;
            return Ok(None);
        };
        if !(fallback || reply_to == Some(prompt.message_id)) {
            return Ok(None);
        }
        Ok(self.states.take(PROMPT_KIND, &key, &stored.value).await?.then_some(prompt))
    }
}

/// Tool status lines kept at most (one per running tool group).
const MAX_TOOL_LINES: usize = 10_000;
/// Chats whose language is remembered at most.
const MAX_LANGUAGES: usize = 10_000;

type ToolLineKey = (String, Option<String>, u64);

/// Rendering caches, in memory and bounded.
pub struct Caches {
    /// (chat id, thread id, session-scoped group number) → status message id and the
    /// text it shows (an unchanged line is not edited again). Removed when the group
    /// finishes.
    tool_lines: BoundedMap<ToolLineKey, (i32, String)>,
    languages: BoundedMap<String, String>,
    /// When each chat last got an answer to `/id`: anyone may ask, so a flood of it
    /// is answered once per [`ID_ANSWER_EVERY`].
    id_answers: BoundedMap<String, std::time::Instant>,
    /// Updates whose senders were told they are not stored yet (Telegram delivers a
    /// batch again until it is stored: each person is told once), and when each chat
    /// last got that notice as a message.
    unstored_updates: BoundedMap<i64, ()>,
    unstored_chats: BoundedMap<i64, std::time::Instant>,
}

/// The shortest time between two "not stored yet" messages in one chat: in an outage
/// every message would otherwise get one.
pub const UNSTORED_NOTICE_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// The shortest time between two answers to `/id` in one chat.
pub const ID_ANSWER_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

impl Default for Caches {
    fn default() -> Self {
        Self {
            tool_lines: BoundedMap::new(MAX_TOOL_LINES),
            languages: BoundedMap::new(MAX_LANGUAGES),
            id_answers: BoundedMap::new(MAX_LANGUAGES),
            unstored_updates: BoundedMap::new(MAX_LANGUAGES),
            unstored_chats: BoundedMap::new(MAX_LANGUAGES),
        }
    }
}

impl Caches {
    pub fn tool_line(&self, key: &ToolLineKey) -> Option<(i32, String)> {
        self.tool_lines.get(key).cloned()
    }

    pub fn set_tool_line(&mut self, key: ToolLineKey, message_id: i32, text: String) {
        self.tool_lines.insert(key, (message_id, text));
    }

    pub fn forget_tool_line(&mut self, key: &ToolLineKey) {
        self.tool_lines.remove(key);
    }

    pub fn remember_language(&mut self, chat_id: &str, code: &str) {
        if self.languages.get(&chat_id.to_owned()).map(String::as_str) != Some(code) {
            self.languages.insert(chat_id.to_owned(), code.to_owned());
        }
    }

    pub fn language(&self, chat_id: &str) -> Option<String> {
        self.languages.get(&chat_id.to_owned()).cloned()
    }

    /// Whether the sender of update `update_id`, which could not be stored, is still to
    /// be told so (and notes that they are): once per update, and for a message (`in_chat`)
    /// at most once per [`UNSTORED_NOTICE_EVERY`] in its chat.
    pub fn may_tell_unstored(&mut self, update_id: i64, in_chat: Option<i64>, now: std::time::Instant) -> bool {
        if self.unstored_updates.get(&update_id).is_some() {
            return false;
        }
        self.unstored_updates.insert(update_id, ());
        if let Some(chat) = in_chat {
            if self.unstored_chats.get(&chat).is_some_and(|last| now.duration_since(*last) < UNSTORED_NOTICE_EVERY) {
                return false;
            }
            self.unstored_chats.insert(chat, now);
        }
        true
    }

    /// Whether `/id` may be answered in `chat_id` now (and notes that it is).
    pub fn may_answer_id(&mut self, chat_id: &str, now: std::time::Instant) -> bool {
        if self.id_answers.get(&chat_id.to_owned()).is_some_and(|last| now.duration_since(*last) < ID_ANSWER_EVERY) {
            return false;
        }
        self.id_answers.insert(chat_id.to_owned(), now);
        true
    }
}
