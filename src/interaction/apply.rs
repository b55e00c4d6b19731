//! How one accepted action changes a draft: a decision on an approval's action (or a
//! vote, under a quorum) and an answer to a question. [`super::Interaction::apply`]
//! has already checked who acts and that the request is open; this checks that the
//! action makes sense for the request, and says when the draft is complete.

use super::access::Actor;
use super::answers::{self, AnswerDraft, MAX_TEXT_CHARS};
use super::decisions::{self, DecisionDraft};
use super::policy::quorum::{self, Cast, Vote};
use super::refusal::Refusal;
use super::user_action::UserAction;
use crate::protocol::{Answers, Decision, DecisionType, Reply};

pub(super) fn apply_decision(actions: &[super::Action], draft: &mut DecisionDraft, action: UserAction) -> Result<Option<Reply>, Refusal> {
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

/// Under a quorum: an action that would decide instead becomes a vote
/// ([`super::policy::quorum`]); one that only edits the shared draft (one action of
/// several, a comment) changes it as usual. `Some` once the outcome is final.
pub(super) fn vote(
    actions: &[super::Action],
    draft: &mut DecisionDraft,
    actor: &Actor,
    action: UserAction,
    needed: u32,
    now_ms: i64,
) -> Result<Option<Reply>, Refusal> {
    if let Some(earlier) = quorum::earlier_vote(&draft.votes, actor) {
        return Err(Refusal::AlreadyVoted { at_ms: earlier.at_ms });
    }
    // Kimi's "approve for session" would let one person decide later calls alone.
    if let UserAction::Decide { action: i, decision: Decision::ApproveForSession } = &action {
        let name = actions.get(*i).ok_or(Refusal::OutOfRange("action"))?.name.clone();
        return Err(Refusal::DecisionNotAllowed { action: name, decision: DecisionType::ApproveForSession });
    }
    // Try the action on a copy: what would have been the reply is this person's vote.
    let mut scratch = draft.clone();
    match apply_decision(actions, &mut scratch, action)? {
        None => {
            *draft = scratch;
            Ok(None)
        }
        Some(Reply::Decisions { decisions, .. }) => match quorum::cast(&mut draft.votes, Vote { voter: actor.clone(), at_ms: now_ms, decisions }, needed) {
            Cast::Counted => Ok(None),
            Cast::Final(decisions) => {
                draft.decisions = decisions.iter().cloned().map(Some).collect();
                Ok(Some(decisions_reply(draft)))
            }
        },
        Some(answers) => Ok(Some(answers)),
    }
}

pub(super) fn decisions_reply(draft: &DecisionDraft) -> Reply {
    Reply::Decisions { decisions: draft.complete().unwrap_or_default(), user_edit_content: draft.user_edit_content.clone() }
}

pub(super) fn apply_answer(questions: &[super::Question], drafts: &mut [AnswerDraft], action: UserAction) -> Result<Option<Reply>, Refusal> {
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
