//! Retention (`store.retention_days`) against real databases: one pass removes what is
//! finished and older than the cutoff, keeps everything pending or recent, and says
//! how much it removed. Runs on SQLite, and on PostgreSQL when
//! `HITL_BRIDGE_TEST_POSTGRES_URL` is set (as tests/store.rs does).

use hitl_bridge::interaction::{Actor, Interaction, RequestBuilder, TimeoutDefaults};
use hitl_bridge::protocol::{ActionRequest, Command};
use hitl_bridge::store::{ApiRequest, AuditEntry, ChatKey, ClearedWeb, MessageRef, Pruned, ShowClaim, Store};
use serde_json::json;

mod support;
use support::test_db;

use test_db::TestStore;

const DAY: i64 = 24 * 3600 * 1000;
/// "Now" in these tests: day 100. With 30 days of retention the cutoff is day 70.
const NOW: i64 = 100 * DAY;
const CUTOFF: i64 = NOW - 30 * DAY;
/// Long before the cutoff, and just after it.
const OLD: i64 = 10 * DAY;
const RECENT: i64 = CUTOFF + 1000;

macro_rules! suite {
    ($($test:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $test() {
                    let db = super::TestStore::sqlite().await;
                    super::$test(&db).await;
                    db.finish().await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test]
                #[ignore = "needs PostgreSQL: set HITL_BRIDGE_TEST_POSTGRES_URL, then cargo test -- --include-ignored"]
                async fn $test() {
                    let Some(db) = super::TestStore::postgres().await else { return };
                    super::$test(&db).await;
                    db.finish().await;
                }
            )*
        }
    };
}

suite!(
    old_settled_rows_go_pending_and_recent_ones_stay,
    outbox_leftovers_go_only_for_idle_sessions,
    an_owed_callback_keeps_its_request,
    expired_sign_in_links_and_idle_web_sessions_are_cleared,
);

fn thao() -> Actor {
    Actor::new("telegram", "1", "Thảo")
}

/// An approval created at `at_ms`, 60 s to decide.
fn approval(session: &str, key: &str, at_ms: i64) -> Interaction {
    let action = ActionRequest { name: "run_migration".into(), args: json!({"db": "prod"}), description: None, tool_use_id: None };
    let request = RequestBuilder::start(key, vec![action], vec![], Some(60)).finish(TimeoutDefaults::default()).expect("valid");
    Interaction::new(format!("id-{key}"), session.into(), request, Some(thao()), at_ms)
}

fn chat() -> ChatKey {
    ChatKey { platform: "telegram".into(), chat_id: "-100".into(), thread_id: None }
}

/// Stored, shown in one message, and (unless `settle_at` is None) expired at that time.
async fn stored(store: &Store, session: &str, key: &str, at_ms: i64, settle_at: Option<i64>) -> Interaction {
    let mut i = approval(session, key, at_ms);
    assert!(store.insert_interaction(&i).await.expect("insert"));
    let shown = MessageRef { interaction_id: i.id.clone(), chat: chat(), message_id: format!("m-{key}") };
    store.add_message_ref(&shown).await.expect("message ref");
    if let Some(t) = settle_at {
        assert!(i.expire(t, false));
        assert!(store.settle(&i, None, &AuditEntry::for_settled(&i, t)).await.expect("settle").won());
    }
    i
}

