//! A question request's blocks (1–4 questions on one card, all answerable at once):
//! per question a section (its header, text, options' descriptions and the current
//! answer, the draft) and a row of buttons, then one Submit for the whole set.
//!
//! How a question is answered depends on its options (the `input` option, whose
//! answer is typed, is never listed among them: its own button opens the modal):
//! - single select: a button per option up to [`BUTTONS`], else a `static_select`;
//! - multi-select: `checkboxes` up to [`CHECKBOXES`], else a `multi_static_select`;
//!   an `input` option already chosen is listed (ticked, with the typed text) so it
//!   can be unticked;
//! - a select or checkbox group holds at most [`limits::SELECT_OPTIONS`] options; the
//!   rest are cut and a note says so;
//! - **Other…** (or the `input` option's own label) opens a modal; **Skip** skips.
//!
//! A select or checkbox group is the section's accessory. Its `action_id` is the
//! signed code of the question ([`Code::Choose`]), so that unticking the last box,
//! which sends no option at all, still says which question; each option's `value` is
//! the signed code of that option. Once the request has ended, the buttons are gone
//! and each question shows the answer sent.

use serde_json::{Value, json};

use super::{FIELD, limits, mrkdwn, plain, section, sign};
use crate::interaction::answers::encode;
use crate::interaction::{AnswerDraft, Draft, FreeText, Interaction, Question};
use crate::platform::kit::codes::Decide;
use crate::platform::kit::json::put;
use crate::platform::kit::token::TokenSigner;
use crate::platform::slack::codes::Code;
use crate::platform::slack::text::{SMsg, escape, escape_cut, note, stext};
use crate::protocol::Reply;
use crate::texts::{Locale, Msg, text};

/// Single-select options shown as buttons at most; more become a select menu.
pub const BUTTONS: usize = 5;
/// Multi-select options shown as checkboxes at most (Slack's limit for a group).
pub const CHECKBOXES: usize = 10;

/// The blocks of `questions` within `room` blocks.
pub fn blocks(interaction: &Interaction, questions: &[Question], locale: Locale, signer: &TokenSigner, room: usize, inbox: bool) -> Vec<Value> {
    let pending = interaction.status.is_pending();
    let drafts = match &interaction.draft {
        Draft::Answers { answers } => answers.as_slice(),
        Draft::Decisions(_) => &[],
    };
    let count = questions.len();
    let mut blocks = Vec::new();
    if !pending {
        let sent = match &interaction.reply {
            Some(Reply::Answers { answers }) => Some(answers),
            _ => None,
        };
        for (n, q) in questions.iter().enumerate().take(room.saturating_sub(1)) {
            let mut text = title(q, n, count);
            // Only what was sent: after an expiry the draft was never an answer.
            if let Some(answer) = sent.and_then(|a| a.get(&q.text)) {
                text.push_str(&format!("\n→ {}", escape_cut(answer, FIELD)));
            }
            blocks.push(section(&format!("question.{n}"), text));
        }
        return blocks;
    }
    // Two blocks a question; kept back: Submit and the note of questions left out.
    let shown = count.min(room.saturating_sub(2) / 2);
    for (n, q) in questions.iter().enumerate().take(shown) {
        let draft = drafts.get(n).cloned().unwrap_or_default();
        let listed = listed(q, &draft);
        let cut = listed.len() > limits::SELECT_OPTIONS;
        let mut question = section(&format!("question.{n}"), body(q, n, count, &draft, cut, locale, inbox));
        let as_buttons = !q.multi_select && listed.len() <= BUTTONS;
        if !as_buttons && let Some(menu) = menu(interaction, q, n, &draft, &listed, locale, signer) {
            question["accessory"] = menu;
            // A new block_id for each new draft, as Slack asks of an updated message:
            // a client shows the menu as the card now says, not as it was left there
            // (by a refused click, or before someone else's).
            question["block_id"] = json!(format!("question.{n}.{}", revision(&draft)));
        }
        blocks.push(question);
        let mut row = Vec::new();
        if as_buttons {
            for &o in &listed {
                let mark = if draft.selected.contains(&o) { "✓ " } else { "" };
                let code = Code::Option { question: n, option: o };
                row.extend(super::button(signer, interaction, code, &format!("{mark}{}", q.options[o].label), None, None));
            }
        }
        if q.allows_free_text() {
            let typed = draft.text.is_some() && !draft.skipped;
            let mark = if typed { "✓ " } else { "" };
            row.extend(super::button(signer, interaction, Code::Other(n), &format!("{mark}✏️ {}…", free_text_label(q, locale)), None, None));
        }
        row.extend(super::button(signer, interaction, Code::Skip(n), &format!("⏭ {}", text(locale, Msg::Skip)), None, None));
        row.truncate(limits::ACTIONS_ELEMENTS);
        blocks.push(put(json!({ "type": "actions", "block_id": format!("answer.{n}"), "elements": null }), "elements", row));
    }
    if shown < count {
        blocks.push(json!({ "type": "context", "block_id": "more", "elements": [mrkdwn(escape(note(locale, SMsg::MoreQuestions, inbox)))] }));
    }
    let submit = super::button(signer, interaction, Code::Decide(Decide::Submit), &format!("📨 {}", text(locale, Msg::Submit)), Some("primary"), None);
    blocks.push(put(json!({ "type": "actions", "block_id": "submit", "elements": null }), "elements", submit.into_iter().collect::<Vec<_>>()));
    blocks
}

