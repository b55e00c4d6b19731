//! Agno AgentOS end to end: the real `agno` package (tests/backends/agno, installed by
//! tests/backends/install.sh) serves an agent whose model is a scripted fake OpenAI
//! server; the bridge (`backend.kind = "agno"`) talks to it over AgentOS's HTTP API
//! and to a fake Telegram through the real teloxide client. Each test asserts what
//! AgentOS did with the answer: the continued run read back from AgentOS, and what
//! the model was sent after the continue (the fake model records every request).
//!
//! AgentOS starts once for this test binary, on a free port, and exits with it.

use support::backends;
use support::bridge_process;
use support::fake_telegram;
mod support;
use support::backend_bridge::unique;
use support::telegram_chat::id_of;
use support::withholding_proxy;

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use fake_telegram::User;
use hitl_bridge::interaction::Interaction;
use hitl_bridge::store::Store;
use serde_json::{Value, json};
use support::backend_bridge::BackendBridge;
use support::wait_until;

/// The running AgentOS. Lives in a static, which is never dropped: the process also
/// exits when its stdin (held here) closes, i.e. when this test binary ends.
struct AgentOs {
    url: String,
    model_url: String,
    _child: Mutex<Child>,
    _stdin: Mutex<ChildStdin>,
    _dir: tempfile::TempDir,
}

static AGENT_OS: OnceLock<Option<AgentOs>> = OnceLock::new();

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// AgentOS, started on first use (`installed` fails the test when agno is not installed).
fn agent_os() -> Option<&'static AgentOs> {
    AGENT_OS.get_or_init(|| backends::installed("agno").map(start_agent_os)).as_ref()
}

fn start_agent_os(venv: std::path::PathBuf) -> AgentOs {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let mut child = Command::new(venv.join("bin/python"))
        .arg(backends::spec_dir("agno").join("agent_os.py"))
        .env("AGENT_OS_PORT", port.to_string())
        .env("AGENT_OS_DB", dir.path().join("agent_os.db"))
        .env("AGENT_OS_EXIT_ON_STDIN_EOF", "1")
        .env("AGNO_TELEMETRY", "false")
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start AgentOS");
    let stdin = child.stdin.take().expect("stdin");
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            child.stderr.take().map(|mut e| e.read_to_string(&mut err));
            panic!("AgentOS exited ({status}) before listening:\n{err}");
        }
        assert!(Instant::now() < deadline, "AgentOS did not listen on {port} within 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    let url = format!("http://127.0.0.1:{port}");
    let model_port = startup::get_json(&format!("{url}/fake-openai"))["port"].as_u64().expect("fake model port");
    AgentOs { url, model_url: format!("http://127.0.0.1:{model_port}"), _child: Mutex::new(child), _stdin: Mutex::new(stdin), _dir: dir }
}

/// A tiny blocking GET for start-up (no runtime needed there).
mod startup {
    use std::io::{Read, Write};
    use std::net::TcpStream;

    pub fn get_json(url: &str) -> serde_json::Value {
        let rest = url.strip_prefix("http://").expect("http url");
        let (host, path) = rest.split_once('/').map(|(h, p)| (h, format!("/{p}"))).unwrap_or((rest, "/".into()));
        let mut stream = TcpStream::connect(host).expect("connect");
        write!(stream, "GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n").expect("write");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("read");
        let body = response.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or_default();
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{url}: {e}: {response}"))
    }
}

impl AgentOs {
    async fn get(&self, url: String) -> Value {
        reqwest::get(&url).await.expect("GET").json().await.expect("JSON")
    }

    /// A run as AgentOS stored it.
    async fn run(&self, session_id: &str, run_id: &str) -> Value {
        self.get(format!("{}/agents/ops/runs/{run_id}?session_id={session_id}", self.url)).await
    }

    /// Waits until the run has `status`; returns it.
    async fn run_with_status(&self, session_id: &str, run_id: &str, status: &str) -> Value {
        wait_until(|| async {
            let run = self.run(session_id, run_id).await;
            (run["status"] == status).then_some(run)
        })
        .await
    }

