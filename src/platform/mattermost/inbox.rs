//! Posts to the integration endpoint are stored before they are handled, through the
//! bridge's durable inbox ([`DurableInbox`], under platform `mattermost`): the endpoint
//! stores an [`Update`], and [`Handler`] handles it after; its row is marked handled
//! when that finished. So a crash between receipt and handling loses nothing: the row
//! is handled at the next start, or by another replica once this one's claim lapses.
//!
//! Mattermost waits for the answer to a click (the post's `update`, an
//! `ephemeral_text`) and to a dialog submission (the errors under its fields): the
//! endpoint registers a waiter before storing, the handling answers it, and the
//! endpoint responds with that answer. An update handled after a restart has nobody
//! to answer: what the clicker should have read is posted as an ephemeral post
//! instead, so a refusal is never silent.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::oneshot;

use super::payload::{ActionPost, DialogPost, Posted, SlashCommand, Update};
use super::{Shared, chat, clicks, commands};
use crate::clock::now_ms;
use crate::platform::kit::inbox::{Done, DurableInbox, InboxHandler};
use crate::platform::kit::lanes::Lanes;
use crate::store::{InboxUpdate, StoreError};

/// How long the endpoint waits for an update's answer before it responds without
/// one: Mattermost gives an integration 30 s by default
/// (`ServiceSettings.OutgoingIntegrationRequestsTimeout`).
const ANSWER_WITHIN: Duration = Duration::from_secs(20);

/// Handles stored updates.
pub struct Handler {
    pub shared: Arc<Shared>,
    pub inbox: DurableInbox,
    /// Answers awaited by the endpoint, by update id.
    answers: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    /// Keeps the order of updates stored in the same millisecond.
    sequence: AtomicI64,
    /// Each channel's chat lane, while it has work.
    lanes: Arc<Lanes<String>>,
}

/// A stored update, with the wait for its answer.
pub struct Received(Option<oneshot::Receiver<Value>>);

impl Received {
    /// What the response carries: the answer, when it comes in time; `{}` otherwise.
    pub async fn answer(self) -> Value {
        let Some(answer) = self.0 else { return Value::Object(Default::default()) };
        match tokio::time::timeout(ANSWER_WITHIN, answer).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Value::Object(Default::default()),
            Err(_) => {
                tracing::warn!("a Mattermost click took too long to answer in its response");
                Value::Object(Default::default())
            }
        }
    }
}

impl Handler {
    pub fn new(shared: Arc<Shared>, inbox: DurableInbox) -> Self {
        Self { shared, inbox, answers: Mutex::new(HashMap::new()), sequence: AtomicI64::new(0), lanes: Lanes::new("a Mattermost update") }
    }

    fn answers(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<Value>>> {
        self.answers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place in the order updates arrived in: milliseconds, then arrival.
    fn next_seq(&self) -> i64 {
        now_ms().saturating_mul(1000) + self.sequence.fetch_add(1, Ordering::Relaxed).rem_euclid(1000)
    }

    /// Stores posts people made (nobody waits for an answer to them), in order, each
    /// under `post:<id>`: a post delivered by the WebSocket and fetched again after a
    /// reconnect is stored once and handled once.
    pub async fn receive_posts(self: &Arc<Self>, posts: Vec<(String, Update)>) -> Result<(), StoreError> {
        let rows = posts
            .into_iter()
            .map(|(update_id, update)| {
                let lane = update.channel().to_owned();
                let keyed = Keyed { update_id: update_id.clone(), update };
                let body = serde_json::to_string(&keyed).unwrap_or_default();
                (InboxUpdate { update_id, seq: self.next_seq(), lane, body }, keyed)
            })
            .collect();
        self.inbox.receive(self, rows).await.map_err(|unstored| unstored.error)
    }

    /// Stores `update` under `update_id` and hands it over; an error means it was not
    /// stored (the endpoint answers 500 and nothing changed).
    pub async fn receive(self: &Arc<Self>, update_id: String, update: Update) -> Result<Received, StoreError> {
        let lane = update.channel().to_owned();
        let keyed = Keyed { update_id: update_id.clone(), update };
        let body = serde_json::to_string(&keyed).unwrap_or_default();
        let (tx, rx) = oneshot::channel();
        self.answers().insert(update_id.clone(), tx);
        let row = InboxUpdate { update_id: update_id.clone(), seq: self.next_seq(), lane, body };
        let stored = self.inbox.receive(self, vec![(row, keyed)]).await;
        // Still here means it was not handed over (stored before, or not stored).
        let waiting = self.answers().remove(&update_id).is_none();
        stored.map_err(|unstored| unstored.error)?;
        Ok(Received(waiting.then_some(rx)))
    }

    /// Handles one update: the answer Mattermost waits for.
    async fn handle_update(&self, update: Update) -> Value {
        match update {
            Update::Action(body) => match serde_json::from_value::<ActionPost>(body) {
                Ok(post) => clicks::action(&self.shared, post).await,
                Err(e) => {
                    tracing::warn!(error = %e, "a Mattermost action post that does not read; skipped");
                    Value::Object(Default::default())
                }
            },
            Update::Dialog(body) => match serde_json::from_value::<DialogPost>(body) {
                Ok(post) => clicks::submission(&self.shared, post).await,
                Err(e) => {
                    tracing::warn!(error = %e, "a Mattermost dialog submission that does not read; skipped");
                    Value::Object(Default::default())
                }
            },
            Update::Posted(body) => {
                match serde_json::from_value::<Posted>(body) {
                    Ok(posted) => chat::on_post(&self.shared, posted).await,
                    Err(e) => tracing::warn!(error = %e, "a Mattermost post that does not read; skipped"),
                }
                Value::Object(Default::default())
            }
            Update::Command(body) => match serde_json::from_value::<SlashCommand>(body) {
                Ok(command) => commands::on_command(&self.shared, &command).await,
                Err(e) => {
                    tracing::warn!(error = %e, "a Mattermost slash command that does not read; skipped");
                    Value::Object(Default::default())
                }
            },
        }
    }
}

/// An update with the id it is stored under (how the waiter is found).
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Keyed {
    pub update_id: String,
    pub update: Update,
}

impl InboxHandler for Handler {
    type Update = Keyed;

    /// Chat goes on its channel's lane, in the order it arrived; a click or a
    /// submission in a task of its own (clicks on different cards do not wait for each
    /// other; the engine orders what touches one request).
    fn handle(self: &Arc<Self>, keyed: Keyed, done: Done) {
        let waiter = self.answers().remove(&keyed.update_id);
        let handler = self.clone();
        let chat = keyed.update.is_chat();
        let lane = keyed.update.channel().to_owned();
        let work = async move {
            let channel = keyed.update.channel().to_owned();
            let user = keyed.update.user().to_owned();
            let answer = handler.handle_update(keyed.update).await;
            match waiter {
                Some(waiter) => {
                    let _ = waiter.send(answer);
                }
                // Handled after a restart: nobody waits, so a notice goes as a post.
                None => clicks::notice_later(&handler.shared, &user, &channel, &answer).await,
            }
            drop(done);
        };
        if chat {
            return self.lanes.push(lane, work);
        }
        tokio::spawn(work);
    }
}
