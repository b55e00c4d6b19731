//! Clicks, menu choices and dialog submissions: check what Mattermost's unsigned post
//! claims, then one call to the engine, which checks who may act (the same access
//! rules as every platform), applies, audits and refreshes every copy of the card.
//! This file never decides anything itself.
//!
//! A click counts only when its `context` carries a code the bridge signed, its
//! `post_id` is one of the bridge's own cards for that same request ([`super::cards`])
//! and its `user_id` is a Mattermost id; the engine then checks that person may
//! answer. Whatever is refused (a forged or missing code, another post, a stranger, a
//! late or repeated click) is answered with an `ephemeral_text` only the clicker sees
//! and changes nothing; the engine audits a refused person.
//!
//! - Approve, Approve all, Reject all, Submit, the remember buttons, a question's
//!   option button, its menu and Skip act at once, and the response's `update` shows
//!   the card as it now stands (every other copy is edited by the engine).
//! - Edit, Reject, Comment, Choose… and Other… open a dialog (`actions/dialogs/open`
//!   with the click's `trigger_id`) once the engine has said the clicker may; its
//!   submission acts. A refused submission is answered in the dialog, under its field
//!   (invalid JSON under the arguments), and nothing is sent.

use serde_json::{Value, json};

use super::Shared;
use super::codes::Code;
use super::payload::{ActionPost, DialogPost};
use super::render::dialog;
use super::text::{MMsg, mtext};
use crate::engine::{ActError, ActOutcome};
use crate::interaction::{Actor, Attempt, Interaction, Opening, Refusal, RequestKind, UserAction};
use crate::protocol::{Decision, DecisionType};
use crate::texts::{self, Msg};

/// The answer that shows `text` to the clicker only.
fn ephemeral(text: &str) -> Value {
    json!({ "ephemeral_text": text })
}

/// The interaction id and code a signed token names, if it verifies and parses.
fn verify(shared: &Shared, token: Option<&str>) -> Option<(String, Code)> {
    let verified = shared.signer.verify(token?).map_err(|e| tracing::info!(error = %e, "refusing a Mattermost code that does not verify")).ok()?;
    let code = Code::parse(&verified.code)?;
    Some((verified.interaction_id, code))
}

/// What to tell the clicker when the engine refused or failed.
fn notice(shared: &Shared, e: &ActError) -> String {
    match e {
        ActError::Refused(refusal) => texts::refusal(shared.locale, refusal),
        ActError::UnknownInteraction => texts::text(shared.locale, Msg::UnknownButton).to_owned(),
        ActError::StoreFailing(why) => {
            tracing::error!(error = %why, "a Mattermost click was not saved: the store is failing");
            texts::text(shared.locale, Msg::StoreFailing).to_owned()
        }
        ActError::Internal(why) => {
            tracing::error!(error = %why, "acting on a Mattermost click failed");
            mtext(shared.locale, MMsg::Internal).to_owned()
        }
    }
}

/// The person acting on request `interaction`, with their team as the space
/// `access.chats` may open and the approver groups they are in (among those the
/// configuration and the request name).
async fn actor(shared: &Shared, interaction: &str, user_id: &str, user_name: Option<&str>, team: Option<&str>) -> Actor {
    let name = match user_name.filter(|n| !n.is_empty()) {
        Some(name) => name.to_owned(),
        None => shared.username(user_id).await,
    };
    let mut actor = Actor::new(super::PLATFORM, user_id, &name);
    actor.space = team.filter(|t| super::address::is_id(t)).map(str::to_owned);
    actor.groups = shared.groups.of(&shared.api, &shared.engine, user_id, Some(interaction)).await;
    actor
}

/// The post's new look after an action: the card as the engine left it.
fn updated(shared: &Shared, interaction: &Interaction) -> Value {
    json!({ "update": shared.card(interaction) })
}

/// A button click or menu choice: the response Mattermost shows.
pub async fn action(shared: &Shared, post: ActionPost) -> Value {
    let unknown = || ephemeral(texts::text(shared.locale, Msg::UnknownButton));
    let Some((id, code)) = verify(shared, post.code()) else { return unknown() };
    if !super::address::is_id(&post.user_id) {
        tracing::info!("refusing a Mattermost click without a user id");
        return unknown();
    }
    // The post must be a card the bridge made for this very request.
    if shared.cards.interaction_of(&post.post_id).await.as_deref() != Some(id.as_str()) {
        tracing::warn!(post_id = %post.post_id, interaction = %id, "refusing a Mattermost click whose post is not that request's card");
        return ephemeral(mtext(shared.locale, MMsg::NotThisCard));
    }
    let actor = actor(shared, &id, &post.user_id, post.user_name.as_deref(), post.team_id.as_deref()).await;
    let action = match code {
        Code::Choose(question) => match post.selected_option().and_then(|v| v.parse::<usize>().ok()) {
            Some(option) => Some(UserAction::Select { question, options: vec![option] }),
            None => return unknown(),
        },
        code => code.direct_action(),
    };
    match action {
        Some(action) => match shared.engine.act(&id, actor, action).await {
            Ok(ActOutcome::Resolved(i) | ActOutcome::Updated(i)) => updated(shared, &i),
            Err(e) => ephemeral(&notice(shared, &e)),
        },
        None => match open_dialog(shared, &post, &id, code, actor).await {
            Ok(()) => json!({}),
            Err(text) => ephemeral(&text),
        },
    }
}

