//! Tool-call decisions while they are being made: one slot per action, checked
//! against what each action allows, and always sent full length in action order.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::policy::Vote;
use super::request::Action;
use crate::protocol::{Decision, DecisionType, EditedAction};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DecisionDraft {
    /// `None` until that action is decided.
    pub decisions: Vec<Option<Decision>>,
    /// A free-text comment for the whole request (seed 002 `user_edit_content`).
    pub user_edit_content: Option<String>,
    /// Under a quorum policy: who voted for what ([`super::policy::quorum`]). Absent in
    /// rows stored before policies existed, and whenever nobody voted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub votes: Vec<Vote>,
}

impl DecisionDraft {
    pub fn new(actions: usize) -> Self {
        Self { decisions: vec![None; actions], user_edit_content: None, votes: Vec::new() }
    }

    /// Indexes of the actions still undecided.
    pub fn missing(&self) -> Vec<usize> {
        self.decisions.iter().enumerate().filter(|(_, d)| d.is_none()).map(|(i, _)| i).collect()
    }

    /// All decisions, in action order, once every action has one.
    pub fn complete(&self) -> Option<Vec<Decision>> {
        self.decisions.iter().cloned().collect()
    }
}

/// Why an edit was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("invalid JSON: {0}")]
    InvalidJson(String),
    #[error("the args must be a JSON object, not {0}")]
    NotAnObject(&'static str),
}

/// An `edit` decision from the text a person typed. The tool name is always the
/// original one: people edit arguments, not which tool runs.
pub fn edit_decision(action: &Action, typed: &str) -> Result<Decision, EditError> {
    let value: Value = serde_json::from_str(typed.trim()).map_err(|e| EditError::InvalidJson(e.to_string()))?;
    match value {
        Value::Object(args) => Ok(Decision::Edit { edited_action: EditedAction { name: action.name.clone(), args } }),
        other => Err(EditError::NotAnObject(json_kind(&other))),
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Whether `decision` is one the action allows.
pub fn is_allowed(action: &Action, decision: DecisionType) -> bool {
    action.allowed.contains(&decision)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn trade() -> Action {
        Action {
            name: "execute_trade".into(),
            args: json!({"symbol":"VNM","quantity":100}),
            description: None,
            tool_use_id: None,
            allowed: DecisionType::DEFAULT_ALLOWED.to_vec(),
            labels: Vec::new(),
        }
    }

    #[test]
    fn edit_keeps_the_tool_name_and_the_object() {
        let d = edit_decision(&trade(), r#" {"symbol":"VNM","quantity":50} "#).unwrap();
        assert_eq!(serde_json::to_value(&d).unwrap(), json!({"type":"edit","edited_action":{"name":"execute_trade","args":{"symbol":"VNM","quantity":50}}}));
    }

    #[test]
    fn edit_refuses_bad_json_and_non_objects() {
        assert!(matches!(edit_decision(&trade(), "{quantity: 50"), Err(EditError::InvalidJson(_))));
        assert_eq!(edit_decision(&trade(), "[1,2]"), Err(EditError::NotAnObject("an array")));
        assert_eq!(edit_decision(&trade(), "\"x\""), Err(EditError::NotAnObject("a string")));
        assert_eq!(edit_decision(&trade(), "null"), Err(EditError::NotAnObject("null")));
    }

    #[test]
    fn draft_is_complete_only_when_every_action_is_decided() {
        let mut d = DecisionDraft::new(2);
        assert_eq!(d.missing(), vec![0, 1]);
        d.decisions[1] = Some(Decision::Approve);
        assert_eq!(d.complete(), None);
        d.decisions[0] = Some(Decision::Reject { message: None });
        assert_eq!(d.complete(), Some(vec![Decision::Reject { message: None }, Decision::Approve]));
    }
}