    /// What the model was sent in conversations whose first user message has `word`.
    async fn model_requests(&self, word: &str) -> Vec<Value> {
        let all = self.get(format!("{}/requests", self.model_url)).await;
        all.as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|r| r["messages"].as_array().into_iter().flatten().any(|m| m["role"] == "user" && m["content"].as_str().is_some_and(|c| c.contains(word))))
            .collect()
    }

    /// The tool messages of the last request the model got for `word`.
    async fn tool_results_seen(&self, word: &str) -> Vec<Value> {
        let requests = self.model_requests(word).await;
        let last = requests.last().expect("the model was called");
        last["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] == "tool")
            .map(|m| json!({"tool_call_id": m["tool_call_id"], "content": m["content"]}))
            .collect()
    }
}

fn anh() -> User {
    User::new(4242, "Anh", Some("en"))
}

/// A bridge in front of AgentOS's agent `ops` on the fake Telegram, where Anh has a
/// private chat with the bot.
async fn start(os: &'static AgentOs) -> BackendBridge {
    BackendBridge::on("agno", anh()).settings(&[("agno.url", &os.url), ("agno.agent_id", "ops"), ("http.enabled", "false")]).start().await
}

/// The one pending interaction: its session (= the AgentOS session) and run id.
async fn pending(h: &BackendBridge) -> (Interaction, String, String) {
    let interaction = wait_until(|| async { h.store.pending_interactions().await.expect("pending").into_iter().next() }).await;
    let key = interaction.approval_key().to_owned();
    let run_id = key.split_once(':').expect("key names a run").0.to_owned();
    let session = interaction.session_id.clone();
    (interaction, session, run_id)
}

/// Approve: the tool runs in AgentOS, the model is sent its result, the run
/// completes and its final text reaches the chat.
#[tokio::test]
#[ignore = "needs the agno backend: bash tests/backends/install.sh agno, then cargo test -- --include-ignored"]
async fn approve_runs_the_tool_and_the_model_sees_its_result() {
    let Some(os) = agent_os() else { return };
    let h = start(os).await;
    let target = unique("prod");
    h.person().say(&format!("please deploy {target}"));
    let m = h.person().message_with("deploy").await;
    assert!(m["text"].as_str().unwrap().contains(&target), "the args are shown: {}", m["text"]);
    let (interaction, session, run_id) = pending(&h).await;
    assert!(interaction.approval_key().starts_with(&format!("{run_id}:call_")), "{}", interaction.approval_key());
    let paused = os.run(&session, &run_id).await;
    assert_eq!(paused["status"], "PAUSED");
    assert_eq!(paused["user_id"], "telegram:4242", "the run knows who asked");

    h.person().click(id_of(&m), "Approve").await;
    h.person().message_with(&format!("model saw: deployed to {target}")).await;
    let run = os.run_with_status(&session, &run_id, "COMPLETED").await;
    assert_eq!(run["tools"][0]["confirmed"], json!(true));
    assert_eq!(run["tools"][0]["result"], json!(format!("deployed to {target}")));
    let seen = os.tool_results_seen(&target).await;
    assert_eq!(seen, vec![json!({"tool_call_id": run["tools"][0]["tool_call_id"], "content": format!("deployed to {target}")})]);
    // The continue was sent once: one call before the pause, one after.
    assert_eq!(os.model_requests(&target).await.len(), 2);
    let done = h.person().message_shows(id_of(&m), "✅ Approved by Anh").await;
    assert!(done.get("reply_markup").is_none(), "the buttons are gone: {done}");
    h.finish().await;
}

