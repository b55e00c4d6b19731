//! The sharded engine's guarantees, on a real SQLite store: one session's inputs are
//! handled in order however many arrive at once; a session stuck in a slow call does
//! not hold back another session's decision; a deadline seen by several timers
//! expires once; a stop drains the chat lanes and gives up this replica's claims;
//! every refusal is counted, and audited once, whoever refused it.
//! The platform and the connector are doubles that record what reached them.

use std::collections::HashMap;
use std::sync::Mutex;

use futures_util::future::BoxFuture;
use serde_json::json;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::*;
use crate::interaction::policy::{Known, PolicySpec};
use crate::interaction::updates::{SessionUpdate, ToolGroupStatus};
use crate::interaction::{Actor, Request, RequestBuilder, Status, TimeoutDefaults, UserAction};
use crate::protocol::{ActionRequest, Command, DecisionType};
use crate::store::{MessageRef, PendingShow, ShowClaim};

/// Long enough for a busy CI machine; only reached when a guarantee is broken.
const WAIT: Duration = Duration::from_secs(20);

/// A Telegram double: records texts per chat and shows, after `show_delay`.
#[derive(Default)]
struct Recorder {
    show_delay: Duration,
    texts: Mutex<HashMap<String, Vec<String>>>,
    shown: Mutex<Vec<Interaction>>,
    refreshed: Mutex<Vec<Interaction>>,
    /// The message of every refresh, in order.
    edited: Mutex<Vec<String>>,
    /// `(chat, interaction id)` of every escalation reminder.
    reminders: Mutex<Vec<(String, String)>>,
}

impl Recorder {
    fn shown(&self) -> Vec<Interaction> {
        self.shown.lock().unwrap().clone()
    }
}

impl Platform for Recorder {
    fn name(&self) -> &'static str {
        "telegram"
    }

    fn send_text<'a>(&'a self, chat: &'a ChatKey, text: &'a str) -> BoxFuture<'a, Result<(), PlatformError>> {
        self.texts.lock().unwrap().entry(chat.chat_id.clone()).or_default().push(text.to_owned());
        Box::pin(async { Ok(()) })
    }

    fn tool_status<'a>(&'a self, _: &'a ChatKey, _: &'a ToolGroupStatus) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async { Ok(()) })
    }

    fn show_interaction<'a>(&'a self, _: &'a ChatKey, interaction: &'a Interaction) -> BoxFuture<'a, Result<Option<String>, PlatformError>> {
        Box::pin(async move {
            tokio::time::sleep(self.show_delay).await;
            self.shown.lock().unwrap().push(interaction.clone());
            Ok(Some(format!("m-{}", interaction.id)))
        })
    }

    fn refresh_interaction<'a>(&'a self, message: &'a MessageRef, interaction: &'a Interaction) -> BoxFuture<'a, Result<(), PlatformError>> {
        self.refreshed.lock().unwrap().push(interaction.clone());
        self.edited.lock().unwrap().push(message.message_id.clone());
        Box::pin(async { Ok(()) })
    }

    fn send_notice<'a>(&'a self, _: &'a ChatKey, _: &'a crate::interaction::updates::Notice) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async { Ok(()) })
    }

    fn send_reminder<'a>(&'a self, reminder: Reminder<'a>) -> BoxFuture<'a, Result<(), PlatformError>> {
        self.reminders.lock().unwrap().push((reminder.chat.chat_id.clone(), reminder.interaction.id.clone()));
        Box::pin(async { Ok(()) })
    }
}

/// A backend connector that takes commands for every session. When told to, it
/// blocks in `settled` for one session until released: a slow call on that session's
/// decision path.
#[derive(Default)]
struct Agent {
    stall: Mutex<Option<(String, std::sync::mpsc::Receiver<()>)>>,
    /// Panics in `settled`: a bug on a shard's decision path.
    panics: bool,
}

