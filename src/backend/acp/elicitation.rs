//! An ACP form elicitation (`elicitation/create`, `mode: "form"`) as the usual
//! question card, and the person's answers back as the form's content. Pure.
//!
//! ACP's elicitation (unstable in protocol v1, shaped after MCP's) asks for a flat
//! object: each property of `requestedSchema` is one field. Each field becomes one
//! question, so a form of 1–4 fields is one card:
//!
//! | the field | the question | the value sent back |
//! |---|---|---|
//! | `string` with `enum` / `oneOf` | one choice, its options the values (or `oneOf` titles) | the chosen value (`const`) |
//! | `array` of `enum` / `anyOf` items | several choices | the chosen values, in option order |
//! | `boolean` | Yes / No | `true` / `false` |
//! | `string` | typed text | the text as typed |
//! | `number`, `integer` | typed text | the number; text that is not one declines the form |
//!
//! A skipped field is left out of `content`; skipping a `required` one declines the
//! form, as does an answer the field cannot take. The agent is answered
//! `{"action":"accept","content":{…}}`, `{"action":"decline"}`, or
//! `{"action":"cancel"}` when the card expires or the turn is cancelled. A URL-mode
//! elicitation, more than 4 fields, or a field of another type cannot be shown: the
//! agent is answered `decline` and the chat is told why.

use serde_json::{Map, Value, json};

use crate::interaction::{NO_PREFERENCE, decode_labels};
use crate::protocol::{ActionRequest, Answers};

/// The most fields one card can ask (a question card holds 1–4 questions).
pub const MAX_FIELDS: usize = 4;

/// What the bridge shows the question as, for a request the agent calls by that name.
pub const QUESTION_ACTION: &str = "ask_user_question";

/// A form being answered: its fields, in the order asked.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    fields: Vec<Field>,
}

#[derive(Debug, Clone, PartialEq)]
struct Field {
    /// The property's name in `content`.
    key: String,
    /// The question text shown, and the key of its answer.
    question: String,
    required: bool,
    kind: FieldKind,
}

#[derive(Debug, Clone, PartialEq)]
enum FieldKind {
    Text,
    Number {
        integer: bool,
    },
    Boolean,
    /// (value, label) pairs; `several` for a multi-select array.
    Choice {
        options: Vec<(String, String)>,
        several: bool,
    },
}

const YES: &str = "Yes";
const NO: &str = "No";

/// The form asked in `params`, and the question action showing it.
pub fn read(params: &Value) -> Result<(Form, ActionRequest), String> {
    match params.get("mode").and_then(Value::as_str) {
        Some("form") | None => {}
        Some(other) => return Err(format!("it asks in {other} mode; hitl-bridge shows forms only")),
    }
    let schema = params.get("requestedSchema").ok_or("it has no requestedSchema")?;
    let properties = schema.get("properties").and_then(Value::as_object).filter(|p| !p.is_empty()).ok_or("its form has no fields")?;
    if properties.len() > MAX_FIELDS {
        return Err(format!("its form has {} fields; a card asks at most {MAX_FIELDS}", properties.len()));
    }
    let required: Vec<&str> = schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let mut fields = Vec::new();
    let mut questions = Vec::new();
    // The schema's own order, as the agent wrote it (serde_json keeps it).
    for (key, property) in properties {
        let (field, question) = field(key, property, required.contains(&key.as_str()), &fields)?;
        fields.push(field);
        questions.push(question);
    }
    let action = ActionRequest {
        name: QUESTION_ACTION.into(),
        args: json!({"questions":questions}),
        description: None,
        tool_use_id: params.get("toolCallId").and_then(Value::as_str).map(str::to_owned),
    };
    Ok((Form { fields }, action))
}

/// One property as a field and its question's args.
fn field(key: &str, property: &Value, required: bool, before: &[Field]) -> Result<(Field, Value), String> {
    let title = text_at(property, "title");
    let description = text_at(property, "description");
    let mut question = description.or(title).unwrap_or(key).to_owned();
    if before.iter().any(|f| f.question == question) {
        // Answers are keyed by the question text, so two fields never share one.
        question = format!("{question} ({key})");
    }
    let kind = match property.get("type").and_then(Value::as_str) {
        Some("string") => match choices(property, "oneOf", "enum") {
            Some(options) => FieldKind::Choice { options, several: false },
            None => FieldKind::Text,
        },
        Some("array") => {
            let items = property.get("items").unwrap_or(&Value::Null);
            let options = choices(items, "anyOf", "enum").ok_or_else(|| format!("field `{key}` is a list without choices"))?;
            FieldKind::Choice { options, several: true }
        }
        Some("boolean") => FieldKind::Boolean,
        Some("number") => FieldKind::Number { integer: false },
        Some("integer") => FieldKind::Number { integer: true },
        other => return Err(format!("field `{key}` has type {other:?}, which a card cannot ask")),
    };
    let mut args = json!({"question":question});
    if let Some(header) = title.filter(|t| *t != question) {
        args["header"] = json!(header);
    }
    match &kind {
        FieldKind::Choice { options, several } => {
            args["options"] = Value::Array(options.iter().map(|(_, label)| json!({"label":label})).collect());
            args["multi_select"] = json!(several);
            args["allow_freeform"] = json!(false);
        }
        FieldKind::Boolean => {
            args["options"] = json!([{"label":YES},{"label":NO}]);
            args["allow_freeform"] = json!(false);
        }
        FieldKind::Text | FieldKind::Number { .. } => args["options"] = json!([]),
    }
    Ok((Field { key: key.to_owned(), question, required, kind }, args))
}

