//! The real `hitl-bridge run` binary on the fake Teams, killed with SIGKILL between
//! receiving Ana's click (an `adaptiveCard/action` invoke) and answering it 200, then
//! started again on the same SQLite store. Teams sends again an activity it got no
//! answer for; the bridge stores each activity before it answers. Wherever the kill
//! lands, the agent gets exactly one decision and the card is updated to its outcome
//! once:
//!
//! - before the click was stored (the test holds the store's write lock): nothing
//!   was stored, and the click delivered again to the next bridge decides;
//! - after it was stored, while its handling waits on Teams to list an approver
//!   group's members (before anything is decided): the next bridge handles the stored
//!   click once, and its delivery again is answered and not handled again.

mod support;

use std::path::Path;
use std::time::Duration;

use hitl_bridge::agent_sim::SimHandle;
use serde_json::{Value, json};
use support::bridge_process::BridgeProcess;
use support::fake_teams::{self, FakeTeams, Person, card_text};
use support::{approvals, session_id, start_sim, wait_approvals, wait_until};

const ANA: &str = "6b1e3f0a-2c4d-4e5f-8a9b-0c1d2e3f4a5b";
/// A team Ana is in, named as an approver group.
const TEAM: &str = "19:team0a1b2c@thread.tacv2";

fn ana() -> Person {
    Person::new(ANA, "Ana")
}

/// Ana's 1:1 chat with the bot, where her turn and its card are.
fn dm() -> String {
    format!("a:dm-{ANA}")
}

/// `hitl-bridge run` on the fake Teams and the reference agent, its store the SQLite
/// file `db`, its endpoint `listen`; Ana may talk. Returns once the endpoint answers.
async fn bridge(fake: &FakeTeams, sim: &SimHandle, db: &Path, listen: &str, extra: &[(&'static str, String)]) -> BridgeProcess {
    let mut env = vec![
        ("HITL_BRIDGE__BACKEND__URL", format!("ws://{}/ws/{{session_id}}", sim.addr)),
        ("HITL_BRIDGE__BACKEND__HISTORY_URL", format!("http://{}/sessions/{{session_id}}/history", sim.addr)),
        ("HITL_BRIDGE__TEAMS__ENABLED", "true".into()),
        ("HITL_BRIDGE__TEAMS__APP_ID", fake_teams::APP_ID.into()),
        ("HITL_BRIDGE__TEAMS__APP_PASSWORD", fake_teams::APP_PASSWORD.into()),
        ("HITL_BRIDGE__TEAMS__OPENID_METADATA_URL", fake.openid_url()),
        ("HITL_BRIDGE__TEAMS__TOKEN_URL", fake.token_url()),
        ("HITL_BRIDGE__TEAMS__SERVICE_URL", fake.service_url()),
        ("HITL_BRIDGE__TEAMS__MESSAGES_LISTEN", listen.to_owned()),
        ("HITL_BRIDGE__TOKENS__SECRET", "test-secret".into()),
        ("HITL_BRIDGE__ACCESS__USERS", format!("teams:{ANA}")),
    ];
    env.extend_from_slice(extra);
    let process = BridgeProcess::start(db, &env);
    let url = endpoint(listen);
    let probe = reqwest::Client::new();
    // Any answer (401: no token) means the endpoint is up.
    wait_until(|| async { probe.post(&url).json(&json!({})).send().await.ok().map(|_| ()) }).await;
    process
}

fn endpoint(listen: &str) -> String {
    format!("http://{listen}/teams/messages")
}

/// Ana writes `trade` to the bot; the card of the agent's request, once posted.
async fn ask_for_a_trade(fake: &FakeTeams, url: &str) -> (String, Value) {
    let message = fake.activity_from(&ana(), &dm(), "personal", json!({"text": "trade"}));
    assert_eq!(fake.post(url, &message).await.0, 200);
    fake.wait_card(&dm()).await
}

/// The updates of card `id` to its outcome Teams took.
fn outcomes(fake: &FakeTeams, id: &str) -> Vec<Value> {
    let updates = fake.calls().into_iter().filter(|c| c.method == "PUT" && c.status < 300 && c.activity.as_deref() == Some(id));
    updates.filter_map(|c| fake_teams::card_of(&c.body)).filter(|card| card_text(card).contains("Approved by Ana")).collect()
}

/// After a moment for anything done twice to show: the agent got exactly one
/// decision, an approval of its request; the card was updated to the outcome once
/// and lost its buttons; the agent's answer was shown once.
async fn decided_exactly_once(fake: &FakeTeams, sim: &SimHandle, id: &str) {
    wait_approvals(sim, 1).await;
    fake.wait_text(&dm(), "Đã đặt lệnh: buy 100 VNM @ 82000").await;
    wait_until(|| async { (!outcomes(fake, id).is_empty()).then_some(()) }).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let s = session_id(sim);
    assert_eq!(approvals(sim), [json!({"type": "approval", "session_id": s, "approval_key": format!("{s}_1"), "decisions": [{"type": "approve"}]})]);
    assert_eq!(outcomes(fake, id).len(), 1, "the card is updated to its outcome once");
    assert!(fake_teams::executes(&fake.card_now(&dm(), id)).is_empty(), "no buttons once decided");
    let answers = fake.calls().into_iter().filter(|c| c.body["text"].as_str().is_some_and(|t| t.contains("Đã đặt lệnh"))).count();
    assert_eq!(answers, 1, "the agent's answer once");
    assert_eq!(fake.pace_violations(), 0);
}

/// Opens the store `db` and takes its write lock once the bridge has recorded card
/// `id`: the bridge can read but stores nothing until the lock is given back.
async fn lock_store(db: &Path, id: &str) -> sqlx::SqliteConnection {
    use sqlx::Connection;
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display())).await.expect("open the store");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let recorded: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM message_refs WHERE message_id = ?").bind(id).fetch_one(&mut conn).await.expect("read the store");
        if recorded > 0 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "card {id} never recorded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    sqlx::query("BEGIN IMMEDIATE").execute(&mut conn).await.expect("take the write lock");
    conn
}

