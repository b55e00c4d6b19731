//! A fake Telegram Bot API for the tests: an axum server the real teloxide client
//! talks to through `telegram.api_url`. It serves `/bot{token}/{method}` (method
//! names matched case-insensitively: teloxide sends `SendMessage`), answers `getMe`,
//! long-polls `getUpdates` from a queue the test pushes updates into (at most `limit`,
//! 100 by default, at a time; updates stay until a later `offset` confirms them, as on
//! Telegram), and records every request.
//!
//! It rejects what Telegram rejects, with Telegram's error JSON, so a rendering bug
//! fails a test: callback_data outside 1–64 bytes, an inline keyboard of more than 100
//! buttons or a row of more than 8, a URL button to a loopback address, empty or
//! over-4096-character text,
//! an unknown chat or message (to edit or to reply to), an edit that changes nothing. It can also answer the
//! next calls with 429 and `retry_after`.
//!
//! Webhook mode: [`FakeTelegram::deliver`] posts an update to a webhook URL the way
//! Telegram does (secret header; resent until answered 200), so tests can deliver
//! updates to several replicas.

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::post;
use serde_json::{Value, json};
use tokio::sync::Notify;

pub const TOKEN: &str = "123456:TEST-token";
pub const BOT_ID: i64 = 999_000;
pub const BOT_USERNAME: &str = "hitl_test_bot";

/// One request as the bridge sent it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Lowercase method name (`sendmessage`).
    pub method: String,
    /// The JSON body; multipart bodies (files) as `{"multipart": "<raw text>"}`.
    pub body: Value,
    /// `None` when it succeeded, else Telegram's error description.
    pub error: Option<String>,
    /// When the request arrived (for the load benchmark's latencies).
    pub at: std::time::Instant,
}

#[derive(Debug, Clone)]
pub struct User {
    pub id: i64,
    pub first_name: String,
    pub language_code: Option<String>,
}

impl User {
    pub fn new(id: i64, first_name: &str, language_code: Option<&str>) -> Self {
        Self { id, first_name: first_name.into(), language_code: language_code.map(Into::into) }
    }
    fn json(&self) -> Value {
        let mut user = json!({"id": self.id, "is_bot": false, "first_name": self.first_name});
        if let Some(code) = &self.language_code {
            user["language_code"] = json!(code);
        }
        user
    }
}

#[derive(Default)]
struct Inner {
    requests: Vec<Recorded>,
    updates: VecDeque<Value>,
    next_update_id: i64,
    next_message_id: i64,
    next_callback_id: i64,
    chats: HashMap<i64, Value>,
    /// (chat id, message id) → the message as last sent or edited.
    messages: HashMap<(i64, i64), Value>,
    /// The `offset` of every getUpdates call, as it arrived (before any long poll).
    offsets: Vec<Option<i64>>,
    /// Each update as first handed out by getUpdates, and when.
    delivered: Vec<(Value, std::time::Instant)>,
    /// The next this-many send/edit calls are answered with 429.
    throttle: usize,
    retry_after: u64,
    /// The next this-many sendMessage calls are answered with this error.
    failing: usize,
    failure: (u16, String),
}

struct Shared {
    inner: Mutex<Inner>,
    notify: Notify,
}

