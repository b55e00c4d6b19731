//! The API's errors: a status and `{"error":{"code","message","field"}}`
//! (PROTOCOL.md §8). Every refusal goes through here, so every error looks the same.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub field: Option<String>,
}

/// The error body.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable, machine-readable: `invalid_json`, `missing_shape`, `conflicting_shapes`,
    /// `empty_actions`, `empty_questions`, `empty_options`, `invalid_question`,
    /// `invalid_field`, `no_targets`, `invalid_target`, `unknown_platform`,
    /// `platform_not_enabled`, `invalid_approver`, `invalid_policy`, `invalid_timeout`,
    /// `invalid_callback_url`, `invalid_query`, `unauthorized`, `not_found`,
    /// `conflict`, `not_pending`, `payload_too_large`, `unavailable`.
    pub code: &'static str,
    pub message: String,
    /// The JSON path at fault, e.g. `questions[0].options`.
    pub field: Option<String>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self { status, code, message: message.into(), field: None }
    }

    /// 422: the body is JSON but not a valid request.
    pub fn invalid(code: &'static str, message: impl Into<String>, field: impl Into<String>) -> Self {
        Self { field: Some(field.into()), ..Self::new(StatusCode::UNPROCESSABLE_ENTITY, code, message) }
    }

    pub fn unauthorized() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", "a valid `Authorization: Bearer <token>` header is required")
    }

    pub fn not_found(approval_key: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", format!("no request with approval_key `{approval_key}`"))
    }

    pub fn unavailable(why: impl std::fmt::Display) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", why.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody { error: ErrorDetail { code: self.code, message: self.message, field: self.field } };
        (self.status, Json(body)).into_response()
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> Self {
        tracing::error!(error = %e, "store error while serving the HTTP API");
        ApiError::unavailable("the store is unavailable; try again")
    }
}

impl From<crate::engine::EngineError> for ApiError {
    fn from(e: crate::engine::EngineError) -> Self {
        tracing::error!(error = %e, "engine error while serving the HTTP API");
        ApiError::unavailable(e)
    }
}
