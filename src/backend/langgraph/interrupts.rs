//! LangGraph interrupts ↔ bridge requests and replies. Pure: no IO.
//!
//! `HumanInTheLoopMiddleware` raises one of two interrupt values:
//! - batched (the default): `{"action_requests":[{name,args,description}],
//!   "review_configs":[{action_name,allowed_decisions}]}`, one interrupt per model turn,
//!   answered with `{"decisions":[…]}`, exactly one decision per action, in order (a
//!   wrong count fails the run and loses the interrupt, so the bridge always sends the
//!   full list);
//! - `per_call`: `{"type":"tool_approval","tool_call_id","name","args","description"}`,
//!   one interrupt per gated tool call, answered with one bare decision. Its allowed
//!   decisions are not in the value but in the interrupt's `response_schema` (a JSON
//!   schema whose `discriminator.mapping` keys, or single `type` const, name them).
//!
//! Either way the resume is `{"command":{"resume":{"<interrupt id>": value}}}`, and the
//! request's `approval_key` is the interrupt id.
//!
//! A request is shown as questions when every action is the configured question tool
//! (default `ask_user_question`) with `{questions:[…]}` args and the tool allows
//! `respond` or `edit`. The answers go back as a `respond` decision whose message is the
//! answers as a JSON object (question text → answer), which the middleware hands to
//! the model as the tool's result without running the tool; where only `edit` is
//! allowed, as an `edit` whose args are the original args plus `"answers"`, so the tool
//! runs and sees them. Anything else (a question tool mixed with other tools in one
//! batched interrupt, or one allowing neither) is shown as an ordinary approval.

use serde_json::{Map, Value, json};

use crate::interaction::{Action, Request, RequestBuilder, RequestKind, TimeoutDefaults};
use crate::protocol::{ActionRequest, Answers, Decision, DecisionType, EditedAction, Reply, ReviewConfig};

/// The name the bridge's question handling knows (PROTOCOL.md §4).
const CANONICAL_QUESTION_TOOL: &str = "ask_user_question";

/// How an interrupt is answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// One `{"decisions":[…]}` for all actions.
    Batched,
    /// One bare decision.
    PerCall,
}

/// What the bridge remembers about an interrupt it showed, to build the resume.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingInterrupt {
    pub id: String,
    pub mode: Mode,
    /// The actions as the server sent them (real tool names, original args).
    pub actions: Vec<ActionRequest>,
    /// Per action, what the server allows.
    pub allowed: Vec<Vec<DecisionType>>,
    /// Shown as questions: answered with `respond` (or `edit` + answers).
    pub questions: bool,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InterruptError {
    #[error("the interrupt has no id")]
    NoId,
    #[error("interrupt {0}: its value is neither a HumanInTheLoopMiddleware request nor a per-call tool approval")]
    UnknownValue(String),
    #[error("interrupt {id}: {reason}")]
    Invalid { id: String, reason: String },
}

impl InterruptError {
    /// The interrupt id, when the interrupt had one.
    pub fn id(&self) -> Option<&str> {
        match self {
            InterruptError::NoId => None,
            InterruptError::UnknownValue(id) | InterruptError::Invalid { id, .. } => Some(id),
        }
    }
}

/// Reads one `{"id","value","response_schema"?}` interrupt (from an `__interrupt__`
/// update or a thread's `interrupts`).
pub fn read_interrupt(interrupt: &Value, question_tool: &str) -> Result<PendingInterrupt, InterruptError> {
    let id = interrupt.get("id").and_then(Value::as_str).filter(|s| !s.is_empty()).ok_or(InterruptError::NoId)?.to_owned();
    let value = interrupt.get("value").cloned().unwrap_or(Value::Null);
    let (mode, actions, allowed) = if value.get("type").and_then(Value::as_str) == Some("tool_approval") {
        let name = value.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
        if name.is_empty() {
            return Err(InterruptError::Invalid { id, reason: "a tool approval without a tool name".into() });
        }
        let action = ActionRequest {
            name,
            args: value.get("args").cloned().unwrap_or_else(|| json!({})),
            description: value.get("description").and_then(Value::as_str).map(str::to_owned),
            tool_use_id: value.get("tool_call_id").and_then(Value::as_str).map(str::to_owned),
        };
        let allowed = allowed_from_schema(interrupt.get("response_schema"));
        (Mode::PerCall, vec![action], vec![allowed])
    } else if let Some(list) = value.get("action_requests").and_then(Value::as_array) {
        let actions: Vec<ActionRequest> = serde_json::from_value(Value::Array(list.clone()))
            .map_err(|e| InterruptError::Invalid { id: id.clone(), reason: format!("action_requests: {e}") })?;
        if actions.is_empty() {
            return Err(InterruptError::Invalid { id, reason: "no action_requests".into() });
        }
        let configs: Vec<ReviewConfig> = value.get("review_configs").and_then(|c| serde_json::from_value(c.clone()).ok()).unwrap_or_default();
        let allowed = actions.iter().enumerate().map(|(i, a)| allowed_from_config(&configs, i, &a.name)).collect();
        (Mode::Batched, actions, allowed)
    } else {
        return Err(InterruptError::UnknownValue(id));
    };
    let questions = actions.iter().zip(&allowed).all(|(action, allowed)| {
        action.name == question_tool
            && action.args.get("questions").is_some_and(Value::is_array)
            && (allowed.contains(&DecisionType::Respond) || allowed.contains(&DecisionType::Edit))
    });
    Ok(PendingInterrupt { id, mode, actions, allowed, questions })
}

