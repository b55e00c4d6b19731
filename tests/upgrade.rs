//! An upgrade loses nothing: the current bridge starts on stores that earlier versions
//! left with requests in flight, on SQLite and on PostgreSQL, and carries each on.
//!
//! Each directory under `tests/fixtures/upgrade/` is one earlier version's store, made
//! by that version's own code (its README says which commit, and how): a SQLite file,
//! a `pg_dump` of a PostgreSQL schema, and what the seeding run saw (the cards it
//! sent, the agent's sessions, the HTTP API's answer for a decided request). In it:
//! Lan has an approval card pending and a request pushed over the HTTP API pending,
//! and one already decided; Minh has a question wizard answered halfway; An's approval
//! was decided (it is in the audit log). Nothing is built for this: the fixtures are
//! files.
//!
//! After the upgrade: the old card's Approve works once (the agent gets the decision
//! once, a second press is told it was decided), the wizard finishes with the answer
//! given before the upgrade, the pushed request is decided and its long poll answers,
//! the decided one reads as before, and the audit log kept its rows.

use support::fake_telegram;
mod support;

use std::path::{Path, PathBuf};

use fake_telegram::{User, button};
use hitl_bridge::store::Store;
use serde_json::{Value, json};
use support::test_db::TestDatabase;
use support::{Chat, Harness, approvals, wait_until};

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upgrade");
    let mut dirs: Vec<PathBuf> =
        std::fs::read_dir(&root).expect("tests/fixtures/upgrade").filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no upgrade fixtures");
    dirs
}

fn person(id: i64, name: &str) -> User {
    User::new(id, name, Some("en"))
}

/// What the seeding run recorded.
fn seed(dir: &Path, kind: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{kind}.json"))).expect("seed record")).expect("seed JSON")
}

/// A copy of the fixture's SQLite store in `into`; its url.
fn sqlite_copy(dir: &Path, into: &Path) -> String {
    std::fs::copy(dir.join("sqlite.db"), into.join("bridge.db")).expect("copy the store");
    if dir.join("sqlite.db-wal").exists() {
        std::fs::copy(dir.join("sqlite.db-wal"), into.join("bridge.db-wal")).expect("copy the WAL");
    }
    format!("sqlite://{}", into.join("bridge.db").display())
}

/// The fixture's PostgreSQL schema loaded into a fresh schema of the test database.
async fn postgres_copy(dir: &Path) -> TestDatabase {
    let db = TestDatabase::postgres().await.expect("PostgreSQL");
    let seeded = std::fs::read_to_string(dir.join("postgres.schema")).expect("the seeded schema's name");
    let fresh = db.url.rsplit("search_path%3D").next().expect("a schema in the url").to_owned();
    let dump = std::fs::read_to_string(dir.join("postgres.sql")).expect("postgres.sql").replace(seeded.trim(), &fresh);
    // The dump makes its schema (the test's exists already); `\restrict` lines are
    // for psql.
    let dump: String = dump.lines().filter(|l| !l.starts_with("CREATE SCHEMA") && !l.starts_with('\\')).collect::<Vec<_>>().join("\n");
    let raw = db.raw().await;
    sqlx::raw_sql(sqlx::AssertSqlSafe(dump)).execute(&raw).await.expect("load the dump");
    raw.close().await;
    db
}

/// Starts the current bridge on `store_url` with the seeding run's settings, its fake
/// Telegram carrying on from the seeding run's.
async fn upgraded(store_url: &str, seed: &Value) -> Harness {
    let token = seed["token"].as_str().unwrap().to_owned();
    let mut h = Harness::on(Chat::Telegram)
        .agent(315_360_000)
        .store(store_url)
        .tweak(move |s| {
            s.access.users = vec!["telegram:1001".into(), "telegram:1002".into(), "telegram:1003".into()];
            s.http.api_tokens = vec![format!("seeder:{token}")];
        })
        .build()
        .await;
    let last_update = seed["last_update_id"].as_i64().expect("last update id");
    let messages = &seed["messages"];
    for (who, chat, keys) in [
        (person(1001, "Lan"), 1001, &["trade", "pushed_pending", "pushed_decided"][..]),
        (person(1002, "Minh"), 1002, &["wizard"][..]),
        (person(1003, "An"), 1003, &["decided"][..]),
    ] {
        h.telegram().private_chat(&who);
        let sent: Vec<Value> = keys.iter().map(|k| messages[*k].clone()).collect();
        h.telegram().carry_on_from(chat, &sent, last_update);
    }
    h.boot().await;
    h
}

/// Clicks the button labelled `label` on the seeded message `key` as it is now; the
/// answer.
async fn click(h: &Harness, seed: &Value, key: &str, who: &User, label: &str) -> Value {
    let message = &seed["messages"][key];
    let id = message["message_id"].as_i64().unwrap();
    let current = h.telegram().message(who.id, id).unwrap_or_else(|| message.clone());
    press(h, who, id, &button(&current, label)).await
}

/// Clicks the button labelled `label` on the seeded message `key` as the seeding run
/// sent it: a client that has not yet redrawn the card after it was decided (once
/// decided, the card has no buttons left to read).
async fn click_stale(h: &Harness, seed: &Value, key: &str, who: &User, label: &str) -> Value {
    let message = &seed["messages"][key];
    press(h, who, message["message_id"].as_i64().unwrap(), &button(message, label)).await
}