impl Connector for Agent {
    fn name(&self) -> &'static str {
        "test"
    }

    fn serves(&self, _: &str) -> bool {
        true
    }

    fn deliver(&self, _: &str) {}

    fn settled(&self, interaction: &Interaction) {
        assert!(!self.panics, "a connector bug");
        let mut stall = self.stall.lock().unwrap();
        if stall.as_ref().is_some_and(|(session, _)| *session == interaction.session_id)
            && let Some((_, release)) = stall.take()
        {
            drop(stall);
            // Blocks this shard's thread, as a slow call would; bounded so a broken
            // engine fails the test instead of hanging it.
            let _ = release.recv_timeout(WAIT);
        }
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

struct Running {
    handle: EngineHandle,
    backend: mpsc::Sender<BackendInput>,
    store: Store,
    /// This replica's name on the show claims it takes.
    show_owner: String,
    shards: Shards,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
    /// Where its SQLite file is; a second replica may share it.
    dir: Arc<tempfile::TempDir>,
    /// What it counts.
    metrics: crate::metrics::Metrics,
}

/// What an engine of these tests is configured with, in the engine's own terms (its
/// tests sit below the configuration, as the engine does): the shipped defaults of
/// `config/default.toml` that the engine reads, but for what a test changes.
struct Setup {
    /// `access.approvers`, as written there (`telegram:9000`).
    approvers: Vec<String>,
    /// `[[policies]]`, as written there.
    policies: Vec<PolicySpec>,
    /// `timeouts.grace_secs`.
    grace_secs: i64,
}

impl Default for Setup {
    fn default() -> Self {
        Self { approvers: Vec::new(), policies: Vec::new(), grace_secs: 10 }
    }
}

impl Setup {
    /// The engine's configuration, as the bridge's configuration would build it from
    /// the shipped defaults and these changes, with the core's test platforms.
    fn engine_config(&self) -> EngineConfig {
        let networks = crate::interaction::test_networks::networks();
        // `access.self_approval = true`: the requester may decide too.
        let policy = AccessPolicy {
            approver_users: self.approvers.iter().filter_map(|entry| networks.parse_user(entry)).collect(),
            approver_roles: Vec::new(),
            four_eyes: false,
        };
        let is_target = |t: &str| networks.parse_chat(t).is_some();
        let known = Known { is_target: &is_target, networks: &networks };
        // The backends a policy may name: the HTTP API's and the one these engines run.
        let policies = self.policies.iter().enumerate().map(|(i, spec)| spec.to_rule(i, &known, &["stream"]).expect("a valid policy")).collect();
        let allowlist = Allowlist {
            users: Vec::new(),
            chats: Vec::new(),
            spaces: Vec::new(),
            groups: Vec::new(),
            open: networks.always_open(),
            approvers: policy.clone(),
            pairing: false,
        };
        EngineConfig {
            policy,
            allowlist,
            pairing_admins: PairingAdmins::default(),
            refusal_window_ms: 600 * 1000,
            pairing_ttl_ms: 3600 * 1000,
            routing: routing::RoutingSettings::default(),
            grace_ms: self.grace_secs * 1000,
            on_expiry: OnExpiry::Reject,
            // The same name for every engine of these tests, as the host's name was
            // when they read it from the configuration.
            replica_id: "replica".to_owned(),
            policies,
            backend_kind: "stream".to_owned(),
            networks,
        }
    }
}

/// An engine on a fresh SQLite file, with sessions `s0..sessions` bound to chats
/// `c0..`, and a change to its setup.
async fn start(platform: Arc<Recorder>, agent: Arc<Agent>, sessions: usize, tweak: impl FnOnce(&mut Setup)) -> Running {
    start_at(Arc::new(tempfile::tempdir().unwrap()), platform, agent, sessions, tweak).await
}

/// An engine on the SQLite file in `dir` (another replica's, or a fresh one), with a
/// last change to its setup.
async fn start_at(dir: Arc<tempfile::TempDir>, platform: Arc<Recorder>, agent: Arc<Agent>, sessions: usize, tweak: impl FnOnce(&mut Setup)) -> Running {
    let url = format!("sqlite://{}", dir.path().join("bridge.db").display());
    let mut setup = Setup::default();
    tweak(&mut setup);
    let store = Store::connect(&url).await.unwrap();
    for s in 0..sessions {
        store.bind_chat(&chat(s), &format!("s{s}"), 0).await.unwrap();
        store.set_requester(&format!("s{s}"), &requester(s)).await.unwrap();
    }
    let (handle, requests) = EngineHandle::channel();
    let (backend, backend_rx) = mpsc::channel(1024);
    let connectors = Connectors::new(vec![agent as Arc<dyn Connector>]);
    let metrics = crate::metrics::Metrics::default();
    let engine = Engine::start(&setup.engine_config(), store.clone(), vec![platform as Arc<dyn Platform>], connectors, backend_rx, requests)
        .await
        .unwrap()
        .with_metrics(metrics.clone());
    let (show_owner, shards) = (engine.shared.show_owner.clone(), engine.shards.clone());
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(engine.run(async move {
        let _ = stopped.await;
    }));
    Running { handle, backend, store, show_owner, shards, stop, task, dir, metrics }
}

/// Who started session `s`'s turn, and so may answer its requests.
fn requester(s: usize) -> Actor {
    Actor::new("telegram", &format!("u{s}"), &format!("User {s}"))
}

fn chat(s: usize) -> ChatKey {
    ChatKey::new("telegram", &format!("c{s}"), None)
}

fn request(key: &str, timeout_secs: u64) -> Request {
    let action = ActionRequest { name: "execute_trade".into(), args: json!({"symbol": "VNM"}), description: None, tool_use_id: None };
    RequestBuilder::start(key, vec![action], vec![], Some(timeout_secs)).finish(TimeoutDefaults::default()).unwrap()
}

impl Running {
    /// `hitl_bridge_refusals_total{reason}` as this replica counts it.
    fn refusals(&self, reason: &str) -> u64 {
        let text = self.metrics.render().unwrap();
        let series = format!("hitl_bridge_refusals_total{{reason=\"{reason}\"}} ");
        text.lines().find_map(|l| l.strip_prefix(series.as_str())).map_or(0, |n| n.parse().unwrap())
    }

    async fn send(&self, session: &str, update: SessionUpdate) {
        self.backend.send(BackendInput { session_id: session.to_owned(), update }).await.unwrap();
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap();
    }
}

async fn wait_until(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !done().await {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn approve() -> UserAction {
    UserAction::DecideAll { decision: DecisionType::Approve }
}

/// Twenty sessions at once, each: 30 texts, then a request and at once the agent's
/// own timeout of it. Every chat gets its texts in order, and every request ends as
/// timed out by the agent: its timeout was handled after the request, never before.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_sessions_inputs_are_handled_in_order_while_many_sessions_send_at_once() {
    let platform = Arc::new(Recorder::default());
    let engine = start(platform.clone(), Arc::new(Agent::default()), 20, |_| {}).await;
    let mut senders = Vec::new();
    for s in 0..20 {
        let backend = engine.backend.clone();
        senders.push(tokio::spawn(async move {
            let session = format!("s{s}");
            for k in 0..30 {
                let text = SessionUpdate::Text { text: format!("{k}"), is_final: true, block: None };
                backend.send(BackendInput { session_id: session.clone(), update: text }).await.unwrap();
            }
            let key = format!("trade_{s}");
            backend.send(BackendInput { session_id: session.clone(), update: SessionUpdate::Request(request(&key, 600)) }).await.unwrap();
            backend.send(BackendInput { session_id: session, update: SessionUpdate::TimedOut { approval_key: key } }).await.unwrap();
        }));
    }
    for sender in senders {
        sender.await.unwrap();
    }
    let store = engine.store.clone();
    wait_until("every request stored and ended", async || {
        for s in 0..20 {
            match store.interaction_by_key(&format!("s{s}"), &format!("trade_{s}")).await.unwrap() {
                Some(interaction) if !interaction.status.is_pending() => {}
                _ => return false,
            }
        }
        true
    })
    .await;
    for s in 0..20 {
        let ended = engine.store.interaction_by_key(&format!("s{s}"), &format!("trade_{s}")).await.unwrap().expect("stored");
        assert!(matches!(ended.status, Status::Expired { by_backend: true, .. }), "s{s}: {:?}", ended.status);
    }
    let expected: Vec<String> = (0..30).map(|k| k.to_string()).collect();
    wait_until("every text", async || platform.texts.lock().unwrap().values().map(Vec::len).sum::<usize>() == 600).await;
    for s in 0..20 {
        assert_eq!(platform.texts.lock().unwrap()[&format!("c{s}")], expected, "chat c{s}");
    }
    engine.stop().await;
}

/// Session A's decision is stuck in a slow call after it became durable; session B,
/// on another shard, is decided meanwhile. Once A's call returns, A is decided too.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_session_stuck_in_a_slow_call_does_not_hold_back_another_sessions_decision() {
    let platform = Arc::new(Recorder::default());
    let agent = Arc::new(Agent::default());
    let engine = start(platform.clone(), agent.clone(), 16, |_| {}).await;
    let a = 0;
    let b = (1..16).find(|&b| engine.shards.of_session(&format!("s{b}")) != engine.shards.of_session("s0")).expect("two shards");
    for s in [a, b] {
        engine.send(&format!("s{s}"), SessionUpdate::Request(request(&format!("trade_{s}"), 600))).await;
    }
    wait_until("both requests shown", async || platform.shown().len() == 2).await;
    let id = |s: usize| platform.shown().into_iter().find(|i| i.session_id == format!("s{s}")).unwrap().id;
    let (release, stalled) = std::sync::mpsc::channel();
    *agent.stall.lock().unwrap() = Some(("s0".to_owned(), stalled));

    let handle = engine.handle.clone();
    let a_id = id(a);
    let decided_a = tokio::spawn(async move { handle.act(&a_id, requester(a), approve()).await });
    let store = engine.store.clone();
    wait_until("A's decision to be durable", async || !store.outbox_for_session("s0").await.unwrap().is_empty()).await;
    assert!(!decided_a.is_finished(), "A is held in the slow call");

    let decided_b = tokio::time::timeout(WAIT, engine.handle.act(&id(b), requester(b), approve())).await;
    assert!(matches!(decided_b, Ok(Ok(ActOutcome::Resolved(_)))), "{decided_b:?}");
    assert!(!decided_a.is_finished(), "A is still held while B was decided");

    release.send(()).unwrap();
    let decided_a = decided_a.await.unwrap();
    assert!(matches!(decided_a, Ok(ActOutcome::Resolved(_))), "{decided_a:?}");
    engine.stop().await;
}

/// A request with a 1 s deadline and no grace, handed to its shard three times (when
/// it arrives, and twice as a rescan would): the bridge expires it once, with one reject command
/// for the agent and one audit entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_seen_by_several_timers_expires_once() {
    let platform = Arc::new(Recorder::default());
    let engine = start(platform.clone(), Arc::new(Agent::default()), 1, |s| s.grace_secs = 0).await;
    engine.send("s0", SessionUpdate::Request(request("trade_0", 1))).await;
    wait_until("the request to be shown", async || platform.shown().len() == 1).await;
    // What a rescan hands over for a pending request it finds, twice.
    let pending = engine.store.interaction_by_key("s0", "trade_0").await.unwrap().expect("stored");
    for _ in 0..2 {
        let watch = Input::Watch(vec![Watched::of(&pending)]);
        assert!(engine.shards.send(engine.shards.of_session("s0"), watch).await);
    }
    let store = engine.store.clone();
    wait_until("the expiry", async || store.pending_interactions().await.unwrap().is_empty()).await;
    // Several more ticks, in which a second timer would fire.
    tokio::time::sleep(TICK * 3).await;

    let ended = engine.store.interaction_by_key("s0", "trade_0").await.unwrap().expect("stored");
    assert!(matches!(ended.status, Status::Expired { by_backend: false, .. }), "{:?}", ended.status);
    let commands = engine.store.outbox_for_session("s0").await.unwrap();
    assert_eq!(commands.len(), 1, "{commands:?}");
    assert!(matches!(&commands[0].1, Command::Approval { approval_key, .. } if approval_key == "trade_0"), "{commands:?}");
    assert_eq!(engine.store.audit_log("trade_0").await.unwrap().len(), 1);
    engine.stop().await;
}

