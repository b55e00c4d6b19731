//! An ACP permission request's options as the bridge's decisions, and back: the reply
//! the agent gets is the exact `optionId` of the option chosen, or `cancelled`. Pure.
//!
//! ACP's option kinds (`PermissionOptionKind`) map onto the decisions every platform
//! already shows:
//!
//! | the agent's option | the decision |
//! |---|---|
//! | `allow_once` | Approve |
//! | `allow_always` | Approve for session: the agent remembers it, not the bridge |
//! | `reject_once` | Reject |
//! | `reject_always` | Reject, when the agent offers no `reject_once` |
//!
//! Each button is labelled with the option's own name ([`labels`]).
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

/// The longest option name shown on a button (Slack's button text stops at 75
/// characters, Discord's label at 80); longer names are cut with "…".
pub const MAX_LABEL_CHARS: usize = 40;

/// Each offered decision's button label: the agent's own name for the option it
/// answers with ("Always Allow"), so the person picks what the agent offered.
pub fn labels(options: &[PermissionOption]) -> Vec<(DecisionType, String)> {
    allowed(options)
        .into_iter()
        .filter_map(|decision| {
            let option = match decision {
                DecisionType::Approve => by_kind(options, &["allow_once"]),
                DecisionType::ApproveForSession => by_kind(options, &["allow_always"]),
                _ => by_kind(options, &["reject_once", "reject_always"]),
            }?;
            let name = option.name.trim();
            (!name.is_empty()).then(|| (decision, cut(name)))
        })
        .collect()
}

fn by_kind<'a>(options: &'a [PermissionOption], kinds: &[&str]) -> Option<&'a PermissionOption> {
    kinds.iter().find_map(|k| options.iter().find(|o| o.kind == *k))
}

fn cut(name: &str) -> String {
    let name: String = name.chars().filter(|c| !c.is_control()).collect();
    if name.chars().count() <= MAX_LABEL_CHARS {
        return name;
    }
    let mut short: String = name.chars().take(MAX_LABEL_CHARS - 1).collect();
    short.push('…');
    short
}

/// The `optionId` a reply chooses; `None` (answered `cancelled`) when the reply
/// chooses nothing the agent offered.
pub fn chosen<'a>(options: &'a [PermissionOption], reply: &Reply) -> Option<&'a str> {
    let of_kind = |kinds: &[&str]| by_kind(options, kinds).map(|o| o.option_id.as_str());
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
    fn the_buttons_carry_the_agents_own_names() {
        assert_eq!(
            labels(&claude_code_options()),
            vec![
                (DecisionType::Approve, "Allow".to_owned()),
                (DecisionType::ApproveForSession, "Always Allow".to_owned()),
                (DecisionType::Reject, "Reject".to_owned())
            ]
        );
        let long: Vec<PermissionOption> = serde_json::from_value(json!([
            {"kind":"allow_once","name":"Yes, and do not ask again for this exact command in this folder","optionId":"y"},
            {"kind":"reject_once","name":"  ","optionId":"n"}
        ]))
        .unwrap();
        let got = labels(&long);
        assert_eq!(got.len(), 1, "a blank name keeps the bridge's word: {got:?}");
        assert_eq!(got[0].1.chars().count(), MAX_LABEL_CHARS);
        assert!(got[0].1.ends_with('…'));
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