/// Comment (a `respond`): the tool does not run, the note is what the model reads.
#[tokio::test]
#[ignore = "needs the agno backend: bash tests/backends/install.sh agno, then cargo test -- --include-ignored"]
async fn comment_rejects_with_a_note_the_model_reads() {
    let Some(os) = agent_os() else { return };
    let h = start(os).await;
    let target = unique("db");
    h.person().say(&format!("deploy {target}"));
    let m = h.person().message_with("deploy").await;
    let (_, session, run_id) = pending(&h).await;
    h.person().click(id_of(&m), "Comment").await;
    let note = format!("not on friday, {target}");
    h.person().reply_to_prompt("Reply with your comment", &note).await;
    h.person().message_with(&format!("model saw: {note}")).await;
    let run = os.run_with_status(&session, &run_id, "COMPLETED").await;
    assert_eq!(run["tools"][0]["confirmed"], json!(false));
    assert_eq!(run["tools"][0]["confirmation_note"], json!(note));
    let seen = os.tool_results_seen(&target).await;
    assert_eq!(seen, vec![json!({"tool_call_id": run["tools"][0]["tool_call_id"], "content": note})]);
    h.finish().await;
}

/// Two tool calls in one pause: one request, a decision each, one continue.
#[tokio::test]
#[ignore = "needs the agno backend: bash tests/backends/install.sh agno, then cargo test -- --include-ignored"]
async fn two_tool_calls_get_one_decision_each() {
    let Some(os) = agent_os() else { return };
    let h = start(os).await;
    let (a, b) = (unique("a"), unique("b"));
    h.person().say(&format!("deploy {a} and {b}"));
    let m = h.person().message_with(&b).await;
    let (_, session, run_id) = pending(&h).await;
    let id = id_of(&m);
    h.person().click(id, "Approve #1").await;
    h.person().message_shows(id, "→ ✅").await;
    h.person().click(id, "Reject #2").await;
    h.person().message_shows(id, "→ ❌").await;
    h.person().click(id, "Submit").await;
    h.person().message_with(&format!("model saw: deployed to {a} | Function call was rejected by the user")).await;
    let run = os.run_with_status(&session, &run_id, "COMPLETED").await;
    let tools: Vec<_> = run["tools"].as_array().unwrap().iter().map(|t| (t["tool_args"]["target"].clone(), t["confirmed"].clone())).collect();
    assert_eq!(tools, vec![(json!(a), json!(true)), (json!(b), json!(false))]);
    h.finish().await;
}

/// Seed 004: ask_user's multi-select question (with a label holding ", " and typed
/// "Other" text) and a single-select one; the labels reach the tool as
/// `selected_options` and the model reads them.
#[tokio::test]
#[ignore = "needs the agno backend: bash tests/backends/install.sh agno, then cargo test -- --include-ignored"]
async fn user_feedback_questions_reach_ask_user_as_selected_options() {
    let Some(os) = agent_os() else { return };
    let h = start(os).await;
    let word = unique("trip");
    h.person().say(&format!("plan a {word}"));
    let q = h.person().message_with("[1/2]").await;
    let id = id_of(&q);
    assert!(q["text"].as_str().unwrap().contains("Which activities do you want?"), "{}", q["text"]);
    let (_, session, run_id) = pending(&h).await;
    h.person().click(id, "Hiking").await;
    h.person().message_shows(id, "→ Hiking").await;
    h.person().click(id, "Museums, galleries").await;
    h.person().message_shows(id, "→ Hiking, Museums, galleries").await;
    h.person().click(id, "Other").await;
    h.person().reply_to_prompt("Reply with your answer", "Cooking class").await;
    h.person().message_shows(id, "→ Hiking, Museums, galleries, Cooking class").await;
    h.person().click(id, "Done").await;
    h.person().message_shows(id, "[2/2]").await;
    h.person().click(id, "Low").await;
    h.person().message_shows(id, "Your answers").await;
    h.person().click(id, "Submit").await;

    h.person().message_with("model saw: User feedback received").await;
    let run = os.run_with_status(&session, &run_id, "COMPLETED").await;
    let schema = &run["tools"][0]["user_feedback_schema"];
    assert_eq!(schema[0]["selected_options"], json!(["Hiking", "Museums, galleries", "Cooking class"]));
    assert_eq!(schema[1]["selected_options"], json!(["Low"]));
    assert_eq!(run["tools"][0]["answered"], json!(true));
    let seen = os.tool_results_seen(&word).await;
    let expected = "User feedback received: [{\"question\": \"Which activities do you want?\", \"selected\": [\"Hiking\", \"Museums, galleries\", \"Cooking class\"]}, \
                    {\"question\": \"What budget?\", \"selected\": [\"Low\"]}]";
    assert_eq!(seen, vec![json!({"tool_call_id": run["tools"][0]["tool_call_id"], "content": expected})]);
    h.finish().await;
}

