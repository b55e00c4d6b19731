//! Envelopes are acknowledged to Slack once stored, not once handled, as Telegram's
//! updates are: [`Handler::receive`] stores the envelope in the store's durable inbox
//! under platform `slack`, and only then may the socket acknowledge it; the handling
//! follows, and the row is marked handled when it finished. So a crash between
//! receipt and handling loses nothing (the row is handled at the next start, or by
//! another replica once this one's claim lapses), and an envelope Slack delivers
//! again is stored once and handled once ([`Envelope::dedup_key`]).
//!
//! A view submission is the exception that proves the rule: Slack waits for its
//! answer (`response_action: errors`) in the acknowledgement itself, so it is stored,
//! handled, and then acknowledged with the answer, well within Slack's 3 s.
//!
//! [`Inbox`] is the one place this platform touches the store: it is the narrow port
//! (store / finish / claim stranded / renew / release / prune) the generic inbox
//! worker will offer, so switching to it changes this file only.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde_json::Value;

use super::payload::{Envelope, Interactive};
use super::{PLATFORM, Shared, clicks};
use crate::clock::now_ms;
use crate::store::{InboxUpdate, ShowClaim, Store, StoreError};

/// How long a replica's claim on the envelopes it handles lasts without renewal.
const CLAIM: Duration = Duration::from_secs(8);
/// How often claims are renewed and stranded envelopes looked for.
const SWEEP: Duration = Duration::from_secs(2);
/// How often handled envelopes past [`KEEP_HANDLED`] are pruned.
const PRUNE: Duration = Duration::from_secs(600);
/// How long a handled envelope is remembered, so a redelivery is still a no-op: Slack
/// retries an event for about an hour at most.
const KEEP_HANDLED: Duration = Duration::from_secs(24 * 3600);

/// This platform's durable inbox in the store.
pub struct Inbox {
    store: Store,
    /// This replica's id, the owner of its claims.
    replica: String,
    /// Keeps the order of envelopes stored in the same millisecond.
    sequence: AtomicI64,
}

impl Inbox {
    pub fn new(store: Store, replica: String) -> Self {
        Self { store, replica, sequence: AtomicI64::new(0) }
    }

    fn claim(&self) -> ShowClaim {
        ShowClaim { owner: self.replica.clone(), until_ms: now_ms() + CLAIM.as_millis() as i64 }
    }

    /// Stores `row`, claimed by this replica: whether it is new.
    async fn store(&self, row: InboxUpdate) -> Result<bool, StoreError> {
        let id = row.update_id.clone();
        let new = self.store.store_updates(PLATFORM, &[row], &self.claim(), now_ms()).await?;
        Ok(new.contains(&id))
    }

    async fn finish(&self, id: &str) {
        if let Err(e) = self.store.finish_update(PLATFORM, id, now_ms()).await {
            tracing::warn!(envelope = %id, error = %e, "cannot mark an envelope handled; it is handled again at the next start");
        }
    }

    async fn claim_stranded(&self) -> Result<Vec<InboxUpdate>, StoreError> {
        self.store.claim_stranded_updates(PLATFORM, &self.claim(), now_ms()).await
    }

    async fn renew(&self) -> Result<(), StoreError> {
        self.store.renew_update_claims(PLATFORM, &self.claim()).await
    }

    async fn release(&self) -> Result<(), StoreError> {
        self.store.release_update_claims(PLATFORM, &self.replica).await
    }

    async fn prune(&self) -> Result<u64, StoreError> {
        self.store.prune_handled_updates(PLATFORM, now_ms() - KEEP_HANDLED.as_millis() as i64).await
    }

    /// A place in the order envelopes arrived in: milliseconds, then arrival.
    fn next_seq(&self) -> i64 {
        now_ms().saturating_mul(1000) + self.sequence.fetch_add(1, Ordering::Relaxed).rem_euclid(1000)
    }
}

