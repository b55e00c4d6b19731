//! One way to build a bridge for a test: which chat platform it runs on, which backend
//! it talks to, which store keeps its state, and the settings on top. Every suite that
//! runs a bridge in-process starts here; suites add only their own verbs (a Telegram
//! click, a Discord modal, a Slack envelope) on top of the [`Harness`] this builds.
//!
//! ```ignore
//! let mut h = Harness::on(Chat::Telegram).agent(20).set("timeouts.grace_secs", "0").start().await;
//! h.restart().await;
//! h.shutdown().await;
//! ```

use hitl_bridge::agent_sim::SimHandle;
use hitl_bridge::app::App;
use hitl_bridge::config::Settings;
use hitl_bridge::platform::discord::settings::DiscordSettings;
use hitl_bridge::platform::mattermost::settings::MattermostSettings;
use hitl_bridge::platform::slack::settings::{SlackMode, SlackSettings};
use tokio::io::{BufReader, Empty, Sink};

use super::fake_discord::FakeDiscord;
use super::fake_mattermost::{self, FakeMattermost};
use super::fake_slack::{self, FakeSlack};
use super::fake_teams::{self, FakeTeams};
use super::fake_telegram::{self, FakeTelegram};
use super::{start_sim, wait_until};

/// The chat platform the bridge runs on, with its fake started beside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chat {
    /// The console, fed through in-memory pipes (see [`super::Bridge`]).
    Console,
    /// The real teloxide client against [`FakeTelegram`].
    Telegram,
    /// The real serenity client against [`FakeDiscord`].
    Discord,
    /// The bridge's own Web API and Socket Mode clients against [`FakeSlack`]
    /// (`slack.mode = "http"` in the settings makes it the HTTP events endpoint).
    Slack,
    /// The bridge's own Connector API client, token client and JWT-checked messaging
    /// endpoint against [`FakeTeams`].
    Teams,
    /// The bridge's own REST v4 client and integration endpoint against
    /// [`FakeMattermost`] (the endpoint on a free port, which `mattermost.public_url`
    /// names).
    Mattermost,
    /// No chat platform: the HTTP API or MCP only, or a suite that wires its own.
    Headless,
}

/// A settings change that cannot be said as a `key = value` pair (a list, an `Option`).
type Tweak = Box<dyn FnOnce(&mut Settings)>;

/// What the bridge under test is made of; [`HarnessBuilder::start`] runs it.
pub struct HarnessBuilder {
    chats: Vec<Chat>,
    /// `Some(approval_timeout)`: the reference agent is started and is the backend;
    /// `None`: the test's pairs name the backend (a real one, or none at all).
    agent_timeout: Option<u64>,
    store_url: Option<String>,
    pairs: Vec<(String, String)>,
    tweaks: Vec<Tweak>,
}

impl HarnessBuilder {
    /// One more chat platform beside the first (the HTTP API suite runs both fakes).
    pub fn and(mut self, chat: Chat) -> Self {
        self.chats.push(chat);
        self
    }

    /// The reference agent is the backend, with its `approval_timeout` in seconds.
    pub fn agent(mut self, approval_timeout_secs: u64) -> Self {
        self.agent_timeout = Some(approval_timeout_secs);
        self
    }

    /// No reference agent: the backend is whatever the test's settings name.
    pub fn no_agent(mut self) -> Self {
        self.agent_timeout = None;
        self
    }

    /// The store at `url` (PostgreSQL, or an SQLite file shared with another bridge)
    /// instead of a fresh SQLite file in the test's directory.
    pub fn store(mut self, url: &str) -> Self {
        self.store_url = Some(url.to_owned());
        self
    }

