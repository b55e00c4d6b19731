//! Deadlines: a request whose time is up is expired (rejected or left, per
//! `timeouts.on_expiry`), after the grace the backend's own timeout gets.

use super::{EngineError, LOG_TARGET, OnExpiry, Shard, policies};

use crate::store::AuditEntry;

impl Shard {
    /// The grace after interaction `id`'s deadline: none when its backend has no timer.
    pub(super) fn grace_for(&self, id: &str) -> i64 {
        match self.routes.session_of(id) {
            Some(session) if !self.connectors.takes_commands(&session) => 0,
            _ => self.grace_ms,
        }
    }

    /// Expires what is past its deadline, plus the grace period where the backend keeps
    /// its own timer (PROTOCOL.md §6: its `approval_timeout` normally ends the request at
    /// the deadline; the grace covers one that never comes). A request pushed over the
    /// HTTP API has no other timer: it ends at the deadline its card shows.
    pub(super) async fn expire_due(&mut self, now: i64) -> Result<(), EngineError> {
        // The deadline alone first: the grace is never negative, and looking it up
        // (the request's session, then its connector) for every one of thousands of
        // pending requests twice a second was most of an idle bridge's work.
        let due: Vec<String> =
            self.deadlines.iter().filter(|(id, deadline)| now >= **deadline && now >= **deadline + self.grace_for(id)).map(|(id, _)| id.clone()).collect();
        for id in due {
            let Some(deadline) = self.deadlines.remove(&id) else { continue };
            if let Err(e) = self.expire(&id, now).await {
                // Nothing or not all of it was stored: tried again at the next tick
                // (a rescan no longer hands every timer over again every few seconds).
                self.deadlines.entry(id).or_insert(deadline);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Expires `id`, whose deadline (plus grace) has passed, unless it moved or the
    /// request ended meanwhile.
    async fn expire(&mut self, id: &str, now: i64) -> Result<(), EngineError> {
        let Some(mut interaction) = self.store.interaction(id).await? else {
            self.routes.remove(id);
            return Ok(());
        };
        // A policy's fallback replaces `timeouts.on_expiry`.
        let under_fallback = interaction.policy_fallback().is_some();
        let ended = if under_fallback { interaction.apply_fallback(now) } else { interaction.expire(now, false) };
        if !ended {
            if interaction.status.is_pending() {
                // Its deadline moved (read from another replica's write): watch that.
                self.deadlines.insert(id.to_owned(), interaction.deadline_ms);
            } else {
                // Settled elsewhere (another replica): nothing left to route here.
                self.routes.remove(id);
            }
            return Ok(());
        }
        let reply = match (under_fallback, self.on_expiry) {
            (true, _) => interaction.reply.clone(),
            (false, OnExpiry::Reject) => interaction.expiry_reply(),
            (false, OnExpiry::Leave) => None,
        };
        interaction.reply = reply.clone();
        let command = reply.and_then(|reply| self.command_for(&interaction, reply));
        // Logged by the replica whose settle won, once per expiry: another replica
        // may have read it pending too.
        if !self.settle(&interaction, command.as_ref(), &AuditEntry::for_settled(&interaction, now)).await? {
            return Ok(());
        }
        tracing::info!(target: LOG_TARGET, approval_key = %interaction.approval_key(), session_id = %interaction.session_id, fallback = under_fallback, "expired by the bridge");
        if let Some(action) = policies::fallback_action(&interaction) {
            self.metrics.policy_action(action);
        }
        Ok(())
    }
}
