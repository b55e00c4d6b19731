//! The admin commands (`pending`, `cancel`, `audit export`, `rules`) run as the real binary,
//! with `--config config/default.toml` and the store url from the environment, against
//! a store built through the Store API. Each store test runs on SQLite and, when
//! `HITL_BRIDGE_TEST_POSTGRES_URL` is set, on PostgreSQL. The last test cancels a
//! request a running bridge shows and watches the bridge update it and the agent get
//! the reject.

mod support;
use support::test_db;

use std::process::Output;

use hitl_bridge::interaction::policy::{EscalationStep, Fallback, FallbackDecision, Mention, RememberArgs, RememberScope, RememberedRule, StepAction};
use hitl_bridge::interaction::{AccessPolicy, Actor, Applied, Approvers, Interaction, Origin, Policy, RequestBuilder, Status, TimeoutDefaults, UserAction};
use hitl_bridge::protocol::{ActionRequest, Command, Decision, Reply};
use hitl_bridge::store::{ApiRequest, AuditEntry, ChatKey, MessageRef, ShowClaim, Store};
use serde_json::{Value, json};
use support::{Rig, approvals, session_id, stop, wait_approvals};
use test_db::TestDatabase;

/// Runs each listed test on SQLite and on PostgreSQL.
macro_rules! suite {
    ($($test:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $test() {
                    let db = super::TestDatabase::sqlite();
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
                    let Some(db) = super::TestDatabase::postgres().await else { return };
                    super::$test(&db).await;
                    db.finish().await;
                }
            )*
        }
    };
}

suite!(
    pending_prints_one_aligned_row_per_request,
    cancel_settles_queues_reports_and_notifies_once,
    audit_export_prints_entries_in_time_order,
    audit_export_carries_policy_entries,
    rules_lists_the_active_rules_and_revokes_one,
);

// ---------------------------------------------------------------------------------
// Running the binary
// ---------------------------------------------------------------------------------

/// `hitl-bridge ARGS --config config/default.toml` on the store at `url`.
async fn admin(url: &str, args: &[&str]) -> Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_hitl-bridge"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("HITL_BRIDGE__")) {
        cmd.env_remove(key);
    }
    cmd.args(args)
        .args(["--config", "config/default.toml"])
        .env("HITL_BRIDGE__STORE__URL", url)
        .env("RUST_BACKTRACE", "0")
        .output()
        .await
        .expect("run hitl-bridge")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("UTF-8 stdout")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Succeeded; returns stdout.
fn ok(out: &Output) -> String {
    assert!(out.status.success(), "exit {:?}: {}", out.status.code(), stderr(out));
    stdout(out)
}

// ---------------------------------------------------------------------------------
// Builders
// ---------------------------------------------------------------------------------

/// 2025-06-01T08:30:00Z.
const T0: i64 = 1_748_766_600_000;

fn thao() -> Actor {
    Actor::new("telegram", "42", "Thảo")
}

fn action(name: &str, args: Value) -> ActionRequest {
    ActionRequest { name: name.into(), args, description: None, tool_use_id: None }
}

/// A trade and an email to approve, requested by Thảo.
fn approval(session: &str, key: &str, created: i64) -> Interaction {
    let actions = vec![action("execute_trade", json!({"symbol": "VNM", "quantity": 100})), action("send_email", json!({"to": "ops@example.com"}))];
    let request = RequestBuilder::start(key, actions, vec![], Some(300)).finish(TimeoutDefaults::default()).expect("request");
    Interaction::new(format!("id-{key}"), session.into(), request, Some(thao()), created)
}

fn question(session: &str, key: &str, created: i64) -> Interaction {
    let args = json!({"questions": [{"question": "Kênh nào?", "options": [{"label": "Telegram"}, {"label": "Email"}]}]});
    let request = RequestBuilder::start(key, vec![action("ask_user_question", args)], vec![], Some(600)).finish(TimeoutDefaults::default()).expect("question");
    Interaction::new(format!("id-{key}"), session.into(), request, Some(thao()), created)
}

/// `i` as pushed over the HTTP API by agent `ci` to `targets`, stored.
async fn push(store: &Store, mut i: Interaction, targets: Vec<ChatKey>) -> Interaction {
    i.origin = Origin::Pushed { agent: "ci".into(), approvers: Some(Approvers::default()) };
    let row = ApiRequest {
        approval_key: i.approval_key().into(),
        interaction_id: i.id.clone(),
        session_id: i.session_id.clone(),
        client_session: None,
        agent: "ci".into(),
        body_hash: "00".into(),
        targets,
        callback_url: None,
        created_at_ms: i.created_at_ms,
    };
    assert_eq!(store.create_api_request(&row, &i, &ShowClaim { owner: "test".into(), until_ms: 0 }).await.expect("push"), None);
    i
}

async fn shown_in(store: &Store, i: &Interaction, chat: ChatKey, message: &str) {
    store.add_message_ref(&MessageRef { interaction_id: i.id.clone(), chat, message_id: message.into() }).await.expect("message ref");
}

fn act(i: &mut Interaction, action: UserAction, at: i64) -> Applied {
    i.apply(&thao(), action, &AccessPolicy::default(), at).expect("accepted")
}

