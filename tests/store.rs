//! The store against real databases: every test below runs once on SQLite (a file in
//! a temp dir) and once on PostgreSQL (a fresh schema per test), from one suite.
//!
//! The PostgreSQL half is `#[ignore]`d: `cargo test -- --include-ignored` runs it
//! against `HITL_BRIDGE_TEST_POSTGRES_URL` (CI sets it), e.g.
//! `postgres://postgres@127.0.0.1:5432/test`, and fails when that is unset.

use hitl_bridge::interaction::policy::{RememberArgs, RememberScope, RememberedRule};
use hitl_bridge::interaction::{AccessPolicy, Actor, Applied, Delivery, Draft, Interaction, Policy, RequestBuilder, Status, TimeoutDefaults, UserAction};
use hitl_bridge::protocol::{ActionRequest, Command, Decision, DecisionType, Reply};
use hitl_bridge::store::platform_state::MAX_VALUE_BYTES;
use hitl_bridge::store::{AuditEntry, AuditFilter, ChatKey, MessageRef, Queued, RefusedShow, Settled, ShowClaim, Showing, Store, StoreError, Stored};
use serde_json::{Value, json};

mod support;
use support::test_db;

use test_db::{TestStore, execute};

// ---------------------------------------------------------------------------------
// Databases
// ---------------------------------------------------------------------------------

/// Runs each listed test on SQLite and on PostgreSQL.
macro_rules! suite {
    ($($test:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $test() {
                    let mut db = super::TestStore::sqlite().await;
                    super::$test(&mut db).await;
                    db.finish().await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test]
                #[ignore = "needs PostgreSQL: set HITL_BRIDGE_TEST_POSTGRES_URL, then cargo test -- --include-ignored"]
                async fn $test() {
                    let Some(mut db) = super::TestStore::postgres().await else { return };
                    super::$test(&mut db).await;
                    db.finish().await;
                }
            )*
        }
    };
}

suite!(
    interaction_round_trips,
    duplicate_insert_changes_nothing,
    pending_lists_are_oldest_first,
    draft_persists_until_settled,
    settle_is_first_wins,
    concurrent_settles_have_one_winner,
    writes_sharing_a_commit_keep_their_own_outcomes_and_a_bad_one_fails_alone,
    settles_sharing_a_statement_each_keep_their_own_conditions,
    the_store_closes_while_its_tasks_keep_connections,
    outbox_keeps_order_and_removes,
    survives_reopening,
    chat_binding_is_an_upsert,
    chats_read_before_a_binding_follow_it,
    sessions_asked_at_once_each_get_their_own_chats_in_bound_order,
    requester_is_replaced,
    message_refs_are_kept_in_order,
    messages_to_render_again_are_those_behind_their_interaction,
    sessions_with_work_are_listed_once,
    audit_records_edits_and_latency,
    audit_records_expiry_by_backend,
    corrupt_row_is_skipped,
    pending_in_chat_lists_what_a_chat_shows,
    secrets_are_created_once,
    a_session_lease_has_one_holder,
    an_open_turn_counts_what_its_chats_showed_and_ends_only_itself,
    turns_noted_at_once_share_commits_and_each_learns_its_own_time,
    a_turn_written_twice_in_one_commit_sees_its_first_write,
    bodies_saved_at_once_keep_their_own_conditions,
    pairing_codes_are_reused_expire_and_pair_once,
    refused_talk_is_audited_with_where_and_what,
    a_strangers_refusal_window_counts_on_one_entry_across_replicas,
    a_draft_saved_from_a_stale_copy_changes_nothing,
    rules_are_listed_by_session_and_backend_and_revoked_once,
    settle_decision_stores_the_rule_only_for_the_winner,
    the_update_inbox_stores_once_claims_and_forgets,
    updates_posted_at_once_share_statements_and_each_post_learns_its_own,
    the_inbox_migration_keeps_updates_in_flight,
    pending_timers_are_read_from_their_columns,
    pending_access_facts_follow_every_write,
    a_push_is_stored_whole_once_or_not_at_all,
    pending_pushes_are_paged_by_push_time_then_key,
    web_sign_in_links_are_spent_once_and_expire,
    web_sessions_end_when_idle_or_signed_out,
    web_audit_reads_newest_first_with_filters,
    a_platforms_own_state_is_its_own_expires_and_is_bounded,
    a_platform_cursor_moves_once_from_each_version,
    a_refused_show_leaves_the_queue_for_good_and_keeps_its_reason,
);

// ---------------------------------------------------------------------------------
// Builders
// ---------------------------------------------------------------------------------

const T0: i64 = 1_700_000_000_000;

fn thao() -> Actor {
    Actor::new("telegram", "1", "Thảo")
}

fn action(name: &str, args: Value) -> ActionRequest {
    ActionRequest { name: name.into(), args, description: Some(format!("run {name}")), tool_use_id: None }
}

/// Two tool calls under review, requested by Thảo, 60 s to decide.
fn approval(session: &str, key: &str, now_ms: i64) -> Interaction {
    let actions =
        vec![action("execute_trade", json!({"symbol": "VNM", "quantity": 100})), action("send_email", json!({"to": "ops@example.com", "body": "done"}))];
    let request = RequestBuilder::start(key, actions, vec![], Some(60)).finish(TimeoutDefaults::default()).expect("valid request");
    Interaction::new(format!("id-{key}"), session.into(), request, Some(thao()), now_ms)
}

fn question(session: &str, key: &str, now_ms: i64) -> Interaction {
    let args = json!({"questions": [{"question": "Thảo muốn tập trung vào mục tiêu nào?", "options": [{"label": "Tăng trưởng"}, {"label": "Cổ tức"}]}]});
    let request = RequestBuilder::start(key, vec![action("ask_user_question", args)], vec![], None).finish(TimeoutDefaults::default()).expect("valid question");
    Interaction::new(format!("id-{key}"), session.into(), request, Some(thao()), now_ms)
}

/// Applies a person's action, which must be accepted.
fn act(i: &mut Interaction, action: UserAction, now_ms: i64) -> Applied {
    i.apply(&thao(), action, &AccessPolicy::default(), now_ms).expect("action accepted")
}

/// Approve the trade, edit the email's args, submit.
fn resolve_with_edit(i: &mut Interaction, now_ms: i64) -> Reply {
    act(i, UserAction::Decide { action: 0, decision: Decision::Approve }, now_ms);
    act(i, UserAction::EditArgs { action: 1, json: r#"{"to": "lead@example.com", "body": "done"}"#.into() }, now_ms);
    match act(i, UserAction::Submit, now_ms) {
        Applied::Resolved(reply) => reply,
        Applied::Updated => panic!("submit must resolve"),
    }
}

fn approval_command(i: &Interaction, reply: Reply) -> Command {
    Command::Approval { session_id: i.session_id.clone(), approval_key: i.approval_key().into(), reply }
}

fn ids(list: &[Interaction]) -> Vec<&str> {
    list.iter().map(|i| i.id.as_str()).collect()
}

fn commands(outbox: &[(i64, Command)]) -> Vec<Command> {
    outbox.iter().map(|(_, c)| c.clone()).collect()
}

// ---------------------------------------------------------------------------------
// The suite
// ---------------------------------------------------------------------------------

async fn interaction_round_trips(db: &mut TestStore) {
    let store = &db.store;
    let a = approval("S", "S_1", T0);
    let mut q = question("S", "S_2", T0 + 1);
    assert!(store.insert_interaction(&a).await.expect("insert"));
    assert!(store.insert_interaction(&q).await.expect("insert"));

    assert_eq!(store.interaction("id-S_1").await.expect("load"), Some(a.clone()));
    assert_eq!(store.interaction_by_key("S", "S_2").await.expect("load"), Some(q.clone()));
    assert_eq!(store.interaction("missing").await.expect("load"), None);
    assert_eq!(store.interaction_by_key("other session", "S_1").await.expect("load"), None);

    // A settled question keeps its answers (an ordered map on the wire) intact.
    act(&mut q, UserAction::Select { question: 0, options: vec![1] }, T0 + 10);
    let Applied::Resolved(reply) = act(&mut q, UserAction::Submit, T0 + 20) else { panic!("submit resolves") };
    assert!(store.settle(&q, Some(&approval_command(&q, reply)), &AuditEntry::for_settled(&q, T0 + 20)).await.expect("settle").won());
    assert_eq!(store.interaction("id-S_2").await.expect("load"), Some(q));
}

async fn duplicate_insert_changes_nothing(db: &mut TestStore) {
    let store = &db.store;
    let first = approval("S", "S_1", T0);
    assert!(store.insert_interaction(&first).await.expect("insert"));
    assert!(!store.insert_interaction(&first).await.expect("replay"), "a replay is not new");

    // Same session and key under another id (a replayed request after a restart).
    let mut replay = approval("S", "S_1", T0 + 5_000);
    replay.id = "another-id".into();
    assert!(!store.insert_interaction(&replay).await.expect("replay"));
    assert_eq!(store.interaction("another-id").await.expect("load"), None);
    assert_eq!(store.interaction_by_key("S", "S_1").await.expect("load"), Some(first));

    // The same key in another session is another request.
    assert!(store.insert_interaction(&approval("T", "S_1", T0)).await.is_err(), "ids must stay unique");
    let mut other = approval("T", "S_1", T0);
    other.id = "id-T".into();
    assert!(store.insert_interaction(&other).await.expect("insert"));
}

async fn pending_lists_are_oldest_first(db: &mut TestStore) {
    let store = &db.store;
    for (session, key, at) in [("S", "S_2", T0 + 2), ("T", "T_1", T0 + 1), ("S", "S_1", T0), ("S", "S_3", T0 + 3)] {
        assert!(store.insert_interaction(&approval(session, key, at)).await.expect("insert"));
    }
    let mut done = approval("S", "S_0", T0 - 1);
    assert!(store.insert_interaction(&done).await.expect("insert"));
    assert!(done.cancel(T0 + 4, "turn ended"));
    assert!(store.settle(&done, None, &AuditEntry::for_settled(&done, T0 + 4)).await.expect("settle").won());

    let all = store.pending_interactions().await.expect("list");
    assert_eq!(ids(&all), ["id-S_1", "id-T_1", "id-S_2", "id-S_3"]);
    let in_s = store.pending_in_session("S").await.expect("list");
    assert_eq!(ids(&in_s), ["id-S_1", "id-S_2", "id-S_3"]);
    assert!(store.pending_in_session("nobody").await.expect("list").is_empty());
}

async fn draft_persists_until_settled(db: &mut TestStore) {
    let store = &db.store;
    let mut i = approval("S", "S_1", T0);
    assert!(store.insert_interaction(&i).await.expect("insert"));

    assert_eq!(act(&mut i, UserAction::Decide { action: 0, decision: Decision::Approve }, T0 + 1), Applied::Updated);
    assert!(store.save_draft(&i).await.expect("save draft"));
    let stored = store.interaction("id-S_1").await.expect("load").expect("present");
    let Draft::Decisions(draft) = &stored.draft else { panic!("an approval has decisions") };
    assert_eq!(draft.decisions, vec![Some(Decision::Approve), None]);

    // Another replica settles it; a draft saved from a stale copy is refused.
    let stale = i.clone();
    resolve_with_edit(&mut i, T0 + 2);
    assert!(store.settle(&i, None, &AuditEntry::for_settled(&i, T0 + 2)).await.expect("settle").won());
    assert!(!store.save_draft(&stale).await.expect("save draft"), "no longer pending");
    assert_eq!(store.interaction("id-S_1").await.expect("load"), Some(i.clone()));

    // Saving a settled interaction as a draft is a caller bug, reported as such.
    assert!(matches!(store.save_draft(&i).await, Err(StoreError::WrongState { .. })));
}

async fn settle_is_first_wins(db: &mut TestStore) {
    let store = &db.store;
    let created = approval("S", "S_1", T0);
    assert!(store.insert_interaction(&created).await.expect("insert"));

    // Two replicas hold the same pending interaction: one resolves it, one expires it.
    let mut clicked = created.clone();
    let reply = resolve_with_edit(&mut clicked, T0 + 1_000);
    let mut timed_out = created.clone();
    assert!(timed_out.expire(T0 + 1_001, false));
    let expiry = timed_out.expiry_reply().expect("approvals reject on expiry");

    let first = approval_command(&clicked, reply);
    assert!(store.settle(&clicked, Some(&first), &AuditEntry::for_settled(&clicked, T0 + 1_000)).await.expect("settle").won());
    let second = approval_command(&timed_out, expiry);
    assert!(!store.settle(&timed_out, Some(&second), &AuditEntry::for_settled(&timed_out, T0 + 1_001)).await.expect("settle").won());

    assert_eq!(commands(&store.outbox_for_session("S").await.expect("outbox")), vec![first]);
    let audit = store.audit_log("S_1").await.expect("audit");
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].outcome, "resolved");
    let stored = store.interaction("id-S_1").await.expect("load").expect("present");
    assert!(matches!(stored.status, Status::Resolved { at_ms, .. } if at_ms == T0 + 1_000));
    assert!(store.pending_interactions().await.expect("list").is_empty());

    // Settling a pending interaction is a caller bug and writes nothing.
    let mut other = approval("S", "S_2", T0);
    assert!(store.insert_interaction(&other).await.expect("insert"));
    assert!(matches!(store.settle(&other, None, &AuditEntry::for_settled(&other, T0)).await, Err(StoreError::WrongState { .. })));
    assert!(store.audit_log("S_2").await.expect("audit").is_empty());
    assert!(other.cancel(T0 + 1, "turn ended"));
    assert!(store.settle(&other, None, &AuditEntry::for_settled(&other, T0 + 1)).await.expect("settle").won());
    assert_eq!(store.outbox_for_session("S").await.expect("outbox").len(), 1, "no command: none queued");
}

