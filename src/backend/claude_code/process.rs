//! One Claude Code process per connected session: the [`Link`]. Started as the SDK
//! starts it (stream-json both ways, permission prompts over stdio), initialized with
//! the SDK's `initialize` control request, then fed commands on stdin while its
//! stdout is read frame by frame. stderr is logged, and its tail kept for errors.
//!
//! Proof of reading: after every command the link writes a ping (`mcp_status`, see
//! [`wire::ping`]) carrying the number of commands written so far; the CLI reads stdin
//! in order, so the ping's answer proves it read them all.

use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, ChildStdout, Command as Process};
use tokio::task::JoinHandle;
use tracing::Instrument;

use super::lines::Lines;
use super::transcript::{Transcripts, message_uuid};
use super::translate::Translator;
use super::wire;
use crate::backend::SessionUpdate;
use crate::backend::child::{AgentRecord, Agents};
use crate::backend::session::{Link, LinkError, Outgoing, Received, Sent};
use crate::backend::tool_groups::ToolGroups;
use crate::protocol::Command;

/// How much of stderr is kept to explain an exit.
const STDERR_TAIL_BYTES: usize = 4096;

/// How long a closed process may take to save its conversation and exit before it
/// is killed (the SDK waits as long).
const EXIT_GRACE: Duration = Duration::from_secs(5);

/// Why a process could not be started.
#[derive(Debug)]
pub enum StartError {
    /// It exited before answering `initialize` (e.g. "No conversation found" for a
    /// `--resume`, "already in use" for a `--session-id`): another way may work.
    Exited(String),
    Failed(LinkError),
}

/// A running Claude Code process.
pub struct ClaudeCodeLink {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    stdout: Lines<ChildStdout>,
    stderr_tail: Arc<Mutex<String>>,
    stderr_task: Option<JoinHandle<()>>,
    translator: Translator,
    /// Bytes still to write to stdin; kept here so a dropped write loses nothing.
    out: Vec<u8>,
    /// Commands written so far (the count each ping proves).
    written: u64,
    /// Frames read while starting, before `initialize` was answered.
    backlog: VecDeque<Value>,
    /// Updates made by commands, handed out by the next `recv`.
    queued: Vec<SessionUpdate>,
    /// A chat message went in and its `result` has not come out.
    turn_open: bool,
    /// The process's end was reported; the next `recv` says closed.
    ended: bool,
    /// Where this process's conversation is recorded, when it has a stable id.
    record: Option<(Transcripts, String)>,
    /// Kept until the process has exited: a crash leaves it for the next bridge to end.
    process_record: Option<AgentRecord>,
}

impl ClaudeCodeLink {
    /// Checks `transcripts` for conversation `claude_session` before writing a message
    /// that may have reached an earlier process.
    pub fn keep_record(&mut self, transcripts: Option<Transcripts>, claude_session: String) {
        self.record = transcripts.map(|t| (t, claude_session));
    }

