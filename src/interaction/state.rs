//! The interaction state machine: Pending → Resolved | Expired | Cancelled.
//!
//! The first valid decision wins; anything later is refused with who decided and
//! when. [`Interaction::apply`] is the one door through which a person changes an
//! interaction, and it checks, in order: who is acting, whether it is still open,
//! and whether the action makes sense for this request.
//!
//! An approval may carry a decision [`Policy`] (chosen by the engine when it arrived,
//! see [`super::policy`]): its approvers replace the usual ones, a quorum turns
//! decisions into votes, "approve for this session" / "always approve" may be offered,
//! and a fallback may end it. Without a policy everything here behaves as it always has.

use serde::{Deserialize, Serialize};

use super::access::{AccessPolicy, Actor, Origin};
use super::answers::AnswerDraft;
use super::apply::{apply_answer, apply_decision, decisions_reply, vote};
use super::decisions::{self, DecisionDraft};
use super::policy::escalation::{self, DueStep};
use super::policy::quorum::{self, QuorumProgress};
use super::policy::{Fallback, FallbackDecision, Policy, PolicySettlement, RememberArgs, RememberChoice, RememberScope, RememberedRule};
use super::refusal::Refusal;
use super::request::{Request, RequestKind};
pub use super::user_action::UserAction;
use crate::protocol::{Decision, DecisionType, Reply};

/// Who settled an interaction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum Decider {
    Person(Actor),
    /// Another client of the same session (`approval_result` or history).
    Elsewhere,
}

impl Decider {
    pub fn name(&self) -> &str {
        match self {
            Decider::Person(actor) => &actor.name,
            Decider::Elsewhere => "another client",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Status {
    Pending,
    Resolved {
        by: Decider,
        at_ms: i64,
    },
    /// `by_backend`: the backend said `approval_timeout`; else the bridge's own deadline.
    Expired {
        at_ms: i64,
        by_backend: bool,
    },
    Cancelled {
        at_ms: i64,
        reason: String,
    },
}

impl Status {
    pub fn is_pending(&self) -> bool {
        matches!(self, Status::Pending)
    }

    /// The short name stored in the database and shown in logs.
    pub fn name(&self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Resolved { .. } => "resolved",
            Status::Expired { .. } => "expired",
            Status::Cancelled { .. } => "cancelled",
        }
    }
}

/// Answers or decisions in progress, stored as they happen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Draft {
    Decisions(DecisionDraft),
    Answers { answers: Vec<AnswerDraft> },
}

/// What an accepted action did.
#[derive(Debug, Clone, PartialEq)]
pub enum Applied {
    /// The draft changed; store it and re-render.
    Updated,
    /// The interaction is resolved: send this reply.
    Resolved(Reply),
}

/// One approval request as the bridge tracks it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interaction {
    /// Short id, safe to put in callback tokens (never the approval key).
    pub id: String,
    pub session_id: String,
    pub request: Request,
    pub created_at_ms: i64,
    pub deadline_ms: i64,
    /// Whose message started the turn; may answer besides the configured approvers.
    pub requester: Option<Actor>,
    /// A chat turn or a pushed request; decides who may answer.
    #[serde(default)]
    pub origin: Origin,
    pub draft: Draft,
    pub status: Status,
    /// What was sent (or received from elsewhere) when it resolved.
    pub reply: Option<Reply>,
    /// Whether `reply` has reached the backend, when the bridge sends it.
    #[serde(default, skip_serializing_if = "Delivery::is_none")]
    pub delivery: Delivery,
    /// The decision policy chosen when it arrived ([`Interaction::with_policy`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<Policy>,
    /// How many of the policy's escalation steps have been performed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub escalations_done: usize,
    /// Set when it was approved "for this session" or "always".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remembered: Option<RememberChoice>,
    /// Set when the policy settled it (a remembered rule, a fallback), not a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_by_policy: Option<PolicySettlement>,
    /// The store's revision of the row this was read from (its compare-and-swap of
    /// drafts); not part of the interaction itself.
    #[serde(skip)]
    pub revision: Revision,
}

/// Storage metadata: which write of an interaction's row a copy was read after. Set by
/// the store only. Never serialized, and equal whatever its value, so two copies of an
/// interaction compare by what they say, not by when they were read.
#[derive(Debug, Clone, Copy, Default)]
pub struct Revision(pub i64);

impl PartialEq for Revision {
    fn eq(&self, _: &Revision) -> bool {
        true
    }
}

