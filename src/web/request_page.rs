//! `GET /inbox/requests/{id}`: one request in full. Every action with its arguments
//! (coloured JSON, text blocks, diffs), the decisions allowed as real buttons
//! (**Approve**, **Edit**, **Reject**, **Comment**), questions as one form, the policy
//! state, where it is shown and its audit trail. Someone who may not answer it is told
//! no such request exists, whether it does or not.

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use maud::{Markup, html};

use super::Web;
use super::forms::Fields;
use super::inbox::{asks, countdown, started_by};
use super::json_view::{blocks, json};
use super::layout::{Frame, html, unavailable, visit, when};
use super::session::Viewer;
use super::visibility::{may_see, named_groups, waits_on};
use crate::clock::now_ms;
use crate::interaction::chat::Networks;
use crate::interaction::{Action, FreeText, Interaction, Question, RequestKind, readable};
use crate::protocol::DecisionType;
use crate::store::{AuditEntry, MessageRef};
use crate::texts::web::WebMsg;
use crate::texts::{Msg, outcome, policy as policy_texts};

/// What the page says above the request after a form was not accepted.
pub(super) enum Notice {
    /// Why the engine (or the web's own check) refused.
    Refused(String),
    /// The edit's JSON did not parse: the parser's message, and the text as typed.
    InvalidJson { action: usize, message: String, typed: String },
}

pub(super) async fn page(State(web): State<Arc<Web>>, Path(id): Path<String>, headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    let (viewer, locale) = match visit(&web, &headers).await {
        Ok(visitor) => visitor,
        Err(answer) => return answer,
    };
    let viewer = &viewer;
    let frame = Frame { web: &web, locale, viewer: Some(viewer) };
    let edit = Fields::query(query.as_deref()).get("edit").and_then(|e| e.parse().ok());
    render(&frame, viewer, &id, None, edit, StatusCode::OK).await
}

/// The page of request `id` as `viewer` may see it, with `notice` above it and the
/// editor of action `edit` open.
pub(super) async fn render(frame: &Frame<'_>, viewer: &Viewer, id: &str, notice: Option<Notice>, edit: Option<usize>, status: StatusCode) -> Response {
    let web = frame.web;
    let now = now_ms();
    let (interaction, actor) = match web.store.interaction(id).await {
        Ok(Some(i)) => {
            let actor = web.acting(&viewer.actor, &named_groups(&i.deciders())).await;
            if !may_see(web, &i, &actor, now) {
                return not_found(frame);
            }
            (i, actor)
        }
        Ok(None) => return not_found(frame),
        Err(e) => return unavailable(&e),
    };
    // What the agent wrote is shown as a card shows it: hidden characters as markers
    // (the edit form starts from what the person reads, as in chat).
    let interaction = readable::interaction(&interaction).into_owned();
    let (shown, audit) = match tokio::try_join!(web.store.showing(&interaction.session_id, &interaction.id), web.store.audit_log(interaction.approval_key())) {
        Ok((showing, audit)) => {
            (shown_in(&web.networks, &showing.messages), audit.into_iter().filter(|e| e.interaction_id == interaction.id).collect::<Vec<_>>())
        }
        Err(e) => return unavailable(&e),
    };
    let answerable = waits_on(web, &interaction, &actor, now);
    let i = &interaction;
    let (edit, typed) = match &notice {
        Some(Notice::InvalidJson { action, typed, .. }) => (Some(*action), Some(typed.as_str())),
        _ => (edit, None),
    };
    let body = html! {
        p { a href=(frame.path("/inbox")) { "← " (frame.t(WebMsg::Back)) } }
        h1 { (asks(i)) }
        @if let Some(context) = &i.request.context { pre.context { (context) } }
        div id="request-state" data-live data-state=(i.status.name()) {
            dl.meta {
                dt { (frame.t(WebMsg::Status)) } dd.status { (outcome(frame.locale, i)) }
                dt { (frame.t(WebMsg::StartedBy)) } dd { (started_by(frame, i)) }
                dt { (frame.t(WebMsg::Where)) } dd { (shown.join(", ")) }
                dt { (frame.t(WebMsg::When)) } dd { (when(i.created_at_ms)) }
                @if i.status.is_pending() { dt { (frame.t(WebMsg::Deadline)) } dd { (countdown(i.deadline_ms, now)) } }
            }
            (policy_state(frame, i))
        }
        @match &notice {
            Some(Notice::Refused(why)) => p.error role="alert" { (why) },
            Some(Notice::InvalidJson { message, .. }) => p.error role="alert" { (frame.t(WebMsg::InvalidJson)) " " (message) },
            None => {},
        }
        @match &i.request.kind {
            RequestKind::Approval { actions } => {
                @for (n, action) in actions.iter().enumerate() {
                    (action_section(frame, i, n, action, answerable, edit == Some(n), typed))
                }
                @if answerable && actions.len() > 1 { (all_actions(frame, i, actions)) }
            }
            RequestKind::Questions { questions, .. } => (questions_form(frame, i, questions, answerable)),
        }
        section.audit id="request-audit" data-live {
            h2 { (frame.t(WebMsg::AuditTrail)) }
            (audit_table(frame, &audit))
        }
    };
    html(status, frame.page(&asks(i), body))
}

