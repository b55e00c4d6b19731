//! The real `hitl-bridge run` binary on the fake Mattermost, killed with SIGKILL
//! between receiving a post over the WebSocket and storing it, then started again on
//! the same SQLite store (issue #47 item 7).
//!
//! The bridge keeps its WebSocket cursor (the newest post stored) in the store once
//! the posts it passes are stored, never before. Killed while the store's write lock
//! is held (so the kill lands in the wait to store the post), it has stored neither
//! the post nor a cursor past it: the next bridge fetches the posts made since its
//! cursor (`GET channels/{id}/posts?since=`) at its first `hello`, and the agent hears
//! the post exactly once.

mod support;

use std::path::Path;
use std::time::Duration;

use hitl_bridge::agent_sim::SimHandle;
use serde_json::{Value, json};
use support::bridge_process::BridgeProcess;
use support::fake_mattermost::{self, BOT_ID, FakeMattermost, OPS, Person};
use support::{start_sim, wait_until};

const ANA: &str = "a0a00000000000000000000000";

fn ana() -> Person {
    Person::new(ANA, "ana")
}

/// What the reference agent answers to `text`.
fn echo(text: &str) -> String {
    format!("Tôi đã nhận: {text}. Từ khóa: hỏi 2 lần, trade, two actions, timeout, shapes, multi, malformed.")
}

/// `hitl-bridge run` on the fake Mattermost and the reference agent, its store the
/// SQLite file `db`, every post in OPS going to the agent, Ana allowed to talk.
/// Returns once its WebSocket (the `connections`-th) has authenticated.
async fn bridge(fake: &FakeMattermost, sim: &SimHandle, db: &Path, connections: u32) -> BridgeProcess {
    let env = vec![
        ("HITL_BRIDGE__BACKEND__URL", format!("ws://{}/ws/{{session_id}}", sim.addr)),
        ("HITL_BRIDGE__BACKEND__HISTORY_URL", format!("http://{}/sessions/{{session_id}}/history", sim.addr)),
        ("HITL_BRIDGE__MATTERMOST__ENABLED", "true".into()),
        ("HITL_BRIDGE__MATTERMOST__URL", fake.url()),
        ("HITL_BRIDGE__MATTERMOST__BOT_TOKEN", fake_mattermost::BOT_TOKEN.into()),
        // No clicks in these tests: the endpoint listens on any free port.
        ("HITL_BRIDGE__MATTERMOST__PUBLIC_URL", "http://127.0.0.1:9".into()),
        ("HITL_BRIDGE__MATTERMOST__LISTEN", "127.0.0.1:0".into()),
        ("HITL_BRIDGE__MATTERMOST__POST_INTERVAL_MS", "0".into()),
        ("HITL_BRIDGE__MATTERMOST__CHANNELS", OPS.into()),
        ("HITL_BRIDGE__TOKENS__SECRET", "test-secret".into()),
        ("HITL_BRIDGE__ACCESS__USERS", format!("mattermost:{ANA}")),
    ];
    let process = BridgeProcess::start(db, &env);
    fake.wait_connections(connections).await;
    process
}

/// The texts the agent heard, in order.
fn heard(sim: &SimHandle) -> Vec<Value> {
    sim.commands().into_iter().filter(|c| c["type"] == "message").map(|c| c["content"][0]["text"].clone()).collect()
}

/// How many of the bot's posts say `message`.
fn posts_saying(fake: &FakeMattermost, message: &str) -> usize {
    fake.posts().iter().filter_map(|id| fake.post(id)).filter(|p| p["user_id"] == BOT_ID && p["message"] == message).count()
}

/// Time for the first turn to end after its answer shows (the streamed post's last
/// edit comes up to a second later): a turn cut short by a stop or a kill is run again
/// at the next start, which is the engine's guarantee, not what these tests are about.
async fn turn_over() {
    tokio::time::sleep(Duration::from_millis(1500)).await;
}

