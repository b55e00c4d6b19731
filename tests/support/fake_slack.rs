//! A fake Slack for the tests: an axum server the bridge's own Web API client and
//! Socket Mode client talk to through `slack.api_url`.
//!
//! Web API (`POST /api/{method}`, JSON bodies, `Authorization: Bearer`): `auth.test`,
//! `apps.connections.open` (the app-level token only; answers a `ws://` URL to this
//! fake), `conversations.open`, `chat.postMessage`, `chat.update`,
//! `chat.postEphemeral` and `views.open`, each answered with Slack's envelope
//! (`{"ok": true, …}` or `{"ok": false, "error": "…"}`) and Slack's errors:
//! `invalid_auth` for a wrong token, `not_allowed_token_type` for a bot token where
//! the app-level one is needed, `channel_not_found` for an unknown channel,
//! `not_in_channel` where the bot was not invited, `message_not_found` for an edit of
//! a message it does not have, `invalid_blocks` past Block Kit's limits (50 blocks,
//! 3,000 characters a section text, 75 a button text, 2,000 a button value, unique
//! `action_id`s in a block), `msg_too_long` past 40,000 characters of text,
//! `expired_trigger_id` for a `trigger_id` used twice or unknown, and `ratelimited`
//! with HTTP 429 and `Retry-After` when the test asks. Every call is recorded with
//! its exact JSON and when it arrived; every envelope sent, with when.
//!
//! `usergroups.users.list` (form fields, as Slack's reading methods take them) answers
//! the members the test set for a user group, changeable mid-test, or
//! `no_such_subteam`, or an error the test asks for, and can be held (answered only
//! after 10 s) to keep a click's handling in it. With a channel pace set, a
//! `chat.postMessage` to a channel sooner than that after the last one is answered 429
//! `ratelimited` with `Retry-After: 1`, as Slack does past "1 message per second per
//! channel" (<https://api.slack.com/methods/chat.postMessage#rate_limiting>,
//! <https://api.slack.com/apis/rate-limits>: "HTTP 429 Too Many Requests … a
//! Retry-After HTTP header containing the number of seconds until you can retry"). (Limits: Block Kit reference, "Blocks" and "Block elements";
//! errors: each method's page in Slack's Web API reference.)
//!
//! Socket Mode (`GET /socket`): says `hello` on every connection, pushes the
//! envelopes the test gives, records every acknowledgement (`envelope_id` and
//! optional `payload`), and can send `disconnect` or drop the socket. It records
//! every envelope it sent, can lose the acknowledgements on the way (a bridge killed
//! before its ack left), and delivers an envelope again with `retry_attempt` set, as
//! Slack does with one it has no acknowledgement of.

#![allow(dead_code)]

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::ws::{Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::wait_until;

pub const BOT_TOKEN: &str = "xoxb-1-fake-bot";
pub const APP_TOKEN: &str = "xapp-1-A0APP-fake";
pub const BOT_USER: &str = "U0BOT";
pub const TEAM: &str = "T0ACME";
/// A channel the bot is in.
pub const OPS: &str = "C0OPS";

/// One Web API call as the bridge sent it.
#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    pub body: Value,
    /// `None` when it succeeded, else Slack's error string.
    pub error: Option<String>,
    /// When the call reached the fake.
    pub at: std::time::Instant,
}

/// A person clicking.
#[derive(Debug, Clone)]
pub struct Person {
    pub id: String,
    pub username: String,
}

impl Person {
    pub fn new(id: &str, username: &str) -> Self {
        Self { id: id.into(), username: username.into() }
    }
    fn json(&self) -> Value {
        json!({"id": self.id, "username": self.username, "name": self.username, "team_id": TEAM})
    }
}

/// What a Socket Mode connection is told to do.
enum Command {
    Send(Value),
    Disconnect,
    Drop,
}

