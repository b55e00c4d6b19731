//! Mattermost end to end: a real bridge on the fake Mattermost (REST v4) shows pushed
//! requests as interactive message attachments, and takes the clicks and dialog
//! submissions the Mattermost server posts to its integration endpoint. Each test
//! asserts what crosses a boundary: the exact post Mattermost is sent, the exact
//! response a click gets, the exact reply the agent reads (`GET /v1/requests`).
//!
//! Mattermost does not sign those posts, so the forgeries are tested here too: a
//! missing or altered code, another post, a stranger's id.

mod support;

use hitl_bridge::config::Settings;
use hitl_bridge::platform::mattermost::settings::MattermostSettings;
use hitl_bridge::store::Store;
use serde_json::{Value, json};
use support::fake_mattermost::{FakeMattermost, OPS, Person, TEAM};
use support::harness::NoConsole;
use support::{Chat, Harness, wait_until};

const API_SECRET: &str = "ci-secret";
const ANA: &str = "a0a00000000000000000000000";
const BO: &str = "b0b00000000000000000000000";
const MALLORY: &str = "m0a11000000000000000000000";
const ALREADY: &str = "Already decided by ana at ";

fn ana() -> Person {
    Person::new(ANA, "ana")
}

fn bo() -> Person {
    Person::new(BO, "bo")
}

fn mallory() -> Person {
    Person::new(MALLORY, "mallory")
}

/// A bridge on the fake Mattermost, the HTTP API on, Ana and Bo approvers.
async fn start(extra: &[(&str, &str)]) -> Harness {
    let rig =
        Harness::on(Chat::Mattermost).no_agent().settings(extra).tweak(|s: &mut Settings| s.http.api_tokens = vec![format!("ci:{API_SECRET}")]).start().await;
    for person in [ana(), bo(), mallory()] {
        rig.mattermost().user(&person);
    }
    rig
}

/// Pushes `body` (targets and approvers filled in when absent) and waits for its
/// card: the card's post id.
async fn push(rig: &Harness, key: &str, mut body: Value) -> String {
    let before = rig.mattermost().posts().len();
    body["approval_key"] = json!(key);
    if body.get("targets").is_none() {
        body["targets"] = json!([{"platform": "mattermost", "channel_id": OPS}]);
    }
    if body.get("approvers").is_none() {
        body["approvers"] = json!([format!("mattermost:{ANA}"), format!("mattermost:{BO}")]);
    }
    rig.api(API_SECRET).push(&body).await;
    let post = wait_until(|| async { rig.mattermost().posts().get(before).cloned() }).await;
    // The bridge remembers the post as its card right after Mattermost answers.
    let store = Store::connect(&rig.settings.store.url).await.unwrap();
    let cards = store.platform_state("mattermost");
    let key = format!("card:{post}");
    wait_until(|| async { cards.get(&key, hitl_bridge::clock::now_ms()).await.ok().flatten() }).await;
    store.close().await;
    post
}

fn trade() -> Value {
    json!({"timeout_seconds": 300, "actions": [{"name": "execute_trade", "args": {"symbol": "VNM", "quantity": 100}}]})
}

async fn state(rig: &Harness, key: &str) -> Value {
    rig.api(API_SECRET).state(key).await
}

