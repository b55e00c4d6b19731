//! Kimi CLI's wire mode (seed 001) as a [`Transport`]: one `kimi --wire` process per
//! session, spoken to in JSON-RPC 2.0 over NDJSON stdio.
//!
//! - Connecting spawns the process ([`process`]) and `initialize`s it with
//!   `supports_question` (else kimi hides its AskUserQuestion tool).
//! - A chat message is a `prompt` (a `steer` while a turn runs); the prompt's response
//!   ends the turn. A decision or answer is the result of kimi's pending `request`.
//! - Proof of reading: a `ping` (a method kimi does not know) follows every command;
//!   kimi reads its stdin in order and answers it at once, so its error reply proves
//!   the commands before it were read.
//! - Kimi waits for a person without limit. An approval nobody decides is rejected by
//!   the engine at its deadline (like every backend's); a question nobody answers is
//!   dismissed here at its deadline (`{"answers":{}}`, what kimi's own client sends
//!   for Escape) and ends as timed out, so kimi's turn does not hang.
//! - The process exiting ends the link: its stdout closes, the open requests end as
//!   timed out, and the chat is told when a turn or a request was open. The session
//!   machinery starts a new process when there is work again (the next message);
//!   `--session` makes it continue the conversation. Dropping the link kills the
//!   process (idle close, lost lease, shutdown).
//!
//! Pure halves: [`wire`] (lines), [`translate`] (events and requests → updates),
//! [`requests`] (what a process waits on; replies → results).

pub mod descriptor;
pub mod process;
pub mod requests;
pub mod settings;
pub mod translate;
pub mod wire;

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use tokio::time::Instant;

pub use settings::KimiSettings;

use self::requests::OpenRequests;
use self::translate::Translator;
use self::wire::{Incoming, OurId};
use super::SessionUpdate;
use super::child::Agents;
use super::session::{Link, LinkError, Outgoing, Received, Sent, Transport};
use crate::backend::child::stdio::StdioAgent;
use crate::interaction::TimeoutDefaults;
use crate::protocol::{Answers, Command, Reply};

/// Starts `kimi --wire` for each session.
pub struct KimiTransport {
    settings: KimiSettings,
    defaults: TimeoutDefaults,
    /// Where each process is recorded, for this deployment's next bridge to end it
    /// if this one dies.
    agents: Agents,
}

impl KimiTransport {
    pub fn new(settings: KimiSettings, defaults: TimeoutDefaults) -> Self {
        Self { settings, defaults, agents: Agents::default() }
    }

    /// Records the processes it starts in `agents` (the deployment's registry).
    pub fn with_agents(self, agents: Agents) -> Self {
        Self { agents, ..self }
    }
}

impl Transport for KimiTransport {
    type State = Translator;
    type Link = KimiLink;

    fn name(&self) -> &'static str {
        "kimi"
    }

    fn new_state(&self) -> Translator {
        Translator::new(self.defaults, self.settings.approve_for_session)
    }

    async fn connect(&self, session_id: &str) -> Result<KimiLink, LinkError> {
        let mut process = process::spawn(&self.settings, session_id, &self.agents)
            .map_err(|e| LinkError::Transport(format!("cannot start kimi (`{}`): {e}", self.settings.command)))?;
        process.write(wire::initialize());
        let limit = Duration::from_secs(self.settings.start_timeout_secs.max(1));
        match tokio::time::timeout(limit, initialized(&mut process)).await {
            Ok(Ok(())) => {}
            Ok(Err(why)) => return Err(LinkError::Transport(why)),
            Err(_) => {
                return Err(LinkError::Transport(format!(
                    "kimi did not answer initialize within {} s (kimi.start_timeout_secs); stderr: {}",
                    limit.as_secs(),
                    process.stderr_tail()
                )));
            }
        }
        tracing::info!(pid = process.pid(), "kimi is ready");
        Ok(KimiLink::new(process))
    }
}

