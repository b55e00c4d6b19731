//! Any Agent Client Protocol agent (Gemini CLI, Claude Code through claude-code-acp,
//! Codex through its adapter) as a [`Transport`]: one agent process per session,
//! spoken to in JSON-RPC 2.0 over its stdio ([`wire`]).
//!
//! - Connecting spawns the process, `initialize`s it (a file system only under
//!   `acp.allow_fs`, [`fs`]; terminals only under `acp.allow_terminal`, [`terminal`])
//!   and opens the agent's session: `session/load` of
//!   the one this bridge session had, when the agent offers `loadSession` (its id is
//!   kept in the store, so it survives a restart of the bridge), else `session/new`.
//!   What the agent replays while loading is not shown again.
//! - A chat message is a `session/prompt`; its answer ends the turn. ACP has no way to
//!   add to a running turn, so a message sent meanwhile is prompted when the turn ends
//!   (and is not proven read before it is written). `/cancel` answers every open
//!   permission request `cancelled`, as ACP requires, then sends `session/cancel`.
//! - `session/request_permission` becomes an approval ([`translate`]); the reply is
//!   the exact `optionId` chosen ([`permissions`]); a comment on the card follows as
//!   the person's next message. A form `elicitation/create` becomes a question card
//!   answered with the form's content ([`elicitation`]). The agent waits without
//!   limit, so at a request's deadline the bridge answers it itself (`cancelled`,
//!   a form `cancel`) and the request ends as timed out.
//! - Proof of reading: a `ping` (a method no agent has) follows every command; the
//!   agent reads its stdin in order and answers it at once with "method not found".
//! - The process exiting ends the link: the open requests end as timed out, and the
//!   chat is told when a turn or a request was open. Dropping the link kills the
//!   process (idle close, lost lease, shutdown); it also dies with the bridge.

pub mod descriptor;
pub mod elicitation;
pub mod fs;
pub mod open;
pub mod permissions;
pub mod settings;
pub mod terminal;
pub mod translate;
pub mod wire;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

pub use settings::AcpSettings;

use self::open::OpenRequests;
use self::terminal::Terminals;
use self::translate::{Shown, Translator};
use self::wire::{Incoming, OurId};
use super::SessionUpdate;
use super::child::Agents;
use super::child::stdio::StdioAgent;
use super::session::{Link, LinkError, Outgoing, Received, Sent, Transport};
use crate::clock::now_ms;
use crate::interaction::TimeoutDefaults;
use crate::protocol::{Command, Reply};
use crate::store::PlatformState;

/// Where the agent's session id of each bridge session is kept (the store's own
/// key-value rows, under this name).
pub const SESSIONS: &str = "acp";

/// Starts the configured ACP agent for each session.
pub struct AcpTransport {
    settings: AcpSettings,
    defaults: TimeoutDefaults,
    agents: Agents,
    /// The agent's session id of each bridge session, for `session/load`.
    sessions: Option<PlatformState>,
}

impl AcpTransport {
    pub fn new(settings: AcpSettings, defaults: TimeoutDefaults) -> Self {
        Self { settings, defaults, agents: Agents::default(), sessions: None }
    }

    /// Records the processes it starts in `agents` (the deployment's registry).
    pub fn with_agents(self, agents: Agents) -> Self {
        Self { agents, ..self }
    }

    /// Keeps each session's agent session id in `sessions`, so a restarted bridge can
    /// load it.
    pub fn with_sessions(self, sessions: PlatformState) -> Self {
        Self { sessions: Some(sessions), ..self }
    }

    async fn stored_session(&self, session_id: &str) -> Option<String> {
        let sessions = self.sessions.as_ref()?;
        match sessions.get(session_id, now_ms()).await {
            Ok(stored) => stored.map(|s| s.value),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the agent's session id; starting a new conversation");
                None
            }
        }
    }

    async fn remember_session(&self, session_id: &str, acp_session: &str) {
        if let Some(sessions) = &self.sessions
            && let Err(e) = sessions.put(session_id, acp_session, now_ms(), None).await
        {
            tracing::warn!(error = %e, "cannot keep the agent's session id; a restart will start a new conversation");
        }
    }
}

impl Transport for AcpTransport {
    type State = Translator;
    type Link = AcpLink;

