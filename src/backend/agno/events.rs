//! AgentOS run events (the SSE `event:` name and its JSON `data`) to
//! [`SessionUpdate`]s. Pure; one per session, kept across reconnects (the
//! transport's `State`), so tool-group numbers never restart.
//!
//! - `RunContent` deltas are collected and shown as one text when the model stops
//!   talking: before a tool call, at a pause, at the end (the final text).
//! - `ToolCallStarted` / `ToolCallCompleted` / `ToolCallError` fold into one status
//!   line per run segment.
//! - `RunPaused` becomes the requests of [`super::pause`] (its own
//!   "I have tools to execute…" text is not shown: the request says it better).
//! - `RunCompleted` ends the turn, `RunError` and `RunCancelled` fail it (shown).
//!   Everything else (model request metrics, hooks, memory…) is ignored.

use serde_json::Value;

use super::pause;
use crate::backend::SessionUpdate;
use crate::backend::assembler::CappedText;
use crate::backend::tool_groups::ToolGroups;
use crate::interaction::TimeoutDefaults;

/// Event names that end a run's stream.
pub const TERMINAL_EVENTS: [&str; 4] = ["RunCompleted", "RunPaused", "RunError", "RunCancelled"];

#[derive(Debug, Default)]
pub struct RunEvents {
    defaults: TimeoutDefaults,
    text: CappedText,
    /// This run (segment) streamed content, so `RunCompleted.content` repeats it.
    streamed: bool,
    groups: ToolGroups,
}

impl RunEvents {
    pub fn new(defaults: TimeoutDefaults) -> Self {
        Self { defaults, ..Self::default() }
    }

    /// One event; returns what is now complete.
    pub fn push(&mut self, event: &str, data: &Value) -> Vec<SessionUpdate> {
        let mut out = Vec::new();
        match event {
            "RunStarted" | "RunContinued" => self.streamed = false,
            "RunContent" => {
                if let Some(content) = content_text(data) {
                    self.streamed = true;
                    self.text.push(&content);
                }
            }
            "ToolCallStarted" => {
                out.extend(self.flush(false));
                let tool = data.get("tool").unwrap_or(&Value::Null);
                let id = str_of(tool, "tool_call_id").unwrap_or_default().to_owned();
                let name = str_of(tool, "tool_name").unwrap_or("tool").to_owned();
                out.push(self.groups.started(&id, &name));
            }
            "ToolCallCompleted" | "ToolCallError" => {
                let tool = data.get("tool").unwrap_or(&Value::Null);
                let failed = event == "ToolCallError" || tool.get("tool_call_error").and_then(Value::as_bool) == Some(true);
                let id = str_of(tool, "tool_call_id").unwrap_or_default().to_owned();
                out.extend(self.groups.finished(&id, failed));
            }
            "RunPaused" => {
                out.extend(self.flush(false));
                out.extend(self.groups.close());
                let run_id = str_of(data, "run_id").unwrap_or_default();
                let tools = data.get("tools").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
                if run_id.is_empty() {
                    tracing::warn!("RunPaused without a run_id; cannot ask about it");
                    out.push(SessionUpdate::TurnFailed { message: "the agent paused a run without naming it".into() });
                } else {
                    out.extend(pause::pause_updates(run_id, tools, self.defaults));
                }
            }
            "RunCompleted" => {
                if !self.streamed
                    && let Some(content) = content_text(data)
                {
                    self.text.push(&content);
                }
                out.extend(self.flush(true));
                out.extend(self.groups.close());
                out.push(SessionUpdate::TurnEnded);
            }
            "RunError" | "RunCancelled" => {
                out.extend(self.flush(false));
                out.extend(self.groups.close());
                let message = if event == "RunError" {
                    str_of(data, "content").filter(|c| !c.is_empty()).unwrap_or("the run failed").to_owned()
                } else {
                    match str_of(data, "reason").filter(|r| !r.is_empty()) {
                        Some(reason) => format!("the run was cancelled: {reason}"),
                        None => "the run was cancelled".to_owned(),
                    }
                };
                out.push(SessionUpdate::TurnFailed { message });
            }
            other => tracing::trace!(event = other, "ignoring an AgentOS event"),
        }
        out
    }

    fn flush(&mut self, is_final: bool) -> Option<SessionUpdate> {
        let text = self.text.take();
        (!text.trim().is_empty()).then_some(SessionUpdate::Text { text, is_final, block: None })
    }
}

