//! The dialogs Edit, Reject, Comment, a multi-select question's Choose… and a
//! question's Other… open (`actions/dialogs/open`), and reading their submissions
//! back.
//!
//! A dialog's `state` is a signed token (like every button's context) naming the
//! interaction and the dialog's code; its elements carry plain names, because only the
//! token is trusted and every index still goes through the core's checks. Limits
//! ("Interactive dialogs" reference): a title of 24 characters, a `textarea` of at
//! most 3,000, a `text` of 150.

use serde_json::{Map, Value, json};

use super::questions::{free_text_label, intro, listed};
use crate::interaction::answers::MAX_TEXT_CHARS;
use crate::interaction::{Draft, Interaction, RequestKind, UserAction, readable};
use crate::platform::kit::token::TokenSigner;
use crate::platform::mattermost::codes::Code;
use crate::platform::mattermost::limits;
use crate::platform::mattermost::text::{MMsg, escape_cut, mtext};
use crate::protocol::Decision;
use crate::texts::{Locale, Msg, cut, text};

/// The edit dialog's field: a refused edit's error is shown under it.
pub const ARGS: &str = "args";
const REASON: &str = "reason";
const COMMENT: &str = "comment";
/// A question dialog's typed answer, and its radio buttons.
pub const ANSWER: &str = "answer";
const CHOICE: &str = "choice";
/// A question dialog's checkbox of option `o` is `opt{o}`.
const OPTION_PREFIX: &str = "opt";
/// Checkboxes one dialog lists at most.
const CHECKBOXES: usize = 20;
const CALLBACK_ID: &str = "hitl";

fn dialog(title: &str, intro: String, elements: Vec<Value>, submit: &str, state: String) -> Value {
    json!({
        "callback_id": CALLBACK_ID,
        "title": cut(title, limits::DIALOG_TITLE),
        "introduction_text": intro,
        "elements": elements,
        "submit_label": cut(submit, limits::DIALOG_TITLE),
        "notify_on_cancel": false,
        "state": state,
    })
}

fn textarea(name: &str, label: &str, optional: bool, default: Option<String>) -> Value {
    let mut element = json!({
        "display_name": cut(label, limits::ELEMENT_NAME), "name": name, "type": "textarea", "optional": optional, "max_length": limits::TEXTAREA,
    });
    if let Some(default) = default {
        element["default"] = json!(default);
    }
    element
}

/// The dialog an Edit, Reject or Comment button opens; `None` for other codes and for
/// actions that do not exist.
pub fn for_code(interaction: &Interaction, code: Code, locale: Locale, signer: &TokenSigner) -> Option<Value> {
    let interaction = &*readable::interaction(interaction);
    let (index, state, title, field, label, optional) = match code {
        Code::Edit(i) => (i, Code::EditDialog(i), MMsg::EditTitle, ARGS, MMsg::ArgsLabel, false),
        Code::Reject(i) => (i, Code::RejectDialog(i), MMsg::RejectTitle, REASON, MMsg::ReasonLabel, true),
        Code::Comment(i) => (i, Code::CommentDialog(i), MMsg::CommentTitle, COMMENT, MMsg::CommentLabel, false),
        _ => return None,
    };
    let action = interaction.request.actions().get(index)?;
    let state = signer.sign(&interaction.id, &state.encode()).ok()?;
    let default = match code {
        Code::Edit(_) => {
            // The args as they stand: the draft's edited args if any, else the request's.
            let current = match &interaction.draft {
                Draft::Decisions(d) => match d.decisions.get(index) {
                    Some(Some(Decision::Edit { edited_action })) => Value::Object(edited_action.args.clone()),
                    _ => action.args.clone(),
                },
                Draft::Answers { .. } => action.args.clone(),
            };
            // A prefill over the field's limit would make Mattermost refuse the dialog:
            // better an empty box than a cut JSON document.
            Some(serde_json::to_string_pretty(&current).unwrap_or_default()).filter(|p| p.chars().count() <= limits::TEXTAREA)
        }
        _ => None,
    };
    let submit = if let Code::Reject(_) = code { text(locale, Msg::Reject) } else { text(locale, Msg::Submit) };
    let element = textarea(field, mtext(locale, label), optional, default);
    Some(dialog(mtext(locale, title), format!("**{}**", escape_cut(&action.name, 200)), vec![element], submit, state))
}

