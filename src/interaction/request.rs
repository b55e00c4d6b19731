//! Merging an `approval_request` (PROTOCOL.md §4): shape A (everything in the start
//! block) and shape B (key in the start block, the rest in deltas) become one
//! [`Request`] with its actions, allowed decisions, timeout, and kind.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::question::{Question, QuestionError, questions_from_args};
use crate::protocol::{ActionRequest, DecisionType, Delta, ReviewConfig};

/// Action names that make a request a question rather than a tool approval.
pub const QUESTION_TOOLS: [&str; 3] = ["ask_user_question", "AskUserQuestion", "ask_user"];

/// Timeouts used when the request names none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeoutDefaults {
    pub approval_secs: u64,
    pub question_secs: u64,
}

impl Default for TimeoutDefaults {
    fn default() -> Self {
        Self { approval_secs: 300, question_secs: 600 }
    }
}

/// One tool call under review, with what the reviewer may decide.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Action {
    pub name: String,
    pub args: Value,
    pub description: Option<String>,
    pub tool_use_id: Option<String>,
    pub allowed: Vec<DecisionType>,
    /// The backend's own words for its decisions (an ACP agent's option names, "Always
    /// Allow"), shown on the buttons in place of the bridge's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<(DecisionType, String)>,
}

impl Action {
    /// The button label of `decision`: the backend's own word for it, else `ours`.
    pub fn label_or<'a>(&'a self, decision: DecisionType, ours: &'a str) -> &'a str {
        self.labels.iter().find(|(d, _)| *d == decision).map_or(ours, |(_, label)| label.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RequestKind {
    /// Replied to with `decisions`, one per action.
    Approval { actions: Vec<Action> },
    /// Replied to with `answers`. `actions` keeps what the backend asked, for history
    /// matching.
    Questions { questions: Vec<Question>, actions: Vec<Action> },
}

/// A complete, merged request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub approval_key: String,
    pub kind: RequestKind,
    pub timeout_secs: u64,
    /// Context shown above the request (the HTTP API's `text`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
}

impl Request {
    pub fn actions(&self) -> &[Action] {
        match &self.kind {
            RequestKind::Approval { actions } | RequestKind::Questions { actions, .. } => actions,
        }
    }

    pub fn is_question(&self) -> bool {
        matches!(self.kind, RequestKind::Questions { .. })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("approval_request {0} has no actions")]
    NoActions(String),
    #[error("approval_request {key}: {source}")]
    Questions { key: String, source: QuestionError },
}

/// Collects the parts of one `approval_request` block until its `content_block_stop`.
#[derive(Debug, Clone, Default)]
pub struct RequestBuilder {
    approval_key: String,
    actions: Vec<ActionRequest>,
    review_configs: Vec<ReviewConfig>,
    timeout_seconds: Option<u64>,
}

impl RequestBuilder {
    /// From the start block (shape A fills everything, shape B only the key).
    pub fn start(approval_key: &str, actions: Vec<ActionRequest>, review_configs: Vec<ReviewConfig>, timeout_seconds: Option<u64>) -> Self {
        Self { approval_key: approval_key.to_owned(), actions, review_configs, timeout_seconds }
    }

    pub fn approval_key(&self) -> &str {
        &self.approval_key
    }

    /// Adds a delta (shape B). Actions append in order; a later timeout wins.
    pub fn apply_delta(&mut self, delta: Delta) {
        self.actions.extend(delta.actions);
        self.actions.extend(delta.action_requests);
        self.review_configs.extend(delta.review_configs);
        if delta.timeout_seconds.is_some() {
            self.timeout_seconds = delta.timeout_seconds;
        }
    }

    pub fn finish(self, defaults: TimeoutDefaults) -> Result<Request, RequestError> {
        if self.actions.is_empty() {
            return Err(RequestError::NoActions(self.approval_key));
        }
        let actions: Vec<Action> = self
            .actions
            .iter()
            .enumerate()
            .map(|(i, a)| Action {
                name: a.name.clone(),
                args: if a.args.is_null() { Value::Object(Default::default()) } else { a.args.clone() },
                description: a.description.clone(),
                tool_use_id: a.tool_use_id.clone(),
                allowed: allowed_decisions(config_for(&self.review_configs, i, &a.name)),
                labels: Vec::new(),
            })
            .collect();

        let is_question = actions.iter().any(|a| QUESTION_TOOLS.contains(&a.name.as_str()));
        let kind = if is_question {
            let mut questions: Vec<Question> = Vec::new();
            for action in actions.iter().filter(|a| QUESTION_TOOLS.contains(&a.name.as_str())) {
                let parsed = questions_from_args(&action.args).map_err(|source| RequestError::Questions { key: self.approval_key.clone(), source })?;
                questions.extend(parsed);
            }
            RequestKind::Questions { questions, actions }
        } else {
            RequestKind::Approval { actions }
        };

        let default_secs = if is_question { defaults.question_secs } else { defaults.approval_secs };
        let timeout_secs = self.timeout_seconds.or_else(|| self.review_configs.iter().filter_map(|c| c.timeout).min()).unwrap_or(default_secs);
        Ok(Request { approval_key: self.approval_key, kind, timeout_secs, context: None })
    }
}

/// The review config for action `index`: the one naming it, else the index-th, else none.
fn config_for<'a>(configs: &'a [ReviewConfig], index: usize, name: &str) -> Option<&'a ReviewConfig> {
    configs.iter().find(|c| c.action_name.as_deref() == Some(name)).or_else(|| configs.get(index))
}

