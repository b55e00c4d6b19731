//! Agno AgentOS as the chat backend (`backend.kind = "agno"`): a bridge session is
//! an AgentOS session of one agent (`agno.agent_id`), with the same id.
//!
//! - A chat message is `POST /agents/{id}/runs` (form: `message`, `session_id`,
//!   `user_id`, `stream=true`, `background=true`); its SSE events are read by
//!   [`events::RunEvents`] into texts, tool status lines and, at `RunPaused`, requests.
//! - A reply is `POST /agents/{id}/runs/{run_id}/continue` with `tools`, the paused
//!   run's tools with the answers written in ([`pause`]). The tools are read from
//!   AgentOS itself (`GET /agents/{id}/runs/{run_id}`) right before, which makes a
//!   reply survive a bridge restart and keeps a resent reply from running the agent
//!   twice: AgentOS continues a run that is no longer paused as a fresh fork, so a
//!   reply for a run that is no longer `PAUSED` was already delivered and is not sent.
//! - `background=true` keeps a run going when its event stream is dropped (idle
//!   close, restart); every new link lists the session's `PAUSED` runs and replays
//!   their requests (the engine ignores the ones it knows).
//! - A turn the bridge was in when it stopped ([`Link::resume_turn`]) is found in the
//!   session's latest run: one still running is read every [`FOLLOW_EVERY`] until it
//!   pauses or ends, and one that ended has its outcome (the final content, or the
//!   failure) relayed, so a reply the agent gave while no bridge listened arrives.
//! - Proof of delivery is the 2xx of the call. A 4xx is AgentOS refusing the command
//!   for good: proven too (sending it again cannot help) and shown in the chat as a
//!   failed turn. A 5xx or a network error drops the link; the outbox resends.
//!
//! The pure halves: [`super::sse`] (bytes → records), [`events`] (records → updates),
//! [`pause`] (paused tools ↔ requests and replies).

pub mod descriptor;
pub mod events;
pub mod pause;
pub mod settings;

use std::collections::HashMap;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::{BoxStream, SelectAll};
use secrecy::ExposeSecret;
use serde_json::{Value, json};

use self::events::{RunEvents, TERMINAL_EVENTS};
use self::pause::PausePart;
use super::SessionUpdate;
use super::session::{Link, LinkError, Outgoing, Received, Sent, Transport};
use super::sse::{SseEvent, SseParser};
use crate::interaction::TimeoutDefaults;
use crate::protocol::{Command, Reply};
pub use settings::AgnoSettings;

/// The most of an error body quoted in the chat.
const MAX_DETAIL_CHARS: usize = 300;

/// The key under which a run's metadata carries the bridge command that started it.
const COMMAND_ID_KEY: &str = "hitl_bridge_command";

/// A reply sent again after a crash may find its run already continuing (the first
/// send reached AgentOS) before AgentOS has recorded the answer in the run's tools:
/// the run is read again this often, at most [`CONTINUING_READS`] times, before the
/// reply is judged.
const CONTINUING_READ_EVERY: Duration = Duration::from_millis(250);
const CONTINUING_READS: usize = 40;
const COMMAND_ID_POINTER: &str = "/metadata/hitl_bridge_command";

/// How often a run the bridge follows without its event stream (one that was running
/// when the bridge before this one stopped) is read.
const FOLLOW_EVERY: Duration = Duration::from_millis(500);

/// Connects bridge sessions to AgentOS sessions.
pub struct AgnoTransport {
    settings: AgnoSettings,
    defaults: TimeoutDefaults,
    http: reqwest::Client,
}

impl AgnoTransport {
    pub fn new(settings: AgnoSettings, defaults: TimeoutDefaults) -> Self {
        // No overall timeout: event streams last as long as the run. Calls that are
        // not streams set their own.
        let http = reqwest::Client::builder().connect_timeout(Duration::from_secs(settings.request_timeout_secs.max(1))).build().unwrap_or_default();
        Self { settings, defaults, http }
    }
}

impl Transport for AgnoTransport {
    type State = RunEvents;
    type Link = AgnoLink;