/// The chats whose messages show the request, each once, in the order first shown.
fn shown_in(networks: &Networks, messages: &[MessageRef]) -> Vec<String> {
    let mut chats: Vec<String> = Vec::new();
    for label in messages.iter().map(|m| networks.display_chat(&m.chat)) {
        if !chats.contains(&label) {
            chats.push(label);
        }
    }
    chats
}

pub(super) fn not_found(frame: &Frame<'_>) -> Response {
    let body = html! { h1 { (frame.t(WebMsg::NotFound)) } p { a href=(frame.path("/inbox")) { (frame.t(WebMsg::Back)) } } };
    html(StatusCode::NOT_FOUND, frame.page(frame.t(WebMsg::NotFound), body))
}

/// Quorum votes with who cast them, escalation steps done, four eyes.
fn policy_state(frame: &Frame<'_>, i: &Interaction) -> Markup {
    let progress = i.quorum_progress();
    let four_eyes = frame.web.policy.four_eyes && i.requester.is_some() && matches!(i.request.kind, RequestKind::Approval { .. });
    let escalation = i.policy.as_ref().is_some_and(|p| !p.escalation.is_empty());
    html! {
        @if progress.is_some() || four_eyes || escalation {
            section.policy {
                h2 { (frame.t(WebMsg::Policy)) }
                @if let Some(p) = &progress {
                    p.quorum { (policy_texts::quorum_line(frame.locale, p)) }
                    p { (frame.t(WebMsg::Votes)) ": "
                        @if p.tallies.is_empty() { (frame.t(WebMsg::Nobody)) }
                        @else { (p.voters().map(|v| v.name.as_str()).collect::<Vec<_>>().join(", ")) }
                    }
                }
                @if escalation { p { (frame.t(WebMsg::EscalationSteps)) ": " (i.escalations_done) } }
                @if four_eyes { p { (frame.t(WebMsg::FourEyes)) } }
            }
        }
    }
}

fn decide_form(frame: &Frame<'_>, i: &Interaction, action: usize, decision: &str, inner: Markup, label: &str) -> Markup {
    html! {
        form.decide method="post" action=(frame.path(&format!("/inbox/requests/{}/decide", i.id))) {
            (frame.csrf())
            input type="hidden" name="action" value=(action);
            input type="hidden" name="decision" value=(decision);
            (inner)
            button type="submit" name="button" value=(decision) { (label) }
        }
    }
}

fn action_section(frame: &Frame<'_>, i: &Interaction, n: usize, action: &Action, answerable: bool, editing: bool, typed: Option<&str>) -> Markup {
    let allows = |d: DecisionType| action.allowed.contains(&d);
    let prefilled = typed.map(str::to_owned).unwrap_or_else(|| serde_json::to_string_pretty(&action.args).unwrap_or_default());
    let field = |what: &str| format!("a{n}-{what}");
    html! {
        section.action {
            h2 { code { (action.name) } }
            @if let Some(d) = &action.description { p.description { (d) } }
            (json(&action.args))
            (blocks(&action.args))
            @if answerable {
                div.buttons {
                    @if allows(DecisionType::Approve) { (decide_form(frame, i, n, "approve", html! {}, action.label_or(DecisionType::Approve, frame.chat(Msg::Approve)))) }
                    @if allows(DecisionType::Edit) && !editing {
                        form.decide method="get" action=(frame.path(&format!("/inbox/requests/{}", i.id))) {
                            input type="hidden" name="edit" value=(n);
                            button type="submit" { (frame.chat(Msg::Edit)) }
                        }
                    }
                }
                @if allows(DecisionType::Edit) && editing {
                    (decide_form(frame, i, n, "edit", html! {
                        label for=(field("json")) { (frame.t(WebMsg::EditArgs)) }
                        textarea.editor id=(field("json")) name="json" rows="12" spellcheck="false" { (prefilled) }
                    }, frame.chat(Msg::Submit)))
                }
                @if allows(DecisionType::Reject) {
                    (decide_form(frame, i, n, "reject", html! {
                        label for=(field("reason")) { (frame.t(WebMsg::Reason)) }
                        textarea id=(field("reason")) name="text" rows="2" {}
                    }, action.label_or(DecisionType::Reject, frame.chat(Msg::Reject))))
                }
                (decide_form(frame, i, n, "comment", html! {
                    label for=(field("comment")) { (frame.t(WebMsg::CommentText)) }
                    textarea id=(field("comment")) name="text" rows="2" required {}
                }, frame.chat(Msg::Respond)))
            }
        }
    }
}