async fn concurrent_settles_have_one_winner(db: &mut TestStore) {
    // A second replica on the same database.
    let replica = db.db.store().await;
    let created = approval("S", "S_1", T0);
    assert!(db.store.insert_interaction(&created).await.expect("insert"));

    let mut clicked = created.clone();
    let reply = resolve_with_edit(&mut clicked, T0 + 10);
    let click = approval_command(&clicked, reply);
    let mut expired = created.clone();
    assert!(expired.expire(T0 + 10, false));
    let expiry = approval_command(&expired, expired.expiry_reply().expect("approvals reject on expiry"));

    let (click_audit, expiry_audit) = (AuditEntry::for_settled(&clicked, T0 + 10), AuditEntry::for_settled(&expired, T0 + 10));
    // Both in flight at once: their statements interleave at every await.
    let (a, b) = tokio::join!(db.store.settle(&clicked, Some(&click), &click_audit), replica.settle(&expired, Some(&expiry), &expiry_audit),);
    let (a, b) = (a.expect("settle"), b.expect("settle"));
    assert!(a.won() ^ b.won(), "exactly one wins: {a:?} {b:?}");

    let (winner, settled) = if a.won() { ((click, "resolved"), a) } else { ((expiry, "expired"), b) };
    let queued = db.store.outbox_for_session("S").await.expect("outbox");
    assert_eq!(commands(&queued), vec![winner.0.clone()]);
    // The winner is told the row its command got, for the connector to send unread.
    assert_eq!(settled, Settled::Won { queued: Some(Queued { id: queued[0].0, created_at_ms: T0 + 10, command: winner.0 }) });
    let audit = db.store.audit_log("S_1").await.expect("audit");
    assert_eq!(audit.iter().map(|e| e.outcome.as_str()).collect::<Vec<_>>(), [winner.1]);
    replica.close().await;
}

/// A burst of settles runs as one statement per run of them in a commit (each row
/// with its own conditions): forty at once, of four kinds, each must end as it would
/// alone. Ten people's decisions on the revision they read win; ten read before a
/// draft was saved lose (the row keeps its draft); ten timeouts win on the status
/// alone; ten second decisions of the first ten lose. Each winner's row holds its own
/// body and one more revision, and its audit row and command are there once.
async fn settles_sharing_a_statement_each_keep_their_own_conditions(db: &mut TestStore) {
    let store = &db.store;
    let created: Vec<Interaction> = (0..30).map(|n| approval(&format!("S{n}"), &format!("S{n}_1"), T0)).collect();
    for i in &created {
        assert!(store.insert_interaction(i).await.expect("insert"));
    }
    // Ten rows move on under the copies read of them: a draft saved meanwhile.
    for i in &created[10..20] {
        let mut draft = i.clone();
        act(&mut draft, UserAction::Decide { action: 0, decision: Decision::Approve }, T0 + 1);
        assert!(store.save_draft(&draft).await.expect("save draft"));
    }
    let settles = (0..40).map(|k| {
        let mut i = created[k % 30].clone();
        async move {
            let command = |i: &Interaction| Command::Cancel { session_id: i.session_id.clone() };
            if (20..30).contains(&k) {
                assert!(i.cancel(T0 + 5, "timed out"));
                return store.settle(&i, Some(&command(&i)), &AuditEntry::for_settled(&i, T0 + 5)).await.expect("settle");
            }
            resolve_with_edit(&mut i, T0 + 5);
            store.settle_decision(&i, Some(&command(&i)), &AuditEntry::for_settled(&i, T0 + 5), None).await.expect("settle")
        }
    });
    let outcomes = futures_util::future::join_all(settles).await;

    let won: Vec<bool> = outcomes.iter().map(Settled::won).collect();
    for n in 0..10 {
        assert!(won[n] != won[n + 30], "request {n}: one of its two decisions wins: {:?}", [&outcomes[n], &outcomes[n + 30]]);
    }
    assert_eq!(won[10..20], [false; 10], "read before the draft: lost");
    assert_eq!(won[20..30], [true; 10], "timeouts on pending rows: won");
    for (n, created) in created.iter().enumerate() {
        let stored = store.interaction(&created.id).await.expect("load").expect("stored");
        let session = format!("S{n}");
        let audit = store.audit_log(&format!("S{n}_1")).await.expect("audit");
        let queued = commands(&store.outbox_for_session(&session).await.expect("outbox"));
        if (10..20).contains(&n) {
            assert!(stored.status.is_pending(), "request {n} keeps its draft");
            assert_eq!((stored.revision.0, audit.len(), queued.len()), (created.revision.0 + 1, 0, 0), "request {n}: only the draft");
            continue;
        }
        assert_eq!(stored.revision.0, created.revision.0 + 1, "request {n}: one settle, one more revision");
        let mut expected = created.clone();
        if n < 10 {
            resolve_with_edit(&mut expected, T0 + 5);
        } else {
            assert!(expected.cancel(T0 + 5, "timed out"));
        }
        assert_eq!(stored.status, expected.status, "request {n}: its own body");
        assert_eq!(stored.request, expected.request, "request {n}: its own body");
        assert_eq!((audit.len(), queued), (1, vec![Command::Cancel { session_id: session }]), "request {n}: once");
    }
}

/// Forty writes at once share commits (the group commit, on PostgreSQL as on SQLite):
/// twenty settles each queueing a command, the same twenty again (each loses: nothing
/// written or queued twice), and a message recorded for a request that does not exist
/// (a foreign key error, which on PostgreSQL aborts the whole transaction it is in).
/// The bad write fails alone; every other write has its own outcome, and each winner's
/// audit row and command are there once.
async fn writes_sharing_a_commit_keep_their_own_outcomes_and_a_bad_one_fails_alone(db: &mut TestStore) {
    let store = &db.store;
    let created: Vec<Interaction> = (0..20).map(|n| approval(&format!("S{n}"), &format!("S{n}_1"), T0)).collect();
    for i in &created {
        assert!(store.insert_interaction(i).await.expect("insert"));
    }
    let settles = (0..40).map(|k| {
        let mut i = created[k % 20].clone();
        async move {
            assert!(i.cancel(T0 + 5, "turn ended"));
            let command = Command::Cancel { session_id: i.session_id.clone() };
            store.settle(&i, Some(&command), &AuditEntry::for_settled(&i, T0 + 5)).await.expect("settle")
        }
    });
    let chat = ChatKey::new("telegram", "-100", None);
    let orphan = MessageRef { interaction_id: "nobody".into(), chat: chat.clone(), message_id: "m1".into() };
    let (outcomes, bad) = tokio::join!(futures_util::future::join_all(settles), store.shown("nobody", &chat, Some(&orphan)));

    assert!(bad.is_err(), "{bad:?}");
    for n in 0..20 {
        let won: Vec<&Settled> = [&outcomes[n], &outcomes[n + 20]].into_iter().filter(|s| s.won()).collect();
        assert_eq!(won.len(), 1, "request {n}: {:?}", [&outcomes[n], &outcomes[n + 20]]);
        let session = format!("S{n}");
        assert_eq!(commands(&store.outbox_for_session(&session).await.expect("outbox")), [Command::Cancel { session_id: session }]);
        assert_eq!(store.audit_log(&format!("S{n}_1")).await.expect("audit").len(), 1);
    }
}

/// The group commit and the shared reads keep a connection between their statements;
/// closing the store hands them back instead of waiting for them forever, and a write
/// after the close fails rather than hangs.
async fn the_store_closes_while_its_tasks_keep_connections(db: &mut TestStore) {
    let store = db.db.store().await;
    let i = approval("S", "S_1", T0);
    assert!(store.insert_interaction(&i).await.expect("insert"));
    store.showing("S", &i.id).await.expect("showing");
    let within = std::time::Duration::from_secs(10);
    tokio::time::timeout(within, store.close()).await.expect("the store closes");
    let after = tokio::time::timeout(within, store.insert_interaction(&approval("S", "S_2", T0))).await.expect("a write after the close returns");
    assert!(after.is_err(), "{after:?}");
}

async fn outbox_keeps_order_and_removes(db: &mut TestStore) {
    let store = &db.store;
    let hello = Command::message("S", "hãy hỏi 2 lần", None);
    let approve = Command::Approval {
        session_id: "S".into(),
        approval_key: "S_1".into(),
        reply: Reply::Decisions { decisions: vec![Decision::Approve], user_edit_content: None },
    };
    let cancel = Command::Cancel { session_id: "S".into() };
    let elsewhere = Command::Cancel { session_id: "T".into() };

    let mut ids = Vec::new();
    for (command, at) in [(&hello, T0), (&approve, T0 + 1), (&elsewhere, T0 + 2), (&cancel, T0 + 3), (&approve, T0 + 4)] {
        ids.push(store.enqueue(command, at).await.expect("enqueue"));
    }
    let outbox = store.outbox_for_session("S").await.expect("outbox");
    assert_eq!(commands(&outbox), vec![hello.clone(), approve.clone(), cancel.clone(), approve.clone()]);
    assert_eq!(outbox.iter().map(|(id, _)| *id).collect::<Vec<_>>(), vec![ids[0], ids[1], ids[3], ids[4]]);

    store.remove_outbox(ids[0]).await.expect("remove");
    store.remove_outbox(ids[0]).await.expect("removing twice is harmless");
    assert_eq!(store.drop_outbox_for_key("S", "S_1").await.expect("drop").len(), 2);
    assert_eq!(store.drop_outbox_for_key("S", "S_1").await.expect("drop"), Vec::<i64>::new());
    assert_eq!(commands(&store.outbox_for_session("S").await.expect("outbox")), vec![cancel]);
    assert_eq!(commands(&store.outbox_for_session("T").await.expect("outbox")), vec![elsewhere]);
}

async fn survives_reopening(db: &mut TestStore) {
    let mut i = approval("S", "S_1", T0);
    assert!(db.store.insert_interaction(&i).await.expect("insert"));
    act(&mut i, UserAction::Decide { action: 1, decision: Decision::Reject { message: Some("no".into()) } }, T0 + 1);
    assert!(db.store.save_draft(&i).await.expect("save draft"));
    let queued = Command::message("S", "tiếp tục", None);
    db.store.enqueue(&queued, T0 + 2).await.expect("enqueue");
    let chat = ChatKey::new("telegram", "-100", Some("7"));
    db.store.bind_chat(&chat, "S", T0).await.expect("bind");

    db.reopen().await;

    assert_eq!(db.store.pending_interactions().await.expect("list"), vec![i]);
    assert_eq!(commands(&db.store.outbox_for_session("S").await.expect("outbox")), vec![queued]);
    assert_eq!(db.store.session_for_chat(&chat).await.expect("lookup").as_deref(), Some("S"));
}

async fn chat_binding_is_an_upsert(db: &mut TestStore) {
    let store = &db.store;
    let group = ChatKey::new("telegram", "-100", None);
    let topic = ChatKey::new("telegram", "-100", Some("7"));
    let channel = ChatKey::new("discord", "-100", None);
    assert_eq!(store.session_for_chat(&group).await.expect("lookup"), None);

    store.bind_chat(&group, "S1", T0).await.expect("bind");
    store.bind_chat(&group, "S2", T0 + 1).await.expect("rebind");
    store.bind_chat(&topic, "S2", T0 + 2).await.expect("bind");
    store.bind_chat(&channel, "S3", T0 + 3).await.expect("bind");

    assert_eq!(store.session_for_chat(&group).await.expect("lookup").as_deref(), Some("S2"));
    assert_eq!(store.session_for_chat(&topic).await.expect("lookup").as_deref(), Some("S2"));
    assert_eq!(store.session_for_chat(&channel).await.expect("lookup").as_deref(), Some("S3"));
    assert!(store.chats_for_session("S1").await.expect("list").is_empty(), "the chat moved on");
    assert_eq!(store.chats_for_session("S2").await.expect("list"), vec![group, topic]);
}

/// Chats read once are read again correctly after every binding: on SQLite the store
/// keeps the chats of recent sessions, and a binding must move a chat out of the
/// session it left and into the one it joined, in bound order.
async fn chats_read_before_a_binding_follow_it(db: &mut TestStore) {
    let store = &db.store;
    let group = ChatKey::new("telegram", "-100", None);
    let topic = ChatKey::new("telegram", "-100", Some("7"));
    let dm = ChatKey::new("slack", "D1", None);
    store.bind_chat(&group, "S1", T0).await.expect("bind");
    store.bind_chat(&topic, "S2", T0 + 1).await.expect("bind");
    assert_eq!(store.chats_for_session("S1").await.expect("list"), vec![group.clone()]);
    assert_eq!(store.chats_for_session("S2").await.expect("list"), vec![topic.clone()]);
    assert_eq!(store.chats_for_session("S3").await.expect("list"), vec![]);

    store.bind_chat(&group, "S2", T0 + 2).await.expect("rebind");
    store.bind_chat(&dm, "S3", T0 + 3).await.expect("bind");
    assert_eq!(store.chats_for_session("S1").await.expect("list"), vec![], "the chat moved on");
    assert_eq!(store.chats_for_session("S2").await.expect("list"), vec![topic.clone(), group.clone()]);
    assert_eq!(store.chats_for_session("S3").await.expect("list"), vec![dm.clone()]);
    // Bound again to the session it is in: it moves to the end of the bound order.
    store.bind_chat(&topic, "S2", T0 + 4).await.expect("bind again");
    assert_eq!(store.chats_for_session("S2").await.expect("list"), vec![group, topic]);
}