async fn old_settled_rows_go_pending_and_recent_ones_stay(db: &TestStore) {
    let store = &db.store;
    let old = stored(store, "S1", "old_1", OLD, Some(OLD + 61_000)).await;
    // Pending for longer than the retention period (nobody expired it): kept.
    let stuck = stored(store, "S2", "stuck_1", OLD, None).await;
    // A refused attempt on the stuck one, long ago: its audit entry stays with it.
    store.append_audit(&AuditEntry { outcome: "refused".into(), ..AuditEntry::for_settled(&stuck, OLD + 5) }).await.expect("audit");
    // Settled, but created after the cutoff: kept.
    let recent = stored(store, "S3", "recent_1", RECENT, Some(RECENT + 61_000)).await;
    // Created before the cutoff, its deadline after it: still recent work, kept.
    let straddling = stored(store, "S4", "straddle_1", CUTOFF - 30_000, Some(CUTOFF + 10_000)).await;
    // Leases: one lapsed long ago, one live.
    assert!(store.try_lease("S1", "replica-a", OLD, 15_000).await.expect("lease"));
    assert!(store.try_lease("S3", "replica-a", NOW, 15_000).await.expect("lease"));
    assert_eq!(db.count("audit_log").await, 4);

    let pruned = store.prune_before(CUTOFF).await.expect("prune");
    assert_eq!(pruned, Pruned { interactions: 1, message_refs: 1, api_requests: 0, outbox: 0, audit: 1, leases: 1 });

    assert_eq!(store.interaction(&old.id).await.expect("load"), None);
    assert!(store.message_refs(&old.id).await.expect("refs").is_empty());
    assert!(store.audit_log("old_1").await.expect("audit").is_empty());
    for kept in [&stuck, &recent, &straddling] {
        assert!(store.interaction(&kept.id).await.expect("load").is_some(), "{} kept", kept.id);
        assert_eq!(store.message_refs(&kept.id).await.expect("refs").len(), 1, "{} keeps its message", kept.id);
    }
    assert_eq!(store.pending_interactions().await.expect("pending").len(), 1, "the pending one is untouched");
    assert_eq!(store.audit_log("stuck_1").await.expect("audit").len(), 1, "a pending request's audit stays");
    assert_eq!(store.audit_log("recent_1").await.expect("audit").len(), 1);
    assert_eq!(db.count("session_leases").await, 1);
    assert!(!store.try_lease("S3", "replica-b", NOW + 1, 15_000).await.expect("lease"), "the live lease is still held");

    // A second pass finds nothing more.
    assert_eq!(store.prune_before(CUTOFF).await.expect("prune again"), Pruned::default());
}

async fn outbox_leftovers_go_only_for_idle_sessions(db: &TestStore) {
    let store = &db.store;
    // "busy" has a pending request: its old queued command must still be delivered.
    stored(store, "busy", "busy_1", NOW - 1000, None).await;
    store.enqueue(&Command::message("busy", "old but owed", None), OLD).await.expect("enqueue");
    // "idle" has nothing pending: its old command is a leftover, its recent one is not.
    stored(store, "idle", "idle_1", OLD, Some(OLD + 1)).await;
    store.enqueue(&Command::Cancel { session_id: "idle".into() }, OLD).await.expect("enqueue");
    store.enqueue(&Command::message("idle", "recent", None), RECENT).await.expect("enqueue");
    // "gone" never had an interaction.
    store.enqueue(&Command::message("gone", "hello?", None), OLD).await.expect("enqueue");

    let pruned = store.prune_before(CUTOFF).await.expect("prune");
    assert_eq!(pruned.outbox, 2);
    let texts = |list: Vec<(i64, Command)>| list.into_iter().map(|(_, c)| c).collect::<Vec<_>>();
    assert_eq!(texts(store.outbox_for_session("busy").await.expect("outbox")), vec![Command::message("busy", "old but owed", None)]);
    assert_eq!(texts(store.outbox_for_session("idle").await.expect("outbox")), vec![Command::message("idle", "recent", None)]);
    assert!(store.outbox_for_session("gone").await.expect("outbox").is_empty());
}

fn api_request(key: &str, interaction: &Interaction, callback: Option<&str>) -> ApiRequest {
    ApiRequest {
        approval_key: key.into(),
        interaction_id: interaction.id.clone(),
        session_id: interaction.session_id.clone(),
        client_session: None,
        agent: "ci".into(),
        body_hash: "00".into(),
        targets: vec![chat()],
        callback_url: callback.map(str::to_owned),
        created_at_ms: interaction.created_at_ms,
    }
}

async fn an_owed_callback_keeps_its_request(db: &TestStore) {
    let store = &db.store;
    // Two old pushed requests, both settled; one callback delivered, one still failing.
    let mut delivered = approval("api:a", "a_1", OLD);
    let mut owed = approval("api:b", "b_1", OLD);
    for (i, url) in [(&delivered, "http://agent/a"), (&owed, "http://agent/b")] {
        assert_eq!(
            store.create_api_request(&api_request(i.approval_key(), i, Some(url)), i, &ShowClaim { owner: "test".into(), until_ms: 0 }).await.expect("push"),
            None
        );
    }
    for i in [&mut delivered, &mut owed] {
        assert!(i.expire(OLD + 61_000, false));
        assert!(store.settle(i, None, &AuditEntry::for_settled(i, OLD + 61_000)).await.expect("settle").won());
    }
    let due = store.due_callbacks(i64::MAX, 10).await.expect("due");
    store.callback_delivered(due.iter().find(|d| d.approval_key == "a_1").expect("a_1 owed")).await.expect("delivered");

    let pruned = store.prune_before(CUTOFF).await.expect("prune");
    assert_eq!((pruned.interactions, pruned.api_requests), (1, 1));
    assert_eq!(store.api_request("ci", "a_1").await.expect("load"), None);
    assert_eq!(store.interaction(&delivered.id).await.expect("load"), None);
    // The owed callback can still be posted: its request and interaction are there.
    assert!(store.api_request("ci", "b_1").await.expect("load").is_some());
    assert!(store.interaction(&owed.id).await.expect("load").is_some());
    let due = store.due_callbacks(NOW, 10).await.expect("due");
    assert_eq!(due.iter().map(|d| d.approval_key.as_str()).collect::<Vec<_>>(), ["b_1"]);
}

