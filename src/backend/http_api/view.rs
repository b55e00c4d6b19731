//! What an agent sees of its request: the body of `GET /v1/requests/{key}`, of a
//! replayed `POST`, of `DELETE`, and of the callback (PROTOCOL.md §8). Built from the
//! stored request and interaction alone, so every replica answers the same.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::interaction::{Decider, Draft, Interaction, RequestKind, Status, selected_labels};
use crate::protocol::Reply;
use crate::store::ApiRequest;

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RequestState {
    pub approval_key: String,
    /// The `session_id` the request was pushed with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// `pending`, `resolved`, `expired` or `cancelled`.
    pub status: &'static str,
    /// The deadline, RFC 3339.
    pub expires_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<DecidedBy>,
    /// When it left `pending`, RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<String>,
    /// Exactly the stream protocol's `approval` body: `{"decisions":[…]}` (one per
    /// action, in order; optional `user_edit_content`) or `{"answers":{…}}` plus
    /// `selected_options` (one list of chosen labels per question). An expired
    /// approval carries the reject decisions the bridge applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub reply: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct DecidedBy {
    pub platform: String,
    pub id: String,
    pub name: String,
}

/// 201 to a new request.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Created {
    pub approval_key: String,
    pub status: &'static str,
    pub expires_at: String,
}

/// `GET /v1/requests?status=pending`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RequestList {
    pub requests: Vec<RequestState>,
}

pub fn state(request: &ApiRequest, interaction: &Interaction) -> RequestState {
    let (decided_by, decided_at) = match &interaction.status {
        Status::Pending => (None, None),
        Status::Resolved { by, at_ms } => {
            let by = match by {
                Decider::Person(actor) => Some(DecidedBy { platform: actor.platform.clone(), id: actor.user_id.clone(), name: actor.name.clone() }),
                Decider::Elsewhere => None,
            };
            (by, Some(*at_ms))
        }
        Status::Expired { at_ms, .. } | Status::Cancelled { at_ms, .. } => (None, Some(*at_ms)),
    };
    RequestState {
        approval_key: request.approval_key.clone(),
        session_id: request.client_session.clone(),
        status: interaction.status.name(),
        expires_at: rfc3339(interaction.deadline_ms),
        decided_by,
        decided_at: decided_at.map(rfc3339),
        reply: interaction.reply.as_ref().map(|reply| reply_json(interaction, reply)),
    }
}

/// The reply as the stream protocol sends it, plus `selected_options` for questions.
fn reply_json(interaction: &Interaction, reply: &Reply) -> Value {
    let mut value = serde_json::to_value(reply).unwrap_or(Value::Null);
    if let (Reply::Answers { .. }, RequestKind::Questions { questions, .. }, Draft::Answers { answers }) =
        (reply, &interaction.request.kind, &interaction.draft)
    {
        let selected: Vec<Vec<String>> = questions.iter().zip(answers).map(|(q, a)| selected_labels(q, a)).collect();
        value["selected_options"] = serde_json::json!(selected);
    }
    value
}

/// Unix milliseconds as RFC 3339 UTC, e.g. `2026-11-22T10:00:00.000Z`.
pub fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
