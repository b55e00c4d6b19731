//! A fake Mattermost for the tests: an axum server the bridge's REST v4 client talks to
//! through `mattermost.url`, and the people who click, who post to the bridge's
//! integration endpoint as the Mattermost server does.
//!
//! REST API v4 (<https://api.mattermost.com>), `Authorization: Bearer <token>`:
//! `GET users/me` and `GET users/{id}`, `POST posts`, `PUT posts/{id}/patch`,
//! `POST posts/ephemeral`, `POST channels/direct`, `POST actions/dialogs/open`,
//! `GET channels/{id}/posts?since=`, and for approver groups
//! `GET channels/{id}/members/{user_id}` (200 with the membership, 404
//! `app.channel.get_member.missing.app_error` for someone not in it, 403 where the bot
//! is not a member: `read_channel`, per
//! <https://docs.mattermost.com/api/reference/get-channel-member>) and
//! `GET groups/{id}/members?page=&per_page=` (`{"members": [users], "total_member_count"}`,
//! `per_page` at most 200, 404 for an unknown group).
//! Failures carry Mattermost's `AppError` body (`{"id", "message", "status_code"}`):
//! 401 `api.context.session_expired.app_error` for a wrong token, 404
//! `app.channel.get.existing.app_error` for an unknown channel, 403
//! `api.context.permissions.app_error` where the bot is not a member, 404
//! `app.post.get.app_error` for an edit of a post it does not have, 400
//! `model.post.is_valid.msg.app_error` past the post limit (16,383 characters,
//! `PostMessageMaxRunesV2`), 400 for an attachment action without an integration URL,
//! and 400 `api.interactive_dialog.trigger_id.expired` for a `trigger_id` used twice
//! or never handed out (a trigger is valid once, for 3 seconds, per
//! <https://developers.mattermost.com/integrate/plugins/interactive-dialogs/>), or a
//! dialog past its documented limits (title 24 characters, a `textarea`'s
//! `max_length` 3,000, a `text`'s 150). With a rate set, posts past it in one second
//! are answered 429 with `X-Ratelimit-Limit`, `X-Ratelimit-Remaining: 0` and
//! `X-Ratelimit-Reset` (seconds), as Mattermost's throttled limiter does
//! (<https://docs.mattermost.com/configure/rate-limiting-configuration-settings.html>).
//!
//! A click ([`FakeMattermost::click`]) is what the server does when someone presses a
//! button: it hands out a fresh `trigger_id` and posts
//! `{user_id, user_name, channel_id, team_id, post_id, trigger_id, type, context}` to
//! the action's `integration.url`, the action's `context` as stored (plus
//! `selected_option` for a menu), unsigned. A dialog submission
//! ([`FakeMattermost::submit_dialog`]) posts `{type: "dialog_submission", callback_id,
//! state, user_id, channel_id, team_id, submission, cancelled}` to the dialog's `url`
//! (<https://developers.mattermost.com/integrate/plugins/interactive-messages/>).

#![allow(dead_code)]

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::ws::{Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use serde_json::{Value, json};

pub const BOT_TOKEN: &str = "xi4ec1tsxpgztr8ejmxy1rbnew";
pub const BOT_ID: &str = "b0t00000000000000000000000";
pub const TEAM: &str = "t0am0000000000000000000000";
/// A channel the bot is in.
pub const OPS: &str = "c0ps0000000000000000000000";
/// `PostMessageMaxRunesV2`.
pub const POST_LIMIT: usize = 16_383;

/// A person in Mattermost.
#[derive(Debug, Clone)]
pub struct Person {
    pub id: String,
    pub username: String,
}

impl Person {
    pub fn new(id: &str, username: &str) -> Self {
        assert!(id.len() == 26, "a Mattermost id has 26 characters: {id}");
        Self { id: id.into(), username: username.into() }
    }
}

/// One REST call as the bridge made it.
#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    pub path: String,
    pub body: Value,
    pub status: u16,
    pub at: Instant,
}