const HOUR: i64 = 3600 * 1000;

/// The web inbox's leftovers nobody comes back to: links past their ten minutes (used
/// or not) and sessions idle longer than `web.session_idle_secs` go; a live link and a
/// session in use stay and still work. A second pass finds nothing.
async fn expired_sign_in_links_and_idle_web_sessions_are_cleared(db: &TestStore) {
    let store = &db.store;
    let made = NOW - 700_000;
    store.create_sign_in_link("h-expired", &thao(), made, NOW - 100_000).await.expect("link");
    store.create_sign_in_link("h-spent", &thao(), made, NOW - 100_000).await.expect("link");
    store.create_sign_in_link("h-live", &thao(), made, NOW + 600_000).await.expect("link");
    assert!(store.spend_sign_in_link("h-spent", made + 1000).await.expect("spend").is_some());
    store.create_web_session("s-idle", &thao(), "csrf-1", NOW - 13 * HOUR).await.expect("session");
    store.create_web_session("s-fresh", &thao(), "csrf-2", NOW - 1000).await.expect("session");
    assert_eq!((db.count("web_sign_in_links").await, db.count("web_sessions").await), (3, 2));

    let cleared = store.clear_expired_web(NOW, 12 * HOUR).await.expect("clear");
    assert_eq!(cleared, ClearedWeb { sign_in_links: 2, sessions: 1 });
    assert_eq!((db.count("web_sign_in_links").await, db.count("web_sessions").await), (1, 1));
    assert_eq!(store.spend_sign_in_link("h-live", NOW).await.expect("spend"), Some(thao()));
    assert!(store.web_session("s-fresh", NOW, 12 * HOUR).await.expect("session").is_some());
    assert_eq!(store.clear_expired_web(NOW, 12 * HOUR).await.expect("clear again"), ClearedWeb::default());
}

/// The sweep clears expired sign-in links at its first pass even with
/// `retention_days = 0`, which keeps the history whole.
#[tokio::test]
async fn the_sweep_clears_expired_sign_in_links_even_when_retention_is_off() {
    let db = TestStore::sqlite().await;
    let now = hitl_bridge::clock::now_ms();
    db.store.create_sign_in_link("h-expired", &thao(), now - 700_000, now - 100_000).await.expect("link");
    let old = stored(&db.store, "S", "old_1", now - 40 * DAY, Some(now - 40 * DAY + 61_000)).await;
    let sweep = tokio::spawn(hitl_bridge::store::retention::keep_pruning(db.store.clone(), 0, 12 * HOUR));
    let mut cleared = false;
    for _ in 0..50 {
        if db.count("web_sign_in_links").await == 0 {
            cleared = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    sweep.abort();
    assert!(cleared, "the expired link is gone");
    assert!(db.store.interaction(&old.id).await.expect("load").is_some(), "retention off: history kept");
    db.finish().await;
}

/// The bridge prunes once as it starts (then hourly): an old settled request in the
/// database is gone shortly after `App::start`, unless `retention_days = 0`.
#[tokio::test]
async fn the_bridge_prunes_at_start_unless_retention_is_off() {
    use hitl_bridge::app::App;
    use hitl_bridge::config::Settings;
    type NoConsole = Option<(tokio::io::BufReader<tokio::io::Empty>, tokio::io::Sink)>;

    for (days, kept) in [("0", true), ("30", false)] {
        let db = TestStore::sqlite().await;
        let now = hitl_bridge::clock::now_ms();
        let old = stored(&db.store, "S", "old_1", now - 40 * DAY, Some(now - 40 * DAY + 61_000)).await;
        let settings = Settings::from_pairs(&[
            ("store.url", &db.db.url),
            ("store.retention_days", days),
            ("http.enabled", "false"),
            ("backend.url", "ws://127.0.0.1:9/ws/{session_id}"),
        ])
        .expect("settings");
        let app = App::start(&settings, NoConsole::None).await.expect("starts");
        let mut gone = false;
        for _ in 0..50 {
            if db.store.interaction(&old.id).await.expect("load").is_none() {
                gone = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert_eq!(gone, !kept, "retention_days = {days}");
        app.stop().await;
        db.finish().await;
    }
}
