//! The requests one agent process asked and still waits on (permissions and forms),
//! by approval key, and what each is answered with. Pure.
//!
//! Only the process that asked can take an answer (the JSON-RPC id lives in its
//! memory), so each process has its own [`OpenRequests`], and a request is answered
//! once: taking it out is what answers it.

use std::collections::HashMap;

use serde_json::Value;

use super::elicitation::{self, Form};
use super::permissions::{self, PermissionOption};
use super::wire;
use crate::backend::SessionUpdate;
use crate::protocol::Reply;

/// What the agent asked.
#[derive(Debug, Clone)]
pub enum Asked {
    /// `session/request_permission`, with the options it offered.
    Permission(Vec<PermissionOption>),
    /// `elicitation/create` in form mode.
    Form(Form),
}

impl Asked {
    /// The result for `reply`, and why a form was declined, if it was.
    fn result(&self, reply: &Reply) -> (Value, Option<String>) {
        match (self, reply) {
            (Self::Permission(options), reply) => (wire::permission_outcome(permissions::chosen(options, reply)), None),
            (Self::Form(form), Reply::Answers { answers }) => match form.result(answers) {
                Ok(result) => (result, None),
                Err(why) => (elicitation::declined(), Some(why)),
            },
            // A form is only ever shown as questions; a decision on it (the HTTP API) is a no.
            (Self::Form(_), Reply::Decisions { .. }) => (elicitation::declined(), None),
        }
    }

    /// The result when nobody answered.
    fn unanswered(&self) -> Value {
        match self {
            Self::Permission(_) => wire::permission_outcome(None),
            Self::Form(_) => elicitation::cancelled(),
        }
    }
}

/// A request the agent waits on: its JSON-RPC id, to answer with, and what it asked.
#[derive(Debug, Clone)]
struct Open {
    id: Value,
    asked: Asked,
}

/// The agent's answer to one of its requests: the id to answer and the result.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub id: Value,
    pub result: Value,
    /// Why a form was declined rather than accepted, for the chat.
    pub declined_because: Option<String>,
}

/// The requests one agent process waits on.
#[derive(Debug, Default)]
pub struct OpenRequests(HashMap<String, Open>);

impl OpenRequests {
    pub fn insert(&mut self, approval_key: &str, id: Value, asked: Asked) {
        self.0.insert(approval_key.to_owned(), Open { id, asked });
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The answer for `approval_key` carrying `reply`, or `None` when this process
    /// does not wait for it (asked by a process that is gone, or answered already).
    pub fn reply(&mut self, approval_key: &str, reply: &Reply) -> Option<Answer> {
        let open = self.0.remove(approval_key)?;
        let (result, declined_because) = open.asked.result(reply);
        Some(Answer { id: open.id, result, declined_because })
    }

    /// Ends `approval_key` unanswered (its deadline): the answer that says so.
    pub fn withdraw(&mut self, approval_key: &str) -> Option<Answer> {
        self.0.remove(approval_key).map(|open| Answer { result: open.asked.unanswered(), id: open.id, declined_because: None })
    }

    /// Every open request ended unanswered (a cancelled turn, a lost process): the
    /// answers that say so, and the updates that end them in the chats.
    pub fn withdraw_all(&mut self) -> (Vec<Answer>, Vec<SessionUpdate>) {
        let mut keys: Vec<String> = self.0.keys().cloned().collect();
        keys.sort();
        let answers = keys.iter().filter_map(|k| self.withdraw(k)).collect();
        (answers, keys.into_iter().map(|approval_key| SessionUpdate::TimedOut { approval_key }).collect())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::{Answers, Decision};

    /// What claude-code-acp 0.16.2 offered for a Bash command.
    fn claude_code_options() -> Vec<PermissionOption> {
        serde_json::from_value(json!([
            {"kind":"allow_always","name":"Always Allow","optionId":"allow_always"},
            {"kind":"allow_once","name":"Allow","optionId":"allow"},
            {"kind":"reject_once","name":"Reject","optionId":"reject"}
        ]))
        .unwrap()
    }

    fn approve() -> Reply {
        Reply::Decisions { decisions: vec![Decision::Approve], user_edit_content: None }
    }

    fn name_form() -> Form {
        elicitation::read(&json!({"mode":"form","requestedSchema":{"required":["name"],"properties":{"name":{"type":"string","title":"Name"}}}})).unwrap().0
    }

    #[test]
    fn a_request_is_answered_once_and_only_by_its_process() {
        let mut open = OpenRequests::default();
        open.insert("tu1", json!(0), Asked::Permission(claude_code_options()));
        open.insert("tu2", json!("p-2"), Asked::Permission(claude_code_options()));
        let answer = open.reply("tu1", &approve()).unwrap();
        assert_eq!((answer.id, answer.result), (json!(0), json!({"outcome":{"outcome":"selected","optionId":"allow"}})));
        assert_eq!(open.reply("tu1", &approve()), None, "answered once");
        assert_eq!(open.reply("elsewhere", &approve()), None);
        let (answers, updates) = open.withdraw_all();
        assert_eq!(answers.iter().map(|a| (&a.id, &a.result)).collect::<Vec<_>>(), vec![(&json!("p-2"), &json!({"outcome":{"outcome":"cancelled"}}))]);
        assert_eq!(updates, vec![SessionUpdate::TimedOut { approval_key: "tu2".into() }]);
        assert!(open.is_empty());
    }

    #[test]
    fn a_form_is_accepted_declined_or_cancelled() {
        let mut open = OpenRequests::default();
        open.insert("e1", json!(7), Asked::Form(name_form()));
        let accepted = open.reply("e1", &Reply::Answers { answers: Answers(vec![("Name".into(), "Thảo".into())]) }).unwrap();
        assert_eq!(accepted.result, json!({"action":"accept","content":{"name":"Thảo"}}));
        open.insert("e2", json!(8), Asked::Form(name_form()));
        let declined = open.reply("e2", &Reply::Answers { answers: Answers(vec![("Name".into(), crate::interaction::NO_PREFERENCE.into())]) }).unwrap();
        assert_eq!(declined.result, json!({"action":"decline"}));
        assert!(declined.declined_because.unwrap().contains("required"));
        open.insert("e3", json!(9), Asked::Form(name_form()));
        assert_eq!(open.withdraw("e3").unwrap().result, json!({"action":"cancel"}));
    }
}
