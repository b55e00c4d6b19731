//! `hitl-bridge cancel KEY`: an operator ends a pending request, safely beside running
//! replicas. The store's first-wins conditional settle decides (a click or a deadline
//! that got there first wins, and the command reports it); the agent gets what it
//! would get on expiry, so it never waits on a request nobody can answer any more:
//! - a chat turn's tool-call approval: reject decisions for every action, with the
//!   message "cancelled by an operator[: REASON]", queued in the outbox in the same
//!   transaction (the replica holding the session's lease delivers it);
//! - a chat turn's question: no reply, as on expiry (PROTOCOL.md §6: the bridge never
//!   invents answers); the agent stops waiting at its own timeout;
//! - a request pushed over the HTTP API: its status becomes `cancelled`, which the
//!   agent reads (GET, long-poll, callback) as after its own DELETE.
//!
//! Running bridges update the messages that show it at their next rescan (a notice row
//! claimed once, see [`crate::store::Store::claim_outside_settles`]).

use super::{AdminError, rfc3339_ms};
use crate::interaction::{Actor, Decider, Delivery, Interaction, Origin, RequestKind, Status};
use crate::protocol::{Command, Decision, Reply};
use crate::store::{AuditEntry, Store};

/// The longest reason accepted: it is shown in chats and sent to the agent.
pub const MAX_REASON_CHARS: usize = 500;

/// What `cancel` did.
#[derive(Debug, Clone, PartialEq)]
pub enum CancelOutcome {
    /// Cancelled now; `command` is what was queued for the agent, if anything.
    Cancelled { interaction: Interaction, command: Option<Command> },
    /// It had already ended (as stored now); nothing changed.
    AlreadySettled(Interaction),
}

/// The operator as the audit log names them: platform `cli`, their login name
/// (`operator` when it is blank, e.g. `USER` set but empty in a container).
pub fn operator(name: &str) -> Actor {
    let name = Some(name.trim()).filter(|n| !n.is_empty()).unwrap_or("operator");
    Actor::new("cli", name, name)
}

/// The status reason and the agent's reject message: "cancelled by an operator", with
/// `: REASON` when one is given (trimmed; blank counts as none).
pub fn reason_text(reason: Option<&str>) -> Result<String, AdminError> {
    match reason.map(str::trim).filter(|r| !r.is_empty()) {
        None => Ok("cancelled by an operator".to_owned()),
        Some(r) if r.chars().count() > MAX_REASON_CHARS => Err(AdminError::ReasonTooLong),
        Some(r) => Ok(format!("cancelled by an operator: {r}")),
    }
}

/// The interaction `cancel KEY [--session S]` means among those with that key: the
/// one still pending (several pending in different sessions need `--session`), else
/// the newest, to report how it ended.
pub fn pick(mut candidates: Vec<Interaction>, key: &str, session: Option<&str>) -> Result<Interaction, AdminError> {
    if let Some(session) = session {
        candidates.retain(|i| i.session_id == session);
    }
    let pending: Vec<&Interaction> = candidates.iter().filter(|i| i.status.is_pending()).collect();
    match pending.as_slice() {
        [one] => return Ok((*one).clone()),
        [_, _, ..] => {
            return Err(AdminError::Ambiguous { key: key.to_owned(), sessions: pending.iter().map(|i| i.session_id.clone()).collect() });
        }
        [] => {}
    }
    candidates.into_iter().max_by_key(|i| i.created_at_ms).ok_or_else(|| AdminError::UnknownKey { key: key.to_owned(), session: session.map(str::to_owned) })
}

/// What the agent is sent for a cancelled `i`: reject decisions saying `reason` for a
/// chat turn's approval; nothing for a question or a pushed request (module doc).
pub fn agent_reply(i: &Interaction, reason: &str) -> Option<Reply> {
    match (&i.origin, &i.request.kind) {
        (Origin::Chat, RequestKind::Approval { actions }) => {
            Some(Reply::Decisions { decisions: vec![Decision::Reject { message: Some(reason.to_owned()) }; actions.len()], user_edit_content: None })
        }
        _ => None,
    }
}

/// Cancels the request with approval key `key` (in `session`, when given) at `now_ms`
/// on behalf of `by`.
pub async fn run(store: &Store, key: &str, session: Option<&str>, reason: Option<&str>, by: &Actor, now_ms: i64) -> Result<CancelOutcome, AdminError> {
    let reason = reason_text(reason)?;
    let mut interaction = pick(store.interactions_with_key(key).await?, key, session)?;
    if !interaction.cancel(now_ms, &reason) {
        return Ok(CancelOutcome::AlreadySettled(interaction));
    }
    let command = agent_reply(&interaction, &reason).map(|reply| {
        interaction.reply = Some(reply.clone());
        interaction.delivery = Delivery::Queued;
        Command::Approval { session_id: interaction.session_id.clone(), approval_key: key.to_owned(), reply }
    });
    let mut audit = AuditEntry::for_settled(&interaction, now_ms);
    audit.actor = Some(by.clone());
    if store.settle_outside(&interaction, command.as_ref(), &audit).await? {
        return Ok(CancelOutcome::Cancelled { interaction, command });
    }
    // Someone settled it between our read and our write: report what they stored.
    let current =
        store.interaction(&interaction.id).await?.ok_or_else(|| AdminError::UnknownKey { key: key.to_owned(), session: session.map(str::to_owned) })?;
    Ok(CancelOutcome::AlreadySettled(current))
}

