//! The optional history endpoint's messages (seed 000 format), read after a reconnect
//! to learn which requests were resolved while the bridge was away, and what the agent
//! said meanwhile. Note the camelCase fields: history is not the stream.

use serde::Deserialize;

use super::command::{Answers, Decision};
use super::event::{ActionRequest, ReviewConfig};

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct HistoryMessage {
    #[serde(default)]
    pub role: String,
    #[serde(default)]
    pub content: Vec<HistoryBlock>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HistoryBlock {
    ApprovalRequest {
        /// Not in the seed format; a backend that sends it lets the bridge match exactly.
        #[serde(default)]
        approval_key: Option<String>,
        #[serde(default, rename = "isResolved")]
        is_resolved: bool,
        #[serde(default, rename = "actionRequests")]
        action_requests: Vec<ActionRequest>,
        /// Not in the seed format either: with `approval_key`, it lets the bridge show a
        /// request it never received (the stream's `review_configs` objects).
        #[serde(default, rename = "reviewConfigs")]
        review_configs: Vec<ReviewConfig>,
        #[serde(default, rename = "submittedAnswers")]
        submitted_answers: Option<Answers>,
        #[serde(default, rename = "submittedDecisions")]
        submitted_decisions: Option<Vec<Decision>>,
    },
    /// Text shown to the person: the agent's words (or, in a user message, the
    /// person's). After a restart the agent's texts of a turn in progress that no chat
    /// has shown yet are relayed.
    Text {
        #[serde(default)]
        text: String,
        #[serde(default)]
        is_final: bool,
    },
    #[serde(other)]
    Other,
}