/// The dialog of question `n`: its options as radio buttons (single select) or
/// checkboxes (multi-select, the draft's ticked), and a text field when it takes
/// typed text. `None` for a question that does not exist.
pub fn answer(interaction: &Interaction, n: usize, locale: Locale, signer: &TokenSigner) -> Option<Value> {
    let interaction = &*readable::interaction(interaction);
    let RequestKind::Questions { questions, .. } = &interaction.request.kind else { return None };
    let q = questions.get(n)?;
    let draft = match &interaction.draft {
        Draft::Answers { answers } => answers.get(n).cloned().unwrap_or_default(),
        Draft::Decisions(_) => Default::default(),
    };
    let state = signer.sign(&interaction.id, &Code::OtherDialog(n).encode()).ok()?;
    let mut elements = Vec::new();
    let options = listed(q);
    if q.multi_select {
        for &o in options.iter().take(CHECKBOXES) {
            elements.push(json!({
                "display_name": cut(&q.options[o].label, limits::ELEMENT_NAME), "name": format!("{OPTION_PREFIX}{o}"), "type": "bool",
                "placeholder": cut(&q.options[o].label, limits::TEXT), "optional": true, "default": draft.selected.contains(&o).to_string(),
            }));
        }
    } else if !options.is_empty() {
        let radio: Vec<Value> = options.iter().map(|&o| json!({ "text": cut(&q.options[o].label, limits::TEXT), "value": o.to_string() })).collect();
        let mut element = json!({ "display_name": cut(text(locale, Msg::ChooseOptions), limits::ELEMENT_NAME), "name": CHOICE, "type": "radio", "options": radio, "optional": true });
        if let Some(chosen) = draft.selected.first() {
            element["default"] = json!(chosen.to_string());
        }
        elements.push(element);
    }
    if q.allows_free_text() {
        let mut field = textarea(ANSWER, &free_text_label(q, locale), true, draft.text.clone().filter(|t| t.chars().count() <= limits::TEXTAREA));
        field["max_length"] = json!(MAX_TEXT_CHARS.min(limits::TEXTAREA));
        elements.push(field);
    }
    Some(dialog(mtext(locale, MMsg::AnswerTitle), intro(q), elements, text(locale, Msg::Done), state))
}

/// What a submitted dialog asks the engine for, from its code and its `submission`
/// (element name → value), in order; empty when a required field is empty.
pub fn actions(code: Code, submission: &Map<String, Value>) -> Vec<UserAction> {
    let typed = |name: &str| submission.get(name).and_then(Value::as_str).map(str::to_owned).filter(|v| !v.trim().is_empty());
    match code {
        // The JSON goes to the core as typed: it says what is wrong with it.
        Code::EditDialog(action) => vec![UserAction::EditArgs { action, json: typed(ARGS).unwrap_or_default() }],
        Code::RejectDialog(action) => vec![UserAction::Decide { action, decision: Decision::Reject { message: typed(REASON) } }],
        Code::CommentDialog(action) => typed(COMMENT).map(|text| UserAction::Comment { action, text }).into_iter().collect(),
        Code::OtherDialog(question) => {
            let mut out = Vec::new();
            let ticked: Vec<usize> = submission
                .iter()
                .filter(|(_, v)| v.as_bool() == Some(true) || v.as_str() == Some("true"))
                .filter_map(|(name, _)| name.strip_prefix(OPTION_PREFIX)?.parse().ok())
                .collect();
            let boxes = submission.keys().any(|k| k.starts_with(OPTION_PREFIX));
            let chosen: Option<usize> = typed(CHOICE).and_then(|v| v.parse().ok());
            if boxes {
                out.push(UserAction::Select { question, options: ticked });
            } else if let Some(option) = chosen {
                out.push(UserAction::Select { question, options: vec![option] });
            }
            if let Some(text) = typed(ANSWER) {
                out.push(UserAction::OtherText { question, text });
            }
            out
        }
        _ => Vec::new(),
    }
}

/// The field a refusal of `code`'s submission is shown under.
pub fn error_field(code: Code) -> &'static str {
    match code {
        Code::EditDialog(_) => ARGS,
        Code::RejectDialog(_) => REASON,
        Code::OtherDialog(_) => ANSWER,
        _ => COMMENT,
    }
}
