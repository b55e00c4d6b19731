//! The Connector API client (learn.microsoft.com, "API reference for the Bot
//! Framework Connector service"), on each conversation's `serviceUrl`:
//!
//! - [`Api::send`]: `POST /v3/conversations/{id}/activities` (a new message);
//! - [`Api::reply`]: `POST /v3/conversations/{id}/activities/{activityId}` (in the thread
//!   of a channel message);
//! - [`Api::update`] and [`Api::delete`]: `PUT` and `DELETE` on an activity;
//! - [`Api::create_conversation`]: `POST /v3/conversations`, a 1:1 chat with a person;
//! - [`Api::members`]: `GET /v3/conversations/{id}/pagedmembers`, who is in a team or
//!   channel, page by page (`ChannelServiceController.GetConversationPagedMembersAsync`).
//!
//! Every call carries the bot's token ([`Login`]; a 401 forgets it and tries once
//! more) and is paced per conversation before Teams has to refuse: Teams allows a bot
//! 7 operations a second, 8 in 2 seconds, 60 in 30 seconds and 1,800 an hour in one
//! conversation (learn.microsoft.com, "Optimize your bot with rate limiting and best
//! practices in Teams"). New messages wait their turn by priority (cards first); a
//! 429 pauses the conversation for its `Retry-After` and the call is tried again, so a
//! burst is delayed, never dropped or reordered. A 5xx is tried again a few times.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};

use super::login::{Login, LoginError};
use super::pacing::Windows;
use crate::platform::kit::bounded::BoundedMap;
use crate::platform::kit::pacing::{Pauses, Scope, retry_after};
use crate::platform::kit::turns::{Line, Priority};

/// How often a call is tried at most (429s and 5xx together).
const TRIES: usize = 10;
/// The wait after a 429 without a readable `Retry-After`, and the longest honoured.
const DEFAULT_WAIT: Duration = Duration::from_secs(1);
const MAX_WAIT: Duration = Duration::from_secs(60);
/// Lines kept for conversations at most.
const LINES: usize = 10_000;
/// Members asked for per page (Teams' largest page), and pages read at most: a team
/// holds at most 25,000 members.
const MEMBER_PAGE: &str = "500";
const MAX_MEMBER_PAGES: usize = 50;

