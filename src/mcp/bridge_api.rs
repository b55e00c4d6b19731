//! The MCP tools' one way into the bridge: its own inbound HTTP API (`/v1`), called
//! with the MCP client's bearer token. Whether the MCP server runs inside the bridge
//! (`/mcp`, calling its own listener on loopback) or as `hitl-bridge mcp` beside a
//! client (calling a bridge's URL), a tool call is exactly a pushed request: the same
//! validation, per-token keys, policies, audit and restart guarantees.

use std::time::Duration;

use serde_json::Value;

/// How long one long-poll waits before the tool reports progress and asks again.
pub const POLL_SECS: u64 = 5;

/// A `/v1` error, or the bridge not answering.
#[derive(Debug, thiserror::Error)]
pub enum ApiCallError {
    /// The API refused the request: its status and error body.
    #[error("the bridge refused it ({status}): {message}")]
    Refused { status: u16, code: String, field: Option<String>, message: String },
    #[error("cannot reach the bridge at {base}: {reason}")]
    Unreachable { base: String, reason: String },
}

/// `/v1` at `base`, as the caller holding `token`.
#[derive(Clone)]
pub struct BridgeApi {
    base: String,
    token: String,
    http: reqwest::Client,
    max_body_bytes: usize,
}

impl BridgeApi {
    pub fn new(base: &str, token: &str, http: reqwest::Client, max_body_bytes: usize) -> Self {
        Self { base: base.trim_end_matches('/').to_owned(), token: token.to_owned(), http, max_body_bytes }
    }

    /// A client whose calls never outlive a long-poll by much.
    pub fn http_client() -> reqwest::Client {
        reqwest::Client::builder().timeout(Duration::from_secs(POLL_SECS + 30)).redirect(reqwest::redirect::Policy::none()).build().unwrap_or_default()
    }

    /// `POST /v1/requests`: the request's state (a repeat of the same body under the
    /// same key answers the existing request's state).
    /// A body over the bridge's limit is refused here as `/v1` would (413): sent, the
    /// bridge would answer before reading it and close the connection under the
    /// upload, which reads as "unreachable".
    pub async fn push(&self, body: &Value) -> Result<Value, ApiCallError> {
        let bytes = serde_json::to_vec(body).unwrap_or_default();
        if bytes.len() > self.max_body_bytes {
            return Err(ApiCallError::Refused {
                status: 413,
                code: "payload_too_large".into(),
                field: None,
                message: crate::listener::body_over(self.max_body_bytes),
            });
        }
        self.call(self.http.post(self.url("/v1/requests")).header(reqwest::header::CONTENT_TYPE, "application/json").body(bytes)).await
    }

    /// `GET /v1/requests/{key}?wait=POLL_SECS`: the state once it is decided, or after
    /// the wait.
    pub async fn wait(&self, key: &str) -> Result<Value, ApiCallError> {
        self.call(self.http.get(self.url(&format!("/v1/requests/{}?wait={POLL_SECS}", encode(key))))).await
    }

    /// `DELETE /v1/requests/{key}`: locks every copy of the request as cancelled.
    pub async fn cancel(&self, key: &str) -> Result<Value, ApiCallError> {
        self.call(self.http.delete(self.url(&format!("/v1/requests/{}", encode(key))))).await
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn call(&self, request: reqwest::RequestBuilder) -> Result<Value, ApiCallError> {
        let unreachable = |e: reqwest::Error| ApiCallError::Unreachable { base: self.base.clone(), reason: e.to_string() };
        let response = request.bearer_auth(&self.token).send().await.map_err(unreachable)?;
        let status = response.status().as_u16();
        let text = response.text().await.map_err(unreachable)?;
        let ok = (200..300).contains(&status);
        let body: Value = match serde_json::from_str(&text) {
            Ok(body) => body,
            // Something answered, but not the API (a proxy's error page): say what it said.
            Err(_) if !ok => {
                let said: String = text.chars().take(200).collect();
                return Err(ApiCallError::Refused { status, code: "error".into(), field: None, message: format!("HTTP {status}: {said}") });
            }
            Err(e) => return Err(ApiCallError::Unreachable { base: self.base.clone(), reason: format!("its answer is not JSON: {e}") }),
        };
        if ok {
            return Ok(body);
        }
        let error = &body["error"];
        Err(ApiCallError::Refused {
            status,
            code: error["code"].as_str().unwrap_or("error").to_owned(),
            field: error["field"].as_str().map(str::to_owned),
            message: error["message"].as_str().unwrap_or("no message").to_owned(),
        })
    }
}

/// A key as one path segment.
fn encode(key: &str) -> String {
    key.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    /// A body the bridge would refuse is refused before it is sent, with the bridge's
    /// words, never as "cannot reach the bridge" (nothing listens on port 9).
    #[tokio::test]
    async fn a_body_over_the_limit_is_refused_by_its_size() {
        let api = super::BridgeApi::new("http://127.0.0.1:9", "t", super::BridgeApi::http_client(), 100);
        let body = serde_json::json!({"approval_key": "k", "text": "x".repeat(200)});
        match api.push(&body).await {
            Err(super::ApiCallError::Refused { status, code, message, .. }) => {
                assert_eq!((status, code.as_str(), message.as_str()), (413, "payload_too_large", "the request body is over 100 bytes"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn keys_are_one_path_segment() {
        assert_eq!(super::encode("deploy-43_1"), "deploy-43_1");
        assert_eq!(super::encode("a/b c"), "a%2Fb%20c");
    }
}
