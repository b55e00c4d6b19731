//! Configuration: the built-in defaults, a file and environment overrides
//! `HITL_BRIDGE__SECTION__KEY` ([`sources`]), checked once at start-up so a bad key
//! fails with a message naming it instead of surfacing later at run time.

pub mod sources;

use std::path::Path;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize, Serializer};

use crate::interaction::admission::PairingAdmins;
use crate::interaction::{AccessPolicy, Allowlist, PolicyRule, PolicySpec, TimeoutDefaults};

pub use sources::ENV_PREFIX;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub backend: BackendSettings,
    pub store: StoreSettings,
    #[serde(default)]
    pub timeouts: TimeoutSettings,
    #[serde(default)]
    pub access: AccessSettings,
    #[serde(default)]
    pub console: ConsoleSettings,
    #[serde(default)]
    pub log: LogSettings,
    #[serde(default)]
    pub tokens: TokenSettings,
    #[serde(default)]
    pub telegram: TelegramSettings,
    #[serde(default)]
    pub discord: DiscordSettings,
    #[serde(default)]
    pub http: HttpSettings,
    #[serde(default)]
    pub routing: RoutingSettings,
    /// The MCP server at `/mcp` (on with the inbound API).
    #[serde(default)]
    pub mcp: McpSettings,
    #[serde(default)]
    pub claude_code: crate::backend::claude_code::ClaudeCodeSettings,
    #[serde(default)]
    pub agno: crate::backend::agno::AgnoSettings,
    #[serde(default)]
    pub kimi: crate::backend::kimi::KimiSettings,
    /// `backend.kind = "langgraph"`: the LangGraph server.
    #[serde(default)]
    pub langgraph: crate::backend::langgraph::LangGraphSettings,
    /// Decision policies (`[[policies]]`), first match wins: see config/default.toml
    /// and [`crate::interaction::policy`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<PolicySpec>,
}

/// The bridge's HTTP listener: `/healthz`, `/readyz`, and the inbound API (`/v1/*`,
/// PROTOCOL.md §8), which is on when at least one API token is configured.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpSettings {
    pub enabled: bool,
    pub listen: String,
    /// `"name:secret"` entries. The name is what the audit log records as the agent;
    /// the secret is the bearer token and the key that signs its callbacks.
    #[serde(serialize_with = "redact_tokens")]
    pub api_tokens: Vec<String>,
    /// How long one callback POST may take.
    pub callback_timeout_secs: u64,
    /// Callback retries back off from 1 s, doubling up to this.
    pub callback_max_backoff_secs: u64,
    /// Callback attempts in flight at once; each has its own timeout, so a receiver
    /// that hangs holds one slot, not the others' callbacks.
    pub callback_concurrency: usize,
    /// Callback URLs may point at loopback, private and link-local addresses (an
    /// on-prem receiver, the tests). Off: they must be public, checked at push time and
    /// again on the address dialled.
    pub callback_allow_private: bool,
    /// Open connections per listener (lowered to fit the open-files limit; see
    /// [`crate::listener`]).
    pub max_connections: usize,
    /// A request's headers must arrive within this; also how long a keep-alive
    /// connection may sit idle.
    pub header_read_timeout_secs: u64,
    /// A request's body must arrive whole within this.
    pub body_read_timeout_secs: u64,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            listen: "127.0.0.1:8790".into(),
            api_tokens: Vec::new(),
            callback_timeout_secs: 10,
            callback_max_backoff_secs: 300,
            callback_concurrency: 16,
            callback_allow_private: false,
            max_connections: 4096,
            header_read_timeout_secs: 10,
            body_read_timeout_secs: 30,
        }
    }
}

/// The tools the MCP server can offer (`mcp.tools`).
pub const MCP_TOOLS: [&str; 3] = ["request_approval", "ask_user_question", "approval_prompt"];

/// The MCP server on the HTTP listener (`/mcp`), served when the inbound API is (at
/// least one `http.api_tokens` entry), with the same tokens.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpSettings {
    pub enabled: bool,
    /// Which of [`MCP_TOOLS`] are offered.
    pub tools: Vec<String>,
    /// Where a tool call's request is shown when it names no `targets`, written as in
    /// `routing.channels`.
    pub default_targets: Vec<String>,
}

impl Default for McpSettings {
    fn default() -> Self {
        Self { enabled: true, tools: MCP_TOOLS.iter().map(|t| (*t).to_owned()).collect(), default_targets: Vec::new() }
    }
}

/// One named API token.
#[derive(Debug, Clone)]
pub struct ApiToken {
    pub name: String,
    pub secret: SecretString,
}

impl HttpSettings {
    /// The parsed tokens; entries that do not parse were refused by `validate`.
    pub fn tokens(&self) -> Vec<ApiToken> {
        self.api_tokens.iter().filter_map(|t| parse_token(t)).collect()
    }
}

fn parse_token(entry: &str) -> Option<ApiToken> {
    let (name, secret) = entry.split_once(':')?;
    (!name.trim().is_empty() && !secret.is_empty())
        .then(|| ApiToken { name: name.trim().to_owned(), secret: SecretString::from(secret.to_owned()) })
}