/// A short fingerprint of a draft (FNV-1a): the same draft, the same block_id.
fn revision(draft: &AnswerDraft) -> String {
    let canonical = serde_json::to_string(draft).unwrap_or_default();
    let hash = canonical.bytes().fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    format!("{hash:08x}")
}

/// The options a select, a checkbox group or the buttons list: all but the `input`
/// option, which is listed only on a multi-select question where it is chosen.
fn listed(q: &Question, draft: &AnswerDraft) -> Vec<usize> {
    (0..q.options.len()).filter(|&o| q.free_text != FreeText::InputOption(o) || (q.multi_select && draft.selected.contains(&o))).collect()
}

/// `[1/2] Header` and the question, in bold.
fn title(q: &Question, n: usize, count: usize) -> String {
    let header = q.header.as_deref().map(|h| format!(" {}", escape_cut(h, 100))).unwrap_or_default();
    format!("*[{}/{count}]{header}*\n*{}*", n + 1, escape_cut(&q.text, FIELD))
}

/// The question's section text: its title, the options that carry a description,
/// the cut note, and the current answer (the draft), within a section's limit.
fn body(q: &Question, n: usize, count: usize, draft: &AnswerDraft, cut: bool, locale: Locale, inbox: bool) -> String {
    let mut head = title(q, n, count);
    if q.multi_select {
        head.push_str(&format!("\n_{}_", escape(stext(locale, SMsg::ChooseMany))));
    }
    let mut tail = String::new();
    if cut {
        tail.push_str(&format!("\n_{}_", escape(note(locale, SMsg::OptionsCut, inbox))));
    }
    if draft.is_answered() {
        let answer = if draft.skipped { text(locale, Msg::Skipped).to_owned() } else { encode(q, draft) };
        tail.push_str(&format!("\n→ {}", escape_cut(&answer, FIELD)));
    }
    // Descriptions get what room is left, whole lines only.
    let mut room = limits::SECTION_TEXT.saturating_sub(head.chars().count() + tail.chars().count() + 2);
    for o in q.options.iter().filter(|o| o.description.is_some()) {
        let line = format!("\n• {} — _{}_", escape_cut(&o.label, 200), escape_cut(o.description.as_deref().unwrap_or_default(), 300));
        let len = line.chars().count();
        if len > room {
            head += "\n…";
            break;
        }
        room -= len;
        head.push_str(&line);
    }
    head + tail.as_str()
}

/// The label of the free-text button and modal: the `input` option's own, else "Other".
pub fn free_text_label(q: &Question, locale: Locale) -> String {
    q.free_text_label().map(str::to_owned).unwrap_or_else(|| text(locale, Msg::Other).to_owned())
}

/// An option object (plain text: Slack shows it as typed), its value signed.
fn option(interaction: &Interaction, q: &Question, n: usize, o: usize, draft: &AnswerDraft, signer: &TokenSigner) -> Option<Value> {
    let label = match (&draft.text, q.free_text) {
        // The input option chosen on a multi-select question: what was typed.
        (Some(typed), FreeText::InputOption(i)) if i == o => format!("{}: {typed}", q.options[o].label),
        _ => q.options[o].label.clone(),
    };
    let mut option = json!({ "text": plain(&label, limits::OPTION_TEXT), "value": sign(signer, interaction, Code::Option { question: n, option: o }, limits::OPTION_VALUE)? });
    if let Some(description) = q.options[o].description.as_deref().filter(|d| !d.is_empty()) {
        option["description"] = plain(description, limits::OPTION_TEXT);
    }
    Some(option)
}