/// Waits for the answer to `initialize`, skipping anything else.
async fn initialized(process: &mut StdioAgent) -> Result<(), String> {
    loop {
        match process.next_line().await {
            Ok(Some(line)) => match wire::parse_line(&line) {
                Ok(Incoming::Response { id, outcome }) if OurId::parse(&id) == Some(OurId::Initialize) => {
                    return outcome.map(|_| ()).map_err(|e| format!("kimi refused initialize: {} (code {})", e.message, e.code));
                }
                Ok(other) => tracing::debug!(?other, "kimi spoke before answering initialize; skipped"),
                Err(e) => tracing::debug!(error = %e, "skipping a line from kimi"),
            },
            Ok(None) => {
                let status = process.exit_status().await;
                return Err(format!("kimi exited before answering initialize ({status}); stderr: {}", process.stderr_tail()));
            }
            Err(e) => return Err(format!("cannot read kimi's output: {e}")),
        }
    }
}

/// One running kimi process.
pub struct KimiLink {
    process: StdioAgent,
    /// Commands written so far; a ping carries the count.
    written: u64,
    /// Numbers the bridge's own requests.
    requests: u64,
    /// The `prompt` whose turn runs, if any.
    turn: Option<u64>,
    /// Steered texts by request number: sent again as a prompt if the turn ended first.
    steers: HashMap<u64, String>,
    open: OpenRequests,
    /// When each open question is dismissed if nobody answered it.
    question_deadlines: Vec<(Instant, String)>,
    /// Updates made while writing (replies no process can take), handed out by `recv`.
    queued: VecDeque<SessionUpdate>,
    /// Stdout closed: the process is gone, its end not yet reported.
    closed: bool,
    ended: bool,
}

impl KimiLink {
    fn new(process: StdioAgent) -> Self {
        Self {
            process,
            written: 0,
            requests: 0,
            turn: None,
            steers: HashMap::new(),
            open: OpenRequests::default(),
            question_deadlines: Vec::new(),
            queued: VecDeque::new(),
            closed: false,
            ended: false,
        }
    }

    fn next_request(&mut self) -> u64 {
        self.requests += 1;
        self.requests
    }

    fn prompt(&mut self, text: &str) {
        let n = self.next_request();
        self.turn = Some(n);
        self.process.write(wire::prompt(n, text));
    }

    /// Dismisses the open questions whose deadline passed, as kimi's own client does
    /// for Escape; they end as timed out.
    fn dismiss_due_questions(&mut self) -> Vec<SessionUpdate> {
        let now = Instant::now();
        let (due, later): (Vec<_>, Vec<_>) = self.question_deadlines.drain(..).partition(|(at, _)| *at <= now);
        self.question_deadlines = later;
        let mut out = Vec::new();
        for (_, approval_key) in due {
            if let Some(result) = self.open.reply(&approval_key, &Reply::Answers { answers: Answers::default() }) {
                tracing::info!(%approval_key, "nobody answered kimi's question in time; dismissing it");
                self.process.write(wire::result(&approval_key, result));
                out.push(SessionUpdate::TimedOut { approval_key });
            }
        }
        out
    }

    /// One line of kimi's stdout.
    fn line(&mut self, translator: &mut Translator, line: &str) -> Received {
        let incoming = match wire::parse_line(line) {
            Ok(incoming) => incoming,
            Err(e) => {
                let preview: String = line.chars().take(120).collect();
                tracing::warn!(error = %e, line = %preview, "skipping a line from kimi");
                return Received::default();
            }
        };
        match incoming {
            Incoming::Event { kind, payload } => {
                if kind == "ApprovalResponse"
                    && let Some(key) = payload.get("request_id").and_then(serde_json::Value::as_str)
                {
                    self.open.resolved(key);
                }
                Received::updates(translator.event(&kind, &payload))
            }
            Incoming::Request { id, kind, payload } => {
                let handled = translator.request(&id, &kind, &payload);
                if let Some(awaits) = handled.awaits {
                    self.open.insert(&id, awaits);
                }
                for update in &handled.updates {
                    if let SessionUpdate::Request(request) = update
                        && request.is_question()
                    {
                        let at = Instant::now() + Duration::from_secs(request.timeout_secs);
                        self.question_deadlines.push((at, request.approval_key.clone()));
                    }
                }
                if let Some(reply) = handled.reply {
                    self.process.write(reply);
                }
                Received::updates(handled.updates)
            }
            Incoming::Response { id, outcome } => match OurId::parse(&id) {
                Some(OurId::Ping(written)) => Received::proof(written.min(self.written)),
                Some(OurId::Prompt(n)) => {
                    if self.turn == Some(n) {
                        self.turn = None;
                    }
                    let settled = self.open.turn_finished();
                    Received::updates(translator.turn_finished(outcome.as_ref(), settled))
                }
                Some(OurId::Steer(n)) => {
                    let text = self.steers.remove(&n);
                    match (outcome, text) {
                        (Err(e), Some(text)) if e.code == wire::INVALID_STATE && self.turn.is_none() => {
                            // The turn ended before the steer arrived: the text starts the next.
                            tracing::debug!("the turn ended before a steer; sending it as a prompt");
                            self.prompt(&text);
                            Received::default()
                        }
                        (Err(e), _) => Received::updates(vec![SessionUpdate::TurnFailed { message: format!("kimi did not take the message: {}", e.message) }]),
                        (Ok(_), _) => Received::default(),
                    }
                }
                Some(OurId::Cancel(_)) => {
                    if let Err(e) = outcome {
                        tracing::debug!(error = %e.message, "kimi had no turn to cancel");
                    }
                    Received::default()
                }
                Some(OurId::Initialize) | None => {
                    tracing::debug!(%id, "a response to nothing the bridge asked; skipped");
                    Received::default()
                }
            },
        }
    }
}

