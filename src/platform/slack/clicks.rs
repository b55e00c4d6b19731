//! Clicks and modal submissions: verify the signed token, then one call to the
//! engine, which checks who may act (the same access rules as every platform),
//! applies, audits and refreshes every copy of the card (`chat.update`). This file
//! never decides anything itself.
//!
//! - Approve, Approve all, Reject all, Submit and the remember buttons act at once.
//! - A question's option button, its select menu or checkbox group (the whole
//!   selection, as [`UserAction::Select`]) and Skip act at once, like Telegram's.
//! - Edit, Reject, Comment and a question's Other… open a modal (`views.open`, with
//!   the click's `trigger_id`) once the engine has said the clicker may (a stranger
//!   gets the refusal, not a form); its submission acts.
//! - Whatever is refused (a stranger, a late or repeated click, a forged value) gets
//!   an ephemeral notice (`chat.postEphemeral`) that only the clicker sees, and
//!   changes nothing. A refused submission is answered in the modal, under its input
//!   (`response_action: errors`), and nothing is sent.

use serde_json::{Value, json};

use super::Shared;
use super::codes::Code;
use super::payload::{ActionClicked, BlockActions, User, ViewSubmission};
use super::render::modal;
use super::text::{SMsg, stext};
use crate::engine::ActError;
use crate::interaction::{Actor, Attempt, Interaction, Opening, Refusal, RequestKind, UserAction};
use crate::protocol::{Decision, DecisionType};
use crate::texts::{self, Msg};

/// The person acting on request `id`, with their workspace as the space
/// `access.chats` may open and the user groups they are in (among those the
/// configuration and the request name).
async fn actor(shared: &Shared, user: &User, team: Option<&str>, id: &str) -> Actor {
    let mut actor = Actor::new(super::PLATFORM, &user.id, &user.display());
    actor.space = team.or(user.team_id.as_deref()).map(str::to_owned);
    shared.groups.of_clicker(&shared.api, &shared.engine, id, &mut actor).await;
    actor
}

/// The interaction id and code a signed value names, if it verifies and parses.
fn verify(shared: &Shared, value: &str) -> Option<(String, Code)> {
    let verified = shared.signer.verify(value).map_err(|e| tracing::info!(error = %e, "refusing a Slack value that does not verify")).ok()?;
    let code = Code::parse(&verified.code)?;
    Some((verified.interaction_id, code))
}

/// What to tell the clicker when the engine refused or failed.
fn notice(shared: &Shared, e: &ActError) -> String {
    match e {
        ActError::Refused(refusal) => texts::refusal(shared.locale, refusal),
        ActError::UnknownInteraction => texts::text(shared.locale, Msg::UnknownButton).to_owned(),
        ActError::StoreFailing(why) => {
            tracing::error!(error = %why, "a Slack click was not saved: the store is failing");
            texts::text(shared.locale, Msg::StoreFailing).to_owned()
        }
        ActError::Internal(why) => {
            tracing::error!(error = %why, "acting on a Slack click failed");
            stext(shared.locale, SMsg::Internal).to_owned()
        }
    }
}

/// A `block_actions` payload: one button clicked, or one choice made in a select
/// menu or checkbox group, on a card.
pub async fn click(shared: &Shared, click: BlockActions) {
    let Some(clicked) = click.actions.first() else { return };
    let team = click.team.as_ref().map(|t| t.id.as_str());
    let unknown = || texts::text(shared.locale, Msg::UnknownButton).to_owned();
    let result = match clicked.kind.as_str() {
        "static_select" | "checkboxes" | "multi_static_select" => match selection(shared, clicked) {
            None => Err(unknown()),
            Some((id, action)) => {
                let actor = actor(shared, &click.user, team, &id).await;
                shared.engine.act(&id, actor, action).await.map(|_| ()).map_err(|e| notice(shared, &e))
            }
        },
        _ => {
            let Some(value) = clicked.value.as_deref() else {
                tracing::debug!("a block action without a value; not one of the bridge's buttons");
                return;
            };
            match verify(shared, value) {
                None => Err(unknown()),
                Some((id, code)) => {
                    let actor = actor(shared, &click.user, team, &id).await;
                    match code.direct_action() {
                        Some(action) => shared.engine.act(&id, actor, action).await.map(|_| ()).map_err(|e| notice(shared, &e)),
                        None => open_modal(shared, &click, &id, code, actor).await,
                    }
                }
            }
        }
    };
    if let Err(text) = result {
        ephemeral(shared, &click, &text).await;
    }
}

/// A select menu's or checkbox group's choice as the one action that sets it: the
/// question's whole selection ([`UserAction::Select`]), which a checkbox group sends
/// in full on every tick. The element's `action_id` names the question (signed), and
/// every option's value must be signed for that same request and question; anything
/// else is refused whole.
fn selection(shared: &Shared, clicked: &ActionClicked) -> Option<(String, UserAction)> {
    let (id, Code::Choose(question)) = verify(shared, &clicked.action_id)? else { return None };
    let chosen: Vec<&str> = match (&clicked.selected_option, &clicked.selected_options) {
        (Some(one), _) => vec![one.value.as_str()],
        (None, Some(all)) => all.iter().map(|o| o.value.as_str()).collect(),
        (None, None) => Vec::new(),
    };
    let mut options = Vec::with_capacity(chosen.len());
    for value in chosen {
        match verify(shared, value)? {
            (of, Code::Option { question: q, option }) if of == id && q == question => options.push(option),
            _ => {
                tracing::info!("refusing an option signed for another request or question");
                return None;
            }
        }
    }
    Some((id, UserAction::Select { question, options }))
}

