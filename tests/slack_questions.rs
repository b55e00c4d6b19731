//! Slack questions end to end: `ask_user_question` requests pushed over the HTTP API to
//! a real bridge, shown on a fake Slack (tests/support/fake_slack.rs) as one card,
//! answered there over Socket Mode (option buttons, select menus, checkbox groups,
//! the Other… modal, Skip, Submit), and read back by `GET /v1/requests/{key}`: the
//! exact answers the agent gets, the same as Telegram's for the same request
//! (tests/http_api.rs, `questions_answered_on_telegram_with_selected_options`).

mod support;

use std::time::Duration;

use hitl_bridge::config::Settings;
use serde_json::{Value, json};
use support::fake_slack::{OPS, Person, accessory, accessory_problem, button, has_buttons, options_labelled};
use support::harness::HttpApi;
use support::slack_chat::{ephemeral_to, push_and_ack, view};
use support::{Chat, Harness, wait_until};

const SECRET: &str = "ci-secret";

fn ana() -> Person {
    Person::new("U0ANA", "ana")
}

fn mallory() -> Person {
    Person::new("U0MAL", "mallory")
}

/// A bridge with Slack on the fake and the HTTP API on a free port (tests/slack.rs's,
/// for questions).
async fn start() -> Harness {
    Harness::on(Chat::Slack).no_agent().set("timeouts.grace_secs", "0").tweak(|s: &mut Settings| s.http.api_tokens = vec![format!("ci:{SECRET}")]).start().await
}

/// The HTTP API, as the agent pushing requests.
fn api(rig: &Harness) -> HttpApi {
    rig.api(SECRET)
}

/// Pushes questions to the ops channel, Ana their approver; the card's `ts`.
async fn ask(rig: &Harness, key: &str, questions: Value) -> String {
    let before = rig.slack().posted().len();
    api(rig)
        .push(&json!({"approval_key": key, "targets": [{"platform": "slack", "channel_id": OPS}], "approvers": ["slack:U0ANA"], "questions": questions}))
        .await;
    wait_until(|| async { rig.slack().posted().get(before).map(|(_, ts)| ts.clone()) }).await
}

/// The card once an edit of it contains `needle`.
async fn shows(rig: &Harness, ts: &str, needle: &str) -> Value {
    wait_until(|| async { rig.slack().message(OPS, ts).filter(|m| m.to_string().contains(needle)) }).await
}

/// Chooses `labels` in the select menu or checkbox group of question `n`, as `who`.
fn choose(rig: &Harness, who: &Person, ts: &str, n: usize, labels: &[&str]) {
    let fake = rig.slack();
    let card = fake.message(OPS, ts).expect("the card");
    let element = accessory(&card, &format!("question.{n}"));
    let chosen = options_labelled(&element, labels);
    fake.push(fake.choice_envelope(who, OPS, ts, &element, &chosen));
}

/// Opens question `n`'s Other… modal (its button's label contains `label`), types
/// `text` and submits it; the acknowledgement Slack got.
async fn type_answer(rig: &Harness, ts: &str, label: &str, text: &str) -> Value {
    let fake = rig.slack();
    let opened = fake.views().len();
    fake.click(&ana(), OPS, ts, label);
    let view = view(fake, opened).await;
    push_and_ack(fake, fake.submission_envelope(&ana(), &view, &[("answer", "text", text)])).await
}

/// Stops the bridge, checks Slack refused nothing it sent, menus included, and stops
/// the rest.
async fn stop(mut rig: Harness) {
    rig.stop_bridge().await;
    let fake = rig.slack();
    assert!(fake.errors().is_empty(), "Slack would have refused: {:?}", fake.errors());
    for body in fake.bodies("chat.postMessage").into_iter().chain(fake.bodies("chat.update")) {
        assert_eq!(accessory_problem(&body), None, "{body}");
    }
    rig.shutdown().await;
}

