//! A paused Agno run, both ways (pure, no IO).
//!
//! In: the run's `tools` (AgentOS's `ToolExecution` JSON, from `RunPaused` or from
//! `GET /agents/{id}/runs/{run_id}`) become at most two bridge requests, its
//! [`PausePart`]s: every tool with `requires_confirmation` waiting for `confirmed`
//! becomes one approval (one action per tool call: approve → `confirmed: true`;
//! reject → `confirmed: false`; respond (the bridge's comment) → `confirmed: false`
//! with the text as `confirmation_note`, which the model reads as the tool's
//! result), and every
//! `ask_user` call with a `user_feedback_schema` becomes one question request (seed 004).
//! Tools the bridge cannot answer (`user_input_schema` fields, external execution)
//! are reported, not dropped.
//!
//! Out: the replies are written into a copy of the same tools, which is the `tools`
//! form field of `POST /agents/{id}/runs/{run_id}/continue`. AgentOS rejects every
//! paused tool the continue leaves unanswered, so it is sent once every part of the
//! pause has its reply.
//!
//! An approval key is `<run_id>:<tool_call_id>[,<tool_call_id>…]`: it names the run
//! and the tool calls the request covers, so a reply finds its run even after a
//! restart, and a request replayed from AgentOS keeps its key.

use serde_json::{Value, json};

use crate::backend::SessionUpdate;
use crate::interaction::{RequestBuilder, TimeoutDefaults, decode_labels};
use crate::protocol::{ActionRequest, Decision, Reply, ReviewConfig};

/// The tool UserFeedbackTools registers (seed 004).
pub const ASK_USER: &str = "ask_user";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartKind {
    /// `requires_confirmation` tools: decisions approve / reject.
    Confirm,
    /// `ask_user` tools: answers become `selected_options`.
    Feedback,
}

/// One bridge request for some of a paused run's tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PausePart {
    pub approval_key: String,
    pub kind: PartKind,
    pub tool_call_ids: Vec<String>,
}

/// What a paused run waits for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pause {
    pub parts: Vec<PausePart>,
    /// `tool_name: why` for each waiting tool the bridge cannot answer.
    pub unsupported: Vec<String>,
}

/// Whether every tool call `approval_key` covers carries an answer in `tools` (a
/// `confirmed` value, `answered`, or a result): the run was continued with a reply for
/// this request, so a reply found unsent after a restart was in fact delivered.
pub fn answered_in(tools: &[Value], approval_key: &str) -> bool {
    let Some((_, calls)) = approval_key.split_once(':') else { return false };
    calls.split(',').all(|call| {
        tools
            .iter()
            .filter(|t| call_id(t) == Some(call))
            .any(|t| t.get("confirmed").is_some_and(|c| !c.is_null()) || is_true(t, "answered") || t.get("result").is_some_and(|r| !r.is_null()))
    })
}

/// The run id an approval key names.
pub fn run_id_of(approval_key: &str) -> Option<&str> {
    approval_key.split_once(':').map(|(run, _)| run).filter(|run| !run.is_empty())
}

fn is_true(tool: &Value, key: &str) -> bool {
    tool.get(key).and_then(Value::as_bool) == Some(true)
}

fn call_id(tool: &Value) -> Option<&str> {
    tool.get("tool_call_id").and_then(Value::as_str)
}

fn name(tool: &Value) -> &str {
    tool.get("tool_name").and_then(Value::as_str).unwrap_or("tool")
}