#[derive(Default)]
struct Inner {
    calls: Vec<Call>,
    /// Channels that exist, and whether the bot is in each.
    channels: HashMap<String, bool>,
    users: HashMap<String, String>,
    /// Post id → the post as last created or patched.
    posts: HashMap<String, Value>,
    /// Post ids in the order they were created.
    order: Vec<String>,
    ephemerals: Vec<Value>,
    /// Trigger ids handed out and not used yet, with when.
    triggers: HashMap<String, Instant>,
    used_triggers: HashSet<String>,
    /// Dialogs opened: the whole `actions/dialogs/open` body.
    dialogs: Vec<Value>,
    /// Each channel's members besides the bot, and each custom group's.
    members: HashMap<String, HashSet<String>>,
    groups: HashMap<String, Vec<String>>,
    /// Posts allowed per second, and this second's count.
    rate: Option<u32>,
    window: Option<(Instant, u32)>,
    throttled: u32,
    /// The live WebSocket's events to send, and how many connections authenticated.
    socket: Option<tokio::sync::mpsc::UnboundedSender<Option<Value>>>,
    connections: u32,
    /// The live connection's next `seq`.
    seq: i64,
    /// While set, new WebSocket connections are closed at once (Mattermost is down).
    refuse_connections: bool,
}

struct Shared {
    addr: std::net::SocketAddr,
    inner: Mutex<Inner>,
    next: AtomicU64,
}

impl Shared {
    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A fresh 26-character id.
    fn new_id(&self, prefix: char) -> String {
        format!("{prefix}{:025}", self.next.fetch_add(1, Ordering::SeqCst))
    }
}

pub struct FakeMattermost {
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
    http: reqwest::Client,
}

/// Mattermost's error body.
fn app_error(status: StatusCode, id: &str, message: &str) -> Response {
    (status, axum::Json(json!({ "id": id, "message": message, "status_code": status.as_u16(), "request_id": "fake" }))).into_response()
}

