//! Reconciliation from the backend's history (PROTOCOL.md §6): which requests the
//! backend already considers resolved, and whether one of them is a given
//! interaction. Matching is by `approval_key` when the backend includes it, else by
//! the requested actions (history may add fields to the args, e.g. `answers`).
//!
//! [`read`] and [`reconcile`] run after every (re)connect: the history is read, queued
//! replies the backend already has are dropped, and the rest is reported to the engine
//! (the agent's texts in it are [`super::last_words`]' business). A request the
//! history shows still waiting, with its `approval_key`, is reported too: the bridge
//! may have died between the backend sending it and storing it, and the engine shows
//! it unless it already knows the key.

use super::SessionUpdate;
pub use crate::interaction::updates::{HistoryResolution, resolution_for};
use crate::interaction::{Interaction, Request, RequestBuilder, TimeoutDefaults};
use crate::protocol::{Command, HistoryBlock, HistoryMessage, Reply};
use crate::store::{Store, StoreError};

/// Reads `template` (with `{session_id}` replaced). A history that cannot be read is
/// logged and `None`: the connection goes on without it, and every unproven command is
/// sent again.
pub async fn read(http: &reqwest::Client, template: &str, session_id: &str) -> Option<Vec<HistoryMessage>> {
    let url = template.replace("{session_id}", session_id);
    fetch(http, &url).await.inspect_err(|e| tracing::warn!(%session_id, %url, error = %e, "cannot read history; continuing without it")).ok()
}

/// What the engine should learn from the history `messages`: the requests still waiting
/// that it never stored, the resolved requests, and a `Delivered` for each queued reply
/// the backend already has. Those replies are dropped from the outbox first, so they are
/// not sent twice.
pub async fn reconcile(store: &Store, messages: &[HistoryMessage], session_id: &str, defaults: TimeoutDefaults) -> Result<Vec<SessionUpdate>, StoreError> {
    let session = store.interactions_in_session(session_id).await?;
    // Only requests this bridge never stored; the engine would ignore the others anyway.
    let mut updates: Vec<SessionUpdate> = waiting_requests(messages, defaults)
        .into_iter()
        .filter(|request| !session.iter().any(|known| known.approval_key() == request.approval_key))
        .map(SessionUpdate::Request)
        .collect();
    let resolved = resolved_requests(messages.to_vec());
    if !resolved.is_empty() {
        let delivered = drop_answered_commands(store, session_id, &session, &resolved).await?;
        updates.push(SessionUpdate::ResolvedInHistory(resolved));
        updates.extend(delivered.into_iter().map(|approval_key| SessionUpdate::Delivered { approval_key }));
    }
    Ok(updates)
}

async fn fetch(http: &reqwest::Client, url: &str) -> Result<Vec<HistoryMessage>, reqwest::Error> {
    http.get(url).send().await?.error_for_status()?.json().await
}

/// Returns the approval keys whose queued replies were dropped.
async fn drop_answered_commands(store: &Store, session_id: &str, session: &[Interaction], resolved: &[HistoryResolution]) -> Result<Vec<String>, StoreError> {
    let mut delivered = Vec::new();
    for (_, command) in store.outbox_for_session(session_id).await? {
        let Command::Approval { approval_key, .. } = command else { continue };
        let Some(interaction) = session.iter().find(|i| i.approval_key() == approval_key) else { continue };
        if resolution_for(resolved, interaction, session).is_some() {
            let dropped = store.drop_outbox_for_key(session_id, &approval_key).await?;
            tracing::info!(%session_id, %approval_key, dropped = dropped.len(), "history shows the backend has this decision; not re-sending");
            if !dropped.is_empty() {
                delivered.push(approval_key);
            }
        }
    }
    Ok(delivered)
}

