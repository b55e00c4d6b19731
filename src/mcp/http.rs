//! `/mcp` on the bridge's HTTP listener: the MCP server over Streamable HTTP, behind
//! the same named bearer tokens as `/v1`. [`super::sessions`] stands in front of
//! rmcp: a missing or wrong token is refused with 401, a body over
//! `http.max_body_bytes` with 413, another token's session with 404, and sessions past
//! their caps with a refusal naming the cap. The token is then forwarded to `/v1`
//! with every tool call, so the token's name is the agent the audit log records and
//! the key space the request lives in.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::server::{HitlTools, Upstream};
use super::sessions::{SessionLimits, Sessions};
use super::settings::McpSettings;
use super::tools::Targets;
use crate::backend::http_api::auth::Tokens;
use crate::interaction::chat::Networks;

/// How often a waiting call's stream carries a keep-alive: a client that left is
/// noticed when one cannot be written.
const KEEP_ALIVE: Duration = Duration::from_secs(3);

/// The `/mcp` routes. `base` is filled in with the listener's own address once it is
/// bound (the tools call `/v1` there); `max_body_bytes` is `http.max_body_bytes`;
/// `networks`, every platform's address grammar.
pub fn router(settings: &McpSettings, tokens: Tokens, base: Arc<OnceLock<String>>, max_body_bytes: usize, networks: Networks) -> Router {
    let targets = Arc::new(Targets { networks, defaults: settings.default_targets.clone() });
    let offered = settings.tools.clone();
    let http = super::bridge_api::BridgeApi::http_client();
    let (sessions, manager) = Sessions::start(LocalSessionManager::default(), tokens, SessionLimits::new(settings, max_body_bytes));
    let service = StreamableHttpService::new(
        move || {
            let base = base.get().cloned().ok_or_else(|| std::io::Error::other("the HTTP listener is not bound yet"))?;
            Ok(HitlTools::new(Upstream { base, token: None, http: http.clone(), max_body_bytes }, targets.clone(), &offered))
        },
        manager,
        // Host checks guard unauthenticated local servers against DNS rebinding; this
        // one is behind a bearer token and often reached by a public name.
        StreamableHttpServerConfig::default().disable_allowed_hosts().with_max_request_body_bytes(max_body_bytes).with_sse_keep_alive(Some(KEEP_ALIVE)),
    );
    Router::new().nest_service("/mcp", service).layer(axum::middleware::from_fn_with_state(sessions, super::sessions::guard))
}