/// Said once in the chat when the bridge finds that Kimi was in a turn when the bridge
/// before it stopped: the `kimi --wire` process ended with that bridge, and its turn.
pub const TURN_ENDED_WITH_THE_BRIDGE: &str = "the bridge restarted while Kimi was working on your last message, and that turn ended with it. The conversation is kept: send your message again to continue.";

impl Link for KimiLink {
    type State = Translator;

    /// The process that was in the turn died with the bridge: the chat is told so once
    /// (the turn then counts as ended).
    async fn resume_turn(&mut self) -> Result<Vec<SessionUpdate>, LinkError> {
        Ok(vec![SessionUpdate::TurnFailed { message: TURN_ENDED_WITH_THE_BRIDGE.into() }])
    }

    async fn send(&mut self, outgoing: Outgoing<'_>) -> Result<Sent, LinkError> {
        match outgoing.command {
            Command::Message { content, .. } => {
                let text = content.iter().map(|c| c.text.as_str()).collect::<Vec<_>>().join("\n");
                if self.turn.is_some() {
                    let n = self.next_request();
                    self.steers.insert(n, text.clone());
                    self.process.write(wire::steer(n, &text));
                } else {
                    self.prompt(&text);
                }
            }
            Command::Approval { approval_key, reply, .. } => match self.open.reply(approval_key, reply) {
                Some(result) => self.process.write(wire::result(approval_key, result)),
                None => {
                    // Asked by a kimi process that is gone (or already answered): no one
                    // can take it, and the card must not say it was delivered.
                    tracing::warn!(%approval_key, "kimi no longer waits for this request; the reply cannot be delivered");
                    return Ok(Sent::NotWaiting);
                }
            },
            Command::Cancel { .. } => {
                if self.turn.is_some() {
                    let n = self.next_request();
                    self.process.write(wire::cancel(n));
                }
            }
        }
        self.written += 1;
        self.process.write(wire::ping(self.written));
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
                // Cancel-safe: nothing changes before the wait is over, and waiting again
                // is harmless.
                let how = self.process.exit_status().await;
                self.ended = true;
                tracing::warn!(exit = %how, stderr = %self.process.stderr_tail(), "kimi exited");
                let lost = self.open.lost();
                let updates = translator.process_lost(&how, self.turn.take().is_some(), lost);
                if updates.is_empty() {
                    return None;
                }
                return Some(Ok(Received::updates(updates)));
            }
            let next_deadline = self.question_deadlines.iter().map(|(at, _)| *at).min();
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
                    Err(e) => return Some(Err(LinkError::transport(format!("cannot read kimi's output: {e}")))),
                },
                _ = tokio::time::sleep_until(next_deadline.unwrap_or_else(Instant::now)), if next_deadline.is_some() => {
                    let dismissed = self.dismiss_due_questions();
                    if !dismissed.is_empty() {
                        return Some(Ok(Received::updates(dismissed)));
                    }
                }
            }
        }
    }
}
