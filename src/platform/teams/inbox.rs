//! Activities are answered once stored, not once handled, through the bridge's
//! durable inbox worker ([`DurableInbox`], under platform `teams`): the endpoint
//! stores an activity, answers Teams, and [`Handler`] handles it; its row is marked
//! handled when that finished. So a crash between receipt and handling loses nothing
//! (the row is handled at the next start, or by another replica once this one's
//! claim lapses), and an activity Teams delivers again (same conversation, same id)
//! is stored once and handled once.
//!
//! Messages are handled one after another per conversation, in the order they were
//! stored; card actions run in parallel. A card action's invoke is the one Teams waits
//! on: the endpoint registers a waiter for its [`Answer`] before storing it, and the
//! handling answers it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use super::clicks::{self, Answer};
use super::payload::Activity;
use super::{Shared, chat};
use crate::clock::now_ms;
use crate::platform::kit::inbox::{Done, DurableInbox, InboxHandler};
use crate::platform::kit::lanes::Lanes;
use crate::store::{InboxUpdate, StoreError};

/// Handles stored activities.
pub struct Handler {
    pub shared: Arc<Shared>,
    pub inbox: DurableInbox,
    /// Answers awaited by the endpoint, by update id (live card actions only).
    answers: Mutex<HashMap<String, oneshot::Sender<Answer>>>,
    /// Keeps the order of activities stored in the same millisecond.
    sequence: AtomicI64,
    /// Each conversation's chat lane, while it has work.
    lanes: Arc<Lanes<String>>,
}

/// What [`Handler::receive`] did with an activity.
pub enum Received {
    /// Stored now, or stored before (delivered again): answer 200.
    Stored,
    /// A card action stored and being handled: answer with what this gives.
    Answer(oneshot::Receiver<Answer>),
}

/// The id an activity is stored under: its conversation and its id (Teams' ids are
/// unique within a conversation).
pub fn update_id(activity: &Activity) -> Option<String> {
    let id = activity.id.as_deref().filter(|id| !id.is_empty())?;
    Some(format!("{}|{id}", activity.conversation.id))
}

impl Handler {
    pub fn new(shared: Arc<Shared>, inbox: DurableInbox) -> Self {
        Self { shared, inbox, answers: Mutex::new(HashMap::new()), sequence: AtomicI64::new(0), lanes: Lanes::new("a Teams activity") }
    }

    fn answers(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<Answer>>> {
        self.answers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stores `activity` (whose text is `raw`) and hands it over when new. An error
    /// means it was not stored and must not be answered 200: Teams sends it again.
    pub async fn receive(self: &Arc<Self>, activity: Activity, raw: String) -> Result<Received, StoreError> {
        let Some(key) = update_id(&activity) else {
            tracing::debug!(kind = %activity.kind, "an activity without an id; nothing to store");
            return Ok(Received::Stored);
        };
        let waiter = activity.is_card_action().then(|| {
            let (tx, rx) = oneshot::channel();
            self.answers().insert(key.clone(), tx);
            rx
        });
        let seq = now_ms().saturating_mul(1000) + self.sequence.fetch_add(1, Ordering::Relaxed).rem_euclid(1000);
        let lane = activity.conversation_and_thread().0.to_owned();
        let row = InboxUpdate { update_id: key.clone(), seq, lane, body: raw };
        let stored = self.inbox.receive(self, vec![(row, activity)]).await;
        // Still waiting here means it was not handed over: stored before, or not stored.
        let not_handed = self.answers().remove(&key).is_some();
        stored.map_err(|unstored| unstored.error)?;
        Ok(match waiter {
            Some(rx) if !not_handed => Received::Answer(rx),
            _ => Received::Stored,
        })
    }
}

impl InboxHandler for Handler {
    type Update = Activity;

    fn handle(self: &Arc<Self>, activity: Activity, done: Done) {
        let handler = self.clone();
        if activity.is_card_action() {
            let waiter = update_id(&activity).and_then(|key| self.answers().remove(&key));
            tokio::spawn(async move {
                let answer = clicks::click(&handler.shared, &activity).await;
                if let Some(waiter) = waiter {
                    let _ = waiter.send(answer);
                }
                drop(done);
            });
            return;
        }
        if activity.kind == "message" {
            let lane = activity.conversation_and_thread().0.to_owned();
            return self.lanes.push(lane, async move {
                chat::on_message(&handler.shared, &activity).await;
                drop(done);
            });
        }
        tracing::debug!(kind = %activity.kind, "an activity the bridge does not use");
        drop(done);
    }
}
