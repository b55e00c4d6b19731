//! Reconciliation from the backend's history (PROTOCOL.md §6): which requests the
//! backend already considers resolved, and whether one of them is a given
//! interaction. Matching is by `approval_key` when the backend includes it, else by
//! the requested actions (history may add fields to the args, e.g. `answers`).
//!
//! [`reconcile`] runs after every (re)connect: it reads the history, drops queued
//! replies the backend already has, and reports the rest to the engine.

use serde_json::Value;

use super::SessionUpdate;
use crate::interaction::Interaction;
use crate::protocol::{ActionRequest, Command, HistoryBlock, HistoryMessage, Reply};
use crate::store::{Store, StoreError};

/// Reads `template` (with `{session_id}` replaced) and returns what the engine should
/// learn, if anything. Approval commands the backend already has are dropped from
/// the outbox first, so they are not sent twice. A history that cannot be read is
/// logged and skipped: the connection goes on without it.
pub async fn reconcile(store: &Store, http: &reqwest::Client, template: &str, session_id: &str) -> Result<Option<SessionUpdate>, StoreError> {
    let url = template.replace("{session_id}", session_id);
    let messages: Vec<HistoryMessage> = match fetch(http, &url).await {
        Ok(messages) => messages,
        Err(e) => {
            tracing::warn!(%session_id, %url, error = %e, "cannot read history; continuing without it");
            return Ok(None);
        }
    };
    let resolved = resolved_requests(messages);
    if resolved.is_empty() {
        return Ok(None);
    }
    drop_answered_commands(store, session_id, &resolved).await?;
    Ok(Some(SessionUpdate::ResolvedInHistory(resolved)))
}

async fn fetch(http: &reqwest::Client, url: &str) -> Result<Vec<HistoryMessage>, reqwest::Error> {
    http.get(url).send().await?.error_for_status()?.json().await
}

async fn drop_answered_commands(store: &Store, session_id: &str, resolved: &[HistoryResolution]) -> Result<(), StoreError> {
    for (_, command) in store.outbox_for_session(session_id).await? {
        let Command::Approval { approval_key, .. } = &command else { continue };
        let Some(interaction) = store.interaction_by_key(session_id, approval_key).await? else { continue };
        if resolved.iter().any(|r| r.matches(&interaction)) {
            let dropped = store.drop_outbox_for_key(session_id, approval_key).await?;
            tracing::info!(%session_id, %approval_key, dropped, "history shows the backend has this decision; not re-sending");
        }
    }
    Ok(())
}

/// A request the history marks `isResolved`.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryResolution {
    pub approval_key: Option<String>,
    pub action_requests: Vec<ActionRequest>,
    pub reply: Option<Reply>,
}

pub fn resolved_requests(messages: Vec<HistoryMessage>) -> Vec<HistoryResolution> {
    messages
        .into_iter()
        .flat_map(|m| m.content)
        .filter_map(|block| match block {
            HistoryBlock::ApprovalRequest { approval_key, is_resolved: true, action_requests, submitted_answers, submitted_decisions } => {
                let reply = match (submitted_decisions, submitted_answers) {
                    (Some(decisions), _) => Some(Reply::Decisions { decisions, user_edit_content: None }),
                    (None, Some(answers)) => Some(Reply::Answers { answers }),
                    (None, None) => None,
                };
                Some(HistoryResolution { approval_key, action_requests, reply })
            }
            _ => None,
        })
        .collect()
}

impl HistoryResolution {
    pub fn matches(&self, interaction: &Interaction) -> bool {
        if let Some(key) = &self.approval_key {
            return key == interaction.approval_key();
        }
        let actions = interaction.request.actions();
        actions.len() == self.action_requests.len()
            && actions.iter().zip(&self.action_requests).all(|(ours, theirs)| {
                ours.name == theirs.name && args_contained(&ours.args, &theirs.args)
            })
    }
}

/// Every field of `ours` appears, equal, in `theirs`.
fn args_contained(ours: &Value, theirs: &Value) -> bool {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => a.iter().all(|(k, v)| b.get(k) == Some(v)),
        _ => ours == theirs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::{RequestBuilder, TimeoutDefaults};
    use crate::protocol::Delta;

    fn seed_interaction() -> Interaction {
        let delta: crate::protocol::BackendEvent = serde_json::from_str(include_str!("../../tests/fixtures/seed000/02_stream_approval_request_delta_questions.json")).unwrap();
        let crate::protocol::BackendEvent::ContentBlockDelta { delta, .. } = delta else { panic!() };
        let mut b = RequestBuilder::start("session-id_1", vec![], vec![], None);
        b.apply_delta(Delta { ..delta });
        Interaction::new("i1".into(), "session-id".into(), b.finish(TimeoutDefaults::default()).unwrap(), None, 0)
    }

    #[test]
    fn seed_000_history_marks_the_question_resolved() {
        let message: HistoryMessage = serde_json::from_str(include_str!("../../tests/fixtures/seed000/09_history_resolved_question_message.json")).unwrap();
        let resolved = resolved_requests(vec![message]);
        assert_eq!(resolved.len(), 1);
        let Some(Reply::Answers { answers }) = &resolved[0].reply else { panic!() };
        assert_eq!(answers.get("Thời gian nắm giữ dự kiến?"), Some("Trên 3 năm"));
        // The history's descriptions are "..." (abridged), so it is a different request.
        assert!(!resolved[0].matches(&seed_interaction()));
    }

    #[test]
    fn two_rounds_history_parses_and_an_exact_key_matches() {
        let messages: Vec<HistoryMessage> = serde_json::from_str(include_str!("../../tests/fixtures/seed000/10_history_two_rounds.json")).unwrap();
        let mut resolved = resolved_requests(messages);
        assert_eq!(resolved.len(), 2);
        resolved[0].approval_key = Some("session-id_1".into());
        assert!(resolved[0].matches(&seed_interaction()));
    }

    #[test]
    fn history_args_may_add_fields() {
        let i = seed_interaction();
        let mut args = i.request.actions()[0].args.clone();
        args["answers"] = serde_json::json!({"Q":"A"});
        let r = HistoryResolution {
            approval_key: None,
            action_requests: vec![ActionRequest { name: "ask_user_question".into(), args, description: None, tool_use_id: None }],
            reply: None,
        };
        assert!(r.matches(&i));
    }
}
