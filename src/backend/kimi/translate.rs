//! Kimi's wire messages to [`SessionUpdate`]s, and the bridge's replies to the results
//! kimi expects. Pure: no IO, so every mapping is unit-tested.
//!
//! - Text (`ContentPart` text) is collected per step and shown whole at the next step,
//!   tool call, request or end of turn; thinking is dropped.
//! - `ToolCall` / `ToolResult` fold into one tool-group status line per step.
//! - `ApprovalRequest` becomes an approval with one action (the tool call's name and
//!   arguments, kimi's description); `QuestionRequest` becomes questions (seed 001).
//! - `ApprovalResponse` events (kimi resolved a request, e.g. by an earlier "approve
//!   for session") become `Resolved`.
//!
//! The translator outlives processes (it is the session's
//! [`Transport::State`](super::super::session::Transport::State)); which requests a
//! process still waits on is that process's own business ([`super::requests`]).

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::super::SessionUpdate;
use super::super::assembler::{CappedText, MAX_TEXT_BYTES};
use super::super::tool_groups::ToolGroups;
use super::requests::Awaits;
use super::wire::{self, RpcError};
use crate::interaction::{Action, Request, RequestBuilder, RequestKind, TimeoutDefaults};
use crate::protocol::{ActionRequest, Decision, DecisionType, Reply};

/// The action name of a kimi question request, as the bridge's question tools know it.
pub const QUESTION_ACTION: &str = "AskUserQuestion";

/// Tool calls remembered per turn, to show an approval's arguments; a runaway turn
/// cannot grow this past the bound.
const MAX_TOOL_CALLS: usize = 512;

#[derive(Debug, Clone, Default)]
struct ToolCallSeen {
    name: String,
    /// JSON text, possibly streamed in parts.
    arguments: String,
}

/// What to do about one request of kimi's.
#[derive(Debug, Default, PartialEq)]
pub struct Handled {
    pub updates: Vec<SessionUpdate>,
    /// A line to write back at once (requests the bridge answers by itself).
    pub reply: Option<String>,
    /// What the request now waits for from a person.
    pub awaits: Option<Awaits>,
}

/// One session's translation state, kept across kimi processes.
#[derive(Debug, Default)]
pub struct Translator {
    defaults: TimeoutDefaults,
    approve_for_session: bool,
    text: CappedText,
    groups: ToolGroups,
    tool_calls: HashMap<String, ToolCallSeen>,
    last_tool_call: Option<String>,
}

impl Translator {
    /// `approve_for_session`: whether approvals offer kimi's "approve for session".
    pub fn new(defaults: TimeoutDefaults, approve_for_session: bool) -> Self {
        Self { defaults, approve_for_session, ..Self::default() }
    }

    /// One `event` notification.
    pub fn event(&mut self, kind: &str, payload: &Value) -> Vec<SessionUpdate> {
        match kind {
            "ContentPart" => {
                match payload.get("type").and_then(Value::as_str) {
                    Some("text") => self.text.push(payload.get("text").and_then(Value::as_str).unwrap_or("")),
                    Some(other) => tracing::debug!(part = other, "not showing a content part"),
                    None => tracing::debug!("a content part without a type"),
                }
                Vec::new()
            }
            "StepBegin" | "StepInterrupted" => self.end_step(false),
            "TurnEnd" => self.end_step(true),
            "ToolCall" => {
                let mut out = self.flush_text(false);
                let id = str_at(payload, "id").to_owned();
                let name = payload.pointer("/function/name").and_then(Value::as_str).unwrap_or("tool").to_owned();
                let arguments = payload.pointer("/function/arguments").and_then(Value::as_str).unwrap_or("").to_owned();
                if self.tool_calls.len() < MAX_TOOL_CALLS {
                    self.tool_calls.insert(id.clone(), ToolCallSeen { name: name.clone(), arguments });
                }
                self.last_tool_call = Some(id.clone());
                out.push(self.groups.started(&id, &name));
                out
            }
            "ToolCallPart" => {
                let part = payload.get("arguments_part").and_then(Value::as_str).unwrap_or("");
                if let Some(call) = self.last_tool_call.as_ref().and_then(|id| self.tool_calls.get_mut(id))
                    && call.arguments.len() + part.len() <= MAX_TEXT_BYTES
                {
                    call.arguments.push_str(part);
                }
                Vec::new()
            }
            "ToolResult" => {
                let id = str_at(payload, "tool_call_id").to_owned();
                let failed = payload.pointer("/return_value/is_error").and_then(Value::as_bool).unwrap_or(false);
                self.groups.finished(&id, failed).into_iter().collect()
            }
            "ApprovalResponse" => {
                let approval_key = str_at(payload, "request_id").to_owned();
                let feedback = str_at(payload, "feedback");
                let decision = match str_at(payload, "response") {
                    "approve" => Decision::Approve,
                    "approve_for_session" => Decision::ApproveForSession,
                    _ => Decision::Reject { message: (!feedback.is_empty()).then(|| feedback.to_owned()) },
                };
                vec![SessionUpdate::Resolved { approval_key, reply: Some(Reply::Decisions { decisions: vec![decision], user_edit_content: None }) }]
            }
            other => {
                tracing::debug!(event = other, "ignoring a kimi event");
                Vec::new()
            }
        }
    }