/// A call that failed.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{what}: HTTP {status} {code}")]
    Status { what: &'static str, status: u16, code: String },
    #[error("{what}: still rate limited after {TRIES} tries")]
    RateLimited { what: &'static str },
    #[error("{what}: {message}")]
    Network { what: &'static str, message: String },
    #[error(transparent)]
    Login(#[from] LoginError),
}

impl ApiError {
    /// Teams' reason when the conversation is closed to the bot for good (it was
    /// removed, the conversation is gone, the person blocked it): 403 and 404.
    pub fn refused_for_good(&self) -> Option<String> {
        match self {
            ApiError::Status { status: 403 | 404, code, .. } => Some(code.clone()),
            _ => None,
        }
    }
}

/// The per-conversation windows, the 429 pauses and the lines new messages wait in.
struct Pacing {
    windows: Windows,
    pauses: Pauses<String>,
    lines: Mutex<BoundedMap<String, Arc<Line>>>,
}

impl Pacing {
    fn new() -> Self {
        Self { windows: Windows::default(), pauses: Pauses::new(), lines: Mutex::new(BoundedMap::new(LINES)) }
    }

    fn line(&self, conversation: &str) -> Arc<Line> {
        let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(line) = lines.get(&conversation.to_owned()) {
            return line.clone();
        }
        let line = Arc::new(Line::default());
        lines.insert(conversation.to_owned(), line.clone());
        line
    }

    /// Waits until one more operation in `conversation` stays within every window.
    async fn ready(&self, conversation: &String) {
        self.pauses.wait(conversation).await;
        self.windows.ready(conversation).await;
    }
}

/// The Connector API client.
pub struct Api {
    http: reqwest::Client,
    login: Login,
    /// `28:<app id>`: the bot as a member of a conversation.
    bot_id: String,
    tenant_id: String,
    pacing: Pacing,
}

impl Api {
    pub fn new(http: reqwest::Client, login: Login, app_id: &str, tenant_id: &str) -> Self {
        Self { http, login, bot_id: format!("28:{app_id}"), tenant_id: tenant_id.to_owned(), pacing: Pacing::new() }
    }

    /// The token, for the start-up check.
    pub async fn check_login(&self) -> Result<(), LoginError> {
        self.login.token().await.map(|_| ())
    }

    /// A new message in `conversation`: its activity id.
    pub async fn send(&self, service_url: &str, conversation: &str, activity: &Value, priority: Priority) -> Result<String, ApiError> {
        let url = format!("{service_url}v3/conversations/{}/activities", path(conversation));
        self.post_new("send", conversation, &url, &encode(activity)?, priority).await
    }

    /// A message in the thread of `reply_to` (a channel message): its activity id.
    pub async fn reply(&self, service_url: &str, conversation: &str, reply_to: &str, activity: &Value, priority: Priority) -> Result<String, ApiError> {
        let url = format!("{service_url}v3/conversations/{}/activities/{}", path(conversation), path(reply_to));
        let body = encode(&Addressed { activity, id: None, reply_to_id: Some(reply_to) })?;
        self.post_new("reply", conversation, &url, &body, priority).await
    }

    async fn post_new(&self, what: &'static str, conversation: &str, url: &str, activity: &[u8], priority: Priority) -> Result<String, ApiError> {
        let line = self.pacing.line(conversation);
        let _turn = line.turn(priority).await;
        let answer = self.call(what, conversation, reqwest::Method::POST, url, Some(activity)).await?;
        Ok(answer["id"].as_str().unwrap_or_default().to_owned())
    }

    /// Replaces activity `id` (a card's new state, a streamed message's longer text).
    pub async fn update(&self, service_url: &str, conversation: &str, id: &str, activity: &Value) -> Result<(), ApiError> {
        let url = format!("{service_url}v3/conversations/{}/activities/{}", path(conversation), path(id));
        let body = encode(&Addressed { activity, id: Some(id), reply_to_id: None })?;
        self.call("update", conversation, reqwest::Method::PUT, &url, Some(&body)).await.map(|_| ())
    }

    /// Deletes activity `id`.
    pub async fn delete(&self, service_url: &str, conversation: &str, id: &str) -> Result<(), ApiError> {
        let url = format!("{service_url}v3/conversations/{}/activities/{}", path(conversation), path(id));
        self.call("delete", conversation, reqwest::Method::DELETE, &url, None).await.map(|_| ())
    }

    /// The 1:1 chat between the bot and the person whose Entra object id is `user`:
    /// its conversation id (Teams gives the same one every time).
    pub async fn create_conversation(&self, service_url: &str, user: &str) -> Result<String, ApiError> {
        let mut body = json!({ "bot": { "id": self.bot_id }, "members": [{ "id": user, "aadObjectId": user }], "isGroup": false });
        if !self.tenant_id.is_empty() {
            body["tenantId"] = json!(self.tenant_id);
            body["channelData"] = json!({ "tenant": { "id": self.tenant_id } });
        }
        let url = format!("{service_url}v3/conversations");
        let answer = self.call("create conversation", user, reqwest::Method::POST, &url, Some(&encode(&body)?)).await?;
        answer["id"].as_str().filter(|id| !id.is_empty()).map(str::to_owned).ok_or(ApiError::Status {
            what: "create conversation",
            status: 200,
            code: "no id".into(),
        })
    }

    /// The Entra object ids of everyone in `conversation` (a team or a channel: the
    /// team's members), every page of them.
    pub async fn members(&self, service_url: &str, conversation: &str) -> Result<Vec<String>, ApiError> {
        let mut people = Vec::new();
        let mut continuation: Option<String> = None;
        for _ in 0..MAX_MEMBER_PAGES {
            let mut url = url::Url::parse(&format!("{service_url}v3/conversations/{}/pagedmembers", path(conversation)))
                .map_err(|e| ApiError::Network { what: "members", message: e.to_string() })?;
            url.query_pairs_mut().append_pair("pageSize", MEMBER_PAGE);
            if let Some(token) = &continuation {
                url.query_pairs_mut().append_pair("continuationToken", token);
            }
            let page = self.call("members", conversation, reqwest::Method::GET, url.as_str(), None).await?;
            let listed = page["members"].as_array().map(Vec::as_slice).unwrap_or_default();
            people.extend(listed.iter().filter_map(|m| m["aadObjectId"].as_str()).map(str::to_owned));
            continuation = page["continuationToken"].as_str().filter(|t| !t.is_empty()).map(str::to_owned);
            if continuation.is_none() {
                return Ok(people);
            }
        }
        tracing::warn!(conversation, read = people.len(), "a Teams member list longer than the bridge reads; the rest do not count");
        Ok(people)
    }

    /// One call, paced in `conversation`, tried again after a 429 (its wait), a 5xx or
    /// an expired token; its JSON answer (`null` when empty). `body` is JSON, encoded
    /// once for every try.
    async fn call(&self, what: &'static str, conversation: &str, method: reqwest::Method, url: &str, body: Option<&[u8]>) -> Result<Value, ApiError> {
        let key = conversation.to_owned();
        let mut renewed = false;
        for attempt in 0..TRIES {
            self.pacing.ready(&key).await;
            let token = self.login.token().await?;
            let mut request = self.http.request(method.clone(), url).bearer_auth(token).timeout(Duration::from_secs(30));
            if let Some(body) = body {
                request = request.header(reqwest::header::CONTENT_TYPE, "application/json").body(body.to_vec());
            }
            let response = match request.send().await {
                Ok(response) => response,
                Err(e) if attempt + 1 < TRIES && (e.is_connect() || e.is_timeout()) => {
                    tokio::time::sleep(backoff(attempt)).await;
                    continue;
                }
                Err(e) => return Err(ApiError::Network { what, message: e.to_string() }),
            };
            let status = response.status().as_u16();
            match status {
                200..=299 => {
                    let bytes = response.bytes().await.map_err(|e| ApiError::Network { what, message: e.to_string() })?;
                    return Ok(serde_json::from_slice(&bytes).unwrap_or(Value::Null));
                }
                429 => {
                    let wait = retry_after(response.headers(), DEFAULT_WAIT, MAX_WAIT);
                    tracing::info!(what, conversation, wait_ms = wait.as_millis() as u64, "Teams asked to slow down; waiting");
                    self.pacing.pauses.pause(Scope::One(key.clone()), wait);
                }
                401 if !renewed => {
                    renewed = true;
                    self.login.forget().await;
                }
                500..=599 => tokio::time::sleep(backoff(attempt)).await,
                _ => {
                    let body: Value = response.json().await.unwrap_or(Value::Null);
                    let code = body["error"]["code"].as_str().unwrap_or_default().to_owned();
                    return Err(ApiError::Status { what, status, code });
                }
            }
        }
        Err(ApiError::RateLimited { what })
    }
}

/// An activity sent with the field its call adds (the activity it replaces, the one it
/// answers in a thread): encoded around it, not copied into a new one.
#[derive(Serialize)]
struct Addressed<'a> {
    #[serde(flatten)]
    activity: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    #[serde(rename = "replyToId", skip_serializing_if = "Option::is_none")]
    reply_to_id: Option<&'a str>,
}

/// A request's JSON body.
fn encode(body: &impl Serialize) -> Result<Vec<u8>, ApiError> {
    serde_json::to_vec(body).map_err(|e| ApiError::Network { what: "encode", message: e.to_string() })
}

/// The wait before try `attempt + 1` after a server error: 0.2 s, doubling, at most 5 s.
fn backoff(attempt: usize) -> Duration {
    Duration::from_millis(200u64.saturating_mul(1 << attempt.min(5))).min(Duration::from_secs(5))
}

/// An id as a URL path segment: conversation ids hold `:`, `@` and `;`, which the
/// Connector API takes as they are; anything else was refused by the address grammar.
fn path(id: &str) -> String {
    url::form_urlencoded::byte_serialize(id.as_bytes()).collect::<String>().replace("%3A", ":").replace("%40", "@").replace("%3B", ";").replace("%3D", "=")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_or_a_reply_is_the_activity_with_its_address_last() {
        let activity = json!({ "type": "message", "text": "x" });
        let sent = |id, reply_to_id| String::from_utf8(encode(&Addressed { activity: &activity, id, reply_to_id }).unwrap()).unwrap();
        assert_eq!(sent(Some("1:2"), None), r#"{"type":"message","text":"x","id":"1:2"}"#);
        assert_eq!(sent(None, Some("17")), r#"{"type":"message","text":"x","replyToId":"17"}"#);
    }

    #[test]
    fn ids_keep_the_characters_teams_uses_in_paths() {
        assert_eq!(path("19:abc@thread.tacv2;messageid=17"), "19:abc@thread.tacv2;messageid=17");
        assert_eq!(path("a/b?c"), "a%2Fb%3Fc");
    }

    #[test]
    fn only_a_closed_conversation_is_refused_for_good() {
        let status = |status| ApiError::Status { what: "send", status, code: "ConversationNotFound".into() };
        assert_eq!(status(404).refused_for_good().as_deref(), Some("ConversationNotFound"));
        assert_eq!(status(403).refused_for_good().as_deref(), Some("ConversationNotFound"));
        assert_eq!(status(400).refused_for_good(), None);
        assert_eq!(ApiError::RateLimited { what: "send" }.refused_for_good(), None);
    }
}
