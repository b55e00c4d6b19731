//! The interaction state machine: Pending → Resolved | Expired | Cancelled.
//!
//! The first valid decision wins; anything later is refused with who decided and
//! when. [`Interaction::apply`] is the one door through which a person changes an
//! interaction, and it checks, in order: who is acting, whether it is still open,
//! and whether the action makes sense for this request.

use serde::{Deserialize, Serialize};

use super::access::{AccessPolicy, Actor, Origin};
use super::answers::{self, AnswerDraft, MAX_TEXT_CHARS};
use super::decisions::{self, DecisionDraft, EditError};
use super::request::{Request, RequestKind};
use crate::protocol::{Answers, Decision, DecisionType, Reply};

/// What a person did, as a platform understood it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum UserAction {
    /// Decide one action. With a single action this submits at once.
    Decide { action: usize, decision: Decision },
    /// New args typed as JSON for one action (Edit).
    EditArgs { action: usize, json: String },
    /// A comment: a `respond` decision where allowed, else `user_edit_content`.
    Comment { action: usize, text: String },
    /// Approve all / Reject all, submitted at once.
    DecideAll { decision: DecisionType },
    /// Replace a question's selection (a select menu, a typed number list).
    Select { question: usize, options: Vec<usize> },
    /// Flip one option (a multi-select button).
    Toggle { question: usize, option: usize },
    /// Free text for a question ("Other" or its input option).
    OtherText { question: usize, text: String },
    Skip { question: usize },
    /// Send what has been chosen.
    Submit,
}

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
    Resolved { by: Decider, at_ms: i64 },
    /// `by_backend`: the backend said `approval_timeout`; else the bridge's own deadline.
    Expired { at_ms: i64, by_backend: bool },
    Cancelled { at_ms: i64, reason: String },
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

/// Why an action was refused. Nothing changed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    #[error("you are not allowed to answer this request")]
    NotAllowed,
    /// Four eyes: the requester may not decide their own turn's tool calls.
    #[error("you started this turn; another approver must decide its tool calls")]
    SelfApproval,
    #[error("already decided by {by}")]
    AlreadyDecided { by: String, at_ms: i64 },
    #[error("this request has expired")]
    Expired,
    #[error("this request was cancelled")]
    Cancelled,
    #[error("{decision} is not allowed for {action}", decision = .decision.as_str())]
    DecisionNotAllowed { action: String, decision: DecisionType },
    #[error("{0}")]
    InvalidEdit(EditError),
    #[error("no such {0}")]
    OutOfRange(&'static str),
    #[error("decide every action before submitting (missing: {})", missing_list(.missing))]
    Incomplete { missing: Vec<usize> },
    #[error("this request takes {expected}, not {got}")]
    WrongKind { expected: &'static str, got: &'static str },
    #[error("this question does not take free text")]
    NoFreeText,
    #[error("the text is empty")]
    EmptyText,
    #[error("the text is longer than {MAX_TEXT_CHARS} characters")]
    TextTooLong,
    #[error("this question takes a single choice")]
    SingleChoice,
}

fn missing_list(missing: &[usize]) -> String {
    missing.iter().map(|i| (i + 1).to_string()).collect::<Vec<_>>().join(", ")
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
            RequestKind::Questions { questions, .. } => {
                Draft::Answers { answers: vec![AnswerDraft::default(); questions.len()] }
            }
        };
        let deadline_ms = now_ms.saturating_add((request.timeout_secs as i64).saturating_mul(1000));
        Self { id, session_id, request, created_at_ms: now_ms, deadline_ms, requester, origin: Origin::Chat, draft, status: Status::Pending, reply: None, delivery: Delivery::None }
    }

    pub fn approval_key(&self) -> &str {
        &self.request.approval_key
    }

    /// The one door for a person's action. On a refusal nothing has changed.
    /// Whether `actor` may act on this interaction now: who first (a stranger learns
    /// nothing about its state), then whether it is still open.
    pub fn may_act(&self, actor: &Actor, policy: &AccessPolicy, now_ms: i64) -> Result<(), Refusal> {
        if !self.origin.allows(actor, self.requester.as_ref(), policy) {
            return Err(Refusal::NotAllowed);
        }
        // Four eyes covers tool calls only: the requester still answers questions.
        if matches!(self.origin, Origin::Chat)
            && matches!(self.request.kind, RequestKind::Approval { .. })
            && policy.refuses_self_approval(actor, self.requester.as_ref())
        {
            return Err(Refusal::SelfApproval);
        }
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
        let reply = match (&self.request.kind, &mut draft) {
            (RequestKind::Approval { actions }, Draft::Decisions(d)) => apply_decision(actions, d, action)?,
            (RequestKind::Questions { questions, .. }, Draft::Answers { answers }) => {
                apply_answer(questions, answers, action)?
            }
            _ => unreachable!("the draft always matches the request kind (built in new)"),
        };
        self.draft = draft;
        match reply {
            None => Ok(Applied::Updated),
            Some(reply) => {
                self.status = Status::Resolved { by: Decider::Person(actor.clone()), at_ms: now_ms };
                self.reply = Some(reply.clone());
                Ok(Applied::Resolved(reply))
            }
        }
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
        Some(Reply::Decisions {
            decisions: vec![Decision::Reject { message: Some(message) }; actions.len()],
            user_edit_content: None,
        })
    }
}

