//! The terminals an ACP agent may run commands in through the bridge when
//! `acp.allow_terminal` is on: ACP's `terminal/create`, `terminal/output`,
//! `terminal/wait_for_exit`, `terminal/kill` and `terminal/release`.
//!
//! - A command runs in the session's work directory, or in a `cwd` inside it (one
//!   outside, directly or through a symbolic link, is refused), with the agent's `env`
//!   on top of the bridge's.
//! - Its stdout and stderr go to one buffer that keeps the last `outputByteLimit`
//!   bytes (at most [`MAX_OUTPUT_BYTES`]), cut at a character boundary, and says when
//!   it was cut.
//! - It dies when the agent kills or releases it, and with the agent process's link
//!   (every terminal is killed when [`Terminals`] is dropped).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

/// The most output a terminal keeps, whatever the agent asks.
pub const MAX_OUTPUT_BYTES: usize = 1024 * 1024;

/// How many terminals an agent may hold at once; more is refused until it releases one.
pub const MAX_TERMINALS: usize = 16;

/// How a command ended (ACP's `TerminalExitStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Exit {
    code: Option<i32>,
    signal: Option<i32>,
}

impl Exit {
    fn to_json(self) -> Value {
        json!({"exitCode":self.code,"signal":self.signal.map(signal_name)})
    }
}

fn signal_name(signal: i32) -> String {
    match signal {
        1 => "SIGHUP".into(),
        2 => "SIGINT".into(),
        9 => "SIGKILL".into(),
        15 => "SIGTERM".into(),
        other => format!("signal {other}"),
    }
}

/// What a command wrote, its last `limit` bytes.
#[derive(Debug, Default)]
struct Output {
    bytes: Vec<u8>,
    limit: usize,
    truncated: bool,
}

impl Output {
    fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
        if self.bytes.len() > self.limit {
            let cut = self.bytes.len() - self.limit;
            self.bytes.drain(..cut);
            self.truncated = true;
        }
    }

    /// The text kept, from the first whole character on.
    fn text(&self) -> String {
        let start = self.bytes.iter().position(|b| (*b as i8) >= -0x40).unwrap_or(self.bytes.len());
        String::from_utf8_lossy(&self.bytes[start..]).into_owned()
    }
}

struct Terminal {
    output: Arc<Mutex<Output>>,
    exit: watch::Receiver<Option<Exit>>,
    kill: Arc<Notify>,
    task: JoinHandle<()>,
}

/// One agent process's terminals.
pub struct Terminals {
    root: PathBuf,
    open: Mutex<HashMap<String, Arc<Terminal>>>,
    made: AtomicU64,
}

impl Drop for Terminals {
    fn drop(&mut self) {
        // Aborting the task drops the child, which kills it (`kill_on_drop`).
        for terminal in self.open.lock().unwrap_or_else(|e| e.into_inner()).values() {
            terminal.task.abort();
        }
    }
}

impl Terminals {
    /// Terminals whose commands run inside `root` (the session's work directory).
    pub fn new(root: PathBuf) -> Self {
        Self { root, open: Mutex::new(HashMap::new()), made: AtomicU64::new(0) }
    }

    /// Answers one `terminal/*` request: its result, or the error message the agent gets.
    pub async fn serve(&self, method: &str, params: &Value) -> Result<Value, String> {
        if method == "terminal/create" {
            return self.create(params).await;
        }
        let id = params.get("terminalId").and_then(Value::as_str).ok_or("no terminalId")?;
        let terminal = self.open.lock().unwrap_or_else(|e| e.into_inner()).get(id).cloned().ok_or_else(|| format!("no terminal {id}"))?;
        match method {
            "terminal/output" => {
                let exit = *terminal.exit.borrow();
                let output = terminal.output.lock().unwrap_or_else(|e| e.into_inner());
                Ok(json!({"output":output.text(),"truncated":output.truncated,"exitStatus":exit.map(Exit::to_json)}))
            }
            "terminal/wait_for_exit" => {
                let mut exit = terminal.exit.clone();
                let ended = exit.wait_for(Option::is_some).await.map_err(|_| "the terminal is gone".to_owned())?;
                Ok(ended.map(Exit::to_json).unwrap_or(Value::Null))
            }
            "terminal/kill" => {
                terminal.kill.notify_one();
                Ok(json!({}))
            }
            "terminal/release" => {
                terminal.kill.notify_one();
                self.open.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
                Ok(json!({}))
            }
            other => Err(format!("hitl-bridge does not serve {other}")),
        }
    }

