//! A decision from the browser is a click: the posted form becomes the same
//! [`UserAction`]s a chat button would send, handed to the engine's one entry for
//! decisions ([`EngineHandle::act`]), which checks who may answer, lets the first
//! answer win, writes the audit row (the actor's channel says `web`) and locks every
//! chat copy of the card. Every call from the inbox into the engine is in this file.
//!
//! [`EngineHandle::act`]: crate::engine::EngineHandle::act

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::Web;
use super::forms::Fields;
use super::layout::{Frame, form_expired, see_other, unavailable, visit};
use super::request_page::{Notice, not_found, render};
use super::visibility;
use crate::clock::now_ms;
use crate::engine::{ActError, ActOutcome};
use crate::interaction::{Actor, Attempt, Interaction, Refusal, RequestKind, UserAction};
use crate::protocol::{Decision, DecisionType};
use crate::texts::refusal as refusal_text;

/// `POST /inbox/requests/{id}/decide`: one decision button of an approval.
pub(super) async fn decide(state: State<Arc<Web>>, id: Path<String>, headers: HeaderMap, body: Bytes) -> Response {
    handle(state, id, headers, body, |_, form| decision_actions(form)).await
}

/// `POST /inbox/requests/{id}/answer`: the questions form.
pub(super) async fn answer(state: State<Arc<Web>>, id: Path<String>, headers: HeaderMap, body: Bytes) -> Response {
    handle(state, id, headers, body, |i, form| Ok(answer_actions(i, form))).await
}

async fn handle(
    State(web): State<Arc<Web>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
    read: impl Fn(&Interaction, &Fields) -> Result<Vec<UserAction>, Notice>,
) -> Response {
    let (viewer, locale) = match visit(&web, &headers).await {
        Ok(visitor) => visitor,
        Err(answer) => return answer,
    };
    let viewer = &viewer;
    let frame = Frame { web: &web, locale, viewer: Some(viewer) };
    let form = Fields::parse(&body);
    if !viewer.csrf_ok(&form) {
        return form_expired(&frame);
    }
    let interaction = match web.store.interaction(&id).await {
        Ok(Some(i)) => i,
        Ok(None) => return not_found(&frame),
        Err(e) => return unavailable(&e),
    };
    let actions = match read(&interaction, &form) {
        Ok(actions) if !actions.is_empty() => actions,
        Ok(_) => {
            return render(&frame, viewer, &id, Some(Notice::Refused(refusal_text(frame.locale, &Refusal::OutOfRange("form")))), None, StatusCode::BAD_REQUEST)
                .await;
        }
        Err(notice) => return render(&frame, viewer, &id, Some(notice), None, StatusCode::UNPROCESSABLE_ENTITY).await,
    };
    // Who may answer is asked now, with the groups the person's platform gives now.
    let actor = web.acting(&viewer.actor, &visibility::named_groups(&interaction.deciders())).await;
    if let Some(refusal) = web_only_refusal(&web, &interaction, &actor) {
        // Refused and audited by the engine, after its own check of who may act.
        let attempt = Attempt::Act(actions[0].clone());
        let _ = web.engine.open(&id, actor, attempt, Box::new(move |_| Err(refusal))).await;
        return not_found(&frame);
    }
    match act(&web, &id, &actor, actions).await {
        Ok(_) => see_other(&web.path(&format!("/inbox/requests/{id}"))),
        // Someone who may not answer learns nothing about the request.
        Err(ActError::Refused(Refusal::NotAllowed | Refusal::SelfApproval)) | Err(ActError::UnknownInteraction) => not_found(&frame),
        Err(ActError::Refused(refusal)) => {
            let status = if matches!(refusal, Refusal::AlreadyDecided { .. } | Refusal::Expired | Refusal::Cancelled) {
                StatusCode::CONFLICT
            } else {
                StatusCode::UNPROCESSABLE_ENTITY
            };
            render(&frame, viewer, &id, Some(Notice::Refused(refusal_text(frame.locale, &refusal))), None, status).await
        }
        Err(ActError::StoreFailing(reason)) => {
            tracing::error!(%reason, interaction = %id, "a decision from the web inbox was not saved: the store is failing");
            let notice = crate::texts::text(frame.locale, crate::texts::Msg::StoreFailing).to_owned();
            render(&frame, viewer, &id, Some(Notice::Refused(notice)), None, StatusCode::SERVICE_UNAVAILABLE).await
        }
        Err(ActError::Internal(reason)) => {
            tracing::error!(%reason, interaction = %id, "a decision from the web inbox failed");
            render(&frame, viewer, &id, Some(Notice::Refused(reason)), None, StatusCode::SERVICE_UNAVAILABLE).await
        }
    }
}

