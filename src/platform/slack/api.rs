//! The Slack Web API client: JSON POSTs to `slack.api_url` + method name with
//! `Authorization: Bearer` (the bot token, or the app-level token for
//! `apps.connections.open`), on reqwest.
//!
//! Slack answers HTTP 200 with `{"ok": false, "error": "…"}` for most failures; those
//! become [`ApiError::Slack`] with Slack's own error string (`not_in_channel`,
//! `channel_not_found`, `invalid_blocks`…), which the docs' troubleshooting is keyed
//! by. A 429 is waited out for its `Retry-After` and tried again, a few times; every
//! failed attempt is counted in `platform_errors_total`.
//!
//! **Paced before Slack has to say no.** Slack limits each Web API method per app and
//! workspace by its *tier* ([`tier`]: Tier 1 about 1 a minute, Tier 2 20, Tier 3 50,
//! Tier 4 100, each with some burst), and `chat.postMessage` specially: about one
//! message a second per channel. Every call waits for its method's quota
//! ([`Pace`]), so a burst queues here instead of running into 429s; new messages go
//! out one a second per channel (`slack.post_interval_ms`), one at a time and in order,
//! cards before text ([`Line`]).

use std::sync::Mutex;
use std::time::Duration;

use governor::Quota;
use governor::clock::MonotonicClock;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};

use super::PLATFORM;
use crate::metrics::{Metrics, PlatformErrorKind};
use crate::platform::kit::bounded::BoundedMap;
use crate::platform::kit::pacing::{self, Pauses, Scope, at_least_one, retry_after};
use crate::platform::kit::turns::{Line, Priority};

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

/// Slack's rate-limit tiers (<https://api.slack.com/apis/rate-limits>, "Web API rate
/// limit tiers"): requests a minute per method, app and workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// "1+ per minute … a small amount of burst behavior is tolerated".
    One,
    /// "20+ per minute … occasional bursts".
    Two,
    /// "50+ per minute … sporadic bursts are welcome".
    Three,
    /// "100+ per minute … generous burst behavior".
    Four,
    /// `chat.postMessage`'s own: about one a second per channel (paced per channel in
    /// [`Api::post_message`]) and "several hundred messages per minute" across the
    /// workspace (<https://api.slack.com/methods/chat.postMessage#rate_limiting>),
    /// kept here as 300.
    Posts,
}

impl Tier {
    /// The quota the bridge keeps to: the tier's rate a minute, and a burst of as many
    /// (Tier 1's "small amount of burst": a few, enough to reconnect Socket Mode twice).
    fn quota(self) -> Quota {
        let (per_minute, burst) = match self {
            Tier::One => (1, 3),
            Tier::Two => (20, 20),
            Tier::Three => (50, 50),
            Tier::Four => (100, 100),
            Tier::Posts => (300, 300),
        };
        Quota::per_minute(at_least_one(per_minute)).allow_burst(at_least_one(burst))
    }
}

/// The tier of each method the bridge calls, from the "Rate limits" line of the
/// method's page (`https://api.slack.com/methods/<method>`). `chat.postMessage` and
/// `auth.test` are "Special": the first is [`Tier::Posts`], the second (hundreds a
/// minute, called once at start) kept to Tier 4. A method not listed is taken as
/// Tier 2, Slack's most common.
pub fn tier(method: &str) -> Tier {
    match method {
        "apps.connections.open" => Tier::One,
        "usergroups.users.list" => Tier::Two,
        "chat.update" | "conversations.open" => Tier::Three,
        "auth.test" | "chat.postEphemeral" | "views.open" => Tier::Four,
        "chat.postMessage" => Tier::Posts,
        _ => Tier::Two,
    }
}

/// Every method's quota, by its tier: a call waits its turn rather than be refused.
struct Pace {
    tiers: [pacing::Quota<&'static str>; 5],
}

impl Pace {
    fn new() -> Self {
        let limiter = |tier: Tier| pacing::Quota::new(tier.quota(), MonotonicClock);
        Self { tiers: [limiter(Tier::One), limiter(Tier::Two), limiter(Tier::Three), limiter(Tier::Four), limiter(Tier::Posts)] }
    }

