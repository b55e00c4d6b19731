//! Backend connectors: each turns one backend's wire format into [`SessionUpdate`]s
//! and delivers the bridge's commands. The engine sees them only through the
//! [`Connector`] trait, which the engine owns (as it owns [`crate::engine::Platform`]), so a new backend
//! is one module and touches neither the engine nor the core.
//!
//! Layout:
//! - [`descriptor`]: what the assembly knows of one backend (its name in
//!   `backend.kind`, its section, its connector); [`registry`] lists every backend,
//!   one line each, and is the only file that names them. Each backend is a folder
//!   (the stream protocol, whose keys are `[backend]`'s, is [`stream`]), held apart
//!   from the others by `tests/layers.rs`; the guides are in docs/backends/.
//! - [`session`]: what every connection-based backend shares: one supervised task per
//!   session, reconnects with backoff, and the replica lease ([`lease`]), the durable
//!   outbox ([`outbox`]), reconciliation from history ([`history`]) and the agent's
//!   texts a restart must still relay from it ([`last_words`]).
//! - [`link`]: the seam a backend plugs into: a [`link::Transport`] opens
//!   [`link::Link`]s that write commands and read updates.
//! - [`stream`]: the stream protocol over WebSocket, a [`session::Transport`]; its pure
//!   half is [`assembler`].
//! - [`http_api`]: agents that push requests over HTTP (PROTOCOL.md §8): not a chat
//!   backend, it serves the `api:` sessions beside whichever backend serves chats.
//! - Parts the backends share: [`sse`] (the Server-Sent Events parser of the HTTP
//!   ones), [`tool_groups`] (tool calls as one status line per group) and [`child`]
//!   (the agent processes some start).

pub mod acp;
pub mod agno;
pub mod assembler;
pub mod child;
pub mod claude_code;
pub mod descriptor;
pub mod history;
pub mod http_api;
pub mod kimi;
pub mod langgraph;
pub mod last_words;
pub mod lease;
pub mod link;
pub mod outbox;
pub mod registry;
pub mod session;
pub mod settings;
pub mod sse;
pub mod stream;
pub mod tool_groups;

pub use crate::engine::{Connector, Connectors};

pub use crate::interaction::updates::{BackendInput, SessionUpdate, ToolGroupStatus, ToolRun, ToolState};
