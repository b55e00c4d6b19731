//! The `/v1` handlers (PROTOCOL.md §8). Each checks the bearer token first, then
//! reads the body, then asks the engine or the store; none decides anything itself.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use utoipa::IntoParams;

use super::body::{self, PushBody};
use super::error::{ApiError, ErrorBody};
use super::page;
use super::view::{self, Created, RequestList, RequestState};
use super::{HttpApi, SESSION_PREFIX};
use crate::clock::now_ms;
use crate::engine::PushOutcome;
use crate::interaction::{Interaction, Origin};
use crate::store::{ApiRequest, PageMark};

/// The longest `?wait=` accepted, in seconds.
pub const MAX_WAIT_SECS: u64 = 60;

/// The longest approval key accepted.
const MAX_KEY_CHARS: usize = 200;

/// How often a long-poll re-reads the store (for decisions made on other replicas).
const WAIT_POLL: Duration = Duration::from_millis(500);

type Api = State<Arc<HttpApi>>;

/// Refuses a caller without a valid token (401), or one declaring a body over the
/// limit (413), before a byte of the body is read: a stranger's 1 MiB POST costs the
/// headers only. The handlers still read the token, for the agent's name.
pub async fn guard(State(api): Api, request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    if api.authenticate(request.headers()).is_err() {
        return ApiError::unauthorized().into_response();
    }
    let declared = request.headers().get(axum::http::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > api.max_body_bytes as u64) {
        return too_large(api.max_body_bytes).into_response();
    }
    next.run(request).await
}

fn too_large(limit: usize) -> ApiError {
    ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", crate::listener::body_over(limit))
}

/// Create a request and show it on its targets.
#[utoipa::path(post, path = "/v1/requests", request_body = PushBody, security(("bearer" = [])),
    responses(
        (status = 201, description = "Created and shown", body = Created),
        (status = 200, description = "The same body was pushed before under this key: its current state", body = RequestState),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "No valid token", body = ErrorBody),
        (status = 409, description = "Another body was pushed under this key", body = ErrorBody),
        (status = 413, description = "Body over http.max_body_bytes (1 MiB)", body = ErrorBody),
        (status = 422, description = "Not a valid request; `field` names the problem", body = ErrorBody),
    ))]
