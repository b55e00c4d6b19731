//! Slack's rate limits end to end, on the fake Slack: a burst of 200 requests into
//! one channel is shown whole, in the order pushed, each card once, at the bridge's
//! pace for new messages in a channel; where Slack refuses a post as too soon (the
//! fake's own per-channel pace, answered 429 with `Retry-After`), the post is sent
//! again and keeps its place. The cards still work: clicks on them decide the right
//! request. The pace is shortened for the test (`slack.post_interval_ms`, Slack's
//! about one a second by default, which tests/slack.rs's 429 storm test keeps), as
//! tests/telegram_limits.rs does with Telegram's.

mod support;

use axum::http::StatusCode;
use hitl_bridge::config::Settings;
use hitl_bridge::platform::slack::settings::SlackSettings;
use serde_json::{Value, json};
use support::fake_slack::{OPS, Person};
use support::slack_chat::assert_nothing_refused;
use support::{Chat, Harness};

const SECRET: &str = "ci-secret";
/// Requests in the burst.
const BURST: usize = 200;
/// The bridge's pace for new messages in one channel, in this test.
const POST_INTERVAL_MS: u64 = 40;

fn ana() -> Person {
    Person::new("U0ANA", "ana")
}

/// A bridge with Slack on the fake, Ana its approver, new messages paced at
/// [`POST_INTERVAL_MS`], started.
async fn start() -> Harness {
    Harness::on(Chat::Slack)
        .no_agent()
        .set("timeouts.grace_secs", "0")
        .tweak(|s: &mut Settings| {
            s.http.api_tokens = vec![format!("ci:{SECRET}")];
            s.access.approvers = vec!["slack:U0ANA".into()];
            let slack = s.platforms.get_mut::<SlackSettings>();
            assert_eq!(slack.post_interval_ms, 1000, "Slack's pace by default");
            slack.post_interval_ms = POST_INTERVAL_MS;
        })
        .start()
        .await
}

/// Stops everything; Slack refused nothing but the 429s.
async fn stop(mut rig: Harness) {
    rig.stop_bridge().await;
    assert_nothing_refused(rig.slack());
    rig.shutdown().await;
}

/// The action a card asks about (`step_17`), from its fallback text.
fn step_of(card: &Value) -> String {
    card["text"].as_str().unwrap_or_default().trim_start_matches("🔐 Approval needed: ").to_owned()
}

/// 200 requests pushed into one channel as fast as the API takes them: Slack gets them
/// at the bridge's pace, in the order pushed, each exactly once, none lost, through a
/// 429 storm in the middle and wherever the fake refuses a post as too soon (at a
/// quarter of the bridge's pace, so only a post the network delayed can be). Then a click on the first, a middle and the last card
/// decides exactly that request: the agent gets its one approval, the others stay
/// pending.
#[tokio::test]
async fn a_burst_of_200_into_one_channel_arrives_whole_in_order_and_still_works() {
    let rig = start().await;
    let fake = rig.slack();
    let api = rig.api(SECRET);
    fake.pace_channels(std::time::Duration::from_millis(POST_INTERVAL_MS / 4));
    let started = std::time::Instant::now();
    for n in 0..BURST {
        if n == BURST / 4 {
            // A 429 storm in the middle of the burst: two posts refused, 1 s each.
            fake.rate_limit_next(2, 1);
        }
        let body = json!({"approval_key": format!("burst-{n}"), "targets": [{"platform": "slack", "channel_id": OPS}],
                          "timeout_seconds": 600, "actions": [{"name": format!("step_{n}"), "args": {"n": n}}]});
        let (status, created) = api.send(reqwest::Method::POST, "/v1/requests", Some(&body)).await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
    }
    // Longer than `wait_until`'s: 200 posts at the pace take 8 s, and on a loaded
    // machine each post the fake finds too soon costs its `Retry-After` (1 s).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let posted = loop {
        if fake.posted().len() >= BURST {
            break fake.posted();
        }
        if std::time::Instant::now() >= deadline {
            let mut calls = std::collections::BTreeMap::new();
            for call in fake.calls() {
                *calls.entry(format!("{} {:?}", call.method, call.error)).or_insert(0) += 1;
            }
            panic!("only {} of {BURST} cards posted in 120 s; Slack's calls: {calls:?}", fake.posted().len());
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    // A moment for anything posted twice to show.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let posted_now = fake.posted();
    assert_eq!(posted_now.len(), BURST, "each card exactly once");
    assert_eq!(posted, posted_now);
    assert!(posted.iter().all(|(channel, _)| channel == OPS));
    let steps: Vec<String> = posted.iter().map(|(channel, ts)| step_of(&fake.message(channel, ts).unwrap())).collect();
    let expected: Vec<String> = (0..BURST).map(|n| format!("step_{n}")).collect();
    assert_eq!(steps, expected, "in the order pushed");
    let refused = fake.errors().into_iter().filter(|(m, e)| m == "chat.postMessage" && e == "ratelimited").count();
    let accepted = fake.calls().into_iter().filter(|c| c.method == "chat.postMessage" && c.error.is_none()).count();
    assert_eq!(accepted, BURST, "{refused} posts refused were sent again, none twice");
    assert!(refused >= 2, "the storm's two 429s at least: {refused}");
    let paced = std::time::Duration::from_millis(POST_INTERVAL_MS * (BURST as u64 - 1));
    assert!(started.elapsed() >= paced, "one post per {POST_INTERVAL_MS} ms in the channel: {:?}", started.elapsed());

    for n in [0, BURST / 2, BURST - 1] {
        let (_, ts) = &posted[n];
        fake.click(&ana(), OPS, ts, "Approve");
        assert_eq!(api.decided(&format!("burst-{n}")).await["reply"], json!({"decisions": [{"type": "approve"}]}), "burst-{n}");
    }
    let (_, pending) = api.send(reqwest::Method::GET, "/v1/requests/burst-1", None).await;
    assert_eq!(pending["status"], "pending", "a click decides its own request only");
    stop(rig).await;
}
