//! Events are stored before they are handled, through the bridge's durable inbox
//! ([`DurableInbox`], under platform `matrix`), each under its event id: the sync
//! stores a batch, then keeps its token ([`super::sync`]), and [`Handler`] handles
//! each new event after; its row is marked handled when that finished. So a crash
//! between the sync and the handling loses nothing, and an event synced again is
//! handled once.
//!
//! Every event goes on its room's lane, in the order the room has them: a reply
//! `reject 2 …` and the 📨 that follows it are handled in that order. (Handing a
//! message to the agent only queues it, so a reaction never waits behind a turn.)

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use super::payload::Update;
use super::{Shared, answers, chat};
use crate::clock::now_ms;
use crate::platform::kit::inbox::{Done, DurableInbox, InboxHandler};
use crate::platform::kit::lanes::Lanes;
use crate::store::{InboxUpdate, StoreError};

/// Handles stored events.
pub struct Handler {
    pub shared: Arc<Shared>,
    pub inbox: DurableInbox,
    /// Keeps the order of events stored in the same millisecond.
    sequence: AtomicI64,
    /// Each room's lane, while it has work.
    lanes: Arc<Lanes<String>>,
}

impl Handler {
    pub fn new(shared: Arc<Shared>, inbox: DurableInbox) -> Self {
        Self { shared, inbox, sequence: AtomicI64::new(0), lanes: Lanes::new("a Matrix event") }
    }

    /// A place in the order events arrived in: milliseconds, then arrival.
    fn next_seq(&self) -> i64 {
        now_ms().saturating_mul(1000) + self.sequence.fetch_add(1, Ordering::Relaxed).rem_euclid(1000)
    }

    /// Stores `updates` in order and hands the new ones over; an error means none was
    /// stored, and the sync's token must not be kept.
    pub async fn receive(self: &Arc<Self>, updates: Vec<Update>) -> Result<(), StoreError> {
        let rows = updates
            .into_iter()
            .map(|update| {
                let body = serde_json::to_string(&update).unwrap_or_default();
                (InboxUpdate { update_id: update.event_id().to_owned(), seq: self.next_seq(), lane: update.room().to_owned(), body }, update)
            })
            .collect();
        self.inbox.receive(self, rows).await.map_err(|unstored| unstored.error)
    }
}

impl InboxHandler for Handler {
    type Update = Update;

    fn handle(self: &Arc<Self>, update: Update, done: Done) {
        let shared = self.shared.clone();
        let lane = update.room().to_owned();
        let work = async move {
            match update {
                Update::Message { .. } => chat::on_message(&shared, update).await,
                Update::Undecryptable { room, event_id, sender, direct } => chat::undecryptable(&shared, &room, &event_id, &sender, direct).await,
                Update::Reaction { room, sender, target, key, .. } => answers::on_reaction(&shared, &room, &sender, &target, &key).await,
                Update::Vote { room, sender, poll, answers, .. } => answers::on_vote(&shared, &room, &sender, &poll, &answers).await,
            }
            drop(done);
        };
        self.lanes.push(lane, work);
    }
}
