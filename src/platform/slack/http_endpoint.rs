//! HTTP mode (`slack.mode = "http"`): Slack posts events, interactions and the slash
//! command to one path, [`EVENTS_PATH`], on `slack.events_listen`, for several
//! replicas behind a load balancer. Each post is:
//!
//! 1. checked by its headers before its body is read (both signature headers present
//!    and well formed, the timestamp within five minutes; a declared body over 1 MiB is
//!    413), then against `slack.signing_secret` on the raw body, before anything
//!    parses it ([`Verifier`]: constant time, a replay refused); every failed check is
//!    answered 401 and changes nothing;
//! 2. read as what Socket Mode would have delivered (an `events_api`, `interactive` or
//!    `slash_commands` envelope), so both transports share one inbox and one handler;
//! 3. answered 200 once stored (with the answer Slack waits for after a view
//!    submission, such as an error under the edited JSON). An event Slack sends again
//!    (`X-Slack-Retry-Num`) has the same `event_id`, and an interaction the same
//!    `trigger_id`, so it is stored once and handled once, on whichever replica.
//!
//! `url_verification`, Slack's check of the request URL, is answered with its
//! `challenge` once the signature holds.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use super::inbox::Handler;
use super::manifest::EVENTS_PATH;
use super::payload::Envelope;
use super::signature::{SignatureError, Verifier};
use crate::clock::now_ms;

/// Slack's posts are small; a larger one is not Slack's.
const MAX_BODY_BYTES: usize = 1024 * 1024;

/// What the endpoint needs.
pub struct Endpoint {
    pub handler: Arc<Handler>,
    pub verifier: Verifier,
}

/// The router serving [`EVENTS_PATH`].
pub fn router(endpoint: Arc<Endpoint>) -> axum::Router {
    axum::Router::new().route(EVENTS_PATH, post(receive)).with_state(endpoint)
}

