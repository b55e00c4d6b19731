//! The messaging endpoint, [`MESSAGES_PATH`] on `teams.messages_listen`, where Teams
//! posts every activity. Each post is:
//!
//! 1. refused 401 without an `Authorization: Bearer` token, before its body is read;
//!    a declared body over 1 MiB is 413;
//! 2. read only as far as its `serviceUrl` and `channelId` (a body that does not read
//!    as an activity is 400), and its token checked against them
//!    ([`Verifier`]: Microsoft's keys, issuer, audience, expiry, `serviceUrl`); every
//!    failed check is 401 and changes nothing;
//! 3. stored in the durable inbox, then answered 200 (an `adaptiveCard/action` invoke
//!    with the card or notice its handling gives, within [`ANSWER_WITHIN`]); a store
//!    that fails is 500, so Teams sends it again. One delivered again is answered 200
//!    and handled once.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;

use super::inbox::{Handler, Received};
use super::payload::Activity;
use super::signature::Verifier;

/// Where Teams posts activities (the bot's messaging endpoint ends with it).
pub const MESSAGES_PATH: &str = "/teams/messages";
/// Teams' activities are small; a larger post is not Teams'.
const MAX_BODY_BYTES: usize = 1024 * 1024;
/// How long a card action's answer is waited for: Teams shows an error when an invoke
/// is not answered within about 5 seconds.
pub const ANSWER_WITHIN: Duration = Duration::from_millis(4500);

pub struct Endpoint {
    pub handler: Arc<Handler>,
    pub verifier: Verifier,
}

pub fn router(endpoint: Arc<Endpoint>) -> axum::Router {
    axum::Router::new().route(MESSAGES_PATH, post(receive)).with_state(endpoint)
}

async fn receive(State(endpoint): State<Arc<Endpoint>>, request: Request) -> Response {
    let authorization = request.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).map(str::to_owned);
    if authorization.is_none() {
        return refused("no Authorization: Bearer token");
    }
    let declared = request.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|length| length > MAX_BODY_BYTES as u64) {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    }
    let Ok(body) = axum::body::to_bytes(request.into_body(), MAX_BODY_BYTES).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let activity: Activity = match serde_json::from_slice(&body) {
        Ok(activity) => activity,
        Err(e) => {
            tracing::warn!(error = %e, "a post to the Teams endpoint that is not an activity; refused");
            return (StatusCode::BAD_REQUEST, "not a Bot Framework activity").into_response();
        }
    };
    if let Err(e) = endpoint.verifier.verify(authorization.as_deref(), &activity.channel_id, &activity.service_url).await {
        return refused(&e.to_string());
    }
    endpoint.handler.shared.remember_service_url(&activity);
    let raw = String::from_utf8_lossy(&body).into_owned();
    match endpoint.handler.receive(activity, raw).await {
        Ok(Received::Stored) => StatusCode::OK.into_response(),
        Ok(Received::Answer(answer)) => match tokio::time::timeout(ANSWER_WITHIN, answer).await {
            Ok(Ok(answer)) => axum::Json(answer.body()).into_response(),
            _ => {
                tracing::warn!("a Teams card action took too long to answer in its invoke response");
                StatusCode::OK.into_response()
            }
        },
        Err(e) => {
            tracing::warn!(error = %e, "cannot store a Teams activity; answered 500 so Teams sends it again");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// 401 with the reason: the post changes nothing.
fn refused(reason: &str) -> Response {
    tracing::warn!(%reason, "a post to the Teams endpoint failed its token check; refused");
    (StatusCode::UNAUTHORIZED, reason.to_owned()).into_response()
}
