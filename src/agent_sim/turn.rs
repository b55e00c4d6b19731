//! What a scenario script can do during one turn: emit blocks with increasing `index`
//! values, record assistant texts in the history, and ask the human (register a pending
//! request, emit it, wait for a valid reply or the deadline, emit the outcome). Cheap to
//! clone: the runner keeps a clone to finish a cancelled turn with the same indices.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::oneshot;

use super::events;
use super::history;
use super::hub::Hub;
use super::session::{Frame, Pending};
use super::validate::{Expect, Reply};

/// How a request is laid out on the wire.
pub(crate) enum Shape {
    /// Seed 002: all in the start block, optionally with a top-level `message_id`.
    A { message_id: Option<&'static str> },
    /// Seed 000: key in the start block, the rest in a delta with `timeout_seconds`.
    B { timeout_seconds: u64 },
}

/// A request to put to the human.
pub(crate) struct Request {
    pub(crate) shape: Shape,
    pub(crate) actions: Vec<Value>,
    pub(crate) review_configs: Vec<Value>,
    /// When the backend itself gives up and emits `approval_timeout`; `None` waits until
    /// answered or cancelled (so the bridge's own expiry can be exercised).
    pub(crate) expires_after: Option<Duration>,
}

#[derive(Clone)]
pub(crate) struct Turn {
    hub: Arc<Hub>,
    session_id: Arc<str>,
    next_index: Arc<AtomicU64>,
}

impl Turn {
    pub(crate) fn new(hub: Arc<Hub>, session_id: &str) -> Self {
        Self { hub, session_id: session_id.into(), next_index: Arc::new(AtomicU64::new(0)) }
    }

    pub(crate) fn hub(&self) -> &Hub {
        &self.hub
    }

    /// Takes the next block index of this turn.
    pub(crate) fn next_index(&self) -> u64 {
        self.next_index.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn send_all(&self, events: Vec<Value>) {
        self.hub.with_session(&self.session_id, |s| events.into_iter().for_each(|e| s.emit_json(e)));
    }

    pub(crate) fn send_frame(&self, frame: Frame) {
        self.hub.with_session(&self.session_id, |s| s.emit(frame));
    }

    /// An assistant text block, also recorded in the history.
    pub(crate) fn text(&self, text: &str, is_final: bool) {
        let events = events::text_block(self.next_index(), text, is_final);
        self.hub.with_session(&self.session_id, |s| {
            events.into_iter().for_each(|e| s.emit_json(e));
            s.history.push(history::assistant_text(text, is_final));
        });
    }

    /// An assistant text block whose `parts` arrive as deltas `gap` apart (the first
    /// with the block's start) and whose stop comes `gap` after the last, as a model
    /// writing slowly sends it; recorded in the history once complete.
    pub(crate) async fn text_slowly(&self, parts: &[&str], gap: Duration, is_final: bool) {
        let index = self.next_index();
        let mut content_block = serde_json::json!({"type": "text"});
        if is_final {
            content_block["is_final"] = serde_json::json!(true);
        }
        self.send_all(vec![events::block_start(index, content_block)]);
        for (n, part) in parts.iter().enumerate() {
            if n > 0 {
                tokio::time::sleep(gap).await;
            }
            self.send_all(vec![events::block_delta(index, serde_json::json!({"type": "text_delta", "text": part}))]);
        }
        tokio::time::sleep(gap).await;
        self.hub.with_session(&self.session_id, |s| {
            s.emit_json(events::block_stop(index));
            s.history.push(history::assistant_text(&parts.concat(), is_final));
        });
    }

    pub(crate) fn thinking(&self, thinking: &str) {
        self.send_all(events::thinking_block(self.next_index(), thinking));
    }

    /// A collapsible group with one successful tool call in it.
    pub(crate) fn tool_group(&self, summary: &str, tool_id: &str, tool_name: &str, input: Value) {
        let mut all = vec![events::group_start(summary)];
        all.extend(events::tool_use(self.next_index(), tool_id, tool_name, input));
        all.extend(events::tool_result(self.next_index(), tool_id));
        all.push(events::group_end(summary));
        self.send_all(all);
    }

    pub(crate) fn message_stop(&self) {
        self.send_all(vec![events::message_stop()]);
    }

    /// Asks the human and waits. Returns the valid reply (after emitting approval_result),
    /// or `None` when the request expired (after emitting approval_timeout) or was
    /// abandoned.
    pub(crate) async fn ask(&self, request: Request) -> Option<Reply> {
        let index = self.next_index();
        let expect = Expect::for_request(&request.actions, &request.review_configs);
        let (reply_tx, mut reply_rx) = oneshot::channel();
        // Registered and emitted under one lock: a reply can never arrive for a key that
        // is not pending yet.
        let key = self.hub.with_session(&self.session_id, |s| {
            s.last_key += 1;
            let key = format!("{}_{}", self.session_id, s.last_key);
            let history_pos = s.history.len();
            s.history.push(history::approval_request(&key, &request.actions, &request.review_configs));
            s.pending.insert(key.clone(), Pending { expect, history_pos, reply: reply_tx });
            let events = match request.shape {
                Shape::A { message_id } => events::request_shape_a(index, &key, &request.actions, &request.review_configs, message_id),
                Shape::B { timeout_seconds } => events::request_shape_b(index, &key, &request.actions, &request.review_configs, timeout_seconds),
            };
            events.into_iter().for_each(|e| s.emit_json(e));
            key
        });
        tracing::info!(session_id = %self.session_id, approval_key = %key, "waiting for the human");

        let received = match request.expires_after {
            Some(deadline) => tokio::time::timeout(deadline, &mut reply_rx).await.ok(),
            None => Some((&mut reply_rx).await),
        };
        let reply = match received {
            Some(Ok(reply)) => reply,
            // The pending entry was dropped without a reply: the session is shutting down.
            Some(Err(_)) => return None,
            None if self.expire(&key) => {
                tracing::info!(approval_key = %key, "request timed out");
                self.send_all(events::approval_timeout(self.next_index(), &key));
                return None;
            }
            // A valid reply won the race against the deadline; it is in the channel.
            None => reply_rx.try_recv().ok()?,
        };
        self.send_all(events::approval_result(self.next_index(), &key, &reply));
        Some(reply)
    }

    /// Removes a still-pending request, marking it resolved with nothing submitted.
    /// False when it was already answered.
    fn expire(&self, key: &str) -> bool {
        self.hub.with_session(&self.session_id, |s| match s.pending.remove(key) {
            Some(pending) => {
                if let Some(entry) = s.history.get_mut(pending.history_pos) {
                    history::mark_resolved(entry, None);
                }
                true
            }
            None => false,
        })
    }

    /// Drops every pending request of the session (the turn was cancelled).
    pub(crate) fn abandon_pending(&self) {
        self.hub.with_session(&self.session_id, |s| {
            for (key, pending) in s.pending.drain() {
                tracing::info!(approval_key = %key, "request abandoned by cancel");
                if let Some(entry) = s.history.get_mut(pending.history_pos) {
                    history::mark_resolved(entry, None);
                }
            }
        });
    }
}