    /// One `request` kimi waits on.
    pub fn request(&mut self, id: &str, kind: &str, payload: &Value) -> Handled {
        match kind {
            "ApprovalRequest" => {
                let mut updates = self.flush_text(false);
                let foreground = payload.get("source_kind").and_then(Value::as_str) != Some("background_agent");
                updates.push(SessionUpdate::Request(self.approval(id, payload)));
                Handled { updates, reply: None, awaits: Some(Awaits::Approval { foreground }) }
            }
            "QuestionRequest" => {
                let mut updates = self.flush_text(false);
                match self.questions(id, payload) {
                    Ok(request) => {
                        updates.push(SessionUpdate::Request(request));
                        Handled { updates, reply: None, awaits: Some(Awaits::Answers) }
                    }
                    Err(reason) => {
                        // Shown as an error; kimi is told "dismissed" so its turn goes on.
                        updates.push(SessionUpdate::InvalidRequest { approval_key: id.to_owned(), reason });
                        Handled { updates, reply: Some(wire::result(id, json!({"request_id":id,"answers":{}}))), awaits: None }
                    }
                }
            }
            "HookRequest" => {
                // The bridge subscribes to no hooks; should one come, it must not block kimi.
                Handled { reply: Some(wire::result(id, json!({"request_id":id,"action":"allow","reason":""}))), ..Handled::default() }
            }
            other => {
                // ToolCallRequest (external tools, which the bridge registers none of) and
                // anything newer: an error, so kimi does not wait forever.
                tracing::warn!(request = other, "answering a kimi request the bridge does not handle with an error");
                Handled { reply: Some(wire::error(id, -32601, &format!("hitl-bridge does not handle {other}"))), ..Handled::default() }
            }
        }
    }

    /// The response to the turn's `prompt`: the turn is over. `settled` are the
    /// requests kimi settled itself before answering (see [`super::requests`]).
    pub fn turn_finished(&mut self, outcome: Result<&Value, &RpcError>, settled: Vec<SessionUpdate>) -> Vec<SessionUpdate> {
        let mut out = self.end_step(true);
        self.tool_calls.clear();
        self.last_tool_call = None;
        out.extend(settled);
        out.push(match outcome {
            Ok(result) => match result.get("status").and_then(Value::as_str) {
                Some("max_steps_reached") => {
                    let steps = result.get("steps").and_then(Value::as_u64).unwrap_or(0);
                    SessionUpdate::TurnFailed { message: format!("kimi stopped: the turn reached its limit of {steps} steps") }
                }
                _ => SessionUpdate::TurnEnded,
            },
            Err(e) => SessionUpdate::TurnFailed { message: format!("kimi: {} (code {})", e.message, e.code) },
        });
        out
    }

    /// The process is gone (`how`: its exit status) with `lost` requests that can no
    /// longer be answered. Says so in the chat when a turn or a request was open.
    pub fn process_lost(&mut self, how: &str, turn_open: bool, lost: Vec<SessionUpdate>) -> Vec<SessionUpdate> {
        let mut out = self.end_step(false);
        self.tool_calls.clear();
        self.last_tool_call = None;
        let count = lost.len();
        out.extend(lost);
        if turn_open || count > 0 {
            let requests = match count {
                0 => String::new(),
                1 => "; its open request can no longer be answered".into(),
                n => format!("; its {n} open requests can no longer be answered"),
            };
            out.push(SessionUpdate::TurnFailed { message: format!("kimi stopped unexpectedly ({how}){requests}. Your next message starts it again.") });
        }
        out
    }