/// `secs` after `at_ms`, saturating.
fn after_secs(at_ms: i64, secs: u64) -> i64 {
    at_ms.saturating_add((secs as i64).saturating_mul(1000))
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Where the bridge's reply to the backend is. Shown to people, so a decision that
/// could not reach the agent yet never reads as done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Delivery {
    /// Nothing to deliver (no reply, or the agent reads it itself over the HTTP API).
    #[default]
    None,
    /// Saved in the outbox; the backend has not proven it read it yet.
    Queued,
    /// The backend proved it has the reply.
    Delivered { at_ms: i64 },
    /// The backend timed the request out before the reply reached it.
    TooLate { at_ms: i64 },
    /// The backend stopped waiting for the request (a newer request replaced it, its
    /// run ended) before the reply reached it: the reply was not delivered.
    NotWaiting { at_ms: i64 },
}

impl Delivery {
    pub fn is_none(&self) -> bool {
        matches!(self, Delivery::None)
    }
}

impl Interaction {
    pub fn new(id: String, session_id: String, request: Request, requester: Option<Actor>, now_ms: i64) -> Self {
        let draft = match &request.kind {
            RequestKind::Approval { actions } => Draft::Decisions(DecisionDraft::new(actions.len())),
            RequestKind::Questions { questions, .. } => Draft::Answers { answers: vec![AnswerDraft::default(); questions.len()] },
        };
        let deadline_ms = after_secs(now_ms, request.timeout_secs);
        Self {
            id,
            session_id,
            request,
            created_at_ms: now_ms,
            deadline_ms,
            requester,
            origin: Origin::Chat,
            draft,
            status: Status::Pending,
            reply: None,
            delivery: Delivery::None,
            policy: None,
            escalations_done: 0,
            remembered: None,
            settled_by_policy: None,
            revision: Revision::default(),
        }
    }

    /// Puts the request under `policy` (from [`super::policy::select`]). Questions take
    /// none. With a fallback, the fallback's moment becomes the deadline, longer or
    /// shorter than the request's own timeout: the operator's policy says when it ends.
    /// Applying another policy replaces the first, deadline included (a pushed
    /// request's own policy overridden by a configured one).
    pub fn with_policy(mut self, policy: Option<Policy>) -> Self {
        if self.request.is_question() {
            return self;
        }
        let ends_after = policy.as_ref().and_then(|p| p.fallback).map_or(self.request.timeout_secs, |f| f.after_secs);
        self.deadline_ms = after_secs(self.created_at_ms, ends_after);
        self.policy = policy;
        self
    }

    /// Distinct votes needed (1 when there is no quorum).
    fn quorum(&self) -> u32 {
        self.policy.as_ref().map_or(1, |p| p.quorum.max(1))
    }

    pub fn approval_key(&self) -> &str {
        &self.request.approval_key
    }

    /// The one door for a person's action. On a refusal nothing has changed.
    /// Whether `actor` may act on this interaction now: who first (a stranger learns
    /// nothing about its state), then whether it is still open.
    pub fn may_act(&self, actor: &Actor, policy: &AccessPolicy, now_ms: i64) -> Result<(), Refusal> {
        self.deciders().check(actor, policy)?;
        match &self.status {
            Status::Pending if now_ms >= self.deadline_ms => Err(Refusal::Expired),
            Status::Pending => Ok(()),
            Status::Resolved { by, at_ms } => Err(Refusal::AlreadyDecided { by: by.name().to_owned(), at_ms: *at_ms }),
            Status::Expired { .. } => Err(Refusal::Expired),
            Status::Cancelled { .. } => Err(Refusal::Cancelled),
        }
    }

    pub fn apply(&mut self, actor: &Actor, action: UserAction, policy: &AccessPolicy, now_ms: i64) -> Result<Applied, Refusal> {
        self.may_act(actor, policy, now_ms)?;
        // Work on a copy so that a refusal half-way changes nothing.
        let mut draft = self.draft.clone();
        let mut remembered = None;
        let quorum = self.quorum();
        let reply = match (&self.request.kind, &mut draft) {
            (RequestKind::Approval { actions }, Draft::Decisions(d)) => match action {
                UserAction::Remember { scope } => {
                    let choice = self.remember_choice(scope)?;
                    remembered = Some(choice);
                    let decision = if choice.native { Decision::ApproveForSession } else { Decision::Approve };
                    apply_decision(actions, d, UserAction::Decide { action: 0, decision })?
                }
                action if quorum > 1 => vote(actions, d, actor, action, quorum, now_ms)?,
                action => apply_decision(actions, d, action)?,
            },
            (RequestKind::Questions { questions, .. }, Draft::Answers { answers }) => apply_answer(questions, answers, action)?,
            _ => unreachable!("the draft always matches the request kind (built in new)"),
        };
        self.draft = draft;
        match reply {
            None => Ok(Applied::Updated),
            Some(reply) => {
                self.status = Status::Resolved { by: Decider::Person(actor.clone()), at_ms: now_ms };
                self.reply = Some(reply.clone());
                self.remembered = remembered;
                Ok(Applied::Resolved(reply))
            }
        }
    }

