//! A fake Microsoft Teams for the tests: one axum server that is, at once,
//!
//! - **the OpenID metadata and its JWKS** (`GET /openid`, `GET /keys`): one RSA key,
//!   `kid` [`KEY_ID`], endorsing `msteams`, whose private half is committed beside
//!   this file (`teams_test_key.der`, PKCS#1, made for these tests and nothing else);
//!   the fetches are counted. Shape as in learn.microsoft.com, "Authentication with
//!   the Bot Connector API", step 2 ("Get the list of valid signing keys": the
//!   document's `jwks_uri`, keys with `endorsements`);
//! - **the token endpoint** (`POST /token`): the client-credentials grant of
//!   [`APP_ID`] and [`APP_PASSWORD`] with scope `https://api.botframework.com/.default`
//!   answers a token; a wrong secret is Entra's `401 invalid_client` with
//!   `AADSTS7000215`, an unknown client `400 unauthorized_client` with
//!   `AADSTS700016` (the codes of learn.microsoft.com, "Microsoft Entra
//!   authentication and authorization error codes");
//! - **the Connector API** on `{url}/` as every activity's `serviceUrl`
//!   (learn.microsoft.com, "API reference for the Bot Framework Connector service"):
//!   send (`POST /v3/conversations/{id}/activities`), reply (`POST
//!   …/activities/{activityId}`), update (`PUT`), delete (`DELETE`) and create a 1:1
//!   conversation (`POST /v3/conversations`), and the members of a team or channel
//!   page by page (`GET /v3/conversations/{id}/pagedmembers?pageSize=&continuationToken=`,
//!   answering `members` with each one's `aadObjectId` and a `continuationToken` while
//!   more remain, as `ChannelServiceController.GetConversationPagedMembersAsync` and
//!   `TeamsPagedMembersResult` describe; an unknown conversation is `404
//!   ConversationNotFound`; the test can hold the answers), each checking the bearer token it issued
//!   (401 otherwise) and recording the exact JSON. Teams' per-bot per-conversation
//!   limits (7 operations in 1 s, 8 in 2 s, 60 in 30 s; learn.microsoft.com, "Optimize your bot
//!   with rate limiting and best practices in Teams") are enforced: an operation past
//!   them is `429` with `Retry-After: 1` and counted as a pace violation. The test
//!   can also ask for the next N calls to be 429 (a storm), an activity over 28 KB is
//!   `413 MessageSizeTooBig` ([`MESSAGE_BYTES`]), and an update of an
//!   activity the fake never saw is `404 ActivityNotFound`;
//! - **Teams itself**, sending activities to the bridge's `/teams/messages`, signed
//!   RS256 by the key above with `iss` `https://api.botframework.com`, `aud` the app
//!   id, `exp` an hour on and `serviceUrl` this fake, or with whatever claims the test
//!   wants wrong.

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use super::wait_until;

pub const APP_ID: &str = "2f1c9a64-8d0e-4c3b-9a51-7e2d4b6c8f10";
pub const APP_PASSWORD: &str = "fake-teams-secret";
pub const TENANT: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";
pub const KEY_ID: &str = "fake-teams-key-1";
/// A channel the bot is in.
pub const OPS: &str = "19:0a1b2c3d4e5f@thread.tacv2";
/// The most an activity may take: "the message size limit is 28 KB"
/// (learn.microsoft.com, "Format your bot messages"); more is `413 MessageSizeTooBig`.
pub const MESSAGE_BYTES: usize = 28 * 1024;
/// The modulus and exponent of the committed key, base64url (the JWKS's `n`, `e`).
const KEY_N: &str = "hRFyhD9UBosLhls2luZBZk77WwL5pkX8aZv0VsbGjgCLgfGaDRZwBf5Cs2z0E6_DHdr9gW-NCkuzV0MFLr87yU_YboGi9SY9AX067IjSTI43scN6loR1yxznwnvkrZ8ZGuLroaaPwF2_8EBxPSOfG90OUYbh2Yodwkx6ZmkAmzq9RaTvcBl66SFPysffhIVi7lXGjMC1jEm8bwNFTsN8_8oDkjXfxa7TE2AVy4HiCcitndRsoKy4spKgZElFxFfMy0eYgVrdO5wFLdlh2TJcIWNzITg2KET1CkCKBaLgQ_1A57QU3P9tO9ppdzYUHUqaT8vHPnarTGsGqYrAfygH_Q";
const KEY_E: &str = "AQAB";

