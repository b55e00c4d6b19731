//! The body of `POST /v1/requests` (PROTOCOL.md §8) and its validation into the
//! core's [`Request`], the chats it is shown in, and who may answer it.
//!
//! Every request shape the seeds use is accepted: `actions` + `review_configs`
//! (seed 002), `action_requests` (seed 000 shape B), `questions` with `multiSelect` or
//! `multi_select` and `input` options (seeds 000, 001, 004), and `question` +
//! `choices` + `allow_freeform` (seed 003). They go through the same merging as the
//! stream protocol ([`RequestBuilder`]), so a pushed request means exactly what the
//! same request streamed would mean. Errors name the offending field.
//!
//! An approval may carry its own decision `policy` (quorum, approvers, escalation,
//! fallback), validated by the core's [`PolicyTerms`] with `show_in` chats parsed as
//! `routing.channels` are and held to the enabled platforms, like targets. A matching
//! `[[policies]]` config entry still overrides it when the engine takes the request.

use std::cell::RefCell;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use super::error::ApiError;
use crate::interaction::chat::{Networks, TargetFields};
use crate::interaction::policy::spec::PolicyTerms;
use crate::interaction::policy::{Known, Policy};
use crate::interaction::{Approvers, Request, RequestBuilder, RequestError, TimeoutDefaults};
use crate::protocol::{ActionRequest, ReviewConfig};
use crate::store::ChatKey;

/// The longest timeout a request may ask for: 30 days.
pub const MAX_TIMEOUT_SECS: u64 = 30 * 24 * 3600;

/// A request for a human decision or answer.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct PushBody {
    /// Your key for this request; generated when absent. Pushing the same body under
    /// the same key again is safe (200 with the current state); another body is 409.
    pub approval_key: Option<String>,
    /// Optional grouping, shown and audited.
    pub session_id: Option<String>,
    /// Where to show it; at least one.
    #[serde(default)]
    pub targets: Vec<Target>,
    /// `"platform:user_id"` entries; when absent, the configured approvers decide,
    /// and with none configured anyone who sees the request may answer.
    pub approvers: Option<Vec<String>>,
    /// Groups whose members may answer, each as its platform writes a group id (the
    /// served document names every platform's form).
    pub approver_roles: Option<Vec<String>>,
    /// Context shown above the request.
    pub text: Option<String>,
    pub timeout_seconds: Option<u64>,
    /// POSTed the request's state, signed, once it is no longer pending.
    pub callback_url: Option<String>,
    /// Tool calls to approve (seed 002, LangChain HumanInTheLoopMiddleware).
    pub actions: Option<Vec<ApiAction>>,
    /// The same, under seed 000's name.
    pub action_requests: Option<Vec<ApiAction>>,
    /// With `actions` or `action_requests`: what each may be decided.
    pub review_configs: Option<Vec<ApiReviewConfig>>,
    /// 1–4 structured questions (seeds 000, 001, 004).
    pub questions: Option<Vec<ApiQuestion>>,
    /// One question with plain choices (seed 003).
    pub question: Option<String>,
    pub choices: Option<Vec<String>>,
    /// With `question`: whether typed text is accepted (default true).
    pub allow_freeform: Option<bool>,
    /// A decision policy for this approval (tool calls only; refused on questions).
    /// A matching `[[policies]]` entry of the bridge's config overrides it.
    pub policy: Option<PolicyTerms>,
}

/// A chat, channel or person to show the request to: `platform` and the fields its
/// platform's target grammar names (`chat_id`, `channel_id`, `thread_id`, `user_id`,
/// …); the OpenAPI document lists each platform's ([`Networks::target_schema`]).
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct Target {
    /// A platform's name, e.g. `telegram`.
    pub platform: String,
    /// The platform's own fields.
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub fields: TargetFields,
}

#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct ApiAction {
    pub name: String,
    #[serde(default)]
    #[schema(value_type = Object)]
    pub args: Value,
    pub description: Option<String>,
    pub tool_use_id: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