/// A choice's (value, label) pairs: titled (`oneOf` / `anyOf` of `{const, title}`)
/// or plain (`enum`).
fn choices(schema: &Value, titled: &str, plain: &str) -> Option<Vec<(String, String)>> {
    if let Some(list) = schema.get(titled).and_then(Value::as_array) {
        let options: Vec<(String, String)> = list
            .iter()
            .filter_map(|o| {
                let value = o.get("const").and_then(Value::as_str)?;
                Some((value.to_owned(), text_at(o, "title").unwrap_or(value).to_owned()))
            })
            .collect();
        return (!options.is_empty()).then_some(options);
    }
    let list = schema.get(plain).and_then(Value::as_array)?;
    let options: Vec<(String, String)> = list.iter().filter_map(Value::as_str).map(|v| (v.to_owned(), v.to_owned())).collect();
    (!options.is_empty()).then_some(options)
}

fn text_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str).filter(|s| !s.trim().is_empty())
}

impl Form {
    /// The agent's answer for the person's `answers`: `accept` with the content, or
    /// `decline` (with why) when a required field was skipped or an answer does not
    /// fit its field.
    pub fn result(&self, answers: &Answers) -> Result<Value, String> {
        let mut content = Map::new();
        for field in &self.fields {
            let answer = answers.get(&field.question).filter(|a| !a.is_empty() && *a != NO_PREFERENCE);
            let Some(answer) = answer else {
                if field.required {
                    return Err(format!("“{}” is required and was skipped", field.question));
                }
                continue;
            };
            content.insert(field.key.clone(), field.value_of(answer)?);
        }
        Ok(json!({"action":"accept","content":content}))
    }
}

impl Field {
    fn value_of(&self, answer: &str) -> Result<Value, String> {
        let unfit = || format!("“{answer}” does not answer “{}”", self.question);
        match &self.kind {
            FieldKind::Text => Ok(json!(answer)),
            FieldKind::Number { integer: true } => answer.trim().parse::<i64>().map(Value::from).map_err(|_| unfit()),
            FieldKind::Number { integer: false } => {
                answer.trim().parse::<f64>().ok().filter(|n| n.is_finite()).and_then(serde_json::Number::from_f64).map(Value::Number).ok_or_else(unfit)
            }
            FieldKind::Boolean => match answer {
                YES => Ok(json!(true)),
                NO => Ok(json!(false)),
                _ => Err(unfit()),
            },
            FieldKind::Choice { options, several } => {
                let labels: Vec<String> = options.iter().map(|(_, label)| label.clone()).collect();
                let value_of = |label: &str| options.iter().find(|(_, l)| l == label).map(|(value, _)| json!(value));
                if *several {
                    decode_labels(&labels, answer).iter().map(|label| value_of(label).ok_or_else(unfit)).collect::<Result<Vec<_>, _>>().map(Value::Array)
                } else {
                    value_of(answer).ok_or_else(unfit)
                }
            }
        }
    }
}

/// The answer that declines the form.
pub fn declined() -> Value {
    json!({"action":"decline"})
}