impl FakeMattermost {
    pub async fn start() -> FakeMattermost {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind fake mattermost");
        let addr = listener.local_addr().expect("addr");
        let shared = Arc::new(Shared { addr, inner: Mutex::new(Inner::default()), next: AtomicU64::new(1) });
        shared.inner().channels.insert(OPS.into(), true);
        shared.inner().users.insert(BOT_ID.into(), "hitl-bridge".into());
        let app = Router::new()
            .route("/api/v4/users/me", get(me))
            .route("/api/v4/users/{id}", get(user))
            .route("/api/v4/posts", post(create_post))
            .route("/api/v4/posts/{id}/patch", put(patch_post))
            .route("/api/v4/posts/ephemeral", post(ephemeral))
            .route("/api/v4/channels/direct", post(direct))
            .route("/api/v4/actions/dialogs/open", post(open_dialog))
            .route("/api/v4/channels/{id}/posts", get(posts_since))
            .route("/api/v4/channels/{id}/members/{user}", get(channel_member))
            .route("/api/v4/groups/{id}/members", get(group_members))
            .route("/api/v4/websocket", get(websocket))
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(super::without_nagle(listener), app).await;
        });
        FakeMattermost { shared, task, http: reqwest::Client::new() }
    }

    /// The `mattermost.url` to give the bridge.
    pub fn url(&self) -> String {
        format!("http://{}", self.shared.addr)
    }

    pub fn shutdown(self) {
        self.task.abort();
    }

    /// A person Mattermost knows.
    pub fn user(&self, person: &Person) {
        self.shared.inner().users.insert(person.id.clone(), person.username.clone());
    }

    /// A channel that exists, with or without the bot in it.
    pub fn channel(&self, id: &str, bot_is_member: bool) {
        self.shared.inner().channels.insert(id.into(), bot_is_member);
    }

    /// `person` joins channel `id`.
    pub fn join(&self, id: &str, person: &Person) {
        self.shared.inner().members.entry(id.into()).or_default().insert(person.id.clone());
    }

    /// `person` leaves channel `id`.
    pub fn leave(&self, id: &str, person: &Person) {
        self.shared.inner().members.entry(id.into()).or_default().remove(&person.id);
    }

    /// A custom group `id` of `people`.
    pub fn group(&self, id: &str, people: &[&Person]) {
        self.shared.inner().groups.insert(id.into(), people.iter().map(|p| p.id.clone()).collect());
    }

    /// At most `per_second` posts a second; more are answered 429.
    pub fn rate_limit(&self, per_second: u32) {
        self.shared.inner().rate = Some(per_second);
    }

    /// How many posts were answered 429.
    pub fn throttled(&self) -> u32 {
        self.shared.inner().throttled
    }

    pub fn calls(&self) -> Vec<Call> {
        self.shared.inner().calls.clone()
    }

    /// Calls Mattermost answered with an error other than 429: what a render bug
    /// would cause.
    pub fn errors(&self) -> Vec<Call> {
        self.calls().into_iter().filter(|c| c.status >= 400 && c.status != 429).collect()
    }

    /// Asserts Mattermost refused nothing but what `expected` allows (a non-member's
    /// 404 when a group's members are asked).
    pub fn shutdown_check(&self, expected: impl Fn(&Call) -> bool) {
        let errors: Vec<Call> = self.errors().into_iter().filter(|c| !expected(c)).collect();
        assert!(errors.is_empty(), "Mattermost would have refused: {errors:?}");
    }

    /// The post `id` as it stands.
    pub fn post(&self, id: &str) -> Option<Value> {
        self.shared.inner().posts.get(id).cloned()
    }

    /// Every post id, in the order created.
    pub fn posts(&self) -> Vec<String> {
        self.shared.inner().order.clone()
    }

    pub fn ephemerals(&self) -> Vec<Value> {
        self.shared.inner().ephemerals.clone()
    }

    pub fn dialogs(&self) -> Vec<Value> {
        self.shared.inner().dialogs.clone()
    }

    /// The action labelled `label` on post `post_id`.
    pub fn action(&self, post_id: &str, label: &str) -> Value {
        let post = self.post(post_id).unwrap_or_else(|| panic!("no post {post_id}"));
        let attachments = post["props"]["attachments"].as_array().cloned().unwrap_or_default();
        attachments
            .iter()
            .flat_map(|a| a["actions"].as_array().cloned().unwrap_or_default())
            .find(|a| a["name"] == label)
            .unwrap_or_else(|| panic!("no action {label:?} on {post}"))
    }

    /// The body Mattermost posts when `person` presses `action` on post `post_id`,
    /// with a fresh trigger id.
    pub fn click_body(&self, person: &Person, post_id: &str, action: &Value) -> Value {
        let trigger = format!("{}:{}:fake", self.shared.new_id('t'), person.id);
        self.shared.inner().triggers.insert(trigger.clone(), Instant::now());
        let channel = self.post(post_id).map(|p| p["channel_id"].clone()).unwrap_or(json!(OPS));
        json!({
            "user_id": person.id, "user_name": person.username, "channel_id": channel, "channel_name": "ops",
            "team_id": TEAM, "team_domain": "acme", "post_id": post_id, "trigger_id": trigger,
            "type": action["type"].as_str().unwrap_or("button"), "data_source": "", "context": action["integration"]["context"],
        })
    }

    /// Posts `body` to `url` as the Mattermost server does: the status and the JSON
    /// answered (`null` when it is not JSON).
    pub async fn post_to(&self, url: &str, body: &Value) -> (u16, Value) {
        let response = self.http.post(url).json(body).send().await.expect("post to the bridge");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// `person` presses the button labelled `label` on post `post_id`: the bridge's
    /// response, which Mattermost applies (its `update` replaces the post's message
    /// and props, as the server does).
    pub async fn click(&self, person: &Person, post_id: &str, label: &str) -> Value {
        let action = self.action(post_id, label);
        let body = self.click_body(person, post_id, &action);
        self.deliver(&action, post_id, body).await
    }

    /// `person` chooses option `value` in the menu labelled `label` on `post_id`.
    pub async fn choose(&self, person: &Person, post_id: &str, label: &str, value: &str) -> Value {
        let action = self.action(post_id, label);
        let mut body = self.click_body(person, post_id, &action);
        body["context"]["selected_option"] = json!(value);
        self.deliver(&action, post_id, body).await
    }

    async fn deliver(&self, action: &Value, post_id: &str, body: Value) -> Value {
        let url = action["integration"]["url"].as_str().expect("an integration url").to_owned();
        let (status, answer) = self.post_to(&url, &body).await;
        assert_eq!(status, 200, "{answer}");
        if let Some(update) = answer.get("update")
            && let Some(post) = self.shared.inner().posts.get_mut(post_id)
        {
            if let Some(message) = update.get("message") {
                post["message"] = message.clone();
            }
            if let Some(props) = update.get("props") {
                post["props"] = props.clone();
            }
        }
        answer
    }

    /// How many WebSocket connections authenticated so far.
    pub fn connections(&self) -> u32 {
        self.shared.inner().connections
    }

    /// Waits until `n` WebSocket connections have authenticated.
    pub async fn wait_connections(&self, n: u32) {
        super::wait_until(|| async { (self.connections() >= n).then_some(()) }).await;
    }

    /// Drops the live WebSocket (the bridge reconnects).
    pub fn drop_socket(&self) {
        let mut inner = self.shared.inner();
        if let Some(socket) = inner.socket.take() {
            let _ = socket.send(None);
        }
    }

    /// While `refuse`, new WebSocket connections are closed at once.
    pub fn refuse_connections(&self, refuse: bool) {
        self.shared.inner().refuse_connections = refuse;
    }

    /// Skips one `seq` on the live connection, as when an event is lost.
    pub fn lose_an_event(&self) {
        self.shared.inner().seq += 1;
    }

    /// `person` posts `message` in `channel` (of type `O`, `P`, `D`), in the thread of
    /// `root` if given: the post is stored and, while a WebSocket is open, sent as a
    /// `posted` event with the connection's next `seq`. The new post's id.
    pub fn say(&self, person: &Person, channel: &str, channel_type: &str, message: &str, root: Option<&str>) -> String {
        let id = self.shared.new_id('u');
        // A millisecond apart, so `since` orders them.
        std::thread::sleep(Duration::from_millis(2));
        let post = json!({
            "id": id, "channel_id": channel, "root_id": root.unwrap_or(""), "user_id": person.id, "message": message, "type": "",
            "create_at": hitl_bridge::clock::now_ms(), "update_at": hitl_bridge::clock::now_ms(),
        });
        let mut inner = self.shared.inner();
        inner.posts.insert(id.clone(), post.clone());
        inner.order.push(id.clone());
        let seq = inner.seq;
        if let Some(socket) = &inner.socket {
            let mentions: Vec<&str> = if message.contains("@hitl-bridge") { vec![BOT_ID] } else { vec![] };
            let event = json!({
                "event": "posted",
                "data": { "channel_type": channel_type, "post": post.to_string(), "sender_name": format!("@{}", person.username), "team_id": TEAM,
                          "mentions": serde_json::to_string(&mentions).unwrap() },
                "broadcast": { "channel_id": channel, "team_id": "", "user_id": "", "omit_users": null },
                "seq": seq,
            });
            if socket.send(Some(event)).is_ok() {
                inner.seq += 1;
            }
        }
        id
    }

    /// The bridge's posts whose message is `message`, waited for.
    pub async fn wait_message(&self, message: &str) -> Value {
        super::wait_until(|| async {
            let inner = self.shared.inner();
            inner.order.iter().filter_map(|id| inner.posts.get(id)).find(|p| p["user_id"] == BOT_ID && p["message"] == message).cloned()
        })
        .await
    }

    /// `person` submits the last dialog opened with `submission`: the bridge's answer.
    pub async fn submit_dialog(&self, person: &Person, submission: Value) -> Value {
        let opened = self.dialogs().last().cloned().expect("a dialog was opened");
        let body = json!({
            "type": "dialog_submission", "callback_id": opened["dialog"]["callback_id"], "state": opened["dialog"]["state"],
            "user_id": person.id, "channel_id": OPS, "team_id": TEAM, "submission": submission, "cancelled": false,
        });
        let (status, answer) = self.post_to(opened["url"].as_str().expect("a dialog url"), &body).await;
        assert_eq!(status, 200, "{answer}");
        answer
    }
}

