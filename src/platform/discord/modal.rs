//! The modals Edit, Comment and Other… open, and reading their submissions back.
//!
//! A modal's own `custom_id` is a signed token (like every button's); the inputs inside
//! carry plain ids (`args`, `text`, `q<index>`) because only the modal's id is trusted
//! and the indexes still go through the core's range checks.

use serenity::all::{ActionRowComponent, CreateActionRow, CreateInputText, CreateModal, InputTextStyle, ModalInteractionData};

use super::codes::Code;
use super::render::{PER_PAGE, free_text_label, limits};
use super::text::{DMsg, dtext, truncate};
use crate::interaction::{Draft, Interaction, RequestKind, UserAction, readable};
use crate::platform::kit::token::TokenSigner;
use crate::platform::locale::{self, Locale, Msg};
use crate::protocol::Decision;

const ARGS_INPUT: &str = "args";
const TEXT_INPUT: &str = "text";

fn input_value(value: &str) -> Option<String> {
    // A prefill longer than the input allows would make Discord reject the modal;
    // better an empty box than a cut JSON document.
    (value.chars().count() <= limits::INPUT_VALUE).then(|| value.to_owned())
}

/// The edit modal for action `index`, prefilled with the args as they stand (the
/// draft's edited args if any, else the request's).
pub fn edit(interaction: &Interaction, index: usize, locale: Locale, signer: &TokenSigner) -> Option<CreateModal> {
    let interaction = &*readable::interaction(interaction);
    let action = interaction.request.actions().get(index)?;
    let current = match &interaction.draft {
        Draft::Decisions(d) => match d.decisions.get(index) {
            Some(Some(Decision::Edit { edited_action })) => serde_json::Value::Object(edited_action.args.clone()),
            _ => action.args.clone(),
        },
        Draft::Answers { .. } => action.args.clone(),
    };
    let pretty = serde_json::to_string_pretty(&current).unwrap_or_default();
    let value = input_value(&pretty).or_else(|| input_value(&current.to_string()));
    let mut input = CreateInputText::new(InputTextStyle::Paragraph, truncate(locale::text(locale, Msg::Arguments), limits::INPUT_LABEL), ARGS_INPUT)
        .max_length(limits::INPUT_VALUE as u16);
    if let Some(value) = value {
        input = input.value(value);
    }
    let title = truncate(&format!("{}: {}", dtext(locale, DMsg::EditTitle), action.name), limits::MODAL_TITLE);
    let id = signer.sign(&interaction.id, &Code::EditModal(index).encode()).ok()?;
    Some(CreateModal::new(id, title).components(vec![CreateActionRow::InputText(input)]))
}

/// The comment modal for action `index`.
pub fn respond(interaction: &Interaction, index: usize, locale: Locale, signer: &TokenSigner) -> Option<CreateModal> {
    let interaction = &*readable::interaction(interaction);
    let action = interaction.request.actions().get(index)?;
    let input = CreateInputText::new(InputTextStyle::Paragraph, truncate(dtext(locale, DMsg::CommentLabel), limits::INPUT_LABEL), TEXT_INPUT)
        .max_length(limits::INPUT_VALUE as u16);
    let title = truncate(&format!("{}: {}", dtext(locale, DMsg::CommentTitle), action.name), limits::MODAL_TITLE);
    let id = signer.sign(&interaction.id, &Code::RespondModal(index).encode()).ok()?;
    Some(CreateModal::new(id, title).components(vec![CreateActionRow::InputText(input)]))
}