    fn name(&self) -> &'static str {
        "acp"
    }

    fn new_state(&self) -> Translator {
        Translator::new(self.defaults)
    }

    async fn connect(&self, session_id: &str) -> Result<AcpLink, LinkError> {
        let command = &self.settings.command;
        let work_dir = std::fs::canonicalize(&self.settings.work_dir)
            .map_err(|e| LinkError::Transport(format!("acp.work_dir {} cannot be used: {e}", self.settings.work_dir)))?;
        let mut process = StdioAgent::spawn("the ACP agent", command, &self.settings.args, &self.settings.env, &work_dir, &self.agents)
            .map_err(|e| LinkError::Transport(format!("cannot start the ACP agent (`{command}`): {e}")))?;
        let limit = Duration::from_secs(self.settings.start_timeout_secs.max(1));
        let cwd = work_dir.display().to_string();
        let started = async {
            process.write(wire::initialize(self.settings.allow_fs, self.settings.allow_terminal));
            let init = answer(&mut process, OurId::Initialize).await?.map_err(|e| format!("the agent refused initialize: {} (code {})", e.message, e.code))?;
            let version = init.get("protocolVersion").and_then(Value::as_u64);
            if version != Some(wire::PROTOCOL_VERSION) {
                return Err(format!("the agent speaks ACP version {version:?}; hitl-bridge speaks {}", wire::PROTOCOL_VERSION));
            }
            let can_load = init.pointer("/agentCapabilities/loadSession").and_then(Value::as_bool).unwrap_or(false);
            if self.settings.load_sessions
                && can_load
                && let Some(acp_session) = self.stored_session(session_id).await
            {
                process.write(wire::load_session(&acp_session, &cwd));
                match answer(&mut process, OurId::LoadSession).await? {
                    Ok(_) => return Ok((acp_session, true)),
                    Err(e) => tracing::warn!(%acp_session, error = %e.message, "the agent could not load its session; starting a new one"),
                }
            }
            process.write(wire::new_session(&cwd));
            let opened =
                answer(&mut process, OurId::NewSession).await?.map_err(|e| format!("the agent refused session/new: {} (code {})", e.message, e.code))?;
            let acp_session = opened.get("sessionId").and_then(Value::as_str).ok_or("session/new answered without a sessionId")?.to_owned();
            self.remember_session(session_id, &acp_session).await;
            Ok((acp_session, false))
        };
        let (acp_session, loaded) = match tokio::time::timeout(limit, started).await {
            Ok(Ok(opened)) => opened,
            Ok(Err(why)) => return Err(LinkError::Transport(format!("{why}; stderr: {}", process.stderr_tail()))),
            Err(_) => {
                return Err(LinkError::Transport(format!(
                    "the ACP agent did not open a session within {} s (acp.start_timeout_secs); stderr: {}",
                    limit.as_secs(),
                    process.stderr_tail()
                )));
            }
        };
        tracing::info!(pid = process.pid(), %acp_session, loaded, "the ACP agent is ready");
        let terminals = self.settings.allow_terminal.then(|| Arc::new(Terminals::new(work_dir.clone())));
        Ok(AcpLink::new(process, acp_session, loaded, self.settings.allow_fs.then_some(work_dir), terminals))
    }
}

/// Waits for the answer to the bridge's request `id`, skipping everything else (what
/// the agent replays while loading a session is not the chat's again). Requests the
/// agent makes meanwhile are answered with an error, so it does not wait on them.
async fn answer(process: &mut StdioAgent, id: OurId) -> Result<Result<Value, wire::RpcError>, String> {
    loop {
        match process.next_line().await {
            Ok(Some(line)) => match wire::parse_line(&line) {
                Ok(Incoming::Response { id: got, outcome }) if OurId::parse(&got) == Some(id) => return Ok(outcome),
                Ok(Incoming::Request { id, method, .. }) => {
                    process.write(wire::error(&id, wire::METHOD_NOT_FOUND, &format!("hitl-bridge cannot serve {method} before the session is open")));
                }
                Ok(_) => {}
                Err(e) => tracing::debug!(error = %e, "skipping a line from the ACP agent"),
            },
            Ok(None) => {
                let status = process.exit_status().await;
                return Err(format!("the agent exited while starting ({status})"));
            }
            Err(e) => return Err(format!("cannot read the agent's output: {e}")),
        }
    }
}