fn authorized(headers: &HeaderMap) -> bool {
    headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(&format!("Bearer {BOT_TOKEN}"))
}

fn record(shared: &Shared, method: Method, path: String, body: &Value, status: u16) {
    shared.inner().calls.push(Call { method: method.to_string(), path, body: body.clone(), status, at: Instant::now() });
}

fn session_expired() -> Response {
    app_error(StatusCode::UNAUTHORIZED, "api.context.session_expired.app_error", "Invalid or expired session, please login again.")
}

async fn me(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let ok = authorized(&headers);
    record(&shared, Method::GET, "/users/me".into(), &Value::Null, if ok { 200 } else { 401 });
    if !ok {
        return session_expired();
    }
    axum::Json(json!({ "id": BOT_ID, "username": "hitl-bridge", "is_bot": true })).into_response()
}

async fn user(State(shared): State<Arc<Shared>>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    if !authorized(&headers) {
        return session_expired();
    }
    let name = shared.inner().users.get(&id).cloned();
    record(&shared, Method::GET, format!("/users/{id}"), &Value::Null, if name.is_some() { 200 } else { 404 });
    match name {
        Some(username) => axum::Json(json!({ "id": id, "username": username })).into_response(),
        None => app_error(StatusCode::NOT_FOUND, "app.user.missing_account.const", "We couldn't find an existing account matching your ID."),
    }
}