/// Several actions: decide them all at once, or send the draft decided one by one.
fn all_actions(frame: &Frame<'_>, i: &Interaction, actions: &[Action]) -> Markup {
    let every = |d: DecisionType| actions.iter().all(|a| a.allowed.contains(&d));
    html! {
        div.buttons.all {
            @if every(DecisionType::Approve) { (decide_form(frame, i, 0, "approve_all", html! {}, crate::texts::text(frame.locale, crate::texts::Msg::ApproveAll))) }
            @if every(DecisionType::Reject) { (decide_form(frame, i, 0, "reject_all", html! {}, crate::texts::text(frame.locale, crate::texts::Msg::RejectAll))) }
            (decide_form(frame, i, 0, "submit", html! {}, frame.chat(Msg::Submit)))
        }
    }
}

fn questions_form(frame: &Frame<'_>, i: &Interaction, questions: &[Question], answerable: bool) -> Markup {
    html! {
        form.questions method="post" action=(frame.path(&format!("/inbox/requests/{}/answer", i.id))) {
            (frame.csrf())
            @for (q, question) in questions.iter().enumerate() {
                fieldset {
                    legend { @if let Some(h) = &question.header { strong { (h) } ": " } (question.text) }
                    @for (o, option) in question.options.iter().enumerate() {
                        @let id = format!("q{q}-o{o}");
                        div.option {
                            @if question.multi_select { input type="checkbox" id=(id) name=(format!("q{q}")) value=(o) disabled[!answerable]; }
                            @else { input type="radio" id=(id) name=(format!("q{q}")) value=(o) disabled[!answerable]; }
                            label for=(id) { (option.label) @if let Some(d) = &option.description { " — " span.description { (d) } } }
                        }
                    }
                    @if question.free_text != FreeText::Disabled {
                        div.other {
                            label for=(format!("q{q}-other")) { (frame.t(WebMsg::OtherText)) }
                            input type="text" id=(format!("q{q}-other")) name=(format!("q{q}.other")) disabled[!answerable];
                        }
                    }
                    div.skip {
                        input type="checkbox" id=(format!("q{q}-skip")) name=(format!("q{q}.skip")) value="1" disabled[!answerable];
                        label for=(format!("q{q}-skip")) { (frame.t(WebMsg::SkipQuestion)) }
                    }
                }
            }
            @if answerable { button type="submit" { (frame.chat(Msg::Submit)) } }
        }
    }
}

fn audit_table(frame: &Frame<'_>, entries: &[AuditEntry]) -> Markup {
    html! {
        @if entries.is_empty() { p { "—" } } @else {
            table {
                thead { tr { th { (frame.t(WebMsg::When)) } th { (frame.t(WebMsg::Outcome)) } th { (frame.t(WebMsg::Person)) } th { "reply / reason" } } }
                tbody {
                    @for e in entries {
                        tr {
                            td { (when(e.at_ms)) }
                            td { (e.outcome) }
                            td { (person(frame, e)) }
                            td { code { (readable::text(&e.reply.as_ref().map(|r| r.to_string()).or_else(|| e.reason.clone()).unwrap_or_default())) } }
                        }
                    }
                }
            }
        }
    }
}

/// Who acted on an audit entry, with the channel when it was not their chat; a
/// display name's hidden characters as markers.
pub(super) fn person(frame: &Frame<'_>, e: &AuditEntry) -> String {
    let shown = match &e.actor {
        Some(a) => match &a.channel {
            Some(channel) => format!("{} ({}:{}) {} {channel}", a.name, a.platform, a.user_id, frame.t(WebMsg::Via)),
            None => format!("{} ({}:{})", a.name, a.platform, a.user_id),
        },
        None => "—".to_owned(),
    };
    readable::text(&shown).into_owned()
}
