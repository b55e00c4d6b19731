//! A fake Discord for the tests: the REST API (the routes the bridge uses) and the
//! gateway websocket, on one local port, driven by the real serenity client.
//!
//! - `GET /api/v10/gateway` returns this fake's `ws://…/gateway` URL; the gateway sends
//!   HELLO (op 10), takes IDENTIFY (op 2), sends READY, answers heartbeats (op 11) and
//!   dispatches the events the test pushes (`MESSAGE_CREATE`, `INTERACTION_CREATE`).
//! - Every REST request is recorded (method, path, JSON body or multipart
//!   `payload_json`, attached files) and checked against Discord's limits; what Discord
//!   would reject is answered with its error shape
//!   (`{"code":50035,"message":"Invalid Form Body","errors":{…}}`) so a render bug fails
//!   the test that caused it.
//! - [`FakeDiscord::rate_limit_next`] answers the next requests with 429 and
//!   `retry_after`, as Discord does.
//! - `GET /guilds/{GUILD_ID}/members/{user}` answers for members added with
//!   [`FakeDiscord::add_member`], else 404 Unknown Member (code 10007), as Discord does.
//! - [`FakeDiscord::require_token`] makes it answer 401 to any other bot token, as
//!   Discord does to a wrong one.

#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::ws::{Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

pub const BOT_ID: &str = "900000000000000001";
pub const APP_ID: &str = "900000000000000002";
pub const GUILD_ID: &str = "700000000000000001";
pub const CHANNEL_ID: &str = "800000000000000001";
const TIMESTAMP: &str = "2026-01-01T00:00:00.000000+00:00";

/// One REST request as the fake received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// The JSON body (multipart: its `payload_json`); `Null` when there was none.
    pub body: Value,
    /// Attached files: `(file name, bytes)`.
    pub files: Vec<(String, Vec<u8>)>,
    /// What the fake answered.
    pub status: u16,
    pub response: Option<Value>,
    /// When the fake handled it, for the load benchmark.
    pub at: std::time::Instant,
}

struct Shared {
    addr: SocketAddr,
    requests: Mutex<Vec<Recorded>>,
    events: broadcast::Sender<Value>,
    next_id: AtomicU64,
    seq: AtomicU64,
    rate_limited: AtomicU32,
    ready: AtomicBool,
    identifies: AtomicU32,
    /// Recipient user id → its DM channel id.
    dms: Mutex<HashMap<String, String>>,
    /// Members of the test guild: user id → (user JSON, role ids).
    members: Mutex<HashMap<String, (Value, Vec<String>)>>,
    /// When set, the only bot token accepted.
    token: Mutex<Option<String>>,
    /// When set, IDENTIFY is answered by closing the gateway with this code.
    refuse_identify: Mutex<Option<u16>>,
}

