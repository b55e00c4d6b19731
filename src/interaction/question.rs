//! Question normalization (PROTOCOL.md §5): every accepted question shape becomes one
//! [`Question`] with its options in the order given and its free-text slot decided.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    /// The exact question text: the key of its answer.
    pub text: String,
    pub header: Option<String>,
    pub multi_select: bool,
    pub options: Vec<QuestionOption>,
    pub free_text: FreeText,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionOption {
    pub label: String,
    pub description: Option<String>,
    /// The backend's own free-text option (e.g. "Khác"): typed text replaces its label.
    pub input: bool,
}

/// Where typed text goes, if anywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FreeText {
    /// `allow_freeform: false` and no input option.
    Disabled,
    /// The option at this index has `"input": true`; its label names the free-text slot.
    InputOption(usize),
    /// No input option: the bridge offers its own localized "Other".
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuestionError {
    #[error("question args hold no `questions` array and no `question` text")]
    NoQuestions,
    #[error("question {index}: {reason}")]
    Invalid { index: usize, reason: String },
}

impl Question {
    /// The label shown for free text, when the backend named one.
    pub fn free_text_label(&self) -> Option<&str> {
        match self.free_text {
            FreeText::InputOption(i) => self.options.get(i).map(|o| o.label.as_str()),
            _ => None,
        }
    }

    pub fn allows_free_text(&self) -> bool {
        self.free_text != FreeText::Disabled
    }
}

/// Reads the questions from an `ask_user_question` / `AskUserQuestion` / `ask_user`
/// action's args: `{questions:[…]}` (seeds 000, 001), or the seed 003 form
/// `{question, choices, allow_freeform}` as one question.
pub fn questions_from_args(args: &Value) -> Result<Vec<Question>, QuestionError> {
    if let Some(list) = args.get("questions").and_then(Value::as_array) {
        if list.is_empty() {
            return Err(QuestionError::NoQuestions);
        }
        return list.iter().enumerate().map(|(index, q)| parse_question(q).map_err(|reason| QuestionError::Invalid { index, reason })).collect();
    }
    if args.get("question").is_some() {
        return parse_question(args).map(|q| vec![q]).map_err(|reason| QuestionError::Invalid { index: 0, reason });
    }
    Err(QuestionError::NoQuestions)
}

fn parse_question(value: &Value) -> Result<Question, String> {
    let text = value.get("question").and_then(Value::as_str).filter(|t| !t.trim().is_empty()).ok_or("missing `question` text")?.to_owned();
    let header = value.get("header").and_then(Value::as_str).map(str::to_owned);
    let multi_select = ["multiSelect", "multi_select"].iter().find_map(|key| value.get(*key).and_then(Value::as_bool)).unwrap_or(false);

    let options = if let Some(options) = value.get("options").and_then(Value::as_array) {
        options.iter().map(parse_option).collect::<Result<Vec<_>, _>>()?
    } else if let Some(choices) = value.get("choices").and_then(Value::as_array) {
        choices.iter().map(parse_option).collect::<Result<Vec<_>, _>>()?
    } else {
        Vec::new()
    };

    let allow_freeform = value.get("allow_freeform").and_then(Value::as_bool).unwrap_or(true);
    let free_text = match options.iter().position(|o| o.input) {
        Some(index) => FreeText::InputOption(index),
        None if allow_freeform => FreeText::Other,
        None => FreeText::Disabled,
    };
    if options.is_empty() && free_text == FreeText::Disabled {
        return Err("no options and free text is not allowed".into());
    }
    Ok(Question { text, header, multi_select, options, free_text })
}

/// An option is `{label, description?, input?}`, or a bare string (seed 003 choices).
fn parse_option(value: &Value) -> Result<QuestionOption, String> {
    if let Some(label) = value.as_str() {
        return Ok(QuestionOption { label: label.to_owned(), description: None, input: false });
    }
    let label = value.get("label").and_then(Value::as_str).ok_or("an option has no `label`")?.to_owned();
    Ok(QuestionOption {
        label,
        description: value.get("description").and_then(Value::as_str).map(str::to_owned),
        input: value.get("input").and_then(Value::as_bool).unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn input_option_names_the_free_text_slot() {
        let qs = questions_from_args(&json!({"questions":[{
            "question":"Q?","multiSelect":false,
            "options":[{"label":"A"},{"label":"Khác","description":"Nhập","input":true}]}]}))
        .unwrap();
        assert_eq!(qs[0].free_text, FreeText::InputOption(1));
        assert_eq!(qs[0].free_text_label(), Some("Khác"));
        assert_eq!(qs[0].options.len(), 2, "the bridge never adds options");
    }

    #[test]
    fn both_multi_select_spellings() {
        for key in ["multiSelect", "multi_select"] {
            let qs = questions_from_args(&json!({"questions":[{"question":"Q?", key: true, "options":[{"label":"A"}]}]})).unwrap();
            assert!(qs[0].multi_select, "{key}");
        }
    }

    #[test]
    fn seed_003_choices_form() {
        let qs = questions_from_args(&json!({"question":"Which DB?","choices":["Postgres","SQLite"],"allow_freeform":false})).unwrap();
        assert_eq!(qs.len(), 1);
        assert_eq!(qs[0].options.iter().map(|o| o.label.as_str()).collect::<Vec<_>>(), ["Postgres", "SQLite"]);
        assert_eq!(qs[0].free_text, FreeText::Disabled);
        let qs = questions_from_args(&json!({"question":"Which DB?","choices":["A"]})).unwrap();
        assert_eq!(qs[0].free_text, FreeText::Other, "allow_freeform defaults to true");
    }

    #[test]
    fn bad_shapes_are_named() {
        assert_eq!(questions_from_args(&json!({})), Err(QuestionError::NoQuestions));
        assert_eq!(questions_from_args(&json!({"questions":[]})), Err(QuestionError::NoQuestions));
        assert!(matches!(questions_from_args(&json!({"questions":[{"options":[]}]})), Err(QuestionError::Invalid { index: 0, .. })));
        assert!(matches!(questions_from_args(&json!({"questions":[{"question":"Q","options":[{"x":1}]}]})), Err(QuestionError::Invalid { index: 0, .. })));
    }
}