/// One running agent process and its session.
pub struct AcpLink {
    process: StdioAgent,
    acp_session: String,
    /// The conversation was continued with `session/load`.
    loaded: bool,
    /// The work directory the agent may read and write through the bridge, when allowed.
    fs_root: Option<PathBuf>,
    /// The terminals the agent runs commands in, when allowed; dropped (and their
    /// commands killed) with the link.
    terminals: Option<Arc<Terminals>>,
    /// Commands counted as written so far; a ping carries how many of them it proves.
    written: u64,
    prompts: u64,
    /// The `session/prompt` whose turn runs, if any.
    turn: Option<u64>,
    /// Messages sent while a turn ran, with their command number: prompted in order
    /// when it ends. Proofs stop short of the first of them.
    held: VecDeque<(u64, String)>,
    open: OpenRequests,
    /// When each open permission request is answered `cancelled` if nobody decided.
    deadlines: Vec<(Instant, String)>,
    /// Updates made while writing, handed out by `recv`.
    queued: VecDeque<SessionUpdate>,
    /// Stdout closed: the process is gone, its end not yet reported.
    closed: bool,
    ended: bool,
}

/// Said once in the chat when the bridge finds that the agent was in a turn when the
/// bridge before it stopped: the agent process ended with that bridge, and its turn.
pub const TURN_ENDED_WITH_THE_BRIDGE: &str = "the bridge restarted while the agent was working on your last message, and that turn ended with it. The conversation is kept: send your message again to continue.";

/// The same, for an agent that cannot load a session: its conversation ended too.
pub const CONVERSATION_ENDED_WITH_THE_BRIDGE: &str = "the bridge restarted while the agent was working on your last message, and that turn ended with it. This agent cannot continue a conversation after a restart, so your next message starts a new one.";

impl AcpLink {
    fn new(process: StdioAgent, acp_session: String, loaded: bool, fs_root: Option<PathBuf>, terminals: Option<Arc<Terminals>>) -> Self {
        Self {
            process,
            acp_session,
            loaded,
            fs_root,
            terminals,
            written: 0,
            prompts: 0,
            turn: None,
            held: VecDeque::new(),
            open: OpenRequests::default(),
            deadlines: Vec::new(),
            queued: VecDeque::new(),
            closed: false,
            ended: false,
        }
    }

    fn prompt(&mut self, text: &str) {
        self.prompts += 1;
        self.turn = Some(self.prompts);
        self.process.write(wire::prompt(self.prompts, &self.acp_session, text));
    }

    /// A ping proving the commands written so far, short of any still held.
    fn ping(&self) {
        let proven = self.held.front().map_or(self.written, |(n, _)| n - 1);
        self.process.write(wire::ping(proven));
    }

    /// Answers the permission requests whose deadline passed `cancelled`; they end as
    /// timed out.
    fn cancel_due(&mut self) -> Vec<SessionUpdate> {
        let now = Instant::now();
        let (due, later): (Vec<_>, Vec<_>) = self.deadlines.drain(..).partition(|(at, _)| *at <= now);
        self.deadlines = later;
        let mut out = Vec::new();
        for (_, approval_key) in due {
            if let Some(answer) = self.open.withdraw(&approval_key) {
                tracing::info!(%approval_key, "nobody answered the agent's request in time; telling it so");
                self.process.write(wire::result(&answer.id, answer.result));
                out.push(SessionUpdate::TimedOut { approval_key });
            }
        }
        out
    }