fn approval_command(i: &Interaction, reply: Reply) -> Command {
    Command::Approval { session_id: i.session_id.clone(), approval_key: i.approval_key().into(), reply }
}

fn line(value: Value) -> String {
    serde_json::to_string(&value).expect("json")
}

// ---------------------------------------------------------------------------------
// pending
// ---------------------------------------------------------------------------------

async fn pending_prints_one_aligned_row_per_request(db: &TestDatabase) {
    let store = db.store().await;
    assert_eq!(ok(&admin(&db.url, &["pending"]).await), "no pending requests\n");

    // Ages and deadlines are relative to the real clock: created 2h30m30s ago and
    // ending in 6h00m30s, the printed values hold for 30 s.
    let now = hitl_bridge::clock::now_ms();
    let created = now - (2 * 3600 + 30 * 60 + 30) * 1000;
    let deadline = now + (6 * 3600 + 30) * 1000;
    let at = |mut i: Interaction, created: i64| {
        i.created_at_ms = created;
        i.deadline_ms = deadline;
        i
    };
    // A chat turn's approval shown in a Telegram group and a Discord channel.
    let trade = at(approval("S", "S_1", created), created);
    assert!(store.insert_interaction(&trade).await.expect("insert"));
    shown_in(&store, &trade, ChatKey::new("telegram", "-100123", None), "7").await;
    shown_in(&store, &trade, ChatKey::new("discord", "1100", None), "9").await;
    // A question still waiting to be shown on the console (a failed send).
    let ask = at(question("S2", "Q_1", created + 60_000), created + 60_000);
    let claim = ShowClaim { owner: "test".into(), until_ms: 0 };
    assert!(store.insert_interaction_to_show(&ask, &[ChatKey::new("console", "stdin", None)], &claim, now).await.expect("insert"));
    // Pushed to a Telegram topic and a Discord channel; shown in the topic so far.
    let topic = ChatKey::new("telegram", "-100999", Some("7"));
    let deploy = push(
        &store,
        at(approval("api:deploy-42", "deploy-42_1", created + 120_000), created + 120_000),
        vec![topic.clone(), ChatKey::new("discord", "1200", None)],
    )
    .await;
    shown_in(&store, &deploy, topic, "3").await;
    // A chat turn whose session has no chat, and one that is over.
    assert!(store.insert_interaction(&at(approval("L", "L_1", created + 180_000), created + 180_000)).await.expect("insert"));
    let mut over = approval("S", "S_0", created);
    assert!(store.insert_interaction(&over).await.expect("insert"));
    assert!(over.expire(now, false));
    assert!(store.settle(&over, None, &AuditEntry::for_settled(&over, now)).await.expect("settle").won());

    assert_eq!(
        ok(&admin(&db.url, &["pending"]).await),
        "KEY          AGENT  SESSION        TARGET                           KIND                               AGE    DEADLINE\n\
         S_1          -      S              discord:1100,telegram:-100123    approval:execute_trade,send_email  2h30m  in 6h00m\n\
         Q_1          -      S2             console                          question                           2h29m  in 6h00m\n\
         deploy-42_1  ci     api:deploy-42  discord:1200,telegram:-100999/7  approval:execute_trade,send_email  2h28m  in 6h00m\n\
         L_1          -      L              -                                approval:execute_trade,send_email  2h27m  in 6h00m\n"
    );
    store.close().await;
}

// ---------------------------------------------------------------------------------
// cancel
// ---------------------------------------------------------------------------------

