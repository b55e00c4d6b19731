//! What a button's `value` or a modal's `private_metadata` means. The value itself is
//! a signed token ([`TokenSigner`](crate::platform::kit::token::TokenSigner)) whose action
//! code is one of these: short, indexes only, never labels or args. A token that does
//! not verify, or a code that does not parse, changes nothing: the clicker is told the
//! button is unknown. A button's `action_id` is only a name for Slack (unique per
//! message, as Slack requires) and is never trusted. The spellings below are a table
//! over the kit's grammar ([`crate::platform::kit::codes`]).

use super::render::limits;
use crate::interaction::{RememberScope, UserAction};
use crate::platform::kit::codes::{Grammar, Limit, NameEnd, vocabulary};
use crate::protocol::{Decision, DecisionType};

/// One button or modal, as its code names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    Approve(usize),
    /// Approve, and let the backend approve the same action for the rest of the session.
    ApproveForSession(usize),
    /// Opens the reject modal (an optional reason) for an action.
    Reject(usize),
    /// Opens the edit modal for an action.
    Edit(usize),
    /// Opens the comment modal for an action.
    Comment(usize),
    ApproveAll,
    RejectAll,
    Submit,
    /// Approve the one action and remember it, where the policy offers it.
    Remember(RememberScope),
    /// The edit modal's submission.
    EditModal(usize),
    /// The reject modal's submission.
    RejectModal(usize),
    /// The comment modal's submission.
    CommentModal(usize),
    /// One option of a question: a single-select button, or an option of a select
    /// menu or checkbox group (whose value carries it).
    Option {
        question: usize,
        option: usize,
    },
    /// A question's select menu or checkbox group itself (its `action_id`): names the
    /// question even when the last box is unticked and no option value arrives.
    Choose(usize),
    /// Opens the free-text modal of a question (Other…, or its `input` option).
    Other(usize),
    Skip(usize),
    /// The free-text modal's submission.
    OtherModal(usize),
}

/// Slack's grammar: a name, then its indexes after dots (`op.1.3`), within the
/// tightest place a token goes, an option's `value` of at most 150 characters.
pub const GRAMMAR: Grammar = Grammar { name_end: NameEnd::AtDot, limit: Limit::Chars(limits::OPTION_VALUE) };

vocabulary! {
    Code, GRAMMAR;
    "ap" [i] => { Code::Approve(i) },
    "as" [i] => { Code::ApproveForSession(i) },
    "rj" [i] => { Code::Reject(i) },
    "ed" [i] => { Code::Edit(i) },
    "cm" [i] => { Code::Comment(i) },
    "apa" [] => { Code::ApproveAll },
    "rja" [] => { Code::RejectAll },
    "sub" [] => { Code::Submit },
    "rms" [] => { Code::Remember(RememberScope::Session) },
    "rma" [] => { Code::Remember(RememberScope::Always) },
    "med" [i] => { Code::EditModal(i) },
    "mrj" [i] => { Code::RejectModal(i) },
    "mcm" [i] => { Code::CommentModal(i) },
    "op" [question, option] => { Code::Option { question, option } },
    "ch" [q] => { Code::Choose(q) },
    "ot" [q] => { Code::Other(q) },
    "sk" [q] => { Code::Skip(q) },
    "mot" [q] => { Code::OtherModal(q) },
}

impl Code {
    /// The engine action a button stands for on its own; `None` for the buttons that
    /// open a modal and for the modals (their action carries what was typed).
    pub fn direct_action(self) -> Option<UserAction> {
        Some(match self {
            Code::Approve(action) => UserAction::Decide { action, decision: Decision::Approve },
            Code::ApproveForSession(action) => UserAction::Decide { action, decision: Decision::ApproveForSession },
            Code::ApproveAll => UserAction::DecideAll { decision: DecisionType::Approve },
            Code::RejectAll => UserAction::DecideAll { decision: DecisionType::Reject },
            Code::Submit => UserAction::Submit,
            // A button of a single-select question: that option is the answer (a value
            // replayed on a multi-select question selects just it, which is allowed).
            Code::Option { question, option } => UserAction::Select { question, options: vec![option] },
            Code::Skip(question) => UserAction::Skip { question },
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
            Code::Comment(2),
            Code::ApproveAll,
            Code::RejectAll,
            Code::Submit,
            Code::Remember(RememberScope::Session),
            Code::Remember(RememberScope::Always),
            Code::EditModal(0),
            Code::RejectModal(7),
            Code::CommentModal(4),
            Code::Option { question: 3, option: 99 },
            Code::Choose(2),
            Code::Other(1),
            Code::Skip(0),
            Code::OtherModal(3),
        ];
        for code in all {
            assert_eq!(Code::parse(&code.encode()), Some(code), "{code:?}");
        }
    }

    #[test]
    fn only_plain_buttons_act_on_their_own() {
        assert_eq!(Code::Approve(1).direct_action(), Some(UserAction::Decide { action: 1, decision: Decision::Approve }));
        assert_eq!(Code::RejectAll.direct_action(), Some(UserAction::DecideAll { decision: DecisionType::Reject }));
        assert_eq!(Code::Option { question: 1, option: 4 }.direct_action(), Some(UserAction::Select { question: 1, options: vec![4] }));
        assert_eq!(Code::Skip(2).direct_action(), Some(UserAction::Skip { question: 2 }));
        for opens in [Code::Reject(0), Code::Edit(0), Code::Comment(0), Code::EditModal(0), Code::Other(0), Code::Choose(0), Code::OtherModal(0)] {
            assert_eq!(opens.direct_action(), None, "{opens:?}");
        }
    }

    #[test]
    fn the_longest_code_fits_every_place_a_token_goes() {
        let signer = crate::platform::kit::token::TokenSigner::new(b"secret");
        let longest = Code::Option { question: 9999, option: 9999 }.encode();
        assert!(GRAMMAR.limit.fits(&signer.sign("a1b2c3d4e5f6", &longest).unwrap()), "{longest}");
    }

    #[test]
    fn junk_does_not_parse() {
        for junk in [
            "", "ap", "ap.", "ap.x", "ap.-1", "ap.+1", "ap.12345", "sub.1", "zz.1", "rms.0", "med", "AP.1", "ap.1 ", "op.1", "op.1.", "op.1.2.3", "sk.1.2",
            "ch", "ot.x",
        ] {
            assert_eq!(Code::parse(junk), None, "{junk}");
        }
    }
}
