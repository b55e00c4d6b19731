//! The inbound HTTP API end to end (PROTOCOL.md §8): requests pushed with reqwest to a
//! real bridge, shown through the real teloxide and serenity clients on the fake
//! Telegram and fake Discord, clicked there, and read back by `GET` and by the signed
//! callback, whose exact JSON and signature are checked.

use hitl_bridge::platform::discord::settings::DiscordSettings;
use support::backends;
use support::fake_discord;
use support::fake_slack;
use support::fake_teams;
use support::fake_telegram;
mod support;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use fake_discord::{CHANNEL_ID, FakeDiscord};
use fake_telegram::{FakeTelegram, User};
use hitl_bridge::config::Settings;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use support::{Chat, Harness, wait_until};

const SECRET: &str = "ci-secret";
const OPS: i64 = -100_777;

fn ana() -> User {
    User::new(3003, "Ana", Some("en"))
}

fn mallory() -> User {
    User::new(6666, "Mallory", Some("en"))
}

/// A bridge with Telegram and Discord on fakes and the API on a free port.
struct Api {
    harness: Harness,
    base: String,
    http: reqwest::Client,
}

crate::wraps_harness!(Api, harness);

impl Api {
    async fn start(tweak: impl FnOnce(&mut Settings) + 'static) -> Api {
        let harness = Harness::on(Chat::Telegram)
            .and(Chat::Discord)
            .no_agent()
            .set("timeouts.grace_secs", "0")
            .tweak(|settings| {
                settings.http.api_tokens = vec![format!("ci:{SECRET}"), "other:other-secret".into()];
                // The receivers listen on loopback.
                settings.http.callback_allow_private = true;
            })
            .tweak(tweak)
            .build()
            .await;
        harness.telegram().group(OPS, "ops", false);
        harness.telegram().private_chat(&ana());
        let mut api = Api { harness, base: String::new(), http: reqwest::Client::new() };
        api.boot().await;
        api
    }

    async fn boot(&mut self) {
        self.harness.boot().await;
        self.base = format!("http://{}", self.harness.app().http_addr().expect("http listener"));
    }

    async fn restart(&mut self) {
        self.harness.stop_bridge().await;
        self.boot().await;
    }

    async fn send(&self, method: reqwest::Method, path: &str, token: Option<&str>, body: Option<Vec<u8>>) -> (StatusCode, Value) {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.header("content-type", "application/json").body(body);
        }
        let response = request.send().await.expect("request");
        let status = StatusCode::from_u16(response.status().as_u16()).expect("status");
        let text = response.text().await.expect("body");
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    async fn push(&self, body: &Value) -> (StatusCode, Value) {
        self.send(reqwest::Method::POST, "/v1/requests", Some(SECRET), Some(body.to_string().into_bytes())).await
    }

