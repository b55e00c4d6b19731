//! Slack questions end to end: `ask_user_question` requests pushed over the HTTP API to
//! a real bridge, shown on a fake Slack (tests/support/fake_slack.rs) as one card,
//! answered there over Socket Mode (option buttons, select menus, checkbox groups,
//! the Other… modal, Skip, Submit), and read back by `GET /v1/requests/{key}`: the
//! exact answers the agent gets, the same as Telegram's for the same request
//! (tests/http_api.rs, `questions_answered_on_telegram_with_selected_options`).

mod support;

use std::time::Duration;

use axum::http::StatusCode;
use hitl_bridge::config::Settings;
use serde_json::{Value, json};
use support::fake_slack::{self, FakeSlack, OPS, Person, accessory, accessory_problem, button, has_buttons, options_labelled};
use support::{Chat, Harness, wait_until};

const SECRET: &str = "ci-secret";

fn ana() -> Person {
    Person::new("U0ANA", "ana")
}

fn mallory() -> Person {
    Person::new("U0MAL", "mallory")
}

/// A bridge with Slack on the fake and the HTTP API on a free port (tests/slack.rs's
/// rig, for questions).
struct Rig {
    harness: Harness,
    fake: FakeSlack,
    base: String,
    http: reqwest::Client,
}

impl Rig {
    async fn start() -> Rig {
        let fake = FakeSlack::start().await;
        let pairs = [
            ("slack.enabled", "true".to_owned()),
            ("slack.bot_token", fake_slack::BOT_TOKEN.to_owned()),
            ("slack.app_token", fake_slack::APP_TOKEN.to_owned()),
            ("slack.api_url", fake.api_url()),
            ("tokens.secret", "test-secret".to_owned()),
            ("timeouts.grace_secs", "0".to_owned()),
        ];
        let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut harness =
            Harness::on(Chat::Headless).no_agent().settings(&borrowed).tweak(|s: &mut Settings| s.http.api_tokens = vec![format!("ci:{SECRET}")]).build().await;
        harness.boot().await;
        fake.wait_connections(1).await;
        let base = format!("http://{}", harness.app().http_addr().expect("http listener"));
        Rig { harness, fake, base, http: reqwest::Client::new() }
    }