#[derive(Default)]
struct Inner {
    calls: Vec<Call>,
    /// Channels that exist, and whether the bot is in each.
    channels: HashMap<String, bool>,
    /// (channel, ts) → the message as last posted or edited.
    messages: HashMap<(String, String), Value>,
    /// Every message posted, as (channel, ts), in order.
    posted: Vec<(String, String)>,
    /// Trigger ids handed out with clicks and not used yet.
    triggers: HashSet<String>,
    /// The views opened, in order.
    views: Vec<Value>,
    /// Acknowledgements received: (envelope_id, the whole ack).
    acks: Vec<(String, Value)>,
    /// The next this-many Web API calls are answered 429.
    throttle: u32,
    retry_after: u64,
    /// The live Socket Mode connection's commands, and how many were opened.
    connection: Option<mpsc::UnboundedSender<Command>>,
    connections: u32,
    /// User groups (`S…`) → their members.
    usergroups: HashMap<String, Vec<String>>,
    /// When set, `usergroups.users.list` answers this error.
    usergroups_error: Option<String>,
    /// The least time between two posts in one channel, and each channel's last post.
    channel_pace: Option<Duration>,
    last_post: HashMap<String, std::time::Instant>,
    /// Every envelope sent down a Socket Mode connection, in order.
    sent: Vec<Value>,
    /// When each envelope was sent down a connection, as (envelope_id, when), in order.
    sent_at: Vec<(String, std::time::Instant)>,
    /// While set, acknowledgements are lost on the way (Slack never has them): kept in
    /// `lost_acks`, not `acks`.
    lose_acks: bool,
    lost_acks: Vec<(String, Value)>,
    /// While set, `usergroups.users.list` answers only after [`HELD_ANSWER`]; how many
    /// such calls came in.
    hold_usergroups: bool,
    usergroup_asks_held: u32,
}

/// How long a held `usergroups.users.list` takes to answer: longer than any click
/// waits for it.
const HELD_ANSWER: Duration = Duration::from_secs(10);

struct Shared {
    addr: std::net::SocketAddr,
    inner: Mutex<Inner>,
    next: AtomicU64,
}

impl Shared {
    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub struct FakeSlack {
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeSlack {
    pub async fn start() -> FakeSlack {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind fake slack");
        let addr = listener.local_addr().expect("addr");
        let shared = Arc::new(Shared { addr, inner: Mutex::new(Inner::default()), next: AtomicU64::new(1) });
        shared.inner().channels.insert(OPS.into(), true);
        let app = Router::new().route("/api/{method}", post(web_api)).route("/socket", get(socket)).with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(super::without_nagle(listener), app).await;
        });
        FakeSlack { shared, task }
    }

    /// The `slack.api_url` to give the bridge.
    pub fn api_url(&self) -> String {
        format!("http://{}/api/", self.shared.addr)
    }

    fn next(&self) -> u64 {
        self.shared.next.fetch_add(1, Ordering::SeqCst)
    }

    /// A channel that exists, with or without the bot in it.
    pub fn channel(&self, id: &str, bot_is_member: bool) {
        self.shared.inner().channels.insert(id.into(), bot_is_member);
    }

    /// Every Web API call so far.
    pub fn calls(&self) -> Vec<Call> {
        self.shared.inner().calls.clone()
    }

    /// How many Web API calls came in so far (cheaper than copying them).
    pub fn call_count(&self) -> usize {
        self.shared.inner().calls.len()
    }

    /// The Web API calls from the `start`-th on (from 0).
    pub fn calls_from(&self, start: usize) -> Vec<Call> {
        self.shared.inner().calls.get(start..).map(<[Call]>::to_vec).unwrap_or_default()
    }

    /// When each envelope was first sent down a connection: envelope_id → when.
    pub fn first_deliveries(&self) -> HashMap<String, std::time::Instant> {
        let mut first = HashMap::new();
        for (id, at) in &self.shared.inner().sent_at {
            first.entry(id.clone()).or_insert(*at);
        }
        first
    }

    /// The bodies of the calls to `method`.
    pub fn bodies(&self, method: &str) -> Vec<Value> {
        self.calls().into_iter().filter(|c| c.method == method).map(|c| c.body).collect()
    }

    /// The calls Slack refused, as (method, error), 429s included.
    pub fn errors(&self) -> Vec<(String, String)> {
        self.calls().into_iter().filter_map(|c| c.error.map(|e| (c.method, e))).collect()
    }

    /// The message `ts` in `channel` as it stands.
    pub fn message(&self, channel: &str, ts: &str) -> Option<Value> {
        self.shared.inner().messages.get(&(channel.to_owned(), ts.to_owned())).cloned()
    }

