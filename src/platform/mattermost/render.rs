//! Pure rendering: an [`Interaction`] and a locale become the post that shows it
//! (`{"message": …, "props": {"attachments": […]}}`, for `POST posts`, `PATCH` and a
//! click's `update`), and the dialogs its buttons open ([`dialog`]). No IO, no clock.
//!
//! The card is message attachments (Mattermost's interactive message format): a head
//! saying what is asked, by which agent, for whom and until when; one attachment per
//! action with its name, description and arguments in a code block (cut to the post's
//! limit, with a note) and a button per allowed decision (Approve, Edit, Reject,
//! Comment); for several actions, one more with Approve all / Reject all / Submit.
//! Once the interaction has ended the buttons are gone and the outcome line
//! (`✅ Approved by ana at 14:02 UTC`, or the expiry) takes their place, on every copy.
//!
//! Every button and menu posts to the bridge's integration URL with a `context`
//! holding one signed code ([`codes`](super::codes)): Mattermost keeps the context on
//! the server (clients never see it) and does not sign what it posts, so the code is
//! what shows a click came through a card the bridge made. Agent text is escaped
//! ([`escape`](super::text::escape)): no mention, no link, no markup.

pub mod dialog;
pub mod questions;

use serde_json::{Value, json};

use super::codes::Code;
use super::limits;
use super::text::{MMsg, code_block, escape, escape_cut, mtext};
use crate::interaction::{Action, Draft, Interaction, Origin, RememberScope, RequestKind, readable};
use crate::platform::descriptor::BrowserLink;
use crate::platform::kit::codes::Decide;
use crate::platform::kit::token::TokenSigner;
use crate::platform::locale::web::{WebMsg, web_text};
use crate::protocol::{Decision, DecisionType};
use crate::texts::{self, Locale, Msg, cut, text};

/// Longest name, description or context shown in full before the args get the rest.
pub const FIELD: usize = 1000;
/// The card's colour bar while pending, and once ended.
const PENDING: &str = "#1d3b5a";
const ENDED: &str = "#8a8a8a";

/// Where a card's buttons post, and who signs their codes.
pub struct Buttons<'a> {
    /// `<public_url>/mattermost/actions`.
    pub url: &'a str,
    pub signer: &'a TokenSigner,
}

impl Buttons<'_> {
    /// A button (or, with `options`, a static select menu) whose context is the signed
    /// token of `code`; `None` (and an error logged) if it cannot be signed.
    pub fn action(&self, interaction: &Interaction, code: Code, label: &str, style: Option<&str>) -> Option<Value> {
        let token = sign(self.signer, interaction, code)?;
        let mut action = json!({
            "type": "button",
            "name": cut(label, limits::BUTTON_NAME),
            "integration": { "url": self.url, "context": { "code": token } },
        });
        if let Some(style) = style {
            action["style"] = json!(style);
        }
        Some(action)
    }
}

/// The signed token of `code`; `None` (and an error logged) if it cannot be signed.
pub fn sign(signer: &TokenSigner, interaction: &Interaction, code: Code) -> Option<String> {
    match signer.sign(&interaction.id, &code.encode()) {
        Ok(token) => Some(token),
        Err(e) => {
            tracing::error!(interaction = %interaction.id, ?code, error = %e, "cannot sign a button; left out");
            None
        }
    }
}

/// Gives every action of the post its `id`, unique within it, letters and digits only
/// (Mattermost routes a click by `/posts/{post_id}/actions/{id}`).
fn number_actions(attachments: &mut [Value]) {
    let mut n = 0;
    for attachment in attachments {
        if let Some(actions) = attachment.get_mut("actions").and_then(Value::as_array_mut) {
            for action in actions {
                n += 1;
                action["id"] = json!(format!("hitl{n}"));
            }
        }
    }
}

