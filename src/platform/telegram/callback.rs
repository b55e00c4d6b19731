//! Button action codes: the `code` part of a callback token (DESIGN.md "Callback
//! tokens"). A code names what a button does by indexes only, never by labels or
//! question text, so every token stays far under Telegram's 64-byte limit whatever
//! the labels are. Parsing is strict: anything unexpected is `None`, and the click is
//! answered with a notice.

use crate::interaction::{RememberScope, UserAction};
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

impl Code {
    pub fn encode(&self) -> String {
        match *self {
            Code::Decide { action, decision: DecisionType::Approve } => format!("a{action}"),
            Code::Decide { action, decision: DecisionType::ApproveForSession } => format!("s{action}"),
            Code::Decide { action, .. } => format!("r{action}"),
            Code::Edit { action } => format!("e{action}"),
            Code::Comment { action } => format!("c{action}"),
            Code::All(DecisionType::Approve) => "A".into(),
            Code::All(_) => "R".into(),
            Code::Submit => "S".into(),
            Code::Option { question, option } => format!("o{question}.{option}"),
            Code::Other { question } => format!("t{question}"),
            Code::Skip { question } => format!("k{question}"),
            Code::Done { question } => format!("d{question}"),
            Code::Goto { step } => format!("g{step}"),
            Code::Page { step, page } => format!("p{step}.{page}"),
            Code::Remember(RememberScope::Session) => "Ms".into(),
            Code::Remember(RememberScope::Always) => "Ma".into(),
        }
    }

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

    pub fn parse(code: &str) -> Option<Code> {
        let mut chars = code.chars();
        let head = chars.next()?;
        let rest = chars.as_str();
        // Indexes are plain decimal: no sign, no leading '+', bounded length.
        let index = |s: &str| -> Option<usize> { (!s.is_empty() && s.len() <= 4 && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten() };
        Some(match head {
            'a' => Code::Decide { action: index(rest)?, decision: DecisionType::Approve },
            'r' => Code::Decide { action: index(rest)?, decision: DecisionType::Reject },
            's' => Code::Decide { action: index(rest)?, decision: DecisionType::ApproveForSession },
            'e' => Code::Edit { action: index(rest)? },
            'c' => Code::Comment { action: index(rest)? },
            'A' if rest.is_empty() => Code::All(DecisionType::Approve),
            'R' if rest.is_empty() => Code::All(DecisionType::Reject),
            'S' if rest.is_empty() => Code::Submit,
            'M' if rest == "s" => Code::Remember(RememberScope::Session),
            'M' if rest == "a" => Code::Remember(RememberScope::Always),
            'o' => {
                let (q, o) = rest.split_once('.')?;
                Code::Option { question: index(q)?, option: index(o)? }
            }
            't' => Code::Other { question: index(rest)? },
            'k' => Code::Skip { question: index(rest)? },
            'd' => Code::Done { question: index(rest)? },
            'g' => Code::Goto { step: index(rest)? },
            'p' => {
                let (s, p) = rest.split_once('.')?;
                Code::Page { step: index(s)?, page: index(p)? }
            }
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
    fn junk_is_refused() {
        for junk in ["", "x1", "a", "a-1", "a+1", "o1", "o1.", "o.1", "S1", "a99999", "g1.2", "p1", "p.1", "p1.x", "M", "Mx", "Ms0", "Maa", "MS", "ms", "M s"] {
            assert_eq!(Code::parse(junk), None, "{junk:?}");
        }
    }
}
