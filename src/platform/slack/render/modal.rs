//! The modals Edit, Reject, Comment and a question's Other… open (`views.open`), and
//! reading their submissions (`view_submission`) back.
//!
//! A modal's `private_metadata` is a signed token (like every button's value) naming
//! the interaction and the modal's code; the inputs inside carry plain ids, because
//! only the token is trusted and the index still goes through the core's checks.

use serde_json::{Value, json};

use super::{limits, plain, questions};
use crate::interaction::answers::MAX_TEXT_CHARS;
use crate::interaction::{Draft, Interaction, RequestKind, UserAction, readable};
use crate::platform::kit::token::TokenSigner;
use crate::platform::slack::codes::Code;
use crate::platform::slack::text::{SMsg, escape_cut, stext};
use crate::protocol::Decision;
use crate::texts::{Locale, Msg, text};

/// The block of the edit modal's input: a refused edit's error is shown under it.
pub const ARGS_BLOCK: &str = "args";
const ARGS_INPUT: &str = "json";
const REASON_BLOCK: &str = "reason";
const COMMENT_BLOCK: &str = "comment";
const TEXT_INPUT: &str = "text";
/// The block of the free-text modal's input (a question's Other…).
pub const ANSWER_BLOCK: &str = "answer";
/// What a view's `callback_id` says: only for people reading Slack's logs.
const CALLBACK_ID: &str = "hitl";

/// Slack's limits on modals (Block Kit reference, "Modal view").
const TITLE: usize = 24;
const INPUT_VALUE: usize = 3000;
const LABEL: usize = 2000;

/// The modal a button opens, for `code` (Edit, Reject or Comment of an action);
/// `None` for other codes and for actions that do not exist.
pub fn for_code(interaction: &Interaction, code: Code, locale: Locale, signer: &TokenSigner) -> Option<Value> {
    let interaction = &*readable::interaction(interaction);
    let (index, modal, title, block, label, optional) = match code {
        Code::Edit(i) => (i, Code::EditModal(i), SMsg::EditTitle, ARGS_BLOCK, SMsg::ArgsLabel, false),
        Code::Reject(i) => (i, Code::RejectModal(i), SMsg::RejectTitle, REASON_BLOCK, SMsg::ReasonLabel, true),
        Code::Comment(i) => (i, Code::CommentModal(i), SMsg::CommentTitle, COMMENT_BLOCK, SMsg::CommentLabel, false),
        _ => return None,
    };
    let action = interaction.request.actions().get(index)?;
    let metadata = signer.sign(&interaction.id, &modal.encode()).ok()?;
    let mut input = json!({ "type": "plain_text_input", "action_id": if block == ARGS_BLOCK { ARGS_INPUT } else { TEXT_INPUT }, "multiline": true, "max_length": INPUT_VALUE });
    if let Code::Edit(_) = code {
        // The args as they stand: the draft's edited args if any, else the request's.
        let current = match &interaction.draft {
            Draft::Decisions(d) => match d.decisions.get(index) {
                Some(Some(Decision::Edit { edited_action })) => Value::Object(edited_action.args.clone()),
                _ => action.args.clone(),
            },
            Draft::Answers { .. } => action.args.clone(),
        };
        let pretty = serde_json::to_string_pretty(&current).unwrap_or_default();
        // A prefill over the input's limit would make Slack refuse the view; better an
        // empty box than a cut JSON document.
        if pretty.chars().count() <= INPUT_VALUE {
            input["initial_value"] = json!(pretty);
        }
    }
    let submit = match code {
        Code::Reject(_) => text(locale, Msg::Reject),
        _ => text(locale, Msg::Submit),
    };
    Some(json!({
        "type": "modal",
        "callback_id": CALLBACK_ID,
        "private_metadata": metadata,
        "title": plain(stext(locale, title), TITLE),
        "submit": plain(submit, TITLE),
        "close": plain(stext(locale, SMsg::Cancel), TITLE),
        "blocks": [
            { "type": "section", "block_id": "action", "text": { "type": "mrkdwn", "text": format!("*{}*", escape_cut(&action.name, 200)) } },
            { "type": "input", "block_id": block, "optional": optional, "label": plain(stext(locale, label), LABEL.min(limits::SECTION_TEXT)), "element": input },
        ],
    }))
}

/// The modal of a question's Other… (or its `input` option): the question, and one
/// input whose text is the answer (the current typed text prefilled). `None` for a
/// question that does not exist or takes no free text.
pub fn other(interaction: &Interaction, question: usize, locale: Locale, signer: &TokenSigner) -> Option<Value> {
    let interaction = &*readable::interaction(interaction);
    let RequestKind::Questions { questions, .. } = &interaction.request.kind else { return None };
    let q = questions.get(question).filter(|q| q.allows_free_text())?;
    let metadata = signer.sign(&interaction.id, &Code::OtherModal(question).encode()).ok()?;
    let mut input = json!({ "type": "plain_text_input", "action_id": TEXT_INPUT, "multiline": true, "max_length": MAX_TEXT_CHARS.min(INPUT_VALUE) });
    if let Draft::Answers { answers } = &interaction.draft
        && let Some(typed) = answers.get(question).and_then(|a| a.text.as_deref()).filter(|t| t.chars().count() <= INPUT_VALUE)
    {
        input["initial_value"] = json!(typed);
    }
    Some(json!({
        "type": "modal",
        "callback_id": CALLBACK_ID,
        "private_metadata": metadata,
        "title": plain(stext(locale, SMsg::AnswerTitle), TITLE),
        // It saves the answer on the card; the card's Submit sends the set.
        "submit": plain(text(locale, Msg::Done), TITLE),
        "close": plain(stext(locale, SMsg::Cancel), TITLE),
        "blocks": [
            { "type": "section", "block_id": "question", "text": { "type": "mrkdwn", "text": format!("*{}*", escape_cut(&q.text, limits::SECTION_TEXT - 2)) } },
            { "type": "input", "block_id": ANSWER_BLOCK, "label": plain(&questions::free_text_label(q, locale), LABEL), "element": input },
        ],
    }))
}

/// What a submitted modal asks the engine for, from its code and its `state.values`;
/// `None` when the code is no modal's or a required input is empty.
pub fn action(code: Code, values: &Value) -> Option<UserAction> {
    let typed = |block: &str, input: &str| values[block][input]["value"].as_str().map(str::to_owned).filter(|v| !v.trim().is_empty());
    match code {
        // The JSON goes to the core as typed: it says what is wrong with it.
        Code::EditModal(action) => Some(UserAction::EditArgs { action, json: typed(ARGS_BLOCK, ARGS_INPUT).unwrap_or_default() }),
        Code::RejectModal(action) => Some(UserAction::Decide { action, decision: Decision::Reject { message: typed(REASON_BLOCK, TEXT_INPUT) } }),
        Code::CommentModal(action) => typed(COMMENT_BLOCK, TEXT_INPUT).map(|text| UserAction::Comment { action, text }),
        Code::OtherModal(question) => typed(ANSWER_BLOCK, TEXT_INPUT).map(|text| UserAction::OtherText { question, text }),
        _ => None,
    }
}

/// The block a refusal of `code`'s submission is shown under.
pub fn error_block(code: Code) -> &'static str {
    match code {
        Code::EditModal(_) => ARGS_BLOCK,
        Code::RejectModal(_) => REASON_BLOCK,
        Code::OtherModal(_) => ANSWER_BLOCK,
        _ => COMMENT_BLOCK,
    }
}
