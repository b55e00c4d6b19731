//! The three MCP tools as data: their inputs (JSON Schemas generated from these types),
//! how each becomes a `POST /v1/requests` body, and how the request's final state
//! becomes the tool's result. Pure: no IO, so every mapping is unit-tested.
//!
//! - `request_approval`: tool calls to approve; returns the HTTP API's `reply`
//!   (`{"decisions": […]}`) with who decided and when.
//! - `ask_user_question`: 1–4 questions in seed 000's shape; returns `answers` (the
//!   stream protocol's text map) and `selected_options` (the HTTP API's labels).
//! - `approval_prompt`: Claude Code's `--permission-prompt-tool` contract; returns the
//!   JSON text `{"behavior":"allow","updatedInput":{…}}` or
//!   `{"behavior":"deny","message":"…"}`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::interaction::chat::Networks;

pub const REQUEST_APPROVAL: &str = "request_approval";
pub const ASK_USER_QUESTION: &str = "ask_user_question";
pub const APPROVAL_PROMPT: &str = "approval_prompt";
/// Every tool, in the order they are listed.
pub const ALL: [&str; 3] = [REQUEST_APPROVAL, ASK_USER_QUESTION, APPROVAL_PROMPT];

/// Who sees a request and who may answer it, shared by the tools that take them.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
pub struct Routing {
    /// Chats to show the request in, written as in the bridge's `routing.channels`:
    /// `telegram:CHAT_ID`, `telegram:CHAT_ID/TOPIC_ID`, `telegram:user:USER_ID`,
    /// `discord:CHANNEL_ID`, `discord:CHANNEL_ID/THREAD_ID`, `discord:user:USER_ID`,
    /// `console`. Default: the server's default targets: `mcp.default_targets` in the
    /// bridge's config at `/mcp`; `--target` (or `HITL_BRIDGE_MCP_TARGETS`) of
    /// `hitl-bridge mcp` on stdio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<Vec<String>>,
    /// `platform:user_id` entries allowed to answer (default: the bridge's approvers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvers: Option<Vec<String>>,
    /// Seconds to wait for an answer (default: the bridge's timeout for the kind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
    /// Your key for this request. Calling again with the same key and arguments
    /// joins the same request instead of asking twice. Default: made from the MCP
    /// session and the call's request id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_key: Option<String>,
}

/// One tool call to approve.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
pub struct Action {
    /// The tool's name, e.g. `run_migration`.
    pub name: String,
    /// Its arguments, shown to the approver and editable when `edit` is allowed.
    #[serde(default)]
    pub args: Map<String, Value>,
    /// What the call does, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Which of `approve`, `edit`, `reject`, `respond` may be chosen (default the
    /// first three).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_decisions: Option<Vec<Decision>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approve,
    Edit,
    Reject,
    Respond,
}

/// `request_approval`'s input.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
pub struct ApprovalInput {
    /// One or more tool calls; each gets its own decision.
    pub actions: Vec<Action>,
    /// Context shown above the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A decision policy (quorum, approvers, remember, escalation, fallback), as the
    /// HTTP API's `policy` object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<Map<String, Value>>,
    #[serde(flatten)]
    pub routing: Routing,
}

/// One option of a question.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
pub struct QuestionOption {
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Choosing it asks for typed text (an "Other…" option).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<bool>,
}

/// One question, in seed 000's shape.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
pub struct Question {
    /// The exact text: the key of its answer.
    pub question: String,
    /// A short label (a tab or chip), e.g. "Region".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// Several options may be chosen.
    #[serde(rename = "multiSelect", default)]
    pub multi_select: bool,
    /// The choices; none means a free-text answer.
    #[serde(default)]
    pub options: Vec<QuestionOption>,
}

/// `ask_user_question`'s input.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
pub struct QuestionsInput {
    /// 1–4 questions, answered together.
    pub questions: Vec<Question>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(flatten)]
    pub routing: Routing,
}

