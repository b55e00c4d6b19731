//! The REST API v4 client: JSON to `<mattermost.url>/api/v4/…` with `Authorization:
//! Bearer <bot token>`, on reqwest.
//!
//! Mattermost answers a failure with its HTTP status and an `AppError` body
//! (`{"id": "api.context.session_expired.app_error", "message": …, "status_code":
//! 401}`); those become [`ApiError::Mattermost`] with the status and the id, which the
//! docs' troubleshooting is keyed by.
//!
//! **Rate limits.** Mattermost's limiter (`RateLimitSettings`, per user and per IP)
//! answers 429 with `X-Ratelimit-Limit`, `X-Ratelimit-Remaining` and
//! `X-Ratelimit-Reset` (seconds until the window frees a request) and, from the same
//! throttler, `Retry-After`. The bridge waits out the longer of the two, pauses every
//! call meanwhile (the limit is the bot user's, not one endpoint's), and tries again,
//! a few times. New posts go out one at a time per channel, in order, cards before
//! text ([`Line`]), at most one per `mattermost.post_interval_ms`, so a burst of
//! requests to one channel is shown in the order it came and none is lost.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use governor::Quota;
use governor::clock::MonotonicClock;
use reqwest::Method;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};

use super::PLATFORM;
use crate::metrics::{Metrics, PlatformErrorKind};
use crate::platform::kit::bounded::BoundedMap;
use crate::platform::kit::pacing::{self, Pauses, Scope, retry_after};
use crate::platform::kit::turns::{Line, Priority};