async fn receive(State(endpoint): State<Arc<Endpoint>>, request: Request) -> Response {
    let headers = request.headers().clone();
    let header_text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let now_secs = now_ms() / 1000;
    // The headers first: a post that cannot be Slack's is refused before a byte of its
    // body is read.
    let signed = match Verifier::headers(header_text("x-slack-request-timestamp"), header_text("x-slack-signature"), now_secs) {
        Ok(signed) => signed,
        Err(e) => return refused(&e),
    };
    if declared_length(&headers).is_some_and(|length| length > MAX_BODY_BYTES as u64) {
        tracing::warn!("a Slack post declares a body over 1 MiB; refused unread");
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    }
    let body = match axum::body::to_bytes(request.into_body(), MAX_BODY_BYTES).await {
        Ok(body) => body,
        Err(e) => {
            tracing::warn!(error = %e, "an unreadable or oversized Slack post; refused");
            return StatusCode::PAYLOAD_TOO_LARGE.into_response();
        }
    };
    if let Err(e) = endpoint.verifier.verify_body(&signed, &body, now_secs) {
        return refused(&e);
    }
    let envelope = match envelope_of(&headers, &body) {
        Ok(Read::Challenge(challenge)) => return axum::Json(json!({ "challenge": challenge })).into_response(),
        Ok(Read::Envelope(envelope)) => envelope,
        Err(reason) => {
            // Signed by Slack but not something the bridge reads: 200, or Slack would
            // send it again forever.
            tracing::warn!(%reason, "a signed Slack post the bridge does not read; skipped");
            return StatusCode::OK.into_response();
        }
    };
    let raw = envelope.to_string();
    let Ok(parsed) = serde_json::from_value::<Envelope>(envelope) else {
        return StatusCode::OK.into_response();
    };
    match endpoint.handler.receive(parsed, &raw).await {
        Ok(received) => match received.answer().await {
            Some(answer) => axum::Json(answer).into_response(),
            None => StatusCode::OK.into_response(),
        },
        Err(e) => {
            // Not stored: Slack sends an event again; a click shows its author an error.
            tracing::warn!(error = %e, "cannot store a Slack post; answered 500 so Slack sends it again");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// 401 with the reason: the post changes nothing.
fn refused(e: &SignatureError) -> Response {
    tracing::warn!(error = %e, "a post to the Slack endpoint failed its signature check; refused");
    (StatusCode::UNAUTHORIZED, e.to_string()).into_response()
}

/// The body's length as the post declares it, if it does.
fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse().ok())
}

/// What a signed post holds.
#[derive(Debug, PartialEq)]
enum Read {
    /// `url_verification`: answer its challenge.
    Challenge(String),
    /// The Socket Mode envelope the post stands for.
    Envelope(Value),
}

/// Reads a post as Socket Mode would have delivered it: JSON bodies are the Events
/// API (`event_callback`, keyed by its `event_id`), form bodies an interaction
/// (`payload=…`, keyed by its `trigger_id`) or the slash command (its fields).
fn envelope_of(headers: &HeaderMap, body: &[u8]) -> Result<Read, String> {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if content_type.starts_with("application/json") {
        let event: Value = serde_json::from_slice(body).map_err(|e| format!("the JSON does not read: {e}"))?;
        return match event["type"].as_str() {
            Some("url_verification") => Ok(Read::Challenge(event["challenge"].as_str().unwrap_or_default().to_owned())),
            Some("event_callback") => {
                let id = event["event_id"].as_str().ok_or("an event without event_id")?.to_owned();
                Ok(Read::Envelope(json!({ "type": "events_api", "envelope_id": format!("http:{id}"), "payload": event })))
            }
            other => Err(format!("an Events API post of type {other:?}")),
        };
    }
    if content_type.starts_with("application/x-www-form-urlencoded") {
        let fields: serde_json::Map<String, Value> = url::form_urlencoded::parse(body).map(|(k, v)| (k.into_owned(), Value::String(v.into_owned()))).collect();
        if let Some(Value::String(payload)) = fields.get("payload") {
            let payload: Value = serde_json::from_str(payload).map_err(|e| format!("an interaction payload that does not read: {e}"))?;
            let trigger = payload["trigger_id"].as_str().ok_or("an interaction without trigger_id")?.to_owned();
            let waits = payload["type"] == "view_submission";
            return Ok(Read::Envelope(json!({
                "type": "interactive",
                "envelope_id": format!("http:{trigger}"),
                "payload": payload,
                "accepts_response_payload": waits,
            })));
        }
        if fields.contains_key("command") {
            let trigger = fields.get("trigger_id").and_then(Value::as_str).ok_or("a slash command without trigger_id")?.to_owned();
            return Ok(Read::Envelope(json!({ "type": "slash_commands", "envelope_id": format!("http:{trigger}"), "payload": fields })));
        }
        return Err("a form post that is neither an interaction nor a slash command".into());
    }
    Err(format!("a post of content type {content_type:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(content_type: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, content_type.parse().unwrap());
        headers
    }

    #[test]
    fn url_verification_is_a_challenge() {
        let body = br#"{"token":"t","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}"#;
        assert_eq!(envelope_of(&headers("application/json"), body), Ok(Read::Challenge("3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P".into())));
    }

    #[test]
    fn an_event_is_keyed_by_its_event_id() {
        let body = br#"{"type":"event_callback","event_id":"Ev1","event":{"type":"app_mention","text":"hi"}}"#;
        let Ok(Read::Envelope(envelope)) = envelope_of(&headers("application/json"), body) else { panic!() };
        let envelope: Envelope = serde_json::from_value(envelope).unwrap();
        assert_eq!(envelope.kind, "events_api");
        assert_eq!(envelope.dedup_key().as_deref(), Some("event:Ev1"));
    }

    #[test]
    fn an_interaction_is_keyed_by_its_trigger_and_a_submission_waits_for_its_answer() {
        let payload = json!({"type": "view_submission", "trigger_id": "12.34.ab", "view": {}}).to_string();
        let body = url::form_urlencoded::Serializer::new(String::new()).append_pair("payload", &payload).finish();
        let Ok(Read::Envelope(envelope)) = envelope_of(&headers("application/x-www-form-urlencoded"), body.as_bytes()) else { panic!() };
        let envelope: Envelope = serde_json::from_value(envelope).unwrap();
        assert_eq!((envelope.kind.as_str(), envelope.accepts_response_payload), ("interactive", true));
        assert_eq!(envelope.dedup_key().as_deref(), Some("envelope:http:12.34.ab"));
        assert_eq!(envelope.payload["type"], "view_submission");
    }

    #[test]
    fn a_slash_command_is_its_fields() {
        let body = b"command=%2Fhitl&text=pending&user_id=U1&channel_id=C1&trigger_id=9.9.z";
        let Ok(Read::Envelope(envelope)) = envelope_of(&headers("application/x-www-form-urlencoded"), body) else { panic!() };
        assert_eq!(envelope["type"], "slash_commands");
        assert_eq!(envelope["payload"], json!({"command": "/hitl", "text": "pending", "user_id": "U1", "channel_id": "C1", "trigger_id": "9.9.z"}));
    }

    #[test]
    fn what_is_not_slacks_is_named() {
        assert!(envelope_of(&headers("text/plain"), b"hi").is_err());
        assert!(envelope_of(&headers("application/json"), b"{").is_err());
        assert!(envelope_of(&headers("application/json"), br#"{"type":"event_callback"}"#).is_err());
        assert!(envelope_of(&headers("application/x-www-form-urlencoded"), b"payload=%7B").is_err());
        assert!(envelope_of(&headers("application/x-www-form-urlencoded"), b"a=b").is_err());
    }
}
