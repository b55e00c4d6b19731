//! Backend connectors: each turns one backend's wire format into [`SessionUpdate`]s
//! and delivers the bridge's commands. The engine sees them only through the
//! [`Connector`] trait (the mirror of [`crate::platform::Platform`]), so a new backend
//! is one module and touches neither the engine nor the core.
//!
//! Layout:
//! - [`connector`]: the trait and the router that picks a session's connector.
//! - [`session`]: what every connection-based backend shares: one supervised task per
//!   session, reconnects with backoff, and the replica lease ([`lease`]), the durable
//!   outbox ([`outbox`]) and reconciliation from history ([`history`]).
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
pub mod connector;
pub mod history;
pub mod http_api;
pub mod kimi;
pub mod langgraph;
pub mod lease;
pub mod outbox;
pub mod session;
pub mod sse;
pub mod stream;
pub mod tool_groups;

pub use connector::{Connector, Connectors};

use crate::interaction::Request;
use crate::protocol::Reply;

/// An update for the engine, tagged with its session.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendInput {
    pub session_id: String,
    pub update: SessionUpdate,
}

/// What a backend said, after assembly, for the engine.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionUpdate {
    /// A complete text block.
    Text { text: String, is_final: bool },
    /// A tool group started, progressed or ended; render as one status line.
    ToolGroup(ToolGroupStatus),
    /// A complete approval request.
    Request(Request),
    /// An approval request that could not be understood (logged, shown as an error).
    InvalidRequest { approval_key: String, reason: String },
    /// `approval_result`: resolved by this bridge or another client.
    Resolved { approval_key: String, reply: Option<Reply> },
    /// `approval_timeout`: the backend auto-rejected it.
    TimedOut { approval_key: String },
    TurnEnded,
    TurnFailed { message: String },
    /// History (after a reconnect) shows these requests resolved.
    ResolvedInHistory(Vec<history::HistoryResolution>),
    /// The backend has proven it holds the bridge's reply for this request (it answered
    /// a ping sent after the reply, said `approval_result`, or history shows it). Made
    /// by the session task, never read from the wire.
    Delivered { approval_key: String },
    /// The backend no longer waits for this request (superseded by a newer one,
    /// answered elsewhere, its run or process gone): the bridge's reply was not
    /// delivered and never will be. Made by a connector, never read from the wire.
    NoLongerWaiting { approval_key: String },
}

/// One collapsible group of tool work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolGroupStatus {
    /// Counts groups within a session, so a platform can edit the right line.
    pub group: u64,
    pub summary: Option<String>,
    pub tools: Vec<ToolRun>,
    pub finished: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolRun {
    pub id: String,
    pub name: String,
    pub state: ToolState,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolState {
    Running,
    Done,
    Failed,
}

impl ToolGroupStatus {
    /// A compact one-line rendering shared by text-only platforms.
    pub fn line(&self) -> String {
        let tools = self
            .tools
            .iter()
            .map(|t| {
                let mark = match t.state {
                    ToolState::Running => "…",
                    ToolState::Done => "✓",
                    ToolState::Failed => "✗",
                };
                format!("{} {mark}", t.name)
            })
            .collect::<Vec<_>>()
            .join(", ");
        let summary = self.summary.as_deref().unwrap_or("tools");
        if tools.is_empty() { format!("⚙ {summary}") } else { format!("⚙ {summary}: {tools}") }
    }
}
