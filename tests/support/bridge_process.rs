//! The real `hitl-bridge run` binary as a child process, with the console on pipes:
//! what a supervisor runs, so a test can SIGKILL it at any line and start it again on
//! the same store.
//!
//! Configuration comes from environment variables only (the caller's `HITL_BRIDGE__*`
//! are removed first), with the console as the one platform.

// Each test binary uses the part it needs.
#![allow(dead_code)]

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

pub struct BridgeProcess {
    pub child: Child,
    lines: Receiver<String>,
    /// Every line printed so far, for failure messages and counting.
    seen: Vec<String>,
}

impl BridgeProcess {
    /// Starts the bridge on the SQLite file `db` with `env` (e.g. the backend's keys).
    pub fn start(db: &Path, env: &[(&str, String)]) -> BridgeProcess {
        let mut command = Command::new(env!("CARGO_BIN_EXE_hitl-bridge"));
        command.current_dir(env!("CARGO_MANIFEST_DIR"));
        for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("HITL_BRIDGE__")) {
            command.env_remove(key);
        }
        command
            .arg("run")
            .env("HITL_BRIDGE__STORE__URL", format!("sqlite://{}", db.display()))
            .env("HITL_BRIDGE__BACKEND__RECONNECT_MAX_SECS", "1")
            .env("HITL_BRIDGE__CONSOLE__ENABLED", "true")
            .env("HITL_BRIDGE__CONSOLE__USER_NAME", "Thảo")
            .env("HITL_BRIDGE__HTTP__ENABLED", "false")
            // HITL_CHAOS_LOG=info shows what the processes did when a test fails.
            .env("RUST_LOG", std::env::var("HITL_CHAOS_LOG").unwrap_or_else(|_| "warn".into()));
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("spawn hitl-bridge");
        let (tx, lines) = std::sync::mpsc::channel();
        let stdout = child.stdout.take().expect("stdout");
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        BridgeProcess { child, lines, seen: Vec::new() }
    }

    /// Types a line at the console.
    pub fn type_line(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().expect("stdin");
        writeln!(stdin, "{line}").expect("write to the console");
        stdin.flush().expect("flush the console");
    }

    /// Waits (up to `within`) for a printed line containing `needle` and returns it.
    pub fn expect_within(&mut self, needle: &str, within: Duration) -> String {
        let deadline = std::time::Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(e) => panic!("the console never printed {needle:?} ({e}); it printed:\n{}", self.seen.join("\n")),
            }
        }
    }

    pub fn expect(&mut self, needle: &str) -> String {
        self.expect_within(needle, Duration::from_secs(60))
    }

    /// Reads what is printed for `for_how_long` and returns every line seen so far.
    pub fn drain(&mut self, for_how_long: Duration) -> &[String] {
        let deadline = std::time::Instant::now() + for_how_long;
        while let Ok(line) = self.lines.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now())) {
            self.seen.push(line);
        }
        &self.seen
    }

    /// SIGKILL: no clean-up of any kind, as an OOM kill or a lost node.
    pub fn kill(mut self) {
        self.child.kill().expect("SIGKILL");
        let _ = self.child.wait();
    }

    /// SIGTERM, and the exit status is a success.
    pub fn stop(mut self) {
        let sent = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().expect("kill");
        assert!(sent.success());
        assert!(self.child.wait().expect("wait").success(), "SIGTERM is a normal stop");
    }
}

/// Whether the bridge's SQLite store at `db` holds a pending interaction: after a kill
/// right after a click, whether the click never became a decision.
pub async fn anything_pending(db: &Path) -> bool {
    let store = hitl_bridge::store::Store::connect(&format!("sqlite://{}", db.display())).await.expect("store");
    let pending = !store.pending_interactions().await.expect("pending").is_empty();
    store.close().await;
    pending
}

impl Drop for BridgeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
