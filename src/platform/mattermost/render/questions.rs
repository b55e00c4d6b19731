//! A question request's attachments (1–4 questions on one card, all answerable at
//! once): per question its header, text, options' descriptions and the answer chosen
//! so far, with the actions that answer it, then one Submit for the set.
//!
//! - single select: a button per option up to [`BUTTONS`], else a static select menu
//!   (its options' values are their indexes; the menu's signed code names the
//!   question, and the core checks the index);
//! - multi-select: **Choose…** opens a dialog of checkboxes ([`super::dialog::answer`]);
//! - **Other…** (or the `input` option's own label) opens a dialog with the options
//!   as radio buttons and a text field; **Skip** skips.
//!
//! Once the request has ended, the actions are gone and each question shows the
//! answer sent.

use serde_json::{Value, json};

use super::{Buttons, FIELD};
use crate::interaction::answers::encode;
use crate::interaction::{AnswerDraft, Draft, FreeText, Interaction, Question};
use crate::platform::kit::codes::Decide;
use crate::platform::mattermost::codes::Code;
use crate::platform::mattermost::limits;
use crate::platform::mattermost::text::{MMsg, escape, escape_cut, mtext};
use crate::protocol::Reply;
use crate::texts::{Locale, Msg, cut, text};

/// Single-select options shown as buttons at most; more become a select menu.
pub const BUTTONS: usize = 5;

/// The attachments of `questions`.
pub fn attachments(interaction: &Interaction, questions: &[Question], locale: Locale, buttons: &Buttons<'_>, color: &str) -> Vec<Value> {
    let pending = interaction.status.is_pending();
    let drafts = match &interaction.draft {
        Draft::Answers { answers } => answers.as_slice(),
        Draft::Decisions(_) => &[],
    };
    let count = questions.len();
    if !pending {
        let sent = match &interaction.reply {
            Some(Reply::Answers { answers }) => Some(answers),
            _ => None,
        };
        return questions
            .iter()
            .enumerate()
            .map(|(n, q)| {
                let mut text = title(q, n, count);
                if let Some(answer) = sent.and_then(|a| a.get(&q.text)) {
                    text.push_str(&format!("\n→ {}", escape_cut(answer, FIELD)));
                }
                json!({ "color": color, "text": text })
            })
            .collect();
    }
    let mut out = Vec::new();
    for (n, q) in questions.iter().enumerate() {
        let draft = drafts.get(n).cloned().unwrap_or_default();
        let listed = listed(q);
        let mut actions = Vec::new();
        if q.multi_select {
            actions.extend(buttons.action(interaction, Code::Other(n), &format!("☑️ {}", text(locale, Msg::ChooseOptions)), Some("primary")));
        } else if listed.len() <= BUTTONS {
            for &o in &listed {
                let mark = if draft.selected.contains(&o) { "✓ " } else { "" };
                actions.extend(buttons.action(interaction, Code::Option { question: n, option: o }, &format!("{mark}{}", q.options[o].label), None));
            }
        } else if let Some(menu) = menu(interaction, n, q, &draft, &listed, locale, buttons) {
            actions.push(menu);
        }
        if q.allows_free_text() && !q.multi_select {
            let mark = if draft.text.is_some() && !draft.skipped { "✓ " } else { "" };
            actions.extend(buttons.action(interaction, Code::Other(n), &format!("{mark}✏️ {}…", free_text_label(q, locale)), None));
        }
        actions.extend(buttons.action(interaction, Code::Skip(n), &format!("⏭ {}", text(locale, Msg::Skip)), None));
        out.push(json!({ "color": color, "text": body(q, n, count, &draft, locale), "actions": actions }));
    }
    let submit = buttons.action(interaction, Code::Decide(Decide::Submit), &format!("📨 {}", text(locale, Msg::Submit)), Some("primary"));
    out.push(json!({ "color": color, "actions": submit.into_iter().collect::<Vec<_>>() }));
    out
}

/// The options listed as buttons, in a menu or a dialog: all but the `input` option,
/// whose answer is typed.
pub fn listed(q: &Question) -> Vec<usize> {
    (0..q.options.len()).filter(|&o| q.free_text != FreeText::InputOption(o)).collect()
}

/// `[1/2] Header` and the question, in bold.
fn title(q: &Question, n: usize, count: usize) -> String {
    let header = q.header.as_deref().map(|h| format!(" {}", escape_cut(h, 100))).unwrap_or_default();
    format!("**[{}/{count}]{header}**\n**{}**", n + 1, escape_cut(&q.text, FIELD))
}

/// The question's text: its title, the options that carry a description, and the
/// current answer (the draft).
fn body(q: &Question, n: usize, count: usize, draft: &AnswerDraft, locale: Locale) -> String {
    let mut out = title(q, n, count);
    for o in q.options.iter().filter(|o| o.description.is_some()) {
        out.push_str(&format!("\n• {} — _{}_", escape_cut(&o.label, 200), escape_cut(o.description.as_deref().unwrap_or_default(), 300)));
    }
    if draft.is_answered() {
        let answer = if draft.skipped { text(locale, Msg::Skipped).to_owned() } else { encode(q, draft) };
        out.push_str(&format!("\n→ {}", escape_cut(&answer, FIELD)));
    }
    out
}

/// The label of the free-text button and field: the `input` option's own, else "Other".
pub fn free_text_label(q: &Question, locale: Locale) -> String {
    q.free_text_label().map(str::to_owned).unwrap_or_else(|| text(locale, Msg::Other).to_owned())
}

/// The static select menu of question `n`: option values are indexes, the chosen one
/// its `default_option`.
fn menu(interaction: &Interaction, n: usize, q: &Question, draft: &AnswerDraft, listed: &[usize], locale: Locale, buttons: &Buttons<'_>) -> Option<Value> {
    let mut menu = buttons.action(interaction, Code::Choose(n), mtext(locale, MMsg::ChooseOne), None)?;
    menu["type"] = json!("select");
    let options: Vec<Value> =
        listed.iter().take(limits::MENU_OPTIONS).map(|&o| json!({ "text": cut(&q.options[o].label, 200), "value": o.to_string() })).collect();
    menu["options"] = json!(options);
    if let Some(chosen) = draft.selected.first() {
        menu["default_option"] = json!(chosen.to_string());
    }
    Some(menu)
}

/// Escapes a label for a dialog's Markdown introduction.
pub fn intro(q: &Question) -> String {
    format!("**{}**", escape(&cut(&q.text, FIELD)))
}