async fn sessions_asked_at_once_each_get_their_own_chats_in_bound_order(db: &mut TestStore) {
    let store = &db.store;
    // Session k has k chats (none for S0), bound newest-platform-first so the bound
    // order differs from the chats' names; S3's first chat moved to S4 later.
    let chat = |k: usize, c: usize| ChatKey::new(if c.is_multiple_of(2) { "telegram" } else { "discord" }, &format!("{k}-{c}"), None);
    for k in 1..6 {
        for c in (0..k).rev() {
            store.bind_chat(&chat(k, c), &format!("S{k}"), T0 + (k * 10 + (k - c)) as i64).await.expect("bind");
        }
    }
    store.bind_chat(&chat(3, 2), "S4", T0 + 100).await.expect("rebind");
    // Asked at once, twice each and in no particular order: the asks share reads,
    // and each gets exactly what it would alone.
    let sessions = ["S5", "S0", "S3", "S1", "S4", "S2", "S5", "S3", "nobody", "S4"];
    let answers = futures_util::future::join_all(sessions.iter().map(|s| store.chats_for_session(s))).await;
    for (session, answer) in sessions.iter().zip(answers) {
        let k: usize = session.strip_prefix('S').and_then(|k| k.parse().ok()).unwrap_or(0);
        let mut expected: Vec<ChatKey> = (0..k).rev().map(|c| chat(k, c)).collect();
        match k {
            3 => expected.retain(|c| *c != chat(3, 2)),
            4 => expected.push(chat(3, 2)),
            _ => {}
        }
        assert_eq!(answer.expect("list"), expected, "the chats of {session}");
    }
}

async fn requester_is_replaced(db: &mut TestStore) {
    let store = &db.store;
    assert_eq!(store.requester("S").await.expect("load"), None);
    store.set_requester("S", &thao()).await.expect("set");
    let mut lead = Actor::new("discord", "9", "Lead");
    lead.groups = vec!["777".into()];
    store.set_requester("S", &lead).await.expect("replace");
    assert_eq!(store.requester("S").await.expect("load"), Some(lead));
    assert_eq!(store.requester("T").await.expect("load"), None);
}

async fn message_refs_are_kept_in_order(db: &mut TestStore) {
    let store = &db.store;
    assert!(store.insert_interaction(&approval("S", "S_1", T0)).await.expect("insert"));
    let shown = |platform: &str, chat: &str, thread: Option<&str>, message: &str| MessageRef {
        interaction_id: "id-S_1".into(),
        chat: ChatKey::new(platform, chat, thread),
        message_id: message.into(),
    };
    let refs = [shown("telegram", "-100", Some("7"), "55"), shown("discord", "123", None, "999"), shown("telegram", "42", None, "56")];
    for r in &refs {
        store.add_message_ref(r).await.expect("add");
    }
    store.add_message_ref(&refs[0]).await.expect("adding twice is harmless");

    assert_eq!(store.message_refs("id-S_1").await.expect("list"), refs.to_vec());
    assert!(store.message_refs("id-other").await.expect("list").is_empty());

    // Foreign keys are enforced: a message for an unknown interaction is refused.
    let orphan = MessageRef { interaction_id: "id-other".into(), ..refs[1].clone() };
    assert!(store.add_message_ref(&orphan).await.is_err());

    // Where a refresh edits, in one read: the session's chats in the order they were
    // bound (another session's chat left out), and the request's messages in order.
    let (later, first, elsewhere) = (ChatKey::new("discord", "9", Some("t")), ChatKey::new("telegram", "42", None), ChatKey::new("telegram", "77", None));
    store.bind_chat(&later, "S", T0 + 5).await.expect("bind");
    store.bind_chat(&first, "S", T0 + 1).await.expect("bind");
    store.bind_chat(&elsewhere, "S9", T0).await.expect("bind");
    let showing = |bound: Vec<ChatKey>, messages: Vec<MessageRef>| Showing { bound, messages, targets: vec![] };
    assert_eq!(store.showing("S", "id-S_1").await.expect("showing"), showing(vec![first.clone(), later.clone()], refs.to_vec()));
    assert_eq!(store.showing("S", "id-other").await.expect("showing"), showing(vec![first, later], vec![]));
    assert_eq!(store.showing("S-none", "id-S_1").await.expect("showing"), showing(vec![], refs.to_vec()));
}

/// What a restart renders again: a pending request's message behind its revision, and
/// an ended one's whose message recorded what it showed (a decision a kill kept from
/// the chat), while its deadline is after the lookback; never a message that never
/// recorded anything once its request ended (a terminal's).
async fn messages_to_render_again_are_those_behind_their_interaction(db: &mut TestStore) {
    let store = &db.store;
    for (key, at) in [("S_1", T0), ("S_2", T0 + 1), ("S_3", T0 + 2)] {
        assert!(store.insert_interaction(&approval("S", key, at)).await.expect("insert"));
    }
    let chat = ChatKey::new("telegram", "-100", None);
    let shown = |id: &str, message: &str| MessageRef { interaction_id: id.into(), chat: chat.clone(), message_id: message.into() };
    let (one, two, three) = (shown("id-S_1", "1"), shown("id-S_2", "2"), shown("id-S_3", "3"));
    for r in [&one, &two, &three] {
        store.add_message_ref(r).await.expect("add");
    }
    let revision = |id: &'static str| async move { store.interaction(id).await.expect("load").expect("exists").revision.0 };
    let stale = |since: i64| async move { store.stale_messages(since).await.expect("list").into_iter().map(|(id, _)| id).collect::<Vec<_>>() };
    assert_eq!(stale(T0).await, ["id-S_1", "id-S_2", "id-S_3"], "pending, never recorded: all of them, oldest first");

    // Together: on SQLite they share a transaction, and its one statement marks both.
    let (r1, r2) = (revision("id-S_1").await, revision("id-S_2").await);
    let (a, b) = tokio::join!(store.mark_shown(&one, r1), store.mark_shown(&two, r2));
    a.expect("mark");
    b.expect("mark");
    assert_eq!(stale(T0).await, ["id-S_3"]);

    // S_2 is decided and S_3 expires; neither message shows that yet.
    for id in ["id-S_2", "id-S_3"] {
        let mut done = store.interaction(id).await.expect("load").expect("exists");
        assert!(done.expire(T0 + 10, true));
        assert!(store.settle(&done, None, &AuditEntry::for_settled(&done, T0 + 10)).await.expect("settle").won());
    }
    let deadline = store.interaction("id-S_2").await.expect("load").expect("exists").deadline_ms;
    assert_eq!(stale(deadline - 1).await, ["id-S_2"], "the ended one whose message recorded what it showed; S_3's never did");
    assert!(stale(deadline).await.is_empty(), "ended before the lookback: left alone");

    store.mark_shown(&two, revision("id-S_2").await).await.expect("mark");
    assert!(stale(T0).await.is_empty(), "shows its outcome now");
}

async fn pending_in_chat_lists_what_a_chat_shows(db: &mut TestStore) {
    let store = &db.store;
    for (key, at) in [("S_1", T0), ("S_2", T0 + 1), ("S_3", T0 + 2)] {
        assert!(store.insert_interaction(&approval("S", key, at)).await.expect("insert"));
    }
    let topic = ChatKey::new("telegram", "-100", Some("7"));
    let main_chat = ChatKey::new("telegram", "-100", None);
    let show = |id: &str, chat: &ChatKey, message: &str| MessageRef { interaction_id: id.into(), chat: chat.clone(), message_id: message.into() };
    for r in [show("id-S_1", &topic, "1"), show("id-S_1", &topic, "2"), show("id-S_2", &main_chat, "3"), show("id-S_3", &topic, "4")] {
        store.add_message_ref(&r).await.expect("add");
    }
    // S_3 ends: it is no longer pending anywhere.
    let mut done = store.interaction("id-S_3").await.expect("load").expect("exists");
    assert!(done.expire(T0 + 10, true));
    assert!(store.settle(&done, None, &AuditEntry::for_settled(&done, T0 + 10)).await.expect("settle").won());

    assert_eq!(ids(&store.pending_in_chat(&topic).await.expect("list")), ["id-S_1"], "once, though shown twice");
    assert_eq!(ids(&store.pending_in_chat(&main_chat).await.expect("list")), ["id-S_2"]);
    assert!(store.pending_in_chat(&ChatKey::new("discord", "-100", None)).await.expect("list").is_empty());
}

async fn secrets_are_created_once(db: &mut TestStore) {
    assert_eq!(db.store.secret("tokens", || "first".into()).await.expect("create"), "first");
    assert_eq!(db.store.secret("tokens", || "second".into()).await.expect("load"), "first");
    assert_eq!(db.store.secret("other", || "x".into()).await.expect("create"), "x");
    db.reopen().await;
    assert_eq!(db.store.secret("tokens", || "third".into()).await.expect("load"), "first", "kept across restarts");
}

async fn a_session_lease_has_one_holder(db: &mut TestStore) {
    let store = &db.store;
    assert!(store.try_lease("S", "replica-a", T0, 10_000).await.expect("take"));
    assert!(!store.try_lease("S", "replica-b", T0 + 5_000, 10_000).await.expect("refused"), "a live lease is kept");
    assert!(store.try_lease("S", "replica-a", T0 + 5_000, 10_000).await.expect("renew"), "the holder renews");
    assert!(!store.try_lease("S", "replica-b", T0 + 14_000, 10_000).await.expect("refused"), "renewed until T0+15s");
    assert!(store.try_lease("S", "replica-b", T0 + 15_001, 10_000).await.expect("take over"), "a lapsed lease is taken");
    assert!(!store.try_lease("S", "replica-a", T0 + 15_002, 10_000).await.expect("refused"));
    store.release_lease("S", "replica-a").await.expect("release by a non-holder is a no-op");
    assert!(!store.try_lease("S", "replica-a", T0 + 15_003, 10_000).await.expect("still b's"));
    store.release_lease("S", "replica-b").await.expect("release");
    assert!(store.try_lease("S", "replica-a", T0 + 15_004, 10_000).await.expect("free again"));
    assert!(store.try_lease("T", "replica-b", T0, 10_000).await.expect("another session"));
}

async fn an_open_turn_counts_what_its_chats_showed_and_ends_only_itself(db: &mut TestStore) {
    use hitl_bridge::store::OpenTurn;
    let store = &db.store;
    assert_eq!(store.open_turn_of("S").await.expect("read"), None);
    let first = store.start_turn("S", T0).await.expect("start");
    assert_eq!(first, T0);
    assert_eq!(store.open_turn("S", T0 + 5).await.expect("a decision in the same turn"), T0, "the turn keeps when it opened");
    // Notes may land out of order; the count never goes down.
    store.note_texts_shown("S", first, 2).await.expect("note");
    store.note_texts_shown("S", first, 1).await.expect("note");
    assert_eq!(store.open_turn_of("S").await.expect("read"), Some(OpenTurn { opened_at_ms: T0, texts_shown: 2 }));
    db.reopen().await;
    let store = &db.store;
    assert_eq!(store.open_turn_of("S").await.expect("read"), Some(OpenTurn { opened_at_ms: T0, texts_shown: 2 }), "kept across a restart");

    // The next message starts a new turn before the first one's end was recorded, in
    // the same millisecond: it gets a later time, and the first turn's late writes miss it.
    let second = store.start_turn("S", T0).await.expect("start again");
    assert_eq!(second, T0 + 1);
    store.note_texts_shown("S", first, 5).await.expect("late note");
    store.end_turn("S", first).await.expect("late end");
    assert_eq!(store.open_turn_of("S").await.expect("read"), Some(OpenTurn { opened_at_ms: second, texts_shown: 0 }));
    store.end_turn("S", second).await.expect("end");
    assert_eq!(store.open_turn_of("S").await.expect("read"), None);
    assert!(!store.has_open_turn("S").await.expect("read"));
    store.note_texts_shown("S", second, 1).await.expect("a note after the end does nothing");
    assert_eq!(store.open_turn_of("S").await.expect("read"), None);
}

async fn turns_noted_at_once_share_commits_and_each_learns_its_own_time(db: &mut TestStore) {
    use hitl_bridge::store::OpenTurn;
    let store = &db.store;
    // Even sessions are in a turn already (opened at T0 - k); odd ones have none.
    let session = |k: i64| format!("S{k}");
    for k in (0..20).step_by(2) {
        store.start_turn(&session(k), T0 - k).await.expect("start");
    }
    // At once: every session opens a turn (k < 10) or starts a new one (k ≥ 10), as a
    // burst of decisions and messages would. Each learns its own turn's time.
    let opened = futures_util::future::join_all((0..20).map(|k| async move {
        let s = session(k);
        if k < 10 { store.open_turn(&s, T0 + k).await } else { store.start_turn(&s, T0 + k).await }
    }))
    .await;
    for (k, opened) in (0..20).zip(opened) {
        let expected = match (k % 2 == 0, k < 10) {
            (true, true) => T0 - k,  // the turn in progress keeps its time
            (true, false) => T0 + k, // a new turn replaces it
            (false, _) => T0 + k,    // none was open
        };
        assert_eq!(opened.expect("open"), expected, "S{k}");
    }
    // At once: half the turns are noted with their own time, half with a stale one
    // (which changes nothing), and S0..S4 end.
    let noted = futures_util::future::join_all((0..20).map(|k| async move {
        let s = session(k);
        let own = store.open_turn_of(&s).await.expect("read").expect("open").opened_at_ms;
        let at = if k % 4 == 1 { own - 1 } else { own };
        if k < 5 { store.end_turn(&s, at).await } else { store.note_texts_shown(&s, at, 3).await }
    }))
    .await;
    assert!(noted.iter().all(Result::is_ok));
    for k in 0..20 {
        let turn = store.open_turn_of(&session(k)).await.expect("read");
        let stale = k % 4 == 1;
        let opened_at_ms = if k % 2 == 0 && k < 10 { T0 - k } else { T0 + k };
        let expected = match (k < 5, stale) {
            (true, false) => None,
            (true, true) => Some(OpenTurn { opened_at_ms, texts_shown: 0 }),
            (false, false) => Some(OpenTurn { opened_at_ms, texts_shown: 3 }),
            (false, true) => Some(OpenTurn { opened_at_ms, texts_shown: 0 }),
        };
        assert_eq!(turn, expected, "S{k}");
    }
    assert_eq!(store.group_commits_retried(), 0, "each commit ran as a whole, its like writes together");
}

