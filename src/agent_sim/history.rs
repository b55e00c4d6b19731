//! The JSON shapes of history entries (seed 000 format, `GET /sessions/{id}/history`):
//! user messages, assistant texts and approval requests, plus marking a request resolved.
//! `approval_key` and `reviewConfigs` on a request entry are this simulator's extensions;
//! the seed lacks them.

use serde_json::{Value, json};

use super::validate::Reply;

pub(crate) fn user_text(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}], "display_type": "content"})
}

pub(crate) fn assistant_text(text: &str, is_final: bool) -> Value {
    let mut block = json!({"type": "text", "text": text});
    if is_final {
        block["is_final"] = json!(true);
    }
    json!({"role": "assistant", "content": [block], "display_type": "content"})
}

pub(crate) fn approval_request(key: &str, actions: &[Value], review_configs: &[Value]) -> Value {
    json!({
        "role": "assistant",
        "content": [{
            "type": "approval_request",
            "approval_key": key,
            "isResolved": false,
            "actionRequests": actions,
            "reviewConfigs": review_configs,
        }],
        "display_type": "content",
    })
}

/// Marks a request entry resolved. `reply` is `None` when it timed out or its turn was
/// cancelled: resolved, but nothing submitted. Like seed 000, answers are also copied
/// into the question action's `args.answers`.
pub(crate) fn mark_resolved(entry: &mut Value, reply: Option<&Reply>) {
    let Some(block) = entry.pointer_mut("/content/0").and_then(Value::as_object_mut) else {
        tracing::warn!("history entry is not a request; cannot mark it resolved");
        return;
    };
    block.insert("isResolved".into(), json!(true));
    match reply {
        Some(Reply::Answers(answers)) => {
            if let Some(args) = block.get_mut("actionRequests").and_then(|a| a.pointer_mut("/0/args")).and_then(Value::as_object_mut) {
                args.insert("answers".into(), Value::Object(answers.clone()));
            }
            block.insert("submittedAnswers".into(), Value::Object(answers.clone()));
        }
        Some(Reply::Decisions { decisions, .. }) => {
            block.insert("submittedDecisions".into(), Value::Array(decisions.clone()));
        }
        None => {}
    }
}
