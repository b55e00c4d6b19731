//! What a button's `value` or a modal's `private_metadata` means. The value itself is
//! a signed token ([`TokenSigner`](crate::platform::token::TokenSigner)) whose action
//! code is one of these: short, indexes only, never labels or args. A token that does
//! not verify, or a code that does not parse, changes nothing: the clicker is told the
//! button is unknown. A button's `action_id` is only a name for Slack (unique per
//! message, as Slack requires) and is never trusted.

use crate::interaction::{RememberScope, UserAction};
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

impl Code {
    pub fn encode(self) -> String {
        match self {
            Code::Approve(i) => format!("ap.{i}"),
            Code::ApproveForSession(i) => format!("as.{i}"),
            Code::Reject(i) => format!("rj.{i}"),
            Code::Edit(i) => format!("ed.{i}"),
            Code::Comment(i) => format!("cm.{i}"),
            Code::ApproveAll => "apa".into(),
            Code::RejectAll => "rja".into(),
            Code::Submit => "sub".into(),
            Code::Remember(RememberScope::Session) => "rms".into(),
            Code::Remember(RememberScope::Always) => "rma".into(),
            Code::EditModal(i) => format!("med.{i}"),
            Code::RejectModal(i) => format!("mrj.{i}"),
            Code::CommentModal(i) => format!("mcm.{i}"),
            Code::Option { question, option } => format!("op.{question}.{option}"),
            Code::Choose(q) => format!("ch.{q}"),
            Code::Other(q) => format!("ot.{q}"),
            Code::Skip(q) => format!("sk.{q}"),
            Code::OtherModal(q) => format!("mot.{q}"),
        }
    }

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

    pub fn parse(code: &str) -> Option<Code> {
        // Indexes are plain decimal: no sign (`usize::from_str` takes a '+'), bounded.
        let number = |s: &str| (!s.is_empty() && s.len() <= 4 && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse::<usize>().ok()).flatten();
        let mut parts = code.split('.');
        let name = parts.next()?;
        let index = parts.next().map(|s| number(s).ok_or(())).transpose().ok()?;
        let second = parts.next().map(|s| number(s).ok_or(())).transpose().ok()?;
        if parts.next().is_some() {
            return None;
        }
        if let ("op", Some(question), Some(option)) = (name, index, second) {
            return Some(Code::Option { question, option });
        }
        if second.is_some() {
            return None;
        }
        Some(match (name, index) {
            ("ap", Some(i)) => Code::Approve(i),
            ("as", Some(i)) => Code::ApproveForSession(i),
            ("rj", Some(i)) => Code::Reject(i),
            ("ed", Some(i)) => Code::Edit(i),
            ("cm", Some(i)) => Code::Comment(i),
            ("apa", None) => Code::ApproveAll,
            ("rja", None) => Code::RejectAll,
            ("sub", None) => Code::Submit,
            ("rms", None) => Code::Remember(RememberScope::Session),
            ("rma", None) => Code::Remember(RememberScope::Always),
            ("med", Some(i)) => Code::EditModal(i),
            ("mrj", Some(i)) => Code::RejectModal(i),
            ("mcm", Some(i)) => Code::CommentModal(i),
            ("ch", Some(q)) => Code::Choose(q),
            ("ot", Some(q)) => Code::Other(q),
            ("sk", Some(q)) => Code::Skip(q),
            ("mot", Some(q)) => Code::OtherModal(q),
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
    fn junk_does_not_parse() {
        for junk in [
            "", "ap", "ap.", "ap.x", "ap.-1", "ap.+1", "ap.12345", "sub.1", "zz.1", "rms.0", "med", "AP.1", "ap.1 ", "op.1", "op.1.", "op.1.2.3", "sk.1.2",
            "ch", "ot.x",
        ] {
            assert_eq!(Code::parse(junk), None, "{junk}");
        }
    }
}