/// Attempts per call, the first included.
const ATTEMPTS: u32 = 6;
/// The wait when a 429 names none.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);
/// The longest a 429 is waited out before the call gives up.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// How long one call may take.
const TIMEOUT: Duration = Duration::from_secs(30);
/// Channels whose send order is remembered at once.
const LINES: usize = 10_000;
/// The one key every call pauses under after a 429.
const EVERY_CALL: &str = "all";

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// Mattermost answered this status with this error id.
    #[error("Mattermost refused {what}: HTTP {status} {id}")]
    Mattermost { what: &'static str, status: u16, id: String },
    #[error("Mattermost kept answering {what} with 429 (rate limited)")]
    RateLimited { what: &'static str },
    #[error("cannot reach Mattermost for {what}: {message}")]
    Network { what: &'static str, message: String },
    #[error("Mattermost's answer to {what} does not read: {message}")]
    Body { what: &'static str, message: String },
}

impl ApiError {
    /// Mattermost's status and error id, when it answered with one.
    pub fn refused(&self) -> Option<(u16, &str)> {
        match self {
            ApiError::Mattermost { status, id, .. } => Some((*status, id)),
            _ => None,
        }
    }

    /// Whether the channel or person is refused for good: 403 (the bot may not post
    /// there) or 404 (no such channel or user). The same post would be refused again.
    pub fn refused_for_good(&self) -> bool {
        matches!(self.refused(), Some((403 | 404, _)))
    }
}

/// The bot account, as `users/me` says.
#[derive(Debug, Clone)]
pub struct Me {
    pub id: String,
    pub username: String,
}

/// REST API v4, with the bot's token.
pub struct Api {
    http: reqwest::Client,
    base: String,
    token: SecretString,
    /// At most one new post per interval in one channel (`None`: not paced here).
    posts: Option<pacing::Quota<String>>,
    pauses: Pauses<&'static str>,
    /// One line per channel: its new posts go out one at a time, in order.
    lines: Mutex<BoundedMap<String, Arc<Line>>>,
    metrics: Metrics,
}

impl Api {
    /// `server`: `mattermost.url` without its trailing `/`.
    pub fn new(server: &str, token: &str, post_interval: Duration, metrics: Metrics) -> Self {
        let http = reqwest::Client::builder().timeout(TIMEOUT).build().unwrap_or_default();
        let posts = Quota::with_period(post_interval).map(|quota| pacing::Quota::new(quota, MonotonicClock));
        Self {
            http,
            base: format!("{server}/api/v4"),
            token: SecretString::from(token.to_owned()),
            posts,
            pauses: Pauses::new(),
            lines: Mutex::new(BoundedMap::new(LINES)),
            metrics,
        }
    }

    /// `method path` with `body`, waiting out 429s: the answer's JSON.
    pub async fn call(&self, what: &'static str, method: Method, path: &str, body: Option<&Value>) -> Result<Value, ApiError> {
        let url = format!("{}{path}", self.base);
        let mut attempt = 1;
        loop {
            self.pauses.wait(&EVERY_CALL).await;
            match self.attempt(what, method.clone(), &url, body).await {
                Ok(answer) => return Ok(answer),
                Err(Attempt::Wait(wait)) if attempt < ATTEMPTS => {
                    tracing::info!(what, wait_ms = wait.as_millis() as u64, "Mattermost rate limited a call; waiting as told");
                    self.pauses.pause(Scope::All, wait);
                    attempt += 1;
                }
                Err(Attempt::Wait(_)) => return Err(ApiError::RateLimited { what }),
                Err(Attempt::Failed(e)) => return Err(e),
            }
        }
    }

    async fn attempt(&self, what: &'static str, method: Method, url: &str, body: Option<&Value>) -> Result<Value, Attempt> {
        let mut request = self.http.request(method, url).bearer_auth(self.token.expose_secret());
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) => {
                self.metrics.platform_error(PLATFORM, PlatformErrorKind::Network);
                return Err(Attempt::Failed(ApiError::Network { what, message: crate::error_chain::one_line(&e) }));
            }
        };
        let status = response.status().as_u16();
        if status == 429 {
            self.metrics.platform_error(PLATFORM, PlatformErrorKind::RateLimited);
            return Err(Attempt::Wait(rate_limit_wait(response.headers())));
        }
        let text = response.text().await.unwrap_or_default();
        if !(200..300).contains(&status) {
            if let Some(kind) = PlatformErrorKind::from_status(status) {
                self.metrics.platform_error(PLATFORM, kind);
            }
            let id = serde_json::from_str::<Value>(&text).ok().and_then(|v| v["id"].as_str().map(str::to_owned)).unwrap_or_default();
            return Err(Attempt::Failed(ApiError::Mattermost { what, status, id }));
        }
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text).map_err(|e| Attempt::Failed(ApiError::Body { what, message: e.to_string() }))
    }

    /// `GET users/me`: who the token is.
    pub async fn me(&self) -> Result<Me, ApiError> {
        let me = self.call("users/me", Method::GET, "/users/me", None).await?;
        let field = |name: &str| me[name].as_str().map(str::to_owned).ok_or(ApiError::Body { what: "users/me", message: format!("no {name}") });
        Ok(Me { id: field("id")?, username: field("username")? })
    }

    /// `POST posts` of `post` (its `channel_id` set) when the channel's turn comes:
    /// the new post's id.
    pub async fn create_post(&self, post: &Value, priority: Priority) -> Result<String, ApiError> {
        let channel = post["channel_id"].as_str().unwrap_or_default().to_owned();
        let line = self.line(&channel);
        let _turn = line.turn(priority).await;
        if let Some(posts) = &self.posts {
            posts.until_ready(&channel).await;
        }
        let answer = self.call("posts", Method::POST, "/posts", Some(post)).await?;
        answer["id"].as_str().map(str::to_owned).ok_or(ApiError::Body { what: "posts", message: "no id in the answer".into() })
    }

    /// `PUT posts/{id}/patch`: a post's message and props replaced.
    pub async fn patch_post(&self, post_id: &str, patch: &Value) -> Result<(), ApiError> {
        self.call("posts/patch", Method::PUT, &format!("/posts/{post_id}/patch"), Some(patch)).await.map(|_| ())
    }

    /// `POST posts/ephemeral`: `message` that only `user_id` sees in `channel_id`.
    pub async fn ephemeral(&self, user_id: &str, channel_id: &str, root_id: Option<&str>, message: &str) -> Result<(), ApiError> {
        let mut post = json!({ "channel_id": channel_id, "message": message });
        if let Some(root) = root_id {
            post["root_id"] = json!(root);
        }
        self.call("posts/ephemeral", Method::POST, "/posts/ephemeral", Some(&json!({ "user_id": user_id, "post": post }))).await.map(|_| ())
    }

    /// `POST actions/dialogs/open`: a dialog for the click whose `trigger_id` it
    /// answers, submitted to `url`.
    pub async fn open_dialog(&self, trigger_id: &str, url: &str, dialog: &Value) -> Result<(), ApiError> {
        let body = json!({ "trigger_id": trigger_id, "url": url, "dialog": dialog });
        self.call("actions/dialogs/open", Method::POST, "/actions/dialogs/open", Some(&body)).await.map(|_| ())
    }

    /// `POST channels/direct`: the DM channel of the bot and `user`.
    pub async fn direct_channel(&self, bot: &str, user: &str) -> Result<String, ApiError> {
        let answer = self.call("channels/direct", Method::POST, "/channels/direct", Some(&json!([bot, user]))).await?;
        answer["id"].as_str().map(str::to_owned).ok_or(ApiError::Body { what: "channels/direct", message: "no id in the answer".into() })
    }

    /// `GET channels/{id}/posts?since=`: the posts made or changed in `channel` since
    /// `since_ms`, oldest first (Mattermost answers `{order, posts}`, newest first).
    pub async fn posts_since(&self, channel: &str, since_ms: i64) -> Result<Vec<Value>, ApiError> {
        let answer = self.call("channels/posts", Method::GET, &format!("/channels/{channel}/posts?since={since_ms}"), None).await?;
        let mut posts: Vec<Value> = answer["posts"].as_object().map(|p| p.values().cloned().collect()).unwrap_or_default();
        posts.sort_by_key(|p| p["create_at"].as_i64().unwrap_or_default());
        Ok(posts)
    }

    fn line(&self, channel: &str) -> Arc<Line> {
        let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(line) = lines.get(&channel.to_owned()) {
            return line.clone();
        }
        let line = Arc::new(Line::default());
        lines.insert(channel.to_owned(), line.clone());
        line
    }
}