/// Requests the history shows still waiting, as requests to show. Only those with an
/// `approval_key`: without it a reply could not name the request. Their deadline starts
/// now (history does not say when they were asked); without `reviewConfigs` every
/// action allows approve, edit and reject.
pub fn waiting_requests(messages: &[HistoryMessage], defaults: TimeoutDefaults) -> Vec<Request> {
    messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|block| match block {
            HistoryBlock::ApprovalRequest { approval_key: Some(key), is_resolved: false, action_requests, review_configs, .. } => {
                RequestBuilder::start(key, action_requests.clone(), review_configs.clone(), None)
                    .finish(defaults)
                    .inspect_err(|e| tracing::warn!(approval_key = %key, error = %e, "history shows a waiting request the bridge cannot show"))
                    .ok()
            }
            _ => None,
        })
        .collect()
}

pub fn resolved_requests(messages: Vec<HistoryMessage>) -> Vec<HistoryResolution> {
    messages
        .into_iter()
        .flat_map(|m| m.content)
        .filter_map(|block| match block {
            HistoryBlock::ApprovalRequest { approval_key, is_resolved: true, action_requests, submitted_answers, submitted_decisions, .. } => {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ActionRequest, Delta};

    fn seed_interaction() -> Interaction {
        let delta: crate::protocol::BackendEvent =
            serde_json::from_str(include_str!("../../tests/fixtures/seed000/02_stream_approval_request_delta_questions.json")).unwrap();
        let crate::protocol::BackendEvent::ContentBlockDelta { delta, .. } = delta else { panic!() };
        let mut b = RequestBuilder::start("session-id_1", vec![], vec![], None);
        b.apply_delta(Delta { ..delta });
        Interaction::new("i1".into(), "session-id".into(), b.finish(TimeoutDefaults::default()).unwrap(), None, 0)
    }

    #[test]
    fn a_waiting_request_with_its_key_is_recovered_and_others_are_not() {
        let messages: Vec<HistoryMessage> = serde_json::from_value(serde_json::json!([
            {"role":"assistant","content":[{"type":"approval_request","approval_key":"s_1","isResolved":false,
                "actionRequests":[{"name":"execute_trade","args":{"symbol":"VNM"}}],
                "reviewConfigs":[{"action_name":"execute_trade","allowed_decisions":["approve","reject"]}]}]},
            {"role":"assistant","content":[{"type":"approval_request","isResolved":false,
                "actionRequests":[{"name":"no_key","args":{}}]}]},
            {"role":"assistant","content":[{"type":"approval_request","approval_key":"s_2","isResolved":true,
                "actionRequests":[{"name":"done","args":{}}]}]},
            {"role":"assistant","content":[{"type":"approval_request","approval_key":"s_3","isResolved":false,"actionRequests":[]}]}
        ]))
        .unwrap();
        let waiting = waiting_requests(&messages, TimeoutDefaults::default());
        assert_eq!(waiting.len(), 1, "{waiting:?}");
        assert_eq!(waiting[0].approval_key, "s_1");
        let action = &waiting[0].actions()[0];
        assert_eq!((action.name.as_str(), &action.args), ("execute_trade", &serde_json::json!({"symbol":"VNM"})));
        assert_eq!(action.allowed, vec![crate::protocol::DecisionType::Approve, crate::protocol::DecisionType::Reject]);
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
    fn a_request_asked_again_is_never_matched_by_args_alone() {
        let first = seed_interaction();
        let mut again = seed_interaction();
        again.id = "i2".into();
        again.request.approval_key = "session-id_2".into();
        let args = first.request.actions()[0].args.clone();
        let action = ActionRequest { name: "ask_user_question".into(), args, description: None, tool_use_id: None };
        let by_args = HistoryResolution { approval_key: None, action_requests: vec![action], reply: None };
        let resolved = [by_args];
        assert!(resolution_for(&resolved, &first, std::slice::from_ref(&first)).is_some(), "unique: matched by args");
        let session = [first.clone(), again.clone()];
        assert!(resolution_for(&resolved, &again, &session).is_none(), "asked again: args alone do not decide");
        assert!(resolution_for(&resolved, &first, &session).is_none());
        let by_key = [HistoryResolution { approval_key: Some("session-id_2".into()), ..resolved[0].clone() }];
        assert!(resolution_for(&by_key, &again, &session).is_some(), "the key decides");
        assert!(resolution_for(&by_key, &first, &session).is_none());
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
