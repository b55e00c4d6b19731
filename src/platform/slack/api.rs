//! The Slack Web API client: JSON POSTs to `slack.api_url` + method name with
//! `Authorization: Bearer` (the bot token, or the app-level token for
//! `apps.connections.open`), on reqwest.
//!
//! Slack answers HTTP 200 with `{"ok": false, "error": "…"}` for most failures; those
//! become [`ApiError::Slack`] with Slack's own error string (`not_in_channel`,
//! `channel_not_found`, `invalid_blocks`…), which the docs' troubleshooting is keyed
//! by. A 429 is waited out for its `Retry-After` and tried again, a few times; every
//! failed attempt is counted in `platform_errors_total`. New messages go out about one
//! a second per channel (Slack's documented pace for `chat.postMessage`), one at a
//! time and in order, cards before text ([`Line`]).

use std::sync::Mutex;
use std::time::Duration;

use governor::clock::{Clock, MonotonicClock};
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::HashMapStateStore;
use governor::{Quota, RateLimiter};
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};

use super::PLATFORM;
use crate::metrics::{Metrics, PlatformErrorKind};
use crate::platform::bounded::BoundedMap;
use crate::platform::turns::{Line, Priority};

/// Attempts per call, the first included.
const ATTEMPTS: u32 = 5;
/// The wait when a 429 names none.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);
/// The longest a 429 is waited out before the call gives up.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// How long one call may take.
const TIMEOUT: Duration = Duration::from_secs(30);
/// Channels whose send order is remembered at once.
const LINES: usize = 10_000;

type ChannelLimiter = RateLimiter<String, HashMapStateStore<String>, MonotonicClock, NoOpMiddleware<<MonotonicClock as Clock>::Instant>>;