/// Writes queued before the writer task runs share one commit, and the like ones
/// among them one statement: a session's second write must see its first, as if each
/// ran in turn.
async fn a_turn_written_twice_in_one_commit_sees_its_first_write(db: &mut TestStore) {
    use hitl_bridge::store::OpenTurn;
    let store = &db.store;
    // A and B: opened, then opened again (kept), then started anew in the same
    // millisecond (a moment later); C: started twice (the second a moment later).
    let open = |session: &'static str, at: i64, fresh: bool| async move {
        if fresh { store.start_turn(session, at).await } else { store.open_turn(session, at).await }
    };
    let opened = futures_util::future::join_all([
        open("A", T0, false),
        open("B", T0, false),
        open("A", T0 + 1, false),
        open("B", T0, true),
        open("C", T0, true),
        open("C", T0, true),
    ])
    .await;
    let opened: Vec<i64> = opened.into_iter().map(|o| o.expect("open")).collect();
    assert_eq!(opened, [T0, T0, T0, T0 + 1, T0, T0 + 1]);

    // One commit: B's counts out of order (the highest stays), A's count and end, C's
    // end of its first turn (missing the second) and a count for its second.
    let note = |session: &'static str, opened_at_ms: i64, texts: Option<u64>| async move {
        match texts {
            Some(texts) => store.note_texts_shown(session, opened_at_ms, texts).await,
            None => store.end_turn(session, opened_at_ms).await,
        }
    };
    let noted = futures_util::future::join_all([
        note("B", T0 + 1, Some(4)),
        note("A", T0, Some(2)),
        note("B", T0 + 1, Some(2)),
        note("A", T0, None),
        note("C", T0, None),
        note("C", T0 + 1, Some(1)),
    ])
    .await;
    assert!(noted.iter().all(Result::is_ok), "{noted:?}");
    assert_eq!(store.group_commits_retried(), 0, "each commit ran as a whole, its like writes together");
    assert_eq!(store.open_turn_of("A").await.expect("read"), None);
    assert_eq!(store.open_turn_of("B").await.expect("read"), Some(OpenTurn { opened_at_ms: T0 + 1, texts_shown: 4 }));
    assert_eq!(store.open_turn_of("C").await.expect("read"), Some(OpenTurn { opened_at_ms: T0 + 1, texts_shown: 1 }));
}

/// Bodies saved in one commit (a burst's drafts and proofs of delivery) each keep
/// the condition they would have alone.
async fn bodies_saved_at_once_keep_their_own_conditions(db: &mut TestStore) {
    let store = &db.store;
    for key in ["S_1", "S_2", "S_3"] {
        assert!(store.insert_interaction(&trade_under("S", key, policy(3, vec![]))).await.expect("insert"));
    }
    let approve = || UserAction::DecideAll { decision: DecisionType::Approve };
    let none = &AccessPolicy::default();
    let load = |id: &'static str| async move { store.interaction(id).await.expect("load").expect("stored") };
    let (mut one, mut two, three) = (load("id-S_1").await, load("id-S_2").await, load("id-S_3").await);
    assert_eq!(one.apply(&voter("10", "Lan"), approve(), none, T0 + 1), Ok(Applied::Updated));
    assert_eq!(two.apply(&voter("11", "Minh"), approve(), none, T0 + 1), Ok(Applied::Updated));
    // S_3 settles, so its draft below is refused and its delivery is saved.
    let mut settled = three.clone();
    assert!(settled.cancel(T0 + 2, "turn ended"));
    settled.delivery = Delivery::Queued;
    assert!(store.settle(&settled, None, &AuditEntry::for_settled(&settled, T0 + 2)).await.expect("settle").won());
    settled.delivery = Delivery::Delivered { at_ms: T0 + 3 };
    let settled_revision = load("id-S_3").await.revision.0;

    // At once: S_1's draft twice (the second is stale once the first is saved),
    // S_2's draft, S_3's proof of delivery (on its status alone), and a draft of
    // settled S_3 (refused).
    let (saved, delivered, late) = tokio::join!(
        futures_util::future::join_all([store.save_draft(&one), store.save_draft(&one), store.save_draft(&two)]),
        store.save_delivery(&settled),
        store.save_draft(&three),
    );
    let saved: Vec<bool> = saved.into_iter().map(|s| s.expect("save")).collect();
    assert_eq!(saved, [true, false, true]);
    delivered.expect("delivery");
    assert!(!late.expect("save"), "a draft of a settled request");
    assert_eq!(store.group_commits_retried(), 0, "the commit ran as a whole, its saves together");
    assert_eq!(votes(&load("id-S_1").await), ["Lan"]);
    assert_eq!(load("id-S_1").await.revision.0, one.revision.0 + 1, "saved once");
    assert_eq!(votes(&load("id-S_2").await), ["Minh"]);
    let stored = load("id-S_3").await;
    assert_eq!(stored.status.name(), "cancelled");
    assert_eq!(stored.delivery, Delivery::Delivered { at_ms: T0 + 3 });
    assert_eq!(stored.revision.0, settled_revision + 1, "the proof saved once, in a statement it shared with S_1 and S_2");
}

async fn sessions_with_work_are_listed_once(db: &mut TestStore) {
    let store = &db.store;
    assert!(store.sessions_with_work().await.expect("list").is_empty());
    // B: pending and queued; A: pending only; C: queued only; D: settled, nothing queued.
    for (session, key) in [("B", "B_1"), ("B", "B_2"), ("A", "A_1")] {
        assert!(store.insert_interaction(&approval(session, key, T0)).await.expect("insert"));
    }
    store.enqueue(&Command::Cancel { session_id: "B".into() }, T0).await.expect("enqueue");
    store.enqueue(&Command::message("C", "hi", None), T0).await.expect("enqueue");
    let mut done = approval("D", "D_1", T0);
    assert!(store.insert_interaction(&done).await.expect("insert"));
    assert!(done.expire(T0 + 1, true));
    assert!(store.settle(&done, None, &AuditEntry::for_settled(&done, T0 + 1)).await.expect("settle").won());

    assert_eq!(store.sessions_with_work().await.expect("list"), ["A", "B", "C"]);
}

async fn audit_records_edits_and_latency(db: &mut TestStore) {
    let store = &db.store;
    let mut i = approval("S", "S_1", T0);
    assert!(store.insert_interaction(&i).await.expect("insert"));
    let reply = resolve_with_edit(&mut i, T0 + 3_500);
    let entry = AuditEntry::for_settled(&i, T0 + 9_999);
    assert!(store.settle(&i, Some(&approval_command(&i, reply)), &entry).await.expect("settle").won());

    let expected = AuditEntry {
        at_ms: T0 + 3_500,
        session_id: "S".into(),
        approval_key: "S_1".into(),
        interaction_id: "id-S_1".into(),
        actor: Some(thao()),
        outcome: "resolved".into(),
        reply: Some(json!({"decisions": [
            {"type": "approve"},
            {"type": "edit", "edited_action": {"name": "send_email", "args": {"to": "lead@example.com", "body": "done"}}}
        ]})),
        original_args: json!([{"symbol": "VNM", "quantity": 100}, {"to": "ops@example.com", "body": "done"}]),
        edited_args: Some(json!([null, {"to": "lead@example.com", "body": "done"}])),
        latency_ms: 3_500,
        agent: None,
        kind: Some("approval".into()),
        tools: Some(vec!["execute_trade".into(), "send_email".into()]),
        reason: None,
        attempts: 1,
    };
    assert_eq!(entry, expected);
    assert_eq!(store.audit_log("S_1").await.expect("audit"), vec![expected]);
    assert!(store.audit_log("S_2").await.expect("audit").is_empty());
}

async fn audit_records_expiry_by_backend(db: &mut TestStore) {
    let store = &db.store;
    let mut i = question("S", "S_1", T0);
    assert!(store.insert_interaction(&i).await.expect("insert"));
    assert!(i.expire(T0 + 600_000, true));
    assert!(store.settle(&i, None, &AuditEntry::for_settled(&i, T0 + 600_001)).await.expect("settle").won());

    let audit = store.audit_log("S_1").await.expect("audit");
    let [entry] = audit.as_slice() else { panic!("one entry, got {audit:?}") };
    assert_eq!(entry.outcome, "expired_by_backend");
    assert_eq!((entry.actor.as_ref(), entry.reply.as_ref(), entry.edited_args.as_ref()), (None, None, None));
    assert_eq!(entry.latency_ms, 600_000);
    assert_eq!(entry.original_args[0]["questions"][0]["options"][1]["label"], "Cổ tức");
}

async fn corrupt_row_is_skipped(db: &mut TestStore) {
    let store = &db.store;
    assert!(store.insert_interaction(&approval("S", "S_1", T0)).await.expect("insert"));
    let good = approval("S", "S_2", T0 + 1);
    assert!(store.insert_interaction(&good).await.expect("insert"));

    let raw = db.raw().await;
    execute(&raw, "UPDATE interactions SET body = '{\"id\": \"id-S_1\", \"truncated' WHERE id = 'id-S_1'").await;
    raw.close().await;

    assert_eq!(store.pending_interactions().await.expect("list"), vec![good.clone()]);
    assert_eq!(store.pending_in_session("S").await.expect("list"), vec![good]);
    assert_eq!(store.sessions_with_work().await.expect("list"), ["S"], "the row itself still counts");
    let err = store.interaction("id-S_1").await.expect_err("asked for exactly this row");
    assert!(matches!(&err, StoreError::Corrupt { id, .. } if id == "id-S_1"), "{err}");
}

// ---------------------------------------------------------------------------------
// Opening, beyond the suite
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn sqlite_file_is_created_in_wal_mode() {
    let db = TestStore::sqlite().await;
    let raw = db.raw().await;
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode").fetch_one(&raw).await.expect("pragma");
    assert_eq!(mode, "wal", "WAL is stored in the file by the first connection");
    raw.close().await;
    db.finish().await;
}

#[tokio::test]
async fn in_memory_sqlite_keeps_its_data() {
    let store = Store::connect("sqlite::memory:").await.expect("open");
    let i = approval("S", "S_1", T0);
    assert!(store.insert_interaction(&i).await.expect("insert"));
    // Enough queries to need a second connection if the pool would open one.
    let (a, b) = tokio::join!(store.pending_interactions(), store.interaction("id-S_1"));
    assert_eq!(a.expect("list"), vec![i.clone()]);
    assert_eq!(b.expect("load"), Some(i));
}

#[tokio::test]
async fn unsupported_url_names_only_the_scheme() {
    let err = Store::connect("mysql://root:hunter2@db/hitl").await.expect_err("unsupported");
    assert!(matches!(&err, StoreError::UnsupportedUrl { scheme } if scheme == "mysql"));
    assert!(!err.to_string().contains("hunter2"), "{err}");
}

/// A stranger asking twice sees the same code; a code expires; approving pairs the
/// user once (the code is used up), the notice is claimed once, and revoking works.
async fn pairing_codes_are_reused_expire_and_pair_once(db: &mut TestStore) {
    use hitl_bridge::store::PairError;
    let store = &db.store;
    let mallory = Actor::new("telegram", "2002", "Mallory");
    let chat = ChatKey::new("telegram", "2002", None);
    let mut draws = ["AAAAAAAA", "BBBBBBBB", "CCCCCCCC"].into_iter().map(String::from);
    let hour = 3_600_000;
    let first = store.pairing_code(&mallory, &chat, "vi", T0, hour, || draws.next().unwrap()).await.unwrap();
    assert_eq!(first.code, "AAAAAAAA");
    assert_eq!(first.expires_at_ms, T0 + hour);
    let again = store.pairing_code(&mallory, &chat, "vi", T0 + 1_000, hour, || draws.next().unwrap()).await.unwrap();
    assert_eq!(again, first, "asking again while valid shows the same code");
    assert!(matches!(store.approve_pairing("AAAAAAAA", "cli", None, T0 + hour, false).await, Err(PairError::Expired(_))));
    assert!(!store.is_paired(&mallory).await.unwrap());
    // After expiry a new code is drawn; an unknown code changes nothing.
    let fresh = store.pairing_code(&mallory, &chat, "vi", T0 + hour, hour, || draws.next().unwrap()).await.unwrap();
    assert_eq!(fresh.code, "BBBBBBBB");
    assert!(matches!(store.approve_pairing("ZZZZZZZZ", "cli", None, T0 + hour, false).await, Err(PairError::Unknown(_))));
    // Nobody approves their own code, admin or not; it stays usable by someone else.
    let own = store.approve_pairing("BBBBBBBB", "telegram:2002", Some(&mallory), T0 + hour + 1, false).await;
    assert!(matches!(own, Err(PairError::OwnCode(ref code)) if code == "BBBBBBBB"), "{own:?}");
    assert!(!store.is_paired(&mallory).await.unwrap());
    let ops = Actor::new("telegram", "3003", "Ops");
    let paired = store.approve_pairing("BBBBBBBB", "telegram:3003", Some(&ops), T0 + hour + 5, false).await.unwrap();
    assert_eq!((paired.platform.as_str(), paired.user_id.as_str(), paired.user_name.as_str()), ("telegram", "2002", "Mallory"));
    assert_eq!((paired.chat.clone(), paired.locale.as_str(), paired.paired_by.as_str()), (chat.clone(), "vi", "telegram:3003"));
    assert!(store.is_paired(&mallory).await.unwrap());
    assert!(!store.is_paired(&Actor::new("discord", "2002", "Mallory")).await.unwrap(), "pairing is per platform");
    assert!(matches!(store.approve_pairing("BBBBBBBB", "cli", None, T0 + hour + 6, false).await, Err(PairError::Unknown(_))), "a code is used once");
    // Told once, whichever replica asks first.
    let told = store.claim_unnotified_pairings(T0 + hour + 7).await.unwrap();
    assert_eq!(told.len(), 1);
    assert!(store.claim_unnotified_pairings(T0 + hour + 8).await.unwrap().is_empty());
    db.reopen().await;
    let store = &db.store;
    assert_eq!(store.paired_users().await.unwrap().len(), 1, "pairing survives a restart");
    assert!(store.revoke_pairing("telegram", "2002").await.unwrap());
    assert!(!store.revoke_pairing("telegram", "2002").await.unwrap());
    assert!(!store.is_paired(&mallory).await.unwrap());
}

