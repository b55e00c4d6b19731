//! The integration endpoint on `mattermost.listen`: Mattermost posts a button click or
//! menu choice to [`ACTIONS_PATH`], a dialog submission to [`DIALOGS_PATH`] (the URLs
//! the cards and dialogs name, under `mattermost.public_url`) and the `/hitl` slash
//! command to [`COMMAND_PATH`] (refused 401 unless it carries
//! `mattermost.slash_token`). Each post is:
//!
//! 1. refused unread when it declares a body over 1 MiB (413), and answered 400 when
//!    it is not a JSON object: nothing is stored;
//! 2. stored in the durable inbox ([`super::inbox`]) before it is handled, keyed by
//!    the click's `trigger_id` (one per click) so a click delivered twice is handled
//!    once;
//! 3. answered, once handled, with what Mattermost shows: the card's `update`, an
//!    `ephemeral_text` for the clicker, a dialog's `errors`.
//!
//! Mattermost does not sign these posts: what they claim is checked when handled
//! ([`super::clicks`]), never here.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::Value;

use super::inbox::Handler;
use super::payload::Update;
use super::setup::{ACTIONS_PATH, COMMAND_PATH, DIALOGS_PATH};

/// Mattermost's posts are small; a larger one is not Mattermost's.
const MAX_BODY_BYTES: usize = 1024 * 1024;

/// What the endpoint needs.
pub struct Endpoint {
    pub handler: Arc<Handler>,
    /// `mattermost.slash_token`: the `/hitl` posts must carry it.
    pub slash_token: Option<String>,
}

/// The router serving the integration paths.
pub fn router(endpoint: Arc<Endpoint>) -> axum::Router {
    axum::Router::new().route(ACTIONS_PATH, post(action)).route(DIALOGS_PATH, post(dialog)).route(COMMAND_PATH, post(command)).with_state(endpoint)
}

/// `/hitl`: a form post, its token checked before anything is stored.
async fn command(State(endpoint): State<Arc<Endpoint>>, request: Request) -> Response {
    let bytes = match axum::body::to_bytes(request.into_body(), MAX_BODY_BYTES).await {
        Ok(bytes) => bytes,
        Err(_) => return StatusCode::PAYLOAD_TOO_LARGE.into_response(),
    };
    let fields: serde_json::Map<String, Value> = url::form_urlencoded::parse(&bytes).map(|(k, v)| (k.into_owned(), Value::String(v.into_owned()))).collect();
    let token = fields.get("token").and_then(Value::as_str);
    if !super::commands::verify_token(endpoint.slash_token.as_deref(), token) {
        tracing::warn!("a /hitl post without mattermost.slash_token; refused");
        return (StatusCode::UNAUTHORIZED, "the slash command's token does not match mattermost.slash_token").into_response();
    }
    let id = match fields.get("trigger_id").and_then(Value::as_str).filter(|t| !t.is_empty()) {
        Some(trigger) => format!("command:{trigger}"),
        None => format!("command:{}", uuid::Uuid::new_v4()),
    };
    let mut body = Value::Object(fields);
    // The token is not kept in the store.
    body.as_object_mut().map(|f| f.remove("token"));
    receive(&endpoint.handler, id, Update::Command(body)).await
}

async fn action(State(endpoint): State<Arc<Endpoint>>, request: Request) -> Response {
    let body = match json_body(request).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let id = match body["trigger_id"].as_str().filter(|t| !t.is_empty()) {
        Some(trigger) => format!("action:{trigger}"),
        None => format!("action:{}", uuid::Uuid::new_v4()),
    };
    receive(&endpoint.handler, id, Update::Action(body)).await
}

async fn dialog(State(endpoint): State<Arc<Endpoint>>, request: Request) -> Response {
    let body = match json_body(request).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    receive(&endpoint.handler, format!("dialog:{}", uuid::Uuid::new_v4()), Update::Dialog(body)).await
}

async fn receive(handler: &Arc<Handler>, id: String, update: Update) -> Response {
    match handler.receive(id, update).await {
        Ok(received) => axum::Json(received.answer().await).into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "cannot store a Mattermost post; answered 500, nothing changed");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// The post's body as a JSON object, or the response refusing it.
async fn json_body(request: Request) -> Result<Value, Response> {
    let declared = request.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|length| length > MAX_BODY_BYTES as u64) {
        return Err(StatusCode::PAYLOAD_TOO_LARGE.into_response());
    }
    let bytes = axum::body::to_bytes(request.into_body(), MAX_BODY_BYTES).await.map_err(|_| StatusCode::PAYLOAD_TOO_LARGE.into_response())?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(body) if body.is_object() => Ok(body),
        _ => {
            tracing::info!("a post to the Mattermost endpoint that is not a JSON object; refused");
            Err((StatusCode::BAD_REQUEST, "expected a JSON object").into_response())
        }
    }
}
