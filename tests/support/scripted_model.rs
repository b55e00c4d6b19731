//! A scripted model API (`tests/backends/claude_code/fake_anthropic.py`,
//! `tests/backends/acp/fake_gemini.py`) run as a child process for a whole test
//! binary: scripts are registered by key, and the requests that matched a key are
//! read back. Both fakes share the same control endpoints (`POST /script`,
//! `GET /requests?key=`) and print `LISTENING <port>` once bound.

// Each test binary uses the part it needs.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::Mutex;

use serde_json::{Value, json};

pub struct ScriptedModel {
    pub url: String,
    // Held so the server lives as long as the binary; it exits when its stdin closes.
    _process: Mutex<(Child, ChildStdin)>,
}

impl ScriptedModel {
    /// Starts `script` with `python` and waits until it listens.
    pub fn start(python: &Path, script: &Path) -> ScriptedModel {
        let mut child = std::process::Command::new(python)
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", script.display()));
        let stdin = child.stdin.take().expect("stdin");
        let mut first = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut first).expect("the fake API's port");
        let port = first.trim().strip_prefix("LISTENING ").expect("LISTENING <port>").to_owned();
        ScriptedModel { url: format!("http://127.0.0.1:{port}"), _process: Mutex::new((child, stdin)) }
    }

    /// One conversation's script: `key` in a chat message selects it.
    pub async fn script(&self, key: &str, turns: Value) {
        let response = reqwest::Client::new().post(format!("{}/script", self.url)).json(&json!({"key": key, "turns": turns})).send().await.expect("script");
        assert!(response.status().is_success());
    }

    /// Every request the model got for script `key`, in order.
    pub async fn requests(&self, key: &str) -> Vec<Value> {
        reqwest::Client::new().get(format!("{}/requests?key={key}", self.url)).send().await.expect("requests").json().await.expect("json")
    }

    /// The Messages API's `tool_result` block for `tool_use_id` in the latest request
    /// that has one (the scripted Anthropic API), waiting for it.
    pub async fn tool_result(&self, key: &str, tool_use_id: &str) -> Value {
        super::wait_until(|| async {
            let requests = self.requests(key).await;
            requests.iter().rev().find_map(|r| {
                r["messages"]
                    .as_array()?
                    .iter()
                    .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
                    .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == tool_use_id)
            })
        })
        .await
    }
}

/// The text of a `tool_result` block (a string, or text blocks).
pub fn result_text(block: &Value) -> String {
    match &block["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(""),
        other => other.to_string(),
    }
}

/// A scripted Anthropic turn's block: Claude Code's `Bash` tool asked with `id`.
pub fn bash(id: &str, command: &str, description: &str) -> Value {
    json!({"tool_use": {"id": id, "name": "Bash", "input": {"command": command, "description": description}}})
}
