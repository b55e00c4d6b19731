//! The requests one kimi process asked and still waits on, and the results the
//! bridge's replies become (seed 001; kimi-cli's `ApprovalResponse` and
//! `QuestionResponse`). Pure.
//!
//! Only the process that asked can take an answer: kimi's request ids live in its
//! memory. So each process has its own [`OpenRequests`]; a reply for a request it
//! does not hold (asked by a process that is gone) cannot be delivered.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::super::SessionUpdate;
use crate::interaction::NO_PREFERENCE;
use crate::protocol::{Answers, Decision, Reply};

/// What a request of kimi's waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Awaits {
    /// `foreground` approvals belong to the turn: kimi rejects them itself when the
    /// turn ends; a background agent's outlive it.
    Approval {
        foreground: bool,
    },
    Answers,
}

#[derive(Debug, Default)]
pub struct OpenRequests(HashMap<String, Awaits>);

impl OpenRequests {
    pub fn insert(&mut self, approval_key: &str, awaits: Awaits) {
        self.0.insert(approval_key.to_owned(), awaits);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Kimi resolved `approval_key` (an `ApprovalResponse` event).
    pub fn resolved(&mut self, approval_key: &str) {
        self.0.remove(approval_key);
    }

    /// The result for `approval_key` carrying `reply`, or `None` when this process
    /// does not wait for it.
    pub fn reply(&mut self, approval_key: &str, reply: &Reply) -> Option<Value> {
        let awaits = self.0.remove(approval_key)?;
        Some(match (awaits, reply) {
            (Awaits::Approval { .. }, Reply::Decisions { decisions, user_edit_content }) => {
                approval_result(approval_key, decisions, user_edit_content.as_deref())
            }
            (Awaits::Answers, Reply::Answers { answers }) => question_result(approval_key, answers),
            (Awaits::Approval { .. }, Reply::Answers { .. }) => {
                tracing::warn!(%approval_key, "answers for an approval request; rejecting it");
                approval_result(approval_key, &[], None)
            }
            (Awaits::Answers, Reply::Decisions { .. }) => {
                tracing::warn!(%approval_key, "decisions for a question request; dismissing it");
                question_result(approval_key, &Answers::default())
            }
        })
    }

    /// The turn is over: kimi rejected its open foreground approvals and dismissed its
    /// open questions before saying so. Those end as timed out (the backend's own
    /// outcome, not a person's).
    pub fn turn_finished(&mut self) -> Vec<SessionUpdate> {
        let mut settled: Vec<String> = self.0.iter().filter(|(_, a)| **a != Awaits::Approval { foreground: false }).map(|(k, _)| k.clone()).collect();
        settled.sort();
        settled
            .into_iter()
            .map(|approval_key| {
                self.0.remove(&approval_key);
                SessionUpdate::TimedOut { approval_key }
            })
            .collect()
    }

    /// The process is gone: nothing it asked can be answered any more.
    pub fn lost(&mut self) -> Vec<SessionUpdate> {
        let mut keys: Vec<String> = self.0.drain().map(|(k, _)| k).collect();
        keys.sort();
        keys.into_iter().map(|approval_key| SessionUpdate::TimedOut { approval_key }).collect()
    }
}

/// Kimi's `ApprovalResponse` for the decision on its one action. A comment (`respond`)
/// is a reject whose feedback is the comment; a reject's feedback is its message, else
/// the request's note. Kimi reads feedback on rejects only, so approvals send none.
pub fn approval_result(request_id: &str, decisions: &[Decision], note: Option<&str>) -> Value {
    let (response, feedback) = match decisions.first() {
        Some(Decision::Approve) => ("approve", String::new()),
        Some(Decision::ApproveForSession) => ("approve_for_session", String::new()),
        Some(Decision::Reject { message }) => ("reject", message.as_deref().or(note).unwrap_or("").to_owned()),
        Some(Decision::Respond { message }) => ("reject", message.clone()),
        // Never offered (kimi cannot run a tool with other arguments); should one come,
        // the model is told what the person wanted.
        Some(Decision::Edit { edited_action }) => {
            ("reject", format!("Not run. The user asks for these arguments instead: {}", Value::Object(edited_action.args.clone())))
        }
        None => ("reject", String::new()),
    };
    json!({"request_id":request_id,"response":response,"feedback":feedback})
}

/// Kimi's `QuestionResponse`: question text → answer, multi-select labels joined with
/// ", ". Skipped questions are left out, as kimi's own client does; skipping all of
/// them is kimi's "dismissed" (`{"answers":{}}`).
pub fn question_result(request_id: &str, answers: &Answers) -> Value {
    let answered: Map<String, Value> = answers.0.iter().filter(|(_, a)| a != NO_PREFERENCE).map(|(q, a)| (q.clone(), json!(a))).collect();
    json!({"request_id":request_id,"answers":answered})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::EditedAction;

    #[test]
    fn decisions_become_kimis_approval_responses() {
        let result = |d: Decision, note: Option<&str>| approval_result("r1", &[d], note);
        assert_eq!(result(Decision::Approve, Some("ignored")), json!({"request_id":"r1","response":"approve","feedback":""}));
        assert_eq!(result(Decision::ApproveForSession, None), json!({"request_id":"r1","response":"approve_for_session","feedback":""}));
        assert_eq!(result(Decision::Reject { message: None }, None), json!({"request_id":"r1","response":"reject","feedback":""}));
        assert_eq!(
            result(Decision::Reject { message: Some("use ls".into()) }, Some("note")),
            json!({"request_id":"r1","response":"reject","feedback":"use ls"})
        );
        assert_eq!(result(Decision::Reject { message: None }, Some("a note")), json!({"request_id":"r1","response":"reject","feedback":"a note"}));
        assert_eq!(result(Decision::Respond { message: "try ls".into() }, None), json!({"request_id":"r1","response":"reject","feedback":"try ls"}));
        let edit = Decision::Edit { edited_action: EditedAction { name: "Shell".into(), args: json!({"command":"ls"}).as_object().unwrap().clone() } };
        assert_eq!(
            result(edit, None),
            json!({"request_id":"r1","response":"reject","feedback":"Not run. The user asks for these arguments instead: {\"command\":\"ls\"}"})
        );
    }

    #[test]
    fn answers_become_kimis_question_response_in_order() {
        let answers = Answers(vec![("Which colors?".into(), "Red, Blue".into()), ("Where?".into(), NO_PREFERENCE.into()), ("Why?".into(), "typed".into())]);
        let result = question_result("q1", &answers);
        assert_eq!(serde_json::to_string(&result).unwrap(), r#"{"request_id":"q1","answers":{"Which colors?":"Red, Blue","Why?":"typed"}}"#);
        // Skipping every question is kimi's "dismissed".
        let skipped = Answers(vec![("Which colors?".into(), NO_PREFERENCE.into())]);
        assert_eq!(question_result("q1", &skipped), json!({"request_id":"q1","answers":{}}));
    }

    #[test]
    fn a_request_is_answered_once_and_only_by_its_process() {
        let mut open = OpenRequests::default();
        open.insert("a", Awaits::Approval { foreground: true });
        open.insert("q", Awaits::Answers);
        let approve = Reply::Decisions { decisions: vec![Decision::Approve], user_edit_content: None };
        assert_eq!(open.reply("a", &approve), Some(json!({"request_id":"a","response":"approve","feedback":""})));
        assert_eq!(open.reply("a", &approve), None, "answered once");
        assert_eq!(open.reply("elsewhere", &approve), None, "another process's request");
        // A mismatched reply still unblocks kimi.
        assert_eq!(open.reply("q", &approve), Some(json!({"request_id":"q","answers":{}})));
        assert!(open.is_empty());
    }

    #[test]
    fn the_end_of_a_turn_and_a_lost_process_end_what_is_open() {
        let mut open = OpenRequests::default();
        open.insert("a", Awaits::Approval { foreground: true });
        open.insert("b", Awaits::Approval { foreground: false });
        open.insert("q", Awaits::Answers);
        assert_eq!(open.turn_finished(), vec![SessionUpdate::TimedOut { approval_key: "a".into() }, SessionUpdate::TimedOut { approval_key: "q".into() }]);
        // A background agent's approval outlives the turn, not the process.
        assert_eq!(open.lost(), vec![SessionUpdate::TimedOut { approval_key: "b".into() }]);
        assert!(open.is_empty());
        open.insert("c", Awaits::Answers);
        open.resolved("c");
        assert!(open.lost().is_empty());
    }
}
