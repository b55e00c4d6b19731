//! Tests of [`super`]: what the render module produces for known inputs.

use super::*;
use crate::interaction::{Applied, RequestBuilder, TimeoutDefaults};
use crate::protocol::{ActionRequest, ReviewConfig};
use serde_json::json;

fn interaction(actions: Vec<ActionRequest>, configs: Vec<ReviewConfig>) -> Interaction {
    let request = RequestBuilder::start("k_1", actions, configs, Some(300)).finish(TimeoutDefaults::default()).expect("request");
    Interaction::new("a1b2c3d4e5f6".into(), "s".into(), request, None, 1_767_225_600_000)
}

fn action(name: &str, args: Value) -> ActionRequest {
    ActionRequest { name: name.into(), args, description: Some("d".repeat(300)), tool_use_id: None }
}

fn json_of(view: &View) -> (Value, Value) {
    (serde_json::to_value(&view.embed).expect("embed"), serde_json::to_value(&view.components).expect("rows"))
}

fn chars(v: &Value) -> usize {
    v.as_str().map_or(0, |s| s.chars().count())
}

/// Every limit Discord enforces on a message, checked on a rendered view.
fn assert_within_limits(view: &View) {
    let (embed, rows) = json_of(view);
    assert!(chars(&embed["title"]) <= limits::EMBED_TITLE);
    assert!(chars(&embed["description"]) <= limits::EMBED_DESCRIPTION, "{}", chars(&embed["description"]));
    let fields = embed["fields"].as_array().cloned().unwrap_or_default();
    assert!(fields.len() <= limits::FIELDS);
    let total = chars(&embed["title"])
        + chars(&embed["description"])
        + chars(&embed["footer"]["text"])
        + fields.iter().map(|f| chars(&f["name"]) + chars(&f["value"])).sum::<usize>();
    assert!(total <= limits::EMBED_TOTAL, "embed total {total}");
    let rows = rows.as_array().cloned().unwrap_or_default();
    assert!(rows.len() <= limits::ROWS, "{} rows", rows.len());
    for row in rows {
        let items = row["components"].as_array().cloned().unwrap_or_default();
        assert!(!items.is_empty() && items.len() <= limits::BUTTONS_PER_ROW);
        for item in &items {
            if item["style"] == 5 {
                // A link button: a URL and no custom_id.
                assert!(item.get("custom_id").is_none() && (1..=limits::BUTTON_URL).contains(&chars(&item["url"])), "{item}");
            } else {
                assert!((1..=limits::CUSTOM_ID).contains(&chars(&item["custom_id"])));
            }
            assert!(chars(&item["label"]) <= limits::BUTTON_LABEL);
            if item["type"] == 3 {
                assert_eq!(items.len(), 1, "a select fills its row");
                let options = item["options"].as_array().cloned().unwrap_or_default();
                assert!((1..=limits::SELECT_OPTIONS).contains(&options.len()));
                assert!(item["max_values"].as_u64().unwrap_or(1) as usize <= options.len());
                for o in options {
                    assert!((1..=limits::OPTION_TEXT).contains(&chars(&o["label"])));
                    assert!(chars(&o["description"]) <= limits::OPTION_TEXT);
                }
            }
        }
    }
}

#[test]
fn many_actions_paginate_within_five_rows() {
    let actions: Vec<ActionRequest> = (0..9).map(|i| action(&format!("tool_{i}"), json!({"n": i}))).collect();
    let i = interaction(actions, vec![]);
    assert_eq!(pages(&i), 3);
    let signer = TokenSigner::new(b"k");
    for page in 0..3 {
        let view = view(&i, Locale::En, &signer, page);
        assert_within_limits(&view);
        let (_, rows) = json_of(&view);
        let last: Vec<Value> = rows[rows.as_array().map_or(0, Vec::len) - 1]["components"].as_array().cloned().unwrap_or_default();
        let labels: Vec<&str> = last.iter().filter_map(|b| b["label"].as_str()).collect();
        let expected: &[&str] = match page {
            0 => &["Approve all", "Reject all", "Submit", "Next ▶"],
            1 => &["Approve all", "Reject all", "Submit", "◀ Previous", "Next ▶"],
            _ => &["Approve all", "Reject all", "Submit", "◀ Previous"],
        };
        assert_eq!(labels, expected);
    }
    // Page 2 shows actions 9 only: one action row plus the shared row.
    let (_, rows) = json_of(&view(&i, Locale::En, &signer, 2));
    assert_eq!(rows.as_array().map(Vec::len), Some(2));
    assert_eq!(rows[0]["components"][0]["label"], "9. Approve");
}

