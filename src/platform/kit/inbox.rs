//! Updates are confirmed to a platform once stored, not once handled. A platform's
//! transport stores each batch (Telegram's `getUpdates`, a Slack envelope, a webhook
//! post) in its [`PlatformInbox`], confirms it at once (the next `getUpdates`, the
//! webhook's 200, the envelope's ack), and hands the new ones to the platform's
//! [`InboxHandler`] (its chat lanes: in order within a chat, in parallel across chats).
//! A row is marked handled when its handling finished, however it ended. So nothing a
//! stranger sends, and no slow handler, delays another chat's click, and a crash
//! between the two loses nothing:
//!
//! - at start, a replica frees what it had claimed under its own id (it is handling
//!   nothing yet) and handles every stored update whose claim is free, oldest first,
//!   before it receives again;
//! - every [`SWEEP`] it renews its claims and takes over the updates of a replica that
//!   died: a live replica's renewals are its heartbeat, so a dead one's claims lapse
//!   after [`CLAIM`], a few missed sweeps, and the update reaches the agent within
//!   `CLAIM + SWEEP` (10 s) of the death rather than a minute later.
//!
//! An update the handler panics on is still marked handled (its [`Done`] is dropped
//! either way), so a poison update is logged once and never retried forever. Handled
//! rows are kept [`KEEP_HANDLED`] so a redelivery is recognised, then pruned.

use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use tokio::sync::oneshot;

use crate::clock::now_ms;
use crate::store::{InboxUpdate, PlatformInbox, ShowClaim, StoreError};

/// How long a replica's claim on the updates it is handling lasts without renewal:
/// four sweeps, so a live replica slowed down by a sweep or two keeps what it handles,
/// and a dead one's updates are taken over about as soon as its session leases are.
pub const CLAIM: Duration = Duration::from_secs(8);
/// How often claims are renewed and stranded updates looked for: two statements on
/// the few unhandled rows (an index on `handled_at_ms, claimed_until_ms`).
pub const SWEEP: Duration = Duration::from_secs(2);
/// How often handled updates past [`KEEP_HANDLED`] are pruned.
const PRUNE: Duration = Duration::from_secs(600);
/// How long a handled update is remembered: Telegram keeps an unconfirmed update a
/// day (Slack retries for minutes), so within that it may deliver one again, and it
/// must still be a no-op.
pub const KEEP_HANDLED: Duration = Duration::from_secs(24 * 3600);

/// Dropped (or sent) when an update's handling finished: its row is then marked
/// handled.
pub type Done = oneshot::Sender<()>;

/// What a platform does with one stored update.
pub trait InboxHandler: Send + Sync + 'static {
    /// The update as the platform reads it (stored as JSON, read back after a restart).
    type Update: DeserializeOwned + Send + 'static;

    /// Queues `update` on its chat's lane; drops `done` once handled.
    fn handle(self: &Arc<Self>, update: Self::Update, done: Done);
}

/// Updates the inbox could not store, with why.
pub struct Unstored<U> {
    pub error: StoreError,
    pub updates: Vec<U>,
}

/// One platform's inbox as this replica works it.
pub struct DurableInbox {
    inbox: PlatformInbox,
    /// This replica's id, the owner of its claims.
    replica: String,
}

impl DurableInbox {
    pub fn new(inbox: PlatformInbox, replica: String) -> Self {
        Self { inbox, replica }
    }

    fn claim(&self) -> ShowClaim {
        ShowClaim { owner: self.replica.clone(), until_ms: now_ms() + CLAIM.as_millis() as i64 }
    }

    /// Stores `updates` (each with its row) and hands the new ones to `handler`; an
    /// error means nothing was stored, and the caller must not confirm them. The error
    /// hands the updates back, so the platform can tell their senders without keeping
    /// a copy of every batch for the rare failure.
    pub async fn receive<H: InboxHandler>(&self, handler: &Arc<H>, updates: Vec<(InboxUpdate, H::Update)>) -> Result<(), Unstored<H::Update>> {
        if updates.is_empty() {
            return Ok(());
        }
        let rows: Vec<InboxUpdate> = updates.iter().map(|(row, _)| row.clone()).collect();
        let new = match self.inbox.store(&rows, &self.claim(), now_ms()).await {
            Ok(new) => new,
            Err(error) => return Err(Unstored { error, updates: updates.into_iter().map(|(_, update)| update).collect() }),
        };
        for (row, update) in updates {
            if new.contains(&row.update_id) {
                self.handle(handler, row.update_id, update);
            } else {
                tracing::debug!(update_id = %row.update_id, "an update delivered again; already stored");
            }
        }
        Ok(())
    }

    /// Hands one stored update to `handler`; its row is marked handled once the
    /// handler drops its [`Done`].
    fn handle<H: InboxHandler>(&self, handler: &Arc<H>, update_id: String, update: H::Update) {
        let (done, handled) = oneshot::channel();
        handler.handle(update, done);
        let inbox = self.inbox.clone();
        tokio::spawn(async move {
            let _ = handled.await;
            if let Err(e) = inbox.finish(&update_id, now_ms()).await {
                tracing::warn!(%update_id, error = %e, "cannot mark an update handled; it is handled again at the next start");
            }
        });
    }

    /// Handles what a previous run (or a dead replica) stored and never finished,
    /// oldest first. Called at start and by [`DurableInbox::sweep`].
    async fn recover<H: InboxHandler>(&self, handler: &Arc<H>) {
        let stranded = match self.inbox.claim_stranded(&self.claim(), now_ms()).await {
            Ok(stranded) => stranded,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the update inbox; retrying at the next sweep");
                return;
            }
        };
        if !stranded.is_empty() {
            tracing::info!(updates = stranded.len(), "handling updates stored before a restart");
        }
        for row in stranded {
            match serde_json::from_str::<H::Update>(&row.body) {
                Ok(update) => self.handle(handler, row.update_id, update),
                Err(e) => {
                    tracing::warn!(update_id = %row.update_id, error = %e, "a stored update no longer reads; dropped");
                    let _ = self.inbox.finish(&row.update_id, now_ms()).await;
                }
            }
        }
    }

    /// Frees this replica's earlier claims (it is handling nothing yet) and handles
    /// what is stranded. Called before the platform receives anything.
    pub async fn start<H: InboxHandler>(&self, handler: &Arc<H>) {
        if let Err(e) = self.inbox.release(&self.replica).await {
            tracing::warn!(error = %e, "cannot free this replica's earlier update claims; they lapse in {} s", CLAIM.as_secs());
        }
        self.recover(handler).await;
    }

    /// Renews this replica's claims and takes over stranded updates, every [`SWEEP`];
    /// prunes what was handled long ago, every [`PRUNE`]. Runs until dropped.
    pub async fn sweep<H: InboxHandler>(&self, handler: Arc<H>) {
        let mut sweep = tokio::time::interval(SWEEP);
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        sweep.tick().await; // the first tick is immediate; start just recovered
        let mut prune = tokio::time::interval(PRUNE);
        loop {
            tokio::select! {
                _ = sweep.tick() => {
                    if let Err(e) = self.inbox.renew(&self.claim()).await {
                        tracing::warn!(error = %e, "cannot renew update claims");
                    }
                    self.recover(&handler).await;
                }
                _ = prune.tick() => {
                    if let Err(e) = self.inbox.prune(now_ms() - KEEP_HANDLED.as_millis() as i64).await {
                        tracing::warn!(error = %e, "cannot prune handled updates");
                    }
                }
            }
        }
    }
}
