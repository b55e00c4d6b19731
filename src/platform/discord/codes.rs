//! What a component's `custom_id` means. The id itself is a signed token
//! ([`TokenSigner`](crate::platform::token::TokenSigner)) whose action code is one of
//! these: short, with indexes only, never labels or question text. Parsing is strict;
//! a code that does not parse is treated like a forged token.

use crate::interaction::{RememberScope, UserAction};
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

impl Code {
    pub fn encode(self) -> String {
        match self {
            Code::Approve(i) => format!("ap.{i}"),
            Code::ApproveForSession(i) => format!("as.{i}"),
            Code::Reject(i) => format!("rj.{i}"),
            Code::Edit(i) => format!("ed.{i}"),
            Code::Respond(i) => format!("rs.{i}"),
            Code::ApproveAll => "apa".into(),
            Code::RejectAll => "rja".into(),
            Code::Submit => "sub".into(),
            Code::Select(q) => format!("sel.{q}"),
            Code::Other(p) => format!("oth.{p}"),
            Code::Skip => "skp".into(),
            Code::Page(p) => format!("pg.{p}"),
            Code::EditModal(i) => format!("med.{i}"),
            Code::RespondModal(i) => format!("mrs.{i}"),
            Code::OtherModal(p) => format!("mot.{p}"),
            Code::Remember(RememberScope::Session) => "rms".into(),
            Code::Remember(RememberScope::Always) => "rma".into(),
        }
    }

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

    pub fn parse(code: &str) -> Option<Code> {
        // Indexes are plain decimal: no sign (`usize::from_str` takes a '+'), bounded.
        let index = |s: &str| (!s.is_empty() && s.len() <= 4 && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse::<usize>().ok()).flatten();
        let (name, index) = match code.split_once('.') {
            Some((name, i)) => (name, Some(index(i)?)),
            None => (code, None),
        };
        Some(match (name, index) {
            ("ap", Some(i)) => Code::Approve(i),
            ("as", Some(i)) => Code::ApproveForSession(i),
            ("rj", Some(i)) => Code::Reject(i),
            ("ed", Some(i)) => Code::Edit(i),
            ("rs", Some(i)) => Code::Respond(i),
            ("apa", None) => Code::ApproveAll,
            ("rja", None) => Code::RejectAll,
            ("sub", None) => Code::Submit,
            ("sel", Some(q)) => Code::Select(q),
            ("oth", Some(p)) => Code::Other(p),
            ("skp", None) => Code::Skip,
            ("pg", Some(p)) => Code::Page(p),
            ("med", Some(i)) => Code::EditModal(i),
            ("mrs", Some(i)) => Code::RespondModal(i),
            ("mot", Some(p)) => Code::OtherModal(p),
            ("rms", None) => Code::Remember(RememberScope::Session),
            ("rma", None) => Code::Remember(RememberScope::Always),
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
