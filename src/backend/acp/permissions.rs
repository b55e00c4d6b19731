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

use serde::Deserialize;

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
}