/// The inbox's own refusal, beyond the engine's: a request open to anyone in its chat
/// is answered from the browser only by `access.users` and `access.admins`. Whatever
/// else is refused, the engine refuses (and audits) itself.
fn web_only_refusal(web: &Web, i: &Interaction, actor: &Actor) -> Option<Refusal> {
    let now = now_ms();
    match visibility::refusal(web, i, actor, now) {
        Some(Refusal::NotAllowed) if !matches!(i.may_act(actor, &web.policy, now), Err(Refusal::NotAllowed)) => Some(Refusal::NotAllowed),
        _ => None,
    }
}

/// Applies `actions` in order through the engine, as one person's clicks; stops at the
/// first refusal or once the request is decided.
async fn act(web: &Web, id: &str, actor: &Actor, actions: Vec<UserAction>) -> Result<ActOutcome, ActError> {
    let mut last = None;
    for action in actions {
        let outcome = web.engine.act(id, actor.clone(), action).await?;
        let resolved = matches!(outcome, ActOutcome::Resolved(_));
        last = Some(outcome);
        if resolved {
            break;
        }
    }
    last.ok_or(ActError::Internal("nothing to apply".into()))
}

/// The approval form: which button, on which action, with what words.
fn decision_actions(form: &Fields) -> Result<Vec<UserAction>, Notice> {
    let action: usize = form.get("action").and_then(|a| a.parse().ok()).unwrap_or(usize::MAX);
    let words = form.non_empty("text").map(|t| t.trim().to_owned());
    let one = match form.get("decision").unwrap_or_default() {
        "approve" => UserAction::Decide { action, decision: Decision::Approve },
        "reject" => UserAction::Decide { action, decision: Decision::Reject { message: words } },
        "comment" => UserAction::Comment { action, text: words.unwrap_or_default() },
        "approve_all" => UserAction::DecideAll { decision: DecisionType::Approve },
        "reject_all" => UserAction::DecideAll { decision: DecisionType::Reject },
        "submit" => UserAction::Submit,
        "edit" => {
            let typed = form.get("json").unwrap_or_default();
            // Checked here first for the parser's own message; nothing is sent.
            if let Err(e) = serde_json::from_str::<serde_json::Value>(typed) {
                return Err(Notice::InvalidJson { action, message: e.to_string(), typed: typed.to_owned() });
            }
            UserAction::EditArgs { action, json: typed.to_owned() }
        }
        _ => return Ok(Vec::new()),
    };
    Ok(vec![one])
}

/// The questions form: per question the options ticked, the "Other" text, or skip;
/// then Submit.
fn answer_actions(i: &Interaction, form: &Fields) -> Vec<UserAction> {
    let RequestKind::Questions { questions, .. } = &i.request.kind else { return Vec::new() };
    let mut actions = Vec::new();
    for q in 0..questions.len() {
        let options: Vec<usize> = form.all(&format!("q{q}")).filter_map(|o| o.parse().ok()).collect();
        let other = form.non_empty(&format!("q{q}.other"));
        if form.get(&format!("q{q}.skip")).is_some() || (options.is_empty() && other.is_none()) {
            actions.push(UserAction::Skip { question: q });
            continue;
        }
        if !options.is_empty() {
            actions.push(UserAction::Select { question: q, options });
        }
        if let Some(text) = other {
            actions.push(UserAction::OtherText { question: q, text: text.to_owned() });
        }
    }
    actions.push(UserAction::Submit);
    actions
}
