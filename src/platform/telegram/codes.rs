//! Button action codes: the `code` part of a callback token (DESIGN.md "Callback
//! tokens"). A code names what a button does by indexes only, never by labels or
//! question text, so every token stays far under Telegram's 64-byte limit whatever
//! the labels are. Parsing is strict: anything unexpected is `None`, and the click is
//! answered with a notice. The spellings below are a table over the kit's grammar
//! ([`crate::platform::kit::codes`]).

use crate::interaction::RememberScope;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buttons_already_sent_keep_their_meaning() {
        let sent = [
            ("Ma", Code::Decide(Decide::Remember(RememberScope::Always))),
            ("s0", Code::Decide(Decide::ApproveForSession(0))),
            ("o1.3", Code::Option { question: 1, option: 3 }),
        ];
        for (spelled, code) in sent {
            assert_eq!(Code::parse(spelled), Some(code), "{spelled}");
        }
    }

    #[test]
    fn junk_is_refused() {
        for junk in ["", "x1", "a", "a-1", "a+1", "o1", "o1.", "o.1", "S1", "a99999", "g1.2", "p1", "p.1", "p1.x", "M", "Mx", "Ms0", "Maa", "MS", "ms", "M s"] {
            assert_eq!(Code::parse(junk), None, "{junk:?}");
        }
    }
}
