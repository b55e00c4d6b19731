//! The MCP server (rmcp): the tools of [`super::tools`], each pushed through the
//! bridge's `/v1` ([`super::bridge_api`]) and waited on until a person answers.
//!
//! While a tool waits it long-polls the request; between polls, when the client sent
//! a progress token, it reports `waiting for a decision in telegram:-100…, 42 s left`.
//! A client's `notifications/cancelled` cancels the request (every copy of the card
//! locks as cancelled). An expired request is a tool error (`isError: true`) naming
//! the deadline, not a protocol error, so the agent can read why; so are bad arguments
//! (naming the argument), as MCP asks of input errors, so the model can correct them.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ErrorData, Implementation, ProgressNotificationParam, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, tool, tool_handler, tool_router};
use serde_json::{Value, json};

use super::bridge_api::{ApiCallError, BridgeApi};
use super::tools::{self, ApprovalInput, Ending, InputError, PromptInput, QuestionsInput, Targets};
use crate::interaction::chat::Networks;

/// Where a tool's description names the chats people answer in.
const CHATS: &str = "{chats}";

/// The chats people answer in, as a description names them: the platforms' names
/// (`chat (telegram, discord or console)`), handed down as `networks`.
fn chats(networks: &Networks) -> String {
    format!("chat ({})", networks.listed())
}

/// Where the tools send their requests, and as whom.
#[derive(Clone)]
pub struct Upstream {
    /// The bridge's base URL (`http://127.0.0.1:8790`).
    pub base: String,
    /// The token every call uses (stdio); `None` inside the bridge, where each MCP
    /// request's own `Authorization` header is forwarded.
    pub token: Option<String>,
    pub http: reqwest::Client,
    /// The largest `/v1` body the bridge accepts (`http.max_body_bytes`): a bigger one
    /// is refused here, by its size, rather than cut off mid-upload.
    pub max_body_bytes: usize,
}

/// One MCP connection's server: rmcp makes one per session.
#[derive(Clone)]
pub struct HitlTools {
    upstream: Upstream,
    /// `mcp.default_targets`, and how chats are written.
    targets: Arc<Targets>,
    /// Names a generated `approval_key` when the transport has no session id (stdio).
    connection: String,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl HitlTools {
    /// A server offering `offered` of [`tools::ALL`].
    pub fn new(upstream: Upstream, targets: Arc<Targets>, offered: &[String]) -> Self {
        let mut tool_router = Self::tool_router();
        for name in tools::ALL {
            if !offered.iter().any(|o| o == name) {
                tool_router.remove_route(name);
            }
        }
        // The descriptions name the chats of the platforms this bridge knows.
        let chats = chats(&targets.networks);
        for route in tool_router.map.values_mut() {
            if let Some(description) = &route.attr.description {
                route.attr.description = Some(description.replace(CHATS, &chats).into());
            }
        }
        let connection = uuid::Uuid::new_v4().simple().to_string();
        Self { upstream, targets, connection, tool_router }
    }

    #[tool(
        name = "request_approval",
        description = "Ask a person in the team's {chats} to approve, edit or reject one or more tool calls before you run them. Blocks until they decide (or the deadline passes) and returns one decision per action: approve, edit (with edited_action: run that instead), reject (with their message), or respond, plus who decided and when."
    )]
    async fn request_approval(&self, Parameters(input): Parameters<ApprovalInput>, ctx: RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
        let key = self.key_for(input.routing.approval_key.as_deref(), &ctx);
        let asked = async { Ok(ended(tools::approval_result(&self.ask(&tools::approval_body(&input, &self.targets, key)?, &ctx).await?))) };
        finish(asked.await)
    }

    #[tool(
        name = "ask_user_question",
        description = "Ask a person in the team's {chats} 1-4 questions (single or multi select, with an optional free-text option) and wait for the answers. Returns answers (question text -> answer text, several choices joined with \", \") and selected_options (the chosen labels per question)."
    )]
    async fn ask_user_question(&self, Parameters(input): Parameters<QuestionsInput>, ctx: RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
        let key = self.key_for(input.routing.approval_key.as_deref(), &ctx);
        let asked = async { Ok(ended(tools::questions_result(&self.ask(&tools::questions_body(&input, &self.targets, key)?, &ctx).await?))) };
        finish(asked.await)
    }

    #[tool(
        name = "approval_prompt",
        description = "Claude Code's permission prompt (--permission-prompt-tool mcp__hitl__approval_prompt): a person approves, edits or denies the tool call in chat. Returns {\"behavior\":\"allow\",\"updatedInput\":{...}} or {\"behavior\":\"deny\",\"message\":\"...\"} as JSON text."
    )]
    async fn approval_prompt(&self, Parameters(input): Parameters<PromptInput>, ctx: RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
        // The tool-use id makes a retried prompt join the same request.
        let key = match &input.tool_use_id {
            Some(id) => format!("claude-{id}"),
            None => self.key_for(None, &ctx),
        };
        let asked = async {
            let state = self.ask(&tools::prompt_body(&input, &self.targets, key)?, &ctx).await?;
            // Claude Code reads the first text block as the JSON answer.
            Ok(CallToolResult::success(vec![ContentBlock::text(tools::prompt_result(&state, &input).to_string())]))
        };
        finish(asked.await)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for HitlTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("hitl-bridge", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!("Ask people in {} to approve tool calls or answer questions, and wait for them.", chats(&self.targets.networks)))
    }
}