/// A refused attempt to talk is audited: who, where, what (truncated text).
async fn refused_talk_is_audited_with_where_and_what(db: &mut TestStore) {
    let store = &db.store;
    let mallory = Actor::new("discord", "666", "Mallory");
    let chat = ChatKey::new("discord", "800", Some("801"));
    let long = "x".repeat(500);
    let entry = AuditEntry::for_refused_talk(&mallory, &chat, "message", &long, None, T0);
    store.append_audit(&entry).await.unwrap();
    let found = store.refused_attempts(T0).await.unwrap();
    assert_eq!(found, vec![entry]);
    let reply = found[0].reply.as_ref().unwrap();
    assert_eq!(reply["attempted"], "message");
    assert_eq!(reply["chat"], json!({"platform": "discord", "chat_id": "800", "thread_id": "801"}));
    assert_eq!(reply["text"].as_str().unwrap().len(), 200);
    assert_eq!(found[0].outcome, "refused");
    assert_eq!(found[0].actor.as_ref().unwrap().user_id, "666");
    assert!(store.refused_attempts(T0 + 1).await.unwrap().is_empty());
}

/// A stranger's refusal window: the first attempt writes the entry and opens the
/// window; later ones within it count on that entry, from any replica; another chat
/// or person has a window of its own; once it has passed the next attempt opens a new
/// one. Two replicas opening the same window at once leave one entry.
async fn a_strangers_refusal_window_counts_on_one_entry_across_replicas(db: &mut TestStore) {
    use hitl_bridge::store::StrangerWindow::{Counted, Opened};
    const WINDOW: i64 = 600_000;
    let store = &db.store;
    let replica = db.db.store().await;
    let mallory = Actor::new("telegram", "2002", "Mallory");
    let chat = ChatKey::new("telegram", "2002", None);
    let entry_by = |who: &Actor, text: &str, at: i64| AuditEntry::for_refused_talk(who, &chat, "message", text, None, at);
    let entry = |text: &str, at: i64| entry_by(&mallory, text, at);

    assert!(!store.count_refused_attempt(&mallory, "2002", T0, WINDOW).await.unwrap(), "no window yet");
    assert_eq!(store.open_refusal_window(&mallory, "2002", &entry("first", T0), T0, WINDOW).await.unwrap(), Opened);
    for at in [T0 + 1, T0 + 2, T0 + WINDOW - 1] {
        assert!(replica.count_refused_attempt(&mallory, "2002", at, WINDOW).await.unwrap());
    }
    // Minh in the same chat, Mallory in another chat: windows of their own.
    let minh = Actor::new("telegram", "2003", "Minh");
    assert!(!store.count_refused_attempt(&minh, "2002", T0 + 3, WINDOW).await.unwrap());
    assert!(!store.count_refused_attempt(&mallory, "-100123", T0 + 3, WINDOW).await.unwrap());
    let found = store.refused_attempts(0).await.unwrap();
    assert_eq!(found, vec![AuditEntry { attempts: 4, ..entry("first", T0) }]);

    // The window has passed: a new entry, and the old one keeps its count.
    assert!(!store.count_refused_attempt(&mallory, "2002", T0 + WINDOW, WINDOW).await.unwrap());
    // Both replicas saw no window and open one at the same moment: one wins, the
    // other counts on the winner's entry.
    assert!(!replica.count_refused_attempt(&mallory, "2002", T0 + WINDOW, WINDOW).await.unwrap());
    assert_eq!(store.open_refusal_window(&mallory, "2002", &entry("second", T0 + WINDOW), T0 + WINDOW, WINDOW).await.unwrap(), Opened);
    assert_eq!(replica.open_refusal_window(&mallory, "2002", &entry("racer", T0 + WINDOW), T0 + WINDOW, WINDOW).await.unwrap(), Counted);
    let found = store.refused_attempts(0).await.unwrap();
    assert_eq!(found, vec![AuditEntry { attempts: 4, ..entry("first", T0) }, AuditEntry { attempts: 2, ..entry("second", T0 + WINDOW) }]);

    // A window of 0: every attempt opens its own.
    assert_eq!(store.open_refusal_window(&minh, "2002", &entry_by(&minh, "a", T0 + WINDOW + 1), T0 + WINDOW + 1, 0).await.unwrap(), Opened);
    assert!(!store.count_refused_attempt(&minh, "2002", T0 + WINDOW + 1, 0).await.unwrap());
    assert_eq!(store.open_refusal_window(&minh, "2002", &entry_by(&minh, "b", T0 + WINDOW + 1), T0 + WINDOW + 1, 0).await.unwrap(), Opened);
    assert_eq!(store.refused_attempts(0).await.unwrap().len(), 4);
    replica.close().await;
}

// ---------------------------------------------------------------------------------
// Decision policies: drafts saved compare-and-swap, remembered rules
// ---------------------------------------------------------------------------------

/// A policy named `trades`: the listed Telegram users decide, `quorum` of them.
fn policy(quorum: u32, remember: Vec<RememberScope>) -> Policy {
    Policy {
        name: "trades".into(),
        approvers: ["10", "11", "12"].iter().map(|id| ("telegram".to_owned(), (*id).to_owned())).collect(),
        approver_roles: vec![],
        quorum,
        remember,
        remember_args: RememberArgs::Same,
        escalation: vec![],
        fallback: None,
    }
}

fn voter(id: &str, name: &str) -> Actor {
    Actor::new("telegram", id, name)
}

/// One trade to approve, under `policy`.
fn trade_under(session: &str, key: &str, policy: Policy) -> Interaction {
    let request = RequestBuilder::start(key, vec![action("execute_trade", json!({"symbol": "VNM"}))], vec![], Some(60))
        .finish(TimeoutDefaults::default())
        .expect("valid request");
    Interaction::new(format!("id-{key}"), session.into(), request, Some(thao()), T0).with_policy(Some(policy))
}

fn votes(i: &Interaction) -> Vec<String> {
    let Draft::Decisions(draft) = &i.draft else { panic!("an approval has decisions") };
    draft.votes.iter().map(|v| v.voter.name.clone()).collect()
}

/// Two replicas read the same request under a quorum of 3; Lan votes on one, Minh on
/// the other. The first save wins; the second changes nothing (it would have erased
/// Lan's vote) until Minh's vote is cast again on a fresh copy.
async fn a_draft_saved_from_a_stale_copy_changes_nothing(db: &mut TestStore) {
    let replica = db.db.store().await;
    let created = trade_under("S", "S_1", policy(3, vec![]));
    assert!(db.store.insert_interaction(&created).await.expect("insert"));
    let approve = || UserAction::DecideAll { decision: DecisionType::Approve };
    let none = &AccessPolicy::default();

    let mut here = db.store.interaction("id-S_1").await.expect("load").expect("stored");
    let mut there = replica.interaction("id-S_1").await.expect("load").expect("stored");
    assert_eq!(here.apply(&voter("10", "Lan"), approve(), none, T0 + 1), Ok(Applied::Updated));
    assert_eq!(there.apply(&voter("11", "Minh"), approve(), none, T0 + 2), Ok(Applied::Updated));
    assert!(db.store.save_draft(&here).await.expect("save draft"));
    assert!(!replica.save_draft(&there).await.expect("save draft"), "read before the first save: refused");
    let stored = db.store.interaction("id-S_1").await.expect("load").expect("stored");
    assert_eq!(stored, here);
    assert_eq!(votes(&stored), ["Lan"]);
    // The same copy saved twice is stale the second time too.
    assert!(!db.store.save_draft(&here).await.expect("save draft"));

    // Read again, the vote counts.
    let mut fresh = replica.interaction("id-S_1").await.expect("load").expect("stored");
    assert_eq!(fresh.apply(&voter("11", "Minh"), approve(), none, T0 + 3), Ok(Applied::Updated));
    assert!(replica.save_draft(&fresh).await.expect("save draft"));
    assert_eq!(votes(&db.store.interaction("id-S_1").await.expect("load").expect("stored")), ["Lan", "Minh"]);

    // A person's decision made on a copy read before the last draft does not settle:
    // Ha's reject (which ends it at once) would erase Minh's vote from the record.
    let mut late = here.clone();
    let reject = UserAction::DecideAll { decision: DecisionType::Reject };
    let Ok(Applied::Resolved(_)) = late.apply(&voter("12", "Ha"), reject, none, T0 + 4) else { panic!("a reject ends it") };
    assert!(!db.store.settle_decision(&late, None, &AuditEntry::for_settled(&late, T0 + 4), None).await.expect("settle").won(), "read before Minh's vote");
    assert!(db.store.interaction("id-S_1").await.expect("load").expect("stored").status.is_pending());

    // Timers and the backend settle first-wins on the status alone: a cancel made on a
    // copy read before the last draft still settles, and a draft saved after it is
    // refused.
    let mut stale = here.clone();
    assert!(stale.cancel(T0 + 4, "turn ended"));
    assert!(db.store.settle(&stale, None, &AuditEntry::for_settled(&stale, T0 + 4)).await.expect("settle").won());
    assert!(!replica.save_draft(&fresh).await.expect("save draft"));
    assert_eq!(db.store.interaction("id-S_1").await.expect("load").expect("stored").status.name(), "cancelled");
    replica.close().await;
}

fn rule(id: &str, scope: RememberScope, session: Option<&str>, backend: &str, set_at_ms: i64) -> RememberedRule {
    RememberedRule {
        id: id.into(),
        scope,
        tool: "execute_trade".into(),
        args: Some(json!({"symbol": "VNM"})),
        session_id: session.map(str::to_owned),
        backend: backend.into(),
        set_by: thao(),
        set_at_ms,
        policy: "trades".into(),
    }
}

async fn rules_are_listed_by_session_and_backend_and_revoked_once(db: &mut TestStore) {
    let store = &db.store;
    let in_s = rule("r-session-S", RememberScope::Session, Some("S"), "stream", T0 + 2);
    let always = RememberedRule { args: None, ..rule("r-always", RememberScope::Always, None, "stream", T0 + 1) };
    let in_t = rule("r-session-T", RememberScope::Session, Some("T"), "stream", T0 + 3);
    let kimi = rule("r-kimi", RememberScope::Always, None, "kimi", T0 + 4);
    for r in [&in_s, &always, &in_t, &kimi] {
        store.save_rule(r).await.expect("save rule");
    }
    // The same id again changes nothing.
    store.save_rule(&RememberedRule { tool: "drop_table".into(), ..in_s.clone() }).await.expect("save rule");

    assert_eq!(store.rules_for("stream", "S").await.expect("rules"), vec![always.clone(), in_s.clone()]);
    assert_eq!(store.rules_for("stream", "T").await.expect("rules"), vec![always.clone(), in_t.clone()]);
    assert_eq!(store.rules_for("stream", "").await.expect("rules"), vec![always.clone()], "no session: the always rules");
    assert_eq!(store.rules_for("kimi", "S").await.expect("rules"), vec![kimi.clone()]);
    assert_eq!(store.active_rules().await.expect("rules"), vec![always.clone(), in_s.clone(), in_t.clone(), kimi.clone()]);

    // Revoked once, audited once, and gone from every list, also after a restart.
    assert_eq!(store.revoke_rule("r-always", "alice", T0 + 10).await.expect("revoke"), Some(always.clone()));
    assert_eq!(store.revoke_rule("r-always", "alice", T0 + 11).await.expect("revoke"), None, "already revoked");
    assert_eq!(store.revoke_rule("nope", "alice", T0 + 12).await.expect("revoke"), None, "unknown");
    let lan = voter("10", "Lan");
    assert_eq!(store.revoke_rule_as("r-session-T", &lan, T0 + 13).await.expect("revoke"), Some(in_t.clone()));
    db.reopen().await;
    let store = &db.store;
    assert_eq!(store.rules_for("stream", "S").await.expect("rules"), vec![in_s.clone()]);
    assert_eq!(store.active_rules().await.expect("rules"), vec![in_s.clone(), kimi.clone()]);
    let audit: Vec<AuditEntry> = store.audit_page(T0, None, 100).await.expect("audit").rows.into_iter().map(|r| r.entry).collect();
    assert_eq!(
        audit,
        vec![AuditEntry::for_rule_revoked(&always, &Actor::new("cli", "alice", "alice"), T0 + 10), AuditEntry::for_rule_revoked(&in_t, &lan, T0 + 13),]
    );
    assert_eq!(
        audit[0].reason.as_deref(),
        Some("revoked always rule r-always for execute_trade on stream (policy trades), set by Thảo at 2023-11-14T22:13:20.001Z")
    );
    assert_eq!((audit[1].session_id.as_str(), audit[1].original_args.clone()), ("T", json!([{"symbol": "VNM"}])));
}

