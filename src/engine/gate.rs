//! The engine's door for people who talk to the agent: every chat message, and every
//! chat command that steers a session, passes [`Shared::gate`] first, whichever
//! platform it came from; `/pair CODE` passes [`Shared::pair_in_chat`]. The rules
//! themselves are pure ([`crate::interaction::admission`]); this adds what needs the
//! store: paired users, pairing codes, and telling a newly paired user they may talk.
//! Refusals are counted and audited by [`super::refusals`].

use super::lanes::Job;
use super::refusals::AtDoor;
use super::{EngineError, Shared, now_ms};
use crate::interaction::Actor;
use crate::interaction::admission::{self, PairDenied, Verdict};
use crate::interaction::updates::Notice;
use crate::store::{AuditEntry, ChatKey, PairError, PairedUser, PairingCode};

/// Why someone may not talk: shown to them by their platform, in their language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stranger {
    /// Who they are, as `platform:user_id` (what `access.users` takes).
    pub id: String,
    /// With `access.pairing`: the code an admin can approve.
    pub pairing: Option<PairingCode>,
    /// Already answered in this chat within `access.refusal_window_secs`: the
    /// platform sends nothing (an interaction that must be answered, such as a Discord
    /// slash command, still shows the refusal to them alone).
    pub silent: bool,
}

/// Why `/pair CODE` changed nothing.
#[derive(Debug, thiserror::Error)]
pub enum PairRefusal {
    /// Not in `access.admins`. `silent`: already answered in this chat within the
    /// refusal window (as for a stranger's messages).
    #[error("only the people in access.admins may approve pairing codes")]
    NotAdmin { silent: bool },
    #[error("/pair only works in a chat listed in access.admin_chats or in a direct chat with the bot")]
    NotAdminChat,
    #[error(transparent)]
    Code(#[from] PairError),
    #[error("the bridge is shutting down")]
    Stopped,
}

impl Shared {
    /// Whether `actor` may talk in `chat`. A stranger's attempt is counted, and
    /// audited and answered once per refusal window ([`Shared::refuse_at_door`]); with
    /// pairing on the answer carries a code (the same one while it is valid).
    /// `attempted` is `message` or `command`; `text` what they wrote; `locale` the
    /// code of the language the platform answers them in (kept for the "you are
    /// paired" notice).
    pub(super) async fn gate(&self, chat: &ChatKey, actor: &Actor, attempted: &'static str, text: &str, locale: &str) -> Result<(), EngineError> {
        if self.allowlist.admits(&chat.platform, &chat.chat_id, actor) {
            return Ok(());
        }
        let paired = self.store.is_paired(actor).await?;
        let Verdict::Stranger { offer_pairing } = self.allowlist.verdict(&chat.platform, &chat.chat_id, actor, paired) else {
            return Ok(());
        };
        let answer = self.refuse_at_door(chat, actor, AtDoor::Talk { attempted, text }).await;
        let pairing =
            if offer_pairing && answer { Some(self.store.pairing_code(actor, chat, locale, now_ms(), self.pairing_ttl_ms, fresh_code).await?) } else { None };
        Err(EngineError::NotAdmitted(Stranger { id: format!("{}:{}", actor.platform, actor.user_id), pairing, silent: !answer }))
    }

    /// `/pair CODE` sent by `actor` in `chat` (`direct`: their direct chat with the
    /// bot): approved only for someone in `access.admins`, in an admin chat or their
    /// direct chat, and never for their own code. The paired user is told at once, in
    /// the chat where they asked. Every refusal is counted and audited; a non-admin's
    /// like a stranger's message, once per refusal window.
    pub(super) async fn pair_in_chat(&self, chat: &ChatKey, actor: &Actor, code: &str, direct: bool) -> Result<PairedUser, PairRefusal> {
        match self.pairing_admins.may_pair(actor, &chat.platform, &chat.chat_id, direct) {
            Ok(()) => {}
            Err(PairDenied::NotAdmin) => {
                let answer = self.refuse_at_door(chat, actor, AtDoor::Pair { code }).await;
                return Err(PairRefusal::NotAdmin { silent: !answer });
            }
            Err(PairDenied::NotAdminChat) => {
                self.refuse_pair(chat, actor, code, crate::metrics::REASON_NOT_ADMIN_CHAT, "/pair outside the admin chats and the admin's direct chat").await;
                return Err(PairRefusal::NotAdminChat);
            }
        }
        let user = match self.store.approve_typed_pairing(code, Some(actor), now_ms(), true).await {
            Ok(user) => user,
            Err(PairError::OwnCode(own)) => {
                self.refuse_pair(chat, actor, code, crate::metrics::REASON_OWN_PAIRING_CODE, "an admin's own pairing code").await;
                return Err(PairRefusal::Code(PairError::OwnCode(own)));
            }
            Err(e) => return Err(e.into()),
        };
        tracing::info!(platform = %user.platform, user = %user.user_id, by = %user.paired_by, "paired");
        self.tell_paired(&user);
        Ok(user)
    }

    /// An admin's refused `/pair`: counted and audited, each one (admins are trusted
    /// not to flood).
    async fn refuse_pair(&self, chat: &ChatKey, actor: &Actor, code: &str, metric: &'static str, why: &str) {
        tracing::info!(platform = %chat.platform, chat = %chat.chat_id, user = %actor.user_id, why, "refused /pair");
        self.metrics.refused_because(metric);
        let entry = AuditEntry::for_refused_pair(actor, chat, code, why, now_ms());
        if let Err(e) = self.store.append_audit(&entry).await {
            tracing::error!(error = %e, platform = %chat.platform, user = %actor.user_id, why, "cannot audit a refused /pair");
        }
    }

    /// Tells users paired elsewhere (`hitl-bridge pair` from a shell, another replica's
    /// admin chat) that they may talk; each is claimed once across replicas.
    pub(super) async fn notify_pairings(&self) -> Result<(), EngineError> {
        for user in self.store.claim_unnotified_pairings(now_ms()).await? {
            self.tell_paired(&user);
        }
        Ok(())
    }

    fn tell_paired(&self, user: &PairedUser) {
        self.lanes.push(&user.chat, Job::Notice(Notice::YouArePaired { locale: user.locale.clone() }));
    }
}

/// A fresh pairing code from the OS's randomness (uuid v4 draws from it).
fn fresh_code() -> String {
    loop {
        if let Some(code) = admission::code_from_bytes(uuid::Uuid::new_v4().as_bytes()) {
            return code;
        }
    }
}
