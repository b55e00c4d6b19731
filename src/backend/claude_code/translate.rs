//! Claude Code's stream-json frames ↔ the bridge's model, for one CLI process. Pure:
//! no IO, so every mapping is unit-tested.
//!
//! In: `assistant` text blocks become [`SessionUpdate::Text`], its tool calls and the
//! `tool_result`s that follow a tool group, `result` the end of the turn, and each
//! `can_use_tool` control request an approval (any tool) or questions
//! (`AskUserQuestion`, whose input already is the bridge's seed 000 shape).
//! Out: a chat message becomes a user message, a cancel an `interrupt`, and a reply
//! the `control_response` for the `can_use_tool` request it answers:
//! approve → `allow` with the original input, edit → `allow` with the edited input,
//! reject / respond → `deny` with the message, answers → `allow` with the original
//! input plus `answers`.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::wire;
use crate::backend::SessionUpdate;
use crate::backend::tool_groups::ToolGroups;
use crate::interaction::{RequestBuilder, TimeoutDefaults};
use crate::protocol::{ActionRequest, Command, Decision, Reply, ReviewConfig};

/// The tool Claude Code asks the user questions with.
pub const QUESTION_TOOL: &str = "AskUserQuestion";

/// What an approval may be answered with: `respond` is a deny with the person's own
/// words, which is what Claude's `deny` message is for.
const APPROVAL_DECISIONS: [&str; 4] = ["approve", "edit", "reject", "respond"];

/// What one frame from the CLI brought.
#[derive(Debug, Default, PartialEq)]
pub struct Inbound {
    pub updates: Vec<SessionUpdate>,
    /// Frames to write back at once (refusals of requests the bridge does not serve).
    pub replies: Vec<Value>,
    /// A ping's answer: the CLI has read this many commands.
    pub proves: Option<u64>,
}

/// What one bridge command becomes.
#[derive(Debug, Default, PartialEq)]
pub struct Outbound {
    pub frames: Vec<Value>,
    /// A reply to a request this process never asked, or no longer waits for: nothing
    /// is written, and the reply is reported as not delivered.
    pub not_waiting: bool,
}

/// A `can_use_tool` request waiting for a person.
#[derive(Debug, Clone, PartialEq)]
struct Pending {
    request_id: String,
    input: Value,
}

/// The translation state of one CLI process: the requests it waits on.
#[derive(Debug)]
pub struct Translator {
    session_id: String,
    defaults: TimeoutDefaults,
    deny_message: String,
    /// By approval key.
    pending: HashMap<String, Pending>,
    /// A cancel was sent: the error result that ends the interrupted turn is its
    /// expected end, not a failure to report.
    interrupted: bool,
    /// Claude's own session id, from `system/init` (logged).
    claude_session: Option<String>,
}

impl Translator {
    pub fn new(session_id: &str, defaults: TimeoutDefaults, deny_message: &str) -> Self {
        Self {
            session_id: session_id.to_owned(),
            defaults,
            deny_message: deny_message.to_owned(),
            pending: HashMap::new(),
            interrupted: false,
            claude_session: None,
        }
    }

    /// The bridge session this translator serves.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Whether a permission request waits for a person.
    pub fn is_waiting(&self) -> bool {
        !self.pending.is_empty()
    }

    /// One frame read from the CLI's stdout.
    pub fn frame(&mut self, frame: &Value, groups: &mut ToolGroups) -> Inbound {
        let mut inbound = Inbound::default();
        match frame["type"].as_str().unwrap_or_default() {
            "assistant" if frame["parent_tool_use_id"].is_null() => self.assistant(frame, groups, &mut inbound.updates),
            "user" if frame["parent_tool_use_id"].is_null() => tool_results(frame, groups, &mut inbound.updates),
            "result" => self.result(frame, groups, &mut inbound.updates),
            "control_request" => self.control_request(frame, groups, &mut inbound),
            "control_cancel_request" => {
                let request_id = frame["request_id"].as_str().unwrap_or_default();
                if let Some(key) = self.pending.iter().find(|(_, p)| p.request_id == request_id).map(|(k, _)| k.clone()) {
                    tracing::info!(approval_key = %key, "Claude Code withdrew its permission request");
                    self.pending.remove(&key);
                    inbound.updates.push(SessionUpdate::TimedOut { approval_key: key });
                }
            }
            "control_response" => {
                let response = &frame["response"];
                let request_id = response["request_id"].as_str().unwrap_or_default();
                if response["subtype"] == "error" {
                    tracing::warn!(%request_id, error = %response["error"], "Claude Code refused a control request");
                }
                inbound.proves = wire::ping_count(request_id);
            }
            "system" if frame["subtype"] == "init" => {
                self.claude_session = frame["session_id"].as_str().map(str::to_owned);
                tracing::info!(claude_session = ?self.claude_session, version = %frame["claude_code_version"], "Claude Code is ready");
            }
            other => tracing::trace!(frame_type = %other, "ignoring a frame"),
        }
        inbound
    }

