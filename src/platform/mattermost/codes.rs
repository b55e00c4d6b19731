//! What a button's or menu's signed `context.code`, or a dialog's `state`, means. The
//! code is a signed token ([`TokenSigner`](crate::platform::kit::token::TokenSigner))
//! whose action code is one of these: short, indexes only, never labels or args.
//! Mattermost does not sign what it posts to an integration, so this token is what
//! ties a click to a card the bridge made: a token that does not verify, or a code
//! that does not parse, changes nothing. The spellings below are a table over the
//! kit's grammar ([`crate::platform::kit::codes`]).

use crate::interaction::UserAction;
use crate::platform::kit::codes::{Decide, Grammar, Limit, NameEnd, vocabulary};

/// One button, menu or dialog, as its code names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// A button that decides on its own (`ap.0`, `apa`, `rja`, `sub`, …).
    Decide(Decide),
    /// Opens the reject dialog (an optional reason) for an action.
    Reject(usize),
    /// Opens the edit dialog for an action.
    Edit(usize),
    /// Opens the comment dialog for an action.
    Comment(usize),
    /// The edit dialog's submission.
    EditDialog(usize),
    /// The reject dialog's submission.
    RejectDialog(usize),
    /// The comment dialog's submission.
    CommentDialog(usize),
    /// One option of a question, as a button.
    Option {
        question: usize,
        option: usize,
    },
    /// A question's select menu: the chosen option's index arrives as
    /// `context.selected_option`.
    Choose(usize),
    /// Opens the free-text dialog of a question (Other…).
    Other(usize),
    Skip(usize),
    /// The free-text dialog's submission.
    OtherDialog(usize),
}

/// Mattermost's grammar: a name, then its indexes after dots (`op.1.3`). The context
/// value has no documented limit; the kit's token limit is the tighter one.
pub const GRAMMAR: Grammar = Grammar { name_end: NameEnd::AtDot, limit: Limit::Chars(100) };

vocabulary! {
    Code, GRAMMAR; dotted decisions;
    "rj" [i] => { Code::Reject(i) },
    "ed" [i] => { Code::Edit(i) },
    "cm" [i] => { Code::Comment(i) },
    "ded" [i] => { Code::EditDialog(i) },
    "drj" [i] => { Code::RejectDialog(i) },
    "dcm" [i] => { Code::CommentDialog(i) },
    "op" [question, option] => { Code::Option { question, option } },
    "ch" [q] => { Code::Choose(q) },
    "ot" [q] => { Code::Other(q) },
    "sk" [q] => { Code::Skip(q) },
    "dot" [q] => { Code::OtherDialog(q) },
    // Reject opens the reason's dialog: the one reject button is that one.
    ; also
    Code::Decide(Decide::Reject(i)) => "rj" [i],
}

impl Code {
    /// The engine action a button stands for on its own; `None` for the buttons that
    /// open a dialog, the menu, and the dialogs.
    pub fn direct_action(self) -> Option<UserAction> {
        Some(match self {
            Code::Decide(decide) => decide.action(),
            Code::Option { question, option } => UserAction::Select { question, options: vec![option] },
            Code::Skip(question) => UserAction::Skip { question },
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Decision;

    #[test]
    fn only_plain_buttons_act_on_their_own() {
        assert_eq!(Code::Decide(Decide::Approve(1)).direct_action(), Some(UserAction::Decide { action: 1, decision: Decision::Approve }));
        assert_eq!(Code::Skip(2).direct_action(), Some(UserAction::Skip { question: 2 }));
        for opens in [Code::Reject(0), Code::Edit(0), Code::Comment(0), Code::EditDialog(0), Code::Other(0), Code::Choose(0), Code::OtherDialog(0)] {
            assert_eq!(opens.direct_action(), None, "{opens:?}");
        }
    }

    #[test]
    fn junk_does_not_parse() {
        for junk in ["", "ap", "ap.", "ap.x", "ap.+1", "zz.1", "ded", "op.1", "op.1.2.3", "AP.1"] {
            assert_eq!(Code::parse(junk), None, "{junk}");
        }
    }
}
