//! The chaos suite: the bridge is killed, its backend goes away or freezes, floods it
//! with garbage, or forty people click at once, and still every decision reaches the
//! agent, once. Figures (rounds, lost, duplicates, detection and restart times) are
//! printed; run with `--nocapture` to see them.

use support::bridge_process;
use support::chaos_proxy;
mod support;
use support::withholding_proxy;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use hitl_bridge::engine::{ActError, ActOutcome};
use hitl_bridge::interaction::{Actor, Refusal, UserAction};
use hitl_bridge::protocol::Decision;
use hitl_bridge::store::Store;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use bridge_process::BridgeProcess;
use chaos_proxy::ChaosProxy;
use support::{Bridge, Rig, approvals, settings, start_sim, stop, wait_approvals, wait_until};
use withholding_proxy::WithholdingProxy;

fn thao() -> Actor {
    Actor::new("console", "console", "Thảo")
}

/// 20 people press Approve and 20 press Reject at the same moment: one decision wins,
/// 39 are refused with who decided, and the agent gets exactly one command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forty_concurrent_clicks_make_one_command() {
    let Rig { sim, mut bridge, dir: _dir } = Rig::start(60, &[]).await;
    bridge.send("trade").await;
    bridge.expect("execute_trade? [a]pprove").await;
    let id = bridge.wait_pending().await.id;
    let clicks: Vec<_> = (0..40)
        .map(|i| {
            let engine = bridge.engine().clone();
            let id = id.clone();
            let decision = if i % 2 == 0 { Decision::Approve } else { Decision::Reject { message: None } };
            tokio::spawn(async move { engine.act(&id, thao(), UserAction::Decide { action: 0, decision }).await })
        })
        .collect();
    let mut won = 0;
    for click in clicks {
        match click.await.unwrap() {
            Ok(ActOutcome::Resolved(_)) => won += 1,
            Err(ActError::Refused(Refusal::AlreadyDecided { by, .. })) => assert_eq!(by, "Thảo"),
            other => panic!("unexpected outcome: {other:?}"),
        }
    }
    assert_eq!(won, 1);
    wait_approvals(&sim, 1).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let got = approvals(&sim);
    println!("chaos: 40 concurrent clicks -> {} command(s)", got.len());
    assert_eq!(got.len(), 1, "{got:?}");
    stop(bridge, sim).await;
}

/// The connection to the agent freezes (half-open: writes vanish, nothing comes back).
/// The decision is shown as not yet delivered; the ping's read timeout drops the
/// connection, a new one delivers the decision once, and the message says so.
#[tokio::test]
async fn a_frozen_connection_is_detected_and_the_decision_sent_once() {
    let sim = start_sim(60).await;
    let proxy = ChaosProxy::start(sim.addr).await;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("ws://{}/ws/{{session_id}}", proxy.addr);
    let extra = [("backend.url", url.as_str()), ("backend.ping_secs", "1"), ("backend.read_timeout_secs", "3")];
    let mut bridge = Bridge::start(&settings(&sim, &dir, &extra)).await;
    bridge.send("trade").await;
    bridge.expect("execute_trade? [a]pprove").await;
    assert_eq!(proxy.freeze_all(), 1);
    let frozen_at = Instant::now();
    bridge.send("a").await;
    let saved = bridge.expect("decided by Thảo").await;
    assert!(saved.ends_with("(saved, not yet delivered to the agent)"), "{saved}");
    wait_approvals(&sim, 1).await;
    let detected = frozen_at.elapsed();
    let delivered = bridge.expect("decided by Thảo").await;
    assert!(!delivered.contains("not yet delivered"), "{delivered}");
    bridge.expect("agent: Đã đặt lệnh: buy 100 VNM @ 82000").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(approvals(&sim).len(), 1, "{:?}", approvals(&sim));
    assert!(proxy.connections() >= 2, "a new connection was opened");
    println!("chaos: half-open connection detected and the decision delivered after {detected:?} (read timeout 3 s)");
    stop(bridge, sim).await;
}

