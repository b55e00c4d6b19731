//! What an `audit_log` entry says: one per settled interaction (who, what, how fast,
//! and what was asked versus what was sent), and entries for refused attempts,
//! escalation steps performed (`escalated`) and remembered rules revoked
//! (`rule_revoked`). Entries are built here, from the core's types, so every writer
//! words them the same way; [`super::audit`] writes and reads them.

use serde_json::Value;

use crate::interaction::policy::{EscalationStep, Mention, PolicySettlement, StepAction};
use crate::interaction::{Actor, Decider, Interaction, RememberedRule, Status};
use crate::protocol::{Decision, Reply};

#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    /// When the interaction was settled (unix ms).
    pub at_ms: i64,
    pub session_id: String,
    pub approval_key: String,
    pub interaction_id: String,
    /// The person who decided; `None` when the backend or the bridge ended it.
    pub actor: Option<Actor>,
    /// `resolved`, `resolved_elsewhere`, `expired`, `expired_by_backend`, `cancelled`,
    /// `refused` (set by the caller; no status maps to it), `escalated` or
    /// `rule_revoked`.
    pub outcome: String,
    /// The reply as sent (or as received from elsewhere), as JSON.
    pub reply: Option<Value>,
    /// An array: each action's args as the backend asked.
    pub original_args: Value,
    /// An array with each action's edited args, `null` where not edited; `None` when
    /// nothing was edited.
    pub edited_args: Option<Value>,
    /// From creation to settling.
    pub latency_ms: i64,
    /// The agent (HTTP API token name) that pushed the request; `None` for chat turns.
    pub agent: Option<String>,
    /// `approval` or `question`; `rule` for an entry about a remembered rule; `None`
    /// when no request was involved (a refused message) or for entries written before
    /// kinds were kept.
    pub kind: Option<String>,
    /// The requested actions' names, in order; `None` for entries written before
    /// tool names were kept (the export then reads them from the interaction).
    pub tools: Option<Vec<String>>,
    /// Why it was cancelled or refused; which rule, fallback or quorum of voters
    /// settled it under a policy; the escalation step performed; the rule revoked.
    pub reason: Option<String>,
    /// How many attempts the entry stands for: 1, except for a stranger's refusal,
    /// written once per refusal window and counted up in place while it lasts
    /// ([`super::Store::open_refusal_window`], [`super::Store::count_refused_attempt`]).
    pub attempts: i64,
}

impl AuditEntry {
    /// The entry for a settled interaction. Its time is the settle time from the
    /// status; `now_ms` stands in only if the interaction is (wrongly) still pending.
    pub fn for_settled(i: &Interaction, now_ms: i64) -> AuditEntry {
        let at_ms = settled_at(&i.status).unwrap_or(now_ms);
        let (kind, tools) = kind_and_tools(i);
        AuditEntry {
            at_ms,
            session_id: i.session_id.clone(),
            approval_key: i.approval_key().to_owned(),
            interaction_id: i.id.clone(),
            actor: match &i.status {
                Status::Resolved { by: Decider::Person(actor), .. } => Some(actor.clone()),
                _ => None,
            },
            outcome: outcome(&i.status).to_owned(),
            reply: i.reply.as_ref().and_then(reply_json),
            original_args: Value::Array(i.request.actions().iter().map(|a| a.args.clone()).collect()),
            edited_args: i.reply.as_ref().and_then(edited_args),
            latency_ms: at_ms.saturating_sub(i.created_at_ms),
            agent: i.origin.agent().map(str::to_owned),
            kind: Some(kind.to_owned()),
            tools: Some(tools),
            reason: settled_reason(i),
            attempts: 1,
        }
    }

