//! Telegram's rate limits end to end, on the fake Bot API: a request's keyboard goes
//! out at once while its chat is under the quotas, even while another chat waits out
//! a 429 or its own quota; a 429's `retry_after` holds back every message to that
//! chat (not just the one refused), and the refused one is sent again afterwards.
//! Checked by the order of the requests the fake recorded, not by timing.

use hitl_bridge::platform::telegram::settings::TelegramSettings;
use support::fake_telegram;
mod support;

use fake_telegram::{Recorded, User};
use serde_json::{Value, json};
use support::{Chat, Harness, wait_until};

const ANA: i64 = 3003;
const OPS: i64 = -100_777;
const DEV: i64 = -100_888;
const SECRET: &str = "ci-secret";

/// A bridge on the fake Telegram, with Ana's private chat and two groups, and the HTTP
/// API requests are pushed through.
async fn start() -> Harness {
    let mut harness = Harness::on(Chat::Telegram)
        .no_agent()
        .tweak(|settings| {
            assert!(settings.platforms.get::<TelegramSettings>().rate_limits, "the limits are on by default");
            settings.http.api_tokens = vec![format!("ci:{SECRET}")];
            settings.access.users = vec![format!("telegram:{ANA}")];
        })
        .build()
        .await;
    let tg = harness.telegram();
    tg.private_chat(&User::new(ANA, "Ana", Some("en")));
    tg.group(OPS, "ops", false);
    tg.group(DEV, "dev", false);
    harness.boot().await;
    harness
}

/// Pushes a one-question request to `chat` over the HTTP API.
async fn push(rig: &Harness, key: &str, chat: i64) {
    let body = json!({"approval_key": key, "targets": [{"platform": "telegram", "chat_id": chat.to_string()}],
        "questions": [{"question": format!("Question {key}?"), "header": "Q", "options": [{"label": "Yes"}, {"label": "No"}]}]});
    rig.api(SECRET).push(&body).await;
}

/// The sendMessage calls so far, as (chat, question key, refused?), in arrival order.
fn sends(rig: &Harness) -> Vec<(i64, String, bool)> {
    rig.telegram().requests().iter().filter(|r| r.method == "sendmessage").map(summary).collect()
}

async fn wait_sends(rig: &Harness, n: usize) -> Vec<(i64, String, bool)> {
    wait_until(|| async {
        let sends = sends(rig);
        (sends.iter().filter(|s| !s.2).count() >= n).then_some(sends)
    })
    .await
}

/// (chat, the pushed question's key or `/help` for the help text, refused?).
fn summary(r: &Recorded) -> (i64, String, bool) {
    let chat = r.body["chat_id"].as_i64().unwrap_or_default();
    let text = r.body["text"].as_str().unwrap_or_default();
    let key = match text.split("Question ").nth(1).and_then(|t| t.split('?').next()) {
        Some(key) => key.to_owned(),
        None if text.contains("/new") => "/help".to_owned(),
        None => text.to_owned(),
    };
    (chat, key, r.error.is_some())
}

fn ok(chat: i64, key: &str) -> (i64, String, bool) {
    (chat, key.to_owned(), false)
}

/// A 429 on Ana's chat (retry after 5 s) pauses that chat: the bridge's reply to her
/// `/help` (sent from the Telegram side, not queued behind the refused request) waits
/// for the pause too, while a request to the ops group, pushed later, is shown at once.
/// Then the refused request is sent again, and the reply goes.
#[tokio::test]
async fn a_429_pauses_its_chat_and_no_other() {
    let rig = start().await;
    rig.telegram().throttle_next(1, 5);
    push(&rig, "a1", ANA).await;
    wait_until(|| async { (!rig.telegram().errors().is_empty()).then_some(()) }).await;
    assert_eq!(rig.telegram().errors(), vec![("sendmessage".to_owned(), "Too Many Requests: retry after 5".to_owned())]);
    rig.telegram().push_message(ANA, &User::new(ANA, "Ana", Some("en")), "/help", None, None);
    // Time for the bridge to take /help and answer it, were Ana's chat not paused.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    push(&rig, "o1", OPS).await;
    let sends = wait_sends(&rig, 3).await;
    assert_eq!(sends[0], (ANA, "a1".to_owned(), true));
    assert_eq!(sends[1], ok(OPS, "o1"), "the ops group did not wait for Ana's pause, and nothing went to Ana during it: {sends:?}");
    let mut after: Vec<_> = sends[2..].to_vec();
    after.sort();
    assert_eq!(after, vec![ok(ANA, "/help"), ok(ANA, "a1")], "{sends:?}");
    rig.shutdown().await;
}

/// A group gets a burst of 3, then 20 a minute: its 4th request waits (about 3 s),
/// and a request to another group pushed after it goes out first.
#[tokio::test]
async fn a_busy_group_waits_alone() {
    let rig = start().await;
    for key in ["o1", "o2", "o3"] {
        push(&rig, key, OPS).await;
    }
    wait_sends(&rig, 3).await;
    push(&rig, "o4", OPS).await;
    push(&rig, "d1", DEV).await;
    let sends = wait_sends(&rig, 5).await;
    let order: Vec<Value> = sends.iter().map(|(chat, key, refused)| json!([chat, key, refused])).collect();
    let mut first: Vec<_> = sends[..3].to_vec();
    first.sort();
    assert_eq!(first, vec![ok(OPS, "o1"), ok(OPS, "o2"), ok(OPS, "o3")], "{order:?}");
    assert_eq!(sends[3..], [ok(DEV, "d1"), ok(OPS, "o4")], "{order:?}");
    assert!(rig.telegram().errors().is_empty(), "{:?}", rig.telegram().errors());
    rig.shutdown().await;
}
