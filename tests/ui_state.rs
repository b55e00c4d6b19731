//! The store's `ui_state` table and the Telegram wizard state built on it, on SQLite
//! (a temp file) and on PostgreSQL (a fresh schema per test, when
//! `HITL_BRIDGE_TEST_POSTGRES_URL` is set, as in tests/store.rs). Two `Store`s on one
//! database stand for two replicas.

use hitl_bridge::interaction::{Interaction, RequestBuilder, TimeoutDefaults};
use hitl_bridge::platform::telegram::wizard::{self, Prompt, PromptKind, View, Wizard};
use hitl_bridge::protocol::ActionRequest;
use hitl_bridge::store::{AuditEntry, Store, UiState};
use serde_json::json;

mod support;
use support::test_db;

use test_db::TestDatabase as Db;

macro_rules! on_both {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test] async fn $name() { let db = super::Db::sqlite(); super::$name(&db).await; db.finish().await; })*
        }
        mod postgres {
            $(#[tokio::test] #[ignore = "needs PostgreSQL: set HITL_BRIDGE_TEST_POSTGRES_URL, then cargo test -- --include-ignored"] async fn $name() { let Some(db) = super::Db::postgres().await else { return }; super::$name(&db).await; db.finish().await; })*
        }
    };
}

on_both!(entries_expire_replace_and_are_taken_once, interaction_end_forgets_its_entries, prompts_are_shared_by_replicas, views_are_shared_by_replicas);

fn now() -> i64 {
    hitl_bridge::clock::now_ms()
}

async fn entries_expire_replace_and_are_taken_once(db: &Db) {
    let (a, b) = (db.store().await, db.store().await);
    let t = now();
    a.ui_states().put("k", "x", "i1", "one", t, t + 60_000).await.unwrap();
    assert_eq!(b.ui_states().get("k", "x", t).await.unwrap(), Some(UiState { interaction_id: "i1".into(), value: "one".into() }));
    assert_eq!(b.ui_states().get("other", "x", t).await.unwrap(), None, "kinds do not mix");
    // The latest write wins.
    b.ui_states().put("k", "x", "i1", "two", t, t + 60_000).await.unwrap();
    assert_eq!(a.ui_states().get("k", "x", t).await.unwrap().unwrap().value, "two");
    // Taking needs the value still there: of two replicas racing, one wins.
    assert!(!a.ui_states().take("k", "x", "one").await.unwrap(), "a stale value is not taken");
    assert!(a.ui_states().take("k", "x", "two").await.unwrap());
    assert!(!b.ui_states().take("k", "x", "two").await.unwrap(), "taken once");
    // An expired entry reads as none and is deleted by the next write.
    a.ui_states().put("k", "old", "i2", "v", t - 10_000, t - 1).await.unwrap();
    assert_eq!(a.ui_states().get("k", "old", t).await.unwrap(), None);
    assert_eq!(a.ui_states().count("i2").await.unwrap(), 1);
    a.ui_states().put("k", "new", "i3", "v", t, t + 1).await.unwrap();
    assert_eq!(a.ui_states().count("i2").await.unwrap(), 0, "pruned on write");
}

/// An interaction's entries go when it ends, in the transaction that ends it, on
/// whichever replica that is; another interaction's stay.
async fn interaction_end_forgets_its_entries(db: &Db) {
    let s = db.store().await;
    let t = now();
    let (gone, kept) = (interaction("gone"), interaction("kept"));
    for i in [&gone, &kept] {
        assert!(s.insert_interaction(i).await.unwrap());
    }
    s.ui_states().put("a", "1", "gone", "v", t, t + 60_000).await.unwrap();
    s.ui_states().put("b", "2", "gone", "v", t, t + 60_000).await.unwrap();
    s.ui_states().put("a", "3", "kept", "v", t, t + 60_000).await.unwrap();
    end(&s, &gone).await;
    assert_eq!(s.ui_states().count("gone").await.unwrap(), 0);
    assert_eq!(s.ui_states().count("kept").await.unwrap(), 1);
    s.ui_states().delete("a", "3").await.unwrap();
    assert_eq!(s.ui_states().get("a", "3", t).await.unwrap(), None);
}

