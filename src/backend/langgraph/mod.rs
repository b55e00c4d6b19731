//! LangGraph Server (`langgraph dev`, langgraph-api, LangSmith deployments) as a chat
//! backend (`backend.kind = "langgraph"`, section `[langgraph]`): a [`Transport`] over
//! the server's HTTP API.
//!
//! - One thread per bridge session, with an id derived from the session id
//!   ([`ids::thread_id`]), created on every connect with `if_exists: do_nothing`, so a
//!   restarted bridge finds its threads again.
//! - A chat message starts a run: `POST /threads/{id}/runs/stream` with the text as a
//!   user message, `stream_mode: updates`, `multitask_strategy: enqueue` (a message sent
//!   during a run waits for it) and `on_disconnect: continue` (a bridge restart does not
//!   cancel the run). The SSE stream is read by [`run::RunTranslator`].
//! - A decision or answer resumes the thread: `command.resume = {<interrupt id>: value}`
//!   ([`interrupts`]). In `per_call` mode each interrupt is resumed on its own, as soon
//!   as it is decided: LangGraph resumes the tasks named in the map and raises the
//!   others again, with the same ids, so nothing waits for the slowest reviewer.
//! - On connect the thread's state lists the interrupts still waiting; each is raised
//!   again (the engine ignores the ones it already shows, by `approval_key`), and runs
//!   still going are joined, so a reconnect or restart loses nothing.
//! - Any HTTP answer proves the server read the command (it leaves the outbox, never
//!   sent twice); a refusal (HTTP 4xx/5xx, or the resumed run's `error` event) is shown
//!   in the chat as the turn's failure. Only a call that got no answer at all is sent
//!   again, on the next connection.
//! - Nothing runs twice and nothing is resumed blind. A message's run carries its
//!   bridge command id in its metadata: a message that may have reached the server
//!   before a crash is sent again only if no run of the thread carries its id (new
//!   input on an interrupted thread would replace the waiting interrupt). A decision
//!   is sent only if its interrupt is still pending once the thread is no longer busy;
//!   otherwise the card says the agent stopped waiting, and what the thread waits for
//!   now is shown.

pub mod descriptor;
pub mod ids;
pub mod interrupts;
pub mod run;

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Duration;

use futures_util::stream::{BoxStream, SelectAll};
use futures_util::{StreamExt, stream};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Value, json};

use super::SessionUpdate;
use super::session::{Link, LinkError, Outgoing, Received, Sent, Transport};
use super::sse::SseParser;
use crate::interaction::TimeoutDefaults;
use crate::protocol::Command;
use interrupts::{PendingInterrupt, read_interrupt};
use run::RunTranslator;

/// `[langgraph]`: where the server is and which graph serves chat sessions.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct LangGraphSettings {
    /// The server's base URL (`langgraph dev` listens on http://127.0.0.1:2024).
    pub url: String,
    /// The graph id from langgraph.json, or an assistant's UUID.
    pub assistant_id: String,
    /// Sent as `x-api-key` (LangSmith deployments); `langgraph dev` needs none.
    #[serde(serialize_with = "redact")]
    pub api_key: Option<SecretString>,
    /// The tool whose interrupts are shown as questions (`{questions:[…]}` args).
    pub question_tool: String,
    /// How long a call may take to answer (for a run: until its stream starts).
    pub request_timeout_secs: u64,
}

impl Default for LangGraphSettings {
    fn default() -> Self {
        Self {
            url: "http://127.0.0.1:2024".into(),
            assistant_id: "agent".into(),
            api_key: None,
            question_tool: "ask_user_question".into(),
            request_timeout_secs: 30,
        }
    }
}

impl LangGraphSettings {
    /// The problem with these settings, as (key, reason).
    pub fn problem(&self) -> Option<(&'static str, &'static str)> {
        if !(self.url.starts_with("http://") || self.url.starts_with("https://")) {
            return Some(("langgraph.url", "must start with http:// or https://"));
        }
        if self.assistant_id.trim().is_empty() {
            return Some(("langgraph.assistant_id", "must name a graph or assistant"));
        }
        if self.question_tool.trim().is_empty() {
            return Some(("langgraph.question_tool", "must name a tool"));
        }
        if self.request_timeout_secs == 0 {
            return Some(("langgraph.request_timeout_secs", "must be at least 1"));
        }
        None
    }
}