fn redact_tokens<S: Serializer>(tokens: &[String], serializer: S) -> Result<S::Ok, S::Error> {
    let names: Vec<String> = tokens
        .iter()
        .map(|t| match t.split_once(':') {
            Some((name, _)) => format!("{name}:[redacted]"),
            None => "[redacted]".to_owned(),
        })
        .collect();
    names.serialize(serializer)
}

/// Where a chat turn's requests are shown besides the chat that started it
/// (OpenClaw's `target = dm | channel | both`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RoutingSettings {
    pub target: RouteTarget,
    /// Chats for `channel` and `both`: `"telegram:CHAT[/TOPIC]"`, `"discord:CHANNEL"`,
    /// `"discord:user:USER"` (a DM), `"telegram:user:USER"`, or `"console"`.
    pub channels: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteTarget {
    /// Only the chat that started the turn.
    #[default]
    Origin,
    /// Also each configured approver's DM.
    Dm,
    /// Also every chat in `routing.channels`.
    Channel,
    /// Both.
    Both,
}

/// Which agent backend serves chat sessions (`backend.kind`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendKind {
    /// The bridge's own stream protocol over WebSocket at `backend.url` (PROTOCOL.md).
    #[default]
    Stream,
    /// Claude Code, one CLI process per session (`[claude_code]`).
    ClaudeCode,
    /// Agno AgentOS over its HTTP API, section `[agno]` (docs/backends/agno.md).
    Agno,
    /// Kimi CLI's wire mode: one `kimi --wire` process per session (section `[kimi]`).
    Kimi,
    /// A LangGraph server's threads and runs (`[langgraph]`).
    Langgraph,
}