/// `approval_prompt`'s input: what Claude Code sends its permission-prompt tool.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
pub struct PromptInput {
    /// The tool Claude wants to run, e.g. `Bash`.
    pub tool_name: String,
    /// Its input, e.g. `{"command": "rm -rf build"}`.
    #[serde(default)]
    pub input: Map<String, Value>,
    /// Claude's id for this tool use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
}

/// Where a tool's request is shown when its input names no chat, and how chats are
/// written: what a server's tools route by.
#[derive(Clone)]
pub struct Targets {
    /// Every platform's address grammar. The MCP server sits above the platforms, so
    /// the assembly reads it from their registry and hands it down.
    pub networks: Networks,
    /// The server's default targets: `mcp.default_targets`, or `--target` on stdio.
    pub defaults: Vec<String>,
}

/// A target as the HTTP API's body takes it, from its `routing.channels` spelling in
/// its platform's grammar (`networks`, handed down by the assembly); `None` when it is
/// not one.
pub fn target(networks: &Networks, text: &str) -> Option<Value> {
    networks.target_of(&networks.parse_chat(text.trim())?)
}

/// Why a tool's input cannot become a request: the argument and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct InputError {
    pub field: String,
    pub reason: String,
}

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> InputError {
    InputError { field: field.into(), reason: reason.into() }
}

