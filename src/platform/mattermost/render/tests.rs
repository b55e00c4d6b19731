//! The card's exact shape: what Mattermost is sent for an approval, its outcome, and
//! that agent text can neither mention nor link.

use serde_json::{Value, json};

use super::*;
use crate::interaction::{AccessPolicy, Actor, Interaction, RequestBuilder, TimeoutDefaults, UserAction};
use crate::protocol::ActionRequest;

const NOW: i64 = 1_767_225_600_000;
const URL: &str = "https://bridge.example.com/mattermost/actions";

fn signer() -> TokenSigner {
    TokenSigner::new(b"test-secret")
}

fn approval(name: &str, args: Value) -> Interaction {
    let action = ActionRequest { name: name.into(), args, description: None, tool_use_id: None };
    let request = RequestBuilder::start("k_1", vec![action], vec![], Some(300)).finish(TimeoutDefaults::default()).expect("request");
    Interaction::new("a1b2c3d4e5f6".into(), "s".into(), request, Some(Actor::new("mattermost", "8w1zd7n4xbrqtcyjf5mcnbxwwh", "ana")), NOW)
}

fn render(i: &Interaction) -> Value {
    let signer = signer();
    card(i, Locale::En, &Buttons { url: URL, signer: &signer }, None)
}

fn code_of(action: &Value) -> String {
    signer().verify(action["integration"]["context"]["code"].as_str().unwrap()).unwrap().code
}

#[test]
fn an_approval_has_a_button_per_decision_each_posting_a_signed_code() {
    let card = render(&approval("execute_trade", json!({"symbol": "VNM", "quantity": 100})));
    let attachments = card["props"]["attachments"].as_array().unwrap();
    assert_eq!(attachments[0]["title"], "🔐 Approval needed");
    assert_eq!(attachments[0]["text"], "**For:** ana · ⏰ **Answer by:** 00:05 UTC");
    assert_eq!(attachments[1]["text"], "**execute\\_trade**\n```\n{\n  \"symbol\": \"VNM\",\n  \"quantity\": 100\n}\n```");
    let actions = attachments[1]["actions"].as_array().unwrap();
    let names: Vec<&str> = actions.iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["✅ Approve", "✏️ Edit", "❌ Reject", "💬 Comment"]);
    let codes: Vec<String> = actions.iter().map(code_of).collect();
    assert_eq!(codes, ["ap.0", "ed.0", "rj.0", "cm.0"]);
    let ids: Vec<&str> = actions.iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["hitl1", "hitl2", "hitl3", "hitl4"]);
    assert!(actions.iter().all(|a| a["integration"]["url"] == URL && a["type"] == "button"));
    assert_eq!(render(&approval("execute_trade", json!({"symbol": "VNM", "quantity": 100}))), card, "rendering is pure");
}

#[test]
fn the_outcome_replaces_the_buttons() {
    let mut i = approval("deploy", json!({}));
    let ana = Actor::new("mattermost", "8w1zd7n4xbrqtcyjf5mcnbxwwh", "ana");
    i.apply(&ana, UserAction::Decide { action: 0, decision: crate::protocol::Decision::Approve }, &AccessPolicy::default(), NOW + 60_000).expect("applied");
    let card = render(&i);
    let text = card.to_string();
    assert!(!text.contains("\"actions\""), "{text}");
    let last = card["props"]["attachments"].as_array().unwrap().last().unwrap().clone();
    assert!(last["text"].as_str().unwrap().starts_with("**✅ Approved by ana"), "{last}");
}

#[test]
fn agent_text_cannot_mention_or_link() {
    let mut i = approval("@channel [click](http://evil) @here", json!({"a": "```@all"}));
    i.request.context = Some("@all please see <http://x>".into());
    let card = render(&i);
    let shown: Vec<String> = card["props"]["attachments"].as_array().unwrap().iter().map(|a| a["text"].as_str().unwrap_or_default().to_owned()).collect();
    for text in &shown {
        for mention in ["@channel", "@here", "@all"] {
            // Inside the code block `@all` is shown as typed: Mattermost reads no
            // mention in code; everywhere else it is broken.
            let outside_code: String = text.split("```").step_by(2).collect();
            assert!(!outside_code.contains(mention), "{text}");
        }
        assert!(!text.contains("](http"), "{text}");
    }
    assert_eq!(shown[1].matches("```").count(), 2, "the args cannot close their fence: {}", shown[1]);
}

#[test]
fn long_args_are_cut_to_the_post_with_a_note() {
    let card = render(&approval("big", json!({"blob": "x".repeat(40_000)})));
    let text = card["props"]["attachments"][1]["text"].as_str().unwrap();
    assert!(text.chars().count() <= limits::ACTION_TEXT, "{}", text.chars().count());
    assert!(text.contains("_✂️ The arguments are cut to fit Mattermost; Edit shows them whole._"), "{text}");
}