impl BackendKind {
    /// The name as written in `backend.kind` (and in policies' `backends`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stream => "stream",
            Self::ClaudeCode => "claude_code",
            Self::Agno => "agno",
            Self::Kimi => "kimi",
            Self::Langgraph => "langgraph",
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BackendSettings {
    /// Which backend serves chat sessions; each kind but `stream` has its own section.
    #[serde(default)]
    pub kind: BackendKind,
    /// The stream protocol's WebSocket URL, `{session_id}` replaced (kind `stream`).
    #[serde(default)]
    pub url: String,
    #[serde(default, serialize_with = "redact")]
    pub token: Option<SecretString>,
    #[serde(default)]
    pub history_url: Option<String>,
    #[serde(default = "default_reconnect_max")]
    pub reconnect_max_secs: u64,
    /// With several replicas on one database, one holds each session's connection under
    /// a lease renewed every third of this; another takes over when it lapses.
    #[serde(default = "default_lease")]
    pub lease_secs: u64,
    /// This replica's name in the lease table. Stable across restarts (default: the
    /// host name, as a StatefulSet pod keeps it), so a replica restarted after a crash
    /// takes its own leases back at once instead of waiting `lease_secs` for them to
    /// lapse. Distinct per replica: two live processes with one id would both deliver.
    #[serde(default)]
    pub replica_id: Option<String>,
    /// A WebSocket ping goes out this often (and right after every command, whose
    /// pong proves the backend read it).
    #[serde(default = "default_ping")]
    pub ping_secs: u64,
    /// A connection with no frame at all (not even a pong) for this long is half-open:
    /// it is dropped and reconnected, and unproven commands are sent again.
    #[serde(default = "default_read_timeout")]
    pub read_timeout_secs: u64,
    /// A session with nothing to do (no open turn, nothing pending, nothing queued)
    /// closes its connection after this long.
    #[serde(default = "default_idle_close")]
    pub idle_close_secs: u64,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StoreSettings {
    #[serde(serialize_with = "redact_url_password")]
    pub url: String,
    /// Settled requests, their callbacks' leftovers and audit entries older than this
    /// many days are pruned (hourly); 0 keeps everything.
    #[serde(default = "default_retention_days")]
    pub retention_days: u64,
}

fn default_retention_days() -> u64 {
    30
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TimeoutSettings {
    pub approval_secs: u64,
    pub question_secs: u64,
    pub grace_secs: u64,
    pub on_expiry: OnExpiry,
}

impl Default for TimeoutSettings {
    fn default() -> Self {
        Self { approval_secs: 300, question_secs: 600, grace_secs: 10, on_expiry: OnExpiry::Reject }
    }
}

impl TimeoutSettings {
    pub fn defaults(&self) -> TimeoutDefaults {
        TimeoutDefaults { approval_secs: self.approval_secs, question_secs: self.question_secs }
    }
}

/// What the bridge sends when it expires an approval itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OnExpiry {
    Reject,
    Leave,
}

/// Who may answer and who may talk; see `config/default.toml` and
/// [`crate::interaction::admission`].
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AccessSettings {
    /// `platform:user_id`.
    pub approvers: Vec<String>,
    pub approver_roles: Vec<String>,
    /// Who may talk to the agent: `platform:user_id`.
    pub users: Vec<String>,
    /// Chats where everyone may talk: `telegram:CHAT_ID`, `discord:CHANNEL_ID`,
    /// `discord:guild:GUILD_ID`.
    pub chats: Vec<String>,
    /// Discord role ids whose members may talk.
    pub roles: Vec<String>,
    /// Strangers get a code an admin approves (`hitl-bridge pair CODE`, `/pair CODE`).
    pub pairing: bool,
    /// How long a pairing code stays valid.
    pub pairing_code_secs: u64,
    /// Who may approve pairing codes with `/pair CODE`: `platform:user_id`.
    pub admins: Vec<String>,
    /// Chats where admins may use `/pair CODE` (besides their DM with the bot):
    /// `telegram:CHAT_ID`, `discord:CHANNEL_ID`.
    pub admin_chats: Vec<String>,
    /// A stranger is answered once per this many seconds per chat; their other
    /// attempts meanwhile are counted on that one audit entry. 0 answers every one.
    pub refusal_window_secs: u64,
    /// False: the requester may not decide their own turn's tool calls while
    /// approvers are configured (four eyes).
    pub self_approval: bool,
}

impl Default for AccessSettings {
    fn default() -> Self {
        Self {
            approvers: Vec::new(),
            approver_roles: Vec::new(),
            users: Vec::new(),
            chats: Vec::new(),
            roles: Vec::new(),
            pairing: false,
            pairing_code_secs: 3600,
            admins: Vec::new(),
            admin_chats: Vec::new(),
            refusal_window_secs: 600,
            self_approval: true,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConsoleSettings {
    pub enabled: bool,
    pub user_id: String,
    pub user_name: String,
}

impl Default for ConsoleSettings {
    fn default() -> Self {
        Self { enabled: false, user_id: "console".into(), user_name: "console".into() }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogSettings {
    pub filter: String,
    /// `pretty` (for people) or `json` (one object per line, for log pipelines).
    pub format: LogFormat,
}

impl Default for LogSettings {
    fn default() -> Self {
        Self { filter: "info".into(), format: LogFormat::Pretty }
    }
}

/// How log lines are written ([`crate::logging`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    #[default]
    Pretty,
    Json,
}

/// The key that signs button tokens. When unset, the bridge generates one on first
/// run and keeps it in the store, so tokens stay valid across restarts and replicas.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TokenSettings {
    #[serde(serialize_with = "redact")]
    pub secret: Option<SecretString>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelegramSettings {
    pub enabled: bool,
    /// From BotFather (env HITL_BRIDGE__TELEGRAM__TOKEN).
    #[serde(serialize_with = "redact")]
    pub token: Option<SecretString>,
    /// Bot API base URL: a self-hosted Bot API server, or the tests' fake.
    pub api_url: Option<String>,
    pub mode: TelegramMode,
    /// Public HTTPS URL Telegram posts updates to (webhook mode).
    pub webhook_url: Option<String>,
    /// Address the webhook server listens on.
    pub webhook_listen: String,
    /// Checked against `X-Telegram-Bot-Api-Secret-Token` on every webhook request.
    #[serde(serialize_with = "redact")]
    pub webhook_secret: Option<SecretString>,
    /// In groups, answer every message instead of only those addressed to the bot.
    pub respond_to_all: bool,
    /// Locale for every chat (`en`, `vi`, `zh`); else per chat, else the user's language.
    pub locale: Option<String>,
    /// Per-chat locale: chat id → `en` | `vi` | `zh`.
    pub chat_locales: std::collections::BTreeMap<String, String>,
    /// Keep to Telegram's rate limits (30 msg/s, 1/s per chat, 20/min per group);
    /// off only against a fake Bot API (benchmarks). 429s are waited out either way.
    pub rate_limits: bool,
}

impl Default for TelegramSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            token: None,
            api_url: None,
            mode: TelegramMode::Polling,
            webhook_url: None,
            webhook_listen: "0.0.0.0:8443".into(),
            webhook_secret: None,
            respond_to_all: false,
            locale: None,
            chat_locales: Default::default(),
            rate_limits: true,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TelegramMode {
    Polling,
    Webhook,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct DiscordSettings {
    pub enabled: bool,
    /// Bot token (env HITL_BRIDGE__DISCORD__TOKEN).
    #[serde(serialize_with = "redact")]
    pub token: Option<SecretString>,
    /// REST base URL (and gateway lookup): the tests' fake, or a proxy.
    pub api_url: Option<String>,
    /// Channel ids whose every message goes to the agent (DMs and mentions always do).
    pub channels: Vec<String>,
    /// Open a thread for each new conversation.
    pub thread_per_session: bool,
    /// Application public key: enables the HTTP interactions endpoint.
    pub public_key: Option<String>,
    /// Address the interactions endpoint listens on.
    pub interactions_listen: String,
    /// Fixed locale (`en`, `vi`, `zh`); else the interaction's locale.
    pub locale: Option<String>,
    /// Connect the gateway (messages, slash commands, clicks). A replica that only
    /// serves the HTTP interactions endpoint turns it off.
    pub gateway: bool,
    /// The guild whose roles count for clicks and messages in DMs (a DM carries no
    /// member roles): the bridge looks the member up there.
    pub guild_id: Option<String>,
}

impl Default for DiscordSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            token: None,
            api_url: None,
            channels: Vec::new(),
            thread_per_session: false,
            public_key: None,
            interactions_listen: "0.0.0.0:8080".into(),
            locale: None,
            gateway: true,
            guild_id: None,
        }
    }
}

fn default_reconnect_max() -> u64 {
    30
}

impl BackendSettings {
    /// `replica_id`, else the host name (stable across restarts, as a StatefulSet pod's
    /// is), else a name for this process alone (a restart after a crash then waits
    /// `lease_secs` for its leases).
    pub fn replica_id(&self) -> String {
        if let Some(id) = self.replica_id.as_deref().map(str::trim).filter(|id| !id.is_empty()) {
            return id.to_owned();
        }
        let from_file = |path: &str| std::fs::read_to_string(path).ok().map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
        std::env::var("HOSTNAME")
            .ok()
            .filter(|h| !h.trim().is_empty())
            .or_else(|| from_file("/proc/sys/kernel/hostname"))
            .or_else(|| from_file("/etc/hostname"))
            .unwrap_or_else(|| format!("process-{}", uuid::Uuid::new_v4().simple()))
    }
}

fn default_lease() -> u64 {
    15
}

fn default_ping() -> u64 {
    10
}

fn default_read_timeout() -> u64 {
    30
}

fn default_idle_close() -> u64 {
    60
}

fn redact_url_password<S: Serializer>(url: &str, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&url_without_password(url))
}

/// `url` with the password of its user info (`postgres://user:secret@host/db`) replaced
/// by `[redacted]`, for printing and error messages.
pub fn url_without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let Some((user_info, host)) = authority.rsplit_once('@') else { return url.to_owned() };
    match user_info.split_once(':') {
        Some((user, _password)) => format!("{scheme}://{user}:[redacted]@{host}{path}"),
        None => url.to_owned(),
    }
}

fn redact<S: Serializer>(secret: &Option<SecretString>, serializer: S) -> Result<S::Ok, S::Error> {
    match secret {
        Some(s) if !s.expose_secret().is_empty() => serializer.serialize_str("[redacted]"),
        _ => serializer.serialize_none(),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("configuration: {0}")]
    Load(#[from] config::ConfigError),
    #[error("configuration key `{key}`: {reason}")]
    Invalid { key: &'static str, reason: String },
    /// A `[[policies]]` entry; the error names the key (`policies[0].quorum`).
    #[error("configuration key {0}")]
    Policy(#[from] crate::interaction::policy::PolicyError),
}

impl Settings {
    /// Loads the built-in defaults, then `path` (without it, `config/default.toml` in
    /// the working directory if present), then the environment, and checks the result.
    pub fn load(path: Option<&Path>) -> Result<Self, ConfigError> {
        let mut builder = config::Config::builder().add_source(sources::defaults());
        if let Some(file) = sources::file_layer(path) {
            builder = builder.add_source(config::File::from(file.as_path()).required(true));
        }
        Self::from_config(builder.add_source(Self::environment()).build()?)
    }

    /// As [`Settings::load`], with `overrides` (dotted key, value) winning over every
    /// source: what a command fixes whatever the environment says (`demo`).
    pub fn load_with_overrides(path: Option<&Path>, overrides: &[(&str, &str)]) -> Result<Self, ConfigError> {
        let mut builder = config::Config::builder().add_source(sources::defaults());
        if let Some(file) = sources::file_layer(path) {
            builder = builder.add_source(config::File::from(file.as_path()).required(true));
        }
        builder = builder.add_source(Self::environment());
        for (key, value) in overrides {
            builder = builder.set_override(*key, *value)?;
        }
        Self::from_config(builder.build()?)
    }

    /// Which source set each value that differs from the built-in default (for
    /// `check-config`).
    pub fn provenance(path: Option<&Path>) -> Result<Vec<(String, sources::Source)>, ConfigError> {
        sources::provenance(path, Self::environment())
    }

    /// Builds settings from in-memory overrides on top of defaults (tests and `demo`).
    pub fn from_pairs(pairs: &[(&str, &str)]) -> Result<Self, ConfigError> {
        let mut builder = config::Config::builder().add_source(sources::defaults());
        for (key, value) in pairs {
            builder = builder.set_override(*key, *value)?;
        }
        Self::from_config(builder.build()?)
    }

    fn environment() -> config::Environment {
        config::Environment::with_prefix(ENV_PREFIX)
            .prefix_separator("__")
            .separator("__")
            .try_parsing(true)
            .list_separator(",")
            .with_list_parse_key("access.approvers")
            .with_list_parse_key("access.approver_roles")
            .with_list_parse_key("access.users")
            .with_list_parse_key("access.chats")
            .with_list_parse_key("access.roles")
            .with_list_parse_key("access.admin_chats")
            .with_list_parse_key("access.admins")
            .with_list_parse_key("discord.channels")
            .with_list_parse_key("http.api_tokens")
            .with_list_parse_key("routing.channels")
            .with_list_parse_key("mcp.tools")
            .with_list_parse_key("mcp.default_targets")
    }

    fn from_config(config: config::Config) -> Result<Self, ConfigError> {
        let settings: Settings = config.try_deserialize()?;
        settings.validate()?;
        Ok(settings)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key, reason: &str| Err(ConfigError::Invalid { key, reason: reason.into() });
        let url = &self.backend.url;
        if self.backend.kind == BackendKind::Stream {
            if !(url.starts_with("ws://") || url.starts_with("wss://")) {
                return invalid("backend.url", "must start with ws:// or wss://");
            }
            if !url.contains("{session_id}") {
                return invalid("backend.url", "must contain {session_id}");
            }
        }
        // A backend's own section is checked only when that backend is selected.
        let backend_problem: Option<(&'static str, String)> = match self.backend.kind {
            BackendKind::Stream => None,
            BackendKind::Langgraph => self.langgraph.problem().map(|(key, reason)| (key, reason.to_owned())),
            BackendKind::Kimi => self.kimi.problem().map(|(key, reason)| (key, reason.to_owned())),
            BackendKind::Agno => self.agno.problem().map(|(key, reason)| (key, reason.to_owned())),
            BackendKind::ClaudeCode => self.claude_code.validate().err(),
        };
        if let Some((key, reason)) = backend_problem {
            return Err(ConfigError::Invalid { key, reason });
        }
        if let Some(h) = &self.backend.history_url
            && !(h.starts_with("http://") || h.starts_with("https://"))
        {
            return invalid("backend.history_url", "must start with http:// or https://");
        }
        if self.backend.lease_secs < 3 {
            return invalid("backend.lease_secs", "must be at least 3");
        }
        if self.backend.reconnect_max_secs == 0 {
            return invalid("backend.reconnect_max_secs", "must be at least 1");
        }
        let store = &self.store.url;
        if !["sqlite:", "postgres://", "postgresql://"].iter().any(|p| store.starts_with(p)) {
            return invalid("store.url", "must start with sqlite: or postgres://");
        }
        if self.timeouts.approval_secs == 0 || self.timeouts.question_secs == 0 {
            return invalid("timeouts.approval_secs", "timeouts must be at least 1 second");
        }
        if self.telegram.enabled && self.telegram.token.as_ref().is_none_or(|t| t.expose_secret().is_empty()) {
            return invalid("telegram.token", "is required when telegram.enabled = true (env HITL_BRIDGE__TELEGRAM__TOKEN)");
        }
        if self.telegram.enabled && self.telegram.mode == TelegramMode::Webhook && self.telegram.webhook_url.is_none() {
            return invalid("telegram.webhook_url", "is required when telegram.mode = \"webhook\"");
        }
        // BotFather's tokens are `<bot id>:<secret>`; anything else is a paste gone wrong.
        if self.telegram.enabled
            && let Some(token) = &self.telegram.token
            && !token.expose_secret().split_once(':').is_some_and(|(id, secret)| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) && !secret.is_empty())
        {
            return invalid("telegram.token", "is not a bot token: BotFather gives <bot id>:<secret>, e.g. 123456789:AAE…");
        }
        // Telegram only calls https webhooks; plain http is allowed on loopback, for tests.
        if let Some(url) = &self.telegram.webhook_url
            && !url.starts_with("https://")
            && !["http://127.0.0.1", "http://localhost", "http://[::1]"].iter().any(|p| url.starts_with(p))
        {
            return invalid("telegram.webhook_url", "must be an https:// URL: Telegram only calls https webhooks");
        }
        if self.discord.enabled && self.discord.token.as_ref().is_none_or(|t| t.expose_secret().is_empty()) {
            return invalid("discord.token", "is required when discord.enabled = true (env HITL_BRIDGE__DISCORD__TOKEN)");
        }
        for (key, locale) in [("telegram.locale", &self.telegram.locale), ("discord.locale", &self.discord.locale)] {
            if let Some(l) = locale
                && crate::platform::locale::Locale::from_code(l).is_none()
            {
                return invalid(key, "must be en, vi or zh");
            }
        }
        for approver in &self.access.approvers {
            if self.parse_approver(approver).is_none() {
                return invalid("access.approvers", &format!("`{approver}` is not of the form platform:user_id"));
            }
        }
        for user in &self.access.users {
            if self.parse_approver(user).is_none() {
                return invalid("access.users", &format!("`{user}` is not of the form platform:user_id"));
            }
        }
        if let Err(entry) = Allowlist::parse_chats(&self.access.chats) {
            return invalid("access.chats", &format!("`{entry}` is not telegram:CHAT_ID, discord:CHANNEL_ID or discord:guild:GUILD_ID"));
        }
        for admin in &self.access.admins {
            if self.parse_approver(admin).is_none() {
                return invalid("access.admins", &format!("`{admin}` is not of the form platform:user_id"));
            }
        }
        if let Err(entry) = Allowlist::parse_chats(&self.access.admin_chats) {
            return invalid("access.admin_chats", &format!("`{entry}` is not telegram:CHAT_ID or discord:CHANNEL_ID"));
        }
        if self.access.pairing_code_secs < 60 {
            return invalid("access.pairing_code_secs", "must be at least 60");
        }
        if self.discord.guild_id.as_deref().is_some_and(|g| g.is_empty() || !g.bytes().all(|b| b.is_ascii_digit())) {
            return invalid("discord.guild_id", "must be a guild id (digits)");
        }
        let mut names = std::collections::BTreeSet::new();
        for token in &self.http.api_tokens {
            match parse_token(token) {
                Some(t) if names.insert(t.name.clone()) => {}
                Some(t) => return invalid("http.api_tokens", &format!("the name `{}` is used twice", t.name)),
                None => return invalid("http.api_tokens", "each entry must be \"name:secret\" with both parts non-empty"),
            }
        }
        if self.http.enabled && self.http.listen.parse::<std::net::SocketAddr>().is_err() {
            return invalid("http.listen", "must be an address like 127.0.0.1:8790");
        }
        for tool in &self.mcp.tools {
            if !MCP_TOOLS.contains(&tool.as_str()) {
                return invalid("mcp.tools", &format!("`{tool}` is not a tool; the tools are {}", MCP_TOOLS.join(", ")));
            }
        }
        for target in &self.mcp.default_targets {
            if crate::engine::routing::parse_chat(target).is_none() {
                return invalid("mcp.default_targets", &format!("`{target}` is not platform:chat (e.g. telegram:-100123/7, discord:1100…, discord:user:80…, console)"));
            }
        }
        for channel in &self.routing.channels {
            if crate::engine::routing::parse_chat(channel).is_none() {
                return invalid("routing.channels", &format!("`{channel}` is not platform:chat (e.g. telegram:-100123/7, discord:1100…, discord:user:80…, console)"));
            }
        }
        self.try_policies()?;
        Ok(())
    }

    fn parse_approver(&self, entry: &str) -> Option<(String, String)> {
        let (platform, id) = entry.split_once(':')?;
        let known = ["telegram", "discord", "console"].contains(&platform);
        (known && !id.is_empty()).then(|| (platform.to_owned(), id.to_owned()))
    }

    /// The `[[policies]]` entries, validated, in file order (entries that do not
    /// validate were refused by `validate`).
    pub fn policies(&self) -> Vec<PolicyRule> {
        self.try_policies().unwrap_or_default()
    }

    fn try_policies(&self) -> Result<Vec<PolicyRule>, ConfigError> {
        let is_target = |t: &str| crate::engine::routing::parse_chat(t).is_some();
        let is_backend = |b: &str| {
            use serde::de::value::{Error, StrDeserializer};
            b == "http" || BackendKind::deserialize(StrDeserializer::<Error>::new(b)).is_ok()
        };
        let mut rules = Vec::with_capacity(self.policies.len());
        for (i, spec) in self.policies.iter().enumerate() {
            rules.push(spec.to_rule(i, &is_target, &is_backend)?);
        }
        Ok(rules)
    }

    pub fn access_policy(&self) -> AccessPolicy {
        AccessPolicy {
            approver_users: self.access.approvers.iter().filter_map(|a| self.parse_approver(a)).collect(),
            approver_roles: self.access.approver_roles.clone(),
            four_eyes: !self.access.self_approval,
        }
    }

    /// Who may talk to the agent (entries that do not parse were refused by `validate`).
    pub fn allowlist(&self) -> Allowlist {
        let (chats, guilds) = Allowlist::parse_chats(&self.access.chats).unwrap_or_default();
        Allowlist {
            users: self.access.users.iter().filter_map(|u| self.parse_approver(u)).collect(),
            chats,
            guilds,
            roles: self.access.roles.clone(),
            approvers: self.access_policy(),
            pairing: self.access.pairing,
        }
    }

    /// Who may approve pairing codes with `/pair CODE`, and in which chats besides
    /// their direct chat with the bot.
    pub fn pairing_admins(&self) -> PairingAdmins {
        PairingAdmins {
            admins: self.access.admins.iter().filter_map(|a| self.parse_approver(a)).collect(),
            admin_chats: Allowlist::parse_chats(&self.access.admin_chats).map(|(chats, _)| chats).unwrap_or_default(),
        }
    }

    /// The effective configuration as pretty JSON, secrets redacted.
    pub fn redacted_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("(cannot print settings: {e})"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_load_and_validate() {
        let s = Settings::from_pairs(&[]).unwrap();
        assert_eq!(s.store.url, "sqlite://data/hitl-bridge.db");
        assert_eq!(s.store.retention_days, 30);
        assert_eq!(s.timeouts.on_expiry, OnExpiry::Reject);
        assert_eq!(s.timeouts.grace_secs, 10);
    }

    #[test]
    fn a_store_password_is_never_printed() {
        for (url, shown) in [
            ("postgres://bridge:pa:ss@db:5432/hitl?sslmode=require", "postgres://bridge:[redacted]@db:5432/hitl?sslmode=require"),
            ("postgres://bridge:p%40ss@db/hitl", "postgres://bridge:[redacted]@db/hitl"),
            ("postgres://bridge@db/hitl", "postgres://bridge@db/hitl"),
            ("sqlite://data/hitl-bridge.db", "sqlite://data/hitl-bridge.db"),
            ("sqlite://data/a@b.db", "sqlite://data/a@b.db"),
            ("not a url", "not a url"),
        ] {
            assert_eq!(url_without_password(url), shown);
        }
        let s = Settings::from_pairs(&[("store.url", "postgres://bridge:hunter2@db/hitl")]).unwrap();
        assert!(!s.redacted_json().contains("hunter2"));
        assert!(s.redacted_json().contains("postgres://bridge:[redacted]@db/hitl"));
    }

    #[test]
    fn secrets_are_redacted() {
        let s = Settings::from_pairs(&[("backend.token", "s3cret-token")]).unwrap();
        let printed = s.redacted_json();
        assert!(!printed.contains("s3cret-token"));
        assert!(printed.contains("[redacted]"));
        assert!(!format!("{s:?}").contains("s3cret-token"));
    }

    #[test]
    fn bad_keys_are_named() {
        let err = Settings::from_pairs(&[("backend.url", "http://x/{session_id}")]).unwrap_err();
        assert!(err.to_string().contains("backend.url"), "{err}");
        let err = Settings::from_pairs(&[("timeouts.on_expiry", "explode")]).unwrap_err();
        assert!(err.to_string().contains("on_expiry"), "{err}");
        let err = Settings::from_pairs(&[("access.approvers", "[\"nobody\"]")]);
        assert!(err.is_err());
        let err = Settings::from_pairs(&[("backend.colour", "blue")]).unwrap_err();
        assert!(err.to_string().contains("colour"), "{err}");
    }

    #[test]
    fn a_token_without_its_bot_id_and_a_plain_http_webhook_are_refused() {
        let key = |pairs: &[(&str, &str)]| match Settings::from_pairs(pairs) {
            Err(ConfigError::Invalid { key, .. }) => Some(key),
            _ => None,
        };
        let on = ("telegram.enabled", "true");
        assert_eq!(key(&[on, ("telegram.token", "AAEhBOweik6ad")]), Some("telegram.token"));
        assert_eq!(key(&[on, ("telegram.token", "bot:AAE")]), Some("telegram.token"));
        assert_eq!(key(&[on, ("telegram.token", "123456:")]), Some("telegram.token"));
        assert_eq!(key(&[on, ("telegram.token", "123456:AAE")]), None);
        let hook = |url| key(&[on, ("telegram.token", "1:x"), ("telegram.mode", "webhook"), ("telegram.webhook_url", url)]);
        assert_eq!(hook("http://bot.example.com/hook"), Some("telegram.webhook_url"));
        assert_eq!(hook("https://bot.example.com/hook"), None);
        assert_eq!(hook("http://127.0.0.1:8443/hook"), None, "loopback, for tests");
    }

    #[test]
    fn api_tokens_are_named_and_redacted() {
        let mut s = Settings::from_pairs(&[]).unwrap();
        s.http.api_tokens = vec!["ci:s3cret".into(), "cron:other".into()];
        s.validate().unwrap();
        let tokens = s.http.tokens();
        assert_eq!(tokens.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["ci", "cron"]);
        assert_eq!(tokens[0].secret.expose_secret(), "s3cret");
        let printed = s.redacted_json();
        assert!(!printed.contains("s3cret") && printed.contains("ci:[redacted]"), "{printed}");
        for bad in [vec!["nocolon"], vec![":secret"], vec!["a:1", "a:2"]] {
            s.http.api_tokens = bad.into_iter().map(String::from).collect();
            let err = s.validate().unwrap_err();
            assert!(err.to_string().contains("http.api_tokens"), "{err}");
        }
        s.http.api_tokens.clear();
        s.routing.channels = vec!["irc:#ops".into()];
        let err = s.validate().unwrap_err();
        assert!(err.to_string().contains("routing.channels"), "{err}");
        s.routing.channels = vec!["telegram:-1001/7".into(), "discord:user:80".into(), "console".into()];
        s.validate().unwrap();
    }

    /// The commented `[[policies]]` examples of config/default.toml, uncommented: each
    /// runs from its `# [[policies]]` line to the next bare `#`.
    fn policy_examples() -> String {
        let mut out = String::new();
        let mut inside = false;
        for line in include_str!("../config/default.toml").lines() {
            inside = (inside || line == "# [[policies]]") && line != "#";
            if inside {
                out.push_str(line.strip_prefix("# ").unwrap_or(line));
                out.push('\n');
            }
        }
        out
    }

    fn with_policies(toml: &str) -> Result<Settings, ConfigError> {
        let config = config::Config::builder()
            .add_source(config::File::from_str(include_str!("../config/default.toml"), config::FileFormat::Toml))
            .add_source(config::File::from_str(toml, config::FileFormat::Toml))
            .build()?;
        Settings::from_config(config)
    }

    #[test]
    fn the_documented_policy_examples_parse_to_what_they_say() {
        use crate::interaction::policy::{EscalationStep, Fallback, FallbackDecision, Matcher, Mention, Policy, RememberArgs, RememberScope, StepAction};
        let examples = policy_examples();
        assert_eq!(examples.matches("[[policies]]").count(), 2, "{examples}");
        let s = with_policies(&examples).unwrap();
        let rules = s.policies();
        assert_eq!(rules.len(), 2);
        // "run_migration needs 2 of the DBA role, remind after 5 min, escalate to
        // #oncall after 15, reject after 30".
        assert_eq!(rules[0].matcher, Matcher { tools: vec!["run_migration".into()], ..Matcher::default() });
        assert_eq!(
            rules[0].policy,
            Policy {
                name: "migrations".into(),
                approvers: vec![],
                approver_roles: vec!["1200000000000000000".into()],
                quorum: 2,
                remember: vec![],
                remember_args: RememberArgs::Same,
                escalation: vec![
                    EscalationStep { after_secs: 300, action: StepAction::Remind { mention: Mention::Role { role_id: "1200000000000000000".into() } } },
                    EscalationStep { after_secs: 900, action: StepAction::ShowIn { target: "discord:1300000000000000000".into() } },
                ],
                fallback: Some(Fallback { after_secs: 1800, decision: FallbackDecision::Reject }),
            }
        );
        assert_eq!(rules[1].matcher.tools, ["read_*", "list_*"]);
        assert_eq!(rules[1].policy.name, "policies[1]");
        assert_eq!(rules[1].policy.remember, [RememberScope::Session]);
        assert_eq!(rules[1].policy.quorum, 1);
        // Printed back by check-config.
        assert!(s.redacted_json().contains("\"run_migration\""));
        // The shipped file itself has no policy.
        assert!(Settings::from_pairs(&[]).unwrap().policies().is_empty());
    }

    #[test]
    fn bad_policies_are_refused_naming_the_key() {
        for (toml, expected) in [
            ("[[policies]]\ntools = [\"t\"]\nquorum = 0", "`policies[0].quorum`: must be between 1 and 50, not 0"),
            ("[[policies]]\ntools = [\"a\"]\n[[policies]]\ntools = [\"t\"]\nbackends = [\"ftp\"]", "`policies[1].backends[0]`: `ftp` is not a backend kind"),
            ("[[policies]]\ntools = [\"t\"]\nescalation = [{ after = \"5m\", show_in = \"irc:#ops\" }]", "`policies[0].escalation[0].show_in`: `irc:#ops` is not platform:chat"),
            ("[[policies]]\ntools = [\"t\"]\nescalation = [{ after = \"15m\", remind = \"approvers\" }, { after = \"5m\", fallback = \"reject\" }]", "`policies[0].escalation[1].after`: must come after"),
            ("[[policies]]\nquorum = 2", "`policies[0].tools`: must list at least one"),
        ] {
            let err = with_policies(toml).unwrap_err().to_string();
            assert!(err.starts_with(&format!("configuration key {expected}")), "{toml}: {err}");
        }
        let err = with_policies("[[policies]]\ntools = [\"t\"]\nquorom = 2").unwrap_err().to_string();
        assert!(err.contains("quorom"), "{err}");
        for backend in ["stream", "claude_code", "agno", "kimi", "langgraph", "http"] {
            with_policies(&format!("[[policies]]\ntools = [\"t\"]\nbackends = [\"{backend}\"]")).unwrap();
        }
        with_policies("[[policies]]\ntools = [\"t\"]\nescalation = [{ after = 60, show_in = \"telegram:-1001/7\" }]").unwrap();
    }

    #[test]
    fn approvers_become_the_access_policy() {
        let mut s = Settings::from_pairs(&[]).unwrap();
        s.access.approvers = vec!["telegram:42".into()];
        s.access.approver_roles = vec!["777".into()];
        let p = s.access_policy();
        assert_eq!(p.approver_users, vec![("telegram".to_string(), "42".to_string())]);
        assert_eq!(p.approver_roles, vec!["777".to_string()]);
        assert!(!p.four_eyes, "self approval is allowed by default");
        s.access.self_approval = false;
        assert!(s.access_policy().four_eyes);
    }

    #[test]
    fn access_keys_are_checked_and_become_the_allowlist() {
        let mut s = Settings::from_pairs(&[]).unwrap();
        assert!(!s.access.pairing && s.access.self_approval && s.access.pairing_code_secs == 3600);
        assert_eq!(s.access.refusal_window_secs, 600);
        s.access.users = vec!["telegram:1".into()];
        s.access.chats = vec!["telegram:-100123".into(), "discord:guild:700".into()];
        s.access.roles = vec!["900".into()];
        s.access.admin_chats = vec!["telegram:-100999".into()];
        s.access.admins = vec!["telegram:3003".into()];
        s.validate().unwrap();
        let l = s.allowlist();
        assert_eq!(l.users, vec![("telegram".to_string(), "1".to_string())]);
        assert_eq!(l.chats, vec![("telegram".to_string(), "-100123".to_string())]);
        assert_eq!(l.guilds, vec!["700".to_string()]);
        let admins = s.pairing_admins();
        assert_eq!(admins.admin_chats, vec![("telegram".to_string(), "-100999".to_string())]);
        assert_eq!(admins.admins, vec![("telegram".to_string(), "3003".to_string())]);
        for (key, bad) in [("access.users", "nobody"), ("access.chats", "irc:#ops"), ("access.admins", "3003"), ("access.admin_chats", "telegram:x")] {
            let mut t = s.clone();
            match key {
                "access.users" => t.access.users = vec![bad.into()],
                "access.chats" => t.access.chats = vec![bad.into()],
                "access.admins" => t.access.admins = vec![bad.into()],
                _ => t.access.admin_chats = vec![bad.into()],
            }
            let err = t.validate().unwrap_err();
            assert!(err.to_string().contains(key) && err.to_string().contains(bad), "{err}");
        }
    }
}