    /// One setting, as a config file's dotted key would say it; later ones win.
    pub fn set(mut self, key: &str, value: &str) -> Self {
        self.pairs.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Several settings at once; see [`HarnessBuilder::set`].
    pub fn settings(mut self, pairs: &[(&str, &str)]) -> Self {
        self.pairs.extend(pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        self
    }

    /// A change made to the loaded settings, after every pair.
    pub fn tweak(mut self, change: impl FnOnce(&mut Settings) + 'static) -> Self {
        self.tweaks.push(Box::new(change));
        self
    }

    /// The agent, the platform's fake, the directory and the settings, with the bridge
    /// not yet started (a test that needs to prepare the store first, or to start a
    /// second bridge on the same settings, boots it itself).
    pub async fn build(self) -> Harness {
        // Logs when RUST_LOG is set (e.g. RUST_LOG=hitl_bridge=debug); once per process.
        let _ = tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::from_default_env()).with_test_writer().try_init();
        let sim = match self.agent_timeout {
            Some(secs) => Some(start_sim(secs).await),
            None => None,
        };
        let telegram = if self.chats.contains(&Chat::Telegram) { Some(FakeTelegram::start().await) } else { None };
        let discord = if self.chats.contains(&Chat::Discord) { Some(FakeDiscord::start().await) } else { None };
        let slack = if self.chats.contains(&Chat::Slack) { Some(FakeSlack::start().await) } else { None };
        let teams = if self.chats.contains(&Chat::Teams) { Some(FakeTeams::start().await) } else { None };
        let mattermost = if self.chats.contains(&Chat::Mattermost) { Some(FakeMattermost::start().await) } else { None };
        let console = self.chats.contains(&Chat::Console);
        let dir = tempfile::tempdir().expect("temp dir");

        let store_url = self.store_url.unwrap_or_else(|| sqlite_in(&dir));
        let fakes =
            Fakes { telegram: telegram.as_ref(), discord: discord.as_ref(), slack: slack.as_ref(), teams: teams.as_ref(), mattermost: mattermost.as_ref() };
        let mut settings = settings_of(console, sim.as_ref(), &store_url, fakes, &self.pairs);
        for change in self.tweaks {
            change(&mut settings);
        }
        Harness { chats: self.chats, sim, telegram, discord, slack, teams, mattermost, dir, settings, app: None }
    }

    /// [`HarnessBuilder::build`], then the bridge started and ready.
    pub async fn start(self) -> Harness {
        let mut harness = self.build().await;
        harness.boot().await;
        harness
    }
}

/// A fresh SQLite file in `dir`.
fn sqlite_in(dir: &tempfile::TempDir) -> String {
    format!("sqlite://{}", dir.path().join("bridge.db").display())
}

/// The chat platforms' fakes a bridge's settings point at (none for a console bridge).
#[derive(Clone, Copy, Default)]
struct Fakes<'a> {
    telegram: Option<&'a FakeTelegram>,
    discord: Option<&'a FakeDiscord>,
    slack: Option<&'a FakeSlack>,
    teams: Option<&'a FakeTeams>,
    mattermost: Option<&'a FakeMattermost>,
}

/// The settings of a bridge on the given fakes (and the console, if `console`), whose
/// backend is `sim` (when given) and whose store is `store_url`, with `extra` on top.
fn settings_of(console: bool, sim: Option<&SimHandle>, store_url: &str, fakes: Fakes<'_>, extra: &[(String, String)]) -> Settings {
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut put = |k: &str, v: String| pairs.push((k.to_owned(), v));
    if let Some(sim) = sim {
        put("backend.url", format!("ws://{}/ws/{{session_id}}", sim.addr));
        put("backend.history_url", format!("http://{}/sessions/{{session_id}}/history", sim.addr));
        put("backend.reconnect_max_secs", "1".into());
    }
    put("store.url", store_url.to_owned());
    // Any free port: tests run in parallel.
    put("http.listen", "127.0.0.1:0".into());
    put("console.enabled", console.to_string());
    if console {
        put("console.user_name", "Thảo".into());
    }
    if let Some(fake) = fakes.telegram {
        put("telegram.enabled", "true".into());
        put("telegram.token", fake_telegram::TOKEN.into());
        put("telegram.api_url", fake.url.clone());
    }
    if let Some(fake) = fakes.discord {
        put("discord.enabled", "true".into());
        put("discord.token", "fake-bot-token".into());
        put("discord.api_url", fake.api_url());
        put("tokens.secret", "test-secret".into());
    }
    if let Some(fake) = fakes.slack {
        put("slack.enabled", "true".into());
        put("slack.bot_token", fake_slack::BOT_TOKEN.into());
        put("slack.app_token", fake_slack::APP_TOKEN.into());
        put("slack.api_url", fake.api_url());
        // Button values and modal metadata are signed tokens.
        put("tokens.secret", "test-secret".into());
    }
    if let Some(fake) = fakes.teams {
        put("teams.enabled", "true".into());
        put("teams.app_id", fake_teams::APP_ID.into());
        put("teams.app_password", fake_teams::APP_PASSWORD.into());
        put("teams.openid_metadata_url", fake.openid_url());
        put("teams.token_url", fake.token_url());
        put("teams.service_url", fake.service_url());
        put("teams.messages_listen", fake_teams::free_addr());
        put("tokens.secret", "test-secret".into());
    }
    if let Some(fake) = fakes.mattermost {
        let listen = super::slack_chat::free_addr();
        put("mattermost.enabled", "true".into());
        put("mattermost.url", fake.url());
        put("mattermost.bot_token", fake_mattermost::BOT_TOKEN.into());
        put("mattermost.public_url", format!("http://{listen}"));
        put("mattermost.listen", listen);
        put("mattermost.post_interval_ms", "0".into());
        // Button contexts and dialog states are signed tokens.
        put("tokens.secret", "test-secret".into());
    }
    pairs.extend_from_slice(extra);
    let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Settings::from_pairs(&borrowed).expect("settings")
}

