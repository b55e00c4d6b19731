//! What the Telegram front end keeps in memory only: which wizard step each question
//! message shows, the ForceReply prompts waiting for typed text, the status message of
//! each tool group, and the language each chat was last seen in.
//!
//! None of it is needed for correctness after a restart: answers and decisions are
//! stored by the engine as they happen, the step is derived again from the stored
//! draft ([`super::render::step_for`]), and a lost prompt only means the person
//! presses the button again.

use std::collections::HashMap;

/// What typed text answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptKind {
    /// Free text for a question ("Other" or the input option).
    Text { question: usize },
    /// New args as a JSON object.
    Edit { action: usize },
    /// A comment (respond / user_edit_content).
    Comment { action: usize },
}

/// A ForceReply message waiting for one person's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    pub chat_id: i64,
    pub message_id: i32,
    pub user_id: u64,
    pub interaction_id: String,
    pub kind: PromptKind,
}

/// Prompts kept at most; the oldest go first (a forgotten prompt costs one click).
const MAX_PROMPTS: usize = 1000;

#[derive(Debug, Default)]
pub struct Wizard {
    steps: HashMap<String, usize>,
    prompts: Vec<Prompt>,
    /// (chat id, thread id, session-scoped group number) → status message id and the
    /// text it shows (an unchanged line is not edited again).
    tool_lines: HashMap<(String, Option<String>, u64), (i32, String)>,
    languages: HashMap<String, String>,
}

impl Wizard {
    pub fn step(&self, interaction_id: &str) -> Option<usize> {
        self.steps.get(interaction_id).copied()
    }

    /// Sets the step; returns the previous one so a refused action can restore it.
    pub fn set_step(&mut self, interaction_id: &str, step: usize) -> Option<usize> {
        self.steps.insert(interaction_id.to_owned(), step)
    }

    pub fn restore_step(&mut self, interaction_id: &str, previous: Option<usize>) {
        match previous {
            Some(step) => self.steps.insert(interaction_id.to_owned(), step),
            None => self.steps.remove(interaction_id),
        };
    }

    /// Forgets everything about an interaction that ended.
    pub fn forget(&mut self, interaction_id: &str) {
        self.steps.remove(interaction_id);
        self.prompts.retain(|p| p.interaction_id != interaction_id);
    }

    /// A new prompt replaces an older one from the same person in the same chat: only
    /// the latest question asked of someone is waiting for their text.
    pub fn add_prompt(&mut self, prompt: Prompt) {
        self.prompts.retain(|p| !(p.chat_id == prompt.chat_id && p.user_id == prompt.user_id));
        if self.prompts.len() >= MAX_PROMPTS {
            self.prompts.remove(0);
        }
        self.prompts.push(prompt);
    }

    /// The prompt a message answers: the one it replies to, else (when `fallback`) the
    /// person's open prompt in that chat. Removes it.
    pub fn take_prompt(&mut self, chat_id: i64, user_id: u64, reply_to: Option<i32>, fallback: bool) -> Option<Prompt> {
        let pos = self
            .prompts
            .iter()
            .position(|p| p.chat_id == chat_id && p.user_id == user_id && Some(p.message_id) == reply_to)
            .or_else(|| fallback.then(|| self.prompts.iter().position(|p| p.chat_id == chat_id && p.user_id == user_id)).flatten())?;
        Some(self.prompts.remove(pos))
    }

    pub fn tool_line(&self, key: &(String, Option<String>, u64)) -> Option<(i32, String)> {
        self.tool_lines.get(key).cloned()
    }

    pub fn set_tool_line(&mut self, key: (String, Option<String>, u64), message_id: i32, text: String) {
        self.tool_lines.insert(key, (message_id, text));
    }

    pub fn forget_tool_line(&mut self, key: &(String, Option<String>, u64)) {
        self.tool_lines.remove(key);
    }

    pub fn remember_language(&mut self, chat_id: &str, code: &str) {
        self.languages.insert(chat_id.to_owned(), code.to_owned());
    }

    pub fn language(&self, chat_id: &str) -> Option<String> {
        self.languages.get(chat_id).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(message_id: i32, user_id: u64) -> Prompt {
        Prompt { chat_id: 1, message_id, user_id, interaction_id: "i".into(), kind: PromptKind::Edit { action: 0 } }
    }

    #[test]
    fn reply_matches_its_prompt_and_fallback_is_per_person() {
        let mut w = Wizard::default();
        w.add_prompt(prompt(10, 7));
        assert_eq!(w.take_prompt(1, 8, Some(10), true), None, "someone else's prompt");
        assert_eq!(w.take_prompt(1, 7, None, false), None, "no reply, no fallback");
        assert_eq!(w.take_prompt(1, 7, None, true), Some(prompt(10, 7)));
        assert_eq!(w.take_prompt(1, 7, Some(10), true), None, "taken once");
    }

    #[test]
    fn a_new_prompt_replaces_the_persons_older_one() {
        let mut w = Wizard::default();
        w.add_prompt(prompt(10, 7));
        w.add_prompt(prompt(11, 7));
        assert_eq!(w.take_prompt(1, 7, Some(10), false), None);
        assert_eq!(w.take_prompt(1, 7, Some(11), false), Some(prompt(11, 7)));
    }
}
