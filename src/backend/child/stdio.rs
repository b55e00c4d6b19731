//! One agent process spoken to in lines over its stdio (Kimi's wire mode, ACP): spawned
//! with the configured command, arguments and environment, ended with the bridge
//! ([`super::dies_with_the_bridge`]) and killed when dropped (`kill_on_drop`: idle
//! close, lost lease, shutdown). Its stdin is fed by a writer task, so writing never
//! blocks a caller and can be done from a cancel-safe read; its stderr is logged line
//! by line (the last lines are kept for error messages); its stdout is read line by
//! line, cancel-safely and with a bound on the line length.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdout, Command};
use tokio::sync::mpsc;

use super::{AgentRecord, Agents};

/// Lines longer than this are skipped (kimi's own stdio limit is 100 MiB; nothing the
/// bridge shows comes near this).
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Stderr lines kept for error messages.
const STDERR_TAIL: usize = 20;

pub struct StdioAgent {
    name: &'static str,
    child: Child,
    stdin: mpsc::UnboundedSender<String>,
    stdout: BufReader<ChildStdout>,
    /// The line being read: kept here so a cancelled read loses nothing.
    partial: Vec<u8>,
    /// Bytes of the current line beyond [`MAX_LINE_BYTES`].
    overflow: usize,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    /// Kept while the process is ours: a crash leaves it for the next bridge to end.
    _record: AgentRecord,
}

impl StdioAgent {
    /// Starts `program args` in `work_dir` with `env` on top of the bridge's own.
    /// `name` says whose process it is in logs and errors ("kimi", "the ACP agent").
    pub fn spawn(
        name: &'static str,
        program: &str,
        args: &[String],
        env: &BTreeMap<String, String>,
        work_dir: &Path,
        agents: &Agents,
    ) -> std::io::Result<StdioAgent> {
        tracing::info!(agent = name, command = %program, ?args, "starting an agent process");
        let mut command = Command::new(program);
        command.args(args).envs(env).current_dir(work_dir).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        crate::backend::child::dies_with_the_bridge(&mut command);
        let mut child = command.spawn()?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take()) else {
            return Err(std::io::Error::other(format!("{name}'s stdio pipes are missing")));
        };
        let record = agents.record(child.id());
        let pid = child.id().unwrap_or(0);
        let (tx, mut rx) = mpsc::unbounded_channel::<String>();
        tokio::spawn(async move {
            let mut stdin = stdin;
            while let Some(line) = rx.recv().await {
                let written = async {
                    stdin.write_all(line.as_bytes()).await?;
                    stdin.write_all(b"\n").await?;
                    stdin.flush().await
                };
                if let Err(e) = written.await {
                    // The process is gone; reading its stdout tells the rest.
                    tracing::debug!(agent = name, pid, error = %e, "cannot write to the agent");
                    return;
                }
            }
        });
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail = stderr_tail.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            loop {
                match lines.next_line().await {
                    Ok(Some(line)) if line.trim().is_empty() => {}
                    Ok(Some(line)) => {
                        let line: String = line.chars().take(500).collect();
                        tracing::info!(target: "hitl_bridge::backend::agent_stderr", agent = name, pid, "{line}");
                        let mut tail = tail.lock().unwrap_or_else(|p| p.into_inner());
                        if tail.len() == STDERR_TAIL {
                            tail.pop_front();
                        }
                        tail.push_back(line);
                    }
                    Ok(None) => return,
                    Err(e) => {
                        tracing::debug!(agent = name, pid, error = %e, "the agent's stderr is not text; no more of it is logged");
                        return;
                    }
                }
            }
        });
        Ok(StdioAgent { name, child, stdin: tx, stdout: BufReader::new(stdout), partial: Vec::new(), overflow: 0, stderr_tail, _record: record })
    }

    /// A handle that queues lines for the agent's stdin, for a task that answers the
    /// agent later (a sent line goes nowhere once the process is gone).
    pub fn writer(&self) -> mpsc::UnboundedSender<String> {
        self.stdin.clone()
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Queues one line (without its newline) for the agent's stdin. A process that is gone
    /// takes nothing; its stdout ends and tells the rest.
    pub fn write(&self, line: String) {
        if self.stdin.send(line).is_err() {
            tracing::debug!(agent = self.name, "the agent's stdin is closed; not writing");
        }
    }

    /// The next stdout line, lossily decoded; `None` when stdout closed. Cancel-safe:
    /// a partial line stays in `self`. Lines over [`MAX_LINE_BYTES`] are skipped.
    pub async fn next_line(&mut self) -> std::io::Result<Option<String>> {
        loop {
            let available = self.stdout.fill_buf().await?;
            if available.is_empty() {
                return Ok(None);
            }
            let (chunk, complete) = match available.iter().position(|&b| b == b'\n') {
                Some(at) => (&available[..at], true),
                None => (available, false),
            };
            let room = MAX_LINE_BYTES.saturating_sub(self.partial.len());
            let kept = chunk.len().min(room);
            self.partial.extend_from_slice(&chunk[..kept]);
            self.overflow += chunk.len() - kept;
            let used = chunk.len() + usize::from(complete);
            self.stdout.consume(used);
            if complete {
                let line = String::from_utf8_lossy(&self.partial).into_owned();
                self.partial.clear();
                let overflow = std::mem::take(&mut self.overflow);
                if overflow > 0 {
                    tracing::warn!(agent = self.name, bytes = MAX_LINE_BYTES + overflow, limit = MAX_LINE_BYTES, "skipping an oversized line from the agent");
                    continue;
                }
                return Ok(Some(line));
            }
        }
    }

    /// How the process ended, once its stdout closed: its exit status, waited for a
    /// little (then it is killed: an agent that closed stdout is of no use).
    pub async fn exit_status(&mut self) -> String {
        match tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await {
            Ok(Ok(status)) => describe(status),
            Ok(Err(e)) => format!("exit status unknown: {e}"),
            Err(_) => {
                let _ = self.child.start_kill();
                "closed its output without exiting; killed".into()
            }
        }
    }

    /// The agent's last stderr lines, for an error message.
    pub fn stderr_tail(&self) -> String {
        let tail = self.stderr_tail.lock().unwrap_or_else(|p| p.into_inner());
        tail.iter().rev().take(3).rev().cloned().collect::<Vec<_>>().join(" | ")
    }
}

fn describe(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("killed by signal {signal}");
        }
    }
    match status.code() {
        Some(code) => format!("exit code {code}"),
        None => status.to_string(),
    }
}