/// The WebSocket cursor the bridge keeps (`since_ms`), once it is at least `at_least`.
async fn cursor_reaches(db: &Path, at_least: i64) {
    use sqlx::Connection;
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display())).await.expect("open the store");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let kept: Option<String> = sqlx::query_scalar("SELECT value FROM platform_state WHERE platform = 'mattermost' AND state_key = 'socket:cursor'")
            .fetch_optional(&mut conn)
            .await
            .expect("read the store");
        let since = kept.and_then(|v| serde_json::from_str::<Value>(&v).ok()).and_then(|v| v["since_ms"].as_i64());
        if since.is_some_and(|s| s >= at_least) {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "the cursor never reached {at_least}: {since:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Killed after Mattermost sent Ana's post and before the bridge stored it (its
/// store's write lock is held, so the kill lands in that wait): the post is nowhere in
/// the store and the agent never heard it; the next bridge fetches it since its kept
/// cursor, and the agent hears it once, answered once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_between_receiving_a_post_and_storing_it_then_the_next_bridge_fetches_it_once() {
    use sqlx::Connection;
    let sim = start_sim(600).await;
    let fake = FakeMattermost::start().await;
    fake.user(&ana());
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bridge.db");
    let first = bridge(&fake, &sim, &db, 1).await;

    let one = fake.say(&ana(), OPS, "O", "một", None);
    fake.wait_message(&echo("một")).await;
    cursor_reaches(&db, fake.post(&one).expect("the post")["create_at"].as_i64().unwrap()).await;
    turn_over().await;

    let mut lock = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display())).await.expect("open the store");
    sqlx::query("BEGIN IMMEDIATE").execute(&mut lock).await.expect("take the write lock");
    fake.say(&ana(), OPS, "O", "hai", None);
    // Time for the bridge to read the event and wait on the lock to store it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    first.kill();
    sqlx::query("ROLLBACK").execute(&mut lock).await.expect("give the lock back");
    drop(lock);
    assert_eq!(heard(&sim), [json!("một")], "the second post was never handed to the agent");
    assert_eq!(posts_saying(&fake, &echo("hai")), 0);

    let second = bridge(&fake, &sim, &db, 2).await;
    fake.wait_message(&echo("hai")).await;
    // A moment for anything done twice to show.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(heard(&sim), [json!("một"), json!("hai")], "each post heard once");
    assert_eq!((posts_saying(&fake, &echo("một")), posts_saying(&fake, &echo("hai"))), (1, 1), "each answered once");
    let fetched = fake.calls().into_iter().filter(|c| c.path.starts_with(&format!("/channels/{OPS}/posts?since="))).count();
    assert!(fetched >= 2, "each bridge fetched what it missed at its hello");
    second.stop();
}

/// A post made while no bridge runs (between a clean stop and the next start) is
/// fetched at the next start and heard once; one made before the bridge ever ran is
/// not (there is no cursor to fetch it from).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_made_while_the_bridge_is_stopped_is_heard_at_its_next_start() {
    let sim = start_sim(600).await;
    let fake = FakeMattermost::start().await;
    fake.user(&ana());
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bridge.db");
    fake.say(&ana(), OPS, "O", "trước", None);
    let first = bridge(&fake, &sim, &db, 1).await;
    let one = fake.say(&ana(), OPS, "O", "một", None);
    fake.wait_message(&echo("một")).await;
    cursor_reaches(&db, fake.post(&one).expect("the post")["create_at"].as_i64().unwrap()).await;
    turn_over().await;
    first.stop();

    fake.say(&ana(), OPS, "O", "khi vắng", None);
    let second = bridge(&fake, &sim, &db, 2).await;
    fake.wait_message(&echo("khi vắng")).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(heard(&sim), [json!("một"), json!("khi vắng")]);
    wait_until(|| async { (posts_saying(&fake, &echo("khi vắng")) == 1).then_some(()) }).await;
    second.stop();
}
