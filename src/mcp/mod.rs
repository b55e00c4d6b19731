//! The bridge as a Model Context Protocol server: any MCP agent (Claude Code, Claude
//! Desktop, Cursor, Codex CLI, …) asks a person in any chat the bridge serves with one
//! line of MCP configuration, and gets everything a pushed request gets (routing, who may
//! answer, policies, audit, restarts), because every tool call is a `/v1` request.
//!
//! - [`tools`]: the tools' inputs, their `/v1` bodies and their results (pure).
//! - [`bridge_api`]: the `/v1` client the tools call.
//! - [`server`]: the rmcp server: pushing, waiting, progress, cancellation.
//! - [`http`]: `/mcp` on the bridge's listener (Streamable HTTP, bearer tokens).
//! - [`sessions`]: who may use a session, how many there are, calls whose client left.
//! - [`stdio`]: `hitl-bridge mcp`, a stdio server forwarding to a running bridge.

pub mod bridge_api;
pub mod http;
pub mod server;
pub mod sessions;
pub mod settings;
pub mod stdio;
pub mod tools;
