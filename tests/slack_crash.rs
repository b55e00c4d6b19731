//! The real `hitl-bridge run` binary on Slack's Socket Mode (the fake Slack), killed
//! with SIGKILL around a click, then started again on the same SQLite store (issue #34
//! item 7). The bridge stores an envelope before it acknowledges it; Slack delivers an
//! envelope it has no acknowledgement of again (`retry_attempt` 1) to the next
//! connection. Wherever the kill lands, the agent gets exactly one decision and the
//! card is edited to its outcome once:
//!
//! - between receiving the click and storing it (the test holds the store's write
//!   lock): nothing was acknowledged, and the click delivered again decides;
//! - after the bridge stored and acknowledged it, the acknowledgement lost on the way,
//!   before it was handled (the handling waits on Slack's answer about a user group):
//!   the stored click is handled once, its delivery again only acknowledged;
//! - a click stored, acknowledged and handled that Slack delivers again anyway (to the
//!   same bridge, and to the next one after a kill): acknowledged, never handled again;
//! - between the decision and the card's edit: the next bridge edits the card.
//!
//! And without a kill: a click and its delivery again stored in one batch (the socket
//! stores what arrived together in one transaction) are handled once.

mod support;

use std::path::Path;
use std::time::Duration;

use hitl_bridge::agent_sim::SimHandle;
use serde_json::{Value, json};
use support::bridge_process::BridgeProcess;
use support::fake_slack::{self, FakeSlack, Person};
use support::slack_chat::{assert_nothing_refused, card, message, next_ts, push_event, wait_text};
use support::{approvals, session_id, start_sim, wait_approvals, wait_until};

const ANA: &str = "U0ANA";
/// Ana's direct conversation with the bot, where her turn and its card are.
const DM: &str = "D0ANA";
/// An approver group Ana is in.
const SRE: &str = "S0SRE";

fn ana() -> Person {
    Person::new(ANA, "ana")
}

/// `hitl-bridge run` on the fake Slack (Socket Mode) and the reference agent, its
/// store the SQLite file `db`; Ana may talk. Returns once its Socket Mode connection
/// (the `connections`-th) is open.
async fn bridge(fake: &FakeSlack, sim: &SimHandle, db: &Path, connections: u32, extra: &[(&'static str, String)]) -> BridgeProcess {
    let mut env = vec![
        ("HITL_BRIDGE__BACKEND__URL", format!("ws://{}/ws/{{session_id}}", sim.addr)),
        ("HITL_BRIDGE__BACKEND__HISTORY_URL", format!("http://{}/sessions/{{session_id}}/history", sim.addr)),
        ("HITL_BRIDGE__SLACK__ENABLED", "true".into()),
        ("HITL_BRIDGE__SLACK__BOT_TOKEN", fake_slack::BOT_TOKEN.into()),
        ("HITL_BRIDGE__SLACK__APP_TOKEN", fake_slack::APP_TOKEN.into()),
        ("HITL_BRIDGE__SLACK__API_URL", fake.api_url()),
        ("HITL_BRIDGE__TOKENS__SECRET", "test-secret".into()),
        ("HITL_BRIDGE__ACCESS__USERS", format!("slack:{ANA}")),
    ];
    env.extend_from_slice(extra);
    let process = BridgeProcess::start(db, &env);
    fake.wait_connections(connections).await;
    process
}

/// Ana writes `trade` to the bot; the card of the agent's request, once posted.
async fn ask_for_a_trade(fake: &FakeSlack) -> String {
    push_event(fake, message(ANA, DM, "im", "trade", &next_ts(), None));
    card(fake, DM).await
}

/// The edits of card `ts` to its outcome Slack took.
fn outcomes(fake: &FakeSlack, ts: &str) -> Vec<Value> {
    let edits = fake.calls().into_iter().filter(|c| c.method == "chat.update" && c.error.is_none()).map(|c| c.body);
    edits.filter(|b| b["ts"] == ts && b.to_string().contains("Approved by ana")).collect()
}

/// After a moment for anything done twice to show: the agent got exactly one
/// decision, an approval of its request; the card was edited to the outcome once and
/// lost its buttons; Ana was told nothing on the side (a click handled twice would
/// have told her "Already decided"); the agent's answer was shown once.
async fn decided_exactly_once(fake: &FakeSlack, sim: &SimHandle, ts: &str) {
    wait_approvals(sim, 1).await;
    wait_text(fake, "Đã đặt lệnh: buy 100 VNM @ 82000").await;
    wait_until(|| async { (!outcomes(fake, ts).is_empty()).then_some(()) }).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let s = session_id(sim);
    assert_eq!(approvals(sim), [json!({"type": "approval", "session_id": s, "approval_key": format!("{s}_1"), "decisions": [{"type": "approve"}]})]);
    assert_eq!(outcomes(fake, ts).len(), 1, "the card is edited to its outcome once: {:?}", fake.bodies("chat.update"));
    assert!(!fake_slack::has_buttons(&fake.message(DM, ts).expect("the card")));
    assert_eq!(fake.bodies("chat.postEphemeral"), Vec::<Value>::new(), "nothing handled twice");
    let answers = fake.bodies("chat.postMessage").into_iter().filter(|b| b["text"].as_str().is_some_and(|t| t.contains("Đã đặt lệnh"))).count();
    assert_eq!(answers, 1, "the agent's answer once");
}

/// Opens the store `db` and takes its write lock: the bridge can read but stores
/// nothing (it waits its `busy_timeout`) until the lock is given back. First waits
/// until the bridge has recorded card `ts`: Slack answers the post before the bridge
/// records it, and a lock taken in between would hold the record back, so the card
/// would be one the store does not know (a loaded machine made that window real).
async fn lock_store(db: &Path, ts: &str) -> sqlx::SqliteConnection {
    use sqlx::Connection;
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display())).await.expect("open the store");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let recorded: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM message_refs WHERE message_id = ?").bind(ts).fetch_one(&mut conn).await.expect("read the store");
        if recorded > 0 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "card {ts} never recorded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    sqlx::query("BEGIN IMMEDIATE").execute(&mut conn).await.expect("take the write lock");
    conn
}

