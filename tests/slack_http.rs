//! Slack's HTTP mode end to end: a real bridge with `slack.mode = "http"` receives the
//! posts Slack would make to `/slack/events` (signed with the signing secret, as
//! Slack signs them), shows cards on the fake Slack's Web API, and answers as Slack
//! expects: 401 for every post that fails the signature check (a wrong signature, a
//! stale timestamp, a replay) with nothing changed, the `url_verification` challenge,
//! 200 once a click is stored, the modal's errors in the response itself.

mod support;

use axum::http::StatusCode;
use hitl_bridge::config::Settings;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use support::fake_slack::{self, FakeSlack, OPS, Person, button};
use support::{Chat, Harness, wait_until};

const API_SECRET: &str = "ci-secret";
const SIGNING_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";

fn ana() -> Person {
    Person::new("U0ANA", "ana")
}

fn now_secs() -> i64 {
    hitl_bridge::clock::now_ms() / 1000
}

/// `v0=…` for `body` at `timestamp`, as Slack signs.
fn sign(secret: &str, timestamp: i64, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("v0:{timestamp}:{body}").as_bytes());
    format!("v0={}", hex::encode(mac.finalize().into_bytes()))
}

/// A bridge in HTTP mode on a free port, Slack's Web API on the fake, Ana approves.
struct Rig {
    harness: Harness,
    fake: FakeSlack,
    api: String,
    events: String,
    http: reqwest::Client,
}

/// How a post is signed.
enum Signed {
    Now,
    WithSecret(&'static str),
    At(i64),
    /// These exact headers (a replay).
    As(String, String),
}

impl Rig {
    async fn start() -> Rig {
        let fake = FakeSlack::start().await;
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let events_listen = format!("127.0.0.1:{port}");
        let pairs = [
            ("slack.enabled", "true".to_owned()),
            ("slack.mode", "http".into()),
            ("slack.bot_token", fake_slack::BOT_TOKEN.into()),
            ("slack.signing_secret", SIGNING_SECRET.into()),
            ("slack.events_listen", events_listen.clone()),
            ("slack.api_url", fake.api_url()),
            ("tokens.secret", "test-secret".into()),
        ];
        let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut harness = Harness::on(Chat::Headless)
            .no_agent()
            .settings(&borrowed)
            .tweak(|s: &mut Settings| s.http.api_tokens = vec![format!("ci:{API_SECRET}")])
            .build()
            .await;
        harness.boot().await;
        let api = format!("http://{}", harness.app().http_addr().expect("http listener"));
        Rig { harness, fake, api, events: format!("http://{events_listen}/slack/events"), http: reqwest::Client::new() }
    }

    /// Posts `body` to `/slack/events`; the status, the body, and the headers it was
    /// signed with.
    async fn post(&self, content_type: &str, body: &str, signed: Signed) -> (StatusCode, String, (String, String)) {
        let (timestamp, signature) = match signed {
            Signed::Now => (now_secs().to_string(), sign(SIGNING_SECRET, now_secs(), body)),
            Signed::WithSecret(secret) => (now_secs().to_string(), sign(secret, now_secs(), body)),
            Signed::At(at) => (at.to_string(), sign(SIGNING_SECRET, at, body)),
            Signed::As(timestamp, signature) => (timestamp, signature),
        };
        let response = self
            .http
            .post(&self.events)
            .header("content-type", content_type)
            .header("x-slack-request-timestamp", &timestamp)
            .header("x-slack-signature", &signature)
            .body(body.to_owned())
            .send()
            .await
            .expect("post");
        let status = StatusCode::from_u16(response.status().as_u16()).unwrap();
        (status, response.text().await.unwrap_or_default(), (timestamp, signature))
    }

    /// An interaction payload as Slack posts it: a form with `payload=<JSON>`.
    async fn interact(&self, payload: &Value, signed: Signed) -> (StatusCode, String, (String, String)) {
        let form = url::form_urlencoded::Serializer::new(String::new()).append_pair("payload", &payload.to_string()).finish();
        self.post("application/x-www-form-urlencoded", &form, signed).await
    }