    /// The entry for an escalation step performed at `now_ms` (outcome `escalated`):
    /// the reason says which (`remind role:900 after 300 s`, `show_in discord:1300
    /// after 900 s`).
    pub fn for_escalation(i: &Interaction, step: &EscalationStep, now_ms: i64) -> AuditEntry {
        let (kind, tools) = kind_and_tools(i);
        let what = match &step.action {
            StepAction::Remind { mention } => format!("remind {}", mention_label(mention)),
            StepAction::ShowIn { target } => format!("show_in {target}"),
        };
        AuditEntry {
            at_ms: now_ms,
            session_id: i.session_id.clone(),
            approval_key: i.approval_key().to_owned(),
            interaction_id: i.id.clone(),
            actor: None,
            outcome: "escalated".to_owned(),
            reply: None,
            original_args: Value::Array(i.request.actions().iter().map(|a| a.args.clone()).collect()),
            edited_args: None,
            latency_ms: now_ms.saturating_sub(i.created_at_ms),
            agent: i.origin.agent().map(str::to_owned),
            kind: Some(kind.to_owned()),
            tools: Some(tools),
            reason: Some(format!("{what} after {} s", step.after_secs)),
            attempts: 1,
        }
    }

    /// The entry for a remembered rule revoked by `by` at `now_ms` (outcome
    /// `rule_revoked`, kind `rule`): `interaction_id` is the rule's id (the interaction
    /// that set it), `tools` its tool, `original_args` its args (`[null]`: any args),
    /// and the reason says what it was and who set it when.
    pub fn for_rule_revoked(rule: &RememberedRule, by: &Actor, now_ms: i64) -> AuditEntry {
        AuditEntry { reason: Some(format!("revoked {}", rule_label(rule))), ..rule_entry(rule, by, "rule_revoked", None, now_ms) }
    }

    /// The entry for someone who may not revoke `rule` trying to (outcome `refused`,
    /// kind `rule`), saying `why`.
    pub fn for_refused_revoke(rule: &RememberedRule, by: &Actor, why: &str, now_ms: i64) -> AuditEntry {
        let tried = serde_json::json!({ "attempted": "revoke_rule", "rule": rule.id, "reason": why });
        AuditEntry { reason: Some(why.to_owned()), ..rule_entry(rule, by, "refused", Some(tried), now_ms) }
    }
}

/// What the entries about a rule share.
fn rule_entry(rule: &RememberedRule, by: &Actor, outcome: &str, reply: Option<Value>, now_ms: i64) -> AuditEntry {
    AuditEntry {
        at_ms: now_ms,
        session_id: rule.session_id.clone().unwrap_or_default(),
        approval_key: String::new(),
        interaction_id: rule.id.clone(),
        actor: Some(by.clone()),
        outcome: outcome.to_owned(),
        reply,
        original_args: Value::Array(vec![rule.args.clone().unwrap_or(Value::Null)]),
        edited_args: None,
        latency_ms: 0,
        agent: None,
        kind: Some("rule".to_owned()),
        tools: Some(vec![rule.tool.clone()]),
        reason: None,
        attempts: 1,
    }
}

/// `always rule id-1 for execute_trade on stream (policy trades), set by Thảo at
/// 2025-06-01T08:30:00.000Z`.
fn rule_label(rule: &RememberedRule) -> String {
    format!(
        "{} rule {} for {} on {} (policy {}), set by {} at {}",
        rule.scope.as_str(),
        rule.id,
        rule.tool,
        rule.backend,
        rule.policy,
        rule.set_by.name,
        rfc3339_ms(rule.set_at_ms)
    )
}

/// A mention as the config writes it: `approvers`, `role:ID`, `platform:user_id`.
fn mention_label(mention: &Mention) -> String {
    match mention {
        Mention::Approvers => "approvers".to_owned(),
        Mention::Role { role_id } => format!("role:{role_id}"),
        Mention::User { platform, user_id } => format!("{platform}:{user_id}"),
    }
}

