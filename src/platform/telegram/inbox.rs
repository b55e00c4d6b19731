//! Updates are confirmed to Telegram once stored, not once handled. The transport
//! stores each batch (polling) or update (webhook) in the store's inbox, confirms it at
//! once (the next `getUpdates`, the webhook's 200), and hands the new ones to the chat
//! lanes: in order within a chat, in parallel across chats. A row is marked handled when
//! its handling finished, however it ended. So nothing a stranger sends, and no slow
//! handler, delays another chat's click, and a crash between the two loses nothing:
//!
//! - at start, a replica frees what it had claimed under its own id (it is handling
//!   nothing yet) and handles every stored update whose claim is free, oldest first,
//!   before it polls again;
//! - every [`SWEEP`] it renews its claims and takes over the updates of a replica that
//!   died: a live replica's renewals are its heartbeat, so a dead one's claims lapse
//!   after [`CLAIM`], a few missed sweeps, and the update reaches the agent within
//!   `CLAIM + SWEEP` (10 s) of the death rather than a minute later.
//!
//! An update the handler panics on is still marked handled (its lane's `Done` is dropped
//! either way), so a poison update is logged once and never retried forever. Handled
//! rows are kept [`KEEP_HANDLED`] so a redelivery is recognised, then pruned.

use std::sync::Arc;
use std::time::Duration;

use teloxide::types::{Update, UpdateKind};

use super::lanes::{Job, Lanes};
use super::{PLATFORM, Telegram};
use crate::clock::now_ms;
use crate::store::{InboxUpdate, ShowClaim, StoreError};

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
/// day, so within that it may deliver one again, and it must still be a no-op.
pub const KEEP_HANDLED: Duration = Duration::from_secs(24 * 3600);

impl Telegram {
    fn inbox_claim(&self) -> ShowClaim {
        ShowClaim { owner: self.replica.clone(), until_ms: now_ms() + CLAIM.as_millis() as i64 }
    }
}

/// The update's inbox row, `None` for kinds the bridge does not handle (confirmed and
/// dropped).
pub fn row(update: &Update) -> Option<InboxUpdate> {
    let chat_id = match &update.kind {
        UpdateKind::Message(message) => message.chat.id.0,
        // A click on an inline message has no chat; it still needs its answer.
        UpdateKind::CallbackQuery(query) => query.message.as_ref().map_or(0, |m| m.chat().id.0),
        UpdateKind::Error(value) => {
            tracing::warn!(update = %value, "an update teloxide cannot read; skipped");
            return None;
        }
        other => {
            tracing::debug!(kind = ?std::mem::discriminant(other), "ignoring an update kind");
            return None;
        }
    };
    let body = serde_json::to_string(update).ok()?;
    let id = i64::from(update.id.0);
    Some(InboxUpdate { update_id: id.to_string(), seq: id, lane: chat_id.to_string(), body })
}

/// Stores `updates` and hands the new ones to their lanes; an error means nothing was
/// stored, and the caller must not confirm them.
pub async fn receive(tg: &Arc<Telegram>, updates: Vec<Update>) -> Result<(), StoreError> {
    let rows: Vec<(InboxUpdate, Update)> = updates.into_iter().filter_map(|u| row(&u).map(|r| (r, u))).collect();
    if rows.is_empty() {
        return Ok(());
    }
    let stored: Vec<InboxUpdate> = rows.iter().map(|(r, _)| r.clone()).collect();
    let new = tg.store.store_updates(PLATFORM, &stored, &tg.inbox_claim(), now_ms()).await?;
    for (row, update) in rows {
        if new.contains(&row.update_id) {
            handle(tg, row.update_id, update);
        } else {
            tracing::debug!(update_id = %row.update_id, "an update delivered again; already stored");
        }
    }
    Ok(())
}

/// Queues one stored update on its chat's lane; its row is marked handled once the lane
/// finished it.
fn handle(tg: &Arc<Telegram>, update_id: String, update: Update) {
    let (done, handled) = tokio::sync::oneshot::channel();
    match update.kind {
        UpdateKind::Message(message) => Lanes::push(tg, message.chat.id.0, Job::Message(Box::new(message), done)),
        UpdateKind::CallbackQuery(query) => {
            let chat_id = query.message.as_ref().map_or(0, |m| m.chat().id.0);
            Lanes::push(tg, chat_id, Job::Click(Box::new(query), done));
        }
        _ => drop(done),
    }
    let tg = tg.clone();
    tokio::spawn(async move {
        let _ = handled.await;
        if let Err(e) = tg.store.finish_update(PLATFORM, &update_id, now_ms()).await {
            tracing::warn!(%update_id, error = %e, "cannot mark an update handled; it is handled again at the next start");
        }
    });
}

/// Handles what a previous run (or a dead replica) stored and never finished, oldest
/// first. Called before polling starts, and by [`sweep`].
pub async fn recover(tg: &Arc<Telegram>) {
    let stranded = match tg.store.claim_stranded_updates(PLATFORM, &tg.inbox_claim(), now_ms()).await {
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
        match serde_json::from_str::<Update>(&row.body) {
            Ok(update) => handle(tg, row.update_id, update),
            Err(e) => {
                tracing::warn!(update_id = %row.update_id, error = %e, "a stored update no longer reads; dropped");
                let _ = tg.store.finish_update(PLATFORM, &row.update_id, now_ms()).await;
            }
        }
    }
}

/// Frees this replica's earlier claims (it is handling nothing yet) and handles what
/// is stranded.
pub async fn start(tg: &Arc<Telegram>) {
    if let Err(e) = tg.store.release_update_claims(PLATFORM, &tg.replica).await {
        tracing::warn!(error = %e, "cannot free this replica's earlier update claims; they lapse in {} s", CLAIM.as_secs());
    }
    recover(tg).await;
}

/// Renews this replica's claims and takes over stranded updates, every [`SWEEP`];
/// prunes what was handled long ago, every [`PRUNE`].
pub async fn sweep(tg: Arc<Telegram>) {
    let mut sweep = tokio::time::interval(SWEEP);
    sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    sweep.tick().await; // the first tick is immediate; start just recovered
    let mut prune = tokio::time::interval(PRUNE);
    loop {
        tokio::select! {
            _ = sweep.tick() => {
                if let Err(e) = tg.store.renew_update_claims(PLATFORM, &tg.inbox_claim()).await {
                    tracing::warn!(error = %e, "cannot renew update claims");
                }
                recover(&tg).await;
            }
            _ = prune.tick() => {
                if let Err(e) = tg.store.prune_handled_updates(PLATFORM, now_ms() - KEEP_HANDLED.as_millis() as i64).await {
                    tracing::warn!(error = %e, "cannot prune handled updates");
                }
            }
        }
    }
}