async fn settle_decision_stores_the_rule_only_for_the_winner(db: &mut TestStore) {
    let store = &db.store;
    let none = &AccessPolicy::default();
    let remember = || UserAction::Remember { scope: RememberScope::Always };

    // A deadline settles first: the approval that would have set a rule loses, and
    // no rule exists.
    let created = trade_under("S", "S_1", policy(1, vec![RememberScope::Always]));
    assert!(store.insert_interaction(&created).await.expect("insert"));
    let mut expired = created.clone();
    assert!(expired.expire(T0 + 5, false));
    assert!(store.settle(&expired, None, &AuditEntry::for_settled(&expired, T0 + 5)).await.expect("settle").won());
    let mut late = created.clone();
    let Ok(Applied::Resolved(reply)) = late.apply(&voter("10", "Lan"), remember(), none, T0 + 6) else { panic!("remembered approval resolves") };
    let rule = late.rule_to_save("stream").expect("a rule to save");
    let command = approval_command(&late, reply);
    assert!(!store.settle_decision(&late, Some(&command), &AuditEntry::for_settled(&late, T0 + 6), Some(&rule)).await.expect("settle").won());
    assert!(store.active_rules().await.expect("rules").is_empty());
    assert!(store.outbox_for_session("S").await.expect("outbox").is_empty());

    // Won: settled, command queued, audited and the rule stored, together.
    let mut won = trade_under("S", "S_2", policy(1, vec![RememberScope::Always]));
    assert!(store.insert_interaction(&won).await.expect("insert"));
    let Ok(Applied::Resolved(reply)) = won.apply(&voter("10", "Lan"), remember(), none, T0 + 7) else { panic!("remembered approval resolves") };
    let rule = won.rule_to_save("stream").expect("a rule to save");
    assert_eq!((rule.id.as_str(), rule.scope, rule.session_id.as_deref(), rule.set_at_ms), ("id-S_2", RememberScope::Always, None, T0 + 7));
    let command = approval_command(&won, reply);
    assert!(store.settle_decision(&won, Some(&command), &AuditEntry::for_settled(&won, T0 + 7), Some(&rule)).await.expect("settle").won());
    assert_eq!(store.rules_for("stream", "any session").await.expect("rules"), vec![rule.clone()]);
    assert_eq!(commands(&store.outbox_for_session("S").await.expect("outbox")), vec![command]);
    assert_eq!(store.audit_log("S_2").await.expect("audit").len(), 1);
    assert_eq!(store.interaction("id-S_2").await.expect("load"), Some(won));
}

/// The platforms' inbox: an update is stored once (a redelivery, even after it was
/// handled, is no new row), a live claim is not taken over, a lapsed one is (oldest
/// first), a handled update is never claimed again, and handled rows are pruned. Each
/// platform's updates are its own: the same id on another platform is another update.
async fn the_update_inbox_stores_once_claims_and_forgets(db: &mut TestStore) {
    use hitl_bridge::store::{InboxUpdate, ShowClaim};
    let store = &db.store;
    const TG: &str = "telegram";
    let update = |id: i64| InboxUpdate { update_id: id.to_string(), seq: id, lane: "7".into(), body: format!("{{\"update_id\":{id}}}") };
    let ids = |ids: &[i64]| ids.iter().map(i64::to_string).collect::<Vec<String>>();
    let a = ShowClaim { owner: "a".into(), until_ms: T0 + 60_000 };
    assert_eq!(store.platform_inbox(TG).store(&[update(2), update(1)], &a, T0).await.unwrap(), ids(&[2, 1]));
    assert_eq!(store.platform_inbox(TG).store(&[update(1), update(3)], &a, T0).await.unwrap(), ids(&[3]), "1 is already stored");
    assert_eq!(store.platform_inbox("slack").store(&[update(1)], &a, T0).await.unwrap(), ids(&[1]), "another platform's update 1");
    assert_eq!((store.platform_inbox(TG).waiting().await.unwrap(), store.platform_inbox("slack").waiting().await.unwrap()), (3, 1));
    let b = ShowClaim { owner: "b".into(), until_ms: T0 + 200_000 };
    assert!(store.platform_inbox(TG).claim_stranded(&b, T0 + 1_000).await.unwrap().is_empty(), "a's claims are live");
    store.platform_inbox(TG).finish("2", T0 + 2_000).await.unwrap();
    // a died: its claims lapse and b takes over what was not handled, oldest first.
    let taken = store.platform_inbox(TG).claim_stranded(&b, T0 + 61_000).await.unwrap();
    assert_eq!(taken.iter().map(|u| u.update_id.clone()).collect::<Vec<_>>(), ids(&[1, 3]));
    assert_eq!(taken[0], update(1));
    store.platform_inbox(TG).finish("1", T0 + 62_000).await.unwrap();
    store.platform_inbox(TG).finish("3", T0 + 62_000).await.unwrap();
    assert_eq!(store.platform_inbox(TG).waiting().await.unwrap(), 0);
    assert_eq!(store.platform_inbox("slack").waiting().await.unwrap(), 1, "finishing Telegram's 1 left Slack's alone");
    assert!(store.platform_inbox(TG).store(&[update(2)], &a, T0 + 63_000).await.unwrap().is_empty(), "handled, still recognised");
    assert!(store.platform_inbox(TG).claim_stranded(&b, i64::MAX).await.unwrap().is_empty(), "handled rows are never claimed");
    assert_eq!(store.platform_inbox(TG).prune(T0 + 10_000).await.unwrap(), 1, "only 2 was handled before then");
    assert_eq!(store.platform_inbox(TG).store(&[update(2)], &a, T0 + 70_000).await.unwrap(), ids(&[2]), "forgotten once pruned");
    // A batch longer than one statement's rows (100), overlapping what is stored: the
    // new ids come back in the order given, each once.
    let batch: Vec<InboxUpdate> = (1..=250).rev().map(update).collect();
    let new = store.platform_inbox(TG).store(&batch, &a, T0 + 71_000).await.unwrap();
    assert_eq!(new, ids(&(4..=250).rev().collect::<Vec<i64>>()), "1 and 3 are handled, 2 was stored just before");
    assert_eq!(store.platform_inbox(TG).waiting().await.unwrap(), 248, "2 and the 247 new");
}

/// Webhook posts store their updates one post at a time, and those queued together
/// share `INSERT`s: each post must still learn which of its own updates were new. Sixty
/// posts at once: forty Teams updates; ten of them posted again while the first post
/// is queued (each stored once, by one of its two posts); ten Mattermost updates with
/// the same ids (another platform's, all new); one post of three, one of them already
/// among the forty; and one update stored before (never new).
async fn updates_posted_at_once_share_statements_and_each_post_learns_its_own(db: &mut TestStore) {
    use hitl_bridge::store::{InboxUpdate, ShowClaim};
    let store = &db.store;
    let update = |id: &str| InboxUpdate { update_id: id.to_owned(), seq: 1, lane: "19:ops".into(), body: format!("{{\"id\":\"{id}\"}}") };
    let claim = ShowClaim { owner: "a".into(), until_ms: T0 + 60_000 };
    assert_eq!(store.platform_inbox("teams").store(&[update("u39")], &claim, T0).await.unwrap(), vec!["u39"]);
    let mut posts: Vec<(&str, Vec<InboxUpdate>)> = (0..40).map(|k| ("teams", vec![update(&format!("u{k}"))])).collect();
    posts.extend((0..10).map(|k| ("teams", vec![update(&format!("u{k}"))])));
    posts.extend((0..10).map(|k| ("mattermost", vec![update(&format!("u{k}"))])));
    posts.push(("teams", vec![update("u50"), update("u0"), update("u51")]));
    let stored = futures_util::future::join_all(posts.iter().map(|(platform, updates)| {
        let inbox = store.platform_inbox(platform);
        let claim = claim.clone();
        async move { inbox.store(updates, &claim, T0 + 1).await }
    }))
    .await;
    let new: Vec<Vec<String>> = stored.into_iter().map(|r| r.expect("stored")).collect();
    for k in 0..10 {
        let (first, again) = (&new[k], &new[40 + k]);
        assert_eq!(first.len() + again.len(), 1, "u{k} is new to exactly one of its two posts: {first:?} {again:?}");
        assert_eq!(new[50 + k], vec![format!("u{k}")], "Mattermost's u{k} is its own");
    }
    for (k, new) in new.iter().enumerate().take(39).skip(10) {
        assert_eq!(new, &vec![format!("u{k}")], "u{k} was posted once");
    }
    assert!(new[39].is_empty(), "u39 was stored before");
    assert_eq!(new[60], vec!["u50".to_owned(), "u51".to_owned()], "the post of three: u0 came with the first posts");
    assert_eq!(store.platform_inbox("teams").waiting().await.unwrap(), 42, "u0..u39, u50, u51: each once");
    assert_eq!(store.platform_inbox("mattermost").waiting().await.unwrap(), 10);
}

/// Upgrading a store whose `telegram_inbox` holds updates in every state: the
/// migration to `platform_inbox` keeps each one as it was, so a waiting update is
/// handled once after the upgrade, a claimed one stays claimed, and a handled one is
/// still recognised and never handled again.
async fn the_inbox_migration_keeps_updates_in_flight(db: &mut TestStore) {
    use hitl_bridge::store::{InboxUpdate, ShowClaim};
    // Back to the schema before the migration, with rows as an older bridge left them.
    let raw = db.raw().await;
    for statement in [
        "DROP TABLE platform_inbox",
        "CREATE TABLE telegram_inbox (update_id BIGINT PRIMARY KEY NOT NULL, chat_id BIGINT NOT NULL, body TEXT NOT NULL,
             received_at_ms BIGINT NOT NULL, claimed_by TEXT NOT NULL, claimed_until_ms BIGINT NOT NULL, handled_at_ms BIGINT)",
        "INSERT INTO telegram_inbox VALUES (901, -100, '{\"update_id\":901}', 1000, 'old', 0, NULL)",
        "INSERT INTO telegram_inbox VALUES (902, -100, '{\"update_id\":902}', 1000, 'old', 9000000000000, NULL)",
        "INSERT INTO telegram_inbox VALUES (900, 7, '{\"update_id\":900}', 1000, 'old', 0, 2000)",
        "DELETE FROM _sqlx_migrations WHERE version = 23",
    ] {
        sqlx::query(statement).execute(&raw).await.unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
    raw.close().await;
    db.reopen().await;
    let store = &db.store;
    assert_eq!(store.platform_inbox("telegram").waiting().await.unwrap(), 2, "901 and 902 wait");
    let claim = ShowClaim { owner: "new".into(), until_ms: i64::MAX };
    let stranded = store.platform_inbox("telegram").claim_stranded(&claim, 5_000).await.unwrap();
    assert_eq!(
        stranded,
        vec![InboxUpdate { update_id: "901".into(), seq: 901, lane: "-100".into(), body: "{\"update_id\":901}".into() }],
        "902's claim is live"
    );
    let again = |id: i64| InboxUpdate { update_id: id.to_string(), seq: id, lane: "-100".into(), body: "{}".into() };
    let new = store.platform_inbox("telegram").store(&[again(900), again(901), again(902), again(903)], &claim, 5_000).await.unwrap();
    assert_eq!(new, vec!["903".to_owned()], "handled, waiting and claimed updates are all still known");
    let raw = db.raw().await;
    let old: Option<(i64,)> = sqlx::query_as("SELECT COUNT(*) FROM telegram_inbox").fetch_one(&raw).await.ok();
    assert_eq!(old, None, "the old table is gone");
    raw.close().await;
}