fn redact<S: Serializer>(secret: &Option<SecretString>, serializer: S) -> Result<S::Ok, S::Error> {
    match secret {
        Some(s) if !s.expose_secret().is_empty() => serializer.serialize_str("[redacted]"),
        _ => serializer.serialize_none(),
    }
}

/// Connects sessions to threads of one LangGraph server.
pub struct LangGraphTransport {
    settings: LangGraphSettings,
    defaults: TimeoutDefaults,
    client: reqwest::Client,
}

impl LangGraphTransport {
    pub fn new(settings: LangGraphSettings, defaults: TimeoutDefaults) -> Self {
        // No overall timeout: a run's stream lasts as long as the run. Each call's
        // answer is bounded in `Api::call` instead.
        let client = reqwest::Client::builder().connect_timeout(Duration::from_secs(settings.request_timeout_secs.max(1))).build().unwrap_or_default();
        Self { settings, defaults, client }
    }
}

/// The server's HTTP API for one thread.
#[derive(Clone)]
struct Api {
    client: reqwest::Client,
    base: String,
    api_key: Option<SecretString>,
    timeout: Duration,
    thread_id: String,
}

/// An answer that was not a success.
struct Refused {
    status: u16,
    body: String,
}

impl Api {
    /// Sends one request and waits (bounded) for the answer's head. `Err` when no
    /// answer came: the server may not have read it.
    async fn call(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> Result<reqwest::Response, LinkError> {
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        if let Some(key) = &self.api_key {
            request = request.header("x-api-key", key.expose_secret());
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        match tokio::time::timeout(self.timeout, request.send()).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(e)) => Err(LinkError::Transport(format!("LangGraph {path}: {e}"))),
            Err(_) => Err(LinkError::Transport(format!("LangGraph {path}: no answer in {} s", self.timeout.as_secs()))),
        }
    }

    /// A call whose answer is JSON; a refusal is an error too (used while connecting).
    async fn json(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> Result<Value, LinkError> {
        let response = self.call(method, path, body).await?;
        self.read_json(path, response).await
    }

    /// A response's JSON body when it is a success; its status and body otherwise.
    async fn read_json(&self, path: &str, response: reqwest::Response) -> Result<Value, LinkError> {
        let response = checked(response).await.map_err(|r| LinkError::Transport(format!("LangGraph {path}: HTTP {}: {}", r.status, r.body)))?;
        tokio::time::timeout(self.timeout, response.json::<Value>())
            .await
            .map_err(|_| LinkError::Transport(format!("LangGraph {path}: the answer did not finish in time")))?
            .map_err(|e| LinkError::Transport(format!("LangGraph {path}: {e}")))
    }

    fn thread_path(&self, rest: &str) -> String {
        format!("/threads/{}{rest}", self.thread_id)
    }

    /// Whether a run of the thread was started by the bridge command `command_id`.
    async fn has_run_for(&self, command_id: &str) -> Result<bool, LinkError> {
        let runs = self.json(reqwest::Method::GET, &self.thread_path(&format!("/runs?limit={RUNS_CHECKED}")), None).await?;
        let runs = runs.as_array().map(Vec::as_slice).unwrap_or_default();
        Ok(runs.iter().any(|run| run.pointer(COMMAND_ID_POINTER).and_then(Value::as_str) == Some(command_id)))
    }

    /// The interrupts the thread waits for, read once it is not busy: a run in progress
    /// or queued may raise, answer or replace them. A thread busy for longer than
    /// `timeout` is an error, so the decision stays queued and is tried again on the
    /// next connection rather than judged against a state still changing.
    async fn settled_interrupts(&self) -> Result<Value, LinkError> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        loop {
            let response = self.call(reqwest::Method::GET, &self.thread_path(""), None).await?;
            if response.status() == reqwest::StatusCode::NOT_FOUND {
                // The thread was deleted: it waits for nothing.
                return Ok(Value::Array(Vec::new()));
            }
            let thread = self.read_json(&self.thread_path(""), response).await?;
            if thread.get("status").and_then(Value::as_str) != Some("busy") {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(LinkError::Transport(format!(
                    "LangGraph thread {} stayed busy for {} s; the decision waits",
                    self.thread_id,
                    self.timeout.as_secs()
                )));
            }
            tokio::time::sleep(BUSY_POLL).await;
        }
        let state = self.json(reqwest::Method::GET, &self.thread_path("/state"), None).await?;
        Ok(state.get("interrupts").cloned().unwrap_or(Value::Array(Vec::new())))
    }
}