/// The answer when nobody answered (the card expired, the turn was cancelled).
pub fn cancelled() -> Value {
    json!({"action":"cancel"})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::question::questions_from_args;

    /// A form in the shape of ACP's `ElicitationSchema`: one field of each kind.
    fn deploy_form() -> Value {
        json!({"sessionId":"s1","mode":"form","toolCallId":"tc-9","message":"Before I deploy:",
            "requestedSchema":{"type":"object","required":["env","confirm"],"properties":{
                "env":{"type":"string","title":"Environment","oneOf":[{"const":"stg","title":"Staging"},{"const":"prod","title":"Production"}]},
                "regions":{"type":"array","title":"Regions","items":{"type":"string","enum":["eu, west","us"]}},
                "confirm":{"type":"boolean","title":"Run the migration?"},
                "replicas":{"type":"integer","title":"Replicas","description":"How many replicas?"}}}})
    }

    fn answers(pairs: &[(&str, &str)]) -> Answers {
        Answers(pairs.iter().map(|(q, a)| (q.to_string(), a.to_string())).collect())
    }

    #[test]
    fn each_field_is_one_question_of_its_kind() {
        let (_, action) = read(&deploy_form()).unwrap();
        assert_eq!(action.name, QUESTION_ACTION);
        assert_eq!(action.tool_use_id.as_deref(), Some("tc-9"));
        let questions = questions_from_args(&action.args).unwrap();
        let shown: Vec<(&str, bool, Vec<&str>, bool)> =
            questions.iter().map(|q| (q.text.as_str(), q.multi_select, q.options.iter().map(|o| o.label.as_str()).collect(), q.allows_free_text())).collect();
        assert_eq!(
            shown,
            vec![
                ("Environment", false, vec!["Staging", "Production"], false),
                ("Regions", true, vec!["eu, west", "us"], false),
                ("Run the migration?", false, vec!["Yes", "No"], false),
                ("How many replicas?", false, vec![], true),
            ]
        );
        assert_eq!(questions[3].header.as_deref(), Some("Replicas"));
    }

    #[test]
    fn answers_become_the_content_the_schema_asked_for() {
        let (form, _) = read(&deploy_form()).unwrap();
        let got = form
            .result(&answers(&[("Environment", "Production"), ("Regions", "eu, west, us"), ("Run the migration?", "Yes"), ("How many replicas?", " 3 ")]))
            .unwrap();
        assert_eq!(got, json!({"action":"accept","content":{"env":"prod","regions":["eu, west","us"],"confirm":true,"replicas":3}}));
    }

    #[test]
    fn a_skipped_optional_field_is_left_out_and_a_skipped_required_one_declines() {
        let (form, _) = read(&deploy_form()).unwrap();
        let got = form.result(&answers(&[
            ("Environment", "Staging"),
            ("Regions", NO_PREFERENCE),
            ("Run the migration?", "No"),
            ("How many replicas?", NO_PREFERENCE),
        ]));
        assert_eq!(got.unwrap(), json!({"action":"accept","content":{"env":"stg","confirm":false}}));
        let err = form.result(&answers(&[("Environment", NO_PREFERENCE), ("Run the migration?", "No")])).unwrap_err();
        assert!(err.contains("Environment") && err.contains("required"), "{err}");
    }

    #[test]
    fn an_answer_the_field_cannot_take_declines() {
        let (form, _) = read(&deploy_form()).unwrap();
        let err = form.result(&answers(&[("Environment", "Staging"), ("Run the migration?", "Yes"), ("How many replicas?", "three")])).unwrap_err();
        assert!(err.contains("three"), "{err}");
        assert!(form.result(&answers(&[("Environment", "Dev"), ("Run the migration?", "Yes")])).is_err(), "not one of the options");
        assert!(form.result(&answers(&[("Environment", "Staging"), ("Run the migration?", "Yes"), ("Regions", "us, mars")])).is_err());
    }

    #[test]
    fn numbers_and_free_text_keep_what_was_typed() {
        let params = json!({"mode":"form","requestedSchema":{"properties":{"why":{"type":"string"},"ratio":{"type":"number","title":"Ratio"}}}});
        let (form, _) = read(&params).unwrap();
        assert_eq!(form.result(&answers(&[("why", "  because  "), ("Ratio", "0.5")])).unwrap()["content"], json!({"why":"  because  ","ratio":0.5}));
        assert!(form.result(&answers(&[("Ratio", "NaN")])).is_err(), "not a finite number");
    }

    #[test]
    fn forms_a_card_cannot_ask_are_refused() {
        let url = json!({"mode":"url","elicitationId":"e1","url":"https://example.com/login","message":"Sign in"});
        assert!(read(&url).unwrap_err().contains("url mode"));
        assert!(read(&json!({"mode":"form","requestedSchema":{"properties":{}}})).is_err());
        let five: Map<String, Value> = (0..5).map(|i| (format!("f{i}"), json!({"type":"string"}))).collect();
        assert!(read(&json!({"mode":"form","requestedSchema":{"properties":five}})).unwrap_err().contains("5 fields"));
        assert!(read(&json!({"mode":"form","requestedSchema":{"properties":{"o":{"type":"object"}}}})).is_err());
    }

    #[test]
    fn two_fields_with_one_title_are_told_apart() {
        let params = json!({"mode":"form","requestedSchema":{"properties":{"a":{"type":"string","title":"Name"},"b":{"type":"string","title":"Name"}}}});
        let (form, action) = read(&params).unwrap();
        let texts: Vec<String> = questions_from_args(&action.args).unwrap().into_iter().map(|q| q.text).collect();
        assert_eq!(texts, vec!["Name", "Name (b)"]);
        assert_eq!(form.result(&answers(&[("Name", "x"), ("Name (b)", "y")])).unwrap()["content"], json!({"a":"x","b":"y"}));
    }
}
