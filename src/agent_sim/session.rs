//! One session's state, which outlives its connections: the outbox of frames not yet
//! delivered, which connection (if any) is live, the history, the pending requests, the
//! queue of user messages and the running turn. Delivery is pull-based: only the live
//! connection's writer takes frames from the outbox, and a frame leaves the outbox only
//! after it was written, so events produced while no connection is live simply wait.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{Notify, oneshot};
use tokio::task::AbortHandle;

use super::validate::{Expect, Reply};

/// One WebSocket frame to send; binary and raw text exist for the malformed scenario.
#[derive(Debug, Clone)]
pub(crate) enum Frame {
    Text(String),
    Binary(Vec<u8>),
}

/// The live connection: its id and the signal that wakes its writer.
#[derive(Clone)]
pub(crate) struct Live {
    pub(crate) id: u64,
    pub(crate) wake: Arc<Notify>,
}

/// What a connection's writer should do next.
pub(crate) enum Next {
    Send(u64, Frame),
    Idle,
    /// This connection is no longer the live one (replaced, backend down, shut down).
    Stop,
}

/// A request waiting for the human, keyed by approval_key in `Session::pending`.
pub(crate) struct Pending {
    pub(crate) expect: Expect,
    /// Position of the request's entry in `Session::history`, updated when it ends.
    pub(crate) history_pos: usize,
    pub(crate) reply: oneshot::Sender<Reply>,
}

/// A user message waiting for its turn.
#[derive(Debug, Clone)]
pub(crate) struct UserMessage {
    pub(crate) text: String,
}

#[derive(Default)]
pub(crate) struct Session {
    outbox: VecDeque<(u64, Frame)>,
    next_seq: u64,
    live: Option<Live>,
    pub(crate) history: Vec<Value>,
    pub(crate) pending: HashMap<String, Pending>,
    /// Last approval-key number used; keys count from 1 across the session's turns.
    pub(crate) last_key: u64,
    /// The `message_id`s of the messages received, to run each once.
    messages_seen: std::collections::HashSet<String>,
    pub(crate) queue: VecDeque<UserMessage>,
    /// The task running this session's turns, if any.
    pub(crate) runner: Option<AbortHandle>,
    /// Ends the running turn early (the `cancel` command).
    pub(crate) cancel: Option<oneshot::Sender<()>>,
}

impl Session {
    /// True the first time `message_id` is seen in this session.
    pub(crate) fn first_sight_of_message(&mut self, message_id: &str) -> bool {
        self.messages_seen.insert(message_id.to_owned())
    }

    /// Queues a frame for delivery and wakes the live writer, if any.
    pub(crate) fn emit(&mut self, frame: Frame) {
        self.next_seq += 1;
        self.outbox.push_back((self.next_seq, frame));
        if let Some(live) = &self.live {
            live.wake.notify_one();
        }
    }

    pub(crate) fn emit_json(&mut self, event: Value) {
        self.emit(Frame::Text(event.to_string()));
    }

    pub(crate) fn attach(&mut self, id: u64) -> Live {
        self.detach_any();
        let live = Live { id, wake: Arc::new(Notify::new()) };
        // Start the new writer right away in case frames are buffered.
        live.wake.notify_one();
        self.live = Some(live.clone());
        live
    }

    /// Forgets the live connection, if it is `id` (an older one may end after a newer one
    /// replaced it; that must not detach the newer one).
    pub(crate) fn detach(&mut self, id: u64) {
        if self.live.as_ref().is_some_and(|l| l.id == id) {
            self.live = None;
        }
    }

    /// Forgets the live connection, whichever it is, and wakes its writer so it closes.
    /// Returns whether there was one.
    pub(crate) fn detach_any(&mut self) -> bool {
        match self.live.take() {
            Some(old) => {
                old.wake.notify_one();
                true
            }
            None => false,
        }
    }

    /// The next frame for connection `id` to write. The frame stays in the outbox until
    /// `delivered`, so a failed write loses nothing.
    pub(crate) fn next_frame(&self, id: u64) -> Next {
        if self.live.as_ref().is_none_or(|l| l.id != id) {
            return Next::Stop;
        }
        match self.outbox.front() {
            Some((seq, frame)) => Next::Send(*seq, frame.clone()),
            None => Next::Idle,
        }
    }

    /// Drops the frames no connection took: a backend that does not send again what it
    /// said while no connection was open (its history still has it).
    pub(crate) fn forget_unsent(&mut self) {
        if !self.outbox.is_empty() {
            tracing::info!(frames = self.outbox.len(), "forgetting what no connection took");
            self.outbox.clear();
        }
    }

    pub(crate) fn delivered(&mut self, seq: u64) {
        if self.outbox.front().is_some_and(|(s, _)| *s == seq) {
            self.outbox.pop_front();
        }
    }

    pub(crate) fn abort_runner(&mut self) {
        if let Some(runner) = self.runner.take() {
            runner.abort();
        }
        self.cancel = None;
        self.pending.clear();
    }
}