    async fn send(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> (StatusCode, Value) {
        let mut request = self.http.request(method, format!("{}{path}", self.base)).bearer_auth(SECRET);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.expect("request");
        let status = StatusCode::from_u16(response.status().as_u16()).expect("status");
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// Pushes questions to the ops channel, Ana their approver; the card's `ts`.
    async fn ask(&self, key: &str, questions: Value) -> String {
        let before = self.fake.posted().len();
        let body = json!({"approval_key": key, "targets": [{"platform": "slack", "channel_id": OPS}], "approvers": ["slack:U0ANA"], "questions": questions});
        let (status, created) = self.send(reqwest::Method::POST, "/v1/requests", Some(&body)).await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        wait_until(|| async { self.fake.posted().get(before).map(|(_, ts)| ts.clone()) }).await
    }

    async fn state(&self, key: &str) -> Value {
        let (status, body) = self.send(reqwest::Method::GET, &format!("/v1/requests/{key}"), None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }

    async fn decided(&self, key: &str) -> Value {
        wait_until(|| async {
            let (_, body) = self.send(reqwest::Method::GET, &format!("/v1/requests/{key}?wait=5"), None).await;
            (body["status"] != "pending").then_some(body)
        })
        .await
    }

    /// The card once an edit of it contains `needle`.
    async fn shows(&self, ts: &str, needle: &str) -> Value {
        wait_until(|| async { self.fake.message(OPS, ts).filter(|m| m.to_string().contains(needle)) }).await
    }

    async fn ephemeral_to(&self, user: &str, skip: usize) -> Value {
        wait_until(|| async { self.fake.bodies("chat.postEphemeral").into_iter().filter(|b| b["user"] == user).nth(skip) }).await
    }

    /// Chooses `labels` in the select menu or checkbox group of question `n`, as `who`.
    fn choose(&self, who: &Person, ts: &str, n: usize, labels: &[&str]) {
        let card = self.fake.message(OPS, ts).expect("the card");
        let element = accessory(&card, &format!("question.{n}"));
        let chosen = options_labelled(&element, labels);
        self.fake.push(self.fake.choice_envelope(who, OPS, ts, &element, &chosen));
    }

    /// Opens question `n`'s Other… modal (its button's label contains `label`), types
    /// `text` and submits it; the acknowledgement Slack got.
    async fn type_answer(&self, ts: &str, label: &str, text: &str) -> Value {
        let opened = self.fake.views().len();
        self.fake.click(&ana(), OPS, ts, label);
        let view = wait_until(|| async { self.fake.views().get(opened).cloned() }).await;
        let submit = self.fake.submission_envelope(&ana(), &view, &[("answer", "text", text)]);
        let id = submit["envelope_id"].as_str().unwrap().to_owned();
        self.fake.push(submit);
        self.fake.wait_ack(&id).await
    }

    async fn stop(mut self) {
        self.harness.stop_bridge().await;
        // Slack must never have refused anything the bridge sent, menus included.
        assert!(self.fake.errors().is_empty(), "Slack would have refused: {:?}", self.fake.errors());
        for body in self.fake.bodies("chat.postMessage").into_iter().chain(self.fake.bodies("chat.update")) {
            assert_eq!(accessory_problem(&body), None, "{body}");
        }
        self.fake.shutdown();
        self.harness.shutdown().await;
    }
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
    let rig = Rig::start().await;
    let ts = rig.ask("db-1", json!([{"question": "Which DB? <!here>", "header": "Database", "options": [{"label": "Postgres"}, {"label": "SQLite"}]}])).await;
    let posted = rig.fake.bodies("chat.postMessage").remove(0);
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
    rig.fake.click(&ana(), OPS, &ts, "Postgres");
    let drafted = rig.shows(&ts, "→ Postgres").await;
    assert_eq!(button(&drafted, "Postgres")["text"]["text"], "✓ Postgres");
    assert_eq!(rig.state("db-1").await["status"], "pending", "nothing is sent before Submit");
    rig.fake.click(&ana(), OPS, &ts, "Submit");
    let state = rig.decided("db-1").await;
    assert_eq!(serde_json::to_string(&state["reply"]).unwrap(), r#"{"answers":{"Which DB? <!here>":"Postgres"},"selected_options":[["Postgres"]]}"#);
    assert_eq!(state["decided_by"], json!({"platform": "slack", "id": "U0ANA", "name": "ana"}));
    let closed = rig.shows(&ts, "Sent by ana").await;
    assert!(!has_buttons(&closed), "the buttons are gone: {closed}");
    let blocks = closed["blocks"].as_array().unwrap();
    assert_eq!(blocks[2]["text"]["text"], "*[1/1] Database*\n*Which DB? &lt;!here&gt;*\n→ Postgres");
    let outcome = blocks.last().unwrap()["text"]["text"].as_str().unwrap();
    assert!(outcome.starts_with("*✅ Sent by ana at ") && outcome.ends_with(" UTC*"), "{outcome}");
    rig.stop().await;
}

/// Telegram's request (tests/http_api.rs): checkboxes ticked one by one, the `input`
/// option typed in its modal (empty text refused in the modal, then accepted), an
/// option button, a skipped question, Submit: the answers are byte for byte
/// Telegram's.
#[tokio::test]
async fn answers_are_the_same_as_on_telegram() {
    let rig = Rig::start().await;
    let ts = rig
        .ask(
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
    let boxes = accessory(&rig.fake.message(OPS, &ts).unwrap(), "question.0");
    assert_eq!(boxes["type"], "checkboxes");
    assert_eq!(boxes["options"].as_array().unwrap().len(), 2, "the input option is its own button");
    rig.choose(&ana(), &ts, 0, &["US"]);
    rig.shows(&ts, "→ US").await;
    // A checkbox group sends its whole selection.
    rig.choose(&ana(), &ts, 0, &["EU", "US"]);
    let ticked = rig.shows(&ts, "→ EU, US").await;
    assert_eq!(accessory(&ticked, "question.0")["initial_options"].as_array().unwrap().len(), 2);
    let refused = rig.type_answer(&ts, "Other region", "   ").await;
    assert_eq!(refused["payload"]["response_action"], "errors");
    assert_eq!(refused["payload"]["errors"], json!({"answer": hitl_bridge::interaction::Refusal::EmptyText.to_string()}));
    assert!(!rig.fake.message(OPS, &ts).unwrap().to_string().contains("Other region:"), "nothing typed is kept");
    let view = rig.fake.views().remove(0);
    assert_eq!(view["title"]["text"], "Your answer");
    assert_eq!(view["blocks"][1]["label"]["text"], "Other region");
    let accepted = rig.type_answer(&ts, "Other region", "APAC").await;
    assert_eq!(accepted.get("payload"), None, "the modal closes: {accepted}");
    let typed = rig.shows(&ts, "→ EU, US, APAC").await;
    // The chosen input option is listed, ticked with what was typed, so it can be unticked.
    let boxes = accessory(&typed, "question.0");
    let labels: Vec<&str> = boxes["initial_options"].as_array().unwrap().iter().map(|o| o["text"]["text"].as_str().unwrap()).collect();
    assert_eq!(labels, ["EU", "US", "Other region: APAC"]);
    rig.fake.click(&ana(), OPS, &ts, "Tonight");
    rig.shows(&ts, "→ Tonight (Recommended)").await;
    let card = rig.fake.message(OPS, &ts).unwrap();
    let skip = card["blocks"].as_array().unwrap().iter().find(|b| b["block_id"] == "answer.2").unwrap()["elements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["action_id"] == "hitl.sk.2")
        .cloned()
        .unwrap();
    rig.fake.push(rig.fake.click_envelope(&ana(), OPS, &ts, "hitl.sk.2", skip["value"].as_str().unwrap()));
    rig.shows(&ts, "→ [No preference]").await;
    rig.fake.click(&ana(), OPS, &ts, "Submit");
    let state = rig.decided("q-1").await;
    let expected = json!({
        "answers": {"Which regions?": "EU, US, APAC", "Window?": "Tonight (Recommended)", "Notify whom?": "[No preference]"},
        "selected_options": [["EU", "US", "APAC"], ["Tonight (Recommended)"], []]
    });
    assert_eq!(state["reply"], expected);
    assert_eq!(
        serde_json::to_string(&state["reply"]["answers"]).unwrap(),
        r#"{"Which regions?":"EU, US, APAC","Window?":"Tonight (Recommended)","Notify whom?":"[No preference]"}"#
    );
    rig.stop().await;
}

/// Four questions on one card, each answered its own way (a select menu past five
/// options, a multi-select menu past ten, buttons, checkboxes), then one Submit.
#[tokio::test]
async fn four_questions_are_answered_on_one_card_then_submitted() {
    let rig = Rig::start().await;
    let labels = |n: usize, prefix: &str| json!((1..=n).map(|i| json!({"label": format!("{prefix} {i}")})).collect::<Vec<_>>());
    let ts = rig
        .ask(
            "four-1",
            json!([
                {"question": "Which host?", "options": labels(7, "host"), "allow_freeform": false},
                {"question": "Which services?", "multiSelect": true, "options": labels(12, "svc"), "allow_freeform": false},
                {"question": "Restart?", "options": [{"label": "Yes"}, {"label": "No"}]},
                {"question": "Which checks?", "multiSelect": true, "options": labels(3, "check")}
            ]),
        )
        .await;
    let card = rig.fake.message(OPS, &ts).unwrap();
    assert_eq!(accessory(&card, "question.0")["type"], "static_select");
    assert_eq!(accessory(&card, "question.1")["type"], "multi_static_select");
    assert_eq!(accessory(&card, "question.3")["type"], "checkboxes");
    rig.choose(&ana(), &ts, 0, &["host 6"]);
    rig.shows(&ts, "→ host 6").await;
    rig.choose(&ana(), &ts, 1, &["svc 12", "svc 2"]);
    rig.shows(&ts, "→ svc 2, svc 12").await;
    rig.fake.click(&ana(), OPS, &ts, "No");
    rig.shows(&ts, "→ No").await;
    rig.choose(&ana(), &ts, 3, &["check 3"]);
    let drafted = rig.shows(&ts, "→ check 3").await;
    assert_eq!(accessory(&drafted, "question.0")["initial_option"]["text"]["text"], "host 6");
    assert_eq!(rig.state("four-1").await["status"], "pending");
    rig.fake.click(&ana(), OPS, &ts, "Submit");
    let state = rig.decided("four-1").await;
    assert_eq!(
        serde_json::to_string(&state["reply"]["answers"]).unwrap(),
        r#"{"Which host?":"host 6","Which services?":"svc 2, svc 12","Restart?":"No","Which checks?":"check 3"}"#
    );
    rig.stop().await;
}

/// A stranger's choice is refused with an ephemeral notice; an option value signed for
/// another question, or by another secret, changes nothing.
#[tokio::test]
async fn a_strangers_choice_and_forged_values_change_nothing() {
    let rig = Rig::start().await;
    let ts = rig
        .ask(
            "forge-1",
            json!([
                {"question": "Which checks?", "multiSelect": true, "options": [{"label": "lint"}, {"label": "test"}]},
                {"question": "Which host?", "multiSelect": true, "options": [{"label": "a"}, {"label": "b"}]}
            ]),
        )
        .await;
    rig.choose(&mallory(), &ts, 0, &["lint"]);
    assert_eq!(rig.ephemeral_to("U0MAL", 0).await, json!({"channel": OPS, "user": "U0MAL", "text": "You are not allowed to answer this request."}));
    // Nor does their Other… open a form.
    rig.fake.click(&mallory(), OPS, &ts, "Other");
    rig.ephemeral_to("U0MAL", 1).await;
    assert!(rig.fake.views().is_empty());
    // Both are audited as what they tried.
    let store = hitl_bridge::store::Store::connect(&rig.harness.settings.store.url).await.unwrap();
    let refused = wait_until(|| async { store.refused_attempts(0).await.ok().filter(|r| r.len() >= 2) }).await;
    let tried: Vec<Value> = refused.iter().map(|e| e.reply.clone().unwrap()["attempted"].clone()).collect();
    assert_eq!(tried, [json!({"op": "select", "question": 0, "options": [0]}), json!({"open": "text", "index": 0})]);
    assert!(refused.iter().all(|e| json!(e.actor)["user_id"] == "U0MAL"));
    store.close().await;
    let card = rig.fake.message(OPS, &ts).unwrap();
    let first = accessory(&card, "question.0");
    let second = accessory(&card, "question.1");
    // Question 1's option sent through question 0's checkbox group.
    let crossed = options_labelled(&second, &["b"]);
    rig.fake.push(rig.fake.choice_envelope(&ana(), OPS, &ts, &first, &crossed));
    // An option under another secret.
    let id = first["action_id"].as_str().unwrap().split(':').nth(1).unwrap().to_owned();
    let foreign = hitl_bridge::platform::token::TokenSigner::new(b"other").sign(&id, "op.0.1").unwrap();
    let mut fake_option = options_labelled(&first, &["test"]).remove(0);
    fake_option["value"] = json!(foreign);
    rig.fake.push(rig.fake.choice_envelope(&ana(), OPS, &ts, &first, &[fake_option]));
    // A select menu whose action_id was tampered with.
    let mut tampered = first.clone();
    tampered["action_id"] = json!(first["action_id"].as_str().unwrap().replace(":ch.0:", ":ch.1:"));
    rig.fake.push(rig.fake.choice_envelope(&ana(), OPS, &ts, &tampered, &options_labelled(&first, &["lint"])));
    for n in 0..3 {
        assert_eq!(rig.ephemeral_to("U0ANA", n).await["text"], "This button is not valid (unknown, outdated or forged).");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(rig.fake.bodies("chat.update").is_empty(), "the card is not touched");
    // Ana's own choice still works, and unticking the last box empties the answer.
    rig.choose(&ana(), &ts, 0, &["test"]);
    rig.shows(&ts, "→ test").await;
    rig.choose(&ana(), &ts, 0, &[]);
    wait_until(|| async { rig.fake.message(OPS, &ts).filter(|m| !m.to_string().contains("→ test")) }).await;
    rig.fake.click(&ana(), OPS, &ts, "Submit");
    assert_eq!(rig.decided("forge-1").await["reply"]["answers"], json!({"Which checks?": "[No preference]", "Which host?": "[No preference]"}));
    rig.stop().await;
}

/// Seed 000's second question: a single answer whose `input` option ("Khác") is typed
/// in its modal; the typed text is the answer, as on Telegram.
#[tokio::test]
async fn an_input_option_is_typed_in_its_modal() {
    let rig = Rig::start().await;
    let ts = rig
        .ask(
            "term-1",
            json!([{"question": "Thời gian nắm giữ dự kiến?", "header": "Kỳ hạn đầu tư",
                    "options": [{"label": "Dài hạn"}, {"label": "Khác", "description": "Nhập giá trị tùy chỉnh", "input": true}]}]),
        )
        .await;
    let card = rig.fake.message(OPS, &ts).unwrap();
    assert_eq!(card["blocks"][2]["text"]["text"], "*[1/1] Kỳ hạn đầu tư*\n*Thời gian nắm giữ dự kiến?*\n• Khác — _Nhập giá trị tùy chỉnh_");
    rig.fake.click(&ana(), OPS, &ts, "Dài hạn");
    rig.shows(&ts, "→ Dài hạn").await;
    assert_eq!(rig.type_answer(&ts, "Khác", "Ngắn hạn").await.get("payload"), None);
    let typed = rig.shows(&ts, "→ Ngắn hạn").await;
    assert_eq!(button(&typed, "Khác")["text"]["text"], "✓ ✏️ Khác…");
    assert_eq!(button(&typed, "Dài hạn")["text"]["text"], "Dài hạn", "one answer: the typed text replaced the option");
    rig.fake.click(&ana(), OPS, &ts, "Submit");
    let state = rig.decided("term-1").await;
    assert_eq!(serde_json::to_string(&state["reply"]["answers"]).unwrap(), r#"{"Thời gian nắm giữ dự kiến?":"Ngắn hạn"}"#);
    rig.stop().await;
}