async fn press(h: &Harness, who: &User, message_id: i64, data: &str) -> Value {
    let query = h.telegram().push_click(who.id, who, message_id, data);
    wait_until(|| async { h.telegram().answer_to(&query) }).await
}

async fn get(h: &Harness, seed: &Value, path: &str) -> Value {
    let url = format!("http://{}{path}", h.app().http_addr().unwrap());
    reqwest::Client::new().get(url).bearer_auth(seed["token"].as_str().unwrap()).send().await.unwrap().json().await.unwrap()
}

async fn everything_in_flight_carries_on(store_url: &str, seed: Value) {
    let h = upgraded(store_url, &seed).await;
    let (lan, minh) = (person(1001, "Lan"), person(1002, "Minh"));

    // Decided before the upgrade: reads as it did.
    let decided = get(&h, &seed, "/v1/requests/upgrade-decided_1").await;
    for field in ["approval_key", "status", "decided_by", "decided_at", "reply", "expires_at"] {
        assert_eq!(decided[field], seed["decided_state"][field], "{field} of the request decided before the upgrade");
    }

    // Pushed and pending: still pending, decided from its old card, long-polled.
    assert_eq!(get(&h, &seed, "/v1/requests/upgrade-pending_1").await["status"], "pending");
    let answer = click(&h, &seed, "pushed_pending", &lan, "Approve").await;
    assert_eq!(answer["text"], "Decision saved");
    let polled = get(&h, &seed, "/v1/requests/upgrade-pending_1?wait=20").await;
    assert_eq!(polled["status"], "resolved", "{polled}");
    assert_eq!(polled["reply"], json!({"decisions": [{"type": "approve"}]}));
    assert_eq!(polled["decided_by"]["id"], "1001");

    // Lan's chat card: Approve works once.
    let old_sessions: Vec<&str> = seed["sessions"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    let answer = click(&h, &seed, "trade", &lan, "Approve").await;
    assert_eq!(answer["text"], "Decision saved");
    let got = wait_until(|| async { approvals(h.sim()).into_iter().find(|a| a["decisions"] == json!([{"type": "approve"}])) }).await;
    let session = got["session_id"].as_str().unwrap();
    assert!(old_sessions.contains(&session), "the decision goes to the session that asked before the upgrade: {got}");
    assert_eq!(got["approval_key"], format!("{session}_1"));
    let again = click_stale(&h, &seed, "trade", &lan, "Approve").await;
    assert!(again["text"].as_str().is_some_and(|t| t.starts_with("Already decided by Lan")), "{again}");

    // Minh's wizard: question 2, then Submit; question 1's answer is the one given
    // before the upgrade.
    let wizard = &seed["messages"]["wizard"];
    let option = &wizard["reply_markup"]["inline_keyboard"][0][0];
    let (label, data) = (option["text"].as_str().expect("question 2's first option"), option["callback_data"].as_str().unwrap());
    let id = wizard["message_id"].as_i64().unwrap();
    press(&h, &minh, id, data).await;
    let chosen = format!("→ {label}");
    let summary = wait_until(|| async { h.telegram().message(minh.id, id).filter(|m| m["text"].as_str().is_some_and(|t| t.contains(&chosen))) }).await;
    press(&h, &minh, id, &button(&summary, "Submit")).await;
    let answered = wait_until(|| async { approvals(h.sim()).into_iter().find(|c| c["answers"].is_object()) }).await;
    assert_eq!(answered["answers"]["Thảo muốn tập trung vào mục tiêu nào?"], "Cổ tức bền vững (Recommended)", "{answered}");
    assert_eq!(answered["answers"]["Thời gian nắm giữ dự kiến?"], label, "{answered}");

    // The agent got each decision once, and the audit log kept its rows.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let sent = approvals(h.sim());
    assert_eq!(sent.len(), 2, "the approval and the answers, once each: {sent:?}");
    assert_ne!(sent[0]["approval_key"], sent[1]["approval_key"], "{sent:?}");
    let store = Store::connect(store_url).await.unwrap();
    let before: Vec<&Value> = seed["commands"].as_array().unwrap().iter().filter(|c| c["type"] == "approval").collect();
    assert_eq!(before.len(), 1, "the seed decided An's request");
    let audit = store.audit_log(before[0]["approval_key"].as_str().unwrap()).await.unwrap();
    assert_eq!(audit.len(), 1, "An's decision is in the audit log");
    assert_eq!(store.audit_log("upgrade-decided_1").await.unwrap().len(), 1);
    assert_eq!(store.audit_log("upgrade-pending_1").await.unwrap().len(), 1);
    h.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_left_by_an_earlier_version_carries_on_on_sqlite() {
    for dir in fixtures() {
        let into = tempfile::tempdir().unwrap();
        let url = sqlite_copy(&dir, into.path());
        everything_in_flight_carries_on(&url, seed(&dir, "sqlite")).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL (HITL_BRIDGE_TEST_POSTGRES_URL)"]
async fn a_store_left_by_an_earlier_version_carries_on_on_postgres() {
    for dir in fixtures() {
        let db = postgres_copy(&dir).await;
        everything_in_flight_carries_on(&db.url, seed(&dir, "postgres")).await;
        db.finish().await;
    }
}