/// Ends `i` as its deadline would, through the store's settle.
async fn end(store: &Store, i: &Interaction) {
    let mut ended = store.interaction(&i.id).await.unwrap().expect("stored");
    assert!(ended.expire(now(), false));
    assert!(store.settle(&ended, None, &AuditEntry::for_settled(&ended, now())).await.unwrap().won());
}

fn interaction(id: &str) -> Interaction {
    let actions = vec![ActionRequest { name: "execute_trade".into(), args: json!({"symbol": "VNM"}), description: None, tool_use_id: None }];
    // A key of its own: a session holds one interaction per key.
    let request = RequestBuilder::start(&format!("S_{id}"), actions, vec![], Some(600)).finish(TimeoutDefaults::default()).expect("request");
    Interaction::new(id.into(), "S".into(), request, None, now())
}

fn prompt(message_id: i32, user_id: u64, interaction_id: &str) -> Prompt {
    Prompt { chat_id: -100, message_id, user_id, interaction_id: interaction_id.into(), kind: PromptKind::Edit { action: 0 } }
}

/// A prompt sent by replica A is found by replica B: by reply, or (private chat) as
/// the person's next message; per person; the newest replaces the older; taken once.
async fn prompts_are_shared_by_replicas(db: &Db) {
    let i = interaction("aaaaaaaaaaaa");
    let store = db.store().await;
    assert!(store.insert_interaction(&i).await.unwrap());
    let (a, b) = (Wizard::new(db.store().await.ui_states()), Wizard::new(db.store().await.ui_states()));
    a.add_prompt(&prompt(10, 7, &i.id), &i).await.unwrap();
    assert_eq!(b.take_prompt(-100, 8, Some(10), true).await.unwrap(), None, "someone else's prompt");
    assert_eq!(b.take_prompt(-100, 7, Some(99), false).await.unwrap(), None, "a reply to another message");
    assert_eq!(b.take_prompt(-100, 7, None, false).await.unwrap(), None, "no reply, no fallback");
    assert_eq!(b.take_prompt(-100, 7, Some(10), false).await.unwrap(), Some(prompt(10, 7, &i.id)));
    assert_eq!(a.take_prompt(-100, 7, Some(10), true).await.unwrap(), None, "taken once");

    a.add_prompt(&prompt(11, 7, &i.id), &i).await.unwrap();
    b.add_prompt(&prompt(12, 7, &i.id), &i).await.unwrap();
    assert_eq!(a.take_prompt(-100, 7, Some(11), false).await.unwrap(), None, "replaced by the newer prompt");
    assert_eq!(a.take_prompt(-100, 7, None, true).await.unwrap(), Some(prompt(12, 7, &i.id)), "fallback finds the newest");

    // The interaction ends: its prompts go.
    b.add_prompt(&prompt(13, 7, &i.id), &i).await.unwrap();
    end(&store, &i).await;
    assert_eq!(b.take_prompt(-100, 7, Some(13), true).await.unwrap(), None);
}

/// The wizard view a click stores (the row the engine writes with the click's
/// action) is read on every replica; a later click's replaces it, and the end of the
/// interaction removes it.
async fn views_are_shared_by_replicas(db: &Db) {
    let i = interaction("bbbbbbbbbbbb");
    let store = db.store().await;
    assert!(store.insert_interaction(&i).await.unwrap());
    let (a, b) = (Wizard::new(db.store().await.ui_states()), Wizard::new(db.store().await.ui_states()));
    let states = store.ui_states();
    let put = async |view: View| {
        let row = wizard::view_state(&i, view);
        states.put(row.kind, &row.key, &i.id, &row.value, now(), row.expires_ms).await.unwrap();
        row
    };
    assert_eq!(b.view(&i.id).await, None);
    let row = put(View { step: 1, page: 0 }).await;
    assert_eq!((row.kind, row.key.as_str(), row.value.as_str()), ("telegram.view", i.id.as_str(), r#"{"step":1,"page":0}"#));
    assert!(row.expires_ms > i.deadline_ms, "kept past the deadline, for a late click's render");
    assert_eq!(b.view(&i.id).await, Some(View { step: 1, page: 0 }));
    put(View { step: 0, page: 3 }).await;
    assert_eq!(a.view(&i.id).await, Some(View { step: 0, page: 3 }));
    end(&store, &i).await;
    assert_eq!(b.view(&i.id).await, None);
}