    /// Waits until `method` may be called again.
    async fn wait(&self, method: &'static str) {
        self.tiers[tier(method) as usize].until_ready(&method).await;
    }
}

/// What a call sends: JSON, or form fields for the methods Slack reads only that way
/// (reading methods take no JSON body; <https://api.slack.com/web#posting_json>).
pub enum Body<'a> {
    Json(&'a Value),
    Form(&'a [(&'a str, &'a str)]),
}

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

/// Slack's error strings that refuse a conversation or person for good, from
/// `chat.postMessage`'s and `conversations.open`'s documented errors: the same
/// message would be refused again, so it is not tried again there.
const REFUSED_FOR_GOOD: [&str; 12] = [
    "channel_not_found",
    "not_in_channel",
    "is_archived",
    "restricted_action",
    "restricted_action_read_only_channel",
    "restricted_action_thread_only_channel",
    "restricted_action_non_threadable_channel",
    "cannot_dm_bot",
    "user_not_found",
    "user_not_visible",
    "user_disabled",
    "method_not_supported_for_channel_type",
];

impl ApiError {
    /// Slack's error string when it refuses the conversation for good
    /// ([`REFUSED_FOR_GOOD`]); `None` for what may work later (a 429, a 5xx, the
    /// network) and for errors about the message itself.
    pub fn refused_for_good(&self) -> Option<&str> {
        self.slack_error().filter(|error| REFUSED_FOR_GOOD.contains(error))
    }

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
    /// About one new message a second per channel (`None`: not paced here).
    posts: Option<pacing::Quota<String>>,
    /// Each method's pause after a 429: its other calls wait it out too, instead of
    /// each earning a 429 of its own.
    pauses: Pauses<&'static str>,
    /// Each method's tier (`None`: not paced here).
    pace: Option<Pace>,
    /// One line per channel: its new messages go out one at a time, in order.
    lines: Mutex<BoundedMap<String, std::sync::Arc<Line>>>,
    metrics: Metrics,
}

impl Api {
    /// `post_interval`: the least time between two new messages in one channel
    /// (`slack.post_interval_ms`); zero paces nothing here, neither the channels nor
    /// the methods' tiers (only against a fake Slack, as a benchmark does).
    pub fn new(base: &str, bot_token: &str, app_token: Option<&str>, post_interval: Duration, metrics: Metrics) -> Self {
        let http = reqwest::Client::builder().timeout(TIMEOUT).build().unwrap_or_default();
        let posts = Quota::with_period(post_interval).map(|quota| pacing::Quota::new(quota, MonotonicClock));
        Self {
            http,
            base: base.to_owned(),
            bot_token: SecretString::from(bot_token.to_owned()),
            app_token: app_token.map(|t| SecretString::from(t.to_owned())),
            posts,
            pauses: Pauses::new(),
            pace: (!post_interval.is_zero()).then(Pace::new),
            lines: Mutex::new(BoundedMap::new(LINES)),
            metrics,
        }
    }

    /// Calls `method` with the JSON `body`; the whole answer when Slack says `ok`.
    pub async fn call(&self, method: &'static str, token: Token, body: &Value) -> Result<Value, ApiError> {
        self.call_with(method, token, Body::Json(body)).await
    }

    /// Calls `method` with `body` once its tier lets it, waiting out 429s.
    pub async fn call_with(&self, method: &'static str, token: Token, body: Body<'_>) -> Result<Value, ApiError> {
        let token = match token {
            Token::Bot => self.bot_token.expose_secret(),
            Token::App => self.app_token.as_ref().map(|t| t.expose_secret()).unwrap_or_default(),
        };
        let url = format!("{}{method}", self.base);
        let mut attempt = 1;
        loop {
            self.pauses.wait(&method).await;
            if let Some(pace) = &self.pace {
                pace.wait(method).await;
            }
            match self.attempt(method, &url, token, &body).await {
                Ok(answer) => return Ok(answer),
                Err(Attempt::Wait(wait)) if attempt < ATTEMPTS => {
                    tracing::info!(method, wait_ms = wait.as_millis() as u64, "Slack rate limited a call; waiting as told");
                    self.pauses.pause(Scope::One(method), wait);
                    attempt += 1;
                }
                Err(Attempt::Wait(_)) => return Err(ApiError::RateLimited { method }),
                Err(Attempt::Failed(e)) => return Err(e),
            }
        }
    }

    async fn attempt(&self, method: &'static str, url: &str, token: &str, body: &Body<'_>) -> Result<Value, Attempt> {
        let request = self.http.post(url).bearer_auth(token);
        let request = match body {
            Body::Json(body) => request.json(body),
            Body::Form(fields) => request.header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded").body(form(fields)),
        };
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) => {
                self.metrics.platform_error(PLATFORM, PlatformErrorKind::Network);
                return Err(Attempt::Failed(ApiError::Network { method, message: crate::error_chain::one_line(&e) }));
            }
        };
        let status = response.status().as_u16();
        if status == 429 {
            self.metrics.platform_error(PLATFORM, PlatformErrorKind::RateLimited);
            return Err(Attempt::Wait(retry_after(response.headers(), DEFAULT_RETRY_AFTER, MAX_RETRY_AFTER)));
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
        if let Some(posts) = &self.posts {
            posts.until_ready(&channel).await;
        }
        let answer = self.call("chat.postMessage", Token::Bot, message).await;
        if let Some(posts) = &self.posts {
            // A post that waited out a 429 reached Slack long after its turn was taken:
            // the channel's next post waits the interval from now, or it would go out
            // right behind the retry, be refused too, and so would every post after it.
            let _ = posts.check(&channel);
        }
        let answer = answer?;
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

    /// `usergroups.users.list`: the members (user ids) of the user group `group`
    /// (`S…`). Needs the `usergroups:read` scope.
    pub async fn usergroup_members(&self, group: &str) -> Result<Vec<String>, ApiError> {
        let answer = self.call_with("usergroups.users.list", Token::Bot, Body::Form(&[("usergroup", group)])).await?;
        let users = answer["users"].as_array().ok_or(ApiError::Body { method: "usergroups.users.list", message: "no users in the answer".into() })?;
        Ok(users.iter().filter_map(Value::as_str).map(str::to_owned).collect())
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

/// Form fields as `application/x-www-form-urlencoded`: letters, digits and `-._~`
/// as they are, every other byte `%XX`.
fn form(fields: &[(&str, &str)]) -> String {
    let encode = |text: &str| {
        text.bytes().map(|b| if b.is_ascii_alphanumeric() || b"-._~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") }).collect::<String>()
    };
    fields.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect::<Vec<_>>().join("&")
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

    #[test]
    fn every_method_the_bridge_calls_has_its_documented_tier() {
        assert_eq!(tier("apps.connections.open"), Tier::One);
        assert_eq!(tier("usergroups.users.list"), Tier::Two);
        assert_eq!(tier("chat.update"), Tier::Three);
        assert_eq!(tier("conversations.open"), Tier::Three);
        assert_eq!(tier("chat.postEphemeral"), Tier::Four);
        assert_eq!(tier("views.open"), Tier::Four);
        assert_eq!(tier("chat.postMessage"), Tier::Posts);
        assert_eq!(tier("something.new"), Tier::Two);
    }

    #[test]
    fn a_tier_allows_its_burst_then_its_rate() {
        let limiter = pacing::Quota::new(Tier::Two.quota(), MonotonicClock);
        for n in 0..20 {
            assert!(limiter.check(&"usergroups.users.list").is_ok(), "call {n} of the burst");
        }
        let wait = limiter.check(&"usergroups.users.list").unwrap_err();
        assert!(wait > Duration::from_secs(2) && wait <= Duration::from_secs(3), "20 a minute: one every 3 s after the burst, {wait:?}");
        assert!(limiter.check(&"chat.update").is_ok(), "each method has its own quota");
    }

    #[test]
    fn a_zero_post_interval_paces_nothing() {
        let api = |ms: u64| Api::new("http://127.0.0.1:9/api/", "xoxb-1", None, Duration::from_millis(ms), Metrics::new());
        let off = api(0);
        assert!(off.posts.is_none() && off.pace.is_none());
        let on = api(1000);
        assert!(on.posts.is_some() && on.pace.is_some());
    }

    #[test]
    fn form_fields_are_url_encoded() {
        assert_eq!(form(&[("usergroup", "S0OPS")]), "usergroup=S0OPS");
        assert_eq!(form(&[("a", "x y&z"), ("b", "é")]), "a=x%20y%26z&b=%C3%A9");
    }
}