impl HitlTools {
    /// The caller's key, or one made from the MCP session and this call's id, so a
    /// call the transport repeats joins its request.
    fn key_for(&self, given: Option<&str>, ctx: &RequestContext<RoleServer>) -> String {
        if let Some(key) = given {
            return key.to_owned();
        }
        let session =
            http_parts(ctx).and_then(|parts| parts.headers.get("mcp-session-id")?.to_str().ok().map(str::to_owned)).unwrap_or_else(|| self.connection.clone());
        let id = match serde_json::to_value(&ctx.id).unwrap_or_default() {
            Value::String(s) => s,
            other => other.to_string(),
        };
        format!("mcp-{session}-{id}")
    }

    /// The `/v1` client for this call: the fixed token, or the one the MCP request
    /// carried (already checked by [`super::http`]).
    fn api(&self, ctx: &RequestContext<RoleServer>) -> Result<BridgeApi, Failed> {
        let token = match &self.upstream.token {
            Some(token) => token.clone(),
            None => http_parts(ctx)
                .and_then(|parts| parts.headers.get(axum::http::header::AUTHORIZATION)?.to_str().ok()?.split_once(' ').map(|(_, t)| t.trim().to_owned()))
                .ok_or_else(|| Failed::Protocol(ErrorData::invalid_request("no bearer token", None)))?,
        };
        Ok(BridgeApi::new(&self.upstream.base, &token, self.upstream.http.clone(), self.upstream.max_body_bytes))
    }

    /// Pushes `body` and waits until the request leaves `pending`, reporting progress
    /// and cancelling the request if the client cancels the call.
    async fn ask(&self, body: &Value, ctx: &RequestContext<RoleServer>) -> Result<Value, Failed> {
        let api = self.api(ctx)?;
        let key = body["approval_key"].as_str().unwrap_or_default().to_owned();
        let state = api.push(body).await?;
        // rmcp drops a call's future when its session or stateless request ends; the
        // person must not go on deciding what nobody waits for.
        let watch = CancelIfDropped { api: Some(api.clone()), key: key.clone() };
        let waited = self.wait_for_decision(&api, &key, state, body, ctx).await;
        watch.disarm();
        waited
    }

    /// Waits until the request leaves `pending` ([`Self::ask`]).
    async fn wait_for_decision(&self, api: &BridgeApi, key: &str, mut state: Value, body: &Value, ctx: &RequestContext<RoleServer>) -> Result<Value, Failed> {
        let shown_in = describe_targets(&self.targets.networks, &body["targets"]);
        let progress_token = ctx.meta.get_progress_token();
        let mut polls = 0u32;
        while state["status"] == "pending" {
            if let Some(token) = &progress_token {
                polls += 1;
                let message = waiting_message(&shown_in, &state["expires_at"]);
                let _ = ctx.peer.notify_progress(ProgressNotificationParam::new(token.clone(), f64::from(polls)).with_message(message)).await;
            }
            tokio::select! {
                () = ctx.ct.cancelled() => {
                    tracing::info!(approval_key = %key, "the MCP client cancelled the call; cancelling the request");
                    if let Err(e) = api.cancel(key).await {
                        tracing::warn!(approval_key = %key, error = %e, "cannot cancel the request the client gave up on");
                    }
                    return Err(Failed::Protocol(ErrorData::internal_error("cancelled by the client", None)));
                }
                polled = api.wait(key) => state = polled?,
            }
        }
        Ok(state)
    }
}

/// Cancels the request of a call whose future is dropped before it ended.
struct CancelIfDropped {
    api: Option<BridgeApi>,
    key: String,
}

impl CancelIfDropped {
    /// The call ended on its own (answered, expired, cancelled, failed).
    fn disarm(mut self) {
        self.api = None;
    }
}

impl Drop for CancelIfDropped {
    fn drop(&mut self) {
        let (Some(api), Ok(runtime)) = (self.api.take(), tokio::runtime::Handle::try_current()) else { return };
        let key = std::mem::take(&mut self.key);
        tracing::info!(approval_key = %key, "the MCP call ended without an answer; cancelling its request");
        runtime.spawn(async move {
            if let Err(e) = api.cancel(&key).await {
                tracing::warn!(approval_key = %key, error = %e, "cannot cancel the request of an abandoned call");
            }
        });
    }
}

/// The HTTP request an MCP message came in, when it came over HTTP.
fn http_parts(ctx: &RequestContext<RoleServer>) -> Option<&axum::http::request::Parts> {
    ctx.extensions.get::<axum::http::request::Parts>()
}