/// The select menu or checkbox group of question `n`, showing the draft's choices;
/// `None` when it would list no option (Slack refuses an empty one).
fn menu(interaction: &Interaction, q: &Question, n: usize, draft: &AnswerDraft, listed: &[usize], locale: Locale, signer: &TokenSigner) -> Option<Value> {
    let kind = match (q.multi_select, listed.len() <= CHECKBOXES) {
        (false, _) => "static_select",
        (true, true) => "checkboxes",
        (true, false) => "multi_static_select",
    };
    let made: Vec<(usize, Value)> =
        listed.iter().take(limits::SELECT_OPTIONS).filter_map(|&o| option(interaction, q, n, o, draft, signer).map(|v| (o, v))).collect();
    let chosen: Vec<Value> = made.iter().filter(|(o, _)| draft.selected.contains(o)).map(|(_, v)| v.clone()).collect();
    let options: Vec<Value> = made.into_iter().map(|(_, v)| v).collect();
    if options.is_empty() {
        return None;
    }
    let mut element =
        put(json!({ "type": kind, "action_id": sign(signer, interaction, Code::Choose(n), limits::ACTION_ID)?, "options": null }), "options", options);
    if kind != "checkboxes" {
        let placeholder = if q.multi_select { SMsg::ChooseMany } else { SMsg::ChooseOne };
        element["placeholder"] = plain(stext(locale, placeholder), limits::PLACEHOLDER);
    }
    match (kind, chosen.first()) {
        // Slack refuses an initial option that is not exactly one of the options.
        ("static_select", Some(first)) => element["initial_option"] = first.clone(),
        (_, Some(_)) if q.multi_select => element["initial_options"] = chosen.into(),
        _ => {}
    }
    Some(element)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::{AccessPolicy, Actor, RequestBuilder, TimeoutDefaults, UserAction};
    use crate::platform::slack::render::card;
    use crate::protocol::ActionRequest;

    const NOW: i64 = 1_767_225_600_000;

    fn asking(questions: Value) -> Interaction {
        let ask = ActionRequest { name: "ask_user_question".into(), args: json!({ "questions": questions }), description: None, tool_use_id: None };
        let request = RequestBuilder::start("k_1", vec![ask], vec![], Some(300)).finish(TimeoutDefaults::default()).expect("request");
        Interaction::new("a1b2c3d4e5f6".into(), "s".into(), request, Some(Actor::new("slack", "U0ANA", "ana")), NOW)
    }

    fn options(n: usize) -> Value {
        json!((0..n).map(|i| json!({"label": format!("option {i}")})).collect::<Vec<_>>())
    }

    fn signer() -> TokenSigner {
        TokenSigner::new(b"test-secret")
    }

    /// The block `id`, or the question section `id.{revision}`.
    fn block<'a>(card: &'a Value, id: &str) -> &'a Value {
        let named = |b: &&Value| b["block_id"].as_str().is_some_and(|b| b == id || b.strip_prefix(id).is_some_and(|r| r.len() == 9 && r.starts_with('.')));
        card["blocks"].as_array().unwrap().iter().find(named).unwrap_or_else(|| panic!("no block {id} in {card}"))
    }

    fn code_of(token: &Value) -> String {
        signer().verify(token.as_str().unwrap()).unwrap().code
    }

    #[test]
    fn more_than_a_hundred_options_are_cut_with_a_note_and_every_value_is_signed() {
        let i = asking(json!([{"question": "Which host?", "options": options(120)}]));
        let card = card(&i, Locale::En, &signer(), None);
        let question = block(&card, "question.0");
        let menu = &question["accessory"];
        assert_eq!(menu["type"], "static_select");
        assert_eq!(code_of(&menu["action_id"]), "ch.0");
        let listed = menu["options"].as_array().unwrap();
        assert_eq!(listed.len(), limits::SELECT_OPTIONS);
        assert_eq!(code_of(&listed[99]["value"]), "op.0.99");
        assert!(listed.iter().all(|o| o["value"].as_str().unwrap().chars().count() <= limits::OPTION_VALUE));
        assert!(question["text"]["text"].as_str().unwrap().contains("_✂️ Only the first 100 options fit in Slack"), "{question}");
        assert_eq!(card["blocks"].as_array().unwrap().len(), 5, "header, meta, question, its buttons, submit");
    }

    #[test]
    fn the_element_follows_the_question_and_shows_the_draft() {
        let mut i = asking(json!([
            {"question": "One of three?", "options": options(3)},
            {"question": "Some of three?", "multiSelect": true, "options": options(3)},
            {"question": "Some of twelve?", "multiSelect": true, "options": options(12)},
            {"question": "Or type?", "options": [{"label": "A"}, {"label": "Khác", "input": true}]},
        ]));
        let ana = Actor::new("slack", "U0ANA", "ana");
        for action in [
            UserAction::Select { question: 0, options: vec![1] },
            UserAction::Select { question: 1, options: vec![0, 2] },
            UserAction::Select { question: 2, options: vec![11] },
        ] {
            i.apply(&ana, action, &AccessPolicy::default(), NOW + 1000).expect("applied");
        }
        let card = card(&i, Locale::En, &signer(), None);
        let row = |n: usize| -> Vec<String> {
            block(&card, &format!("answer.{n}"))["elements"].as_array().unwrap().iter().map(|b| b["text"]["text"].as_str().unwrap().to_owned()).collect()
        };
        assert_eq!(row(0), ["option 0", "✓ option 1", "option 2", "✏️ Other…", "⏭ Skip"]);
        assert!(block(&card, "question.0").get("accessory").is_none(), "buttons only");
        let boxes = &block(&card, "question.1")["accessory"];
        assert_eq!(boxes["type"], "checkboxes");
        let ticked: Vec<String> = boxes["initial_options"].as_array().unwrap().iter().map(|o| code_of(&o["value"])).collect();
        assert_eq!(ticked, ["op.1.0", "op.1.2"]);
        assert!(block(&card, "question.1")["text"]["text"].as_str().unwrap().ends_with("\n→ option 0, option 2"));
        let many = &block(&card, "question.2")["accessory"];
        assert_eq!((many["type"].as_str(), many["options"].as_array().unwrap().len()), (Some("multi_static_select"), 12));
        assert_eq!(many["initial_options"][0]["text"]["text"], "option 11");
        // The input option is its own button, never a listed choice.
        assert_eq!(row(3), ["A", "✏️ Khác…", "⏭ Skip"]);
        assert_eq!(code_of(&block(&card, "submit")["elements"][0]["value"]), "sub");
        // Another draft, another block_id for the menu; the same draft, the same one.
        let before = block(&card, "question.1")["block_id"].clone();
        let render = |i: &Interaction| crate::platform::slack::render::card(i, Locale::En, &signer(), None);
        assert_eq!(render(&i), card, "rendering is pure");
        i.apply(&ana, UserAction::Toggle { question: 1, option: 1 }, &AccessPolicy::default(), NOW + 2000).expect("applied");
        let after = render(&i);
        assert_ne!(block(&after, "question.1")["block_id"], before);
        assert_eq!(block(&after, "question.0")["block_id"], "question.0", "buttons keep no state");
    }

    #[test]
    fn many_questions_stay_within_fifty_blocks_and_text_cannot_mention() {
        let questions: Vec<Value> = (0..30).map(|n| json!({"question": format!("<!channel> {n}?"), "header": "<@U1>", "options": options(2)})).collect();
        let i = asking(json!(questions));
        let card = card(&i, Locale::En, &signer(), None);
        let blocks = card["blocks"].as_array().unwrap();
        assert!(blocks.len() <= limits::BLOCKS, "{}", blocks.len());
        assert_eq!(
            block(&card, "more")["elements"][0]["text"],
            "More questions than one Slack message holds: only those shown can be answered here.",
            "the inbox is off"
        );
        assert_eq!(blocks.last().unwrap()["block_id"], "submit");
        let all = card.to_string();
        assert!(!all.contains("<!channel>") && !all.contains("<@U1>"), "{all}");
        assert_eq!(block(&card, "question.0")["text"]["text"], "*[1/30] &lt;@U1&gt;*\n*&lt;!channel&gt; 0?*");
    }
}
