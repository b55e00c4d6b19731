//! Pure rendering: an [`Interaction`] and a locale become the Block Kit message that
//! shows it (`{"text": …, "blocks": […]}`, for `chat.postMessage` and `chat.update`),
//! and the modals its buttons open ([`modal`]). No IO, no clock.
//!
//! The card says what is asked, by which agent, for whom and until when; each action's
//! name, description and arguments (a code block cut to Slack's limits, with a visible
//! note); and one button per allowed decision: Approve (primary), Edit, Reject (danger,
//! with a confirm) and Comment. Once the interaction has ended the buttons are gone and
//! the outcome line (`✅ Approved by Ana at 14:02 UTC`, or the expiry) takes their
//! place, on every copy the engine refreshes. With the web inbox on, a pending card
//! ends with "Open in browser", its request's page.
//!
//! A question request's card ([`questions`]) has, per question, its text, the answer
//! chosen so far and the element that answers it (buttons, a select menu or
//! checkboxes), Other… and Skip, then one Submit for the set.
//!
//! Slack's limits (Block Kit reference) are kept here: 50 blocks a message, 3,000
//! characters a section text, 75 a button text, 2,000 a button value, 25 elements an
//! actions block, 150 a header. Agent text is escaped for mrkdwn
//! ([`text::escape`](super::text::escape)) so it can neither mention nor link.

pub mod modal;
pub mod questions;

use serde_json::{Value, json};

use super::codes::Code;
use super::limits;
use super::text::{SMsg, code, escape, escape_cut, note, stext};
use crate::interaction::{Action, Draft, Interaction, Origin, RememberScope, RequestKind, readable};
use crate::platform::descriptor::BrowserLink;
use crate::platform::kit::codes::Decide;
use crate::platform::kit::json::put;
use crate::platform::kit::token::TokenSigner;
use crate::platform::locale::web::{WebMsg, web_text};
use crate::protocol::{Decision, DecisionType};
use crate::texts::{self, Locale, Msg, cut, text};

/// Longest name, description or context shown in full before the args get the rest.
const FIELD: usize = 1000;

/// A plain_text object cut to `max` characters (Slack shows it as typed: no escaping).
pub fn plain(text: &str, max: usize) -> Value {
    json!({ "type": "plain_text", "text": cut(text, max), "emoji": true })
}

fn mrkdwn(text: String) -> Value {
    json!({ "type": "mrkdwn", "text": text })
}

fn section(block_id: &str, text: String) -> Value {
    put(json!({ "type": "section", "block_id": block_id, "text": null }), "text", mrkdwn(text))
}

/// The message showing `interaction`: its card while pending, its outcome after.
/// `link` is the request's page in the web inbox, `None` when the inbox is off: a
/// pending card links to it, and the notes about what Slack cannot hold send people
/// there only when it is on.
pub fn card(interaction: &Interaction, locale: Locale, signer: &TokenSigner, link: Option<&BrowserLink>) -> Value {
    let interaction = &*readable::interaction(interaction);
    let inbox = link.is_some();
    let pending = interaction.status.is_pending();
    let (title, fallback) = match &interaction.request.kind {
        RequestKind::Approval { actions } => {
            let names: Vec<&str> = actions.iter().map(|a| a.name.as_str()).collect();
            (stext(locale, SMsg::ApprovalTitle), format!("{}: {}", stext(locale, SMsg::ApprovalTitle), names.join(", ")))
        }
        RequestKind::Questions { questions, .. } => {
            let first = questions.first().map(|q| q.text.as_str()).unwrap_or_default();
            (stext(locale, SMsg::QuestionTitle), format!("{}: {first}", stext(locale, SMsg::QuestionTitle)))
        }
    };
    let mut head = vec![json!({ "type": "header", "block_id": "title", "text": plain(title, limits::HEADER_TEXT) })];
    if let Some(context) = &interaction.request.context {
        head.push(section("context", escape_cut(context, FIELD)));
    }
    head.push(put(json!({ "type": "context", "block_id": "meta", "elements": null }), "elements", meta(interaction, locale)));
    let mut tail = Vec::new();
    if !pending {
        tail.push(section("outcome", format!("*{}*", escape_cut(&texts::outcome(locale, interaction), FIELD))));
    }
    if let Some(link) = link.filter(|_| pending) {
        tail.push(browser_link(link, locale));
    }
    let room = limits::BLOCKS - head.len() - tail.len();
    let body = match &interaction.request.kind {
        RequestKind::Approval { actions } => approval(interaction, actions, locale, signer, room, inbox),
        RequestKind::Questions { questions, .. } => questions::blocks(interaction, questions, locale, signer, room, inbox),
    };
    let blocks: Vec<Value> = head.into_iter().chain(body).chain(tail).collect();
    put(json!({ "text": escape_cut(&fallback, limits::MESSAGE_TEXT), "blocks": null }), "blocks", blocks)
}