    /// Which "approve and remember" choices to offer beside "Approve once": the
    /// policy's `remember`, for a single-action approval that allows `approve` (never
    /// under a quorum: validation keeps the two apart).
    pub fn remember_offered(&self) -> Vec<RememberScope> {
        let (Some(policy), RequestKind::Approval { actions }) = (&self.policy, &self.request.kind) else { return Vec::new() };
        match actions.as_slice() {
            [action] if policy.quorum <= 1 && decisions::is_allowed(action, DecisionType::Approve) => policy.remember.clone(),
            _ => Vec::new(),
        }
    }

    /// How `scope` is remembered here: natively by the backend (Kimi's
    /// `approve_for_session`, same meaning as `remember_args = "any"`), else by the bridge.
    fn remember_choice(&self, scope: RememberScope) -> Result<RememberChoice, Refusal> {
        if !self.remember_offered().contains(&scope) {
            return Err(Refusal::RememberNotOffered { scope });
        }
        let native = scope == RememberScope::Session
            && self.policy.as_ref().is_some_and(|p| p.remember_args == RememberArgs::Any)
            && self.request.actions().first().is_some_and(|a| decisions::is_allowed(a, DecisionType::ApproveForSession));
        Ok(RememberChoice { scope, native })
    }

    /// The rule to store after an approval "for this session" / "always" that the
    /// bridge remembers itself (`None` otherwise, and when the backend remembers it).
    /// `backend`: the backend kind, `http` for pushed requests.
    pub fn rule_to_save(&self, backend: &str) -> Option<RememberedRule> {
        let choice = self.remembered.filter(|c| !c.native)?;
        let policy = self.policy.as_ref()?;
        let Status::Resolved { by: Decider::Person(actor), at_ms } = &self.status else { return None };
        let [action] = self.request.actions() else { return None };
        Some(RememberedRule {
            id: self.id.clone(),
            scope: choice.scope,
            tool: action.name.clone(),
            args: (policy.remember_args == RememberArgs::Same).then(|| action.args.clone()),
            session_id: (choice.scope == RememberScope::Session).then(|| self.session_id.clone()),
            backend: backend.to_owned(),
            set_by: actor.clone(),
            set_at_ms: *at_ms,
            policy: policy.name.clone(),
        })
    }

    /// Approved at once by a remembered rule (found with
    /// [`super::policy::rule_answers`]): the reply to send, or `None` if it is not a
    /// pending single-action approval. Shown as decided by the person who set the rule;
    /// [`Interaction::settled_by_policy`] says it was their rule, not a click.
    pub fn resolve_by_rule(&mut self, rule: &RememberedRule, now_ms: i64) -> Option<Reply> {
        let (Status::Pending, Draft::Decisions(draft)) = (&self.status, &mut self.draft) else { return None };
        if draft.decisions.len() != 1 || self.request.is_question() {
            return None;
        }
        draft.decisions[0] = Some(Decision::Approve);
        let reply = decisions_reply(draft);
        self.status = Status::Resolved { by: Decider::Person(rule.set_by.clone()), at_ms: now_ms };
        self.reply = Some(reply.clone());
        self.settled_by_policy =
            Some(PolicySettlement::Rule { rule_id: rule.id.clone(), scope: rule.scope, set_by: rule.set_by.clone(), set_at_ms: rule.set_at_ms });
        Some(reply)
    }

    /// The votes so far, for "2 of 3 approvals: Lan ✔, Minh ✔"; `None` without a quorum.
    pub fn quorum_progress(&self) -> Option<QuorumProgress> {
        let needed = self.quorum();
        match &self.draft {
            Draft::Decisions(d) if needed > 1 => Some(quorum::progress(&d.votes, needed)),
            _ => None,
        }
    }

    /// The policy's fallback, if it has one (its moment is the deadline).
    pub fn policy_fallback(&self) -> Option<Fallback> {
        self.policy.as_ref().and_then(|p| p.fallback)
    }