/// "telegram:-100123, discord:user:456" from the body's targets, each written as
/// configuration writes chats (its platform's grammar, from the registry).
fn describe_targets(networks: &Networks, targets: &Value) -> String {
    let names: Vec<String> = targets
        .as_array()
        .into_iter()
        .flatten()
        .map(|target| {
            let platform = target["platform"].as_str().unwrap_or("?");
            let fields = target.as_object().cloned().unwrap_or_default();
            networks.target_chat(platform, &fields).map_or_else(|_| platform.to_owned(), |chat| networks.display_chat(&chat))
        })
        .collect();
    names.join(", ")
}

/// "waiting for a decision in telegram:-100123, 42 s left".
fn waiting_message(shown_in: &str, expires_at: &Value) -> String {
    let left = expires_at
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|deadline| (deadline.timestamp_millis() - crate::clock::now_ms()).max(0) / 1000);
    match left {
        Some(secs) => format!("waiting for a decision in {shown_in}, {secs} s left"),
        None => format!("waiting for a decision in {shown_in}"),
    }
}

fn ended(ending: Ending) -> CallToolResult {
    match ending {
        Ending::Answered(result) => {
            let mut answer = CallToolResult::structured(result.clone());
            answer.content = vec![ContentBlock::text(result.to_string())];
            answer
        }
        Ending::Unanswered(why) => CallToolResult::error(vec![ContentBlock::text(why)]),
    }
}

/// Why a tool call did not get an answer.
enum Failed {
    /// Something the calling model can fix or should know (bad arguments, a key
    /// reused with other arguments): a tool error (`isError: true`) naming the
    /// argument, as MCP asks for input errors so the model can correct itself.
    Tool(Box<CallToolResult>),
    /// The call could not be carried out at all (the bridge unreachable, the call
    /// cancelled): a JSON-RPC error.
    Protocol(ErrorData),
}

fn finish(asked: Result<CallToolResult, Failed>) -> Result<CallToolResult, ErrorData> {
    match asked {
        Ok(result) => Ok(result),
        Err(Failed::Tool(result)) => Ok(*result),
        Err(Failed::Protocol(e)) => Err(e),
    }
}

/// `{"error": {"code", "field", "message"}}` as a tool error, the message also as text.
fn tool_error(code: &str, field: Option<&str>, message: String) -> Failed {
    let text = match field {
        Some(field) => format!("{field}: {message}"),
        None => message.clone(),
    };
    let mut result = CallToolResult::structured_error(json!({"error": {"code": code, "field": field, "message": message}}));
    result.content = vec![ContentBlock::text(text)];
    Failed::Tool(Box::new(result))
}

impl From<InputError> for Failed {
    fn from(e: InputError) -> Self {
        tool_error("invalid_field", Some(&e.field), e.reason)
    }
}

impl From<ApiCallError> for Failed {
    /// What `/v1` refused is the caller's to fix (its fields, its key); a bridge that
    /// does not answer is not.
    fn from(e: ApiCallError) -> Self {
        match e {
            ApiCallError::Refused { code, field, message, .. } => tool_error(&code, field.as_deref(), message),
            unreachable @ ApiCallError::Unreachable { .. } => Failed::Protocol(ErrorData::internal_error(unreachable.to_string(), None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn progress_names_the_chats_and_the_time_left() {
        let targets = json!([{"platform": "telegram", "chat_id": "-100"}, {"platform": "console"}]);
        assert_eq!(super::describe_targets(&crate::interaction::test_networks::networks(), &targets), "telegram:-100, console");
        let in_42s = chrono::DateTime::from_timestamp_millis(crate::clock::now_ms() + 42_500).unwrap().to_rfc3339();
        assert_eq!(super::waiting_message("telegram:-100", &json!(in_42s)), "waiting for a decision in telegram:-100, 42 s left");
    }

    /// The descriptions and the instructions name the platforms handed down, not a
    /// list written here.
    #[test]
    fn the_descriptions_name_the_chats_of_the_platforms_handed_down() {
        let networks = crate::interaction::test_networks::networks();
        let upstream = super::Upstream { base: "http://127.0.0.1:1".into(), token: None, http: reqwest::Client::new(), max_body_bytes: 1024 };
        let targets = std::sync::Arc::new(super::Targets { networks: networks.clone(), defaults: Vec::new() });
        let tools = super::HitlTools::new(upstream, targets, &["request_approval".to_owned(), "ask_user_question".to_owned()]);
        let chats = format!("chat ({})", networks.listed());
        for name in ["request_approval", "ask_user_question"] {
            let description = tools.tool_router.get(name).and_then(|tool| tool.description.clone()).unwrap_or_default();
            assert!(description.starts_with(&format!("Ask a person in the team's {chats} ")), "{description}");
        }
        let instructions = rmcp::ServerHandler::get_info(&tools).instructions.unwrap_or_default();
        assert!(instructions.starts_with(&format!("Ask people in {chats} ")), "{instructions}");
    }
}