/// Opens the modal of an Edit, Reject, Comment or Other… button, once the engine has
/// said the clicker may act on that action or question (the refusal is audited as
/// what the click tried).
async fn open_modal(shared: &Shared, click: &BlockActions, id: &str, code: Code, actor: Actor) -> Result<(), String> {
    let unknown = || texts::text(shared.locale, Msg::UnknownButton).to_owned();
    if let Code::Other(question) = code {
        let attempt = Attempt::Open { open: Opening::Text, index: question };
        let interaction =
            shared.engine.open(id, actor, attempt, Box::new(move |i: &Interaction| takes_text(i, question))).await.map_err(|e| notice(shared, &e))?;
        let view = modal::other(&interaction, question, shared.locale, &shared.signer).ok_or_else(unknown)?;
        return show(shared, click, &view).await;
    }
    // What the click tries, and the decision the modal leads to, which the action must allow.
    let (index, attempt, needed) = match code {
        Code::Edit(index) => (index, Attempt::Open { open: Opening::Edit, index }, Some(DecisionType::Edit)),
        Code::Comment(index) => (index, Attempt::Open { open: Opening::Comment, index }, None),
        Code::Reject(index) => {
            let reject = UserAction::Decide { action: index, decision: Decision::Reject { message: None } };
            (index, Attempt::Act(reject), Some(DecisionType::Reject))
        }
        _ => return Err(unknown()),
    };
    let check = Box::new(move |interaction: &Interaction| valid(interaction, index, needed));
    let interaction = shared.engine.open(id, actor, attempt, check).await.map_err(|e| notice(shared, &e))?;
    let Some(view) = modal::for_code(&interaction, code, shared.locale, &shared.signer) else { return Err(unknown()) };
    show(shared, click, &view).await
}

/// Opens `view` with the click's trigger (valid for 3 seconds).
async fn show(shared: &Shared, click: &BlockActions, view: &Value) -> Result<(), String> {
    let Some(trigger) = click.trigger_id.as_deref() else { return Err(texts::text(shared.locale, Msg::UnknownButton).to_owned()) };
    shared.api.open_view(trigger, view).await.map_err(|e| {
        tracing::warn!(error = %e, "cannot open a modal");
        stext(shared.locale, SMsg::Internal).to_owned()
    })
}

/// Whether question `index` exists and takes typed text (who may answer is the
/// engine's check): run by the engine, which refuses and audits.
fn takes_text(interaction: &Interaction, index: usize) -> Result<(), Refusal> {
    let RequestKind::Questions { questions, .. } = &interaction.request.kind else { return Err(Refusal::OutOfRange("question")) };
    match questions.get(index) {
        Some(q) if q.allows_free_text() => Ok(()),
        Some(_) => Err(Refusal::NoFreeText),
        None => Err(Refusal::OutOfRange("question")),
    }
}

/// Whether the action a modal is for exists and allows the decision it leads to (who
/// may act is the engine's check): run by the engine, which refuses and audits.
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

/// A notice only the clicker sees, where they clicked.
async fn ephemeral(shared: &Shared, click: &BlockActions, text: &str) {
    let Some(channel) = click.channel_id() else {
        tracing::info!(notice = %text, "a refused click outside a channel; no notice to show");
        return;
    };
    let text = super::text::escape_cut(text, 3000);
    if let Err(e) = shared.api.post_ephemeral(channel, &click.user.id, click.thread_ts(), &text).await {
        tracing::warn!(error = %e, "cannot show a notice to the clicker");
    }
}

/// A `view_submission`: the answer Slack shows in the modal (`None` closes it).
pub async fn submission(shared: &Shared, submission: ViewSubmission) -> Option<Value> {
    let errors = |block: &str, text: String| Some(json!({ "response_action": "errors", "errors": { block: super::text::escape_cut(&text, 300) } }));
    let Some((id, code)) = verify(shared, &submission.view.private_metadata) else {
        return errors(modal::ARGS_BLOCK, texts::text(shared.locale, Msg::UnknownButton).to_owned());
    };
    let block = modal::error_block(code);
    let actor = actor(shared, &submission.user, submission.team.as_ref().map(|t| t.id.as_str()), &id).await;
    let Some(action) = modal::action(code, &submission.view.state.values) else {
        // An empty comment: the engine counts and audits the refusal, as every one.
        let attempted = match code {
            Code::OtherModal(question) => UserAction::OtherText { question, text: String::new() },
            _ => UserAction::Submit,
        };
        let _ = shared.engine.open(&id, actor, Attempt::Act(attempted), Box::new(|_| Err(Refusal::EmptyText))).await;
        return errors(block, texts::refusal(shared.locale, &Refusal::EmptyText));
    };
    match shared.engine.act(&id, actor, action).await {
        Ok(_) => None,
        Err(e) => errors(block, notice(shared, &e)),
    }
}