    async fn create(&self, params: &Value) -> Result<Value, String> {
        let command = params.get("command").and_then(Value::as_str).filter(|c| !c.is_empty()).ok_or("no command")?;
        if self.open.lock().unwrap_or_else(|e| e.into_inner()).len() >= MAX_TERMINALS {
            return Err(format!("{MAX_TERMINALS} terminals are open; release one first"));
        }
        let args: Vec<&str> = params.get("args").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        let cwd = match params.get("cwd").and_then(Value::as_str) {
            Some(cwd) => inside(&self.root, Path::new(cwd)).await?,
            None => self.root.clone(),
        };
        let limit = params.get("outputByteLimit").and_then(Value::as_u64).map_or(MAX_OUTPUT_BYTES, |l| (l as usize).min(MAX_OUTPUT_BYTES));
        let mut process = tokio::process::Command::new(command);
        process.args(&args).current_dir(&cwd).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        for variable in params.get("env").and_then(Value::as_array).into_iter().flatten() {
            if let (Some(name), Some(value)) = (variable.get("name").and_then(Value::as_str), variable.get("value").and_then(Value::as_str)) {
                process.env(name, value);
            }
        }
        let mut child = process.spawn().map_err(|e| format!("cannot run {command}: {e}"))?;
        let output = Arc::new(Mutex::new(Output { limit, ..Output::default() }));
        let (exited, exit) = watch::channel(None);
        let kill = Arc::new(Notify::new());
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let (into, killed) = (output.clone(), kill.clone());
        let task = tokio::spawn(async move {
            let copy = async {
                tokio::join!(copy_into(stdout, &into), copy_into(stderr, &into));
            };
            tokio::pin!(copy);
            let mut copied = false;
            let status = loop {
                tokio::select! {
                    _ = &mut copy, if !copied => copied = true,
                    status = child.wait() => break status,
                    _ = killed.notified() => {
                        let _ = child.start_kill();
                        break child.wait().await;
                    }
                }
            };
            if !copied {
                // What it wrote just before it ended; a process it left behind may hold
                // the pipes open, so not for long.
                let _ = tokio::time::timeout(std::time::Duration::from_millis(300), &mut copy).await;
            }
            let exit = match status {
                Ok(status) => {
                    use std::os::unix::process::ExitStatusExt;
                    Exit { code: status.code(), signal: status.signal() }
                }
                Err(_) => Exit { code: None, signal: None },
            };
            let _ = exited.send(Some(exit));
        });
        let id = format!("term-{}", self.made.fetch_add(1, Ordering::Relaxed) + 1);
        tracing::info!(terminal = %id, %command, "the ACP agent runs a command in a terminal");
        self.open.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), Arc::new(Terminal { output, exit, kill, task }));
        Ok(json!({"terminalId":id}))
    }
}

async fn copy_into(stream: Option<impl AsyncRead + Unpin>, output: &Mutex<Output>) {
    let Some(mut stream) = stream else { return };
    let mut buf = [0u8; 8192];
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            break;
        }
        output.lock().unwrap_or_else(|e| e.into_inner()).push(&buf[..n]);
    }
}