    /// Deletes the message `ts` in `channel`, as a person with the right may: Slack
    /// answers its edits `message_not_found` after that.
    pub fn delete_message(&self, channel: &str, ts: &str) {
        self.shared.inner().messages.remove(&(channel.to_owned(), ts.to_owned()));
    }

    /// Every message posted, as (channel, ts), in order.
    pub fn posted(&self) -> Vec<(String, String)> {
        self.shared.inner().posted.clone()
    }

    /// The views opened so far.
    pub fn views(&self) -> Vec<Value> {
        self.shared.inner().views.clone()
    }

    /// Answers the next `n` Web API calls with 429 and `Retry-After: secs`.
    pub fn rate_limit_next(&self, n: u32, secs: u64) {
        let mut inner = self.shared.inner();
        inner.throttle = n;
        inner.retry_after = secs;
    }

    /// Sets the members of user group `id` (creating it), as Slack would list them.
    pub fn usergroup(&self, id: &str, members: &[&str]) {
        self.shared.inner().usergroups.insert(id.into(), members.iter().map(|m| (*m).to_owned()).collect());
    }

    /// `usergroups.users.list` answers `error` from now on (`None`: answers again).
    pub fn fail_usergroups(&self, error: Option<&str>) {
        self.shared.inner().usergroups_error = error.map(str::to_owned);
    }

    /// While `on`, `usergroups.users.list` answers only after 10 s: a click being
    /// handled is held in its question of who is in a group, before it decides.
    pub fn hold_usergroups(&self, on: bool) {
        self.shared.inner().hold_usergroups = on;
    }

    /// How many `usergroups.users.list` calls came in while held.
    pub fn usergroup_asks_held(&self) -> u32 {
        self.shared.inner().usergroup_asks_held
    }

    /// A post to a channel sooner than `pace` after its last one is answered 429.
    pub fn pace_channels(&self, pace: Duration) {
        self.shared.inner().channel_pace = Some(pace);
    }

    /// How many Socket Mode connections were opened.
    pub fn connections(&self) -> u32 {
        self.shared.inner().connections
    }

    /// Waits until `n` Socket Mode connections were opened (the latest is live).
    pub async fn wait_connections(&self, n: u32) {
        wait_until(|| async { (self.shared.inner().connections >= n && self.shared.inner().connection.is_some()).then_some(()) }).await;
    }

    fn command(&self, command: Command) {
        let inner = self.shared.inner();
        let connection = inner.connection.as_ref().expect("a live Socket Mode connection");
        let _ = connection.send(command);
    }

    /// Pushes an envelope to the live connection.
    pub fn push(&self, envelope: Value) {
        self.command(Command::Send(envelope));
    }

    /// Tells the live connection to reconnect (`refresh_requested`).
    pub fn disconnect(&self) {
        self.command(Command::Disconnect);
    }

    /// Drops the live connection without a word.
    pub fn drop_socket(&self) {
        self.command(Command::Drop);
    }

    /// The acknowledgements of `envelope_id` so far.
    pub fn acks_of(&self, envelope_id: &str) -> Vec<Value> {
        self.shared.inner().acks.iter().filter(|(id, _)| id == envelope_id).map(|(_, a)| a.clone()).collect()
    }

    /// Waits for the acknowledgement of `envelope_id`.
    pub async fn wait_ack(&self, envelope_id: &str) -> Value {
        wait_until(|| async { self.acks_of(envelope_id).into_iter().next() }).await
    }

    /// A `block_actions` envelope: `who` clicked the button `action_id` of message `ts`
    /// in `channel`, sending `value`. Returns the envelope (with a fresh trigger id).
    pub fn click_envelope(&self, who: &Person, channel: &str, ts: &str, action_id: &str, value: &str) -> Value {
        let n = self.next();
        let trigger = format!("{n}.{n}.trigger");
        self.shared.inner().triggers.insert(trigger.clone());
        json!({
            "type": "interactive", "envelope_id": format!("env-click-{n}"), "accepts_response_payload": false,
            "payload": {
                "type": "block_actions", "user": who.json(), "api_app_id": "A0APP", "token": "legacy",
                "team": {"id": TEAM, "domain": "acme"}, "trigger_id": trigger,
                "container": {"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": false},
                "channel": {"id": channel, "name": "ops"},
                "message": {"type": "message", "ts": ts, "user": BOT_USER},
                "actions": [{"type": "button", "action_id": action_id, "block_id": "buttons.0", "value": value, "action_ts": format!("1700000{n}.000")}]
            }
        })
    }

