//! What a backend said, as the engine hears it: a connector turns its wire format into
//! these, whichever backend it speaks to, so the engine and the platforms never see a
//! backend's own types. Pure data, plus the rule that matches a backend's history to
//! the bridge's interactions.

use serde_json::Value;

use super::{Interaction, Request};
use crate::protocol::{ActionRequest, Reply};

/// An update for the engine, tagged with its session.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendInput {
    pub session_id: String,
    pub update: SessionUpdate,
}

/// What a backend said, after assembly, for the engine.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionUpdate {
    /// A complete text block. `block` names the stream it finishes when
    /// [`SessionUpdate::TextProgress`] went out for it (the platform then completes the
    /// message it has been editing); `None` when it was never streamed.
    Text {
        text: String,
        is_final: bool,
        block: Option<u64>,
    },
    /// A text block still arriving: everything it holds so far. Sent at most about once
    /// a second per block; the block's [`SessionUpdate::Text`] carries the same
    /// `block`. A platform may show it (editing one message as it grows) or wait for
    /// the complete text.
    TextProgress {
        block: u64,
        text_so_far: String,
    },
    /// A tool group started, progressed or ended; render as one status line.
    ToolGroup(ToolGroupStatus),
    /// A complete approval request.
    Request(Request),
    /// An approval request that could not be understood (logged, shown as an error).
    InvalidRequest {
        approval_key: String,
        reason: String,
    },
    /// `approval_result`: resolved by this bridge or another client.
    Resolved {
        approval_key: String,
        reply: Option<Reply>,
    },
    /// `approval_timeout`: the backend auto-rejected it.
    TimedOut {
        approval_key: String,
    },
    TurnEnded,
    TurnFailed {
        message: String,
    },
    /// History (after a reconnect) shows these requests resolved.
    ResolvedInHistory(Vec<HistoryResolution>),
    /// The backend has proven it holds the bridge's reply for this request (it answered
    /// a ping sent after the reply, said `approval_result`, or history shows it). Made
    /// by the session task, never read from the wire.
    Delivered {
        approval_key: String,
    },
    /// The backend no longer waits for this request (superseded by a newer one,
    /// answered elsewhere, its run or process gone): the bridge's reply was not
    /// delivered and never will be. Made by a connector, never read from the wire.
    NoLongerWaiting {
        approval_key: String,
    },
    /// Once the chats have shown everything relayed before this, the turn opened at
    /// `opened_at_ms` has shown its first `texts` texts and, when `ended`, is over: a
    /// bridge started after that neither relays those texts again from the backend's
    /// history nor reconnects for the turn. Made by the session task, never read from
    /// the wire.
    TurnShown {
        opened_at_ms: i64,
        texts: u64,
        ended: bool,
    },
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
    /// A compact one-line rendering shared by text-only platforms, its tool names and
    /// summary made [`readable`](super::readable).
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
        let line = if tools.is_empty() { format!("⚙ {summary}") } else { format!("⚙ {summary}: {tools}") };
        super::readable::text(&line).into_owned()
    }
}

/// A request the history marks `isResolved`.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryResolution {
    pub approval_key: Option<String>,
    pub action_requests: Vec<ActionRequest>,
    pub reply: Option<Reply>,
}

/// The resolution in `resolved` that settles `interaction`, if any. By `approval_key`
/// when the history carries one. By the requested actions only when no other request
/// of the session (`session`, every status, including `interaction`) asked the same:
/// an agent that asks again after a reject would otherwise have its new request taken
/// for the old, answered one.
pub fn resolution_for<'a>(resolved: &'a [HistoryResolution], interaction: &Interaction, session: &[Interaction]) -> Option<&'a HistoryResolution> {
    resolved.iter().find(|r| match &r.approval_key {
        Some(key) => key == interaction.approval_key(),
        None => r.matches(interaction) && session.iter().filter(|other| r.matches(other)).count() == 1,
    })
}

impl HistoryResolution {
    /// By `approval_key` when present, else by the requested actions. Callers decide
    /// with [`resolution_for`], which refuses an ambiguous match by actions.
    pub fn matches(&self, interaction: &Interaction) -> bool {
        if let Some(key) = &self.approval_key {
            return key == interaction.approval_key();
        }
        let actions = interaction.request.actions();
        actions.len() == self.action_requests.len()
            && actions.iter().zip(&self.action_requests).all(|(ours, theirs)| ours.name == theirs.name && args_contained(&ours.args, &theirs.args))
    }
}

/// Every field of `ours` appears, equal, in `theirs`.
fn args_contained(ours: &Value, theirs: &Value) -> bool {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => a.iter().all(|(k, v)| b.get(k) == Some(v)),
        _ => ours == theirs,
    }
}

/// What the bridge tells a chat on its own account (not the agent's output), as data:
/// each platform words it ([`crate::texts::notice`]) and shows it its own way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// The agent sent a request the bridge cannot show.
    UnshowableRequest { approval_key: String, reason: String },
    /// The agent reported an error and ended its turn.
    AgentError { message: String },
    /// A person's pairing code was approved: they may talk now. `locale` is the
    /// language code they asked in (`en`, `vi`, `zh`).
    YouArePaired { locale: String },
}
