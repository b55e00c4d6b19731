//! Two replicas on one store (in-process: one SQLite file, or a PostgreSQL schema for
//! the hand-over figures), Telegram under both: the
//! first polls and holds the agent's session; the second takes only what is handed to
//! it directly (a webhook nobody posts to here), as a replica behind a load balancer
//! that got the click. Every card must say what the store holds, whichever replica
//! settled the request and whichever got the backend's proof of delivery, and what a
//! replica leaves when it goes (an update it stored, a deadline it watched) is taken
//! over by the other within seconds.

mod support;

use std::time::Duration;

use hitl_bridge::app::App;
use hitl_bridge::interaction::{Actor, Delivery, UserAction};
use hitl_bridge::platform::telegram::settings::{TelegramMode, TelegramSettings};
use hitl_bridge::protocol::Decision;
use hitl_bridge::store::Store;
use serde_json::json;
use support::fake_telegram::User;
use support::harness::NoConsole;
use support::test_db::{POSTGRES_ENV, TestDatabase};
use support::{Chat, Harness, approvals, session_id, wait_until};

fn thao() -> User {
    User::new(1001, "Thảo", Some("vi"))
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("free port");
    listener.local_addr().expect("addr").port()
}

/// The second replica's settings: the first's store, agent and Bot API, another
/// replica id, and Telegram in webhook mode so that it polls nothing.
fn second_replica(first: &hitl_bridge::config::Settings) -> hitl_bridge::config::Settings {
    let mut second = first.clone();
    second.backend.replica_id = Some("second".into());
    let listen = format!("127.0.0.1:{}", free_port());
    let telegram = second.platforms.get_mut::<TelegramSettings>();
    telegram.mode = TelegramMode::Webhook;
    telegram.webhook_url = Some(format!("http://{listen}/telegram/hook"));
    telegram.webhook_listen = listen;
    telegram.webhook_secret = Some("hook-secret".to_owned().into());
    second
}

/// The replica that settles a request whose session the other replica holds never
/// hears the proof: after the delivery grace it must not paint its stale "saved, not
/// yet delivered" copy over the card the holder already showed as delivered.
#[tokio::test]
async fn a_decision_settled_on_the_replica_without_the_session_leaves_the_card_delivered() {
    let mut h = Harness::on(Chat::Telegram)
        .agent(20)
        .settings(&[("backend.lease_secs", "3"), ("backend.replica_id", "first")])
        .tweak(|s| s.access.users = vec![format!("telegram:{}", thao().id)])
        .start()
        .await;
    let second = App::start(&second_replica(&h.settings), None as NoConsole).await.expect("the second replica starts");
    let store = Store::connect(&h.settings.store.url).await.expect("store");
    let fake = h.telegram();
    let chat = fake.private_chat(&thao());

    fake.push_message(chat, &thao(), "trade", None, None);
    let card = wait_until(|| async { fake.bot_messages(chat).into_iter().find(|m| m["text"].as_str().is_some_and(|t| t.contains("execute_trade"))) }).await;
    let card_id = card["message_id"].as_i64().expect("id");
    let pending = wait_until(|| async { store.pending_interactions().await.ok()?.into_iter().next() }).await;

    // The click reaches the second replica; the first holds the session.
    let decided = second.engine.act(&pending.id, Actor::new("telegram", "1001", "Thảo"), UserAction::Decide { action: 0, decision: Decision::Approve }).await;
    assert!(matches!(decided, Ok(hitl_bridge::engine::ActOutcome::Resolved(_))), "{decided:?}");
    wait_until(|| async {
        fake.bot_messages(chat).into_iter().find(|m| m["text"].as_str().is_some_and(|t| t.contains("Đã đặt lệnh: buy 100 VNM @ 82000")))
    })
    .await;
    wait_until(|| async { fake.message(chat, card_id).filter(|m| m["text"].as_str().is_some_and(|t| t.contains("✅ Đã duyệt bởi Thảo"))) }).await;
    let s = session_id(h.sim());
    assert_eq!(approvals(h.sim()), vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),"decisions":[{"type":"approve"}]})]);

    // Past the delivery grace (1 s) and the engine's tick on the settling replica.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let stored = store.interaction(&pending.id).await.expect("read").expect("stored");
    assert!(matches!(stored.delivery, Delivery::Delivered { .. }), "{:?}", stored.delivery);
    let shown = fake.message(chat, card_id).expect("the card");
    let text = shown["text"].as_str().expect("text");
    assert!(text.contains("✅ Đã duyệt bởi Thảo"), "{text}");
    assert!(!text.contains("chưa gửi tới agent"), "the card says what the store holds (delivered): {text}");
    let stale_edits: Vec<_> = fake
        .calls("editMessageText")
        .into_iter()
        .filter(|edit| edit["message_id"] == json!(card_id) && edit["text"].as_str().is_some_and(|t| t.contains("chưa gửi tới agent")))
        .collect();
    assert!(stale_edits.is_empty(), "no replica showed a delivered decision as undelivered: {stale_edits:?}");

    second.stop().await;
    h.stop_bridge().await;
    h.shutdown().await;
}

