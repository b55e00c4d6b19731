//! LangGraph end to end: a real `langgraph dev` server running a `create_agent` graph
//! with LangChain's `HumanInTheLoopMiddleware` and a scripted model
//! (tests/backends/langgraph/agent.py) ↔ the bridge (`backend.kind = "langgraph"`) ↔
//! the real teloxide client ↔ a fake Bot API. Each test chats, clicks, and then reads
//! the thread back from the server to assert what the graph received and did.
//!
//! One server per test binary (started on first use on a free port, stopped when the
//! binary exits: its wrapper, serve.py, watches our pipe). The tests are `#[ignore]`d:
//! a plain `cargo test` reports them ignored; `cargo test -- --include-ignored` runs
//! them, and fails without the install (tests/backends/install.sh langgraph).

use support::backends;
use support::bridge_process;
use support::fake_telegram;
mod support;
use support::telegram_chat;
use support::withholding_proxy;

use telegram_chat::text_of;

use std::process::{Child, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use fake_telegram::User;
use hitl_bridge::backend::langgraph::LangGraphSettings;
use hitl_bridge::config::Settings;
use hitl_bridge::store::{ChatKey, Store};
use serde_json::{Value, json};
use support::backend_bridge::BackendBridge;
use support::wait_until;

/// The server, once started: its base URL (`None`: not installed, the tests skip).
static SERVER: tokio::sync::OnceCell<Option<String>> = tokio::sync::OnceCell::const_new();
/// Its wrapper process; kept so its stdin stays open while the binary runs.
static SERVER_PROCESS: Mutex<Option<Child>> = Mutex::new(None);

const Q1: &str = "Thảo muốn tập trung vào mục tiêu nào?";
const Q2: &str = "Nhóm ngành quan tâm?";

async fn server() -> Option<String> {
    SERVER
        .get_or_init(|| async {
            let venv = backends::installed("langgraph")?;
            let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
            let workdir = tempfile::tempdir().expect("tempdir").keep();
            // The server's chatter goes to a file, named in any failure below.
            let log_path = venv.with_file_name("server.log");
            let log = std::fs::File::create(&log_path).expect("server log");
            let child = std::process::Command::new(venv.join("bin/python"))
                .arg(backends::spec_dir("langgraph").join("serve.py"))
                .arg(port.to_string())
                .arg(&workdir)
                .stdin(Stdio::piped())
                .stdout(log.try_clone().expect("log"))
                .stderr(log)
                .spawn()
                .expect("start langgraph dev");
            eprintln!("langgraph dev on port {port}; its log: {}", log_path.display());
            *SERVER_PROCESS.lock().unwrap() = Some(child);
            let base = format!("http://127.0.0.1:{port}");
            let client = reqwest::Client::new();
            let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
            loop {
                if client.get(format!("{base}/ok")).send().await.is_ok_and(|r| r.status().is_success()) {
                    break;
                }
                let exited = SERVER_PROCESS.lock().unwrap().as_mut().and_then(|c| c.try_wait().ok().flatten());
                assert!(exited.is_none(), "langgraph dev exited at start-up ({exited:?}); see {}", log_path.display());
                assert!(tokio::time::Instant::now() < deadline, "langgraph dev did not start within 90 s; see {}", log_path.display());
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Some(base)
        })
        .await
        .clone()
}

fn ann() -> User {
    User::new(3003, "Ann", Some("en"))
}

/// A bridge in front of one graph of the shared server, on the fake Telegram where
/// Ann has a private chat with the bot. (`installed` fails the test when the backend
/// is not installed.)
async fn start(assistant_id: &str) -> Option<BackendBridge> {
    let base = server().await?;
    Some(BackendBridge::on("langgraph", ann()).settings(&[("langgraph.url", &base), ("langgraph.assistant_id", assistant_id)]).start().await)
}

/// The server the bridge talks to.
fn server_url(h: &BackendBridge) -> &str {
    &h.settings.backends.get::<LangGraphSettings>().url
}

/// Waits for a request (a message with buttons) containing `needle`.
async fn request_with(h: &BackendBridge, needle: &str) -> i64 {
    let m = wait_until(|| async {
        h.telegram().bot_messages(h.chat).into_iter().find(|m| text_of(m).contains(needle) && m["reply_markup"]["inline_keyboard"].is_array())
    })
    .await;
    m["message_id"].as_i64().expect("message id")
}

/// The LangGraph thread of this chat's session.
async fn thread_id(h: &BackendBridge) -> String {
    let chat = ChatKey::new("telegram", &h.chat.to_string(), None);
    let session = wait_until(|| async { h.store.session_for_chat(&chat).await.ok().flatten() }).await;
    hitl_bridge::backend::langgraph::ids::thread_id(&session)
}

/// The thread's state as the server has it.
async fn thread_state(h: &BackendBridge) -> Value {
    let url = format!("{}/threads/{}/state", server_url(h), thread_id(h).await);
    reqwest::get(url).await.expect("state").json().await.expect("state JSON")
}

/// The thread's tool messages once there are `n`: (name, status, content).
async fn tool_messages(h: &BackendBridge, n: usize) -> Vec<(String, String, String)> {
    wait_until(|| async {
        let state = thread_state(h).await;
        let tools: Vec<_> = state["values"]["messages"]
            .as_array()?
            .iter()
            .filter(|m| m["type"] == "tool")
            .map(|m| {
                (m["name"].as_str().unwrap_or("").to_owned(), m["status"].as_str().unwrap_or("").to_owned(), m["content"].as_str().unwrap_or("").to_owned())
            })
            .collect();
        (tools.len() >= n).then_some(tools)
    })
    .await
}

const EDIT_NOTICE: &str = "Note: a human reviewer replaced this tool call before it ran.";

/// Batched: a message starts a run, its interrupt becomes approval buttons, Edit sends
/// the typed args; the thread shows the tool ran with them and the model's answer
/// reaches the chat.
#[tokio::test]
#[ignore = "needs the langgraph backend: bash tests/backends/install.sh langgraph, then cargo test -- --include-ignored"]
async fn batched_edit_runs_the_tool_with_the_edited_args() {
    let Some(h) = start("agent").await else { return };
    h.person().say("trade please");
    let id = request_with(&h, "execute_trade").await;
    let request = h.telegram().message(h.chat, id).unwrap();
    assert!(text_of(&request).contains("\"quantity\": 100"), "{}", text_of(&request));
    h.person().click(id, "Edit").await;
    h.person().reply_to_prompt("Reply with the new arguments as a JSON object.", r#"{"symbol":"VNM","quantity":50}"#).await;
    h.person().message_with("done. execute_trade=success").await;

    let tools = tool_messages(&h, 1).await;
    assert_eq!(tools.len(), 1, "{tools:?}");
    let (name, status, content) = &tools[0];
    assert_eq!((name.as_str(), status.as_str()), ("execute_trade", "success"));
    assert!(content.starts_with(EDIT_NOTICE), "{content}");
    assert!(content.contains(r#"Executed instead: execute_trade with arguments {"symbol": "VNM", "quantity": 50}"#), "{content}");
    assert!(content.ends_with("bought 50 VNM"), "{content}");
    let state = thread_state(&h).await;
    assert_eq!(state["interrupts"], json!([]), "nothing left waiting");
    h.finish().await;
}

/// Batched, two actions in one interrupt: one decision each, in order (approve, and
/// `respond` for the report, which then does not run).
#[tokio::test]
#[ignore = "needs the langgraph backend: bash tests/backends/install.sh langgraph, then cargo test -- --include-ignored"]
async fn batched_two_actions_approve_and_respond() {
    let Some(h) = start("agent").await else { return };
    h.person().say("two things");
    let id = request_with(&h, "send_report").await;
    h.person().click(id, "Approve #1").await;
    h.person().click(id, "Comment #2").await;
    h.person().reply_to_prompt("Reply with your comment.", "already sent by hand").await;
    h.person().message_shows(id, "Comment").await;
    h.person().click(id, "Submit").await;
    h.person().message_with("execute_trade=success: bought 100 VNM").await;

    let tools = tool_messages(&h, 2).await;
    let expected = [
        ("send_report".to_owned(), "success".to_owned(), "already sent by hand".to_owned()),
        ("execute_trade".to_owned(), "success".to_owned(), "bought 100 VNM".to_owned()),
    ];
    // The middleware answers the responded call at once; the approved one runs after.
    assert_eq!(tools, expected);
    h.finish().await;
}

/// The question tool: its interrupt becomes the question wizard (single then multi
/// select); the answers go back as a `respond` decision whose message is the answers
/// JSON, which the graph hands the model as the tool's result.
#[tokio::test]
#[ignore = "needs the langgraph backend: bash tests/backends/install.sh langgraph, then cargo test -- --include-ignored"]
async fn questions_are_answered_with_a_respond_decision() {
    let Some(h) = start("agent").await else { return };
    h.person().say("ask me");
    let id = request_with(&h, Q1).await;
    h.person().click(id, "Cổ tức bền vững").await;
    h.person().message_shows(id, Q2).await;
    h.person().click(id, "Ngân hàng").await;
    h.person().message_shows(id, "→ Ngân hàng").await;
    h.person().click(id, "Bán lẻ").await;
    h.person().message_shows(id, "→ Ngân hàng, Bán lẻ").await;
    h.person().click(id, "Done").await;
    h.person().message_shows(id, "Your answers").await;
    h.person().click(id, "Submit").await;
    h.person().message_with("done. ask_user_question=success").await;

    let tools = tool_messages(&h, 1).await;
    let (name, status, content) = &tools[0];
    assert_eq!((name.as_str(), status.as_str()), ("ask_user_question", "success"));
    // Exact text: question order kept.
    assert_eq!(content, &json!({Q1: "Cổ tức bền vững (Recommended)", Q2: "Ngân hàng, Bán lẻ"}).to_string());
    h.finish().await;
}

/// per_call: one interrupt per tool call, each its own request; each decision resumes
/// its interrupt alone, and the other stays waiting under the same key.
#[tokio::test]
#[ignore = "needs the langgraph backend: bash tests/backends/install.sh langgraph, then cargo test -- --include-ignored"]
async fn per_call_interrupts_are_decided_one_by_one() {
    let Some(h) = start("agent_per_call").await else { return };
    h.person().say("two things");
    let trade = request_with(&h, "execute_trade").await;
    let report = request_with(&h, "send_report").await;
    assert_ne!(trade, report);
    h.person().click(trade, "Reject").await;
    // The trade is answered; the report still waits, with the same interrupt id.
    let tools = tool_messages(&h, 1).await;
    assert_eq!(tools[0].0, "execute_trade");
    assert_eq!(tools[0].1, "error");
    assert!(tools[0].2.starts_with("User rejected the tool call for `execute_trade` with id call_trade."), "{}", tools[0].2);
    let state = thread_state(&h).await;
    let waiting = state["interrupts"].as_array().expect("interrupts");
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    assert_eq!(waiting[0]["value"]["name"], "send_report");
    assert_eq!(h.telegram().bot_messages(h.chat).iter().filter(|m| text_of(m).contains("<b>send_report</b>")).count(), 1, "raised again, shown once");

    h.person().click(report, "Approve").await;
    h.person().message_with("send_report=success: report sent").await;
    let tools = tool_messages(&h, 2).await;
    assert_eq!((tools[1].0.as_str(), tools[1].1.as_str(), tools[1].2.as_str()), ("send_report", "success", "report sent to ops@example.com"));
    assert_eq!(thread_state(&h).await["interrupts"], json!([]));
    h.finish().await;
}

/// A resume the server refuses (per_call checks an edit against the tool's argument
/// types) is reported in the chat; the tool did not run.
#[tokio::test]
#[ignore = "needs the langgraph backend: bash tests/backends/install.sh langgraph, then cargo test -- --include-ignored"]
async fn a_refused_resume_is_reported_in_the_chat() {
    let Some(h) = start("agent_per_call").await else { return };
    h.person().say("trade");
    let id = request_with(&h, "execute_trade").await;
    h.person().click(id, "Edit").await;
    h.person().reply_to_prompt("Reply with the new arguments as a JSON object.", r#"{"symbol":"VNM","quantity":"fifty"}"#).await;
    let failure = h.person().message_with("The agent reported an error: ValidationError").await;
    assert!(text_of(&failure).contains("quantity"), "{}", text_of(&failure));
    let state = thread_state(&h).await;
    let ran = state["values"]["messages"].as_array().unwrap().iter().any(|m| m["type"] == "tool");
    assert!(!ran, "the refused edit did not run the tool");
    h.finish().await;
}

/// A decision for a thread the server no longer has (deleted, reset) is not sent: the
/// card says the agent stopped waiting, once, and nothing is retried.
#[tokio::test]
#[ignore = "needs the langgraph backend: bash tests/backends/install.sh langgraph, then cargo test -- --include-ignored"]
async fn a_decision_for_a_deleted_thread_is_not_delivered_and_not_resent() {
    let Some(h) = start("agent").await else { return };
    h.person().say("trade");
    let id = request_with(&h, "execute_trade").await;
    let thread = thread_id(&h).await;
    // Once the run is over (its stream closed), so the connection stays as it is.
    wait_until(|| async {
        let thread: Value = reqwest::get(format!("{}/threads/{thread}", server_url(&h))).await.ok()?.json().await.ok()?;
        (thread["status"] == "interrupted").then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let deleted = reqwest::Client::new().delete(format!("{}/threads/{thread}", server_url(&h))).send().await.expect("delete");
    assert!(deleted.status().is_success());
    h.person().click(id, "Approve").await;
    let card = wait_until(|| async {
        h.telegram().bot_messages(h.chat).into_iter().find(|m| m["message_id"].as_i64() == Some(id) && text_of(m).contains("not delivered"))
    })
    .await;
    assert!(text_of(&card).contains("the agent stopped waiting for this"), "{}", text_of(&card));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let runs: Value = reqwest::get(format!("{}/threads/{thread}/runs", server_url(&h))).await.expect("runs").json().await.expect("JSON");
    // Deleted and not made again (404), or made again empty: either way no run.
    assert!(runs.as_array().is_none_or(Vec::is_empty), "nothing was sent: {runs}");
    assert!(!h.telegram().bot_messages(h.chat).iter().any(|m| text_of(m).contains("LangGraph refused")));
    h.finish().await;
}

/// A bridge restart between the request and the click: the new connection reads the
/// waiting interrupt from the thread's state, so the click still resumes it.
#[tokio::test]
#[ignore = "needs the langgraph backend: bash tests/backends/install.sh langgraph, then cargo test -- --include-ignored"]
async fn a_restarted_bridge_resumes_what_the_thread_still_waits_for() {
    let Some(mut h) = start("agent").await else { return };
    h.person().say("trade");
    let id = request_with(&h, "execute_trade").await;
    h.restart_bridge().await;
    h.person().click(id, "Approve").await;
    h.person().message_with("done. execute_trade=success: bought 100 VNM").await;
    let tools = tool_messages(&h, 1).await;
    assert_eq!(tools, vec![("execute_trade".to_owned(), "success".to_owned(), "bought 100 VNM".to_owned())]);
    assert_eq!(h.telegram().bot_messages(h.chat).iter().filter(|m| text_of(m).contains("<b>execute_trade</b>")).count(), 1, "shown once across the restart");
    h.finish().await;
}

/// The example config loads as is; a bad `[langgraph]` key is named; the stream
/// kind's `backend.url` is not required.
#[test]
#[ignore = "needs the langgraph backend: bash tests/backends/install.sh langgraph, then cargo test -- --include-ignored"]
fn the_example_config_loads_and_bad_keys_are_named() {
    let settings = Settings::load(Some(&backends::repo().join("config/langgraph.toml"))).expect("config/langgraph.toml loads");
    assert_eq!(settings.backend.kind, "langgraph");
    let langgraph = settings.backends.get::<LangGraphSettings>();
    assert_eq!((langgraph.url.as_str(), langgraph.assistant_id.as_str()), ("http://127.0.0.1:2024", "agent"));
    assert_eq!(langgraph.question_tool, "ask_user_question");
    Settings::from_pairs(&[("backend.kind", "langgraph"), ("backend.url", "")]).expect("no stream url needed");
    for (key, value) in [("langgraph.url", "ws://127.0.0.1:2024"), ("langgraph.assistant_id", " "), ("langgraph.request_timeout_secs", "0")] {
        let err = Settings::from_pairs(&[("backend.kind", "langgraph"), (key, value)]).expect_err(key).to_string();
        assert!(err.contains(key), "{err}");
    }
    let err = Settings::from_pairs(&[("backend.kind", "langgraph"), ("langgraph.colour", "blue")]).expect_err("unknown key").to_string();
    assert!(err.contains("colour"), "{err}");
}

// ---- SIGKILL at each point of a turn, the real binary ------------------------------

use bridge_process::BridgeProcess;
use withholding_proxy::WithholdingProxy;

/// `hitl-bridge run` on the graph `agent` of the shared server, reached at `url`.
fn bridge_on(db: &std::path::Path, url: &str) -> BridgeProcess {
    BridgeProcess::start(
        db,
        &[
            ("HITL_BRIDGE__BACKEND__KIND", "langgraph".into()),
            ("HITL_BRIDGE__LANGGRAPH__URL", url.into()),
            ("HITL_BRIDGE__LANGGRAPH__ASSISTANT_ID", "agent".into()),
        ],
    )
}

/// Starts a new session at the console (which also proves the bridge is up, its store
/// migrated) and returns the LangGraph thread it maps to.
fn new_thread(bridge: &mut BridgeProcess) -> String {
    hitl_bridge::backend::langgraph::ids::thread_id(&new_session(bridge))
}

fn new_session(bridge: &mut BridgeProcess) -> String {
    bridge.type_line("/new");
    let line = bridge.expect("· new session ");
    line.rsplit(' ').next().expect("a session id").trim().to_owned()
}

/// The approval key of the card the console just printed.
fn shown_key(bridge: &mut BridgeProcess) -> String {
    let line = bridge.expect("┌ approval ");
    line.split_whitespace().nth(2).expect("┌ approval <key>").to_owned()
}

/// Waits until the bridge's store says where the reply of `key` is, other than queued.
async fn settled_delivery(store: &Store, session: &str, key: &str) -> hitl_bridge::interaction::Delivery {
    wait_until(|| async {
        let interaction = store.interaction_by_key(session, key).await.ok().flatten()?;
        (interaction.delivery != hitl_bridge::interaction::Delivery::Queued).then_some(interaction.delivery)
    })
    .await
}

async fn get_json(url: String) -> Value {
    reqwest::get(url).await.expect("GET").json().await.expect("JSON")
}

/// What the thread holds once its runs are over: (human messages, tool messages as
/// (name, status, content), runs).
async fn thread_record(base: &str, thread: &str) -> (Vec<String>, Vec<(String, String, String)>, usize) {
    wait_until(|| async { (get_json(format!("{base}/threads/{thread}")).await["status"] != "busy").then_some(()) }).await;
    let state = get_json(format!("{base}/threads/{thread}/state")).await;
    let messages = state["values"]["messages"].as_array().cloned().unwrap_or_default();
    let humans = messages.iter().filter(|m| m["type"] == "human").map(|m| m["content"].as_str().unwrap_or("").to_owned()).collect();
    let tools = messages
        .iter()
        .filter(|m| m["type"] == "tool")
        .map(|m| (m["name"].as_str().unwrap_or("").to_owned(), m["status"].as_str().unwrap_or("").to_owned(), m["content"].as_str().unwrap_or("").to_owned()))
        .collect();
    let runs = get_json(format!("{base}/threads/{thread}/runs?limit=100")).await.as_array().map_or(0, Vec::len);
    (humans, tools, runs)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime")
}

fn traded_once() -> Vec<(String, String, String)> {
    vec![("execute_trade".to_owned(), "success".to_owned(), "bought 100 VNM".to_owned())]
}

/// Killed after LangGraph started the message's run but before the bridge heard back
/// (the proxy withholds the answer): the restarted bridge finds the run by the
/// message's id in its metadata and does not send the message again, so the waiting
/// interrupt is not replaced, and the click runs the tool once.
#[test]
#[ignore = "needs the langgraph backend: bash tests/backends/install.sh langgraph, then cargo test -- --include-ignored"]
fn sigkill_after_the_message_reached_langgraph_does_not_run_it_twice() {
    let rt = runtime();
    let Some(base) = rt.block_on(server()) else { return };
    let proxy = rt.block_on(WithholdingProxy::start(&base, "POST /threads/", "/runs/stream"));
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bridge.db");
    let mut bridge = bridge_on(&db, &proxy.url);
    let thread = new_thread(&mut bridge);
    proxy.withhold(true);
    bridge.type_line("trade");
    rt.block_on(wait_until(|| async { (get_json(format!("{base}/threads/{thread}")).await["status"] == "interrupted").then_some(()) }));
    assert_eq!(proxy.withheld(), 1, "the run's answer was withheld");
    bridge.kill();

    proxy.withhold(false);
    let restarted = std::time::Instant::now();
    let mut bridge = bridge_on(&db, &proxy.url);
    bridge.expect("execute_trade? [a]pprove");
    bridge.type_line("a");
    bridge.expect("done. execute_trade=success: bought 100 VNM");
    println!("langgraph: killed after the message; restart → tool ran in {:?}", restarted.elapsed());
    let (humans, tools, runs) = rt.block_on(thread_record(&base, &thread));
    assert_eq!(humans, vec!["trade"], "the message ran once");
    assert_eq!(tools, traded_once());
    assert_eq!(runs, 2, "the message's run and the resume");
    bridge.stop();
}

/// Killed while the request is shown: the restarted bridge shows it again from the
/// thread's state, and the click resumes it.
#[test]
#[ignore = "needs the langgraph backend: bash tests/backends/install.sh langgraph, then cargo test -- --include-ignored"]
fn sigkill_while_the_request_is_shown_then_the_click_runs_the_tool_once() {
    let rt = runtime();
    let Some(base) = rt.block_on(server()) else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bridge.db");
    let mut bridge = bridge_on(&db, &base);
    let thread = new_thread(&mut bridge);
    bridge.type_line("trade");
    bridge.expect("execute_trade? [a]pprove");
    bridge.kill();

    let restarted = std::time::Instant::now();
    let mut bridge = bridge_on(&db, &base);
    bridge.expect("execute_trade? [a]pprove");
    bridge.type_line("a");
    bridge.expect("done. execute_trade=success: bought 100 VNM");
    println!("langgraph: killed while shown; restart → tool ran in {:?}", restarted.elapsed());
    let (humans, tools, runs) = rt.block_on(thread_record(&base, &thread));
    assert_eq!((humans, tools, runs), (vec!["trade".to_owned()], traded_once(), 2));
    bridge.stop();
}

/// Killed right after the click, at several delays: whether the decision was saved,
/// sent, or sent and run before the kill, the tool runs exactly once with it, and a
/// decision that reached LangGraph is never reported as "not delivered".
#[test]
#[ignore = "needs the langgraph backend: bash tests/backends/install.sh langgraph, then cargo test -- --include-ignored"]
fn sigkill_right_after_the_click_runs_the_tool_exactly_once() {
    let rt = runtime();
    let Some(base) = rt.block_on(server()) else { return };
    for delay_ms in [0u64, 40, 150, 400] {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("bridge.db");
        let mut bridge = bridge_on(&db, &base);
        let thread = new_thread(&mut bridge);
        bridge.type_line("trade");
        bridge.expect("execute_trade? [a]pprove");
        bridge.type_line("a");
        std::thread::sleep(Duration::from_millis(delay_ms));
        bridge.kill();

        let restarted = std::time::Instant::now();
        let mut bridge = bridge_on(&db, &base);
        let clicked_again = rt.block_on(bridge_process::anything_pending(&db));
        if clicked_again {
            // The click never became a decision: the request is shown again.
            bridge.expect("execute_trade? [a]pprove");
            bridge.type_line("a");
        }
        let (humans, tools, runs) = rt.block_on(async {
            wait_until(|| async {
                let record = thread_record(&base, &thread).await;
                (!record.1.is_empty()).then_some(record)
            })
            .await
        });
        let took = restarted.elapsed();
        let lines = bridge.drain(Duration::from_secs(1)).join("\n");
        println!("langgraph: killed {delay_ms} ms after the click (clicked again: {clicked_again}); tool ran {took:?} after the restart");
        assert_eq!((humans, tools, runs), (vec!["trade".to_owned()], traded_once(), 2), "delay {delay_ms} ms");
        assert!(!lines.contains("not delivered"), "delay {delay_ms} ms: a delivered decision is reported as not delivered:\n{lines}");
        bridge.stop();
    }
}

/// Killed after LangGraph ran the decision but before the bridge heard back (the proxy
/// withholds the resume's answer): the restarted bridge finds the resume run by the
/// decision's id, sends nothing, and records the decision as delivered, not as "the
/// agent stopped waiting" (the interrupt is gone because the decision answered it).
#[test]
#[ignore = "needs the langgraph backend: bash tests/backends/install.sh langgraph, then cargo test -- --include-ignored"]
fn sigkill_after_langgraph_ran_the_decision_before_its_proof_records_it_delivered() {
    let rt = runtime();
    let Some(base) = rt.block_on(server()) else { return };
    let proxy = rt.block_on(WithholdingProxy::start(&base, "POST /threads/", "/runs/stream"));
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bridge.db");
    let mut bridge = bridge_on(&db, &proxy.url);
    let session = new_session(&mut bridge);
    let thread = hitl_bridge::backend::langgraph::ids::thread_id(&session);
    bridge.type_line("trade");
    let key = shown_key(&mut bridge);
    bridge.expect("execute_trade? [a]pprove");
    proxy.withhold(true);
    bridge.type_line("a");
    let (_, tools, _) = rt.block_on(wait_until(|| async {
        let record = thread_record(&base, &thread).await;
        (!record.1.is_empty()).then_some(record)
    }));
    assert_eq!(tools, traded_once());
    assert_eq!(proxy.withheld(), 1, "the resume's answer was withheld");
    bridge.kill();

    proxy.withhold(false);
    let store = rt.block_on(Store::connect(&format!("sqlite://{}", db.display()))).expect("store");
    let bridge = bridge_on(&db, &proxy.url);
    let delivery = rt.block_on(settled_delivery(&store, &session, &key));
    assert!(matches!(delivery, hitl_bridge::interaction::Delivery::Delivered { .. }), "{delivery:?}");
    let (humans, tools, runs) = rt.block_on(thread_record(&base, &thread));
    assert_eq!((humans, tools, runs), (vec!["trade".to_owned()], traded_once(), 2), "nothing was sent again");
    rt.block_on(store.close());
    bridge.stop();
}

/// A new message while a request waits replaces LangGraph's interrupt; a click on the
/// old card is not sent (LangGraph would accept it as a run that does nothing): the
/// card says the agent stopped waiting, and the new request is answered normally.
#[tokio::test]
#[ignore = "needs the langgraph backend: bash tests/backends/install.sh langgraph, then cargo test -- --include-ignored"]
async fn a_decision_for_a_replaced_interrupt_is_not_reported_as_delivered() {
    let Some(h) = start("agent").await else { return };
    h.person().say("trade");
    let old = request_with(&h, "execute_trade").await;
    h.person().say("trade again");
    let new = wait_until(|| async {
        h.telegram()
            .bot_messages(h.chat)
            .into_iter()
            .find(|m| m["message_id"].as_i64() != Some(old) && text_of(m).contains("execute_trade") && m["reply_markup"]["inline_keyboard"].is_array())
    })
    .await["message_id"]
        .as_i64()
        .expect("message id");
    h.person().click(old, "Approve").await;
    let card = wait_until(|| async {
        h.telegram().bot_messages(h.chat).into_iter().find(|m| m["message_id"].as_i64() == Some(old) && text_of(m).contains("not delivered"))
    })
    .await;
    assert!(text_of(&card).contains("the agent stopped waiting for this"), "{}", text_of(&card));
    let state = thread_state(&h).await;
    assert!(!state["values"]["messages"].as_array().unwrap().iter().any(|m| m["type"] == "tool"), "the old decision ran nothing");
    h.person().click(new, "Approve").await;
    h.person().message_with("done. execute_trade=success: bought 100 VNM").await;
    assert_eq!(tool_messages(&h, 1).await, traded_once());
    h.finish().await;
}

/// Killed while the model is still working on the message (it takes 3 s): the run goes
/// on in LangGraph (`on_disconnect: continue`) and stops at its interrupt while no
/// bridge listens. The restarted bridge connects the session again by itself (the turn
/// was open) and shows the request from the thread's state, without the person writing
/// again; the click runs the tool once.
#[test]
#[ignore = "needs the langgraph backend: bash tests/backends/install.sh langgraph, then cargo test -- --include-ignored"]
fn sigkill_while_the_model_works_then_the_request_is_shown_after_the_restart() {
    let rt = runtime();
    let Some(base) = rt.block_on(server()) else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bridge.db");
    let mut bridge = bridge_on(&db, &base);
    let thread = new_thread(&mut bridge);
    bridge.type_line("trade slowly");
    rt.block_on(wait_until(|| async { (get_json(format!("{base}/threads/{thread}")).await["status"] == "busy").then_some(()) }));
    std::thread::sleep(Duration::from_millis(700));
    bridge.kill();

    let restarted = std::time::Instant::now();
    let mut bridge = bridge_on(&db, &base);
    bridge.expect_within("execute_trade? [a]pprove", Duration::from_secs(30));
    println!("langgraph: killed while the model worked; the request was shown {:?} after the restart", restarted.elapsed());
    bridge.type_line("a");
    bridge.expect("done. execute_trade=success: bought 100 VNM");
    let (humans, tools, runs) = rt.block_on(thread_record(&base, &thread));
    assert_eq!((humans, tools, runs), (vec!["trade slowly".to_owned()], traded_once(), 2));
    bridge.stop();
}

/// Killed after the click while the model works on its answer (3 s), and started again
/// only once the run has finished: the agent's answer, given while no bridge ran, is
/// read from the thread's state and shown once.
#[test]
#[ignore = "needs the langgraph backend: bash tests/backends/install.sh langgraph, then cargo test -- --include-ignored"]
fn an_answer_given_while_no_bridge_ran_is_shown_once_after_the_restart() {
    let rt = runtime();
    let Some(base) = rt.block_on(server()) else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bridge.db");
    let mut bridge = bridge_on(&db, &base);
    let thread = new_thread(&mut bridge);
    bridge.type_line("trade slowly");
    bridge.expect_within("execute_trade? [a]pprove", Duration::from_secs(30));
    bridge.type_line("a");
    // The decision reached LangGraph (its resumed run exists: a second run on the
    // thread; "busy" alone may still be the first run ending), then the bridge dies.
    rt.block_on(wait_until(|| async { (get_json(format!("{base}/threads/{thread}/runs?limit=100")).await.as_array().map_or(0, Vec::len) == 2).then_some(()) }));
    bridge.kill();
    rt.block_on(wait_until(|| async { (get_json(format!("{base}/threads/{thread}")).await["status"] == "idle").then_some(()) }));

    let restarted = std::time::Instant::now();
    let mut bridge = bridge_on(&db, &base);
    bridge.expect_within("done. execute_trade=success: bought 100 VNM", Duration::from_secs(30));
    println!("langgraph: answered while no bridge ran; shown {:?} after the restart", restarted.elapsed());
    let lines = bridge.drain(Duration::from_secs(2)).join("\n");
    assert_eq!(lines.matches("done. execute_trade=success").count(), 1, "once:\n{lines}");
    let (humans, tools, runs) = rt.block_on(thread_record(&base, &thread));
    assert_eq!((humans, tools, runs), (vec!["trade slowly".to_owned()], traded_once(), 2));
    bridge.stop();
}
