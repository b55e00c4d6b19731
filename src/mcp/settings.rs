//! The `[mcp]` section: which tools the MCP server offers and where their requests go.

use serde::{Deserialize, Serialize};

use crate::interaction::chat::Networks;

/// The tools the MCP server can offer (`mcp.tools`).
pub const MCP_TOOLS: [&str; 3] = ["request_approval", "ask_user_question", "approval_prompt"];

/// The MCP server on the HTTP listener (`/mcp`), served when the inbound API is (at
/// least one `http.api_tokens` entry), with the same tokens.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpSettings {
    pub enabled: bool,
    /// Which of [`MCP_TOOLS`] are offered.
    pub tools: Vec<String>,
    /// Where a tool call's request is shown when it names no `targets`, written as in
    /// `routing.channels`.
    pub default_targets: Vec<String>,
    /// Open sessions one token may hold (each costs about 50 KiB).
    pub max_sessions_per_token: usize,
    /// Open sessions in all.
    pub max_sessions: usize,
    /// A session with no client connected (no call or stream open) this long is
    /// closed; a call that waits for a person keeps its session open.
    pub session_idle_secs: u64,
}

impl Default for McpSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            tools: MCP_TOOLS.iter().map(|t| (*t).to_owned()).collect(),
            default_targets: Vec::new(),
            max_sessions_per_token: 32,
            max_sessions: 512,
            session_idle_secs: 300,
        }
    }
}

impl McpSettings {
    /// What is wrong with the section, as (key, reason); `None` when it is sound.
    /// `networks` are every platform's address grammar, for the default targets.
    pub fn problem(&self, networks: &Networks) -> Option<(&'static str, String)> {
        for tool in &self.tools {
            if !MCP_TOOLS.contains(&tool.as_str()) {
                return Some(("mcp.tools", format!("`{tool}` is not a tool; the tools are {}", MCP_TOOLS.join(", "))));
            }
        }
        if self.max_sessions_per_token == 0 || self.max_sessions == 0 {
            let key = if self.max_sessions == 0 { "mcp.max_sessions" } else { "mcp.max_sessions_per_token" };
            return Some((key, "must be at least 1 (turn the server off with mcp.enabled = false)".to_owned()));
        }
        if self.session_idle_secs == 0 {
            return Some(("mcp.session_idle_secs", "must be at least 1".to_owned()));
        }
        for target in &self.default_targets {
            if networks.parse_chat(target).is_none() {
                return Some(("mcp.default_targets", format!("`{target}` is not platform:chat {}", networks.chat_examples(true))));
            }
        }
        None
    }
}