/// The bridge restarts while a run waits: the old message's button still works, and
/// the continue is built from the run as AgentOS keeps it.
#[tokio::test]
#[ignore = "needs the agno backend: bash tests/backends/install.sh agno, then cargo test -- --include-ignored"]
async fn a_paused_run_is_answered_after_a_bridge_restart() {
    let Some(os) = agent_os() else { return };
    let mut h = start(os).await;
    let target = unique("edge");
    h.person().say(&format!("deploy {target}"));
    let m = h.person().message_with("deploy").await;
    let (_, session, run_id) = pending(&h).await;
    h.restart_bridge().await;
    h.person().click(id_of(&m), "Approve").await;
    h.person().message_with(&format!("model saw: deployed to {target}")).await;
    let run = os.run_with_status(&session, &run_id, "COMPLETED").await;
    assert_eq!(run["tools"][0]["confirmed"], json!(true));
    assert_eq!(os.model_requests(&target).await.len(), 2, "continued exactly once");
    h.finish().await;
}

/// AgentOS no longer has the run (its session was deleted): the answer cannot be
/// delivered, and the card says so instead of claiming it was.
#[tokio::test]
#[ignore = "needs the agno backend: bash tests/backends/install.sh agno, then cargo test -- --include-ignored"]
async fn an_answer_agentos_cannot_take_is_reported_on_the_card() {
    let Some(os) = agent_os() else { return };
    let h = start(os).await;
    let target = unique("gone");
    h.person().say(&format!("deploy {target}"));
    let m = h.person().message_with("deploy").await;
    let (_, session, _) = pending(&h).await;
    let deleted = reqwest::Client::new().delete(format!("{}/sessions/{session}", os.url)).send().await.expect("DELETE");
    assert!(deleted.status().is_success(), "{}", deleted.status());
    h.person().click(id_of(&m), "Approve").await;
    h.person().message_shows(id_of(&m), "not delivered: the agent stopped waiting for this").await;
    assert_eq!(os.model_requests(&target).await.len(), 1, "the model was not called again");
    h.finish().await;
}

/// `/cancel` while a run waits: the request closes in the chat and AgentOS is told
/// to cancel the session's open run. AgentOS keeps a paused run `PAUSED` and records
/// the cancellation: continuing it afterwards (here, by hand) is cancelled at once.
#[tokio::test]
#[ignore = "needs the agno backend: bash tests/backends/install.sh agno, then cargo test -- --include-ignored"]
async fn cancel_cancels_the_waiting_run() {
    let Some(os) = agent_os() else { return };
    let h = start(os).await;
    let target = unique("cancel");
    h.person().say(&format!("deploy {target}"));
    let m = h.person().message_with("deploy").await;
    let (_, session, run_id) = pending(&h).await;
    h.person().say("/cancel");
    h.person().message_shows(id_of(&m), "Cancelled").await;
    // The cancel command leaves the outbox once AgentOS answered it.
    wait_until(|| async { h.store.outbox_for_session(&session).await.expect("outbox").is_empty().then_some(()) }).await;
    let run = os.run(&session, &run_id).await;
    assert_eq!(run["status"], "PAUSED");
    let mut tools = run["tools"].clone();
    tools[0]["confirmed"] = json!(true);
    let form = [("tools", tools.to_string()), ("session_id", session.clone()), ("stream", "true".into())];
    let url = format!("{}/agents/ops/runs/{run_id}/continue", os.url);
    let body = reqwest::Client::new().post(url).form(&form).send().await.expect("continue").text().await.expect("body");
    assert!(body.contains("event: RunCancelled") && !body.contains("ToolCallStarted"), "{body}");
    assert_eq!(os.model_requests(&target).await.len(), 1, "the model was not called again");
    h.finish().await;
}