/// The committed test key's private half.
pub fn signing_key() -> jsonwebtoken::EncodingKey {
    jsonwebtoken::EncodingKey::from_rsa_der(include_bytes!("teams_test_key.der"))
}

/// One Connector API call as the bridge made it.
#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    /// The conversation, and the activity when the path names one.
    pub conversation: String,
    pub activity: Option<String>,
    pub body: Value,
    pub status: u16,
    pub at: Instant,
    /// The id the fake gave a new activity.
    pub created: Option<String>,
}

/// A person in Teams.
#[derive(Debug, Clone)]
pub struct Person {
    /// Their Entra object id: their address, `teams:<aad>`.
    pub aad: String,
    /// Their per-bot id (`29:…`).
    pub id: String,
    pub name: String,
}

impl Person {
    pub fn new(aad: &str, name: &str) -> Self {
        Self { aad: aad.into(), id: format!("29:1{}", &aad[..8]), name: name.into() }
    }
    fn json(&self) -> Value {
        json!({ "id": self.id, "name": self.name, "aadObjectId": self.aad })
    }
}

#[derive(Default)]
struct Inner {
    calls: Vec<Call>,
    /// (conversation, activity id) → the activity as last sent or updated.
    activities: HashMap<(String, String), Value>,
    /// Tokens handed out.
    tokens: Vec<String>,
    token_requests: u32,
    key_fetches: u32,
    /// The next this-many Connector calls are answered 429.
    storm: u32,
    /// Operations per conversation, for Teams' windows.
    operations: HashMap<String, VecDeque<Instant>>,
    pace_violations: u32,
    /// Invoke answers and statuses the bridge gave, in order.
    answers: Vec<(u16, Value)>,
    /// Each team's or channel's members (Entra object ids).
    members: HashMap<String, Vec<String>>,
    /// Whether member lists are held unanswered, and how many asks wait.
    hold_members: bool,
    members_held: u32,
    /// The `kid` the JWKS publishes the key under; `None`: [`KEY_ID`].
    published_kid: Option<String>,
}

pub struct FakeTeams {
    pub url: String,
    inner: Arc<Mutex<Inner>>,
    next_id: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
    http: reqwest::Client,
    /// Activities sent without waiting ([`FakeTeams::send_activity`]): activity id →
    /// when it was sent, and when the bridge answered it.
    sent: Arc<Mutex<HashMap<String, Instant>>>,
    answered: Arc<Mutex<HashMap<String, Instant>>>,
    /// The good token of each `serviceUrl` and when it expires (Unix seconds): signed
    /// once and sent with every activity until it nears its end, so a burst costs the
    /// fake no RSA signature per activity (which, in one process with the bridge, would
    /// be CPU taken from it). The bridge checks every token in full either way.
    good_tokens: Arc<Mutex<HashMap<String, (String, u64)>>>,
}

#[derive(Clone)]
struct AppState {
    url: String,
    inner: Arc<Mutex<Inner>>,
    next_id: Arc<AtomicU64>,
}