/// Sorts a paused run's waiting tools into parts.
pub fn pause_of(run_id: &str, tools: &[Value]) -> Pause {
    let (mut confirm, mut feedback, mut unsupported) = (Vec::new(), Vec::new(), Vec::new());
    for tool in tools {
        let waits_for_confirmation = is_true(tool, "requires_confirmation") && tool.get("confirmed").is_none_or(Value::is_null);
        let waits_for_input = is_true(tool, "requires_user_input") && !is_true(tool, "answered");
        let waits_for_execution = is_true(tool, "external_execution_required") && tool.get("result").is_none_or(Value::is_null);
        if !(waits_for_confirmation || waits_for_input || waits_for_execution) {
            continue;
        }
        let Some(id) = call_id(tool) else {
            unsupported.push(format!("{}: no tool_call_id", name(tool)));
            continue;
        };
        if waits_for_confirmation {
            confirm.push(id.to_owned());
        } else if waits_for_input && name(tool) == ASK_USER && tool.get("user_feedback_schema").is_some_and(Value::is_array) {
            feedback.push(id.to_owned());
        } else if waits_for_input {
            unsupported.push(format!("{}: asks for user input fields, which the bridge does not collect", name(tool)));
        } else {
            unsupported.push(format!("{}: must be executed outside the agent, which the bridge cannot do", name(tool)));
        }
    }
    let part = |kind, ids: Vec<String>| PausePart { approval_key: format!("{run_id}:{}", ids.join(",")), kind, tool_call_ids: ids };
    let mut parts = Vec::new();
    if !confirm.is_empty() {
        parts.push(part(PartKind::Confirm, confirm));
    }
    if !feedback.is_empty() {
        parts.push(part(PartKind::Feedback, feedback));
    }
    Pause { parts, unsupported }
}

/// The updates that show a paused run: one request per part, and an invalid request
/// naming the tools the bridge cannot answer.
pub fn pause_updates(run_id: &str, tools: &[Value], defaults: TimeoutDefaults) -> Vec<SessionUpdate> {
    let pause = pause_of(run_id, tools);
    let mut out = Vec::new();
    for part in &pause.parts {
        let mut actions = Vec::new();
        let mut configs = Vec::new();
        for tool in part.tool_call_ids.iter().filter_map(|id| find(tools, id)) {
            let (action_name, args) = match part.kind {
                PartKind::Confirm => (name(tool).to_owned(), tool.get("tool_args").cloned().unwrap_or_else(|| json!({}))),
                PartKind::Feedback => (ASK_USER.to_owned(), json!({ "questions": bridge_questions(tool) })),
            };
            actions.push(ActionRequest { name: action_name, args, description: None, tool_use_id: call_id(tool).map(str::to_owned) });
            // Agno takes a yes or a no per tool call; the no may carry a note, which
            // the model reads as the tool's result: that is a `respond`.
            configs.push(ReviewConfig { allowed_decisions: Some(vec!["approve".into(), "reject".into(), "respond".into()]), ..ReviewConfig::default() });
        }
        let update = match RequestBuilder::start(&part.approval_key, actions, configs, None).finish(defaults) {
            Ok(request) => SessionUpdate::Request(request),
            Err(e) => SessionUpdate::InvalidRequest { approval_key: part.approval_key.clone(), reason: e.to_string() },
        };
        out.push(update);
    }
    if !pause.unsupported.is_empty() {
        out.push(SessionUpdate::InvalidRequest { approval_key: format!("{run_id}:unsupported"), reason: pause.unsupported.join("; ") });
    }
    out
}

fn find<'a>(tools: &'a [Value], id: &str) -> Option<&'a Value> {
    tools.iter().find(|t| call_id(t) == Some(id))
}

