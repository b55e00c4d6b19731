//! Agno AgentOS end to end: the real `agno` package (tests/backends/agno, installed by
//! tests/backends/install.sh) serves an agent whose model is a scripted fake OpenAI
//! server; the bridge (`backend.kind = "agno"`) talks to it over AgentOS's HTTP API
//! and to a fake Telegram through the real teloxide client. Each test asserts what
//! AgentOS did with the answer: the continued run read back from AgentOS, and what
//! the model was sent after the continue (the fake model records every request).
//!
//! AgentOS starts once for this test binary, on a free port, and exits with it.

mod support;
#[path = "support/backends.rs"]
mod backends;
#[path = "support/fake_telegram.rs"]
mod fake_telegram;
#[path = "support/telegram_chat.rs"]
mod telegram_chat;

use telegram_chat::TelegramChat;

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use fake_telegram::{FakeTelegram, User};
use hitl_bridge::app::App;
use hitl_bridge::config::Settings;
use hitl_bridge::interaction::Interaction;
use hitl_bridge::store::Store;
use serde_json::{Value, json};
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

/// AgentOS, started on first use; `None` (the test skips) when agno is not installed.
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
            .filter(|r| {
                r["messages"].as_array().into_iter().flatten().any(|m| m["role"] == "user" && m["content"].as_str().is_some_and(|c| c.contains(word)))
            })
            .collect()
    }

    /// The tool messages of the last request the model got for `word`.
    async fn tool_results_seen(&self, word: &str) -> Vec<Value> {
        let requests = self.model_requests(word).await;
        let last = requests.last().expect("the model was called");
        last["messages"].as_array().into_iter().flatten().filter(|m| m["role"] == "tool").map(|m| json!({"tool_call_id": m["tool_call_id"], "content": m["content"]})).collect()
    }
}

fn anh() -> User {
    User::new(4242, "Anh", Some("en"))
}

/// A word no other test uses, so a test finds its own conversation with the model.
fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", &uuid::Uuid::new_v4().simple().to_string()[..8])
}

/// Fake Telegram + a bridge on AgentOS, with Anh's private chat.
struct Harness {
    os: &'static AgentOs,
    fake: FakeTelegram,
    settings: Settings,
    app: Option<App>,
    store: Store,
    chat: i64,
    _dir: tempfile::TempDir,
}

impl Harness {
    async fn start(os: &'static AgentOs) -> Harness {
        let _ = tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::from_default_env()).with_test_writer().try_init();
        let fake = FakeTelegram::start().await;
        let dir = tempfile::tempdir().expect("tempdir");
        let store_url = format!("sqlite://{}", dir.path().join("bridge.db").display());
        let mut settings = Settings::from_pairs(&[
            ("backend.kind", "agno"),
            ("backend.reconnect_max_secs", "1"),
            ("agno.url", &os.url),
            ("agno.agent_id", "ops"),
            ("store.url", &store_url),
            ("console.enabled", "false"),
            ("http.enabled", "false"),
            ("telegram.enabled", "true"),
            ("telegram.token", fake_telegram::TOKEN),
            ("telegram.api_url", &fake.url),
        ])
        .expect("settings");
        settings.access.users = vec![format!("telegram:{}", anh().id)];
        let chat = fake.private_chat(&anh());
        let app = support::start_headless(&settings).await;
        let store = Store::connect(&store_url).await.expect("store");
        Harness { os, fake, settings, app: Some(app), store, chat, _dir: dir }
    }

    async fn restart_bridge(&mut self) {
        if let Some(app) = self.app.take() {
            app.stop().await;
        }
        let app = support::start_headless(&self.settings).await;
        self.app = Some(app);
    }

    /// Anh's chat with the bot.
    fn person(&self) -> TelegramChat<'_> {
        TelegramChat { fake: &self.fake, chat: self.chat, user: anh() }
    }

    /// The one pending interaction: its session (= the AgentOS session) and run id.
    async fn pending(&self) -> (Interaction, String, String) {
        let interaction = wait_until(|| async { self.store.pending_interactions().await.expect("pending").into_iter().next() }).await;
        let key = interaction.approval_key().to_owned();
        let run_id = key.split_once(':').expect("key names a run").0.to_owned();
        let session = interaction.session_id.clone();
        (interaction, session, run_id)
    }

    async fn finish(mut self, allow_unmodified: bool) {
        if let Some(app) = self.app.take() {
            app.stop().await;
        }
        let unexpected: Vec<_> = self
            .fake
            .errors()
            .into_iter()
            .filter(|(_, e)| !(allow_unmodified && e.starts_with("Bad Request: message is not modified")))
            .collect();
        assert!(unexpected.is_empty(), "Telegram would have refused: {unexpected:?}");
        self.fake.shutdown();
        self.store.close().await;
    }
}

