//! Pure rendering: an [`Interaction`] and a locale become the Adaptive Card (1.5, with
//! Universal Actions' `Action.Execute`) that shows it, for a new message, an update of
//! every copy, and the answer to the clicker's `adaptiveCard/action` invoke. No IO, no
//! clock.
//!
//! An approval card says what is asked, by which agent, for whom and until when; each
//! action's name, description and arguments (a monospace block cut to fit a Teams
//! message, with a visible note); and per allowed decision: **Approve** (positive),
//! **Edit** (the arguments as JSON in a multiline input, under which the engine's
//! verdict on invalid JSON is shown), **Reject** (with a reason input) and
//! **Comment**. Edit, Reject and Comment are `Action.ShowCard`s: their form opens in
//! the card, and its `Action.Execute` (titled as the button that opened it) sends
//! what was typed.
//!
//! A question card has, per question, an `Input.ChoiceSet` (expanded for a few
//! options, compact for many, `isMultiSelect` for multi-select), an "Other" text
//! input where free text is allowed, Skip, and one Submit for the set.
//!
//! Once the interaction has ended the controls are gone and the outcome line (`✅
//! Approved by Ana at 14:02 UTC`, or the expiry) takes their place. Whatever an agent
//! or a person wrote is a `TextRun` (shown as it is: no Markdown) made
//! [`inert`](super::text::inert).

use serde_json::{Value, json};

use super::codes::Code;
use super::limits::{ARGS_BYTES, CARD_BYTES, FIELD};
use super::text::{TMsg, inert, ttext};
use crate::interaction::{Action, Draft, Interaction, Origin, Question, RememberScope, RequestKind, readable};
use crate::platform::descriptor::BrowserLink;
use crate::platform::kit::codes::Decide;
use crate::platform::kit::json::put;
use crate::platform::kit::token::TokenSigner;
use crate::platform::locale::web::{WebMsg, web_text};
use crate::protocol::{Decision, DecisionType};
use crate::texts::{self, Locale, Msg, text};

/// The content type of an Adaptive Card attachment and of an invoke answer's card.
pub const CARD_TYPE: &str = "application/vnd.microsoft.card.adaptive";
/// The verb of every `Action.Execute` the bridge sends.
pub const VERB: &str = "hitl";
/// A question with at most this many options shows them all (`expanded`).
const EXPANDED_UP_TO: usize = 4;

/// A line of text the bridge wrote (Markdown off: `TextBlock` without markup).
fn line(text: &str) -> Value {
    json!({ "type": "TextBlock", "text": text, "wrap": true })
}

/// Text someone else wrote, shown as it is.
fn run(text: &str, max: usize) -> Value {
    json!({ "type": "TextRun", "text": inert(text, max) })
}

fn rich(runs: Vec<Value>) -> Value {
    put(json!({ "type": "RichTextBlock", "inlines": null }), "inlines", runs)
}

/// The `Action.Execute` sending `code` for `interaction`, signed; `None` if signing
/// fails (the button is left out rather than sent unsigned).
pub fn execute(signer: &TokenSigner, interaction: &Interaction, code: Code, title: &str, style: Option<&str>) -> Option<Value> {
    let token = signer.sign(&interaction.id, &code.encode()).ok()?;
    let mut action = json!({ "type": "Action.Execute", "title": title, "verb": VERB, "data": { "hitl": token } });
    if let Some(style) = style {
        action["style"] = json!(style);
    }
    Some(action)
}

/// An Adaptive Card around `body` and `actions`.
fn adaptive(body: Vec<Value>, actions: Vec<Value>) -> Value {
    let mut card =
        put(json!({ "type": "AdaptiveCard", "$schema": "http://adaptivecards.io/schemas/adaptive-card.json", "version": "1.5", "body": null }), "body", body);
    if !actions.is_empty() {
        card["actions"] = actions.into();
    }
    card
}

/// The message activity carrying `card`.
pub fn message(card: Value) -> Value {
    let attachment = put(json!({ "contentType": CARD_TYPE, "content": null }), "content", card);
    put(json!({ "type": "message", "attachments": null }), "attachments", vec![attachment])
}

/// The card a message activity of [`message`] carries.
pub fn card_of(message: &Value) -> &Value {
    &message["attachments"][0]["content"]
}