/// PostgreSQL: a decision taken on the replica without the session reaches the agent
/// through the holder at once (the outbox's NOTIFY), not at the holder's next count of
/// the outbox (once a second). Five rounds, each under 300 ms; the figures are printed.
#[tokio::test]
#[ignore = "needs PostgreSQL: HITL_BRIDGE_TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test), then cargo test -- --include-ignored"]
async fn on_postgres_a_decision_taken_on_the_other_replica_reaches_the_agent_at_once() {
    let base = std::env::var(POSTGRES_ENV).unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let db = TestDatabase::schema_on(&base).await.unwrap_or_else(|e| panic!("PostgreSQL at {base} is unreachable: {e}"));
    let mut h = Harness::on(Chat::Telegram)
        .agent(20)
        .store(&db.url)
        .settings(&[("backend.lease_secs", "3"), ("backend.replica_id", "first")])
        .tweak(|s| s.access.users = vec![format!("telegram:{}", thao().id)])
        .start()
        .await;
    let second = App::start(&second_replica(&h.settings), None as NoConsole).await.expect("the second replica starts");
    let store = Store::connect(&db.url).await.expect("store");
    let fake = h.telegram();
    let chat = fake.private_chat(&thao());

    let mut took = Vec::new();
    for round in 1..=5usize {
        fake.push_message(chat, &thao(), "trade", None, None);
        let pending = wait_until(|| async { store.pending_interactions().await.ok()?.into_iter().next() }).await;
        let decided_at = std::time::Instant::now();
        let decided =
            second.engine.act(&pending.id, Actor::new("telegram", "1001", "Thảo"), UserAction::Decide { action: 0, decision: Decision::Approve }).await;
        assert!(matches!(decided, Ok(hitl_bridge::engine::ActOutcome::Resolved(_))), "{decided:?}");
        wait_until(|| async { (approvals(h.sim()).len() == round).then_some(()) }).await;
        took.push(decided_at.elapsed());
        // The agent's turn ends before the next message.
        wait_until(|| async {
            let done = fake.bot_messages(chat).into_iter().filter(|m| m["text"].as_str().is_some_and(|t| t.contains("Đã đặt lệnh"))).count();
            (done == round).then_some(())
        })
        .await;
    }
    let mut sorted = took.clone();
    sorted.sort();
    println!("cross-replica click → command on PostgreSQL, 5 rounds: p50 {:?}, max {:?} ({took:?})", sorted[2], sorted[4]);
    assert!(sorted[4] < Duration::from_millis(300), "every decision crossed at once: {took:?}");

    second.stop().await;
    h.stop_bridge().await;
    h.shutdown().await;
    store.close().await;
    db.finish().await;
}