/// Why Mattermost would refuse `post`'s message or props; `None` when valid.
fn invalid_post(post: &Value) -> Option<(&'static str, String)> {
    let message = post["message"].as_str().unwrap_or_default();
    if message.chars().count() > POST_LIMIT {
        return Some(("model.post.is_valid.msg.app_error", format!("message of {} characters", message.chars().count())));
    }
    if post["props"].to_string().chars().count() > 800_000 {
        return Some(("model.post.is_valid.props.app_error", "props too long".into()));
    }
    let mut ids = HashSet::new();
    for attachment in post["props"]["attachments"].as_array().into_iter().flatten() {
        for action in attachment["actions"].as_array().into_iter().flatten() {
            if action["integration"]["url"].as_str().is_none_or(str::is_empty) {
                return Some(("model.post.is_valid.action_integration.app_error", format!("an action without integration url: {action}")));
            }
            let id = action["id"].as_str().unwrap_or_default();
            if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric()) || !ids.insert(id.to_owned()) {
                return Some(("model.post.is_valid.action_id.app_error", format!("an action id that is empty, not alphanumeric or repeated: {id:?}")));
            }
            if action["type"] == "select" && action["options"].as_array().is_none_or(Vec::is_empty) {
                return Some(("model.post.is_valid.action_options.app_error", "a select without options".into()));
            }
        }
    }
    None
}

/// Whether this post is past the rate: 429 with Mattermost's headers.
fn throttle(shared: &Shared) -> Option<Response> {
    let mut inner = shared.inner();
    let rate = inner.rate?;
    let now = Instant::now();
    let (start, count) = match inner.window {
        Some((start, count)) if now.duration_since(start) < Duration::from_secs(1) => (start, count),
        _ => (now, 0),
    };
    if count >= rate {
        inner.throttled += 1;
        let mut response = app_error(StatusCode::TOO_MANY_REQUESTS, "api.context.rate_limit.app_error", "Too many requests.");
        let headers = response.headers_mut();
        headers.insert("x-ratelimit-limit", rate.to_string().parse().unwrap());
        headers.insert("x-ratelimit-remaining", "0".parse().unwrap());
        headers.insert("x-ratelimit-reset", "1".parse().unwrap());
        return Some(response);
    }
    inner.window = Some((start, count + 1));
    None
}

