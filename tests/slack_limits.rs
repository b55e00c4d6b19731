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
use support::fake_slack::{self, FakeSlack, OPS, Person};
use support::{Chat, Harness, wait_until};

const SECRET: &str = "ci-secret";
/// Requests in the burst.
const BURST: usize = 200;
/// The bridge's pace for new messages in one channel, in this test.
const POST_INTERVAL_MS: u64 = 40;

fn ana() -> Person {
    Person::new("U0ANA", "ana")
}

/// A bridge with Slack on the fake, Ana its approver, new messages paced at
/// [`POST_INTERVAL_MS`]. (Copied from tests/slack.rs's rig.)
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
        let mut harness = Harness::on(Chat::Headless)
            .no_agent()
            .settings(&borrowed)
            .tweak(|s: &mut Settings| {
                s.http.api_tokens = vec![format!("ci:{SECRET}")];
                s.access.approvers = vec!["slack:U0ANA".into()];
                let slack = s.platforms.get_mut::<SlackSettings>();
                assert_eq!(slack.post_interval_ms, 1000, "Slack's pace by default");
                slack.post_interval_ms = POST_INTERVAL_MS;
            })
            .build()
            .await;
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

    async fn decided(&self, key: &str) -> Value {
        wait_until(|| async {
            let (_, body) = self.send(reqwest::Method::GET, &format!("/v1/requests/{key}?wait=5"), None).await;
            (body["status"] != "pending").then_some(body)
        })
        .await
    }

    async fn stop(mut self) {
        self.harness.stop_bridge().await;
        let unexpected: Vec<_> = self.fake.errors().into_iter().filter(|(_, e)| e != "ratelimited").collect();
        assert!(unexpected.is_empty(), "Slack would have refused: {unexpected:?}");
        self.fake.shutdown();
        self.harness.shutdown().await;
    }
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
    let rig = Rig::start().await;
    rig.fake.pace_channels(std::time::Duration::from_millis(POST_INTERVAL_MS / 4));
    let started = std::time::Instant::now();
    for n in 0..BURST {
        if n == BURST / 4 {
            // A 429 storm in the middle of the burst: two posts refused, 1 s each.
            rig.fake.rate_limit_next(2, 1);
        }
        let body = json!({"approval_key": format!("burst-{n}"), "targets": [{"platform": "slack", "channel_id": OPS}],
                          "timeout_seconds": 600, "actions": [{"name": format!("step_{n}"), "args": {"n": n}}]});
        let (status, created) = rig.send(reqwest::Method::POST, "/v1/requests", Some(&body)).await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
    }
    let posted = wait_until(|| async { (rig.fake.posted().len() >= BURST).then(|| rig.fake.posted()) }).await;
    // A moment for anything posted twice to show.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let posted_now = rig.fake.posted();
    assert_eq!(posted_now.len(), BURST, "each card exactly once");
    assert_eq!(posted, posted_now);
    assert!(posted.iter().all(|(channel, _)| channel == OPS));
    let steps: Vec<String> = posted.iter().map(|(channel, ts)| step_of(&rig.fake.message(channel, ts).unwrap())).collect();
    let expected: Vec<String> = (0..BURST).map(|n| format!("step_{n}")).collect();
    assert_eq!(steps, expected, "in the order pushed");
    let refused = rig.fake.errors().into_iter().filter(|(m, e)| m == "chat.postMessage" && e == "ratelimited").count();
    let accepted = rig.fake.calls().into_iter().filter(|c| c.method == "chat.postMessage" && c.error.is_none()).count();
    assert_eq!(accepted, BURST, "{refused} posts refused were sent again, none twice");
    assert!(refused >= 2, "the storm's two 429s at least: {refused}");
    let paced = std::time::Duration::from_millis(POST_INTERVAL_MS * (BURST as u64 - 1));
    assert!(started.elapsed() >= paced, "one post per {POST_INTERVAL_MS} ms in the channel: {:?}", started.elapsed());

    for n in [0, BURST / 2, BURST - 1] {
        let (_, ts) = &posted[n];
        rig.fake.click(&ana(), OPS, ts, "Approve");
        assert_eq!(rig.decided(&format!("burst-{n}")).await["reply"], json!({"decisions": [{"type": "approve"}]}), "burst-{n}");
    }
    let (_, pending) = rig.send(reqwest::Method::GET, "/v1/requests/burst-1", None).await;
    assert_eq!(pending["status"], "pending", "a click decides its own request only");
    rig.stop().await;
}
