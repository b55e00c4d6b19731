//! One `kimi --wire` child process: spawned with the configured command, arguments
//! and environment, killed when dropped (`kill_on_drop`: idle close, lost lease,
//! shutdown). Its stdin is fed by a writer task, so writing never blocks a caller and
//! can be done from a cancel-safe read; its stderr is logged line by line (the last
//! lines are kept for error messages); its stdout is read line by line, cancel-safely
//! and with a bound on the line length.

use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdout, Command};
use tokio::sync::mpsc;

use super::settings::KimiSettings;
use crate::backend::child::{AgentRecord, Agents};

/// Lines longer than this are skipped (kimi's own stdio limit is 100 MiB; nothing the
/// bridge shows comes near this).
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Stderr lines kept for error messages.
const STDERR_TAIL: usize = 20;

pub struct KimiProcess {
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

/// The kimi session id for a bridge session: kimi keeps a session in a directory of
/// that name, so anything but `[A-Za-z0-9_-]` is replaced (bridge ids are hex already).
pub fn kimi_session_id(session_id: &str) -> String {
    let safe: String = session_id.chars().take(100).map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    format!("hitl-{safe}")
}

/// The command line for `session_id` (without the program).
pub fn arguments(settings: &KimiSettings, session_id: &str) -> Vec<String> {
    let mut args = vec!["--wire".to_owned(), "--work-dir".to_owned(), settings.work_dir.clone()];
    if let Some(config) = &settings.config_file {
        args.extend(["--config-file".to_owned(), config.clone()]);
    }
    if let Some(model) = &settings.model {
        args.extend(["--model".to_owned(), model.clone()]);
    }
    if settings.resume_sessions {
        args.extend(["--session".to_owned(), kimi_session_id(session_id)]);
    }
    args.extend(settings.args.iter().cloned());
    args
}

impl KimiProcess {
    pub fn spawn(settings: &KimiSettings, session_id: &str, agents: &Agents) -> std::io::Result<KimiProcess> {
        let args = arguments(settings, session_id);
        tracing::info!(command = %settings.command, ?args, "starting kimi");
        let mut command = Command::new(&settings.command);
        command
            .args(&args)
            .envs(&settings.env)
            .current_dir(Path::new(&settings.work_dir))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        crate::backend::child::dies_with_the_bridge(&mut command);
        let mut child = command.spawn()?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take()) else {
            return Err(std::io::Error::other("kimi's stdio pipes are missing"));
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
                    tracing::debug!(pid, error = %e, "cannot write to kimi");
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
                        tracing::info!(target: "hitl_bridge::backend::kimi::stderr", pid, "{line}");
                        let mut tail = tail.lock().unwrap_or_else(|p| p.into_inner());
                        if tail.len() == STDERR_TAIL {
                            tail.pop_front();
                        }
                        tail.push_back(line);
                    }
                    Ok(None) => return,
                    Err(e) => {
                        tracing::debug!(pid, error = %e, "kimi's stderr is not text; no more of it is logged");
                        return;
                    }
                }
            }
        });
        Ok(KimiProcess { child, stdin: tx, stdout: BufReader::new(stdout), partial: Vec::new(), overflow: 0, stderr_tail, _record: record })
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Queues one line (without its newline) for kimi's stdin. A process that is gone
    /// takes nothing; its stdout ends and tells the rest.
    pub fn write(&self, line: String) {
        if self.stdin.send(line).is_err() {
            tracing::debug!("kimi's stdin is closed; not writing");
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
                    tracing::warn!(bytes = MAX_LINE_BYTES + overflow, limit = MAX_LINE_BYTES, "skipping an oversized line from kimi");
                    continue;
                }
                return Ok(Some(line));
            }
        }
    }

    /// How the process ended, once its stdout closed: its exit status, waited for a
    /// little (then it is killed: a kimi that closed stdout is of no use).
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

    /// Kimi's last stderr lines, for an error message.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_safe_directory_names() {
        assert_eq!(kimi_session_id("0a1b2c"), "hitl-0a1b2c");
        assert_eq!(kimi_session_id("../x y"), "hitl-___x_y");
    }

    #[test]
    fn the_command_line() {
        let settings = KimiSettings {
            config_file: Some("/etc/kimi.toml".into()),
            work_dir: "/srv/w".into(),
            model: Some("k2".into()),
            args: vec!["--thinking".into()],
            ..KimiSettings::default()
        };
        assert_eq!(
            arguments(&settings, "abc"),
            ["--wire", "--work-dir", "/srv/w", "--config-file", "/etc/kimi.toml", "--model", "k2", "--session", "hitl-abc", "--thinking"]
        );
        let fresh = KimiSettings { resume_sessions: false, ..KimiSettings::default() };
        assert_eq!(arguments(&fresh, "abc"), ["--wire", "--work-dir", "."]);
    }
}
