//! What an ACP agent streams (`session/update`) as the chat's [`SessionUpdate`]s, and
//! its `session/request_permission` and `elicitation/create` as requests. Pure: no IO, so every mapping is
//! unit-tested.
//!
//! - `agent_message_chunk` text grows one message: everything so far as
//!   [`SessionUpdate::TextProgress`] about once a second, and the whole text at the
//!   next tool call, plan, permission request or end of turn. Thoughts are dropped.
//! - `tool_call` / `tool_call_update` fold into one tool-group line per turn, each tool
//!   shown by its title and its status.
//! - `plan` is shown as a checklist.
//! - A permission request is an approval of one action: named by the tool's kind
//!   (`execute`, `edit`, …: what policies match), with its raw input as arguments, its
//!   title, what the agent says about it and, for an edit, the diff of each file, as
//!   the description.
//! - A form elicitation is a question card, one question per field ([`elicitation`]).
//!
//! The translator outlives processes (it is the session's
//! [`Transport::State`](super::super::session::Transport::State)).

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::super::SessionUpdate;
use super::super::assembler::{CappedText, PROGRESS_INTERVAL_MS};
use super::super::tool_groups::ToolGroups;
use super::elicitation;
use super::open::Asked;
use super::permissions::{self, PermissionOption};
use crate::interaction::{Action, Request, RequestBuilder, RequestKind, TimeoutDefaults};

/// Tool calls remembered per turn, to show a permission's details; a runaway turn
/// cannot grow this past the bound.
const MAX_TOOL_CALLS: usize = 512;

/// Lines of a file's diff shown on a card; the card's own limits cut further.
const MAX_DIFF_LINES: usize = 200;

/// What the bridge knows of one tool call: the latest of each field the agent sent.
#[derive(Debug, Clone, Default)]
struct ToolCallSeen {
    title: String,
    kind: String,
    raw_input: Option<Value>,
    content: Vec<Value>,
}

