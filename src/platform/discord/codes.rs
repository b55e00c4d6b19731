//! What a component's `custom_id` means. The id itself is a signed token
//! ([`TokenSigner`](crate::platform::kit::token::TokenSigner)) whose action code is one of
//! these: short, with indexes only, never labels or question text. Parsing is strict;
//! a code that does not parse is treated like a forged token. The spellings below are a
//! table over the kit's grammar ([`crate::platform::kit::codes`]).

use super::render::limits;
use crate::interaction::{RememberScope, UserAction};
use crate::platform::kit::codes::{Grammar, Limit, NameEnd, vocabulary};
use crate::protocol::{Decision, DecisionType};

/// One button, select or modal, as its code names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    Approve(usize),
    /// Approve, and let the backend approve the same action for the rest of the session.
    ApproveForSession(usize),
    Reject(usize),
    /// Opens the edit modal for an action.
    Edit(usize),
    /// Opens the comment modal for an action.
    Respond(usize),
    ApproveAll,
    RejectAll,
    Submit,
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
    /// Approve the one action and remember it, where the policy offers it: for this
    /// session (`rms`) or always (`rma`).
    Remember(RememberScope),
}

/// Discord's grammar: a name, then its indexes after dots (`ap.0`), in a custom_id of
/// at most 100 characters.
pub const GRAMMAR: Grammar = Grammar { name_end: NameEnd::AtDot, limit: Limit::Chars(limits::CUSTOM_ID) };

vocabulary! {
    Code, GRAMMAR;
    "ap" [i] => { Code::Approve(i) },
    "as" [i] => { Code::ApproveForSession(i) },
    "rj" [i] => { Code::Reject(i) },
    "ed" [i] => { Code::Edit(i) },
    "rs" [i] => { Code::Respond(i) },
    "apa" [] => { Code::ApproveAll },
    "rja" [] => { Code::RejectAll },
    "sub" [] => { Code::Submit },
    "sel" [q] => { Code::Select(q) },
    "oth" [p] => { Code::Other(p) },
    "skp" [] => { Code::Skip },
    "pg" [p] => { Code::Page(p) },
    "med" [i] => { Code::EditModal(i) },
    "mrs" [i] => { Code::RespondModal(i) },
    "mot" [p] => { Code::OtherModal(p) },
    "rms" [] => { Code::Remember(RememberScope::Session) },
    "rma" [] => { Code::Remember(RememberScope::Always) },
}

impl Code {
    /// The engine action a button stands for on its own; `None` for the controls that
    /// open a modal, turn a page, carry values (selects, modal submits) or need the
    /// stored request first (Skip).
    pub fn direct_action(self) -> Option<UserAction> {
        Some(match self {
            Code::Approve(action) => UserAction::Decide { action, decision: Decision::Approve },
            Code::ApproveForSession(action) => UserAction::Decide { action, decision: Decision::ApproveForSession },
            Code::Reject(action) => UserAction::Decide { action, decision: Decision::Reject { message: None } },
            Code::ApproveAll => UserAction::DecideAll { decision: DecisionType::Approve },
            Code::RejectAll => UserAction::DecideAll { decision: DecisionType::Reject },
            Code::Submit => UserAction::Submit,
            // Whether the policy offers it is the core's call (RememberNotOffered).
            Code::Remember(scope) => UserAction::Remember { scope },
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips() {
        let all = [
            Code::Approve(0),
            Code::ApproveForSession(5),
            Code::Reject(3),
            Code::Edit(1),
            Code::Respond(2),
            Code::ApproveAll,
            Code::RejectAll,
            Code::Submit,
            Code::Select(3),
            Code::Other(1),
            Code::Skip,
            Code::Page(2),
            Code::EditModal(0),
            Code::RespondModal(4),
            Code::OtherModal(0),
            Code::Remember(RememberScope::Session),
            Code::Remember(RememberScope::Always),
        ];
        for code in all {
            assert_eq!(Code::parse(&code.encode()), Some(code), "{code:?}");
        }
    }

    #[test]
    fn remember_codes_become_remember_actions() {
        assert_eq!(Code::parse("rms").and_then(Code::direct_action), Some(UserAction::Remember { scope: RememberScope::Session }));
        assert_eq!(Code::parse("rma").and_then(Code::direct_action), Some(UserAction::Remember { scope: RememberScope::Always }));
        assert_eq!(Code::parse("as.0").and_then(Code::direct_action), Some(UserAction::Decide { action: 0, decision: Decision::ApproveForSession }));
        assert_eq!(Code::Edit(0).direct_action(), None, "edit opens a modal first");
    }

    #[test]
    fn the_longest_code_fits_in_a_custom_id() {
        let signer = crate::platform::kit::token::TokenSigner::new(b"secret");
        let longest = Code::EditModal(9999).encode();
        assert!(GRAMMAR.limit.fits(&signer.sign("a1b2c3d4e5f6", &longest).unwrap()), "{longest}");
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