async fn create_post(State(shared): State<Arc<Shared>>, headers: HeaderMap, axum::Json(body): axum::Json<Value>) -> Response {
    if !authorized(&headers) {
        return session_expired();
    }
    if let Some(limited) = throttle(&shared) {
        record(&shared, Method::POST, "/posts".into(), &body, 429);
        return limited;
    }
    let channel = body["channel_id"].as_str().unwrap_or_default().to_owned();
    let refusal = match shared.inner().channels.get(&channel) {
        None => Some((StatusCode::NOT_FOUND, "app.channel.get.existing.app_error".to_owned(), "Unable to find the existing channel.".to_owned())),
        Some(false) => Some((StatusCode::FORBIDDEN, "api.context.permissions.app_error".into(), "You do not have the appropriate permissions.".into())),
        Some(true) => invalid_post(&body).map(|(id, why)| (StatusCode::BAD_REQUEST, id.to_owned(), why)),
    };
    if let Some((status, id, message)) = refusal {
        record(&shared, Method::POST, "/posts".into(), &body, status.as_u16());
        return app_error(status, &id, &message);
    }
    record(&shared, Method::POST, "/posts".into(), &body, 201);
    let id = shared.new_id('p');
    let mut post = body.clone();
    post["id"] = json!(id);
    post["user_id"] = json!(BOT_ID);
    // A new post's `update_at` is its `create_at`; an edit moves it (model.Post).
    let now = hitl_bridge::clock::now_ms();
    post["create_at"] = json!(now);
    post["update_at"] = json!(now);
    let mut inner = shared.inner();
    inner.posts.insert(id.clone(), post.clone());
    inner.order.push(id);
    (StatusCode::CREATED, axum::Json(post)).into_response()
}

async fn patch_post(State(shared): State<Arc<Shared>>, headers: HeaderMap, Path(id): Path<String>, axum::Json(body): axum::Json<Value>) -> Response {
    if !authorized(&headers) {
        return session_expired();
    }
    let path = format!("/posts/{id}/patch");
    if !shared.inner().posts.contains_key(&id) {
        record(&shared, Method::PUT, path, &body, 404);
        return app_error(StatusCode::NOT_FOUND, "app.post.get.app_error", "Unable to get the post.");
    }
    if let Some((error, why)) = invalid_post(&body) {
        record(&shared, Method::PUT, path, &body, 400);
        return app_error(StatusCode::BAD_REQUEST, error, &why);
    }
    record(&shared, Method::PUT, path, &body, 200);
    let mut inner = shared.inner();
    let post = inner.posts.get_mut(&id).expect("checked");
    for field in ["message", "props"] {
        if let Some(value) = body.get(field) {
            post[field] = value.clone();
        }
    }
    post["update_at"] = json!(hitl_bridge::clock::now_ms());
    axum::Json(post.clone()).into_response()
}

async fn ephemeral(State(shared): State<Arc<Shared>>, headers: HeaderMap, axum::Json(body): axum::Json<Value>) -> Response {
    if !authorized(&headers) {
        return session_expired();
    }
    record(&shared, Method::POST, "/posts/ephemeral".into(), &body, 201);
    shared.inner().ephemerals.push(body.clone());
    (StatusCode::CREATED, axum::Json(body["post"].clone())).into_response()
}

async fn direct(State(shared): State<Arc<Shared>>, headers: HeaderMap, axum::Json(body): axum::Json<Value>) -> Response {
    if !authorized(&headers) {
        return session_expired();
    }
    let users: Vec<String> = body.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect();
    let known = users.len() == 2 && users.iter().all(|u| shared.inner().users.contains_key(u));
    record(&shared, Method::POST, "/channels/direct".into(), &body, if known { 201 } else { 400 });
    if !known {
        return app_error(StatusCode::BAD_REQUEST, "api.context.invalid_body_param.app_error", "Invalid or missing user_ids in request body.");
    }
    // A DM's id is its two people's; the same pair, the same channel.
    let mut sorted = users.clone();
    sorted.sort();
    let id = format!("d{}", &sorted[1][1..]);
    shared.inner().channels.insert(id.clone(), true);
    (StatusCode::CREATED, axum::Json(json!({ "id": id, "type": "D", "name": format!("{}__{}", sorted[0], sorted[1]) }))).into_response()
}