/// The Other… modal for the questions on `page` that take free text: one optional
/// input each, prefilled with text already typed. `None` when none takes text.
pub fn other(interaction: &Interaction, page: usize, locale: Locale, signer: &TokenSigner) -> Option<CreateModal> {
    let interaction = &*readable::interaction(interaction);
    let RequestKind::Questions { questions, .. } = &interaction.request.kind else { return None };
    let typed = |i: usize| match &interaction.draft {
        Draft::Answers { answers } => answers.get(i).and_then(|a| a.text.clone()),
        Draft::Decisions(_) => None,
    };
    let rows: Vec<CreateActionRow> = questions
        .iter()
        .enumerate()
        .skip(page * PER_PAGE)
        .take(PER_PAGE.min(limits::MODAL_INPUTS))
        .filter(|(_, q)| q.allows_free_text())
        .map(|(i, q)| {
            let mut input = CreateInputText::new(InputTextStyle::Short, free_text_label(q, i, locale), format!("q{i}"))
                .required(false)
                .max_length(limits::INPUT_VALUE as u16);
            if let Some(text) = typed(i).and_then(|t| input_value(&t)) {
                input = input.value(text);
            }
            CreateActionRow::InputText(input)
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let id = signer.sign(&interaction.id, &Code::OtherModal(page).encode()).ok()?;
    Some(CreateModal::new(id, truncate(dtext(locale, DMsg::OtherEllipsis), limits::MODAL_TITLE)).components(rows))
}

/// The inputs of a submitted modal: `(custom_id, value)`, empty values left out.
fn inputs(data: &ModalInteractionData) -> Vec<(String, String)> {
    data.components
        .iter()
        .flat_map(|row| row.components.iter())
        .filter_map(|c| match c {
            ActionRowComponent::InputText(input) => input.value.as_ref().filter(|v| !v.trim().is_empty()).map(|v| (input.custom_id.clone(), v.clone())),
            _ => None,
        })
        .collect()
}

/// What a modal submission asks for, in order. Empty when nothing was typed.
pub fn actions(code: Code, data: &ModalInteractionData) -> Vec<UserAction> {
    let inputs = inputs(data);
    let find = |id: &str| inputs.iter().find(|(k, _)| k == id).map(|(_, v)| v.clone());
    match code {
        // The JSON goes to the core as typed: it says what is wrong with it.
        Code::EditModal(action) => vec![UserAction::EditArgs { action, json: find(ARGS_INPUT).unwrap_or_default() }],
        Code::RespondModal(action) => find(TEXT_INPUT).map(|text| UserAction::Comment { action, text }).into_iter().collect(),
        Code::OtherModal(_) => inputs
            .iter()
            .filter_map(|(id, text)| {
                let question = id.strip_prefix('q')?.parse::<usize>().ok()?;
                Some(UserAction::OtherText { question, text: text.clone() })
            })
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::kit::codes::Decide;
    use serde_json::json;

    fn submitted(inputs: &[(&str, &str)]) -> ModalInteractionData {
        let rows: Vec<serde_json::Value> = inputs.iter().map(|(id, value)| json!({"type":1,"components":[{"type":4,"custom_id":id,"value":value}]})).collect();
        serde_json::from_value(json!({"custom_id":"x","components":rows})).expect("modal data")
    }

    #[test]
    fn edit_passes_the_json_through_as_typed() {
        let data = submitted(&[("args", "{\"a\": 1")]);
        assert_eq!(actions(Code::EditModal(2), &data), vec![UserAction::EditArgs { action: 2, json: "{\"a\": 1".into() }]);
        // An empty box is still an edit: the core says why it is refused.
        assert_eq!(actions(Code::EditModal(0), &submitted(&[])), vec![UserAction::EditArgs { action: 0, json: String::new() }]);
    }

    #[test]
    fn comment_and_other_skip_empty_and_unknown_inputs() {
        assert_eq!(actions(Code::RespondModal(1), &submitted(&[("text", "  ")])), vec![]);
        assert_eq!(actions(Code::RespondModal(1), &submitted(&[("text", "ok")])), vec![UserAction::Comment { action: 1, text: "ok".into() }]);
        let data = submitted(&[("q0", "Năng lượng"), ("q1", ""), ("qx", "junk"), ("other", "junk"), ("q3", "Ngắn hạn")]);
        assert_eq!(
            actions(Code::OtherModal(0), &data),
            vec![UserAction::OtherText { question: 0, text: "Năng lượng".into() }, UserAction::OtherText { question: 3, text: "Ngắn hạn".into() },]
        );
        assert_eq!(actions(Code::Decide(Decide::Submit), &data), vec![], "only modal codes carry inputs");
    }
}
