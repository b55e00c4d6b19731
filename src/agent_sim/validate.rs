//! Checks an `approval` command against the request it answers, the way a strict
//! backend would: a question wants `answers` (every question, string values, no
//! strangers); a tool-call approval wants exactly one allowed decision per action. Pure:
//! no IO, no state. The error text is what the `error` event carries after
//! "invalid approval: ".

use serde_json::{Map, Value};

/// Action names that make a request a question (PROTOCOL.md §4).
const QUESTION_TOOLS: [&str; 3] = ["ask_user_question", "AskUserQuestion", "ask_user"];
const DEFAULT_ALLOWED: [&str; 3] = ["approve", "edit", "reject"];

/// What a valid reply to a request looks like.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expect {
    /// The exact `question` texts, in order.
    Answers {
        questions: Vec<String>,
    },
    Decisions {
        actions: Vec<ExpectedAction>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ExpectedAction {
    pub(crate) name: String,
    pub(crate) allowed: Vec<String>,
}

/// A valid reply, as received.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reply {
    Decisions { decisions: Vec<Value>, user_edit_content: Option<String> },
    Answers(Map<String, Value>),
}

impl Expect {
    /// Derives the expectation from a request's actions and review configs, with the
    /// protocol's matching rule: the config whose `action_name` matches, else the i-th.
    pub(crate) fn for_request(actions: &[Value], review_configs: &[Value]) -> Expect {
        let name_of = |a: &Value| a.get("name").and_then(Value::as_str).unwrap_or("").to_owned();
        if let Some(ask) = actions.iter().find(|a| QUESTION_TOOLS.contains(&name_of(a).as_str())) {
            let questions = ask
                .pointer("/args/questions")
                .and_then(Value::as_array)
                .map(|qs| qs.iter().filter_map(|q| q.get("question").and_then(Value::as_str).map(str::to_owned)).collect())
                .unwrap_or_default();
            return Expect::Answers { questions };
        }
        let actions = actions
            .iter()
            .enumerate()
            .map(|(i, action)| {
                let name = name_of(action);
                let config =
                    review_configs.iter().find(|c| c.get("action_name").and_then(Value::as_str) == Some(name.as_str())).or_else(|| review_configs.get(i));
                let allowed = config
                    .and_then(|c| c.get("allowed_decisions"))
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                    .unwrap_or_else(|| DEFAULT_ALLOWED.map(str::to_owned).to_vec());
                ExpectedAction { name, allowed }
            })
            .collect();
        Expect::Decisions { actions }
    }
}

/// Validates `command` (the whole `approval` object) against `expect`.
pub(crate) fn check(expect: &Expect, command: &Map<String, Value>) -> Result<Reply, String> {
    match expect {
        Expect::Answers { questions } => check_answers(questions, command),
        Expect::Decisions { actions } => check_decisions(actions, command),
    }
}

fn check_answers(questions: &[String], command: &Map<String, Value>) -> Result<Reply, String> {
    if command.contains_key("decisions") {
        return Err("a question must be answered with answers, not decisions".into());
    }
    let answers = command.get("answers").and_then(Value::as_object).ok_or("answers must be an object")?;
    for (question, answer) in answers {
        if !questions.contains(question) {
            return Err(format!("unknown question {question:?}"));
        }
        if !answer.is_string() {
            return Err(format!("answer to {question:?} must be a string"));
        }
    }
    if let Some(missing) = questions.iter().find(|q| !answers.contains_key(q.as_str())) {
        return Err(format!("missing answer to {missing:?}"));
    }
    Ok(Reply::Answers(answers.clone()))
}

fn check_decisions(actions: &[ExpectedAction], command: &Map<String, Value>) -> Result<Reply, String> {
    if command.contains_key("answers") {
        return Err("a tool-call approval must be answered with decisions, not answers".into());
    }
    let decisions = command.get("decisions").and_then(Value::as_array).ok_or("decisions must be an array")?;
    if decisions.len() != actions.len() {
        return Err(format!("expected {} decision(s), one per action, got {}", actions.len(), decisions.len()));
    }
    for (i, (decision, action)) in decisions.iter().zip(actions).enumerate() {
        check_decision(i, decision, action)?;
    }
    let user_edit_content = match command.get("user_edit_content") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text.clone()),
        Some(_) => return Err("user_edit_content must be a string".into()),
    };
    Ok(Reply::Decisions { decisions: decisions.clone(), user_edit_content })
}

