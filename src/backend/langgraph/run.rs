//! A run's SSE events (`stream_mode: updates`) → [`SessionUpdate`]s. Pure: no IO.
//!
//! - `updates` `{"<node>":{"messages":[…]}}`: an AI message's text is shown (once per
//!   message id: middleware re-emits the model's message with revised tool calls), its
//!   tool calls open or extend the session's tool group, and tool messages mark their
//!   call done (or failed, `status: "error"`, e.g. a rejection);
//! - `updates` `{"__interrupt__":[…]}`: each interrupt becomes a request
//!   ([`super::interrupts`]); one that cannot be read is reported, not dropped;
//! - `error` `{"error","message"}`: the run failed (a refused resume among others);
//! - the stream's end: the turn is over (unless it failed).
//!
//! `metadata` (the run id) is read by the link; other events are ignored.

use std::collections::VecDeque;

use serde_json::Value;

use super::interrupts::{PendingInterrupt, read_interrupt};
use crate::backend::SessionUpdate;
use crate::backend::sse::SseEvent;
use crate::backend::tool_groups::ToolGroups;
use crate::interaction::TimeoutDefaults;

/// How many AI message ids are remembered to show each message once.
const SEEN_MESSAGES: usize = 256;

/// What one event brought.
#[derive(Debug, Default, PartialEq)]
pub struct Translated {
    pub updates: Vec<SessionUpdate>,
    /// Interrupts now waiting for the bridge.
    pub interrupts: Vec<PendingInterrupt>,
    /// The run failed (`error` event).
    pub failed: bool,
}

/// Per session, kept across runs and reconnects (group numbers must not restart).
#[derive(Debug)]
pub struct RunTranslator {
    question_tool: String,
    defaults: TimeoutDefaults,
    groups: ToolGroups,
    seen_messages: VecDeque<String>,
}

impl RunTranslator {
    pub fn new(question_tool: &str, defaults: TimeoutDefaults) -> Self {
        Self { question_tool: question_tool.to_owned(), defaults, groups: ToolGroups::default(), seen_messages: VecDeque::new() }
    }

    /// Feeds one SSE event of a run's stream.
    pub fn event(&mut self, event: &SseEvent) -> Translated {
        let mut out = Translated::default();
        match event.event.as_str() {
            "updates" => match serde_json::from_str::<Value>(&event.data) {
                Ok(Value::Object(nodes)) => {
                    for (node, update) in nodes {
                        if node == "__interrupt__" {
                            self.interrupts(&update, &mut out);
                        } else {
                            self.node_update(&update, &mut out.updates);
                        }
                    }
                }
                Ok(_) => tracing::debug!("ignoring an updates event that is not an object"),
                Err(e) => tracing::warn!(error = %e, "skipping an updates event that is not JSON"),
            },
            "error" => {
                out.updates.extend(self.groups.close());
                out.updates.push(SessionUpdate::TurnFailed { message: error_message(&event.data) });
                out.failed = true;
            }
            other => tracing::debug!(event = other, "ignoring a run event"),
        }
        out
    }

    /// The run's stream ended; `failed` when it already reported its error.
    pub fn run_ended(&mut self, failed: bool) -> Vec<SessionUpdate> {
        let mut out: Vec<SessionUpdate> = self.groups.close().into_iter().collect();
        if !failed {
            out.push(SessionUpdate::TurnEnded);
        }
        out
    }

    /// Interrupts read from the thread's state (after a reconnect): requests for each.
    pub fn pending(&mut self, interrupts: &Value) -> Translated {
        let mut out = Translated::default();
        self.interrupts(interrupts, &mut out);
        out
    }

    fn interrupts(&mut self, list: &Value, out: &mut Translated) {
        for interrupt in list.as_array().map(Vec::as_slice).unwrap_or_default() {
            let read = read_interrupt(interrupt, &self.question_tool).and_then(|pending| Ok((pending.request(self.defaults)?, pending)));
            match read {
                Ok((request, pending)) => {
                    out.updates.push(SessionUpdate::Request(request));
                    out.interrupts.push(pending);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot show a LangGraph interrupt");
                    let approval_key = e.id().unwrap_or("(no id)").to_owned();
                    out.updates.push(SessionUpdate::InvalidRequest { approval_key, reason: e.to_string() });
                }
            }
        }
    }

    fn node_update(&mut self, update: &Value, out: &mut Vec<SessionUpdate>) {
        let messages = update.get("messages").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        for message in messages {
            match message.get("type").and_then(Value::as_str) {
                Some("ai") => self.ai_message(message, out),
                Some("tool") => self.tool_message(message, out),
                _ => {}
            }
        }
    }

    fn ai_message(&mut self, message: &Value, out: &mut Vec<SessionUpdate>) {
        if let Some(id) = message.get("id").and_then(Value::as_str) {
            if self.seen_messages.iter().any(|seen| seen == id) {
                return;
            }
            if self.seen_messages.len() == SEEN_MESSAGES {
                self.seen_messages.pop_front();
            }
            self.seen_messages.push_back(id.to_owned());
        }
        let calls = message.get("tool_calls").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let text = message_text(message.get("content"));
        if !text.is_empty() {
            if calls.is_empty() {
                out.extend(self.groups.close());
            }
            out.push(SessionUpdate::Text { text, is_final: calls.is_empty(), block: None });
        }
        if calls.is_empty() {
            return;
        }
        // One status update for the message, however many calls it makes.
        let mut status = None;
        for call in calls {
            let id = call.get("id").and_then(Value::as_str).unwrap_or_default();
            let name = call.get("name").and_then(Value::as_str).unwrap_or("tool");
            status = Some(self.groups.started(id, name));
        }
        out.extend(status);
    }