    fn name(&self) -> &'static str {
        "agno"
    }

    fn new_state(&self) -> RunEvents {
        RunEvents::new(self.defaults)
    }

    async fn connect(&self, session_id: &str) -> Result<AgnoLink, LinkError> {
        let api = Api { http: self.http.clone(), settings: self.settings.clone(), session_id: session_id.to_owned() };
        // Reaches AgentOS (a failure is retried with backoff) and replays what waits.
        let mut queued = Vec::new();
        for run in api.paused_runs().await? {
            let run_id = run.get("run_id").and_then(Value::as_str).unwrap_or_default();
            let tools = run.get("tools").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            if !run_id.is_empty() {
                queued.extend(pause::pause_updates(run_id, tools, self.defaults));
            }
        }
        Ok(AgnoLink { api, streams: SelectAll::new(), queued, written: 0, reported: 0, held: HashMap::new(), broken: None })
    }
}

/// AgentOS's HTTP API for one session.
#[derive(Clone)]
struct Api {
    http: reqwest::Client,
    settings: AgnoSettings,
    session_id: String,
}

/// How AgentOS answered a call that starts a run or continues one.
enum Started {
    Stream(reqwest::Response),
    /// A 4xx: AgentOS will not do it, however often it is asked.
    Refused(String),
}

impl Api {
    fn agent_url(&self, path: &str) -> String {
        format!("{}/agents/{}{path}", self.settings.base(), self.settings.agent_id)
    }

    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.settings.token {
            Some(token) => request.bearer_auth(token.expose_secret()),
            None => request,
        }
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(self.settings.request_timeout_secs.max(1))
    }

    /// GET returning JSON; `None` on 404.
    async fn get(&self, path: &str, query: &[(&str, &str)]) -> Result<Option<Value>, LinkError> {
        let request = self.http.get(self.agent_url(path)).query(query).timeout(self.timeout());
        let response = self.authorized(request).send().await.map_err(LinkError::transport)?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(LinkError::Transport(format!("GET {path}: {}", describe(response).await)));
        }
        response.json().await.map(Some).map_err(LinkError::transport)
    }

    /// The session's runs that wait for a person (none when the session is new).
    async fn paused_runs(&self) -> Result<Vec<Value>, LinkError> {
        let runs = self.get("/runs", &[("session_id", &self.session_id), ("status", "PAUSED")]).await?;
        Ok(runs.and_then(|r| r.as_array().cloned()).unwrap_or_default())
    }

    /// Whether the session has a run started by the bridge command `command_id` (the
    /// bridge puts it in each run's metadata).
    async fn has_run_for(&self, command_id: &str) -> Result<bool, LinkError> {
        Ok(self.runs().await?.iter().any(|run| run.pointer(COMMAND_ID_POINTER).and_then(Value::as_str) == Some(command_id)))
    }

    async fn runs(&self) -> Result<Vec<Value>, LinkError> {
        let runs = self.get("/runs", &[("session_id", &self.session_id)]).await?;
        Ok(runs.and_then(|r| r.as_array().cloned()).unwrap_or_default())
    }

    async fn run(&self, run_id: &str) -> Result<Option<Value>, LinkError> {
        self.get(&format!("/runs/{run_id}"), &[("session_id", &self.session_id)]).await
    }

    /// POSTs a form whose answer is an event stream.
    async fn stream(&self, path: &str, mut form: Vec<(&str, String)>) -> Result<Started, LinkError> {
        form.extend([("session_id", self.session_id.clone()), ("stream", "true".into()), ("background", "true".into())]);
        let request = self.http.post(self.agent_url(path)).form(&form);
        let response = self.authorized(request).send().await.map_err(LinkError::transport)?;
        let status = response.status();
        if status.is_success() {
            Ok(Started::Stream(response))
        } else if status.is_client_error() {
            Ok(Started::Refused(describe(response).await))
        } else {
            Err(LinkError::Transport(format!("POST {path}: {}", describe(response).await)))
        }
    }

    async fn cancel(&self, run_id: &str) -> Result<(), LinkError> {
        let request = self.http.post(self.agent_url(&format!("/runs/{run_id}/cancel"))).timeout(self.timeout());
        let response = self.authorized(request).send().await.map_err(LinkError::transport)?;
        if !response.status().is_success() {
            let answer = describe(response).await;
            tracing::warn!(%run_id, %answer, "AgentOS did not cancel the run");
        }
        Ok(())
    }
}

