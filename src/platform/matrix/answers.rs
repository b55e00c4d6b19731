//! Reactions, poll votes and replies on the bridge's cards → the engine, in one call
//! each. The engine checks who may act (the same access rules as every platform),
//! applies, audits, and refreshes every copy of the card; this file never decides.
//!
//! An answer counts only on an event the bridge remembers as one of its cards or
//! polls ([`super::cards`]); the homeserver vouches for its sender (events come
//! signed by their server through `/sync`). Whatever the engine refuses changes
//! nothing and is said: to the person alone in a DM when they may not answer at all,
//! else in the card's thread (a second or late reaction, invalid JSON in an edit).
//!
//! - A reaction is what [`render::reaction_action`] says: ✅ / ❌ decide (the whole
//!   request when it has several actions), 🔓 🔁 ♾️ approve and remember, 📨 sends the
//!   decisions made, ✏️ and 💬 answer with how to reply; ⏭️ on a poll skips its question.
//! - A vote selects its options; a request of one single-choice question is answered
//!   by the vote itself, others by ✅ on the card (or a reply `submit`).
//! - A reply carries words: [`parse_reply`] on a card; on a poll, its text is the
//!   question's own answer ("Other").

use super::Shared;
use super::cards::Target;
use super::render::{self, Reacted};
use super::text::{XMsg, xtext};
use crate::engine::{ActError, ActOutcome};
use crate::interaction::{Attempt, Interaction, Opening, Refusal, RequestKind, UserAction};
use crate::protocol::{Decision, DecisionType};
use crate::texts::{self, Msg};

/// A reaction `key` by `sender` on event `target` in `room`.
pub async fn on_reaction(shared: &Shared, room: &str, sender: &str, target: &str, key: &str) {
    let Some(target) = shared.cards.target(room, target).await else { return };
    let Some(interaction) = load(shared, target.interaction()).await else { return };
    let action = match &target {
        Target::Poll { poll, .. } if render::bare(key) == render::bare(render::SKIP) => UserAction::Skip { question: poll.question },
        Target::Poll { .. } => return,
        Target::Card { .. } => match render::reaction_action(&interaction, key) {
            Reacted::Act(action) => action,
            Reacted::Explain(how) => return explain(shared, room, sender, &target, &interaction, how).await,
            Reacted::Unknown => return,
        },
    };
    act(shared, room, sender, &target, &interaction, action).await;
}

/// A vote by `sender` in poll `poll`: the options chosen now.
pub async fn on_vote(shared: &Shared, room: &str, sender: &str, poll: &str, answers: &[String]) {
    let Some(target @ Target::Poll { .. }) = shared.cards.target(room, poll).await else { return };
    let Target::Poll { poll, .. } = &target else { return };
    let Some(interaction) = load(shared, &poll.interaction).await else { return };
    let select = UserAction::Select { question: poll.question, options: render::options_of(answers) };
    if !act(shared, room, sender, &target, &interaction, select).await {
        return;
    }
    // One question with one choice: the vote is the answer.
    if let RequestKind::Questions { questions, .. } = &interaction.request.kind
        && questions.len() == 1
        && !questions[0].multi_select
        && !answers.is_empty()
    {
        act(shared, room, sender, &target, &interaction, UserAction::Submit).await;
    }
}

/// A reply by `sender` to event `to` saying `body`; false when `to` is none of the
/// bridge's cards (the message is then chat).
pub async fn on_reply(shared: &Shared, room: &str, sender: &str, to: &str, body: &str) -> bool {
    let Some(target) = shared.cards.target(room, to).await else { return false };
    let Some(interaction) = load(shared, target.interaction()).await else { return true };
    let action = match &target {
        Target::Poll { poll, .. } if body.trim().eq_ignore_ascii_case("skip") => Some(UserAction::Skip { question: poll.question }),
        Target::Poll { poll, .. } => Some(UserAction::OtherText { question: poll.question, text: body.to_owned() }),
        Target::Card { .. } => parse_reply(body, &interaction),
    };
    match action {
        Some(action) => {
            act(shared, room, sender, &target, &interaction, action).await;
        }
        None => shared.notice_on_card(&target, xtext(shared.locale, XMsg::UnknownReply)).await,
    }
    true
}