pub struct ApiReviewConfig {
    pub action_name: Option<String>,
    /// Any of `approve`, `edit`, `reject`, `respond`; default the first three.
    pub allowed_decisions: Option<Vec<String>>,
    /// Seconds; the smallest applies when `timeout_seconds` is absent.
    pub timeout: Option<u64>,
}

#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct ApiQuestion {
    /// The exact text: the key of its answer.
    pub question: String,
    pub header: Option<String>,
    #[serde(rename = "multiSelect")]
    pub multi_select_camel: Option<bool>,
    pub multi_select: Option<bool>,
    #[serde(default)]
    pub options: Vec<ApiOption>,
}

#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
pub struct ApiOption {
    pub label: String,
    pub description: Option<String>,
    /// The free-text option: typed text replaces its label in the answer.
    pub input: Option<bool>,
}

/// A validated push.
#[derive(Debug, Clone)]
pub struct Validated {
    pub request: Request,
    pub targets: Vec<ChatKey>,
    pub approvers: Option<Approvers>,
    /// The request's own decision policy, validated.
    pub policy: Option<Policy>,
}

/// Validates `body` against the platforms that are enabled. The approval key must
/// already be filled in.
/// The chat platforms a pushed request may name: every one the bridge knows (so a
/// known but disabled one gets its own error), and those enabled here.
pub struct Platforms {
    pub known: Networks,
    pub enabled: Vec<&'static str>,
}

pub fn validate(body: &PushBody, approval_key: &str, platforms: &Platforms, defaults: TimeoutDefaults) -> Result<Validated, ApiError> {
    let targets = targets(&body.targets, platforms)?;
    let approvers = approvers(body, &platforms.known)?;
    if let Some(secs) = body.timeout_seconds
        && !(1..=MAX_TIMEOUT_SECS).contains(&secs)
    {
        return Err(ApiError::invalid("invalid_timeout", format!("must be between 1 and {MAX_TIMEOUT_SECS} seconds"), "timeout_seconds"));
    }
    if let Some(url) = &body.callback_url
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        return Err(ApiError::invalid("invalid_callback_url", "must be an http:// or https:// URL", "callback_url"));
    }
    let (actions, configs) = shape(body)?;
    let mut request = RequestBuilder::start(approval_key, actions, configs, body.timeout_seconds).finish(defaults).map_err(|e| match e {
        RequestError::NoActions(_) => ApiError::invalid("empty_actions", "at least one action is required", shape_field(body)),
        RequestError::Questions { source, .. } => ApiError::invalid("invalid_question", source.to_string(), shape_field(body)),
    })?;
    request.context = body.text.clone().filter(|t| !t.trim().is_empty());
    let policy = match &body.policy {
        None => None,
        Some(_) if request.is_question() => {
            return Err(ApiError::invalid("invalid_policy", "a policy applies to tool-call approvals, not to questions", "policy"));
        }
        Some(spec) => Some(policy(spec, approvers.as_ref(), platforms)?),
    };
    Ok(Validated { request, targets, approvers, policy })
}

/// The request's own policy, validated by the core with `show_in` chats parsed as
/// `routing.channels` are and on enabled platforms only.
fn policy(terms: &PolicyTerms, approvers: Option<&Approvers>, platforms: &Platforms) -> Result<Policy, ApiError> {
    // The core's check only says yes or no; remember why a chat was refused, so a chat
    // on a disabled platform gets the same error as a target on one.
    let disabled: RefCell<Option<String>> = RefCell::new(None);
    let is_target = |text: &str| match platforms.known.parse_chat(text) {
        Some(chat) if platforms.enabled.contains(&chat.platform.as_str()) => true,
        Some(chat) => {
            disabled.replace(Some(chat.platform));
            false
        }
        None => false,
    };
    let policy = terms.to_request_policy(&Known { is_target: &is_target, networks: &platforms.known }).map_err(|e| match disabled.take() {
        Some(platform) if e.key.ends_with(".show_in") => ApiError::invalid("platform_not_enabled", format!("{platform} is not enabled on this bridge"), e.key),
        _ => ApiError::invalid("invalid_policy", e.reason, e.key),
    })?;
    // Without approvers of its own, the policy's quorum is reached among the request's
    // `approvers`: more votes than people would leave it pending until it expires.
    if policy.approvers.is_empty()
        && policy.approver_roles.is_empty()
        && let Some(Approvers { users, roles }) = approvers
        && roles.is_empty()
        && policy.quorum as usize > users.len()
    {
        return Err(ApiError::invalid(
            "invalid_policy",
            format!("is {} but only {} approvers are listed (and no approver_roles)", policy.quorum, users.len()),
            "policy.quorum",
        ));
    }
    Ok(policy)
}