// ---- SIGKILL at each point of a turn, the real binary ------------------------------

use bridge_process::BridgeProcess;
use withholding_proxy::WithholdingProxy;

/// `hitl-bridge run` on the agent `ops` of the shared AgentOS, reached at `url`.
fn bridge_on(db: &std::path::Path, url: &str) -> BridgeProcess {
    BridgeProcess::start(
        db,
        &[("HITL_BRIDGE__BACKEND__KIND", "agno".into()), ("HITL_BRIDGE__AGNO__URL", url.into()), ("HITL_BRIDGE__AGNO__AGENT_ID", "ops".into())],
    )
}

/// Starts a new session at the console (proving the bridge is up) and returns its id,
/// which is also the AgentOS session id.
fn new_session(bridge: &mut BridgeProcess) -> String {
    bridge.type_line("/new");
    let line = bridge.expect("· new session ");
    line.rsplit(' ').next().expect("a session id").trim().to_owned()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime")
}

/// The session's runs as AgentOS lists them.
async fn runs_of(os: &AgentOs, session: &str) -> Vec<Value> {
    let response = reqwest::get(format!("{}/agents/ops/runs?session_id={session}", os.url)).await.expect("GET runs");
    if response.status() == reqwest::StatusCode::NOT_FOUND {
        return Vec::new();
    }
    response.json::<Value>().await.expect("JSON").as_array().cloned().unwrap_or_default()
}

/// Waits until the session has exactly one run, in `status`.
async fn one_run_with_status(os: &AgentOs, session: &str, status: &str) -> Value {
    wait_until(|| async {
        let runs = runs_of(os, session).await;
        (runs.len() == 1 && runs[0]["status"] == status).then(|| runs[0].clone())
    })
    .await
}

/// Killed after AgentOS started the message's run but before the bridge heard back
/// (the proxy withholds the answer): the restarted bridge finds the run by the
/// message's id in its metadata, does not send the message again, and the click
/// continues the one run.
#[test]
#[ignore = "needs the agno backend: bash tests/backends/install.sh agno, then cargo test -- --include-ignored"]
fn sigkill_after_the_message_reached_agentos_does_not_run_it_twice() {
    let Some(os) = agent_os() else { return };
    let rt = runtime();
    let proxy = rt.block_on(WithholdingProxy::start(&os.url, "POST /agents/ops/runs ", "HTTP"));
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bridge.db");
    let target = unique("crash-msg");
    let mut bridge = bridge_on(&db, &proxy.url);
    let session = new_session(&mut bridge);
    proxy.withhold(true);
    bridge.type_line(&format!("deploy {target}"));
    rt.block_on(one_run_with_status(os, &session, "PAUSED"));
    assert_eq!(proxy.withheld(), 1, "the run's answer was withheld");
    bridge.kill();

    proxy.withhold(false);
    let restarted = Instant::now();
    let mut bridge = bridge_on(&db, &proxy.url);
    bridge.expect("deploy? [a]pprove");
    bridge.type_line("a");
    bridge.expect(&format!("model saw: deployed to {target}"));
    println!("agno: killed after the message; restart → tool ran in {:?}", restarted.elapsed());
    let run = rt.block_on(one_run_with_status(os, &session, "COMPLETED"));
    assert_eq!(run["tools"][0]["confirmed"], json!(true));
    assert_eq!(rt.block_on(os.model_requests(&target)).len(), 2, "one call before the pause, one after: the message ran once");
    bridge.stop();
}