/// A stop while a slow chat still has three requests to show: all three are shown
/// before `run` returns, and a request this replica had claimed but not yet shown is
/// at once claimable by another replica.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_drains_the_chat_lanes_and_releases_claims() {
    let platform = Arc::new(Recorder { show_delay: Duration::from_millis(200), ..Recorder::default() });
    let engine = start(platform.clone(), Arc::new(Agent::default()), 2, |_| {}).await;
    let now = now_ms();
    let claimed = Interaction::new("claimed00001".into(), "s1".into(), request("claimed", 600), None, now);
    assert!(
        engine
            .store
            .insert_interaction_to_show(&claimed, &[chat(1)], &ShowClaim { owner: engine.show_owner.clone(), until_ms: now + SHOW_CLAIM_MS }, now)
            .await
            .unwrap()
    );
    for k in 0..3 {
        engine.send("s0", SessionUpdate::Request(request(&format!("trade_{k}"), 600))).await;
    }
    let store = engine.store.clone();
    // The database outlives the engine: the other replica reads it after the stop,
    // maybe on a connection the pool opens then.
    let _database = engine.dir.clone();
    wait_until("the three requests stored", async || store.pending_in_session("s0").await.unwrap().len() == 3).await;
    let before = platform.shown().len();
    engine.stop().await;

    assert!(before < 3, "the stop came while requests were still to show");
    assert_eq!(platform.shown().len(), 3);
    let other = ShowClaim { owner: "other".into(), until_ms: now_ms() + 60_000 };
    let due = store.claim_due_shows(&other, now_ms()).await.unwrap();
    assert_eq!(due, vec![PendingShow { interaction_id: "claimed00001".into(), chat: chat(1), attempts: 0 }]);
}