pub async fn create(State(api): Api, headers: HeaderMap, body: Result<Bytes, BytesRejection>) -> Result<Response, ApiError> {
    let agent = api.authenticate(&headers)?;
    let bytes = body.map_err(|rejection| match rejection.status() {
        StatusCode::PAYLOAD_TOO_LARGE => too_large(api.max_body_bytes),
        _ => ApiError::new(StatusCode::BAD_REQUEST, "invalid_json", format!("cannot read the body: {rejection}")),
    })?;
    let (push, raw) = parse(&bytes)?;
    let approval_key = match push.approval_key.as_deref() {
        Some(key) if key.trim().is_empty() || key.chars().count() > MAX_KEY_CHARS => {
            return Err(ApiError::invalid("invalid_field", format!("approval_key must be 1–{MAX_KEY_CHARS} characters"), "approval_key"));
        }
        Some(key) => key.to_owned(),
        None => uuid::Uuid::new_v4().simple().to_string(),
    };
    let valid = body::validate(&push, &approval_key, &api.platforms, api.defaults)?;
    if let Some(url) = push.callback_url.as_deref().filter(|_| !api.callback_allow_private) {
        super::callback_guard::check_url(url).await.map_err(|e| ApiError::invalid("invalid_callback_url", e.to_string(), "callback_url"))?;
    }
    let now = now_ms();
    let client_session = push.session_id.clone().filter(|s| !s.is_empty());
    // The agent is part of the session: two agents' same key (or session) never meet.
    let session_id = format!("{SESSION_PREFIX}{agent}:{}", client_session.as_deref().unwrap_or(&approval_key));
    let id = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
    // With a fallback, its moment becomes the deadline, so `expires_at` below says it.
    let mut interaction = Interaction::new(id, session_id.clone(), valid.request, None, now).with_policy(valid.policy);
    interaction.origin = Origin::Pushed { agent: agent.clone(), approvers: valid.approvers };
    let request = ApiRequest {
        approval_key: approval_key.clone(),
        interaction_id: interaction.id.clone(),
        session_id,
        client_session,
        agent: agent.clone(),
        body_hash: body_hash(&raw),
        targets: valid.targets,
        callback_url: push.callback_url.clone(),
        created_at_ms: now,
    };
    let hash = request.body_hash.clone();
    match api.engine.push(request, interaction).await? {
        PushOutcome::Created(interaction) => {
            let created = Created { approval_key, status: interaction.status.name(), expires_at: view::rfc3339(interaction.deadline_ms) };
            Ok((StatusCode::CREATED, Json(created)).into_response())
        }
        PushOutcome::Existing(existing) if existing.agent == agent && existing.body_hash == hash => Ok(Json(api.state_of(&existing).await?).into_response()),
        PushOutcome::Existing(_) => {
            Err(ApiError::new(StatusCode::CONFLICT, "conflict", format!("approval_key `{approval_key}` was already used for a different request")))
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WaitQuery {
    /// Long-poll: wait up to this many seconds (≤ 60) for the request to leave `pending`.
    pub wait: Option<u64>,
}

/// The request's state; with `?wait=N`, once it is decided or N seconds pass.
#[utoipa::path(get, path = "/v1/requests/{approval_key}", params(("approval_key" = String, Path), WaitQuery), security(("bearer" = [])),
    responses(
        (status = 200, body = RequestState),
        (status = 400, description = "`wait` out of range", body = ErrorBody),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
    ))]
pub async fn get_one(
    State(api): Api,
    headers: HeaderMap,
    Path(key): Path<String>,
    query: Result<Query<WaitQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<RequestState>, ApiError> {
    let agent = api.authenticate(&headers)?;
    let Query(query) = query.map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", e.body_text()))?;
    let wait = query.wait.unwrap_or(0);
    if wait > MAX_WAIT_SECS {
        return Err(ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", format!("wait must be at most {MAX_WAIT_SECS} seconds")));
    }
    let request = api.own_request(&agent, &key).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(wait);
    loop {
        // Registered before reading, so a settle between the read and the wait is not missed.
        let changed = api.changed.notified();
        let state = api.state_of(&request).await?;
        if state.status != "pending" || tokio::time::Instant::now() >= deadline {
            return Ok(Json(state));
        }
        tokio::select! {
            _ = changed => {}
            _ = tokio::time::sleep(WAIT_POLL) => {}
            _ = tokio::time::sleep_until(deadline) => {}
        }
    }
}

/// Cancel: every copy's controls are removed and it shows "cancelled".
#[utoipa::path(delete, path = "/v1/requests/{approval_key}", params(("approval_key" = String, Path)), security(("bearer" = [])),
    responses(
        (status = 200, description = "Cancelled", body = RequestState),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "It had already ended", body = ErrorBody),
    ))]
pub async fn cancel(State(api): Api, headers: HeaderMap, Path(key): Path<String>) -> Result<Json<RequestState>, ApiError> {
    let agent = api.authenticate(&headers)?;
    let request = api.own_request(&agent, &key).await?;
    let before = api.store.interaction(&request.interaction_id).await?.ok_or_else(|| ApiError::not_found(&key))?;
    if !before.status.is_pending() {
        return Err(ApiError::new(StatusCode::CONFLICT, "not_pending", format!("the request is already {}", before.status.name())));
    }
    let after = api.engine.cancel_interaction(&request.interaction_id, format!("cancelled by {agent}")).await?.ok_or_else(|| ApiError::not_found(&key))?;
    if after.status.name() != "cancelled" {
        return Err(ApiError::new(StatusCode::CONFLICT, "not_pending", format!("the request is already {}", after.status.name())));
    }
    Ok(Json(api.view(&request, &after).await?))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only `pending` is supported.
    pub status: Option<String>,
    /// Requests per page: 1 to 1000, default 100.
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page; none for the first.
    pub cursor: Option<String>,
}

/// The caller's pending requests, oldest first, a page at a time: `next_cursor` is set
/// while more may follow.
#[utoipa::path(get, path = "/v1/requests", params(ListQuery), security(("bearer" = [])),
    responses((status = 200, body = RequestList), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)))]