/// An `ask_user` tool's `user_feedback_schema` in the bridge's question shape
/// (`multi_select` is one of the spellings it reads).
fn bridge_questions(tool: &Value) -> Vec<Value> {
    let schema = tool.get("user_feedback_schema").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    schema
        .iter()
        .map(|q| {
            let options: Vec<Value> = q
                .get("options")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .map(
                    |o| json!({ "label": o.get("label").cloned().unwrap_or(Value::Null), "description": o.get("description").cloned().unwrap_or(Value::Null) }),
                )
                .collect();
            json!({
                "question": q.get("question").cloned().unwrap_or(Value::Null),
                "header": q.get("header").cloned().unwrap_or(Value::Null),
                "options": options,
                "multi_select": q.get("multi_select").and_then(Value::as_bool).unwrap_or(false),
            })
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    #[error("{expected} decisions were needed, {got} came")]
    DecisionCount { expected: usize, got: usize },
    #[error("Agno cannot run a tool call with edited arguments; approve or reject it")]
    EditNotSupported,
    #[error("answers came for tool calls that need a decision")]
    AnswersForApproval,
    #[error("tool call {0} is not in the paused run")]
    UnknownToolCall(String),
}

/// Writes `reply` for `part` into `tools` (the paused run's tools, sent back whole).
pub fn apply_reply(tools: &mut [Value], part: &PausePart, reply: &Reply) -> Result<(), ReplyError> {
    match (part.kind, reply) {
        (PartKind::Confirm, Reply::Decisions { decisions, user_edit_content }) => {
            if decisions.len() != part.tool_call_ids.len() {
                return Err(ReplyError::DecisionCount { expected: part.tool_call_ids.len(), got: decisions.len() });
            }
            for (id, decision) in part.tool_call_ids.iter().zip(decisions) {
                let tool = find_mut(tools, id)?;
                let (confirmed, note) = match decision {
                    // Agno has no note for a yes; a comment given with it is dropped.
                    // (Approve-for-session is never offered here; the core accepts
                    // only offered decisions, so it would mean a plain yes.)
                    Decision::Approve | Decision::ApproveForSession => (true, None),
                    // A plain no takes the request's comment, if any, as its note.
                    Decision::Reject { message } => (false, message.clone().or_else(|| user_edit_content.clone())),
                    Decision::Respond { message } => (false, Some(message.clone())),
                    Decision::Edit { .. } => return Err(ReplyError::EditNotSupported),
                };
                tool["confirmed"] = json!(confirmed);
                tool["confirmation_note"] = note.map_or(Value::Null, Value::String);
            }
            Ok(())
        }
        (PartKind::Confirm, Reply::Answers { .. }) => Err(ReplyError::AnswersForApproval),
        (PartKind::Feedback, Reply::Answers { answers }) => {
            for id in &part.tool_call_ids {
                let tool = find_mut(tools, id)?;
                for question in tool.get_mut("user_feedback_schema").and_then(Value::as_array_mut).into_iter().flatten() {
                    let text = question.get("question").and_then(Value::as_str).unwrap_or_default();
                    let labels = option_labels(question);
                    let selected = answers.get(text).map(|answer| decode_labels(&labels, answer)).unwrap_or_default();
                    mark_selected(question, selected);
                }
                tool["answered"] = json!(true);
            }
            Ok(())
        }
        // Decisions for questions (the engine sends none today; expiry rejects
        // approvals only): answered with nothing selected, so the run goes on and
        // the model hears no choice was made.
        (PartKind::Feedback, Reply::Decisions { .. }) => {
            for id in &part.tool_call_ids {
                let tool = find_mut(tools, id)?;
                for question in tool.get_mut("user_feedback_schema").and_then(Value::as_array_mut).into_iter().flatten() {
                    mark_selected(question, Vec::new());
                }
                tool["answered"] = json!(true);
            }
            Ok(())
        }
    }
}

fn find_mut<'a>(tools: &'a mut [Value], id: &str) -> Result<&'a mut Value, ReplyError> {
    tools.iter_mut().find(|t| call_id(t) == Some(id)).ok_or_else(|| ReplyError::UnknownToolCall(id.to_owned()))
}