/// The post showing `interaction`: its card while pending, its outcome after.
pub fn card(interaction: &Interaction, locale: Locale, buttons: &Buttons<'_>, link: Option<&BrowserLink>) -> Value {
    let interaction = &*readable::interaction(interaction);
    let pending = interaction.status.is_pending();
    let title = match &interaction.request.kind {
        RequestKind::Approval { .. } => mtext(locale, MMsg::ApprovalTitle),
        RequestKind::Questions { .. } => mtext(locale, MMsg::QuestionTitle),
    };
    let mut head_text = Vec::new();
    if let Some(context) = &interaction.request.context {
        head_text.push(escape_cut(context, FIELD));
    }
    head_text.push(meta(interaction, locale));
    if let Some(url) = link.filter(|_| pending).map(|l| match l {
        BrowserLink::Button(url) | BrowserLink::InText(url) => url,
    }) {
        head_text.push(format!("🌐 [{}]({url})", escape(web_text(locale, WebMsg::OpenInBrowser))));
    }
    let color = if pending { PENDING } else { ENDED };
    let mut attachments = vec![json!({ "fallback": title, "color": color, "title": title, "text": head_text.join("\n") })];
    match &interaction.request.kind {
        RequestKind::Approval { actions } => attachments.extend(approval(interaction, actions, locale, buttons, color)),
        RequestKind::Questions { questions, .. } => attachments.extend(questions::attachments(interaction, questions, locale, buttons, color)),
    }
    if !pending {
        attachments.push(json!({ "color": color, "text": format!("**{}**", escape_cut(&texts::outcome(locale, interaction), FIELD)) }));
    }
    number_actions(&mut attachments);
    json!({ "message": "", "props": { "attachments": attachments } })
}