/// Opens the dialog of an Edit, Reject, Comment, Choose… or Other… button, once the
/// engine has said the clicker may act on that action or question (a refusal is
/// audited as what the click tried).
async fn open_dialog(shared: &Shared, post: &ActionPost, id: &str, code: Code, actor: Actor) -> Result<(), String> {
    let unknown = || texts::text(shared.locale, Msg::UnknownButton).to_owned();
    let (attempt, check): (Attempt, crate::engine::OpeningCheck) = match code {
        Code::Other(question) => (Attempt::Open { open: Opening::Text, index: question }, Box::new(move |i: &Interaction| answerable(i, question))),
        Code::Edit(index) => (Attempt::Open { open: Opening::Edit, index }, Box::new(move |i: &Interaction| valid(i, index, Some(DecisionType::Edit)))),
        Code::Comment(index) => (Attempt::Open { open: Opening::Comment, index }, Box::new(move |i: &Interaction| valid(i, index, None))),
        Code::Reject(index) => {
            let reject = UserAction::Decide { action: index, decision: Decision::Reject { message: None } };
            (Attempt::Act(reject), Box::new(move |i: &Interaction| valid(i, index, Some(DecisionType::Reject))))
        }
        _ => return Err(unknown()),
    };
    let interaction = shared.engine.open(id, actor, attempt, check).await.map_err(|e| notice(shared, &e))?;
    let made = match code {
        Code::Other(question) => dialog::answer(&interaction, question, shared.locale, &shared.signer),
        code => dialog::for_code(&interaction, code, shared.locale, &shared.signer),
    };
    let Some(made) = made else { return Err(unknown()) };
    let Some(trigger) = post.trigger_id.as_deref().filter(|t| !t.is_empty()) else { return Err(unknown()) };
    shared.api.open_dialog(trigger, &shared.dialogs_url(), &made).await.map_err(|e| {
        tracing::warn!(error = %e, "cannot open a Mattermost dialog");
        mtext(shared.locale, MMsg::Internal).to_owned()
    })
}

/// Whether question `index` exists and has a dialog: a multi-select question (its
/// checkboxes), or one that takes typed text.
fn answerable(interaction: &Interaction, index: usize) -> Result<(), Refusal> {
    let RequestKind::Questions { questions, .. } = &interaction.request.kind else { return Err(Refusal::OutOfRange("question")) };
    match questions.get(index) {
        Some(q) if q.multi_select || q.allows_free_text() => Ok(()),
        Some(_) => Err(Refusal::NoFreeText),
        None => Err(Refusal::OutOfRange("question")),
    }
}

/// Whether the action a dialog is for exists and allows the decision it leads to.
fn valid(interaction: &Interaction, index: usize, needed: Option<DecisionType>) -> Result<(), Refusal> {
    if interaction.request.is_question() {
        return Err(Refusal::OutOfRange("action"));
    }
    let action = interaction.request.actions().get(index).ok_or(Refusal::OutOfRange("action"))?;
    match needed {
        Some(decision) if !action.allowed.contains(&decision) => Err(Refusal::DecisionNotAllowed { action: action.name.clone(), decision }),
        _ => Ok(()),
    }
}

/// A dialog submission: the response Mattermost shows in the dialog (`{}` closes it).
pub async fn submission(shared: &Shared, post: DialogPost) -> Value {
    if post.cancelled {
        return json!({});
    }
    let refused = |code: Option<Code>, text: String| match code {
        Some(code @ (Code::EditDialog(_) | Code::RejectDialog(_) | Code::CommentDialog(_))) => json!({ "errors": { dialog::error_field(code): text } }),
        _ => json!({ "error": text }),
    };
    let Some((id, code)) = verify(shared, Some(&post.state)) else {
        return refused(None, texts::text(shared.locale, Msg::UnknownButton).to_owned());
    };
    if !super::address::is_id(&post.user_id) {
        return refused(None, texts::text(shared.locale, Msg::UnknownButton).to_owned());
    }
    let actor = actor(shared, &id, &post.user_id, None, post.team_id.as_deref()).await;
    let actions = dialog::actions(code, &post.submission);
    if actions.is_empty() {
        // An empty field: the engine counts and audits the refusal, as every one.
        let attempted = match code {
            Code::OtherDialog(question) => UserAction::OtherText { question, text: String::new() },
            _ => UserAction::Submit,
        };
        let _ = shared.engine.open(&id, actor, Attempt::Act(attempted), Box::new(|_| Err(Refusal::EmptyText))).await;
        return refused(Some(code), texts::refusal(shared.locale, &Refusal::EmptyText));
    }
    for action in actions {
        if let Err(e) = shared.engine.act(&id, actor.clone(), action).await {
            return refused(Some(code), notice(shared, &e));
        }
    }
    json!({})
}

/// An answer nobody waited for (an update handled after a restart): its ephemeral
/// text, if any, posted as an ephemeral post to the clicker.
pub async fn notice_later(shared: &Shared, user_id: &str, channel_id: &str, answer: &Value) {
    let text = answer["ephemeral_text"].as_str().or(answer["error"].as_str()).or(answer["text"].as_str());
    let (Some(text), true, true) = (text, super::address::is_id(user_id), super::address::is_id(channel_id)) else { return };
    if let Err(e) = shared.api.ephemeral(user_id, channel_id, None, text).await {
        tracing::warn!(error = %e, "cannot show a notice to the clicker");
    }
}