/// `"<status>: <detail>"` from an error response (FastAPI's `{"detail": …}` or text).
async fn describe(response: reqwest::Response) -> String {
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    let detail = serde_json::from_str::<Value>(&body)
        .ok()
        .and_then(|v| v.get("detail").map(|d| d.as_str().map_or_else(|| d.to_string(), str::to_owned)))
        .unwrap_or(body);
    let detail: String = detail.chars().take(MAX_DETAIL_CHARS).collect();
    format!("{status}: {detail}")
}

/// What one run's event stream yields.
enum StreamItem {
    Events(Vec<SseEvent>),
    /// The stream ended; `finished` when it carried a terminal event.
    Ended {
        finished: bool,
    },
    Failed(String),
}

fn event_stream(response: reqwest::Response) -> BoxStream<'static, StreamItem> {
    let start = Some((response, SseParser::default(), false));
    futures_util::stream::unfold(start, |state| async move {
        let (mut response, mut parser, mut finished) = state?;
        match response.chunk().await {
            Ok(Some(bytes)) => {
                let events = parser.push(&bytes);
                finished |= events.iter().any(|e| TERMINAL_EVENTS.contains(&e.event.as_str()));
                Some((StreamItem::Events(events), Some((response, parser, finished))))
            }
            Ok(None) => Some((StreamItem::Ended { finished }, None)),
            Err(e) => Some((StreamItem::Failed(e.to_string()), None)),
        }
    })
    .boxed()
}

/// The session's latest run (the one started last), if any.
fn latest_run(runs: &[Value]) -> Option<&Value> {
    let created = |run: &Value| run.get("created_at").and_then(Value::as_i64).unwrap_or(0);
    // Ties (no times) go to the later one in AgentOS's list.
    runs.iter().enumerate().max_by_key(|(n, run)| (created(run), *n)).map(|(_, run)| run)
}

/// The events AgentOS's stream would have carried to say how `run` ended (or that it
/// paused), made from the run as AgentOS records it; none while it still runs.
fn outcome_events(run: &Value) -> Option<Vec<SseEvent>> {
    let event = match run.get("status").and_then(Value::as_str)? {
        "PAUSED" => "RunPaused",
        "COMPLETED" => "RunCompleted",
        "ERROR" => "RunError",
        "CANCELLED" => "RunCancelled",
        _ => return None,
    };
    let data = run.to_string();
    // `RunContinued` first: the content is the run's whole answer, none of it streamed.
    Some(vec![SseEvent { event: "RunContinued".into(), data: "{}".into() }, SseEvent { event: event.into(), data }])
}

/// Reads run `run_id` every [`FOLLOW_EVERY`] until it pauses or ends, then yields the
/// events that say so. A run AgentOS no longer has ends as failed; a read that fails
/// is tried again.
fn follow_run(api: Api, run_id: String) -> BoxStream<'static, StreamItem> {
    futures_util::stream::unfold(Some((api, run_id)), |state| async move {
        let (api, run_id) = state?;
        loop {
            tokio::time::sleep(FOLLOW_EVERY).await;
            match api.run(&run_id).await {
                Ok(Some(run)) => {
                    if let Some(events) = outcome_events(&run) {
                        return Some((StreamItem::Events(events), None));
                    }
                }
                Ok(None) => {
                    let data = json!({"content": "AgentOS no longer has the run the agent was in"}).to_string();
                    return Some((StreamItem::Events(vec![SseEvent { event: "RunError".into(), data }]), None));
                }
                Err(e) => tracing::warn!(session_id = %api.session_id, %run_id, error = %e, "cannot read the run the agent is in; reading again"),
            }
        }
    })
    .boxed()
}

/// A reply waiting for the other part of its pause (questions and confirmations in
/// one pause are two requests, answered by one continue).
struct Held {
    /// Its 1-based place among the commands written on this link.
    position: u64,
    part: PausePart,
    reply: Reply,
}