/// Receives envelopes into the inbox and handles them.
pub struct Handler {
    pub shared: Arc<Shared>,
    pub inbox: Inbox,
}

impl Handler {
    /// Stores `envelope` (whose text is `raw`); `Ok(payload)` means it may be
    /// acknowledged now, with `payload` when Slack waits for one. An error means it
    /// was not stored, and must not be acknowledged: Slack sends it again.
    pub async fn receive(self: &Arc<Self>, envelope: Envelope, raw: &str) -> Result<Option<Value>, StoreError> {
        let Some(key) = envelope.dedup_key() else { return Ok(None) };
        let lane = envelope.payload["container"]["channel_id"].as_str().unwrap_or("0").to_owned();
        let row = InboxUpdate { update_id: key.clone(), seq: self.inbox.next_seq(), lane, body: raw.to_owned() };
        if !self.inbox.store(row).await? {
            tracing::debug!(envelope = %key, retry = ?envelope.retry_attempt, "an envelope delivered again; already stored");
            return Ok(None);
        }
        if envelope.accepts_response_payload && envelope.payload["type"] == "view_submission" {
            let answer = self.handle(&envelope).await;
            self.inbox.finish(&key).await;
            return Ok(answer);
        }
        let handler = self.clone();
        tokio::spawn(async move {
            handler.handle(&envelope).await;
            handler.inbox.finish(&key).await;
        });
        Ok(None)
    }

    /// Handles one stored envelope: what Slack should be answered, if anything.
    async fn handle(&self, envelope: &Envelope) -> Option<Value> {
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
            other => {
                // Chat (events, the slash command) comes with the next slice.
                tracing::debug!(kind = %other, "ignoring an envelope kind this version does not handle");
                None
            }
        }
    }

    /// Frees this replica's earlier claims (it is handling nothing yet) and handles
    /// what is stranded.
    pub async fn start(self: &Arc<Self>) {
        if let Err(e) = self.inbox.release().await {
            tracing::warn!(error = %e, "cannot free this replica's earlier envelope claims; they lapse in {} s", CLAIM.as_secs());
        }
        self.recover().await;
    }

    /// Handles what a previous run (or a dead replica) stored and never finished,
    /// oldest first, in a task of its own: at start the engine runs only once every
    /// platform has started. A view submission handled this late has nobody to answer.
    async fn recover(self: &Arc<Self>) {
        let stranded = match self.inbox.claim_stranded().await {
            Ok(stranded) => stranded,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the envelope inbox; retrying at the next sweep");
                return;
            }
        };
        if stranded.is_empty() {
            return;
        }
        tracing::info!(envelopes = stranded.len(), "handling Slack envelopes stored before a restart");
        let handler = self.clone();
        tokio::spawn(async move {
            for row in stranded {
                match serde_json::from_str::<Envelope>(&row.body) {
                    Ok(envelope) => {
                        handler.handle(&envelope).await;
                    }
                    Err(e) => tracing::warn!(envelope = %row.update_id, error = %e, "a stored envelope no longer reads; dropped"),
                }
                handler.inbox.finish(&row.update_id).await;
            }
        });
    }
}

/// Renews this replica's claims and takes over stranded envelopes, every [`SWEEP`];
/// prunes what was handled long ago, every [`PRUNE`].
pub async fn sweep(handler: Arc<Handler>) {
    let mut sweep = tokio::time::interval(SWEEP);
    sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    sweep.tick().await; // the first tick is immediate; start just recovered
    let mut prune = tokio::time::interval(PRUNE);
    loop {
        tokio::select! {
            _ = sweep.tick() => {
                if let Err(e) = handler.inbox.renew().await {
                    tracing::warn!(error = %e, "cannot renew envelope claims");
                }
                handler.recover().await;
            }
            _ = prune.tick() => {
                if let Err(e) = handler.inbox.prune().await {
                    tracing::warn!(error = %e, "cannot prune handled envelopes");
                }
            }
        }
    }
}
