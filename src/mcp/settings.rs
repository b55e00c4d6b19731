//! The `[mcp]` section: which tools the MCP server offers and where their requests go.

use serde::{Deserialize, Serialize};

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
}

impl Default for McpSettings {
    fn default() -> Self {
        Self { enabled: true, tools: MCP_TOOLS.iter().map(|t| (*t).to_owned()).collect(), default_targets: Vec::new() }
    }
}

impl McpSettings {
    /// What is wrong with the section, as (key, reason); `None` when it is sound.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        for tool in &self.tools {
            if !MCP_TOOLS.contains(&tool.as_str()) {
                return Some(("mcp.tools", format!("`{tool}` is not a tool; the tools are {}", MCP_TOOLS.join(", "))));
            }
        }
        for target in &self.default_targets {
            if crate::platform::networks().parse_chat(target).is_none() {
                return Some((
                    "mcp.default_targets",
                    format!("`{target}` is not platform:chat (e.g. telegram:-100123/7, discord:1100…, discord:user:80…, console)"),
                ));
            }
        }
        None
    }
}
