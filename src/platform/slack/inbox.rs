//! Envelopes are acknowledged to Slack once stored, not once handled, through the
//! bridge's durable inbox worker ([`DurableInbox`], under platform `slack`): the
//! socket stores an envelope, acknowledges it, and [`Handler`] handles it after; its
//! row is marked handled when that finished. So a crash between receipt and handling
//! loses nothing (the row is handled at the next start, or by another replica once
//! this one's claim lapses), and an envelope Slack delivers again is stored once and
//! handled once ([`Envelope::dedup_key`]).
//!
//! Chat (messages, mentions, slash commands) is handled one envelope after another
//! per conversation, in the order Slack delivered it; clicks run in parallel.
//!
//! A view submission and a slash command are the ones Slack waits on: their answer
//! (`response_action: errors`; the text the person sees) goes in the acknowledgement
//! itself. The socket registers a waiter for it
//! ([`Handler::expect_answer`]) before storing it; the handling answers the waiter,
//! and the socket acknowledges with that answer, well within Slack's 3 s.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::oneshot;

use super::payload::{Envelope, Interactive};
use super::{Shared, chat, clicks, commands};
use crate::clock::now_ms;
use crate::platform::kit::inbox::{Done, DurableInbox, InboxHandler};
use crate::platform::kit::lanes::Lanes;
use crate::store::{InboxUpdate, StoreError};

/// Handles stored envelopes.
pub struct Handler {
    pub shared: Arc<Shared>,
    pub inbox: DurableInbox,
    /// Answers awaited by the socket, by envelope id (live view submissions only).
    answers: Mutex<HashMap<String, oneshot::Sender<Option<Value>>>>,
    /// Keeps the order of envelopes stored in the same millisecond.
    sequence: AtomicI64,
    /// Each conversation's chat lane, while it has work.
    lanes: Arc<Lanes<String>>,
}

/// What [`Handler::receive`] did with an envelope.
pub enum Received {
    /// Stored (or already stored): acknowledge it now.
    Ack,
    /// Stored and being handled: acknowledge it with the answer this gives.
    Answer(oneshot::Receiver<Option<Value>>),
}

/// How long a view submission's answer is waited for before the acknowledgement goes
/// without it: Slack gives up at 3 s.
const ANSWER_WITHIN: Duration = Duration::from_millis(2500);

impl Received {
    /// What the acknowledgement carries, if anything: the answer Slack waits for,
    /// when it comes in time. Slack shows an error after 3 s; an answer later than
    /// this is dropped and the modal is closed, the action applied or not.
    pub async fn answer(self) -> Option<Value> {
        let Received::Answer(answer) = self else { return None };
        match tokio::time::timeout(ANSWER_WITHIN, answer).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => None,
            Err(_) => {
                tracing::warn!("a view submission took too long to answer in the acknowledgement");
                None
            }
        }
    }
}

impl Handler {
    pub fn new(shared: Arc<Shared>, inbox: DurableInbox) -> Self {
        Self { shared, inbox, answers: Mutex::new(HashMap::new()), sequence: AtomicI64::new(0), lanes: Lanes::new("a Slack envelope") }
    }

