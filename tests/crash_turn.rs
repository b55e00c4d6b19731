//! The bridge killed (SIGKILL) while the agent is in the middle of a turn: the person
//! wrote, the message reached the agent, and the agent is still thinking (scenario b′
//! of the reference agent thinks 2 s before it asks). The bridge started again on the
//! same store must connect the session again by itself and show the request the agent
//! sends meanwhile or later, without the person writing again.
//!
//! Two kill points: a restart at once (the agent asks on the new connection), and a
//! restart after the agent asked (the request went out while no bridge listened; it is
//! in the agent's history).
//!
//! The agent's last words: killed after the chat showed the agent's first text and
//! before its final answer (scenario i), started again after the agent answered while
//! no bridge ran: the chat shows the answer exactly once and the first text not again,
//! whether the agent sends again what it said while no connection was open (the
//! reference agent's default) or only keeps it in its history. Killed after the answer
//! was shown: nothing of the turn again. An agent that only keeps its history and asked
//! while no bridge ran: its words, then its request, in that order.

mod support;

use std::time::Duration;

use serde_json::json;
use support::bridge_process::BridgeProcess;
use support::{session_id, start_sim};

/// From the message reaching the agent to the kill: the agent is still thinking.
const KILL_AFTER: Duration = Duration::from_millis(700);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime")
}

fn backend_env(sim: &hitl_bridge::agent_sim::SimHandle) -> Vec<(&'static str, String)> {
    vec![
        ("HITL_BRIDGE__BACKEND__URL", format!("ws://{}/ws/{{session_id}}", sim.addr)),
        ("HITL_BRIDGE__BACKEND__HISTORY_URL", format!("http://{}/sessions/{{session_id}}/history", sim.addr)),
    ]
}

/// Types `slow trade`, waits until the agent has the message, then waits `KILL_AFTER`
/// and kills the bridge.
fn kill_while_the_agent_thinks(db: &std::path::Path, sim: &hitl_bridge::agent_sim::SimHandle) {
    let mut bridge = BridgeProcess::start(db, &backend_env(sim));
    bridge.type_line("slow trade");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !sim.commands().iter().any(|c| c["type"] == "message") {
        assert!(std::time::Instant::now() < deadline, "the message never reached the agent");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(KILL_AFTER);
    bridge.kill();
}

/// The restarted bridge shows the request, takes the decision, and relays the agent's
/// answer; the agent got exactly one decision.
fn the_request_is_shown_and_answered(db: &std::path::Path, sim: &hitl_bridge::agent_sim::SimHandle) {
    let restarted = std::time::Instant::now();
    let mut bridge = BridgeProcess::start(db, &backend_env(sim));
    bridge.expect_within("execute_trade?", Duration::from_secs(20));
    println!("stream: the request was shown {:?} after the restart", restarted.elapsed());
    bridge.type_line("a");
    bridge.expect("agent: Đã đặt lệnh: buy 100 VNM @ 82000");
    let s = session_id(sim);
    let approvals: Vec<_> = sim.commands().into_iter().filter(|c| c["type"] == "approval").collect();
    assert_eq!(approvals, vec![json!({"type":"approval","session_id":s,"approval_key":format!("{s}_1"),"decisions":[{"type":"approve"}]})]);
    let messages = sim.commands().into_iter().filter(|c| c["type"] == "message").count();
    assert_eq!(messages, 1, "the person wrote once; nothing was sent again as a new turn");
    bridge.stop();
}

#[test]
fn a_request_asked_after_a_sigkill_mid_turn_is_shown_by_the_bridge_started_at_once() {
    let rt = runtime();
    let sim = rt.block_on(start_sim(300));
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bridge.db");
    kill_while_the_agent_thinks(&db, &sim);
    the_request_is_shown_and_answered(&db, &sim);
    rt.block_on(sim.shutdown());
}

#[test]
fn a_request_asked_while_no_bridge_ran_is_shown_by_the_next_one() {
    let rt = runtime();
    let sim = rt.block_on(start_sim(300));
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bridge.db");
    kill_while_the_agent_thinks(&db, &sim);
    // The agent asks while no bridge runs.
    std::thread::sleep(Duration::from_secs(3));
    the_request_is_shown_and_answered(&db, &sim);
    rt.block_on(sim.shutdown());
}

const FIRST_WORDS: &str = "agent: Để tôi tra cứu giá VNM.";
const LAST_WORDS: &str = "agent: Giá đóng cửa VNM hôm nay: 82000.";

/// Types `slow answer`, waits until the chat shows the agent's first text (and a moment
/// for the bridge to record it), kills the bridge, and waits until the agent has
/// answered while no bridge ran. The restarted bridge must show the answer once.
fn last_words_after_a_restart(rt: &tokio::runtime::Runtime, sim: &hitl_bridge::agent_sim::SimHandle) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bridge.db");
    let mut bridge = BridgeProcess::start(&db, &backend_env(sim));
    bridge.type_line("slow answer");
    bridge.expect_within(FIRST_WORDS, Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(300));
    bridge.kill();
    // The agent answers 2 s after its first words, while no bridge runs.
    std::thread::sleep(Duration::from_secs(3));
    let s = session_id(sim);
    let url = format!("http://{}/sessions/{s}/history", sim.addr);
    let history = rt.block_on(async { reqwest::get(&url).await.expect("history").text().await.expect("history body") });
    assert!(history.contains("Giá đóng cửa VNM hôm nay: 82000."), "the agent answered while no bridge ran: {history}");

    let restarted = std::time::Instant::now();
    let mut bridge = BridgeProcess::start(&db, &backend_env(sim));
    bridge.expect_within(LAST_WORDS, Duration::from_secs(20));
    println!("stream: the agent's last words were shown {:?} after the restart", restarted.elapsed());
    let seen = bridge.drain(Duration::from_secs(2)).to_vec();
    assert_eq!(seen.iter().filter(|line| line.contains(LAST_WORDS)).count(), 1, "the answer once:\n{}", seen.join("\n"));
    assert!(!seen.iter().any(|line| line.contains(FIRST_WORDS)), "the first text was shown before the kill, not again:\n{}", seen.join("\n"));
    let messages = sim.commands().into_iter().filter(|c| c["type"] == "message").count();
    assert_eq!(messages, 1, "the person wrote once; nothing was sent again as a new turn");
    bridge.stop();
}