/// Why a settled interaction ended, where the outcome alone does not say: a cancel's
/// reason, the rule or fallback of the policy that settled it, or the voters of a
/// quorum.
fn settled_reason(i: &Interaction) -> Option<String> {
    if let Status::Cancelled { reason, .. } = &i.status {
        return Some(reason.clone());
    }
    match &i.settled_by_policy {
        Some(PolicySettlement::Rule { rule_id, set_by, set_at_ms, .. }) => {
            Some(format!("approved by rule {rule_id} set by {} at {}", set_by.name, rfc3339_ms(*set_at_ms)))
        }
        Some(PolicySettlement::Fallback { decision, after_secs }) => {
            let policy = i.policy.as_ref().map_or("", |p| p.name.as_str());
            Some(format!("fallback {} by policy {policy} after {after_secs} s", decision.as_str()))
        }
        None => quorum_reason(i),
    }
}

/// Every voter of a request resolved under a quorum: `quorum 2 of 2: Lan, Minh`, with
/// `; other votes: Hoa` for votes on another decision set, or, when a vote that lets
/// nothing run ended it early, `quorum not reached (1 of 2), stopped by Minh: Lan,
/// Minh`. `None` without a quorum.
fn quorum_reason(i: &Interaction) -> Option<String> {
    let Status::Resolved { by: Decider::Person(last), .. } = &i.status else { return None };
    let progress = i.quorum_progress()?;
    let Some(Reply::Decisions { decisions, .. }) = &i.reply else { return None };
    let names = |voters: &mut dyn Iterator<Item = &Actor>| voters.map(|a| a.name.as_str()).collect::<Vec<_>>().join(", ");
    let needed = progress.needed as usize;
    match progress.tallies.iter().position(|t| t.decisions == *decisions && t.voters.len() >= needed) {
        Some(won) => {
            let tally = &progress.tallies[won];
            let mut reason = format!("quorum {} of {needed}: {}", tally.voters.len(), names(&mut tally.voters.iter()));
            let mut others = progress.tallies.iter().enumerate().filter(|(n, _)| *n != won).flat_map(|(_, t)| t.voters.iter()).peekable();
            if others.peek().is_some() {
                reason.push_str(&format!("; other votes: {}", names(&mut others)));
            }
            Some(reason)
        }
        None => Some(format!("quorum not reached ({} of {needed}), stopped by {}: {}", progress.leading(), last.name, names(&mut progress.voters()))),
    }
}