    /// Clicks the button whose text contains `label` on message `ts`, as `who`; the
    /// envelope id.
    pub fn click(&self, who: &Person, channel: &str, ts: &str, label: &str) -> String {
        let message = self.message(channel, ts).expect("a message the fake knows");
        let button = button(&message, label);
        let envelope = self.click_envelope(who, channel, ts, button["action_id"].as_str().unwrap(), button["value"].as_str().unwrap());
        let id = envelope["envelope_id"].as_str().unwrap().to_owned();
        self.push(envelope);
        id
    }

    /// A `view_submission` envelope for `view` (as opened) with `values` typed into its
    /// inputs as (block_id, action_id, text); Slack waits for a payload in the ack.
    pub fn submission_envelope(&self, who: &Person, view: &Value, values: &[(&str, &str, &str)]) -> Value {
        let n = self.next();
        let mut state = serde_json::Map::new();
        for (block, action, text) in values {
            state.insert((*block).into(), json!({ *action: {"type": "plain_text_input", "value": text} }));
        }
        json!({
            "type": "interactive", "envelope_id": format!("env-view-{n}"), "accepts_response_payload": true,
            "payload": {
                "type": "view_submission", "user": who.json(), "team": {"id": TEAM, "domain": "acme"}, "api_app_id": "A0APP",
                "view": {"id": format!("V{n}"), "type": "modal", "callback_id": view["callback_id"], "private_metadata": view["private_metadata"],
                         "state": {"values": state}, "hash": "h"}
            }
        })
    }

    pub fn shutdown(self) {
        self.task.abort();
    }

    /// Acknowledgements are lost on the way while `on`: the bridge sends them, Slack
    /// never has them (as when the bridge dies before its ack leaves), so Slack will
    /// deliver the envelope again.
    pub fn lose_acks(&self, on: bool) {
        self.shared.inner().lose_acks = on;
    }

    /// The acknowledgements of `envelope_id` lost on the way.
    pub fn lost_acks_of(&self, envelope_id: &str) -> Vec<Value> {
        self.shared.inner().lost_acks.iter().filter(|(id, _)| id == envelope_id).map(|(_, a)| a.clone()).collect()
    }

    /// How many times envelope `envelope_id` was sent down a connection.
    pub fn deliveries(&self, envelope_id: &str) -> usize {
        self.shared.inner().sent.iter().filter(|e| e["envelope_id"] == envelope_id).count()
    }

    /// The `n`-th delivery (from 0) of envelope `envelope_id`, as sent.
    pub fn sent_envelope(&self, envelope_id: &str, n: usize) -> Value {
        self.shared.inner().sent.iter().filter(|e| e["envelope_id"] == envelope_id).nth(n).cloned().expect("an envelope delivered that often")
    }

    /// Waits until envelope `envelope_id` was sent down a connection `n` times.
    pub async fn wait_delivered(&self, envelope_id: &str, n: usize) {
        wait_until(|| async { (self.deliveries(envelope_id) >= n).then_some(()) }).await;
    }

    /// Delivers envelope `envelope_id` again to the live connection, as Slack does
    /// with one it has no acknowledgement of (or, rarely, one it has): the same
    /// envelope with `retry_attempt` counting the deliveries before and a
    /// `retry_reason`.
    pub fn redeliver(&self, envelope_id: &str) {
        let (mut envelope, before) = {
            let inner = self.shared.inner();
            let sent: Vec<&Value> = inner.sent.iter().filter(|e| e["envelope_id"] == envelope_id).collect();
            (sent.first().map(|e| (*e).clone()).expect("an envelope sent before"), sent.len())
        };
        envelope["retry_attempt"] = json!(before);
        envelope["retry_reason"] = json!("timeout");
        self.push(envelope);
    }
}