    async fn get(&self, key: &str) -> Value {
        let (status, body) = self.send(reqwest::Method::GET, &format!("/v1/requests/{key}"), Some(SECRET), None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }

    /// Waits until the request is no longer pending (long-poll) and returns its state.
    async fn decided(&self, key: &str) -> Value {
        wait_until(|| async {
            let (_, body) = self.send(reqwest::Method::GET, &format!("/v1/requests/{key}?wait=5"), Some(SECRET), None).await;
            (body["status"] != "pending").then_some(body)
        })
        .await
    }

    async fn delete(&self, key: &str) -> (StatusCode, Value) {
        self.send(reqwest::Method::DELETE, &format!("/v1/requests/{key}"), Some(SECRET), None).await
    }

    /// The bot's message in `chat` whose text contains `needle`.
    async fn tg_message(&self, chat: i64, needle: &str) -> Value {
        wait_until(|| async { self.tg().bot_messages(chat).into_iter().find(|m| m["text"].as_str().is_some_and(|t| t.contains(needle))) }).await
    }

    /// Waits until message `id` in `chat` shows `needle`.
    async fn tg_shows(&self, chat: i64, id: i64, needle: &str) -> Value {
        wait_until(|| async { self.tg().message(chat, id).filter(|m| m["text"].as_str().is_some_and(|t| t.contains(needle))) }).await
    }

    /// Clicks the button labelled `label` on message `id`; returns the toast.
    async fn tg_click(&self, chat: i64, id: i64, label: &str, user: &User) -> Value {
        let message = self.tg().message(chat, id).expect("message");
        let data = fake_telegram::button(&message, label);
        let query = self.tg().push_click(chat, user, id, &data);
        wait_until(|| async { self.tg().answer_to(&query) }).await
    }

    fn tg(&self) -> &FakeTelegram {
        self.harness.telegram()
    }

    fn dc(&self) -> &FakeDiscord {
        self.harness.discord()
    }

    async fn stop(self) {
        self.harness.shutdown().await;
    }
}

fn id_of(message: &Value) -> i64 {
    message["message_id"].as_i64().expect("message id")
}

fn has_keyboard(message: &Value) -> bool {
    message["reply_markup"]["inline_keyboard"].as_array().is_some_and(|rows| !rows.is_empty())
}

fn ops_target() -> Value {
    json!({"platform": "telegram", "chat_id": OPS.to_string()})
}

/// An HTTP server standing in for the agent's callback endpoint: records every POST
/// and answers with the scripted statuses, then 204.
struct Receiver {
    url: String,
    hits: Arc<Mutex<Vec<(HeaderMap, String)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    async fn start(script: &[u16]) -> Receiver {
        let hits: Arc<Mutex<Vec<(HeaderMap, String)>>> = Arc::default();
        let script = Arc::new(Mutex::new(script.iter().copied().collect::<VecDeque<u16>>()));
        let (h, s) = (hits.clone(), script.clone());
        let app = axum::Router::new().route(
            "/hook",
            post(move |headers: HeaderMap, body: String| {
                let (h, s) = (h.clone(), s.clone());
                async move {
                    h.lock().unwrap().push((headers, body));
                    StatusCode::from_u16(s.lock().unwrap().pop_front().unwrap_or(204)).unwrap()
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver { url, hits, task }
    }

    fn hits(&self) -> Vec<(HeaderMap, String)> {
        self.hits.lock().unwrap().clone()
    }

    async fn wait_hits(&self, n: usize) -> Vec<(HeaderMap, String)> {
        wait_until(|| async {
            let hits = self.hits();
            (hits.len() >= n).then_some(hits)
        })
        .await
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Checks `X-Hitl-Signature` independently of the bridge's code; returns the body.
fn verified(headers: &HeaderMap, body: &str, secret: &str) -> Value {
    let timestamp = headers["x-hitl-timestamp"].to_str().unwrap();
    let age = hitl_bridge::clock::now_ms() / 1000 - timestamp.parse::<i64>().expect("unix seconds");
    assert!((0..120).contains(&age), "timestamp is now-ish: {timestamp}");
    let mut mac = <Hmac<Sha256>>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{timestamp}.{body}").as_bytes());
    let expected = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    assert_eq!(headers["x-hitl-signature"].to_str().unwrap(), expected, "signature over \"<timestamp>.<body>\"");
    assert_eq!(headers["content-type"], "application/json");
    serde_json::from_str(body).expect("callback body is JSON")
}

/// Seed 002 (`actions` + `review_configs`) to a Telegram group, approved there: GET and
/// the callback carry exactly `{"decisions":[{"type":"approve"}]}`, signed; the audit
/// log names the agent.
#[tokio::test]
async fn seed_002_actions_approved_on_telegram_with_a_signed_callback() {
    let api = Api::start(|_| {}).await;
    let hook = Receiver::start(&[]).await;
    let body = json!({
        "approval_key": "trade-1", "session_id": "desk-7", "targets": [ops_target()],
        "text": "Nightly rebalance.", "timeout_seconds": 300, "callback_url": hook.url,
        "actions": [{"name": "execute_trade", "args": {"symbol": "VNM", "quantity": 100}, "description": "Buy VNM"}],
        "review_configs": [{"action_name": "execute_trade", "allowed_decisions": ["approve", "reject"]}]
    });
    let (status, created) = api.push(&body).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["approval_key"], "trade-1");
    assert_eq!(created["status"], "pending");
    assert!(created["expires_at"].as_str().is_some_and(|t| t.ends_with('Z') && t.contains('T')), "{created}");

    let card = api.tg_message(OPS, "execute_trade").await;
    let text = card["text"].as_str().unwrap();
    assert!(text.contains("<i>Nightly rebalance.</i>") && text.contains("Buy VNM"), "{text}");
    let labels: Vec<&str> = card["reply_markup"]["inline_keyboard"][0].as_array().unwrap().iter().filter_map(|b| b["text"].as_str()).collect();
    assert_eq!(labels, ["✅ Approve", "❌ Reject", "💬 Comment"], "the allowed decisions (edit is not), and a comment");
    let toast = api.tg_click(OPS, id_of(&card), "Approve", &ana()).await;
    assert_eq!(toast["text"], "Decision saved");

    let state = api.decided("trade-1").await;
    assert_eq!(state["status"], "resolved");
    assert_eq!(state["session_id"], "desk-7");
    assert_eq!(state["reply"], json!({"decisions": [{"type": "approve"}]}));
    assert_eq!(state["decided_by"], json!({"platform": "telegram", "id": "3003", "name": "Ana"}));
    assert!(state["decided_at"].as_str().is_some_and(|t| t.ends_with('Z')));

    let hits = hook.wait_hits(1).await;
    let (headers, sent) = &hits[0];
    assert_eq!(verified(headers, sent, SECRET), state, "the callback is the same JSON as GET");
    let done = api.tg_shows(OPS, id_of(&card), "Ana").await;
    assert!(!has_keyboard(&done), "the keyboard is removed");

    let store = hitl_bridge::store::Store::connect(&api.settings.store.url).await.unwrap();
    let audit = store.audit_log("trade-1").await.unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!((audit[0].outcome.as_str(), audit[0].agent.as_deref()), ("resolved", Some("ci")));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(hook.hits().len(), 1, "delivered once");
    api.stop().await;
}

/// Seed 000 shape B (`action_requests`, default decisions) rejected on Telegram.
#[tokio::test]
async fn seed_000_action_requests_rejected() {
    let api = Api::start(|_| {}).await;
    let body = json!({"approval_key": "mig-1", "targets": [ops_target()],
        "action_requests": [{"name": "run_migration", "args": {"db": "orders"}}, {"name": "notify", "args": {}}]});
    assert_eq!(api.push(&body).await.0, StatusCode::CREATED);
    let card = api.tg_message(OPS, "run_migration").await;
    api.tg_click(OPS, id_of(&card), "Reject all", &ana()).await;
    let state = api.decided("mig-1").await;
    assert_eq!(state["reply"], json!({"decisions": [{"type": "reject"}, {"type": "reject"}]}), "full length, action order");
    api.stop().await;
}

/// Questions (seeds 000/001/004): `multiSelect` and `multi_select`, an `input` option
/// typed in, a skipped question. Answers and `selected_options` exactly.
#[tokio::test]
async fn questions_answered_on_telegram_with_selected_options() {
    let api = Api::start(|_| {}).await;
    let hook = Receiver::start(&[]).await;
    let body = json!({"approval_key": "q-1", "targets": [ops_target()], "callback_url": hook.url,
    "questions": [
        {"question": "Which regions?", "header": "Regions", "multiSelect": true,
         "options": [{"label": "EU"}, {"label": "US"}, {"label": "Other region", "input": true}]},
        {"question": "Window?", "header": "Window", "multi_select": false,
         "options": [{"label": "Tonight (Recommended)"}, {"label": "Weekend"}]},
        {"question": "Notify whom?", "options": [{"label": "Nobody"}]}
    ]});
    assert_eq!(api.push(&body).await.0, StatusCode::CREATED);
    let card = api.tg_message(OPS, "[1/3] Regions").await;
    let id = id_of(&card);
    api.tg_click(OPS, id, "US", &ana()).await;
    api.tg_shows(OPS, id, "→ US").await;
    api.tg_click(OPS, id, "EU", &ana()).await;
    api.tg_shows(OPS, id, "→ EU, US").await;
    api.tg_click(OPS, id, "Other region", &ana()).await;
    let prompt = api.tg_message(OPS, "Reply with your answer").await;
    api.tg().push_message(OPS, &ana(), "APAC", None, Some(id_of(&prompt)));
    api.tg_shows(OPS, id, "→ EU, US, APAC").await;
    api.tg_click(OPS, id, "Done", &ana()).await;
    api.tg_shows(OPS, id, "[2/3] Window").await;
    api.tg_click(OPS, id, "Tonight", &ana()).await;
    api.tg_shows(OPS, id, "[3/3]").await;
    api.tg_click(OPS, id, "Skip", &ana()).await;
    api.tg_shows(OPS, id, "Your answers").await;
    api.tg_click(OPS, id, "Submit", &ana()).await;

    let state = api.decided("q-1").await;
    let expected = json!({
        "answers": {"Which regions?": "EU, US, APAC", "Window?": "Tonight (Recommended)", "Notify whom?": "[No preference]"},
        "selected_options": [["EU", "US", "APAC"], ["Tonight (Recommended)"], []]
    });
    assert_eq!(state["reply"], expected);
    // Exact text: the answers keep question order.
    assert_eq!(
        serde_json::to_string(&state["reply"]["answers"]).unwrap(),
        r#"{"Which regions?":"EU, US, APAC","Window?":"Tonight (Recommended)","Notify whom?":"[No preference]"}"#
    );
    let hits = hook.wait_hits(1).await;
    assert_eq!(verified(&hits[0].0, &hits[0].1, SECRET)["reply"], expected);
    api.stop().await;
}

/// Seed 003 (`question` + `choices` + `allow_freeform`) in a Discord channel: a
/// choice picked from the select menu, then Submit.
#[tokio::test]
async fn seed_003_question_with_choices_on_discord() {
    let api = Api::start(|_| {}).await;
    api.dc().wait_identified(1).await;
    let body = json!({"approval_key": "db-1", "targets": [{"platform": "discord", "channel_id": CHANNEL_ID}],
        "question": "Which DB?", "choices": ["Postgres", "SQLite"], "allow_freeform": false});
    assert_eq!(api.push(&body).await.0, StatusCode::CREATED);
    let card = api.dc().wait_request(0, |r| r.method == "POST" && r.path.ends_with(&format!("/channels/{CHANNEL_ID}/messages"))).await;
    let message_id = card.response.as_ref().and_then(|m| m["id"].as_str()).unwrap().to_owned();
    let rows = card.body["components"].as_array().unwrap();
    let select = rows.iter().flat_map(|r| r["components"].as_array().unwrap()).find(|c| c["type"] == 3).expect("a select");
    let labels: Vec<&str> = select["options"].as_array().unwrap().iter().filter_map(|o| o["label"].as_str()).collect();
    assert_eq!(labels, ["Postgres", "SQLite"], "no Other: allow_freeform is false");
    let who = fake_discord::user("500000000000000001", "Lan");
    api.dc().dispatch("INTERACTION_CREATE", fake_discord::select(api.dc(), select["custom_id"].as_str().unwrap(), &["0"], &message_id, CHANNEL_ID, &who));
    let submit = rows.iter().flat_map(|r| r["components"].as_array().unwrap()).find(|c| c["label"] == "Submit").expect("Submit");
    // The selection is stored (and the card re-rendered) before Submit is pressed.
    api.dc().wait_request(0, |r| r.method == "PATCH" && r.path.ends_with(&format!("/messages/{message_id}"))).await;
    assert_eq!(api.get("db-1").await["status"], "pending");
    api.dc().dispatch("INTERACTION_CREATE", fake_discord::click(api.dc(), submit["custom_id"].as_str().unwrap(), &message_id, CHANNEL_ID, &who, &[]));
    let state = api.decided("db-1").await;
    assert_eq!(state["reply"], json!({"answers": {"Which DB?": "Postgres"}, "selected_options": [["Postgres"]]}));
    assert_eq!(state["decided_by"], json!({"platform": "discord", "id": "500000000000000001", "name": "Lan"}));
    api.stop().await;
}

/// One request on Telegram and Discord: a click in Discord wins and locks the
/// Telegram copy, which shows who decided; a later Telegram click changes nothing.
#[tokio::test]
async fn two_targets_a_click_in_one_locks_the_other() {
    let api = Api::start(|_| {}).await;
    api.dc().wait_identified(1).await;
    let body = json!({"approval_key": "both-1", "targets": [ops_target(), {"platform": "discord", "channel_id": CHANNEL_ID}],
        "actions": [{"name": "restart_api", "args": {"region": "eu"}}]});
    assert_eq!(api.push(&body).await.0, StatusCode::CREATED);
    let tg_card = api.tg_message(OPS, "restart_api").await;
    let card = api.dc().wait_request(0, |r| r.method == "POST" && r.path.ends_with(&format!("/channels/{CHANNEL_ID}/messages"))).await;
    let message_id = card.response.as_ref().and_then(|m| m["id"].as_str()).unwrap().to_owned();
    let approve = card.body["components"][0]["components"].as_array().unwrap().iter().find(|c| c["label"] == "Approve").unwrap()["custom_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let lan = fake_discord::user("500000000000000001", "Lan");
    api.dc().dispatch("INTERACTION_CREATE", fake_discord::click(api.dc(), &approve, &message_id, CHANNEL_ID, &lan, &[]));
    let state = api.decided("both-1").await;
    assert_eq!(state["decided_by"]["platform"], "discord");
    let locked = api.tg_shows(OPS, id_of(&tg_card), "Lan").await;
    assert!(!has_keyboard(&locked), "the other copy is locked");
    // The Discord copy is edited too: no components left.
    let edit = api.dc().wait_request(0, |r| r.method == "PATCH" && r.path.ends_with(&format!("/messages/{message_id}"))).await;
    assert_eq!(edit.body["components"], json!([]));
    // A stale button (pressed before the edit reached the person) is refused.
    let query = api.tg().push_click(OPS, &ana(), id_of(&tg_card), &fake_telegram::button(&tg_card, "Approve"));
    let toast = wait_until(|| async { api.tg().answer_to(&query) }).await;
    assert!(toast["text"].as_str().is_some_and(|t| t.contains("Already decided by Lan")), "{toast}");
    assert_eq!(api.get("both-1").await, state, "nothing changed");
    api.stop().await;
}

/// What an agent put in a request cannot hide or reorder what a person reads: NUL,
/// BEL, ESC and a right-to-left override in an action's name, description, arguments
/// (a one-line string, a text block, a diff) and the request's context reach every
/// surface as visible markers: the Telegram card, the Discord embed, the Slack card,
/// the terminal's card and the web inbox's list and page. `GET` answers the request
/// as pushed. Every platform of the registry must be among the surfaces: a new one
/// fails this test until it is added.
#[tokio::test]
async fn hidden_characters_are_shown_as_markers_on_every_platform() {
    let harness = Harness::on(Chat::Telegram)
        .and(Chat::Discord)
        .and(Chat::Slack)
        .and(Chat::Teams)
        .and(Chat::Mattermost)
        .no_agent()
        .set("web.enabled", "true")
        .set("web.public_url", "http://inbox.example")
        .tweak(|settings| {
            settings.http.api_tokens = vec![format!("ci:{SECRET}")];
            settings.access.approvers = vec!["telegram:3003".into()];
        })
        .build()
        .await;
    harness.telegram().group(OPS, "ops", false);
    let mut api = Api { harness, base: String::new(), http: reqwest::Client::new() };
    api.boot().await;
    api.dc().wait_identified(1).await;
    let targets = [
        ops_target(),
        json!({"platform": "discord", "channel_id": CHANNEL_ID}),
        json!({"platform": "slack", "channel_id": fake_slack::OPS}),
        json!({"platform": "teams", "conversation_id": fake_teams::OPS}),
        json!({"platform": "mattermost", "channel_id": support::fake_mattermost::OPS}),
    ];
    let body = json!({"approval_key": "rlo-1", "targets": targets, "text": "clean\u{7}up",
        "actions": [{"name": "rm\u{0}", "description": "tidy\u{202e}gnp.exe",
            "args": {"path": "/\u{202e}gpj.txt", "color": "\u{1b}[8mhidden", "notes": "line one\nline\u{2066}two",
                "patch": "--- a/run.sh\n+++ b/run.sh\n@@ -1 +1 @@\n-echo ok\n+echo \u{202e}ko\n"}}]});
    assert_eq!(api.push(&body).await.0, StatusCode::CREATED);
    let markers = ["rm[U+0000]", "tidy[U+202E]gnp.exe", "/[U+202E]gpj.txt", "[U+001B][8mhidden", "clean[U+0007]up", "line[U+2066]two", "echo [U+202E]ko"];

    let telegram = api.tg_message(OPS, "rm[U+0000]").await;
    let discord = api.dc().wait_request(0, |r| r.method == "POST" && r.path.ends_with(&format!("/channels/{CHANNEL_ID}/messages"))).await;
    let slack = wait_until(|| async { api.harness.slack().bodies("chat.postMessage").into_iter().find(|b| b.get("blocks").is_some()) }).await;
    let (_, teams) = api.harness.teams().wait_card(fake_teams::OPS).await;
    let mattermost = wait_until(|| async {
        let fake = api.harness.mattermost();
        fake.posts().into_iter().filter_map(|id| fake.post(&id)).find(|p| p.get("props").is_some())
    })
    .await;
    let web = web_pages(&api, "rlo-1").await;
    // The terminal's card, rendered from the request as stored (the console runs in a
    // process of its own in the other suites).
    let store = hitl_bridge::store::Store::connect(&api.harness.settings.store.url).await.expect("store");
    let stored = store.interactions_with_key("rlo-1").await.expect("read").into_iter().next().expect("stored");
    store.close().await;
    let console = {
        use hitl_bridge::platform::console::render;
        format!("{}\n{}", render::interaction(&stored), render::action_prompt(&stored, 0))
    };
    // Matrix's card, rendered from the request as stored (its real delivery is the
    // Synapse suite's, tests/matrix.rs).
    let matrix = strings(&hitl_bridge::platform::matrix::render::card(&stored, hitl_bridge::texts::Locale::En, None));
    // Mattermost's Markdown escapes `[` and `]` with a backslash the reader never sees.
    let mattermost = strings(&mattermost).replace('\\', "");
    let mut surfaces = vec![
        ("telegram", strings(&telegram)),
        ("discord", strings(&discord.body)),
        ("slack", strings(&slack)),
        ("teams", strings(&teams)),
        ("mattermost", mattermost),
        ("matrix", matrix),
        ("console", console),
    ];
    surfaces.extend(web);
    // Every platform of the registry is here: a new one fails this test until it is.
    for descriptor in hitl_bridge::platform::registry::DESCRIPTORS {
        let name = descriptor.network().name();
        assert!(surfaces.iter().any(|(surface, _)| *surface == name), "{name} is not among the surfaces checked");
    }
    for (surface, shown) in &surfaces {
        // The list names the action; every other surface shows the whole request.
        let expected: &[&str] = if *surface == "web list" { &markers[..1] } else { &markers };
        for marker in expected {
            assert!(shown.contains(marker), "{surface}: {marker} in {shown}");
        }
        for hidden in ['\u{0}', '\u{7}', '\u{1b}', '\u{202e}', '\u{2066}'] {
            assert!(!shown.contains(hidden), "{surface}: {hidden:?} in {shown}");
        }
    }
    // The stored request is what was pushed: the same body again is the same request.
    assert_eq!(api.push(&body).await.0, StatusCode::OK);
    api.stop().await;
}

/// Every string in `value`, one a line: what a card shows, with JSON's escapes undone.
fn strings(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s}\n"),
        Value::Array(items) => items.iter().map(strings).collect(),
        Value::Object(map) => map.values().map(strings).collect(),
        _ => String::new(),
    }
}

/// The web inbox's list and the request's page as the approver reads them, HTML
/// entities undone.
async fn web_pages(api: &Api, key: &str) -> Vec<(&'static str, String)> {
    let store = hitl_bridge::store::Store::connect(&api.harness.settings.store.url).await.expect("store");
    let ana = hitl_bridge::interaction::Actor::new("telegram", "3003", "Ana");
    let link = hitl_bridge::web::sign_in_link(&store, &api.harness.settings.web, &ana).await.expect("link");
    let id = store.interactions_with_key(key).await.expect("read").into_iter().next().expect("stored").id;
    store.close().await;
    let token = link.rsplit('/').next().expect("token").to_owned();
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let signed_in = http.post(format!("{}/inbox/sign-in", api.base)).form(&[("token", token)]).send().await.expect("sign in");
    let cookie = support::web_inbox::session_cookie(signed_in.headers()).expect("a session");
    let mut pages = Vec::new();
    for (surface, path) in [("web list", "/inbox".to_owned()), ("web page", format!("/inbox/requests/{id}"))] {
        let page = http.get(format!("{}{path}", api.base)).header("cookie", &cookie).send().await.expect("page");
        assert_eq!(page.status(), StatusCode::OK, "{surface}");
        let html = page.text().await.expect("html");
        pages.push((surface, html.replace("&quot;", "\"").replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")));
    }
    pages
}

/// Idempotency by approval_key and every error code; nothing refused is stored or
/// shown.
#[tokio::test]
async fn idempotency_and_every_error_code() {
    let api = Api::start(|s| s.platforms.get_mut::<DiscordSettings>().enabled = false).await;
    let body = json!({"approval_key": "k-1", "targets": [ops_target()], "actions": [{"name": "deploy", "args": {"v": "2.3"}}]});
    assert_eq!(api.push(&body).await.0, StatusCode::CREATED);
    // The same body again (keys reordered, other whitespace): 200 with the current state.
    let reordered =
        br#"{ "actions": [{"args": {"v": "2.3"}, "name": "deploy"}], "targets": [{"chat_id": "-100777", "platform": "telegram"}], "approval_key": "k-1" }"#;
    let (status, again) = api.send(reqwest::Method::POST, "/v1/requests", Some(SECRET), Some(reordered.to_vec())).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again, api.get("k-1").await);
    // Another body under the same key: 409.
    let mut other = body.clone();
    other["actions"][0]["args"]["v"] = json!("9.9");
    let (status, err) = api.push(&other).await;
    assert_eq!((status, err["error"]["code"].as_str()), (StatusCode::CONFLICT, Some("conflict")));
    // Another agent cannot read it (keys are per agent: see
    // two_agents_may_use_the_same_key).
    let (status, err) = api.send(reqwest::Method::GET, "/v1/requests/k-1", Some("other-secret"), None).await;
    assert_eq!((status, err["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")));

    let cases: Vec<(Value, StatusCode, &str, Option<&str>)> = vec![
        (json!({"targets": [ops_target()]}), StatusCode::UNPROCESSABLE_ENTITY, "missing_shape", Some("actions")),
        (
            json!({"targets": [ops_target()], "actions": [{"name": "a"}], "question": "Q?"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "conflicting_shapes",
            Some("question"),
        ),
        (json!({"targets": [ops_target()], "actions": []}), StatusCode::UNPROCESSABLE_ENTITY, "empty_actions", Some("actions")),
        (
            json!({"targets": [ops_target()], "questions": [{"question": "Q?", "options": []}]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "empty_options",
            Some("questions[0].options"),
        ),
        (json!({"targets": [ops_target()], "questions": []}), StatusCode::UNPROCESSABLE_ENTITY, "empty_questions", Some("questions")),
        (
            json!({"targets": [ops_target()], "question": "Q?", "choices": [], "allow_freeform": false}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "empty_options",
            Some("choices"),
        ),
        (
            json!({"targets": [{"platform": "irc", "chat_id": "1"}], "actions": [{"name": "a"}]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown_platform",
            Some("targets[0].platform"),
        ),
        (
            json!({"targets": [{"platform": "discord", "channel_id": "1"}], "actions": [{"name": "a"}]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "platform_not_enabled",
            Some("targets[0].platform"),
        ),
        (json!({"targets": [], "actions": [{"name": "a"}]}), StatusCode::UNPROCESSABLE_ENTITY, "no_targets", Some("targets")),
        (
            json!({"targets": [{"platform": "telegram", "chat_id": "ops"}], "actions": [{"name": "a"}]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_target",
            Some("targets[0].chat_id"),
        ),
        (
            json!({"targets": [ops_target()], "actions": [{"name": "a"}], "approvers": ["ana"]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_approver",
            Some("approvers[0]"),
        ),
        (
            json!({"targets": [ops_target()], "actions": [{"name": "a"}], "timeout_seconds": 0}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_timeout",
            Some("timeout_seconds"),
        ),
        (
            json!({"targets": [ops_target()], "actions": [{"name": "a"}], "callback_url": "ftp://x"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_callback_url",
            Some("callback_url"),
        ),
        (
            json!({"targets": [ops_target()], "actions": [{"name": "a", "args": [1]}]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_field",
            Some("actions[0].args"),
        ),
        (
            json!({"targets": [ops_target()], "actions": [{"name": "a"}], "timeout_seconds": "soon"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_field",
            Some("timeout_seconds"),
        ),
    ];
    for (body, status, code, field) in cases {
        let (got, err) = api.push(&body).await;
        assert_eq!((got, err["error"]["code"].as_str(), err["error"]["field"].as_str()), (status, Some(code), field), "{body} → {err}");
        assert!(err["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    let post = |token: Option<&'static str>, bytes: Vec<u8>| api.send(reqwest::Method::POST, "/v1/requests", token, Some(bytes));
    let (status, err) = post(Some(SECRET), b"{\"targets\": [".to_vec()).await;
    assert_eq!((status, err["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_json")));
    let (status, err) = post(None, body.to_string().into_bytes()).await;
    assert_eq!((status, err["error"]["code"].as_str()), (StatusCode::UNAUTHORIZED, Some("unauthorized")));
    let (status, _) = post(Some("wrong"), body.to_string().into_bytes()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let huge = json!({"targets": [ops_target()], "actions": [{"name": "a", "args": {"blob": "x".repeat(1 << 20)}}]}).to_string().into_bytes();
    let (status, err) = post(Some(SECRET), huge).await;
    assert_eq!((status, err["error"]["code"].as_str()), (StatusCode::PAYLOAD_TOO_LARGE, Some("payload_too_large")));
    let (status, err) = api.send(reqwest::Method::GET, "/v1/requests/nope", Some(SECRET), None).await;
    assert_eq!((status, err["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")));
    let (status, err) = api.send(reqwest::Method::GET, "/v1/requests/k-1?wait=61", Some(SECRET), None).await;
    assert_eq!((status, err["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_query")));
    let (status, err) = api.send(reqwest::Method::GET, "/v1/requests?status=done", Some(SECRET), None).await;
    assert_eq!((status, err["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_query")));

    // Only the one good request exists and was shown.
    let (_, list) = api.send(reqwest::Method::GET, "/v1/requests?status=pending", Some(SECRET), None).await;
    let keys: Vec<&str> = list["requests"].as_array().unwrap().iter().filter_map(|r| r["approval_key"].as_str()).collect();
    assert_eq!(keys, ["k-1"]);
    let (_, theirs) = api.send(reqwest::Method::GET, "/v1/requests?status=pending", Some("other-secret"), None).await;
    assert_eq!(theirs, json!({"requests": [], "next_cursor": null}), "the caller's requests only");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(api.tg().calls("sendMessage").len(), 1, "refused requests are never shown");
    api.stop().await;
}

/// The deadline: status `expired`, reject decisions saying it timed out, the message
/// shows it. DELETE: `cancelled` on every copy, and a second DELETE is 409.
#[tokio::test]
async fn expiry_and_cancel() {
    let api = Api::start(|_| {}).await;
    let hook = Receiver::start(&[]).await;
    let body = json!({"approval_key": "exp-1", "targets": [ops_target()], "timeout_seconds": 1, "callback_url": hook.url,
        "actions": [{"name": "a", "args": {}}, {"name": "b", "args": {}}]});
    assert_eq!(api.push(&body).await.0, StatusCode::CREATED);
    let card = api.tg_message(OPS, "<b>1. a</b>").await;
    let state = api.decided("exp-1").await;
    assert_eq!(state["status"], "expired");
    let reject = json!({"type": "reject", "message": "timed out after 1 s without a human decision"});
    assert_eq!(state["reply"], json!({"decisions": [reject, reject]}));
    assert!(state.get("decided_by").is_none());
    let shown = api.tg_shows(OPS, id_of(&card), "xpired").await;
    assert!(!has_keyboard(&shown));
    let hits = hook.wait_hits(1).await;
    assert_eq!(verified(&hits[0].0, &hits[0].1, SECRET)["status"], "expired");

    let body = json!({"approval_key": "can-1", "targets": [ops_target(), {"platform": "discord", "channel_id": CHANNEL_ID}], "callback_url": hook.url,
        "question": "Proceed?", "choices": ["Yes", "No"]});
    assert_eq!(api.push(&body).await.0, StatusCode::CREATED);
    let card = api.tg_message(OPS, "Proceed?").await;
    let (status, cancelled) = api.delete("can-1").await;
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    assert_eq!(cancelled["status"], "cancelled");
    assert!(cancelled.get("reply").is_none());
    let shown = api.tg_shows(OPS, id_of(&card), "ancelled").await;
    assert!(!has_keyboard(&shown));
    let (status, err) = api.delete("can-1").await;
    assert_eq!((status, err["error"]["code"].as_str()), (StatusCode::CONFLICT, Some("not_pending")));
    let hits = hook.wait_hits(2).await;
    assert_eq!(verified(&hits[1].0, &hits[1].1, SECRET), cancelled);
    api.stop().await;
}

/// The sendMessage calls to `chat` so far, failed ones included.
fn sends_to(api: &Api, chat: i64) -> usize {
    api.tg().requests().iter().filter(|r| r.method == "sendmessage" && r.body["chat_id"].as_i64() == Some(chat)).count()
}

/// `hitl_bridge_shows_refused_total{platform="telegram"}` as `/metrics` shows it.
async fn telegram_shows_refused(api: &Api) -> String {
    let text = reqwest::get(format!("{}/metrics", api.base)).await.expect("GET /metrics").text().await.expect("body");
    let series = "hitl_bridge_shows_refused_total{platform=\"telegram\"} ";
    text.lines().find_map(|l| l.strip_prefix(series)).unwrap_or_else(|| panic!("no {series} in {text}")).to_owned()
}

/// A chat Telegram does not know (a typo in a target) is tried exactly once: the
/// request's state lists it under `not_shown` with Telegram's reason, the metric counts
/// it, and the other target still gets its card. A restart does not try it again.
#[tokio::test]
async fn a_chat_telegram_does_not_know_is_tried_once_and_listed_as_not_shown() {
    const TYPO: i64 = -100_999;
    let mut api = Api::start(|_| {}).await;
    assert_eq!(telegram_shows_refused(&api).await, "0");
    let body = json!({"approval_key": "typo-1", "targets": [{"platform": "telegram", "chat_id": TYPO.to_string()}, ops_target()],
        "actions": [{"name": "rotate_keys", "args": {}}]});
    assert_eq!(api.push(&body).await.0, StatusCode::CREATED);
    api.tg_message(OPS, "rotate_keys").await;
    let refused = json!([{"target": {"platform": "telegram", "chat_id": TYPO.to_string()}, "error": "Bad Request: chat not found"}]);
    let state = wait_until(|| async {
        let state = api.get("typo-1").await;
        state.get("not_shown").is_some().then_some(state)
    })
    .await;
    assert_eq!(state["status"], "pending", "the other target shows it");
    assert_eq!(state["not_shown"], refused);
    assert_eq!(telegram_shows_refused(&api).await, "1");
    // A retry would come after 1 s, then 2 s.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert_eq!(sends_to(&api, TYPO), 1, "one attempt, no retry");
    let store = hitl_bridge::store::Store::connect(&api.settings.store.url).await.unwrap();
    assert_eq!(store.pending_shows().await.unwrap(), [], "nothing left to retry");

    api.restart().await;
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert_eq!(sends_to(&api, TYPO), 1, "not tried again after a restart");
    assert_eq!(api.get("typo-1").await["not_shown"], refused);
    api.stop().await;
}

/// A request no target would show is cancelled at once, its callback saying where it
/// could not be shown, rather than waiting for its deadline.
#[tokio::test]
async fn a_request_every_target_refused_is_cancelled_with_its_callback() {
    let api = Api::start(|_| {}).await;
    let hook = Receiver::start(&[]).await;
    let body = json!({"approval_key": "typo-2", "targets": [{"platform": "telegram", "chat_id": "-100998"}], "timeout_seconds": 3600,
        "callback_url": hook.url, "actions": [{"name": "rotate_keys", "args": {}}]});
    assert_eq!(api.push(&body).await.0, StatusCode::CREATED);
    let state = api.decided("typo-2").await;
    assert_eq!(state["status"], "cancelled");
    assert_eq!(state["not_shown"], json!([{"target": {"platform": "telegram", "chat_id": "-100998"}, "error": "Bad Request: chat not found"}]));
    let hits = hook.wait_hits(1).await;
    assert_eq!(verified(&hits[0].0, &hits[0].1, SECRET), state, "the callback says where it could not be shown");
    assert_eq!(sends_to(&api, -100_998), 1);
    api.stop().await;
}

/// A 500 is not a refusal: the card is shown on the next attempt, after the backoff.
#[tokio::test]
async fn a_server_error_is_still_retried() {
    let api = Api::start(|_| {}).await;
    api.tg().fail_next(1, 500, "Internal Server Error");
    let body = json!({"approval_key": "flaky-1", "targets": [ops_target()], "actions": [{"name": "rotate_keys", "args": {}}]});
    assert_eq!(api.push(&body).await.0, StatusCode::CREATED);
    api.tg_message(OPS, "rotate_keys").await;
    assert_eq!(sends_to(&api, OPS), 2, "one failed, one shown");
    let state = api.get("flaky-1").await;
    assert!(state.get("not_shown").is_none(), "{state}");
    assert_eq!(telegram_shows_refused(&api).await, "0");
    api.stop().await;
}

/// Approvers named by the request: a stranger's click is refused with an alert and
/// changes nothing; the named approver's click decides.
#[tokio::test]
async fn unauthorized_click_changes_nothing() {
    let api = Api::start(|_| {}).await;
    let body = json!({"approval_key": "auth-1", "targets": [ops_target()], "approvers": ["telegram:3003"],
        "actions": [{"name": "drop_table", "args": {"table": "users"}}]});
    assert_eq!(api.push(&body).await.0, StatusCode::CREATED);
    let card = api.tg_message(OPS, "drop_table").await;
    let toast = api.tg_click(OPS, id_of(&card), "Approve", &mallory()).await;
    assert_eq!(toast["show_alert"], true, "{toast}");
    assert_eq!(api.get("auth-1").await["status"], "pending");
    assert!(has_keyboard(&api.tg().message(OPS, id_of(&card)).unwrap()));
    api.tg_click(OPS, id_of(&card), "Reject", &ana()).await;
    let state = api.decided("auth-1").await;
    assert_eq!(state["reply"], json!({"decisions": [{"type": "reject"}]}));
    api.stop().await;
}

/// A callback receiver that answers 503 twice, then 204, gets it three times and
/// then never again: delivered exactly once. It survives a restart of the bridge
/// while pending.
#[tokio::test]
async fn callback_retried_until_2xx_then_never_again_across_a_restart() {
    let mut api = Api::start(|_| {}).await;
    let hook = Receiver::start(&[503, 503]).await;
    let body = json!({"approval_key": "cb-1", "targets": [ops_target()], "callback_url": hook.url,
        "actions": [{"name": "ship", "args": {}}]});
    assert_eq!(api.push(&body).await.0, StatusCode::CREATED);
    api.tg_message(OPS, "ship").await;
    // Pending across a restart: the same message is still clickable afterwards.
    api.restart().await;
    let card = api.tg_message(OPS, "ship").await;
    api.tg_click(OPS, id_of(&card), "Approve", &ana()).await;
    let state = api.decided("cb-1").await;
    let hits = hook.wait_hits(3).await;
    for (headers, body) in &hits {
        assert_eq!(verified(headers, body, SECRET), state, "every attempt carries the same state");
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(hook.hits().len(), 3, "no attempt after the 2xx");
    api.stop().await;
}

/// `GET ?wait=N` returns as soon as the request is decided.
#[tokio::test]
async fn long_poll_returns_on_the_decision() {
    let api = Api::start(|_| {}).await;
    let body = json!({"approval_key": "lp-1", "targets": [ops_target()], "actions": [{"name": "go", "args": {}}]});
    assert_eq!(api.push(&body).await.0, StatusCode::CREATED);
    let card = api.tg_message(OPS, "go").await;
    let poll = api.send(reqwest::Method::GET, "/v1/requests/lp-1?wait=30", Some(SECRET), None);
    let click = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        api.tg_click(OPS, id_of(&card), "Approve", &ana()).await
    };
    let started = std::time::Instant::now();
    let ((status, state), _) = tokio::join!(poll, click);
    assert_eq!((status, state["status"].as_str()), (StatusCode::OK, Some("resolved")));
    assert!(started.elapsed() < Duration::from_secs(25), "it did not wait out the 30 s");
    api.stop().await;
}

/// Health, readiness and the generated OpenAPI 3.1 document.
#[tokio::test]
async fn health_readiness_and_openapi() {
    let api = Api::start(|_| {}).await;
    let (status, body) = api.send(reqwest::Method::GET, "/healthz", None, None).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"status": "ok"})));
    let (status, body) = api.send(reqwest::Method::GET, "/readyz", None, None).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"status": "ready", "store": true, "platforms": true})));
    let (status, doc) = api.send(reqwest::Method::GET, "/v1/openapi.json", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(doc["openapi"], "3.1.0");
    let described = doc["info"]["description"].as_str().unwrap_or_default();
    assert!(
        described.starts_with("Push approval requests and questions to people in chat (telegram, discord, slack, teams, mattermost, matrix or console);"),
        "{described}"
    );
    let paths: Vec<&String> = doc["paths"].as_object().unwrap().keys().collect();
    assert_eq!(paths, ["/v1/requests", "/v1/requests/{approval_key}"]);
    for method in ["get", "post"] {
        assert!(doc["paths"]["/v1/requests"][method].is_object(), "{method}");
    }
    for method in ["get", "delete"] {
        assert!(doc["paths"]["/v1/requests/{approval_key}"][method].is_object(), "{method}");
    }
    let list_params = &doc["paths"]["/v1/requests"]["get"]["parameters"];
    assert_eq!((list_params[0]["name"].as_str(), list_params[0]["in"].as_str()), (Some("status"), Some("query")));
    let wait = doc["paths"]["/v1/requests/{approval_key}"]["get"]["parameters"].as_array().unwrap().iter().find(|p| p["name"] == "wait").cloned().unwrap();
    assert_eq!((wait["in"].as_str(), wait["required"].as_bool()), (Some("query"), Some(false)));
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for name in ["PushBody", "Target", "ApiQuestion", "RequestState", "ErrorBody"] {
        assert!(schemas.contains_key(name), "schema {name}");
    }
    assert!(schemas["ApiQuestion"]["properties"]["multiSelect"].is_object());
    // Who may answer by group, in every platform's form.
    for schema in ["PushBody", "ApiPolicy"] {
        let described = schemas[schema]["properties"]["approver_roles"]["description"].as_str().unwrap_or_default();
        assert!(
            described.contains("a Discord role id (digits)")
                && described.contains("a Slack user group id (S…)")
                && described.contains("a Teams team or channel id (19:…@thread.tacv2)"),
            "{schema}: {described}"
        );
    }
    // Each platform's own target object, as its descriptor publishes it.
    let targets = schemas["Target"]["oneOf"].as_array().unwrap();
    let platforms: Vec<&Value> = targets.iter().map(|t| &t["properties"]["platform"]["const"]).collect();
    assert_eq!(platforms, ["telegram", "discord", "slack", "teams", "mattermost", "matrix", "console"]);
    let telegram: Vec<&String> = targets[0]["properties"].as_object().unwrap().keys().collect();
    assert_eq!(telegram, ["platform", "chat_id", "thread_id", "user_id"]);
    assert!(targets[1]["properties"]["channel_id"].is_object());
    let slack: Vec<&String> = targets[2]["properties"].as_object().unwrap().keys().collect();
    assert_eq!(slack, ["platform", "channel_id", "thread_ts", "user_id"]);
    let matrix: Vec<&String> = targets[5]["properties"].as_object().unwrap().keys().collect();
    assert_eq!(matrix, ["platform", "room_id", "thread_id", "user_id"]);
    let teams: Vec<&String> = targets[3]["properties"].as_object().unwrap().keys().collect();
    assert_eq!(teams, ["platform", "conversation_id", "message_id", "user_id"]);
    // The request's own policy, and what a policy adds to the state.
    assert_eq!(schemas["PushBody"]["properties"]["policy"]["oneOf"][1]["$ref"], "#/components/schemas/ApiPolicy");
    let policy = &schemas["ApiPolicy"]["properties"];
    let keys: Vec<&String> = policy.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["approvers", "approver_roles", "quorum", "remember", "remember_args", "escalation"]);
    assert_eq!(policy["quorum"]["type"], json!(["integer", "null"]));
    assert_eq!(schemas["ApiEscalationStep"]["required"], json!(["after"]));
    assert_eq!(schemas["ApiDuration"]["oneOf"], json!([{"type": "integer", "format": "int64"}, {"type": "string"}]));
    let state = &schemas["RequestState"]["properties"];
    assert_eq!(state["quorum"]["type"], json!(["integer", "null"]));
    assert_eq!(state["votes"]["items"]["$ref"], "#/components/schemas/VoteView");
    assert_eq!(state["settled_by"]["oneOf"][1]["$ref"], "#/components/schemas/SettledBy");
    assert_eq!(schemas["VoteView"]["required"], json!(["by", "at", "decisions"]));
    let settled: Vec<&Value> = schemas["SettledBy"]["oneOf"].as_array().unwrap().iter().map(|v| &v["required"][0]).collect();
    assert_eq!(settled, ["rule", "fallback"]);
    assert_eq!(schemas["FallbackSettlement"]["required"], json!(["decision", "after_seconds"]));
    api.stop().await;
}

/// A chat turn routed to the approvers' DMs (`routing.target = "dm"`): the request
/// shows in the origin chat and in the approver's private chat; the approver's click
/// there reaches the agent.
#[tokio::test]
async fn chat_turn_routed_to_an_approvers_dm() {
    let sim = support::start_sim(20).await;
    let url = format!("ws://{}/ws/{{session_id}}", sim.addr);
    let api = Api::start(|s| {
        s.backend.url = url;
        s.platforms.get_mut::<DiscordSettings>().enabled = false;
        s.access.approvers = vec!["telegram:3003".into()];
        // The requester may talk to the agent.
        s.access.users = vec!["telegram:1001".into()];
        s.routing.target = hitl_bridge::config::RouteTarget::Dm;
    })
    .await;
    let requester = User::new(1001, "Thao", Some("en"));
    let origin = api.tg().private_chat(&requester);
    api.tg().push_message(origin, &requester, "trade", None, None);
    api.tg_message(origin, "execute_trade").await;
    let dm = api.tg_message(3003, "execute_trade").await;
    api.tg_click(3003, id_of(&dm), "Approve", &ana()).await;
    let got = support::wait_approvals(&sim, 1).await;
    assert_eq!(got[0]["decisions"], json!([{"type": "approve"}]));
    api.stop().await;
    sim.shutdown().await;
}

fn binh() -> User {
    User::new(3004, "Binh", Some("en"))
}

/// Milliseconds from now until an RFC 3339 time.
fn ms_until(rfc3339: &Value) -> i64 {
    let at = chrono::DateTime::parse_from_rfc3339(rfc3339.as_str().expect("a time")).expect("RFC 3339");
    at.timestamp_millis() - hitl_bridge::clock::now_ms()
}

/// A request's own `policy`: every refusal is a 422 naming the key at fault, exactly;
/// the idempotency check covers the policy; a fallback sets `expires_at`.
#[tokio::test]
async fn policy_validation_and_idempotency() {
    let api = Api::start(|s| s.platforms.get_mut::<DiscordSettings>().enabled = false).await;
    let with = |policy: Value| json!({"targets": [ops_target()], "actions": [{"name": "run_migration", "args": {}}], "policy": policy});
    let error = |code: &str, message: &str, field: &str| json!({"error": {"code": code, "message": message, "field": field}});
    let cases: Vec<(Value, Value)> = vec![
        (with(json!({"quorum": 0})), error("invalid_policy", "must be between 1 and 50, not 0", "policy.quorum")),
        (
            with(json!({"approvers": ["telegram:3003", "telegram:3004"], "quorum": 3})),
            error("invalid_policy", "is 3 but only 2 approvers are listed (and no approver_roles)", "policy.quorum"),
        ),
        (
            // No approvers of its own: the quorum is counted among the request's.
            json!({"targets": [ops_target()], "actions": [{"name": "a"}], "approvers": ["telegram:3003"], "policy": {"quorum": 2}}),
            error("invalid_policy", "is 2 but only 1 approvers are listed (and no approver_roles)", "policy.quorum"),
        ),
        (
            with(json!({"escalation": [{"after": "soon", "remind": "approvers"}]})),
            error("invalid_policy", "`soon` is not a duration like 90s, 5m, 1h30m or a number of seconds", "policy.escalation[0].after"),
        ),
        (
            with(json!({"escalation": [{"after": 0, "remind": "approvers"}]})),
            error("invalid_policy", "must be at least 1 second, not 0", "policy.escalation[0].after"),
        ),
        (
            with(json!({"escalation": [{"after": "10m", "fallback": "reject"}, {"after": "20m", "remind": "approvers"}]})),
            error("invalid_policy", "comes after the fallback; the fallback must be the last step", "policy.escalation[1]"),
        ),
        (
            with(json!({"escalation": [{"after": "5m", "show_in": "irc:#ops"}]})),
            error(
                "invalid_policy",
                "`irc:#ops` is not platform:chat (e.g. telegram:-100123/7, discord:1100…, discord:user:80…, slack:C0123…, slack:user:U0123…, teams:19:…@thread.tacv2, teams:user:2f1c…, mattermost:4xp9…, mattermost:user:8w1z…, matrix:!ops:example.org, matrix:user:@ana:example.org)",
                "policy.escalation[0].show_in",
            ),
        ),
        (
            with(json!({"escalation": [{"after": "5m", "remind": "approvers"}, {"after": "15m", "show_in": "discord:1300000000000000000"}]})),
            error("platform_not_enabled", "discord is not enabled on this bridge", "policy.escalation[1].show_in"),
        ),
        (
            with(json!({"escalation": [{"after": "5m", "fallback": "maybe"}]})),
            error("invalid_policy", "`maybe` is not approve, reject or leave", "policy.escalation[0].fallback"),
        ),
        (
            with(json!({"remember": ["session"], "quorum": 2, "approvers": ["telegram:3003", "telegram:3004"]})),
            error("invalid_policy", "cannot be used with a quorum above 1: a rule set by one person would skip the quorum next time", "policy.remember"),
        ),
        (
            json!({"targets": [ops_target()], "question": "Proceed?", "choices": ["Yes", "No"], "policy": {"quorum": 1}}),
            error("invalid_policy", "a policy applies to tool-call approvals, not to questions", "policy"),
        ),
    ];
    for (body, expected) in cases {
        let (status, err) = api.push(&body).await;
        assert_eq!((status, &err), (StatusCode::UNPROCESSABLE_ENTITY, &expected), "{body}");
    }
    // Type errors and unknown keys name the path too.
    for (policy, field) in [(json!({"quorum": "two"}), "policy.quorum"), (json!({"quorom": 2}), "policy.quorom"), (json!({"tools": ["*"]}), "policy.tools")] {
        let (status, err) = api.push(&with(policy.clone())).await;
        assert_eq!(
            (status, err["error"]["code"].as_str(), err["error"]["field"].as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_field"), Some(field)),
            "{policy} → {err}"
        );
    }

    // A fallback's moment is the deadline, whatever timeout_seconds says.
    let mut body = with(json!({"approvers": ["telegram:3003", "telegram:3004"], "quorum": 2,
        "escalation": [{"after": "5m", "remind": "approvers"}, {"after": "10m", "fallback": "reject"}]}));
    body["approval_key"] = json!("pol-1");
    body["timeout_seconds"] = json!(3600);
    let (status, created) = api.push(&body).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let left = ms_until(&created["expires_at"]);
    assert!((590_000..=600_000).contains(&left), "expires at the fallback (600 s), not the timeout: {left} ms");
    // The same body again: 200; another policy under the key: 409.
    let (status, again) = api.push(&body).await;
    assert_eq!((status, &again), (StatusCode::OK, &api.get("pol-1").await));
    assert_eq!((again["quorum"].as_u64(), &again["votes"]), (Some(2), &json!([])));
    let mut other = body.clone();
    other["policy"]["quorum"] = json!(1);
    let (status, err) = api.push(&other).await;
    assert_eq!((status, err["error"]["code"].as_str()), (StatusCode::CONFLICT, Some("conflict")));
    let mut without = body.clone();
    without.as_object_mut().unwrap().remove("policy");
    assert_eq!(api.push(&without).await.0, StatusCode::CONFLICT, "dropping the policy is another request");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(api.tg().calls("sendMessage").len(), 1, "refused requests are never shown");
    api.stop().await;
}

/// Two of two named approvers must approve: the first click is a vote (still pending,
/// GET shows it), the same person cannot vote twice, a stranger cannot vote, the
/// second approver's click resolves it.
#[tokio::test]
async fn quorum_of_two_named_approvers() {
    let api = Api::start(|s| s.platforms.get_mut::<DiscordSettings>().enabled = false).await;
    let body = json!({"approval_key": "q2-1", "targets": [ops_target()],
        "actions": [{"name": "run_migration", "args": {"db": "orders"}}],
        "policy": {"approvers": ["telegram:3003", "telegram:3004"], "quorum": 2}});
    let (status, created) = api.push(&body).await;
    assert_eq!((status, created["status"].as_str()), (StatusCode::CREATED, Some("pending")), "{created}");
    let card = api.tg_message(OPS, "run_migration").await;
    let id = id_of(&card);

    let toast = api.tg_click(OPS, id, "Approve", &ana()).await;
    assert_ne!(toast["show_alert"], true, "a counted vote: {toast}");
    let state = wait_until(|| async {
        let state = api.get("q2-1").await;
        (state["votes"].as_array().is_some_and(|v| v.len() == 1)).then_some(state)
    })
    .await;
    assert_eq!(state["status"], "pending");
    assert_eq!(state["quorum"], 2);
    let vote = &state["votes"][0];
    assert_eq!((&vote["by"], &vote["decisions"]), (&json!({"platform": "telegram", "id": "3003", "name": "Ana"}), &json!([{"type": "approve"}])));
    assert!(vote["at"].as_str().is_some_and(|t| t.ends_with('Z')), "{vote}");
    assert_eq!(vote.as_object().unwrap().len(), 3, "by, at, decisions: {vote}");
    assert!(state.get("decided_by").is_none() && state.get("reply").is_none() && state.get("settled_by").is_none(), "{state}");

    // The same person again: refused, nothing changes.
    let toast = api.tg_click(OPS, id, "Approve", &ana()).await;
    assert!(toast["text"].as_str().is_some_and(|t| t.contains("already voted")), "{toast}");
    // Someone not listed: refused, nothing changes.
    let toast = api.tg_click(OPS, id, "Approve", &mallory()).await;
    assert_eq!(toast["show_alert"], true, "{toast}");
    assert_eq!(api.get("q2-1").await, state, "nothing changed");
    assert!(has_keyboard(&api.tg().message(OPS, id).unwrap()));

    api.tg_click(OPS, id, "Approve", &binh()).await;
    let done = api.decided("q2-1").await;
    assert_eq!(done["status"], "resolved");
    assert_eq!(done["reply"], json!({"decisions": [{"type": "approve"}]}));
    assert_eq!(done["decided_by"], json!({"platform": "telegram", "id": "3004", "name": "Binh"}));
    let voters: Vec<&Value> = done["votes"].as_array().unwrap().iter().map(|v| &v["by"]["id"]).collect();
    assert_eq!(voters, ["3003", "3004"], "both votes, in order");
    assert!(done.get("settled_by").is_none(), "people decided it");
    assert_eq!(done["policy"], "request", "the request's own policy applied");
    api.stop().await;
}

/// A `[[policies]]` entry that matches a pushed request applies instead of the
/// policy the agent sent (an agent cannot weaken what the operator configured): here
/// the operator's single approver decides alone, though the agent asked for two, and
/// the state names the policy that applied.
#[tokio::test]
async fn a_configured_policy_overrides_the_requests_own() {
    let api = Api::start(|s| {
        s.platforms.get_mut::<DiscordSettings>().enabled = false;
        s.policies = vec![
            serde_json::from_value(json!({"name": "migrations", "tools": ["run_migration"], "backends": ["http"], "approvers": ["telegram:3004"]})).unwrap(),
        ];
    })
    .await;
    let body = json!({"approval_key": "cfg-1", "targets": [ops_target()],
        "actions": [{"name": "run_migration", "args": {"db": "orders"}}],
        "policy": {"approvers": ["telegram:3003", "telegram:3004"], "quorum": 2}});
    let (status, created) = api.push(&body).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let state = api.get("cfg-1").await;
    assert_eq!((state["policy"].as_str(), state.get("quorum")), (Some("migrations"), None), "{state}");
    let id = id_of(&api.tg_message(OPS, "run_migration").await);
    // Ana is an approver of the agent's policy, not of the operator's.
    let toast = api.tg_click(OPS, id, "Approve", &ana()).await;
    assert_eq!(toast["show_alert"], true, "{toast}");
    api.tg_click(OPS, id, "Approve", &binh()).await;
    let done = api.decided("cfg-1").await;
    assert_eq!((done["status"].as_str(), &done["reply"]), (Some("resolved"), &json!({"decisions": [{"type": "approve"}]})));
    assert_eq!(done["decided_by"]["id"], "3004");
    api.stop().await;
}

/// A fallback ends a request nobody decides: status `expired` at the fallback's
/// moment, its reject decisions in `reply`, and `settled_by` says so.
#[tokio::test]
async fn policy_fallback_rejects_when_nobody_decides() {
    let api = Api::start(|s| s.platforms.get_mut::<DiscordSettings>().enabled = false).await;
    let body = json!({"approval_key": "fb-1", "targets": [ops_target()], "timeout_seconds": 600,
        "actions": [{"name": "a", "args": {}}, {"name": "b", "args": {}}],
        "policy": {"escalation": [{"after": "1s", "fallback": "reject"}]}});
    let (status, created) = api.push(&body).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert!(ms_until(&created["expires_at"]) <= 1_000, "{created}");
    let state = api.decided("fb-1").await;
    assert_eq!(state["status"], "expired");
    let reject = json!({"type": "reject", "message": "no human decision after 1 s: rejected by policy request"});
    assert_eq!(state["reply"], json!({"decisions": [reject, reject]}));
    assert_eq!(state["settled_by"], json!({"fallback": {"decision": "reject", "after_seconds": 1}}));
    assert!(state.get("decided_by").is_none());
    api.stop().await;
}

/// An approval key belongs to the token that pushed it: a second agent using the same
/// key gets its own request (201, not a 409 that would tell it the key is in use),
/// neither sees nor cancels the other's, and each is audited under its agent.
#[tokio::test]
async fn two_agents_may_use_the_same_key() {
    let api = Api::start(|_| {}).await;
    let push_as = |token: &'static str, tool: &'static str| {
        let body = json!({"approval_key": "deploy-43_1", "targets": [ops_target()], "actions": [{"name": tool, "args": {}}]});
        api.send(reqwest::Method::POST, "/v1/requests", Some(token), Some(body.to_string().into_bytes()))
    };
    let (status, theirs) = push_as("other-secret", "their_deploy").await;
    assert_eq!(status, StatusCode::CREATED, "{theirs}");
    let (status, ours) = push_as(SECRET, "our_deploy").await;
    assert_eq!(status, StatusCode::CREATED, "{ours}");
    let their_card = api.tg_message(OPS, "their_deploy").await;
    let our_card = api.tg_message(OPS, "our_deploy").await;

    // Each reads its own.
    let (_, mine) = api.send(reqwest::Method::GET, "/v1/requests/deploy-43_1", Some(SECRET), None).await;
    let (_, other) = api.send(reqwest::Method::GET, "/v1/requests/deploy-43_1", Some("other-secret"), None).await;
    assert_eq!((mine["status"].as_str(), other["status"].as_str()), (Some("pending"), Some("pending")));
    // Cancelling ours leaves theirs pending and shown.
    assert_eq!(api.delete("deploy-43_1").await.0, StatusCode::OK);
    api.tg_shows(OPS, id_of(&our_card), "ancelled").await;
    let (_, other) = api.send(reqwest::Method::GET, "/v1/requests/deploy-43_1", Some("other-secret"), None).await;
    assert_eq!(other["status"], "pending");
    assert!(has_keyboard(&api.tg().message(OPS, id_of(&their_card)).unwrap()));
    api.tg_click(OPS, id_of(&their_card), "Approve", &ana()).await;
    let (_, other) = api.send(reqwest::Method::GET, "/v1/requests/deploy-43_1?wait=5", Some("other-secret"), None).await;
    assert_eq!((other["status"].as_str(), other["reply"].clone()), (Some("resolved"), json!({"decisions": [{"type": "approve"}]})));
    assert_eq!(api.get("deploy-43_1").await["status"], "cancelled", "ours stays cancelled");

    let store = hitl_bridge::store::Store::connect(&api.settings.store.url).await.unwrap();
    let mut audited: Vec<(String, Option<String>)> = store.audit_log("deploy-43_1").await.unwrap().into_iter().map(|e| (e.outcome, e.agent)).collect();
    audited.sort();
    assert_eq!(audited, [("cancelled".to_owned(), Some("ci".to_owned())), ("resolved".to_owned(), Some("other".to_owned()))]);
    api.stop().await;
}

// ---------------------------------------------------------------------------------
// Callbacks facing hostile or broken receivers.

/// A TCP listener that accepts connections and never answers: a receiver that hangs.
async fn hanging_receiver() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    (url, task)
}

fn approval_with_callback(key: &str, url: &str) -> Value {
    json!({"approval_key": key, "targets": [ops_target()], "callback_url": url, "actions": [{"name": "noop", "args": {}}]})
}

/// Five receivers that never answer, then a healthy one: the healthy callback arrives
/// at once, not after the others' timeouts.
#[tokio::test]
async fn a_healthy_callback_is_not_held_up_by_hanging_receivers() {
    let api = Api::start(|_| {}).await;
    let mut hanging = Vec::new();
    for n in 0..5 {
        let (url, task) = hanging_receiver().await;
        hanging.push(task);
        assert_eq!(api.push(&approval_with_callback(&format!("a-hang-{n}"), &url)).await.0, StatusCode::CREATED);
    }
    let healthy = Receiver::start(&[]).await;
    assert_eq!(api.push(&approval_with_callback("z-healthy", &healthy.url)).await.0, StatusCode::CREATED);
    for n in 0..5 {
        assert_eq!(api.delete(&format!("a-hang-{n}")).await.0, StatusCode::OK);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let settled = std::time::Instant::now();
    assert_eq!(api.delete("z-healthy").await.0, StatusCode::OK);
    healthy.wait_hits(1).await;
    let took = settled.elapsed();
    println!("healthy callback behind five hanging receivers: {took:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    for task in hanging {
        task.abort();
    }
    api.stop().await;
}

/// Due callbacks go by due time, then by when they were pushed, never by key (nor by
/// when they were settled).
#[tokio::test]
async fn callbacks_go_in_push_order_not_key_order() {
    let api = Api::start(|s| {
        s.http.callback_concurrency = 1;
        s.http.callback_timeout_secs = 2;
    })
    .await;
    let hook = Receiver::start(&[]).await;
    // The one delivery slot is busy with a receiver that hangs while the two settle.
    let (hanging, hang_task) = hanging_receiver().await;
    assert_eq!(api.push(&approval_with_callback("blocker", &hanging)).await.0, StatusCode::CREATED);
    for key in ["zz-first", "aa-second"] {
        assert_eq!(api.push(&approval_with_callback(key, &hook.url)).await.0, StatusCode::CREATED);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(api.delete("blocker").await.0, StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(300)).await;
    for key in ["aa-second", "zz-first"] {
        assert_eq!(api.delete(key).await.0, StatusCode::OK);
    }
    let hits = hook.wait_hits(2).await;
    let keys: Vec<String> = hits.iter().map(|(_, body)| serde_json::from_str::<Value>(body).unwrap()["approval_key"].as_str().unwrap().to_owned()).collect();
    assert_eq!(keys, ["zz-first", "aa-second"]);
    hang_task.abort();
    api.stop().await;
}

/// A pushed request has no backend with its own timer: it ends at the deadline its
/// card shows ("answer by …"), not `timeouts.grace_secs` later.
#[tokio::test]
async fn a_pushed_request_expires_at_the_deadline_it_shows() {
    let api = Api::start(|s| s.timeouts.grace_secs = 10).await;
    let pushed = std::time::Instant::now();
    let body = json!({"approval_key": "dl-1", "targets": [ops_target()], "timeout_seconds": 2, "actions": [{"name": "a", "args": {}}]});
    assert_eq!(api.push(&body).await.0, StatusCode::CREATED);
    let state = api.decided("dl-1").await;
    let took = pushed.elapsed();
    assert_eq!(state["status"], "expired");
    assert!(took >= Duration::from_secs(2) && took < Duration::from_secs(6), "expired {took:?} after the push: the deadline is 2 s, deadline + grace 12 s");
    api.stop().await;
}

/// The pending list comes in pages: `limit` rows each, oldest first, `next_cursor` to
/// go on until it is null; nothing repeated or skipped, a request ended between pages
/// is not listed, and a forged cursor or a limit out of range is refused.
#[tokio::test]
async fn the_pending_list_is_paged_with_an_opaque_cursor() {
    let api = Api::start(|_| {}).await;
    let pushed: Vec<String> = (0..25).map(|n| format!("page-{n:02}")).collect();
    for key in &pushed {
        let body = json!({"approval_key": key, "targets": [ops_target()], "actions": [{"name": "deploy", "args": {}}]});
        assert_eq!(api.push(&body).await.0, StatusCode::CREATED);
    }
    let page = |query: String| {
        let api = &api;
        async move {
            let (status, body) = api.send(reqwest::Method::GET, &format!("/v1/requests?status=pending{query}"), Some(SECRET), None).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            let keys: Vec<String> = body["requests"].as_array().unwrap().iter().map(|r| r["approval_key"].as_str().unwrap().to_owned()).collect();
            (keys, body["next_cursor"].as_str().map(str::to_owned))
        }
    };
    let (first, cursor) = page("&limit=10".into()).await;
    assert_eq!(first, pushed[..10]);
    // Ended between pages: not listed on the next one.
    assert_eq!(api.delete("page-12").await.0, StatusCode::OK);
    let (second, cursor) = page(format!("&limit=10&cursor={}", cursor.expect("a second page"))).await;
    let expected: Vec<String> = pushed[10..21].iter().filter(|k| *k != "page-12").cloned().collect();
    assert_eq!(second, expected);
    let (third, cursor) = page(format!("&limit=10&cursor={}", cursor.expect("a third page"))).await;
    assert_eq!(third, pushed[21..]);
    assert_eq!(cursor, None, "the last page");
    let (all, cursor) = page(String::new()).await;
    assert_eq!((all.len(), cursor), (24, None), "the default page holds 100");

    for query in ["&limit=0", "&limit=1001", "&limit=ten", "&cursor=bm90LW91cnM", "&cursor=%%%"] {
        let (status, err) = api.send(reqwest::Method::GET, &format!("/v1/requests?status=pending{query}"), Some(SECRET), None).await;
        assert_eq!((status, err["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("invalid_query")), "{query}: {err}");
    }
    api.stop().await;
}

/// A 307 from the receiver is a failed attempt: the signed state never reaches where
/// it points, and the callback is tried again later.
#[tokio::test]
async fn a_redirect_is_not_followed() {
    let api = Api::start(|_| {}).await;
    let elsewhere = Receiver::start(&[]).await;
    let redirecting = {
        let to = elsewhere.url.clone();
        let hits: Arc<Mutex<usize>> = Arc::default();
        let counted = hits.clone();
        let app = axum::Router::new().route(
            "/hook",
            post(move || {
                let (to, counted) = (to.clone(), counted.clone());
                async move {
                    *counted.lock().unwrap() += 1;
                    (StatusCode::TEMPORARY_REDIRECT, [(axum::http::header::LOCATION, to)])
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (url, hits)
    };
    assert_eq!(api.push(&approval_with_callback("redir-1", &redirecting.0)).await.0, StatusCode::CREATED);
    api.delete("redir-1").await;
    wait_until(|| async { (*redirecting.1.lock().unwrap() >= 2).then_some(()) }).await;
    assert!(elsewhere.hits().is_empty(), "the redirect target received the signed state");
    api.stop().await;
}

/// Callback URLs aimed inside the network are refused at push time, by what they
/// resolve to, unless http.callback_allow_private.
#[tokio::test]
async fn callback_urls_inside_the_network_are_refused() {
    let mut api = Api::start(|s| s.http.callback_allow_private = false).await;
    for url in [
        "http://127.0.0.1:5432/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]:5432/",
        "http://10.1.2.3/hook",
        "http://[fc00::1]/hook",
        "http://localhost:22/",
        "http://[::ffff:127.0.0.1]/",
    ] {
        let (status, err) = api.push(&approval_with_callback("ssrf", url)).await;
        assert_eq!(
            (status, err["error"]["code"].as_str(), err["error"]["field"].as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some("invalid_callback_url"), Some("callback_url")),
            "{url}: {err}"
        );
        assert!(err["error"]["message"].as_str().unwrap().contains("private or internal address"), "{err}");
    }
    assert_eq!(api.send(reqwest::Method::GET, "/v1/requests/ssrf", Some(SECRET), None).await.0, StatusCode::NOT_FOUND, "nothing was stored");

    // Pushed while private addresses were allowed, delivered after they no longer are
    // (as when a name resolves elsewhere by then): refused at connect time, for an IP
    // and for a name alike.
    api.settings.http.callback_allow_private = true;
    api.restart().await;
    let by_ip = Receiver::start(&[]).await;
    let by_name = Receiver::start(&[]).await;
    let name_url = by_name.url.replace("127.0.0.1", "localhost");
    assert_eq!(api.push(&approval_with_callback("late-ip", &by_ip.url)).await.0, StatusCode::CREATED);
    assert_eq!(api.push(&approval_with_callback("late-name", &name_url)).await.0, StatusCode::CREATED);
    api.settings.http.callback_allow_private = false;
    api.restart().await;
    api.delete("late-ip").await;
    api.delete("late-name").await;
    // Both were tried (and failed), not skipped: still owed, with an attempt each.
    let store = hitl_bridge::store::Store::connect(&api.settings.store.url).await.unwrap();
    wait_until(|| async {
        let owed = store.due_callbacks(i64::MAX, 10).await.unwrap();
        (owed.len() == 2 && owed.iter().all(|c| c.attempts >= 1)).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(by_ip.hits().is_empty() && by_name.hits().is_empty(), "a callback reached an internal address");
    api.stop().await;
}

// ---------------------------------------------------------------------------------
// MCP (`/mcp`): the official MCP Python SDK as the client, tests/backends/mcp_client.

/// One run of tests/backends/mcp_client/client.py against the bridge's `/mcp`: its
/// JSON-line events as they come.
struct McpClient {
    child: tokio::process::Child,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl McpClient {
    /// (`installed` fails the test without the SDK's venv; these tests are `#[ignore]`d.)
    fn start(api: &Api, token: &str, scenario: &str, args: Value) -> Option<McpClient> {
        Self::run(&format!("{}/mcp", api.base), token, scenario, args)
    }

    /// The client's own arguments (`url`, `token`) as the scenario reads them.
    fn run(url: &str, token: &str, scenario: &str, args: Value) -> Option<McpClient> {
        use tokio::io::AsyncBufReadExt;
        let venv = backends::installed("mcp_client")?;
        let mut child = tokio::process::Command::new(venv.join("bin/python"))
            .arg(backends::spec_dir("mcp_client").join("client.py"))
            .args([url.to_owned(), token.to_owned(), scenario.to_owned(), args.to_string()])
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start the MCP client");
        let lines = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
        Some(McpClient { child, lines })
    }

    /// The next event whose `event` is `kind` (others before it are skipped).
    async fn next(&mut self, kind: &str) -> Value {
        let wait = async {
            while let Some(line) = self.lines.next_line().await.expect("client output") {
                let event: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"));
                if event["event"] == kind {
                    return event;
                }
            }
            panic!("the MCP client ended before a {kind:?} event");
        };
        tokio::time::timeout(Duration::from_secs(60), wait).await.unwrap_or_else(|_| panic!("no {kind:?} event within 60 s"))
    }

    async fn end(mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
    }
}

/// A chat an MCP tool is given, written as in `routing.channels`, becomes the target
/// the tool pushes in its platform's own grammar (the registry's, which the assembly
/// hands to the MCP server).
#[test]
fn mcp_targets_are_written_as_in_routing_channels() {
    let networks = hitl_bridge::platform::registry::networks();
    let target = |text: &str| hitl_bridge::mcp::tools::target(&networks, text);
    assert_eq!(target("telegram:-1001234/7"), Some(json!({"platform": "telegram", "chat_id": "-1001234", "thread_id": "7"})));
    assert_eq!(target("discord:42"), Some(json!({"platform": "discord", "channel_id": "42"})));
    assert_eq!(target("discord:user:9"), Some(json!({"platform": "discord", "user_id": "9"})));
    assert_eq!(target("console"), Some(json!({"platform": "console"})));
    for bad in ["slack:1", "telegram:", "telegram:abc", "discord:1/x", "telegram:user:me"] {
        assert_eq!(target(bad), None, "{bad}");
    }
}

/// A bridge whose MCP tools show requests in the ops group unless told otherwise.
async fn mcp_api() -> Api {
    Api::start(|s| s.mcp.default_targets = vec![format!("telegram:{OPS}")]).await
}

fn call(tool: &str, arguments: Value) -> Value {
    json!({"tool": tool, "arguments": arguments})
}

#[tokio::test]
#[ignore = "needs the mcp_client backend: bash tests/backends/install.sh mcp_client, then cargo test -- --include-ignored"]
async fn mcp_lists_its_tools_with_schemas_and_refuses_a_wrong_token() {
    let api = mcp_api().await;
    let Some(mut client) = McpClient::start(&api, SECRET, "list", json!({})) else { return api.stop().await };
    let tools = client.next("tools").await;
    let names: Vec<&str> = tools["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["approval_prompt", "ask_user_question", "request_approval"]);
    let approval = tools["tools"].as_array().unwrap().iter().find(|t| t["name"] == "request_approval").unwrap();
    assert_eq!(approval["inputSchema"]["required"], json!(["actions"]), "{approval}");
    for field in ["actions", "text", "targets", "approvers", "timeout_seconds", "policy", "approval_key"] {
        assert!(approval["inputSchema"]["properties"].get(field).is_some(), "{field} in {approval}");
    }
    client.end().await;
    let mut refused = McpClient::start(&api, "wrong-token", "list", json!({})).unwrap();
    assert_eq!(refused.next("error").await["message"], "Server returned an error response");
    refused.end().await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    for token in [None, Some("wrong-token")] {
        let (status, body) = api.send(reqwest::Method::POST, "/mcp", token, Some(initialize.to_string().into_bytes())).await;
        assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::UNAUTHORIZED, Some("unauthorized")), "{token:?}");
    }
    api.stop().await;
}

/// request_approval blocks until the click on Telegram, reporting progress, and
/// returns the decisions exactly as `/v1` has them, with who and when; the token's
/// name is the audited agent.
#[tokio::test]
#[ignore = "needs the mcp_client backend: bash tests/backends/install.sh mcp_client, then cargo test -- --include-ignored"]
async fn mcp_request_approval_is_decided_on_telegram() {
    let api = mcp_api().await;
    let args = call(
        "request_approval",
        json!({"actions": [{"name": "run_migration", "args": {"db": "orders"}, "description": "adds a column"}],
        "text": "Release 43", "approval_key": "mcp-1", "timeout_seconds": 300}),
    );
    let Some(mut client) = McpClient::start(&api, SECRET, "call", args) else { return api.stop().await };
    let progress = client.next("progress").await;
    assert!(progress["message"].as_str().unwrap().starts_with(&format!("waiting for a decision in telegram:{OPS}, ")), "{progress}");
    let card = api.tg_message(OPS, "run_migration").await;
    assert!(card["text"].as_str().unwrap().contains("Release 43"));
    api.tg_click(OPS, id_of(&card), "Approve", &ana()).await;
    let result = client.next("result").await;
    assert_eq!(result["isError"], false);
    let state = api.get("mcp-1").await;
    assert_eq!(
        result["structured"],
        json!({"decisions": [{"type": "approve"}], "approval_key": "mcp-1", "status": "resolved",
        "decided_by": {"platform": "telegram", "id": "3003", "name": "Ana"}, "decided_at": state["decided_at"]})
    );
    assert_eq!(serde_json::from_str::<Value>(result["text"].as_str().unwrap()).unwrap(), result["structured"], "the same as text");
    client.end().await;
    let store = hitl_bridge::store::Store::connect(&api.settings.store.url).await.unwrap();
    let audit = store.audit_log("mcp-1").await.unwrap();
    assert_eq!((audit[0].outcome.as_str(), audit[0].agent.as_deref()), ("resolved", Some("ci")));
    api.stop().await;
}

/// approval_prompt answers in Claude Code's permission-prompt shape: allow with the
/// input, or deny with the approver's words.
#[tokio::test]
#[ignore = "needs the mcp_client backend: bash tests/backends/install.sh mcp_client, then cargo test -- --include-ignored"]
async fn mcp_approval_prompt_answers_as_claude_code_expects() {
    let api = mcp_api().await;
    let prompt = |id: &str| call("approval_prompt", json!({"tool_name": "Bash", "input": {"command": "touch done.txt"}, "tool_use_id": id}));
    let Some(mut client) = McpClient::start(&api, SECRET, "call", prompt("toolu_1")) else { return api.stop().await };
    let card = api.tg_message(OPS, "touch done.txt").await;
    api.tg_click(OPS, id_of(&card), "Approve", &ana()).await;
    let result = client.next("result").await;
    assert_eq!(
        (result["isError"].clone(), result["text"].clone()),
        (json!(false), json!(r#"{"behavior":"allow","updatedInput":{"command":"touch done.txt"}}"#))
    );
    client.end().await;

    let mut client = McpClient::start(&api, SECRET, "call", prompt("toolu_2")).unwrap();
    client.next("calling").await;
    let card = wait_until(|| async {
        api.tg().bot_messages(OPS).into_iter().rev().find(|m| m["text"].as_str().is_some_and(|t| t.contains("touch done.txt")) && has_keyboard(m))
    })
    .await;
    api.tg_click(OPS, id_of(&card), "Reject", &ana()).await;
    let result = client.next("result").await;
    assert_eq!(result["text"], json!(r#"{"behavior":"deny","message":"Rejected by Ana."}"#));
    client.end().await;
    api.stop().await;
}

/// ask_user_question answered on Discord: the stream protocol's answers map and the
/// API's selected_options.
#[tokio::test]
#[ignore = "needs the mcp_client backend: bash tests/backends/install.sh mcp_client, then cargo test -- --include-ignored"]
async fn mcp_ask_user_question_is_answered_on_discord() {
    let api = mcp_api().await;
    api.dc().wait_identified(1).await;
    let args = call(
        "ask_user_question",
        json!({"questions": [{"question": "Which DB?", "header": "DB", "options": [{"label": "Postgres"}, {"label": "SQLite"}]}],
        "targets": [format!("discord:{CHANNEL_ID}")]}),
    );
    let Some(mut client) = McpClient::start(&api, SECRET, "call", args) else { return api.stop().await };
    let card = api.dc().wait_request(0, |r| r.method == "POST" && r.path.ends_with(&format!("/channels/{CHANNEL_ID}/messages"))).await;
    let message_id = card.response.as_ref().and_then(|m| m["id"].as_str()).unwrap().to_owned();
    let rows = card.body["components"].as_array().unwrap();
    let buttons: Vec<&Value> = rows.iter().flat_map(|r| r["components"].as_array().unwrap()).collect();
    let who = fake_discord::user("500000000000000001", "Lan");
    match buttons.iter().find(|c| c["type"] == 3) {
        Some(select) => {
            api.dc()
                .dispatch("INTERACTION_CREATE", fake_discord::select(api.dc(), select["custom_id"].as_str().unwrap(), &["0"], &message_id, CHANNEL_ID, &who));
            api.dc().wait_request(0, |r| r.method == "PATCH" && r.path.ends_with(&format!("/messages/{message_id}"))).await;
            let submit = buttons.iter().find(|c| c["label"] == "Submit").expect("Submit");
            api.dc().dispatch("INTERACTION_CREATE", fake_discord::click(api.dc(), submit["custom_id"].as_str().unwrap(), &message_id, CHANNEL_ID, &who, &[]));
        }
        None => {
            let postgres = buttons.iter().find(|c| c["label"].as_str().is_some_and(|l| l.contains("Postgres"))).expect("a Postgres button");
            api.dc().dispatch("INTERACTION_CREATE", fake_discord::click(api.dc(), postgres["custom_id"].as_str().unwrap(), &message_id, CHANNEL_ID, &who, &[]));
        }
    }
    let result = client.next("result").await;
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structured"]["answers"], json!({"Which DB?": "Postgres"}));
    assert_eq!(result["structured"]["selected_options"], json!([["Postgres"]]));
    assert_eq!(result["structured"]["decided_by"], json!({"platform": "discord", "id": "500000000000000001", "name": "Lan"}));
    client.end().await;
    api.stop().await;
}

/// A client that gives up (its read timeout sends notifications/cancelled) cancels
/// the request: the card locks; an unanswered request is a tool error naming its
/// deadline.
#[tokio::test]
#[ignore = "needs the mcp_client backend: bash tests/backends/install.sh mcp_client, then cargo test -- --include-ignored"]
async fn mcp_a_cancelled_call_locks_the_card_and_an_expired_one_is_a_tool_error() {
    let api = mcp_api().await;
    let mut args = call("request_approval", json!({"actions": [{"name": "drop_table"}], "approval_key": "mcp-cancel"}));
    args["timeout"] = json!(2);
    let Some(mut client) = McpClient::start(&api, SECRET, "call", args) else { return api.stop().await };
    let card = api.tg_message(OPS, "drop_table").await;
    client.next("error").await;
    let locked = api.tg_shows(OPS, id_of(&card), "ancel").await;
    assert!(!has_keyboard(&locked), "{locked}");
    assert_eq!(api.get("mcp-cancel").await["status"], "cancelled");
    client.end().await;

    let args = call("request_approval", json!({"actions": [{"name": "rotate_keys"}], "approval_key": "mcp-expire", "timeout_seconds": 1}));
    let mut client = McpClient::start(&api, SECRET, "call", args).unwrap();
    let result = client.next("result").await;
    assert_eq!(result["isError"], true);
    let deadline = api.get("mcp-expire").await["expires_at"].as_str().unwrap().to_owned();
    assert_eq!(result["text"], format!("nobody answered request \"mcp-expire\" before its deadline ({deadline}); it expired"));
    client.end().await;
    api.stop().await;
}

/// The same call twice with the same key joins one request (one card); bad
/// arguments are a tool error naming the field.
#[tokio::test]
#[ignore = "needs the mcp_client backend: bash tests/backends/install.sh mcp_client, then cargo test -- --include-ignored"]
async fn mcp_a_repeated_key_joins_the_request_and_bad_arguments_name_the_field() {
    let api = mcp_api().await;
    let args = call("request_approval", json!({"actions": [{"name": "restart_db"}], "approval_key": "mcp-twice"}));
    let Some(mut client) = McpClient::start(&api, SECRET, "twice", args) else { return api.stop().await };
    client.next("progress").await;
    let card = api.tg_message(OPS, "restart_db").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let cards = api.tg().bot_messages(OPS).into_iter().filter(|m| m["text"].as_str().is_some_and(|t| t.contains("restart_db"))).count();
    assert_eq!(cards, 1, "one request, one card");
    api.tg_click(OPS, id_of(&card), "Approve", &ana()).await;
    let (first, second) = (client.next("result").await, client.next("result").await);
    assert_eq!(first["structured"], second["structured"]);
    assert_eq!(first["structured"]["decisions"], json!([{"type": "approve"}]));
    client.end().await;

    let bad = call("request_approval", json!({"actions": [{"name": "x"}], "targets": ["telegram:-100", "irc:1"]}));
    let mut client = McpClient::start(&api, SECRET, "call", bad).unwrap();
    let result = client.next("result").await;
    assert_eq!(result["isError"], true);
    assert_eq!(result["structured"]["error"]["field"], "targets[1]", "{result}");
    client.end().await;
    api.stop().await;
}

// `/mcp` under hostile traffic, over raw HTTP (no MCP SDK needed): sessions bound to
// their token, bounded, closed when idle; a call whose client left is cancelled; one
// body limit.

const OTHER: &str = "other-secret";

/// One POST to `/mcp`: its status, the session id it names, and its body (the
/// JSON-RPC message of an SSE answer, or the error body).
async fn mcp_post(api: &Api, token: &str, session: Option<&str>, message: &Value) -> (StatusCode, Option<String>, Value) {
    let response = mcp_request(api, token, session, message).send().await.expect("request");
    let status = StatusCode::from_u16(response.status().as_u16()).unwrap();
    let id = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let text = response.text().await.expect("body");
    let data = text.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).find(|d| !d.is_empty());
    let body = serde_json::from_str(data.unwrap_or(&text)).unwrap_or(Value::String(text));
    (status, id, body)
}

fn mcp_request(api: &Api, token: &str, session: Option<&str>, message: &Value) -> reqwest::RequestBuilder {
    let mut request = api
        .http
        .post(format!("{}/mcp", api.base))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(message.to_string());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session).header("mcp-protocol-version", "2025-06-18");
    }
    request
}

/// A session opened (initialize, then initialized) with `token`, or the refusal.
async fn mcp_open(api: &Api, token: &str) -> Result<String, (StatusCode, Value)> {
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let (status, id, body) = mcp_post(api, token, None, &initialize).await;
    let Some(id) = id.filter(|_| status == StatusCode::OK) else { return Err((status, body)) };
    let (status, _, _) = mcp_post(api, token, Some(&id), &json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    Ok(id)
}

async fn mcp_list(api: &Api, token: &str, session: &str) -> (StatusCode, Value) {
    let (status, _, body) = mcp_post(api, token, Some(session), &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await;
    (status, body)
}

fn approval_call(id: u64, key: &str, action: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "request_approval", "arguments": {"actions": [{"name": action}], "approval_key": key}}})
}

/// Another token's session is unknown to a token: it cannot list, call or cancel there.
#[tokio::test]
async fn mcp_a_session_belongs_to_the_token_that_opened_it() {
    let api = mcp_api().await;
    let mine = mcp_open(&api, SECRET).await.expect("opened");
    assert_eq!(mcp_list(&api, SECRET, &mine).await.0, StatusCode::OK);
    // A call waits in the owner's session.
    let waiting = mcp_request(&api, SECRET, Some(&mine), &approval_call(2, "mcp-owned", "drop_table")).send().await.expect("call");
    api.tg_message(OPS, "drop_table").await;
    let (status, body) = mcp_list(&api, OTHER, &mine).await;
    assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("unknown_session")), "{body}");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}});
    let (status, _, _) = mcp_post(&api, OTHER, Some(&mine), &cancel).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, _) = mcp_post(&api, OTHER, Some(&mine), &approval_call(3, "mcp-intruder", "drop_table")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(api.get("mcp-owned").await["status"], "pending", "the other token's cancel changed nothing");
    assert_eq!(api.send(reqwest::Method::GET, "/v1/requests/mcp-intruder", Some(OTHER), None).await.0, StatusCode::NOT_FOUND);
    // The owner still uses it, and its own cancel works.
    let (status, _, _) = mcp_post(&api, SECRET, Some(&mine), &cancel).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(api.decided("mcp-owned").await["status"], "cancelled");
    drop(waiting);
    api.stop().await;
}

/// Sessions are capped per token and in all, the refusal naming the setting; a
/// session nobody is connected to closes after `mcp.session_idle_secs`, freeing its
/// place.
#[tokio::test]
async fn mcp_sessions_are_capped_and_idle_ones_close() {
    let api = Api::start(|s| {
        s.mcp.default_targets = vec![format!("telegram:{OPS}")];
        s.mcp.max_sessions_per_token = 2;
        s.mcp.max_sessions = 3;
        s.mcp.session_idle_secs = 1;
    })
    .await;
    let first = mcp_open(&api, SECRET).await.expect("first");
    mcp_open(&api, SECRET).await.expect("second");
    let (status, body) = mcp_open(&api, SECRET).await.expect_err("a third for one token");
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        body["error"]["message"],
        "`ci` already has 2 open MCP sessions, the most mcp.max_sessions_per_token allows; end one (DELETE /mcp) or let an idle one expire (mcp.session_idle_secs)"
    );
    mcp_open(&api, OTHER).await.expect("another token's first");
    let (status, body) = mcp_open(&api, OTHER).await.expect_err("a fourth in all");
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(body["error"]["message"].as_str().unwrap().contains("the most mcp.max_sessions allows"), "{body}");
    // Nobody is connected to them: they close, and their places are free again.
    let reopened = wait_until(|| async { mcp_open(&api, SECRET).await.ok() }).await;
    assert_eq!(mcp_list(&api, SECRET, &first).await.0, StatusCode::NOT_FOUND, "the idle session is gone");
    assert_eq!(mcp_list(&api, SECRET, &reopened).await.0, StatusCode::OK);
    api.stop().await;
}

/// A call whose client left (its stream closed, no resume) is cancelled within
/// seconds: the request is cancelled and the card locks. A session with a call
/// waiting is not idle, however long the call takes.
#[tokio::test]
async fn mcp_a_call_whose_client_left_is_cancelled_and_a_waiting_one_is_not() {
    let api = Api::start(|s| {
        s.mcp.default_targets = vec![format!("telegram:{OPS}")];
        s.mcp.session_idle_secs = 1;
    })
    .await;
    let session = mcp_open(&api, SECRET).await.expect("opened");
    let kept = mcp_request(&api, SECRET, Some(&session), &approval_call(2, "mcp-kept", "keep_table")).send().await.expect("call");
    let left = mcp_request(&api, SECRET, Some(&session), &approval_call(3, "mcp-left", "drop_table")).send().await.expect("call");
    let left_card = api.tg_message(OPS, "drop_table").await;
    let kept_card = api.tg_message(OPS, "keep_table").await;
    drop(left);
    assert_eq!(api.decided("mcp-left").await["status"], "cancelled");
    let locked = api.tg_shows(OPS, id_of(&left_card), "ancel").await;
    assert!(!has_keyboard(&locked), "the card of the abandoned call is locked: {locked}");
    // Well past the idle time, the call whose client is still there still waits.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(api.get("mcp-kept").await["status"], "pending");
    api.tg_click(OPS, id_of(&kept_card), "Approve", &ana()).await;
    let answer = kept.text().await.expect("the answer streams once decided");
    assert!(answer.contains(r#"\"decisions\":[{\"type\":\"approve\"}]"#), "{answer}");
    api.stop().await;
}

/// The status line's code of a chunked POST of `body` (no Content-Length), written by
/// hand: the server may answer before the body is sent whole.
async fn chunked_post_status(base: &str, path: &str, body: &[u8]) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut socket = tokio::net::TcpStream::connect(base.trim_start_matches("http://")).await.expect("connect");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: bridge\r\nAuthorization: Bearer {SECRET}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    let _ = socket.write_all(head.as_bytes()).await;
    for chunk in body.chunks(64 * 1024) {
        if socket.write_all(format!("{:x}\r\n", chunk.len()).as_bytes()).await.is_err()
            || socket.write_all(chunk).await.is_err()
            || socket.write_all(b"\r\n").await.is_err()
        {
            break;
        }
    }
    let _ = socket.write_all(b"0\r\n\r\n").await;
    let mut answer = vec![0; 64];
    let n = socket.read(&mut answer).await.unwrap_or(0);
    String::from_utf8_lossy(&answer[..n]).split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0)
}

/// One body limit on `/mcp` and `/v1`: a declared length over it is refused before
/// a byte is read, a streamed body when it passes the limit, both with the limit named.
#[tokio::test]
async fn mcp_and_v1_refuse_a_body_over_the_limit_by_name() {
    let api = mcp_api().await;
    let big = vec![b' '; (1 << 20) + 1];
    for path in ["/mcp", "/v1/requests"] {
        let (status, body) = api.send(reqwest::Method::POST, path, Some(SECRET), Some(big.clone())).await;
        assert_eq!((status, body["error"]["message"].as_str()), (StatusCode::PAYLOAD_TOO_LARGE, Some("the request body is over 1 MiB")), "{path}");
        // No Content-Length: counted as it streams in.
        assert_eq!(chunked_post_status(&api.base, path, &big).await, 413, "{path} streamed");
    }
    api.stop().await;
}

/// `hitl-bridge mcp`: a stdio server the client launches, forwarding every call to the
/// running bridge with the token; the request is the bridge's like any other.
#[tokio::test]
#[ignore = "needs the mcp_client backend: bash tests/backends/install.sh mcp_client, then cargo test -- --include-ignored"]
async fn mcp_over_stdio_forwards_to_the_running_bridge() {
    let api = mcp_api().await;
    let mut args = call("request_approval", json!({"actions": [{"name": "scale_up"}], "approval_key": "mcp-stdio", "targets": [format!("telegram:{OPS}")]}));
    args["token"] = json!(SECRET);
    let Some(mut client) = McpClient::run(env!("CARGO_BIN_EXE_hitl-bridge"), &api.base, "stdio", args) else { return api.stop().await };
    let card = api.tg_message(OPS, "scale_up").await;
    api.tg_click(OPS, id_of(&card), "Approve", &ana()).await;
    let result = client.next("result").await;
    assert_eq!((result["isError"].clone(), result["structured"]["decisions"].clone()), (json!(false), json!([{"type": "approve"}])), "{result}");
    assert_eq!(api.get("mcp-stdio").await["status"], "resolved");
    client.end().await;
    api.stop().await;
}