/// The key under which a run's metadata carries the bridge command that started it.
const COMMAND_ID_KEY: &str = "hitl_bridge_command";
const COMMAND_ID_POINTER: &str = "/metadata/hitl_bridge_command";
/// How many of the thread's latest runs are searched for a message's command id: an
/// unproven message is at most a few runs old.
const RUNS_CHECKED: usize = 100;
/// How often a busy thread is asked again before a decision is checked against it.
const BUSY_POLL: Duration = Duration::from_millis(200);

/// The response if it is a success, else its status and (shortened) body.
async fn checked(response: reqwest::Response) -> Result<reqwest::Response, Refused> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let body = tokio::time::timeout(Duration::from_secs(5), response.text()).await.ok().and_then(Result::ok).unwrap_or_default();
    let body: String = body.chars().take(300).collect();
    Err(Refused { status: status.as_u16(), body })
}

impl Transport for LangGraphTransport {
    type State = RunTranslator;
    type Link = LangGraphLink;

    fn name(&self) -> &'static str {
        "langgraph"
    }

    fn new_state(&self) -> RunTranslator {
        RunTranslator::new(&self.settings.question_tool, self.defaults)
    }

    async fn connect(&self, session_id: &str) -> Result<LangGraphLink, LinkError> {
        let api = Api {
            client: self.client.clone(),
            base: self.settings.url.trim_end_matches('/').to_owned(),
            api_key: self.settings.api_key.clone(),
            timeout: Duration::from_secs(self.settings.request_timeout_secs.max(1)),
            thread_id: ids::thread_id(session_id),
        };
        let create = json!({"thread_id": api.thread_id, "if_exists": "do_nothing", "metadata": {"hitl_bridge_session": session_id}});
        api.json(reqwest::Method::POST, "/threads", Some(&create)).await?;
        let mut link = LangGraphLink::new(api, &self.settings);
        link.load_waiting().await?;
        Ok(link)
    }
}

/// One chunk of one run's stream.
enum RunChunk {
    Bytes(u64, Vec<u8>),
    End(u64),
    Broken(u64, String),
}

/// A session's thread: the runs being streamed and the interrupts waiting.
pub struct LangGraphLink {
    api: Api,
    assistant_id: String,
    question_tool: String,
    /// Commands written so far; each is proven as soon as the server answers it.
    written: u64,
    ready: VecDeque<Received>,
    /// The thread's interrupts found on connect, to show once the translator is at hand.
    waiting_on_connect: Option<Value>,
    /// Interrupts shown and not yet answered, by `approval_key` (the interrupt id).
    pending: HashMap<String, PendingInterrupt>,
    runs: SelectAll<BoxStream<'static, RunChunk>>,
    /// Per stream: its parser, its run id (from `metadata`), whether it failed.
    streams: HashMap<u64, StreamState>,
    next_stream: u64,
}

#[derive(Default)]
struct StreamState {
    parser: SseParser,
    run_id: Option<String>,
    failed: bool,
}

impl LangGraphLink {
    fn new(api: Api, settings: &LangGraphSettings) -> Self {
        Self {
            api,
            assistant_id: settings.assistant_id.clone(),
            question_tool: settings.question_tool.clone(),
            written: 0,
            ready: VecDeque::new(),
            waiting_on_connect: None,
            pending: HashMap::new(),
            runs: SelectAll::new(),
            streams: HashMap::new(),
            next_stream: 0,
        }
    }