/// The button whose text contains `label`.
pub fn button(message: &Value, label: &str) -> Value {
    message["blocks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "actions")
        .flat_map(|b| b["elements"].as_array().cloned().unwrap_or_default())
        .find(|b| b["text"]["text"].as_str().is_some_and(|t| t.contains(label)))
        .unwrap_or_else(|| panic!("no button {label:?} in {message}"))
}

/// Whether the message still shows buttons.
pub fn has_buttons(message: &Value) -> bool {
    message["blocks"].as_array().into_iter().flatten().any(|b| b["type"] == "actions")
}

// ---------------------------------------------------------------------------------
// Socket Mode.

async fn socket(ws: WebSocketUpgrade, State(shared): State<Arc<Shared>>) -> Response {
    ws.on_upgrade(move |socket| connection(socket, shared))
}

async fn connection(mut socket: WebSocket, shared: Arc<Shared>) {
    let (tx, mut commands) = mpsc::unbounded_channel();
    let mine = tx.clone();
    let hello = json!({"type": "hello", "num_connections": 1, "debug_info": {"host": "fake"}, "connection_info": {"app_id": "A0APP"}});
    if socket.send(WsMessage::Text(hello.to_string().into())).await.is_err() {
        return;
    }
    {
        let mut inner = shared.inner();
        inner.connections += 1;
        inner.connection = Some(tx);
    }
    loop {
        tokio::select! {
            incoming = socket.recv() => {
                let Some(Ok(message)) = incoming else { break };
                let WsMessage::Text(text) = message else { continue };
                let Ok(ack) = serde_json::from_str::<Value>(&text) else { continue };
                if let Some(id) = ack["envelope_id"].as_str() {
                    let mut inner = shared.inner();
                    if inner.lose_acks {
                        inner.lost_acks.push((id.to_owned(), ack.clone()));
                    } else {
                        inner.acks.push((id.to_owned(), ack.clone()));
                    }
                }
            }
            command = commands.recv() => match command {
                Some(Command::Send(envelope)) => {
                    if socket.send(WsMessage::Text(envelope.to_string().into())).await.is_err() { break }
                    let mut inner = shared.inner();
                    inner.sent_at.push((envelope["envelope_id"].as_str().unwrap_or_default().to_owned(), std::time::Instant::now()));
                    inner.sent.push(envelope);
                }
                Some(Command::Disconnect) => {
                    let disconnect = json!({"type": "disconnect", "reason": "refresh_requested", "debug_info": {"host": "fake"}});
                    let _ = socket.send(WsMessage::Text(disconnect.to_string().into())).await;
                    // Slack keeps the old connection a little while; the bridge leaves it.
                }
                Some(Command::Drop) | None => break,
            }
        }
    }
    let mut inner = shared.inner();
    if inner.connection.as_ref().is_some_and(|c| c.same_channel(&mine)) {
        inner.connection = None;
    }
}

// ---------------------------------------------------------------------------------
// The Web API.

fn ok(mut result: Value) -> Value {
    result["ok"] = json!(true);
    result
}

async fn web_api(State(shared): State<Arc<Shared>>, Path(method): Path<String>, headers: HeaderMap, body: String) -> Response {
    let at = std::time::Instant::now();
    let form = headers.get("content-type").and_then(|v| v.to_str().ok()).is_some_and(|t| t.starts_with("application/x-www-form-urlencoded"));
    let body: Value = if form { form_fields(&body) } else { serde_json::from_str(&body).unwrap_or(Value::Null) };
    let token = headers.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer ")).unwrap_or_default().to_owned();
    let held = {
        let mut inner = shared.inner();
        let held = inner.hold_usergroups && method == "usergroups.users.list";
        inner.usergroup_asks_held += u32::from(held);
        held
    };
    if held {
        tokio::time::sleep(HELD_ANSWER).await;
    }
    let throttled = {
        let mut inner = shared.inner();
        if inner.throttle > 0 {
            inner.throttle -= 1;
            Some(inner.retry_after)
        } else {
            None
        }
    };
    let throttled = throttled.or_else(|| too_soon(&shared, &method, &body).then_some(1));
    if let Some(secs) = throttled {
        shared.inner().calls.push(Call { method: method.clone(), body, error: Some("ratelimited".into()), at });
        let headers = [("retry-after", secs.to_string())];
        return (StatusCode::TOO_MANY_REQUESTS, headers, axum::Json(json!({"ok": false, "error": "ratelimited"}))).into_response();
    }
    let answer = answer(&shared, &method, &token, &body);
    let error = (answer["ok"] != json!(true)).then(|| answer["error"].as_str().unwrap_or("unknown").to_owned());
    shared.inner().calls.push(Call { method, body, error, at });
    axum::Json(answer).into_response()
}

/// Whether `method` posts to a channel sooner than the channel pace allows; a post
/// that goes through starts the channel's next interval.
fn too_soon(shared: &Shared, method: &str, body: &Value) -> bool {
    if method != "chat.postMessage" {
        return false;
    }
    let mut inner = shared.inner();
    let Some(pace) = inner.channel_pace else { return false };
    let channel = body["channel"].as_str().unwrap_or_default().to_owned();
    let now = std::time::Instant::now();
    if inner.last_post.get(&channel).is_some_and(|last| now.duration_since(*last) < pace) {
        return true;
    }
    inner.last_post.insert(channel, now);
    false
}

/// An `application/x-www-form-urlencoded` body as a JSON object of its fields.
fn form_fields(body: &str) -> Value {
    let decode = |text: &str| {
        let bytes = text.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < bytes.len() => {
                    out.push(u8::from_str_radix(&text[i + 1..i + 3], 16).unwrap_or(b'?'));
                    i += 2;
                }
                b => out.push(b),
            }
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    let fields: serde_json::Map<String, Value> =
        body.split('&').filter(|p| !p.is_empty()).map(|pair| pair.split_once('=').unwrap_or((pair, ""))).map(|(k, v)| (decode(k), json!(decode(v)))).collect();
    Value::Object(fields)
}

fn fail(error: &str) -> Value {
    json!({"ok": false, "error": error})
}

fn answer(shared: &Shared, method: &str, token: &str, body: &Value) -> Value {
    if method == "apps.connections.open" {
        return match token {
            APP_TOKEN => ok(json!({"url": format!("ws://{}/socket?ticket={}", shared.addr, shared.next.fetch_add(1, Ordering::SeqCst))})),
            BOT_TOKEN => fail("not_allowed_token_type"),
            _ => fail("invalid_auth"),
        };
    }
    if token != BOT_TOKEN {
        return fail(if token.starts_with("xapp-") { "not_allowed_token_type" } else { "invalid_auth" });
    }
    let mut inner = shared.inner();
    match method {
        "auth.test" => ok(json!({"url": "https://acme.slack.com/", "team": "Acme", "user": "hitl", "team_id": TEAM, "user_id": BOT_USER, "bot_id": "B0BOT"})),
        "conversations.open" => {
            let Some(user) = body["users"].as_str().filter(|u| u.starts_with('U')) else { return fail("user_not_found") };
            let channel = format!("D{}", &user[1..]);
            inner.channels.insert(channel.clone(), true);
            ok(json!({"channel": {"id": channel}}))
        }
        "chat.postMessage" | "chat.update" => {
            let channel = body["channel"].as_str().unwrap_or_default().to_owned();
            match inner.channels.get(&channel) {
                None => return fail("channel_not_found"),
                Some(false) => return fail("not_in_channel"),
                Some(true) => {}
            }
            if let Some(problem) = message_problem(body) {
                return fail(problem);
            }
            let ts = if method == "chat.update" {
                let ts = body["ts"].as_str().unwrap_or_default().to_owned();
                if !inner.messages.contains_key(&(channel.clone(), ts.clone())) {
                    return fail("message_not_found");
                }
                ts
            } else {
                format!("1700000000.{:06}", shared.next.fetch_add(1, Ordering::SeqCst))
            };
            let mut message = json!({"type": "message", "user": BOT_USER, "bot_id": "B0BOT", "ts": ts, "text": body["text"], "blocks": body.get("blocks").cloned().unwrap_or(json!([]))});
            // An edit leaves the message in its thread (chat.update takes no thread_ts).
            let thread = match method {
                "chat.update" => inner.messages.get(&(channel.clone(), ts.clone())).and_then(|m| m.get("thread_ts")).cloned(),
                _ => body.get("thread_ts").cloned(),
            };
            if let Some(thread) = thread {
                message["thread_ts"] = thread;
            }
            if method == "chat.postMessage" {
                inner.posted.push((channel.clone(), ts.clone()));
            }
            inner.messages.insert((channel.clone(), ts.clone()), message.clone());
            ok(json!({"channel": channel, "ts": ts, "message": message}))
        }
        "chat.postEphemeral" => match inner.channels.get(body["channel"].as_str().unwrap_or_default()) {
            None => fail("channel_not_found"),
            Some(false) => fail("not_in_channel"),
            Some(true) if body["user"].as_str().is_none_or(str::is_empty) => fail("user_not_in_channel"),
            Some(true) => ok(json!({"message_ts": format!("1700000000.{:06}", shared.next.fetch_add(1, Ordering::SeqCst))})),
        },
        // https://api.slack.com/methods/usergroups.users.list: `usergroup` (required)
        // → `{"ok": true, "users": ["U…", …]}`; an id the workspace has no group of
        // → `no_such_subteam`.
        "usergroups.users.list" => {
            if let Some(error) = &inner.usergroups_error {
                return fail(error);
            }
            match body["usergroup"].as_str() {
                None | Some("") => fail("invalid_arguments"),
                Some(id) => match inner.usergroups.get(id) {
                    Some(users) => ok(json!({"users": users})),
                    None => fail("no_such_subteam"),
                },
            }
        }
        "views.open" => {
            let trigger = body["trigger_id"].as_str().unwrap_or_default();
            if !inner.triggers.remove(trigger) {
                return fail("expired_trigger_id");
            }
            let view = &body["view"];
            let short = |v: &Value| v["text"].as_str().is_some_and(|t| t.chars().count() <= 24);
            if view["type"] != "modal" || !short(&view["title"]) || !view.get("submit").is_none_or(short) || !view.get("close").is_none_or(short) {
                return fail("invalid_arguments");
            }
            if view["private_metadata"].as_str().is_some_and(|m| m.chars().count() > 3000) {
                return fail("invalid_arguments");
            }
            inner.views.push(view.clone());
            ok(json!({"view": view}))
        }
        _ => fail("unknown_method"),
    }
}

/// What Slack would refuse in a message, per Block Kit's limits.
fn message_problem(body: &Value) -> Option<&'static str> {
    let chars = |v: &Value| v.as_str().map_or(0, |s| s.chars().count());
    if chars(&body["text"]) > 40_000 {
        return Some("msg_too_long");
    }
    let blocks = match body.get("blocks") {
        None => return (chars(&body["text"]) == 0).then_some("no_text"),
        Some(Value::Array(blocks)) => blocks,
        Some(_) => return Some("invalid_blocks"),
    };
    if blocks.is_empty() || blocks.len() > 50 {
        return Some("invalid_blocks");
    }
    for block in blocks {
        let fits = match block["type"].as_str() {
            Some("section") => (1..=3000).contains(&chars(&block["text"]["text"])),
            Some("header") => (1..=150).contains(&chars(&block["text"]["text"])) && block["text"]["type"] == "plain_text",
            Some("context") => block["elements"].as_array().is_some_and(|e| (1..=10).contains(&e.len())),
            Some("actions") => block["elements"].as_array().is_some_and(|e| {
                let ids: HashSet<&str> = e.iter().filter_map(|b| b["action_id"].as_str()).collect();
                (1..=25).contains(&e.len())
                    && ids.len() == e.len()
                    && e.iter().all(|b| {
                        (1..=75).contains(&chars(&b["text"]["text"]))
                            && chars(&b["value"]) <= 2000
                            && (1..=255).contains(&chars(&b["action_id"]))
                            && b.get("style").is_none_or(|s| s == "primary" || s == "danger")
                    })
            }),
            _ => false,
        };
        if !fits {
            return Some("invalid_blocks");
        }
    }
    None
}