/// The agent is down for 30 s after the decision: nothing arrives meanwhile, then the
/// decision arrives once and the turn goes on.
#[tokio::test]
async fn backend_down_for_30_seconds_then_each_command_once() {
    let Rig { sim, mut bridge, dir: _dir } = Rig::start(120, &[]).await;
    bridge.send("trade").await;
    bridge.expect("execute_trade? [a]pprove").await;
    sim.set_down(true);
    bridge.send("a").await;
    let saved = bridge.expect("decided by Thảo").await;
    assert!(saved.ends_with("(saved, not yet delivered to the agent)"), "{saved}");
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(approvals(&sim).is_empty(), "nothing can arrive while the agent is down");
    sim.set_down(false);
    bridge.expect("agent: Đã đặt lệnh: buy 100 VNM @ 82000").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let messages = sim.commands().into_iter().filter(|c| c["type"] == "message").count();
    assert_eq!((approvals(&sim).len(), messages), (1, 1), "{:?}", sim.commands());
    stop(bridge, sim).await;
}

/// An agent that answers the first message with 1,000 malformed frames (binary, bad
/// JSON, 2 MiB, 10,000-deep nesting, a question with 300 options, missing keys and
/// wrong types) around one valid request: the bridge stays up, shows the valid request,
/// and the agent receives exactly the decision made on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_malformed_frames_around_one_valid_request() {
    let (addr, received) = hostile_backend().await;
    let sim = start_sim(60).await; // only its history URL is configured; unused here
    let dir = tempfile::tempdir().unwrap();
    let url = format!("ws://{addr}/ws/{{session_id}}");
    let mut bridge = Bridge::start(&settings(&sim, &dir, &[("backend.url", &url)])).await;
    bridge.send("go").await;
    let valid = wait_until(|| async { bridge.store.pending_interactions().await.unwrap().into_iter().find(|i| i.approval_key() == "hostile_1") }).await;
    let outcome = bridge.engine().act(&valid.id, thao(), UserAction::Decide { action: 0, decision: Decision::Approve }).await;
    assert!(matches!(outcome, Ok(ActOutcome::Resolved(_))), "{outcome:?}");
    let session = valid.session_id.clone();
    let got = wait_until(|| async {
        let got: Vec<Value> = received.lock().unwrap().iter().filter(|c| c["type"] == "approval").cloned().collect();
        (!got.is_empty()).then_some(got)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let all: Vec<Value> = received.lock().unwrap().iter().filter(|c| c["type"] == "approval").cloned().collect();
    assert_eq!(got[0], json!({"type":"approval","session_id":session,"approval_key":"hostile_1","decisions":[{"type":"approve"}]}));
    assert_eq!(all.len(), 1, "{all:?}");
    bridge.expect("decided by Thảo").await;
    stop(bridge, sim).await;
}

/// A backend at `addr` that answers a `message` with garbage around one request, and
/// records every command it receives.
async fn hostile_backend() -> (SocketAddr, Arc<Mutex<Vec<Value>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let received: Arc<Mutex<Vec<Value>>> = Arc::default();
    let log = received.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let log = log.clone();
            tokio::spawn(async move {
                let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await else { return };
                while let Some(Ok(frame)) = ws.next().await {
                    let Message::Text(text) = frame else { continue };
                    let Ok(command) = serde_json::from_str::<Value>(&text) else { continue };
                    log.lock().unwrap().push(command.clone());
                    if command["type"] == "message" {
                        for frame in garbage(1000) {
                            if ws.send(frame).await.is_err() {
                                return;
                            }
                        }
                        let request = json!({"type":"content_block_start","index":0,"content_block":{
                            "type":"approval_request","approval_key":"hostile_1",
                            "actions":[{"name":"execute_trade","args":{"symbol":"VNM","quantity":100}}],
                            "review_configs":[{"action_name":"execute_trade","allowed_decisions":["approve","reject"]}]}});
                        for event in [request, json!({"type":"content_block_stop","index":0})] {
                            let _ = ws.send(Message::Text(event.to_string())).await;
                        }
                    }
                }
            });
        }
    });
    (addr, received)
}