/// Killed while the request is shown: the restarted bridge replays it from AgentOS's
/// paused run, and the click continues it once.
#[test]
#[ignore = "needs the agno backend: bash tests/backends/install.sh agno, then cargo test -- --include-ignored"]
fn sigkill_while_the_request_is_shown_then_the_click_continues_the_run_once() {
    let Some(os) = agent_os() else { return };
    let rt = runtime();
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bridge.db");
    let target = unique("crash-shown");
    let mut bridge = bridge_on(&db, &os.url);
    let session = new_session(&mut bridge);
    bridge.type_line(&format!("deploy {target}"));
    bridge.expect("deploy? [a]pprove");
    bridge.kill();

    let restarted = Instant::now();
    let mut bridge = bridge_on(&db, &os.url);
    bridge.expect("deploy? [a]pprove");
    bridge.type_line("a");
    bridge.expect(&format!("model saw: deployed to {target}"));
    println!("agno: killed while shown; restart → tool ran in {:?}", restarted.elapsed());
    rt.block_on(one_run_with_status(os, &session, "COMPLETED"));
    assert_eq!(rt.block_on(os.model_requests(&target)).len(), 2);
    bridge.stop();
}

/// Killed after AgentOS continued the run with the decision but before the bridge
/// heard back (the proxy withholds the answer): the restarted bridge reads the run,
/// sees the decision in it, sends nothing, and records the decision as delivered.
#[test]
#[ignore = "needs the agno backend: bash tests/backends/install.sh agno, then cargo test -- --include-ignored"]
fn sigkill_after_agentos_took_the_decision_before_its_proof_records_it_delivered() {
    let Some(os) = agent_os() else { return };
    let rt = runtime();
    let proxy = rt.block_on(WithholdingProxy::start(&os.url, "POST /agents/ops/runs/", "/continue"));
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bridge.db");
    let target = unique("crash-proof");
    let mut bridge = bridge_on(&db, &proxy.url);
    let session = new_session(&mut bridge);
    bridge.type_line(&format!("deploy {target}"));
    let card = bridge.expect("┌ approval ");
    let key = card.split_whitespace().nth(2).expect("┌ approval <key>").to_owned();
    bridge.expect("deploy? [a]pprove");
    proxy.withhold(true);
    bridge.type_line("a");
    rt.block_on(one_run_with_status(os, &session, "COMPLETED"));
    assert_eq!(proxy.withheld(), 1, "the continue's answer was withheld");
    bridge.kill();

    proxy.withhold(false);
    let store = rt.block_on(Store::connect(&format!("sqlite://{}", db.display()))).expect("store");
    let bridge = bridge_on(&db, &proxy.url);
    let delivery = rt.block_on(wait_until(|| async {
        let interaction = store.interaction_by_key(&session, &key).await.ok().flatten()?;
        (interaction.delivery != hitl_bridge::interaction::Delivery::Queued).then_some(interaction.delivery)
    }));
    assert!(matches!(delivery, hitl_bridge::interaction::Delivery::Delivered { .. }), "{delivery:?}");
    assert_eq!(rt.block_on(os.model_requests(&target)).len(), 2, "continued once");
    rt.block_on(store.close());
    bridge.stop();
}

/// Killed right after the click, at several delays: the run is continued exactly once
/// with the decision, and a decision that reached AgentOS is never reported as "not
/// delivered".
#[test]
#[ignore = "needs the agno backend: bash tests/backends/install.sh agno, then cargo test -- --include-ignored"]
fn sigkill_right_after_the_click_continues_the_run_exactly_once() {
    let Some(os) = agent_os() else { return };
    let rt = runtime();
    for delay_ms in [0u64, 40, 150, 400] {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("bridge.db");
        let target = unique("crash-click");
        let mut bridge = bridge_on(&db, &os.url);
        let session = new_session(&mut bridge);
        bridge.type_line(&format!("deploy {target}"));
        bridge.expect("deploy? [a]pprove");
        bridge.type_line("a");
        std::thread::sleep(Duration::from_millis(delay_ms));
        bridge.kill();

        let restarted = Instant::now();
        let mut bridge = bridge_on(&db, &os.url);
        let clicked_again = rt.block_on(bridge_process::anything_pending(&db));
        if clicked_again {
            bridge.expect("deploy? [a]pprove");
            bridge.type_line("a");
        }
        let run = rt.block_on(one_run_with_status(os, &session, "COMPLETED"));
        let took = restarted.elapsed();
        let lines = bridge.drain(Duration::from_secs(1)).join("\n");
        println!("agno: killed {delay_ms} ms after the click (clicked again: {clicked_again}); run completed {took:?} after the restart");
        assert_eq!(run["tools"][0]["confirmed"], json!(true), "delay {delay_ms} ms");
        assert_eq!(rt.block_on(os.model_requests(&target)).len(), 2, "delay {delay_ms} ms: continued once");
        assert!(!lines.contains("not delivered"), "delay {delay_ms} ms: a delivered decision is reported as not delivered:\n{lines}");
        bridge.stop();
    }
}