fn check_decision(i: usize, decision: &Value, action: &ExpectedAction) -> Result<(), String> {
    let kind = decision.get("type").and_then(Value::as_str).ok_or_else(|| format!("decision {i} has no type"))?;
    if !action.allowed.iter().any(|a| a == kind) {
        return Err(format!("decision {i} type {kind:?} is not allowed for {} (allowed: {})", action.name, action.allowed.join(", ")));
    }
    let message = decision.get("message");
    match kind {
        "edit" if !decision.pointer("/edited_action/args").is_some_and(Value::is_object) => {
            Err(format!("decision {i} (edit) needs an object edited_action.args"))
        }
        "reject" if message.is_some_and(|m| !m.is_string()) => Err(format!("decision {i} (reject) message must be a string")),
        "respond" if !message.is_some_and(Value::is_string) => Err(format!("decision {i} (respond) needs a string message")),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    fn trade_and_report() -> Expect {
        Expect::for_request(
            &[json!({"name":"execute_trade","args":{}}), json!({"name":"send_report","args":{}})],
            &[
                json!({"action_name":"send_report","allowed_decisions":["approve","reject"]}),
                json!({"action_name":"execute_trade","allowed_decisions":["approve","edit","reject"]}),
            ],
        )
    }

    #[test]
    fn configs_match_by_name_then_position_then_default() {
        let Expect::Decisions { actions } = trade_and_report() else { panic!("not decisions") };
        assert_eq!(actions[0].allowed, ["approve", "edit", "reject"]);
        assert_eq!(actions[1].allowed, ["approve", "reject"]);
        let by_default = Expect::for_request(&[json!({"name":"x"})], &[json!({"timeout":300})]);
        let Expect::Decisions { actions } = by_default else { panic!("not decisions") };
        assert_eq!(actions[0].allowed, DEFAULT_ALLOWED);
    }

    #[test]
    fn decisions_are_checked_per_action() {
        let expect = trade_and_report();
        let ok = check(&expect, &obj(json!({"decisions":[{"type":"approve"},{"type":"reject","message":"no"}]})));
        assert!(ok.is_ok());
        let edit_report = check(&expect, &obj(json!({"decisions":[{"type":"approve"},{"type":"edit","edited_action":{"args":{}}}]})));
        assert_eq!(edit_report, Err("decision 1 type \"edit\" is not allowed for send_report (allowed: approve, reject)".into()));
        let short = check(&expect, &obj(json!({"decisions":[{"type":"approve"}]})));
        assert_eq!(short, Err("expected 2 decision(s), one per action, got 1".into()));
        let bad_edit = check(&expect, &obj(json!({"decisions":[{"type":"edit","edited_action":{"args":"x"}},{"type":"approve"}]})));
        assert_eq!(bad_edit, Err("decision 0 (edit) needs an object edited_action.args".into()));
    }

    #[test]
    fn questions_want_every_answer_as_a_string() {
        let expect = Expect::for_request(&[json!({"name":"ask_user_question","args":{"questions":[{"question":"Q1"},{"question":"Q2"}]}})], &[]);
        assert_eq!(expect, Expect::Answers { questions: vec!["Q1".into(), "Q2".into()] });
        assert!(check(&expect, &obj(json!({"answers":{"Q1":"a","Q2":"b"}}))).is_ok());
        assert_eq!(check(&expect, &obj(json!({"decisions":[{"type":"approve"}]}))), Err("a question must be answered with answers, not decisions".into()));
        assert_eq!(check(&expect, &obj(json!({"answers":{"Q1":"a"}}))), Err("missing answer to \"Q2\"".into()));
        assert_eq!(check(&expect, &obj(json!({"answers":{"Q1":1,"Q2":"b"}}))), Err("answer to \"Q1\" must be a string".into()));
    }
}
