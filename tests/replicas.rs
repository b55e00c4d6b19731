//! Two bridge processes (the real binary) on one PostgreSQL database, Telegram in
//! webhook mode: the fake Bot API delivers updates to one replica or the other, as a
//! load balancer would, and the reference agent (in this process) is the backend.
//!
//! - a wizard step taken on replica A, the next click handled by replica B;
//! - Edit pressed on A, the typed JSON reply landing on B: it is the edit, not a new
//!   agent turn;
//! - the lease holder killed with SIGKILL: the other replica takes the session over
//!   within `backend.lease_secs` and the decision reaches the agent exactly once.
//!
//! PostgreSQL: `HITL_BRIDGE_TEST_POSTGRES_URL`, else postgres://postgres@127.0.0.1:5432/test.
//! A fresh schema per run, dropped afterwards. The test is `#[ignore]`d: it runs with
//! `cargo test -- --include-ignored`, and fails when PostgreSQL cannot be reached.

use support::fake_telegram;
mod support;
use support::test_db;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use fake_telegram::User;
use hitl_bridge::agent_sim::SimHandle;
use serde_json::{Value, json};
use support::replica_processes::Replicas;
use support::{approvals, wait_until};
use test_db::{POSTGRES_ENV, TestDatabase};

const DEFAULT_POSTGRES: &str = "postgres://postgres@127.0.0.1:5432/test";
const LEASE_SECS: u64 = 3;

fn thao() -> User {
    User::new(1001, "Thảo", Some("vi"))
}

/// A fresh schema (always `Some`: an unreachable PostgreSQL fails the test, which is
/// `#[ignore]`d and so only runs when asked for).
async fn database() -> Option<TestDatabase> {
    let base = std::env::var(POSTGRES_ENV).unwrap_or_else(|_| DEFAULT_POSTGRES.to_owned());
    match TestDatabase::schema_on(&base).await {
        Ok(db) => Some(db),
        Err(e) => panic!("PostgreSQL at {base} is unreachable: {e}"),
    }
}

fn id_of(message: &Value) -> i64 {
    message["message_id"].as_i64().expect("message id")
}

/// The interaction id inside a button's signed token (`1:<id>:<code>:<tag>`).
fn interaction_of(message: &Value) -> String {
    let data = message["reply_markup"]["inline_keyboard"][0][0]["callback_data"].as_str().expect("a button");
    data.split(':').nth(1).expect("token").to_owned()
}

/// Approval commands the agent received, counted per approval_key.
fn per_key(sim: &SimHandle) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for a in approvals(sim) {
        *counts.entry(a["approval_key"].as_str().unwrap_or_default().to_owned()).or_insert(0) += 1;
    }
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set HITL_BRIDGE_TEST_POSTGRES_URL, then cargo test -- --include-ignored"]
async fn two_replicas_share_every_state_and_take_over_after_sigkill() {
    let Some(db) = database().await else { return };
    let mut rig = Replicas::start(&db.url, &["A", "B"], thao(), LEASE_SECS).await;
    let outcome = tokio::time::timeout(Duration::from_secs(180), scenario(&mut rig)).await;
    if !matches!(outcome, Ok(Ok(()))) {
        rig.dump_logs();
    }
    rig.shutdown().await;
    db.finish().await;
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => panic!("the scenario did not finish within 180 s"),
    }
}

/// Runs the steps, catching a failed assertion so the logs can be shown first.
async fn scenario(rig: &mut Replicas) -> Result<(), Box<dyn std::any::Any + Send>> {
    use futures_util::FutureExt;
    std::panic::AssertUnwindSafe(steps(rig)).catch_unwind().await
}