    async fn push_trade(&self, key: &str) -> String {
        let body = json!({
            "approval_key": key, "targets": [{"platform": "slack", "channel_id": OPS}], "approvers": ["slack:U0ANA"],
            "timeout_seconds": 300, "actions": [{"name": "execute_trade", "args": {"symbol": "VNM", "quantity": 100}}]
        });
        let response = self.http.post(format!("{}/v1/requests", self.api)).bearer_auth(API_SECRET).json(&body).send().await.unwrap();
        assert_eq!(response.status().as_u16(), 201);
        wait_until(|| async { self.fake.posted().last().map(|(_, ts)| ts.clone()) }).await
    }

    async fn state(&self, key: &str, wait: u32) -> Value {
        let url = format!("{}/v1/requests/{key}?wait={wait}", self.api);
        self.http.get(url).bearer_auth(API_SECRET).send().await.unwrap().json().await.unwrap()
    }

    /// The payload of a click on the button labelled `label` of card `ts`, as Ana.
    fn click(&self, ts: &str, label: &str) -> Value {
        let card = self.fake.message(OPS, ts).expect("the card");
        let button = button(&card, label);
        self.fake.click_envelope(&ana(), OPS, ts, button["action_id"].as_str().unwrap(), button["value"].as_str().unwrap())["payload"].clone()
    }