    /// Whether the conversation's transcript holds the message of `outgoing`. A
    /// transcript that cannot be read counts as not holding it: a message is better
    /// sent twice than never.
    async fn already_has(&self, outgoing: &Outgoing<'_>) -> bool {
        let Some((transcripts, claude_session)) = &self.record else { return false };
        let uuid = message_uuid(self.translator.session_id(), outgoing.id);
        match transcripts.has_message(claude_session, &uuid).await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(%claude_session, error = %e, "cannot read Claude Code's transcript; sending the message again");
                false
            }
        }
    }

    /// Spawns `program args` in `work_dir` and waits (up to `startup`) for the answer
    /// to `initialize`.
    pub async fn start(
        program: &str,
        args: &[String],
        env: &[(String, String)],
        work_dir: &Path,
        startup: Duration,
        translator: Translator,
        agents: &Agents,
    ) -> Result<Self, StartError> {
        let mut process = Process::new(program);
        process
            .args(args)
            .current_dir(work_dir)
            // Not a Claude Code session inside another one (the SDK drops it too).
            .env_remove("CLAUDECODE")
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        crate::backend::child::dies_with_the_bridge(&mut process);
        let mut child = process.spawn().map_err(|e| StartError::Failed(LinkError::Transport(format!("cannot start Claude Code ({program}): {e}"))))?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take()) else {
            return Err(StartError::Failed(LinkError::Transport("Claude Code's pipes are missing".into())));
        };
        tracing::info!(pid = ?child.id(), %program, work_dir = %work_dir.display(), "started Claude Code");
        let process_record = Some(agents.record(child.id()));
        let stderr_tail = Arc::new(Mutex::new(String::new()));
        let stderr_task = tokio::spawn(log_stderr(stderr, stderr_tail.clone()).in_current_span());
        let mut link = ClaudeCodeLink {
            child: Some(child),
            stdin: Some(stdin),
            stdout: Lines::new(stdout),
            stderr_tail,
            stderr_task: Some(stderr_task),
            translator,
            out: Vec::new(),
            written: 0,
            backlog: VecDeque::new(),
            queued: Vec::new(),
            turn_open: false,
            ended: false,
            record: None,
            process_record,
        };
        link.out.extend_from_slice(wire::line(&wire::initialize()).as_bytes());
        match tokio::time::timeout(startup, link.initialize()).await {
            Ok(Ok(())) => Ok(link),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(StartError::Failed(LinkError::Transport(format!("Claude Code did not answer initialize within {} s", startup.as_secs())))),
        }
    }

    async fn initialize(&mut self) -> Result<(), StartError> {
        // A process that exits at once may close stdin before the write: its exit
        // and stderr explain more than the broken pipe.
        let written = self.flush_out().await;
        loop {
            match self.stdout.next_line().await {
                Ok(Some(line)) => {
                    let Some(frame) = parse(&line) else { continue };
                    let answers_initialize = frame["type"] == "control_response" && frame["response"]["request_id"] == wire::INITIALIZE_ID;
                    if !answers_initialize {
                        self.backlog.push_back(frame);
                        continue;
                    }
                    if frame["response"]["subtype"] == "error" {
                        let error = frame["response"]["error"].as_str().unwrap_or("unknown error").to_owned();
                        return Err(StartError::Failed(LinkError::Transport(format!("Claude Code refused initialize: {error}"))));
                    }
                    return written.map_err(StartError::Failed);
                }
                Ok(None) => return Err(StartError::Exited(self.exit_report().await)),
                Err(e) => return Err(StartError::Failed(LinkError::transport(e))),
            }
        }
    }

    /// Writes what is buffered for stdin. Cancel-safe: progress is kept in `out`.
    async fn flush_out(&mut self) -> Result<(), LinkError> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(LinkError::Transport("Claude Code's stdin is closed".into()));
        };
        while !self.out.is_empty() {
            let n = stdin.write(&self.out).await.map_err(|e| LinkError::Transport(format!("cannot write to Claude Code: {e}")))?;
            if n == 0 {
                return Err(LinkError::Transport("Claude Code's stdin is closed".into()));
            }
            self.out.drain(..n);
        }
        stdin.flush().await.map_err(LinkError::transport)
    }

    fn queue_frames(&mut self, frames: &[Value]) {
        for frame in frames {
            self.out.extend_from_slice(wire::line(frame).as_bytes());
        }
    }

    /// "exited with status N: <stderr tail>", once the process is gone.
    async fn exit_report(&mut self) -> String {
        let status = match self.child.as_mut() {
            Some(child) => match tokio::time::timeout(EXIT_GRACE, child.wait()).await {
                Ok(Ok(status)) => status.to_string(),
                Ok(Err(e)) => format!("unknown status ({e})"),
                Err(_) => "no exit status yet".to_owned(),
            },
            None => "unknown status".to_owned(),
        };
        // stderr ends with the process: let its reader catch the last lines.
        if let Some(task) = self.stderr_task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(1), task).await;
        }
        let tail = self.stderr_tail.lock().unwrap_or_else(|p| p.into_inner()).trim().to_owned();
        if tail.is_empty() { format!("Claude Code exited ({status})") } else { format!("Claude Code exited ({status}): {tail}") }
    }

    /// Handles one frame; `Some` when it brought something for the session.
    fn on_frame(&mut self, frame: &Value, groups: &mut ToolGroups) -> Option<Received> {
        let inbound = self.translator.frame(frame, groups);
        self.queue_frames(&inbound.replies);
        if inbound.updates.iter().any(|u| matches!(u, SessionUpdate::TurnEnded | SessionUpdate::TurnFailed { .. })) {
            self.turn_open = false;
        }
        let proves_first = inbound.proves.map(|n| n.min(self.written));
        (!inbound.updates.is_empty() || proves_first.is_some()).then_some(Received { updates: inbound.updates, proves_first })
    }

    /// The process closed its stdout: an open turn cannot end any more, so it fails
    /// with the reason.
    async fn on_exit(&mut self, groups: &mut ToolGroups) -> Option<Result<Received, LinkError>> {
        self.ended = true;
        let report = self.exit_report().await;
        tracing::warn!(report = %report, "Claude Code's process ended");
        if !std::mem::take(&mut self.turn_open) {
            return None;
        }
        let mut updates: Vec<SessionUpdate> = groups.close().into_iter().collect();
        updates.push(SessionUpdate::TurnFailed { message: report });
        Some(Ok(Received::updates(updates)))
    }
}

/// Said once in the chat when the bridge finds that Claude Code was in a turn when
/// the bridge before it stopped: the process ended with that bridge (it is started
/// again with `--resume` of the same `--session-id`, so the conversation is kept, but
/// not the turn it was in).
pub const TURN_ENDED_WITH_THE_BRIDGE: &str = "the bridge restarted while Claude Code was working on your last message, and that turn ended with it. \
     The conversation is kept: send your message again (or say \"go on\") to continue.";