/// A replica killed between claiming a request to show and showing it: a live replica
/// shows it once the dead one's claim lapses (claims are renewed every [`SHOW_RETRY`]
/// only while their replica lives), within about one lease period, and once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_a_dead_replica_claimed_to_show_is_shown_once_its_claim_lapses() {
    let platform = Arc::new(Recorder::default());
    let engine = start(platform.clone(), Arc::new(Agent::default()), 2, |_| {}).await;
    let now = now_ms();
    let stranded = Interaction::new("stranded0001".into(), "s1".into(), request("stranded", 600), None, now);
    let dead = ShowClaim { owner: "dead".into(), until_ms: now + SHOW_CLAIM_MS };
    assert!(engine.store.insert_interaction_to_show(&stranded, &[chat(1)], &dead, now).await.unwrap());
    let died = std::time::Instant::now();
    wait_until("the stranded request shown", async || platform.shown().iter().any(|i| i.id == "stranded0001")).await;
    let took = died.elapsed();
    let claim = Duration::from_millis(SHOW_CLAIM_MS as u64);
    // Margins for a busy machine: the claim still held at the sweeps before (every
    // 2 s), and the sweep after its lapse took it.
    assert!(took >= claim - Duration::from_secs(1), "not while the claim held: {took:?}");
    assert!(took <= claim + SHOW_RETRY + Duration::from_millis(1500), "at the first sweep after it lapsed: {took:?}");
    // Another sweep or two: this replica's own claim holds, nothing is shown twice.
    tokio::time::sleep(SHOW_RETRY * 2).await;
    assert_eq!(platform.shown().iter().filter(|i| i.id == "stranded0001").count(), 1);
    engine.stop().await;
}

/// A panic on a shard (here in the connector, on the decision path) is the engine's
/// panic: `run` panics with it, so the app reports it and the process exits non-zero,
/// instead of one shard silently answering nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_on_a_shard_is_the_engines_panic() {
    let platform = Arc::new(Recorder::default());
    let engine = start(platform.clone(), Arc::new(Agent { panics: true, ..Agent::default() }), 1, |_| {}).await;
    engine.send("s0", SessionUpdate::Request(request("trade_0", 600))).await;
    wait_until("the request to be shown", async || platform.shown().len() == 1).await;
    let decided = engine.handle.act(&platform.shown()[0].id, requester(0), approve()).await;
    assert!(matches!(decided, Err(ActError::Internal(_))), "{decided:?}");
    let ended = tokio::time::timeout(WAIT, engine.task).await.expect("the engine ends");
    let panic = ended.expect_err("the engine panicked").into_panic();
    assert_eq!(panic.downcast_ref::<&str>(), Some(&"a connector bug"));
}

