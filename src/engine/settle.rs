//! Settling: the decision made durable with its audit row and outbox command in one
//! conditional write, then delivered; and what the backend says about delivery.

use super::{DELIVERY_GRACE_MS, Decided, EngineError, LOG_TARGET, Shard, now_ms};

use crate::interaction::{Delivery, Interaction};
use crate::protocol::{Command, Reply};
use crate::store::{AuditEntry, Settled};

impl Shard {
    /// Persists a settled interaction with its command and audit entry, then delivers
    /// and re-renders. False when it was already settled (nothing changed).
    ///
    /// With a command, the re-render waits for the backend's proof of delivery (or
    /// [`DELIVERY_GRACE_MS`], after which it shows "saved, not yet delivered").
    #[tracing::instrument(name = "interaction", skip_all, fields(approval_key = %interaction.approval_key(), session_id = %interaction.session_id))]
    pub(super) async fn settle(&mut self, interaction: &Interaction, command: Option<&Command>, audit: &AuditEntry) -> Result<bool, EngineError> {
        self.settle_as(interaction, command, audit, Decided::Otherwise).await
    }

    /// [`Shard::settle`], saying how it was decided: a person's decision settles only
    /// over the stored copy it was made on, with the rule it remembers.
    pub(super) async fn settle_as(
        &mut self,
        interaction: &Interaction,
        command: Option<&Command>,
        audit: &AuditEntry,
        decided: Decided<'_>,
    ) -> Result<bool, EngineError> {
        // Settled now, or stale if the settle finds nothing: either way the copy is no
        // longer what the store holds.
        self.copies.forget(&interaction.id);
        let mut interaction = interaction.clone();
        if command.is_some() {
            interaction.delivery = Delivery::Queued;
        }
        let settled = match decided {
            Decided::ByPerson { rule } => self.store.settle_decision(&interaction, command, audit, rule).await?,
            Decided::Otherwise => self.store.settle(&interaction, command, audit).await?,
        };
        let Settled::Won { queued } = settled else { return Ok(false) };
        // As the store holds it now (a settle bumps the revision): the revision its
        // messages record as shown, and the delivery proof's copy.
        interaction.revision.0 += 1;
        self.deadlines.remove(&interaction.id);
        self.escalations.remove(&interaction.id);
        self.routes.remove(&interaction.id);
        self.metrics.settled(&interaction);
        self.connectors.settled(&interaction);
        if command.is_some() {
            match queued {
                Some(queued) => self.connectors.deliver_queued(queued),
                None => self.connectors.deliver(&interaction.session_id),
            }
            self.undelivered.insert(interaction.id.clone(), (now_ms() + DELIVERY_GRACE_MS, interaction));
        } else {
            self.refresh(&interaction).await;
        }
        Ok(true)
    }

    /// Shows as "not yet delivered" what waited longer than the grace for its proof,
    /// as the store holds it: when another replica holds the session, the proof
    /// reached that replica, which saved the delivery and edited the cards, and this
    /// replica's copy is stale. What changed since is left to the replica that changed
    /// it; what is still queued is rendered from the store when each lane's turn comes.
    pub(super) async fn show_undelivered(&mut self, now: i64) {
        let due: Vec<String> = self.undelivered.iter().filter(|(_, (at, _))| now >= *at).map(|(id, _)| id.clone()).collect();
        for id in due {
            let Some((_, copy)) = self.undelivered.remove(&id) else { continue };
            match self.store.interaction(&id).await {
                Ok(Some(stored)) if stored.delivery == Delivery::Queued => {}
                Ok(_) => continue,
                // Each lane reads it again before it renders.
                Err(e) => {
                    tracing::warn!(target: LOG_TARGET, error = %e, approval_key = %copy.approval_key(), "cannot read the delivery state; rendering what the store has when each lane gets to it")
                }
            }
            tracing::info!(target: LOG_TARGET, approval_key = %copy.approval_key(), session_id = %copy.session_id, "decision saved; the backend has not confirmed it yet");
            self.rerender(&copy).await;
        }
    }

    /// The backend proved it has the reply (`Delivered`), timed the request out before
    /// it did (`TooLate`) or stopped waiting for it (`NotWaiting`): store that and
    /// re-render.
    #[tracing::instrument(name = "interaction", skip(self, delivery))]
    pub(super) async fn delivery_changed(&mut self, session_id: &str, approval_key: &str, delivery: Delivery) -> Result<(), EngineError> {
        // The copy this shard settled, when it is still waiting for the proof: it is
        // what the store holds (a settled request changes only its delivery), so the
        // proof costs no read. Otherwise (settled on another replica, or shown as
        // undelivered already) the store's copy.
        let settled_here = self.undelivered.values().find(|(_, i)| i.session_id == session_id && i.approval_key() == approval_key).map(|(_, i)| i.clone());
        let stored = match settled_here {
            Some(interaction) => Some(interaction),
            None => self.store.interaction_by_key(session_id, approval_key).await?,
        };
        let Some(mut interaction) = stored else { return Ok(()) };
        if interaction.delivery != Delivery::Queued {
            return Ok(());
        }
        interaction.delivery = delivery;
        self.store.save_delivery(&interaction).await?;
        // As the store holds it now: saving bumps the revision.
        interaction.revision.0 += 1;
        self.undelivered.remove(&interaction.id);
        tracing::info!(target: LOG_TARGET, %approval_key, %session_id, ?delivery, "delivery settled");
        self.refresh(&interaction).await;
        Ok(())
    }

    /// The `approval` command carrying `reply`, when the session's connector takes
    /// commands (the HTTP API's agents read the reply themselves).
    pub(super) fn command_for(&self, interaction: &Interaction, reply: Reply) -> Option<Command> {
        self.connectors.takes_commands(&interaction.session_id).then(|| approval_command(interaction, reply))
    }
}

pub(super) fn approval_command(interaction: &Interaction, reply: Reply) -> Command {
    Command::Approval { session_id: interaction.session_id.clone(), approval_key: interaction.approval_key().to_owned(), reply }
}
