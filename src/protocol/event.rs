//! Backend → bridge stream events (PROTOCOL.md §3 and §4).
//!
//! Parsing is lenient where the seeds disagree (both approval_request shapes, optional
//! fields) and strict nowhere else: unknown event and block types become `Unknown` so a
//! newer backend never breaks an older bridge.

use serde::Deserialize;
use serde_json::Value;

use super::command::{Answers, Decision};

/// One JSON object received in one text frame.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BackendEvent {
    ContentBlockStart {
        index: u64,
        content_block: ContentBlock,
        #[serde(default)]
        message_id: Option<String>,
    },
    ContentBlockDelta {
        index: u64,
        delta: Delta,
    },
    ContentBlockStop {
        index: u64,
    },
    GroupStart {
        #[serde(default)]
        summary: Option<String>,
    },
    GroupEnd {
        #[serde(default)]
        summary: Option<String>,
    },
    MessageStop,
    Error {
        #[serde(default)]
        message: String,
    },
    /// Any event type this bridge does not know; ignored.
    #[serde(other)]
    Unknown,
}

/// The `content_block` of a `content_block_start`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        #[serde(default)]
        text: String,
        #[serde(default)]
        is_final: bool,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
    },
    ToolUse {
        #[serde(default)]
        id: String,
        name: String,
        #[serde(default)]
        input: Option<Value>,
    },
    ToolResult {
        #[serde(default)]
        tool_use_id: String,
        #[serde(default)]
        status: Option<String>,
    },
    /// Shape A carries `actions` and `review_configs` here; shape B only the key.
    ApprovalRequest {
        approval_key: String,
        #[serde(default)]
        actions: Vec<ActionRequest>,
        #[serde(default)]
        action_requests: Vec<ActionRequest>,
        #[serde(default)]
        review_configs: Vec<ReviewConfig>,
        #[serde(default)]
        timeout_seconds: Option<u64>,
    },
    ApprovalResult {
        approval_key: String,
    },
    ApprovalTimeout {
        approval_key: String,
    },
    #[serde(other)]
    Unknown,
}

/// The `delta` of a `content_block_delta`. Text, thinking and approval deltas share
/// one struct because approval deltas carry no `type` tag (seed 000).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Delta {
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub thinking: Option<String>,
    #[serde(default)]
    pub action_requests: Vec<ActionRequest>,
    #[serde(default)]
    pub actions: Vec<ActionRequest>,
    #[serde(default)]
    pub review_configs: Vec<ReviewConfig>,
    #[serde(default)]
    pub timeout_seconds: Option<u64>,
    /// In an `approval_result` delta.
    #[serde(default)]
    pub decisions: Option<Vec<Decision>>,
    /// In an `approval_result` delta.
    #[serde(default)]
    pub answers: Option<Answers>,
}

/// One tool call awaiting review.
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
pub struct ActionRequest {
    pub name: String,
    #[serde(default)]
    pub args: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
}

/// How one action may be reviewed.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ReviewConfig {
    #[serde(default)]
    pub action_name: Option<String>,
    /// Kept as strings: unknown decision types are dropped when merged, not fatal here.
    #[serde(default)]
    pub allowed_decisions: Option<Vec<String>>,
    #[serde(default)]
    pub timeout: Option<u64>,
    #[serde(default)]
    pub require_approval: Option<bool>,
}

impl BackendEvent {
    /// Parses one text frame. The error says what was wrong, for the log line.
    pub fn parse(frame: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(frame)
    }
}