/// `n` frames a backend must never send, of every kind in turn.
fn garbage(n: usize) -> Vec<Message> {
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let options: Vec<Value> = (0..300).map(|i| json!({"label": format!("option {i}")})).collect();
    let huge_question = json!({"type":"content_block_start","index":50,"content_block":{
        "type":"approval_request","approval_key":"hostile_options",
        "actions":[{"name":"ask_user_question","args":{"questions":[{"question":"Pick one","options":options}]}}],
        "review_configs":[]}});
    (0..n)
        .map(|i| match i % 10 {
            0 if i % 200 == 0 => Message::Text(format!("{{\"type\":\"text\",\"pad\":\"{}\"}}", "x".repeat(2 * 1024 * 1024))),
            0 => Message::Binary(vec![0xff; 64]),
            1 => Message::Text("{not json".into()),
            2 => Message::Text(format!("{{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{deep}}}")),
            3 if i == 3 => Message::Text(huge_question.to_string()),
            3 => Message::Text(json!({"type":"content_block_start"}).to_string()),
            4 => Message::Text(json!({"index": 3}).to_string()),
            5 => Message::Text(json!({"type":"content_block_delta","index":99,"delta":{"type":"text_delta","text":"orphan"}}).to_string()),
            6 => Message::Text(json!({"type":"content_block_start","index":"x","content_block":5}).to_string()),
            7 => Message::Text(json!({"type":"approval_result","approval_key":42}).to_string()),
            8 => Message::Text("null".into()),
            _ => Message::Text(json!({"type":"wat","index":i}).to_string()),
        })
        .collect()
}

// ---- the real binary: SIGKILL and SIGTERM ----------------------------------------

/// `hitl-bridge run` on the reference agent at `sim`, its store the SQLite file `db`.
fn bridge_on(sim: SocketAddr, db: &std::path::Path) -> BridgeProcess {
    bridge_via(&format!("ws://{sim}"), sim, db)
}

/// As [`bridge_on`], with the WebSocket reached at `ws_base` (a proxy in front of the
/// agent); history is read from the agent itself.
fn bridge_via(ws_base: &str, sim: SocketAddr, db: &std::path::Path) -> BridgeProcess {
    BridgeProcess::start(
        db,
        &[
            ("HITL_BRIDGE__BACKEND__URL", format!("{ws_base}/ws/{{session_id}}")),
            ("HITL_BRIDGE__BACKEND__HISTORY_URL", format!("http://{sim}/sessions/{{session_id}}/history")),
            ("HITL_BRIDGE__BACKEND__LEASE_SECS", "3".into()),
        ],
    )
}

/// Per approval key, how many `approval` commands the agent received.
fn approvals_per_key(sim: &hitl_bridge::agent_sim::SimHandle) -> HashMap<String, usize> {
    let mut per_key = HashMap::new();
    for command in approvals(sim) {
        *per_key.entry(command["approval_key"].as_str().unwrap_or_default().to_owned()).or_default() += 1;
    }
    per_key
}