/// What a reply to a card says, in its own words: `approve`, `reject [REASON]`,
/// `edit {JSON}`, `comment TEXT`, `submit`; with several actions, a number after the
/// word names one (`reject 2 too risky`), and `approve all` / `reject all` decide them
/// all. `None` when it is none of these.
pub fn parse_reply(body: &str, interaction: &Interaction) -> Option<UserAction> {
    let body = body.trim();
    let (word, rest) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
    let word = word.to_lowercase();
    let rest = rest.trim();
    if interaction.request.is_question() {
        return (word == "submit" || word == "send").then_some(UserAction::Submit);
    }
    let count = interaction.request.actions().len();
    let (first, after) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let numbered = first.parse::<usize>().ok().filter(|n| count > 1 && (1..=count).contains(n));
    let (index, rest) = match numbered {
        Some(n) => (n - 1, after.trim()),
        None => (0, rest),
    };
    let text = Some(rest).filter(|r| !r.is_empty()).map(str::to_owned);
    Some(match word.as_str() {
        "approve" | "yes" | "ok" if rest.eq_ignore_ascii_case("all") => UserAction::DecideAll { decision: DecisionType::Approve },
        "reject" | "no" if rest.eq_ignore_ascii_case("all") => UserAction::DecideAll { decision: DecisionType::Reject },
        "approve" | "yes" | "ok" => UserAction::Decide { action: index, decision: Decision::Approve },
        "reject" | "no" => UserAction::Decide { action: index, decision: Decision::Reject { message: text } },
        "edit" => UserAction::EditArgs { action: index, json: rest.to_owned() },
        "comment" => UserAction::Comment { action: index, text: text? },
        "submit" | "send" => UserAction::Submit,
        _ => return None,
    })
}

/// The request `id` as stored, if there is one.
async fn load(shared: &Shared, id: &str) -> Option<Interaction> {
    match shared.engine.interaction(id).await {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!(interaction = %id, error = %e, "cannot read a request for a Matrix answer");
            None
        }
    }
}

/// `action` by `sender` on the request `target` shows: true when the engine took it.
async fn act(shared: &Shared, room: &str, sender: &str, target: &Target, interaction: &Interaction, action: UserAction) -> bool {
    let actor = shared.actor(room, sender, Some(interaction)).await;
    match shared.engine.act(target.interaction(), actor, action).await {
        Ok(ActOutcome::Resolved(_) | ActOutcome::Updated(_)) => true,
        Err(e) => {
            refused(shared, sender, target, &e).await;
            false
        }
    }
}

/// Says why an answer changed nothing: to the person in a DM when they may not answer
/// this request at all (nobody else need read it), else in the card's thread.
async fn refused(shared: &Shared, sender: &str, target: &Target, e: &ActError) {
    let locale = shared.locale;
    let text = match e {
        ActError::Refused(refusal) => texts::refusal(locale, refusal),
        ActError::UnknownInteraction => texts::text(locale, Msg::UnknownButton).to_owned(),
        ActError::StoreFailing(why) => {
            tracing::error!(error = %why, "a Matrix answer was not saved: the store is failing");
            texts::text(locale, Msg::StoreFailing).to_owned()
        }
        ActError::Internal(why) => {
            tracing::error!(error = %why, "acting on a Matrix answer failed");
            xtext(locale, XMsg::Internal).to_owned()
        }
    };
    match e {
        ActError::Refused(Refusal::NotAllowed | Refusal::SelfApproval) => shared.notice_in_dm(sender, &text).await,
        _ => shared.notice_on_card(target, &text).await,
    }
}