    /// One bridge command (the outbox's `command_id`) as stdin frames.
    pub fn command(&mut self, command: &Command, command_id: &str, written: u64) -> Outbound {
        match command {
            Command::Message { content, .. } => {
                let text = content.iter().map(|c| c.text.as_str()).collect::<Vec<_>>().join("\n");
                let uuid = super::transcript::message_uuid(&self.session_id, command_id);
                Outbound { frames: vec![wire::user_message(&text, &uuid)], not_waiting: false }
            }
            Command::Cancel { .. } => {
                self.interrupted = true;
                Outbound { frames: vec![wire::interrupt(&format!("bridge_interrupt_{written}"))], not_waiting: false }
            }
            Command::Approval { approval_key, reply, .. } => match self.pending.remove(approval_key) {
                Some(pending) => {
                    let response = self.response(&pending, reply);
                    Outbound { frames: vec![wire::success(&pending.request_id, response)], not_waiting: false }
                }
                None => {
                    // The process that asked is gone (restart, crash, idle close) or
                    // withdrew the request: nothing can take this reply any more.
                    tracing::warn!(%approval_key, "no Claude Code request waits for this reply; it is not delivered");
                    Outbound { frames: Vec::new(), not_waiting: true }
                }
            },
        }
    }

    /// The `can_use_tool` answer for `reply`.
    fn response(&self, pending: &Pending, reply: &Reply) -> Value {
        match reply {
            Reply::Answers { answers } => {
                let mut input = pending.input.as_object().cloned().unwrap_or_default();
                input.insert("answers".into(), serde_json::to_value(answers).unwrap_or_default());
                wire::allow(Value::Object(input))
            }
            Reply::Decisions { decisions, user_edit_content } => {
                if decisions.len() != 1 {
                    tracing::warn!(count = decisions.len(), "a Claude Code request has one action; using the first decision");
                }
                match decisions.first() {
                    // Approve-for-session is never offered here (the core accepts only
                    // offered decisions); it would mean a plain allow.
                    Some(Decision::Approve | Decision::ApproveForSession) => wire::allow(pending.input.clone()),
                    Some(Decision::Edit { edited_action }) => wire::allow(Value::Object(edited_action.args.clone())),
                    Some(Decision::Respond { message }) => wire::deny(message),
                    Some(Decision::Reject { message }) => {
                        let why = message.as_deref().or(user_edit_content.as_deref()).filter(|m| !m.trim().is_empty());
                        wire::deny(why.unwrap_or(&self.deny_message))
                    }
                    None => wire::deny(&self.deny_message),
                }
            }
        }
    }

    fn assistant(&self, frame: &Value, groups: &mut ToolGroups, updates: &mut Vec<SessionUpdate>) {
        for block in frame["message"]["content"].as_array().into_iter().flatten() {
            match block["type"].as_str() {
                Some("text") => {
                    let text = block["text"].as_str().unwrap_or_default();
                    if !text.trim().is_empty() {
                        updates.push(SessionUpdate::Text { text: text.to_owned(), is_final: false, block: None });
                    }
                }
                // A question is shown as a question, not as tool work.
                Some("tool_use") if block["name"] != QUESTION_TOOL => {
                    let (id, name) = (block["id"].as_str().unwrap_or_default(), block["name"].as_str().unwrap_or("tool"));
                    updates.push(groups.started(id, name));
                }
                _ => {}
            }
        }
    }

    fn result(&mut self, frame: &Value, groups: &mut ToolGroups, updates: &mut Vec<SessionUpdate>) {
        updates.extend(groups.close());
        let interrupted = std::mem::take(&mut self.interrupted);
        if frame["is_error"] == true && !interrupted {
            updates.push(SessionUpdate::TurnFailed { message: error_text(frame) });
        } else {
            updates.push(SessionUpdate::TurnEnded);
        }
    }