/// The review config for action `index`: the one naming it, else the index-th (the
/// middleware sends them in action order).
fn allowed_from_config(configs: &[ReviewConfig], index: usize, name: &str) -> Vec<DecisionType> {
    let config = configs.iter().find(|c| c.action_name.as_deref() == Some(name)).or_else(|| configs.get(index));
    match config.and_then(|c| c.allowed_decisions.as_ref()) {
        Some(names) => dedup(names.iter().filter_map(|n| DecisionType::parse(n))),
        None => DecisionType::DEFAULT_ALLOWED.to_vec(),
    }
}

/// A per-call interrupt's decisions: the keys of the schema's discriminator mapping
/// (several allowed), else the `type` const of its single decision schema.
fn allowed_from_schema(schema: Option<&Value>) -> Vec<DecisionType> {
    let Some(schema) = schema.filter(|s| s.is_object()) else {
        return DecisionType::DEFAULT_ALLOWED.to_vec();
    };
    if let Some(mapping) = schema.pointer("/discriminator/mapping").and_then(Value::as_object) {
        return dedup(mapping.keys().filter_map(|k| DecisionType::parse(k)));
    }
    if let Some(one) = schema.pointer("/properties/type/const").and_then(Value::as_str).and_then(DecisionType::parse) {
        return vec![one];
    }
    DecisionType::DEFAULT_ALLOWED.to_vec()
}