impl FakeTeams {
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let inner = Arc::new(Mutex::new(Inner::default()));
        let next_id = Arc::new(AtomicU64::new(1_700_000_000_000));
        let state = AppState { url: url.clone(), inner: inner.clone(), next_id: next_id.clone() };
        let app = Router::new()
            .route("/openid", get(openid))
            .route("/keys", get(keys))
            .route("/token", post(token))
            .route("/v3/conversations", post(create_conversation))
            .route("/v3/conversations/{conversation}/activities", post(send))
            .route("/v3/conversations/{conversation}/pagedmembers", get(paged_members))
            .route("/v3/conversations/{conversation}/activities/{activity}", post(reply).put(update).delete(delete))
            .with_state(state);
        let task = tokio::spawn(async move {
            let _ = axum::serve(super::without_nagle(listener), app).await;
        });
        FakeTeams {
            url,
            inner,
            next_id,
            task,
            http: reqwest::Client::new(),
            sent: Arc::new(Mutex::new(HashMap::new())),
            answered: Arc::new(Mutex::new(HashMap::new())),
            good_tokens: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The service URL every activity carries (ends in `/`).
    pub fn service_url(&self) -> String {
        format!("{}/", self.url)
    }

    pub fn openid_url(&self) -> String {
        format!("{}/openid", self.url)
    }

    pub fn token_url(&self) -> String {
        format!("{}/token", self.url)
    }

    pub fn calls(&self) -> Vec<Call> {
        self.lock().calls.clone()
    }

    pub fn key_fetches(&self) -> u32 {
        self.lock().key_fetches
    }

    pub fn token_requests(&self) -> u32 {
        self.lock().token_requests
    }

    pub fn pace_violations(&self) -> u32 {
        self.lock().pace_violations
    }

    /// The next `n` Connector calls are answered 429 `Retry-After: 1`.
    pub fn storm(&self, n: u32) {
        self.lock().storm = n;
    }

    /// The JWKS publishes the key under `kid` from now on (Microsoft rotating its keys:
    /// activities are signed as [`KEY_ID`] whatever is published).
    pub fn publish_key_as(&self, kid: &str) {
        self.lock().published_kid = Some(kid.to_owned());
    }

    /// `conversation` (a team or channel) has these members (Entra object ids).
    pub fn members(&self, conversation: &str, aad_ids: &[&str]) {
        self.lock().members.insert(conversation.to_owned(), aad_ids.iter().map(|a| (*a).to_owned()).collect());
    }

    /// Member lists are held unanswered (`true`) until released (`false`).
    pub fn hold_members(&self, hold: bool) {
        self.lock().hold_members = hold;
    }

    /// How many member lists are waiting, held.
    pub fn members_held(&self) -> u32 {
        self.lock().members_held
    }

    /// The activity `id` in `conversation` as it stands.
    pub fn activity(&self, conversation: &str, id: &str) -> Option<Value> {
        self.lock().activities.get(&(conversation.to_owned(), id.to_owned())).cloned()
    }

    /// Waits until a call matches `probe`, and returns it.
    pub async fn wait_call(&self, probe: impl Fn(&Call) -> bool) -> Call {
        wait_until(|| async { self.calls().into_iter().find(|c| c.status < 300 && probe(c)) }).await
    }

    /// Waits for a card (an Adaptive Card attachment) posted to `conversation`: its
    /// activity id and card.
    pub async fn wait_card(&self, conversation: &str) -> (String, Value) {
        let call = self.wait_call(|c| c.method == "POST" && c.conversation == conversation && c.created.is_some() && card_of(&c.body).is_some()).await;
        (call.created.expect("an id"), card_of(&call.body).expect("a card"))
    }

    /// The card activity `id` in `conversation` shows now.
    pub fn card_now(&self, conversation: &str, id: &str) -> Value {
        self.activity(conversation, id).and_then(|a| card_of(&a)).expect("a card")
    }

    /// Waits until some message text posted to `conversation` contains `needle`.
    pub async fn wait_text(&self, conversation: &str, needle: &str) -> String {
        wait_until(|| async {
            self.calls()
                .into_iter()
                .filter(|c| c.conversation == conversation && c.status < 300)
                .find_map(|c| c.body["text"].as_str().filter(|t| t.contains(needle)).map(str::to_owned))
        })
        .await
    }

    /// A signed token for an activity at `service_url`, with `claims` changed.
    pub fn token_for(&self, service_url: &str, change: impl FnOnce(&mut Value)) -> String {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        let mut claims = json!({
            "iss": "https://api.botframework.com", "aud": APP_ID, "exp": now + 3600, "nbf": now - 60,
            "serviceUrl": service_url,
        });
        change(&mut claims);
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
        header.kid = Some(KEY_ID.into());
        jsonwebtoken::encode(&header, &claims, &signing_key()).expect("sign")
    }

    /// A good token for an activity at `service_url`: the one signed before while it
    /// has more than five minutes left, else a new one.
    pub fn good_token(&self, service_url: &str) -> String {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        let mut tokens = self.good_tokens.lock().unwrap();
        if let Some((token, expires)) = tokens.get(service_url)
            && *expires > now + 300
        {
            return token.clone();
        }
        let token = self.token_for(service_url, |_| {});
        tokens.insert(service_url.to_owned(), (token.clone(), now + 3600));
        token
    }

    /// A new activity id, as Teams numbers messages.
    pub fn new_id(&self) -> String {
        self.next_id.fetch_add(1, Ordering::Relaxed).to_string()
    }

    /// An activity from `person` in `conversation` (`conversationType` `kind`).
    pub fn activity_from(&self, person: &Person, conversation: &str, kind: &str, fields: Value) -> Value {
        let mut activity = json!({
            "type": "message", "id": self.new_id(), "timestamp": "2026-11-29T10:00:00Z", "channelId": "msteams",
            "serviceUrl": self.service_url(), "from": person.json(),
            "conversation": { "id": conversation, "conversationType": kind, "tenantId": TENANT },
            "recipient": { "id": format!("28:{APP_ID}"), "name": "HITL" },
            "channelData": { "tenant": { "id": TENANT } },
        });
        for (k, v) in fields.as_object().expect("fields") {
            activity[k] = v.clone();
        }
        activity
    }

    /// Posts `activity` to the bridge's endpoint at `endpoint` with `token` (or a
    /// good one): the status and the body answered.
    pub async fn post_with(&self, endpoint: &str, activity: &Value, token: Option<&str>) -> (u16, Value) {
        let mut request = self.http.post(endpoint).json(activity);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.expect("post to the bridge");
        let status = response.status().as_u16();
        let body = response.json().await.unwrap_or(Value::Null);
        self.lock().answers.push((status, body.clone()));
        (status, body)
    }

    /// Posts `activity` signed as Teams signs it.
    pub async fn post(&self, endpoint: &str, activity: &Value) -> (u16, Value) {
        self.try_post(endpoint, activity).await.expect("post to the bridge")
    }

    /// Posts `activity` signed as Teams signs it without waiting for the answer (from
    /// a Tokio runtime): when it was sent and when answered are kept by its id
    /// ([`FakeTeams::sent_at`], [`FakeTeams::answered_at`]).
    pub fn send_activity(&self, endpoint: &str, activity: &Value) {
        let id = activity["id"].as_str().unwrap_or_default().to_owned();
        let token = self.good_token(activity["serviceUrl"].as_str().unwrap_or_default());
        let request = self.http.post(endpoint).json(activity).bearer_auth(token);
        let (sent, answered) = (self.sent.clone(), self.answered.clone());
        tokio::spawn(async move {
            sent.lock().unwrap().insert(id.clone(), Instant::now());
            if request.send().await.is_ok_and(|r| r.status().is_success()) {
                answered.lock().unwrap().insert(id, Instant::now());
            }
        });
    }

    /// When each activity of [`FakeTeams::send_activity`] was sent, by id.
    pub fn sent_at(&self) -> HashMap<String, Instant> {
        self.sent.lock().unwrap().clone()
    }

    /// When the bridge answered each of them, by id.
    pub fn answered_at(&self) -> HashMap<String, Instant> {
        self.answered.lock().unwrap().clone()
    }

    /// How many Connector API calls arrived so far.
    pub fn call_count(&self) -> usize {
        self.lock().calls.len()
    }

    /// Posts `activity` signed as Teams signs it: `None` when the bridge closed the
    /// connection without an answer (it was killed).
    pub async fn try_post(&self, endpoint: &str, activity: &Value) -> Option<(u16, Value)> {
        let service_url = activity["serviceUrl"].as_str().unwrap_or_default().to_owned();
        let token = self.good_token(&service_url);
        let response = self.http.post(endpoint).json(activity).bearer_auth(token).send().await.ok()?;
        let status = response.status().as_u16();
        let body = response.json().await.unwrap_or(Value::Null);
        self.lock().answers.push((status, body.clone()));
        Some((status, body))
    }

    /// `person` clicks the `Action.Execute` titled `title` on `card` (activity
    /// `card_id` in `conversation`), with `inputs` typed: the invoke's answer.
    #[allow(clippy::too_many_arguments)] // a click is all of these
    pub async fn click(
        &self,
        endpoint: &str,
        person: &Person,
        conversation: &str,
        card_id: &str,
        card: &Value,
        title: &str,
        nth: usize,
        inputs: Value,
    ) -> (u16, Value) {
        let invoke = self.click_activity(person, conversation, card_id, card, title, nth, inputs);
        self.post(endpoint, &invoke).await
    }

    /// The `adaptiveCard/action` invoke of `person` clicking `title` (see [`Self::click`]),
    /// unsent: one activity, to deliver once or again.
    #[allow(clippy::too_many_arguments)] // a click is all of these
    pub fn click_activity(&self, person: &Person, conversation: &str, card_id: &str, card: &Value, title: &str, nth: usize, inputs: Value) -> Value {
        let action = nth_execute(card, title, nth).unwrap_or_else(|| panic!("no button {title:?} #{nth} on {card:#}"));
        let mut data = action["data"].clone();
        for (k, v) in inputs.as_object().expect("inputs") {
            data[k] = v.clone();
        }
        let kind = if conversation.starts_with("a:") { "personal" } else { "channel" };
        self.activity_from(
            person,
            conversation,
            kind,
            json!({
                "type": "invoke", "name": "adaptiveCard/action", "replyToId": card_id,
                "value": { "action": { "type": "Action.Execute", "verb": action["verb"], "data": data }, "trigger": "manual" },
            }),
        )
    }

    pub fn shutdown(self) {
        self.task.abort();
    }
}

/// The Adaptive Card an activity carries.
pub fn card_of(activity: &Value) -> Option<Value> {
    activity["attachments"].as_array()?.iter().find(|a| a["contentType"] == "application/vnd.microsoft.card.adaptive").map(|a| a["content"].clone())
}

/// Every `Action.Execute` of a card, wherever it sits (an action set, a shown card).
pub fn executes(card: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    walk(card, &mut out);
    out
}

fn walk(value: &Value, out: &mut Vec<Value>) {
    match value {
        Value::Object(map) => {
            if map.get("type").and_then(Value::as_str) == Some("Action.Execute") {
                out.push(value.clone());
            }
            map.values().for_each(|v| walk(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
        _ => {}
    }
}

/// Every input of a card (`Input.*`), wherever it sits, in order.
pub fn inputs(card: &Value) -> Vec<Value> {
    fn walk(value: &Value, out: &mut Vec<Value>) {
        match value {
            Value::Object(map) => {
                if map.get("type").and_then(Value::as_str).is_some_and(|t| t.starts_with("Input.")) {
                    out.push(value.clone());
                }
                map.values().for_each(|v| walk(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(card, &mut out);
    out
}

/// The `nth` `Action.Execute` titled exactly `title` (the buttons of action `nth`).
pub fn nth_execute(card: &Value, title: &str, nth: usize) -> Option<Value> {
    executes(card).into_iter().filter(|a| a["title"] == title).nth(nth)
}

/// Every text a card shows (text blocks and text runs), joined by newlines.
pub fn card_text(card: &Value) -> String {
    let mut out = Vec::new();
    fn texts(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let (Some(kind), Some(text)) = (map.get("type").and_then(Value::as_str), map.get("text").and_then(Value::as_str))
                    && (kind == "TextBlock" || kind == "TextRun")
                {
                    out.push(text.to_owned());
                }
                map.values().for_each(|v| texts(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| texts(v, out)),
            _ => {}
        }
    }
    texts(card, &mut out);
    out.join("\n")
}

async fn openid(State(state): State<AppState>) -> Response {
    axum::Json(json!({
        "issuer": "https://api.botframework.com",
        "authorization_endpoint": "https://invalid.botframework.com",
        "jwks_uri": format!("{}/keys", state.url),
        "id_token_signing_alg_values_supported": ["RS256"],
        "token_endpoint_auth_methods_supported": ["private_key_jwt"],
    }))
    .into_response()
}

async fn keys(State(state): State<AppState>) -> Response {
    let mut inner = state.inner.lock().unwrap();
    inner.key_fetches += 1;
    let kid = inner.published_kid.clone().unwrap_or_else(|| KEY_ID.to_owned());
    axum::Json(json!({ "keys": [{ "kty": "RSA", "use": "sig", "kid": kid, "n": KEY_N, "e": KEY_E, "endorsements": ["msteams"] }] })).into_response()
}

async fn token(State(state): State<AppState>, body: String) -> Response {
    let form: HashMap<String, String> = url::form_urlencoded::parse(body.as_bytes()).into_owned().collect();
    let mut inner = state.inner.lock().unwrap();
    inner.token_requests += 1;
    let field = |k: &str| form.get(k).map(String::as_str).unwrap_or_default();
    if field("grant_type") != "client_credentials" || field("scope") != "https://api.botframework.com/.default" {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(
                json!({"error": "invalid_request", "error_description": "AADSTS900144: The request body must contain the following parameter: 'grant_type'."}),
            ),
        )
            .into_response();
    }
    if field("client_id") != APP_ID {
        return (StatusCode::BAD_REQUEST, axum::Json(json!({"error": "unauthorized_client", "error_description": format!("AADSTS700016: Application with identifier '{}' was not found in the directory 'Bot Framework'.", field("client_id"))}))).into_response();
    }
    if field("client_secret") != APP_PASSWORD {
        return (StatusCode::UNAUTHORIZED, axum::Json(json!({"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID."}))).into_response();
    }
    let token = format!("fake-teams-token-{}", inner.tokens.len() + 1);
    inner.tokens.push(token.clone());
    axum::Json(json!({ "token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": token })).into_response()
}

/// Checks the token and Teams' windows, records the call: `Err` is the answer to give.
fn admit(state: &AppState, headers: &HeaderMap, method: &str, conversation: &str, activity: Option<&str>, body: &Value) -> Result<usize, Box<Response>> {
    let mut inner = state.inner.lock().unwrap();
    let bearer = headers.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer ")).unwrap_or_default().to_owned();
    let record = |inner: &mut Inner, status: u16| {
        inner.calls.push(Call {
            method: method.into(),
            conversation: conversation.into(),
            activity: activity.map(str::to_owned),
            body: body.clone(),
            status,
            at: Instant::now(),
            created: None,
        })
    };
    if !inner.tokens.contains(&bearer) {
        record(&mut inner, 401);
        return Err(Box::new((StatusCode::UNAUTHORIZED, axum::Json(json!({"message": "Authorization has been denied for this request."}))).into_response()));
    }
    if serde_json::to_vec(body).map(|b| b.len()).unwrap_or(0) > MESSAGE_BYTES {
        record(&mut inner, 413);
        return Err(Box::new(
            (StatusCode::PAYLOAD_TOO_LARGE, axum::Json(json!({"error": {"code": "MessageSizeTooBig", "message": "Message size too big"}}))).into_response(),
        ));
    }
    if inner.storm > 0 {
        inner.storm -= 1;
        record(&mut inner, 429);
        return Err(Box::new(too_many()));
    }
    // Creating a 1:1 chat is no operation in a thread: the per-thread windows count
    // what is done in a conversation. (Teams' global 50 requests a second per app and
    // tenant is not modelled.)
    if conversation.is_empty() {
        record(&mut inner, 200);
        return Ok(inner.calls.len() - 1);
    }
    let now = Instant::now();
    let log = inner.operations.entry(conversation.to_owned()).or_default();
    log.retain(|t| now.duration_since(*t) < Duration::from_secs(30));
    let within = |secs: u64| log.iter().filter(|t| now.duration_since(**t) < Duration::from_secs(secs)).count();
    if within(1) >= 7 || within(2) >= 8 || within(30) >= 60 {
        inner.pace_violations += 1;
        record(&mut inner, 429);
        return Err(Box::new(too_many()));
    }
    log.push_back(now);
    record(&mut inner, 200);
    Ok(inner.calls.len() - 1)
}

fn too_many() -> Response {
    let mut response =
        (StatusCode::TOO_MANY_REQUESTS, axum::Json(json!({"error": {"code": "TooManyRequests", "message": "Too many requests"}}))).into_response();
    response.headers_mut().insert("retry-after", "1".parse().unwrap());
    response
}

async fn send(State(state): State<AppState>, Path(conversation): Path<String>, headers: HeaderMap, axum::Json(body): axum::Json<Value>) -> Response {
    let call = match admit(&state, &headers, "POST", &conversation, None, &body) {
        Ok(call) => call,
        Err(answer) => return *answer,
    };
    let id = state.next_id.fetch_add(1, Ordering::Relaxed).to_string();
    let mut inner = state.inner.lock().unwrap();
    inner.calls[call].created = Some(id.clone());
    inner.activities.insert((conversation, id.clone()), body);
    (StatusCode::CREATED, axum::Json(json!({ "id": id }))).into_response()
}

async fn reply(
    State(state): State<AppState>,
    Path((conversation, parent)): Path<(String, String)>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let call = match admit(&state, &headers, "POST", &conversation, Some(&parent), &body) {
        Ok(call) => call,
        Err(answer) => return *answer,
    };
    let id = state.next_id.fetch_add(1, Ordering::Relaxed).to_string();
    let mut inner = state.inner.lock().unwrap();
    inner.calls[call].created = Some(id.clone());
    inner.activities.insert((conversation, id.clone()), body);
    (StatusCode::CREATED, axum::Json(json!({ "id": id }))).into_response()
}

async fn update(
    State(state): State<AppState>,
    Path((conversation, id)): Path<(String, String)>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    if let Err(answer) = admit(&state, &headers, "PUT", &conversation, Some(&id), &body) {
        return *answer;
    }
    let mut inner = state.inner.lock().unwrap();
    let key = (conversation, id.clone());
    if !inner.activities.contains_key(&key) {
        if let Some(call) = inner.calls.last_mut() {
            call.status = 404;
        }
        return (StatusCode::NOT_FOUND, axum::Json(json!({"error": {"code": "ActivityNotFound", "message": "Activity not found"}}))).into_response();
    }
    inner.activities.insert(key, body);
    axum::Json(json!({ "id": id })).into_response()
}

async fn delete(State(state): State<AppState>, Path((conversation, id)): Path<(String, String)>, headers: HeaderMap) -> Response {
    if let Err(answer) = admit(&state, &headers, "DELETE", &conversation, Some(&id), &Value::Null) {
        return *answer;
    }
    state.inner.lock().unwrap().activities.remove(&(conversation, id));
    StatusCode::OK.into_response()
}

async fn paged_members(
    State(state): State<AppState>,
    Path(conversation): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    if let Err(answer) = admit(&state, &headers, "GET", &conversation, None, &json!(query)) {
        return *answer;
    }
    let held = {
        let mut inner = state.inner.lock().unwrap();
        if inner.hold_members {
            inner.members_held += 1;
        }
        inner.hold_members
    };
    if held {
        while state.inner.lock().unwrap().hold_members {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        state.inner.lock().unwrap().members_held -= 1;
    }
    let Some(all) = state.inner.lock().unwrap().members.get(&conversation).cloned() else {
        return (StatusCode::NOT_FOUND, axum::Json(json!({"error": {"code": "ConversationNotFound", "message": "Conversation not found."}}))).into_response();
    };
    let size = query.get("pageSize").and_then(|s| s.parse::<usize>().ok()).unwrap_or(50).clamp(1, 500);
    let from = query.get("continuationToken").and_then(|s| s.parse::<usize>().ok()).unwrap_or(0);
    let page: Vec<Value> = all
        .iter()
        .skip(from)
        .take(size)
        .map(|aad| json!({"id": format!("29:1{}", &aad[..8]), "name": aad, "aadObjectId": aad, "userRole": "user", "tenantId": TENANT}))
        .collect();
    let mut answer = json!({ "members": page });
    if from + size < all.len() {
        answer["continuationToken"] = json!((from + size).to_string());
    }
    axum::Json(answer).into_response()
}

async fn create_conversation(State(state): State<AppState>, headers: HeaderMap, axum::Json(body): axum::Json<Value>) -> Response {
    if let Err(answer) = admit(&state, &headers, "POST", "", None, &body) {
        return *answer;
    }
    let Some(member) = body["members"][0]["id"].as_str() else {
        return (StatusCode::BAD_REQUEST, axum::Json(json!({"error": {"code": "BadArgument", "message": "members are required"}}))).into_response();
    };
    (StatusCode::CREATED, axum::Json(json!({ "id": format!("a:dm-{member}") }))).into_response()
}

/// A free local address for the bridge's endpoint.
pub fn free_addr() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").to_string()
}