/// SIGKILL right after a click, 20 rounds with delays from 0 to 190 ms: after each
/// restart the request is answered again if the click did not survive, and in the
/// end every request got exactly one decision at the agent.
#[test]
fn sigkill_right_after_a_click_loses_nothing_and_sends_nothing_twice() {
    const ROUNDS: u64 = 20;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sim = rt.block_on(start_sim(600));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("bridge.db");
    let store_url = format!("sqlite://{}", db.display());
    let mut keys = Vec::new();
    let mut answered_again = 0;
    // Restart → decision at the agent, for the rounds whose click survived the kill.
    let mut after_restart = Vec::new();
    let mut bridge = bridge_on(sim.addr, &db);
    for round in 0..ROUNDS {
        bridge.type_line("trade");
        bridge.expect("execute_trade? [a]pprove");
        let store = rt.block_on(Store::connect(&store_url)).unwrap();
        let pending = rt.block_on(store.pending_interactions()).unwrap();
        assert_eq!(pending.len(), 1, "round {round}: {pending:?}");
        let key = pending[0].approval_key().to_owned();
        // The click is the subject, not the message: a kill before the agent proved it
        // read "trade" re-sends it, which (at least once) starts a second turn.
        let session = pending[0].session_id.clone();
        rt.block_on(wait_until(|| async {
            let queued = store.outbox_for_session(&session).await.unwrap();
            (!queued.iter().any(|(_, c)| matches!(c, hitl_bridge::protocol::Command::Message { .. }))).then_some(())
        }));
        rt.block_on(store.close());
        bridge.type_line("a");
        std::thread::sleep(Duration::from_millis(round * 10));
        bridge.kill();

        bridge = bridge_on(sim.addr, &db);
        let restarted = Instant::now();
        let store = rt.block_on(Store::connect(&store_url)).unwrap();
        let still_pending = rt.block_on(store.interaction_by_key(&pending[0].session_id, &key)).unwrap().is_some_and(|i| i.status.is_pending());
        rt.block_on(store.close());
        if still_pending {
            // The click never became a decision: the request is shown again; answer it.
            bridge.expect("execute_trade? [a]pprove");
            bridge.type_line("a");
            // Until the outcome is printed the card is the console's current prompt, and
            // the next round's "trade" would be read as an answer to it.
            bridge.expect("decided by Thảo");
            answered_again += 1;
        }
        rt.block_on(wait_until(|| async { approvals_per_key(&sim).contains_key(&key).then_some(()) }));
        if !still_pending {
            after_restart.push(restarted.elapsed());
        }
        keys.push(key);
    }
    std::thread::sleep(Duration::from_secs(2));
    let per_key = approvals_per_key(&sim);
    let lost = keys.iter().filter(|k| !per_key.contains_key(*k)).count();
    let duplicates: usize = keys.iter().map(|k| per_key.get(k).copied().unwrap_or(0).saturating_sub(1)).sum();
    println!("chaos: SIGKILL after a click: {ROUNDS} rounds, {answered_again} clicks answered again after the restart, {lost} lost, {duplicates} duplicates");
    after_restart.sort();
    let slowest = after_restart.last().copied().unwrap_or_default();
    println!(
        "chaos: a stored decision reached the agent after the restart in {:?} (median), {slowest:?} (slowest of {})",
        after_restart.get(after_restart.len() / 2).copied().unwrap_or_default(),
        after_restart.len()
    );
    // The restarted process is the same replica (the host name): it takes its own
    // session lease back at once instead of waiting backend.lease_secs for it to lapse.
    // The target is 2 s; the bound is generous for a busy machine.
    assert!(slowest < Duration::from_secs(5), "{after_restart:?}");
    bridge.stop();
    rt.block_on(sim.shutdown());
    assert_eq!((lost, duplicates), (0, 0), "{per_key:?}");
}

/// SIGTERM is a graceful stop (exit 0, leases released): after the restart, a decision
/// on the request that was pending reaches the agent within 1 s.
#[test]
fn after_a_graceful_restart_a_decision_reaches_the_agent_within_a_second() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sim = rt.block_on(start_sim(600));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("bridge.db");
    let mut bridge = bridge_on(sim.addr, &db);
    bridge.type_line("trade");
    bridge.expect("execute_trade? [a]pprove");
    bridge.stop();

    let mut bridge = bridge_on(sim.addr, &db);
    bridge.expect("execute_trade? [a]pprove");
    let clicked = Instant::now();
    bridge.type_line("a");
    rt.block_on(wait_until(|| async { (!approvals(&sim).is_empty()).then_some(()) }));
    let took = clicked.elapsed();
    println!("chaos: decision after a graceful restart reached the agent in {took:?}");
    assert!(took < Duration::from_secs(1), "took {took:?}");
    assert_eq!(approvals(&sim).len(), 1);
    bridge.stop();
    rt.block_on(sim.shutdown());
}

