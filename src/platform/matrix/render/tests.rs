//! The card's exact shape: what Matrix is sent for an approval and a question, its
//! outcome, what each reaction means, and that agent text can neither mention nor
//! inject markup.

use serde_json::{Value, json};

use super::*;
use crate::interaction::{AccessPolicy, Actor, Interaction, RequestBuilder, TimeoutDefaults, UserAction};
use crate::protocol::ActionRequest;

const NOW: i64 = 1_767_225_600_000;

fn request(actions: Vec<ActionRequest>) -> Interaction {
    let request = RequestBuilder::start("k_1", actions, vec![], Some(300)).finish(TimeoutDefaults::default()).expect("request");
    Interaction::new("a1b2c3d4e5f6".into(), "s".into(), request, Some(Actor::new("matrix", "@ana:localhost", "ana")), NOW)
}

fn approval(name: &str, args: Value) -> Interaction {
    request(vec![ActionRequest { name: name.into(), args, description: None, tool_use_id: None }])
}

fn question(args: Value) -> Interaction {
    request(vec![ActionRequest { name: "ask_user_question".into(), args, description: None, tool_use_id: None }])
}

#[test]
fn an_approval_is_one_message_with_its_arguments_and_how_to_answer() {
    let i = approval("execute_trade", json!({"symbol": "VNM", "quantity": 100}));
    let card = card(&i, Locale::En, None);
    assert_eq!(card["msgtype"], "m.text");
    assert_eq!(card["format"], "org.matrix.custom.html");
    assert_eq!(card["m.mentions"], json!({}));
    assert_eq!(
        card["formatted_body"],
        "<h4>🔐 Approval needed</h4><p><b>For:</b> ana · ⏰ Answer by: 00:05 UTC</p><p><b>execute_trade</b></p>\
         <pre><code class=\"language-json\">{\n  &quot;symbol&quot;: &quot;VNM&quot;,\n  &quot;quantity&quot;: 100\n}</code></pre>\
         <p><i>React ✅ to approve or ❌ to reject, or reply: approve · reject REASON · edit {JSON} · comment TEXT (with several actions, put its number first: reject 2 REASON).</i></p>"
    );
    assert!(card["body"].as_str().unwrap().starts_with("🔐 Approval needed\nFor: ana · ⏰ Answer by: 00:05 UTC\nexecute_trade\n{"));
    assert_eq!(seeded_reactions(&i), [APPROVE, REJECT, EDIT, COMMENT]);
    assert_eq!(super::card(&i, Locale::En, None), card, "rendering is pure");
}

#[test]
fn the_outcome_replaces_the_instructions() {
    let mut i = approval("deploy", json!({}));
    let ana = Actor::new("matrix", "@ana:localhost", "ana");
    i.apply(&ana, UserAction::Decide { action: 0, decision: Decision::Approve }, &AccessPolicy::default(), NOW + 60_000).expect("applied");
    let card = card(&i, Locale::En, None);
    let body = card["body"].as_str().unwrap();
    assert!(body.ends_with("✅ Approved by ana at 00:01 UTC"), "{body}");
    assert!(!body.contains("React ✅"), "{body}");
    let edit = replacement("$card", &card);
    assert_eq!(edit["m.relates_to"], json!({"rel_type": "m.replace", "event_id": "$card"}));
    assert_eq!(edit["m.new_content"], card);
    assert!(edit["body"].as_str().unwrap().starts_with("* 🔐"));
}

#[test]
fn agent_text_cannot_mention_or_inject_markup() {
    let mut i = approval("<b>x</b>", json!({"cmd": "@room <script>"}));
    i.request.context = Some("@room see <a href='https://evil'>this</a>".into());
    let card = card(&i, Locale::En, None);
    let html_body = card["formatted_body"].as_str().unwrap();
    let body = card["body"].as_str().unwrap();
    for bad in ["<b>x", "<script>", "<a href", "@room"] {
        assert!(!html_body.contains(bad), "{bad} in {html_body}");
    }
    assert!(!body.contains("@room"), "{body}");
}

#[test]
fn long_arguments_are_cut_with_a_note() {
    let i = approval("write", json!({"text": "x".repeat(20_000)}));
    let card = card(&i, Locale::En, None);
    let body = card["body"].as_str().unwrap();
    assert!(body.len() < 10_000 && body.contains("The arguments are cut"), "{}", body.len());
    assert!(card.to_string().len() < 20_000);
}

#[test]
fn reactions_map_to_the_buttons_they_stand_for() {
    let i = approval("deploy", json!({}));
    assert_eq!(reaction_action(&i, "✅"), Reacted::Act(UserAction::Decide { action: 0, decision: Decision::Approve }));
    assert_eq!(reaction_action(&i, "❌"), Reacted::Act(UserAction::Decide { action: 0, decision: Decision::Reject { message: None } }));
    assert_eq!(reaction_action(&i, "✏"), Reacted::Explain(XMsg::HowToEdit), "without its variation selector");
    assert_eq!(reaction_action(&i, "✏️"), Reacted::Explain(XMsg::HowToEdit));
    assert_eq!(reaction_action(&i, "👍"), Reacted::Unknown);
    let two = request(vec![
        ActionRequest { name: "a".into(), args: json!({}), description: None, tool_use_id: None },
        ActionRequest { name: "b".into(), args: json!({}), description: None, tool_use_id: None },
    ]);
    assert_eq!(reaction_action(&two, "✅"), Reacted::Act(UserAction::DecideAll { decision: DecisionType::Approve }));
    assert_eq!(reaction_action(&two, "📨"), Reacted::Act(UserAction::Submit));
    assert_eq!(seeded_reactions(&two), [APPROVE, REJECT, COMMENT, SUBMIT]);
}

#[test]
fn each_question_is_a_poll_and_multi_select_allows_every_option() {
    let i = question(json!({"questions": [
        {"question": "Which env?", "options": [{"label": "staging"}, {"label": "prod", "description": "careful"}]},
        {"question": "Which checks?", "multiSelect": true, "options": [{"label": "lint"}, {"label": "test"}, {"label": "e2e"}]}
    ]}));
    let first = poll(&i, 0, Locale::En).unwrap();
    assert_eq!(
        first["org.matrix.msc3381.poll.start"],
        json!({
            "question": {"org.matrix.msc1767.text": "1. Which env?"},
            "kind": "org.matrix.msc3381.poll.disclosed",
            "max_selections": 1,
            "answers": [{"id": "o0", "org.matrix.msc1767.text": "staging"}, {"id": "o1", "org.matrix.msc1767.text": "prod — careful"}],
        })
    );
    assert_eq!(first["org.matrix.msc1767.text"], "1. Which env?\n1. staging\n2. prod — careful");
    assert_eq!(poll(&i, 1, Locale::En).unwrap()["org.matrix.msc3381.poll.start"]["max_selections"], 3);
    assert_eq!(poll(&i, 2, Locale::En), None);
    assert_eq!(reaction_action(&i, "✅"), Reacted::Act(UserAction::Submit));
    assert_eq!(options_of(&["o1".into(), "x".into(), "o0".into()]), [1, 0]);
    let end = poll_end("$poll", "✅ Answered");
    assert_eq!(end["m.relates_to"], json!({"rel_type": "m.reference", "event_id": "$poll"}));
}