    async fn stop(mut self) {
        self.harness.stop_bridge().await;
        assert!(self.fake.errors().is_empty(), "Slack would have refused: {:?}", self.fake.errors());
        self.fake.shutdown();
        self.harness.shutdown().await;
    }
}

#[tokio::test]
async fn url_verification_is_answered_only_when_signed() {
    let rig = Rig::start().await;
    let check = json!({"token": "legacy", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", "type": "url_verification"}).to_string();
    let (status, body, _) = rig.post("application/json", &check, Signed::Now).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), json!({"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}));
    let (status, body, _) = rig.post("application/json", &check, Signed::WithSecret("not the secret")).await;
    assert_eq!((status, body.as_str()), (StatusCode::UNAUTHORIZED, "X-Slack-Signature does not match slack.signing_secret"));
    rig.stop().await;
}

/// A click posted with a wrong signature, an old timestamp or as a replay is refused
/// 401 and decides nothing; the genuine post decides, once.
#[tokio::test]
async fn only_a_fresh_signed_click_decides_and_its_replay_is_refused() {
    let rig = Rig::start().await;
    let ts = rig.push_trade("trade-h1").await;
    let click = rig.click(&ts, "Approve");
    let (status, body, _) = rig.interact(&click, Signed::WithSecret("guessed")).await;
    assert_eq!((status, body.as_str()), (StatusCode::UNAUTHORIZED, "X-Slack-Signature does not match slack.signing_secret"));
    let (status, body, _) = rig.interact(&click, Signed::At(now_secs() - 600)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(body.starts_with("the request is 60") && body.ends_with("s away from now (at most 300 s is accepted)"), "{body}");
    let forged = rig.http.post(&rig.events).header("content-type", "application/x-www-form-urlencoded").body("payload=%7B%7D").send().await.unwrap();
    assert_eq!(forged.status().as_u16(), 401, "no signature at all");
    assert_eq!(rig.state("trade-h1", 0).await["status"], "pending", "nothing was decided by a refused post");
    assert!(rig.fake.bodies("chat.update").is_empty(), "and no card changed");

    let (status, body, signed) = rig.interact(&click, Signed::Now).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, ""));
    let decided = rig.state("trade-h1", 10).await;
    assert_eq!(decided["reply"], json!({"decisions": [{"type": "approve"}]}));
    assert_eq!(decided["decided_by"], json!({"platform": "slack", "id": "U0ANA", "name": "ana"}));
    wait_until(|| async { rig.fake.bodies("chat.update").into_iter().find(|b| b["ts"] == ts.as_str()) }).await;

    let (status, body, _) = rig.interact(&click, Signed::As(signed.0, signed.1)).await;
    assert_eq!((status, body.as_str()), (StatusCode::UNAUTHORIZED, "this signed request was already received"));
    assert!(rig.fake.bodies("chat.postEphemeral").is_empty(), "the replay never reached the engine");
    rig.stop().await;
}

/// An event Slack sends again (`X-Slack-Retry-Num`, newly signed) is answered 200 and
/// stored once, under its `event_id`.
#[tokio::test]
async fn a_retried_event_is_stored_once() {
    let rig = Rig::start().await;
    let event = json!({"type": "event_callback", "team_id": fake_slack::TEAM, "event_id": "Ev0HTTP", "event_time": 1_700_000_000,
        "event": {"type": "app_mention", "user": "U0ANA", "text": "<@U0BOT> hi", "channel": OPS, "ts": "1700000000.000900"}})
    .to_string();
    assert_eq!(rig.post("application/json", &event, Signed::Now).await.0, StatusCode::OK);
    let retry = rig
        .http
        .post(&rig.events)
        .header("content-type", "application/json")
        .header("x-slack-retry-num", "1")
        .header("x-slack-retry-reason", "http_timeout")
        .header("x-slack-request-timestamp", (now_secs() + 1).to_string())
        .header("x-slack-signature", sign(SIGNING_SECRET, now_secs() + 1, &event))
        .body(event.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(retry.status().as_u16(), 200);
    let store = hitl_bridge::store::Store::connect(&rig.harness.settings.store.url).await.unwrap();
    let probe = hitl_bridge::store::InboxUpdate { update_id: "event:Ev0HTTP".into(), seq: 0, lane: OPS.into(), body: "{}".into() };
    let claim = hitl_bridge::store::ShowClaim { owner: "probe".into(), until_ms: 0 };
    let new = store.platform_inbox("slack").store(&[probe], &claim, 0).await.unwrap();
    assert!(new.is_empty(), "the event is stored, once, under its event_id");
    store.close().await;
    rig.stop().await;
}

/// Edit over HTTP: the click opens the modal; an invalid JSON is answered in the
/// response itself (Slack shows it under the field) and sends nothing; a valid one
/// decides.
#[tokio::test]
async fn the_edit_modal_is_answered_in_the_response() {
    let rig = Rig::start().await;
    let ts = rig.push_trade("trade-h2").await;
    let (status, _, _) = rig.interact(&rig.click(&ts, "Edit"), Signed::Now).await;
    assert_eq!(status, StatusCode::OK);
    let view = wait_until(|| async { rig.fake.views().into_iter().next() }).await;
    let mut bad = rig.fake.submission_envelope(&ana(), &view, &[("args", "json", "{quantity: 50")])["payload"].clone();
    bad["trigger_id"] = json!("1.1.edit-bad");
    let (status, body, _) = rig.interact(&bad, Signed::Now).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"response_action": "errors", "errors": {"args": "Not accepted: invalid JSON: key must be a string at line 1 column 2. Send a JSON object."}})
    );
    assert_eq!(rig.state("trade-h2", 0).await["status"], "pending");
    let mut good = rig.fake.submission_envelope(&ana(), &view, &[("args", "json", r#"{"symbol":"VNM","quantity":50}"#)])["payload"].clone();
    good["trigger_id"] = json!("1.1.edit-good");
    let (status, body, _) = rig.interact(&good, Signed::Now).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, ""), "the modal closes");
    assert_eq!(
        rig.state("trade-h2", 10).await["reply"],
        json!({"decisions": [{"type": "edit", "edited_action": {"name": "execute_trade", "args": {"symbol": "VNM", "quantity": 50}}}]})
    );
    rig.stop().await;
}

/// HTTP mode without its secret does not load, and says which key is missing.
#[test]
fn http_mode_without_a_signing_secret_is_refused_at_load() {
    let problem = Settings::from_pairs(&[("slack.enabled", "true"), ("slack.mode", "http"), ("slack.bot_token", "xoxb-1-2")]).err().map(|e| format!("{e:#}"));
    let problem = problem.expect("refused");
    assert!(problem.contains("slack.signing_secret"), "{problem}");
    assert!(Settings::from_pairs(&[("slack.enabled", "true"), ("slack.mode", "http"), ("slack.bot_token", "xoxb-1-2"), ("slack.signing_secret", "s")]).is_ok());
}