/// Killed after Teams posted Ana's click and before the bridge stored it (its store's
/// write lock is held, so the kill lands in that wait): no answer, nothing stored;
/// delivered again to the next bridge, the click decides once and is answered with
/// the decided card.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_before_a_click_was_stored_then_its_delivery_again_decides_once() {
    let sim = start_sim(600).await;
    let fake = FakeTeams::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bridge.db");
    let listen = fake_teams::free_addr();
    let url = endpoint(&listen);
    let first = bridge(&fake, &sim, &db, &listen, &[]).await;
    let (id, card) = ask_for_a_trade(&fake, &url).await;

    let mut lock = lock_store(&db, &id).await;
    let click = fake.click_activity(&ana(), &dm(), &id, &card, "✅ Approve", 0, json!({}));
    let posting = {
        let (fake_url, click) = (url.clone(), click.clone());
        let teams = reqwest::Client::new();
        let token = fake.token_for(&fake.service_url(), |_| {});
        tokio::spawn(async move { teams.post(&fake_url).bearer_auth(token).json(&click).send().await.map(|r| r.status().as_u16()).ok() })
    };
    // Time for the bridge to check the token and wait on the lock to store it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    first.kill();
    assert_eq!(posting.await.unwrap(), None, "no answer: killed before the 200");
    sqlx::query("ROLLBACK").execute(&mut lock).await.expect("give the lock back");
    drop(lock);
    assert!(approvals(&sim).is_empty());
    assert!(outcomes(&fake, &id).is_empty());

    let second = bridge(&fake, &sim, &db, &listen, &[]).await;
    let (status, answer) = fake.post(&url, &click).await;
    assert_eq!((status, answer["type"].clone()), (200, json!("application/vnd.microsoft.card.adaptive")), "{answer}");
    assert!(card_text(&answer["value"]).contains("Approved by Ana"), "{answer}");
    decided_exactly_once(&fake, &sim, &id).await;
    second.stop();
    fake.shutdown();
    sim.shutdown().await;
}

/// Killed after the bridge stored Ana's click and before it answered, while the
/// click's handling waits on Teams to list the approver team's members: the next
/// bridge handles the stored click once at its start, and Teams' delivery of it again
/// is answered 200 and handled no more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_after_a_click_was_stored_before_its_200_then_it_is_handled_once() {
    let sim = start_sim(600).await;
    let fake = FakeTeams::start().await;
    fake.members(TEAM, &[ANA]);
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bridge.db");
    let listen = fake_teams::free_addr();
    let url = endpoint(&listen);
    // Read again after a second: Ana's message read the roster already, her click reads it again.
    let groups = [("HITL_BRIDGE__ACCESS__APPROVER_ROLES", TEAM.to_owned()), ("HITL_BRIDGE__TEAMS__GROUP_REFRESH_SECS", "1".to_owned())];
    let first = bridge(&fake, &sim, &db, &listen, &groups).await;
    let (id, card) = ask_for_a_trade(&fake, &url).await;
    tokio::time::sleep(Duration::from_millis(1200)).await;

    fake.hold_members(true);
    let click = fake.click_activity(&ana(), &dm(), &id, &card, "✅ Approve", 0, json!({}));
    let posting = {
        let (fake_url, click) = (url.clone(), click.clone());
        let teams = reqwest::Client::new();
        let token = fake.token_for(&fake.service_url(), |_| {});
        tokio::spawn(async move { teams.post(&fake_url).bearer_auth(token).json(&click).send().await.map(|r| r.status().as_u16()).ok() })
    };
    wait_until(|| async { (fake.members_held() > 0).then_some(()) }).await;
    first.kill();
    assert_eq!(posting.await.unwrap(), None, "no answer: killed before the 200");
    assert!(approvals(&sim).is_empty(), "nothing decided before the kill");
    fake.hold_members(false);

    let second = bridge(&fake, &sim, &db, &listen, &groups).await;
    decided_exactly_once(&fake, &sim, &id).await;
    let (status, _) = fake.post(&url, &click).await;
    assert_eq!(status, 200, "the delivery again is answered");
    decided_exactly_once(&fake, &sim, &id).await;
    second.stop();
    fake.shutdown();
    sim.shutdown().await;
}