fn allowed_decisions(config: Option<&ReviewConfig>) -> Vec<DecisionType> {
    match config.and_then(|c| c.allowed_decisions.as_ref()) {
        Some(names) => {
            let mut allowed: Vec<DecisionType> = Vec::new();
            for name in names {
                match DecisionType::parse(name) {
                    Some(d) if !allowed.contains(&d) => allowed.push(d),
                    Some(_) => {}
                    None => tracing::debug!(decision = %name, "ignoring unknown decision type"),
                }
            }
            allowed
        }
        None => DecisionType::DEFAULT_ALLOWED.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{BackendEvent, ContentBlock};
    use serde_json::json;

    fn action(name: &str) -> ActionRequest {
        ActionRequest { name: name.into(), args: json!({}), description: None, tool_use_id: None }
    }

    fn config(name: Option<&str>, allowed: Option<&[&str]>, timeout: Option<u64>) -> ReviewConfig {
        ReviewConfig {
            action_name: name.map(Into::into),
            allowed_decisions: allowed.map(|a| a.iter().map(|s| s.to_string()).collect()),
            timeout,
            require_approval: None,
        }
    }

    #[test]
    fn shape_a_and_shape_b_merge_to_the_same_request() {
        let a = RequestBuilder::start("k", vec![action("t")], vec![config(None, None, Some(60))], None).finish(TimeoutDefaults::default()).unwrap();
        let mut b = RequestBuilder::start("k", vec![], vec![], None);
        b.apply_delta(Delta { action_requests: vec![action("t")], review_configs: vec![config(None, None, Some(60))], ..Delta::default() });
        assert_eq!(a, b.finish(TimeoutDefaults::default()).unwrap());
        assert_eq!(a.timeout_secs, 60);
    }

    #[test]
    fn actions_keep_start_then_delta_order() {
        let mut b = RequestBuilder::start("k", vec![action("first")], vec![], None);
        b.apply_delta(Delta { action_requests: vec![action("second")], ..Delta::default() });
        b.apply_delta(Delta { actions: vec![action("third")], ..Delta::default() });
        let names: Vec<_> = b.finish(TimeoutDefaults::default()).unwrap().actions().iter().map(|a| a.name.clone()).collect();
        assert_eq!(names, ["first", "second", "third"]);
    }

    #[test]
    fn review_config_by_name_then_by_index_then_default() {
        let configs = vec![config(Some("b"), Some(&["approve", "reject"]), None), config(None, Some(&["approve", "respond", "approve_for_session"]), None)];
        let r = RequestBuilder::start("k", vec![action("a"), action("b"), action("c")], configs, None).finish(TimeoutDefaults::default()).unwrap();
        use DecisionType::*;
        // "a" has no named config: the 0th one applies (it names "b", but the rule is by index).
        assert_eq!(r.actions()[0].allowed, vec![Approve, Reject]);
        assert_eq!(r.actions()[1].allowed, vec![Approve, Reject]);
        // "c" falls to defaults: there is no 2nd config.
        assert_eq!(r.actions()[2].allowed, vec![Approve, Edit, Reject]);
        let r = RequestBuilder::start(
            "k",
            vec![action("x"), action("y")],
            vec![config(Some("q"), None, None), config(None, Some(&["approve", "respond", "approve_always", "approve_for_session"]), None)],
            None,
        )
        .finish(TimeoutDefaults::default())
        .unwrap();
        assert_eq!(r.actions()[1].allowed, vec![Approve, Respond, ApproveForSession], "unknown types are dropped");
    }

    #[test]
    fn timeout_delta_then_smallest_config_then_default_by_kind() {
        let mk = |configs, delta: Option<u64>, name: &str| {
            let mut b = RequestBuilder::start("k", vec![], configs, None);
            let mut a = action(name);
            a.args = json!({"questions":[{"question":"Q","options":[{"label":"A"}]}]});
            b.apply_delta(Delta { action_requests: vec![a], timeout_seconds: delta, ..Delta::default() });
            b.finish(TimeoutDefaults { approval_secs: 300, question_secs: 600 }).unwrap().timeout_secs
        };
        assert_eq!(mk(vec![config(None, None, Some(90))], Some(30), "t"), 30);
        assert_eq!(mk(vec![config(None, None, Some(90)), config(None, None, Some(45))], None, "t"), 45);
        assert_eq!(mk(vec![], None, "t"), 300);
        assert_eq!(mk(vec![], None, "ask_user_question"), 600);
        assert_eq!(mk(vec![], None, "AskUserQuestion"), 600);
        assert_eq!(mk(vec![], None, "ask_user"), 600);
    }

    #[test]
    fn no_actions_is_an_error() {
        let err = RequestBuilder::start("k", vec![], vec![], None).finish(TimeoutDefaults::default());
        assert_eq!(err, Err(RequestError::NoActions("k".into())));
    }

    #[test]
    fn seed_000_events_merge_into_two_questions() {
        let start: BackendEvent = serde_json::from_str(include_str!("../../tests/fixtures/seed000/01_stream_approval_request_start.json")).unwrap();
        let delta: BackendEvent = serde_json::from_str(include_str!("../../tests/fixtures/seed000/02_stream_approval_request_delta_questions.json")).unwrap();
        let BackendEvent::ContentBlockStart {
            content_block: ContentBlock::ApprovalRequest { approval_key, actions, review_configs, timeout_seconds, .. }, ..
        } = start
        else {
            panic!()
        };
        let mut b = RequestBuilder::start(&approval_key, actions, review_configs, timeout_seconds);
        let BackendEvent::ContentBlockDelta { delta, .. } = delta else { panic!() };
        b.apply_delta(delta);
        let r = b.finish(TimeoutDefaults::default()).unwrap();
        assert_eq!(r.approval_key, "session-id_1");
        assert_eq!(r.timeout_secs, 600);
        let RequestKind::Questions { questions, .. } = &r.kind else { panic!("a question") };
        assert_eq!(questions.len(), 2);
        assert_eq!(questions[0].text, "Thảo muốn tập trung vào mục tiêu nào?");
        assert_eq!(questions[1].free_text_label(), Some("Khác"));
    }
}