/// Why Mattermost would refuse `dialog`; `None` when valid.
fn invalid_dialog(dialog: &Value) -> Option<String> {
    if dialog["title"].as_str().is_none_or(|t| t.is_empty() || t.chars().count() > 24) {
        return Some(format!("title {:?}", dialog["title"]));
    }
    for element in dialog["elements"].as_array().into_iter().flatten() {
        let limit = match element["type"].as_str() {
            Some("textarea") => 3000,
            Some("text") => 150,
            Some("select" | "radio" | "bool") => u64::MAX,
            other => return Some(format!("element type {other:?}")),
        };
        if element["max_length"].as_u64().is_some_and(|m| m > limit) {
            return Some(format!("max_length of {element}"));
        }
        if element["display_name"].as_str().is_none_or(|n| n.is_empty() || n.chars().count() > 24) || element["name"].as_str().is_none_or(str::is_empty) {
            return Some(format!("display_name or name of {element}"));
        }
        if let Some(default) = element["default"].as_str()
            && element["type"] == "textarea"
            && default.chars().count() as u64 > element["max_length"].as_u64().unwrap_or(limit)
        {
            return Some(format!("default past max_length in {element}"));
        }
    }
    None
}

async fn open_dialog(State(shared): State<Arc<Shared>>, headers: HeaderMap, axum::Json(body): axum::Json<Value>) -> Response {
    if !authorized(&headers) {
        return session_expired();
    }
    let trigger = body["trigger_id"].as_str().unwrap_or_default().to_owned();
    let fresh = {
        let mut inner = shared.inner();
        let issued = inner.triggers.remove(&trigger);
        issued.is_some_and(|at| at.elapsed() < Duration::from_secs(3)) && inner.used_triggers.insert(trigger.clone())
    };
    if !fresh {
        record(&shared, Method::POST, "/actions/dialogs/open".into(), &body, 400);
        return app_error(StatusCode::BAD_REQUEST, "api.interactive_dialog.trigger_id.expired", "Trigger ID for interactive dialog is expired.");
    }
    if body["url"].as_str().is_none_or(str::is_empty) {
        record(&shared, Method::POST, "/actions/dialogs/open".into(), &body, 400);
        return app_error(StatusCode::BAD_REQUEST, "model.dialog.url.app_error", "Missing url.");
    }
    if let Some(why) = invalid_dialog(&body["dialog"]) {
        record(&shared, Method::POST, "/actions/dialogs/open".into(), &body, 400);
        return app_error(StatusCode::BAD_REQUEST, "model.dialog.is_valid.app_error", &why);
    }
    record(&shared, Method::POST, "/actions/dialogs/open".into(), &body, 200);
    shared.inner().dialogs.push(body);
    axum::Json(json!({ "status": "OK" })).into_response()
}

async fn posts_since(State(shared): State<Arc<Shared>>, headers: HeaderMap, Path(id): Path<String>, Query(query): Query<HashMap<String, String>>) -> Response {
    if !authorized(&headers) {
        return session_expired();
    }
    let since: i64 = query.get("since").and_then(|s| s.parse().ok()).unwrap_or(0);
    record(&shared, Method::GET, format!("/channels/{id}/posts?since={since}"), &Value::Null, 200);
    let inner = shared.inner();
    // "Posts modified after that time", newest first (api.mattermost.com, getPostsForChannel).
    let mut posts: Vec<&Value> = inner.posts.values().filter(|p| p["channel_id"] == id.as_str() && p["update_at"].as_i64().unwrap_or(0) > since).collect();
    posts.sort_by_key(|p| std::cmp::Reverse(p["create_at"].as_i64().unwrap_or(0)));
    let order: Vec<&Value> = posts.iter().map(|p| &p["id"]).collect();
    let map: serde_json::Map<String, Value> = posts.iter().map(|p| (p["id"].as_str().unwrap_or_default().to_owned(), (*p).clone())).collect();
    axum::Json(json!({ "order": order, "posts": map })).into_response()
}

