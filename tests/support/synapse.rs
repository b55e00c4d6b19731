//! A real Matrix homeserver for the Matrix tests: Synapse (from PyPI, installed by
//! `tests/backends/install.sh synapse` into `target/backends/synapse/venv`), run in a
//! temporary directory on a free port of 127.0.0.1, and the people who use it.
//!
//! [`Synapse::start`] writes a `homeserver.yaml` (server name `localhost`, one plain
//! HTTP listener for the client API, SQLite, no registration, no federation, rate
//! limits relaxed) and waits until the server answers; dropping it kills the server.
//! [`Synapse::register`] makes an account through the shared-secret admin API and
//! returns the [`Person`] who owns it: a client of the plain client-server API
//! (reqwest, no Matrix SDK), which creates rooms, sends, replies, reacts, votes, and
//! reads a room back.
//!
//! As with the other real backends, a test that starts Synapse is `#[ignore]`d with
//! the reason, and fails when run (`-- --include-ignored`) without the install.
//!
//! The calls follow the client-server API, <https://spec.matrix.org/v1.16/client-server-api/>
//! (cited below by section), and Synapse's admin API for registration.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use hmac::{Hmac, Mac};
use reqwest::{Method, StatusCode, Url};
use serde_json::{Value, json};

use super::backends;

/// The shared secret of the admin registration API, in every generated config.
const SHARED_SECRET: &str = "hitl-bridge-tests-registration-secret";

/// How long Synapse may take to answer after it is started.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How many free ports a start tries before it gives up (see [`Synapse::start_with`]).
const PORT_ATTEMPTS: u32 = 3;

/// How the homeserver is configured.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Keep a tight message limit (`rc_message`: one a second, a burst of two) for a
    /// rate-limit test, instead of the relaxed one every other test gets. It counts
    /// every event a user sends, a room's creation and state events included; past
    /// it, Synapse answers 429 `M_LIMIT_EXCEEDED` with a `retry_after_ms` under a
    /// second (the time to the next free slot).
    pub tight_message_limit: bool,
}

/// A running Synapse, its data in a temporary directory.
pub struct Synapse {
    dir: tempfile::TempDir,
    venv: PathBuf,
    port: u16,
    child: Option<Child>,
    http: reqwest::Client,
}

impl Synapse {
    /// Starts Synapse with relaxed rate limits. `None` never happens: a missing
    /// install fails the test, as [`backends::installed`] does (the `Option` lets a
    /// caller use `?`).
    pub async fn start() -> Option<Synapse> {
        Self::start_with(Options::default()).await
    }

    /// Starts Synapse configured by `options`.
    pub async fn start_with(options: Options) -> Option<Synapse> {
        let venv = backends::installed("synapse")?;
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("log.yaml"), LOG_YAML).expect("write log.yaml");
        let mut synapse = Synapse { dir, venv, port: 0, child: None, http: reqwest::Client::new() };
        // The free port is let go before Synapse binds it, and tests running beside
        // this one pick ports too: one taken in between is not Synapse failing, so
        // another is tried.
        for attempt in 1..=PORT_ATTEMPTS {
            synapse.port = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("its address").port();
            let yaml = homeserver_yaml(synapse.dir.path(), synapse.port, options);
            std::fs::write(synapse.dir.path().join("homeserver.yaml"), yaml).expect("write homeserver.yaml");
            match synapse.try_spawn().await {
                Ok(()) => return Some(synapse),
                Err(why) if attempt < PORT_ATTEMPTS && synapse.log().contains("Address already in use") => {
                    eprintln!("Synapse could not bind port {} ({why}); trying another", synapse.port);
                    synapse.stop(libc::SIGKILL);
                }
                Err(why) => panic!("Synapse {why}; its log:\n{}", synapse.log()),
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    /// The client API's base URL, `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The server name in every user and room id: `localhost`.
    pub fn server_name(&self) -> &'static str {
        "localhost"
    }

    /// Synapse's log so far (its stdout and stderr).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("synapse.log")).unwrap_or_default()
    }

    /// Stops Synapse (SIGTERM, and waits for it to exit) and starts it again on the
    /// same port and data: rooms, accounts and access tokens survive.
    pub async fn restart(&mut self) {
        self.stop(libc::SIGTERM);
        self.spawn().await;
    }