fn id_of(message: &Value) -> i64 {
    message["message_id"].as_i64().expect("message id")
}

/// Approve: the tool runs in AgentOS, the model is sent its result, the run
/// completes and its final text reaches the chat.
#[tokio::test]
async fn approve_runs_the_tool_and_the_model_sees_its_result() {
    let Some(os) = agent_os() else { return };
    let h = Harness::start(os).await;
    let target = unique("prod");
    h.person().say(&format!("please deploy {target}"));
    let m = h.person().message_with("deploy").await;
    assert!(m["text"].as_str().unwrap().contains(&target), "the args are shown: {}", m["text"]);
    let (interaction, session, run_id) = h.pending().await;
    assert!(interaction.approval_key().starts_with(&format!("{run_id}:call_")), "{}", interaction.approval_key());
    let paused = h.os.run(&session, &run_id).await;
    assert_eq!(paused["status"], "PAUSED");
    assert_eq!(paused["user_id"], "telegram:4242", "the run knows who asked");

    h.person().click(id_of(&m), "Approve").await;
    h.person().message_with(&format!("model saw: deployed to {target}")).await;
    let run = h.os.run_with_status(&session, &run_id, "COMPLETED").await;
    assert_eq!(run["tools"][0]["confirmed"], json!(true));
    assert_eq!(run["tools"][0]["result"], json!(format!("deployed to {target}")));
    let seen = h.os.tool_results_seen(&target).await;
    assert_eq!(seen, vec![json!({"tool_call_id": run["tools"][0]["tool_call_id"], "content": format!("deployed to {target}")})]);
    // The continue was sent once: one call before the pause, one after.
    assert_eq!(h.os.model_requests(&target).await.len(), 2);
    let done = h.person().message_shows(id_of(&m), "✅ Approve by Anh").await;
    assert!(done.get("reply_markup").is_none(), "the buttons are gone: {done}");
    h.finish(false).await;
}

/// Comment (a `respond`): the tool does not run, the note is what the model reads.
#[tokio::test]
async fn comment_rejects_with_a_note_the_model_reads() {
    let Some(os) = agent_os() else { return };
    let h = Harness::start(os).await;
    let target = unique("db");
    h.person().say(&format!("deploy {target}"));
    let m = h.person().message_with("deploy").await;
    let (_, session, run_id) = h.pending().await;
    h.person().click(id_of(&m), "Comment").await;
    let note = format!("not on friday, {target}");
    h.person().reply_to_prompt("Reply with your comment", &note).await;
    h.person().message_with(&format!("model saw: {note}")).await;
    let run = h.os.run_with_status(&session, &run_id, "COMPLETED").await;
    assert_eq!(run["tools"][0]["confirmed"], json!(false));
    assert_eq!(run["tools"][0]["confirmation_note"], json!(note));
    let seen = h.os.tool_results_seen(&target).await;
    assert_eq!(seen, vec![json!({"tool_call_id": run["tools"][0]["tool_call_id"], "content": note})]);
    h.finish(false).await;
}

/// Two tool calls in one pause: one request, a decision each, one continue.
#[tokio::test]
async fn two_tool_calls_get_one_decision_each() {
    let Some(os) = agent_os() else { return };
    let h = Harness::start(os).await;
    let (a, b) = (unique("a"), unique("b"));
    h.person().say(&format!("deploy {a} and {b}"));
    let m = h.person().message_with(&b).await;
    let (_, session, run_id) = h.pending().await;
    let id = id_of(&m);
    h.person().click(id, "Approve #1").await;
    h.person().message_shows(id, "→ ✅").await;
    h.person().click(id, "Reject #2").await;
    h.person().message_shows(id, "→ ❌").await;
    h.person().click(id, "Submit").await;
    h.person().message_with(&format!("model saw: deployed to {a} | Function call was rejected by the user")).await;
    let run = h.os.run_with_status(&session, &run_id, "COMPLETED").await;
    let tools: Vec<_> = run["tools"].as_array().unwrap().iter().map(|t| (t["tool_args"]["target"].clone(), t["confirmed"].clone())).collect();
    assert_eq!(tools, vec![(json!(a), json!(true)), (json!(b), json!(false))]);
    h.finish(false).await;
}