/// `path` (absolute, as ACP requires) resolved, when it lies inside `root`.
async fn inside(root: &Path, path: &Path) -> Result<PathBuf, String> {
    if !path.is_absolute() {
        return Err(format!("{} is not an absolute path", path.display()));
    }
    let root = tokio::fs::canonicalize(root).await.map_err(|e| format!("the work directory cannot be read: {e}"))?;
    let resolved = tokio::fs::canonicalize(path).await.map_err(|e| format!("{}: {e}", path.display()))?;
    if resolved.starts_with(&root) { Ok(resolved) } else { Err(format!("{} is outside the work directory", path.display())) }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn run(terminals: &Terminals, script: &str, extra: Value) -> String {
        let mut params = json!({"sessionId":"s1","command":"sh","args":["-c",script]});
        if let (Some(params), Some(extra)) = (params.as_object_mut(), extra.as_object()) {
            params.extend(extra.clone());
        }
        let created = terminals.serve("terminal/create", &params).await.unwrap();
        created["terminalId"].as_str().unwrap().to_owned()
    }

    #[tokio::test]
    async fn a_command_runs_in_the_work_dir_and_its_output_and_exit_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let terminals = Terminals::new(dir.path().to_path_buf());
        let id = run(&terminals, "pwd; echo to-stderr >&2; echo $GREETING; exit 3", json!({"env":[{"name":"GREETING","value":"xin chào"}]})).await;
        let exit = terminals.serve("terminal/wait_for_exit", &json!({"terminalId":id})).await.unwrap();
        assert_eq!(exit, json!({"exitCode":3,"signal":null}));
        let out = terminals.serve("terminal/output", &json!({"terminalId":id})).await.unwrap();
        let text = out["output"].as_str().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        assert!(text.contains(&root.display().to_string()) && text.contains("to-stderr") && text.contains("xin chào"), "{text}");
        assert_eq!(out["truncated"], json!(false));
        assert_eq!(out["exitStatus"], json!({"exitCode":3,"signal":null}));
        assert_eq!(terminals.serve("terminal/release", &json!({"terminalId":id})).await.unwrap(), json!({}));
        assert!(terminals.serve("terminal/output", &json!({"terminalId":id})).await.is_err(), "released");
    }

    #[tokio::test]
    async fn output_keeps_the_last_bytes_at_a_character_boundary() {
        let dir = tempfile::tempdir().unwrap();
        let terminals = Terminals::new(dir.path().to_path_buf());
        let id = run(&terminals, "printf 'ééééé'", json!({"outputByteLimit":5})).await;
        terminals.serve("terminal/wait_for_exit", &json!({"terminalId":id})).await.unwrap();
        let out = terminals.serve("terminal/output", &json!({"terminalId":id})).await.unwrap();
        assert_eq!(out["output"], json!("éé"), "five bytes start inside an é: the whole ones after it");
        assert_eq!(out["truncated"], json!(true));
    }

    #[tokio::test]
    async fn kill_ends_a_running_command() {
        let dir = tempfile::tempdir().unwrap();
        let terminals = Terminals::new(dir.path().to_path_buf());
        let id = run(&terminals, "sleep 30", json!({})).await;
        let out = terminals.serve("terminal/output", &json!({"terminalId":id})).await.unwrap();
        assert_eq!(out["exitStatus"], Value::Null, "still running");
        terminals.serve("terminal/kill", &json!({"terminalId":id})).await.unwrap();
        let exit = tokio::time::timeout(std::time::Duration::from_secs(5), terminals.serve("terminal/wait_for_exit", &json!({"terminalId":id}))).await;
        assert_eq!(exit.expect("ended at once").unwrap(), json!({"exitCode":null,"signal":"SIGKILL"}));
    }

    #[tokio::test]
    async fn a_cwd_outside_the_work_dir_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let terminals = Terminals::new(dir.path().to_path_buf());
        let err = terminals.serve("terminal/create", &json!({"command":"ls","cwd":"/"})).await.unwrap_err();
        assert!(err.contains("outside the work directory"), "{err}");
        assert!(terminals.serve("terminal/create", &json!({"command":"ls","cwd":"relative"})).await.is_err());
        assert!(terminals.serve("terminal/output", &json!({"terminalId":"term-9"})).await.is_err(), "an unknown terminal");
    }

    #[tokio::test]
    async fn dropping_the_terminals_kills_their_commands() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("still-running");
        let terminals = Terminals::new(dir.path().to_path_buf());
        run(&terminals, &format!("sleep 2; touch {}", marker.display()), json!({})).await;
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        drop(terminals);
        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        assert!(!marker.exists(), "the command died with the link");
    }
}