    /// Joins the thread's runs still going, whose events this bridge may have missed,
    /// then reads what the thread is waiting for (its interrupts).
    ///
    /// In that order: a run that ends between the two reads is then either joined
    /// (its stream says how it ended) or over before the state is read (its
    /// interrupts are in it). Read the other way round, a run ending in between was in
    /// neither, and the request it raised was never shown.
    async fn load_waiting(&mut self) -> Result<(), LinkError> {
        let mut joined = HashSet::new();
        // Pending before running: a run that starts between the two lists is in the
        // first; one in both is joined once.
        for status in ["pending", "running"] {
            let runs = self.api.json(reqwest::Method::GET, &self.api.thread_path(&format!("/runs?status={status}&limit=20")), None).await?;
            for run_id in runs.as_array().map(Vec::as_slice).unwrap_or_default().iter().filter_map(|r| r.get("run_id").and_then(Value::as_str)) {
                if !joined.insert(run_id.to_owned()) {
                    continue;
                }
                let path = self.api.thread_path(&format!("/runs/{run_id}/stream?stream_mode=updates"));
                let response = self.api.call(reqwest::Method::GET, &path, None).await?;
                match checked(response).await {
                    Ok(response) => {
                        tracing::info!(thread_id = %self.api.thread_id, %run_id, "joined a run still going");
                        self.add_stream(response, Some(run_id.to_owned()));
                    }
                    // Finished meanwhile: its outcome is in the state read below.
                    Err(refused) => tracing::debug!(%run_id, status = refused.status, "cannot join a run"),
                }
            }
        }
        let state = self.api.json(reqwest::Method::GET, &self.api.thread_path("/state"), None).await?;
        let interrupts = state.get("interrupts").cloned().unwrap_or(Value::Null);
        let readable: Vec<PendingInterrupt> =
            interrupts.as_array().map(Vec::as_slice).unwrap_or_default().iter().filter_map(|i| read_interrupt(i, &self.question_tool).ok()).collect();
        self.remember(readable);
        if interrupts.as_array().is_some_and(|list| !list.is_empty()) {
            self.waiting_on_connect = Some(interrupts);
        }
        Ok(())
    }

    fn remember(&mut self, interrupts: impl IntoIterator<Item = PendingInterrupt>) {
        for interrupt in interrupts {
            self.pending.insert(interrupt.id.clone(), interrupt);
        }
    }

    fn add_stream(&mut self, response: reqwest::Response, run_id: Option<String>) {
        let n = self.next_stream;
        self.next_stream += 1;
        self.streams.insert(n, StreamState { run_id, ..StreamState::default() });
        let chunks = stream::unfold(Some(response), move |response| async move {
            let mut response = response?;
            Some(match response.chunk().await {
                Ok(Some(bytes)) => (RunChunk::Bytes(n, bytes.to_vec()), Some(response)),
                Ok(None) => (RunChunk::End(n), None),
                Err(e) => (RunChunk::Broken(n, e.to_string()), None),
            })
        });
        self.runs.push(chunks.boxed());
    }

    /// Starts a run and streams it; a refusal is reported in the chat.
    async fn start_run(&mut self, body: Value, what: &str) -> Result<bool, LinkError> {
        let response = self.api.call(reqwest::Method::POST, &self.api.thread_path("/runs/stream"), Some(&body)).await?;
        match checked(response).await {
            Ok(response) => {
                self.add_stream(response, None);
                Ok(true)
            }
            Err(refused) => {
                tracing::warn!(thread_id = %self.api.thread_id, status = refused.status, body = %refused.body, "LangGraph refused {what}");
                let message = format!("LangGraph refused {what} (HTTP {}): {}", refused.status, refused.body);
                self.ready.push_back(Received::updates(vec![SessionUpdate::TurnFailed { message }]));
                Ok(false)
            }
        }
    }