/// A card with each signed value's interaction id and tag masked, and the deadline.
fn masked(body: &Value) -> Value {
    let mut body = body.clone();
    for block in body["blocks"].as_array_mut().into_iter().flatten() {
        for element in block.get_mut("elements").and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(value) = element["value"].as_str() {
                let parts: Vec<&str> = value.split(':').collect();
                element["value"] = json!(format!("{}:[id]:{}:[tag]", parts[0], parts[2]));
            }
            if let Some(text) = element["text"].as_str().filter(|t| t.contains("<!date^")) {
                let (lead, _) = text.split_once("<!date^").unwrap();
                element["text"] = json!(format!("{lead}<!date^[deadline]>"));
            }
        }
    }
    body
}

/// One single-select question answered by a button, then Submit: the exact card, the
/// draft shown after the click, the exact answers, and the card closed with the outcome.
#[tokio::test]
async fn a_single_select_question_is_answered_by_a_button() {
    let rig = start().await;
    let ts = ask(&rig, "db-1", json!([{"question": "Which DB? <!here>", "header": "Database", "options": [{"label": "Postgres"}, {"label": "SQLite"}]}])).await;
    let posted = rig.slack().bodies("chat.postMessage").remove(0);
    let expected = |code: &str, text: &str| json!({"type": "button", "action_id": format!("hitl.{code}"), "text": {"type": "plain_text", "text": text, "emoji": true}, "value": format!("1:[id]:{code}:[tag]")});
    let mut submit = expected("sub", "📨 Submit");
    submit["style"] = json!("primary");
    assert_eq!(
        masked(&posted),
        json!({
            "channel": OPS,
            "text": "❓ The agent asks: Which DB? &lt;!here&gt;",
            "blocks": [
                {"type": "header", "block_id": "title", "text": {"type": "plain_text", "text": "❓ The agent asks", "emoji": true}},
                {"type": "context", "block_id": "meta", "elements": [
                    {"type": "mrkdwn", "text": "*Agent:* ci"},
                    {"type": "mrkdwn", "text": "⏰ *Answer by:* <!date^[deadline]>"}
                ]},
                {"type": "section", "block_id": "question.0", "text": {"type": "mrkdwn", "text": "*[1/1] Database*\n*Which DB? &lt;!here&gt;*"}},
                {"type": "actions", "block_id": "answer.0", "elements": [
                    expected("op.0.0", "Postgres"), expected("op.0.1", "SQLite"), expected("ot.0", "✏️ Other…"), expected("sk.0", "⏭ Skip")
                ]},
                {"type": "actions", "block_id": "submit", "elements": [submit]}
            ]
        })
    );
    rig.slack().click(&ana(), OPS, &ts, "Postgres");
    let drafted = shows(&rig, &ts, "→ Postgres").await;
    assert_eq!(button(&drafted, "Postgres")["text"]["text"], "✓ Postgres");
    assert_eq!(api(&rig).state("db-1").await["status"], "pending", "nothing is sent before Submit");
    rig.slack().click(&ana(), OPS, &ts, "Submit");
    let state = api(&rig).decided("db-1").await;
    assert_eq!(serde_json::to_string(&state["reply"]).unwrap(), r#"{"answers":{"Which DB? <!here>":"Postgres"},"selected_options":[["Postgres"]]}"#);
    assert_eq!(state["decided_by"], json!({"platform": "slack", "id": "U0ANA", "name": "ana"}));
    let closed = shows(&rig, &ts, "Sent by ana").await;
    assert!(!has_buttons(&closed), "the buttons are gone: {closed}");
    let blocks = closed["blocks"].as_array().unwrap();
    assert_eq!(blocks[2]["text"]["text"], "*[1/1] Database*\n*Which DB? &lt;!here&gt;*\n→ Postgres");
    let outcome = blocks.last().unwrap()["text"]["text"].as_str().unwrap();
    assert!(outcome.starts_with("*✅ Sent by ana at ") && outcome.ends_with(" UTC*"), "{outcome}");
    stop(rig).await;
}

/// Telegram's request (tests/http_api.rs): checkboxes ticked one by one, the `input`
/// option typed in its modal (empty text refused in the modal, then accepted), an
/// option button, a skipped question, Submit: the answers are byte for byte
/// Telegram's.
#[tokio::test]
async fn answers_are_the_same_as_on_telegram() {
    let rig = start().await;
    let ts = ask(
        &rig,
        "q-1",
        json!([
            {"question": "Which regions?", "header": "Regions", "multiSelect": true,
             "options": [{"label": "EU"}, {"label": "US"}, {"label": "Other region", "input": true}]},
            {"question": "Window?", "header": "Window", "multi_select": false,
             "options": [{"label": "Tonight (Recommended)"}, {"label": "Weekend"}]},
            {"question": "Notify whom?", "options": [{"label": "Nobody"}]}
        ]),
    )
    .await;
    let boxes = accessory(&rig.slack().message(OPS, &ts).unwrap(), "question.0");
    assert_eq!(boxes["type"], "checkboxes");
    assert_eq!(boxes["options"].as_array().unwrap().len(), 2, "the input option is its own button");
    choose(&rig, &ana(), &ts, 0, &["US"]);
    shows(&rig, &ts, "→ US").await;
    // A checkbox group sends its whole selection.
    choose(&rig, &ana(), &ts, 0, &["EU", "US"]);
    let ticked = shows(&rig, &ts, "→ EU, US").await;
    assert_eq!(accessory(&ticked, "question.0")["initial_options"].as_array().unwrap().len(), 2);
    let refused = type_answer(&rig, &ts, "Other region", "   ").await;
    assert_eq!(refused["payload"]["response_action"], "errors");
    assert_eq!(refused["payload"]["errors"], json!({"answer": hitl_bridge::interaction::Refusal::EmptyText.to_string()}));
    assert!(!rig.slack().message(OPS, &ts).unwrap().to_string().contains("Other region:"), "nothing typed is kept");
    let view = rig.slack().views().remove(0);
    assert_eq!(view["title"]["text"], "Your answer");
    assert_eq!(view["blocks"][1]["label"]["text"], "Other region");
    let accepted = type_answer(&rig, &ts, "Other region", "APAC").await;
    assert_eq!(accepted.get("payload"), None, "the modal closes: {accepted}");
    let typed = shows(&rig, &ts, "→ EU, US, APAC").await;
    // The chosen input option is listed, ticked with what was typed, so it can be unticked.
    let boxes = accessory(&typed, "question.0");
    let labels: Vec<&str> = boxes["initial_options"].as_array().unwrap().iter().map(|o| o["text"]["text"].as_str().unwrap()).collect();
    assert_eq!(labels, ["EU", "US", "Other region: APAC"]);
    rig.slack().click(&ana(), OPS, &ts, "Tonight");
    shows(&rig, &ts, "→ Tonight (Recommended)").await;
    let card = rig.slack().message(OPS, &ts).unwrap();
    let skip = card["blocks"].as_array().unwrap().iter().find(|b| b["block_id"] == "answer.2").unwrap()["elements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["action_id"] == "hitl.sk.2")
        .cloned()
        .unwrap();
    rig.slack().push(rig.slack().click_envelope(&ana(), OPS, &ts, "hitl.sk.2", skip["value"].as_str().unwrap()));
    shows(&rig, &ts, "→ [No preference]").await;
    rig.slack().click(&ana(), OPS, &ts, "Submit");
    let state = api(&rig).decided("q-1").await;
    let expected = json!({
        "answers": {"Which regions?": "EU, US, APAC", "Window?": "Tonight (Recommended)", "Notify whom?": "[No preference]"},
        "selected_options": [["EU", "US", "APAC"], ["Tonight (Recommended)"], []]
    });
    assert_eq!(state["reply"], expected);
    assert_eq!(
        serde_json::to_string(&state["reply"]["answers"]).unwrap(),
        r#"{"Which regions?":"EU, US, APAC","Window?":"Tonight (Recommended)","Notify whom?":"[No preference]"}"#
    );
    stop(rig).await;
}

/// Four questions on one card, each answered its own way (a select menu past five
/// options, a multi-select menu past ten, buttons, checkboxes), then one Submit.
#[tokio::test]
async fn four_questions_are_answered_on_one_card_then_submitted() {
    let rig = start().await;
    let labels = |n: usize, prefix: &str| json!((1..=n).map(|i| json!({"label": format!("{prefix} {i}")})).collect::<Vec<_>>());
    let ts = ask(
        &rig,
        "four-1",
        json!([
            {"question": "Which host?", "options": labels(7, "host"), "allow_freeform": false},
            {"question": "Which services?", "multiSelect": true, "options": labels(12, "svc"), "allow_freeform": false},
            {"question": "Restart?", "options": [{"label": "Yes"}, {"label": "No"}]},
            {"question": "Which checks?", "multiSelect": true, "options": labels(3, "check")}
        ]),
    )
    .await;
    let card = rig.slack().message(OPS, &ts).unwrap();
    assert_eq!(accessory(&card, "question.0")["type"], "static_select");
    assert_eq!(accessory(&card, "question.1")["type"], "multi_static_select");
    assert_eq!(accessory(&card, "question.3")["type"], "checkboxes");
    choose(&rig, &ana(), &ts, 0, &["host 6"]);
    shows(&rig, &ts, "→ host 6").await;
    choose(&rig, &ana(), &ts, 1, &["svc 12", "svc 2"]);
    shows(&rig, &ts, "→ svc 2, svc 12").await;
    rig.slack().click(&ana(), OPS, &ts, "No");
    shows(&rig, &ts, "→ No").await;
    choose(&rig, &ana(), &ts, 3, &["check 3"]);
    let drafted = shows(&rig, &ts, "→ check 3").await;
    assert_eq!(accessory(&drafted, "question.0")["initial_option"]["text"]["text"], "host 6");
    assert_eq!(api(&rig).state("four-1").await["status"], "pending");
    rig.slack().click(&ana(), OPS, &ts, "Submit");
    let state = api(&rig).decided("four-1").await;
    assert_eq!(
        serde_json::to_string(&state["reply"]["answers"]).unwrap(),
        r#"{"Which host?":"host 6","Which services?":"svc 2, svc 12","Restart?":"No","Which checks?":"check 3"}"#
    );
    stop(rig).await;
}

/// A stranger's choice is refused with an ephemeral notice; an option value signed for
/// another question, or by another secret, changes nothing.
#[tokio::test]
async fn a_strangers_choice_and_forged_values_change_nothing() {
    let rig = start().await;
    let ts = ask(
        &rig,
        "forge-1",
        json!([
            {"question": "Which checks?", "multiSelect": true, "options": [{"label": "lint"}, {"label": "test"}]},
            {"question": "Which host?", "multiSelect": true, "options": [{"label": "a"}, {"label": "b"}]}
        ]),
    )
    .await;
    choose(&rig, &mallory(), &ts, 0, &["lint"]);
    assert_eq!(ephemeral_to(rig.slack(), "U0MAL", 0).await, json!({"channel": OPS, "user": "U0MAL", "text": "You are not allowed to answer this request."}));
    // Nor does their Other… open a form.
    rig.slack().click(&mallory(), OPS, &ts, "Other");
    ephemeral_to(rig.slack(), "U0MAL", 1).await;
    assert!(rig.slack().views().is_empty());
    // Both are audited as what they tried.
    let store = hitl_bridge::store::Store::connect(&rig.settings.store.url).await.unwrap();
    let refused = wait_until(|| async { store.refused_attempts(0).await.ok().filter(|r| r.len() >= 2) }).await;
    let tried: Vec<Value> = refused.iter().map(|e| e.reply.clone().unwrap()["attempted"].clone()).collect();
    assert_eq!(tried, [json!({"op": "select", "question": 0, "options": [0]}), json!({"open": "text", "index": 0})]);
    assert!(refused.iter().all(|e| json!(e.actor)["user_id"] == "U0MAL"));
    store.close().await;
    let card = rig.slack().message(OPS, &ts).unwrap();
    let first = accessory(&card, "question.0");
    let second = accessory(&card, "question.1");
    // Question 1's option sent through question 0's checkbox group.
    let crossed = options_labelled(&second, &["b"]);
    rig.slack().push(rig.slack().choice_envelope(&ana(), OPS, &ts, &first, &crossed));
    // An option under another secret.
    let id = first["action_id"].as_str().unwrap().split(':').nth(1).unwrap().to_owned();
    let foreign = hitl_bridge::platform::kit::token::TokenSigner::new(b"other").sign(&id, "op.0.1").unwrap();
    let mut fake_option = options_labelled(&first, &["test"]).remove(0);
    fake_option["value"] = json!(foreign);
    rig.slack().push(rig.slack().choice_envelope(&ana(), OPS, &ts, &first, &[fake_option]));
    // A select menu whose action_id was tampered with.
    let mut tampered = first.clone();
    tampered["action_id"] = json!(first["action_id"].as_str().unwrap().replace(":ch.0:", ":ch.1:"));
    rig.slack().push(rig.slack().choice_envelope(&ana(), OPS, &ts, &tampered, &options_labelled(&first, &["lint"])));
    for n in 0..3 {
        assert_eq!(ephemeral_to(rig.slack(), "U0ANA", n).await["text"], "This button is not valid (unknown, outdated or forged).");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(rig.slack().bodies("chat.update").is_empty(), "the card is not touched");
    // Ana's own choice still works, and unticking the last box empties the answer.
    choose(&rig, &ana(), &ts, 0, &["test"]);
    shows(&rig, &ts, "→ test").await;
    choose(&rig, &ana(), &ts, 0, &[]);
    wait_until(|| async { rig.slack().message(OPS, &ts).filter(|m| !m.to_string().contains("→ test")) }).await;
    rig.slack().click(&ana(), OPS, &ts, "Submit");
    assert_eq!(api(&rig).decided("forge-1").await["reply"]["answers"], json!({"Which checks?": "[No preference]", "Which host?": "[No preference]"}));
    stop(rig).await;
}

/// Seed 000's second question: a single answer whose `input` option ("Khác") is typed
/// in its modal; the typed text is the answer, as on Telegram.
#[tokio::test]
async fn an_input_option_is_typed_in_its_modal() {
    let rig = start().await;
    let ts = ask(
        &rig,
        "term-1",
        json!([{"question": "Thời gian nắm giữ dự kiến?", "header": "Kỳ hạn đầu tư",
                    "options": [{"label": "Dài hạn"}, {"label": "Khác", "description": "Nhập giá trị tùy chỉnh", "input": true}]}]),
    )
    .await;
    let card = rig.slack().message(OPS, &ts).unwrap();
    assert_eq!(card["blocks"][2]["text"]["text"], "*[1/1] Kỳ hạn đầu tư*\n*Thời gian nắm giữ dự kiến?*\n• Khác — _Nhập giá trị tùy chỉnh_");
    rig.slack().click(&ana(), OPS, &ts, "Dài hạn");
    shows(&rig, &ts, "→ Dài hạn").await;
    assert_eq!(type_answer(&rig, &ts, "Khác", "Ngắn hạn").await.get("payload"), None);
    let typed = shows(&rig, &ts, "→ Ngắn hạn").await;
    assert_eq!(button(&typed, "Khác")["text"]["text"], "✓ ✏️ Khác…");
    assert_eq!(button(&typed, "Dài hạn")["text"]["text"], "Dài hạn", "one answer: the typed text replaced the option");
    rig.slack().click(&ana(), OPS, &ts, "Submit");
    let state = api(&rig).decided("term-1").await;
    assert_eq!(serde_json::to_string(&state["reply"]["answers"]).unwrap(), r#"{"Thời gian nắm giữ dự kiến?":"Ngắn hạn"}"#);
    stop(rig).await;
}