/// How long the fake waits for things in its own helpers.
pub const SETTLE: Duration = Duration::from_millis(300);

// ---------------------------------------------------------------------------------
// Questions: choices made in select menus and checkbox groups, and the limits Slack
// puts on them (Block Kit reference: "Select menu element", "Checkboxes element",
// "Option object": 100 options a menu, 10 a checkbox group, 75 characters an option's
// text and description, 150 its value, 150 a placeholder, initial options exactly
// among the options).

impl FakeSlack {
    /// A `block_actions` envelope: `who` chose `chosen` (option objects, as the card
    /// lists them) in the select menu or checkbox group `element` of message `ts`.
    /// A `static_select` sends its one choice as `selected_option`; a checkbox group
    /// or multi-select sends the whole selection as `selected_options`.
    pub fn choice_envelope(&self, who: &Person, channel: &str, ts: &str, element: &Value, chosen: &[Value]) -> Value {
        let n = self.next();
        let trigger = format!("{n}.{n}.trigger");
        self.shared.inner().triggers.insert(trigger.clone());
        let mut action = json!({"type": element["type"], "action_id": element["action_id"], "block_id": "question.0", "action_ts": format!("1700000{n}.000")});
        if element["type"] == "static_select" {
            action["selected_option"] = chosen.first().cloned().unwrap_or(Value::Null);
        } else {
            action["selected_options"] = json!(chosen);
        }
        json!({
            "type": "interactive", "envelope_id": format!("env-choice-{n}"), "accepts_response_payload": false,
            "payload": {
                "type": "block_actions", "user": who.json(), "api_app_id": "A0APP", "token": "legacy",
                "team": {"id": TEAM, "domain": "acme"}, "trigger_id": trigger,
                "container": {"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": false},
                "channel": {"id": channel, "name": "ops"},
                "message": {"type": "message", "ts": ts, "user": BOT_USER},
                "actions": [action]
            }
        })
    }
}