impl ToolCallSeen {
    /// Takes the fields `update` carries (a `ToolCall` or a `ToolCallUpdate`).
    fn merge(&mut self, update: &Value) {
        if let Some(title) = non_empty(update, "title") {
            title.clone_into(&mut self.title);
        }
        if let Some(kind) = non_empty(update, "kind") {
            kind.clone_into(&mut self.kind);
        }
        if let Some(raw) = update.get("rawInput").filter(|v| !v.is_null() && v.as_object().is_none_or(|o| !o.is_empty())) {
            self.raw_input = Some(raw.clone());
        }
        if let Some(content) = update.get("content").and_then(Value::as_array).filter(|c| !c.is_empty()) {
            self.content.clone_from(content);
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Stream {
    block: u64,
    last_ms: i64,
    shown: bool,
}

/// A request of the agent's made into a card, and what it asked (to answer it with).
#[derive(Debug)]
pub struct Shown {
    pub updates: Vec<SessionUpdate>,
    pub approval_key: String,
    pub timeout_secs: u64,
    pub asked: Asked,
}

/// One session's translation state, kept across agent processes.
#[derive(Debug, Default)]
pub struct Translator {
    defaults: TimeoutDefaults,
    text: CappedText,
    /// The text being shown as it grows: its stream id, when it was last shown, and
    /// whether it was shown at all yet.
    streaming: Option<Stream>,
    last_stream: u64,
    groups: ToolGroups,
    tool_calls: HashMap<String, ToolCallSeen>,
    /// Permission requests seen, so an approval key is never reused in the session.
    asked: u64,
}

impl Translator {
    pub fn new(defaults: TimeoutDefaults) -> Self {
        Self { defaults, ..Self::default() }
    }

    /// One `session/update` notification's `update`, at `now_ms`.
    pub fn update(&mut self, update: &Value, now_ms: i64) -> Vec<SessionUpdate> {
        match str_at(update, "sessionUpdate") {
            "agent_message_chunk" => {
                match update.pointer("/content/type").and_then(Value::as_str) {
                    Some("text") => self.text.push(update.pointer("/content/text").and_then(Value::as_str).unwrap_or("")),
                    other => tracing::debug!(content = ?other, "not showing an agent message's non-text content"),
                }
                self.progress(now_ms).into_iter().collect()
            }
            "tool_call" | "tool_call_update" => {
                let mut out = Vec::new();
                let id = str_at(update, "toolCallId").to_owned();
                if str_at(update, "sessionUpdate") == "tool_call" {
                    out.extend(self.flush_text(false));
                }
                if !self.tool_calls.contains_key(&id) && self.tool_calls.len() >= MAX_TOOL_CALLS {
                    return out;
                }
                let call = self.tool_calls.entry(id.clone()).or_default();
                call.merge(update);
                let title = if call.title.is_empty() { "tool".to_owned() } else { call.title.clone() };
                match update.get("status").and_then(Value::as_str) {
                    Some("completed") => {
                        self.groups.started(&id, &title);
                        out.extend(self.groups.finished(&id, false));
                    }
                    Some("failed") => {
                        self.groups.started(&id, &title);
                        out.extend(self.groups.finished(&id, true));
                    }
                    _ if str_at(update, "sessionUpdate") == "tool_call" => out.push(self.groups.started(&id, &title)),
                    _ => {}
                }
                out
            }
            "plan" => {
                let mut out = self.flush_text(false);
                let entries = update.get("entries").and_then(Value::as_array).cloned().unwrap_or_default();
                if !entries.is_empty() {
                    out.push(SessionUpdate::Text { text: checklist(&entries), is_final: false, block: None });
                }
                out
            }
            other => {
                // Thoughts, replayed user messages, commands, modes: not the chat's.
                tracing::debug!(update = other, "not showing an ACP session update");
                Vec::new()
            }
        }
    }

    /// A `session/request_permission`'s params as an approval.
    pub fn permission(&mut self, params: &Value) -> Result<Shown, String> {
        let options: Vec<PermissionOption> =
            serde_json::from_value(params.get("options").cloned().unwrap_or(Value::Null)).map_err(|e| format!("its options cannot be read: {e}"))?;
        let allowed = permissions::allowed(&options);
        if allowed.is_empty() {
            return Err("it offers no option to allow or reject".into());
        }
        let tool_call = params.get("toolCall").cloned().unwrap_or(Value::Null);
        let id = str_at(&tool_call, "toolCallId").to_owned();
        let mut call = self.tool_calls.get(&id).cloned().unwrap_or_default();
        call.merge(&tool_call);
        let mut updates = self.flush_text(false);
        self.asked += 1;
        // The tool call id names it in the agent's history; the count keeps a second
        // request for the same call (or a call without an id) apart.
        let approval_key = if id.is_empty() { format!("permission-{}", self.asked) } else { format!("{id}#{}", self.asked) };
        let args = match call.raw_input.clone() {
            Some(Value::Object(args)) => args,
            Some(other) => Map::from_iter([("input".to_owned(), other)]),
            None => Map::new(),
        };
        let mut description = if call.title.is_empty() { None } else { Some(call.title.clone()) };
        // What the agent says about the call (Gemini CLI: the directory it runs in and
        // why), then each file's diff.
        let details: Vec<String> = call
            .content
            .iter()
            .filter_map(|c| match str_at(c, "type") {
                "diff" => Some(diff_block(c)),
                "content" => c.pointer("/content/text").and_then(Value::as_str).filter(|t| !t.trim().is_empty()).map(str::to_owned),
                _ => None,
            })
            .collect();
        if !details.is_empty() {
            let mut text = description.take().unwrap_or_default();
            for diff in details {
                if !text.is_empty() {
                    text.push_str("\n\n");
                }
                text.push_str(&diff);
            }
            description = Some(text);
        }
        let remembers = options.iter().filter(|o| o.kind.ends_with("_always")).map(|o| format!("“{}”", o.name)).collect::<Vec<_>>();
        let context = (!remembers.is_empty()).then(|| format!("{} is remembered by the agent for this session, not by hitl-bridge.", remembers.join(" and ")));
        let name = if call.kind.is_empty() { "other".to_owned() } else { call.kind.clone() };
        let timeout_secs = self.defaults.approval_secs;
        updates.push(SessionUpdate::Request(Request {
            approval_key: approval_key.clone(),
            kind: RequestKind::Approval {
                actions: vec![Action {
                    name,
                    args: Value::Object(args),
                    description,
                    tool_use_id: (!id.is_empty()).then_some(id),
                    allowed,
                    labels: permissions::labels(&options),
                }],
            },
            timeout_secs,
            context,
        }));
        Ok(Shown { updates, approval_key, timeout_secs, asked: Asked::Permission(options) })
    }

    /// An `elicitation/create`'s params, received at `now_ms`, as a question card; its
    /// `message` shows above the questions.
    pub fn elicitation(&mut self, params: &Value, now_ms: i64) -> Result<Shown, String> {
        let (form, action) = elicitation::read(params)?;
        let mut updates = self.flush_text(false);
        self.asked += 1;
        // A form has no id of its own that outlives the process; the time keeps a key
        // apart from the forms of an earlier bridge in the same session.
        let approval_key = format!("form-{now_ms}-{}", self.asked);
        let mut request = RequestBuilder::start(&approval_key, vec![action], Vec::new(), None).finish(self.defaults).map_err(|e| e.to_string())?;
        request.context = params.get("message").and_then(Value::as_str).filter(|m| !m.trim().is_empty()).map(str::to_owned);
        let timeout_secs = request.timeout_secs;
        updates.push(SessionUpdate::Request(request));
        Ok(Shown { updates, approval_key, timeout_secs, asked: Asked::Form(form) })
    }

    /// The prompt's answer: the turn is over, with its `stopReason` or an error.
    pub fn turn_finished(&mut self, outcome: Result<&Value, String>) -> Vec<SessionUpdate> {
        let mut out = self.end_turn(true);
        out.push(match outcome {
            Ok(result) => match str_at(result, "stopReason") {
                "max_tokens" => SessionUpdate::TurnFailed { message: "the agent stopped: its reply reached the token limit".into() },
                "max_turn_requests" => SessionUpdate::TurnFailed { message: "the agent stopped: the turn reached its limit of model requests".into() },
                "refusal" => SessionUpdate::TurnFailed { message: "the agent refused to go on with this turn".into() },
                // `end_turn`, `cancelled` (the person asked), anything newer.
                _ => SessionUpdate::TurnEnded,
            },
            Err(message) => SessionUpdate::TurnFailed { message: format!("the agent failed the turn: {message}") },
        });
        out
    }

    /// The process is gone (`how`: its exit status) with `lost` requests that can no
    /// longer be answered. Says so in the chat when a turn or a request was open.
    pub fn process_lost(&mut self, how: &str, turn_open: bool, lost: Vec<SessionUpdate>) -> Vec<SessionUpdate> {
        let mut out = self.end_turn(false);
        let count = lost.len();
        out.extend(lost);
        if turn_open || count > 0 {
            let requests = match count {
                0 => String::new(),
                1 => "; its open request can no longer be answered".into(),
                n => format!("; its {n} open requests can no longer be answered"),
            };
            out.push(SessionUpdate::TurnFailed { message: format!("the agent stopped unexpectedly ({how}){requests}. Your next message starts it again.") });
        }
        out
    }

    fn progress(&mut self, now_ms: i64) -> Option<SessionUpdate> {
        if self.text.is_empty() {
            return None;
        }
        let Some(stream) = self.streaming.as_mut() else {
            // Ids grow with the clock, so a translator made again never reuses one a
            // chat may still be editing. The first piece waits an interval too: a
            // short reply is shown once, whole.
            self.last_stream = u64::try_from(now_ms).unwrap_or(0).max(self.last_stream + 1);
            self.streaming = Some(Stream { block: self.last_stream, last_ms: now_ms, shown: false });
            return None;
        };
        if now_ms - stream.last_ms < PROGRESS_INTERVAL_MS {
            return None;
        }
        stream.last_ms = now_ms;
        stream.shown = true;
        Some(SessionUpdate::TextProgress { block: stream.block, text_so_far: self.text.so_far() })
    }

    fn flush_text(&mut self, is_final: bool) -> Vec<SessionUpdate> {
        // A block whose progress was shown is always completed, so its message is not
        // left looking unfinished.
        let block = self.streaming.take().filter(|s| s.shown).map(|s| s.block);
        let text = self.text.take();
        if text.trim().is_empty() && block.is_none() {
            return Vec::new();
        }
        vec![SessionUpdate::Text { text, is_final, block }]
    }

    /// The turn (or what was shown of it) ended: its text completed, its tools' line
    /// closed (a tool still running then never will: failed).
    fn end_turn(&mut self, is_final: bool) -> Vec<SessionUpdate> {
        let mut out = self.flush_text(is_final);
        out.extend(self.groups.close_abandoning_running());
        self.tool_calls.clear();
        out
    }
}

/// A plan's entries as a checklist, one line each.
fn checklist(entries: &[Value]) -> String {
    let mut text = String::from("Plan:");
    for entry in entries {
        let mark = match str_at(entry, "status") {
            "completed" => "☑",
            "in_progress" => "◐",
            _ => "☐",
        };
        text.push_str(&format!("\n{mark} {}", str_at(entry, "content")));
    }
    text
}

/// A `diff` tool call content (`path`, `oldText`, `newText`) as a fenced unified-style
/// block: the lines both share at the start and the end are left out, the rest shown
/// as removed then added.
fn diff_block(diff: &Value) -> String {
    let path = str_at(diff, "path");
    let old = diff.get("oldText").and_then(Value::as_str);
    let new = str_at(diff, "newText");
    let old_lines: Vec<&str> = old.map(|o| o.lines().collect()).unwrap_or_default();
    let new_lines: Vec<&str> = new.lines().collect();
    let head = old_lines.iter().zip(&new_lines).take_while(|(a, b)| a == b).count();
    let tail = old_lines[head..].iter().rev().zip(new_lines[head..].iter().rev()).take_while(|(a, b)| a == b).count();
    let removed = &old_lines[head..old_lines.len() - tail];
    let added = &new_lines[head..new_lines.len() - tail];
    let mut lines = vec![match old {
        Some(_) => format!("--- {path}\n+++ {path}"),
        None => format!("--- /dev/null\n+++ {path}"),
    }];
    lines.push(format!("@@ -{},{} +{},{} @@", head + 1, removed.len(), head + 1, added.len()));
    let body: Vec<String> = removed.iter().map(|l| format!("-{l}")).chain(added.iter().map(|l| format!("+{l}"))).collect();
    let shown = body.len().min(MAX_DIFF_LINES);
    lines.extend(body[..shown].iter().cloned());
    if body.len() > shown {
        lines.push(format!("… {} more lines", body.len() - shown));
    }
    format!("```diff\n{}\n```", lines.join("\n"))
}

fn str_at<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

fn non_empty<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str).filter(|s| !s.trim().is_empty())
}

/// The `session/update` notification's `update`, when it is for `session_id`.
pub fn update_of<'a>(params: &'a Value, session_id: &str) -> Option<&'a Value> {
    (str_at(params, "sessionId") == session_id).then(|| params.get("update")).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::DecisionType;
    use serde_json::json;

    fn translator() -> Translator {
        Translator::new(TimeoutDefaults::default())
    }

    fn chunk(text: &str) -> Value {
        json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":text}})
    }

    /// A permission request as claude-code-acp 0.16.2 sent it in a recorded run.
    fn bash_permission() -> Value {
        json!({"options":[{"kind":"allow_always","name":"Always Allow","optionId":"allow_always"},{"kind":"allow_once","name":"Allow","optionId":"allow"},
            {"kind":"reject_once","name":"Reject","optionId":"reject"}],
            "sessionId":"s1","toolCall":{"toolCallId":"tu1","rawInput":{"command":"touch made.txt","description":"make a file"},"title":"`touch made.txt`"}})
    }

    #[test]
    fn text_grows_in_one_message_and_completes() {
        let mut t = translator();
        assert!(t.update(&chunk("I will "), 1_000).is_empty(), "the first piece waits an interval");
        assert!(t.update(&chunk("run "), 1_500).is_empty());
        let out = t.update(&chunk("it."), 2_000);
        assert_eq!(out, vec![SessionUpdate::TextProgress { block: 1_000, text_so_far: "I will run it.".into() }]);
        let out =
            t.update(&json!({"sessionUpdate":"tool_call","toolCallId":"tu1","title":"Terminal","kind":"execute","status":"pending","rawInput":{}}), 2_100);
        assert_eq!(out[0], SessionUpdate::Text { text: "I will run it.".into(), is_final: false, block: Some(1_000) });
        assert!(matches!(&out[1], SessionUpdate::ToolGroup(g) if g.line() == "⚙ tools: Terminal …"));
        t.update(&chunk("done"), 3_000);
        let end = t.turn_finished(Ok(&json!({"stopReason":"end_turn"})));
        assert_eq!(end[0], SessionUpdate::Text { text: "done".into(), is_final: true, block: None });
        assert!(matches!(&end[1], SessionUpdate::ToolGroup(g) if g.finished && g.line() == "⚙ tools: Terminal ✗"));
        assert_eq!(end[2], SessionUpdate::TurnEnded);
    }

    #[test]
    fn tool_calls_show_their_title_and_status() {
        let mut t = translator();
        t.update(&json!({"sessionUpdate":"tool_call","toolCallId":"tu1","title":"Terminal","kind":"execute","status":"pending"}), 0);
        let out = t
            .update(&json!({"sessionUpdate":"tool_call","toolCallId":"tu1","title":"`ls`","kind":"execute","status":"pending","rawInput":{"command":"ls"}}), 0);
        assert!(matches!(&out[..], [SessionUpdate::ToolGroup(g)] if g.line() == "⚙ tools: Terminal …"), "{out:?}");
        assert!(t.update(&json!({"sessionUpdate":"tool_call_update","toolCallId":"tu1"}), 0).is_empty());
        let out = t.update(&json!({"sessionUpdate":"tool_call_update","toolCallId":"tu1","status":"completed","rawOutput":""}), 0);
        assert!(matches!(&out[..], [SessionUpdate::ToolGroup(g)] if g.line() == "⚙ tools: Terminal ✓"), "{out:?}");
        let out = t.update(&json!({"sessionUpdate":"tool_call","toolCallId":"tu2","title":"Read a.txt","kind":"read","status":"failed"}), 0);
        assert!(matches!(&out[..], [SessionUpdate::ToolGroup(g)] if g.line().ends_with("Read a.txt ✗")), "{out:?}");
    }

    #[test]
    fn a_plan_is_a_checklist() {
        let mut t = translator();
        let out = t.update(
            &json!({"sessionUpdate":"plan","entries":[{"content":"Read the code","priority":"high","status":"completed"},
                {"content":"Fix the bug","priority":"high","status":"in_progress"},{"content":"Run the tests","priority":"medium","status":"pending"}]}),
            0,
        );
        assert_eq!(out, vec![SessionUpdate::Text { text: "Plan:\n☑ Read the code\n◐ Fix the bug\n☐ Run the tests".into(), is_final: false, block: None }]);
    }

    #[test]
    fn thoughts_and_replays_are_not_shown() {
        let mut t = translator();
        assert!(t.update(&json!({"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hmm"}}), 0).is_empty());
        assert!(t.update(&json!({"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"hi"}}), 0).is_empty());
        assert!(t.update(&json!({"sessionUpdate":"available_commands_update","availableCommands":[]}), 0).is_empty());
        assert_eq!(t.turn_finished(Ok(&json!({"stopReason":"end_turn"}))), vec![SessionUpdate::TurnEnded]);
    }

    #[test]
    fn a_permission_request_is_an_approval_of_the_tool_call() {
        let mut t = translator();
        t.update(&json!({"sessionUpdate":"tool_call","toolCallId":"tu1","title":"`touch made.txt`","kind":"execute","status":"pending","rawInput":{"command":"touch made.txt"}}), 0);
        let asked = t.permission(&bash_permission()).unwrap();
        assert_eq!(asked.approval_key, "tu1#1");
        let Asked::Permission(options) = &asked.asked else { panic!("{asked:?}") };
        assert_eq!(options.iter().map(|o| o.option_id.as_str()).collect::<Vec<_>>(), ["allow_always", "allow", "reject"]);
        let [SessionUpdate::Request(r)] = &asked.updates[..] else { panic!("{asked:?}") };
        assert_eq!(r.approval_key, "tu1#1");
        assert_eq!(r.timeout_secs, 300);
        assert_eq!(r.context.as_deref(), Some("“Always Allow” is remembered by the agent for this session, not by hitl-bridge."));
        let a = &r.actions()[0];
        assert_eq!(a.name, "execute");
        assert_eq!(a.args, json!({"command":"touch made.txt","description":"make a file"}));
        assert_eq!(a.description.as_deref(), Some("`touch made.txt`"));
        assert_eq!(a.tool_use_id.as_deref(), Some("tu1"));
        assert_eq!(a.allowed, vec![DecisionType::Approve, DecisionType::ApproveForSession, DecisionType::Reject]);
        // Asked again for the same call: a new key.
        assert_eq!(t.permission(&bash_permission()).unwrap().approval_key, "tu1#2");
    }

    /// As Gemini CLI 0.61 asks: no raw input; the command is the title, and a text
    /// block says where it runs and why.
    #[test]
    fn a_permission_without_raw_input_shows_its_title_and_text() {
        let mut t = translator();
        let params = json!({"sessionId":"s1","options":[{"optionId":"proceed_always","name":"Allow for this session","kind":"allow_always"},
            {"optionId":"proceed_once","name":"Allow","kind":"allow_once"},{"optionId":"cancel","name":"Reject","kind":"reject_once"}],
            "toolCall":{"toolCallId":"run_shell_command_1","status":"pending","title":"echo hi > made.txt","kind":"execute","locations":[],
                "content":[{"type":"content","content":{"type":"text","text":"[current working directory /w] (make the file)"}}]}});
        let asked = t.permission(&params).unwrap();
        let [SessionUpdate::Request(r)] = &asked.updates[..] else { panic!() };
        let action = &r.actions()[0];
        assert_eq!(action.args, json!({}));
        assert_eq!(action.description.as_deref(), Some("echo hi > made.txt\n\n[current working directory /w] (make the file)"));
        assert_eq!(action.label_or(crate::protocol::DecisionType::ApproveForSession, "x"), "Allow for this session");
    }

    #[test]
    fn an_edit_shows_its_diff() {
        let mut t = translator();
        let params = json!({"sessionId":"s1","options":[{"kind":"allow_once","name":"Allow","optionId":"allow"},{"kind":"reject_once","name":"Reject","optionId":"reject"}],
            "toolCall":{"toolCallId":"e1","title":"Edit `a.txt`","kind":"edit","rawInput":{"file_path":"/w/a.txt"},
                "content":[{"type":"diff","path":"/w/a.txt","oldText":"one\ntwo\nthree\n","newText":"one\n2\nthree\n"}]}});
        let asked = t.permission(&params).unwrap();
        let [SessionUpdate::Request(r)] = &asked.updates[..] else { panic!() };
        assert_eq!(r.actions()[0].name, "edit");
        assert_eq!(r.actions()[0].description.as_deref(), Some("Edit `a.txt`\n\n```diff\n--- /w/a.txt\n+++ /w/a.txt\n@@ -2,1 +2,1 @@\n-two\n+2\n```"));
        assert_eq!(r.context, None, "nothing is remembered");
        let new_file = diff_block(&json!({"type":"diff","path":"b.txt","oldText":null,"newText":"hi\n"}));
        assert_eq!(new_file, "```diff\n--- /dev/null\n+++ b.txt\n@@ -1,0 +1,1 @@\n+hi\n```");
    }

    #[test]
    fn a_permission_without_a_usable_option_is_refused() {
        let mut t = translator();
        assert!(t.permission(&json!({"sessionId":"s1","toolCall":{"toolCallId":"x"},"options":[]})).is_err());
        assert!(t.permission(&json!({"sessionId":"s1","toolCall":{"toolCallId":"x"},"options":"yes"})).is_err());
    }

    #[test]
    fn how_a_turn_ends() {
        let mut t = translator();
        assert_eq!(t.turn_finished(Ok(&json!({"stopReason":"cancelled"}))), vec![SessionUpdate::TurnEnded]);
        assert_eq!(
            t.turn_finished(Ok(&json!({"stopReason":"max_tokens"}))),
            vec![SessionUpdate::TurnFailed { message: "the agent stopped: its reply reached the token limit".into() }]
        );
        assert_eq!(t.turn_finished(Err("boom".into())), vec![SessionUpdate::TurnFailed { message: "the agent failed the turn: boom".into() }]);
        let lost = t.process_lost("killed by signal 9", true, vec![SessionUpdate::TimedOut { approval_key: "a".into() }]);
        assert_eq!(
            lost.last(),
            Some(&SessionUpdate::TurnFailed {
                message: "the agent stopped unexpectedly (killed by signal 9); its open request can no longer be answered. Your next message starts it again."
                    .into()
            })
        );
        assert!(t.process_lost("exit code 0", false, Vec::new()).is_empty());
    }
}