/// The rescan's timers come from their columns: a new request's deadline and next
/// escalation step, moved on when a step is recorded; a row written before the
/// columns existed is read from its body once, and its columns filled in. A narrow
/// rescan reads only what was created since its look back.
async fn pending_timers_are_read_from_their_columns(db: &mut TestStore) {
    use hitl_bridge::interaction::policy::{EscalationStep, Mention, StepAction};
    use hitl_bridge::store::{PendingTimers, ShowClaim};
    let store = &db.store;
    let mut escalating = policy(1, vec![]);
    let remind = |after_secs| EscalationStep { after_secs, action: StepAction::Remind { mention: Mention::Approvers } };
    escalating.escalation = vec![remind(10), remind(20)];
    let created = trade_under("S", "S_t", escalating);
    assert!(store.insert_interaction(&created).await.unwrap());
    let plain = trade_under("S", "S_p", policy(1, vec![]));
    assert!(store.insert_interaction(&plain).await.unwrap());
    let timers = |list: Vec<PendingTimers>, id: &str| list.into_iter().find(|t| t.id == id).expect("listed");
    let first = timers(store.pending_timers(None).await.unwrap(), "id-S_t");
    assert_eq!(first, PendingTimers::of(&created));
    assert_eq!(first.escalation_ms, Some(T0 + 10_000));
    assert_eq!(timers(store.pending_timers(None).await.unwrap(), "id-S_p").escalation_ms, None);
    // A rescan's look back: only what was created since.
    let ids = |list: Vec<PendingTimers>| list.into_iter().map(|t| t.id).collect::<Vec<_>>();
    assert_eq!(ids(store.pending_timers(Some(T0)).await.unwrap()), ["id-S_p", "id-S_t"], "created together: by id");
    assert_eq!(ids(store.pending_timers(Some(T0 + 1)).await.unwrap()), Vec::<String>::new());
    let read = store.interaction("id-S_t").await.unwrap().unwrap();
    let mut escalated = read.clone();
    escalated.mark_escalated(0);
    let claim = ShowClaim { owner: "a".into(), until_ms: T0 + 60_000 };
    assert!(store.record_escalation(&read, &escalated, &[], &claim, &[]).await.unwrap());
    assert_eq!(timers(store.pending_timers(None).await.unwrap(), "id-S_t").escalation_ms, Some(T0 + 20_000), "the next step");
    // As an older bridge left it: no timer columns.
    let raw = db.raw().await;
    sqlx::query("UPDATE interactions SET escalation_ms = NULL, timers_known = 0").execute(&raw).await.unwrap();
    assert_eq!(timers(store.pending_timers(None).await.unwrap(), "id-S_t").escalation_ms, Some(T0 + 20_000), "read from the body");
    let filled: (Option<i64>, i64) = sqlx::query_as("SELECT escalation_ms, timers_known FROM interactions WHERE id = 'id-S_t'").fetch_one(&raw).await.unwrap();
    assert_eq!(filled, (Some(T0 + 20_000), 1), "and written back");
    raw.close().await;
}

/// What the web inbox reads of each pending request instead of its body (its access
/// facts, id and times) follows every write: a new request, a vote, an escalation
/// step; a settled one is no longer listed. A row whose facts are not current (written
/// before the columns existed, or since by an older replica that wrote only the body)
/// is read from its body, the same as the body says, and its columns filled in.
async fn pending_access_facts_follow_every_write(db: &mut TestStore) {
    use hitl_bridge::interaction::AccessFacts;
    use hitl_bridge::interaction::policy::{EscalationStep, Mention, StepAction};
    use hitl_bridge::store::{PendingAccess, ShowClaim};
    let store = &db.store;
    let listed = |list: Vec<PendingAccess>| list.into_iter().map(|p| (p.id, p.created_at_ms, p.deadline_ms, (*p.facts).clone())).collect::<Vec<_>>();
    let expected = |list: &[&Interaction]| list.iter().map(|i| (i.id.clone(), i.created_at_ms, i.deadline_ms, i.access_facts())).collect::<Vec<_>>();
    let mut escalating = policy(3, vec![]);
    escalating.escalation = vec![EscalationStep { after_secs: 10, action: StepAction::Remind { mention: Mention::Approvers } }];
    let voted_on = trade_under("S", "S_v", escalating);
    let asked = approval("S", "S_c", T0 + 1);
    let settled = question("S", "S_q", T0 + 2);
    for i in [&voted_on, &asked, &settled] {
        assert!(store.insert_interaction(i).await.expect("insert"));
    }
    let all = store.pending_access_each(Some).await.expect("list");
    assert_eq!(listed(all.clone()), expected(&[&voted_on, &asked, &settled]), "oldest first, as written");
    // The same facts are one value, shared by the rows that have them.
    assert_eq!(all[0].facts.voters, Vec::<(String, String)>::new());
    assert_eq!(all[1].facts.requester, Some(thao()));
    assert!(!all[2].facts.approval, "a question");
    assert_eq!(all[0].facts.policy_approvers.len(), 3);

    // A vote: the voter is in the facts at once.
    let mut voting = store.interaction("id-S_v").await.expect("load").expect("stored");
    let approve = || UserAction::DecideAll { decision: DecisionType::Approve };
    assert_eq!(voting.apply(&voter("10", "Lan"), approve(), &AccessPolicy::default(), T0 + 3), Ok(Applied::Updated));
    assert!(store.save_draft(&voting).await.expect("save draft"));
    // An escalation step keeps them (and is written with them).
    let read = store.interaction("id-S_v").await.expect("load").expect("stored");
    let mut escalated = read.clone();
    escalated.mark_escalated(0);
    assert!(store.record_escalation(&read, &escalated, &[], &ShowClaim { owner: "a".into(), until_ms: T0 + 60_000 }, &[]).await.expect("escalate"));
    // Settled: no longer listed.
    let mut done = settled.clone();
    assert!(done.cancel(T0 + 4, "turn ended"));
    assert!(store.settle(&done, None, &AuditEntry::for_settled(&done, T0 + 4)).await.expect("settle").won());
    let now = listed(store.pending_access_each(Some).await.expect("list"));
    assert_eq!(now, expected(&[&escalated, &asked]));
    assert_eq!(now[0].3.voters, vec![("telegram".to_owned(), "10".to_owned())]);
    assert!(now[0].3.has_voted(&voter("10", "Lan")) && !now[0].3.has_voted(&voter("11", "Minh")));
    // `keep` decides what is kept.
    let chat_turns = store.pending_access_each(|p| (p.facts.agent() == "chat").then_some(p.id)).await.expect("list");
    assert_eq!(chat_turns, ["id-S_v", "id-S_c"]);

    // Every write above wrote the facts with the body: none is left to read from a body.
    let raw = db.raw().await;
    let stale: Vec<(String,)> =
        sqlx::query_as("SELECT id FROM interactions WHERE access_revision <> revision OR access IS NULL").fetch_all(&raw).await.unwrap();
    assert_eq!(stale, Vec::<(String,)>::new(), "written with every body, the settled one's too");

    // As a bridge before the columns left the rows: read from the body, the same.
    sqlx::query("UPDATE interactions SET access = NULL, access_revision = -1").execute(&raw).await.unwrap();
    assert_eq!(listed(store.pending_access_each(Some).await.expect("list")), now, "a migrated row reads the same");
    let filled: Vec<(String, Option<String>, i64, i64)> =
        sqlx::query_as("SELECT id, access, access_revision, revision FROM interactions WHERE status = 'pending' ORDER BY created_at_ms")
            .fetch_all(&raw)
            .await
            .unwrap();
    for ((id, access, access_revision, revision), (_, _, _, facts)) in filled.iter().zip(&now) {
        let access: AccessFacts = serde_json::from_str(access.as_deref().expect("filled in")).unwrap();
        assert_eq!((&access, access_revision), (facts, revision), "{id}: written back at its revision");
    }

    // An older replica records Minh's vote in the body alone: the stale column is not
    // trusted, the body is.
    let mut older = store.interaction("id-S_v").await.expect("load").expect("stored");
    assert_eq!(older.apply(&voter("11", "Minh"), approve(), &AccessPolicy::default(), T0 + 5), Ok(Applied::Updated));
    sqlx::query("UPDATE interactions SET body = $1, revision = revision + 1 WHERE id = 'id-S_v'")
        .bind(serde_json::to_string(&older).unwrap())
        .execute(&raw)
        .await
        .unwrap();
    let after = store.pending_access_each(|p| (p.id == "id-S_v").then(|| p.facts.voters.clone())).await.expect("list");
    assert_eq!(after, [vec![("telegram".to_owned(), "10".to_owned()), ("telegram".to_owned(), "11".to_owned())]]);
    raw.close().await;

    // The page's rows, read whole in one query: in the order asked, the unknown left out.
    let ids = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let page = store.interactions_by_ids(&ids(&["id-S_c", "id-gone", "id-S_v", "id-S_q"])).await.expect("load");
    assert_eq!(page, [asked.clone(), older, done]);
    assert_eq!(store.interactions_by_ids(&[]).await.expect("load"), Vec::<Interaction>::new());

    // Where they are shown: the page's rows alone, and every chat at once.
    let group = ChatKey::new("telegram", "-100", None);
    let topic = ChatKey::new("telegram", "-100", Some("7"));
    let claim = ShowClaim { owner: "a".into(), until_ms: T0 + 60_000 };
    let shown = trade_under("S", "S_s", policy(1, vec![]));
    assert!(store.insert_interaction_to_show(&shown, &[topic.clone(), group.clone()], &claim, T0).await.expect("insert"));
    let other = approval("S", "S_o", T0 + 6);
    assert!(store.insert_interaction_to_show(&other, std::slice::from_ref(&topic), &claim, T0).await.expect("insert"));
    let all = store.pending_targets().await.expect("targets");
    assert_eq!(all.get("id-S_s"), Some(&vec![group.clone(), topic.clone()]));
    let one = store.pending_targets_of(&ids(&["id-S_s", "id-S_q"])).await.expect("targets");
    assert_eq!(one.into_iter().collect::<Vec<_>>(), [("id-S_s".to_owned(), vec![group.clone(), topic.clone()])], "settled: none");
    assert!(store.pending_targets_of(&[]).await.expect("targets").is_empty());
    assert_eq!(store.pending_places().await.expect("places"), [group, topic]);
}

/// A pushed request is stored with its interaction and shows; the same agent's key
/// again returns the stored row and changes nothing; a key whose interaction exists
/// already (from the chat) is refused, and leaves no request row behind.
async fn a_push_is_stored_whole_once_or_not_at_all(db: &mut TestStore) {
    use hitl_bridge::store::{ApiRequest, ShowClaim};
    let store = &db.store;
    let claim = ShowClaim { owner: "test".into(), until_ms: T0 + 60_000 };
    let request = |i: &Interaction, hash: &str| ApiRequest {
        approval_key: i.approval_key().to_owned(),
        interaction_id: i.id.clone(),
        session_id: i.session_id.clone(),
        client_session: None,
        agent: "ci".into(),
        body_hash: hash.into(),
        targets: vec![ChatKey::new("telegram", "7", None)],
        callback_url: Some("http://127.0.0.1:9/cb".into()),
        created_at_ms: T0,
    };
    let pushed = approval("api:p", "p_1", T0);
    assert_eq!(store.create_api_request(&request(&pushed, "aa"), &pushed, &claim).await.expect("push"), None);
    assert_eq!(store.interaction(&pushed.id).await.expect("load"), Some(pushed.clone()));
    let showing = store.showing(&pushed.session_id, &pushed.id).await.expect("showing");
    assert_eq!(showing.targets, [ChatKey::new("telegram", "7", None)], "where it may yet be shown, in the same read");
    assert!(showing.bound.is_empty() && showing.messages.is_empty(), "{showing:?}");
    let mut again = approval("api:p", "p_1", T0 + 5);
    again.id = "another-id".into();
    let existing = store.create_api_request(&request(&again, "bb"), &again, &claim).await.expect("push again");
    assert_eq!(existing.map(|r| r.body_hash), Some("aa".to_owned()), "the first push's row");
    assert_eq!(store.interaction("another-id").await.expect("load"), None);

    let chat_turn = approval("api:q", "q_1", T0);
    assert!(store.insert_interaction(&chat_turn).await.expect("insert"));
    let mut clash = approval("api:q", "q_1", T0);
    clash.id = "clash-id".into();
    let refused = store.create_api_request(&request(&clash, "cc"), &clash, &claim).await;
    assert!(matches!(refused, Err(StoreError::WrongState { .. })), "{refused:?}");
    assert_eq!(store.api_request("ci", "q_1").await.expect("load"), None, "nothing of the refused push is stored");
}

/// Pushed requests are listed a page at a time in push order, ties broken by key: a
/// page mark inside a run of equal push times neither repeats nor skips a row, and
/// another agent's requests are never listed.
async fn pending_pushes_are_paged_by_push_time_then_key(db: &mut TestStore) {
    use hitl_bridge::store::{ApiRequest, PageMark, ShowClaim};
    let store = &db.store;
    let claim = ShowClaim { owner: "test".into(), until_ms: T0 + 60_000 };
    let push = async |agent: &str, key: &str, at_ms: i64| {
        let mut pushed = approval(&format!("api:{key}"), key, at_ms);
        pushed.id = format!("{agent}-{key}");
        let row = ApiRequest {
            approval_key: key.to_owned(),
            interaction_id: pushed.id.clone(),
            session_id: pushed.session_id.clone(),
            client_session: None,
            agent: agent.to_owned(),
            body_hash: key.to_owned(),
            targets: vec![ChatKey::new("telegram", "7", None)],
            callback_url: None,
            created_at_ms: at_ms,
        };
        assert_eq!(store.create_api_request(&row, &pushed, &claim).await.expect("push"), None);
    };
    for (key, at_ms) in [("c", T0), ("a", T0), ("e", T0 + 1), ("b", T0), ("f", T0 + 2), ("d", T0 + 1), ("g", T0 - 1)] {
        push("ci", key, at_ms).await;
    }
    push("other", "a0", T0).await;
    let mut pages = Vec::new();
    let mut after: Option<PageMark> = None;
    loop {
        let page = store.pending_api_requests_page("ci", after.as_ref(), 2).await.expect("page");
        let Some((last, _)) = page.last() else { break };
        after = Some(PageMark { created_at_ms: last.created_at_ms, approval_key: last.approval_key.clone() });
        pages.push(page.iter().map(|(request, _)| request.approval_key.clone()).collect::<Vec<_>>().join(""));
    }
    assert_eq!(pages, ["ga", "bc", "de", "f"]);
}

// ---------------------------------------------------------------------------------
// The web inbox
// ---------------------------------------------------------------------------------