/// The line `cancel` prints.
pub fn describe(outcome: &CancelOutcome) -> String {
    match outcome {
        CancelOutcome::Cancelled { interaction: i, command } => {
            let what = match (command, &i.origin) {
                (Some(_), _) => match &i.status {
                    Status::Cancelled { reason, .. } => format!("queued for the agent: reject, {reason:?}"),
                    _ => "queued for the agent: reject".to_owned(),
                },
                (None, Origin::Pushed { .. }) => "the agent reads status \"cancelled\" over the HTTP API".to_owned(),
                (None, Origin::Chat) => "a question gets no reply; the agent stops waiting at its own timeout".to_owned(),
            };
            format!("cancelled {} (session {}); {what}", i.approval_key(), i.session_id)
        }
        CancelOutcome::AlreadySettled(i) => {
            let how = match &i.status {
                Status::Pending => "is still pending".to_owned(),
                Status::Resolved { by: Decider::Person(actor), at_ms } => {
                    format!("was already resolved by {} ({}:{}) at {}", actor.name, actor.platform, actor.user_id, rfc3339_ms(*at_ms))
                }
                Status::Resolved { by: Decider::Elsewhere, at_ms } => format!("was already resolved by another client at {}", rfc3339_ms(*at_ms)),
                Status::Expired { at_ms, .. } => format!("had already expired at {}", rfc3339_ms(*at_ms)),
                Status::Cancelled { at_ms, reason } => format!("was already cancelled at {} ({reason})", rfc3339_ms(*at_ms)),
            };
            format!("{} (session {}) {how}; nothing changed", i.approval_key(), i.session_id)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::{Approvers, RequestBuilder, TimeoutDefaults};
    use crate::protocol::ActionRequest;
    use serde_json::json;

    fn interaction(session: &str, key: &str, name: &str, created: i64) -> Interaction {
        let args = if name == "ask_user_question" { json!({"questions": [{"question": "Q?", "options": [{"label": "A"}]}]}) } else { json!({}) };
        let actions = vec![ActionRequest { name: name.into(), args, description: None, tool_use_id: None }];
        let request = RequestBuilder::start(key, actions, vec![], None).finish(TimeoutDefaults::default()).expect("request");
        Interaction::new(format!("{session}-{key}"), session.into(), request, None, created)
    }

    #[test]
    fn the_operator_always_has_a_name() {
        assert_eq!(operator(" alice "), Actor::new("cli", "alice", "alice"));
        assert_eq!(operator(""), Actor::new("cli", "operator", "operator"));
    }

    #[test]
    fn reason_is_trimmed_bounded_and_optional() {
        assert_eq!(reason_text(None).unwrap(), "cancelled by an operator");
        assert_eq!(reason_text(Some("  ")).unwrap(), "cancelled by an operator");
        assert_eq!(reason_text(Some(" maintenance ")).unwrap(), "cancelled by an operator: maintenance");
        assert!(matches!(reason_text(Some(&"x".repeat(MAX_REASON_CHARS + 1))), Err(AdminError::ReasonTooLong)));
    }

    #[test]
    fn pick_prefers_the_pending_one_and_needs_a_session_when_two_are() {
        let mut done = interaction("A", "K", "t", 1);
        assert!(done.expire(5, false));
        let open = interaction("B", "K", "t", 2);
        assert_eq!(pick(vec![done.clone(), open.clone()], "K", None).unwrap(), open);
        assert_eq!(pick(vec![done.clone(), open.clone()], "K", Some("A")).unwrap(), done);
        let other = interaction("C", "K", "t", 3);
        let err = pick(vec![open.clone(), other], "K", None).unwrap_err();
        assert_eq!(err.to_string(), "approval key \"K\" is pending in several sessions (B, C); pick one with --session");
        let err = pick(vec![open], "K", Some("Z")).unwrap_err();
        assert_eq!(err.to_string(), "no request has approval key \"K\" in session \"Z\"");
    }

    #[test]
    fn only_a_chat_approval_gets_a_reply() {
        let approval = interaction("S", "S_1", "execute_trade", 0);
        assert_eq!(
            serde_json::to_value(agent_reply(&approval, "cancelled by an operator: x")).unwrap(),
            json!({"decisions": [{"type": "reject", "message": "cancelled by an operator: x"}]})
        );
        assert_eq!(agent_reply(&interaction("S", "S_2", "ask_user_question", 0), "r"), None);
        let mut pushed = approval.clone();
        pushed.origin = Origin::Pushed { agent: "ci".into(), approvers: Some(Approvers::default()) };
        assert_eq!(agent_reply(&pushed, "r"), None);
    }

    #[test]
    fn describe_says_what_happened() {
        let mut i = interaction("S", "S_1", "execute_trade", 0);
        assert!(i.cancel(10, "cancelled by an operator: x"));
        let command =
            agent_reply(&i, "cancelled by an operator: x").map(|reply| Command::Approval { session_id: "S".into(), approval_key: "S_1".into(), reply });
        assert_eq!(
            describe(&CancelOutcome::Cancelled { interaction: i.clone(), command }),
            "cancelled S_1 (session S); queued for the agent: reject, \"cancelled by an operator: x\""
        );
        let mut decided = interaction("S", "S_1", "execute_trade", 0);
        decided.status = Status::Resolved { by: Decider::Person(Actor::new("telegram", "42", "Thảo")), at_ms: 1_748_766_600_000 };
        assert_eq!(
            describe(&CancelOutcome::AlreadySettled(decided)),
            "S_1 (session S) was already resolved by Thảo (telegram:42) at 2025-06-01T08:30:00.000Z; nothing changed"
        );
    }
}