/// A plain-text message activity (agent text, notices): never Markdown, never a mention.
pub fn text_message(body: &str) -> Value {
    json!({ "type": "message", "textFormat": "plain", "text": inert(body, super::limits::TEXT_PIECE) })
}

/// The card showing `interaction`: its controls while pending, its outcome after.
/// `edit_error` is the engine's verdict on JSON typed into action `i`'s Edit, shown
/// under that input (only in the answer to the person who typed it).
pub fn card(interaction: &Interaction, locale: Locale, signer: &TokenSigner, link: Option<&BrowserLink>, edit_error: Option<(usize, &str)>) -> Value {
    let interaction = &*readable::interaction(interaction);
    let pending = interaction.status.is_pending();
    let title = match &interaction.request.kind {
        RequestKind::Approval { .. } => ttext(locale, TMsg::ApprovalTitle),
        RequestKind::Questions { .. } => ttext(locale, TMsg::QuestionTitle),
    };
    let mut body = vec![json!({ "type": "TextBlock", "text": title, "weight": "Bolder", "size": "Medium", "wrap": true })];
    if let Some(context) = &interaction.request.context {
        body.push(rich(vec![run(context, FIELD)]));
    }
    body.extend(meta(interaction, locale));
    let mut actions = Vec::new();
    match &interaction.request.kind {
        RequestKind::Approval { actions: asked } => approval(interaction, asked, locale, signer, edit_error, &mut body, &mut actions),
        RequestKind::Questions { questions, .. } => self::questions(interaction, questions, locale, signer, &mut body, &mut actions),
    }
    if !pending {
        body.push(json!({ "type": "RichTextBlock", "inlines": [{ "type": "TextRun", "text": inert(&texts::outcome(locale, interaction), FIELD), "weight": "Bolder" }] }));
        actions.clear();
    }
    if let Some(link) = link.filter(|_| pending) {
        let label = format!("🌐 {}", web_text(locale, WebMsg::OpenInBrowser));
        match link {
            BrowserLink::Button(url) => actions.push(json!({ "type": "Action.OpenUrl", "title": label, "url": url })),
            BrowserLink::InText(url) => body.push(line(&format!("{label}: {url}"))),
        }
    }
    adaptive(body, actions)
}