/// Settings for one more console bridge on the running agent `sim`, its SQLite file in
/// `dir`, `extra` on top: for a second bridge beside a harness's (a restart, a
/// replica), or one whose backend a test puts a proxy in front of.
pub fn settings(sim: &SimHandle, dir: &tempfile::TempDir, extra: &[(&str, &str)]) -> Settings {
    let extra: Vec<(String, String)> = extra.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    settings_of(true, Some(sim), &sqlite_in(dir), Fakes::default(), &extra)
}

/// A bridge under test and everything around it. Fields are public so a suite can
/// keep what it needs in its own rig.
pub struct Harness {
    pub chats: Vec<Chat>,
    pub sim: Option<SimHandle>,
    pub telegram: Option<FakeTelegram>,
    pub discord: Option<FakeDiscord>,
    pub slack: Option<FakeSlack>,
    pub teams: Option<FakeTeams>,
    pub mattermost: Option<FakeMattermost>,
    /// Holds the SQLite file (and anything else the test keeps) for the test's life.
    pub dir: tempfile::TempDir,
    pub settings: Settings,
    /// The running bridge, if started. A console harness's bridge runs in a
    /// [`super::Bridge`] instead, which owns the console's pipes.
    pub app: Option<App>,
}

/// The console's stdin and stdout when a chat-platform bridge has no console.
pub type NoConsole = Option<(BufReader<Empty>, Sink)>;

impl Harness {
    /// A bridge on `chat`, with the reference agent (approval_timeout 20 s) and a
    /// fresh SQLite store unless told otherwise.
    pub fn on(chat: Chat) -> HarnessBuilder {
        HarnessBuilder { chats: vec![chat], agent_timeout: Some(20), store_url: None, pairs: Vec::new(), tweaks: Vec::new() }
    }

    /// The reference agent.
    pub fn sim(&self) -> &SimHandle {
        self.sim.as_ref().expect("this harness runs the reference agent")
    }

    pub fn telegram(&self) -> &FakeTelegram {
        self.telegram.as_ref().expect("this harness runs on Telegram")
    }

    pub fn discord(&self) -> &FakeDiscord {
        self.discord.as_ref().expect("this harness runs on Discord")
    }

    pub fn slack(&self) -> &FakeSlack {
        self.slack.as_ref().expect("this harness runs on Slack")
    }

    pub fn teams(&self) -> &FakeTeams {
        self.teams.as_ref().expect("this harness runs on Teams")
    }

    pub fn mattermost(&self) -> &FakeMattermost {
        self.mattermost.as_ref().expect("this harness runs on Mattermost")
    }

    /// The running bridge.
    pub fn app(&self) -> &App {
        self.app.as_ref().expect("the bridge is running")
    }

    /// Starts the bridge on the settings and waits until it is ready: on Discord's
    /// gateway, until it has identified and registered its slash commands once more;
    /// on Slack's Socket Mode, until it has opened one more connection (an envelope
    /// pushed before that would have no socket to go to).
    pub async fn boot(&mut self) {
        assert!(!self.chats.contains(&Chat::Console), "a console bridge runs in support::Bridge, which owns its pipes");
        let registrations = |fake: &FakeDiscord| fake.requests().iter().filter(|r| r.method == "PUT" && r.path.ends_with("/commands")).count();
        // Only a Discord the settings still enable, on the gateway, identifies.
        let gateway = self.settings.platforms.get::<DiscordSettings>().enabled && self.settings.platforms.get::<DiscordSettings>().gateway;
        let before = self.discord.as_ref().filter(|_| gateway).map(|fake| (fake.identifies(), registrations(fake)));
        let slack = self.settings.platforms.get::<SlackSettings>();
        let socket = slack.enabled && slack.mode == SlackMode::Socket;
        let connected = self.slack.as_ref().filter(|_| socket).map(FakeSlack::connections);
        let mattermost_on = self.settings.platforms.get::<MattermostSettings>().enabled;
        let mattermost_connected = self.mattermost.as_ref().filter(|_| mattermost_on).map(FakeMattermost::connections);
        self.app = Some(App::start(&self.settings, None as NoConsole).await.expect("bridge starts"));
        if let (Some(fake), Some((identified, registered))) = (&self.discord, before) {
            fake.wait_identified(identified + 1).await;
            wait_until(|| async move { (registrations(fake) > registered).then_some(()) }).await;
        }
        if let (Some(fake), Some(connections)) = (&self.slack, connected) {
            fake.wait_connections(connections + 1).await;
        }
        // A post made before the WebSocket is open would be heard only after a gap.
        if let (Some(fake), Some(connections)) = (&self.mattermost, mattermost_connected) {
            fake.wait_connections(connections + 1).await;
        }
    }