/// Who asked, for whom, and until when (or the quorum's progress while pending).
fn meta(interaction: &Interaction, locale: Locale) -> String {
    let mut out = Vec::new();
    if let Origin::Pushed { agent, .. } = &interaction.origin {
        out.push(format!("**{}:** {}", mtext(locale, MMsg::Agent), escape_cut(agent, 200)));
    }
    if let Some(requester) = &interaction.requester {
        out.push(format!("**{}:** {}", mtext(locale, MMsg::For), escape_cut(&requester.name, 200)));
    }
    if interaction.status.is_pending() {
        out.push(format!("⏰ **{}:** {}", text(locale, Msg::Deadline), texts::clock(interaction.deadline_ms)));
        if let Some(progress) = interaction.quorum_progress() {
            out.push(format!("👥 {}", escape(&texts::policy::quorum_line(locale, &progress))));
        }
    }
    out.join(" · ")
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

/// One attachment per action (its buttons while pending), then the shared ones.
fn approval(interaction: &Interaction, actions: &[Action], locale: Locale, buttons: &Buttons<'_>, color: &str) -> Vec<Value> {
    let pending = interaction.status.is_pending();
    let many = actions.len() > 1;
    let decided = |i: usize| match &interaction.draft {
        Draft::Decisions(d) => d.decisions.get(i).cloned().flatten(),
        Draft::Answers { .. } => None,
    };
    let offered = interaction.remember_offered();
    // The post's text is shared by every action: each gets its part of the limit.
    let budget = (limits::POST_MESSAGE / actions.len().max(1)).clamp(500, limits::ACTION_TEXT);
    let mut out = Vec::new();
    if let Draft::Decisions(d) = &interaction.draft
        && let Some(note) = &d.user_edit_content
    {
        out.push(json!({ "color": color, "text": format!("💬 {}", escape_cut(note, FIELD)) }));
    }
    for (i, action) in actions.iter().enumerate() {
        let mut attachment = json!({ "color": color, "text": action_text(action, i, many, decided(i).as_ref(), locale, budget) });
        if pending {
            attachment["actions"] = json!(action_buttons(interaction, action, i, many, &offered, locale, buttons));
        }
        out.push(attachment);
    }
    if pending && !offered.is_empty() {
        let remember: Vec<Value> = offered
            .iter()
            .filter_map(|&scope| {
                let emoji = if scope == RememberScope::Session { "🔁" } else { "♾️" };
                buttons.action(interaction, Code::Decide(Decide::Remember(scope)), &format!("{emoji} {}", texts::policy::remember_button(locale, scope)), None)
            })
            .collect();
        out.push(json!({ "color": color, "actions": remember }));
    }
    if pending && many {
        let mut row = Vec::new();
        if actions.iter().all(|a| a.allowed.contains(&DecisionType::Approve)) {
            row.extend(buttons.action(interaction, Code::Decide(Decide::ApproveAll), &format!("✅ {}", text(locale, Msg::ApproveAll)), Some("good")));
        }
        if actions.iter().all(|a| a.allowed.contains(&DecisionType::Reject)) {
            row.extend(buttons.action(interaction, Code::Decide(Decide::RejectAll), &format!("❌ {}", text(locale, Msg::RejectAll)), Some("danger")));
        }
        row.extend(buttons.action(interaction, Code::Decide(Decide::Submit), &format!("📨 {}", text(locale, Msg::Submit)), Some("primary")));
        out.push(json!({ "color": color, "actions": row }));
    }
    out
}

/// One action as Markdown within `budget` characters: its name, description and args
/// in a code block; args that do not fit are cut and a note says so.
fn action_text(action: &Action, i: usize, many: bool, decided: Option<&Decision>, locale: Locale, budget: usize) -> String {
    let name = escape_cut(&action.name, 200);
    let mut head = if many { format!("**{}. {name}**", i + 1) } else { format!("**{name}**") };
    if let Some(description) = &action.description {
        head += "\n";
        head.push_str(&escape_cut(description, FIELD));
    }
    let foot = match (many, decided) {
        (true, Some(d)) => format!("\n→ {}", decision_word(locale, d)),
        _ => String::new(),
    };
    let pretty = serde_json::to_string_pretty(&action.args).unwrap_or_else(|_| action.args.to_string());
    let room = budget.saturating_sub(head.chars().count() + foot.chars().count() + 16);
    if pretty.chars().count() <= room {
        return format!("{head}\n{}{foot}", code_block(&pretty));
    }
    let note = format!("\n_{}_", escape(mtext(locale, MMsg::ArgsCut)));
    let kept: String = pretty.chars().take(room.saturating_sub(note.chars().count() + 1)).collect();
    format!("{head}\n{}{note}{foot}", code_block(&format!("{kept}…")))
}

/// The buttons of action `i`: each allowed decision, in a fixed order, and Comment.
fn action_buttons(
    interaction: &Interaction,
    action: &Action,
    i: usize,
    many: bool,
    offered: &[RememberScope],
    locale: Locale,
    buttons: &Buttons<'_>,
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
            DecisionType::Approve => buttons.action(
                interaction,
                Code::Decide(Decide::Approve(i)),
                &format!("✅ {}{suffix}", action.label_or(decision, text(locale, approve))),
                Some("good"),
            ),
            DecisionType::ApproveForSession => buttons.action(
                interaction,
                Code::Decide(Decide::ApproveForSession(i)),
                &format!("🔓 {}{suffix}", action.label_or(decision, text(locale, Msg::ApproveForSession))),
                None,
            ),
            DecisionType::Edit => buttons.action(interaction, Code::Edit(i), &format!("✏️ {}{suffix}", text(locale, Msg::Edit)), None),
            _ => buttons.action(interaction, Code::Reject(i), &format!("❌ {}{suffix}", action.label_or(decision, text(locale, Msg::Reject))), Some("danger")),
        };
        out.extend(made);
    }
    // A comment is always possible: a `respond` decision where allowed, else a note.
    out.extend(buttons.action(interaction, Code::Comment(i), &format!("💬 {}{suffix}", text(locale, Msg::Respond)), None));
    out
}

#[cfg(test)]
mod tests;