    /// A run's body; its metadata names the bridge command that starts it.
    fn run_body(&self, command_id: &str, extra: Value) -> Value {
        let mut body = json!({
            "assistant_id": self.assistant_id,
            "stream_mode": ["updates"],
            "multitask_strategy": "enqueue",
            "on_disconnect": "continue",
            "metadata": {COMMAND_ID_KEY: command_id},
        });
        if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
            body.extend(extra);
        }
        body
    }

    /// Resumes the interrupt `approval_key` with `reply`, if the thread still waits
    /// for it. LangGraph accepts a resume for an interrupt it no longer has as a run
    /// that does nothing, so the check must come first. When it does not wait, what it
    /// waits for now is raised again (the engine shows what it does not know yet).
    async fn resume(&mut self, command_id: &str, approval_key: &str, reply: &crate::protocol::Reply) -> Result<Sent, LinkError> {
        let interrupts = self.api.settled_interrupts().await?;
        let waiting: Vec<PendingInterrupt> =
            interrupts.as_array().map(Vec::as_slice).unwrap_or_default().iter().filter_map(|i| read_interrupt(i, &self.question_tool).ok()).collect();
        if !waiting.iter().any(|i| i.id == approval_key) {
            tracing::warn!(thread_id = %self.api.thread_id, %approval_key, now_waiting = waiting.len(), "LangGraph no longer waits for this request; the decision is not sent");
            self.pending.remove(approval_key);
            self.remember(waiting);
            self.waiting_on_connect = Some(interrupts);
            return Ok(Sent::NotWaiting);
        }
        self.remember(waiting);
        let Some(interrupt) = self.pending.get(approval_key) else { return Ok(Sent::NotWaiting) };
        let resume = match interrupt.resume(reply) {
            Ok(resume) => resume,
            Err(reason) => {
                let message = format!("The decision for request {approval_key} cannot be sent to LangGraph: {reason}");
                self.ready.push_back(Received::updates(vec![SessionUpdate::TurnFailed { message }]));
                return Ok(Sent::Written);
            }
        };
        let body = self.run_body(command_id, json!({"command": {"resume": resume}}));
        if self.start_run(body, &format!("the decision for request {approval_key}")).await? {
            self.pending.remove(approval_key);
        }
        Ok(Sent::Written)
    }

    async fn cancel(&mut self) {
        for run_id in self.streams.values().filter_map(|s| s.run_id.clone()).collect::<Vec<_>>() {
            let path = self.api.thread_path(&format!("/runs/{run_id}/cancel?action=interrupt"));
            match self.api.call(reqwest::Method::POST, &path, None).await.map(checked) {
                Ok(answer) => match answer.await {
                    Ok(_) => tracing::info!(%run_id, "run cancelled"),
                    Err(refused) => tracing::info!(%run_id, status = refused.status, "run not cancelled (finished?)"),
                },
                Err(e) => tracing::warn!(%run_id, error = %e, "cannot cancel a run"),
            }
        }
    }

    /// One chunk of stream `n` through its parser and the translator.
    fn chunk(&mut self, n: u64, bytes: &[u8], translator: &mut RunTranslator) -> Vec<SessionUpdate> {
        let Some(stream) = self.streams.get_mut(&n) else { return Vec::new() };
        let mut updates = Vec::new();
        let mut interrupts = Vec::new();
        for event in stream.parser.push(bytes) {
            if event.event == "metadata" {
                if let Some(run_id) = serde_json::from_str::<Value>(&event.data).ok().and_then(|m| m.get("run_id").and_then(Value::as_str).map(str::to_owned)) {
                    stream.run_id = Some(run_id);
                }
                continue;
            }
            let translated = translator.event(&event);
            stream.failed |= translated.failed;
            updates.extend(translated.updates);
            interrupts.extend(translated.interrupts);
        }
        self.remember(interrupts);
        updates
    }
}

impl Link for LangGraphLink {
    type State = RunTranslator;

