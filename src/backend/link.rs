//! The seam between the session machinery ([`super::session`]) and a backend's wire
//! format: a backend is a [`Transport`] that opens [`Link`]s, writes one command at a
//! time ([`Outgoing`], answered by [`Sent`]) and reads what came back ([`Received`]).

use std::future::Future;

use super::SessionUpdate;
use crate::protocol::Command;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("{0}")]
    Transport(String),
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("the engine stopped")]
    EngineGone,
    #[error("another replica took the session's lease")]
    LeaseLost,
}

impl LinkError {
    pub fn transport(e: impl std::fmt::Display) -> Self {
        LinkError::Transport(e.to_string())
    }
}

/// How a backend's sessions are reached.
pub trait Transport: Send + Sync + 'static {
    /// Per-session state kept across reconnects (e.g. the stream assembler, whose
    /// tool-group counter must not restart).
    type State: Send + 'static;
    type Link: Link<State = Self::State>;

    /// A short name for logs.
    fn name(&self) -> &'static str;

    fn new_state(&self) -> Self::State;

    /// Opens one connection for `session_id`.
    fn connect(&self, session_id: &str) -> impl Future<Output = Result<Self::Link, LinkError>> + Send;
}

/// One open connection to a backend session.
pub trait Link: Send {
    type State;

    /// Writes one command, unless the backend's own record shows it needs no writing.
    /// Only [`Sent::Written`] counts towards the proofs of [`Received::proves_first`].
    fn send(&mut self, outgoing: Outgoing<'_>) -> impl Future<Output = Result<Sent, LinkError>> + Send;

    /// The store says the agent was in a turn when the bridge before this connection
    /// stopped (a crash, a replica that died), and nobody heard it end. What the
    /// backend can tell of that turn, once per connection that finds it so: a backend
    /// that keeps running its turns is followed (a running run read until it pauses or
    /// ends, through [`Link::recv`]) and a turn that ended meanwhile has its last words
    /// relayed; a backend whose turn died with the bridge (an agent process) says so.
    /// Nothing by default: a stream backend's new connection carries the turn on, and
    /// its history (read at every connect) shows a request sent meanwhile.
    fn resume_turn(&mut self) -> impl Future<Output = Result<Vec<SessionUpdate>, LinkError>> + Send {
        async { Ok(Vec::new()) }
    }

    /// Waits for the next updates; `None` when the backend closed the connection.
    /// Must be cancel-safe: it is raced against timers and outbox wake-ups. A link
    /// that can tell a half-open connection (no ping answered in time) returns an error.
    fn recv(&mut self, state: &mut Self::State) -> impl Future<Output = Option<Result<Received, LinkError>>> + Send;
}

/// One queued command as the outbox hands it to a link.
#[derive(Debug, Clone, Copy)]
pub struct Outgoing<'a> {
    /// Stable for as long as the command is queued, across reconnects and restarts: a
    /// backend that records it (e.g. in a run's metadata) can tell a repeat.
    pub id: &'a str,
    pub command: &'a Command,
    /// Queued before this link opened, so an earlier connection or process may have
    /// written it without living to see the proof. A link whose backend cannot
    /// deduplicate checks the backend's record before writing such a command again.
    pub maybe_received: bool,
}

/// What [`Link::send`] did with a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// Written; it leaves the outbox once a proof covers it.
    Written,
    /// The backend's record shows it already has this command (written before a crash
    /// or a lost connection): not written again, and done.
    AlreadyReceived,
    /// A reply for a request the backend no longer waits for (superseded, answered
    /// elsewhere, its run gone): not written, and never reported as delivered.
    NotWaiting,
}

/// What one [`Link::recv`] brought.
#[derive(Debug, Default, PartialEq)]
pub struct Received {
    pub updates: Vec<SessionUpdate>,
    /// The backend has read the first `n` commands written on this link (e.g. it
    /// answered a ping sent after the `n`th). Only proven commands leave the outbox.
    pub proves_first: Option<u64>,
}

impl Received {
    pub fn updates(updates: Vec<SessionUpdate>) -> Self {
        Self { updates, proves_first: None }
    }

    /// Proof that the first `written` commands of the link were read.
    pub fn proof(written: u64) -> Self {
        Self { updates: Vec::new(), proves_first: Some(written) }
    }
}