fn apply_decision(actions: &[super::Action], draft: &mut DecisionDraft, action: UserAction) -> Result<Option<Reply>, Refusal> {
    let action_at = |i: usize| actions.get(i).ok_or(Refusal::OutOfRange("action"));
    let check = |i: usize, decision: &Decision| -> Result<(), Refusal> {
        let a = action_at(i)?;
        if decisions::is_allowed(a, decision.decision_type()) {
            Ok(())
        } else {
            Err(Refusal::DecisionNotAllowed { action: a.name.clone(), decision: decision.decision_type() })
        }
    };
    let single = actions.len() == 1;
    match action {
        UserAction::Decide { action, mut decision } => {
            check(action, &decision)?;
            if let Decision::Edit { edited_action } = &mut decision {
                // People edit arguments, not which tool runs.
                edited_action.name = action_at(action)?.name.clone();
            }
            draft.decisions[action] = Some(decision);
        }
        UserAction::EditArgs { action, json } => {
            let target = action_at(action)?;
            // Say "edit is not allowed" before complaining about the JSON.
            if !decisions::is_allowed(target, DecisionType::Edit) {
                return Err(Refusal::DecisionNotAllowed { action: target.name.clone(), decision: DecisionType::Edit });
            }
            let decision = decisions::edit_decision(target, &json).map_err(Refusal::InvalidEdit)?;
            draft.decisions[action] = Some(decision);
        }
        UserAction::Comment { action, text } => {
            let text = clean_text(&text)?;
            let respond = Decision::Respond { message: text.clone() };
            if check(action, &respond).is_ok() {
                draft.decisions[action] = Some(respond);
            } else {
                action_at(action)?;
                draft.user_edit_content = Some(text);
                return Ok(None);
            }
        }
        UserAction::DecideAll { decision } => {
            let decision = match decision {
                DecisionType::Approve => Decision::Approve,
                DecisionType::Reject => Decision::Reject { message: None },
                other => return Err(Refusal::DecisionNotAllowed { action: "all actions".into(), decision: other }),
            };
            for i in 0..actions.len() {
                check(i, &decision)?;
            }
            draft.decisions = vec![Some(decision); actions.len()];
            return Ok(Some(decisions_reply(draft)));
        }
        UserAction::Submit => {
            if draft.complete().is_none() {
                return Err(Refusal::Incomplete { missing: draft.missing() });
            }
            return Ok(Some(decisions_reply(draft)));
        }
        _ => return Err(Refusal::WrongKind { expected: "decisions", got: "answers" }),
    }
    Ok((single && draft.complete().is_some()).then(|| decisions_reply(draft)))
}

fn decisions_reply(draft: &DecisionDraft) -> Reply {
    Reply::Decisions {
        decisions: draft.complete().unwrap_or_default(),
        user_edit_content: draft.user_edit_content.clone(),
    }
}

fn apply_answer(questions: &[super::Question], drafts: &mut [AnswerDraft], action: UserAction) -> Result<Option<Reply>, Refusal> {
    fn at<'a>(questions: &'a [super::Question], drafts: &'a mut [AnswerDraft], i: usize) -> Result<(&'a super::Question, &'a mut AnswerDraft), Refusal> {
        match (questions.get(i), drafts.get_mut(i)) {
            (Some(q), Some(d)) => Ok((q, d)),
            _ => Err(Refusal::OutOfRange("question")),
        }
    }
    match action {
        UserAction::Select { question, mut options } => {
            let (q, d) = at(questions, drafts, question)?;
            options.sort_unstable();
            options.dedup();
            if options.iter().any(|&o| o >= q.options.len()) {
                return Err(Refusal::OutOfRange("option"));
            }
            if !q.multi_select && options.len() > 1 {
                return Err(Refusal::SingleChoice);
            }
            d.select(q, options);
        }
        UserAction::Toggle { question, option } => {
            let (q, d) = at(questions, drafts, question)?;
            if option >= q.options.len() {
                return Err(Refusal::OutOfRange("option"));
            }
            d.toggle(q, option);
        }
        UserAction::OtherText { question, text } => {
            let (q, d) = at(questions, drafts, question)?;
            if !q.allows_free_text() {
                return Err(Refusal::NoFreeText);
            }
            d.set_text(q, clean_text(&text)?);
        }
        UserAction::Skip { question } => at(questions, drafts, question)?.1.skip(),
        UserAction::Submit => {
            let answers = questions.iter().zip(drafts.iter()).map(|(q, d)| (q.text.clone(), answers::encode(q, d)));
            return Ok(Some(Reply::Answers { answers: Answers(answers.collect()) }));
        }
        _ => return Err(Refusal::WrongKind { expected: "answers", got: "decisions" }),
    }
    Ok(None)
}

fn clean_text(text: &str) -> Result<String, Refusal> {
    let text = text.trim();
    if text.is_empty() {
        Err(Refusal::EmptyText)
    } else if text.chars().count() > MAX_TEXT_CHARS {
        Err(Refusal::TextTooLong)
    } else {
        Ok(text.to_owned())
    }
}