    /// One line of the agent's stdout.
    fn line(&mut self, translator: &mut Translator, line: &str) -> Received {
        let incoming = match wire::parse_line(line) {
            Ok(incoming) => incoming,
            Err(e) => {
                let preview: String = line.chars().take(120).collect();
                tracing::warn!(error = %e, line = %preview, "skipping a line from the ACP agent");
                return Received::default();
            }
        };
        match incoming {
            Incoming::Notification { method, params } if method == "session/update" => match translate::update_of(&params, &self.acp_session) {
                Some(update) => Received::updates(translator.update(update, now_ms())),
                None => Received::default(),
            },
            Incoming::Notification { method, .. } => {
                tracing::debug!(%method, "ignoring an ACP notification");
                Received::default()
            }
            Incoming::Request { id, method, params } => self.request(translator, id, &method, &params),
            Incoming::Response { id, outcome } => match OurId::parse(&id) {
                Some(OurId::Ping(proven)) => Received::proof(proven.min(self.written)),
                Some(OurId::Prompt(n)) => {
                    if self.turn == Some(n) {
                        self.turn = None;
                    }
                    let mut updates = translator.turn_finished(outcome.as_ref().map_err(|e| format!("{} (code {})", e.message, e.code)));
                    // The agent settles its requests before it ends a turn; any left can
                    // no longer be answered.
                    let (_, left) = self.open.withdraw_all();
                    updates.splice(updates.len() - 1..updates.len() - 1, left);
                    if let Some((_, text)) = self.held.pop_front() {
                        self.prompt(&text);
                        self.ping();
                    }
                    Received::updates(updates)
                }
                Some(OurId::Initialize | OurId::NewSession | OurId::LoadSession) | None => {
                    tracing::debug!(%id, "a response to nothing the bridge asked; skipped");
                    Received::default()
                }
            },
        }
    }

    /// A request made into a card: kept open until answered or its deadline. One that
    /// cannot be shown is answered `refusal` at once (so the agent's turn goes on) and
    /// shown as an error.
    fn show(&mut self, id: Value, shown: Result<Shown, String>, refusal: Value, what: &str) -> Received {
        match shown {
            Ok(shown) => {
                self.open.insert(&shown.approval_key, id, shown.asked);
                self.deadlines.push((Instant::now() + Duration::from_secs(shown.timeout_secs), shown.approval_key));
                Received::updates(shown.updates)
            }
            Err(reason) => {
                self.process.write(wire::result(&id, refusal));
                Received::updates(vec![SessionUpdate::InvalidRequest {
                    approval_key: format!("{}-{id}", what.replace(' ', "-")),
                    reason: format!("the agent's {what}: {reason}"),
                }])
            }
        }
    }

    /// A request the agent waits on.
    fn request(&mut self, translator: &mut Translator, id: Value, method: &str, params: &Value) -> Received {
        match method {
            "session/request_permission" => {
                let shown = translator.permission(params);
                self.show(id, shown, wire::permission_outcome(None), "permission request")
            }
            "elicitation/create" => {
                let shown = translator.elicitation(params, now_ms());
                self.show(id, shown, elicitation::declined(), "form")
            }
            "fs/read_text_file" | "fs/write_text_file" if self.fs_root.is_some() => {
                // Answered from a task: the file's IO is not raced against the link's
                // timers, so a request is never dropped half-served.
                let root = self.fs_root.clone().unwrap_or_default();
                let writer = self.process.writer();
                let (method, params) = (method.to_owned(), params.clone());
                tokio::spawn(async move {
                    let line = match fs::serve(&method, &params, &root).await {
                        Ok(result) => wire::result(&id, result),
                        Err(message) => {
                            tracing::warn!(%method, %message, "refused the agent's file request");
                            wire::error(&id, -32603, &message)
                        }
                    };
                    let _ = writer.send(line);
                });
                Received::default()
            }
            method if method.starts_with("terminal/") && self.terminals.is_some() => {
                // From a task, as files are: waiting for a command's exit must not hold
                // the link up. The task keeps only a weak hold, so the commands still die
                // with the link.
                let terminals = Arc::downgrade(self.terminals.as_ref().expect("checked"));
                let writer = self.process.writer();
                let (method, params) = (method.to_owned(), params.clone());
                tokio::spawn(async move {
                    let served = match terminals.upgrade() {
                        Some(terminals) => terminals.serve(&method, &params).await,
                        None => Err("the agent's link is closed".to_owned()),
                    };
                    let line = match served {
                        Ok(result) => wire::result(&id, result),
                        Err(message) => {
                            tracing::warn!(%method, %message, "refused the agent's terminal request");
                            wire::error(&id, -32603, &message)
                        }
                    };
                    let _ = writer.send(line);
                });
                Received::default()
            }
            other => {
                // A terminal or a file system not allowed, anything newer: an error, so
                // the agent does not wait forever.
                tracing::info!(request = other, "answering an ACP request the bridge does not serve with an error");
                self.process.write(wire::error(&id, wire::METHOD_NOT_FOUND, &format!("hitl-bridge does not serve {other}")));
                Received::default()
            }
        }
    }
}