/// Two replicas on one store count votes on the same request under a quorum at the
/// same time: a vote whose draft write loses to the other replica's is applied again
/// to what is stored, so every vote is answered "counted" and none is lost (nor
/// counted twice).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn votes_racing_on_two_replicas_are_all_counted() {
    const VOTERS: usize = 24;
    let voter = |n: usize| Actor::new("telegram", &format!("{}", 9000 + n), &format!("Voter {n}"));
    let under_quorum = |s: &mut Setup| {
        s.approvers = (0..VOTERS).map(|n| format!("telegram:{}", 9000 + n)).collect();
        // More votes than will be cast: the request stays open, every vote is a draft write.
        s.policies = vec![serde_json::from_value(json!({"tools": ["execute_trade"], "quorum": VOTERS + 1})).unwrap()];
    };
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let platform = Arc::new(Recorder::default());
    let a = start_at(dir.clone(), platform.clone(), Arc::new(Agent::default()), 1, under_quorum).await;
    let b = start_at(a.dir.clone(), Arc::new(Recorder::default()), Arc::new(Agent::default()), 0, under_quorum).await;
    a.send("s0", SessionUpdate::Request(request("trade_0", 600))).await;
    wait_until("the request to be shown", async || platform.shown().len() == 1).await;
    let id = platform.shown()[0].id.clone();

    let mut votes = JoinSet::new();
    for n in 0..VOTERS {
        let replica = if n % 2 == 0 { a.handle.clone() } else { b.handle.clone() };
        let id = id.clone();
        votes.spawn(async move { replica.act(&id, voter(n), approve()).await });
    }
    while let Some(vote) = votes.join_next().await {
        let vote = vote.unwrap();
        assert!(matches!(vote, Ok(ActOutcome::Updated(_))), "every vote is counted: {vote:?}");
    }
    let stored = a.store.interaction(&id).await.unwrap().expect("stored");
    let progress = stored.quorum_progress().expect("under a quorum");
    let mut voted: Vec<String> = progress.voters().map(|v| v.user_id.clone()).collect();
    voted.sort();
    let mut expected: Vec<String> = (0..VOTERS).map(|n| format!("{}", 9000 + n)).collect();
    expected.sort();
    assert_eq!(voted, expected);
    assert!(stored.status.is_pending());
    b.stop().await;
    a.stop().await;
}

/// Two replicas watch the same request's escalation timer (the second loaded it at
/// start, as after a restart or a rescan): when the reminder comes due, exactly one of
/// them sends it and audits it, because recording the step is conditional on the
/// revision both read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_escalation_step_watched_by_two_replicas_runs_once() {
    let reminding = |s: &mut Setup| {
        s.policies = vec![serde_json::from_value(json!({"tools": ["execute_trade"], "escalation": [{"after": 1, "remind": "approvers"}]})).unwrap()];
    };
    let (first, second) = (Arc::new(Recorder::default()), Arc::new(Recorder::default()));
    let a = start_at(Arc::new(tempfile::tempdir().unwrap()), first.clone(), Arc::new(Agent::default()), 1, reminding).await;
    a.send("s0", SessionUpdate::Request(request("trade_0", 600))).await;
    wait_until("the request to be shown", async || first.shown().len() == 1).await;
    let b = start_at(a.dir.clone(), second.clone(), Arc::new(Agent::default()), 0, reminding).await;
    let sent = || first.reminders.lock().unwrap().len() + second.reminders.lock().unwrap().len();
    wait_until("the reminder", async || sent() > 0).await;
    // Several more ticks of both replicas, in which a second reminder would go out.
    tokio::time::sleep(TICK * 4).await;
    assert_eq!(sent(), 1);
    let log = a.store.audit_log("trade_0").await.unwrap();
    assert_eq!(log.iter().filter(|e| e.outcome == "escalated").count(), 1, "{log:?}");
    let stored = a.store.interaction(&first.shown()[0].id).await.unwrap().expect("stored");
    assert_eq!((stored.escalations_done, stored.next_escalation_at()), (1, None));
    b.stop().await;
    a.stop().await;
}

/// Whatever refuses an attempt on a request, the engine's own check (applying an
/// action, opening a form) or the platform's check it runs ([`EngineHandle::open`]),
/// it is counted every time and audited once when it is about the person; a stale
/// click is only counted.
#[tokio::test]
async fn every_refusal_is_counted_and_audited_once_whoever_refused_it() {
    use crate::interaction::{Attempt, Opening, Refusal};
    let platform = Arc::new(Recorder::default());
    let running = start(platform.clone(), Arc::new(Agent::default()), 1, |_| {}).await;
    running.send("s0", SessionUpdate::Request(request("trade_0", 600))).await;
    wait_until("the request to be shown", async || platform.shown().len() == 1).await;
    let id = platform.shown()[0].id.clone();
    let mallory = Actor::new("telegram", "666", "Mallory");

    let acted = running.handle.act(&id, mallory.clone(), approve()).await;
    assert!(matches!(acted, Err(ActError::Refused(Refusal::NotAllowed))), "{acted:?}");
    let edit = Attempt::Open { open: Opening::Edit, index: 0 };
    let opened = running.handle.open(&id, mallory.clone(), edit, Box::new(|_| Ok(()))).await;
    assert!(matches!(opened, Err(ActError::Refused(Refusal::NotAllowed))), "{opened:?}");
    let page = Attempt::Open { open: Opening::Page, index: 9 };
    let opened = running.handle.open(&id, requester(0), page, Box::new(|_| Err(Refusal::OutOfRange("question")))).await;
    assert!(matches!(opened, Err(ActError::Refused(Refusal::OutOfRange(_)))), "{opened:?}");
    let fine = running.handle.open(&id, requester(0), Attempt::Open { open: Opening::Edit, index: 0 }, Box::new(|_| Ok(()))).await;
    assert_eq!(fine.map(|i| i.id).ok(), Some(id.clone()), "the requester may open the edit form");
    wait_until("both refusals to be counted", async || running.refusals("not_allowed") == 2 && running.refusals("out_of_range") == 1).await;

    let audited: Vec<(Option<Actor>, Option<serde_json::Value>, String)> =
        running.store.refused_attempts(0).await.unwrap().into_iter().map(|e| (e.actor, e.reply, e.approval_key)).collect();
    let why = "you are not allowed to answer this request";
    assert_eq!(
        audited,
        vec![
            (Some(mallory.clone()), Some(json!({"attempted": {"op": "decide_all", "decision": "approve"}, "reason": why})), "trade_0".to_owned()),
            (Some(mallory), Some(json!({"attempted": {"open": "edit", "index": 0}, "reason": why})), "trade_0".to_owned()),
        ]
    );
    running.stop().await;
}