/// The replica holding a session stops while the agent is in a turn (the reference
/// agent thinks 2 s before it asks): the other replica takes the turn over once the
/// lease is free, and the request the agent then sends is shown and answered there.
#[tokio::test]
async fn a_turn_in_progress_on_a_replica_that_stops_is_taken_over_by_the_other() {
    let mut h = Harness::on(Chat::Telegram)
        .agent(20)
        .settings(&[("backend.lease_secs", "3"), ("backend.replica_id", "first")])
        .tweak(|s| s.access.users = vec![format!("telegram:{}", thao().id)])
        .start()
        .await;
    let second = App::start(&second_replica(&h.settings), None as NoConsole).await.expect("the second replica starts");
    let store = Store::connect(&h.settings.store.url).await.expect("store");
    let chat = h.telegram().private_chat(&thao());

    h.telegram().push_message(chat, &thao(), "slow trade", None, None);
    wait_until(|| async { h.sim().commands().iter().any(|c| c["type"] == "message").then_some(()) }).await;
    // Proven read: the outbox is empty, so only the open turn says the session has work.
    let s = session_id(h.sim());
    wait_until(|| async { store.outbox_for_session(&s).await.ok()?.is_empty().then_some(()) }).await;
    // The holder goes (its lease given up) while the agent still thinks.
    h.stop_bridge().await;
    let stopped = std::time::Instant::now();

    let fake = h.telegram();
    wait_until(|| async { fake.bot_messages(chat).into_iter().find(|m| m["text"].as_str().is_some_and(|t| t.contains("execute_trade"))) }).await;
    // The agent asks 2 s after the message; the other replica is connected by then
    // (its next count of the turns no replica holds, within a second).
    let shown_after = stopped.elapsed();
    println!("turn taken over: the request was shown {shown_after:?} after the holder stopped");
    assert!(shown_after < Duration::from_secs(4), "taken over at once, not at a later rescan: {shown_after:?}");
    let pending = wait_until(|| async { store.pending_interactions().await.ok()?.into_iter().next() }).await;
    let decided = second.engine.act(&pending.id, Actor::new("telegram", "1001", "Thảo"), UserAction::Decide { action: 0, decision: Decision::Approve }).await;
    assert!(matches!(decided, Ok(hitl_bridge::engine::ActOutcome::Resolved(_))), "{decided:?}");
    wait_until(|| async {
        fake.bot_messages(chat).into_iter().find(|m| m["text"].as_str().is_some_and(|t| t.contains("Đã đặt lệnh: buy 100 VNM @ 82000")))
    })
    .await;
    assert_eq!(approvals(h.sim()), vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),"decisions":[{"type":"approve"}]})]);
    // The turn's end is recorded once the chat has shown its last words.
    wait_until(|| async { (!store.has_open_turn(&s).await.expect("read")).then_some(()) }).await;

    second.stop().await;
    h.shutdown().await;
}