/// The answer to ✏️ or 💬: how to reply, once the engine has said the person may.
async fn explain(shared: &Shared, room: &str, sender: &str, target: &Target, interaction: &Interaction, how: XMsg) {
    let opening = if how == XMsg::HowToEdit { Opening::Edit } else { Opening::Comment };
    let actor = shared.actor(room, sender, Some(interaction)).await;
    let check: crate::engine::OpeningCheck = Box::new(move |i: &Interaction| {
        let action = i.request.actions().first().ok_or(Refusal::OutOfRange("action"))?;
        match opening {
            Opening::Edit if !action.allowed.contains(&DecisionType::Edit) => {
                Err(Refusal::DecisionNotAllowed { action: action.name.clone(), decision: DecisionType::Edit })
            }
            _ => Ok(()),
        }
    });
    if let Err(e) = shared.engine.open(target.interaction(), actor, Attempt::Open { open: opening, index: 0 }, check).await {
        return refused(shared, sender, target, &e).await;
    }
    let mut text = xtext(shared.locale, how).to_owned();
    if how == XMsg::HowToEdit
        && let Some(action) = interaction.request.actions().first()
    {
        text.push_str(&format!("\nedit {}", texts::cut(&action.args.to_string(), render::ARGS_BUDGET)));
    }
    shared.notice_on_card(target, &text).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::{Actor, RequestBuilder, TimeoutDefaults};
    use crate::protocol::ActionRequest;
    use serde_json::json;

    fn request(names: &[&str]) -> Interaction {
        let actions = names.iter().map(|n| ActionRequest { name: (*n).into(), args: json!({}), description: None, tool_use_id: None }).collect();
        let request = RequestBuilder::start("k_1", actions, vec![], Some(300)).finish(TimeoutDefaults::default()).expect("request");
        Interaction::new("i1".into(), "s".into(), request, Some(Actor::new("matrix", "@ana:localhost", "ana")), 0)
    }

    #[test]
    fn replies_carry_their_words() {
        let one = request(&["deploy"]);
        assert_eq!(parse_reply("approve", &one), Some(UserAction::Decide { action: 0, decision: Decision::Approve }));
        assert_eq!(
            parse_reply("Reject  too risky ", &one),
            Some(UserAction::Decide { action: 0, decision: Decision::Reject { message: Some("too risky".into()) } })
        );
        assert_eq!(parse_reply("reject", &one), Some(UserAction::Decide { action: 0, decision: Decision::Reject { message: None } }));
        assert_eq!(parse_reply("edit {\"x\": 1}", &one), Some(UserAction::EditArgs { action: 0, json: "{\"x\": 1}".into() }));
        assert_eq!(parse_reply("edit not json", &one), Some(UserAction::EditArgs { action: 0, json: "not json".into() }), "the engine refuses it");
        assert_eq!(parse_reply("comment use the staging db", &one), Some(UserAction::Comment { action: 0, text: "use the staging db".into() }));
        assert_eq!(parse_reply("comment", &one), None);
        assert_eq!(
            parse_reply("reject 2 budget", &one),
            Some(UserAction::Decide { action: 0, decision: Decision::Reject { message: Some("2 budget".into()) } })
        );
        assert_eq!(parse_reply("thanks!", &one), None);
    }

    #[test]
    fn with_several_actions_a_number_names_one() {
        let two = request(&["a", "b"]);
        assert_eq!(parse_reply("reject 2 budget", &two), Some(UserAction::Decide { action: 1, decision: Decision::Reject { message: Some("budget".into()) } }));
        assert_eq!(parse_reply("approve 1", &two), Some(UserAction::Decide { action: 0, decision: Decision::Approve }));
        assert_eq!(parse_reply("approve all", &two), Some(UserAction::DecideAll { decision: DecisionType::Approve }));
        assert_eq!(parse_reply("reject 3 x", &two), Some(UserAction::Decide { action: 0, decision: Decision::Reject { message: Some("3 x".into()) } }));
        assert_eq!(parse_reply("submit", &two), Some(UserAction::Submit));
    }
}