fn option_labels(question: &Value) -> Vec<String> {
    question
        .get("options")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|o| o.get("label").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

/// Sets `selected_options` and each option's `selected`, as Agno's own
/// `RunRequirement.provide_user_feedback` does.
fn mark_selected(question: &mut Value, selected: Vec<String>) {
    for option in question.get_mut("options").and_then(Value::as_array_mut).into_iter().flatten() {
        let chosen = option.get("label").and_then(Value::as_str).is_some_and(|label| selected.iter().any(|s| s == label));
        if let Some(option) = option.as_object_mut() {
            option.insert("selected".into(), json!(chosen));
        }
    }
    if let Some(question) = question.as_object_mut() {
        question.insert("selected_options".into(), json!(selected));
    }
}

/// The `tools` a continue sends: the paused run's tools with every part's reply.
pub fn continue_tools(tools: &[Value], replies: &[(PausePart, Reply)]) -> Result<Vec<Value>, ReplyError> {
    let mut tools = tools.to_vec();
    for (part, reply) in replies {
        apply_reply(&mut tools, part, reply)?;
    }
    Ok(tools)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::RequestKind;
    use crate::protocol::{Answers, DecisionType};

    fn confirm_tool(id: &str, target: &str) -> Value {
        json!({"tool_call_id": id, "tool_name": "deploy", "tool_args": {"target": target},
               "requires_confirmation": true, "confirmed": null, "confirmation_note": null,
               "requires_user_input": null, "user_feedback_schema": null, "answered": null, "result": null})
    }

    fn ask_tool(id: &str) -> Value {
        json!({"tool_call_id": id, "tool_name": "ask_user", "requires_confirmation": null,
               "requires_user_input": true, "answered": null, "result": null,
               "tool_args": {"questions": []},
               "user_feedback_schema": [
                 {"question": "Which activities?", "header": "Activities", "multi_select": true, "selected_options": null,
                  "options": [{"label": "Hiking", "description": "Trails", "selected": false},
                              {"label": "Museums, galleries", "description": null, "selected": false},
                              {"label": "Food", "description": null, "selected": false}]},
                 {"question": "Budget?", "header": "Budget", "multi_select": false, "selected_options": null,
                  "options": [{"label": "Low", "description": null, "selected": false}, {"label": "High", "description": null, "selected": false}]}]})
    }

    #[test]
    fn confirmations_become_one_approval_and_questions_one_question_request() {
        let tools = vec![confirm_tool("c1", "a"), ask_tool("c2"), confirm_tool("c3", "b"), json!({"tool_call_id": "done", "tool_name": "x", "result": "ok"})];
        let pause = pause_of("run-1", &tools);
        assert_eq!(
            pause.parts,
            vec![
                PausePart { approval_key: "run-1:c1,c3".into(), kind: PartKind::Confirm, tool_call_ids: vec!["c1".into(), "c3".into()] },
                PausePart { approval_key: "run-1:c2".into(), kind: PartKind::Feedback, tool_call_ids: vec!["c2".into()] },
            ]
        );
        assert_eq!(run_id_of("run-1:c1,c3"), Some("run-1"));

        let updates = pause_updates("run-1", &tools, TimeoutDefaults::default());
        let [SessionUpdate::Request(approval), SessionUpdate::Request(questions)] = updates.as_slice() else { panic!("{updates:?}") };
        let RequestKind::Approval { actions } = &approval.kind else { panic!("an approval") };
        assert_eq!(actions.len(), 2);
        assert_eq!(actions[1].name, "deploy");
        assert_eq!(actions[1].args, json!({"target": "b"}));
        assert_eq!(actions[1].tool_use_id.as_deref(), Some("c3"));
        assert_eq!(actions[0].allowed, vec![DecisionType::Approve, DecisionType::Reject, DecisionType::Respond]);
        assert_eq!(approval.timeout_secs, 300);
        let RequestKind::Questions { questions, .. } = &questions.kind else { panic!("questions") };
        assert_eq!(questions.len(), 2);
        assert!(questions[0].multi_select);
        assert_eq!(questions[0].options[1].label, "Museums, galleries");
        assert_eq!(questions[0].options[0].description.as_deref(), Some("Trails"));
        assert_eq!(questions[1].header.as_deref(), Some("Budget"));
    }

    #[test]
    fn tools_the_bridge_cannot_answer_are_reported() {
        let tools = vec![
            json!({"tool_call_id": "u", "tool_name": "get_user_input", "requires_user_input": true, "user_input_schema": [{"name": "x"}]}),
            json!({"tool_call_id": "e", "tool_name": "run_sql", "external_execution_required": true}),
        ];
        let updates = pause_updates("r", &tools, TimeoutDefaults::default());
        let [SessionUpdate::InvalidRequest { approval_key, reason }] = updates.as_slice() else { panic!("{updates:?}") };
        assert_eq!(approval_key, "r:unsupported");
        assert!(reason.contains("get_user_input: asks for user input") && reason.contains("run_sql: must be executed outside"), "{reason}");
    }

    #[test]
    fn decisions_set_confirmed_and_the_note() {
        let mut tools = vec![confirm_tool("c1", "a"), confirm_tool("c3", "b")];
        let part = pause_of("r", &tools).parts.remove(0);
        let reply = Reply::Decisions { decisions: vec![Decision::Approve, Decision::Reject { message: Some("b is frozen".into()) }], user_edit_content: None };
        apply_reply(&mut tools, &part, &reply).unwrap();
        assert_eq!((&tools[0]["confirmed"], &tools[0]["confirmation_note"]), (&json!(true), &Value::Null));
        assert_eq!((&tools[1]["confirmed"], &tools[1]["confirmation_note"]), (&json!(false), &json!("b is frozen")));
        // Nothing else changed: AgentOS matches the tools back by tool_call_id.
        assert_eq!(tools[1]["tool_args"], json!({"target": "b"}));

        let mut tools = vec![confirm_tool("c1", "a"), confirm_tool("c3", "b")];
        let reply = Reply::Decisions {
            decisions: vec![Decision::Respond { message: "use staging".into() }, Decision::Reject { message: None }],
            user_edit_content: Some("not today".into()),
        };
        apply_reply(&mut tools, &part, &reply).unwrap();
        assert_eq!((&tools[0]["confirmed"], &tools[0]["confirmation_note"]), (&json!(false), &json!("use staging")));
        assert_eq!(tools[1]["confirmation_note"], json!("not today"), "a plain reject takes the comment");

        let short = Reply::Decisions { decisions: vec![Decision::Approve], user_edit_content: None };
        assert_eq!(apply_reply(&mut tools, &part, &short), Err(ReplyError::DecisionCount { expected: 2, got: 1 }));
    }

    #[test]
    fn answers_become_selected_options_and_selected_flags() {
        let mut tools = vec![ask_tool("c2")];
        let part = pause_of("r", &tools).parts.remove(0);
        let answers = Answers(vec![("Which activities?".into(), "Hiking, Museums, galleries".into()), ("Budget?".into(), "Low".into())]);
        apply_reply(&mut tools, &part, &Reply::Answers { answers }).unwrap();
        let schema = &tools[0]["user_feedback_schema"];
        assert_eq!(schema[0]["selected_options"], json!(["Hiking", "Museums, galleries"]));
        assert_eq!(schema[0]["options"][1]["selected"], json!(true));
        assert_eq!(schema[0]["options"][2]["selected"], json!(false));
        assert_eq!(schema[1]["selected_options"], json!(["Low"]));
        assert_eq!(tools[0]["answered"], json!(true));
        assert_eq!(tools[0]["requires_user_input"], json!(true), "AgentOS picks ask_user updates by this flag");
    }

    #[test]
    fn dismissed_questions_are_answered_with_nothing_selected() {
        let mut tools = vec![ask_tool("c2")];
        let part = pause_of("r", &tools).parts.remove(0);
        apply_reply(&mut tools, &part, &Reply::Decisions { decisions: vec![Decision::Reject { message: None }], user_edit_content: None }).unwrap();
        assert_eq!(tools[0]["user_feedback_schema"][0]["selected_options"], json!([]));
        assert_eq!(tools[0]["answered"], json!(true));
    }

    #[test]
    fn answered_or_confirmed_tools_no_longer_wait() {
        let mut tools = vec![confirm_tool("c1", "a"), ask_tool("c2")];
        tools[0]["confirmed"] = json!(false);
        tools[1]["answered"] = json!(true);
        assert_eq!(pause_of("r", &tools), Pause::default());
    }
}
