//! Where every refused attempt ends up, whoever refused it. Two doors:
//!
//! - [`Shared::record_refusal`]: an attempt on an interaction (a click, a typed answer)
//!   that the core refused. The engine calls it when applying an action; a platform's
//!   quick check (refusing a stranger before opening a form for them) reaches it
//!   through [`super::EngineHandle::refused`] without waiting. Every attempt is
//!   counted in `hitl_bridge_refusals_total`; those [`Refusal::is_audited`] names are
//!   audited here and nowhere else, so each is audited exactly once.
//! - [`Shared::refuse_at_door`]: someone refused before any interaction (a stranger
//!   talking, a non-admin's `/pair`). Every attempt is counted; the audit entry and the
//!   answer come once per refusal window per (platform, chat, person), the entry's
//!   `attempts` counted up in the store by the attempts that follow
//!   ([`crate::store::Store::count_refused_attempt`]), so a flood costs one message
//!   and one row per window.

use super::{Shared, now_ms};
use crate::interaction::{Actor, Attempt, Interaction, Refusal};
use crate::store::{AuditEntry, ChatKey, StrangerWindow};

/// What someone refused at the door attempted.
#[derive(Debug, Clone, Copy)]
pub(super) enum AtDoor<'a> {
    /// A stranger's `message` or `command` (`attempted`), and what they wrote.
    Talk { attempted: &'static str, text: &'a str },
    /// `/pair CODE` from someone not in `access.admins`.
    Pair { code: &'a str },
}

/// The audit reason of a `/pair` from someone not in `access.admins`.
pub(super) const NOT_ADMIN: &str = "not an admin (access.admins)";

impl AtDoor<'_> {
    fn metric(self) -> &'static str {
        match self {
            AtDoor::Talk { .. } => crate::metrics::REASON_STRANGER,
            AtDoor::Pair { .. } => crate::metrics::REASON_NOT_ADMIN,
        }
    }

    fn attempted(self) -> &'static str {
        match self {
            AtDoor::Talk { attempted, .. } => attempted,
            AtDoor::Pair { .. } => "pair",
        }
    }
}

impl Shared {
    /// Counts `refusal` of `actor`'s `attempt` on `interaction`, and audits it when it
    /// is about the person. A failed audit write is logged with who and what.
    pub(super) async fn record_refusal(&self, interaction: &Interaction, actor: &Actor, attempt: &Attempt, refusal: &Refusal) {
        self.metrics.refused(refusal);
        tracing::info!(interaction = %interaction.id, user = %actor.user_id, %refusal, "action refused");
        if !refusal.is_audited() {
            return;
        }
        let entry = AuditEntry::for_refused(interaction, actor, attempt, &refusal.to_string(), now_ms());
        if let Err(e) = self.store.append_audit(&entry).await {
            tracing::error!(error = %e, interaction = %interaction.id, platform = %actor.platform, user = %actor.user_id, %refusal, "cannot audit a refused attempt");
        }
    }

    /// Records one attempt by `actor` refused at the door of `chat`; true when they
    /// should be answered (the first attempt of a refusal window). A store failure is
    /// logged and answered: better one message too many than a silent refusal.
    pub(super) async fn refuse_at_door(&self, chat: &ChatKey, actor: &Actor, door: AtDoor<'_>) -> bool {
        self.metrics.refused_because(door.metric());
        tracing::info!(platform = %chat.platform, chat = %chat.chat_id, user = %actor.user_id, attempted = door.attempted(), "refused at the door");
        let now = now_ms();
        let window = self.refusal_window_ms;
        match self.store.count_refused_attempt(actor, &chat.chat_id, now, window).await {
            Ok(true) => return false,
            Ok(false) => {}
            Err(e) => tracing::error!(error = %e, user = %actor.user_id, "cannot count a refused attempt on its window"),
        }
        let entry = match door {
            AtDoor::Talk { attempted, text } => {
                let session = self.store.session_for_chat(chat).await.unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "cannot read the chat's session for a refusal's audit entry");
                    None
                });
                AuditEntry::for_refused_talk(actor, chat, attempted, text, session.as_deref(), now)
            }
            AtDoor::Pair { code } => AuditEntry::for_refused_pair(actor, chat, code, NOT_ADMIN, now),
        };
        match self.store.open_refusal_window(actor, &chat.chat_id, &entry, now, window).await {
            Ok(StrangerWindow::Opened) => true,
            Ok(StrangerWindow::Counted) => false,
            Err(e) => {
                tracing::error!(error = %e, platform = %chat.platform, chat = %chat.chat_id, user = %actor.user_id, attempted = door.attempted(), "cannot audit a refused attempt");
                true
            }
        }
    }
}
