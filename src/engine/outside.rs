//! Interactions settled outside a running bridge (`hitl-bridge cancel`): the CLI
//! settled them in the store and left a notice; at each rescan one replica claims the
//! notices and does what the engine does after its own settle, minus the writes:
//! wake the connector (a queued reply is delivered by the session's lease holder, a
//! pushed request's waiters and callback see the new status) and update every message
//! that shows the interaction, and count it in `/metrics` (the one replica that
//! claims the notice counts it, as the one that settles does for its own). Nothing
//! here changes an interaction.

use super::{EngineError, Shared};

impl Shared {
    pub(super) async fn show_outside_settles(&self) -> Result<(), EngineError> {
        for id in self.store.claim_outside_settles().await? {
            // Pruned since: nothing left to show.
            let Some(interaction) = self.store.interaction(&id).await? else { continue };
            tracing::info!(approval_key = %interaction.approval_key(), session_id = %interaction.session_id, status = interaction.status.name(), "settled outside the bridge; updating its messages");
            self.metrics.settled(&interaction);
            self.connectors.settled(&interaction);
            self.connectors.deliver(&interaction.session_id);
            self.refresh(&interaction).await;
        }
        Ok(())
    }
}
