//! Reading one typed line as an answer to the current step. Pure: the line and the
//! step in, a [`UserAction`] (or what to ask next) out.

use crate::interaction::{FreeText, Question, RememberScope, UserAction};
use crate::protocol::Decision;

/// Where the person is in answering one interaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Deciding action n.
    Action(usize),
    /// The next line is the new args (JSON) for action n.
    EditJson(usize),
    /// Answering question n.
    Question(usize),
    /// The next line is free text for question n.
    Text(usize),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    Act(UserAction),
    /// Select these options, then ask for free text.
    SelectThenText(Vec<usize>),
    /// Ask for the next line as edit JSON or free text.
    Ask(Step),
    Invalid(String),
}

/// One line deciding action `index`. `offered`: the "remember" choices the request's
/// policy offers ([`crate::interaction::Interaction::remember_offered`]); with the
/// policy's session among them, `s` means it (the core maps it to the backend's own
/// "approve for session" where that means the same).
pub fn parse_action(index: usize, line: &str, offered: &[RememberScope]) -> Parsed {
    let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let rest = rest.trim();
    let decide = |decision| Parsed::Act(UserAction::Decide { action: index, decision });
    let remember = |scope| Parsed::Act(UserAction::Remember { scope });
    match word.to_lowercase().as_str() {
        "a" | "approve" | "once" => decide(Decision::Approve),
        // Parsed even when not offered: the core refuses it with a clear reason.
        "as" | "approve-session" => remember(RememberScope::Session),
        "aa" | "always" => remember(RememberScope::Always),
        "s" | "session" if offered.contains(&RememberScope::Session) => remember(RememberScope::Session),
        "s" | "session" => decide(Decision::ApproveForSession),
        "r" | "reject" => decide(Decision::Reject { message: (!rest.is_empty()).then(|| rest.to_owned()) }),
        "e" | "edit" if rest.is_empty() => Parsed::Ask(Step::EditJson(index)),
        "e" | "edit" => Parsed::Act(UserAction::EditArgs { action: index, json: rest.to_owned() }),
        "c" | "comment" => Parsed::Act(UserAction::Comment { action: index, text: rest.to_owned() }),
        _ if !offered.is_empty() => Parsed::Invalid("type a, as, aa, r [reason], e [json] or c <text>".into()),
        _ => Parsed::Invalid("type a, r [reason], e [json] or c <text>".into()),
    }
}

pub fn parse_answer(index: usize, question: &Question, line: &str) -> Parsed {
    if line.eq_ignore_ascii_case("s") || line.eq_ignore_ascii_case("skip") {
        return Parsed::Act(UserAction::Skip { question: index });
    }
    let numbers: Option<Vec<usize>> = line.split(',').map(|part| part.trim().parse::<usize>().ok().filter(|&n| n >= 1).map(|n| n - 1)).collect();
    let Some(chosen) = numbers else {
        // Not a list of numbers: it is typed text.
        return Parsed::Act(UserAction::OtherText { question: index, text: line.to_owned() });
    };
    let other_number = (question.free_text == FreeText::Other).then_some(question.options.len());
    let wants_text = chosen.iter().any(|&c| Some(c) == other_number || question.free_text == FreeText::InputOption(c));
    let options: Vec<usize> = chosen.into_iter().filter(|&c| Some(c) != other_number).collect();
    if wants_text {
        return Parsed::SelectThenText(options);
    }
    Parsed::Act(UserAction::Select { question: index, options })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::question::questions_from_args;
    use serde_json::json;

    fn q(input: bool) -> Question {
        let mut options = vec![json!({"label":"A"}), json!({"label":"B"})];
        if input {
            options.push(json!({"label":"Khác","input":true}));
        }
        questions_from_args(&json!({"questions":[{"question":"Q","multiSelect":true,"options":options}]})).unwrap().remove(0)
    }

    #[test]
    fn numbers_select_text_answers() {
        assert_eq!(parse_answer(0, &q(false), "2, 1"), Parsed::Act(UserAction::Select { question: 0, options: vec![1, 0] }));
        assert_eq!(parse_answer(0, &q(false), "Năng lượng"), Parsed::Act(UserAction::OtherText { question: 0, text: "Năng lượng".into() }));
        assert_eq!(parse_answer(0, &q(false), "S"), Parsed::Act(UserAction::Skip { question: 0 }));
    }

    #[test]
    fn choosing_the_free_text_slot_asks_for_text() {
        assert_eq!(parse_answer(0, &q(true), "1,3"), Parsed::SelectThenText(vec![0, 2]));
        assert_eq!(parse_answer(0, &q(false), "3"), Parsed::SelectThenText(vec![]));
    }

    #[test]
    fn decisions() {
        assert_eq!(
            parse_action(1, "r too risky", &[]),
            Parsed::Act(UserAction::Decide { action: 1, decision: Decision::Reject { message: Some("too risky".into()) } })
        );
        assert_eq!(parse_action(0, "e", &[]), Parsed::Ask(Step::EditJson(0)));
        assert_eq!(parse_action(0, "e {\"a\":1}", &[]), Parsed::Act(UserAction::EditArgs { action: 0, json: "{\"a\":1}".into() }));
        assert!(matches!(parse_action(0, "maybe", &[]), Parsed::Invalid(_)));
    }

    #[test]
    fn remembered_approvals() {
        let both = [RememberScope::Session, RememberScope::Always];
        let remember = |scope| Parsed::Act(UserAction::Remember { scope });
        assert_eq!(parse_action(0, "as", &both), remember(RememberScope::Session));
        assert_eq!(parse_action(0, "ALWAYS", &both), remember(RememberScope::Always));
        assert_eq!(parse_action(0, "aa", &[]), remember(RememberScope::Always), "the core says it is not offered");
        assert_eq!(parse_action(0, "s", &both), remember(RememberScope::Session), "the policy's session replaces Kimi's");
        assert_eq!(parse_action(0, "s", &[]), Parsed::Act(UserAction::Decide { action: 0, decision: Decision::ApproveForSession }));
        assert_eq!(parse_action(0, "once", &both), Parsed::Act(UserAction::Decide { action: 0, decision: Decision::Approve }));
        assert_eq!(parse_action(0, "x", &both), Parsed::Invalid("type a, as, aa, r [reason], e [json] or c <text>".into()));
    }
}
