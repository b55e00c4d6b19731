//! The engine's door for people who talk to the agent: every chat message, and every
//! chat command that steers a session, passes [`Shared::gate`] first, whichever
//! platform it came from. The rule itself is pure ([`crate::interaction::admission`]);
//! this adds what needs the store: paired users, pairing codes, the audit entry for a
//! refusal, and telling a newly paired user they may talk.

use super::lanes::Job;
use super::{EngineError, Shared, now_ms};
use crate::config::Settings;
use crate::interaction::admission::{self, Verdict};
use crate::interaction::Actor;
use crate::platform::locale::{self, AccessMsg, Locale};
use crate::store::{AuditEntry, ChatKey, PairError, PairedUser, PairingCode};

/// Why someone may not talk: shown to them by their platform, in their language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stranger {
    /// With `access.pairing`: the code an admin can approve.
    pub pairing: Option<PairingCode>,
}

impl Stranger {
    /// The refusal as the stranger reads it: with their pairing code when there is one.
    pub fn notice(&self, locale: Locale) -> String {
        match &self.pairing {
            Some(p) => locale::access_text(locale, &AccessMsg::PairingCode { code: &p.code, expires_at_ms: p.expires_at_ms }),
            None => locale::access_text(locale, &AccessMsg::NotAllowed),
        }
    }
}

/// The admin's confirmation after `/pair`.
pub fn paired_notice(locale: Locale, user: &PairedUser) -> String {
    let who = format!("{}:{}", user.platform, user.user_id);
    locale::access_text(locale, &AccessMsg::Paired { name: &user.user_name, who: &who })
}

/// Why `/pair CODE` changed nothing.
#[derive(Debug, thiserror::Error)]
pub enum PairRefusal {
    #[error("/pair only works in a chat listed in access.admin_chats")]
    NotAdminChat,
    #[error(transparent)]
    Code(#[from] PairError),
    #[error("the bridge is shutting down")]
    Stopped,
}

impl PairRefusal {
    /// As the admin reads it; `None` for an internal failure (the platform's generic
    /// "something went wrong" fits better, and the error is logged).
    pub fn notice(&self, locale: Locale) -> Option<String> {
        let msg = match self {
            PairRefusal::NotAdminChat => AccessMsg::PairNotAdminChat,
            PairRefusal::Code(PairError::Unknown(code)) if code.is_empty() => AccessMsg::PairUsage,
            PairRefusal::Code(PairError::Unknown(code)) => AccessMsg::PairUnknown { code },
            PairRefusal::Code(PairError::Expired(code)) => AccessMsg::PairExpired { code },
            PairRefusal::Code(PairError::Store(e)) => {
                tracing::error!(error = %e, "pairing failed in the store");
                return None;
            }
            PairRefusal::Stopped => return None,
        };
        Some(locale::access_text(locale, &msg))
    }
}

impl Shared {
    /// Whether `actor` may talk in `chat`. A stranger's attempt is audited (what, who,
    /// where) and, with pairing on, gets a code (the same one while it is valid).
    /// `attempted` is `message` or `command`; `text` what they wrote; `locale` the
    /// language the platform answers them in (kept for the "you are paired" notice).
    pub(super) async fn gate(&self, chat: &ChatKey, actor: &Actor, attempted: &str, text: &str, locale: Locale) -> Result<(), EngineError> {
        if self.allowlist.admits(&chat.platform, &chat.chat_id, actor) {
            return Ok(());
        }
        let paired = self.store.is_paired(actor).await?;
        let Verdict::Stranger { offer_pairing } = self.allowlist.verdict(&chat.platform, &chat.chat_id, actor, paired) else {
            return Ok(());
        };
        let now = now_ms();
        tracing::info!(platform = %chat.platform, chat = %chat.chat_id, user = %actor.user_id, attempted, "refused: not allowed to talk to the agent");
        self.metrics.refused_because(crate::metrics::REASON_STRANGER);
        let session = self.store.session_for_chat(chat).await?;
        let entry = AuditEntry::for_refused_talk(actor, chat, attempted, text, session.as_deref(), now);
        if let Err(e) = self.store.append_audit(&entry).await {
            tracing::error!(error = %e, "cannot audit a refused attempt to talk");
        }
        let pairing = if offer_pairing {
            let code = self.store.pairing_code(actor, chat, locale.code(), now, self.pairing_ttl_ms, fresh_code).await?;
            Some(code)
        } else {
            None
        };
        Err(EngineError::NotAdmitted(Stranger { pairing }))
    }

    /// `/pair CODE` sent by `actor` in `chat`: approved only in an admin chat. The
    /// paired user is told at once, in the chat where they asked.
    pub(super) async fn pair_in_chat(&self, chat: &ChatKey, actor: &Actor, code: &str) -> Result<PairedUser, PairRefusal> {
        let admin = self.admin_chats.iter().any(|(p, id)| *p == chat.platform && *id == chat.chat_id);
        if !admin {
            tracing::info!(platform = %chat.platform, chat = %chat.chat_id, user = %actor.user_id, "refused /pair outside the admin chats");
            self.metrics.refused_because(crate::metrics::REASON_NOT_ADMIN_CHAT);
            let entry = AuditEntry::for_refused_talk(actor, chat, "pair", code, None, now_ms());
            if let Err(e) = self.store.append_audit(&entry).await {
                tracing::error!(error = %e, "cannot audit a refused /pair");
            }
            return Err(PairRefusal::NotAdminChat);
        }
        let by = format!("{}:{}", actor.platform, actor.user_id);
        let user = crate::pairing::approve(&self.store, code, &by, now_ms(), true).await?;
        tracing::info!(platform = %user.platform, user = %user.user_id, by = %by, "paired");
        self.tell_paired(&user);
        Ok(user)
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
        let locale = Locale::from_code(&user.locale).unwrap_or_default();
        self.lanes.push(&user.chat, Job::Text(locale::access_text(locale, &AccessMsg::YouArePaired)));
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

/// Logs, at start-up, each enabled chat platform where nobody could talk: an empty
/// allowlist and pairing off refuses everyone there, which is safe but surprising.
pub(super) fn warn_if_closed(settings: &Settings) {
    if settings.access.pairing {
        return;
    }
    let allowlist = settings.allowlist();
    for (platform, enabled) in [("telegram", settings.telegram.enabled), ("discord", settings.discord.enabled)] {
        if enabled && allowlist.is_closed_on(platform) {
            tracing::warn!(
                platform,
                "{platform} is enabled but nobody may talk to the agent there: access.users, access.chats, access.roles \
                 and the approvers name nobody on {platform}, and access.pairing is off; every message will be refused"
            );
        }
    }
}