async fn cancel_settles_queues_reports_and_notifies_once(db: &TestDatabase) {
    let store = db.store().await;
    let now = hitl_bridge::clock::now_ms();
    let trade = approval("S", "S_1", now);
    assert!(store.insert_interaction(&trade).await.expect("insert"));
    assert!(store.insert_interaction(&question("S", "Q_1", now)).await.expect("insert"));
    push(&store, approval("api:deploy-42", "deploy-42_1", now), vec![ChatKey::new("discord", "1200", None)]).await;
    let mut decided = approval("S", "R_1", now);
    assert!(store.insert_interaction(&decided).await.expect("insert"));
    let Applied::Resolved(reply) = act(&mut decided, UserAction::DecideAll { decision: hitl_bridge::protocol::DecisionType::Approve }, T0) else {
        panic!("approve all resolves")
    };
    assert!(store.settle(&decided, Some(&approval_command(&decided, reply)), &AuditEntry::for_settled(&decided, T0)).await.expect("settle").won());
    for (id, _) in store.outbox_for_session("S").await.expect("outbox") {
        store.remove_outbox(id).await.expect("delivered");
    }

    // A reason that is too long changes nothing.
    let long = "x".repeat(501);
    let out = admin(&db.url, &["cancel", "S_1", "--reason", &long]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("the reason is longer than 500 characters"), "{}", stderr(&out));
    assert!(store.interaction("id-S_1").await.expect("load").expect("stored").status.is_pending());

    // The chat turn's approval: settled, reject queued, audited, one notice.
    let before = hitl_bridge::clock::now_ms();
    let out = ok(&admin(&db.url, &["cancel", "S_1", "--reason", " maintenance ", "--by", "alice"]).await);
    assert_eq!(out, "cancelled S_1 (session S); queued for the agent: reject, \"cancelled by an operator: maintenance\"\n");
    let stored = store.interaction("id-S_1").await.expect("load").expect("stored");
    let Status::Cancelled { at_ms, reason } = &stored.status else { panic!("cancelled, got {:?}", stored.status) };
    assert_eq!(reason, "cancelled by an operator: maintenance");
    assert!(*at_ms >= before && *at_ms <= hitl_bridge::clock::now_ms());
    let sent = json!({"type": "approval", "session_id": "S", "approval_key": "S_1",
        "decisions": [{"type": "reject", "message": "cancelled by an operator: maintenance"},
                      {"type": "reject", "message": "cancelled by an operator: maintenance"}]});
    let queued: Vec<Value> = store.outbox_for_session("S").await.expect("outbox").into_iter().map(|(_, c)| serde_json::to_value(c).expect("json")).collect();
    assert_eq!(queued, vec![sent.clone()]);
    let audit = store.audit_log("S_1").await.expect("audit");
    let [entry] = audit.as_slice() else { panic!("one audit entry, got {audit:?}") };
    assert_eq!(
        (entry.outcome.as_str(), entry.actor.clone(), entry.reason.as_deref(), entry.at_ms),
        ("cancelled", Some(Actor::new("cli", "alice", "alice")), Some("cancelled by an operator: maintenance"), *at_ms)
    );
    assert_eq!(entry.reply, Some(json!({"decisions": sent["decisions"]})));
    // Claimed once across replicas.
    let other_replica = db.store().await;
    assert_eq!(store.claim_outside_settles().await.expect("claim"), vec!["id-S_1".to_owned()]);
    assert!(other_replica.claim_outside_settles().await.expect("claim").is_empty());

    // Again: already cancelled, nothing new queued or noted.
    let when = hitl_bridge::admin::rfc3339_ms(*at_ms);
    assert_eq!(
        ok(&admin(&db.url, &["cancel", "S_1"]).await),
        format!("S_1 (session S) was already cancelled at {when} (cancelled by an operator: maintenance); nothing changed\n")
    );
    assert_eq!(store.outbox_for_session("S").await.expect("outbox").len(), 1);
    assert!(store.claim_outside_settles().await.expect("claim").is_empty());

    // A question gets no reply; a pushed request's agent reads the status.
    assert_eq!(
        ok(&admin(&db.url, &["cancel", "Q_1", "--by", "alice"]).await),
        "cancelled Q_1 (session S); a question gets no reply; the agent stops waiting at its own timeout\n"
    );
    assert_eq!(store.outbox_for_session("S").await.expect("outbox").len(), 1);
    assert_eq!(
        ok(&admin(&db.url, &["cancel", "deploy-42_1", "--by", "alice"]).await),
        "cancelled deploy-42_1 (session api:deploy-42); the agent reads status \"cancelled\" over the HTTP API\n"
    );
    assert!(store.outbox_for_session("api:deploy-42").await.expect("outbox").is_empty());
    assert_eq!(store.interaction("id-deploy-42_1").await.expect("load").expect("stored").status.name(), "cancelled");

    // Decided before: says by whom, changes nothing.
    assert_eq!(
        ok(&admin(&db.url, &["cancel", "R_1"]).await),
        "R_1 (session S) was already resolved by Thảo (telegram:42) at 2025-06-01T08:30:00.000Z; nothing changed\n"
    );
    assert_eq!(store.audit_log("R_1").await.expect("audit").len(), 1);

    // Unknown, and pending in two sessions.
    let out = admin(&db.url, &["cancel", "nope"]).await;
    assert_eq!((out.status.code(), stdout(&out).as_str()), (Some(1), ""));
    assert!(stderr(&out).contains("no request has approval key \"nope\""), "{}", stderr(&out));
    for session in ["A", "B"] {
        assert!(store.insert_interaction(&Interaction { id: format!("id-K-{session}"), ..approval(session, "K_1", now) }).await.expect("insert"));
    }
    let out = admin(&db.url, &["cancel", "K_1"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("approval key \"K_1\" is pending in several sessions (A, B); pick one with --session"), "{}", stderr(&out));
    assert_eq!(
        ok(&admin(&db.url, &["cancel", "K_1", "--session", "B", "--by", "alice"]).await),
        "cancelled K_1 (session B); queued for the agent: reject, \"cancelled by an operator\"\n"
    );
    assert!(store.interaction("id-K-A").await.expect("load").expect("stored").status.is_pending());

    other_replica.close().await;
    store.close().await;
}

// ---------------------------------------------------------------------------------
// audit export
// ---------------------------------------------------------------------------------

async fn audit_export_prints_entries_in_time_order(db: &TestDatabase) {
    let store = db.store().await;
    // Thảo approves the trade and edits the email (T0 + 3.5 s).
    let mut edited = approval("S", "S_1", T0);
    assert!(store.insert_interaction(&edited).await.expect("insert"));
    act(&mut edited, UserAction::Decide { action: 0, decision: Decision::Approve }, T0 + 3_500);
    act(&mut edited, UserAction::EditArgs { action: 1, json: r#"{"to": "lead@example.com", "note": "say \"hi\", then go"}"#.into() }, T0 + 3_500);
    let Applied::Resolved(reply) = act(&mut edited, UserAction::Submit, T0 + 3_500) else { panic!("submit resolves") };
    assert!(store.settle(&edited, Some(&approval_command(&edited, reply)), &AuditEntry::for_settled(&edited, T0 + 3_500)).await.expect("settle").won());
    // Appended after, but earlier: mallory may not answer S_2 (T0 + 1 s); a stranger
    // may not talk (T0 + 2 s).
    let other = approval("S", "S_2", T0);
    assert!(store.insert_interaction(&other).await.expect("insert"));
    let mallory = Actor::new("discord", "666", "mallory");
    let tried = UserAction::Decide { action: 0, decision: Decision::Approve };
    store.append_audit(&AuditEntry::for_refused(&other, &mallory, &tried, "you are not allowed to answer this request", T0 + 1_000)).await.expect("audit");
    let eve = Actor::new("telegram", "99", "Eve");
    store.append_audit(&AuditEntry::for_refused_talk(&eve, &ChatKey::new("telegram", "99", None), "message", "hello", None, T0 + 2_000)).await.expect("audit");
    // Thảo answers a question (T0 + 6 s).
    let mut asked = question("S", "Q_1", T0);
    assert!(store.insert_interaction(&asked).await.expect("insert"));
    act(&mut asked, UserAction::Select { question: 0, options: vec![1] }, T0 + 6_000);
    let Applied::Resolved(reply) = act(&mut asked, UserAction::Submit, T0 + 6_000) else { panic!("submit resolves") };
    assert!(store.settle(&asked, Some(&approval_command(&asked, reply)), &AuditEntry::for_settled(&asked, T0 + 6_000)).await.expect("settle").won());
    // An operator cancels S_3 (T0 + 8 s).
    let mut cancelled = approval("S", "S_3", T0);
    assert!(store.insert_interaction(&cancelled).await.expect("insert"));
    assert!(cancelled.cancel(T0 + 8_000, "cancelled by an operator: maintenance"));
    let mut entry = AuditEntry::for_settled(&cancelled, T0 + 8_000);
    entry.actor = Some(Actor::new("cli", "alice", "alice"));
    assert!(store.settle(&cancelled, None, &entry).await.expect("settle").won());
    // An entry from before kinds and tools were kept: taken from the interaction.
    let mut old = question("S", "Q_2", T0);
    assert!(store.insert_interaction(&old).await.expect("insert"));
    assert!(old.expire(T0 + 9_000, true));
    assert!(store.settle(&old, None, &AuditEntry { kind: None, tools: None, ..AuditEntry::for_settled(&old, T0 + 9_000) }).await.expect("settle").won());

    let approval_tools = json!(["execute_trade", "send_email"]);
    let original = json!([{"symbol": "VNM", "quantity": 100}, {"to": "ops@example.com"}]);
    let question_args = json!([{"questions": [{"question": "Kênh nào?", "options": [{"label": "Telegram"}, {"label": "Email"}]}]}]);
    let thao_json = json!({"platform": "telegram", "user_id": "42", "name": "Thảo"});
    let expected = [
        line(json!({"at": "2025-06-01T08:30:01.000Z", "outcome": "refused", "approval_key": "S_2", "session_id": "S", "interaction_id": "id-S_2",
            "kind": "approval", "tools": approval_tools, "who": {"platform": "discord", "user_id": "666", "name": "mallory"}, "agent": null,
            "decision": null, "attempted": {"attempted": {"op": "decide", "action": 0, "decision": {"type": "approve"}}},
            "original_args": original, "edited_args": null, "latency_ms": 1000, "reason": "you are not allowed to answer this request"})),
        line(json!({"at": "2025-06-01T08:30:02.000Z", "outcome": "refused", "approval_key": null, "session_id": null, "interaction_id": null,
            "kind": null, "tools": [], "who": {"platform": "telegram", "user_id": "99", "name": "Eve"}, "agent": null,
            "decision": null, "attempted": {"attempted": "message", "text": "hello", "chat": {"platform": "telegram", "chat_id": "99", "thread_id": null}},
            "original_args": [], "edited_args": null, "latency_ms": 0, "reason": "not allowed to talk to the agent"})),
        line(json!({"at": "2025-06-01T08:30:03.500Z", "outcome": "resolved", "approval_key": "S_1", "session_id": "S", "interaction_id": "id-S_1",
            "kind": "approval", "tools": approval_tools, "who": thao_json, "agent": null,
            "decision": {"decisions": [{"type": "approve"}, {"type": "edit", "edited_action": {"name": "send_email", "args": {"to": "lead@example.com", "note": "say \"hi\", then go"}}}]},
            "attempted": null, "original_args": original, "edited_args": [null, {"to": "lead@example.com", "note": "say \"hi\", then go"}],
            "latency_ms": 3500, "reason": null})),
        line(json!({"at": "2025-06-01T08:30:06.000Z", "outcome": "resolved", "approval_key": "Q_1", "session_id": "S", "interaction_id": "id-Q_1",
            "kind": "question", "tools": ["ask_user_question"], "who": thao_json, "agent": null,
            "decision": {"answers": {"Kênh nào?": "Email"}}, "attempted": null, "original_args": question_args, "edited_args": null,
            "latency_ms": 6000, "reason": null})),
        line(json!({"at": "2025-06-01T08:30:08.000Z", "outcome": "cancelled", "approval_key": "S_3", "session_id": "S", "interaction_id": "id-S_3",
            "kind": "approval", "tools": approval_tools, "who": {"platform": "cli", "user_id": "alice", "name": "alice"}, "agent": null,
            "decision": null, "attempted": null, "original_args": original, "edited_args": null, "latency_ms": 8000,
            "reason": "cancelled by an operator: maintenance"})),
        line(json!({"at": "2025-06-01T08:30:09.000Z", "outcome": "expired_by_backend", "approval_key": "Q_2", "session_id": "S", "interaction_id": "id-Q_2",
            "kind": "question", "tools": ["ask_user_question"], "who": null, "agent": null,
            "decision": null, "attempted": null, "original_args": question_args, "edited_args": null, "latency_ms": 9000, "reason": null})),
    ];
    assert_eq!(ok(&admin(&db.url, &["audit", "export"]).await), expected.iter().map(|l| format!("{l}\n")).collect::<String>());
    // --since keeps the entries at or after it; an offset is honoured.
    assert_eq!(
        ok(&admin(&db.url, &["audit", "export", "--since", "2025-06-01T10:30:03.500+02:00"]).await),
        expected[2..].iter().map(|l| format!("{l}\n")).collect::<String>()
    );

    assert_eq!(
        ok(&admin(&db.url, &["audit", "export", "--since", "2025-06-01T08:30:06Z", "--format", "csv"]).await),
        concat!(
            "at,outcome,approval_key,session_id,interaction_id,kind,tools,who_platform,who_user_id,who_name,who_channel,agent,",
            "decision,attempted,original_args,edited_args,latency_ms,reason\n",
            r#"2025-06-01T08:30:06.000Z,resolved,Q_1,S,id-Q_1,question,ask_user_question,telegram,42,Thảo,,,"{""answers"":{""Kênh nào?"":""Email""}}",,"#,
            r#""[{""questions"":[{""question"":""Kênh nào?"",""options"":[{""label"":""Telegram""},{""label"":""Email""}]}]}]",,6000,"#,
            "\n",
            r#"2025-06-01T08:30:08.000Z,cancelled,S_3,S,id-S_3,approval,execute_trade;send_email,cli,alice,alice,,,,,"#,
            r#""[{""symbol"":""VNM"",""quantity"":100},{""to"":""ops@example.com""}]",,8000,cancelled by an operator: maintenance"#,
            "\n",
            r#"2025-06-01T08:30:09.000Z,expired_by_backend,Q_2,S,id-Q_2,question,ask_user_question,,,,,,,,"#,
            r#""[{""questions"":[{""question"":""Kênh nào?"",""options"":[{""label"":""Telegram""},{""label"":""Email""}]}]}]",,9000,"#,
            "\n",
        )
    );

    // A bad --since is a usage error (exit 2) that prints nothing.
    let out = admin(&db.url, &["audit", "export", "--since", "yesterday"]).await;
    assert_eq!((out.status.code(), stdout(&out).as_str()), (Some(2), ""));
    assert!(stderr(&out).contains("\"yesterday\" is not an RFC 3339 time such as 2025-06-01T00:00:00Z"), "{}", stderr(&out));
    store.close().await;
}

// ---------------------------------------------------------------------------------
// Decision policies: audit entries and `rules`
// ---------------------------------------------------------------------------------

/// Policy `trades`: Lan (telegram:10) and Minh (telegram:11) decide, `quorum` of them.
fn trades(quorum: u32) -> Policy {
    Policy {
        name: "trades".into(),
        approvers: vec![("telegram".into(), "10".into()), ("telegram".into(), "11".into())],
        approver_roles: vec![],
        quorum,
        remember: vec![RememberScope::Session, RememberScope::Always],
        remember_args: RememberArgs::Same,
        escalation: vec![],
        fallback: None,
    }
}

/// One trade to approve under `policy`, created at T0 and stored.
async fn trade_under(store: &Store, key: &str, policy: Policy) -> Interaction {
    let request = RequestBuilder::start(key, vec![action("execute_trade", json!({"symbol": "VNM", "quantity": 100}))], vec![], Some(300))
        .finish(TimeoutDefaults::default())
        .expect("request");
    let i = Interaction::new(format!("id-{key}"), "S".into(), request, Some(thao()), T0).with_policy(Some(policy));
    assert!(store.insert_interaction(&i).await.expect("insert"));
    i
}

fn lan() -> Actor {
    Actor::new("telegram", "10", "Lan")
}

fn minh() -> Actor {
    Actor::new("telegram", "11", "Minh")
}

/// Thảo's "always approve" of execute_trade with these args, set a minute before T0.
fn always_rule() -> RememberedRule {
    RememberedRule {
        id: "r-always".into(),
        scope: RememberScope::Always,
        tool: "execute_trade".into(),
        args: None,
        session_id: None,
        backend: "stream".into(),
        set_by: thao(),
        set_at_ms: T0 - 60_000,
        policy: "trades".into(),
    }
}

async fn audit_export_carries_policy_entries(db: &TestDatabase) {
    let store = db.store().await;
    store.save_rule(&always_rule()).await.expect("save rule");
    // T0 + 1 s: Thảo's rule approves P_1 at once.
    let mut by_rule = trade_under(&store, "P_1", trades(1)).await;
    by_rule.resolve_by_rule(&always_rule(), T0 + 1_000).expect("the rule approves");
    assert!(store.settle(&by_rule, None, &AuditEntry::for_settled(&by_rule, T0 + 1_000)).await.expect("settle").won());
    // T0 + 2 s: nobody answered P_2; the approvers' role is reminded.
    let escalating = trade_under(&store, "P_2", trades(1)).await;
    let step = EscalationStep { after_secs: 2, action: StepAction::Remind { mention: Mention::Role { role_id: "900".into() } } };
    store.append_audit(&AuditEntry::for_escalation(&escalating, &step, T0 + 2_000)).await.expect("audit");
    // T0 + 3 s: Lan and Minh approve P_3 under a quorum of 2.
    let mut voted = trade_under(&store, "P_3", trades(2)).await;
    for (who, at) in [(lan(), T0 + 2_500), (minh(), T0 + 3_000)] {
        voted.apply(&who, UserAction::DecideAll { decision: hitl_bridge::protocol::DecisionType::Approve }, &AccessPolicy::default(), at).expect("vote");
    }
    assert!(store.settle(&voted, None, &AuditEntry::for_settled(&voted, T0 + 3_000)).await.expect("settle").won());
    // T0 + 4 s: P_4's fallback rejects it.
    let mut fell_back =
        trade_under(&store, "P_4", Policy { fallback: Some(Fallback { after_secs: 4, decision: FallbackDecision::Reject }), ..trades(1) }).await;
    assert!(fell_back.apply_fallback(T0 + 4_000));
    assert!(store.settle(&fell_back, None, &AuditEntry::for_settled(&fell_back, T0 + 4_000)).await.expect("settle").won());
    // T0 + 5 s: Eve may not revoke the rule; T0 + 6 s: alice does.
    let eve = Actor::new("telegram", "99", "Eve");
    let why = "only an approver or the person who set it may revoke a rule";
    store.append_audit(&AuditEntry::for_refused_revoke(&always_rule(), &eve, why, T0 + 5_000)).await.expect("audit");
    assert_eq!(store.revoke_rule("r-always", "alice", T0 + 6_000).await.expect("revoke"), Some(always_rule()));

    let args = json!([{"symbol": "VNM", "quantity": 100}]);
    let approve = json!({"decisions": [{"type": "approve"}]});
    let thao_json = json!({"platform": "telegram", "user_id": "42", "name": "Thảo"});
    let expected = [
        line(json!({"at": "2025-06-01T08:30:01.000Z", "outcome": "resolved", "approval_key": "P_1", "session_id": "S", "interaction_id": "id-P_1",
            "kind": "approval", "tools": ["execute_trade"], "who": thao_json, "agent": null, "decision": approve, "attempted": null,
            "original_args": args, "edited_args": null, "latency_ms": 1000, "reason": "approved by rule r-always set by Thảo at 2025-06-01T08:29:00.000Z"})),
        line(json!({"at": "2025-06-01T08:30:02.000Z", "outcome": "escalated", "approval_key": "P_2", "session_id": "S", "interaction_id": "id-P_2",
            "kind": "approval", "tools": ["execute_trade"], "who": null, "agent": null, "decision": null, "attempted": null,
            "original_args": args, "edited_args": null, "latency_ms": 2000, "reason": "remind role:900 after 2 s"})),
        line(json!({"at": "2025-06-01T08:30:03.000Z", "outcome": "resolved", "approval_key": "P_3", "session_id": "S", "interaction_id": "id-P_3",
            "kind": "approval", "tools": ["execute_trade"], "who": {"platform": "telegram", "user_id": "11", "name": "Minh"}, "agent": null,
            "decision": approve, "attempted": null, "original_args": args, "edited_args": null, "latency_ms": 3000, "reason": "quorum 2 of 2: Lan, Minh"})),
        line(json!({"at": "2025-06-01T08:30:04.000Z", "outcome": "expired", "approval_key": "P_4", "session_id": "S", "interaction_id": "id-P_4",
            "kind": "approval", "tools": ["execute_trade"], "who": null, "agent": null,
            "decision": {"decisions": [{"type": "reject", "message": "no human decision after 4 s: rejected by policy trades"}]}, "attempted": null,
            "original_args": args, "edited_args": null, "latency_ms": 4000, "reason": "fallback reject by policy trades after 4 s"})),
        line(json!({"at": "2025-06-01T08:30:05.000Z", "outcome": "refused", "approval_key": null, "session_id": null, "interaction_id": "r-always",
            "kind": "rule", "tools": ["execute_trade"], "who": {"platform": "telegram", "user_id": "99", "name": "Eve"}, "agent": null,
            "decision": null, "attempted": {"attempted": "revoke_rule", "rule": "r-always"}, "original_args": [null], "edited_args": null,
            "latency_ms": 0, "reason": why})),
        line(json!({"at": "2025-06-01T08:30:06.000Z", "outcome": "rule_revoked", "approval_key": null, "session_id": null, "interaction_id": "r-always",
            "kind": "rule", "tools": ["execute_trade"], "who": {"platform": "cli", "user_id": "alice", "name": "alice"}, "agent": null,
            "decision": null, "attempted": null, "original_args": [null], "edited_args": null, "latency_ms": 0,
            "reason": "revoked always rule r-always for execute_trade on stream (policy trades), set by Thảo at 2025-06-01T08:29:00.000Z"})),
    ];
    assert_eq!(ok(&admin(&db.url, &["audit", "export"]).await), expected.iter().map(|l| format!("{l}\n")).collect::<String>());
    assert_eq!(
        ok(&admin(&db.url, &["audit", "export", "--since", "2025-06-01T08:30:02Z", "--format", "csv"]).await),
        concat!(
            "at,outcome,approval_key,session_id,interaction_id,kind,tools,who_platform,who_user_id,who_name,who_channel,agent,",
            "decision,attempted,original_args,edited_args,latency_ms,reason\n",
            r#"2025-06-01T08:30:02.000Z,escalated,P_2,S,id-P_2,approval,execute_trade,,,,,,,,"[{""symbol"":""VNM"",""quantity"":100}]",,2000,remind role:900 after 2 s"#,
            "\n",
            r#"2025-06-01T08:30:03.000Z,resolved,P_3,S,id-P_3,approval,execute_trade,telegram,11,Minh,,,"{""decisions"":[{""type"":""approve""}]}",,"#,
            r#""[{""symbol"":""VNM"",""quantity"":100}]",,3000,"quorum 2 of 2: Lan, Minh""#,
            "\n",
            r#"2025-06-01T08:30:04.000Z,expired,P_4,S,id-P_4,approval,execute_trade,,,,,,"#,
            r#""{""decisions"":[{""type"":""reject"",""message"":""no human decision after 4 s: rejected by policy trades""}]}",,"#,
            r#""[{""symbol"":""VNM"",""quantity"":100}]",,4000,fallback reject by policy trades after 4 s"#,
            "\n",
            r#"2025-06-01T08:30:05.000Z,refused,,,r-always,rule,execute_trade,telegram,99,Eve,,,,"{""attempted"":""revoke_rule"",""rule"":""r-always""}","#,
            "[null],,0,only an approver or the person who set it may revoke a rule\n",
            r#"2025-06-01T08:30:06.000Z,rule_revoked,,,r-always,rule,execute_trade,cli,alice,alice,,,,,[null],,0,"#,
            r#""revoked always rule r-always for execute_trade on stream (policy trades), set by Thảo at 2025-06-01T08:29:00.000Z""#,
            "\n",
        )
    );
    store.close().await;
}

async fn rules_lists_the_active_rules_and_revokes_one(db: &TestDatabase) {
    let store = db.store().await;
    assert_eq!(ok(&admin(&db.url, &["rules"]).await), "no active rules\n");
    let in_session = RememberedRule {
        id: "0f9e8d7c6b5a".into(),
        scope: RememberScope::Session,
        args: Some(json!({"symbol": "VNM", "quantity": 100, "note": "rebalance the whole portfolio"})),
        session_id: Some("3f2a9c".into()),
        set_by: lan(),
        set_at_ms: T0 + 60_000,
        ..always_rule()
    };
    let kimi = RememberedRule {
        id: "9a8b7c6d5e4f".into(),
        tool: "shell".into(),
        args: Some(json!({"cmd": "ls"})),
        backend: "kimi".into(),
        set_by: Actor::new("discord", "8001", "Minh"),
        set_at_ms: T0 + 120_000,
        policy: "policies[2]".into(),
        ..always_rule()
    };
    for rule in [&kimi, &always_rule(), &in_session] {
        store.save_rule(rule).await.expect("save rule");
    }
    let table = "ID            SCOPE    TOOL           ARGS                                      SESSION  BACKEND  SET_BY               SET_AT                POLICY\n\
                 r-always      always   execute_trade  (any)                                     -        stream   Thảo (telegram:42)   2025-06-01T08:29:00Z  trades\n\
                 0f9e8d7c6b5a  session  execute_trade  {\"symbol\":\"VNM\",\"quantity\":100,\"note\":\"…  3f2a9c   stream   Lan (telegram:10)    2025-06-01T08:31:00Z  trades\n\
                 9a8b7c6d5e4f  always   shell          {\"cmd\":\"ls\"}                              -        kimi     Minh (discord:8001)  2025-06-01T08:32:00Z  policies[2]\n";
    assert_eq!(ok(&admin(&db.url, &["rules"]).await), table);
    assert_eq!(ok(&admin(&db.url, &["rules", "list"]).await), table);

    let before = hitl_bridge::clock::now_ms();
    assert_eq!(
        ok(&admin(&db.url, &["rules", "revoke", "r-always", "--by", "alice"]).await),
        "revoked rule r-always (always: execute_trade on stream, set by Thảo (telegram:42) at 2025-06-01T08:29:00Z)\n"
    );
    let after = hitl_bridge::clock::now_ms();
    assert_eq!(store.active_rules().await.expect("rules"), vec![in_session.clone(), kimi.clone()]);
    let audit = store.audit_page(i64::MIN, None, 10).await.expect("audit").rows;
    let [row] = audit.as_slice() else { panic!("one audit entry, got {audit:?}") };
    assert!((before..=after).contains(&row.entry.at_ms), "revoked at {}", row.entry.at_ms);
    assert_eq!(row.entry, AuditEntry::for_rule_revoked(&always_rule(), &Actor::new("cli", "alice", "alice"), row.entry.at_ms));

    // Already revoked, or unknown: exit 1, a clear message, nothing changed.
    for id in ["r-always", "nope"] {
        let out = admin(&db.url, &["rules", "revoke", id, "--by", "alice"]).await;
        assert_eq!((out.status.code(), stdout(&out).as_str()), (Some(1), ""), "{id}");
        let expected = format!("no active rule has id \"{id}\" (unknown or already revoked); `hitl-bridge rules` lists them");
        assert!(stderr(&out).contains(&expected), "{}", stderr(&out));
    }
    assert_eq!(store.audit_page(i64::MIN, None, 10).await.expect("audit").rows.len(), 1);
    assert_eq!(
        ok(&admin(&db.url, &["rules", "list"]).await).lines().map(|l| l.split(' ').next().unwrap_or_default().to_owned()).collect::<Vec<_>>(),
        ["ID", "0f9e8d7c6b5a", "9a8b7c6d5e4f"]
    );
    store.close().await;
}

// ---------------------------------------------------------------------------------
// A running bridge
// ---------------------------------------------------------------------------------

/// A chat turn's approval shown on the console is cancelled from the CLI: the bridge
/// delivers the reject to the agent and shows the request cancelled.
#[tokio::test]
async fn a_running_bridge_shows_a_cli_cancel_and_delivers_the_reject() {
    let Rig { sim, mut bridge, dir } = Rig::start(120, &[]).await;
    bridge.send("trade").await;
    bridge.expect("execute_trade? [a]pprove").await;
    let s = session_id(&sim);
    let key = format!("{s}_1");
    let url = format!("sqlite://{}", dir.path().join("bridge.db").display());

    let out = ok(&admin(&url, &["cancel", &key, "--reason", "maintenance", "--by", "alice"]).await);
    assert_eq!(out, format!("cancelled {key} (session {s}); queued for the agent: reject, \"cancelled by an operator: maintenance\"\n"));
    bridge.expect(&format!("✖ {key} cancelled by an operator: maintenance at")).await;
    bridge.expect("agent: Lệnh đã bị hủy. Lý do: cancelled by an operator: maintenance").await;
    assert_eq!(
        wait_approvals(&sim, 1).await,
        vec![json!({"type": "approval", "session_id": s, "approval_key": key,
            "decisions": [{"type": "reject", "message": "cancelled by an operator: maintenance"}]})]
    );
    stop(bridge, sim).await;
}

/// A question gets no reply, so nothing but the rescan's notice tells the bridge:
/// within it (10 s) the console shows the question cancelled, and the agent is sent
/// nothing.
#[tokio::test]
async fn a_running_bridge_shows_a_cli_cancelled_question() {
    let Rig { sim, mut bridge, dir } = Rig::start(120, &[]).await;
    bridge.send("hỏi 2 lần").await;
    bridge.expect("[1/2] Mục tiêu chính").await;
    let s = session_id(&sim);
    let key = format!("{s}_1");
    let url = format!("sqlite://{}", dir.path().join("bridge.db").display());

    let out = ok(&admin(&url, &["cancel", &key, "--by", "alice"]).await);
    assert_eq!(out, format!("cancelled {key} (session {s}); a question gets no reply; the agent stops waiting at its own timeout\n"));
    bridge.expect(&format!("✖ {key} cancelled by an operator at")).await;
    assert!(approvals(&sim).is_empty(), "a cancelled question sends nothing");
    // The replica that took the notice counts the settle, as if it had made it.
    let metrics_url = format!("http://{}/metrics", bridge.app.http_addr().expect("http listener"));
    let metrics = reqwest::get(&metrics_url).await.expect("scrape").text().await.expect("body");
    for line in [
        "hitl_bridge_interactions_total{kind=\"question\",outcome=\"cancelled\"} 1",
        "hitl_bridge_interactions_total{kind=\"approval\",outcome=\"cancelled\"} 0",
    ] {
        assert!(metrics.lines().any(|l| l == line), "no {line:?} in:\n{metrics}");
    }
    stop(bridge, sim).await;
}