/// Waits until the model has been called `n` times for `word` (a call is recorded
/// when it arrives, before a slow model answers it).
async fn model_called(os: &AgentOs, word: &str, n: usize) {
    wait_until(|| async { (os.model_requests(word).await.len() >= n).then_some(()) }).await
}

/// Killed while the model is still working on the message (it takes 3 s): AgentOS
/// pauses the run while no bridge listens; the restarted bridge connects the session
/// again by itself (the turn was open) and shows the request without the person
/// writing again, and the click continues the run once.
#[test]
#[ignore = "needs the agno backend: bash tests/backends/install.sh agno, then cargo test -- --include-ignored"]
fn sigkill_while_the_model_works_then_the_request_is_shown_after_the_restart() {
    let Some(os) = agent_os() else { return };
    let rt = runtime();
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bridge.db");
    let target = unique("crash-thinking");
    let mut bridge = bridge_on(&db, &os.url);
    let session = new_session(&mut bridge);
    bridge.type_line(&format!("deploy {target} slowly"));
    rt.block_on(one_run_with_status(os, &session, "RUNNING"));
    std::thread::sleep(Duration::from_millis(700));
    bridge.kill();

    let restarted = Instant::now();
    let mut bridge = bridge_on(&db, &os.url);
    bridge.expect_within("deploy? [a]pprove", Duration::from_secs(30));
    println!("agno: killed while the model worked; the request was shown {:?} after the restart", restarted.elapsed());
    bridge.type_line("a");
    bridge.expect(&format!("model saw: deployed to {target}"));
    let run = rt.block_on(one_run_with_status(os, &session, "COMPLETED"));
    assert_eq!(run["tools"][0]["confirmed"], json!(true));
    assert_eq!(rt.block_on(os.model_requests(&target)).len(), 2, "one call before the pause, one after");
    bridge.stop();
}

/// Killed after AgentOS took the decision and while the model works on its answer
/// (3 s): the restarted bridge follows the run and relays the answer once, and the
/// decision is not sent again.
#[test]
#[ignore = "needs the agno backend: bash tests/backends/install.sh agno, then cargo test -- --include-ignored"]
fn sigkill_after_the_continue_then_the_final_answer_arrives_once() {
    let Some(os) = agent_os() else { return };
    let rt = runtime();
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bridge.db");
    let target = unique("crash-answer");
    let mut bridge = bridge_on(&db, &os.url);
    let session = new_session(&mut bridge);
    bridge.type_line(&format!("deploy {target} slowly"));
    bridge.expect_within("deploy? [a]pprove", Duration::from_secs(30));
    bridge.type_line("a");
    // AgentOS took the decision: the model works on its answer.
    rt.block_on(model_called(os, &target, 2));
    std::thread::sleep(Duration::from_millis(300));
    bridge.kill();

    let restarted = Instant::now();
    let mut bridge = bridge_on(&db, &os.url);
    bridge.expect_within(&format!("model saw: deployed to {target}"), Duration::from_secs(30));
    println!("agno: killed after the continue; the answer arrived {:?} after the restart", restarted.elapsed());
    let lines = bridge.drain(Duration::from_secs(2)).join("\n");
    assert_eq!(lines.matches(&format!("model saw: deployed to {target}")).count(), 1, "the answer once:\n{lines}");
    assert!(!lines.contains("not delivered"), "{lines}");
    assert_eq!(rt.block_on(os.model_requests(&target)).len(), 2, "continued once");
    let run = rt.block_on(one_run_with_status(os, &session, "COMPLETED"));
    assert_eq!(run["tools"][0]["confirmed"], json!(true));
    bridge.stop();
}
