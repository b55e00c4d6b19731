//! Button action codes: the `code` part of a callback token (DESIGN.md "Callback
//! tokens"). A code names what a button does by indexes only, never by labels or
//! question text, so every token stays far under Telegram's 64-byte limit whatever
//! the labels are. Parsing is strict: anything unexpected is `None`, and the click is
//! answered with a notice. The spellings below are a table over the kit's grammar
//! ([`crate::platform::kit::codes`]).

use crate::interaction::{RememberScope, UserAction};
use crate::platform::kit::codes::{Grammar, Limit, NameEnd, vocabulary};
use crate::protocol::{Decision, DecisionType};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// Approve / Reject / Approve for the session one action (`a0`, `r0`, `s0`).
    Decide { action: usize, decision: DecisionType },
    /// Ask for new args as JSON (`e0`).
    Edit { action: usize },
    /// Ask for a comment (`c0`).
    Comment { action: usize },
    /// Approve all / Reject all (`A`, `R`).
    All(DecisionType),
    /// Submit the draft (`S`).
    Submit,
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
    /// Approve the one action and remember it, where the policy offers it: for this
    /// session (`Ms`) or always (`Ma`).
    Remember(RememberScope),
}

/// Telegram's grammar: the name runs straight into the first index (`a0`, `o1.3`),
/// and a token is at most 64 bytes of callback_data.
pub const GRAMMAR: Grammar = Grammar { name_end: NameEnd::AtFirstIndex, limit: Limit::Bytes(64) };

vocabulary! {
    Code, GRAMMAR;
    "a" [action] => { Code::Decide { action, decision: DecisionType::Approve } },
    "r" [action] => { Code::Decide { action, decision: DecisionType::Reject } },
    "s" [action] => { Code::Decide { action, decision: DecisionType::ApproveForSession } },
    "e" [action] => { Code::Edit { action } },
    "c" [action] => { Code::Comment { action } },
    "A" [] => { Code::All(DecisionType::Approve) },
    "R" [] => { Code::All(DecisionType::Reject) },
    "S" [] => { Code::Submit },
    "Ms" [] => { Code::Remember(RememberScope::Session) },
    "Ma" [] => { Code::Remember(RememberScope::Always) },
    "o" [question, option] => { Code::Option { question, option } },
    "t" [question] => { Code::Other { question } },
    "k" [question] => { Code::Skip { question } },
    "d" [question] => { Code::Done { question } },
    "g" [step] => { Code::Goto { step } },
    "p" [step, page] => { Code::Page { step, page } },
    // Decisions with no button of their own (edit, respond) are written as a reject,
    // as they always were.
    ; also
    Code::Decide { action, .. } => "r" [action],
    Code::All(_) => "R" [],
}

impl Code {
    /// The engine action a button stands for on its own, with nothing to ask first;
    /// `None` for buttons that prompt, navigate or depend on the stored request.
    pub fn direct_action(self) -> Option<UserAction> {
        Some(match self {
            Code::Decide { action, decision } => {
                let decision = match decision {
                    DecisionType::Approve => Decision::Approve,
                    DecisionType::ApproveForSession => Decision::ApproveForSession,
                    _ => Decision::Reject { message: None },
                };
                UserAction::Decide { action, decision }
            }
            Code::All(decision) => UserAction::DecideAll { decision },
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
        let codes = [
            Code::Decide { action: 0, decision: DecisionType::Approve },
            Code::Decide { action: 12, decision: DecisionType::Reject },
            Code::Decide { action: 3, decision: DecisionType::ApproveForSession },
            Code::Edit { action: 1 },
            Code::Comment { action: 2 },
            Code::All(DecisionType::Approve),
            Code::All(DecisionType::Reject),
            Code::Submit,
            Code::Option { question: 3, option: 24 },
            Code::Other { question: 0 },
            Code::Skip { question: 1 },
            Code::Done { question: 2 },
            Code::Goto { step: 4 },
            Code::Page { step: 1, page: 14 },
            Code::Remember(RememberScope::Session),
            Code::Remember(RememberScope::Always),
        ];
        for code in codes {
            assert_eq!(Code::parse(&code.encode()), Some(code), "{}", code.encode());
        }
    }

    #[test]
    fn remember_codes_become_remember_actions() {
        assert_eq!(Code::parse("Ms").and_then(Code::direct_action), Some(UserAction::Remember { scope: RememberScope::Session }));
        assert_eq!(Code::parse("Ma").and_then(Code::direct_action), Some(UserAction::Remember { scope: RememberScope::Always }));
        assert_eq!(Code::parse("s0").and_then(Code::direct_action), Some(UserAction::Decide { action: 0, decision: Decision::ApproveForSession }));
        assert_eq!(Code::Edit { action: 0 }.direct_action(), None, "edit asks for JSON first");
    }

    #[test]
    fn the_longest_code_fits_in_callback_data() {
        let signer = crate::platform::kit::token::TokenSigner::new(b"secret");
        let longest = Code::Page { step: 9999, page: 9999 }.encode();
        assert!(GRAMMAR.limit.fits(&signer.sign("a1b2c3d4e5f6", &longest).unwrap()), "{longest}");
    }

    #[test]
    fn junk_is_refused() {
        for junk in ["", "x1", "a", "a-1", "a+1", "o1", "o1.", "o.1", "S1", "a99999", "g1.2", "p1", "p.1", "p1.x", "M", "Mx", "Ms0", "Maa", "MS", "ms", "M s"] {
            assert_eq!(Code::parse(junk), None, "{junk:?}");
        }
    }
}
