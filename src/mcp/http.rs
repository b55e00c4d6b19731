//! `/mcp` on the bridge's HTTP listener: the MCP server over Streamable HTTP, behind
//! the same named bearer tokens as `/v1`. A missing or wrong token is refused with
//! 401 before rmcp sees the request; the token is then forwarded to `/v1` with every
//! tool call, so the token's name is the agent the audit log records and the key
//! space the request lives in.

use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::server::{HitlTools, Upstream};
use super::settings::McpSettings;
use crate::backend::http_api::auth::Tokens;

/// The `/mcp` routes. `base` is filled in with the listener's own address once it is
/// bound (the tools call `/v1` there).
pub fn router(settings: &McpSettings, tokens: Tokens, base: Arc<OnceLock<String>>) -> Router {
    let default_targets = Arc::new(settings.default_targets.clone());
    let offered = settings.tools.clone();
    let http = super::bridge_api::BridgeApi::http_client();
    let service = StreamableHttpService::new(
        move || {
            let base = base.get().cloned().ok_or_else(|| std::io::Error::other("the HTTP listener is not bound yet"))?;
            Ok(HitlTools::new(Upstream { base, token: None, http: http.clone() }, default_targets.clone(), &offered))
        },
        Arc::new(LocalSessionManager::default()),
        // Host checks guard unauthenticated local servers against DNS rebinding; this
        // one is behind a bearer token and often reached by a public name.
        StreamableHttpServerConfig::default().disable_allowed_hosts(),
    );
    Router::new().nest_service("/mcp", service).layer(axum::middleware::from_fn_with_state(Arc::new(tokens), require_token))
}

async fn require_token(State(tokens): State<Arc<Tokens>>, request: Request, next: Next) -> Response {
    if tokens.agent(request.headers()).is_none() {
        let body = axum::Json(serde_json::json!({"error": {"code": "unauthorized", "message": "a valid bearer token (http.api_tokens) is required"}}));
        return (StatusCode::UNAUTHORIZED, body).into_response();
    }
    next.run(request).await
}