impl Link for ClaudeCodeLink {
    type State = ToolGroups;

    /// The process that was in the turn died with the bridge: the chat is told so once
    /// (the turn then counts as ended).
    async fn resume_turn(&mut self) -> Result<Vec<SessionUpdate>, LinkError> {
        Ok(vec![SessionUpdate::TurnFailed { message: TURN_ENDED_WITH_THE_BRIDGE.into() }])
    }

    async fn send(&mut self, outgoing: Outgoing<'_>) -> Result<Sent, LinkError> {
        let command = outgoing.command;
        if matches!(command, Command::Message { .. }) && outgoing.maybe_received && self.already_has(&outgoing).await {
            tracing::info!(command_id = outgoing.id, "Claude Code's transcript already holds this message; not sending it again");
            return Ok(Sent::AlreadyReceived);
        }
        let outbound = self.translator.command(command, outgoing.id, self.written + 1);
        if outbound.not_waiting {
            return Ok(Sent::NotWaiting);
        }
        self.written += 1;
        if matches!(command, Command::Message { .. }) {
            self.turn_open = true;
        }
        self.queue_frames(&outbound.frames);
        // Its answer proves the CLI read this command and every one before it.
        self.queue_frames(&[wire::ping(self.written)]);
        self.flush_out().await?;
        Ok(Sent::Written)
    }

    async fn recv(&mut self, groups: &mut ToolGroups) -> Option<Result<Received, LinkError>> {
        loop {
            if !self.queued.is_empty() {
                return Some(Ok(Received::updates(std::mem::take(&mut self.queued))));
            }
            if self.ended {
                return None;
            }
            if let Err(e) = self.flush_out().await {
                return Some(Err(e));
            }
            if let Some(frame) = self.backlog.pop_front() {
                if let Some(received) = self.on_frame(&frame, groups) {
                    return Some(Ok(received));
                }
                continue;
            }
            match self.stdout.next_line().await {
                Ok(Some(line)) => {
                    if let Some(frame) = parse(&line)
                        && let Some(received) = self.on_frame(&frame, groups)
                    {
                        return Some(Ok(received));
                    }
                }
                Ok(None) => return self.on_exit(groups).await,
                Err(e) => return Some(Err(LinkError::Transport(format!("cannot read from Claude Code: {e}")))),
            }
        }
    }
}

impl Drop for ClaudeCodeLink {
    /// Closes stdin so the CLI saves the conversation and exits by itself; kills it
    /// if it has not after [`EXIT_GRACE`]. A turn still running is interrupted
    /// first: left alone, the CLI would answer its open permission requests with an
    /// error and ask the model again, for a reply nobody would see.
    fn drop(&mut self) {
        let stdin = self.stdin.take();
        // What is left of a line already begun must be finished before anything else.
        let mut last = std::mem::take(&mut self.out);
        if self.turn_open || self.translator.is_waiting() {
            last.extend_from_slice(wire::line(&wire::interrupt("bridge_interrupt_close")).as_bytes());
        }
        let Some(mut child) = self.child.take() else { return };
        let process_record = self.process_record.take();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let _process_record = process_record;
                    if let Some(mut stdin) = stdin
                        && !last.is_empty()
                    {
                        let _ = tokio::time::timeout(EXIT_GRACE, stdin.write_all(&last)).await;
                    }
                    if tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_err() {
                        tracing::warn!(pid = ?child.id(), "Claude Code did not exit after its stdin closed; killing it");
                        let _ = child.kill().await;
                    }
                });
            }
            Err(_) => {
                let _ = child.start_kill();
            }
        }
    }
}

/// One stdout line as a JSON object; other lines (debug output some builds print) are
/// skipped, as the SDK skips them.
fn parse(line: &str) -> Option<Value> {
    let line = line.trim();
    if !line.starts_with('{') {
        if !line.is_empty() {
            tracing::debug!(line = %line.chars().take(200).collect::<String>(), "skipping a non-JSON line from Claude Code");
        }
        return None;
    }
    match serde_json::from_str(line) {
        Ok(frame) => Some(frame),
        Err(e) => {
            tracing::warn!(error = %e, line = %line.chars().take(200).collect::<String>(), "skipping a frame that is not valid JSON");
            None
        }
    }
}

/// Logs the CLI's stderr line by line and keeps its tail.
async fn log_stderr(stderr: tokio::process::ChildStderr, tail: Arc<Mutex<String>>) {
    let mut lines = Lines::new(stderr);
    while let Ok(Some(line)) = lines.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        tracing::info!(target: "hitl_bridge::backend::claude_code::stderr", "{line}");
        let mut tail = tail.lock().unwrap_or_else(|p| p.into_inner());
        tail.push_str(&line);
        tail.push('\n');
        if tail.len() > STDERR_TAIL_BYTES {
            let mut cut = tail.len() - STDERR_TAIL_BYTES;
            while !tail.is_char_boundary(cut) {
                cut += 1;
            }
            tail.drain(..cut);
        }
    }
}