/// A stranger writing again and again is answered once per refusal window: the first
/// attempt is refused aloud and audited, the next ones silently, counted on that entry
/// and in the metric.
#[tokio::test]
async fn a_stranger_is_answered_once_per_window_and_every_attempt_counted() {
    let running = start(Arc::new(Recorder::default()), Arc::new(Agent::default()), 1, |_| {}).await;
    let mallory = Actor::new("telegram", "666", "Mallory");
    let theirs = ChatKey::new("telegram", "666", None);
    let mut silent = Vec::new();
    for n in 0..5 {
        match running.handle.admit(theirs.clone(), mallory.clone(), "message", &format!("hi {n}"), Default::default()).await {
            Err(EngineError::NotAdmitted(stranger)) => silent.push(stranger.silent),
            other => panic!("a stranger is refused: {other:?}"),
        }
    }
    assert_eq!(silent, [false, true, true, true, true]);
    assert_eq!(running.refusals("stranger"), 5);
    let entries = running.store.refused_attempts(0).await.unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!((entries[0].attempts, entries[0].reply.as_ref().unwrap()["text"].clone()), (5, json!("hi 0")));
    running.stop().await;
}

/// A chat's lane holds the first [`lanes::HELD_SHOWS`] requests to show whole and the
/// rest by id, read when their turn comes: every one is shown once, in order, except
/// one settled while it waited, which is not shown at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_chat_queues_requests_beyond_the_held_ones_by_id() {
    let platform = Arc::new(Recorder { show_delay: Duration::from_millis(150), ..Recorder::default() });
    let engine = start(platform.clone(), Arc::new(Agent::default()), 1, |_| {}).await;
    let n = 8;
    assert!(lanes::HELD_SHOWS < n - 1, "the last one waits by id");
    for k in 0..n {
        engine.send("s0", SessionUpdate::Request(request(&format!("trade_{k}"), 600))).await;
    }
    let last = format!("trade_{}", n - 1);
    let waiting = loop {
        if let Some(i) = engine.store.interaction_by_key("s0", &last).await.unwrap() {
            break i;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    // Settled while its show waits behind the others (about a second of them).
    engine.handle.cancel_interaction(&waiting.id, "test".into()).await.unwrap();
    wait_until("the others shown", async || platform.shown().len() >= n - 1).await;
    // Longer than its turn: it would have been shown by now.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let keys: Vec<String> = platform.shown().iter().map(|i| i.approval_key().to_owned()).collect();
    let expected: Vec<String> = (0..n - 1).map(|k| format!("trade_{k}")).collect();
    assert_eq!(keys, expected, "in order, each once, the settled one not at all");
    engine.stop().await;
}

/// A refresh edits the messages it was handed, as the engine knew them when it queued
/// it, without reading them again: here the store has another one by then, which it
/// does not edit. Handed none (a `Show` may be queued before it), it edits what the
/// store has when it runs.
#[tokio::test]
async fn a_refresh_edits_the_messages_it_was_handed_and_reads_them_only_when_handed_none() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::connect(&format!("sqlite://{}", dir.path().join("r.db").display())).await.unwrap();
    let interaction = Interaction::new("i-1".into(), "s0".into(), request("trade_1", 600), None, 0);
    assert!(store.insert_interaction(&interaction).await.unwrap());
    let message = |id: &str| MessageRef { interaction_id: interaction.id.clone(), chat: chat(0), message_id: id.into() };
    store.add_message_ref(&message("m-stored")).await.unwrap();

    let platform = Arc::new(Recorder::default());
    let lanes = Lanes::new(store.clone(), vec![platform.clone()]);
    lanes.push(&chat(0), lanes::Job::Refresh(interaction.clone(), vec![message("m-handed")]));
    lanes.push(&chat(0), lanes::Job::Refresh(interaction.clone(), vec![]));
    lanes.barrier(&chat(0)).await.unwrap();
    assert_eq!(*platform.edited.lock().unwrap(), ["m-handed", "m-stored"]);
}

/// Two questions, the first with options A and B.
fn questions(key: &str) -> Request {
    let questions = json!([{"question": "Q1?", "options": [{"label": "A"}, {"label": "B"}]}, {"question": "Q2?", "options": [{"label": "C"}]}]);
    let action = ActionRequest { name: "ask_user_question".into(), args: json!({ "questions": questions }), description: None, tool_use_id: None };
    RequestBuilder::start(key, vec![action], vec![], Some(600)).finish(TimeoutDefaults::default()).unwrap()
}