/// One session's view of AgentOS: the event streams of the calls it made.
pub struct AgnoLink {
    api: Api,
    streams: SelectAll<BoxStream<'static, StreamItem>>,
    /// Updates to hand out before reading streams (replayed requests, refusals).
    queued: Vec<SessionUpdate>,
    written: u64,
    /// The proof last handed out.
    reported: u64,
    /// Replies per run id, until the run's every part has one.
    held: HashMap<String, Vec<Held>>,
    /// An event stream broke: after the queued updates, the link fails.
    broken: Option<String>,
}

impl AgnoLink {
    /// Commands AgentOS has: all written, but not past a held reply.
    fn provable(&self) -> u64 {
        self.held.values().flatten().map(|h| h.position - 1).min().unwrap_or(self.written)
    }

    fn refused(&mut self, message: String) {
        tracing::warn!(session_id = %self.api.session_id, %message, "AgentOS refused a command");
        self.queued.push(SessionUpdate::TurnFailed { message });
    }

    async fn start(&mut self, path: &str, form: Vec<(&str, String)>, what: &str) -> Result<(), LinkError> {
        match self.api.stream(path, form).await? {
            Started::Stream(response) => self.streams.push(event_stream(response)),
            Started::Refused(detail) => self.refused(format!("AgentOS refused {what}: {detail}")),
        }
        Ok(())
    }

    /// Starts a run for a chat message, its bridge command id in the run's metadata so
    /// that a restarted bridge can tell whether AgentOS already has it.
    async fn message(&mut self, text: String, user_id: Option<String>, command_id: &str) -> Result<(), LinkError> {
        let metadata = json!({COMMAND_ID_KEY: command_id}).to_string();
        let mut form = vec![("message", text), ("metadata", metadata)];
        form.extend(user_id.map(|u| ("user_id", u)));
        self.start("/runs", form, "the message").await
    }

    /// Continues the paused run with `reply` once every part of its pause has one. A
    /// run that no longer waits for these tool calls gets nothing: if it carries an
    /// answer for them, this reply reached it before (a restart lost the proof);
    /// otherwise it stopped waiting (cancelled, failed, gone) and the reply is not
    /// delivered.
    async fn reply(&mut self, approval_key: &str, reply: &Reply) -> Result<Sent, LinkError> {
        let session_id = self.api.session_id.clone();
        let Some(run_id) = pause::run_id_of(approval_key).map(str::to_owned) else {
            tracing::warn!(%session_id, %approval_key, "a reply whose key names no Agno run; it cannot be delivered");
            return Ok(Sent::NotWaiting);
        };
        let Some(mut run) = self.api.run(&run_id).await? else {
            tracing::warn!(%session_id, %approval_key, "AgentOS no longer has the run; the reply cannot be delivered");
            return Ok(Sent::NotWaiting);
        };
        let mut reads = 0;
        while reads < CONTINUING_READS && continuing_without_record(&run, approval_key) {
            tokio::time::sleep(CONTINUING_READ_EVERY).await;
            reads += 1;
            match self.api.run(&run_id).await? {
                Some(now) => run = now,
                None => return Ok(Sent::NotWaiting),
            }
        }
        if continuing_without_record(&run, approval_key) {
            // Only a reply moves a run on from its pause: this one, sent before a crash.
            tracing::info!(%session_id, %approval_key, "the run went on from the pause this reply answers; taking it as received");
            return Ok(Sent::AlreadyReceived);
        }
        let tools = run.get("tools").and_then(Value::as_array).cloned().unwrap_or_default();
        let paused = pause::pause_of(&run_id, &tools);
        let part = paused.parts.iter().find(|p| p.approval_key == approval_key).cloned();
        let (Some(part), Some("PAUSED")) = (part, run.get("status").and_then(Value::as_str)) else {
            self.held.remove(&run_id);
            let delivered = pause::answered_in(&tools, approval_key);
            tracing::info!(%session_id, %approval_key, status = ?run.get("status"), delivered, "the run no longer waits for this reply; not continuing it");
            return Ok(if delivered { Sent::AlreadyReceived } else { Sent::NotWaiting });
        };
        self.written += 1;
        let held = self.held.entry(run_id.clone()).or_default();
        held.retain(|h| h.part.approval_key != approval_key);
        held.push(Held { position: self.written, part, reply: reply.clone() });
        if !paused.parts.iter().all(|p| held.iter().any(|h| h.part.approval_key == p.approval_key)) {
            tracing::debug!(%session_id, %approval_key, "holding the reply until the rest of the pause is answered");
            return Ok(Sent::Written);
        }
        let replies: Vec<(PausePart, Reply)> = self.held.remove(&run_id).unwrap_or_default().into_iter().map(|h| (h.part, h.reply)).collect();
        let tools = match pause::continue_tools(&tools, &replies) {
            Ok(tools) => tools,
            Err(e) => {
                self.refused(format!("the answer cannot be given to Agno: {e}"));
                return Ok(Sent::Written);
            }
        };
        let tools = serde_json::to_string(&tools).map_err(LinkError::transport)?;
        self.start(&format!("/runs/{run_id}/continue"), vec![("tools", tools)], "to continue the run").await?;
        Ok(Sent::Written)
    }