/// The name of the shape the body uses, for error fields.
fn shape_field(body: &PushBody) -> &'static str {
    if body.questions.is_some() {
        "questions"
    } else if body.question.is_some() {
        "question"
    } else if body.action_requests.is_some() {
        "action_requests"
    } else {
        "actions"
    }
}

/// Exactly one shape, as the actions and review configs the merger takes.
fn shape(body: &PushBody) -> Result<(Vec<ActionRequest>, Vec<ReviewConfig>), ApiError> {
    let present: Vec<&str> = [
        ("actions", body.actions.is_some()),
        ("action_requests", body.action_requests.is_some()),
        ("questions", body.questions.is_some()),
        ("question", body.question.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, here)| here.then_some(name))
    .collect();
    match present.as_slice() {
        [] => return Err(ApiError::invalid("missing_shape", "give one of actions, action_requests, questions, or question + choices", "actions")),
        [_] => {}
        [_, second, ..] => {
            return Err(ApiError::invalid("conflicting_shapes", format!("give exactly one request shape, not {}", present.join(" and ")), *second));
        }
    }
    if body.review_configs.is_some() && (body.questions.is_some() || body.question.is_some()) {
        return Err(ApiError::invalid("conflicting_shapes", "review_configs go with actions or action_requests", "review_configs"));
    }
    if body.choices.is_some() && body.question.is_none() {
        return Err(ApiError::invalid("conflicting_shapes", "choices go with question", "choices"));
    }
    if let Some(actions) = body.actions.as_ref().or(body.action_requests.as_ref()) {
        let field = shape_field(body);
        for (i, action) in actions.iter().enumerate() {
            if action.name.trim().is_empty() {
                return Err(ApiError::invalid("invalid_field", "an action needs a name", format!("{field}[{i}].name")));
            }
            if !(action.args.is_object() || action.args.is_null()) {
                return Err(ApiError::invalid("invalid_field", "args must be a JSON object", format!("{field}[{i}].args")));
            }
        }
        let configs = body.review_configs.iter().flatten().map(review_config).collect();
        return Ok((actions.iter().map(action_request).collect(), configs));
    }
    if let Some(questions) = &body.questions {
        if questions.is_empty() {
            return Err(ApiError::invalid("empty_questions", "at least one question is required", "questions"));
        }
        for (i, q) in questions.iter().enumerate() {
            if q.question.trim().is_empty() {
                return Err(ApiError::invalid("invalid_question", "the question text is empty", format!("questions[{i}].question")));
            }
            if q.options.is_empty() {
                return Err(ApiError::invalid("empty_options", "a question needs at least one option", format!("questions[{i}].options")));
            }
            if let Some(j) = q.options.iter().position(|o| o.label.trim().is_empty()) {
                return Err(ApiError::invalid("invalid_question", "an option label is empty", format!("questions[{i}].options[{j}].label")));
            }
        }
        let args = json!({ "questions": questions.iter().map(question_json).collect::<Vec<_>>() });
        return Ok((vec![ActionRequest { name: "ask_user_question".into(), args, description: None, tool_use_id: None }], Vec::new()));
    }
    let question = body.question.as_deref().unwrap_or_default();
    if question.trim().is_empty() {
        return Err(ApiError::invalid("invalid_question", "the question text is empty", "question"));
    }
    let allow_freeform = body.allow_freeform.unwrap_or(true);
    let choices = body.choices.clone().unwrap_or_default();
    if choices.is_empty() && !allow_freeform {
        return Err(ApiError::invalid("empty_options", "no choices and allow_freeform is false: nothing could be answered", "choices"));
    }
    if let Some(j) = choices.iter().position(|c| c.trim().is_empty()) {
        return Err(ApiError::invalid("invalid_question", "a choice is empty", format!("choices[{j}]")));
    }
    let args = json!({ "question": question, "choices": choices, "allow_freeform": allow_freeform });
    Ok((vec![ActionRequest { name: "ask_user".into(), args, description: None, tool_use_id: None }], Vec::new()))
}

