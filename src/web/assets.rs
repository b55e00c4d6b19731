//! The inbox's stylesheet and script, embedded in the binary (no build step, nothing
//! to deploy beside it).

use axum::extract::Path;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

const CSS: &str = include_str!("assets/app.css");
const JS: &str = include_str!("assets/app.js");

pub(super) async fn serve(Path(file): Path<String>) -> Response {
    let (body, kind) = match file.as_str() {
        "app.css" => (CSS, "text/css; charset=utf-8"),
        "app.js" => (JS, "text/javascript; charset=utf-8"),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    // Short: a new bridge version's files are picked up within minutes.
    ([(CONTENT_TYPE, HeaderValue::from_static(kind)), (CACHE_CONTROL, HeaderValue::from_static("public, max-age=300"))], body).into_response()
}