    fn tool_message(&mut self, message: &Value, out: &mut Vec<SessionUpdate>) {
        let id = message.get("tool_call_id").and_then(Value::as_str).unwrap_or_default();
        let failed = message.get("status").and_then(Value::as_str) == Some("error");
        out.extend(self.groups.finished(id, failed));
    }
}

/// A message's text: a string, or the `text` of its text blocks.
pub(super) fn message_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.trim().to_owned(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| match b {
                Value::String(s) => Some(s.as_str()),
                _ if b.get("type").and_then(Value::as_str) == Some("text") => b.get("text").and_then(Value::as_str),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("")
            .trim()
            .to_owned(),
        _ => String::new(),
    }
}

/// `{"error":"ValueError","message":"…"}` → `ValueError: …`.
fn error_message(data: &str) -> String {
    match serde_json::from_str::<Value>(data) {
        Ok(v) => {
            let kind = v.get("error").and_then(Value::as_str).unwrap_or("error");
            match v.get("message").and_then(Value::as_str) {
                Some(message) => format!("{kind}: {message}"),
                None => kind.to_owned(),
            }
        }
        Err(_) if !data.trim().is_empty() => data.trim().to_owned(),
        Err(_) => "the run failed".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::ToolState;
    use serde_json::json;

    fn updates(data: Value) -> SseEvent {
        SseEvent { event: "updates".into(), data: data.to_string() }
    }

    fn translator() -> RunTranslator {
        RunTranslator::new("ask_user_question", TimeoutDefaults::default())
    }

    #[test]
    fn tool_calls_group_and_final_text_is_shown_once() {
        let mut t = translator();
        let ai = json!({"type":"ai","id":"m1","content":"","tool_calls":[{"name":"execute_trade","args":{},"id":"c1"}]});
        let out = t.event(&updates(json!({"model":{"messages":[ai.clone()]}})));
        let [SessionUpdate::ToolGroup(group)] = out.updates.as_slice() else { panic!("{out:?}") };
        assert_eq!((group.group, group.tools[0].state, group.finished), (1, ToolState::Running, false));
        // The middleware re-emits the same message: nothing new.
        assert!(t.event(&updates(json!({"HumanInTheLoopMiddleware.after_model":{"messages":[ai]}}))).updates.is_empty());
        let out = t.event(&updates(json!({"tools":{"messages":[{"type":"tool","tool_call_id":"c1","status":"error","content":"rejected"}]}})));
        let [SessionUpdate::ToolGroup(group)] = out.updates.as_slice() else { panic!("{out:?}") };
        assert_eq!(group.tools[0].state, ToolState::Failed);
        let out = t.event(&updates(json!({"model":{"messages":[{"type":"ai","id":"m2","content":[{"type":"text","text":"done."}]}]}})));
        assert_eq!(out.updates.len(), 2);
        assert!(matches!(&out.updates[0], SessionUpdate::ToolGroup(g) if g.finished));
        assert_eq!(out.updates[1], SessionUpdate::Text { text: "done.".into(), is_final: true, block: None });
        assert_eq!(t.run_ended(false), vec![SessionUpdate::TurnEnded]);
    }

    #[test]
    fn interrupts_become_requests_and_unreadable_ones_are_reported() {
        let mut t = translator();
        let out = t.event(&updates(json!({"__interrupt__":[
            {"id":"i1","value":{"type":"tool_approval","tool_call_id":"c1","name":"execute_trade","args":{"quantity":1}}},
            {"id":"i2","value":42}]})));
        assert_eq!(out.interrupts.len(), 1);
        assert!(matches!(&out.updates[0], SessionUpdate::Request(r) if r.approval_key == "i1"));
        assert!(matches!(&out.updates[1], SessionUpdate::InvalidRequest { approval_key, .. } if approval_key == "i2"));
    }

    #[test]
    fn an_error_event_fails_the_turn_with_the_server_message() {
        let mut t = translator();
        t.event(&updates(json!({"model":{"messages":[{"type":"ai","id":"m","content":"","tool_calls":[{"name":"x","id":"c"}]}]}})));
        let out = t.event(&SseEvent {
            event: "error".into(),
            data: json!({"error":"ValueError","message":"Number of human decisions (1) does not match"}).to_string(),
        });
        assert!(out.failed);
        assert!(matches!(&out.updates[0], SessionUpdate::ToolGroup(g) if g.finished));
        assert_eq!(out.updates[1], SessionUpdate::TurnFailed { message: "ValueError: Number of human decisions (1) does not match".into() });
        assert!(t.run_ended(true).is_empty(), "no TurnEnded after a failure");
    }

    #[test]
    fn groups_keep_counting_across_runs() {
        let mut t = translator();
        for (n, id) in [(1, "a"), (2, "b")] {
            let out = t.event(&updates(json!({"model":{"messages":[{"type":"ai","id":id,"content":"","tool_calls":[{"name":"x","id":id}]}]}})));
            assert!(matches!(&out.updates[0], SessionUpdate::ToolGroup(g) if g.group == n));
            t.run_ended(false);
        }
    }
}