    async fn cancel(&mut self) -> Result<(), LinkError> {
        self.held.clear();
        for run in self.api.runs().await? {
            let status = run.get("status").and_then(Value::as_str).unwrap_or_default();
            if let Some(run_id) = run.get("run_id").and_then(Value::as_str)
                && ["PENDING", "RUNNING", "PAUSED"].contains(&status)
            {
                self.api.cancel(run_id).await?;
            }
        }
        Ok(())
    }
}

/// The run is going on (not paused, not finished) and its tools do not show the
/// answer to `approval_key` yet.
fn continuing_without_record(run: &Value, approval_key: &str) -> bool {
    let going_on = matches!(run.get("status").and_then(Value::as_str), Some("RUNNING" | "PENDING"));
    let tools = run.get("tools").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    going_on && !pause::answered_in(tools, approval_key)
}

impl Link for AgnoLink {
    type State = RunEvents;

    /// The session's latest run: followed while it runs; its end relayed if it ended
    /// (a paused one is replayed by every connect already).
    async fn resume_turn(&mut self) -> Result<Vec<SessionUpdate>, LinkError> {
        let runs = self.api.runs().await?;
        let Some(run) = latest_run(&runs) else { return Ok(Vec::new()) };
        let run_id = run.get("run_id").and_then(Value::as_str).unwrap_or_default().to_owned();
        let status = run.get("status").and_then(Value::as_str).unwrap_or_default();
        let session_id = &self.api.session_id;
        match status {
            "RUNNING" | "PENDING" if !run_id.is_empty() => {
                tracing::info!(%session_id, %run_id, "the agent's run goes on in AgentOS; following it until it pauses or ends");
                self.streams.push(follow_run(self.api.clone(), run_id));
            }
            "PAUSED" => {}
            _ => {
                if let Some(events) = outcome_events(run) {
                    tracing::info!(%session_id, %run_id, status, "the agent's run ended while no bridge listened; relaying how");
                    self.streams.push(futures_util::stream::iter([StreamItem::Events(events)]).boxed());
                }
            }
        }
        Ok(Vec::new())
    }

    async fn send(&mut self, outgoing: Outgoing<'_>) -> Result<Sent, LinkError> {
        match outgoing.command {
            Command::Message { content, user, .. } => {
                // A message written before a crash may have started a run already;
                // running it twice would repeat the agent's work.
                if outgoing.maybe_received && self.api.has_run_for(outgoing.id).await? {
                    tracing::info!(session_id = %self.api.session_id, command_id = outgoing.id, "AgentOS already has this message; not sending it again");
                    return Ok(Sent::AlreadyReceived);
                }
                self.written += 1;
                let text = content.iter().map(|c| c.text.as_str()).collect::<Vec<_>>().join("\n");
                self.message(text, user.as_ref().map(|u| format!("{}:{}", u.platform, u.id)), outgoing.id).await?;
                Ok(Sent::Written)
            }
            Command::Approval { approval_key, reply, .. } => self.reply(approval_key, reply).await,
            Command::Cancel { .. } => {
                self.written += 1;
                self.cancel().await?;
                Ok(Sent::Written)
            }
        }
    }

