//! What a component's `custom_id` means. The id itself is a signed token
//! ([`TokenSigner`](crate::platform::kit::token::TokenSigner)) whose action code is one of
//! these: short, with indexes only, never labels or question text. Parsing is strict;
//! a code that does not parse is treated like a forged token. The spellings below are a
//! table over the kit's grammar ([`crate::platform::kit::codes`]).

use super::render::limits;
use crate::interaction::{RememberScope, UserAction};
use crate::platform::kit::codes::{Decide, Grammar, Limit, NameEnd, vocabulary};

/// One button, select or modal, as its code names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// A button that decides on its own: approve, approve for the session or reject
    /// one action (`ap.0`, `as.0`, `rj.0`), all at once (`apa`, `rja`), submit
    /// (`sub`), approve and remember for the session (`rms`) or always (`rma`).
    Decide(Decide),
    /// Opens the edit modal for an action.
    Edit(usize),
    /// Opens the comment modal for an action.
    Respond(usize),
    /// The select menu of a question.
    Select(usize),
    /// Opens the Other… modal for the questions on a page.
    Other(usize),
    /// Skips every question and submits.
    Skip,
    /// Shows another page of actions or questions.
    Page(usize),
    /// The edit modal's submit.
    EditModal(usize),
    /// The comment modal's submit.
    RespondModal(usize),
    /// The Other… modal's submit, for a page.
    OtherModal(usize),
}

/// Discord's grammar: a name, then its indexes after dots (`ap.0`), in a custom_id of
/// at most 100 characters.
pub const GRAMMAR: Grammar = Grammar { name_end: NameEnd::AtDot, limit: Limit::Chars(limits::CUSTOM_ID) };

vocabulary! {
    Code, GRAMMAR;
    "ap" [i] => { Code::Decide(Decide::Approve(i)) },
    "as" [i] => { Code::Decide(Decide::ApproveForSession(i)) },
    "rj" [i] => { Code::Decide(Decide::Reject(i)) },
    "ed" [i] => { Code::Edit(i) },
    "rs" [i] => { Code::Respond(i) },
    "apa" [] => { Code::Decide(Decide::ApproveAll) },
    "rja" [] => { Code::Decide(Decide::RejectAll) },
    "sub" [] => { Code::Decide(Decide::Submit) },
    "sel" [q] => { Code::Select(q) },
    "oth" [p] => { Code::Other(p) },
    "skp" [] => { Code::Skip },
    "pg" [p] => { Code::Page(p) },
    "med" [i] => { Code::EditModal(i) },
    "mrs" [i] => { Code::RespondModal(i) },
    "mot" [p] => { Code::OtherModal(p) },
    "rms" [] => { Code::Decide(Decide::Remember(RememberScope::Session)) },
    "rma" [] => { Code::Decide(Decide::Remember(RememberScope::Always)) },
}

impl Code {
    /// The engine action a button stands for on its own; `None` for the controls that
    /// open a modal, turn a page, carry values (selects, modal submits) or need the
    /// stored request first (Skip).
    pub fn direct_action(self) -> Option<UserAction> {
        match self {
            Code::Decide(decide) => Some(decide.action()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::kit::codes::assert_vocabulary;
    use crate::protocol::Decision;

    #[test]
    fn every_code_round_trips_and_fits() {
        assert_vocabulary(GRAMMAR, &Code::examples(), Code::encode, Code::parse);
    }

    #[test]
    fn remember_codes_become_remember_actions() {
        assert_eq!(Code::parse("rms").and_then(Code::direct_action), Some(UserAction::Remember { scope: RememberScope::Session }));
        assert_eq!(Code::parse("rma").and_then(Code::direct_action), Some(UserAction::Remember { scope: RememberScope::Always }));
        assert_eq!(Code::parse("as.0").and_then(Code::direct_action), Some(UserAction::Decide { action: 0, decision: Decision::ApproveForSession }));
        assert_eq!(Code::Edit(0).direct_action(), None, "edit opens a modal first");
    }

    #[test]
    fn junk_does_not_parse() {
        for junk in [
            "",
            "ap",
            "ap.",
            "ap.x",
            "ap.-1",
            "ap.+1",
            "ap. 1",
            "ap.12345",
            "sub.1",
            "zz.1",
            "pg.99999999999999999999999",
            "rms.0",
            "rma.",
            "rm",
            "rmx",
            "RMS",
            "rms ",
        ] {
            assert_eq!(Code::parse(junk), None, "{junk}");
        }
    }
}