/// A click keeps the UI state its plan asks for only when it goes through: with the
/// action it applies, or with what it opens. Refused by who may act, by the plan, or
/// by the core applying the action, it writes none, changes nothing, and the refusal
/// is counted (and audited when it is about the person) as what the click tried.
#[tokio::test]
async fn a_click_keeps_its_ui_state_only_when_it_goes_through() {
    use crate::interaction::{Attempt, Draft, Opening, Refusal};
    let platform = Arc::new(Recorder::default());
    let running = start(platform.clone(), Arc::new(Agent::default()), 1, |_| {}).await;
    running.send("s0", SessionUpdate::Request(questions("ask_1"))).await;
    wait_until("the request to be shown", async || platform.shown().len() == 1).await;
    let id = platform.shown()[0].id.clone();
    let step = |n: usize| UiStateWrite { kind: "test.step", key: id.clone(), value: n.to_string(), expires_ms: i64::MAX };
    let kept = async || running.store.ui_states().get("test.step", &id, 0).await.unwrap().map(|s| s.value);
    let select_a = UserAction::Select { question: 0, options: vec![0] };
    let mallory = Actor::new("telegram", "666", "Mallory");

    let (action, ui) = (select_a.clone(), step(1));
    let refused = running.handle.click(&id, mallory.clone(), Attempt::Act(select_a.clone()), move |_| Ok(Click::<()>::act(action).keeping(ui))).await;
    assert!(matches!(refused, Err(ActError::Refused(Refusal::NotAllowed))), "{refused:?}");
    let page = Attempt::Open { open: Opening::Page, index: 7 };
    let refused = running.handle.click(&id, requester(0), page, |_| Err::<Click<()>, _>(Refusal::OutOfRange("question"))).await;
    assert!(matches!(refused, Err(ActError::Refused(Refusal::OutOfRange("question")))), "{refused:?}");
    let blank = UserAction::OtherText { question: 0, text: "  ".into() };
    let (action, ui) = (blank.clone(), step(1));
    let refused = running.handle.click(&id, requester(0), Attempt::Act(blank), move |_| Ok(Click::<()>::act(action).keeping(ui))).await;
    assert!(matches!(refused, Err(ActError::Refused(Refusal::EmptyText))), "{refused:?}");
    assert_eq!(kept().await, None, "a refused click keeps no UI state");
    let draft = running.store.interaction(&id).await.unwrap().unwrap().draft;
    assert!(matches!(&draft, Draft::Answers { answers } if answers.iter().all(|a| !a.is_answered())), "{draft:?}");
    wait_until("every refusal to be counted", async || {
        running.refusals("not_allowed") == 1 && running.refusals("out_of_range") == 1 && running.refusals("empty_text") == 1
    })
    .await;
    let audited: Vec<(Option<Actor>, Option<serde_json::Value>)> =
        running.store.refused_attempts(0).await.unwrap().into_iter().map(|e| (e.actor, e.reply)).collect();
    let why = "you are not allowed to answer this request";
    assert_eq!(audited, vec![(Some(mallory), Some(json!({"attempted": {"op": "select", "question": 0, "options": [0]}, "reason": why})))]);

    let (action, ui) = (select_a.clone(), step(1));
    let acted = running.handle.click(&id, requester(0), Attempt::Act(select_a), move |_| Ok(Click::<()>::act(action).keeping(ui))).await;
    let Ok(Clicked::Acted(ActOutcome::Updated(updated))) = acted else { panic!("the requester's answer is applied: {acted:?}") };
    assert!(matches!(&updated.draft, Draft::Answers { answers } if answers[0].selected == [0] && !answers[1].is_answered()), "{:?}", updated.draft);
    assert_eq!(kept().await.as_deref(), Some("1"), "kept with the action");

    let ui = step(0);
    let page = Attempt::Open { open: Opening::Page, index: 0 };
    let opened = running.handle.click(&id, requester(0), page, move |i| Ok(Click::open(i.revision.0).keeping(ui))).await;
    let Ok(Clicked::Opened { interaction, then, ui_kept }) = opened else { panic!("the requester may turn a page: {opened:?}") };
    assert_eq!((interaction.id, then, ui_kept), (id.clone(), updated.revision.0, true), "the plan ran on the request as stored");
    assert_eq!(kept().await.as_deref(), Some("0"), "kept with the opening");
    running.stop().await;
}