    fn control_request(&mut self, frame: &Value, groups: &mut ToolGroups, inbound: &mut Inbound) {
        let request_id = frame["request_id"].as_str().unwrap_or_default();
        let request = &frame["request"];
        let subtype = request["subtype"].as_str().unwrap_or_default();
        if subtype != "can_use_tool" {
            tracing::warn!(%request_id, %subtype, "refusing a control request the bridge does not serve");
            inbound.replies.push(wire::error(request_id, &format!("hitl-bridge does not serve {subtype} requests")));
            return;
        }
        let tool_name = request["tool_name"].as_str().unwrap_or_default();
        let tool_use_id = request["tool_use_id"].as_str().filter(|id| !id.is_empty());
        let approval_key = format!("{}_{}", self.session_id, tool_use_id.unwrap_or(request_id));
        let input = if request["input"].is_object() { request["input"].clone() } else { Value::Object(Map::new()) };
        let description = ["description", "title", "decision_reason"].iter().find_map(|k| request[*k].as_str()).map(str::to_owned);
        let is_question = tool_name == QUESTION_TOOL;
        let action = ActionRequest { name: tool_name.to_owned(), args: input.clone(), description, tool_use_id: tool_use_id.map(str::to_owned) };
        let allowed = if is_question { None } else { Some(APPROVAL_DECISIONS.iter().map(|d| d.to_string()).collect()) };
        let review = ReviewConfig { action_name: Some(tool_name.to_owned()), allowed_decisions: allowed, ..ReviewConfig::default() };
        match RequestBuilder::start(&approval_key, vec![action], vec![review], None).finish(self.defaults) {
            Ok(request) => {
                if is_question {
                    inbound.updates.extend(groups.close());
                }
                self.pending.insert(approval_key, Pending { request_id: request_id.to_owned(), input });
                inbound.updates.push(SessionUpdate::Request(request));
            }
            Err(e) => {
                // Claude would wait forever: tell it the request could not be shown.
                let reason = e.to_string();
                inbound.replies.push(wire::success(request_id, wire::deny(&format!("The request could not be shown to the user: {reason}"))));
                inbound.updates.push(SessionUpdate::InvalidRequest { approval_key, reason });
            }
        }
    }
}

/// Tool results in a `user` frame finish their tools in the open group.
fn tool_results(frame: &Value, groups: &mut ToolGroups, updates: &mut Vec<SessionUpdate>) {
    for block in frame["message"]["content"].as_array().into_iter().flatten() {
        if block["type"] == "tool_result" {
            let id = block["tool_use_id"].as_str().unwrap_or_default();
            updates.extend(groups.finished(id, block["is_error"] == true));
        }
    }
}