/// Killed while a request is shown (no click yet): after the restart the request is
/// shown again and a click reaches the agent at once, with no wait for the dead
/// process's lease.
#[test]
fn sigkill_while_a_request_is_shown_then_a_click_reaches_the_agent_at_once() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sim = rt.block_on(start_sim(600));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("bridge.db");
    let mut bridge = bridge_on(sim.addr, &db);
    bridge.type_line("trade");
    bridge.expect("execute_trade? [a]pprove");
    bridge.kill();

    let restarted = Instant::now();
    let mut bridge = bridge_on(sim.addr, &db);
    bridge.expect("execute_trade? [a]pprove");
    let shown = restarted.elapsed();
    bridge.type_line("a");
    rt.block_on(wait_until(|| async { (!approvals(&sim).is_empty()).then_some(()) }));
    let took = restarted.elapsed();
    println!("chaos: killed while shown; restart → shown again in {shown:?}, decision at the agent in {took:?}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(approvals(&sim).len(), 1, "once");
    bridge.stop();
    rt.block_on(sim.shutdown());
}

/// A SQLite store belongs to one process: a second bridge on the same file stops at
/// start with an error naming it, and the first keeps working.
#[test]
fn a_second_bridge_on_the_same_sqlite_file_is_refused() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sim = rt.block_on(start_sim(600));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("bridge.db");
    let mut first = bridge_on(sim.addr, &db);
    first.type_line("trade");
    first.expect("execute_trade? [a]pprove");
    let second = std::process::Command::new(env!("CARGO_BIN_EXE_hitl-bridge"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["run"])
        .env("HITL_BRIDGE__STORE__URL", format!("sqlite://{}", db.display()))
        .env("HITL_BRIDGE__HTTP__ENABLED", "false")
        .env("HITL_BRIDGE__CONSOLE__ENABLED", "false")
        .output()
        .expect("run a second bridge");
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success());
    assert!(stderr.contains(&format!("another hitl-bridge process is using the SQLite store {}", db.display())), "{stderr}");
    first.type_line("a");
    rt.block_on(wait_until(|| async { (!approvals(&sim).is_empty()).then_some(()) }));
    first.stop();
    rt.block_on(sim.shutdown());
}

/// Killed after the agent received a chat message but before the bridge had its proof
/// (the proxy passes the WebSocket handshake, then nothing back): the restarted bridge
/// writes the message again with the same `message_id`, the agent runs it once, the
/// request it raised is shown from history, and the click reaches the agent within
/// 2 s of the restart.
#[test]
fn sigkill_after_the_agent_received_the_message_runs_it_once() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let sim = rt.block_on(start_sim(600));
    let proxy = rt.block_on(WithholdingProxy::start(&format!("http://{}", sim.addr), "-", "-"));
    let ws_base = proxy.url.replace("http://", "ws://");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("bridge.db");
    let mut bridge = bridge_via(&ws_base, sim.addr, &db);
    proxy.withhold_after_handshake(true);
    bridge.type_line("trade");
    let messages = || sim.commands().into_iter().filter(|c| c["type"] == "message").collect::<Vec<Value>>();
    let first = rt.block_on(wait_until(|| async { messages().into_iter().next() }));
    let message_id = first["message_id"].as_str().expect("a message_id").to_owned();
    // The agent ran the turn and waits at its request; the bridge saw none of it.
    std::thread::sleep(Duration::from_millis(300));
    bridge.kill();

    proxy.withhold_after_handshake(false);
    let restarted = Instant::now();
    let mut bridge = bridge_via(&ws_base, sim.addr, &db);
    bridge.expect("execute_trade? [a]pprove");
    bridge.type_line("a");
    rt.block_on(wait_until(|| async { (!approvals(&sim).is_empty()).then_some(()) }));
    let took = restarted.elapsed();
    println!("chaos: killed after the message was received; the decision reached the agent {took:?} after the restart");
    let again: Vec<Value> = messages();
    assert!(again.iter().all(|m| m["message_id"] == message_id.as_str()), "one message, written again with its id: {again:?}");
    std::thread::sleep(Duration::from_millis(500));
    let keys = approvals_per_key(&sim);
    assert_eq!(keys.len(), 1, "one turn ran, so one request: {keys:?}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    bridge.stop();
    rt.block_on(sim.shutdown());
}
