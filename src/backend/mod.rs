//! Backend connectors: each turns one backend's wire format into [`SessionUpdate`]s
//! and delivers the bridge's commands. The engine sees them only through the
//! [`Connector`] trait, which the engine owns (as it owns [`crate::engine::Platform`]), so a new backend
//! is one module and touches neither the engine nor the core.
//!
//! Layout:
//! - [`session`]: what every connection-based backend shares: one supervised task per
//!   session, reconnects with backoff, and the replica lease ([`lease`]), the durable
//!   outbox ([`outbox`]), reconciliation from history ([`history`]) and the agent's
//!   texts a restart must still relay from it ([`last_words`]).
//! - [`link`]: the seam a backend plugs into: a [`link::Transport`] opens
//!   [`link::Link`]s that write commands and read updates.
//! - [`stream`]: the stream protocol over WebSocket, a [`session::Transport`]; its pure
//!   half is [`assembler`].
//! - [`http_api`]: agents that push requests over HTTP (PROTOCOL.md §8).
//! - Real agent backends, each a [`session::Transport`] (docs/backends/):
//!   [`langgraph`] (a LangGraph server's threads, runs and interrupts), [`kimi`] (Kimi
//!   CLI's wire mode, one `kimi --wire` process per session, seed 001), [`agno`] (Agno
//!   AgentOS over its HTTP API, seed 004) and [`claude_code`] (the CLI of
//!   `claude-agent-sdk` over stdio). They share [`sse`] (the Server-Sent Events parser
//!   of the HTTP ones) and [`tool_groups`] (tool calls as one status line per group).

pub mod agno;
pub mod assembler;
pub mod child;
pub mod claude_code;
pub mod history;
pub mod http_api;
pub mod kimi;
pub mod langgraph;
pub mod last_words;
pub mod lease;
pub mod link;
pub mod outbox;
pub mod session;
pub mod settings;
pub mod sse;
pub mod stream;
pub mod tool_groups;

pub use crate::engine::{Connector, Connectors};

pub use crate::interaction::updates::{BackendInput, SessionUpdate, ToolGroupStatus, ToolRun, ToolState};