fn dedup(types: impl Iterator<Item = DecisionType>) -> Vec<DecisionType> {
    let mut out = Vec::new();
    for t in types {
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

impl PendingInterrupt {
    /// The bridge request for this interrupt.
    pub fn request(&self, defaults: TimeoutDefaults) -> Result<Request, InterruptError> {
        if !self.questions {
            // Built directly: the builder would take a question tool's name, even
            // mixed with other tools, for a question.
            let actions = self
                .actions
                .iter()
                .zip(&self.allowed)
                .map(|(a, allowed)| Action {
                    name: a.name.clone(),
                    args: if a.args.is_null() { json!({}) } else { a.args.clone() },
                    description: a.description.clone(),
                    tool_use_id: a.tool_use_id.clone(),
                    allowed: allowed.clone(),
                    labels: Vec::new(),
                })
                .collect();
            return Ok(Request { approval_key: self.id.clone(), kind: RequestKind::Approval { actions }, timeout_secs: defaults.approval_secs, context: None });
        }
        // The bridge's question handling goes by name.
        let actions = self.actions.iter().map(|a| ActionRequest { name: CANONICAL_QUESTION_TOOL.to_owned(), ..a.clone() }).collect();
        let configs = self
            .allowed
            .iter()
            .map(|allowed| ReviewConfig {
                action_name: Some(CANONICAL_QUESTION_TOOL.to_owned()),
                allowed_decisions: Some(allowed.iter().map(|d| d.as_str().to_owned()).collect()),
                timeout: None,
                require_approval: None,
            })
            .collect();
        RequestBuilder::start(&self.id, actions, configs, None)
            .finish(defaults)
            .map_err(|e| InterruptError::Invalid { id: self.id.clone(), reason: e.to_string() })
    }

    /// The `command.resume` map that answers this interrupt with `reply`.
    pub fn resume(&self, reply: &Reply) -> Result<Value, String> {
        let decisions = match reply {
            Reply::Decisions { decisions, .. } => {
                if decisions.len() != self.actions.len() {
                    return Err(format!("{} decisions for {} actions", decisions.len(), self.actions.len()));
                }
                decisions.iter().zip(&self.actions).map(|(d, a)| self.real_name(d, a)).collect()
            }
            Reply::Answers { answers } => {
                if !self.questions {
                    return Err("answers for a request that is not a question".into());
                }
                self.actions.iter().zip(&self.allowed).map(|(a, allowed)| answers_decision(a, allowed, answers)).collect::<Result<Vec<_>, _>>()?
            }
        };
        let value = match self.mode {
            Mode::Batched => json!({ "decisions": decisions }),
            Mode::PerCall => decisions.into_iter().next().ok_or("no decision")?,
        };
        Ok(json!({ self.id.clone(): value }))
    }

    /// A decision as JSON, with an edit's tool name set back to the server's own.
    fn real_name(&self, decision: &Decision, action: &ActionRequest) -> Value {
        let mut value = serde_json::to_value(decision).unwrap_or(Value::Null);
        if let Some(name) = value.pointer_mut("/edited_action/name") {
            *name = Value::String(action.name.clone());
        }
        value
    }
}

/// The decision that carries a question tool's answers.
fn answers_decision(action: &ActionRequest, allowed: &[DecisionType], answers: &Answers) -> Result<Value, String> {
    let answers_json = serde_json::to_value(answers).map_err(|e| e.to_string())?;
    if allowed.contains(&DecisionType::Respond) {
        let message = serde_json::to_string(&answers_json).map_err(|e| e.to_string())?;
        return serde_json::to_value(Decision::Respond { message }).map_err(|e| e.to_string());
    }
    if allowed.contains(&DecisionType::Edit) {
        let mut args: Map<String, Value> = action.args.as_object().cloned().unwrap_or_default();
        args.insert("answers".into(), answers_json);
        let edit = Decision::Edit { edited_action: EditedAction { name: action.name.clone(), args } };
        return serde_json::to_value(edit).map_err(|e| e.to_string());
    }
    Err(format!("{} allows neither respond nor edit", action.name))
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUESTIONS: &str = r#"{"questions":[{"question":"Q1?","header":"H","multiSelect":true,"options":[{"label":"A"},{"label":"B"}]}]}"#;

    fn batched() -> Value {
        json!({"id":"abc","value":{
            "action_requests":[
                {"name":"execute_trade","args":{"symbol":"VNM","quantity":100},"description":"Tool: execute_trade"},
                {"name":"send_report","args":{"to":"ops"},"description":"Tool: send_report"}],
            "review_configs":[
                {"action_name":"execute_trade","allowed_decisions":["approve","edit","reject"]},
                {"action_name":"send_report","allowed_decisions":["approve","reject","respond"]}]}})
    }

    fn per_call(name: &str, args: Value, schema: Value) -> Value {
        json!({"id":"pc1","value":{"type":"tool_approval","tool_call_id":"call_1","name":name,"args":args,"description":"d"},
            "response_schema":schema})
    }

    #[test]
    fn a_batched_interrupt_becomes_one_request_with_every_action() {
        let pending = read_interrupt(&batched(), "ask_user_question").unwrap();
        assert_eq!(pending.mode, Mode::Batched);
        let request = pending.request(TimeoutDefaults::default()).unwrap();
        assert_eq!(request.approval_key, "abc");
        let actions = request.actions();
        assert_eq!(actions.len(), 2);
        assert_eq!(actions[0].args, json!({"symbol":"VNM","quantity":100}));
        assert_eq!(actions[0].allowed, vec![DecisionType::Approve, DecisionType::Edit, DecisionType::Reject]);
        assert_eq!(actions[1].allowed, vec![DecisionType::Approve, DecisionType::Reject, DecisionType::Respond]);
        assert_eq!(actions[1].description.as_deref(), Some("Tool: send_report"));
    }

    #[test]
    fn batched_decisions_resume_in_action_order_keyed_by_interrupt_id() {
        let pending = read_interrupt(&batched(), "ask_user_question").unwrap();
        let reply = Reply::Decisions {
            decisions: vec![Decision::Reject { message: Some("no".into()) }, Decision::Respond { message: "sent already".into() }],
            user_edit_content: None,
        };
        assert_eq!(
            pending.resume(&reply).unwrap(),
            json!({"abc":{"decisions":[{"type":"reject","message":"no"},{"type":"respond","message":"sent already"}]}})
        );
        let short = Reply::Decisions { decisions: vec![Decision::Approve], user_edit_content: None };
        assert!(pending.resume(&short).is_err(), "a short list would fail the run and lose the interrupt");
    }

    #[test]
    fn a_per_call_interrupt_reads_its_decisions_from_the_response_schema() {
        let schema = json!({"discriminator":{"propertyName":"type","mapping":{"approve":"#/a","edit":"#/e","reject":"#/r"}},"oneOf":[]});
        let pending = read_interrupt(&per_call("execute_trade", json!({"quantity":1}), schema), "ask_user_question").unwrap();
        assert_eq!(pending.mode, Mode::PerCall);
        assert_eq!(pending.allowed, vec![vec![DecisionType::Approve, DecisionType::Edit, DecisionType::Reject]]);
        let request = pending.request(TimeoutDefaults::default()).unwrap();
        assert_eq!(request.actions()[0].tool_use_id.as_deref(), Some("call_1"));
        let edit = Decision::Edit { edited_action: EditedAction { name: "execute_trade".into(), args: json!({"quantity":5}).as_object().unwrap().clone() } };
        let reply = Reply::Decisions { decisions: vec![edit], user_edit_content: None };
        assert_eq!(pending.resume(&reply).unwrap(), json!({"pc1":{"type":"edit","edited_action":{"name":"execute_trade","args":{"quantity":5}}}}));

        // A tool with one allowed decision gets that decision's plain schema.
        let one = json!({"properties":{"type":{"const":"respond"},"message":{"type":"string"}}});
        let pending = read_interrupt(&per_call("t", json!({}), one), "ask_user_question").unwrap();
        assert_eq!(pending.allowed, vec![vec![DecisionType::Respond]]);
        // No schema at all: the defaults.
        let pending = read_interrupt(&per_call("t", json!({}), Value::Null), "ask_user_question").unwrap();
        assert_eq!(pending.allowed, vec![DecisionType::DEFAULT_ALLOWED.to_vec()]);
    }

    #[test]
    fn the_question_tool_becomes_questions_answered_with_respond() {
        let args: Value = serde_json::from_str(QUESTIONS).unwrap();
        let interrupt = json!({"id":"q1","value":{"action_requests":[{"name":"ask_human","args":args}],
            "review_configs":[{"action_name":"ask_human","allowed_decisions":["respond"]}]}});
        let pending = read_interrupt(&interrupt, "ask_human").unwrap();
        assert!(pending.questions);
        let request = pending.request(TimeoutDefaults::default()).unwrap();
        let RequestKind::Questions { questions, .. } = &request.kind else { panic!("{request:?}") };
        assert_eq!(questions[0].text, "Q1?");
        assert!(questions[0].multi_select);
        assert_eq!(request.timeout_secs, TimeoutDefaults::default().question_secs);

        let reply = Reply::Answers { answers: Answers(vec![("Q1?".into(), "A, B".into())]) };
        assert_eq!(pending.resume(&reply).unwrap(), json!({"q1":{"decisions":[{"type":"respond","message":"{\"Q1?\":\"A, B\"}"}]}}));
    }

    #[test]
    fn a_question_tool_that_only_allows_edit_gets_its_answers_in_the_args() {
        let args: Value = serde_json::from_str(QUESTIONS).unwrap();
        let schema = json!({"properties":{"type":{"const":"edit"}}});
        let pending = read_interrupt(&per_call("ask_user_question", args.clone(), schema), "ask_user_question").unwrap();
        assert!(pending.questions);
        let reply = Reply::Answers { answers: Answers(vec![("Q1?".into(), "B".into())]) };
        let mut expected = args.as_object().unwrap().clone();
        expected.insert("answers".into(), json!({"Q1?":"B"}));
        assert_eq!(pending.resume(&reply).unwrap(), json!({"pc1":{"type":"edit","edited_action":{"name":"ask_user_question","args":expected}}}));
    }

    #[test]
    fn a_question_tool_mixed_with_other_tools_or_without_respond_is_an_approval() {
        let args: Value = serde_json::from_str(QUESTIONS).unwrap();
        let mixed = json!({"id":"m","value":{"action_requests":[{"name":"ask_user_question","args":args},{"name":"execute_trade","args":{}}],
            "review_configs":[{"action_name":"ask_user_question","allowed_decisions":["respond"]},{"action_name":"execute_trade","allowed_decisions":["approve"]}]}});
        let pending = read_interrupt(&mixed, "ask_user_question").unwrap();
        assert!(!pending.questions);
        let request = pending.request(TimeoutDefaults::default()).unwrap();
        assert!(!request.is_question(), "decisions for both tools, not answers");
        assert_eq!(request.actions().len(), 2);
        assert_eq!(request.actions()[0].allowed, vec![DecisionType::Respond]);

        let schema = json!({"properties":{"type":{"const":"approve"}}});
        let pending = read_interrupt(&per_call("ask_user_question", args, schema), "ask_user_question").unwrap();
        assert!(!pending.questions);
    }

    #[test]
    fn bad_interrupts_are_errors_not_panics() {
        assert_eq!(read_interrupt(&json!({"value":{}}), "q"), Err(InterruptError::NoId));
        assert_eq!(read_interrupt(&json!({"id":"x","value":"plain text"}), "q"), Err(InterruptError::UnknownValue("x".into())));
        assert!(matches!(read_interrupt(&json!({"id":"x","value":{"action_requests":[]}}), "q"), Err(InterruptError::Invalid { .. })));
        assert!(matches!(read_interrupt(&json!({"id":"x","value":{"action_requests":[{"args":{}}]}}), "q"), Err(InterruptError::Invalid { .. })));
    }
}