/// The card's "Open in browser": a link button (it opens the page and sends the bridge
/// a click without a value, which it ignores) when browsers reach the inbox over https,
/// else a line with the link, as on Telegram and Discord. A URL longer than a button
/// takes (Block Kit: 3,000 characters) goes in the line too.
fn browser_link(link: &BrowserLink, locale: Locale) -> Value {
    let label = format!("🌐 {}", web_text(locale, WebMsg::OpenInBrowser));
    match link {
        BrowserLink::Button(url) if url.chars().count() <= limits::BUTTON_URL => json!({
            "type": "actions", "block_id": "browser",
            "elements": [{ "type": "button", "action_id": "hitl.browser", "text": plain(&label, limits::BUTTON_TEXT), "url": url }]
        }),
        BrowserLink::Button(url) | BrowserLink::InText(url) => {
            json!({ "type": "context", "block_id": "browser", "elements": [mrkdwn(format!("{}: <{}>", escape(&label), escape(url)))] })
        }
    }
}

/// Who asked, for whom, and until when (or the quorum's progress while pending).
fn meta(interaction: &Interaction, locale: Locale) -> Vec<Value> {
    let mut out = Vec::new();
    if let Origin::Pushed { agent, .. } = &interaction.origin {
        out.push(mrkdwn(format!("*{}:* {}", stext(locale, SMsg::Agent), escape_cut(agent, 200))));
    }
    if let Some(requester) = &interaction.requester {
        out.push(mrkdwn(format!("*{}:* {}", stext(locale, SMsg::For), escape_cut(&requester.name, 200))));
    }
    if interaction.status.is_pending() {
        // Slack shows a date token in each reader's own time zone; the fallback is UTC.
        let secs = interaction.deadline_ms.div_euclid(1000);
        out.push(mrkdwn(format!(
            "⏰ *{}:* <!date^{secs}^{{date_short_pretty}} {{time}}|{}>",
            text(locale, Msg::Deadline),
            texts::clock(interaction.deadline_ms)
        )));
        if let Some(progress) = interaction.quorum_progress() {
            out.push(mrkdwn(format!("👥 {}", escape(&texts::policy::quorum_line(locale, &progress)))));
        }
    }
    out.truncate(limits::CONTEXT_ELEMENTS);
    out
}

fn decision_word(locale: Locale, d: &Decision) -> String {
    match d {
        Decision::Approve => format!("✅ {}", text(locale, Msg::Approve)),
        Decision::ApproveForSession => format!("🔓 {}", text(locale, Msg::ApproveForSession)),
        Decision::Reject { .. } => format!("❌ {}", text(locale, Msg::Reject)),
        Decision::Edit { .. } => format!("✏️ {}", text(locale, Msg::Edit)),
        Decision::Respond { .. } => format!("💬 {}", text(locale, Msg::Respond)),
    }
}