/// Starts a bridge again on `db` after a kill (its Socket Mode connection the
/// `connections`-th), where Slack delivers the click again; the click decides once.
async fn restarted_and_delivered_again(fake: &FakeSlack, sim: &SimHandle, db: &Path, connections: u32, click: &str, ts: &str) {
    let second = bridge(fake, sim, db, connections, &[]).await;
    fake.redeliver(click);
    fake.wait_delivered(click, 2).await;
    assert_eq!(fake.sent_envelope(click, 1)["retry_attempt"], 1);
    assert_eq!(fake.wait_ack(click).await, json!({"envelope_id": click}));
    decided_exactly_once(fake, sim, ts).await;
    second.stop();
    assert_nothing_refused(fake);
}

/// Killed after Slack sent Ana's click and before the bridge stored it (its store's
/// write lock is held, so the kill lands in that wait): no acknowledgement left, the
/// click is nowhere; delivered again to the next bridge, it decides once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_between_receiving_a_click_and_storing_it_then_its_delivery_again_decides_once() {
    let sim = start_sim(600).await;
    let fake = FakeSlack::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bridge.db");
    let first = bridge(&fake, &sim, &db, 1, &[]).await;
    let ts = ask_for_a_trade(&fake).await;

    let mut lock = lock_store(&db, &ts).await;
    let click = fake.click(&ana(), DM, &ts, "Approve");
    fake.wait_delivered(&click, 1).await;
    // Time for the bridge to read the envelope and wait on the lock to store it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    first.kill();
    sqlx::query("ROLLBACK").execute(&mut lock).await.expect("give the lock back");
    drop(lock);
    assert!(fake.acks_of(&click).is_empty(), "nothing stored, nothing acknowledged");
    assert!(approvals(&sim).is_empty());
    assert!(outcomes(&fake, &ts).is_empty());

    restarted_and_delivered_again(&fake, &sim, &db, 2, &click, &ts).await;
    fake.shutdown();
    sim.shutdown().await;
}

/// Killed after the bridge stored and acknowledged Ana's click, its acknowledgement
/// lost on the way (Slack has none), while the click's handling waits on Slack to say
/// who is in the approver group (before anything is decided): the next bridge handles
/// the stored click once, and the delivery again is recognised and only acknowledged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_after_a_click_was_stored_and_its_ack_lost_then_it_is_handled_once() {
    let sim = start_sim(600).await;
    let fake = FakeSlack::start().await;
    fake.usergroup(SRE, &[ANA]);
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bridge.db");
    // Asked again after a second: Ana's message asked already, her click asks again.
    let groups = [("HITL_BRIDGE__ACCESS__APPROVER_ROLES", SRE.to_owned()), ("HITL_BRIDGE__SLACK__GROUP_REFRESH_SECS", "1".to_owned())];
    let first = bridge(&fake, &sim, &db, 1, &groups).await;
    let ts = ask_for_a_trade(&fake).await;
    tokio::time::sleep(Duration::from_millis(1200)).await;

    fake.lose_acks(true);
    fake.hold_usergroups(true);
    let click = fake.click(&ana(), DM, &ts, "Approve");
    wait_until(|| async { (!fake.lost_acks_of(&click).is_empty() && fake.usergroup_asks_held() > 0).then_some(()) }).await;
    first.kill();
    assert_eq!(fake.lost_acks_of(&click), [json!({"envelope_id": click})], "stored, then acknowledged");
    assert!(fake.acks_of(&click).is_empty(), "Slack has no acknowledgement");
    assert!(approvals(&sim).is_empty(), "nothing decided before the kill");
    fake.lose_acks(false);
    fake.hold_usergroups(false);

    restarted_and_delivered_again(&fake, &sim, &db, 2, &click, &ts).await;
    fake.shutdown();
    sim.shutdown().await;
}