pub async fn list(
    State(api): Api,
    headers: HeaderMap,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<RequestList>, ApiError> {
    let agent = api.authenticate(&headers)?;
    let Query(query) = query.map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", e.body_text()))?;
    if query.status.as_deref().is_some_and(|s| s != "pending") {
        return Err(ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", "status must be `pending`"));
    }
    let invalid = |why: String| ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", why);
    let limit = page::limit(query.limit).map_err(invalid)?;
    let after = query.cursor.as_deref().map(page::mark).transpose().map_err(invalid)?;
    // One row more than asked tells whether another page follows.
    let mut rows = api.store.pending_api_requests_page(&agent, after.as_ref(), i64::from(limit) + 1).await?;
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let next_cursor = more
        .then(|| rows.last())
        .flatten()
        .map(|(request, _)| page::cursor(&PageMark { created_at_ms: request.created_at_ms, approval_key: request.approval_key.clone() }));
    let ids: Vec<&str> = rows.iter().map(|(request, _)| request.interaction_id.as_str()).collect();
    let mut refused = api.store.refused_shows_of(&ids).await?;
    let requests = rows
        .iter()
        .map(|(request, interaction)| {
            let not_shown = view::not_shown(&api.platforms.known, refused.remove(&request.interaction_id).unwrap_or_default());
            view::state(request, interaction, not_shown)
        })
        .collect();
    Ok(Json(RequestList { requests, next_cursor }))
}

/// The body as a request, with field paths in type errors; also the raw JSON for the
/// idempotency hash.
fn parse(bytes: &[u8]) -> Result<(PushBody, serde_json::Value), ApiError> {
    let raw: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_json", format!("the body is not valid JSON: {e}")))?;
    if !raw.is_object() {
        return Err(ApiError::new(StatusCode::BAD_REQUEST, "invalid_json", "the body must be a JSON object"));
    }
    let push = serde_path_to_error::deserialize::<_, PushBody>(&raw).map_err(|e| {
        let field = e.path().to_string();
        ApiError::invalid("invalid_field", e.into_inner().to_string(), field)
    })?;
    Ok((push, raw))
}

/// SHA-256 of the body with object keys sorted, so key order and whitespace do not
/// make a retry look like another request.
fn body_hash(raw: &serde_json::Value) -> String {
    fn canonical(v: &serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                serde_json::Value::Object(keys.into_iter().map(|k| (k.clone(), canonical(&map[k]))).collect())
            }
            serde_json::Value::Array(items) => serde_json::Value::Array(items.iter().map(canonical).collect()),
            other => other.clone(),
        }
    }
    hex::encode(Sha256::digest(canonical(raw).to_string().as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_order_and_whitespace_do_not_change_the_hash() {
        let a: serde_json::Value = serde_json::from_str(r#"{"b":1,"a":{"y":[1,2],"x":"s"}}"#).unwrap();
        let b: serde_json::Value = serde_json::from_str(r#"{ "a": {"x":"s", "y":[1, 2]}, "b": 1 }"#).unwrap();
        let c: serde_json::Value = serde_json::from_str(r#"{"b":1,"a":{"y":[2,1],"x":"s"}}"#).unwrap();
        assert_eq!(body_hash(&a), body_hash(&b));
        assert_ne!(body_hash(&a), body_hash(&c), "array order matters");
    }

    #[test]
    fn type_errors_name_the_field() {
        let err = parse(br#"{"timeout_seconds":"soon","actions":[]}"#).unwrap_err();
        assert_eq!((err.status, err.code, err.field.as_deref()), (StatusCode::UNPROCESSABLE_ENTITY, "invalid_field", Some("timeout_seconds")));
        let err = parse(br#"{"questions":[{"question":"Q","options":[{"label":3}]}]}"#).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("questions[0].options[0].label"));
        let err = parse(b"{not json").unwrap_err();
        assert_eq!((err.status, err.code), (StatusCode::BAD_REQUEST, "invalid_json"));
        let err = parse(b"[1]").unwrap_err();
        assert_eq!(err.code, "invalid_json");
    }
}
