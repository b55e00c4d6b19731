//! Tests of [`super`]: the Block Kit the render module produces for known inputs.

use super::*;
use crate::interaction::{AccessPolicy, Actor, Applied, RequestBuilder, TimeoutDefaults, UserAction};
use crate::platform::slack::text::note as note_text;
use crate::protocol::{ActionRequest, ReviewConfig};

const NOW: i64 = 1_767_225_600_000;

fn interaction(actions: Vec<ActionRequest>, configs: Vec<ReviewConfig>) -> Interaction {
    let request = RequestBuilder::start("k_1", actions, configs, Some(300)).finish(TimeoutDefaults::default()).expect("request");
    Interaction::new("a1b2c3d4e5f6".into(), "s".into(), request, Some(Actor::new("slack", "U0ANA", "ana")), NOW)
}

fn action(name: &str, args: Value) -> ActionRequest {
    ActionRequest { name: name.into(), args, description: None, tool_use_id: None }
}

fn signer() -> TokenSigner {
    TokenSigner::new(b"test-secret")
}

fn chars(v: &Value) -> usize {
    v.as_str().map_or(0, |s| s.chars().count())
}

/// Every limit Slack enforces on a message, checked on a rendered card.
fn assert_within_limits(card: &Value) {
    let blocks = card["blocks"].as_array().expect("blocks");
    assert!(!blocks.is_empty() && blocks.len() <= limits::BLOCKS, "{} blocks", blocks.len());
    assert!(chars(&card["text"]) <= limits::MESSAGE_TEXT);
    for block in blocks {
        match block["type"].as_str() {
            Some("section") => assert!((1..=limits::SECTION_TEXT).contains(&chars(&block["text"]["text"])), "{}", chars(&block["text"]["text"])),
            Some("header") => assert!(chars(&block["text"]["text"]) <= limits::HEADER_TEXT),
            Some("context") => assert!(block["elements"].as_array().is_some_and(|e| !e.is_empty() && e.len() <= limits::CONTEXT_ELEMENTS)),
            Some("actions") => {
                let elements = block["elements"].as_array().expect("elements");
                assert!(!elements.is_empty() && elements.len() <= limits::ACTIONS_ELEMENTS);
                for button in elements {
                    assert!(chars(&button["text"]["text"]) <= limits::BUTTON_TEXT);
                    // A button carries a signed value, or is a link.
                    match button.get("url") {
                        Some(url) => assert!((1..=limits::BUTTON_URL).contains(&chars(url)) && button.get("value").is_none()),
                        None => assert!((1..=limits::BUTTON_VALUE).contains(&chars(&button["value"]))),
                    }
                    assert!((1..=limits::ACTION_ID).contains(&chars(&button["action_id"])));
                }
                let ids: std::collections::HashSet<&str> = elements.iter().filter_map(|b| b["action_id"].as_str()).collect();
                assert_eq!(ids.len(), elements.len(), "action ids are unique in a block");
            }
            other => panic!("unexpected block {other:?}"),
        }
    }
}