    async fn recv(&mut self, events: &mut RunEvents) -> Option<Result<Received, LinkError>> {
        loop {
            let proof = self.provable();
            if !self.queued.is_empty() || proof > self.reported {
                let proves_first = (proof > self.reported).then_some(proof);
                self.reported = self.reported.max(proof);
                return Some(Ok(Received { updates: std::mem::take(&mut self.queued), proves_first }));
            }
            if let Some(reason) = self.broken.take() {
                return Some(Err(LinkError::Transport(reason)));
            }
            if self.streams.is_empty() {
                // Nothing to read until the next command; the session decides when
                // to close an idle link.
                std::future::pending::<()>().await;
            }
            // Cancel-safe: each stream keeps its read in progress inside itself.
            let Some(item) = self.streams.next().await else { continue };
            match item {
                StreamItem::Events(records) => {
                    for record in records {
                        match serde_json::from_str::<Value>(&record.data) {
                            Ok(data) => self.queued.extend(events.push(&record.event, &data)),
                            Err(e) => tracing::warn!(event = %record.event, error = %e, "skipping an AgentOS event that is not JSON"),
                        }
                    }
                }
                StreamItem::Ended { finished: true } => {}
                StreamItem::Ended { finished: false } => {
                    self.queued.push(SessionUpdate::TurnFailed { message: "AgentOS ended the run's event stream before the run finished".into() });
                }
                StreamItem::Failed(e) => {
                    self.queued.push(SessionUpdate::TurnFailed { message: format!("lost the run's event stream ({e}); the run goes on in AgentOS") });
                    self.broken = Some(format!("an AgentOS event stream broke: {e}"));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::Json;
    use axum::extract::State;
    use axum::routing::get;
    use serde_json::{Value, json};

    use super::{AgnoSettings, AgnoTransport};
    use crate::backend::session::{Link, Outgoing, Sent, Transport};
    use crate::interaction::TimeoutDefaults;
    use crate::protocol::{Command, Decision, Reply};

    /// An AgentOS whose run `r1` answers `states` in turn to each read (the last one
    /// from then on), and which has no paused run.
    async fn agent_os(states: Vec<Value>) -> (String, Arc<AtomicUsize>) {
        let reads = Arc::new(AtomicUsize::new(0));
        let state = (Arc::new(states), reads.clone());
        let app = axum::Router::new()
            .route("/agents/a/runs", get(|| async { Json(json!([])) }))
            .route(
                "/agents/a/runs/r1",
                get(|State((states, reads)): State<(Arc<Vec<Value>>, Arc<AtomicUsize>)>| async move {
                    let n = reads.fetch_add(1, Ordering::SeqCst);
                    Json(states[n.min(states.len() - 1)].clone())
                }),
            )
            .with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (url, reads)
    }

    async fn send_again(url: String) -> Sent {
        let settings = AgnoSettings { url, agent_id: "a".into(), ..AgnoSettings::default() };
        let mut link = AgnoTransport::new(settings, TimeoutDefaults::default()).connect("s1").await.unwrap();
        let command = Command::Approval {
            session_id: "s1".into(),
            approval_key: "r1:c1".into(),
            reply: Reply::Decisions { decisions: vec![Decision::Approve], user_edit_content: None },
        };
        link.send(Outgoing { id: "7", command: &command, maybe_received: true }).await.unwrap()
    }

    fn run(status: &str, confirmed: Option<bool>) -> Value {
        json!({"run_id": "r1", "status": status, "tools": [{"tool_call_id": "c1", "tool_name": "deploy", "confirmed": confirmed}]})
    }

    /// Sent again after a crash, the reply finds its run going on before AgentOS has
    /// recorded the answer: it waits for the record and reports the reply received,
    /// not "not delivered".
    #[tokio::test]
    async fn a_reply_whose_run_goes_on_is_received_once_the_run_records_it() {
        let (url, reads) = agent_os(vec![run("RUNNING", None), run("RUNNING", None), run("COMPLETED", Some(true))]).await;
        assert!(matches!(send_again(url).await, Sent::AlreadyReceived));
        assert_eq!(reads.load(Ordering::SeqCst), 3, "read until the record showed the answer");
    }

    /// An AgentOS whose session `s1` has an older completed run `r0` and its latest run
    /// `r1`, which answers `states` in turn to each read (the last one from then on).
    async fn agent_os_with_runs(states: Vec<Value>) -> String {
        let reads = Arc::new(AtomicUsize::new(0));
        let state = (Arc::new(states), reads);
        let older = json!({"run_id": "r0", "status": "COMPLETED", "created_at": 100, "content": "câu trả lời cũ"});
        let app = axum::Router::new()
            .route(
                "/agents/a/runs",
                get(move |State((states, reads)): State<(Arc<Vec<Value>>, Arc<AtomicUsize>)>| async move {
                    let n = reads.fetch_add(1, Ordering::SeqCst);
                    Json(json!([older, states[n.min(states.len() - 1)]]))
                }),
            )
            .route(
                "/agents/a/runs/r1",
                get(|State((states, reads)): State<(Arc<Vec<Value>>, Arc<AtomicUsize>)>| async move {
                    let n = reads.fetch_add(1, Ordering::SeqCst);
                    Json(states[n.min(states.len() - 1)].clone())
                }),
            )
            .with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        url
    }

    /// Connects to `url`, resumes the turn the store says was open, and reads what
    /// the link yields until the turn ends.
    async fn resumed_turn(url: String) -> Vec<crate::backend::SessionUpdate> {
        use crate::backend::SessionUpdate;
        let settings = AgnoSettings { url, agent_id: "a".into(), ..AgnoSettings::default() };
        let transport = AgnoTransport::new(settings, TimeoutDefaults::default());
        let mut link = transport.connect("s1").await.unwrap();
        let mut state = transport.new_state();
        let mut seen = link.resume_turn().await.unwrap();
        while !seen.iter().any(|u| matches!(u, SessionUpdate::TurnEnded | SessionUpdate::TurnFailed { .. } | SessionUpdate::Request(_))) {
            let received = tokio::time::timeout(std::time::Duration::from_secs(10), link.recv(&mut state)).await.expect("the turn's end in time");
            seen.extend(received.expect("open").expect("read").updates);
        }
        seen
    }

    fn latest(status: &str, content: Option<&str>) -> Value {
        json!({"run_id": "r1", "status": status, "created_at": 200, "content": content, "tools": []})
    }

    /// The bridge died while the model worked: the run, still running, is followed
    /// until it completes, and its answer is relayed as the turn's final text.
    #[tokio::test]
    async fn a_run_still_running_after_a_restart_is_followed_until_its_answer() {
        use crate::backend::SessionUpdate;
        let url = agent_os_with_runs(vec![latest("RUNNING", None), latest("RUNNING", None), latest("COMPLETED", Some("Đã triển khai lên staging."))]).await;
        assert_eq!(
            resumed_turn(url).await,
            vec![SessionUpdate::Text { text: "Đã triển khai lên staging.".into(), is_final: true, block: None }, SessionUpdate::TurnEnded]
        );
    }

    /// The bridge died after the continue reached AgentOS and before the answer was
    /// relayed: the completed run's content is relayed (the older run's is not).
    #[tokio::test]
    async fn a_run_that_completed_while_no_bridge_listened_has_its_answer_relayed() {
        use crate::backend::SessionUpdate;
        let url = agent_os_with_runs(vec![latest("COMPLETED", Some("Xong: deployed to prod"))]).await;
        assert_eq!(
            resumed_turn(url).await,
            vec![SessionUpdate::Text { text: "Xong: deployed to prod".into(), is_final: true, block: None }, SessionUpdate::TurnEnded]
        );
    }

    /// A run that failed meanwhile is said to have failed.
    #[tokio::test]
    async fn a_run_that_failed_while_no_bridge_listened_is_said_to_have_failed() {
        use crate::backend::SessionUpdate;
        let url = agent_os_with_runs(vec![latest("ERROR", Some("model overloaded"))]).await;
        assert_eq!(resumed_turn(url).await, vec![SessionUpdate::TurnFailed { message: "model overloaded".into() }]);
    }

    /// A run that finished without the answer did not get it: not delivered.
    #[tokio::test]
    async fn a_reply_whose_run_ended_without_it_is_not_delivered() {
        let (url, _) = agent_os(vec![run("RUNNING", None), run("CANCELLED", None)]).await;
        assert!(matches!(send_again(url).await, Sent::NotWaiting));
    }
}
