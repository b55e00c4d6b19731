//! `/metrics` and `hitl-bridge health` against a real bridge: the reference agent, the
//! real Telegram client on the fake Bot API, and a known sequence (two 429s, a
//! stranger's refused click, one approval resolved, one expired, a stranger's refused
//! message). Then every sample `/metrics` shows is compared with the exact list
//! expected, labels and values, histogram series included. A Discord 429 on the fake
//! Discord is counted under its own label.

use hitl_bridge::platform::discord::settings::DiscordSettings;
use support::fake_discord;
use support::fake_telegram;
mod support;
use support::telegram_chat;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use fake_telegram::{User, button};
use hitl_bridge::server::{self, ProbeError};
use support::{Chat, Harness, WAIT};
use telegram_chat::TelegramChat;

fn thao() -> User {
    User::new(1001, "Thảo", Some("vi"))
}

fn mallory() -> User {
    User::new(2002, "Mallory", Some("en"))
}

/// The bucket bounds of `hitl_bridge_decision_seconds`, as rendered.
const BUCKETS: [&str; 15] =
    ["1.0", "5.0", "10.0", "30.0", "60.0", "120.0", "300.0", "600.0", "1800.0", "3600.0", "7200.0", "14400.0", "43200.0", "86400.0", "+Inf"];

const REASONS: [&str; 20] = [
    "not_allowed",
    "self_approval",
    "already_decided",
    "expired",
    "cancelled",
    "decision_not_allowed",
    "invalid_edit",
    "out_of_range",
    "incomplete",
    "wrong_kind",
    "no_free_text",
    "empty_text",
    "text_too_long",
    "single_choice",
    "already_voted",
    "remember_not_offered",
    "stranger",
    "not_admin",
    "not_admin_chat",
    "own_pairing_code",
];

struct Scraped {
    content_type: String,
    /// `# TYPE` and `# UNIT` lines, in order.
    described: Vec<String>,
    /// Series (name with labels) → value, as text.
    samples: BTreeMap<String, String>,
}

async fn scrape(addr: SocketAddr) -> Scraped {
    let response = reqwest::get(format!("http://{addr}/metrics")).await.expect("GET /metrics");
    assert_eq!(response.status(), 200);
    let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let text = response.text().await.expect("body");
    assert_eq!(text.lines().last(), Some("# EOF"), "{text}");
    let described = text.lines().filter(|l| l.starts_with("# TYPE") || l.starts_with("# UNIT")).map(str::to_owned).collect();
    let samples = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').unwrap_or_else(|| panic!("not a sample line: {l:?}"));
            (series.to_owned(), value.to_owned())
        })
        .collect();
    Scraped { content_type, described, samples }
}

/// Every series the bridge should show after the sequence; `decision_sum` is left out
/// (it is a measured duration) and checked on its own.
fn expected(sessions_connected: u32) -> BTreeMap<String, String> {
    let mut e = BTreeMap::new();
    let mut put = |series: String, value: &str| {
        e.insert(series, value.to_owned());
    };
    for kind in ["approval", "question"] {
        put(format!("hitl_bridge_interactions_pending{{kind=\"{kind}\"}}"), "0");
        for outcome in ["resolved", "expired", "cancelled"] {
            let n = if kind == "approval" && outcome != "cancelled" { "1" } else { "0" };
            put(format!("hitl_bridge_interactions_total{{kind=\"{kind}\",outcome=\"{outcome}\"}}"), n);
        }
        let decided = if kind == "approval" { "1" } else { "0" };
        put(format!("hitl_bridge_decision_seconds_count{{kind=\"{kind}\"}}"), decided);
        // The approval was decided well within a minute: every bucket from 60 s on
        // holds it. Its smaller ones depend on how fast this machine clicked.
        let measured = if kind == "approval" { 4 } else { 0 };
        for bound in BUCKETS.iter().skip(measured) {
            put(format!("hitl_bridge_decision_seconds_bucket{{le=\"{bound}\",kind=\"{kind}\"}}"), decided);
        }
    }
    put("hitl_bridge_outbox_depth".into(), "0");
    put("hitl_bridge_backend_sessions_connected".into(), &sessions_connected.to_string());
    for kind in ["rate_limited", "server", "client", "network"] {
        let n = if kind == "rate_limited" { "2" } else { "0" };
        put(format!("hitl_bridge_platform_errors_total{{platform=\"telegram\",kind=\"{kind}\"}}"), n);
    }
    put("hitl_bridge_shows_refused_total{platform=\"telegram\"}".into(), "0");
    for reason in REASONS {
        let n = if reason == "not_allowed" || reason == "stranger" { "1" } else { "0" };
        put(format!("hitl_bridge_refusals_total{{reason=\"{reason}\"}}"), n);
    }
    // Every group commit of the sequence ran as a whole.
    put("hitl_bridge_store_batches_retried_total".into(), "0");
    // No policy is configured here: every policy action stays at zero.
    for action in ["remind", "show_in", "rule_approve", "fallback_approve", "fallback_reject", "fallback_leave"] {
        put(format!("hitl_bridge_policy_actions_total{{action=\"{action}\"}}"), "0");
    }
    e
}