/// The buttons as `(action_id, text, style)`.
fn buttons(card: &Value) -> Vec<(String, String, String)> {
    card["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "actions")
        .flat_map(|b| b["elements"].as_array().unwrap().clone())
        .map(|b| (b["action_id"].as_str().unwrap().to_owned(), b["text"]["text"].as_str().unwrap().to_owned(), b["style"].as_str().unwrap_or("").to_owned()))
        .collect()
}

#[test]
fn an_approval_card_has_one_button_per_allowed_decision() {
    let i = interaction(vec![action("execute_trade", json!({"symbol": "VNM", "quantity": 100}))], vec![]);
    let card = card(&i, Locale::En, &signer(), None);
    assert_within_limits(&card);
    assert_eq!(card["text"], "🔐 Approval needed: execute_trade");
    let blocks = card["blocks"].as_array().unwrap();
    assert_eq!(blocks[0], json!({"type": "header", "block_id": "title", "text": {"type": "plain_text", "text": "🔐 Approval needed", "emoji": true}}));
    assert_eq!(blocks[1]["elements"][0]["text"], "*For:* ana");
    let deadline = blocks[1]["elements"][1]["text"].as_str().unwrap();
    assert_eq!(deadline, "⏰ *Answer by:* <!date^1767225900^{date_short_pretty} {time}|00:05 UTC>");
    assert_eq!(blocks[2]["text"]["text"], "*execute_trade*\n```\n{\n  \"symbol\": \"VNM\",\n  \"quantity\": 100\n}\n```");
    assert_eq!(
        buttons(&card),
        [
            ("hitl.ap.0".into(), "✅ Approve".into(), "primary".into()),
            ("hitl.ed.0".into(), "✏️ Edit".into(), String::new()),
            ("hitl.rj.0".into(), "❌ Reject".into(), "danger".into()),
            ("hitl.cm.0".into(), "💬 Comment".into(), String::new()),
        ]
    );
    let reject = &blocks[3]["elements"][2];
    assert_eq!(reject["confirm"]["confirm"]["text"], "Reject");
    assert_eq!(reject["confirm"]["style"], "danger");
    // Every value is a token the signer verifies, naming the interaction and the code.
    let verified = signer().verify(reject["value"].as_str().unwrap()).unwrap();
    assert_eq!((verified.interaction_id.as_str(), verified.code.as_str()), ("a1b2c3d4e5f6", "rj.0"));
}

#[test]
fn agent_text_can_neither_mention_nor_link() {
    let mut i = interaction(vec![action("run <!channel>", json!({"note": "<@U1> <http://x|y> & <!here>"}))], vec![]);
    i.request.context = Some("ping <!everyone> <@U2>".into());
    let card = card(&i, Locale::En, &signer(), None);
    let all = card.to_string();
    for forbidden in ["<!channel>", "<@U1>", "<http://x|y>", "<!here>", "<!everyone>", "<@U2>"] {
        assert!(!all.contains(forbidden), "{forbidden} in {all}");
    }
    let blocks = card["blocks"].as_array().unwrap();
    assert_eq!(blocks[1]["text"]["text"], "ping &lt;!everyone&gt; &lt;@U2&gt;");
    assert!(blocks[3]["text"]["text"].as_str().unwrap().starts_with("*run &lt;!channel&gt;*"));
    assert!(blocks[3]["text"]["text"].as_str().unwrap().contains("&lt;@U1&gt; &lt;http://x|y&gt; &amp; &lt;!here&gt;"));
    assert_eq!(card["text"], "🔐 Approval needed: run &lt;!channel&gt;");
}

#[test]
fn long_args_are_cut_with_a_visible_note() {
    let i = interaction(vec![action("write_file", json!({"content": "<".repeat(10_000)}))], vec![]);
    let card = card(&i, Locale::En, &signer(), None);
    assert_within_limits(&card);
    let text = card["blocks"][2]["text"]["text"].as_str().unwrap();
    assert!(text.ends_with("…\n```\n_✂️ The arguments are cut to fit Slack; Edit shows them whole._"), "{}", &text[text.len() - 200..]);
    assert!(!text.contains("&l…") && !text.contains("&…"), "an entity is never split");
}

#[test]
fn many_actions_stay_within_fifty_blocks() {
    let actions: Vec<ActionRequest> = (0..40).map(|n| action(&format!("tool_{n}"), json!({"n": n}))).collect();
    let i = interaction(actions, vec![]);
    let card = card(&i, Locale::En, &signer(), None);
    assert_within_limits(&card);
    let blocks = card["blocks"].as_array().unwrap();
    assert!(blocks.iter().any(|b| b["block_id"] == "more"), "a note says actions were left out");
    let all = blocks.iter().find(|b| b["block_id"] == "all").expect("the shared row");
    let ids: Vec<&str> = all["elements"].as_array().unwrap().iter().filter_map(|b| b["action_id"].as_str()).collect();
    assert_eq!(ids, ["hitl.apa", "hitl.rja", "hitl.sub"]);
}

#[test]
fn the_outcome_replaces_the_buttons() {
    let mut i = interaction(vec![action("execute_trade", json!({}))], vec![]);
    let ana = Actor::new("slack", "U0ANA", "ana");
    let applied = i.apply(&ana, UserAction::Decide { action: 0, decision: Decision::Approve }, &AccessPolicy::default(), NOW + 62_000).expect("approve");
    assert!(matches!(applied, Applied::Resolved(_)));
    let card = card(&i, Locale::En, &signer(), None);
    assert_within_limits(&card);
    assert!(buttons(&card).is_empty());
    let blocks = card["blocks"].as_array().unwrap();
    assert_eq!(blocks.last().unwrap()["text"]["text"], "*✅ Approved by ana at 00:01 UTC*");
    assert_eq!(blocks[1]["elements"].as_array().unwrap().len(), 1, "no deadline once decided");
}

#[test]
fn edit_is_offered_only_where_allowed() {
    let configs: Vec<ReviewConfig> = vec![serde_json::from_value(json!({"action_name": "deploy", "allowed_decisions": ["approve", "reject"]})).unwrap()];
    let i = interaction(vec![action("deploy", json!({"v": 2}))], configs);
    let ids: Vec<String> = buttons(&card(&i, Locale::Vi, &signer(), None)).into_iter().map(|b| b.0).collect();
    assert_eq!(ids, ["hitl.ap.0", "hitl.rj.0", "hitl.cm.0"]);
}

#[test]
fn a_comment_on_the_whole_request_is_shown_escaped() {
    let mut i = interaction(vec![action("deploy", json!({}))], vec![]);
    let ana = Actor::new("slack", "U0ANA", "ana");
    let applied = i.apply(&ana, UserAction::Comment { action: 0, text: "not before <!here> 6pm".into() }, &AccessPolicy::default(), NOW + 1000).unwrap();
    assert!(matches!(applied, Applied::Updated), "a note keeps the request pending");
    let card = card(&i, Locale::En, &signer(), None);
    let note = card["blocks"].as_array().unwrap().iter().find(|b| b["block_id"] == "note").expect("the note");
    assert_eq!(note["text"]["text"], "💬 not before &lt;!here&gt; 6pm");
    assert_within_limits(&card);
}

const PAGE: &str = "https://inbox.example/inbox/requests/a1b2c3d4e5f6";

/// With the inbox on over https, a pending card ends with a link button to its page;
/// over plain http, with the link in a context line; decided, or with the inbox off,
/// with neither.
#[test]
fn a_pending_card_links_to_its_page_only_with_the_inbox_on() {
    let mut i = interaction(vec![action("execute_trade", json!({}))], vec![]);
    let https = BrowserLink::Button(PAGE.into());
    let shown = card(&i, Locale::En, &signer(), Some(&https));
    assert_within_limits(&shown);
    assert_eq!(
        shown["blocks"].as_array().unwrap().last().unwrap(),
        &json!({"type": "actions", "block_id": "browser",
            "elements": [{"type": "button", "action_id": "hitl.browser", "text": {"type": "plain_text", "text": "🌐 Open in browser", "emoji": true}, "url": PAGE}]})
    );
    let http = BrowserLink::InText("http://127.0.0.1:8790/inbox/requests/a1b2c3d4e5f6?a&b".into());
    let shown = card(&i, Locale::Vi, &signer(), Some(&http));
    assert_eq!(
        shown["blocks"].as_array().unwrap().last().unwrap(),
        &json!({"type": "context", "block_id": "browser",
            "elements": [{"type": "mrkdwn", "text": "🌐 Mở trong trình duyệt: <http://127.0.0.1:8790/inbox/requests/a1b2c3d4e5f6?a&amp;b>"}]})
    );
    let off = card(&i, Locale::En, &signer(), None);
    assert!(!off.to_string().contains("browser"), "{off}");

    let ana = Actor::new("slack", "U0ANA", "ana");
    i.apply(&ana, UserAction::Decide { action: 0, decision: Decision::Approve }, &AccessPolicy::default(), NOW + 1_000).expect("approve");
    let decided = card(&i, Locale::En, &signer(), Some(&https));
    assert!(!decided.to_string().contains("browser"), "a locked card has no link: {decided}");
}

/// The fullest card keeps Slack's 50 blocks with the link, and its note about the
/// actions left out points to the inbox only when the inbox is on.
#[test]
fn the_notes_mention_the_inbox_only_when_it_is_on() {
    let actions: Vec<ActionRequest> = (0..40).map(|n| action(&format!("tool_{n}"), json!({"n": n}))).collect();
    let i = interaction(actions, vec![]);
    let note = |card: &Value| card["blocks"].as_array().unwrap().iter().find(|b| b["block_id"] == "more").expect("the note")["elements"][0]["text"].clone();
    let on = card(&i, Locale::En, &signer(), Some(&BrowserLink::Button(PAGE.into())));
    assert_within_limits(&on);
    assert_eq!(on["blocks"].as_array().unwrap().last().unwrap()["block_id"], "browser");
    assert_eq!(note(&on), "More actions than one Slack message holds: use Approve all / Reject all, or the web inbox.");
    let off = card(&i, Locale::En, &signer(), None);
    assert_eq!(note(&off), "More actions than one Slack message holds: use Approve all / Reject all.");
    for locale in [Locale::En, Locale::Vi, Locale::Zh] {
        for msg in [SMsg::MoreActions, SMsg::OptionsCut, SMsg::MoreQuestions] {
            let without = note_text(locale, msg, false);
            assert!(!without.contains("web") && !without.contains("网页"), "{locale:?} {msg:?}: {without}");
            assert_ne!(without, note_text(locale, msg, true));
        }
    }
}