/// A link is good until its expiry, once; looking at it does not spend it.
async fn web_sign_in_links_are_spent_once_and_expire(db: &mut TestStore) {
    let store = &db.store;
    store.create_sign_in_link("h1", &thao(), T0, T0 + 600_000).await.unwrap();
    store.create_sign_in_link("h2", &thao(), T0, T0 + 600_000).await.unwrap();
    assert_eq!(store.sign_in_link_person("h1", T0 + 1).await.unwrap(), Some(thao()));
    assert_eq!(store.sign_in_link_person("h1", T0 + 2).await.unwrap(), Some(thao()), "looking does not spend");
    assert_eq!(store.spend_sign_in_link("h1", T0 + 599_999).await.unwrap(), Some(thao()));
    assert_eq!(store.spend_sign_in_link("h1", T0 + 599_999).await.unwrap(), None, "once");
    assert_eq!(store.sign_in_link_person("h1", T0 + 599_999).await.unwrap(), None);
    assert_eq!(store.spend_sign_in_link("h2", T0 + 600_000).await.unwrap(), None, "expired at its time");
    assert_eq!(store.spend_sign_in_link("nope", T0).await.unwrap(), None);
    // Two presses racing: one sign-in.
    store.create_sign_in_link("h3", &thao(), T0, T0 + 600_000).await.unwrap();
    let (a, b) = tokio::join!(store.spend_sign_in_link("h3", T0 + 5), store.spend_sign_in_link("h3", T0 + 5));
    assert_eq!([a.unwrap().is_some(), b.unwrap().is_some()].iter().filter(|won| **won).count(), 1);
}

/// A session is found while used within the idle time; it ends when idle or signed out.
async fn web_sessions_end_when_idle_or_signed_out(db: &mut TestStore) {
    let store = &db.store;
    let idle = 60_000;
    store.create_web_session("s1", &thao(), "csrf-1", T0).await.unwrap();
    store.create_web_session("s2", &thao(), "csrf-2", T0).await.unwrap();
    let found = store.web_session("s1", T0 + 50_000, idle).await.unwrap().expect("in use");
    assert_eq!((found.actor, found.csrf.as_str(), found.last_seen_ms), (thao(), "csrf-1", T0));
    // Used at T0 + 50 s (marked then); still good 55 s later.
    assert!(store.web_session("s1", T0 + 105_000, idle).await.unwrap().is_some());
    db.reopen().await;
    let store = &db.store;
    assert!(store.web_session("s1", T0 + 150_000, idle).await.unwrap().is_some(), "kept across a restart");
    assert!(store.web_session("s2", T0 + 150_000, idle).await.unwrap().is_none(), "idle since T0");
    store.end_web_session("s1").await.unwrap();
    assert!(store.web_session("s1", T0 + 150_001, idle).await.unwrap().is_none(), "signed out");
}

/// Newest first, filtered by agent, outcome and person, paged by row id; the change
/// mark moves with each entry and each pending request.
async fn web_audit_reads_newest_first_with_filters(db: &mut TestStore) {
    let store = &db.store;
    let mark = store.web_change_mark().await.unwrap();
    let entry = |n: i64, agent: Option<&str>, outcome: &str, who: Option<Actor>| AuditEntry {
        at_ms: T0 + n,
        session_id: "S".into(),
        approval_key: format!("k{n}"),
        interaction_id: format!("i{n}"),
        actor: who,
        outcome: outcome.into(),
        reply: None,
        original_args: json!([]),
        edited_args: None,
        latency_ms: 0,
        agent: agent.map(str::to_owned),
        kind: Some("approval".into()),
        tools: Some(vec!["t".into()]),
        reason: None,
        attempts: 1,
    };
    let mut web_ana = Actor::new("telegram", "3003", "Ana");
    web_ana.channel = Some("web".into());
    store.append_audit(&entry(1, Some("ci"), "resolved", Some(thao()))).await.unwrap();
    store.append_audit(&entry(2, Some("cron"), "refused", Some(web_ana.clone()))).await.unwrap();
    store.append_audit(&entry(3, Some("ci"), "expired", None)).await.unwrap();
    store.append_audit(&entry(4, None, "resolved", Some(web_ana))).await.unwrap();
    let keys = |rows: Vec<hitl_bridge::store::AuditRow>| rows.into_iter().map(|r| r.entry.approval_key).collect::<Vec<_>>();
    let all = AuditFilter::default();
    assert_eq!(keys(store.audit_newest(&all, None, 10).await.unwrap()), ["k4", "k3", "k2", "k1"]);
    let first = store.audit_newest(&all, None, 2).await.unwrap();
    let before = first.last().unwrap().id;
    assert_eq!(keys(store.audit_newest(&all, Some(before), 2).await.unwrap()), ["k2", "k1"]);
    let ci = AuditFilter { agent: Some("ci".into()), ..AuditFilter::default() };
    assert_eq!(keys(store.audit_newest(&ci, None, 10).await.unwrap()), ["k3", "k1"]);
    let resolved = AuditFilter { outcome: Some("resolved".into()), ..AuditFilter::default() };
    assert_eq!(keys(store.audit_newest(&resolved, None, 10).await.unwrap()), ["k4", "k1"]);
    let ana = AuditFilter { person: Some("telegram:3003".into()), ..AuditFilter::default() };
    assert_eq!(keys(store.audit_newest(&ana, None, 10).await.unwrap()), ["k4", "k2"]);
    let prefix = AuditFilter { person: Some("telegram:300".into()), ..AuditFilter::default() };
    assert!(store.audit_newest(&prefix, None, 10).await.unwrap().is_empty(), "a whole id, not a prefix");
    let after = store.web_change_mark().await.unwrap();
    assert_eq!(after.0, mark.0);
    assert!(after.1 > mark.1, "{after:?} after {mark:?}");
    assert!(store.insert_interaction(&approval("S", "S_9", T0)).await.unwrap());
    assert_eq!(store.web_change_mark().await.unwrap().0, mark.0 + 1);
}

/// A platform's own state: each platform reads and writes only its own keys, the
/// latest write wins (counting versions), an expired value reads as none and is
/// deleted by that platform's next write (not by another's), and a value over the
/// limit is refused with a clear error, nothing written.
async fn a_platforms_own_state_is_its_own_expires_and_is_bounded(db: &mut TestStore) {
    let (slack, discord) = (db.store.platform_state("slack"), db.store.platform_state("discord"));
    slack.put("cursor", "s1", T0, None).await.unwrap();
    assert_eq!(slack.get("cursor", T0).await.unwrap(), Some(Stored { value: "s1".into(), version: 1 }));
    assert_eq!(discord.get("cursor", T0).await.unwrap(), None, "Slack's key is not Discord's");
    discord.put("cursor", "d1", T0, None).await.unwrap();
    slack.put("cursor", "s2", T0, None).await.unwrap();
    assert_eq!(slack.get("cursor", T0).await.unwrap(), Some(Stored { value: "s2".into(), version: 2 }));
    assert_eq!(discord.get("cursor", T0).await.unwrap(), Some(Stored { value: "d1".into(), version: 1 }));
    discord.delete("cursor").await.unwrap();
    assert_eq!(discord.get("cursor", T0).await.unwrap(), None);
    assert_eq!(slack.get("cursor", T0).await.unwrap().unwrap().value, "s2", "Discord's delete left Slack's key");

    slack.put("members", "m", T0, Some(std::time::Duration::from_secs(60))).await.unwrap();
    assert!(slack.get("members", T0 + 60_000).await.unwrap().is_some(), "live until its expiry");
    assert_eq!(slack.get("members", T0 + 60_001).await.unwrap(), None, "expired: never read");
    discord.put("other", "v", T0 + 61_000, None).await.unwrap();
    assert_eq!(db.count("platform_state").await, 3, "another platform's write leaves Slack's rows alone");
    slack.put("other", "v", T0 + 61_000, None).await.unwrap();
    assert_eq!(db.count("platform_state").await, 3, "Slack's next write deleted its expired row");

    let limit = "x".repeat(MAX_VALUE_BYTES);
    slack.put("big", &limit, T0, None).await.unwrap();
    assert_eq!(slack.get("big", T0).await.unwrap().unwrap().value.len(), MAX_VALUE_BYTES);
    let over = format!("{limit}x");
    let refused = slack.put("big", &over, T0, None).await.unwrap_err();
    assert!(matches!(refused, StoreError::TooLarge { .. }), "{refused:?}");
    assert_eq!(refused.to_string(), "slack cannot keep \"big\": its value is 65537 bytes, over the 65536 a platform's stored value may have");
    assert!(slack.advance("big", Some(1), &over, T0).await.is_err(), "a cursor has the same limit");
    assert_eq!(slack.get("big", T0).await.unwrap(), Some(Stored { value: limit, version: 1 }), "nothing written");
}

/// A cursor moves by compare-and-set, as Matrix's `next_batch` token must: of two
/// replicas moving it from the same version at once (or creating it at once), exactly
/// one wins and the other reads the winner's value; a stale version never moves it.
/// An expired value counts as none; another platform's cursor of the same name is its
/// own.
async fn a_platform_cursor_moves_once_from_each_version(db: &mut TestStore) {
    let replica = db.db.store().await;
    let (a, b) = (db.store.platform_state("matrix"), replica.platform_state("matrix"));
    let (x, y) = tokio::join!(a.advance("next_batch", None, "a0", T0), b.advance("next_batch", None, "b0", T0));
    let (x, y) = (x.unwrap(), y.unwrap());
    assert!(x ^ y, "exactly one creates it: {x} {y}");
    let mut read = b.get("next_batch", T0).await.unwrap().unwrap();
    assert_eq!(read, Stored { value: if x { "a0" } else { "b0" }.into(), version: 1 });
    for round in 1..=5 {
        let (ours, theirs) = (format!("a{round}"), format!("b{round}"));
        let (x, y) = tokio::join!(a.advance("next_batch", Some(read.version), &ours, T0), b.advance("next_batch", Some(read.version), &theirs, T0));
        let (x, y) = (x.unwrap(), y.unwrap());
        assert!(x ^ y, "round {round}: exactly one moves it: {x} {y}");
        let now = a.get("next_batch", T0).await.unwrap().unwrap();
        assert_eq!(now, Stored { value: if x { ours } else { theirs }, version: read.version + 1 });
        read = now;
    }
    assert!(!a.advance("next_batch", Some(read.version - 1), "stale", T0).await.unwrap(), "a stale version");
    assert!(!a.advance("next_batch", None, "stale", T0).await.unwrap(), "there is one already");
    assert_eq!(a.get("next_batch", T0).await.unwrap(), Some(read));

    a.put("since", "old", T0, Some(std::time::Duration::from_secs(1))).await.unwrap();
    assert!(!a.advance("since", Some(1), "new", T0 + 2_000).await.unwrap(), "an expired value is not moved from");
    assert!(a.advance("since", None, "new", T0 + 2_000).await.unwrap(), "it counts as none");
    assert_eq!(a.get("since", i64::MAX).await.unwrap().unwrap().value, "new", "a cursor does not expire");
    assert!(db.store.platform_state("slack").advance("next_batch", None, "s0", T0).await.unwrap(), "Slack's own");
    replica.close().await;
}

async fn a_refused_show_leaves_the_queue_for_good_and_keeps_its_reason(db: &mut TestStore) {
    let store = &db.store;
    let (typo, ops) = (ChatKey::new("telegram", "-100999", None), ChatKey::new("telegram", "-100777", Some("7")));
    let i = approval("S", "S_1", T0);
    let claim = ShowClaim { owner: "r1".into(), until_ms: T0 + 30_000 };
    assert!(store.insert_interaction_to_show(&i, &[typo.clone(), ops.clone()], &claim, T0).await.expect("insert"));
    assert!(!store.shown_nowhere(&i.id).await.expect("count"));

    store.show_refused(&i.id, &typo, T0 + 10, "Bad Request: chat not found").await.expect("refused");
    store.show_refused(&i.id, &typo, T0 + 20, "said twice").await.expect("a second report changes nothing");
    let left: Vec<ChatKey> = store.pending_shows().await.expect("list").into_iter().map(|p| p.chat).collect();
    assert_eq!(left, std::slice::from_ref(&ops), "only the refused chat leaves the queue");
    assert_eq!(store.refused_shows(&i.id).await.expect("list"), [RefusedShow { chat: typo.clone(), error: "Bad Request: chat not found".into() }]);
    assert!(!store.shown_nowhere(&i.id).await.expect("count"), "still queued in the other chat");
    // Nothing brings it back to the retry queue, however late.
    assert!(store.claim_due_shows(&ShowClaim { owner: "r2".into(), until_ms: i64::MAX }, i64::MAX - 1).await.expect("claim").iter().all(|p| p.chat == ops));

    store.show_refused(&i.id, &ops, T0 + 30, "Forbidden: bot was kicked from the supergroup chat").await.expect("refused");
    assert!(store.shown_nowhere(&i.id).await.expect("count"));
    assert_eq!(store.refused_shows(&i.id).await.expect("list").iter().map(|r| &r.chat).collect::<Vec<_>>(), [&typo, &ops], "in the order refused");
    assert!(store.refused_shows("unknown").await.expect("list").is_empty());
    // Read for a whole page at once, the same as one by one; ids with none are left out.
    let page = store.refused_shows_of(&[i.id.as_str(), "unknown"]).await.expect("list a page");
    assert_eq!(page.len(), 1);
    assert_eq!(page[&i.id], store.refused_shows(&i.id).await.expect("list"));
    // A show refused for an interaction the store no longer has records nothing.
    store.show_refused("gone", &typo, T0, "Bad Request: chat not found").await.expect("nothing to record");
    assert!(store.refused_shows("gone").await.expect("list").is_empty());
}