pub struct FakeDiscord {
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeDiscord {
    pub async fn start() -> FakeDiscord {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind fake discord");
        let addr = listener.local_addr().expect("addr");
        // Room for a bench's burst of clicks dispatched at once.
        let (events, _) = broadcast::channel(4096);
        let shared = Arc::new(Shared {
            addr,
            requests: Mutex::new(Vec::new()),
            events,
            next_id: AtomicU64::new(1_000_000_000_000_000_001),
            seq: AtomicU64::new(1),
            rate_limited: AtomicU32::new(0),
            ready: AtomicBool::new(false),
            identifies: AtomicU32::new(0),
            dms: Mutex::new(HashMap::new()),
            members: Mutex::new(HashMap::new()),
            token: Mutex::new(None),
            refuse_identify: Mutex::new(None),
        });
        let app = Router::new().route("/gateway", get(gateway)).fallback(rest).with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(super::without_nagle(listener), app).await;
        });
        FakeDiscord { shared, task }
    }

    /// The DM channel the fake opened for `user`, if any.
    pub fn dm_channel(&self, user: &str) -> Option<String> {
        self.shared.dms.lock().unwrap().get(user).cloned()
    }

    /// Makes `user` a member of the test guild with `roles`.
    pub fn add_member(&self, user: &Value, roles: &[&str]) {
        let id = user["id"].as_str().expect("user id").to_owned();
        self.shared.members.lock().unwrap().insert(id, (user.clone(), roles.iter().map(|r| r.to_string()).collect()));
    }

    /// What `discord.api_url` should be.
    pub fn api_url(&self) -> String {
        format!("http://{}", self.shared.addr)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// The requests recorded after the first `skip` (a copy of those only: with
    /// thousands recorded, copying them all on every poll would cost more than the
    /// bridge's work being timed).
    pub fn requests_from(&self, skip: usize) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().get(skip..).map(<[Recorded]>::to_vec).unwrap_or_default()
    }

    /// How many requests were recorded so far.
    pub fn request_count(&self) -> usize {
        self.shared.requests.lock().unwrap().len()
    }

    /// Forgets what was recorded so far.
    pub fn clear(&self) {
        self.shared.requests.lock().unwrap().clear();
    }

    /// How many IDENTIFYs the gateway has seen (one per bridge start).
    pub fn identifies(&self) -> u32 {
        self.shared.identifies.load(Ordering::SeqCst)
    }

    /// Answers the next `n` REST requests with 429.
    pub fn rate_limit_next(&self, n: u32) {
        self.shared.rate_limited.store(n, Ordering::SeqCst);
    }

    /// Accepts only `token` from now on: other tokens get 401, as from Discord.
    pub fn require_token(&self, token: &str) {
        *self.shared.token.lock().unwrap() = Some(token.to_owned());
    }

    /// Closes the gateway with `code` on IDENTIFY from now on, e.g. 4014 (disallowed
    /// intents: MESSAGE_CONTENT not enabled in the Developer Portal) or 4004 (bad token).
    pub fn refuse_identify(&self, code: u16) {
        *self.shared.refuse_identify.lock().unwrap() = Some(code);
    }

    /// A fresh snowflake.
    pub fn snowflake(&self) -> String {
        self.shared.next_id.fetch_add(1, Ordering::SeqCst).to_string()
    }

    /// Sends a gateway dispatch (`t`, `d`) to every connected client.
    pub fn dispatch(&self, t: &str, d: Value) {
        let seq = self.shared.seq.fetch_add(1, Ordering::SeqCst);
        let _ = self.shared.events.send(json!({"op":0,"t":t,"s":seq,"d":d}));
    }

    /// Waits until a client has identified `n` times in total and received READY.
    pub async fn wait_identified(&self, n: u32) {
        for _ in 0..300 {
            if self.identifies() >= n && self.shared.events.receiver_count() > 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the bridge never identified on the fake gateway ({n})");
    }

    /// Waits for a request matching `pred` that arrived after the first `skip`.
    pub async fn wait_request(&self, skip: usize, pred: impl Fn(&Recorded) -> bool) -> Recorded {
        for _ in 0..300 {
            if let Some(found) = self.requests().into_iter().skip(skip).find(|r| pred(r)) {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let seen: Vec<String> = self.requests().iter().map(|r| format!("{} {} {}", r.method, r.path, r.body)).collect();
        panic!("the fake never saw the expected request; saw:\n{}", seen.join("\n"));
    }

    pub async fn shutdown(self) {
        self.task.abort();
    }
}

// ---------------------------------------------------------------------------------
// Payload builders for what the test pushes.

pub fn user(id: &str, name: &str) -> Value {
    json!({"id":id,"username":name,"discriminator":"0","global_name":name,"avatar":null,"bot":false})
}

pub fn member(user: &Value, roles: &[&str]) -> Value {
    json!({"user":user,"nick":null,"roles":roles,"joined_at":TIMESTAMP,"deaf":false,"mute":false,"flags":0})
}

/// A message as Discord sends it (REST answers and gateway events).
pub fn message(id: &str, channel: &str, author: &Value, content: &str) -> Value {
    json!({
        "id": id, "channel_id": channel, "author": author, "content": content,
        "timestamp": TIMESTAMP, "edited_timestamp": null, "tts": false, "mention_everyone": false,
        "mentions": [], "mention_roles": [], "attachments": [], "embeds": [], "pinned": false,
        "type": 0, "flags": 0, "components": []
    })
}

/// `MESSAGE_CREATE` data: `content` by `author` in the test guild's `channel`.
pub fn guild_message(fake: &FakeDiscord, channel: &str, author: &Value, content: &str, mentions_bot: bool) -> Value {
    let mut m = message(&fake.snowflake(), channel, author, content);
    m["guild_id"] = json!(GUILD_ID);
    m["member"] = json!({"roles":[],"joined_at":TIMESTAMP,"deaf":false,"mute":false,"flags":0});
    if mentions_bot {
        m["mentions"] = json!([user(BOT_ID, "hitl")]);
    }
    m
}

/// The fields every interaction has. `member` is `Some` in a guild.
fn interaction_base(fake: &FakeDiscord, kind: u8, channel: &str, who: &Value, roles: &[&str], locale: &str) -> Value {
    json!({
        "id": fake.snowflake(), "application_id": APP_ID, "type": kind, "guild_id": GUILD_ID,
        "channel_id": channel, "channel": {"id": channel, "type": 0},
        "member": member(who, roles), "token": format!("tok-{}", fake.snowflake()), "version": 1,
        "app_permissions": "2048", "locale": locale, "guild_locale": "en-US", "entitlements": [],
        "authorizing_integration_owners": {"0": GUILD_ID}, "context": 0,
        // serenity 0.12.5 refuses interactions without it.
        "attachment_size_limit": 26214400
    })
}

/// A button click on `message_id` (in `channel`).
pub fn click(fake: &FakeDiscord, custom_id: &str, message_id: &str, channel: &str, who: &Value, roles: &[&str]) -> Value {
    let mut i = interaction_base(fake, 3, channel, who, roles, "en-US");
    i["data"] = json!({"custom_id": custom_id, "component_type": 2});
    i["message"] = message(message_id, channel, &user(BOT_ID, "hitl"), "");
    i
}

/// A button click in a DM: no guild, no member (so no roles), only the user.
pub fn dm_click(fake: &FakeDiscord, custom_id: &str, message_id: &str, channel: &str, who: &Value) -> Value {
    let mut i = click(fake, custom_id, message_id, channel, who, &[]);
    let object = i.as_object_mut().expect("interaction object");
    object.remove("guild_id");
    object.remove("member");
    object.insert("user".into(), who.clone());
    object.insert("channel".into(), json!({"id": channel, "type": 1}));
    object.insert("context".into(), json!(1));
    object.insert("authorizing_integration_owners".into(), json!({"1": BOT_ID}));
    i
}

/// A string select choosing `values`.
pub fn select(fake: &FakeDiscord, custom_id: &str, values: &[&str], message_id: &str, channel: &str, who: &Value) -> Value {
    let mut i = interaction_base(fake, 3, channel, who, &[], "vi");
    i["data"] = json!({"custom_id": custom_id, "component_type": 3, "values": values});
    i["message"] = message(message_id, channel, &user(BOT_ID, "hitl"), "");
    i
}

/// A modal submission with `(input custom_id, value)` pairs.
pub fn modal_submit(fake: &FakeDiscord, custom_id: &str, inputs: &[(&str, &str)], message_id: &str, channel: &str, who: &Value) -> Value {
    let mut i = interaction_base(fake, 5, channel, who, &[], "en-US");
    let rows: Vec<Value> = inputs.iter().map(|(id, value)| json!({"type":1,"components":[{"type":4,"custom_id":id,"value":value}]})).collect();
    i["data"] = json!({"custom_id": custom_id, "components": rows});
    i["message"] = message(message_id, channel, &user(BOT_ID, "hitl"), "");
    i
}

/// A slash command.
pub fn command(fake: &FakeDiscord, name: &str, channel: &str, who: &Value) -> Value {
    let mut i = interaction_base(fake, 2, channel, who, &[], "en-US");
    i["data"] = json!({"id": fake.snowflake(), "name": name, "type": 1});
    i
}

// ---------------------------------------------------------------------------------
// The gateway.

async fn gateway(ws: WebSocketUpgrade, State(shared): State<Arc<Shared>>) -> Response {
    ws.on_upgrade(move |socket| session(socket, shared))
}

async fn session(mut socket: WebSocket, shared: Arc<Shared>) {
    let hello = json!({"op":10,"d":{"heartbeat_interval":41250}});
    if socket.send(WsMessage::Text(hello.to_string().into())).await.is_err() {
        return;
    }
    // Subscribed before READY so nothing pushed after READY is missed.
    let mut events: Option<broadcast::Receiver<Value>> = None;
    loop {
        tokio::select! {
            incoming = socket.recv() => {
                let Some(Ok(WsMessage::Text(text))) = incoming else { return };
                let Ok(payload) = serde_json::from_str::<Value>(&text) else { continue };
                match payload["op"].as_u64() {
                    Some(1) => {
                        let ack = json!({"op":11});
                        if socket.send(WsMessage::Text(ack.to_string().into())).await.is_err() { return }
                    }
                    Some(2) => {
                        let refusal = *shared.refuse_identify.lock().unwrap();
                        if let Some(code) = refusal {
                            let frame = axum::extract::ws::CloseFrame { code, reason: "Disallowed intent(s).".into() };
                            let _ = socket.send(WsMessage::Close(Some(frame))).await;
                            return;
                        }
                        events = Some(shared.events.subscribe());
                        let seq = shared.seq.fetch_add(1, Ordering::SeqCst);
                        let ready = json!({"op":0,"t":"READY","s":seq,"d":{
                            "v":10,"user":{"id":BOT_ID,"username":"hitl","discriminator":"0","global_name":null,"avatar":null,"bot":true},
                            "guilds":[],"session_id":"fake-session",
                            "resume_gateway_url":format!("ws://{}/gateway", shared.addr),
                            "shard":[0,1],"application":{"id":APP_ID,"flags":0}}});
                        if socket.send(WsMessage::Text(ready.to_string().into())).await.is_err() { return }
                        shared.identifies.fetch_add(1, Ordering::SeqCst);
                        shared.ready.store(true, Ordering::SeqCst);
                    }
                    _ => {}
                }
            }
            event = async {
                match events.as_mut() {
                    Some(rx) => rx.recv().await.ok(),
                    None => std::future::pending().await,
                }
            } => {
                let Some(event) = event else { continue };
                if socket.send(WsMessage::Text(event.to_string().into())).await.is_err() { return }
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// REST.

/// The multipart parts serenity sends with files: `payload_json` and `files[n]`.
fn parse_multipart(content_type: &str, body: &[u8]) -> (Value, Vec<(String, Vec<u8>)>) {
    let Some(boundary) = content_type.split("boundary=").nth(1) else { return (Value::Null, Vec::new()) };
    let delimiter = format!("--{}", boundary.trim_matches('"'));
    let mut json_body = Value::Null;
    let mut files = Vec::new();
    let mut rest = body;
    while let Some(start) = find(rest, delimiter.as_bytes()) {
        rest = &rest[start + delimiter.len()..];
        let end = find(rest, delimiter.as_bytes()).unwrap_or(rest.len());
        let part = &rest[..end];
        if let Some(split) = find(part, b"\r\n\r\n") {
            let headers = String::from_utf8_lossy(&part[..split]).to_string();
            let mut content = &part[split + 4..];
            if content.ends_with(b"\r\n") {
                content = &content[..content.len() - 2];
            }
            if headers.contains("name=\"payload_json\"") {
                json_body = serde_json::from_slice(content).unwrap_or(Value::Null);
            } else if let Some(name) = headers.split("filename=\"").nth(1).and_then(|s| s.split('"').next()) {
                files.push((name.to_owned(), content.to_vec()));
            }
        }
    }
    (json_body, files)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

async fn rest(State(shared): State<Arc<Shared>>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let at = std::time::Instant::now();
    let path = uri.path().to_owned();
    let content_type = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let (body, files) = if content_type.starts_with("multipart/") {
        parse_multipart(&content_type, &body)
    } else {
        (serde_json::from_slice(&body).unwrap_or(Value::Null), Vec::new())
    };
    let expected = shared.token.lock().unwrap().as_ref().map(|t| format!("Bot {t}"));
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok());
    let (status, answer) = match expected {
        Some(expected) if authorization != Some(expected.as_str()) => (StatusCode::UNAUTHORIZED, Some(json!({"message":"401: Unauthorized","code":0}))),
        _ => respond(&shared, &method, &path, &body),
    };
    let record = Recorded { method: method.to_string(), path: path.clone(), body, files, status: status.as_u16(), response: answer.clone(), at };
    shared.requests.lock().unwrap().push(record);
    match answer {
        Some(v) => (status, [("content-type", "application/json")], v.to_string()).into_response(),
        None => status.into_response(),
    }
}

fn respond(shared: &Shared, method: &Method, path: &str, body: &Value) -> (StatusCode, Option<Value>) {
    if path == "/api/v10/gateway" {
        return (StatusCode::OK, Some(json!({"url": format!("ws://{}/gateway", shared.addr)})));
    }
    if shared.rate_limited.load(Ordering::SeqCst) > 0 {
        shared.rate_limited.fetch_sub(1, Ordering::SeqCst);
        return (StatusCode::TOO_MANY_REQUESTS, Some(json!({"message":"You are being rate limited.","retry_after":0.2,"global":false})));
    }
    let errors = validate(path, body);
    if !errors.is_empty() {
        return (StatusCode::BAD_REQUEST, Some(json!({"code":50035,"message":"Invalid Form Body","errors":nest(errors)})));
    }
    let parts: Vec<&str> = path.trim_start_matches("/api/v10/").split('/').collect();
    let next = || shared.next_id.fetch_add(1, Ordering::SeqCst).to_string();
    let bot = user(BOT_ID, "hitl");
    let content = body["content"].as_str().unwrap_or_default();
    match (method.as_str(), parts.as_slice()) {
        ("POST", ["channels", channel, "messages"]) => (StatusCode::OK, Some(message(&next(), channel, &bot, content))),
        ("PATCH", ["channels", channel, "messages", id]) => (StatusCode::OK, Some(message(id, channel, &bot, content))),
        ("POST", ["interactions", _, _, "callback"]) => (StatusCode::NO_CONTENT, None),
        ("POST", ["webhooks", _, _]) => (StatusCode::OK, Some(message(&next(), CHANNEL_ID, &bot, content))),
        ("PATCH", ["webhooks", _, _, "messages", _]) => (StatusCode::OK, Some(message(&next(), CHANNEL_ID, &bot, content))),
        ("PUT", ["applications", _, "commands"]) => (StatusCode::OK, Some(json!([]))),
        ("POST", ["channels", parent, "messages", _, "threads"]) => {
            (StatusCode::CREATED, Some(json!({"id": next(), "type": 11, "guild_id": GUILD_ID, "parent_id": parent, "name": body["name"]})))
        }
        ("POST", ["users", "@me", "channels"]) => {
            // A DM channel per recipient, the same one every time (as Discord does).
            let recipient =
                body["recipient_id"].as_str().map(str::to_owned).or_else(|| body["recipient_id"].as_u64().map(|n| n.to_string())).unwrap_or_default();
            let id = shared.dms.lock().unwrap().entry(recipient.clone()).or_insert_with(next).clone();
            (StatusCode::OK, Some(json!({"id": id, "type": 1, "last_message_id": null, "recipients": [user(&recipient, "dm")]})))
        }
        ("GET", ["guilds", guild, "members", member_id]) => match shared.members.lock().unwrap().get(*member_id) {
            Some((who, roles)) if *guild == GUILD_ID => {
                let roles: Vec<&str> = roles.iter().map(String::as_str).collect();
                (StatusCode::OK, Some(member(who, &roles)))
            }
            _ => (StatusCode::NOT_FOUND, Some(json!({"code":10007,"message":"Unknown Member"}))),
        },
        ("GET", ["users", "@me"]) => (StatusCode::OK, Some(bot)),
        ("GET", ["channels", channel]) => (StatusCode::OK, Some(json!({"id": channel, "type": 0, "guild_id": GUILD_ID, "name": "general"}))),
        _ => (StatusCode::NOT_FOUND, Some(json!({"code":0,"message":"404: Not Found"}))),
    }
}

// ---------------------------------------------------------------------------------
// Discord's limits, as its API enforces them.

type Problem = (Vec<String>, &'static str, String);

fn too_long(path: Vec<String>, max: usize) -> Problem {
    (path, "BASE_TYPE_MAX_LENGTH", format!("Must be {max} or fewer in length."))
}

fn check_len(problems: &mut Vec<Problem>, path: &[String], value: &Value, key: &str, min: usize, max: usize) {
    if let Some(s) = value.get(key).and_then(Value::as_str) {
        let n = s.chars().count();
        let mut at = path.to_vec();
        at.push(key.to_owned());
        if n > max {
            problems.push(too_long(at, max));
        } else if n < min {
            problems.push((at, "BASE_TYPE_MIN_LENGTH", format!("Must be {min} or more in length.")));
        }
    }
}

fn p(base: &[String], more: &[&str]) -> Vec<String> {
    base.iter().cloned().chain(more.iter().map(|s| s.to_string())).collect()
}

/// What Discord would reject in a message, interaction response or modal body.
fn validate(path: &str, body: &Value) -> Vec<Problem> {
    let mut problems = Vec::new();
    let (root, base): (&Value, Vec<String>) = if path.ends_with("/callback") { (&body["data"], vec!["data".into()]) } else { (body, vec![]) };
    if root.is_null() {
        return problems;
    }
    check_len(&mut problems, &base, root, "content", 0, 2000);
    let is_modal = body.get("type").and_then(Value::as_u64) == Some(9);
    if is_modal {
        check_len(&mut problems, &base, root, "title", 1, 45);
        check_len(&mut problems, &base, root, "custom_id", 1, 100);
    }
    if let Some(rows) = root.get("components").and_then(Value::as_array) {
        let max_rows = 5;
        if rows.len() > max_rows {
            problems.push((p(&base, &["components"]), "BASE_TYPE_MAX_LENGTH", format!("Must be {max_rows} or fewer in length.")));
        }
        for (r, row) in rows.iter().enumerate() {
            let row_path = p(&base, &["components", &r.to_string()]);
            let items = row["components"].as_array().cloned().unwrap_or_default();
            let selects = items.iter().filter(|c| c["type"].as_u64().is_some_and(|t| (3..=8).contains(&t))).count();
            if items.is_empty() || items.len() > 5 || (selects > 0 && items.len() > 1) {
                problems.push((p(&row_path, &["components"]), "COMPONENT_LAYOUT_WIDTH_EXCEEDED", "The specified component exceeds the maximum width".into()));
            }
            if is_modal && items.iter().any(|c| c["type"] != 4) {
                problems.push((p(&row_path, &["components"]), "COMPONENT_TYPE_INVALID", "Modals take text inputs only".into()));
            }
            for (c, item) in items.iter().enumerate() {
                let at = p(&row_path, &["components", &c.to_string()]);
                check_len(&mut problems, &at, item, "custom_id", 1, 100);
                // A link button has a URL and no custom_id; every other button the reverse.
                let link = item["type"] == 2 && item["style"] == 5;
                if (item["type"] == 2 && link == item.get("custom_id").is_some()) || (link && item.get("url").is_none()) {
                    problems.push((at.clone(), "COMPONENT_INVALID", "A link button takes a url and no custom_id; other buttons a custom_id".into()));
                }
                check_len(&mut problems, &at, item, "url", 1, 512);
                check_len(&mut problems, &at, item, "label", 0, if item["type"] == 4 { 45 } else { 80 });
                check_len(&mut problems, &at, item, "placeholder", 0, 150);
                check_len(&mut problems, &at, item, "value", 0, 4000);
                if let Some(options) = item.get("options").and_then(Value::as_array) {
                    if options.is_empty() || options.len() > 25 {
                        problems.push((p(&at, &["options"]), "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 25 in length.".into()));
                    }
                    for (o, option) in options.iter().enumerate() {
                        let op = p(&at, &["options", &o.to_string()]);
                        check_len(&mut problems, &op, option, "label", 1, 100);
                        check_len(&mut problems, &op, option, "value", 1, 100);
                        check_len(&mut problems, &op, option, "description", 0, 100);
                    }
                    let max = item["max_values"].as_u64().unwrap_or(1) as usize;
                    if max > options.len() {
                        problems.push((p(&at, &["max_values"]), "BASE_TYPE_MAX", format!("Must be less than or equal to {}.", options.len())));
                    }
                }
            }
        }
        if is_modal && rows.len() > 5 {
            problems.push((p(&base, &["components"]), "BASE_TYPE_MAX_LENGTH", "Must be 5 or fewer in length.".into()));
        }
    }
    if let Some(embeds) = root.get("embeds").and_then(Value::as_array) {
        for (e, embed) in embeds.iter().enumerate() {
            let at = p(&base, &["embeds", &e.to_string()]);
            check_len(&mut problems, &at, embed, "title", 0, 256);
            check_len(&mut problems, &at, embed, "description", 0, 4096);
            let fields = embed["fields"].as_array().cloned().unwrap_or_default();
            if fields.len() > 25 {
                problems.push(too_long(p(&at, &["fields"]), 25));
            }
            let mut total = embed["title"].as_str().map_or(0, |s| s.chars().count())
                + embed["description"].as_str().map_or(0, |s| s.chars().count())
                + embed["footer"]["text"].as_str().map_or(0, |s| s.chars().count());
            for (f, field) in fields.iter().enumerate() {
                let fp = p(&at, &["fields", &f.to_string()]);
                check_len(&mut problems, &fp, field, "name", 1, 256);
                check_len(&mut problems, &fp, field, "value", 1, 1024);
                total += field["name"].as_str().map_or(0, |s| s.chars().count()) + field["value"].as_str().map_or(0, |s| s.chars().count());
            }
            if total > 6000 {
                problems.push((at, "BASE_TYPE_MAX_LENGTH", "Embed size exceeds maximum size of 6000".into()));
            }
        }
    }
    problems
}

/// Discord's nested error object: `{"components":{"0":{…{"_errors":[{code,message}]}}}}`.
fn nest(problems: Vec<Problem>) -> Value {
    let mut root = Map::new();
    for (path, code, message) in problems {
        let mut node = &mut root;
        for key in path {
            node = node.entry(key).or_insert_with(|| json!({})).as_object_mut().expect("objects all the way down");
        }
        let errors = node.entry("_errors").or_insert_with(|| json!([]));
        if let Some(list) = errors.as_array_mut() {
            list.push(json!({"code": code, "message": message}));
        }
    }
    Value::Object(root)
}