/// Unix ms as RFC 3339 in UTC with milliseconds, as the export writes times.
fn rfc3339_ms(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(|| ms.to_string(), |t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

impl AuditEntry {
    /// The entry for a refused attempt by someone who may not answer (outcome
    /// `refused`): who tried what, and when. `reply` holds the attempt (a
    /// [`crate::interaction::UserAction`], or an [`crate::interaction::Attempt`]) and
    /// the reason instead of a reply.
    pub fn for_refused(i: &Interaction, actor: &Actor, attempted: &impl serde::Serialize, why: &str, now_ms: i64) -> AuditEntry {
        let (kind, tools) = kind_and_tools(i);
        AuditEntry {
            at_ms: now_ms,
            session_id: i.session_id.clone(),
            approval_key: i.approval_key().to_owned(),
            interaction_id: i.id.clone(),
            actor: Some(actor.clone()),
            outcome: "refused".to_owned(),
            reply: Some(serde_json::json!({ "attempted": attempted, "reason": why })),
            original_args: Value::Array(i.request.actions().iter().map(|a| a.args.clone()).collect()),
            edited_args: None,
            latency_ms: now_ms.saturating_sub(i.created_at_ms),
            agent: i.origin.agent().map(str::to_owned),
            kind: Some(kind.to_owned()),
            tools: Some(tools),
            reason: Some(why.to_owned()),
            attempts: 1,
        }
    }
}

impl AuditEntry {
    /// The entry for someone not allowed to talk to the agent (outcome `refused`, no
    /// request): who, where (`chat`), what they attempted (`message`, `command`) and a
    /// prefix of what they wrote. `session_id` is the chat's session when it has one.
    /// A stranger's entry stands for every attempt of its refusal window
    /// ([`AuditEntry::attempts`]); it describes the first.
    pub fn for_refused_talk(actor: &Actor, chat: &super::ChatKey, attempted: &str, text: &str, session_id: Option<&str>, now_ms: i64) -> AuditEntry {
        refused_at_door(actor, chat, attempted, text, "not allowed to talk to the agent", session_id, now_ms)
    }

    /// The entry for a refused `/pair CODE` (outcome `refused`, attempted `pair`, the
    /// code as typed in `text`), saying `why`.
    pub fn for_refused_pair(actor: &Actor, chat: &super::ChatKey, code: &str, why: &str, now_ms: i64) -> AuditEntry {
        refused_at_door(actor, chat, "pair", code, why, None, now_ms)
    }
}

/// What the entries for people refused at the door (talking, pairing) share.
fn refused_at_door(actor: &Actor, chat: &super::ChatKey, attempted: &str, text: &str, why: &str, session_id: Option<&str>, now_ms: i64) -> AuditEntry {
    /// Enough to see what was tried, without keeping whole pasted documents.
    const MAX_TEXT_CHARS: usize = 200;
    let text: String = text.chars().take(MAX_TEXT_CHARS).collect();
    AuditEntry {
        at_ms: now_ms,
        session_id: session_id.unwrap_or_default().to_owned(),
        approval_key: String::new(),
        interaction_id: String::new(),
        actor: Some(actor.clone()),
        outcome: "refused".to_owned(),
        reply: Some(serde_json::json!({ "attempted": attempted, "text": text, "chat": chat, "reason": why })),
        original_args: Value::Array(Vec::new()),
        edited_args: None,
        latency_ms: 0,
        agent: None,
        kind: None,
        tools: Some(Vec::new()),
        reason: Some(why.to_owned()),
        attempts: 1,
    }
}

/// What an entry records about its request: the kind (`question` or `approval`) and
/// the requested actions' names, in order.
pub fn kind_and_tools(i: &Interaction) -> (&'static str, Vec<String>) {
    let kind = if i.request.is_question() { "question" } else { "approval" };
    (kind, i.request.actions().iter().map(|a| a.name.clone()).collect())
}

fn settled_at(status: &Status) -> Option<i64> {
    match status {
        Status::Pending => None,
        Status::Resolved { at_ms, .. } | Status::Expired { at_ms, .. } | Status::Cancelled { at_ms, .. } => Some(*at_ms),
    }
}

fn outcome(status: &Status) -> &'static str {
    match status {
        Status::Pending => "pending",
        Status::Resolved { by: Decider::Person(_), .. } => "resolved",
        Status::Resolved { by: Decider::Elsewhere, .. } => "resolved_elsewhere",
        Status::Expired { by_backend: false, .. } => "expired",
        Status::Expired { by_backend: true, .. } => "expired_by_backend",
        Status::Cancelled { .. } => "cancelled",
    }
}

fn reply_json(reply: &Reply) -> Option<Value> {
    // Cannot fail for these types (string keys only); logged rather than panicking.
    serde_json::to_value(reply).inspect_err(|error| tracing::error!(%error, "cannot encode a reply for the audit log")).ok()
}

/// Per action, the args of its `edit` decision; `None` if no action was edited.
fn edited_args(reply: &Reply) -> Option<Value> {
    let Reply::Decisions { decisions, .. } = reply else { return None };
    let edited: Vec<Value> = decisions
        .iter()
        .map(|d| match d {
            Decision::Edit { edited_action } => Value::Object(edited_action.args.clone()),
            _ => Value::Null,
        })
        .collect();
    edited.iter().any(|v| !v.is_null()).then_some(Value::Array(edited))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::interaction::policy::{Fallback, FallbackDecision, RememberArgs, RememberScope};
    use crate::interaction::{AccessPolicy, Policy, RequestBuilder, TimeoutDefaults, UserAction};
    use crate::protocol::{ActionRequest, DecisionType};

    /// 2025-06-01T08:30:00Z.
    const T0: i64 = 1_748_766_600_000;

    fn policy(quorum: u32) -> Policy {
        Policy {
            name: "trades".into(),
            approvers: [("telegram", "10"), ("telegram", "11"), ("telegram", "12")].map(|(p, id)| (p.to_owned(), id.to_owned())).to_vec(),
            approver_roles: vec![],
            quorum,
            remember: vec![RememberScope::Always],
            remember_args: RememberArgs::Same,
            escalation: vec![],
            fallback: None,
        }
    }

    fn trade(policy: Policy) -> Interaction {
        let action = ActionRequest { name: "execute_trade".into(), args: json!({"symbol": "VNM"}), description: None, tool_use_id: None };
        let request = RequestBuilder::start("S_1", vec![action], vec![], Some(600)).finish(TimeoutDefaults::default()).expect("request");
        Interaction::new("id1".into(), "S".into(), request, None, T0).with_policy(Some(policy))
    }

    fn lan() -> Actor {
        Actor::new("telegram", "10", "Lan")
    }

    fn minh() -> Actor {
        Actor::new("telegram", "11", "Minh")
    }

    fn vote(i: &mut Interaction, who: &Actor, decision: DecisionType, at: i64) {
        i.apply(who, UserAction::DecideAll { decision }, &AccessPolicy::default(), at).expect("vote accepted");
    }

    fn rule() -> RememberedRule {
        RememberedRule {
            id: "id0".into(),
            scope: RememberScope::Always,
            tool: "execute_trade".into(),
            args: Some(json!({"symbol": "VNM"})),
            session_id: None,
            backend: "stream".into(),
            set_by: lan(),
            set_at_ms: T0 - 60_000,
            policy: "trades".into(),
        }
    }

    #[test]
    fn a_rule_settle_names_the_rule_its_setter_and_when() {
        let mut i = trade(policy(1));
        i.resolve_by_rule(&rule(), T0 + 5).expect("the rule approves it");
        let entry = AuditEntry::for_settled(&i, T0 + 5);
        assert_eq!(
            entry,
            AuditEntry {
                at_ms: T0 + 5,
                session_id: "S".into(),
                approval_key: "S_1".into(),
                interaction_id: "id1".into(),
                actor: Some(lan()),
                outcome: "resolved".into(),
                reply: Some(json!({"decisions": [{"type": "approve"}]})),
                original_args: json!([{"symbol": "VNM"}]),
                edited_args: None,
                latency_ms: 5,
                agent: None,
                kind: Some("approval".into()),
                tools: Some(vec!["execute_trade".into()]),
                reason: Some("approved by rule id0 set by Lan at 2025-06-01T08:29:00.000Z".into()),
                attempts: 1,
            }
        );
    }

    #[test]
    fn a_fallback_says_which_decision_which_policy_and_when() {
        let mut i = trade(Policy { fallback: Some(Fallback { after_secs: 1800, decision: FallbackDecision::Reject }), ..policy(2) });
        assert!(i.apply_fallback(T0 + 1_800_000));
        let entry = AuditEntry::for_settled(&i, T0 + 1_800_000);
        assert_eq!((entry.outcome.as_str(), entry.actor.as_ref()), ("expired", None));
        assert_eq!(entry.reason.as_deref(), Some("fallback reject by policy trades after 1800 s"));
    }

    #[test]
    fn a_quorum_records_every_voter() {
        let mut i = trade(policy(2));
        vote(&mut i, &lan(), DecisionType::Approve, T0 + 1);
        vote(&mut i, &minh(), DecisionType::Approve, T0 + 2);
        let entry = AuditEntry::for_settled(&i, T0 + 2);
        assert_eq!((entry.outcome.as_str(), entry.actor.clone()), ("resolved", Some(minh())));
        assert_eq!(entry.reason.as_deref(), Some("quorum 2 of 2: Lan, Minh"));

        // A reject ends it before the quorum: who stopped it, and everyone who voted.
        let mut i = trade(policy(3));
        vote(&mut i, &lan(), DecisionType::Approve, T0 + 1);
        vote(&mut i, &minh(), DecisionType::Reject, T0 + 2);
        assert_eq!(AuditEntry::for_settled(&i, T0 + 2).reason.as_deref(), Some("quorum not reached (1 of 3), stopped by Minh: Lan, Minh"));

        // Without a quorum nothing is added.
        let mut i = trade(policy(1));
        vote(&mut i, &lan(), DecisionType::Approve, T0 + 1);
        assert_eq!(AuditEntry::for_settled(&i, T0 + 1).reason, None);
    }

    #[test]
    fn an_escalation_step_is_an_entry_of_its_own() {
        let i = trade(policy(1));
        let remind = EscalationStep { after_secs: 300, action: StepAction::Remind { mention: Mention::Role { role_id: "900".into() } } };
        let entry = AuditEntry::for_escalation(&i, &remind, T0 + 300_000);
        assert_eq!(
            entry,
            AuditEntry {
                at_ms: T0 + 300_000,
                session_id: "S".into(),
                approval_key: "S_1".into(),
                interaction_id: "id1".into(),
                actor: None,
                outcome: "escalated".into(),
                reply: None,
                original_args: json!([{"symbol": "VNM"}]),
                edited_args: None,
                latency_ms: 300_000,
                agent: None,
                kind: Some("approval".into()),
                tools: Some(vec!["execute_trade".into()]),
                reason: Some("remind role:900 after 300 s".into()),
                attempts: 1,
            }
        );
        let user =
            EscalationStep { after_secs: 60, action: StepAction::Remind { mention: Mention::User { platform: "telegram".into(), user_id: "42".into() } } };
        assert_eq!(AuditEntry::for_escalation(&i, &user, T0).reason.as_deref(), Some("remind telegram:42 after 60 s"));
        let approvers = EscalationStep { after_secs: 60, action: StepAction::Remind { mention: Mention::Approvers } };
        assert_eq!(AuditEntry::for_escalation(&i, &approvers, T0).reason.as_deref(), Some("remind approvers after 60 s"));
        let show = EscalationStep { after_secs: 900, action: StepAction::ShowIn { target: "discord:1300".into() } };
        assert_eq!(AuditEntry::for_escalation(&i, &show, T0).reason.as_deref(), Some("show_in discord:1300 after 900 s"));
    }

    #[test]
    fn a_revoked_rule_and_a_refused_revoke_name_the_rule() {
        let alice = Actor::new("cli", "alice", "alice");
        let entry = AuditEntry::for_rule_revoked(&rule(), &alice, T0);
        assert_eq!(
            entry,
            AuditEntry {
                at_ms: T0,
                session_id: String::new(),
                approval_key: String::new(),
                interaction_id: "id0".into(),
                actor: Some(alice),
                outcome: "rule_revoked".into(),
                reply: None,
                original_args: json!([{"symbol": "VNM"}]),
                edited_args: None,
                latency_ms: 0,
                agent: None,
                kind: Some("rule".into()),
                tools: Some(vec!["execute_trade".into()]),
                reason: Some("revoked always rule id0 for execute_trade on stream (policy trades), set by Lan at 2025-06-01T08:29:00.000Z".into()),
                attempts: 1,
            }
        );
        let eve = Actor::new("telegram", "99", "Eve");
        let refused =
            AuditEntry::for_refused_revoke(&RememberedRule { args: None, ..rule() }, &eve, "only an approver or the person who set it may revoke a rule", T0);
        assert_eq!((refused.outcome.as_str(), refused.actor, refused.original_args), ("refused", Some(eve), json!([null])));
        assert_eq!(
            refused.reply,
            Some(json!({"attempted": "revoke_rule", "rule": "id0", "reason": "only an approver or the person who set it may revoke a rule"}))
        );
    }
}
