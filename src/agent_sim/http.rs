//! The simulator's HTTP surface (axum 0.8): the WebSocket endpoint with its bearer-token
//! and outage checks, the inspection routes tests read (`/commands`, history), the outage
//! switches and `/health`. Handlers only translate HTTP; the state lives in `Hub`.

use std::sync::Arc;

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::Value;

use super::connection;
use super::hub::Hub;

pub(crate) fn router(hub: Arc<Hub>) -> Router {
    Router::new()
        .route("/ws/{session_id}", get(ws_upgrade))
        .route("/commands", get(commands))
        .route("/sessions/{session_id}/history", get(history))
        .route("/control/down", post(down))
        .route("/control/up", post(up))
        .route("/health", get(|| async { "ok" }))
        .with_state(hub)
}

async fn ws_upgrade(State(hub): State<Arc<Hub>>, Path(session_id): Path<String>, headers: HeaderMap, ws: WebSocketUpgrade) -> Response {
    if !authorized(hub.opts.token.as_deref(), &headers) {
        tracing::warn!(%session_id, "rejecting WebSocket upgrade: missing or wrong bearer token");
        return (StatusCode::UNAUTHORIZED, "missing or wrong bearer token").into_response();
    }
    if hub.is_down() {
        return (StatusCode::SERVICE_UNAVAILABLE, "backend is down").into_response();
    }
    ws.on_upgrade(move |socket| connection::run(hub, session_id, socket))
}

fn authorized(token: Option<&str>, headers: &HeaderMap) -> bool {
    let Some(token) = token else { return true };
    headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer ")).is_some_and(|given| given == token)
}

async fn commands(State(hub): State<Arc<Hub>>) -> Json<Vec<Value>> {
    Json(hub.commands())
}

async fn history(State(hub): State<Arc<Hub>>, Path(session_id): Path<String>) -> Json<Vec<Value>> {
    Json(hub.history(&session_id))
}

async fn down(State(hub): State<Arc<Hub>>) -> StatusCode {
    hub.set_down(true);
    StatusCode::NO_CONTENT
}

async fn up(State(hub): State<Arc<Hub>>) -> StatusCode {
    hub.set_down(false);
    StatusCode::NO_CONTENT
}