/// The approval's blocks within `room` blocks: a section per action (its args cut to
/// fit, with a note), its buttons while pending, the shared row for several actions.
fn approval(interaction: &Interaction, actions: &[Action], locale: Locale, signer: &TokenSigner, room: usize, inbox: bool) -> Vec<Value> {
    let pending = interaction.status.is_pending();
    let many = actions.len() > 1;
    let decided = |i: usize| match &interaction.draft {
        Draft::Decisions(d) => d.decisions.get(i).cloned().flatten(),
        Draft::Answers { .. } => None,
    };
    let offered = interaction.remember_offered();
    // Blocks kept beside the actions: the shared row, the remember row, the comment, and
    // the note that some actions were left out.
    let reserved = usize::from(pending && many) + usize::from(pending && !offered.is_empty()) + 2;
    let per_action = if pending { 2 } else { 1 };
    let shown = actions.len().min(room.saturating_sub(reserved) / per_action);
    let mut blocks = Vec::new();
    // A comment for the whole request (where no action takes a `respond`), as typed.
    if let Draft::Decisions(d) = &interaction.draft
        && let Some(note) = &d.user_edit_content
    {
        blocks.push(section("note", format!("💬 {}", escape_cut(note, FIELD))));
    }
    for (i, action) in actions.iter().enumerate().take(shown) {
        blocks.push(section(&format!("action.{i}"), action_text(action, i, many, decided(i).as_ref(), locale)));
        if pending {
            let buttons = action_buttons(interaction, action, i, many, &offered, locale, signer);
            if !buttons.is_empty() {
                blocks.push(put(json!({ "type": "actions", "block_id": format!("buttons.{i}"), "elements": null }), "elements", buttons));
            }
        }
    }
    if shown < actions.len() {
        blocks.push(json!({ "type": "context", "block_id": "more", "elements": [mrkdwn(escape(note(locale, SMsg::MoreActions, inbox)))] }));
    }
    if pending && !offered.is_empty() {
        let remember: Vec<Value> = offered
            .iter()
            .filter_map(|&scope| {
                let emoji = if scope == RememberScope::Session { "🔁" } else { "♾️" };
                button(
                    signer,
                    interaction,
                    Code::Decide(Decide::Remember(scope)),
                    &format!("{emoji} {}", texts::policy::remember_button(locale, scope)),
                    None,
                    None,
                )
            })
            .collect();
        blocks.push(put(json!({ "type": "actions", "block_id": "remember", "elements": null }), "elements", remember));
    }
    if pending && many {
        let mut row = Vec::new();
        if actions.iter().all(|a| a.allowed.contains(&DecisionType::Approve)) {
            row.extend(button(signer, interaction, Code::Decide(Decide::ApproveAll), &format!("✅ {}", text(locale, Msg::ApproveAll)), Some("primary"), None));
        }
        if actions.iter().all(|a| a.allowed.contains(&DecisionType::Reject)) {
            let confirm = confirm(locale, text(locale, Msg::RejectAll), stext(locale, SMsg::RejectAllConfirmText), text(locale, Msg::RejectAll));
            row.extend(button(
                signer,
                interaction,
                Code::Decide(Decide::RejectAll),
                &format!("❌ {}", text(locale, Msg::RejectAll)),
                Some("danger"),
                Some(confirm),
            ));
        }
        row.extend(button(signer, interaction, Code::Decide(Decide::Submit), &format!("📨 {}", text(locale, Msg::Submit)), None, None));
        blocks.push(put(json!({ "type": "actions", "block_id": "all", "elements": null }), "elements", row));
    }
    blocks
}

/// One action as mrkdwn: its name, description and args in a code block, within a
/// section's 3,000 characters; args that do not fit are cut and a note says so.
fn action_text(action: &Action, i: usize, many: bool, decided: Option<&Decision>, locale: Locale) -> String {
    let name = escape_cut(&action.name, 200);
    let mut head = if many { format!("*{}. {name}*", i + 1) } else { format!("*{name}*") };
    if let Some(description) = &action.description {
        head += "\n";
        head.push_str(&escape_cut(description, FIELD));
    }
    let mut foot = String::new();
    if let (true, Some(d)) = (many, decided) {
        foot = format!("\n→ {}", decision_word(locale, d));
    }
    let pretty = serde_json::to_string_pretty(&action.args).unwrap_or_else(|_| action.args.to_string());
    let args = code(&pretty);
    let fence = "\n```\n\n```".chars().count();
    let room = limits::SECTION_TEXT.saturating_sub(head.chars().count() + foot.chars().count() + fence);
    if args.chars().count() <= room {
        return format!("{head}\n```\n{args}\n```{foot}");
    }
    let note = format!("\n_{}_", escape(stext(locale, SMsg::ArgsCut)));
    let room = room.saturating_sub(note.chars().count());
    // Cut the escaped text on a character boundary, never inside an entity.
    let mut kept: String = args.chars().take(room.saturating_sub(1)).collect();
    if let Some(amp) = kept.rfind('&').filter(|&at| !kept[at..].contains(';')) {
        kept.truncate(amp);
    }
    format!("{head}\n```\n{kept}…\n```{note}{foot}")
}