/// The accessory (select menu or checkbox group) of the section `block_id`, or of
/// `block_id.{revision}` (a menu's block_id changes with what it shows).
pub fn accessory(message: &Value, block_id: &str) -> Value {
    let prefix = format!("{block_id}.");
    message["blocks"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|b| b["block_id"].as_str().is_some_and(|id| id == block_id || id.starts_with(&prefix)))
        .map(|b| b["accessory"].clone())
        .filter(|a| !a.is_null())
        .unwrap_or_else(|| panic!("no accessory in {block_id} of {message}"))
}

/// The options of `element` whose text contains one of `labels`.
pub fn options_labelled(element: &Value, labels: &[&str]) -> Vec<Value> {
    let options = element["options"].as_array().cloned().unwrap_or_default();
    labels
        .iter()
        .map(|l| options.iter().find(|o| o["text"]["text"].as_str().is_some_and(|t| t.contains(l))).cloned().unwrap_or_else(|| panic!("no option {l:?}")))
        .collect()
}

/// What Slack would refuse in a message's section accessories (select menus and
/// checkbox groups), which `message_problem` does not look at.
pub fn accessory_problem(message: &Value) -> Option<String> {
    let chars = |v: &Value| v.as_str().map_or(0, |s| s.chars().count());
    for block in message["blocks"].as_array().into_iter().flatten() {
        let Some(element) = block.get("accessory") else { continue };
        let max = match element["type"].as_str() {
            Some("static_select" | "multi_static_select") => 100,
            Some("checkboxes") => 10,
            other => return Some(format!("an accessory Slack does not take here: {other:?}")),
        };
        let options = element["options"].as_array().cloned().unwrap_or_default();
        if options.is_empty() || options.len() > max {
            return Some(format!("{} options in a {}", options.len(), element["type"]));
        }
        if !(1..=255).contains(&chars(&element["action_id"])) {
            return Some("action_id".into());
        }
        if element["type"] == "checkboxes" && element.get("placeholder").is_some() || chars(&element["placeholder"]["text"]) > 150 {
            return Some("placeholder".into());
        }
        let values: HashSet<&str> = options.iter().filter_map(|o| o["value"].as_str()).collect();
        if values.len() != options.len() {
            return Some("option values are not unique".into());
        }
        for option in &options {
            if !(1..=75).contains(&chars(&option["text"]["text"]))
                || !(1..=150).contains(&chars(&option["value"]))
                || chars(&option["description"]["text"]) > 75
            {
                return Some(format!("option out of limits: {option}"));
            }
        }
        let initial: Vec<Value> = match (element.get("initial_option"), element.get("initial_options")) {
            (Some(one), None) if element["type"] == "static_select" => vec![one.clone()],
            (None, Some(Value::Array(all))) if element["type"] != "static_select" => all.clone(),
            (None, None) => Vec::new(),
            _ => return Some("initial option(s) of the wrong kind".into()),
        };
        if initial.iter().any(|i| !options.contains(i)) {
            return Some("an initial option that is not one of the options".into());
        }
    }
    None
}