    /// Starts `python -m synapse.app.homeserver` in its own process group (signing key
    /// generated on the first start: Synapse's default `--generate-missing-and-run`)
    /// and waits until `GET /_matrix/client/versions` answers.
    async fn spawn(&mut self) {
        if let Err(why) = self.try_spawn().await {
            panic!("Synapse {why}; its log:\n{}", self.log());
        }
    }

    /// [`Synapse::spawn`], saying why it did not start instead of panicking.
    async fn try_spawn(&mut self) -> Result<(), String> {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.dir.path().join("synapse.log")).expect("open synapse.log");
        let child = Command::new(self.venv.join("bin/python"))
            .args(["-m", "synapse.app.homeserver", "-c", "homeserver.yaml"])
            .current_dir(self.dir.path())
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log file"))
            .stderr(log)
            .spawn()
            .expect("start Synapse");
        self.child = Some(child);
        let versions = format!("{}/_matrix/client/versions", self.url());
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        loop {
            if self.http.get(&versions).send().await.is_ok_and(|r| r.status().is_success()) {
                return Ok(());
            }
            let exited = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten());
            if exited.is_some() || tokio::time::Instant::now() > deadline {
                return Err(exited.map_or(format!("did not answer within {START_TIMEOUT:?}"), |s| format!("exited ({s})")));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Sends `signal` to Synapse's process group and waits for Synapse to exit.
    fn stop(&mut self, signal: libc::c_int) {
        let Some(mut child) = self.child.take() else { return };
        let pid = child.id() as libc::pid_t;
        // SAFETY: kill(2) on the process group of a child this struct started.
        unsafe { libc::kill(-pid, signal) };
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while child.try_wait().ok().flatten().is_none() {
            if std::time::Instant::now() > deadline {
                // SAFETY: as above.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
                let _ = child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A new account, `@<localpart>:localhost` (a server admin when `admin`), made
    /// through Synapse's shared-secret registration
    /// (<https://element-hq.github.io/synapse/latest/admin_api/register_api.html>):
    /// a nonce from `GET /_synapse/admin/v1/register`, then a `POST` of the account
    /// with the HMAC-SHA1, keyed by the shared secret, of
    /// `nonce\0localpart\0password\0admin|notadmin`. The password is `pw-<localpart>`.
    pub async fn register(&self, localpart: &str, admin: bool) -> Person {
        let endpoint = format!("{}/_synapse/admin/v1/register", self.url());
        let nonce: Value = self.http.get(&endpoint).send().await.expect("GET the nonce").json().await.expect("the nonce");
        let nonce = nonce["nonce"].as_str().expect("a nonce").to_owned();
        let password = format!("pw-{localpart}");
        let mut mac = Hmac::<sha1::Sha1>::new_from_slice(SHARED_SECRET.as_bytes()).expect("any key length");
        mac.update(format!("{nonce}\0{localpart}\0{password}\0{}", if admin { "admin" } else { "notadmin" }).as_bytes());
        let body = json!({
            "nonce": nonce, "username": localpart, "password": password, "admin": admin,
            "mac": hex::encode(mac.finalize().into_bytes()),
        });
        let response = self.http.post(&endpoint).json(&body).send().await.expect("POST the registration");
        let status = response.status();
        let account: Value = response.json().await.expect("a JSON answer");
        assert!(status.is_success(), "registering {localpart} failed ({status}): {account}");
        let field = |name: &str| account[name].as_str().unwrap_or_else(|| panic!("{name} in {account}")).to_owned();
        Person {
            user_id: field("user_id"),
            password,
            access_token: field("access_token"),
            device_id: field("device_id"),
            base: Url::parse(&self.url()).expect("the server's URL"),
            http: self.http.clone(),
        }
    }
}

impl Drop for Synapse {
    fn drop(&mut self) {
        self.stop(libc::SIGKILL);
    }
}

/// The generated `homeserver.yaml`
/// (<https://element-hq.github.io/synapse/latest/usage/configuration/config_documentation.html>).
fn homeserver_yaml(dir: &std::path::Path, port: u16, options: Options) -> String {
    let dir = dir.display();
    // Every rate limiter, relaxed; rc_message tight on request.
    let relaxed = "{per_second: 1000, burst_count: 10000}";
    let message = if options.tight_message_limit { "{per_second: 1, burst_count: 2}" } else { relaxed };
    format!(
        "server_name: localhost
public_baseurl: http://127.0.0.1:{port}/
listeners:
  - port: {port}
    bind_addresses: ['127.0.0.1']
    type: http
    tls: false
    x_forwarded: false
    resources:
      - names: [client]
        compress: false
database:
  name: sqlite3
  args:
    database: {dir}/homeserver.db
log_config: {dir}/log.yaml
media_store_path: {dir}/media_store
signing_key_path: {dir}/localhost.signing.key
registration_shared_secret: {SHARED_SECRET}
macaroon_secret_key: hitl-bridge-tests-macaroon-secret
form_secret: hitl-bridge-tests-form-secret
enable_registration: false
report_stats: false
suppress_key_server_warning: true
trusted_key_servers: []
presence:
  enabled: false
rc_message: {message}
rc_registration: {relaxed}
rc_login: {{address: {relaxed}, account: {relaxed}, failed_attempts: {relaxed}}}
rc_joins: {{local: {relaxed}, remote: {relaxed}}}
rc_joins_per_room: {relaxed}
rc_invites: {{per_room: {relaxed}, per_user: {relaxed}, per_issuer: {relaxed}}}
rc_room_creation: {relaxed}
rc_admin_redaction: {relaxed}
rc_media_create: {relaxed}
rc_profile: {relaxed}
rc_user_directory: {relaxed}
rc_delayed_event_mgmt: {relaxed}
rc_reports: {relaxed}
rc_key_requests: {relaxed}
"
    )
}

/// Synapse logs to stderr (captured in `synapse.log`), at INFO: one line per request.
const LOG_YAML: &str = "version: 1
formatters:
  precise:
    format: '%(asctime)s %(levelname)s %(name)s %(request)s %(message)s'
handlers:
  console:
    class: logging.StreamHandler
    formatter: precise
root:
  level: INFO
  handlers: [console]
disable_existing_loggers: false
";

/// One person's account and client: every call is a client-server API request with
/// the person's access token. A call the server refuses fails the test, except a rate
/// limit (429 `M_LIMIT_EXCEEDED`), which is waited out for `retry_after_ms` and
/// retried, as the spec asks of a client (section "Rate limiting").
#[derive(Clone)]
pub struct Person {
    /// `@localpart:localhost`.
    pub user_id: String,
    pub password: String,
    pub access_token: String,
    pub device_id: String,
    base: Url,
    http: reqwest::Client,
}

/// A refused request: the HTTP status and the Matrix error body
/// (`{"errcode": "M_…", "error": "…"}`, section "Standard error response").
#[derive(Debug)]
pub struct Refused {
    pub status: StatusCode,
    pub body: Value,
}

impl Person {
    /// The URL of the client API path made of `segments` (each percent-encoded).
    fn endpoint(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        url.path_segments_mut().expect("an http URL").pop_if_empty().extend(["_matrix", "client", "v3"]).extend(segments);
        url
    }

    /// One request, once: the JSON answer, or what the server refused.
    async fn try_request(&self, method: Method, url: Url, body: Option<&Value>) -> Result<Value, Refused> {
        let mut request = self.http.request(method.clone(), url.clone()).bearer_auth(&self.access_token);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        if status.is_success() { Ok(body) } else { Err(Refused { status, body }) }
    }

    /// One request, retried while rate limited; any other refusal fails the test.
    async fn request(&self, method: Method, url: Url, body: Option<&Value>) -> Value {
        loop {
            match self.try_request(method.clone(), url.clone(), body).await {
                Ok(answer) => return answer,
                Err(Refused { body, .. }) if body["errcode"] == "M_LIMIT_EXCEEDED" => {
                    let wait = body["retry_after_ms"].as_u64().unwrap_or(1000);
                    tokio::time::sleep(Duration::from_millis(wait)).await;
                }
                Err(Refused { status, body }) => panic!("{} {method} {url} was refused ({status}): {body}", self.user_id),
            }
        }
    }

    /// Who the access token belongs to: `{"user_id", "device_id", "is_guest"}`
    /// (`GET /account/whoami`, section "Current account information").
    pub async fn whoami(&self) -> Value {
        self.request(Method::GET, self.endpoint(&["account", "whoami"]), None).await
    }

    /// A private room (preset `private_chat`) with `invite` invited; with
    /// `encrypted`, its initial state turns on Megolm (`m.room.encryption`,
    /// `m.megolm.v1.aes-sha2`, section "End-to-End Encryption"). Returns the room id
    /// (`POST /createRoom`, section "Creation").
    pub async fn create_room(&self, invite: &[&str], encrypted: bool) -> String {
        self.create(json!({"preset": "private_chat", "invite": invite}), encrypted).await
    }

    /// A direct chat with `other`: `is_direct` and preset `trusted_private_chat`
    /// (section "Direct Messaging"); the invite `other` receives carries
    /// `is_direct: true`, and in room version 12 (Synapse's default) `other` is one of
    /// the room's `additional_creators`, as powerful as its creator. Returns the room id.
    pub async fn create_dm(&self, other: &str, encrypted: bool) -> String {
        self.create(json!({"preset": "trusted_private_chat", "invite": [other], "is_direct": true}), encrypted).await
    }

    async fn create(&self, mut body: Value, encrypted: bool) -> String {
        if encrypted {
            body["initial_state"] = json!([{"type": "m.room.encryption", "state_key": "", "content": {"algorithm": "m.megolm.v1.aes-sha2"}}]);
        }
        let answer = self.request(Method::POST, self.endpoint(&["createRoom"]), Some(&body)).await;
        answer["room_id"].as_str().expect("room_id").to_owned()
    }

    /// Joins `room` (an id or alias) (`POST /join/{roomIdOrAlias}`, section "Joining rooms").
    pub async fn join(&self, room: &str) {
        self.request(Method::POST, self.endpoint(&["join", room]), Some(&json!({}))).await;
    }

    /// Invites `user` to `room` (`POST /rooms/{roomId}/invite`, section "Joining rooms").
    pub async fn invite(&self, room: &str, user: &str) {
        self.request(Method::POST, self.endpoint(&["rooms", room, "invite"]), Some(&json!({"user_id": user}))).await;
    }

    /// Sends one event of `event_type` to `room`, once, under a fresh transaction id;
    /// the event id, or the refusal (a rate-limit test reads its `retry_after_ms`)
    /// (`PUT /rooms/{roomId}/send/{eventType}/{txnId}`, section "Sending events to a room").
    pub async fn try_send(&self, room: &str, event_type: &str, content: &Value) -> Result<String, Refused> {
        let txn = uuid::Uuid::new_v4().simple().to_string();
        let answer = self.try_request(Method::PUT, self.endpoint(&["rooms", room, "send", event_type, &txn]), Some(content)).await?;
        Ok(answer["event_id"].as_str().expect("event_id").to_owned())
    }

    /// As [`Self::try_send`], waiting out rate limits; returns the event id.
    pub async fn send(&self, room: &str, event_type: &str, content: &Value) -> String {
        let txn = uuid::Uuid::new_v4().simple().to_string();
        let answer = self.request(Method::PUT, self.endpoint(&["rooms", room, "send", event_type, &txn]), Some(content)).await;
        answer["event_id"].as_str().expect("event_id").to_owned()
    }

    /// A plain text message (`m.room.message`, msgtype `m.text`, section "m.text").
    pub async fn send_text(&self, room: &str, body: &str) -> String {
        self.send(room, "m.room.message", &json!({"msgtype": "m.text", "body": body})).await
    }

    /// A text message replying to `to_event`: `m.relates_to.m.in_reply_to.event_id`
    /// (section "Rich replies"; no fallback quote in the body, as the spec now asks).
    pub async fn reply(&self, room: &str, to_event: &str, body: &str) -> String {
        let content = json!({"msgtype": "m.text", "body": body, "m.relates_to": {"m.in_reply_to": {"event_id": to_event}}});
        self.send(room, "m.room.message", &content).await
    }

    /// A reaction: `m.reaction` with an `m.annotation` relation to `event` and `key`
    /// (usually an emoji) (section "Event annotations and reactions").
    pub async fn react(&self, room: &str, event: &str, key: &str) -> String {
        let content = json!({"m.relates_to": {"rel_type": "m.annotation", "event_id": event, "key": key}});
        self.send(room, "m.reaction", &content).await
    }

    /// Redacts `event` (`PUT /rooms/{roomId}/redact/{eventId}/{txnId}`, section
    /// "Redactions"); returns the redaction's event id.
    pub async fn redact(&self, room: &str, event: &str) -> String {
        let txn = uuid::Uuid::new_v4().simple().to_string();
        let answer = self.request(Method::PUT, self.endpoint(&["rooms", room, "redact", event, &txn]), Some(&json!({}))).await;
        answer["event_id"].as_str().expect("event_id").to_owned()
    }

    /// A poll, as clients send it today: `org.matrix.msc3381.poll.start`
    /// (MSC3381, <https://github.com/matrix-org/matrix-spec-proposals/pull/3381>, the
    /// unstable prefix), one choice among `answers` (`(id, text)`), results shown as
    /// votes come (`org.matrix.msc3381.poll.disclosed`), with a text fallback.
    pub async fn start_poll(&self, room: &str, question: &str, answers: &[(&str, &str)]) -> String {
        let answers: Vec<Value> = answers.iter().map(|(id, text)| json!({"id": id, "org.matrix.msc1767.text": text})).collect();
        let content = json!({
            "org.matrix.msc3381.poll.start": {
                "question": {"org.matrix.msc1767.text": question},
                "kind": "org.matrix.msc3381.poll.disclosed",
                "max_selections": 1,
                "answers": answers,
            },
            "org.matrix.msc1767.text": question,
        });
        self.send(room, "org.matrix.msc3381.poll.start", &content).await
    }

    /// A vote on `poll_event`: `org.matrix.msc3381.poll.response` (MSC3381) whose
    /// `org.matrix.msc3381.poll.response.answers` holds the chosen answer ids, with an
    /// `m.reference` relation to the poll. Returns the vote's event id.
    pub async fn vote(&self, room: &str, poll_event: &str, answer_ids: &[&str]) -> String {
        let content = json!({
            "org.matrix.msc3381.poll.response": {"answers": answer_ids},
            "m.relates_to": {"rel_type": "m.reference", "event_id": poll_event},
        });
        self.send(room, "org.matrix.msc3381.poll.response", &content).await
    }

    /// The room's last 100 events, oldest first (`GET /rooms/{roomId}/messages` with
    /// `dir=b`, which answers newest first; section "Getting events for a room").
    pub async fn messages(&self, room: &str) -> Vec<Value> {
        let mut url = self.endpoint(&["rooms", room, "messages"]);
        url.query_pairs_mut().append_pair("dir", "b").append_pair("limit", "100");
        let answer = self.request(Method::GET, url, None).await;
        let mut events = answer["chunk"].as_array().cloned().unwrap_or_default();
        events.reverse();
        events
    }

    /// Polls [`Self::messages`] until an event matches `matches`, and returns it;
    /// fails the test with the room's events after `timeout`.
    pub async fn wait_for(&self, room: &str, matches: impl Fn(&Value) -> bool, timeout: Duration) -> Value {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let events = self.messages(room).await;
            if let Some(found) = events.iter().find(|e| matches(e)) {
                return found.clone();
            }
            if tokio::time::Instant::now() > deadline {
                let shown: Vec<String> = events.iter().map(Value::to_string).collect();
                panic!("no event in {room} matched within {timeout:?}; {} saw:\n{}", self.user_id, shown.join("\n"));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Sets `user`'s power level in `room`: reads `m.room.power_levels` and writes it
    /// back with `users[user] = level` (section "m.room.power_levels"; `PUT
    /// /rooms/{roomId}/state/{eventType}/{stateKey}`). In room version 12, Synapse's
    /// default, a room's creators (its creator, and in a [`Self::create_dm`] the
    /// invitee too) have unlimited power: Synapse refuses to list them (400).
    pub async fn set_power_level(&self, room: &str, user: &str, level: i64) {
        let url = self.endpoint(&["rooms", room, "state", "m.room.power_levels", ""]);
        let mut levels = self.request(Method::GET, url.clone(), None).await;
        levels["users"][user] = json!(level);
        self.request(Method::PUT, url, Some(&levels)).await;
    }
}