/// The buttons of action `i`: each allowed decision, in a fixed order, and Comment.
fn action_buttons(
    interaction: &Interaction,
    action: &Action,
    i: usize,
    many: bool,
    offered: &[RememberScope],
    locale: Locale,
    signer: &TokenSigner,
) -> Vec<Value> {
    let suffix = if many { format!(" #{}", i + 1) } else { String::new() };
    let approve = if offered.is_empty() { Msg::Approve } else { Msg::ApproveOnce };
    let mut out = Vec::new();
    for decision in [DecisionType::Approve, DecisionType::ApproveForSession, DecisionType::Edit, DecisionType::Reject] {
        // The policy's own "for this session" replaces the backend's.
        let replaced = decision == DecisionType::ApproveForSession && offered.contains(&RememberScope::Session);
        if !action.allowed.contains(&decision) || replaced {
            continue;
        }
        let made = match decision {
            DecisionType::Approve => button(
                signer,
                interaction,
                Code::Decide(Decide::Approve(i)),
                &format!("✅ {}{suffix}", action.label_or(decision, text(locale, approve))),
                Some("primary"),
                None,
            ),
            DecisionType::ApproveForSession => button(
                signer,
                interaction,
                Code::Decide(Decide::ApproveForSession(i)),
                &format!("🔓 {}{suffix}", action.label_or(decision, text(locale, Msg::ApproveForSession))),
                None,
                None,
            ),
            DecisionType::Edit => button(signer, interaction, Code::Edit(i), &format!("✏️ {}{suffix}", text(locale, Msg::Edit)), None, None),
            _ => {
                let confirm = confirm(locale, stext(locale, SMsg::RejectConfirmTitle), stext(locale, SMsg::RejectConfirmText), text(locale, Msg::Reject));
                button(
                    signer,
                    interaction,
                    Code::Reject(i),
                    &format!("❌ {}{suffix}", action.label_or(decision, text(locale, Msg::Reject))),
                    Some("danger"),
                    Some(confirm),
                )
            }
        };
        out.extend(made);
    }
    // A comment is always possible: a `respond` decision where allowed, else a note.
    out.extend(button(signer, interaction, Code::Comment(i), &format!("💬 {}{suffix}", text(locale, Msg::Respond)), None, None));
    out.truncate(limits::ACTIONS_ELEMENTS);
    out
}

/// A confirm dialog (plain text, so the action's name is shown as typed).
fn confirm(locale: Locale, title: &str, body: &str, yes: &str) -> Value {
    json!({
        "title": plain(title, limits::CONFIRM_TITLE),
        "text": plain(body, limits::CONFIRM_TEXT),
        "confirm": plain(yes, limits::CONFIRM_BUTTON),
        "deny": plain(stext(locale, SMsg::Cancel), limits::CONFIRM_BUTTON),
        "style": "danger",
    })
}

/// A button whose value is the signed token of `code`; `None` (and an error logged)
/// if it cannot be signed, rather than a button Slack would refuse.
fn button(signer: &TokenSigner, interaction: &Interaction, code: Code, label: &str, style: Option<&str>, confirm: Option<Value>) -> Option<Value> {
    let value = sign(signer, interaction, code, limits::BUTTON_VALUE)?;
    let mut button = json!({ "type": "button", "action_id": format!("hitl.{}", code.encode()), "text": plain(label, limits::BUTTON_TEXT), "value": value });
    if let Some(style) = style {
        button["style"] = json!(style);
    }
    if let Some(confirm) = confirm {
        button["confirm"] = confirm;
    }
    Some(button)
}

/// The signed token of `code` within `max` characters; `None` (and an error logged)
/// if it cannot be signed, rather than an element Slack would refuse.
fn sign(signer: &TokenSigner, interaction: &Interaction, code: Code, max: usize) -> Option<String> {
    match signer.sign(&interaction.id, &code.encode()) {
        Ok(token) if token.chars().count() <= max => Some(token),
        _ => {
            tracing::error!(interaction = %interaction.id, ?code, "cannot sign an element; left out");
            None
        }
    }
}

#[cfg(test)]
mod tests;