/// Seed 004: ask_user's multi-select question (with a label holding ", " and typed
/// "Other" text) and a single-select one; the labels reach the tool as
/// `selected_options` and the model reads them.
#[tokio::test]
async fn user_feedback_questions_reach_ask_user_as_selected_options() {
    let Some(os) = agent_os() else { return };
    let h = Harness::start(os).await;
    let word = unique("trip");
    h.person().say(&format!("plan a {word}"));
    let q = h.person().message_with("[1/2]").await;
    let id = id_of(&q);
    assert!(q["text"].as_str().unwrap().contains("Which activities do you want?"), "{}", q["text"]);
    let (_, session, run_id) = h.pending().await;
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
    let run = h.os.run_with_status(&session, &run_id, "COMPLETED").await;
    let schema = &run["tools"][0]["user_feedback_schema"];
    assert_eq!(schema[0]["selected_options"], json!(["Hiking", "Museums, galleries", "Cooking class"]));
    assert_eq!(schema[1]["selected_options"], json!(["Low"]));
    assert_eq!(run["tools"][0]["answered"], json!(true));
    let seen = h.os.tool_results_seen(&word).await;
    let expected = "User feedback received: [{\"question\": \"Which activities do you want?\", \"selected\": [\"Hiking\", \"Museums, galleries\", \"Cooking class\"]}, \
                    {\"question\": \"What budget?\", \"selected\": [\"Low\"]}]";
    assert_eq!(seen, vec![json!({"tool_call_id": run["tools"][0]["tool_call_id"], "content": expected})]);
    h.finish(false).await;
}

/// The bridge restarts while a run waits: the old message's button still works, and
/// the continue is built from the run as AgentOS keeps it.
#[tokio::test]
async fn a_paused_run_is_answered_after_a_bridge_restart() {
    let Some(os) = agent_os() else { return };
    let mut h = Harness::start(os).await;
    let target = unique("edge");
    h.person().say(&format!("deploy {target}"));
    let m = h.person().message_with("deploy").await;
    let (_, session, run_id) = h.pending().await;
    h.restart_bridge().await;
    h.person().click(id_of(&m), "Approve").await;
    h.person().message_with(&format!("model saw: deployed to {target}")).await;
    let run = h.os.run_with_status(&session, &run_id, "COMPLETED").await;
    assert_eq!(run["tools"][0]["confirmed"], json!(true));
    assert_eq!(h.os.model_requests(&target).await.len(), 2, "continued exactly once");
    h.finish(true).await;
}

/// AgentOS no longer has the run (its session was deleted): the answer cannot be
/// delivered, and the chat says so instead of dropping it.
#[tokio::test]
async fn an_answer_agentos_cannot_take_is_reported_in_the_chat() {
    let Some(os) = agent_os() else { return };
    let h = Harness::start(os).await;
    let target = unique("gone");
    h.person().say(&format!("deploy {target}"));
    let m = h.person().message_with("deploy").await;
    let (_, session, run_id) = h.pending().await;
    let deleted = reqwest::Client::new().delete(format!("{}/sessions/{session}", os.url)).send().await.expect("DELETE");
    assert!(deleted.status().is_success(), "{}", deleted.status());
    h.person().click(id_of(&m), "Approve").await;
    h.person().message_with(&format!("AgentOS no longer has run {run_id}")).await;
    assert_eq!(h.os.model_requests(&target).await.len(), 1, "the model was not called again");
    h.finish(false).await;
}

/// `/cancel` while a run waits: the request closes in the chat and AgentOS is told
/// to cancel the session's open run. AgentOS keeps a paused run `PAUSED` and records
/// the cancellation: continuing it afterwards (here, by hand) is cancelled at once.
#[tokio::test]
async fn cancel_cancels_the_waiting_run() {
    let Some(os) = agent_os() else { return };
    let h = Harness::start(os).await;
    let target = unique("cancel");
    h.person().say(&format!("deploy {target}"));
    let m = h.person().message_with("deploy").await;
    let (_, session, run_id) = h.pending().await;
    h.person().say("/cancel");
    h.person().message_shows(id_of(&m), "Cancelled").await;
    // The cancel command leaves the outbox once AgentOS answered it.
    wait_until(|| async { h.store.outbox_for_session(&session).await.expect("outbox").is_empty().then_some(()) }).await;
    let run = h.os.run(&session, &run_id).await;
    assert_eq!(run["status"], "PAUSED");
    let mut tools = run["tools"].clone();
    tools[0]["confirmed"] = json!(true);
    let form = [("tools", tools.to_string()), ("session_id", session.clone()), ("stream", "true".into())];
    let url = format!("{}/agents/ops/runs/{run_id}/continue", os.url);
    let body = reqwest::Client::new().post(url).form(&form).send().await.expect("continue").text().await.expect("body");
    assert!(body.contains("event: RunCancelled") && !body.contains("ToolCallStarted"), "{body}");
    assert_eq!(h.os.model_requests(&target).await.len(), 1, "the model was not called again");
    h.finish(false).await;
}