/// Discord's Skip: several actions in one click, each stored in turn; the first
/// refusal stops the rest.
#[tokio::test]
async fn a_click_applies_several_actions_in_turn() {
    use crate::interaction::{Attempt, Refusal};
    let platform = Arc::new(Recorder::default());
    let running = start(platform.clone(), Arc::new(Agent::default()), 1, |_| {}).await;
    running.send("s0", SessionUpdate::Request(questions("ask_1"))).await;
    wait_until("the request to be shown", async || platform.shown().len() == 1).await;
    let id = platform.shown()[0].id.clone();
    let skip = |question| UserAction::Skip { question };

    // The second action is refused: the first stays applied, the third is not tried.
    let refused =
        running.handle.click(&id, requester(0), Attempt::Act(skip(0)), move |_| Ok(Click::<()>::act_in_turn(skip(0), vec![skip(5), UserAction::Submit]))).await;
    assert!(matches!(refused, Err(ActError::Refused(Refusal::OutOfRange("question")))), "{refused:?}");
    let stored = running.store.interaction(&id).await.unwrap().unwrap();
    assert!(stored.status.is_pending(), "Submit was not tried");
    assert!(matches!(&stored.draft, crate::interaction::Draft::Answers { answers } if answers[0].is_answered() && !answers[1].is_answered()));

    let acted = running.handle.click(&id, requester(0), Attempt::Act(skip(0)), move |_| Ok(Click::<()>::act_in_turn(skip(1), vec![UserAction::Submit]))).await;
    assert!(matches!(acted, Ok(Clicked::Acted(ActOutcome::Resolved(_)))), "{acted:?}");
    running.stop().await;
}

/// A platform that streams text: records each progress report and finished text; each
/// report takes a while, as an edit on a slow chat does.
#[derive(Default)]
struct Streamer {
    seen: Mutex<Vec<String>>,
}

impl Platform for Streamer {
    fn name(&self) -> &'static str {
        "slack"
    }

    fn send_text<'a>(&'a self, _: &'a ChatKey, text: &'a str) -> BoxFuture<'a, Result<(), PlatformError>> {
        self.seen.lock().unwrap().push(format!("text {text}"));
        Box::pin(async { Ok(()) })
    }

    fn text_progress<'a>(&'a self, _: &'a ChatKey, block: u64, text_so_far: &'a str) -> BoxFuture<'a, Result<(), PlatformError>> {
        self.seen.lock().unwrap().push(format!("progress {block} {text_so_far}"));
        Box::pin(async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            Ok(())
        })
    }

    fn finish_text<'a>(&'a self, _: &'a ChatKey, block: u64, text: &'a str) -> BoxFuture<'a, Result<(), PlatformError>> {
        self.seen.lock().unwrap().push(format!("finish {block} {text}"));
        Box::pin(async { Ok(()) })
    }

    fn tool_status<'a>(&'a self, _: &'a ChatKey, _: &'a ToolGroupStatus) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async { Ok(()) })
    }

    fn show_interaction<'a>(&'a self, _: &'a ChatKey, _: &'a Interaction) -> BoxFuture<'a, Result<Option<String>, PlatformError>> {
        Box::pin(async { Ok(None) })
    }

    fn refresh_interaction<'a>(&'a self, _: &'a MessageRef, _: &'a Interaction) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async { Ok(()) })
    }

    fn send_notice<'a>(&'a self, _: &'a ChatKey, _: &'a crate::interaction::updates::Notice) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async { Ok(()) })
    }

    fn send_reminder<'a>(&'a self, _: Reminder<'a>) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async { Ok(()) })
    }
}

/// While a chat is busy, the reports of a streaming text wait as one: a newer report
/// replaces the text of the one queued, and the complete text empties it (the finish
/// shows everything at once).
#[tokio::test]
async fn a_busy_chat_holds_one_progress_report_per_block_with_the_newest_text() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::connect(&format!("sqlite://{}", dir.path().join("p.db").display())).await.unwrap();
    let platform = Arc::new(Streamer::default());
    let lanes = Lanes::new(store, vec![platform.clone()]);
    let chat = ChatKey::new("slack", "C0OPS", None);
    lanes.progress(&chat, 7, "Một".into());
    // The first report is being shown (a while): these two wait as one.
    tokio::time::sleep(Duration::from_millis(50)).await;
    lanes.progress(&chat, 7, "Một, hai".into());
    lanes.progress(&chat, 7, "Một, hai, ba".into());
    lanes.barrier(&chat).await.unwrap();
    lanes.progress(&chat, 7, "Một, hai, ba, bốn".into());
    tokio::time::sleep(Duration::from_millis(50)).await;
    lanes.progress(&chat, 7, "Một, hai, ba, bốn, năm".into());
    lanes.push(&chat, lanes::Job::FinishText { block: 7, text: "Một, hai, ba, bốn, năm, sáu.".into() });
    lanes.barrier(&chat).await.unwrap();
    assert_eq!(
        *platform.seen.lock().unwrap(),
        ["progress 7 Một", "progress 7 Một, hai, ba", "progress 7 Một, hai, ba, bốn", "finish 7 Một, hai, ba, bốn, năm, sáu."]
    );
}

/// A platform that does not stream (the default methods) shows a streamed text once,
/// whole, as any other text, and nothing of its progress.
#[tokio::test]
async fn a_platform_that_does_not_stream_gets_the_complete_text_only() {
    let platform = Arc::new(Recorder::default());
    let engine = start(platform.clone(), Arc::new(Agent::default()), 1, |_| {}).await;
    engine.send("s0", SessionUpdate::TextProgress { block: 3, text_so_far: "Xin".into() }).await;
    engine.send("s0", SessionUpdate::Text { text: "Xin chào".into(), is_final: true, block: Some(3) }).await;
    wait_until("the text shown", async || platform.texts.lock().unwrap().get(&chat(0).chat_id).is_some()).await;
    engine.stop().await;
    assert_eq!(platform.texts.lock().unwrap()[&chat(0).chat_id], ["Xin chào"]);
}