    /// Stops the bridge (the agent and the fakes keep running).
    pub async fn stop_bridge(&mut self) {
        if let Some(app) = self.app.take() {
            app.stop().await;
        }
    }

    /// Stops the bridge and starts it again on the same settings and store.
    pub async fn restart(&mut self) {
        self.stop_bridge().await;
        self.boot().await;
    }

    /// Stops the bridge, the fakes and the agent.
    pub async fn shutdown(mut self) {
        self.stop_bridge().await;
        if let Some(fake) = self.telegram.take() {
            fake.shutdown();
        }
        if let Some(fake) = self.discord.take() {
            fake.shutdown().await;
        }
        if let Some(fake) = self.slack.take() {
            fake.shutdown();
        }
        if let Some(fake) = self.teams.take() {
            fake.shutdown();
        }
        if let Some(fake) = self.mattermost.take() {
            fake.shutdown();
        }
        if let Some(sim) = self.sim.take() {
            sim.shutdown().await;
        }
    }
}

/// Lets a suite's rig that wraps a [`Harness`] (in field `$field`) be used as one:
/// `rig.sim()`, `rig.settings`, `rig.restart().await`.
#[macro_export]
macro_rules! wraps_harness {
    ($rig:ty, $field:ident) => {
        impl std::ops::Deref for $rig {
            type Target = $crate::support::Harness;
            fn deref(&self) -> &Self::Target {
                &self.$field
            }
        }

        impl std::ops::DerefMut for $rig {
            fn deref_mut(&mut self) -> &mut Self::Target {
                &mut self.$field
            }
        }
    };
}

/// The bridge's HTTP API as an agent calls it: with a bearer token, its answers as
/// (status, JSON), and the waits a suite needs on a request's state.
pub struct HttpApi {
    pub base: String,
    token: String,
    http: reqwest::Client,
}

impl Harness {
    /// The running bridge's HTTP API, called with `token` (one of `http.api_tokens`);
    /// taken again after a restart, which listens on another port.
    pub fn api(&self, token: &str) -> HttpApi {
        let base = format!("http://{}", self.app().http_addr().expect("the HTTP listener"));
        HttpApi { base, token: token.to_owned(), http: reqwest::Client::new() }
    }
}

impl HttpApi {
    /// `method path` with `body` as JSON; the status and the JSON answered (`null`
    /// when the body is not JSON).
    pub async fn send(&self, method: reqwest::Method, path: &str, body: Option<&serde_json::Value>) -> (axum::http::StatusCode, serde_json::Value) {
        let mut request = self.http.request(method, format!("{}{path}", self.base)).bearer_auth(&self.token);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.expect("request");
        let status = axum::http::StatusCode::from_u16(response.status().as_u16()).expect("status");
        (status, response.json().await.unwrap_or(serde_json::Value::Null))
    }

    /// Pushes a request (`POST /v1/requests`), which must be created.
    pub async fn push(&self, body: &serde_json::Value) -> serde_json::Value {
        let (status, created) = self.send(reqwest::Method::POST, "/v1/requests", Some(body)).await;
        assert_eq!(status, axum::http::StatusCode::CREATED, "{created}");
        created
    }

    /// The request's state as `GET /v1/requests/{key}` answers it now.
    pub async fn state(&self, key: &str) -> serde_json::Value {
        let (status, body) = self.send(reqwest::Method::GET, &format!("/v1/requests/{key}"), None).await;
        assert_eq!(status, axum::http::StatusCode::OK, "{body}");
        body
    }

    /// Waits until the request is no longer pending (long-poll) and returns its state.
    pub async fn decided(&self, key: &str) -> serde_json::Value {
        wait_until(|| async {
            let (_, body) = self.send(reqwest::Method::GET, &format!("/v1/requests/{key}?wait=5"), None).await;
            (body["status"] != "pending").then_some(body)
        })
        .await
    }
}
