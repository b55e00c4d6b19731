//! The engine's refusals as the people refused read them, in their language: a
//! stranger who may not talk (with their pairing code), a `/pair` or a `/rules revoke`
//! that changed nothing. The engine answers with the typed refusal; every platform
//! words it here, the same way.

use crate::engine::{EngineError, PairRefusal, RevokeRefusal, Stranger};
use crate::platform::locale::{self, AccessMsg, Locale};
use crate::store::{PairError, PairedUser};

/// The refusal as the stranger reads it: with their pairing code when there is one.
pub fn stranger_notice(stranger: &Stranger, locale: Locale) -> String {
    match &stranger.pairing {
        Some(p) => locale::access_text(locale, &AccessMsg::PairingCode { code: &p.code, expires_at_ms: p.expires_at_ms }),
        None => locale::access_text(locale, &AccessMsg::NotAllowed { id: &stranger.id }),
    }
}

/// What the author of a message or command that failed in the engine reads: that it
/// was not saved, when the store is failing (nothing was kept, and the same message
/// later works), else the platform's own `otherwise`. The error is logged here, with
/// `what` saying what failed.
pub fn engine_failure(locale: Locale, e: &EngineError, what: &str, otherwise: &str) -> String {
    if e.is_store_failing() {
        tracing::error!(error = %e, "{what}: not saved, the store is failing");
        locale::text(locale, locale::Msg::StoreFailing).to_owned()
    } else {
        tracing::error!(error = %e, "{what}");
        otherwise.to_owned()
    }
}

/// The admin's confirmation after `/pair`.
pub fn paired_notice(locale: Locale, user: &PairedUser) -> String {
    let who = format!("{}:{}", user.platform, user.user_id);
    locale::access_text(locale, &AccessMsg::Paired { name: &user.user_name, who: &who })
}

/// A command's refusal as the person reads it.
pub trait Refused {
    /// `None` for an internal failure (the platform's generic "something went wrong"
    /// fits better, and the error is logged).
    fn notice(&self, locale: Locale) -> Option<String>;
}

impl Refused for PairRefusal {
    fn notice(&self, locale: Locale) -> Option<String> {
        let msg = match self {
            PairRefusal::NotAdmin { .. } => AccessMsg::PairNotAdmin,
            PairRefusal::NotAdminChat => AccessMsg::PairNotAdminChat,
            PairRefusal::Code(PairError::OwnCode(code)) => AccessMsg::PairOwnCode { code },
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

impl Refused for RevokeRefusal {
    fn notice(&self, locale: Locale) -> Option<String> {
        match self {
            RevokeRefusal::Unknown(id) => Some(locale::rules::unknown_rule(locale, id)),
            RevokeRefusal::NotAllowed => Some(locale::rules::revoke_not_allowed(locale).to_owned()),
            RevokeRefusal::Engine(e) => {
                tracing::error!(error = %e, "cannot revoke a rule");
                None
            }
        }
    }
}

/// A notice's line as a chat shows it: a warning sign before it, but good news
/// (being paired) reads as a message, not as a warning.
pub fn notice_line(notice: &crate::interaction::updates::Notice) -> String {
    let text = crate::texts::notice(notice);
    if let crate::interaction::updates::Notice::YouArePaired { .. } = notice { text } else { format!("⚠️ {text}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineError;

    #[test]
    fn a_refused_revoke_reads_as_the_person_expects() {
        assert_eq!(RevokeRefusal::NotAllowed.notice(Locale::En).as_deref(), Some("Only an approver or the person who set a rule may revoke it."));
        assert_eq!(RevokeRefusal::Unknown("x".into()).notice(Locale::En).as_deref(), Some("No active rule has id x. /rules lists them."));
        assert_eq!(RevokeRefusal::Engine(EngineError::Stopped).notice(Locale::En), None);
    }
}
