//! What a button's `value` or a modal's `private_metadata` means. The value itself is
//! a signed token ([`TokenSigner`](crate::platform::kit::token::TokenSigner)) whose action
//! code is one of these: short, indexes only, never labels or args. A token that does
//! not verify, or a code that does not parse, changes nothing: the clicker is told the
//! button is unknown. A button's `action_id` is only a name for Slack (unique per
//! message, as Slack requires) and is never trusted. The spellings below are a table
//! over the kit's grammar ([`crate::platform::kit::codes`]).

use super::limits;
use crate::interaction::UserAction;
use crate::platform::kit::codes::{Decide, Grammar, Limit, NameEnd, vocabulary};

/// One button or modal, as its code names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// A button that decides on its own: approve or approve for the session one
    /// action (`ap.0`, `as.0`), all at once (`apa`, `rja`), submit (`sub`), approve
    /// and remember for the session (`rms`) or always (`rma`).
    Decide(Decide),
    /// Opens the reject modal (an optional reason) for an action.
    Reject(usize),
    /// Opens the edit modal for an action.
    Edit(usize),
    /// Opens the comment modal for an action.
    Comment(usize),
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
    Code, GRAMMAR; dotted decisions;
    "rj" [i] => { Code::Reject(i) },
    "ed" [i] => { Code::Edit(i) },
    "cm" [i] => { Code::Comment(i) },
    "med" [i] => { Code::EditModal(i) },
    "mrj" [i] => { Code::RejectModal(i) },
    "mcm" [i] => { Code::CommentModal(i) },
    "op" [question, option] => { Code::Option { question, option } },
    "ch" [q] => { Code::Choose(q) },
    "ot" [q] => { Code::Other(q) },
    "sk" [q] => { Code::Skip(q) },
    "mot" [q] => { Code::OtherModal(q) },
    // Slack asks for a reason before it rejects: its one reject is the button that
    // opens the reason's modal.
    ; also
    Code::Decide(Decide::Reject(i)) => "rj" [i],
}

impl Code {
    /// The engine action a button stands for on its own; `None` for the buttons that
    /// open a modal and for the modals (their action carries what was typed).
    pub fn direct_action(self) -> Option<UserAction> {
        Some(match self {
            Code::Decide(decide) => decide.action(),
            // A button of a single-select question: that option is the answer (a value
            // replayed on a multi-select question selects just it, which is allowed).
            Code::Option { question, option } => UserAction::Select { question, options: vec![option] },
            Code::Skip(question) => UserAction::Skip { question },
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Decision, DecisionType};

    #[test]
    fn only_plain_buttons_act_on_their_own() {
        assert_eq!(Code::Decide(Decide::Approve(1)).direct_action(), Some(UserAction::Decide { action: 1, decision: Decision::Approve }));
        assert_eq!(Code::Decide(Decide::RejectAll).direct_action(), Some(UserAction::DecideAll { decision: DecisionType::Reject }));
        assert_eq!(Code::Option { question: 1, option: 4 }.direct_action(), Some(UserAction::Select { question: 1, options: vec![4] }));
        assert_eq!(Code::Skip(2).direct_action(), Some(UserAction::Skip { question: 2 }));
        for opens in [Code::Reject(0), Code::Edit(0), Code::Comment(0), Code::EditModal(0), Code::Other(0), Code::Choose(0), Code::OtherModal(0)] {
            assert_eq!(opens.direct_action(), None, "{opens:?}");
        }
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