/// Polls `probe` every 50 ms until `limit` after `since`; how long after `since` it
/// held, or `None`. (The takeovers measured here took a minute before, longer than
/// `wait_until` waits, and the figure is printed either way.)
async fn time_until<F, Fut>(since: std::time::Instant, limit: Duration, mut probe: F) -> Option<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    while since.elapsed() < limit {
        if probe().await {
            return Some(since.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// PostgreSQL: a replica dies right after it stored a Telegram update (and so answered
/// the webhook's 200), before handling it. The live replica takes the update over as
/// soon as the dead one's claim lapses, the claim being renewed only while its replica
/// lives: the person's message reaches the agent within seconds, not a minute later.
#[tokio::test]
#[ignore = "needs PostgreSQL: HITL_BRIDGE_TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test), then cargo test -- --include-ignored"]
async fn on_postgres_an_update_stored_by_a_dead_replica_is_handled_by_the_other_within_seconds() {
    let base = std::env::var(POSTGRES_ENV).unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let db = TestDatabase::schema_on(&base).await.unwrap_or_else(|e| panic!("PostgreSQL at {base} is unreachable: {e}"));
    let mut h = Harness::on(Chat::Telegram)
        .agent(20)
        .store(&db.url)
        .settings(&[("backend.lease_secs", "3"), ("backend.replica_id", "first")])
        .tweak(|s| s.access.users = vec![format!("telegram:{}", thao().id)])
        .start()
        .await;
    let store = Store::connect(&db.url).await.expect("store");
    let fake = h.telegram();
    let chat = fake.private_chat(&thao());

    // What the dead replica "second" left: the update stored under its claim, as fresh
    // as its last renewal can make it, and never handled.
    let mut update = fake.message_update(chat, &thao(), "xin chào", None, None);
    update["update_id"] = json!(900_001);
    let row = hitl_bridge::store::InboxUpdate { update_id: "900001".into(), seq: 900_001, lane: chat.to_string(), body: update.to_string() };
    let died = std::time::Instant::now();
    let claim = hitl_bridge::store::ShowClaim {
        owner: "second".into(),
        until_ms: hitl_bridge::clock::now_ms() + hitl_bridge::platform::telegram::INBOX_CLAIM.as_millis() as i64,
    };
    assert_eq!(store.platform_inbox("telegram").store(std::slice::from_ref(&row), &claim, hitl_bridge::clock::now_ms()).await.expect("stored"), vec!["900001"]);

    let sim = h.sim();
    let reached =
        time_until(died, Duration::from_secs(90), || async { sim.commands().iter().any(|c| c["type"] == "message" && c.to_string().contains("xin chào")) })
            .await;
    println!("an update stranded by a dead replica reached the agent {reached:?} after the death (claim {:?})", hitl_bridge::platform::telegram::INBOX_CLAIM);
    let took = reached.expect("the stranded update is handled");
    assert!(took <= Duration::from_secs(15), "taken over within about one lease period: {took:?}");
    wait_until(|| async { (store.platform_inbox("telegram").waiting().await.ok()? == 0).then_some(()) }).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let messages: Vec<_> = h.sim().commands().into_iter().filter(|c| c["type"] == "message").collect();
    assert_eq!(messages.len(), 1, "handled once: {messages:?}");

    h.stop_bridge().await;
    h.shutdown().await;
    store.close().await;
    db.finish().await;
}

/// PostgreSQL: a request pushed over the HTTP API on the first replica, which then
/// stops before the deadline. The second replica heard of the request when it was
/// stored, so it expires it on time and the card says so, instead of finding it at its
/// next rescan (every 10 s).
#[tokio::test]
#[ignore = "needs PostgreSQL: HITL_BRIDGE_TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test), then cargo test -- --include-ignored"]
async fn on_postgres_a_request_pushed_on_a_replica_that_stops_expires_on_time_on_the_other() {
    const OPS: i64 = -100_777;
    let base = std::env::var(POSTGRES_ENV).unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let db = TestDatabase::schema_on(&base).await.unwrap_or_else(|e| panic!("PostgreSQL at {base} is unreachable: {e}"));
    let mut h = Harness::on(Chat::Telegram)
        .no_agent()
        .store(&db.url)
        .settings(&[("backend.lease_secs", "3"), ("backend.replica_id", "first"), ("timeouts.grace_secs", "0")])
        .tweak(|s| s.http.api_tokens = vec!["ci:ci-secret".into()])
        .start()
        .await;
    h.telegram().group(OPS, "ops", false);
    let second = App::start(&second_replica(&h.settings), None as NoConsole).await.expect("the second replica starts");
    let store = Store::connect(&db.url).await.expect("store");

    let first = format!("http://{}", h.app().http_addr().expect("the first replica's API"));
    let body = json!({"approval_key": "exp-1", "targets": [{"platform": "telegram", "chat_id": OPS.to_string()}], "timeout_seconds": 3,
        "actions": [{"name": "deploy", "args": {"v": "2.3"}}]});
    let pushed = std::time::Instant::now();
    let created = reqwest::Client::new().post(format!("{first}/v1/requests")).bearer_auth("ci-secret").json(&body).send().await.expect("push");
    assert_eq!(created.status(), reqwest::StatusCode::CREATED);
    let card = wait_until(|| async { h.telegram().bot_messages(OPS).into_iter().find(|m| m["text"].as_str().is_some_and(|t| t.contains("deploy"))) }).await;
    let card_id = card["message_id"].as_i64().expect("id");
    // The first replica goes; only the second is left to keep the deadline.
    h.stop_bridge().await;
    assert!(pushed.elapsed() < Duration::from_secs(3), "stopped before the deadline: {:?}", pushed.elapsed());
    let fake = h.telegram();

    let expired = time_until(pushed, Duration::from_secs(20), || async {
        fake.message(OPS, card_id).is_some_and(|m| m["text"].as_str().is_some_and(|t| t.contains("xpired")))
    })
    .await;
    println!("a request pushed on a replica that stopped: its card showed Expired {expired:?} after the push (deadline 3 s)");
    let took = expired.expect("the card shows the expiry");
    assert!(took <= Duration::from_secs(5), "expired on time by the other replica, not at its next rescan: {took:?}");
    let stored = store.pending_interactions().await.expect("read");
    assert!(stored.is_empty(), "{stored:?}");

    second.stop().await;
    h.shutdown().await;
    store.close().await;
    db.finish().await;
}