pub struct FakeTelegram {
    /// The `telegram.api_url` to give the bridge.
    pub url: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

fn error(code: u16, description: &str) -> Value {
    json!({"ok": false, "error_code": code, "description": description})
}

fn ok(result: Value) -> Value {
    json!({"ok": true, "result": result})
}

impl FakeTelegram {
    pub async fn start() -> FakeTelegram {
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner { next_update_id: 1, next_message_id: 100, next_callback_id: 1, ..Inner::default() }),
            notify: Notify::new(),
        });
        let app = axum::Router::new().route("/{bot}/{method}", post(handle)).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind fake telegram");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let task = tokio::spawn(async move {
            let _ = axum::serve(super::without_nagle(listener), app).await;
        });
        FakeTelegram { url, shared, task }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.shared.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A private chat with `user` (chat id = user id).
    pub fn private_chat(&self, user: &User) -> i64 {
        let chat = json!({"id": user.id, "type": "private", "first_name": user.first_name});
        self.inner().chats.insert(user.id, chat);
        user.id
    }

    /// Takes over what another fake (another run of the bridge) left: `messages` the
    /// bot sent in `chat` become known here, and new updates and messages are numbered
    /// after them, as the real Telegram keeps counting across a bridge's restarts.
    pub fn carry_on_from(&self, chat: i64, messages: &[Value], last_update_id: i64) {
        let mut inner = self.inner();
        for message in messages {
            let id = message["message_id"].as_i64().expect("a message id");
            inner.messages.insert((chat, id), message.clone());
            inner.next_message_id = inner.next_message_id.max(id + 1);
        }
        inner.next_update_id = inner.next_update_id.max(last_update_id + 1);
    }

    /// A supergroup the bot is in.
    pub fn group(&self, id: i64, title: &str, forum: bool) -> i64 {
        let chat = json!({"id": id, "type": "supergroup", "title": title, "is_forum": forum});
        self.inner().chats.insert(id, chat);
        id
    }

    fn push_update(&self, mut update: Value) -> i64 {
        let id = {
            let mut inner = self.inner();
            let id = inner.next_update_id;
            inner.next_update_id += 1;
            update["update_id"] = json!(id);
            inner.updates.push_back(update);
            id
        };
        self.shared.notify.notify_waiters();
        id
    }

    /// A text message from `user` in `chat` (optionally in a forum topic, optionally a
    /// reply to `reply_to`); returns its message id.
    pub fn push_message(&self, chat: i64, user: &User, text: &str, thread: Option<i64>, reply_to: Option<i64>) -> i64 {
        let update = self.message_update(chat, user, text, thread, reply_to);
        let id = update["message"]["message_id"].as_i64().unwrap_or_default();
        self.push_update(update);
        id
    }

    /// The update for a new message, remembered by the fake but not queued (for
    /// posting to a webhook). Has no `update_id` yet.
    pub fn message_update(&self, chat: i64, user: &User, text: &str, thread: Option<i64>, reply_to: Option<i64>) -> Value {
        let mut inner = self.inner();
        let chat_json = inner.chats.get(&chat).cloned().expect("register the chat first");
        let id = inner.next_message_id;
        inner.next_message_id += 1;
        let mut message = json!({"message_id": id, "date": 1_700_000_000, "chat": chat_json, "from": user.json(), "text": text});
        if let Some(t) = thread {
            message["message_thread_id"] = json!(t);
            message["is_topic_message"] = json!(true);
        }
        if let Some(original) = reply_to.and_then(|r| inner.messages.get(&(chat, r))) {
            message["reply_to_message"] = original.clone();
        }
        inner.messages.insert((chat, id), message.clone());
        json!({"message": message})
    }

    /// A button click on message `message_id` with this callback data; returns the
    /// callback query id.
    pub fn push_click(&self, chat: i64, user: &User, message_id: i64, data: &str) -> String {
        let (query_id, message) = {
            let mut inner = self.inner();
            let id = format!("cq-{}", inner.next_callback_id);
            inner.next_callback_id += 1;
            let message = inner.messages.get(&(chat, message_id)).cloned().expect("click on a message the fake knows");
            (id, message)
        };
        self.push_update(json!({"callback_query": {
            "id": query_id, "from": user.json(), "message": message, "chat_instance": "ci-1", "data": data}}));
        query_id
    }

    /// The update for a click (not queued; for [`FakeTelegram::deliver`]). Returns the
    /// callback query id and the update.
    pub fn click_update(&self, chat: i64, user: &User, message_id: i64, data: &str) -> (String, Value) {
        let mut inner = self.inner();
        let id = format!("cq-{}", inner.next_callback_id);
        inner.next_callback_id += 1;
        let message = inner.messages.get(&(chat, message_id)).cloned().expect("click on a message the fake knows");
        let update = json!({"callback_query": {"id": id, "from": user.json(), "message": message, "chat_instance": "ci-1", "data": data}});
        (id, update)
    }

    /// Delivers `update` to a webhook as Telegram does: numbered, with the secret
    /// header, and posted again (after a short pause) until the webhook answers 200 or
    /// `give_up` passes. Returns the update id and how many posts it took.
    pub async fn deliver(&self, url: &str, secret: &str, mut update: Value, give_up: Duration) -> (i64, usize) {
        let id = {
            let mut inner = self.inner();
            let id = inner.next_update_id;
            inner.next_update_id += 1;
            id
        };
        update["update_id"] = json!(id);
        let client = reqwest::Client::new();
        let deadline = tokio::time::Instant::now() + give_up;
        let mut posts = 0;
        loop {
            posts += 1;
            let sent = client.post(url).header("X-Telegram-Bot-Api-Secret-Token", secret).json(&update).timeout(Duration::from_secs(60)).send().await;
            match sent {
                Ok(r) if r.status().is_success() => return (id, posts),
                _ if tokio::time::Instant::now() >= deadline => panic!("webhook {url} never accepted update {id} ({posts} posts)"),
                _ => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }

    /// Answers the next `n` send/edit calls with 429 and `retry_after`.
    pub fn throttle_next(&self, n: usize, retry_after: u64) {
        let mut inner = self.inner();
        inner.throttle = n;
        inner.retry_after = retry_after;
    }

    /// Answers the next `n` sendMessage calls with `code` and `description` (a 5xx).
    #[allow(dead_code)] // not every test binary fails sends
    pub fn fail_next(&self, n: usize, code: u16, description: &str) {
        let mut inner = self.inner();
        inner.failing = n;
        inner.failure = (code, description.to_owned());
    }

    /// The `offset` of each getUpdates call so far, in arrival order.
    pub fn offsets(&self) -> Vec<Option<i64>> {
        self.inner().offsets.clone()
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.inner().requests.clone()
    }

    /// The requests from the `start`-th on: only those are copied, so polling for the
    /// last few is cheap however many came before.
    #[allow(dead_code)] // only the load benchmark polls this way
    pub fn requests_from(&self, start: usize) -> Vec<Recorded> {
        self.inner().requests.get(start..).map(<[Recorded]>::to_vec).unwrap_or_default()
    }

    /// How many requests arrived so far (cheap, unlike [`FakeTelegram::requests`]).
    pub fn request_count(&self) -> usize {
        self.inner().requests.len()
    }

    /// Every update getUpdates handed out, with when it first did, in that order.
    pub fn deliveries(&self) -> Vec<(Value, std::time::Instant)> {
        self.inner().delivered.clone()
    }

    /// Successful calls of `method` (any case), bodies only.
    pub fn calls(&self, method: &str) -> Vec<Value> {
        let method = method.to_lowercase();
        self.requests().into_iter().filter(|r| r.method == method && r.error.is_none()).map(|r| r.body).collect()
    }

    /// Every refused call, as (method, description).
    pub fn errors(&self) -> Vec<(String, String)> {
        self.requests().into_iter().filter_map(|r| r.error.map(|e| (r.method, e))).collect()
    }

    /// The message as the chat shows it now.
    pub fn message(&self, chat: i64, message_id: i64) -> Option<Value> {
        self.inner().messages.get(&(chat, message_id)).cloned()
    }

    /// Messages the bot sent to `chat`, in order.
    pub fn bot_messages(&self, chat: i64) -> Vec<Value> {
        let inner = self.inner();
        let mut found: Vec<Value> =
            inner.messages.iter().filter(|((c, _), m)| *c == chat && m["from"]["id"] == json!(BOT_ID)).map(|(_, m)| m.clone()).collect();
        found.sort_by_key(|m| m["message_id"].as_i64());
        found
    }

    /// The answerCallbackQuery call for a query, if made.
    pub fn answer_to(&self, query_id: &str) -> Option<Value> {
        self.calls("answerCallbackQuery").into_iter().find(|b| b["callback_query_id"] == json!(query_id))
    }

    pub fn shutdown(&self) {
        self.task.abort();
    }
}

/// The callback_data of the button whose label contains `label` on a message.
pub fn button(message: &Value, label: &str) -> String {
    message["reply_markup"]["inline_keyboard"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row.as_array().cloned().unwrap_or_default())
        .find(|b| b["text"].as_str().is_some_and(|t| t.contains(label)))
        .and_then(|b| b["callback_data"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no button {label:?} in {}", message["reply_markup"]))
}

/// callback_data of every button in an inline keyboard.
pub fn callback_data(markup: &Value) -> Vec<String> {
    markup["inline_keyboard"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row.as_array().cloned().unwrap_or_default())
        .filter_map(|b| b["callback_data"].as_str().map(str::to_owned))
        .collect()
}

fn check_text(text: Option<&str>) -> Result<(), Value> {
    let text = text.unwrap_or_default();
    if text.trim().is_empty() {
        return Err(error(400, "Bad Request: message text is empty"));
    }
    if text.chars().count() > 4096 {
        return Err(error(400, "Bad Request: message is too long"));
    }
    Ok(())
}

/// Telegram's inline keyboard limits.
pub const MAX_BUTTONS: usize = 100;
pub const MAX_BUTTONS_PER_ROW: usize = 8;

fn check_markup(markup: &Value) -> Result<(), Value> {
    let rows = markup["inline_keyboard"].as_array().cloned().unwrap_or_default();
    let buttons: usize = rows.iter().map(|r| r.as_array().map_or(0, Vec::len)).sum();
    if buttons > MAX_BUTTONS || rows.iter().any(|r| r.as_array().map_or(0, Vec::len) > MAX_BUTTONS_PER_ROW) {
        return Err(error(400, "Bad Request: reply markup is too long"));
    }
    for row in markup["inline_keyboard"].as_array().into_iter().flatten() {
        for button in row.as_array().into_iter().flatten() {
            if button["text"].as_str().is_none_or(str::is_empty) {
                return Err(error(400, "Bad Request: text buttons are unallowed in the inline keyboard"));
            }
            // Telegram refuses a URL button to an address it cannot open for everyone.
            if let Some(url) = button.get("url") {
                let parsed = url.as_str().and_then(|u| reqwest::Url::parse(u).ok());
                let public = parsed
                    .is_some_and(|u| matches!(u.scheme(), "http" | "https" | "tg") && u.host_str().is_some_and(|h| h != "localhost" && !h.starts_with("127.")));
                if !public {
                    return Err(error(400, "Bad Request: BUTTON_URL_INVALID"));
                }
            }
            if let Some(data) = button.get("callback_data") {
                let len = data.as_str().map_or(0, str::len);
                if !(1..=64).contains(&len) {
                    return Err(error(400, "Bad Request: BUTTON_DATA_INVALID"));
                }
            }
        }
    }
    if markup.get("input_field_placeholder").and_then(Value::as_str).is_some_and(|p| p.chars().count() > 64) {
        return Err(error(400, "Bad Request: input field placeholder is too long"));
    }
    Ok(())
}

async fn handle(State(shared): State<Arc<Shared>>, Path((bot, method)): Path<(String, String)>, headers: HeaderMap, body: Bytes) -> Json<Value> {
    let at = std::time::Instant::now();
    let method = method.to_lowercase();
    let is_json = headers.get("content-type").and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("application/json"));
    let body: Value = if body.is_empty() {
        json!({})
    } else if is_json {
        serde_json::from_slice(&body).unwrap_or_else(|_| json!({"unparseable": String::from_utf8_lossy(&body)}))
    } else {
        parse_multipart(&String::from_utf8_lossy(&body))
    };
    if bot != format!("bot{TOKEN}") {
        return Json(error(401, "Unauthorized"));
    }
    if method == "getupdates" {
        return Json(get_updates(&shared, &body).await);
    }
    let response = {
        let mut inner = shared.inner.lock().unwrap_or_else(|p| p.into_inner());
        let response = respond(&mut inner, &method, &body);
        let error = (response["ok"] == json!(false)).then(|| response["description"].as_str().unwrap_or_default().to_owned());
        inner.requests.push(Recorded { method, body, error, at });
        response
    };
    Json(response)
}

async fn get_updates(shared: &Shared, body: &Value) -> Value {
    let offset = body["offset"].as_i64();
    shared.inner.lock().unwrap_or_else(|p| p.into_inner()).offsets.push(offset);
    let timeout = body["timeout"].as_u64().unwrap_or(0).min(30);
    // The Bot API's `limit`: "Values between 1-100 are accepted. Defaults to 100."
    // (the Telegram spec's getUpdates): a burst larger than that arrives in batches.
    let limit = body["limit"].as_u64().unwrap_or(100).clamp(1, 100) as usize;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout);
    loop {
        let notified = shared.notify.notified();
        {
            let mut inner = shared.inner.lock().unwrap_or_else(|p| p.into_inner());
            // An offset confirms every update before it (Telegram forgets them).
            if let Some(offset) = offset {
                inner.updates.retain(|u| u["update_id"].as_i64().unwrap_or_default() >= offset);
            }
            if !inner.updates.is_empty() || tokio::time::Instant::now() >= deadline {
                let batch: Vec<Value> = inner.updates.iter().take(limit).cloned().collect();
                let now = std::time::Instant::now();
                let first_seen = inner.delivered.last().and_then(|(u, _)| u["update_id"].as_i64()).unwrap_or(0);
                let fresh: Vec<(Value, std::time::Instant)> =
                    batch.iter().filter(|u| u["update_id"].as_i64().unwrap_or(0) > first_seen).map(|u| (u.clone(), now)).collect();
                inner.delivered.extend(fresh);
                inner.requests.push(Recorded { method: "getupdates".into(), body: body.clone(), error: None, at: now });
                return ok(json!(batch));
            }
        }
        let _ = tokio::time::timeout_at(deadline, notified).await;
    }
}

fn respond(inner: &mut Inner, method: &str, body: &Value) -> Value {
    let sends = ["sendmessage", "editmessagetext", "senddocument"];
    if sends.contains(&method) && inner.throttle > 0 {
        inner.throttle -= 1;
        return json!({"ok": false, "error_code": 429, "description": format!("Too Many Requests: retry after {}", inner.retry_after),
            "parameters": {"retry_after": inner.retry_after}});
    }
    if method == "sendmessage" && inner.failing > 0 {
        inner.failing -= 1;
        return error(inner.failure.0, &inner.failure.1);
    }
    let bot_user = json!({"id": BOT_ID, "is_bot": true, "first_name": "HITL", "username": BOT_USERNAME});
    match method {
        "getme" => ok(json!({"id": BOT_ID, "is_bot": true, "first_name": "HITL", "username": BOT_USERNAME,
            "can_join_groups": true, "can_read_all_group_messages": false, "supports_inline_queries": false,
            "can_connect_to_business": false, "has_main_web_app": false})),
        "sendmessage" | "senddocument" => {
            let chat_id = match chat_id_of(body) {
                Some(id) => id,
                None => return error(400, "Bad Request: chat not found"),
            };
            let Some(chat) = inner.chats.get(&chat_id).cloned() else { return error(400, "Bad Request: chat not found") };
            let text = if method == "sendmessage" {
                if let Err(e) = check_text(body["text"].as_str()) {
                    return e;
                }
                body["text"].as_str().unwrap_or_default().to_owned()
            } else {
                "[document]".to_owned()
            };
            if let Some(Err(e)) = body.get("reply_markup").map(check_markup) {
                return e;
            }
            let replied = match body["reply_parameters"]["message_id"].as_i64() {
                Some(to) => match inner.messages.get(&(chat_id, to)) {
                    Some(original) => Some(original.clone()),
                    None if body["reply_parameters"]["allow_sending_without_reply"] == json!(true) => None,
                    None => return error(400, "Bad Request: message to be replied not found"),
                },
                None => None,
            };
            let id = inner.next_message_id;
            inner.next_message_id += 1;
            let mut message = json!({"message_id": id, "date": 1_700_000_000, "chat": chat, "from": bot_user, "text": text});
            if let Some(original) = replied {
                message["reply_to_message"] = original;
            }
            if let Some(thread) = body.get("message_thread_id") {
                message["message_thread_id"] = thread.clone();
                message["is_topic_message"] = json!(true);
            }
            if let Some(markup) = body.get("reply_markup").filter(|m| m.get("inline_keyboard").is_some()) {
                message["reply_markup"] = markup.clone();
            }
            inner.messages.insert((chat_id, id), message.clone());
            ok(message)
        }
        "editmessagetext" => {
            let Some(chat_id) = chat_id_of(body) else { return error(400, "Bad Request: chat not found") };
            if !inner.chats.contains_key(&chat_id) {
                return error(400, "Bad Request: chat not found");
            }
            let Some(message_id) = body["message_id"].as_i64() else { return error(400, "Bad Request: message to edit not found") };
            let Some(mut message) = inner.messages.get(&(chat_id, message_id)).cloned() else {
                return error(400, "Bad Request: message to edit not found");
            };
            if let Err(e) = check_text(body["text"].as_str()) {
                return e;
            }
            let markup = body.get("reply_markup").cloned().unwrap_or(json!({"inline_keyboard": []}));
            if let Err(e) = check_markup(&markup) {
                return e;
            }
            let shown_markup = message.get("reply_markup").cloned().unwrap_or(json!({"inline_keyboard": []}));
            if message["text"] == body["text"] && shown_markup == markup {
                return error(
                    400,
                    "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
                );
            }
            message["text"] = body["text"].clone();
            if markup["inline_keyboard"].as_array().is_some_and(|rows| rows.is_empty()) {
                message.as_object_mut().map(|m| m.remove("reply_markup"));
            } else {
                message["reply_markup"] = markup;
            }
            message["edit_date"] = json!(1_700_000_001);
            inner.messages.insert((chat_id, message_id), message.clone());
            ok(message)
        }
        "answercallbackquery" => {
            if body["text"].as_str().is_some_and(|t| t.chars().count() > 200) {
                return error(400, "Bad Request: MESSAGE_TOO_LONG");
            }
            ok(json!(true))
        }
        _ => ok(json!(true)),
    }
}

fn chat_id_of(body: &Value) -> Option<i64> {
    body["chat_id"].as_i64().or_else(|| body["chat_id"].as_str().and_then(|s| s.parse().ok()))
}

/// A multipart/form-data body (teloxide sends files, and setWebhook, this way) as a
/// JSON object: field → value (JSON-decoded when it is JSON), a file part → `{"filename",
/// "content"}`.
fn parse_multipart(raw: &str) -> Value {
    let Some(boundary) = raw.lines().next().map(str::trim) else { return json!({}) };
    let mut fields = serde_json::Map::new();
    for part in raw.split(boundary) {
        let Some((headers, content)) = part.split_once("\r\n\r\n") else { continue };
        let content = content.strip_suffix("\r\n").unwrap_or(content);
        let attr = |key: &str| {
            let at = headers.find(&format!("{key}=\""))? + key.len() + 2;
            headers[at..].split('"').next().map(str::to_owned)
        };
        let Some(name) = attr("name") else { continue };
        let value = match attr("filename") {
            Some(filename) => json!({"filename": filename, "content": content}),
            None => match serde_json::from_str::<Value>(content) {
                Ok(v) if v.is_array() || v.is_object() => v,
                _ => json!(content),
            },
        };
        fields.insert(name, value);
    }
    // teloxide names a file `attach://<part>` and sends it as that part: inline it.
    let refs: Vec<(String, String)> =
        fields.iter().filter_map(|(k, v)| v.as_str().and_then(|s| s.strip_prefix("attach://")).map(|part| (k.clone(), part.to_owned()))).collect();
    for (field, part) in refs {
        if let Some(file) = fields.remove(&part) {
            fields.insert(field, file);
        }
    }
    Value::Object(fields)
}
