//! The HTTP interactions endpoint (`discord.public_key`): Discord POSTs each
//! interaction here instead of sending it over the gateway, so several replicas
//! behind a load balancer can share clicks.
//!
//! Every request's Ed25519 signature (`X-Signature-Ed25519` over
//! `X-Signature-Timestamp` + body) is checked with serenity's [`Verifier`] before the
//! body is even parsed; a bad or missing signature gets 401, as Discord requires
//! (it probes with bad signatures when the URL is saved). PING is answered with PONG.
//! A signed request is only good for [`MAX_CLOCK_SKEW_SECS`] either side of its
//! `X-Signature-Timestamp`, so a captured click cannot be replayed later (401), and a
//! body over [`MAX_BODY_BYTES`] is refused with 413 before it is read whole.
//! The response to an interaction is the HTTP response itself; the work after it
//! runs in the background.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serenity::interactions_endpoint::Verifier;

use super::{Shared, clicks};
use crate::listener::Limits;

/// The largest interaction body accepted. Real ones are a few KiB.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// How far a request's signed timestamp may be from this clock, in seconds.
pub const MAX_CLOCK_SKEW_SECS: i64 = 5 * 60;

#[derive(Clone)]
struct Endpoint {
    shared: Arc<Shared>,
    verifier: Arc<Verifier>,
}

#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error("discord.public_key is not 64 hex characters")]
    BadKey,
    #[error("cannot listen: {0}")]
    Listen(#[from] std::io::Error),
}

/// The router, for serving here or mounting elsewhere.
fn router(shared: Arc<Shared>, verifier: Verifier) -> Router {
    let state = Endpoint { shared, verifier: Arc::new(verifier) };
    Router::new()
        .route("/", post(interaction))
        .route("/interactions", post(interaction))
        // Answers 413 from the Content-Length, or as soon as a streamed body passes it.
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

fn parse_key(public_key: &str) -> Result<Verifier, EndpointError> {
    let bytes: Vec<u8> = (0..public_key.len())
        .step_by(2)
        .map(|i| public_key.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect::<Option<_>>()
        .ok_or(EndpointError::BadKey)?;
    let key: [u8; 32] = bytes.try_into().map_err(|_| EndpointError::BadKey)?;
    Verifier::try_new(key).map_err(|_| EndpointError::BadKey)
}

/// Binds `listen` and serves the endpoint until the task is aborted.
pub async fn serve(shared: Arc<Shared>, public_key: &str, listen: &str, limits: Limits) -> Result<tokio::task::JoinHandle<()>, EndpointError> {
    let verifier = parse_key(public_key.trim())?;
    let listener = tokio::net::TcpListener::bind(listen).await?;
    tracing::info!(addr = ?listener.local_addr().ok(), "Discord interactions endpoint listening");
    let app = router(shared, verifier);
    Ok(tokio::spawn(crate::listener::serve(listener, app, limits)))
}

/// Whether `timestamp` (unix seconds, as Discord sends it) is within
/// [`MAX_CLOCK_SKEW_SECS`] of `now_secs`. Anything that is not a number is not.
fn is_fresh(timestamp: &str, now_secs: i64) -> bool {
    timestamp.parse::<i64>().is_ok_and(|t| t.checked_sub(now_secs).is_some_and(|d| d.unsigned_abs() <= MAX_CLOCK_SKEW_SECS.unsigned_abs()))
}

async fn interaction(State(endpoint): State<Endpoint>, headers: HeaderMap, body: Bytes) -> Response {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let (Some(signature), Some(timestamp)) = (header("x-signature-ed25519"), header("x-signature-timestamp")) else {
        return (StatusCode::UNAUTHORIZED, "missing signature").into_response();
    };
    if !is_fresh(timestamp, crate::clock::now_ms() / 1000) {
        tracing::info!(timestamp, "refusing an interaction signed too long ago (or in the future): a replay?");
        return (StatusCode::UNAUTHORIZED, "stale request timestamp").into_response();
    }
    if endpoint.verifier.verify(signature, timestamp, &body).is_err() {
        tracing::info!("refusing an interaction whose signature does not verify");
        return (StatusCode::UNAUTHORIZED, "invalid request signature").into_response();
    }
    let interaction: serenity::all::Interaction = match serde_json::from_slice(&body) {
        Ok(i) => i,
        Err(e) => {
            tracing::warn!(error = %e, "a signed interaction that does not parse");
            return (StatusCode::BAD_REQUEST, "unreadable interaction").into_response();
        }
    };
    let handled = clicks::handle(endpoint.shared.clone(), interaction).await;
    if let Some(work) = handled.work {
        tokio::spawn(work);
    }
    let body = match serde_json::to_value(&handled.response) {
        // serenity writes `"data": null` for PONG and deferred updates; Discord's own
        // examples leave it out, so this does too.
        Ok(mut body) => {
            if let Some(map) = body.as_object_mut().filter(|m| m.get("data").is_some_and(serde_json::Value::is_null)) {
                map.remove("data");
            }
            body
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot serialize an interaction response");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    };
    Json(body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freshness_is_five_minutes_either_way() {
        let now = 1_767_225_600;
        assert!(is_fresh("1767225600", now));
        assert!(is_fresh(&(now - 300).to_string(), now));
        assert!(is_fresh(&(now + 300).to_string(), now));
        assert!(!is_fresh(&(now - 301).to_string(), now));
        assert!(!is_fresh(&(now + 301).to_string(), now));
        for junk in ["", "abc", "1767225600.5", "-9223372036854775808", "99999999999999999999"] {
            assert!(!is_fresh(junk, now), "{junk:?}");
        }
    }
}