    /// A run still going was joined at connect, and the interrupts the thread waits on
    /// are shown from its state: their streams and cards say how the turn goes on.
    /// Otherwise the turn ended while no bridge listened: the thread's last message, if
    /// it is the agent's answer, is relayed as the turn's last words.
    async fn resume_turn(&mut self) -> Result<Vec<SessionUpdate>, LinkError> {
        if !self.streams.is_empty() || self.waiting_on_connect.is_some() {
            return Ok(Vec::new());
        }
        let state = self.api.json(reqwest::Method::GET, &self.api.thread_path("/state"), None).await?;
        let last = state.pointer("/values/messages").and_then(Value::as_array).and_then(|messages| messages.last());
        let answer = last.filter(|m| m.get("type").and_then(Value::as_str) == Some("ai")).map(|m| run::message_text(m.get("content"))).unwrap_or_default();
        let mut out = Vec::new();
        if !answer.is_empty() {
            tracing::info!(thread_id = %self.api.thread_id, "the agent answered while no bridge listened; relaying its answer");
            out.push(SessionUpdate::Text { text: answer, is_final: true, block: None });
        }
        out.push(SessionUpdate::TurnEnded);
        Ok(out)
    }

    async fn send(&mut self, outgoing: Outgoing<'_>) -> Result<Sent, LinkError> {
        // Sent before a crash? Then its run exists (and was joined on connect if still
        // going): a message run twice would replace what the thread waits for, and a
        // delivered decision would be judged "no longer waited for".
        let starts_a_run = matches!(outgoing.command, Command::Message { .. } | Command::Approval { .. });
        if starts_a_run && outgoing.maybe_received && self.api.has_run_for(outgoing.id).await? {
            tracing::info!(thread_id = %self.api.thread_id, command_id = outgoing.id, "LangGraph already has this command; not sending it again");
            return Ok(Sent::AlreadyReceived);
        }
        match outgoing.command {
            Command::Message { content, .. } => {
                let text = content.iter().map(|c| c.text.as_str()).collect::<Vec<_>>().join("\n");
                let body = self.run_body(
                    outgoing.id,
                    json!({
                        "input": {"messages": [{"role": "user", "content": text}]},
                        "if_not_exists": "create",
                    }),
                );
                self.start_run(body, "the message").await?;
            }
            Command::Approval { approval_key, reply, .. } => {
                if self.resume(outgoing.id, approval_key, reply).await? == Sent::NotWaiting {
                    return Ok(Sent::NotWaiting);
                }
            }
            Command::Cancel { .. } => self.cancel().await,
        }
        // The server answered: it has read the command (a refusal was reported above).
        self.written += 1;
        self.ready.push_back(Received::proof(self.written));
        Ok(Sent::Written)
    }

    async fn recv(&mut self, translator: &mut RunTranslator) -> Option<Result<Received, LinkError>> {
        // Cancel-safe: everything awaited below keeps its progress in `self`.
        loop {
            if let Some(interrupts) = self.waiting_on_connect.take() {
                let translated = translator.pending(&interrupts);
                if !translated.updates.is_empty() {
                    return Some(Ok(Received::updates(translated.updates)));
                }
            }
            if let Some(ready) = self.ready.pop_front() {
                return Some(Ok(ready));
            }
            if self.runs.is_empty() {
                // Nothing streams until the next command; `send` fills `ready`.
                std::future::pending::<()>().await;
            }
            // `None`: every run stream has ended. The link stays open (the thread is
            // still there); closing it would reconnect and re-read the thread for nothing.
            let Some(chunk) = self.runs.next().await else { continue };
            let updates = match chunk {
                RunChunk::Bytes(n, bytes) => self.chunk(n, &bytes, translator),
                RunChunk::End(n) => {
                    let failed = self.streams.remove(&n).is_some_and(|s| s.failed);
                    let mut updates = translator.run_ended(failed);
                    // A run whose stream closes after the next run started (a decision
                    // sent as soon as the interrupt was shown) does not end the turn:
                    // the run going on does. Else the turn's record would go with it.
                    if !self.streams.is_empty() {
                        updates.retain(|update| *update != SessionUpdate::TurnEnded);
                    }
                    updates
                }
                RunChunk::Broken(n, error) => {
                    self.streams.remove(&n);
                    return Some(Err(LinkError::Transport(format!("a LangGraph run stream broke: {error}"))));
                }
            };
            if !updates.is_empty() {
                return Some(Ok(Received::updates(updates)));
            }
        }
    }
}

#[cfg(test)]
mod tests;