#[test]
fn long_args_are_cut_and_attached_whole() {
    let big = json!({"rows": (0..2000).map(|n| format!("row-{n}")).collect::<Vec<_>>()});
    let i = interaction(vec![action("import", big.clone())], vec![]);
    let view = view(&i, Locale::Vi, &TokenSigner::new(b"k"), 0);
    assert_within_limits(&view);
    let (name, bytes) = view.attachment.clone().expect("attached");
    assert_eq!(name, ARGS_FILE);
    assert_eq!(serde_json::from_slice::<Value>(&bytes).expect("json"), big);
    let (embed, _) = json_of(&view);
    assert_eq!(embed["footer"]["text"], "Tham số quá dài để hiển thị; JSON đầy đủ được đính kèm.");
    assert!(embed["description"].as_str().is_some_and(|d| d.contains("…") && d.ends_with("```")), "the code block stays closed");
}

#[test]
fn big_questions_stay_within_limits() {
    let options: Vec<Value> = (0..30).map(|n| json!({"label": format!("{n} {}", "ô".repeat(120)), "description": "ữ".repeat(150)})).collect();
    let questions: Vec<Value> = (0..6)
        .map(|n| json!({"question": format!("{n} {}", "câu hỏi ".repeat(200)), "header": "h".repeat(300), "multiSelect": n % 2 == 0, "options": options}))
        .collect();
    let i = interaction(
        vec![ActionRequest { name: "ask_user_question".into(), args: json!({"questions": questions}), description: None, tool_use_id: None }],
        vec![],
    );
    assert_eq!(pages(&i), 2);
    let signer = TokenSigner::new(b"k");
    for page in 0..2 {
        assert_within_limits(&view(&i, Locale::Zh, &signer, page));
    }
    let (_, rows) = json_of(&view(&i, Locale::En, &signer, 0));
    assert_eq!(rows[0]["components"][0]["max_values"], 25);
    assert_eq!(rows[1]["components"][0].get("max_values"), None, "single select keeps Discord's default of 1");
    let other = crate::platform::discord::modal::other(&i, 0, Locale::En, &signer).expect("modal");
    let other = serde_json::to_value(&other).expect("modal");
    let inputs = other["components"].as_array().cloned().unwrap_or_default();
    assert_eq!(inputs.len(), 4);
    assert!(inputs.iter().all(|r| chars(&r["components"][0]["label"]) <= limits::INPUT_LABEL));
}

#[test]
fn ended_interaction_has_no_components_and_shows_answers() {
    let q = json!({"questions":[{"question":"Q?","options":[{"label":"A"},{"label":"B"}]}]});
    let mut i = interaction(vec![ActionRequest { name: "ask_user_question".into(), args: q, description: None, tool_use_id: None }], vec![]);
    let actor = crate::interaction::Actor::new("discord", "1", "Thảo");
    let policy = crate::interaction::AccessPolicy { approver_users: vec![("discord".into(), "1".into())], approver_roles: vec![], four_eyes: false };
    i.apply(&actor, crate::interaction::UserAction::Select { question: 0, options: vec![1] }, &policy, 1_767_225_601_000).expect("select");
    let applied = i.apply(&actor, crate::interaction::UserAction::Submit, &policy, 1_767_225_602_000).expect("submit");
    assert!(matches!(applied, Applied::Resolved(_)));
    let view = view(&i, Locale::En, &TokenSigner::new(b"k"), 0);
    assert!(view.components.is_empty());
    let (embed, _) = json_of(&view);
    assert_eq!(
        embed["fields"],
        json!([
            {"name":"Decision","value":"✅ Sent by Thảo at 00:00 UTC","inline":false},
            {"name":"1. Q?","value":"B","inline":false}
        ])
    );
}

#[test]
fn only_allowed_decisions_get_buttons_in_a_fixed_order() {
    let config = ReviewConfig {
        action_name: None,
        allowed_decisions: Some(vec!["reject".into(), "approve".into(), "respond".into()]),
        timeout: None,
        require_approval: None,
    };
    let i = interaction(vec![action("send", json!({}))], vec![config]);
    let (_, rows) = json_of(&view(&i, Locale::En, &TokenSigner::new(b"k"), 0));
    let labels: Vec<&str> = rows[0]["components"].as_array().into_iter().flatten().filter_map(|b| b["label"].as_str()).collect();
    assert_eq!(labels, ["Approve", "Reject", "Comment"]);
    let kimi = ReviewConfig { allowed_decisions: Some(vec!["approve_for_session".into(), "approve".into(), "reject".into()]), ..ReviewConfig::default() };
    let i = interaction(vec![action("Shell", json!({}))], vec![kimi]);
    let (_, rows) = json_of(&view(&i, Locale::En, &TokenSigner::new(b"k"), 0));
    let labels: Vec<&str> = rows[0]["components"].as_array().into_iter().flatten().filter_map(|b| b["label"].as_str()).collect();
    assert_eq!(labels, ["Approve", "Approve for session", "Reject"]);
}