fn str_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// A content delta as text: strings as they are, structured output as JSON.
fn content_text(data: &Value) -> Option<String> {
    match data.get("content")? {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::assembler::MAX_TEXT_BYTES;
    use crate::interaction::RequestKind;
    use serde_json::json;

    fn feed(r: &mut RunEvents, events: &[(&str, Value)]) -> Vec<SessionUpdate> {
        events.iter().flat_map(|(e, d)| r.push(e, d)).collect()
    }

    #[test]
    fn streamed_content_is_one_final_text_and_the_turn_ends() {
        let mut r = RunEvents::default();
        let out = feed(
            &mut r,
            &[
                ("RunStarted", json!({"run_id": "r"})),
                ("RunContent", json!({"content": "Xin "})),
                ("ModelRequestCompleted", json!({})),
                ("RunContent", json!({"content": "chào"})),
                ("RunContentCompleted", json!({})),
                ("RunCompleted", json!({"content": "Xin chào"})),
            ],
        );
        assert_eq!(out, vec![SessionUpdate::Text { text: "Xin chào".into(), is_final: true, block: None }, SessionUpdate::TurnEnded]);
    }

    #[test]
    fn completed_content_is_shown_when_nothing_streamed() {
        let mut r = RunEvents::default();
        let out = feed(&mut r, &[("RunContinued", json!({})), ("RunCompleted", json!({"content": "done"}))]);
        assert_eq!(out[0], SessionUpdate::Text { text: "done".into(), is_final: true, block: None });
    }

    #[test]
    fn a_pause_shows_text_so_far_and_its_requests_but_not_agnos_boilerplate() {
        let mut r = RunEvents::default();
        let out = feed(
            &mut r,
            &[
                ("RunContent", json!({"content": "Let me deploy."})),
                (
                    "RunPaused",
                    json!({"run_id": "r1", "content": "I have tools to execute, but I need confirmation.",
              "tools": [{"tool_call_id": "c1", "tool_name": "deploy", "tool_args": {"target": "prod"}, "requires_confirmation": true, "confirmed": null}]}),
                ),
            ],
        );
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!(out[0], SessionUpdate::Text { text: "Let me deploy.".into(), is_final: false, block: None });
        let SessionUpdate::Request(request) = &out[1] else { panic!("{out:?}") };
        assert_eq!(request.approval_key, "r1:c1");
        assert!(matches!(&request.kind, RequestKind::Approval { actions } if actions[0].name == "deploy"));
    }

    #[test]
    fn tool_calls_fold_into_one_status_line_closed_at_the_end() {
        let mut r = RunEvents::default();
        let out = feed(
            &mut r,
            &[
                ("ToolCallStarted", json!({"tool": {"tool_call_id": "c1", "tool_name": "deploy"}})),
                ("ToolCallCompleted", json!({"tool": {"tool_call_id": "c1", "tool_name": "deploy", "tool_call_error": false}})),
                ("ToolCallStarted", json!({"tool": {"tool_call_id": "c2", "tool_name": "lookup"}})),
                ("ToolCallError", json!({"tool": {"tool_call_id": "c2"}, "error": "boom"})),
                ("RunCompleted", json!({"content": ""})),
            ],
        );
        let SessionUpdate::ToolGroup(last) = &out[out.len() - 2] else { panic!("{out:?}") };
        assert!(last.finished);
        assert_eq!(last.line(), "⚙ tools: deploy ✓, lookup ✗");
        assert_eq!(out.last(), Some(&SessionUpdate::TurnEnded));
        // The next run's tools are a new group.
        let out = feed(&mut r, &[("ToolCallStarted", json!({"tool": {"tool_call_id": "c3", "tool_name": "x"}}))]);
        assert!(matches!(&out[0], SessionUpdate::ToolGroup(g) if g.group == 2));
    }

    #[test]
    fn errors_and_cancels_fail_the_turn_with_agnos_words() {
        let mut r = RunEvents::default();
        assert_eq!(
            r.push("RunError", &json!({"content": "No runs found for run ID nope"})),
            vec![SessionUpdate::TurnFailed { message: "No runs found for run ID nope".into() }]
        );
        assert_eq!(
            r.push("RunCancelled", &json!({"reason": "user asked"})),
            vec![SessionUpdate::TurnFailed { message: "the run was cancelled: user asked".into() }]
        );
    }

    #[test]
    fn runaway_text_is_capped() {
        let mut r = RunEvents::default();
        let chunk = "x".repeat(MAX_TEXT_BYTES / 2 + 1);
        let out = feed(&mut r, &[("RunContent", json!({"content": chunk})), ("RunContent", json!({"content": chunk})), ("RunCompleted", json!({}))]);
        let SessionUpdate::Text { text, .. } = &out[0] else { panic!() };
        assert!(text.ends_with("… [truncated 2 bytes]"), "{}", &text[text.len() - 30..]);
    }
}
