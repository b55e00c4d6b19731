//! What an `Action.Execute`'s signed `data.hitl` means. The value is a signed token
//! ([`TokenSigner`](crate::platform::kit::token::TokenSigner)) whose action code is one
//! of these: short, indexes only, never labels or args. A token that does not verify,
//! or a code that does not parse, changes nothing: the clicker is told the button is
//! unknown. The spellings are a table over the kit's grammar
//! ([`crate::platform::kit::codes`]).

use super::limits;
use crate::interaction::UserAction;
use crate::platform::kit::codes::{Decide, Grammar, Limit, NameEnd, vocabulary};

/// One button, as its code names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// A button that decides on its own (`ap.0`, `as.0`, `apa`, `rja`, `sub`, `rms`,
    /// `rma`).
    Decide(Decide),
    /// Reject, with the reason typed in the card (`reason.{i}`).
    Reject(usize),
    /// Edit, with the arguments typed in the card (`args.{i}`).
    Edit(usize),
    /// Comment, with the text typed in the card (`comment.{i}`).
    Comment(usize),
    /// Skip one question.
    Skip(usize),
    /// Submit a question set: every `answer.{q}` and `other.{q}` input.
    Answer,
}

/// Teams' grammar: a name, then its indexes after dots (`ap.0`); the data of an
/// `Action.Execute` is small JSON, so the token's own limit is the one that counts.
pub const GRAMMAR: Grammar = Grammar { name_end: NameEnd::AtDot, limit: Limit::Chars(limits::DATA) };

vocabulary! {
    Code, GRAMMAR; dotted decisions;
    "rj" [i] => { Code::Reject(i) },
    "ed" [i] => { Code::Edit(i) },
    "cm" [i] => { Code::Comment(i) },
    "sk" [q] => { Code::Skip(q) },
    "ans" [] => { Code::Answer },
    // Teams' Reject always carries its reason input, so its one reject is that button.
    ; also
    Code::Decide(Decide::Reject(i)) => "rj" [i],
}

impl Code {
    /// The engine action of a button that needs nothing typed.
    pub fn direct_action(self) -> Option<UserAction> {
        match self {
            Code::Decide(Decide::Reject(action)) => Some(UserAction::Decide { action, decision: crate::protocol::Decision::Reject { message: None } }),
            Code::Decide(decide) => Some(decide.action()),
            Code::Skip(question) => Some(UserAction::Skip { question }),
            _ => None,
        }
    }
}