/// Why a Web API call failed.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// Slack answered `ok: false` with this error string.
    #[error("Slack refused {method}: {error}")]
    Slack { method: &'static str, error: String },
    /// Still rate limited after every attempt.
    #[error("Slack kept answering {method} with 429 (ratelimited)")]
    RateLimited { method: &'static str },
    #[error("cannot reach Slack for {method}: {message}")]
    Network { method: &'static str, message: String },
    #[error("Slack answered {method} with HTTP {status}")]
    Status { method: &'static str, status: u16 },
    #[error("Slack's answer to {method} does not read as JSON: {message}")]
    Body { method: &'static str, message: String },
}

impl ApiError {
    /// Slack's error string, when Slack answered with one.
    pub fn slack_error(&self) -> Option<&str> {
        match self {
            ApiError::Slack { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// Which token a call carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token {
    Bot,
    App,
}

/// The Web API, with the bot's (and the app's) token.
pub struct Api {
    http: reqwest::Client,
    base: String,
    bot_token: SecretString,
    app_token: Option<SecretString>,
    /// About one new message a second per channel.
    posts: ChannelLimiter,
    /// One line per channel: its new messages go out one at a time, in order.
    lines: Mutex<BoundedMap<String, std::sync::Arc<Line>>>,
    metrics: Metrics,
}

impl Api {
    pub fn new(base: &str, bot_token: &str, app_token: Option<&str>, metrics: Metrics) -> Self {
        let http = reqwest::Client::builder().timeout(TIMEOUT).build().unwrap_or_default();
        let quota = Quota::per_second(std::num::NonZeroU32::MIN);
        Self {
            http,
            base: base.to_owned(),
            bot_token: SecretString::from(bot_token.to_owned()),
            app_token: app_token.map(|t| SecretString::from(t.to_owned())),
            posts: RateLimiter::hashmap_with_clock(quota, MonotonicClock),
            lines: Mutex::new(BoundedMap::new(LINES)),
            metrics,
        }
    }

    /// Calls `method` with `body`; the whole answer when Slack says `ok`.
    pub async fn call(&self, method: &'static str, token: Token, body: &Value) -> Result<Value, ApiError> {
        let token = match token {
            Token::Bot => self.bot_token.expose_secret(),
            Token::App => self.app_token.as_ref().map(|t| t.expose_secret()).unwrap_or_default(),
        };
        let url = format!("{}{method}", self.base);
        let mut attempt = 1;
        loop {
            match self.attempt(method, &url, token, body).await {
                Ok(answer) => return Ok(answer),
                Err(Attempt::Wait(wait)) if attempt < ATTEMPTS => {
                    tracing::info!(method, wait_ms = wait.as_millis() as u64, "Slack rate limited a call; waiting as told");
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                Err(Attempt::Wait(_)) => return Err(ApiError::RateLimited { method }),
                Err(Attempt::Failed(e)) => return Err(e),
            }
        }
    }

    async fn attempt(&self, method: &'static str, url: &str, token: &str, body: &Value) -> Result<Value, Attempt> {
        let response = match self.http.post(url).bearer_auth(token).json(body).send().await {
            Ok(response) => response,
            Err(e) => {
                self.metrics.platform_error(PLATFORM, PlatformErrorKind::Network);
                return Err(Attempt::Failed(ApiError::Network { method, message: crate::error_chain::one_line(&e) }));
            }
        };
        let status = response.status().as_u16();
        if status == 429 {
            self.metrics.platform_error(PLATFORM, PlatformErrorKind::RateLimited);
            let wait = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map_or(DEFAULT_RETRY_AFTER, Duration::from_secs);
            return Err(Attempt::Wait(wait.min(MAX_RETRY_AFTER)));
        }
        if let Some(kind) = PlatformErrorKind::from_status(status) {
            self.metrics.platform_error(PLATFORM, kind);
            return Err(Attempt::Failed(ApiError::Status { method, status }));
        }
        let answer: Value = response.json().await.map_err(|e| {
            self.metrics.platform_error(PLATFORM, PlatformErrorKind::Server);
            Attempt::Failed(ApiError::Body { method, message: e.to_string() })
        })?;
        if answer["ok"] == json!(true) {
            return Ok(answer);
        }
        self.metrics.platform_error(PLATFORM, PlatformErrorKind::Client);
        let error = answer["error"].as_str().unwrap_or("unknown_error").to_owned();
        Err(Attempt::Failed(ApiError::Slack { method, error }))
    }

    /// `auth.test`: who the bot token is, as `(bot user id, team id)`.
    pub async fn auth_test(&self) -> Result<(String, String), ApiError> {
        let answer = self.call("auth.test", Token::Bot, &json!({})).await?;
        let field = |name: &str| answer[name].as_str().unwrap_or_default().to_owned();
        Ok((field("user_id"), field("team_id")))
    }

    /// `apps.connections.open`: a Socket Mode WebSocket URL (app-level token).
    pub async fn connections_open(&self) -> Result<String, ApiError> {
        let answer = self.call("apps.connections.open", Token::App, &json!({})).await?;
        answer["url"].as_str().map(str::to_owned).ok_or(ApiError::Body { method: "apps.connections.open", message: "no url in the answer".into() })
    }

    /// `conversations.open`: the DM channel with `user`.
    pub async fn conversations_open(&self, user: &str) -> Result<String, ApiError> {
        let answer = self.call("conversations.open", Token::Bot, &json!({ "users": user })).await?;
        answer["channel"]["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or(ApiError::Body { method: "conversations.open", message: "no channel id in the answer".into() })
    }

    /// `chat.postMessage` of `message` (its `channel` set) when the channel's turn
    /// comes: the message's `ts`.
    pub async fn post_message(&self, message: &Value, priority: Priority) -> Result<String, ApiError> {
        let channel = message["channel"].as_str().unwrap_or_default().to_owned();
        let line = self.line(&channel);
        let _turn = line.turn(priority).await;
        while let Err(not_until) = self.posts.check_key(&channel) {
            tokio::time::sleep(not_until.wait_time_from(MonotonicClock.now())).await;
        }
        let answer = self.call("chat.postMessage", Token::Bot, message).await?;
        answer["ts"].as_str().map(str::to_owned).ok_or(ApiError::Body { method: "chat.postMessage", message: "no ts in the answer".into() })
    }

    /// `chat.update` of the message `ts` in `channel` to `message` (text and blocks).
    pub async fn update_message(&self, channel: &str, ts: &str, message: &Value) -> Result<(), ApiError> {
        let mut body = message.clone();
        body["channel"] = json!(channel);
        body["ts"] = json!(ts);
        self.call("chat.update", Token::Bot, &body).await.map(|_| ())
    }

    /// `chat.postEphemeral`: `text` that only `user` sees in `channel` (in `thread`).
    pub async fn post_ephemeral(&self, channel: &str, user: &str, thread: Option<&str>, text: &str) -> Result<(), ApiError> {
        let mut body = json!({ "channel": channel, "user": user, "text": text });
        if let Some(thread) = thread {
            body["thread_ts"] = json!(thread);
        }
        self.call("chat.postEphemeral", Token::Bot, &body).await.map(|_| ())
    }

    /// `views.open`: a modal, for the click whose `trigger_id` it answers.
    pub async fn open_view(&self, trigger_id: &str, view: &Value) -> Result<(), ApiError> {
        self.call("views.open", Token::Bot, &json!({ "trigger_id": trigger_id, "view": view })).await.map(|_| ())
    }

    fn line(&self, channel: &str) -> std::sync::Arc<Line> {
        let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(line) = lines.get(&channel.to_owned()) {
            return line.clone();
        }
        let line = std::sync::Arc::new(Line::default());
        lines.insert(channel.to_owned(), line.clone());
        line
    }
}

/// How one attempt ended, when not with an answer.
enum Attempt {
    /// 429: try again after this long.
    Wait(Duration),
    Failed(ApiError),
}