/// A backend's own words for its decisions (an ACP agent's option names) label the
/// buttons; the decisions it has no word for keep the bridge's.
#[test]
fn the_backends_own_words_label_its_buttons() {
    let kimi = ReviewConfig { allowed_decisions: Some(vec!["approve_for_session".into(), "approve".into(), "reject".into()]), ..ReviewConfig::default() };
    let mut i = interaction(vec![action("execute", json!({}))], vec![kimi]);
    let RequestKind::Approval { actions } = &mut i.request.kind else { panic!("an approval") };
    actions[0].labels = vec![(DecisionType::Approve, "Allow".into()), (DecisionType::ApproveForSession, "Always Allow".into())];
    let (_, rows) = json_of(&view(&i, Locale::En, &TokenSigner::new(b"k"), 0));
    let labels: Vec<&str> = rows[0]["components"].as_array().into_iter().flatten().filter_map(|b| b["label"].as_str()).collect();
    assert_eq!(labels, ["Allow", "Always Allow", "Reject"]);
}

/// "Open in browser": a link button in a row of its own, else at the end of a last row
/// with room, else (five full rows, or a plain-http inbox) a field of the embed; an
/// ended card shows it nowhere. Every placement stays within Discord's limits.
#[test]
fn open_in_browser_is_a_link_button_where_the_rows_leave_room_else_a_field() {
    let signer = TokenSigner::new(b"k");
    let url = "https://inbox.example/inbox/requests/a1b2c3d4e5f6";
    let https = BrowserLink::Button(url.into());
    let link_button = json!({"type": 2, "style": 5, "label": "🌐 Open in browser", "url": url, "disabled": false});
    let link_field = |url: &str| json!({"name": "🌐 Open in browser", "value": url, "inline": false});
    let fields = |view: &View| json_of(view).0["fields"].as_array().cloned().unwrap_or_default();

    let one = interaction(vec![action("deploy", json!({"env": "prod"}))], vec![]);
    let without = view(&one, Locale::En, &signer, 0);
    let with = card(&one, Locale::En, &signer, 0, Some(&https));
    assert_within_limits(&with);
    let (embed, rows) = json_of(&with);
    let mut expected = json_of(&without).1.as_array().cloned().unwrap_or_default();
    expected.push(json!({"type": 1, "components": [link_button.clone()]}));
    assert_eq!(rows, Value::Array(expected), "the decisions unchanged, the link in a row of its own");
    assert_eq!(embed, json_of(&without).0, "no field when the button is there");

    // Nine actions: page 1 fills five rows and its last row (5 buttons): a field; page
    // 0's last row has 4 buttons: the link joins it.
    let nine = interaction((0..9).map(|i| action(&format!("tool_{i}"), json!({"n": i}))).collect(), vec![]);
    let middle = card(&nine, Locale::En, &signer, 1, Some(&https));
    assert_within_limits(&middle);
    assert_eq!(json_of(&middle).1, json_of(&view(&nine, Locale::En, &signer, 1)).1, "no room: the rows are unchanged");
    assert_eq!(fields(&middle).last(), Some(&link_field(url)));
    let first = card(&nine, Locale::En, &signer, 0, Some(&https));
    assert_within_limits(&first);
    let (_, rows) = json_of(&first);
    assert_eq!(rows.as_array().map(Vec::len), Some(5));
    assert_eq!(rows[4]["components"].as_array().and_then(|b| b.last()), Some(&link_button));

    // A plain-http inbox: the link as text, no button.
    let http = BrowserLink::InText("http://127.0.0.1:8790/inbox/requests/a1b2c3d4e5f6".into());
    let plain = card(&one, Locale::Vi, &signer, 0, Some(&http));
    assert_within_limits(&plain);
    assert_eq!(json_of(&plain).1, json_of(&view(&one, Locale::Vi, &signer, 0)).1);
    assert_eq!(
        fields(&plain).last(),
        Some(&json!({"name": "🌐 Mở trong trình duyệt", "value": "http://127.0.0.1:8790/inbox/requests/a1b2c3d4e5f6", "inline": false}))
    );

    // Long args: the field is counted before the description's budget.
    let big = interaction(vec![action("import", json!({"rows": (0..2000).map(|n| format!("row-{n}")).collect::<Vec<_>>()}))], vec![]);
    assert_within_limits(&card(&big, Locale::En, &signer, 0, Some(&http)));

    // Ended: no components, no field.
    let mut ended = one.clone();
    assert!(ended.cancel(1_767_225_601_000, "user"));
    let shown = card(&ended, Locale::En, &signer, 0, Some(&https));
    assert!(shown.components.is_empty());
    assert!(!json_of(&shown).0.to_string().contains("Open in browser"));
}