async fn websocket(State(shared): State<Arc<Shared>>, upgrade: WebSocketUpgrade) -> Response {
    upgrade.on_upgrade(move |socket| connection(shared, socket))
}

/// One WebSocket: the authentication challenge first (a wrong token closes it), then
/// `hello` (seq 0) and every event the test pushes, each with the next seq.
async fn connection(shared: Arc<Shared>, mut socket: WebSocket) {
    if shared.inner().refuse_connections {
        return;
    }
    let Some(Ok(WsMessage::Text(challenge))) = socket.recv().await else { return };
    let challenge: Value = serde_json::from_str(challenge.as_str()).unwrap_or_default();
    if challenge["action"] != "authentication_challenge" || challenge["data"]["token"] != BOT_TOKEN {
        let _ = socket
            .send(WsMessage::Text(
                json!({"status": "FAIL", "seq_reply": challenge["seq"], "error": {"id": "api.web_socket_router.not_authenticated.app_error"}})
                    .to_string()
                    .into(),
            ))
            .await;
        return;
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Option<Value>>();
    {
        let mut inner = shared.inner();
        inner.connections += 1;
        inner.seq = 1;
        inner.socket = Some(tx);
    }
    let ok = json!({"status": "OK", "seq_reply": challenge["seq"]});
    let hello = json!({"event": "hello", "data": {"server_version": "10.5.0"}, "broadcast": {"user_id": BOT_ID}, "seq": 0});
    for message in [ok, hello] {
        if socket.send(WsMessage::Text(message.to_string().into())).await.is_err() {
            return;
        }
    }
    loop {
        tokio::select! {
            event = rx.recv() => match event {
                Some(Some(event)) => {
                    if socket.send(WsMessage::Text(event.to_string().into())).await.is_err() {
                        return;
                    }
                }
                // Dropped by the test, or replaced.
                _ => {
                    let _ = socket.send(WsMessage::Close(None)).await;
                    return;
                }
            },
            incoming = socket.recv() => if !matches!(incoming, Some(Ok(_))) { return },
        }
    }
}

async fn channel_member(State(shared): State<Arc<Shared>>, headers: HeaderMap, Path((id, user)): Path<(String, String)>) -> Response {
    if !authorized(&headers) {
        return session_expired();
    }
    let path = format!("/channels/{id}/members/{user}");
    let (bot_in, member) = {
        let inner = shared.inner();
        (inner.channels.get(&id).copied(), inner.members.get(&id).is_some_and(|m| m.contains(&user)))
    };
    match bot_in {
        Some(true) if member => {
            record(&shared, Method::GET, path, &Value::Null, 200);
            axum::Json(json!({ "channel_id": id, "user_id": user, "roles": "channel_user" })).into_response()
        }
        Some(true) => {
            record(&shared, Method::GET, path, &Value::Null, 404);
            app_error(StatusCode::NOT_FOUND, "app.channel.get_member.missing.app_error", "No channel member found for that user ID and channel ID.")
        }
        _ => {
            record(&shared, Method::GET, path, &Value::Null, 403);
            app_error(StatusCode::FORBIDDEN, "api.context.permissions.app_error", "You do not have the appropriate permissions.")
        }
    }
}

async fn group_members(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if !authorized(&headers) {
        return session_expired();
    }
    let page: usize = query.get("page").and_then(|p| p.parse().ok()).unwrap_or(0);
    let per_page: usize = query.get("per_page").and_then(|p| p.parse().ok()).unwrap_or(60).min(200);
    let path = format!("/groups/{id}/members?page={page}&per_page={per_page}");
    let group = shared.inner().groups.get(&id).cloned();
    let Some(people) = group else {
        record(&shared, Method::GET, path, &Value::Null, 404);
        return app_error(StatusCode::NOT_FOUND, "app.group.no_rows", "No matching group found.");
    };
    record(&shared, Method::GET, path, &Value::Null, 200);
    let members: Vec<Value> = people.iter().skip(page * per_page).take(per_page).map(|id| json!({ "id": id })).collect();
    axum::Json(json!({ "members": members, "total_member_count": people.len() })).into_response()
}
