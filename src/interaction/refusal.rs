//! A refused attempt on an interaction, as data: who tried (an [`Actor`]), what
//! ([`Attempt`]) and why ([`Refusal`]). Whoever refuses (a platform's quick check
//! before opening a form, or the engine applying an action) hands one to the engine's
//! single entry point for refusals, which counts every attempt and audits those
//! [`Refusal::is_audited`] names, exactly once.

use serde::Serialize;

use super::answers::MAX_TEXT_CHARS;
use super::decisions::EditError;
use super::policy::RememberScope;
use super::user_action::UserAction;
use crate::protocol::DecisionType;

/// Why an action was refused. Nothing changed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    #[error("you are not allowed to answer this request")]
    NotAllowed,
    /// Four eyes: the requester may not decide their own turn's tool calls.
    #[error("you started this turn; another approver must decide its tool calls")]
    SelfApproval,
    #[error("already decided by {by}")]
    AlreadyDecided { by: String, at_ms: i64 },
    #[error("this request has expired")]
    Expired,
    #[error("this request was cancelled")]
    Cancelled,
    #[error("{decision} is not allowed for {action}", decision = .decision.as_str())]
    DecisionNotAllowed { action: String, decision: DecisionType },
    #[error("{0}")]
    InvalidEdit(EditError),
    #[error("no such {0}")]
    OutOfRange(&'static str),
    #[error("decide every action before submitting (missing: {})", missing_list(.missing))]
    Incomplete { missing: Vec<usize> },
    #[error("this request takes {expected}, not {got}")]
    WrongKind { expected: &'static str, got: &'static str },
    #[error("this question does not take free text")]
    NoFreeText,
    #[error("the text is empty")]
    EmptyText,
    #[error("the text is longer than {MAX_TEXT_CHARS} characters")]
    TextTooLong,
    #[error("this question takes a single choice")]
    SingleChoice,
    /// Quorum: one person votes once.
    #[error("you have already voted on this request")]
    AlreadyVoted { at_ms: i64 },
    #[error("\"{}\" is not offered for this request", match .scope { RememberScope::Session => "approve for this session", RememberScope::Always => "always approve" })]
    RememberNotOffered { scope: RememberScope },
}

fn missing_list(missing: &[usize]) -> String {
    missing.iter().map(|i| (i + 1).to_string()).collect::<Vec<_>>().join(", ")
}

/// What a refused person tried.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Attempt {
    /// An action the engine would have applied.
    Act(UserAction),
    /// A click that would only have opened something, changing nothing yet: a form
    /// for one action or question, or another page of the request. As JSON
    /// `{"open": "edit", "index": 0}`.
    Open { open: Opening, index: usize },
}

/// What a click opens before any action is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Opening {
    /// The form to edit action `index`'s args.
    Edit,
    /// The form to comment on action `index`.
    Comment,
    /// The box to type question `index`'s answer (Other…, a free-text option).
    Text,
    /// Step or page `index` of the request.
    Page,
}

impl Refusal {
    /// Whether the refusal is about the person rather than the click: someone who may
    /// not answer tried (a stranger, or the requester under four eyes). Those are what
    /// the audit log keeps; a stale or malformed click (already decided, out of range)
    /// is only counted.
    pub fn is_audited(&self) -> bool {
        matches!(self, Refusal::NotAllowed | Refusal::SelfApproval)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::DecisionType;

    #[test]
    fn only_refusals_about_the_person_are_audited() {
        assert!(Refusal::NotAllowed.is_audited());
        assert!(Refusal::SelfApproval.is_audited());
        assert!(!Refusal::Expired.is_audited());
        assert!(!Refusal::AlreadyDecided { by: "Lan".into(), at_ms: 1 }.is_audited());
        assert!(!Refusal::OutOfRange("action").is_audited());
    }

    #[test]
    fn attempts_read_as_the_action_or_what_would_open() {
        let act = Attempt::Act(UserAction::DecideAll { decision: DecisionType::Approve });
        assert_eq!(serde_json::to_value(&act).unwrap(), json!({"op": "decide_all", "decision": "approve"}));
        let open = Attempt::Open { open: Opening::Edit, index: 1 };
        assert_eq!(serde_json::to_value(&open).unwrap(), json!({"open": "edit", "index": 1}));
        let page = Attempt::Open { open: Opening::Page, index: 2 };
        assert_eq!(serde_json::to_value(&page).unwrap(), json!({"open": "page", "index": 2}));
    }
}