    /// At the deadline, ends a pending approval as the policy's fallback says: status
    /// expired, `reply` the decisions to send (none for `leave`). Use it instead of
    /// `timeouts.on_expiry` when [`Interaction::policy_fallback`] is set. False if it
    /// is not pending, has no fallback, or the fallback's moment has not come.
    pub fn apply_fallback(&mut self, now_ms: i64) -> bool {
        let Some(fallback) = self.policy_fallback() else { return false };
        let RequestKind::Approval { actions } = &self.request.kind else { return false };
        let due = after_secs(self.created_at_ms, fallback.after_secs);
        if !self.status.is_pending() || now_ms < due {
            return false;
        }
        let name = self.policy.as_ref().map_or("", |p| p.name.as_str());
        let decision = match fallback.decision {
            FallbackDecision::Approve => Some(Decision::Approve),
            FallbackDecision::Reject => {
                Some(Decision::Reject { message: Some(format!("no human decision after {} s: rejected by policy {name}", fallback.after_secs)) })
            }
            FallbackDecision::Leave => None,
        };
        self.reply = decision.map(|d| Reply::Decisions { decisions: vec![d; actions.len()], user_edit_content: None });
        self.status = Status::Expired { at_ms: now_ms, by_backend: false };
        self.settled_by_policy = Some(PolicySettlement::Fallback { decision: fallback.decision, after_secs: fallback.after_secs });
        true
    }

    /// Escalation steps due at `now_ms` and not yet performed, oldest first; perform
    /// each, then [`Interaction::mark_escalated`] it. Empty unless pending.
    pub fn due_escalations(&self, now_ms: i64) -> Vec<DueStep<'_>> {
        match (&self.policy, self.status.is_pending()) {
            (Some(p), true) => escalation::due_steps(&p.escalation, self.created_at_ms, self.deadline_ms, self.escalations_done, now_ms),
            _ => Vec::new(),
        }
    }

    /// When the next escalation step is due (the engine's durable timer); `None` when
    /// none is left before the deadline, or it is no longer pending.
    pub fn next_escalation_at(&self) -> Option<i64> {
        match (&self.policy, self.status.is_pending()) {
            (Some(p), true) => escalation::next_due_at(&p.escalation, self.created_at_ms, self.deadline_ms, self.escalations_done),
            _ => None,
        }
    }

    /// Whether an escalation step still to come shows it in one more chat (`show_in`).
    pub fn shows_in_another_chat_later(&self) -> bool {
        match (&self.policy, self.status.is_pending()) {
            (Some(p), true) => {
                p.escalation.iter().skip(self.escalations_done).any(|step| matches!(step.action, super::policy::escalation::StepAction::ShowIn { .. }))
            }
            _ => false,
        }
    }

    /// Records that step `index` (and every step before it) was performed.
    pub fn mark_escalated(&mut self, index: usize) {
        self.escalations_done = self.escalations_done.max(index.saturating_add(1));
    }

    /// Resolved by another client (`approval_result`, or history). False if it was
    /// already settled.
    pub fn resolve_elsewhere(&mut self, reply: Option<Reply>, now_ms: i64) -> bool {
        if !self.status.is_pending() {
            return false;
        }
        self.status = Status::Resolved { by: Decider::Elsewhere, at_ms: now_ms };
        self.reply = reply;
        true
    }

    /// Expired, by the backend's `approval_timeout` or the bridge's own deadline.
    pub fn expire(&mut self, now_ms: i64, by_backend: bool) -> bool {
        if !self.status.is_pending() {
            return false;
        }
        self.status = Status::Expired { at_ms: now_ms, by_backend };
        true
    }

    pub fn cancel(&mut self, now_ms: i64, reason: &str) -> bool {
        if !self.status.is_pending() {
            return false;
        }
        self.status = Status::Cancelled { at_ms: now_ms, reason: reason.to_owned() };
        true
    }

    /// The reply the bridge sends when it expires an approval itself under
    /// `timeouts.on_expiry = "reject"`: every action rejected, saying why. Questions
    /// get none (PROTOCOL.md §6 rejects approvals only).
    pub fn expiry_reply(&self) -> Option<Reply> {
        let RequestKind::Approval { actions } = &self.request.kind else { return None };
        let message = format!("timed out after {} s without a human decision", self.request.timeout_secs);
        Some(Reply::Decisions { decisions: vec![Decision::Reject { message: Some(message) }; actions.len()], user_edit_content: None })
    }
}