    fn answers(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<Option<Value>>>> {
        self.answers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place in the order envelopes arrived in: milliseconds, then arrival.
    fn next_seq(&self) -> i64 {
        now_ms().saturating_mul(1000) + self.sequence.fetch_add(1, Ordering::Relaxed).rem_euclid(1000)
    }

    /// Stores `envelope` (whose text is `raw`) and hands it over when new. An error
    /// means it was not stored and must not be acknowledged: Slack sends it again.
    pub async fn receive(self: &Arc<Self>, envelope: Envelope, raw: &str) -> Result<Received, StoreError> {
        let mut received = self.receive_all(vec![(envelope, raw.to_owned())]).await?;
        Ok(received.pop().unwrap_or(Received::Ack))
    }

    /// Stores `envelopes` (each with its text) in one transaction, in the order
    /// given, and hands the new ones over; what to acknowledge each with, in the same
    /// order. The socket stores what arrived together this way, as Telegram's batch
    /// of updates is stored: a burst of clicks waits for a few commits, not one each
    /// in turn. An error means none was stored and none may be acknowledged.
    pub async fn receive_all(self: &Arc<Self>, envelopes: Vec<(Envelope, String)>) -> Result<Vec<Received>, StoreError> {
        let mut rows = Vec::with_capacity(envelopes.len());
        let mut keys = std::collections::HashSet::new();
        // Per envelope: the id its answer is awaited under, when Slack waits for one.
        let mut awaited = Vec::with_capacity(envelopes.len());
        for (envelope, raw) in envelopes {
            // Nothing to store (no id), or the same envelope twice in one batch (a
            // redelivery right behind the first): acknowledged, stored once.
            let Some(key) = envelope.dedup_key().filter(|key| keys.insert(key.clone())) else {
                awaited.push(None);
                continue;
            };
            let envelope_id = envelope.envelope_id.clone().unwrap_or_default();
            awaited.push(waits_for_answer(&envelope).then(|| {
                let (tx, rx) = oneshot::channel();
                self.answers().insert(envelope_id.clone(), tx);
                (envelope_id, rx)
            }));
            let lane = lane_of(&envelope).to_owned();
            rows.push((InboxUpdate { update_id: key, seq: self.next_seq(), lane, body: raw }, envelope));
        }
        let stored = self.inbox.receive(self, rows).await;
        let mut received = Vec::with_capacity(awaited.len());
        for answer in awaited {
            received.push(match answer {
                // Still waiting here means it was not handed over (stored before, or not stored).
                Some((envelope_id, rx)) if self.answers().remove(&envelope_id).is_none() => Received::Answer(rx),
                _ => Received::Ack,
            });
        }
        stored.map_err(|unstored| unstored.error)?;
        Ok(received)
    }

    /// The socket's waiter for this envelope's answer, if it left one.
    fn take_waiter(&self, envelope: &Envelope) -> Option<oneshot::Sender<Option<Value>>> {
        envelope.envelope_id.as_ref().and_then(|id| self.answers().remove(id))
    }

    /// Handles one stored envelope: what Slack should be answered, if anything.
    async fn handle_envelope(&self, envelope: &Envelope) -> Option<Value> {
        match envelope.kind.as_str() {
            "interactive" => match serde_json::from_value::<Interactive>(envelope.payload.clone()) {
                Ok(Interactive::BlockActions(click)) => {
                    clicks::click(&self.shared, click).await;
                    None
                }
                Ok(Interactive::ViewSubmission(submission)) => clicks::submission(&self.shared, submission).await,
                Ok(Interactive::Other) => {
                    tracing::debug!(kind = %envelope.payload["type"], "ignoring an interaction the bridge does not use");
                    None
                }
                Err(e) => {
                    tracing::warn!(error = %e, "an interactive payload that does not read; skipped");
                    None
                }
            },
            "events_api" => {
                chat::on_event(&self.shared, &envelope.payload).await;
                None
            }
            "slash_commands" => commands::on_command(&self.shared, &envelope.payload).await,
            other => {
                tracing::debug!(kind = %other, "ignoring an envelope kind the bridge does not use");
                None
            }
        }
    }
}

/// Whether Slack waits for an answer in this envelope's acknowledgement: a view
/// submission (the modal's errors) and a slash command (what the person sees). Slack
/// always takes a slash command's answer there (Socket Mode says so with
/// `accepts_response_payload`; HTTP mode's 200 body carries it without saying).
fn waits_for_answer(envelope: &Envelope) -> bool {
    envelope.kind == "slash_commands" || (envelope.accepts_response_payload && envelope.payload["type"] == "view_submission")
}

/// The conversation an envelope is about, stored as its row's lane: a click's, an
/// event's or a slash command's channel.
fn lane_of(envelope: &Envelope) -> &str {
    let payload = &envelope.payload;
    [&payload["container"]["channel_id"], &payload["event"]["channel"], &payload["channel_id"]].into_iter().find_map(Value::as_str).unwrap_or("0")
}

/// Whether an envelope is chat (a message, a mention, a slash command), which is
/// handled in its conversation's order.
fn is_chat(envelope: &Envelope) -> bool {
    envelope.kind == "events_api" || envelope.kind == "slash_commands"
}

/// One envelope's work: the socket's waiter for its answer (a live view submission
/// or slash command), and the signal that it was handled.
struct Job {
    envelope: Envelope,
    waiter: Option<oneshot::Sender<Option<Value>>>,
    done: Done,
}

impl Handler {
    /// Handles `job`, answers its waiter, then marks it handled (`done` dropped).
    async fn run(&self, job: Job) {
        let answer = self.handle_envelope(&job.envelope).await;
        if let Some(waiter) = job.waiter {
            let _ = waiter.send(answer);
        }
        drop(job.done);
    }
}

impl InboxHandler for Handler {
    type Update = Envelope;

    /// Chat goes on its conversation's lane, in order. A click or a submission is
    /// handled in a task of its own (clicks on different cards do not wait for each
    /// other; the engine orders what touches one request). A view submission or slash
    /// command handled live answers the socket's waiter; one handled after a restart
    /// has nobody to answer.
    fn handle(self: &Arc<Self>, envelope: Envelope, done: Done) {
        let waiter = self.take_waiter(&envelope);
        let job = Job { envelope, waiter, done };
        if is_chat(&job.envelope) {
            // A conversation's chat, one envelope after another in the order Slack
            // delivered them: two quick messages (or a message and `/hitl new`) must
            // not reach the engine in the wrong order.
            let handler = self.clone();
            return self.lanes.push(lane_of(&job.envelope).to_owned(), async move { handler.run(job).await });
        }
        let handler = self.clone();
        tokio::spawn(async move { handler.run(job).await });
    }
}