/// What a failed `result` says, as the SDK picks it: `errors`, else `result`, else
/// the subtype.
fn error_text(frame: &Value) -> String {
    let errors: Vec<&str> = frame["errors"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    if !errors.is_empty() {
        return errors.join("; ");
    }
    if let Some(result) = frame["result"].as_str().filter(|r| !r.trim().is_empty()) {
        return result.trim().to_owned();
    }
    frame["subtype"].as_str().unwrap_or("unknown error").to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::RequestKind;
    use crate::protocol::{Answers, EditedAction};
    use serde_json::json;

    const S: &str = "s1";

    fn translator() -> Translator {
        Translator::new(S, TimeoutDefaults::default(), "rejected")
    }

    fn can_use_tool(request_id: &str, tool: &str, input: Value, tool_use_id: &str) -> Value {
        json!({"type":"control_request","request_id":request_id,"request":{"subtype":"can_use_tool","tool_name":tool,
            "display_name":tool,"input":input,"description":"write","tool_use_id":tool_use_id}})
    }

    fn approval(key: &str, reply: Reply) -> Command {
        Command::Approval { session_id: S.into(), approval_key: key.into(), reply }
    }

    fn decide(decision: Decision) -> Reply {
        Reply::Decisions { decisions: vec![decision], user_edit_content: None }
    }

    /// Asks `Bash` under request `r1` and answers it with `reply`; the response body.
    fn answer_bash(reply: Reply) -> Value {
        let mut t = translator();
        t.frame(&can_use_tool("r1", "Bash", json!({"command":"rm x","description":"write"}), "toolu_1"), &mut ToolGroups::default());
        let out = t.command(&approval("s1_toolu_1", reply), "1-0", 1);
        assert!(!out.not_waiting);
        let [frame] = out.frames.as_slice() else { panic!("{out:?}") };
        assert_eq!(frame["type"], "control_response");
        assert_eq!(frame["response"]["subtype"], "success");
        assert_eq!(frame["response"]["request_id"], "r1");
        frame["response"]["response"].clone()
    }

    #[test]
    fn a_permission_request_is_an_approval_keyed_by_its_tool_use() {
        let mut t = translator();
        let inbound = t.frame(&can_use_tool("r1", "Bash", json!({"command":"rm x"}), "toolu_1"), &mut ToolGroups::default());
        let [SessionUpdate::Request(request)] = inbound.updates.as_slice() else { panic!("{inbound:?}") };
        assert_eq!(request.approval_key, "s1_toolu_1");
        let RequestKind::Approval { actions } = &request.kind else { panic!("{request:?}") };
        assert_eq!(actions[0].name, "Bash");
        assert_eq!(actions[0].args, json!({"command":"rm x"}));
        assert_eq!(actions[0].description.as_deref(), Some("write"));
        assert_eq!(actions[0].tool_use_id.as_deref(), Some("toolu_1"));
        use crate::protocol::DecisionType::*;
        assert_eq!(actions[0].allowed, vec![Approve, Edit, Reject, Respond]);
        assert_eq!(request.timeout_secs, 300);
    }

    #[test]
    fn decisions_become_allow_or_deny() {
        assert_eq!(answer_bash(decide(Decision::Approve)), json!({"behavior":"allow","updatedInput":{"command":"rm x","description":"write"}}));
        let edited = EditedAction { name: "Bash".into(), args: json!({"command":"ls"}).as_object().unwrap().clone() };
        assert_eq!(answer_bash(decide(Decision::Edit { edited_action: edited })), json!({"behavior":"allow","updatedInput":{"command":"ls"}}));
        assert_eq!(answer_bash(decide(Decision::Reject { message: None })), json!({"behavior":"deny","message":"rejected"}));
        assert_eq!(answer_bash(decide(Decision::Reject { message: Some("too risky".into()) })), json!({"behavior":"deny","message":"too risky"}));
        assert_eq!(answer_bash(decide(Decision::Respond { message: "use git rm".into() })), json!({"behavior":"deny","message":"use git rm"}));
        let commented = Reply::Decisions { decisions: vec![Decision::Reject { message: None }], user_edit_content: Some("not today".into()) };
        assert_eq!(answer_bash(commented), json!({"behavior":"deny","message":"not today"}));
    }

    #[test]
    fn ask_user_question_is_a_question_answered_in_updated_input() {
        let mut t = translator();
        let mut groups = ToolGroups::default();
        groups.started("toolu_0", "Bash");
        let input = json!({"questions":[{"question":"Which colours?","header":"Colours","options":[
            {"label":"Red","description":"warm"},{"label":"Blue","description":"cold"}],"multiSelect":true}]});
        let inbound = t.frame(&can_use_tool("r9", QUESTION_TOOL, input.clone(), "toolu_2"), &mut groups);
        // The open group closes before the question (seed 000).
        let [SessionUpdate::ToolGroup(group), SessionUpdate::Request(request)] = inbound.updates.as_slice() else { panic!("{inbound:?}") };
        assert!(group.finished);
        let RequestKind::Questions { questions, .. } = &request.kind else { panic!("{request:?}") };
        assert!(questions[0].multi_select);
        assert_eq!(request.timeout_secs, 600);
        let answers = Answers(vec![("Which colours?".into(), "Red, Blue".into())]);
        let out = t.command(&approval("s1_toolu_2", Reply::Answers { answers }), "1-0", 1);
        let mut expected = input;
        expected["answers"] = json!({"Which colours?":"Red, Blue"});
        assert_eq!(out.frames, vec![wire::success("r9", json!({"behavior":"allow","updatedInput":expected}))]);
    }

    #[test]
    fn a_reply_nobody_waits_for_is_not_delivered_and_writes_nothing() {
        let mut t = translator();
        let out = t.command(&approval("s1_toolu_7", decide(Decision::Approve)), "1-0", 3);
        assert_eq!(out, Outbound { frames: Vec::new(), not_waiting: true });
    }

    #[test]
    fn a_withdrawn_request_times_out_and_cannot_be_answered() {
        let mut t = translator();
        t.frame(&can_use_tool("r1", "Bash", json!({}), "toolu_1"), &mut ToolGroups::default());
        let inbound = t.frame(&json!({"type":"control_cancel_request","request_id":"r1"}), &mut ToolGroups::default());
        assert_eq!(inbound.updates, vec![SessionUpdate::TimedOut { approval_key: "s1_toolu_1".into() }]);
        assert!(t.command(&approval("s1_toolu_1", decide(Decision::Approve)), "1-0", 1).not_waiting);
    }

    #[test]
    fn bad_questions_are_reported_and_denied_so_claude_does_not_wait() {
        let mut t = translator();
        let inbound = t.frame(&can_use_tool("r1", QUESTION_TOOL, json!({"questions":"nope"}), "toolu_1"), &mut ToolGroups::default());
        assert!(matches!(inbound.updates.as_slice(), [SessionUpdate::InvalidRequest { approval_key, .. }] if approval_key == "s1_toolu_1"));
        assert_eq!(inbound.replies[0]["response"]["response"]["behavior"], "deny");
    }

    #[test]
    fn other_control_requests_are_refused() {
        let mut t = translator();
        let inbound = t.frame(&json!({"type":"control_request","request_id":"h1","request":{"subtype":"hook_callback"}}), &mut ToolGroups::default());
        assert!(inbound.updates.is_empty());
        assert_eq!(inbound.replies, vec![wire::error("h1", "hitl-bridge does not serve hook_callback requests")]);
    }

    #[test]
    fn text_tools_and_the_result_of_a_turn() {
        let mut t = translator();
        let mut groups = ToolGroups::default();
        let assistant = json!({"type":"assistant","parent_tool_use_id":null,"message":{"content":[
            {"type":"text","text":"I will run it"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]}});
        let updates = t.frame(&assistant, &mut groups).updates;
        assert_eq!(updates[0], SessionUpdate::Text { text: "I will run it".into(), is_final: false, block: None });
        assert!(matches!(&updates[1], SessionUpdate::ToolGroup(g) if g.line() == "⚙ tools: Bash …"));
        let result = json!({"type":"user","parent_tool_use_id":null,"message":{"content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":"no"}]}});
        assert!(matches!(t.frame(&result, &mut groups).updates.as_slice(), [SessionUpdate::ToolGroup(g)] if g.line() == "⚙ tools: Bash ✗"));
        // A subagent's frames stay inside its tool.
        let nested = json!({"type":"assistant","parent_tool_use_id":"toolu_1","message":{"content":[{"type":"text","text":"inner"}]}});
        assert!(t.frame(&nested, &mut groups).updates.is_empty());
        let end = t.frame(&json!({"type":"result","subtype":"success","is_error":false,"result":"done"}), &mut groups).updates;
        assert!(matches!(end.as_slice(), [SessionUpdate::ToolGroup(g), SessionUpdate::TurnEnded] if g.finished));
    }

    #[test]
    fn an_error_result_fails_the_turn_unless_the_bridge_interrupted_it() {
        let mut t = translator();
        let failed = json!({"type":"result","subtype":"error_max_turns","is_error":true,"errors":["max turns reached"]});
        assert_eq!(t.frame(&failed, &mut ToolGroups::default()).updates, vec![SessionUpdate::TurnFailed { message: "max turns reached".into() }]);
        let api = json!({"type":"result","subtype":"success","is_error":true,"result":"API Error: 500"});
        assert_eq!(t.frame(&api, &mut ToolGroups::default()).updates, vec![SessionUpdate::TurnFailed { message: "API Error: 500".into() }]);
        let out = t.command(&Command::Cancel { session_id: S.into() }, "1-0", 4);
        assert_eq!(out.frames, vec![wire::interrupt("bridge_interrupt_4")]);
        assert_eq!(t.frame(&failed, &mut ToolGroups::default()).updates, vec![SessionUpdate::TurnEnded]);
        // Only that one turn.
        assert!(matches!(t.frame(&failed, &mut ToolGroups::default()).updates.as_slice(), [SessionUpdate::TurnFailed { .. }]));
    }

    #[test]
    fn a_message_is_one_user_frame_and_ping_answers_prove_reads() {
        let mut t = translator();
        let out = t.command(&Command::message(S, "xin chào", None), "1-0", 1);
        assert_eq!(out.frames, vec![wire::user_message("xin chào", &super::super::transcript::message_uuid(S, "1-0"))]);
        let pong = json!({"type":"control_response","response":{"subtype":"success","request_id":"bridge_ping_2","response":{"mcpServers":[]}}});
        assert_eq!(t.frame(&pong, &mut ToolGroups::default()).proves, Some(2));
    }
}