/// A click stored, acknowledged and handled: Slack delivering it again, to the same
/// bridge or to the next one after a SIGKILL, gets an acknowledgement and nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_stored_and_acked_is_not_handled_again_when_slack_delivers_it_again() {
    let sim = start_sim(600).await;
    let fake = FakeSlack::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bridge.db");
    let first = bridge(&fake, &sim, &db, 1, &[]).await;
    let ts = ask_for_a_trade(&fake).await;
    let click = fake.click(&ana(), DM, &ts, "Approve");
    assert_eq!(fake.wait_ack(&click).await, json!({"envelope_id": click}));
    decided_exactly_once(&fake, &sim, &ts).await;

    fake.redeliver(&click);
    wait_until(|| async { (fake.acks_of(&click).len() == 2).then_some(()) }).await;
    decided_exactly_once(&fake, &sim, &ts).await;

    first.kill();
    let second = bridge(&fake, &sim, &db, 2, &[]).await;
    fake.redeliver(&click);
    fake.wait_delivered(&click, 3).await;
    assert_eq!(fake.sent_envelope(&click, 2)["retry_attempt"], 2);
    wait_until(|| async { (fake.acks_of(&click).len() == 3).then_some(()) }).await;
    decided_exactly_once(&fake, &sim, &ts).await;
    second.stop();
    assert_nothing_refused(&fake);
    fake.shutdown();
    sim.shutdown().await;
}

/// Envelopes that arrive while the bridge is storing others are stored together, in
/// one transaction: a click and Slack's delivery of it again in the same batch are
/// stored once and handled once, and both are acknowledged. The store's write lock is
/// held while an envelope the bridge ignores is being stored, so the click and its
/// second delivery both wait unread behind it and make the next batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_delivered_twice_in_one_batch_is_stored_and_handled_once() {
    let sim = start_sim(600).await;
    let fake = FakeSlack::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bridge.db");
    let bridge = bridge(&fake, &sim, &db, 1, &[]).await;
    let ts = ask_for_a_trade(&fake).await;
    let mut lock = lock_store(&db, &ts).await;
    let ignored = "env-shortcut-1";
    fake.push(json!({"type": "interactive", "envelope_id": ignored, "accepts_response_payload": false, "payload": {"type": "shortcut"}}));
    fake.wait_delivered(ignored, 1).await;
    let click = fake.click(&ana(), DM, &ts, "Approve");
    fake.wait_delivered(&click, 1).await;
    fake.redeliver(&click);
    fake.wait_delivered(&click, 2).await;
    // Nothing can be stored yet, so nothing is acknowledged.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(fake.acks_of(ignored).is_empty() && fake.acks_of(&click).is_empty(), "acknowledged before stored");
    sqlx::query("ROLLBACK").execute(&mut lock).await.expect("give the write lock back");
    wait_until(|| async { (fake.acks_of(&click).len() == 2).then_some(()) }).await;
    assert_eq!(fake.acks_of(ignored), [json!({"envelope_id": ignored})]);
    assert_eq!(fake.acks_of(&click), [json!({"envelope_id": click}), json!({"envelope_id": click})]);
    decided_exactly_once(&fake, &sim, &ts).await;
    bridge.stop();
    assert_nothing_refused(&fake);
    fake.shutdown();
    sim.shutdown().await;
}

/// Killed after Ana's click was decided (the agent has the decision) and before the
/// card was edited to the outcome (Slack answers the edit 429 with a long
/// `Retry-After`): the next bridge edits the card, which still showed its buttons (a
/// restart renders again every message that does not show its interaction's current
/// revision, decided ones included: `Store::stale_messages`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_between_the_decision_and_the_cards_edit_then_the_next_bridge_edits_it() {
    let sim = start_sim(600).await;
    let fake = FakeSlack::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bridge.db");
    let first = bridge(&fake, &sim, &db, 1, &[]).await;
    let ts = ask_for_a_trade(&fake).await;

    fake.rate_limit_next(3, 60);
    let click = fake.click(&ana(), DM, &ts, "Approve");
    fake.wait_ack(&click).await;
    wait_approvals(&sim, 1).await;
    wait_until(|| async { fake.errors().into_iter().any(|(m, e)| m == "chat.update" && e == "ratelimited").then_some(()) }).await;
    first.kill();
    let seen: Vec<(String, Option<String>)> = fake.calls().into_iter().map(|c| (c.method, c.error)).collect();
    assert!(outcomes(&fake, &ts).is_empty(), "the edit had not gone through: {seen:?}");
    fake.rate_limit_next(0, 0);

    let second = bridge(&fake, &sim, &db, 2, &[]).await;
    wait_until(|| async { (!outcomes(&fake, &ts).is_empty()).then_some(()) }).await;
    decided_exactly_once(&fake, &sim, &ts).await;
    second.stop();
    assert_nothing_refused(&fake);
    fake.shutdown();
    sim.shutdown().await;
}