impl Link for AcpLink {
    type State = Translator;

    /// The process that was in the turn died with the bridge: the chat is told so once.
    async fn resume_turn(&mut self) -> Result<Vec<SessionUpdate>, LinkError> {
        let message = if self.loaded { TURN_ENDED_WITH_THE_BRIDGE } else { CONVERSATION_ENDED_WITH_THE_BRIDGE };
        Ok(vec![SessionUpdate::TurnFailed { message: message.into() }])
    }

    async fn send(&mut self, outgoing: Outgoing<'_>) -> Result<Sent, LinkError> {
        match outgoing.command {
            Command::Message { content, .. } => {
                let text = content.iter().map(|c| c.text.as_str()).collect::<Vec<_>>().join("\n");
                self.written += 1;
                if self.turn.is_some() || !self.held.is_empty() {
                    self.held.push_back((self.written, text));
                } else {
                    self.prompt(&text);
                }
                self.ping();
                return Ok(Sent::Written);
            }
            Command::Approval { approval_key, reply, .. } => match self.open.reply(approval_key, reply) {
                Some(answer) => {
                    self.deadlines.retain(|(_, key)| key != approval_key);
                    if let Some(why) = &answer.declined_because {
                        // The card says answered; the chat learns what the agent got.
                        tracing::info!(%approval_key, %why, "the agent's form is declined");
                        self.queued.push_back(SessionUpdate::Text { text: format!("The form was declined: {why}."), is_final: false, block: None });
                    }
                    self.process.write(wire::result(&answer.id, answer.result));
                    // ACP's answer has no room for words: a comment on the card reaches
                    // the agent as the person's next message, after this turn.
                    if let Reply::Decisions { user_edit_content: Some(note), .. } = reply
                        && !note.trim().is_empty()
                    {
                        self.written += 1;
                        self.held.push_back((self.written, note.clone()));
                        self.ping();
                        return Ok(Sent::Written);
                    }
                }
                None => {
                    tracing::warn!(%approval_key, "the ACP agent no longer waits for this request; the reply cannot be delivered");
                    return Ok(Sent::NotWaiting);
                }
            },
            Command::Cancel { .. } => {
                if self.turn.is_some() {
                    let (answers, ended) = self.open.withdraw_all();
                    for answer in answers {
                        self.process.write(wire::result(&answer.id, answer.result));
                    }
                    self.deadlines.clear();
                    self.queued.extend(ended);
                    self.process.write(wire::cancel(&self.acp_session));
                }
            }
        }
        self.written += 1;
        self.ping();
        Ok(Sent::Written)
    }

    async fn recv(&mut self, translator: &mut Translator) -> Option<Result<Received, LinkError>> {
        loop {
            if !self.queued.is_empty() {
                return Some(Ok(Received::updates(self.queued.drain(..).collect())));
            }
            if self.ended {
                return None;
            }
            if self.closed {
                // Cancel-safe: nothing changes before the wait is over.
                let how = self.process.exit_status().await;
                self.ended = true;
                tracing::warn!(exit = %how, stderr = %self.process.stderr_tail(), "the ACP agent exited");
                let (_, lost) = self.open.withdraw_all();
                let turn_open = self.turn.take().is_some() || !self.held.is_empty();
                let updates = translator.process_lost(&how, turn_open, lost);
                if updates.is_empty() {
                    return None;
                }
                return Some(Ok(Received::updates(updates)));
            }
            let next_deadline = self.deadlines.iter().map(|(at, _)| *at).min();
            // Cancel-safe: a partial line stays in the process reader, and the deadlines
            // change only once the sleep is over.
            tokio::select! {
                line = self.process.next_line() => match line {
                    Ok(Some(line)) => {
                        let received = self.line(translator, &line);
                        if received != Received::default() {
                            return Some(Ok(received));
                        }
                    }
                    Ok(None) => self.closed = true,
                    Err(e) => return Some(Err(LinkError::transport(format!("cannot read the ACP agent's output: {e}")))),
                },
                _ = tokio::time::sleep_until(next_deadline.unwrap_or_else(Instant::now)), if next_deadline.is_some() => {
                    let cancelled = self.cancel_due();
                    if !cancelled.is_empty() {
                        return Some(Ok(Received::updates(cancelled)));
                    }
                }
            }
        }
    }
}