/// How long a 429 asks to wait: the longer of `Retry-After` and `X-Ratelimit-Reset`
/// (seconds until the window frees a request), bounded.
fn rate_limit_wait(headers: &reqwest::header::HeaderMap) -> Duration {
    let retry = retry_after(headers, Duration::ZERO, MAX_RETRY_AFTER);
    let reset = headers
        .get("x-ratelimit-reset")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(Duration::ZERO, Duration::from_secs)
        .min(MAX_RETRY_AFTER);
    let wait = retry.max(reset);
    if wait.is_zero() { DEFAULT_RETRY_AFTER } else { wait }
}

/// How one attempt ended, when not with an answer.
enum Attempt {
    /// 429: try again after this long.
    Wait(Duration),
    Failed(ApiError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn a_429_waits_the_longer_of_retry_after_and_the_reset() {
        assert_eq!(rate_limit_wait(&headers(&[("x-ratelimit-reset", "2"), ("x-ratelimit-remaining", "0")])), Duration::from_secs(2));
        assert_eq!(rate_limit_wait(&headers(&[("x-ratelimit-reset", "1"), ("retry-after", "3")])), Duration::from_secs(3));
        assert_eq!(rate_limit_wait(&headers(&[])), DEFAULT_RETRY_AFTER);
        assert_eq!(rate_limit_wait(&headers(&[("x-ratelimit-reset", "100000")])), MAX_RETRY_AFTER);
    }

    #[test]
    fn only_403_and_404_refuse_for_good() {
        let err = |status| ApiError::Mattermost { what: "posts", status, id: "x".into() };
        assert!(err(403).refused_for_good() && err(404).refused_for_good());
        assert!(!err(400).refused_for_good() && !err(500).refused_for_good());
        assert!(!ApiError::RateLimited { what: "posts" }.refused_for_good());
    }
}