/// The labels of every action on post `id`, in order.
fn labels(fake: &FakeMattermost, id: &str) -> Vec<String> {
    let post = fake.post(id).expect("the post");
    post["props"]["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|a| a["actions"].as_array().cloned().unwrap_or_default())
        .map(|a| a["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The text of attachment `n` of post `id`.
fn attachment_text(fake: &FakeMattermost, id: &str, n: usize) -> String {
    fake.post(id).expect("the post")["props"]["attachments"][n]["text"].as_str().unwrap_or_default().to_owned()
}

async fn stop(mut rig: Harness) {
    rig.stop_bridge().await;
    let errors = rig.mattermost().errors();
    assert!(errors.is_empty(), "Mattermost would have refused: {errors:?}");
    rig.shutdown().await;
}

#[tokio::test]
async fn a_refused_token_stops_the_start_and_names_the_setting() {
    let rig = Harness::on(Chat::Mattermost).no_agent().set("mattermost.bot_token", "zzzzzzzzzzzzzzzzzzzzzzzzzz").build().await;
    let error = match hitl_bridge::app::App::start(&rig.settings, None as NoConsole).await {
        Ok(_) => panic!("the bridge started with a token Mattermost refuses"),
        Err(e) => e.to_string(),
    };
    assert!(error.contains("Mattermost refused mattermost.bot_token (users/me: HTTP 401 api.context.session_expired.app_error)"), "{error}");
    rig.shutdown().await;
}

/// The card is attachments with a button per decision; Approve updates the post in
/// the click's response, every copy is edited, the agent reads one approve, and a
/// second click is told it is too late and sends nothing.
#[tokio::test]
async fn one_click_approves_updates_the_card_and_a_second_click_sends_nothing() {
    let rig = start(&[]).await;
    let fake = rig.mattermost();
    let post = push(&rig, "trade-1", trade()).await;
    let card = fake.post(&post).unwrap();
    assert_eq!((card["channel_id"].as_str(), card["message"].as_str()), (Some(OPS), Some("")));
    assert_eq!(card["props"]["attachments"][0]["title"], "🔐 Approval needed");
    assert!(attachment_text(fake, &post, 0).starts_with("**Agent:** ci · ⏰ **Answer by:** "), "{}", attachment_text(fake, &post, 0));
    assert_eq!(attachment_text(fake, &post, 1), "**execute\\_trade**\n```\n{\n  \"symbol\": \"VNM\",\n  \"quantity\": 100\n}\n```");
    assert_eq!(labels(fake, &post), ["✅ Approve", "✏️ Edit", "❌ Reject", "💬 Comment"]);

    let answer = fake.click(&ana(), &post, "✅ Approve").await;
    let update = &answer["update"];
    assert_eq!(update["message"], "");
    let outcome = update["props"]["attachments"].as_array().unwrap().last().unwrap()["text"].as_str().unwrap().to_owned();
    assert!(outcome.starts_with("**✅ Approved by ana at ") && outcome.ends_with(" UTC**"), "{outcome}");
    assert!(!update.to_string().contains("\"actions\""), "no button is left: {update}");

    let decided = rig.api(API_SECRET).decided("trade-1").await;
    assert_eq!(decided["reply"], json!({"decisions": [{"type": "approve"}]}));
    assert_eq!(decided["decided_by"], json!({"platform": "mattermost", "id": ANA, "name": "ana"}));
    // The engine edits every copy too (here, the one).
    wait_until(|| async { fake.calls().iter().any(|c| c.method == "PUT" && c.path == format!("/posts/{post}/patch")).then_some(()) }).await;
    assert!(labels(fake, &post).is_empty());

    // Bo clicks the Approve he still saw: told, and nothing else happens.
    let stale = json!({"id": "hitl1", "integration": card["props"]["attachments"][1]["actions"][0]["integration"].clone()});
    let body = fake.click_body(&bo(), &post, &stale);
    let (status, again) = fake.post_to(stale["integration"]["url"].as_str().unwrap(), &body).await;
    assert_eq!((status, again.get("update")), (200, None));
    assert!(again["ephemeral_text"].as_str().unwrap().starts_with(ALREADY), "{again}");
    assert_eq!(state(&rig, "trade-1").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    stop(rig).await;
}

/// Edit opens a dialog whose textarea holds the args as JSON; invalid JSON is answered
/// under the field and sends nothing; valid JSON sends the edit.
#[tokio::test]
async fn the_edit_dialog_refuses_invalid_json_then_sends_the_valid_edit() {
    let rig = start(&[]).await;
    let fake = rig.mattermost();
    let post = push(&rig, "trade-2", trade()).await;
    assert_eq!(fake.click(&ana(), &post, "✏️ Edit").await, json!({}));
    let opened = fake.dialogs().last().cloned().unwrap();
    assert_eq!(opened["url"].as_str().unwrap(), format!("{}/mattermost/dialogs", rig.settings.platforms.get::<MattermostSettings>().public()));
    let dialog = &opened["dialog"];
    assert_eq!((dialog["title"].as_str(), dialog["submit_label"].as_str()), (Some("Edit arguments"), Some("Submit")));
    assert_eq!(
        dialog["elements"],
        json!([{"display_name": "Arguments (JSON)", "name": "args", "type": "textarea", "optional": false, "max_length": 3000,
                "default": "{\n  \"symbol\": \"VNM\",\n  \"quantity\": 100\n}"}])
    );

    let refused = fake.submit_dialog(&ana(), json!({"args": "{\"symbol\": \"VNM\", \"quantity\": }"})).await;
    let error = refused["errors"]["args"].as_str().unwrap_or_else(|| panic!("{refused}"));
    assert!(error.contains("JSON"), "{error}");
    assert_eq!(state(&rig, "trade-2").await["status"], "pending");
    assert_eq!(labels(fake, &post).len(), 4, "the card keeps its buttons");

    assert_eq!(fake.submit_dialog(&ana(), json!({"args": "{\"symbol\": \"VNM\", \"quantity\": 50}"})).await, json!({}));
    let decided = rig.api(API_SECRET).decided("trade-2").await;
    assert_eq!(
        decided["reply"],
        json!({"decisions": [{"type": "edit", "edited_action": {"name": "execute_trade", "args": {"symbol": "VNM", "quantity": 50}}}]})
    );
    stop(rig).await;
}

/// Reject opens a dialog with an optional reason, which the reject carries.
#[tokio::test]
async fn reject_asks_for_a_reason_in_a_dialog() {
    let rig = start(&[]).await;
    let fake = rig.mattermost();
    let post = push(&rig, "trade-3", trade()).await;
    fake.click(&bo(), &post, "❌ Reject").await;
    let dialog = fake.dialogs().last().cloned().unwrap()["dialog"].clone();
    assert_eq!(
        (dialog["title"].as_str(), dialog["elements"][0]["name"].as_str(), dialog["elements"][0]["optional"].as_bool()),
        (Some("Reject"), Some("reason"), Some(true))
    );
    assert_eq!(fake.submit_dialog(&bo(), json!({"reason": "too large @channel"})).await, json!({}));
    let decided = rig.api(API_SECRET).decided("trade-3").await;
    assert_eq!(decided["reply"], json!({"decisions": [{"type": "reject", "message": "too large @channel"}]}));
    stop(rig).await;
}

/// Ana and Bo click Approve at the same moment: one decision is sent; the other is
/// told it was already answered.
#[tokio::test]
async fn two_people_clicking_at_once_send_one_decision() {
    let rig = start(&[]).await;
    let fake = rig.mattermost();
    let post = push(&rig, "trade-4", trade()).await;
    let (ana, bo) = (ana(), bo());
    let (first, second) = tokio::join!(fake.click(&ana, &post, "✅ Approve"), fake.click(&bo, &post, "✅ Approve"));
    let updated = [&first, &second].iter().filter(|a| a.get("update").is_some()).count();
    let told: Vec<&str> = [&first, &second].iter().filter_map(|a| a["ephemeral_text"].as_str()).collect();
    assert_eq!(updated, 1, "{first} {second}");
    assert_eq!(told.len(), 1, "{first} {second}");
    assert!(told[0].starts_with("Already decided by "), "{}", told[0]);
    assert_eq!(rig.api(API_SECRET).decided("trade-4").await["reply"], json!({"decisions": [{"type": "approve"}]}));
    stop(rig).await;
}

/// A request that expires has its card edited to say so, and a click after that is
/// told it expired and changes nothing.
#[tokio::test]
async fn a_late_click_after_expiry_is_told_and_changes_nothing() {
    let rig = start(&[("timeouts.grace_secs", "0")]).await;
    let fake = rig.mattermost();
    let post = push(&rig, "trade-5", json!({"timeout_seconds": 1, "actions": [{"name": "deploy", "args": {}}]})).await;
    let approve = fake.action(&post, "✅ Approve");
    let expired = rig.api(API_SECRET).decided("trade-5").await;
    assert_eq!(expired["status"], "expired");
    wait_until(|| async { labels(fake, &post).is_empty().then_some(()) }).await;
    let last = fake.post(&post).unwrap()["props"]["attachments"].as_array().unwrap().last().unwrap()["text"].as_str().unwrap().to_owned();
    assert!(last.contains("⌛"), "{last}");
    let body = fake.click_body(&ana(), &post, &approve);
    let (_, answer) = fake.post_to(approve["integration"]["url"].as_str().unwrap(), &body).await;
    assert!(answer["ephemeral_text"].as_str().is_some_and(|t| t.contains("expired")), "{answer}");
    assert_eq!(state(&rig, "trade-5").await["reply"], expired["reply"]);
    stop(rig).await;
}

/// A stranger's click is refused with an ephemeral notice and an audit row; the card
/// is not touched and nothing is sent.
#[tokio::test]
async fn a_strangers_click_is_refused_audited_and_changes_nothing() {
    let rig = start(&[]).await;
    let fake = rig.mattermost();
    let post = push(&rig, "trade-6", trade()).await;
    let answer = fake.click(&mallory(), &post, "✅ Approve").await;
    assert_eq!(answer, json!({"ephemeral_text": "You are not allowed to answer this request."}));
    let store = Store::connect(&rig.settings.store.url).await.unwrap();
    let refused = wait_until(|| async { store.refused_attempts(0).await.ok().filter(|r| !r.is_empty()) }).await;
    assert_eq!(json!(refused[0].actor), json!({"platform": "mattermost", "user_id": MALLORY, "name": "mallory", "guild_id": TEAM}));
    store.close().await;
    assert_eq!(state(&rig, "trade-6").await["status"], "pending");
    assert!(!fake.calls().iter().any(|c| c.method == "PUT"), "the card was not touched");
    stop(rig).await;
}

/// Posts that did not come from a card the bridge made change nothing: no code, an
/// altered code, a code replayed on another post, no user.
#[tokio::test]
async fn forged_integration_posts_change_nothing() {
    let rig = start(&[]).await;
    let fake = rig.mattermost();
    let first = push(&rig, "trade-7", trade()).await;
    let second = push(&rig, "trade-8", trade()).await;
    let approve = fake.action(&first, "✅ Approve");
    let url = approve["integration"]["url"].as_str().unwrap().to_owned();
    let unknown = json!({"ephemeral_text": "This button is not valid (unknown, outdated or forged)."});

    let mut no_code = fake.click_body(&ana(), &first, &approve);
    no_code["context"] = json!({});
    assert_eq!(fake.post_to(&url, &no_code).await, (200, unknown.clone()));

    let mut altered = fake.click_body(&ana(), &first, &approve);
    let code = altered["context"]["code"].as_str().unwrap().replacen(":ap.0:", ":ap.1:", 1);
    altered["context"]["code"] = json!(code);
    assert_eq!(fake.post_to(&url, &altered).await, (200, unknown.clone()));

    let replayed = fake.click_body(&ana(), &second, &approve);
    assert_eq!(fake.post_to(&url, &replayed).await, (200, json!({"ephemeral_text": "This button does not belong to this post; nothing was changed."})));

    let mut nobody = fake.click_body(&ana(), &first, &approve);
    nobody["user_id"] = json!("");
    assert_eq!(fake.post_to(&url, &nobody).await, (200, unknown.clone()));

    let (status, _) = fake.post_to(&url, &json!("not an object")).await;
    assert_eq!(status, 400);
    for key in ["trade-7", "trade-8"] {
        assert_eq!(state(&rig, key).await["status"], "pending", "{key}");
    }
    assert!(!fake.calls().iter().any(|c| c.method == "PUT"), "no card was touched");
    stop(rig).await;
}

/// Questions: an option button, a multi-select's checkboxes in a dialog, a menu, and
/// Other… typed in a dialog; Submit sends the answers byte for byte as on Telegram.
#[tokio::test]
async fn questions_are_answered_with_buttons_a_menu_and_dialogs() {
    let rig = start(&[]).await;
    let fake = rig.mattermost();
    let many: Vec<Value> = (0..7).map(|i| json!({"label": format!("host {i}")})).collect();
    let post = push(
        &rig,
        "ask-1",
        json!({"timeout_seconds": 300, "questions": [
            {"question": "Which env?", "header": "Env", "options": [{"label": "staging"}, {"label": "prod (Recommended)"}]},
            {"question": "Which regions?", "multiSelect": true, "options": [{"label": "eu"}, {"label": "us"}, {"label": "ap"}]},
            {"question": "Which host?", "options": many},
            {"question": "Anything else?", "options": [{"label": "no"}]},
        ]}),
    )
    .await;
    assert_eq!(
        labels(fake, &post),
        [
            "staging",
            "prod (Recommended)",
            "✏️ Other…",
            "⏭ Skip",
            "☑️ Choose…",
            "⏭ Skip",
            "Choose an answer",
            "✏️ Other…",
            "⏭ Skip",
            "no",
            "✏️ Other…",
            "⏭ Skip",
            "📨 Submit"
        ]
    );
    let menu = fake.action(&post, "Choose an answer");
    assert_eq!((menu["type"].as_str(), menu["options"].as_array().map(Vec::len)), (Some("select"), Some(7)));

    let answer = fake.click(&ana(), &post, "prod (Recommended)").await;
    assert!(answer["update"].is_object(), "{answer}");
    assert!(labels(fake, &post).contains(&"✓ prod (Recommended)".to_owned()), "the draft shows: {:?}", labels(fake, &post));

    fake.click(&ana(), &post, "☑️ Choose…").await;
    let dialog = fake.dialogs().last().cloned().unwrap()["dialog"].clone();
    let names: Vec<&str> = dialog["elements"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["opt0", "opt1", "opt2", "answer"]);
    assert_eq!(dialog["elements"][0]["type"], "bool");
    assert_eq!(fake.submit_dialog(&ana(), json!({"opt0": true, "opt1": false, "opt2": true, "answer": ""})).await, json!({}));

    fake.choose(&ana(), &post, "Choose an answer", "5").await;
    // Other… on the last question: a dialog with its option as a radio and a text field.
    let others: Vec<Value> = fake.post(&post).unwrap()["props"]["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|a| a["actions"].as_array().cloned().unwrap_or_default())
        .filter(|a| a["name"] == "✏️ Other…")
        .collect();
    let body = fake.click_body(&ana(), &post, &others[2]);
    fake.post_to(others[2]["integration"]["url"].as_str().unwrap(), &body).await;
    let dialog = fake.dialogs().last().cloned().unwrap()["dialog"].clone();
    assert_eq!(dialog["elements"][0]["type"], "radio");
    assert_eq!(fake.submit_dialog(&ana(), json!({"choice": null, "answer": "  ship it  "})).await, json!({}));

    fake.click(&ana(), &post, "📨 Submit").await;
    let decided = rig.api(API_SECRET).decided("ask-1").await;
    assert_eq!(
        decided["reply"]["answers"],
        json!({"Which env?": "prod (Recommended)", "Which regions?": "eu, ap", "Which host?": "host 5", "Anything else?": "ship it"})
    );
    stop(rig).await;
}

/// A burst of 200 requests into one channel while Mattermost allows 50 posts a second:
/// the 429s are waited out as their `X-Ratelimit-Reset` says, and every card is shown,
/// in the order pushed.
#[tokio::test]
async fn a_burst_of_200_is_shown_in_order_through_429s() {
    let rig = start(&[]).await;
    let fake = rig.mattermost();
    fake.rate_limit(50);
    let api = rig.api(API_SECRET);
    for n in 0..200 {
        let body = json!({
            "approval_key": format!("burst-{n}"), "targets": [{"platform": "mattermost", "channel_id": OPS}],
            "approvers": [format!("mattermost:{ANA}")], "text": format!("burst {n}"), "timeout_seconds": 600,
            "actions": [{"name": "deploy", "args": {}}],
        });
        api.push(&body).await;
    }
    let posts = wait_until(|| async {
        let posts = fake.posts();
        (posts.len() == 200).then_some(posts)
    })
    .await;
    let shown: Vec<String> = posts.iter().map(|id| attachment_text(fake, id, 0).split(" · ").next().unwrap().to_owned()).collect();
    let expected: Vec<String> = (0..200).map(|n| format!("burst {n}\n**Agent:** ci")).collect();
    assert_eq!(shown, expected);
    assert!(fake.throttled() > 0, "Mattermost answered 429 at least once");
    stop(rig).await;
}

const SLASH_TOKEN: &str = "slashtoken0000000000000000";

/// A bridge with the reference agent, posts in OPS going to it, Ana allowed to talk.
async fn start_chat() -> Harness {
    let rig = Harness::on(Chat::Mattermost)
        .set("mattermost.slash_token", SLASH_TOKEN)
        .tweak(|s: &mut Settings| {
            s.platforms.get_mut::<MattermostSettings>().channels = vec![OPS.into()];
            s.access.users = vec![format!("mattermost:{ANA}")];
        })
        .start()
        .await;
    rig.mattermost().user(&ana());
    rig
}

/// What the agent heard: each message's text and user.
fn heard(rig: &Harness) -> Vec<(Value, Value)> {
    rig.sim().commands().into_iter().filter(|c| c["type"] == "message").map(|c| (c["content"][0]["text"].clone(), c["user"].clone())).collect()
}

fn echo(text: &str) -> String {
    format!("Tôi đã nhận: {text}. Từ khóa: hỏi 2 lần, trade, two actions, timeout, shapes, multi, malformed.")
}

fn ana_user() -> Value {
    json!({"platform": "mattermost", "id": ANA, "name": "ana"})
}

/// A post in a listened channel opens a thread the agent answers in; a reply there is
/// the same session; a DM is answered in the DM.
#[tokio::test]
async fn a_channel_post_is_answered_in_its_thread_and_the_thread_keeps_its_session() {
    let rig = start_chat().await;
    let fake = rig.mattermost();
    let top = fake.say(&ana(), OPS, "O", "xin chào", None);
    let answer = fake.wait_message(&echo("xin chào")).await;
    assert_eq!((answer["channel_id"].as_str(), answer["root_id"].as_str()), (Some(OPS), Some(top.as_str())));
    fake.say(&ana(), OPS, "O", "lần hai", Some(&top));
    fake.wait_message(&echo("lần hai")).await;
    let sessions: Vec<Value> = rig.sim().commands().into_iter().filter(|c| c["type"] == "message").map(|c| c["session_id"].clone()).collect();
    assert_eq!(sessions[0], sessions[1], "one thread, one session");
    assert_eq!(heard(&rig), [(json!("xin chào"), ana_user()), (json!("lần hai"), ana_user())]);
    stop(rig).await;
}

/// Events lost (a `seq` skipped) and posts made while the WebSocket was down are
/// fetched `since` the last one seen, stored, and each heard exactly once.
#[tokio::test]
async fn posts_missed_by_the_websocket_are_fetched_and_heard_once() {
    let rig = start_chat().await;
    let fake = rig.mattermost();
    fake.say(&ana(), OPS, "O", "một", None);
    fake.wait_message(&echo("một")).await;
    // A lost event: the next one's seq is one too far; the bridge fetches since.
    fake.lose_an_event();
    fake.say(&ana(), OPS, "O", "hai", None);
    fake.wait_message(&echo("hai")).await;
    // Down: the post is made with no connection to carry it.
    fake.refuse_connections(true);
    fake.drop_socket();
    fake.say(&ana(), OPS, "O", "ba", None);
    let connections = fake.connections();
    fake.refuse_connections(false);
    fake.wait_connections(connections + 1).await;
    fake.wait_message(&echo("ba")).await;
    wait_until(|| async { (heard(&rig).len() >= 3).then_some(()) }).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let texts: Vec<Value> = heard(&rig).into_iter().map(|(text, _)| text).collect();
    assert_eq!(texts, [json!("một"), json!("hai"), json!("ba")], "each once, in order");
    assert!(fake.calls().iter().any(|c| c.path.starts_with(&format!("/channels/{OPS}/posts?since="))));
    stop(rig).await;
}

/// `/hitl id` answers the person's address and the channel's; a post without the
/// slash command's token is refused and runs nothing.
#[tokio::test]
async fn the_slash_command_checks_its_token_and_id_answers_the_address() {
    let rig = start_chat().await;
    let url = format!("{}/mattermost/command", rig.settings.platforms.get::<MattermostSettings>().public());
    let form = |token: &str, text: &str| {
        url::form_urlencoded::Serializer::new(String::new())
            .append_pair("token", token)
            .append_pair("command", "/hitl")
            .append_pair("text", text)
            .append_pair("user_id", ANA)
            .append_pair("user_name", "ana")
            .append_pair("channel_id", OPS)
            .append_pair("team_id", TEAM)
            .append_pair("trigger_id", &format!("trigger-{text}-{token}"))
            .finish()
    };
    let post = |body: String| async {
        let response = reqwest::Client::new().post(&url).header("content-type", "application/x-www-form-urlencoded").body(body).send().await.unwrap();
        (response.status().as_u16(), response.text().await.unwrap())
    };
    let (status, body) = post(form(SLASH_TOKEN, "id")).await;
    assert_eq!(status, 200);
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["response_type"], "ephemeral");
    let text = answer["text"].as_str().unwrap();
    assert!(text.contains(&format!("mattermost:{ANA}")) && text.contains(&format!("mattermost:{OPS}")), "{text}");
    let (status, body) = post(form("wrong", "new")).await;
    assert_eq!((status, body.as_str()), (401, "the slash command's token does not match mattermost.slash_token"));
    assert!(heard(&rig).is_empty());
    stop(rig).await;
}

/// A DM to the bot is answered in the DM; in a channel not in `mattermost.channels`
/// only a post that @mentions the bot is heard, answered in its thread, the mention
/// left out of what the agent reads.
#[tokio::test]
async fn a_dm_and_a_mention_elsewhere_are_heard_and_other_posts_there_are_not() {
    let rig = start_chat().await;
    let fake = rig.mattermost();
    // The DM channel of Ana and the bot, as `channels/direct` names it.
    let dm = format!("d{}", &support::fake_mattermost::BOT_ID[1..]);
    fake.channel(&dm, true);
    fake.say(&ana(), &dm, "D", "chào bot", None);
    let answer = fake.wait_message(&echo("chào bot")).await;
    assert_eq!((answer["channel_id"].as_str(), answer.get("root_id")), (Some(dm.as_str()), None));
    const DEV: &str = "d0ev0000000000000000000000";
    fake.channel(DEV, true);
    fake.say(&ana(), DEV, "O", "không gọi ai", None);
    let mention = fake.say(&ana(), DEV, "O", "@hitl-bridge deploy", None);
    let answer = fake.wait_message(&echo("deploy")).await;
    assert_eq!((answer["channel_id"].as_str(), answer["root_id"].as_str()), (Some(DEV), Some(mention.as_str())));
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(heard(&rig), [(json!("chào bot"), ana_user()), (json!("deploy"), ana_user())]);
    stop(rig).await;
}

/// The reference agent's `slow stream` writes one text block in ten deltas 300 ms
/// apart: the bridge creates one post in the thread and edits it as the text grows,
/// no two calls on it less than about a second apart, ending with the whole text.
#[tokio::test]
async fn the_agents_text_streams_into_one_post_edited_about_once_a_second() {
    const WHOLE: &str = "Đang viết dần: một, hai, ba, bốn, năm. Xong.";
    let rig = start_chat().await;
    let fake = rig.mattermost();
    let top = fake.say(&ana(), OPS, "O", "slow stream", None);
    let post = fake.wait_message(WHOLE).await;
    let id = post["id"].as_str().unwrap().to_owned();
    assert_eq!(post["root_id"].as_str(), Some(top.as_str()));
    let calls: Vec<_> = fake
        .calls()
        .into_iter()
        .filter(|c| (c.method == "POST" && c.path == "/posts" && c.body["root_id"] == top.as_str()) || c.path == format!("/posts/{id}/patch"))
        .collect();
    assert_eq!(calls.iter().filter(|c| c.method == "POST").count(), 1, "one post: {calls:?}");
    assert!(calls.len() >= 3, "the post grows in edits: {calls:?}");
    assert!(calls[0].body["message"].as_str().is_some_and(|m| WHOLE.starts_with(m) && m.len() < WHOLE.len()), "{:?}", calls[0].body);
    assert_eq!(calls.last().unwrap().body["message"], WHOLE);
    for pair in calls.windows(2) {
        let gap = pair[1].at.duration_since(pair[0].at);
        assert!(gap >= std::time::Duration::from_millis(900), "two calls on one streamed post {gap:?} apart");
    }
    stop(rig).await;
}

/// A channel's members (`channel:ID`) and a custom group (`group:ID`) named by the
/// request as its approver groups: Mattermost is asked whether the clicker is in
/// them; a member decides, anyone else is refused and changes nothing.
#[tokio::test]
async fn a_channels_members_and_a_custom_group_are_approver_groups() {
    const SRE: &str = "s0re0000000000000000000000";
    let rig = start(&[]).await;
    let fake = rig.mattermost();
    fake.join(OPS, &bo());
    fake.group(SRE, &[&ana()]);
    let refused = json!({"ephemeral_text": "You are not allowed to answer this request."});
    let with_roles = |roles: Value| {
        let mut body = trade();
        body["approvers"] = json!([]);
        body["approver_roles"] = roles;
        body
    };

    let post = push(&rig, "group-1", with_roles(json!([format!("channel:{OPS}")]))).await;
    assert_eq!(fake.click(&mallory(), &post, "✅ Approve").await, refused);
    assert_eq!(fake.click(&ana(), &post, "✅ Approve").await, refused, "Ana is not in the channel");
    assert_eq!(state(&rig, "group-1").await["status"], "pending");
    fake.click(&bo(), &post, "✅ Approve").await;
    assert_eq!(rig.api(API_SECRET).decided("group-1").await["reply"], json!({"decisions": [{"type": "approve"}]}));

    let post = push(&rig, "group-2", with_roles(json!([format!("group:{SRE}")]))).await;
    assert_eq!(fake.click(&bo(), &post, "✅ Approve").await, refused, "Bo is not in the group");
    fake.click(&ana(), &post, "✅ Approve").await;
    assert_eq!(rig.api(API_SECRET).decided("group-2").await["reply"], json!({"decisions": [{"type": "approve"}]}));

    let asked: Vec<(String, u16)> =
        fake.calls().into_iter().filter(|c| c.path.contains("/members")).map(|c| (c.path.replace(OPS, "OPS").replace(SRE, "SRE"), c.status)).collect();
    assert_eq!(
        asked,
        [
            (format!("/channels/OPS/members/{MALLORY}"), 404),
            (format!("/channels/OPS/members/{ANA}"), 404),
            (format!("/channels/OPS/members/{BO}"), 200),
            ("/groups/SRE/members?page=0&per_page=200".to_owned(), 200),
        ],
        "a channel asked once per person, a custom group's members once for Bo and Ana"
    );
    // Asked again within the minute, the answers are remembered.
    let post = push(&rig, "group-3", with_roles(json!([format!("group:{SRE}")]))).await;
    assert_eq!(fake.click(&bo(), &post, "✅ Approve").await, refused);
    assert_eq!(fake.calls().into_iter().filter(|c| c.path.contains("/members")).count(), 4);
    rig.mattermost().shutdown_check(|c| c.path.contains("/members/") && c.status == 404);
    let mut rig = rig;
    rig.stop_bridge().await;
    rig.shutdown().await;
}

/// `/hitl pending` lists the requests waiting in the channel with their deadlines,
/// then nothing once decided; `/hitl` with an unknown word answers the usage; both
/// only to the person. (A stranger is told they may not talk, with their id.)
#[tokio::test]
async fn the_slash_command_lists_what_is_pending_and_answers_its_usage() {
    let rig = Harness::on(Chat::Mattermost)
        .no_agent()
        .set("mattermost.slash_token", SLASH_TOKEN)
        .tweak(|s: &mut Settings| {
            s.http.api_tokens = vec![format!("ci:{API_SECRET}")];
            s.access.users = vec![format!("mattermost:{ANA}")];
        })
        .start()
        .await;
    rig.mattermost().user(&ana());
    let fake = rig.mattermost();
    let url = format!("{}/mattermost/command", rig.settings.platforms.get::<MattermostSettings>().public());
    let hitl = |text: &str| {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("token", SLASH_TOKEN)
            .append_pair("command", "/hitl")
            .append_pair("text", text)
            .append_pair("user_id", ANA)
            .append_pair("user_name", "ana")
            .append_pair("channel_id", OPS)
            .append_pair("team_id", TEAM)
            .append_pair("trigger_id", &format!("trigger-{}", uuid::Uuid::new_v4()))
            .finish();
        let url = url.clone();
        async move {
            let response = reqwest::Client::new().post(&url).header("content-type", "application/x-www-form-urlencoded").body(body).send().await.unwrap();
            assert_eq!(response.status(), 200);
            let answer: Value = response.json().await.unwrap();
            assert_eq!(answer["response_type"], "ephemeral");
            answer["text"].as_str().unwrap().replace(['\\', '\u{2060}'], "")
        }
    };
    let post = push(&rig, "pending-1", trade()).await;
    let listed = hitl("pending").await;
    assert!(listed.starts_with("⏳ ") && listed.contains("execute_trade") && listed.contains(" · ⏰ "), "{listed}");
    assert_eq!(listed.lines().count(), 1, "{listed}");
    fake.click(&ana(), &post, "✅ Approve").await;
    assert_eq!(hitl("pending").await, "Nothing is waiting for a decision here.");
    let usage = hitl("bogus").await;
    for line in ["/hitl new", "/hitl cancel", "/hitl pending", "/hitl id", "/hitl pair CODE", "/hitl web"] {
        assert!(usage.contains(line), "{line} in {usage}");
    }
    stop(rig).await;
}