/// The body fields `routing` sets, the targets from `to`'s defaults when it names none.
fn routed(body: &mut Map<String, Value>, routing: &Routing, to: &Targets, key: String) -> Result<(), InputError> {
    let Targets { networks, defaults } = to;
    let targets = routing.targets.as_deref().unwrap_or(defaults.as_slice());
    if targets.is_empty() {
        return Err(invalid(
            "targets",
            "no chat to ask in: pass targets, or give the server default targets \
             (mcp.default_targets in the bridge's config for /mcp; --target or HITL_BRIDGE_MCP_TARGETS for `hitl-bridge mcp` on stdio)",
        ));
    }
    let parsed = targets
        .iter()
        .enumerate()
        .map(|(i, t)| {
            target(networks, t)
                .ok_or_else(|| invalid(format!("targets[{i}]"), format!("{t:?} is not a chat (e.g. telegram:-1001234567890 or discord:123456789012345678)")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    body.insert("targets".into(), Value::Array(parsed));
    body.insert("approval_key".into(), json!(key));
    if let Some(approvers) = &routing.approvers {
        body.insert("approvers".into(), json!(approvers));
    }
    if let Some(timeout) = routing.timeout_seconds {
        body.insert("timeout_seconds".into(), json!(timeout));
    }
    Ok(())
}

/// `request_approval` → the push body under `key` (the caller's own, or made up).
pub fn approval_body(input: &ApprovalInput, to: &Targets, key: String) -> Result<Value, InputError> {
    if input.actions.is_empty() {
        return Err(invalid("actions", "at least one action is needed"));
    }
    let mut body = Map::new();
    routed(&mut body, &input.routing, to, key)?;
    let actions: Vec<Value> = input
        .actions
        .iter()
        .map(|a| {
            let mut action = json!({"name": a.name, "args": a.args});
            if let Some(description) = &a.description {
                action["description"] = json!(description);
            }
            action
        })
        .collect();
    let reviews: Vec<Value> = input
        .actions
        .iter()
        .map(|a| {
            let allowed = a.allowed_decisions.clone().unwrap_or_else(|| vec![Decision::Approve, Decision::Edit, Decision::Reject]);
            json!({"action_name": a.name, "allowed_decisions": allowed})
        })
        .collect();
    body.insert("actions".into(), Value::Array(actions));
    body.insert("review_configs".into(), Value::Array(reviews));
    if let Some(text) = &input.text {
        body.insert("text".into(), json!(text));
    }
    if let Some(policy) = &input.policy {
        body.insert("policy".into(), Value::Object(policy.clone()));
    }
    Ok(Value::Object(body))
}

/// `ask_user_question` → the push body.
pub fn questions_body(input: &QuestionsInput, to: &Targets, key: String) -> Result<Value, InputError> {
    if !(1..=4).contains(&input.questions.len()) {
        return Err(invalid("questions", format!("1–4 questions, not {}", input.questions.len())));
    }
    let mut body = Map::new();
    routed(&mut body, &input.routing, to, key)?;
    body.insert("questions".into(), serde_json::to_value(&input.questions).unwrap_or_default());
    if let Some(text) = &input.text {
        body.insert("text".into(), json!(text));
    }
    Ok(Value::Object(body))
}

/// `approval_prompt` → the push body: the one tool call, approved, edited, rejected, or
/// answered with a comment (`respond`), which denies it with the commenter's words, as
/// Claude Code's own permission prompts do.
pub fn prompt_body(input: &PromptInput, to: &Targets, key: String) -> Result<Value, InputError> {
    let allowed = vec![Decision::Approve, Decision::Edit, Decision::Reject, Decision::Respond];
    let approval = ApprovalInput {
        actions: vec![Action { name: input.tool_name.clone(), args: input.input.clone(), description: None, allowed_decisions: Some(allowed) }],
        text: None,
        policy: None,
        routing: Routing::default(),
    };
    let mut body = approval_body(&approval, to, key)?;
    if let Some(id) = &input.tool_use_id {
        body["actions"][0]["tool_use_id"] = json!(id);
    }
    Ok(body)
}

/// How a tool call ended, from the request's state as `GET /v1/requests/{key}`
/// returns it.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// Answered: the tool's structured result.
    Answered(Value),
    /// Not answered (expired, or cancelled elsewhere): the message of the tool error.
    Unanswered(String),
}

/// The result of `request_approval` for a settled `state`.
pub fn approval_result(state: &Value) -> Ending {
    ending(state, |reply| json!({"decisions": reply["decisions"]}))
}

/// The result of `ask_user_question` for a settled `state`.
pub fn questions_result(state: &Value) -> Ending {
    ending(state, |reply| json!({"answers": reply["answers"], "selected_options": reply["selected_options"]}))
}

/// `approved`, `resolved`… with `reply`, `decided_by`, `decided_at` and the key; an
/// expired or cancelled request is a tool error naming what happened and when.
fn ending(state: &Value, pick: impl Fn(&Value) -> Value) -> Ending {
    let key = &state["approval_key"];
    match state["status"].as_str() {
        Some("resolved") => {
            let mut result = pick(&state["reply"]);
            result["approval_key"] = key.clone();
            result["status"] = json!("resolved");
            for field in ["decided_by", "decided_at", "settled_by", "votes", "policy", "not_shown"] {
                if let Some(value) = state.get(field) {
                    result[field] = value.clone();
                }
            }
            Ending::Answered(result)
        }
        Some("expired") => {
            let deadline = state["expires_at"].as_str().unwrap_or("its deadline");
            Ending::Unanswered(format!("nobody answered request {key} before its deadline ({deadline}); it expired"))
        }
        Some("cancelled") => Ending::Unanswered(format!("request {key} was cancelled before anyone answered{}", not_shown(state))),
        other => Ending::Unanswered(format!("request {key} ended in an unexpected state: {}", other.unwrap_or("none"))),
    }
}

/// `; it could not be shown in …` naming each target a platform refused for good, with
/// the platform's reason; empty when there is none.
fn not_shown(state: &Value) -> String {
    let Some(refused) = state["not_shown"].as_array().filter(|r| !r.is_empty()) else { return String::new() };
    let each: Vec<String> = refused
        .iter()
        .map(|r| {
            let target = &r["target"];
            let fields = target.as_object().into_iter().flatten().filter(|(k, _)| *k != "platform").filter_map(|(_, v)| v.as_str());
            let target = std::iter::once(target["platform"].as_str().unwrap_or("?")).chain(fields).collect::<Vec<_>>().join(":");
            format!("{target} ({})", r["error"].as_str().unwrap_or("refused"))
        })
        .collect();
    format!("; it could not be shown in {}", each.join(", "))
}

/// Claude Code's answer for `approval_prompt` from a settled `state`: allow with the
/// (possibly edited) input, or deny with the approver's words. An unanswered request
/// is denied too, so the agent never runs a tool nobody approved.
pub fn prompt_result(state: &Value, input: &PromptInput) -> Value {
    let who = state["decided_by"]["name"].as_str().map(str::to_owned);
    let by = who.as_deref().map(|w| format!(" by {w}")).unwrap_or_default();
    if state["status"] != "resolved" {
        let why = match approval_result(state) {
            Ending::Unanswered(why) => why,
            Ending::Answered(_) => String::new(),
        };
        return json!({"behavior": "deny", "message": why});
    }
    let decision = &state["reply"]["decisions"][0];
    match decision["type"].as_str() {
        Some("approve") | Some("approve_for_session") => json!({"behavior": "allow", "updatedInput": input.input}),
        Some("edit") => json!({"behavior": "allow", "updatedInput": decision["edited_action"]["args"]}),
        Some("respond") => json!({"behavior": "deny", "message": decision["message"]}),
        _ => {
            let message = decision["message"].as_str().filter(|m| !m.is_empty()).map(str::to_owned).unwrap_or_else(|| format!("Rejected{by}."));
            json!({"behavior": "deny", "message": message})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Targets in the core's test grammars (`telegram:-100`, `console`), with `defaults`.
    fn to(defaults: &[&str]) -> Targets {
        Targets { networks: crate::interaction::test_networks::networks(), defaults: defaults.iter().map(|d| (*d).to_owned()).collect() }
    }

    fn prompt() -> PromptInput {
        PromptInput { tool_name: "Bash".into(), input: json!({"command": "touch x"}).as_object().cloned().unwrap(), tool_use_id: Some("toolu_1".into()) }
    }

    #[test]
    fn the_config_knows_every_tool() {
        assert_eq!(ALL, crate::mcp::settings::MCP_TOOLS);
    }

    #[test]
    fn an_approval_becomes_actions_and_review_configs() {
        let input: ApprovalInput = serde_json::from_value(json!({
            "actions": [{"name": "run_migration", "args": {"db": "prod"}, "description": "adds a column", "allowed_decisions": ["approve", "reject"]}],
            "text": "Deploy 43", "timeout_seconds": 60, "approvers": ["telegram:5"], "policy": {"quorum": 2}
        }))
        .unwrap();
        let body = approval_body(&input, &to(&["telegram:-100"]), "k1".into()).unwrap();
        assert_eq!(
            body,
            json!({
                "targets": [{"platform": "telegram", "chat_id": "-100"}], "approval_key": "k1", "approvers": ["telegram:5"], "timeout_seconds": 60,
                "actions": [{"name": "run_migration", "args": {"db": "prod"}, "description": "adds a column"}],
                "review_configs": [{"action_name": "run_migration", "allowed_decisions": ["approve", "reject"]}],
                "text": "Deploy 43", "policy": {"quorum": 2}
            })
        );
    }

    #[test]
    fn bad_input_names_the_argument() {
        let none: ApprovalInput = serde_json::from_value(json!({"actions": [{"name": "a"}]})).unwrap();
        assert_eq!(approval_body(&none, &to(&[]), "k".into()).unwrap_err().field, "targets");
        let bad: ApprovalInput = serde_json::from_value(json!({"actions": [{"name": "a"}], "targets": ["console", "irc:1"]})).unwrap();
        assert_eq!(approval_body(&bad, &to(&[]), "k".into()).unwrap_err().field, "targets[1]");
        let empty: ApprovalInput = serde_json::from_value(json!({"actions": []})).unwrap();
        assert_eq!(approval_body(&empty, &to(&["console"]), "k".into()).unwrap_err().field, "actions");
        let five: QuestionsInput =
            serde_json::from_value(json!({"questions": [{"question": "a"}, {"question": "b"}, {"question": "c"}, {"question": "d"}, {"question": "e"}]}))
                .unwrap();
        assert_eq!(questions_body(&five, &to(&["console"]), "k".into()).unwrap_err().field, "questions");
    }

    #[test]
    fn questions_keep_seed_000s_shape() {
        let input: QuestionsInput = serde_json::from_value(json!({"questions": [{"question": "Which region?", "header": "Region", "multiSelect": true,
            "options": [{"label": "eu"}, {"label": "Other", "input": true}]}]}))
        .unwrap();
        let body = questions_body(&input, &to(&["console"]), "q".into()).unwrap();
        assert_eq!(
            body["questions"],
            json!([{"question": "Which region?", "header": "Region", "multiSelect": true, "options": [{"label": "eu"}, {"label": "Other", "input": true}]}])
        );
    }

    #[test]
    fn results_carry_the_reply_and_who_decided() {
        let state = json!({"approval_key": "k", "status": "resolved", "expires_at": "2026-01-01T00:00:00Z", "decided_by": {"platform": "telegram", "id": "5", "name": "Lan"},
            "decided_at": "2026-01-01T00:00:01Z", "reply": {"decisions": [{"type": "reject", "message": "not now"}]}});
        assert_eq!(
            approval_result(&state),
            Ending::Answered(json!({"decisions": [{"type": "reject", "message": "not now"}], "approval_key": "k", "status": "resolved",
            "decided_by": {"platform": "telegram", "id": "5", "name": "Lan"}, "decided_at": "2026-01-01T00:00:01Z"}))
        );
        let expired = json!({"approval_key": "k", "status": "expired", "expires_at": "2026-01-01T00:01:00Z", "reply": {"decisions": [{"type": "reject"}]}});
        assert_eq!(
            approval_result(&expired),
            Ending::Unanswered("nobody answered request \"k\" before its deadline (2026-01-01T00:01:00Z); it expired".into())
        );
        let nowhere = json!({"approval_key": "k", "status": "cancelled", "expires_at": "2026-01-01T00:01:00Z",
            "not_shown": [{"target": {"platform": "telegram", "chat_id": "-100999"}, "error": "Bad Request: chat not found"}]});
        assert_eq!(
            approval_result(&nowhere),
            Ending::Unanswered(
                "request \"k\" was cancelled before anyone answered; it could not be shown in telegram:-100999 (Bad Request: chat not found)".into()
            )
        );
    }

    #[test]
    fn claude_codes_prompt_is_allowed_edited_or_denied_with_the_words() {
        let decided = |decision: Value| json!({"approval_key": "k", "status": "resolved", "decided_by": {"name": "Lan"}, "reply": {"decisions": [decision]}});
        assert_eq!(prompt_result(&decided(json!({"type": "approve"})), &prompt()), json!({"behavior": "allow", "updatedInput": {"command": "touch x"}}));
        let edit = json!({"type": "edit", "edited_action": {"name": "Bash", "args": {"command": "touch y"}}});
        assert_eq!(prompt_result(&decided(edit), &prompt()), json!({"behavior": "allow", "updatedInput": {"command": "touch y"}}));
        assert_eq!(prompt_result(&decided(json!({"type": "reject", "message": "use y"})), &prompt()), json!({"behavior": "deny", "message": "use y"}));
        assert_eq!(prompt_result(&decided(json!({"type": "reject"})), &prompt()), json!({"behavior": "deny", "message": "Rejected by Lan."}));
        assert_eq!(
            prompt_result(&decided(json!({"type": "respond", "message": "use staging"})), &prompt()),
            json!({"behavior": "deny", "message": "use staging"})
        );
        let body = prompt_body(&prompt(), &to(&["console"]), "k".into()).unwrap();
        assert_eq!(body["review_configs"], json!([{"action_name": "Bash", "allowed_decisions": ["approve", "edit", "reject", "respond"]}]));
        assert_eq!(body["actions"][0]["tool_use_id"], "toolu_1");
        let expired = json!({"approval_key": "k", "status": "expired", "expires_at": "T"});
        assert_eq!(prompt_result(&expired, &prompt())["behavior"], "deny");
    }
}