/// Who asked, for whom, and until when (or the quorum's progress while pending).
fn meta(interaction: &Interaction, locale: Locale) -> Vec<Value> {
    let mut out = Vec::new();
    if let Origin::Pushed { agent, .. } = &interaction.origin {
        out.push(rich(vec![json!({ "type": "TextRun", "text": format!("{}: ", ttext(locale, TMsg::Agent)), "weight": "Bolder" }), run(agent, 200)]));
    }
    if let Some(requester) = &interaction.requester {
        out.push(rich(vec![json!({ "type": "TextRun", "text": format!("{}: ", ttext(locale, TMsg::For)), "weight": "Bolder" }), run(&requester.name, 200)]));
    }
    if interaction.status.is_pending() {
        out.push(line(&format!("⏰ {}: {}", text(locale, Msg::Deadline), texts::clock(interaction.deadline_ms))));
        if let Some(progress) = interaction.quorum_progress() {
            out.push(line(&format!("👥 {}", texts::policy::quorum_line(locale, &progress))));
        }
    }
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

/// `value` pretty-printed, whole when it takes at most `max` bytes.
fn pretty_within(value: &Value, max: usize) -> Result<String, String> {
    let pretty = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    if pretty.len() <= max {
        return Ok(pretty);
    }
    let mut end = max.saturating_sub(1);
    while !pretty.is_char_boundary(end) {
        end -= 1;
    }
    Err(format!("{}…", &pretty[..end]))
}

/// The approval's blocks and buttons.
fn approval(
    interaction: &Interaction,
    asked: &[Action],
    locale: Locale,
    signer: &TokenSigner,
    edit_error: Option<(usize, &str)>,
    body: &mut Vec<Value>,
    all: &mut Vec<Value>,
) {
    let pending = interaction.status.is_pending();
    let many = asked.len() > 1;
    // Each action's arguments are shown once and, while pending, once more in its Edit
    // input: within the card's budget together.
    let budget = (CARD_BYTES / 2 / asked.len().max(1) / if pending { 2 } else { 1 }).min(ARGS_BYTES);
    if let Draft::Decisions(d) = &interaction.draft
        && let Some(note) = &d.user_edit_content
    {
        body.push(rich(vec![json!({ "type": "TextRun", "text": "💬 " }), run(note, FIELD)]));
    }
    for (i, action) in asked.iter().enumerate() {
        let name = if many { format!("{}. {}", i + 1, action.name) } else { action.name.clone() };
        body.push(json!({ "type": "RichTextBlock", "separator": i > 0, "inlines": [{ "type": "TextRun", "text": inert(&name, 200), "weight": "Bolder" }] }));
        if let Some(description) = &action.description {
            body.push(rich(vec![run(description, FIELD)]));
        }
        let shown = pretty_within(&action.args, budget);
        let args = match &shown {
            Ok(whole) => whole,
            Err(cut) => cut,
        };
        body.push(json!({ "type": "RichTextBlock", "inlines": [{ "type": "TextRun", "text": inert(args, budget), "fontType": "Monospace" }] }));
        if shown.is_err() {
            body.push(json!({ "type": "TextBlock", "text": ttext(locale, TMsg::ArgsCut), "isSubtle": true, "size": "Small", "wrap": true }));
        }
        if let (true, Draft::Decisions(d)) = (many, &interaction.draft)
            && let Some(Some(decided)) = d.decisions.get(i)
        {
            body.push(line(&format!("→ {}", decision_word(locale, decided))));
        }
        if pending {
            let buttons = action_buttons(interaction, action, i, locale, signer, shown.ok(), edit_error.filter(|(at, _)| *at == i).map(|(_, e)| e));
            if !buttons.is_empty() {
                body.push(put(json!({ "type": "ActionSet", "actions": null }), "actions", buttons));
            }
        }
    }
    if !pending {
        return;
    }
    for scope in interaction.remember_offered() {
        let emoji = if scope == RememberScope::Session { "🔁" } else { "♾️" };
        all.extend(execute(
            signer,
            interaction,
            Code::Decide(Decide::Remember(scope)),
            &format!("{emoji} {}", texts::policy::remember_button(locale, scope)),
            None,
        ));
    }
    if many {
        if asked.iter().all(|a| a.allowed.contains(&DecisionType::Approve)) {
            all.extend(execute(signer, interaction, Code::Decide(Decide::ApproveAll), &format!("✅ {}", text(locale, Msg::ApproveAll)), Some("positive")));
        }
        if asked.iter().all(|a| a.allowed.contains(&DecisionType::Reject)) {
            all.extend(execute(signer, interaction, Code::Decide(Decide::RejectAll), &format!("❌ {}", text(locale, Msg::RejectAll)), Some("destructive")));
        }
        all.extend(execute(signer, interaction, Code::Decide(Decide::Submit), &format!("📨 {}", text(locale, Msg::Submit)), None));
    }
}

/// A form that opens in the card (`Action.ShowCard`): `inputs`, then the button that sends them.
fn form(title: &str, inputs: Vec<Value>, send: Option<Value>) -> Option<Value> {
    let send = send?;
    let card = put(put(json!({ "type": "AdaptiveCard", "body": null, "actions": null }), "body", inputs), "actions", vec![send]);
    Some(put(json!({ "type": "Action.ShowCard", "title": title, "card": null }), "card", card))
}

/// Action `i`'s buttons: each allowed decision in a fixed order, then Comment.
#[allow(clippy::too_many_arguments)] // one card's parts, each needed
fn action_buttons(
    interaction: &Interaction,
    action: &Action,
    i: usize,
    locale: Locale,
    signer: &TokenSigner,
    args: Option<String>,
    edit_error: Option<&str>,
) -> Vec<Value> {
    let allowed = |d: DecisionType| action.allowed.contains(&d);
    let mut buttons = Vec::new();
    if allowed(DecisionType::Approve) {
        buttons.extend(execute(
            signer,
            interaction,
            Code::Decide(Decide::Approve(i)),
            &format!("✅ {}", action.label_or(DecisionType::Approve, text(locale, Msg::Approve))),
            Some("positive"),
        ));
    }
    if allowed(DecisionType::ApproveForSession) {
        buttons.extend(execute(
            signer,
            interaction,
            Code::Decide(Decide::ApproveForSession(i)),
            &format!("🔓 {}", action.label_or(DecisionType::ApproveForSession, text(locale, Msg::ApproveForSession))),
            None,
        ));
    }
    if allowed(DecisionType::Edit) {
        let mut input = json!({
            "type": "Input.Text", "id": format!("args.{i}"), "isMultiline": true, "label": web_text(locale, WebMsg::EditArgs),
            "value": args.map(|a| inert(&a, usize::MAX)).unwrap_or_default(),
        });
        let mut inputs = vec![];
        if let Some(error) = edit_error {
            input["errorMessage"] = json!(inert(error, FIELD));
            input["isRequired"] = json!(true);
            inputs.push(input);
            inputs.push(json!({ "type": "TextBlock", "text": inert(error, FIELD), "color": "Attention", "wrap": true }));
        } else {
            inputs.push(input);
        }
        let title = format!("✏️ {}", text(locale, Msg::Edit));
        buttons.extend(form(&title, inputs, execute(signer, interaction, Code::Edit(i), &title, None)));
    }
    if allowed(DecisionType::Reject) {
        let input = json!({ "type": "Input.Text", "id": format!("reason.{i}"), "isMultiline": true, "label": ttext(locale, TMsg::ReasonLabel) });
        let title = format!("❌ {}", action.label_or(DecisionType::Reject, text(locale, Msg::Reject)));
        buttons.extend(form(&title, vec![input], execute(signer, interaction, Code::Reject(i), &title, Some("destructive"))));
    }
    let input = json!({ "type": "Input.Text", "id": format!("comment.{i}"), "isMultiline": true, "label": ttext(locale, TMsg::CommentLabel) });
    let title = format!("💬 {}", text(locale, Msg::Respond));
    buttons.extend(form(&title, vec![input], execute(signer, interaction, Code::Comment(i), &title, None)));
    buttons
}

/// A question set: per question its text, its choices, Other and Skip; one Submit.
fn questions(interaction: &Interaction, questions: &[Question], locale: Locale, signer: &TokenSigner, body: &mut Vec<Value>, all: &mut Vec<Value>) {
    let pending = interaction.status.is_pending();
    let answers = match &interaction.draft {
        Draft::Answers { answers } => answers.as_slice(),
        Draft::Decisions(_) => &[],
    };
    for (q, question) in questions.iter().enumerate() {
        let mut runs = Vec::new();
        if let Some(header) = &question.header {
            runs.push(json!({ "type": "TextRun", "text": format!("{} · ", inert(header, 100)), "weight": "Bolder" }));
        }
        runs.push(run(&question.text, FIELD));
        let mut head = rich(runs);
        head["separator"] = json!(q > 0);
        body.push(head);
        if !pending {
            continue;
        }
        let choices: Vec<Value> = question
            .options
            .iter()
            .enumerate()
            .map(|(o, option)| {
                let title = match &option.description {
                    Some(description) => format!("{} — {}", option.label, description),
                    None => option.label.clone(),
                };
                json!({ "title": inert(&title, 200), "value": o.to_string() })
            })
            .collect();
        let chosen = answers.get(q).map(|a| a.selected.iter().map(usize::to_string).collect::<Vec<_>>().join(",")).unwrap_or_default();
        if !choices.is_empty() {
            let choice_set = json!({
                "type": "Input.ChoiceSet", "id": format!("answer.{q}"), "choices": null, "value": chosen,
                "style": if question.options.len() <= EXPANDED_UP_TO { "expanded" } else { "compact" },
                "isMultiSelect": question.multi_select,
            });
            body.push(put(choice_set, "choices", choices));
        }
        if question.allows_free_text() {
            let typed = answers.get(q).and_then(|a| a.text.clone()).unwrap_or_default();
            body.push(json!({ "type": "Input.Text", "id": format!("other.{q}"), "label": text(locale, Msg::Other), "value": inert(&typed, FIELD) }));
        }
        if let Some(skip) = execute(signer, interaction, Code::Skip(q), &format!("⏭ {}", text(locale, Msg::Skip)), None) {
            body.push(put(json!({ "type": "ActionSet", "actions": null }), "actions", vec![skip]));
        }
    }
    if pending {
        all.extend(execute(signer, interaction, Code::Answer, &format!("📨 {}", text(locale, Msg::Submit)), Some("positive")));
    }
}
