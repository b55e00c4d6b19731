//! An ACP permission request's options as the bridge's decisions, and back: the reply
//! the agent gets is the exact `optionId` of the option chosen, or `cancelled`. Pure.
//!
//! ACP's option kinds (`PermissionOptionKind`) map onto the decisions every platform
//! already shows:
//!
//! | the agent's option | the button |
//! |---|---|
//! | `allow_once` | Approve |
//! | `allow_always` | Approve for session: the agent remembers it, not the bridge |
//! | `reject_once` | Reject |
//! | `reject_always` | Reject, when the agent offers no `reject_once` |
//!
//! A reject's reason and a comment have no place in ACP's answer, so neither is
//! offered; the edit of arguments neither (the agent runs what it asked or nothing).
//!
//! Only the process that asked can take an answer (the JSON-RPC id lives in its
//! memory), so each process has its own [`OpenPermissions`].

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use super::super::SessionUpdate;
use crate::protocol::{Decision, DecisionType, Reply};

/// One option the agent offers (`PermissionOption`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    pub option_id: String,
    pub name: String,
    pub kind: String,
}

/// The decisions `options` allow, in the order buttons show them.
pub fn allowed(options: &[PermissionOption]) -> Vec<DecisionType> {
    let has = |kind: &str| options.iter().any(|o| o.kind == kind);
    let mut allowed = Vec::new();
    if has("allow_once") {
        allowed.push(DecisionType::Approve);
    }
    if has("allow_always") {
        allowed.push(DecisionType::ApproveForSession);
    }
    if has("reject_once") || has("reject_always") {
        allowed.push(DecisionType::Reject);
    }
    allowed
}

/// The `optionId` a reply chooses; `None` (answered `cancelled`) when the reply
/// chooses nothing the agent offered.
pub fn chosen<'a>(options: &'a [PermissionOption], reply: &Reply) -> Option<&'a str> {
    let of_kind = |kinds: &[&str]| kinds.iter().find_map(|k| options.iter().find(|o| o.kind == *k)).map(|o| o.option_id.as_str());
    match reply {
        Reply::Decisions { decisions, .. } => match decisions.first()? {
            Decision::Approve => of_kind(&["allow_once"]),
            Decision::ApproveForSession => of_kind(&["allow_always"]),
            // Never offered; should one come (the HTTP API), it is a no.
            Decision::Reject { .. } | Decision::Respond { .. } | Decision::Edit { .. } => of_kind(&["reject_once", "reject_always"]),
        },
        Reply::Answers { .. } => None,
    }
}

/// A permission request one process waits on.
#[derive(Debug, Clone)]
struct Open {
    /// The agent's JSON-RPC id, to answer with.
    id: Value,
    options: Vec<PermissionOption>,
}

/// The permission requests one agent process asked and still waits on, by approval key.
#[derive(Debug, Default)]
pub struct OpenPermissions(HashMap<String, Open>);

impl OpenPermissions {
    pub fn insert(&mut self, approval_key: &str, id: Value, options: Vec<PermissionOption>) {
        self.0.insert(approval_key.to_owned(), Open { id, options });
    }

    pub fn contains(&self, approval_key: &str) -> bool {
        self.0.contains_key(approval_key)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The agent's request id and the result for `approval_key` carrying `reply`, or
    /// `None` when this process does not wait for it (asked by a process that is gone,
    /// or answered already).
    pub fn reply(&mut self, approval_key: &str, reply: &Reply) -> Option<(Value, Option<String>)> {
        let open = self.0.remove(approval_key)?;
        let option = chosen(&open.options, reply).map(str::to_owned);
        Some((open.id, option))
    }

    /// Ends `approval_key` unanswered (its deadline, a cancel): the agent's request id.
    pub fn withdraw(&mut self, approval_key: &str) -> Option<Value> {
        self.0.remove(approval_key).map(|open| open.id)
    }

    /// Every open request ended unanswered (a cancelled turn, a lost process): the
    /// agent's request ids, and the updates that end them in the chats.
    pub fn withdraw_all(&mut self) -> (Vec<Value>, Vec<SessionUpdate>) {
        let mut keys: Vec<String> = self.0.keys().cloned().collect();
        keys.sort();
        let ids = keys.iter().filter_map(|k| self.0.remove(k)).map(|open| open.id).collect();
        (ids, keys.into_iter().map(|approval_key| SessionUpdate::TimedOut { approval_key }).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What claude-code-acp 0.16.2 offered for a Bash command.
    fn claude_code_options() -> Vec<PermissionOption> {
        serde_json::from_value(json!([
            {"kind":"allow_always","name":"Always Allow","optionId":"allow_always"},
            {"kind":"allow_once","name":"Allow","optionId":"allow"},
            {"kind":"reject_once","name":"Reject","optionId":"reject"}
        ]))
        .unwrap()
    }

    fn decide(d: Decision) -> Reply {
        Reply::Decisions { decisions: vec![d], user_edit_content: None }
    }

    #[test]
    fn the_options_become_buttons() {
        assert_eq!(allowed(&claude_code_options()), vec![DecisionType::Approve, DecisionType::ApproveForSession, DecisionType::Reject]);
        let only_always: Vec<PermissionOption> =
            serde_json::from_value(json!([{"kind":"allow_always","name":"Yes, always","optionId":"a"},{"kind":"reject_always","name":"Never","optionId":"n"}]))
                .unwrap();
        assert_eq!(allowed(&only_always), vec![DecisionType::ApproveForSession, DecisionType::Reject]);
    }

    #[test]
    fn a_decision_is_answered_with_the_exact_option_id() {
        let options = claude_code_options();
        assert_eq!(chosen(&options, &decide(Decision::Approve)), Some("allow"));
        assert_eq!(chosen(&options, &decide(Decision::ApproveForSession)), Some("allow_always"));
        assert_eq!(chosen(&options, &decide(Decision::Reject { message: Some("no".into()) })), Some("reject"));
        assert_eq!(chosen(&options, &Reply::Answers { answers: Default::default() }), None, "answers choose nothing: cancelled");
        let never: Vec<PermissionOption> =
            serde_json::from_value(json!([{"kind":"allow_once","name":"Yes","optionId":"y"},{"kind":"reject_always","name":"Never","optionId":"n"}])).unwrap();
        assert_eq!(chosen(&never, &decide(Decision::Reject { message: None })), Some("n"));
        assert_eq!(chosen(&never, &decide(Decision::ApproveForSession)), None, "not offered: cancelled");
    }

    #[test]
    fn a_request_is_answered_once_and_only_by_its_process() {
        let mut open = OpenPermissions::default();
        open.insert("tu1", json!(0), claude_code_options());
        open.insert("tu2", json!("p-2"), claude_code_options());
        assert_eq!(open.reply("tu1", &decide(Decision::Approve)), Some((json!(0), Some("allow".into()))));
        assert_eq!(open.reply("tu1", &decide(Decision::Approve)), None, "answered once");
        assert_eq!(open.reply("elsewhere", &decide(Decision::Approve)), None);
        let (ids, updates) = open.withdraw_all();
        assert_eq!(ids, vec![json!("p-2")]);
        assert_eq!(updates, vec![SessionUpdate::TimedOut { approval_key: "tu2".into() }]);
        assert!(open.is_empty());
    }
}