    fn approval(&self, id: &str, payload: &Value) -> Request {
        let call = payload.get("tool_call_id").and_then(Value::as_str).and_then(|c| self.tool_calls.get(c));
        let name = call.map(|c| c.name.clone()).unwrap_or_else(|| non_empty(payload, "sender").unwrap_or("tool").to_owned());
        // The tool call's own arguments when kimi streamed them; else what the request says.
        let args = call.and_then(|c| serde_json::from_str::<Value>(&c.arguments).ok()).filter(Value::is_object).unwrap_or_else(|| {
            let mut args = Map::new();
            args.insert("action".into(), json!(str_at(payload, "action")));
            if payload.get("display").and_then(Value::as_array).is_some_and(|d| !d.is_empty()) {
                args.insert("display".into(), payload["display"].clone());
            }
            Value::Object(args)
        });
        let mut allowed = vec![DecisionType::Approve];
        if self.approve_for_session {
            allowed.push(DecisionType::ApproveForSession);
        }
        // Reject carries feedback for the model; a comment is a reject with feedback.
        allowed.extend([DecisionType::Reject, DecisionType::Respond]);
        let context = (payload.get("source_kind").and_then(Value::as_str) == Some("background_agent"))
            .then(|| non_empty(payload, "source_description").or_else(|| non_empty(payload, "subagent_type")).unwrap_or("a background agent").to_owned());
        Request {
            approval_key: id.to_owned(),
            kind: RequestKind::Approval {
                actions: vec![Action {
                    name,
                    args,
                    description: non_empty(payload, "description").map(str::to_owned),
                    tool_use_id: non_empty(payload, "tool_call_id").map(str::to_owned),
                    allowed,
                    labels: Vec::new(),
                }],
            },
            timeout_secs: self.defaults.approval_secs,
            context,
        }
    }

    fn questions(&self, id: &str, payload: &Value) -> Result<Request, String> {
        let list = payload.get("questions").and_then(Value::as_array).ok_or("a QuestionRequest without questions")?;
        let questions: Vec<Value> = list.iter().map(question_args).collect();
        let action = ActionRequest {
            name: QUESTION_ACTION.into(),
            args: json!({"questions":questions}),
            description: None,
            tool_use_id: non_empty(payload, "tool_call_id").map(str::to_owned),
        };
        let mut request = RequestBuilder::start(id, vec![action], Vec::new(), None).finish(self.defaults).map_err(|e| e.to_string())?;
        // Kimi's optional markdown bodies, shown above the questions.
        let bodies: Vec<&str> = list.iter().filter_map(|q| non_empty(q, "body")).collect();
        if !bodies.is_empty() {
            request.context = Some(bodies.join("\n\n"));
        }
        Ok(request)
    }

    fn flush_text(&mut self, is_final: bool) -> Vec<SessionUpdate> {
        let text = self.text.take();
        if text.trim().is_empty() {
            return Vec::new();
        }
        vec![SessionUpdate::Text { text, is_final, block: None }]
    }

    /// A step ended: its text is shown and its tool group closed. A tool still running
    /// then never will (kimi records every result before the next step): failed.
    fn end_step(&mut self, is_final: bool) -> Vec<SessionUpdate> {
        let mut out = self.flush_text(is_final);
        out.extend(self.groups.close_abandoning_running());
        out
    }
}

/// One kimi `QuestionItem` as the bridge's question args (seed 001 → seed 000 shape):
/// empty headers and descriptions left out; kimi's `other_label` becomes the option
/// whose typed text is the answer (else the bridge offers its own "Other", as kimi's
/// own client does).
fn question_args(q: &Value) -> Value {
    let mut options: Vec<Value> = q
        .get("options")
        .and_then(Value::as_array)
        .map(|list| list.iter().map(|o| option(str_at(o, "label"), non_empty(o, "description"), false)).collect())
        .unwrap_or_default();
    if let Some(label) = non_empty(q, "other_label") {
        options.push(option(label, non_empty(q, "other_description"), true));
    }
    let mut out = json!({"question":str_at(q, "question"),"multi_select":q.get("multi_select").and_then(Value::as_bool).unwrap_or(false),"options":options});
    if let Some(header) = non_empty(q, "header") {
        out["header"] = json!(header);
    }
    out
}