async fn steps(rig: &mut Replicas) {
    // Both replicas identified the bot and registered their webhook.
    wait_until(|| async { (rig.fake.calls("setWebhook").len() >= 2).then_some(()) }).await;
    let (a, b) = (0, 1);

    // 1. A wizard: the first step on A, the next click on B, Submit on A.
    rig.say(a, "hỏi 2 lần", None).await;
    let q = rig.message_with("[1/2] Mục tiêu chính").await;
    let id = id_of(&q);
    let interaction = interaction_of(&q);
    assert_eq!(rig.click(a, id, "Cổ tức bền vững").await["text"], "Đã lưu");
    let step2 = rig.message_shows(id, "[2/2] Kỳ hạn đầu tư").await;
    assert_eq!(rig.store.ui_states().count(&interaction).await.expect("ui state"), 1, "the step is in the store");
    let second = step2["reply_markup"]["inline_keyboard"][0][0]["text"].as_str().expect("first option").to_owned();
    assert_eq!(rig.click(b, id, &second).await["text"], "Đã lưu");
    rig.message_shows(id, "Câu trả lời của bạn").await;
    assert_eq!(rig.click(a, id, "Gửi").await["text"], "Đã lưu quyết định");
    rig.message_shows(id, "bởi Thảo").await;
    let q3 = rig.message_with("[1/1] Kênh báo cáo").await;
    rig.click(b, id_of(&q3), "Telegram").await;
    rig.message_shows(id_of(&q3), "Câu trả lời của bạn").await;
    rig.click(a, id_of(&q3), "Gửi").await;
    rig.message_with("Cảm ơn! Tổng kết").await;
    let session = rig.sim.commands().iter().find_map(|c| c["session_id"].as_str().map(str::to_owned)).expect("a session");
    let got = approvals(&rig.sim);
    assert_eq!(
        got[0]["answers"],
        json!({"Thảo muốn tập trung vào mục tiêu nào?": "Cổ tức bền vững (Recommended)", "Thời gian nắm giữ dự kiến?": second.trim_start_matches("✓ ")})
    );
    assert_eq!(rig.store.ui_states().count(&interaction).await.expect("ui state"), 0, "forgotten when it ended");

    // 2. Edit on A, the typed JSON on B: the edit, not a new turn.
    rig.say(b, "trade", None).await;
    let trade = rig.message_with("execute_trade").await;
    rig.click(a, id_of(&trade), "Sửa").await;
    let prompt = rig.message_with("dạng đối tượng JSON").await;
    rig.say(b, r#"{"symbol":"VNM","quantity":50,"side":"buy","price":82000}"#, Some(id_of(&prompt))).await;
    rig.message_with("Đã đặt lệnh: buy 50 VNM @ 82000").await;
    let edit = approvals(&rig.sim).into_iter().find(|c| c["decisions"][0]["type"] == "edit").expect("the edit reached the agent");
    assert_eq!(
        edit["decisions"],
        json!([{"type":"edit","edited_action":{"name":"execute_trade","args":{"symbol":"VNM","quantity":50,"side":"buy","price":82000}}}])
    );
    let turns: Vec<Value> = rig.sim.commands().into_iter().filter(|c| c["type"] == "message").collect();
    assert_eq!(turns.len(), 2, "the typed JSON started no turn: {turns:?}");

    // 3. The lease holder is killed; the other replica takes over.
    rig.say(a, "trade", None).await;
    let pending = wait_until(|| async {
        let trades: Vec<Value> =
            rig.fake.bot_messages(rig.chat).into_iter().filter(|m| m["text"].as_str().is_some_and(|t| t.contains("execute_trade"))).collect();
        (trades.len() >= 2).then(|| trades.last().cloned()).flatten().filter(|m| m.get("reply_markup").is_some())
    })
    .await;
    let key = format!("{session}_4");
    let holder = match (rig.replicas[a].last_connect(), rig.replicas[b].last_connect()) {
        (Some(x), Some(y)) => {
            if x >= y {
                a
            } else {
                b
            }
        }
        (Some(_), None) => a,
        (None, Some(_)) => b,
        (None, None) => panic!("no replica connected to the backend"),
    };
    let survivor = 1 - holder;
    let killed = Instant::now();
    rig.replicas[holder].kill();
    assert!(rig.replicas[survivor].alive());
    let answer = rig.click(survivor, id_of(&pending), "Duyệt").await;
    assert!(answer["text"] == "Đã lưu quyết định" || answer["text"] == "Đã lưu", "{answer}");
    wait_until(|| async { per_key(&rig.sim).contains_key(&key).then_some(()) }).await;
    let takeover = killed.elapsed();
    println!(
        "takeover: replica {} was SIGKILLed; replica {} delivered the decision on {key} after {:.2} s (backend.lease_secs = {LEASE_SECS})",
        rig.replicas[holder].name,
        rig.replicas[survivor].name,
        takeover.as_secs_f64()
    );
    // The lease lapses within lease_secs of the kill; the survivor retries every
    // lease_secs / 6 and then connects: allow that retry and a connect on top.
    assert!(takeover <= Duration::from_secs(LEASE_SECS) + Duration::from_millis(1500), "takeover took {takeover:?}");
    rig.message_with("Đã đặt lệnh: buy 100 VNM @ 82000").await;
    // Nothing sent twice: give a duplicate time to show up, then count per key.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let counts = per_key(&rig.sim);
    assert_eq!(counts.len(), 4, "{counts:?}");
    assert!(counts.values().all(|&n| n == 1), "each approval_key exactly once: {counts:?}");
    assert_eq!(approvals(&rig.sim).iter().find(|c| c["approval_key"] == json!(key)).expect("decision")["decisions"], json!([{"type":"approve"}]));
}