#[test]
fn the_agents_last_words_said_while_no_bridge_ran_are_shown_once_when_the_agent_does_not_send_them_again() {
    let rt = runtime();
    let sim = rt.block_on(start_sim(300));
    sim.forget_unsent();
    last_words_after_a_restart(&rt, &sim);
    rt.block_on(sim.shutdown());
}

#[test]
fn the_agents_last_words_are_shown_once_when_the_agent_sends_them_again_too() {
    let rt = runtime();
    let sim = rt.block_on(start_sim(300));
    last_words_after_a_restart(&rt, &sim);
    rt.block_on(sim.shutdown());
}

/// Killed after the chat showed the final answer and the turn ended: the restarted
/// bridge shows nothing of that turn again, and the store holds no turn in progress.
#[test]
fn an_answer_shown_before_a_sigkill_is_not_shown_again_after_the_restart() {
    let rt = runtime();
    let sim = rt.block_on(start_sim(300));
    sim.forget_unsent();
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bridge.db");
    let mut bridge = BridgeProcess::start(&db, &backend_env(&sim));
    bridge.type_line("slow answer");
    bridge.expect_within(LAST_WORDS, Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(300));
    bridge.kill();
    let store = rt.block_on(hitl_bridge::store::Store::connect(&format!("sqlite://{}", db.display()))).expect("store");
    assert!(!rt.block_on(store.has_open_turn(&session_id(&sim))).expect("read"), "the turn's end was recorded once its answer was shown");
    rt.block_on(store.close());

    let mut bridge = BridgeProcess::start(&db, &backend_env(&sim));
    let seen = bridge.drain(Duration::from_secs(3)).to_vec();
    assert!(!seen.iter().any(|line| line.contains("Để tôi tra cứu") || line.contains("Giá đóng cửa")), "nothing of the ended turn again:\n{}", seen.join("\n"));
    bridge.stop();
    rt.block_on(sim.shutdown());
}

/// The agent asked while no bridge ran and does not send again what it said then: the
/// restarted bridge shows its words from the history, then the request, in that order.
#[test]
fn words_and_a_request_said_while_no_bridge_ran_are_shown_in_order_from_the_history() {
    let rt = runtime();
    let sim = rt.block_on(start_sim(300));
    sim.forget_unsent();
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bridge.db");
    kill_while_the_agent_thinks(&db, &sim);
    std::thread::sleep(Duration::from_secs(3));
    let mut bridge = BridgeProcess::start(&db, &backend_env(&sim));
    bridge.expect_within("agent: Tôi sẽ đặt lệnh mua VNM.", Duration::from_secs(20));
    bridge.expect_within("execute_trade?", Duration::from_secs(5));
    bridge.type_line("a");
    bridge.expect("agent: Đã đặt lệnh: buy 100 VNM @ 82000");
    let seen = bridge.drain(Duration::from_secs(1)).to_vec();
    assert_eq!(seen.iter().filter(|line| line.contains("Tôi sẽ đặt lệnh mua VNM.")).count(), 1, "{}", seen.join("\n"));
    bridge.stop();
    rt.block_on(sim.shutdown());
}