fn action_request(a: &ApiAction) -> ActionRequest {
    ActionRequest { name: a.name.clone(), args: a.args.clone(), description: a.description.clone(), tool_use_id: a.tool_use_id.clone() }
}

fn review_config(c: &ApiReviewConfig) -> ReviewConfig {
    ReviewConfig { action_name: c.action_name.clone(), allowed_decisions: c.allowed_decisions.clone(), timeout: c.timeout, require_approval: None }
}

/// A question back in the seeds' JSON, for the one question parser the core has.
fn question_json(q: &ApiQuestion) -> Value {
    let mut out = Map::new();
    out.insert("question".into(), json!(q.question));
    if let Some(header) = &q.header {
        out.insert("header".into(), json!(header));
    }
    out.insert("multiSelect".into(), json!(q.multi_select_camel.or(q.multi_select).unwrap_or(false)));
    let options: Vec<Value> = q.options.iter().map(|o| json!({ "label": o.label, "description": o.description, "input": o.input.unwrap_or(false) })).collect();
    out.insert("options".into(), Value::Array(options));
    Value::Object(out)
}

fn targets(targets: &[Target], platforms: &Platforms) -> Result<Vec<ChatKey>, ApiError> {
    if targets.is_empty() {
        return Err(ApiError::invalid("no_targets", "at least one target is required", "targets"));
    }
    let mut chats = Vec::new();
    for (i, t) in targets.iter().enumerate() {
        let field = |name: &str| format!("targets[{i}].{name}");
        if !platforms.known.knows(&t.platform) {
            let known = platforms.known.listed();
            return Err(ApiError::invalid("unknown_platform", format!("unknown platform `{}` ({known})", t.platform), field("platform")));
        }
        if !platforms.enabled.contains(&t.platform.as_str()) {
            return Err(ApiError::invalid("platform_not_enabled", format!("{} is not enabled on this bridge", t.platform), field("platform")));
        }
        let chat = platforms.known.target_chat(&t.platform, &t.fields).map_err(|(name, message)| ApiError::invalid("invalid_target", message, field(name)))?;
        if !chats.contains(&chat) {
            chats.push(chat);
        }
    }
    Ok(chats)
}

/// The longest approver group id taken (Mattermost's `channel:` and 26 characters
/// fit well within): a Teams team or channel id (about 50
/// characters, as long as the platform's grammar allows); Discord's and Slack's are
/// far shorter.
const MAX_GROUP_ID: usize = 400;

fn approvers(body: &PushBody, networks: &Networks) -> Result<Option<Approvers>, ApiError> {
    if body.approvers.is_none() && body.approver_roles.is_none() {
        return Ok(None);
    }
    let mut users = Vec::new();
    for (i, entry) in body.approvers.iter().flatten().enumerate() {
        match networks.parse_user(entry) {
            Some(person) => users.push(person),
            None => return Err(ApiError::invalid("invalid_approver", format!("`{entry}` is not platform:user_id"), format!("approvers[{i}]"))),
        }
    }
    let roles = body.approver_roles.clone().unwrap_or_default();
    if let Some((i, role)) = roles.iter().enumerate().find(|(_, r)| !networks.is_group_id(r) || r.len() > MAX_GROUP_ID) {
        return Err(ApiError::invalid("invalid_approver", format!("`{role}` is not {}", networks.group_forms()), format!("approver_roles[{i}]")));
    }
    if users.is_empty() && roles.is_empty() {
        return Err(ApiError::invalid("invalid_approver", "approvers is empty: nobody could answer", "approvers"));
    }
    Ok(Some(Approvers { users, roles }))
}