fn option(label: &str, description: Option<&str>, input: bool) -> Value {
    let mut o = json!({"label":label});
    if let Some(d) = description {
        o["description"] = json!(d);
    }
    if input {
        o["input"] = json!(true);
    }
    o
}

fn str_at<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

fn non_empty<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str).filter(|s| !s.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::{FreeText, RequestKind};

    fn translator() -> Translator {
        Translator::new(TimeoutDefaults::default(), true)
    }

    /// Events as kimi-cli 1.51.0 sent them in a recorded run.
    fn tool_call() -> Value {
        json!({"type":"function","id":"tc-1","function":{"name":"Shell","arguments":"{\"command\":\"echo hi\"}"},"extras":null})
    }

    fn approval_payload() -> Value {
        json!({"id":"d71b","tool_call_id":"tc-1","sender":"Shell","action":"run command","description":"Run command `echo hi`",
            "source_kind":"foreground_turn","source_id":"14d0","agent_id":null,"subagent_type":null,"source_description":null,
            "display":[{"type":"shell","language":"bash","command":"echo hi"}]})
    }

    fn question_payload() -> Value {
        json!({"id":"q1","tool_call_id":"tc-2","questions":[
            {"question":"Which colors?","header":"Color","options":[{"label":"Red","description":""},{"label":"Green","description":"leafy"},{"label":"Blue","description":""}],
             "multi_select":true,"body":"","other_label":"","other_description":""},
            {"question":"Where?","header":"","options":[{"label":"Here","description":""},{"label":"There","description":""}],
             "multi_select":false,"body":"Pick **one**.","other_label":"Somewhere else","other_description":"type it"}]})
    }

    #[test]
    fn text_is_shown_per_step_and_the_last_is_final() {
        let mut t = translator();
        assert!(t.event("ContentPart", &json!({"type":"text","text":"I will "})).is_empty());
        t.event("ContentPart", &json!({"type":"think","think":"hmm"}));
        t.event("ContentPart", &json!({"type":"text","text":"run it."}));
        let out = t.event("ToolCall", &tool_call());
        assert_eq!(out[0], SessionUpdate::Text { text: "I will run it.".into(), is_final: false, block: None });
        let SessionUpdate::ToolGroup(g) = &out[1] else { panic!("{out:?}") };
        assert_eq!(g.line(), "⚙ tools: Shell …");
        let out = t.event("ToolResult", &json!({"tool_call_id":"tc-1","return_value":{"is_error":false,"output":"hi\n"}}));
        assert!(matches!(&out[..], [SessionUpdate::ToolGroup(g)] if g.line() == "⚙ tools: Shell ✓" && !g.finished));
        let out = t.event("StepBegin", &json!({"n":2}));
        assert!(matches!(&out[..], [SessionUpdate::ToolGroup(g)] if g.finished));
        t.event("ContentPart", &json!({"type":"text","text":"done"}));
        assert_eq!(t.event("TurnEnd", &json!({})), vec![SessionUpdate::Text { text: "done".into(), is_final: true, block: None }]);
    }

    #[test]
    fn a_runaway_text_is_capped() {
        let mut t = translator();
        let chunk = "ă".repeat(20_000);
        for _ in 0..4 {
            t.event("ContentPart", &json!({"type":"text","text":chunk}));
        }
        let [SessionUpdate::Text { text, .. }] = &t.event("TurnEnd", &json!({}))[..] else { panic!() };
        assert!(text.len() < MAX_TEXT_BYTES + 64);
        assert!(text.ends_with(&format!("… [truncated {} bytes]", 4 * chunk.len() - MAX_TEXT_BYTES)));
    }

    #[test]
    fn a_rejected_tool_shows_as_failed() {
        let mut t = translator();
        t.event("ToolCall", &tool_call());
        let out = t.event("ToolResult", &json!({"tool_call_id":"tc-1","return_value":{"is_error":true,"message":"rejected"}}));
        assert!(matches!(&out[..], [SessionUpdate::ToolGroup(g)] if g.line() == "⚙ tools: Shell ✗"));
    }

    #[test]
    fn an_approval_request_shows_the_tool_call_and_offers_kimis_decisions() {
        let mut t = translator();
        t.event("ToolCall", &tool_call());
        let handled = t.request("d71b", "ApprovalRequest", &approval_payload());
        assert_eq!((handled.reply.as_deref(), handled.awaits), (None, Some(Awaits::Approval { foreground: true })));
        let [SessionUpdate::Request(r)] = &handled.updates[..] else { panic!("{handled:?}") };
        assert_eq!(r.approval_key, "d71b");
        assert_eq!(r.timeout_secs, 300);
        assert_eq!(r.context, None);
        let RequestKind::Approval { actions } = &r.kind else { panic!() };
        assert_eq!(actions[0].name, "Shell");
        assert_eq!(actions[0].args, json!({"command":"echo hi"}));
        assert_eq!(actions[0].description.as_deref(), Some("Run command `echo hi`"));
        assert_eq!(actions[0].tool_use_id.as_deref(), Some("tc-1"));
        use DecisionType::*;
        assert_eq!(actions[0].allowed, vec![Approve, ApproveForSession, Reject, Respond]);

        let mut without = Translator::new(TimeoutDefaults::default(), false);
        let handled = without.request("d71b", "ApprovalRequest", &approval_payload());
        let [SessionUpdate::Request(r)] = &handled.updates[..] else { panic!() };
        assert_eq!(r.actions()[0].allowed, vec![Approve, Reject, Respond]);
        // Without the tool call seen, the request's own words are the args.
        assert_eq!(r.actions()[0].args, json!({"action":"run command","display":[{"type":"shell","language":"bash","command":"echo hi"}]}));
    }

    #[test]
    fn a_background_agents_approval_says_whose_it_is() {
        let mut t = translator();
        let mut payload = approval_payload();
        payload["source_kind"] = json!("background_agent");
        payload["source_description"] = json!("Subagent: reviewer");
        let handled = t.request("b", "ApprovalRequest", &payload);
        assert_eq!(handled.awaits, Some(Awaits::Approval { foreground: false }));
        assert!(matches!(&handled.updates[..], [SessionUpdate::Request(r)] if r.context.as_deref() == Some("Subagent: reviewer")));
    }

    #[test]
    fn streamed_tool_arguments_are_joined() {
        let mut t = translator();
        t.event("ToolCall", &json!({"type":"function","id":"tc-1","function":{"name":"WriteFile","arguments":"{\"path\":"}}));
        t.event("ToolCallPart", &json!({"arguments_part":"\"a.txt\"}"}));
        let handled =
            t.request("r", "ApprovalRequest", &json!({"id":"r","tool_call_id":"tc-1","sender":"WriteFile","action":"edit file","description":"Write a.txt"}));
        let [SessionUpdate::Request(r)] = &handled.updates[..] else { panic!() };
        assert_eq!(r.actions()[0].args, json!({"path":"a.txt"}));
    }

    #[test]
    fn text_before_a_request_is_shown_first() {
        let mut t = translator();
        t.event("ContentPart", &json!({"type":"text","text":"Let me ask."}));
        let handled = t.request("q1", "QuestionRequest", &question_payload());
        assert_eq!(handled.updates[0], SessionUpdate::Text { text: "Let me ask.".into(), is_final: false, block: None });
        assert!(matches!(handled.updates[1], SessionUpdate::Request(_)));
    }

    #[test]
    fn question_requests_become_questions() {
        let mut t = translator();
        let handled = t.request("q1", "QuestionRequest", &question_payload());
        assert_eq!(handled.awaits, Some(Awaits::Answers));
        let [SessionUpdate::Request(r)] = &handled.updates[..] else { panic!("{handled:?}") };
        assert_eq!(r.timeout_secs, 600);
        assert_eq!(r.context.as_deref(), Some("Pick **one**."));
        let RequestKind::Questions { questions, actions } = &r.kind else { panic!() };
        assert_eq!(actions[0].name, "AskUserQuestion");
        assert_eq!(actions[0].tool_use_id.as_deref(), Some("tc-2"));
        assert_eq!(questions[0].text, "Which colors?");
        assert!(questions[0].multi_select);
        assert_eq!(questions[0].header.as_deref(), Some("Color"));
        assert_eq!(questions[0].options.iter().map(|o| o.label.as_str()).collect::<Vec<_>>(), ["Red", "Green", "Blue"]);
        assert_eq!(questions[0].options[0].description, None);
        assert_eq!(questions[0].options[1].description.as_deref(), Some("leafy"));
        assert_eq!(questions[0].free_text, FreeText::Other);
        assert!(!questions[1].multi_select);
        assert_eq!(questions[1].header, None);
        assert_eq!(questions[1].free_text_label(), Some("Somewhere else"));
    }

    #[test]
    fn a_bad_question_request_is_reported_and_dismissed() {
        let mut t = translator();
        let handled = t.request("q1", "QuestionRequest", &json!({"id":"q1","questions":[]}));
        assert!(matches!(&handled.updates[..], [SessionUpdate::InvalidRequest { approval_key, .. }] if approval_key == "q1"));
        assert_eq!(handled.reply.as_deref(), Some(r#"{"jsonrpc":"2.0","id":"q1","result":{"request_id":"q1","answers":{}}}"#));
        assert_eq!(handled.awaits, None);
    }

    #[test]
    fn requests_the_bridge_does_not_show_are_answered_at_once() {
        let mut t = translator();
        let external = t.request("tc-9", "ToolCallRequest", &json!({"id":"tc-9","name":"x","arguments":null}));
        assert!(external.reply.unwrap().contains(r#""error":{"code":-32601"#));
        let hook = t.request("h1", "HookRequest", &json!({"id":"h1","event":"PreToolUse"}));
        assert_eq!(hook.reply.as_deref(), Some(r#"{"jsonrpc":"2.0","id":"h1","result":{"request_id":"h1","action":"allow","reason":""}}"#));
    }

    #[test]
    fn kimis_approval_response_resolves_the_request() {
        let mut t = translator();
        let out = t.event("ApprovalResponse", &json!({"request_id":"d71b","response":"reject","feedback":"no"}));
        assert_eq!(
            out,
            vec![SessionUpdate::Resolved {
                approval_key: "d71b".into(),
                reply: Some(Reply::Decisions { decisions: vec![Decision::Reject { message: Some("no".into()) }], user_edit_content: None }),
            }]
        );
        let out = t.event("ApprovalResponse", &json!({"request_id":"e","response":"approve_for_session","feedback":""}));
        assert!(
            matches!(&out[..], [SessionUpdate::Resolved { reply: Some(Reply::Decisions { decisions, .. }), .. }] if decisions == &[Decision::ApproveForSession])
        );
    }

    #[test]
    fn the_prompts_response_ends_the_turn() {
        let mut t = translator();
        t.event("ContentPart", &json!({"type":"text","text":"bye"}));
        let settled = vec![SessionUpdate::TimedOut { approval_key: "a".into() }];
        let out = t.turn_finished(Ok(&json!({"status":"finished"})), settled);
        assert_eq!(
            out,
            vec![
                SessionUpdate::Text { text: "bye".into(), is_final: true, block: None },
                SessionUpdate::TimedOut { approval_key: "a".into() },
                SessionUpdate::TurnEnded,
            ]
        );
        let failed = t.turn_finished(Err(&RpcError { code: -32003, message: "provider down".into() }), Vec::new());
        assert_eq!(failed, vec![SessionUpdate::TurnFailed { message: "kimi: provider down (code -32003)".into() }]);
        let limit = t.turn_finished(Ok(&json!({"status":"max_steps_reached","steps":100})), Vec::new());
        assert_eq!(limit, vec![SessionUpdate::TurnFailed { message: "kimi stopped: the turn reached its limit of 100 steps".into() }]);
    }

    #[test]
    fn a_lost_process_says_so_when_something_was_open() {
        let mut t = translator();
        t.event("ContentPart", &json!({"type":"text","text":"half"}));
        let out = t.process_lost("killed by signal 9", true, vec![SessionUpdate::TimedOut { approval_key: "a".into() }]);
        assert_eq!(
            out,
            vec![
                SessionUpdate::Text { text: "half".into(), is_final: false, block: None },
                SessionUpdate::TimedOut { approval_key: "a".into() },
                SessionUpdate::TurnFailed {
                    message: "kimi stopped unexpectedly (killed by signal 9); its open request can no longer be answered. Your next message starts it again."
                        .into(),
                },
            ]
        );
        // Idle, nothing open: nothing to tell.
        assert!(t.process_lost("exit code 0", false, Vec::new()).is_empty());
        t.event("ToolCall", &tool_call());
        let out = t.process_lost("exit code 1", true, Vec::new());
        assert!(matches!(&out[0], SessionUpdate::ToolGroup(g) if g.finished && g.line() == "⚙ tools: Shell ✗"), "{out:?}");
    }
}