/// The scraped samples without the ones whose value is a measured time.
fn comparable(samples: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    samples
        .iter()
        .filter(|(series, _)| {
            !series.starts_with("hitl_bridge_decision_seconds_sum")
                && !BUCKETS[..4].iter().any(|b| series.starts_with(&format!("hitl_bridge_decision_seconds_bucket{{le=\"{b}\",kind=\"approval\"}}")))
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Scrapes until the samples match `want` (counters settle a moment after the chat
/// shows the outcome); fails with the difference.
async fn scrape_until(addr: SocketAddr, want: &BTreeMap<String, String>) -> Scraped {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let scraped = scrape(addr).await;
        let got = comparable(&scraped.samples);
        if &got == want {
            return scraped;
        }
        if tokio::time::Instant::now() > deadline {
            let missing: Vec<_> = want.iter().filter(|(k, v)| got.get(*k) != Some(v)).map(|(k, v)| (k, v, got.get(k))).collect();
            let extra: Vec<_> = got.iter().filter(|(k, _)| !want.contains_key(*k)).collect();
            panic!("/metrics never matched.\nexpected but not shown: {missing:#?}\nshown but not expected: {extra:#?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn metric_families_after_a_known_sequence() {
    // The agent gives up on "timeout" after 1 s; "trade" waits 300 s.
    let h = Harness::on(Chat::Telegram)
        .agent(1)
        // The connection stays up while the test looks at it.
        .set("backend.idle_close_secs", "600")
        .tweak(|settings| settings.access.users = vec![format!("telegram:{}", thao().id)])
        .start()
        .await;
    let (sim, fake, app) = (h.sim(), h.telegram(), h.app());
    let addr = app.http_addr().expect("the HTTP listener is on");
    let chat = TelegramChat { chat: fake.private_chat(&thao()), user: thao(), fake };

    // Telegram answers the first two sends with 429: waited out and counted.
    fake.throttle_next(2, 1);
    chat.say("trade");
    let trade = chat.message_with("execute_trade").await;
    let id = trade["message_id"].as_i64().expect("id");
    // A stranger's click: refused before anything changes.
    let query = fake.push_click(chat.chat, &mallory(), id, &button(&trade, "Duyệt"));
    let alert = support::wait_until(|| async { fake.answer_to(&query) }).await;
    assert_eq!(alert["show_alert"], true);
    // One approval resolved.
    chat.click(id, "Duyệt").await;
    chat.message_with("Đã đặt lệnh").await;
    // One approval expired (the agent's 1 s timeout).
    chat.say("timeout");
    chat.message_with("Không ai trả lời trong 1 giây").await;
    // A stranger's message: refused at the door.
    let theirs = fake.private_chat(&mallory());
    fake.push_message(theirs, &mallory(), "hello", None, None);
    support::wait_until(|| async { (!fake.bot_messages(theirs).is_empty()).then_some(()) }).await;

    let scraped = scrape_until(addr, &expected(1)).await;
    assert_eq!(scraped.content_type, "application/openmetrics-text; version=1.0.0; charset=utf-8");
    assert_eq!(
        scraped.described,
        [
            "# TYPE hitl_bridge_interactions_pending gauge",
            "# TYPE hitl_bridge_interactions counter",
            "# TYPE hitl_bridge_decision_seconds histogram",
            "# UNIT hitl_bridge_decision_seconds seconds",
            "# TYPE hitl_bridge_outbox_depth gauge",
            "# TYPE hitl_bridge_backend_sessions_connected gauge",
            "# TYPE hitl_bridge_platform_errors counter",
            "# TYPE hitl_bridge_shows_refused counter",
            "# TYPE hitl_bridge_refusals counter",
            "# TYPE hitl_bridge_policy_actions counter",
            "# TYPE hitl_bridge_store_batches_retried counter",
        ]
    );
    let sum: f64 = scraped.samples["hitl_bridge_decision_seconds_sum{kind=\"approval\"}"].parse().expect("a number");
    assert!(sum > 0.0 && sum < WAIT.as_secs_f64(), "decision took {sum} s");
    assert_eq!(scraped.samples["hitl_bridge_decision_seconds_sum{kind=\"question\"}"], "0.0");
    // The smaller buckets hold the decision or not, but never fewer than a smaller one.
    let counts: Vec<u64> = BUCKETS
        .iter()
        .map(|b| scraped.samples[&format!("hitl_bridge_decision_seconds_bucket{{le=\"{b}\",kind=\"approval\"}}")].parse().expect("a count"))
        .collect();
    assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
    // Only the 429s were refused by Telegram: the zero client errors are real.
    let refused = fake.errors();
    assert!(refused.iter().all(|(_, e)| e.starts_with("Too Many Requests")), "{refused:?}");

    // The agent goes away: its live connection is no longer counted.
    sim.set_down(true);
    scrape_until(addr, &expected(0)).await;
    h.shutdown().await;
}

/// Discord's 429s are counted as well (each answer, the retried one included), under
/// their own platform label; its other error kinds exist at zero from the start.
#[tokio::test]
async fn discord_rate_limits_are_counted() {
    use fake_discord::{CHANNEL_ID, guild_message, user};
    let thao = user("500000000000000001", "Thảo");
    // Started once the gateway is ready and the slash commands are registered.
    let h = Harness::on(Chat::Discord)
        .tweak(|settings| {
            settings.platforms.get_mut::<DiscordSettings>().channels = vec![CHANNEL_ID.into()];
            settings.access.users = vec!["discord:500000000000000001".into()];
        })
        .start()
        .await;
    let (fake, addr) = (h.discord(), h.app().http_addr().expect("the HTTP listener is on"));

    let seen = fake.requests().len();
    fake.rate_limit_next(1);
    fake.dispatch("MESSAGE_CREATE", guild_message(fake, CHANNEL_ID, &thao, "xin chào", false));
    fake.wait_request(seen, |r| r.path.ends_with("/messages") && r.status == 200).await;

    let scraped = scrape(addr).await;
    let discord: BTreeMap<&str, &str> = scraped
        .samples
        .iter()
        .filter_map(|(series, value)| series.strip_prefix("hitl_bridge_platform_errors_total{platform=\"discord\",kind=\"").map(|k| (k, value.as_str())))
        .collect();
    assert_eq!(discord, BTreeMap::from([("client\"}", "0"), ("network\"}", "0"), ("rate_limited\"}", "1"), ("server\"}", "0")]));
    assert!(!scraped.samples.keys().any(|s| s.contains("platform=\"telegram\"")), "telegram is not enabled");
    h.shutdown().await;
}

/// `hitl-bridge health` asks /readyz: 0 with a line on stdout when ready; 1 with one
/// line on stderr when the answer is not 2xx or there is none.
#[tokio::test]
async fn health_command_reports_readiness_in_one_line() {
    let mut h = Harness::on(Chat::Headless).start().await;
    let addr = h.app().http_addr().expect("the HTTP listener is on");

    let ready = format!("http://{addr}/readyz");
    let answer = server::probe(&ready).await.expect("ready");
    assert_eq!(answer, format!("{ready} answered HTTP 200: {{\"status\":\"ready\",\"store\":true,\"platforms\":true}}"));
    match server::probe(&format!("http://{addr}/nowhere")).await {
        Err(ProbeError::Status { status: 404, .. }) => {}
        other => panic!("expected a 404, got {other:?}"),
    }

    let run = |url: String| async move {
        tokio::process::Command::new(env!("CARGO_BIN_EXE_hitl-bridge")).args(["health", "--url", &url]).output().await.expect("runs")
    };
    let ok = run(ready.clone()).await;
    assert_eq!(ok.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&ok.stdout), format!("healthy: {answer}\n"));

    h.stop_bridge().await;
    // Nobody listens there any more.
    let down = run(ready.clone()).await;
    assert_eq!(down.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&down.stderr);
    assert!(stderr.starts_with(&format!("unhealthy: no answer from {ready}: ")), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(down.stdout.is_empty());

    let bad = run("not a url".into()).await;
    assert_eq!(bad.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&bad.stderr), "unhealthy: not a url is not a URL: relative URL without a base\n");
    h.shutdown().await;
}
