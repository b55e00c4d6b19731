//! Slack's HTTP mode end to end: a real bridge with `slack.mode = "http"` receives the
//! posts Slack would make to `/slack/events` (signed with the signing secret, as
//! Slack signs them), shows cards on the fake Slack's Web API, and answers as Slack
//! expects: 401 for every post that fails the signature check (a wrong signature, a
//! stale timestamp, a replay) with nothing changed, the `url_verification` challenge,
//! 200 once a click is stored, the modal's errors in the response itself.

mod support;

use axum::http::StatusCode;
use hitl_bridge::config::Settings;
use hitl_bridge::platform::slack::settings::SlackSettings;
use serde_json::{Value, json};
use support::fake_slack::{self, OPS, Person, button};
use support::slack_chat::{self, sign};
use support::{Chat, Harness, wait_until};

const API_SECRET: &str = "ci-secret";
const SIGNING_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";

fn ana() -> Person {
    Person::new("U0ANA", "ana")
}

fn now_secs() -> i64 {
    hitl_bridge::clock::now_ms() / 1000
}

/// How a post is signed.
enum Signed {
    Now,
    WithSecret(&'static str),
    At(i64),
    /// These exact headers (a replay).
    As(String, String),
}

/// A bridge in HTTP mode on a free port, Slack's Web API on the fake, Ana approves.
async fn start() -> Harness {
    Harness::on(Chat::Slack)
        .no_agent()
        .settings(&[("slack.mode", "http"), ("slack.signing_secret", SIGNING_SECRET), ("slack.events_listen", &slack_chat::free_addr())])
        .tweak(|s: &mut Settings| s.http.api_tokens = vec![format!("ci:{API_SECRET}")])
        .start()
        .await
}

/// Where the bridge takes Slack's posts.
fn events(rig: &Harness) -> String {
    format!("http://{}/slack/events", rig.settings.platforms.get::<SlackSettings>().events_listen)
}

/// Posts `body` to `/slack/events`; the status, the body, and the headers it was
/// signed with.
async fn post(rig: &Harness, content_type: &str, body: &str, signed: Signed) -> (StatusCode, String, (String, String)) {
    let (timestamp, signature) = match signed {
        Signed::Now => (now_secs().to_string(), sign(SIGNING_SECRET, now_secs(), body)),
        Signed::WithSecret(secret) => (now_secs().to_string(), sign(secret, now_secs(), body)),
        Signed::At(at) => (at.to_string(), sign(SIGNING_SECRET, at, body)),
        Signed::As(timestamp, signature) => (timestamp, signature),
    };
    let response = reqwest::Client::new()
        .post(events(rig))
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
async fn interact(rig: &Harness, payload: &Value, signed: Signed) -> (StatusCode, String, (String, String)) {
    let form = url::form_urlencoded::Serializer::new(String::new()).append_pair("payload", &payload.to_string()).finish();
    post(rig, "application/x-www-form-urlencoded", &form, signed).await
}

async fn push_trade(rig: &Harness, key: &str) -> String {
    let body = json!({
        "approval_key": key, "targets": [{"platform": "slack", "channel_id": OPS}], "approvers": ["slack:U0ANA"],
        "timeout_seconds": 300, "actions": [{"name": "execute_trade", "args": {"symbol": "VNM", "quantity": 100}}]
    });
    rig.api(API_SECRET).push(&body).await;
    wait_until(|| async { rig.slack().posted().last().map(|(_, ts)| ts.clone()) }).await
}

/// The request's state, waiting up to `wait` seconds for a decision.
async fn state(rig: &Harness, key: &str, wait: u32) -> Value {
    rig.api(API_SECRET).send(reqwest::Method::GET, &format!("/v1/requests/{key}?wait={wait}"), None).await.1
}

/// The payload of a click on the button labelled `label` of card `ts`, as Ana.
fn click(rig: &Harness, ts: &str, label: &str) -> Value {
    let fake = rig.slack();
    let card = fake.message(OPS, ts).expect("the card");
    let button = button(&card, label);
    fake.click_envelope(&ana(), OPS, ts, button["action_id"].as_str().unwrap(), button["value"].as_str().unwrap())["payload"].clone()
}

async fn stop(mut rig: Harness) {
    rig.stop_bridge().await;
    assert!(rig.slack().errors().is_empty(), "Slack would have refused: {:?}", rig.slack().errors());
    rig.shutdown().await;
}

#[tokio::test]
async fn url_verification_is_answered_only_when_signed() {
    let rig = start().await;
    let check = json!({"token": "legacy", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", "type": "url_verification"}).to_string();
    let (status, body, _) = post(&rig, "application/json", &check, Signed::Now).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), json!({"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}));
    let (status, body, _) = post(&rig, "application/json", &check, Signed::WithSecret("not the secret")).await;
    assert_eq!((status, body.as_str()), (StatusCode::UNAUTHORIZED, "X-Slack-Signature does not match slack.signing_secret"));
    stop(rig).await;
}

/// The headers are checked before the body is read: a post without Slack's signature
/// headers, or signed too long ago, is answered 401 while its declared 2 MiB body has
/// not been sent at all, and a post declaring more than 1 MiB is answered 413 unread.
/// A signed body of exactly 1 MiB is read (and, not being Slack's JSON, skipped with
/// 200); one byte more is 413.
#[tokio::test]
async fn headers_are_checked_before_the_body_is_read_and_bodies_stop_at_1_mib() {
    let rig = start().await;
    let unsigned = "content-type: application/json\r\ncontent-length: 2097152\r\n";
    assert_eq!(status_unsent_body(&rig, unsigned).await, "HTTP/1.1 401 Unauthorized");
    let stale = format!("x-slack-request-timestamp: {}\r\nx-slack-signature: v0={}\r\n{unsigned}", now_secs() - 600, "0".repeat(64));
    assert_eq!(status_unsent_body(&rig, &stale).await, "HTTP/1.1 401 Unauthorized");
    let fresh = format!("x-slack-request-timestamp: {}\r\nx-slack-signature: v0={}\r\n{unsigned}", now_secs(), "0".repeat(64));
    assert_eq!(status_unsent_body(&rig, &fresh).await, "HTTP/1.1 413 Payload Too Large");

    let mib = 1024 * 1024;
    let exactly = format!("{{\"type\":\"app_rate_limited\",\"pad\":\"{}\"}}", "x".repeat(mib - 36));
    assert_eq!(exactly.len(), mib);
    assert_eq!(post(&rig, "application/json", &exactly, Signed::Now).await.0, StatusCode::OK);
    let over = format!("{exactly} ");
    assert_eq!(post(&rig, "application/json", &over, Signed::Now).await.0, StatusCode::PAYLOAD_TOO_LARGE);
    stop(rig).await;
}

/// The status line the endpoint answers to a post with `headers` whose body is never
/// sent: an endpoint that read the body first would wait for it instead.
async fn status_unsent_body(rig: &Harness, headers: &str) -> String {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let addr = rig.settings.platforms.get::<SlackSettings>().events_listen.clone();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.expect("connect");
    stream.write_all(format!("POST /slack/events HTTP/1.1\r\nhost: {addr}\r\n{headers}\r\n").as_bytes()).await.expect("send the headers");
    let mut status = String::new();
    BufReader::new(stream).read_line(&mut status).await.expect("an answer");
    status.trim_end().to_owned()
}

/// A click posted with a wrong signature, an old timestamp or as a replay is refused
/// 401 and decides nothing; the genuine post decides, once.
#[tokio::test]
async fn only_a_fresh_signed_click_decides_and_its_replay_is_refused() {
    let rig = start().await;
    let ts = push_trade(&rig, "trade-h1").await;
    let click = click(&rig, &ts, "Approve");
    let (status, body, _) = interact(&rig, &click, Signed::WithSecret("guessed")).await;
    assert_eq!((status, body.as_str()), (StatusCode::UNAUTHORIZED, "X-Slack-Signature does not match slack.signing_secret"));
    let (status, body, _) = interact(&rig, &click, Signed::At(now_secs() - 600)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(body.starts_with("the request is 60") && body.ends_with("s away from now (at most 300 s is accepted)"), "{body}");
    let forged =
        reqwest::Client::new().post(events(&rig)).header("content-type", "application/x-www-form-urlencoded").body("payload=%7B%7D").send().await.unwrap();
    assert_eq!(forged.status().as_u16(), 401, "no signature at all");
    assert_eq!(state(&rig, "trade-h1", 0).await["status"], "pending", "nothing was decided by a refused post");
    assert!(rig.slack().bodies("chat.update").is_empty(), "and no card changed");

    let (status, body, signed) = interact(&rig, &click, Signed::Now).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, ""));
    let decided = state(&rig, "trade-h1", 10).await;
    assert_eq!(decided["reply"], json!({"decisions": [{"type": "approve"}]}));
    assert_eq!(decided["decided_by"], json!({"platform": "slack", "id": "U0ANA", "name": "ana"}));
    wait_until(|| async { rig.slack().bodies("chat.update").into_iter().find(|b| b["ts"] == ts.as_str()) }).await;

    let (status, body, _) = interact(&rig, &click, Signed::As(signed.0, signed.1)).await;
    assert_eq!((status, body.as_str()), (StatusCode::UNAUTHORIZED, "this signed request was already received"));
    assert!(rig.slack().bodies("chat.postEphemeral").is_empty(), "the replay never reached the engine");
    stop(rig).await;
}

/// An event Slack sends again (`X-Slack-Retry-Num`, newly signed) is answered 200 and
/// stored once, under its `event_id`.
#[tokio::test]
async fn a_retried_event_is_stored_once() {
    let rig = start().await;
    let event = json!({"type": "event_callback", "team_id": fake_slack::TEAM, "event_id": "Ev0HTTP", "event_time": 1_700_000_000,
        "event": {"type": "app_mention", "user": "U0ANA", "text": "<@U0BOT> hi", "channel": OPS, "ts": "1700000000.000900"}})
    .to_string();
    assert_eq!(post(&rig, "application/json", &event, Signed::Now).await.0, StatusCode::OK);
    let retry = reqwest::Client::new()
        .post(events(&rig))
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
    let store = hitl_bridge::store::Store::connect(&rig.settings.store.url).await.unwrap();
    let probe = hitl_bridge::store::InboxUpdate { update_id: "event:Ev0HTTP".into(), seq: 0, lane: OPS.into(), body: "{}".into() };
    let claim = hitl_bridge::store::ShowClaim { owner: "probe".into(), until_ms: 0 };
    let new = store.platform_inbox("slack").store(&[probe], &claim, 0).await.unwrap();
    assert!(new.is_empty(), "the event is stored, once, under its event_id");
    store.close().await;
    stop(rig).await;
}

/// Edit over HTTP: the click opens the modal; an invalid JSON is answered in the
/// response itself (Slack shows it under the field) and sends nothing; a valid one
/// decides.
#[tokio::test]
async fn the_edit_modal_is_answered_in_the_response() {
    let rig = start().await;
    let ts = push_trade(&rig, "trade-h2").await;
    let (status, _, _) = interact(&rig, &click(&rig, &ts, "Edit"), Signed::Now).await;
    assert_eq!(status, StatusCode::OK);
    let view = wait_until(|| async { rig.slack().views().into_iter().next() }).await;
    let mut bad = rig.slack().submission_envelope(&ana(), &view, &[("args", "json", "{quantity: 50")])["payload"].clone();
    bad["trigger_id"] = json!("1.1.edit-bad");
    let (status, body, _) = interact(&rig, &bad, Signed::Now).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"response_action": "errors", "errors": {"args": "Not accepted: invalid JSON: key must be a string at line 1 column 2. Send a JSON object."}})
    );
    assert_eq!(state(&rig, "trade-h2", 0).await["status"], "pending");
    let mut good = rig.slack().submission_envelope(&ana(), &view, &[("args", "json", r#"{"symbol":"VNM","quantity":50}"#)])["payload"].clone();
    good["trigger_id"] = json!("1.1.edit-good");
    let (status, body, _) = interact(&rig, &good, Signed::Now).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, ""), "the modal closes");
    assert_eq!(
        state(&rig, "trade-h2", 10).await["reply"],
        json!({"decisions": [{"type": "edit", "edited_action": {"name": "execute_trade", "args": {"symbol": "VNM", "quantity": 50}}}]})
    );
    stop(rig).await;
}

/// HTTP mode without its secret does not load, and says which key is missing.
#[test]
fn http_mode_without_a_signing_secret_is_refused_at_load() {
    let problem = Settings::from_pairs(&[("slack.enabled", "true"), ("slack.mode", "http"), ("slack.bot_token", "xoxb-1-2")]).err().map(|e| format!("{e:#}"));
    let problem = problem.expect("refused");
    assert!(problem.contains("slack.signing_secret"), "{problem}");
    assert!(Settings::from_pairs(&[("slack.enabled", "true"), ("slack.mode", "http"), ("slack.bot_token", "xoxb-1-2"), ("slack.signing_secret", "s")]).is_ok());
}
