//! Button action codes: the `code` part of a callback token (DESIGN.md "Callback
//! tokens"). A code names what a button does by indexes only, never by labels or
//! question text, so every token stays far under Telegram's 64-byte limit whatever
//! the labels are. Parsing is strict: anything unexpected is `None`, and the click is
//! answered with a notice. The spellings below are a table over the kit's grammar
//! ([`crate::platform::kit::codes`]).

use crate::interaction::{RememberScope, UserAction};
use crate::platform::kit::codes::{Decide, Grammar, Limit, NameEnd, vocabulary};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// A button that decides on its own: approve, reject or approve for the session
    /// one action (`a0`, `r0`, `s0`), all at once (`A`, `R`), submit the draft (`S`),
    /// approve and remember for the session (`Ms`) or always (`Ma`).
    Decide(Decide),
    /// Ask for new args as JSON (`e0`).
    Edit { action: usize },
    /// Ask for a comment (`c0`).
    Comment { action: usize },
    /// An option of a question (`o1.3`): select, toggle, or ask for its text.
    Option { question: usize, option: usize },
    /// The bridge's own "Other" (`t1`).
    Other { question: usize },
    /// Skip (`k1`).
    Skip { question: usize },
    /// Done with a multi-select question (`d1`).
    Done { question: usize },
    /// Show question n, or the summary when n is the question count (`g0`: Change).
    Goto { step: usize },
    /// Show another page of a long list of buttons on wizard step `step` (`p2.1`): the
    /// options of a question, or the actions of an approval (step 0).
    Page { step: usize, page: usize },
}

/// Telegram's grammar: the name runs straight into the first index (`a0`, `o1.3`),
/// and a token is at most 64 bytes of callback_data.
pub const GRAMMAR: Grammar = Grammar { name_end: NameEnd::AtFirstIndex, limit: Limit::Bytes(64) };

vocabulary! {
    Code, GRAMMAR;
    "a" [action] => { Code::Decide(Decide::Approve(action)) },
    "r" [action] => { Code::Decide(Decide::Reject(action)) },
    "s" [action] => { Code::Decide(Decide::ApproveForSession(action)) },
    "e" [action] => { Code::Edit { action } },
    "c" [action] => { Code::Comment { action } },
    "A" [] => { Code::Decide(Decide::ApproveAll) },
    "R" [] => { Code::Decide(Decide::RejectAll) },
    "S" [] => { Code::Decide(Decide::Submit) },
    "Ms" [] => { Code::Decide(Decide::Remember(RememberScope::Session)) },
    "Ma" [] => { Code::Decide(Decide::Remember(RememberScope::Always)) },
    "o" [question, option] => { Code::Option { question, option } },
    "t" [question] => { Code::Other { question } },
    "k" [question] => { Code::Skip { question } },
    "d" [question] => { Code::Done { question } },
    "g" [step] => { Code::Goto { step } },
    "p" [step, page] => { Code::Page { step, page } },
}

impl Code {
    /// The engine action a button stands for on its own, with nothing to ask first;
    /// `None` for buttons that prompt, navigate or depend on the stored request.
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
    fn every_code_round_trips_and_fits_in_callback_data() {
        assert_vocabulary(GRAMMAR, &Code::examples(), Code::encode, Code::parse);
    }

    #[test]
    fn remember_codes_become_remember_actions() {
        assert_eq!(Code::parse("Ms").and_then(Code::direct_action), Some(UserAction::Remember { scope: RememberScope::Session }));
        assert_eq!(Code::parse("Ma").and_then(Code::direct_action), Some(UserAction::Remember { scope: RememberScope::Always }));
        assert_eq!(Code::parse("s0").and_then(Code::direct_action), Some(UserAction::Decide { action: 0, decision: Decision::ApproveForSession }));
        assert_eq!(Code::Edit { action: 0 }.direct_action(), None, "edit asks for JSON first");
    }

    #[test]
    fn junk_is_refused() {
        for junk in ["", "x1", "a", "a-1", "a+1", "o1", "o1.", "o.1", "S1", "a99999", "g1.2", "p1", "p.1", "p1.x", "M", "Mx", "Ms0", "Maa", "MS", "ms", "M s"] {
            assert_eq!(Code::parse(junk), None, "{junk:?}");
        }
    }
}
