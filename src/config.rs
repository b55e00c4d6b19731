//! Configuration: the built-in defaults, a file and environment overrides
//! `HITL_BRIDGE__SECTION__KEY` ([`sources`]), checked once at start-up so a bad key
//! fails with a message naming it, where it was set (the variable, or the file and
//! line) and the nearest known key, instead of surfacing later at run time.

pub mod access;
pub mod sources;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::engine::EngineConfig;
use crate::interaction::admission::PairingAdmins;
use crate::interaction::policy::Known;
use crate::interaction::{AccessPolicy, Allowlist, PolicyRule, PolicySpec, TimeoutDefaults};

pub use access::AccessSettings;
pub use sources::ENV_PREFIX;

// Each section is owned by the part of the bridge it configures; the names stay
// reachable here, where the whole file is assembled.
pub use crate::backend::descriptor::BackendSections;
pub use crate::backend::settings::BackendSettings;
pub use crate::engine::OnExpiry;
pub use crate::engine::routing::{RouteTarget, RoutingSettings};
pub use crate::listener::settings::{ApiToken, HttpSettings};
pub use crate::logging::{LogFormat, LogSettings};
pub use crate::mcp::settings::{MCP_TOOLS, McpSettings};
pub use crate::platform::descriptor::Sections;
pub use crate::platform::kit::token::TokenSettings;
pub use crate::redact::url_without_password;
pub use crate::store::settings::StoreSettings;
pub use crate::web::WebSettings;

/// The whole configuration. Unknown keys are refused before it is read (see
/// [`Settings::load_from`]): the chat platforms' and the backends' sections are not
/// fields here but [`Sections`] and [`BackendSections`], each read by its platform's
/// or backend's descriptor.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Settings {
    pub backend: BackendSettings,
    pub store: StoreSettings,
    #[serde(default)]
    pub timeouts: TimeoutSettings,
    #[serde(default)]
    pub access: AccessSettings,
    #[serde(default)]
    pub log: LogSettings,
    #[serde(default)]
    pub tokens: TokenSettings,
    #[serde(default)]
    pub http: HttpSettings,
    #[serde(default)]
    pub routing: RoutingSettings,
    /// The MCP server at `/mcp` (on with the inbound API).
    #[serde(default)]
    pub mcp: McpSettings,
    /// The web inbox at `/inbox` (off by default).
    #[serde(default)]
    pub web: WebSettings,
    /// Decision policies (`[[policies]]`), first match wins: see config/default.toml
    /// and [`crate::interaction::policy`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<PolicySpec>,
    /// Each chat platform's section (`[telegram]`, `[discord]`, `[console]`, …), in
    /// the registry's order, read by the platform's own descriptor.
    #[serde(skip)]
    pub platforms: Sections,
    /// Each backend's section (`[<kind>]`, for a backend with keys of its own), in the registry's order,
    /// read by the backend's own descriptor; only `backend.kind`'s is checked and used.
    #[serde(skip)]
    pub backends: BackendSections,
    /// Not a key: set by `demo`, whose terminal approves pairing codes, so an empty
    /// `access.admins` there is no cause for a warning.
    #[serde(skip)]
    pub pairing_approved_at_terminal: bool,
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

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("configuration: {0}")]
    Load(#[from] config::ConfigError),
    #[error("configuration key `{key}`: {reason}")]
    Invalid { key: &'static str, reason: String },
    /// A `[[policies]]` entry; the error names the key (`policies[0].quorum`).
    #[error("configuration key {0}")]
    Policy(#[from] crate::interaction::policy::PolicyError),
    /// A variable or a file line that names no key: a typo, named where it was made.
    #[error("configuration: {at} sets `{key}`, which is not a configuration key{}", hint(nearest.as_deref(), at))]
    UnknownKey { at: String, key: String, nearest: Option<String> },
    /// A platform enabled in a build compiled without it.
    #[error(
        "configuration: {platform}.enabled is true, but this build has no {platform}: it was compiled without the cargo feature `{feature}` (build with default features, or with `--features {feature}`)"
    )]
    NotBuilt { platform: &'static str, feature: &'static str },
    /// Another error, with where the value at fault was set.
    #[error("{message} (set by {at})")]
    Located { at: String, message: String },
}

/// "; did you mean …?", in the form the mistake was made in (a variable or a key).
fn hint(nearest: Option<&str>, at: &str) -> String {
    match nearest {
        Some(key) if at.starts_with(ENV_PREFIX) => format!("; did you mean `{key}` ({ENV_PREFIX}__{})?", key.replace('.', "__").to_uppercase()),
        Some(key) => format!("; did you mean `{key}`?"),
        None => String::new(),
    }
}

/// The keys `check-config` prints, as `section.key`; keys holding a table of free
/// names (`telegram.chat_locales`, `kimi.env`) are in `tables`.
#[derive(Debug, Clone, Default)]
pub struct KnownKeys {
    pub keys: Vec<String>,
    pub tables: Vec<String>,
    pub sections: Vec<String>,
}

impl KnownKeys {
    /// Read from the built-in defaults, so a new key is known the moment it exists.
    pub fn new() -> Result<Self, ConfigError> {
        let value = Settings::from_pairs(&[])?.to_json();
        let mut known = KnownKeys { sections: vec!["policies".into()], ..KnownKeys::default() };
        for (section, members) in value.as_object().into_iter().flatten() {
            known.sections.push(section.clone());
            for (key, member) in members.as_object().into_iter().flatten() {
                let dotted = format!("{section}.{key}");
                if member.is_object() {
                    known.tables.push(dotted.clone());
                }
                known.keys.push(dotted);
            }
        }
        known.leave_out(crate::platform::registry::LEFT_OUT);
        Ok(known)
    }

    /// Platforms compiled out of this build: each one's section may stay in a file,
    /// every key of it read and ignored ([`refuse_left_out`] refuses enabling one).
    fn leave_out(&mut self, left_out: &[(&str, &str)]) {
        for (platform, _) in left_out {
            self.sections.push((*platform).to_owned());
            self.tables.push((*platform).to_owned());
        }
    }

    /// `key` is a key, or a name inside a table key, or inside `[[policies]]` (which
    /// its own rules check).
    pub fn knows(&self, key: &str) -> bool {
        let section = key.split(['.', '[']).next().unwrap_or(key);
        section == "policies" || self.keys.iter().any(|k| k == key) || self.tables.iter().any(|t| key.starts_with(&format!("{t}.")))
    }

    /// The nearest key to an unknown one: among the keys, or the sections when it
    /// names a section.
    pub fn nearest(&self, key: &str) -> Option<String> {
        let pool = if key.contains('.') { &self.keys } else { &self.sections };
        sources::nearest(key, pool)
    }
}

/// Refuses a platform of `left_out` (compiled out of this build) that `config` enables,
/// naming the cargo feature that brings it.
fn refuse_left_out(config: &config::Config, left_out: &[(&'static str, &'static str)]) -> Result<(), ConfigError> {
    match left_out.iter().find(|(platform, _)| config.get_bool(&format!("{platform}.enabled")).unwrap_or(false)) {
        Some(&(platform, feature)) => Err(ConfigError::NotBuilt { platform, feature }),
        None => Ok(()),
    }
}

/// The keys that hold a list: every key whose default is an array, read off the
/// defaults like [`KnownKeys`] (platforms' and backends' sections included), so a new
/// list key is known the moment it exists. From the environment each takes one item
/// or several separated by commas (`HITL_BRIDGE__DISCORD__CHANNELS=123456789012345678`
/// or `=1100,1200`), always as text: a lone id is never read as a number.
pub fn list_keys() -> &'static [String] {
    // Read without the environment (`from_pairs`), which is what asks.
    static KEYS: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
        let defaults = Settings::from_pairs(&[]).expect("the built-in defaults load (every test loads them)").to_json();
        let mut keys = Vec::new();
        for (section, members) in defaults.as_object().into_iter().flatten() {
            for (key, member) in members.as_object().into_iter().flatten() {
                if member.is_array() {
                    keys.push(format!("{section}.{key}"));
                }
            }
        }
        keys
    });
    &KEYS
}

impl Settings {
    /// Loads the built-in defaults, then `path` (without it, `config/default.toml` in
    /// the working directory if present), then the environment, and checks the result.
    pub fn load(path: Option<&Path>) -> Result<Self, ConfigError> {
        Self::load_with_overrides(path, &[])
    }

    /// As [`Settings::load`], with `overrides` (dotted key, value) winning over every
    /// source: what a command fixes whatever the environment says (`demo`).
    pub fn load_with_overrides(path: Option<&Path>, overrides: &[(&str, &str)]) -> Result<Self, ConfigError> {
        Self::load_from(path, sources::Environment::from_process(), overrides)
    }

    /// As [`Settings::load_with_overrides`], with the environment given.
    pub fn load_from(path: Option<&Path>, environment: sources::Environment, overrides: &[(&str, &str)]) -> Result<Self, ConfigError> {
        let file = sources::file_layer(path);
        let file_text = file.as_deref().and_then(|f| std::fs::read_to_string(f).ok());
        let known = KnownKeys::new()?;
        for (variable, key) in environment.keys() {
            if !known.knows(&key) {
                return Err(ConfigError::UnknownKey { at: variable.to_owned(), nearest: known.nearest(&key), key });
            }
        }
        if let (Some(file), Some(text)) = (&file, &file_text)
            && file.extension().is_none_or(|e| e == "toml")
        {
            for (key, line) in sources::file_keys(text) {
                let is_section = !key.contains('.');
                if (is_section && known.sections.contains(&key)) || (!is_section && known.knows(&key)) {
                    continue;
                }
                return Err(ConfigError::UnknownKey { at: format!("{} line {line}", file.display()), nearest: known.nearest(&key), key });
            }
        }
        let mut builder = config::Config::builder().add_source(sources::defaults());
        if let Some(file) = &file {
            builder = builder.add_source(config::File::from(file.as_path()).required(true));
        }
        builder = builder.add_source(environment.clone());
        for (key, value) in overrides {
            builder = builder.set_override(*key, *value)?;
        }
        let located = |error| locate(error, &environment, file.as_deref().zip(file_text.as_deref()));
        let config = builder.build().map_err(|e| located(e.into()))?;
        // A section no part of the bridge reads, in a file that is not TOML (a TOML
        // file's keys were checked line by line above, with their line numbers).
        if let Some(file) = &file {
            let top: config::Map<String, config::Value> = config.clone().try_deserialize().map_err(|e| located(e.into()))?;
            if let Some(section) = top.keys().find(|section| !known.sections.contains(section)) {
                return Err(ConfigError::UnknownKey { at: file.display().to_string(), nearest: known.nearest(section), key: section.to_owned() });
            }
        }
        Self::from_config(config).map_err(located)
    }

    /// One warning per environment variable that looks meant for the bridge but sets
    /// nothing (`HITL_BRIDGE_TELEGRAM__TOKEN`), with the nearest variable that does:
    /// for the log at start.
    pub fn environment_warnings() -> Vec<String> {
        let known = KnownKeys::new().map(|k| k.keys).unwrap_or_default();
        sources::Environment::from_process().unread(&known)
    }

    /// Which source set each value that differs from the built-in default (for
    /// `check-config`).
    pub fn provenance(path: Option<&Path>) -> Result<Vec<(String, sources::Source)>, ConfigError> {
        sources::provenance(path, sources::Environment::from_process())
    }

    /// Builds settings from in-memory overrides on top of defaults (tests and `demo`).
    pub fn from_pairs(pairs: &[(&str, &str)]) -> Result<Self, ConfigError> {
        let mut builder = config::Config::builder().add_source(sources::defaults());
        for (key, value) in pairs {
            builder = builder.set_override(*key, *value)?;
        }
        Self::from_config(builder.build()?)
    }

    fn from_config(config: config::Config) -> Result<Self, ConfigError> {
        refuse_left_out(&config, crate::platform::registry::LEFT_OUT)?;
        let mut platforms = Vec::new();
        for descriptor in crate::platform::registry::DESCRIPTORS {
            platforms.push((descriptor.network().name(), descriptor.read_section(&config)?));
        }
        let mut backends = Vec::new();
        for descriptor in crate::backend::registry::DESCRIPTORS {
            backends.push((descriptor.name(), descriptor.read_section(&config)?));
        }
        let mut settings: Settings = config.try_deserialize()?;
        settings.platforms = Sections::new(platforms);
        settings.backends = BackendSections::new(backends);
        settings.validate()?;
        Ok(settings)
    }

    /// The settings as JSON, every platform's and backend's section included (secrets
    /// redacted).
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        if let Some(sections) = value.as_object_mut() {
            for (name, section) in self.platforms.iter() {
                sections.insert(name.to_owned(), section.to_json());
            }
            for (name, section) in self.backends.iter() {
                sections.extend(section.to_json().map(|json| (name.to_owned(), json)));
            }
        }
        value
    }

    /// The backend `backend.kind` names (checked at load, so always one).
    pub fn chat_backend(&self) -> Option<(&'static dyn crate::backend::descriptor::BackendDescriptor, &dyn crate::backend::descriptor::BackendSection)> {
        let descriptor = crate::backend::registry::descriptor(&self.backend.kind)?;
        Some((descriptor, self.backends.named(descriptor.name())?))
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key, reason: &str| Err(ConfigError::Invalid { key, reason: reason.into() });
        // A backend's own section is checked only when that backend is selected.
        let Some((backend, section)) = self.chat_backend() else {
            let reason = format!("`{}` is not a backend: one of {}", self.backend.kind, crate::backend::registry::listed());
            return Err(ConfigError::Invalid { key: "backend.kind", reason });
        };
        let owned = |problem: Option<(&'static str, &'static str)>| problem.map(|(key, reason)| (key, reason.to_owned()));
        let problem = backend.problem(section, &self.backend).or_else(|| owned(self.backend.connection_problem())).or_else(|| owned(self.store.problem()));
        if let Some((key, reason)) = problem {
            return Err(ConfigError::Invalid { key, reason });
        }
        if self.timeouts.approval_secs == 0 || self.timeouts.question_secs == 0 {
            return invalid("timeouts.approval_secs", "timeouts must be at least 1 second");
        }
        if let Some((key, reason)) = self.platforms.iter().find_map(|(_, section)| section.problem()) {
            return Err(ConfigError::Invalid { key, reason });
        }
        if let Some((key, reason)) = self.access.problem() {
            return Err(ConfigError::Invalid { key, reason });
        }
        let networks = crate::platform::registry::networks();
        if let Some((key, reason)) = self.http.problem().or_else(|| self.mcp.problem(&networks)).or_else(|| self.web.problem()) {
            return Err(ConfigError::Invalid { key, reason });
        }
        if self.web.enabled && !self.http.enabled {
            return invalid("web.enabled", "the web inbox is served on the HTTP listener: set http.enabled = true too");
        }
        for channel in &self.routing.channels {
            if networks.parse_chat(channel).is_none() {
                return invalid("routing.channels", &format!("`{channel}` is not platform:chat {}", networks.chat_examples(true)));
            }
        }
        self.try_policies()?;
        Ok(())
    }

    /// The `[[policies]]` entries, validated, in file order (entries that do not
    /// validate were refused by `validate`).
    pub fn policies(&self) -> Vec<PolicyRule> {
        self.try_policies().unwrap_or_default()
    }

    fn try_policies(&self) -> Result<Vec<PolicyRule>, ConfigError> {
        let networks = crate::platform::registry::networks();
        let is_target = |t: &str| networks.parse_chat(t).is_some();
        let known = Known { is_target: &is_target, networks: &networks };
        let backends = crate::backend::registry::names();
        let mut rules = Vec::with_capacity(self.policies.len());
        for (i, spec) in self.policies.iter().enumerate() {
            rules.push(spec.to_rule(i, &known, &backends)?);
        }
        Ok(rules)
    }

    pub fn access_policy(&self) -> AccessPolicy {
        self.access.policy()
    }

    /// Who may talk to the agent (entries that do not parse were refused by `validate`).
    pub fn allowlist(&self) -> Allowlist {
        self.access.allowlist()
    }

    /// Who may approve pairing codes with `/pair CODE`, and in which chats besides
    /// their direct chat with the bot.
    pub fn pairing_admins(&self) -> PairingAdmins {
        self.access.pairing_admins()
    }

    /// What about `[access]` is safe but surprising, for the log at start-up: each
    /// enabled chat platform where nobody could talk, or pairing nobody may approve
    /// from a chat.
    pub fn access_warnings(&self) -> Vec<String> {
        // The terminal needs nobody on a list: whoever types there started the bridge.
        let open = crate::platform::registry::networks().always_open();
        let mut warnings = self.access.warnings(self.platforms.enabled().filter(|platform| !open.iter().any(|o| o == platform)));
        if self.pairing_approved_at_terminal {
            warnings.retain(|w| !w.starts_with("access.pairing is on but access.admins is empty"));
        }
        warnings
    }

    /// What the engine runs with.
    pub fn engine_config(&self) -> EngineConfig {
        EngineConfig {
            policy: self.access_policy(),
            allowlist: self.allowlist(),
            pairing_admins: self.pairing_admins(),
            refusal_window_ms: self.access.refusal_window_secs.saturating_mul(1000).min(i64::MAX as u64) as i64,
            pairing_ttl_ms: self.access.pairing_code_secs.saturating_mul(1000) as i64,
            routing: self.routing.clone(),
            networks: crate::platform::registry::networks(),
            grace_ms: self.timeouts.grace_secs as i64 * 1000,
            on_expiry: self.timeouts.on_expiry,
            replica_id: self.backend.replica_id(),
            policies: self.policies(),
            backend_kind: self.backend.kind.clone(),
        }
    }

    /// The effective configuration as pretty JSON, secrets redacted.
    pub fn redacted_json(&self) -> String {
        serde_json::to_string_pretty(&self.to_json()).unwrap_or_else(|e| format!("(cannot print settings: {e})"))
    }
}

/// `error` with where the value at fault was set: the variable, or the file and line
/// (unless the message names it already).
fn locate(error: ConfigError, environment: &sources::Environment, file: Option<(&Path, &str)>) -> ConfigError {
    let key = match &error {
        ConfigError::Load(config::ConfigError::Type { key: Some(key), .. } | config::ConfigError::At { key: Some(key), .. }) => key.clone(),
        ConfigError::Load(config::ConfigError::NotFound(key)) => key.clone(),
        ConfigError::Invalid { key, .. } => (*key).to_owned(),
        _ => return error,
    };
    let key = key.split('[').next().unwrap_or_default().to_owned();
    let message = error.to_string();
    let (at, message) = match environment.variable_for(&key) {
        Some(variable) => (variable.to_owned(), message),
        None => match file.and_then(|(path, text)| sources::file_keys(text).into_iter().find(|(k, _)| *k == key).map(|(_, line)| (path, line))) {
            Some((path, line)) => {
                // The `config` crate may have named the file already (by a path of its
                // own making): the line says more.
                let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                let message = match message.rsplit_once(" in ") {
                    Some((before, file)) if !name.is_empty() && file.ends_with(&name) => before.to_owned(),
                    _ => message,
                };
                (format!("{} line {line}", path.display()), message)
            }
            None => return error,
        },
    };
    if message.contains(&at) {
        return error;
    }
    ConfigError::Located { at, message }
}

#[cfg(test)]
mod tests {
    use secrecy::ExposeSecret;

    use super::*;

    #[test]
    fn the_web_inbox_needs_the_http_listener() {
        let err = Settings::from_pairs(&[("web.enabled", "true"), ("http.enabled", "false")]).unwrap_err().to_string();
        assert!(err.contains("web.enabled") && err.contains("http.enabled = true"), "{err}");
        assert!(Settings::from_pairs(&[("web.enabled", "true")]).is_ok());
        let err = Settings::from_pairs(&[("web.public_url", "ftp://x")]).unwrap_err().to_string();
        assert!(err.contains("web.public_url"), "{err}");
    }

    /// A build without a platform (`--no-default-features` drops Matrix) still reads
    /// a file with that platform's section, as the shipped `config/default.toml` has;
    /// enabling the platform is refused with the feature that brings it.
    #[test]
    fn a_platform_compiled_out_is_ignored_until_enabled() {
        let mut known = KnownKeys::default();
        known.leave_out(&[("zulip", "zulip")]);
        assert!(known.knows("zulip.rooms") && known.sections.contains(&"zulip".to_owned()));
        assert!(!known.knows("zulipp.rooms"));
        let config = |enabled: &str| config::Config::builder().set_override("zulip.enabled", enabled).unwrap().build().unwrap();
        assert!(refuse_left_out(&config("false"), &[("zulip", "zulip")]).is_ok());
        let err = refuse_left_out(&config("true"), &[("zulip", "zulip")]).unwrap_err().to_string();
        assert!(err.contains("zulip.enabled is true") && err.contains("cargo feature `zulip`"), "{err}");
        assert!(refuse_left_out(&config("true"), &[]).is_ok(), "a platform built in is not refused here");
    }

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
            (
                "[[policies]]\ntools = [\"t\"]\nescalation = [{ after = \"5m\", show_in = \"irc:#ops\" }]",
                "`policies[0].escalation[0].show_in`: `irc:#ops` is not platform:chat",
            ),
            (
                "[[policies]]\ntools = [\"t\"]\nescalation = [{ after = \"15m\", remind = \"approvers\" }, { after = \"5m\", fallback = \"reject\" }]",
                "`policies[0].escalation[1].after`: must come after",
            ),
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

    /// `backend.kind` names a backend of the registry, and rules are stored under the
    /// kind as written there.
    #[test]
    fn the_backend_kind_is_a_name_of_the_registry() {
        let err = Settings::from_pairs(&[("backend.kind", "ftp")]).unwrap_err().to_string();
        assert_eq!(err, "configuration key `backend.kind`: `ftp` is not a backend: one of stream, claude_code, agno, kimi, langgraph or acp");
        let s = Settings::from_pairs(&[("backend.kind", "kimi")]).unwrap();
        assert_eq!(s.engine_config().backend_kind, "kimi");
        assert!(s.chat_backend().is_some_and(|(backend, _)| backend.starts_agents()));
        let printed = Settings::from_pairs(&[]).unwrap().to_json();
        assert!(printed["kimi"]["start_timeout_secs"] == 60 && printed.get("stream").is_none(), "every backend's section, and only theirs: {printed}");
    }

    /// A backend's own section is checked only when it is `backend.kind`, and the
    /// stream kind's `backend.url` only for that kind.
    #[test]
    fn a_backends_section_is_checked_only_when_it_is_the_kind() {
        let invalid_key = |pairs: &[(&str, &str)]| match Settings::from_pairs(pairs) {
            Err(ConfigError::Invalid { key, .. }) => Some(key),
            Err(other) => panic!("{other}"),
            Ok(_) => None,
        };
        assert_eq!(invalid_key(&[("backend.kind", "agno")]), Some("agno.agent_id"));
        assert_eq!(invalid_key(&[("backend.kind", "agno"), ("agno.agent_id", "ops"), ("agno.url", "ws://x")]), Some("agno.url"));
        assert_eq!(invalid_key(&[("backend.kind", "agno"), ("agno.agent_id", "ops"), ("agno.request_timeout_secs", "0")]), Some("agno.request_timeout_secs"));
        assert_eq!(invalid_key(&[("backend.kind", "agno"), ("agno.agent_id", "ops"), ("backend.url", "")]), None, "backend.url is the stream kind's");
        assert_eq!(invalid_key(&[("agno.agent_id", "")]), None, "not read for the stream kind");
        assert_eq!(invalid_key(&[("backend.url", "")]), Some("backend.url"));
        let s = Settings::from_pairs(&[("backend.kind", "agno"), ("agno.agent_id", "ops"), ("agno.token", "agno-s3cret")]).unwrap();
        assert!(!s.redacted_json().contains("agno-s3cret"));
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
        assert_eq!(l.spaces, vec![("discord".to_string(), "700".to_string())]);
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

    fn env(vars: &[(&str, &str)]) -> sources::Environment {
        sources::Environment::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())))
    }

    /// Loads the built-in defaults, an empty file and `vars` as the environment.
    fn load_env(vars: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("empty.toml");
        std::fs::write(&file, "").unwrap();
        Settings::load_from(Some(&file), env(vars), &[])
    }

    fn variable(key: &str) -> String {
        format!("HITL_BRIDGE__{}", key.replace('.', "__").to_uppercase())
    }

    #[test]
    fn each_list_key_takes_one_id_or_a_comma_separated_list_from_the_environment() {
        for key in list_keys() {
            let name = variable(key);
            for (given, expected) in [
                ("123456789012345678", vec!["123456789012345678"]),
                ("telegram:-1001234567890", vec!["telegram:-1001234567890"]),
                ("1100,1200", vec!["1100", "1200"]),
                ("\"1100\", 'a b' ,", vec!["1100", "a b"]),
                ("", vec![]),
            ] {
                let config = config::Config::builder().add_source(sources::defaults()).add_source(env(&[(&name, given)])).build().unwrap();
                let read: Vec<String> = config.get(key).unwrap_or_else(|e| panic!("{name}={given:?}: {e}"));
                assert_eq!(read, expected, "{name}={given:?}");
            }
        }
    }

    /// The same through the whole load, with values each key accepts: one id alone
    /// (the form the Discord guide starts with) and a list.
    #[test]
    fn each_list_key_loads_one_id_and_a_list() {
        let cases: &[(&str, &str, &[&str])] = &[
            ("access.approvers", "telegram:123456789", &["telegram:123456789"]),
            ("access.approvers", "telegram:1,discord:80351110224678912", &["telegram:1", "discord:80351110224678912"]),
            ("access.approver_roles", "234567890123456789", &["234567890123456789"]),
            ("access.approver_roles", "1100,1200", &["1100", "1200"]),
            ("access.users", "discord:80351110224678912", &["discord:80351110224678912"]),
            ("access.users", "telegram:123,discord:456", &["telegram:123", "discord:456"]),
            ("access.chats", "telegram:-1001234567890", &["telegram:-1001234567890"]),
            ("access.chats", "telegram:-1001,discord:guild:700", &["telegram:-1001", "discord:guild:700"]),
            ("access.roles", "900", &["900"]),
            ("access.roles", "900,901", &["900", "901"]),
            ("access.admins", "telegram:3003", &["telegram:3003"]),
            ("access.admins", "telegram:3003,discord:4004", &["telegram:3003", "discord:4004"]),
            ("access.admin_chats", "telegram:-100999", &["telegram:-100999"]),
            ("access.admin_chats", "telegram:-100999,discord:1100", &["telegram:-100999", "discord:1100"]),
            ("discord.channels", "123456789012345678", &["123456789012345678"]),
            ("discord.channels", "1100,1200", &["1100", "1200"]),
            ("slack.channels", "C0OPS", &["C0OPS"]),
            ("slack.channels", "C0OPS,C0DEV", &["C0OPS", "C0DEV"]),
            ("teams.channels", "19:0a1b2c3d@thread.tacv2", &["19:0a1b2c3d@thread.tacv2"]),
            ("teams.channels", "19:0a1b@thread.tacv2,19:dev0a1b@thread.v2", &["19:0a1b@thread.tacv2", "19:dev0a1b@thread.v2"]),
            ("mattermost.channels", "4xp9fdt7pbgium38k5k6w95oma", &["4xp9fdt7pbgium38k5k6w95oma"]),
            ("mattermost.channels", "4xp9fdt7pbgium38k5k6w95oma,c0ps0000000000000000000000", &["4xp9fdt7pbgium38k5k6w95oma", "c0ps0000000000000000000000"]),
            ("matrix.rooms", "!ops:example.org", &["!ops:example.org"]),
            ("matrix.rooms", "!ops:example.org,!xk58VJ", &["!ops:example.org", "!xk58VJ"]),
            ("http.api_tokens", "ci:a-long-random-secret", &["ci:a-long-random-secret"]),
            ("http.api_tokens", "ci:a,cron:b", &["ci:a", "cron:b"]),
            ("routing.channels", "telegram:-1001234567890/7", &["telegram:-1001234567890/7"]),
            ("routing.channels", "console,discord:1100", &["console", "discord:1100"]),
            ("mcp.tools", "approval_prompt", &["approval_prompt"]),
            ("mcp.tools", "request_approval,ask_user_question", &["request_approval", "ask_user_question"]),
            ("mcp.default_targets", "telegram:-1001234567890", &["telegram:-1001234567890"]),
            ("mcp.default_targets", "console,discord:1100", &["console", "discord:1100"]),
            ("claude_code.allowed_tools", "Bash", &["Bash"]),
            ("claude_code.allowed_tools", "Bash,Read", &["Bash", "Read"]),
            ("claude_code.disallowed_tools", "WebFetch", &["WebFetch"]),
            ("claude_code.disallowed_tools", "WebFetch,Write", &["WebFetch", "Write"]),
            ("claude_code.env", "A=1", &["A=1"]),
            ("claude_code.env", "A=1,B=2", &["A=1", "B=2"]),
            ("claude_code.extra_args", "--verbose", &["--verbose"]),
            ("claude_code.extra_args", "--a,--b", &["--a", "--b"]),
            ("kimi.args", "--yolo", &["--yolo"]),
            ("kimi.args", "--a,--b", &["--a", "--b"]),
            ("acp.args", "--acp", &["--acp"]),
        ];
        let covered: std::collections::BTreeSet<&str> = cases.iter().map(|(k, _, _)| *k).collect();
        assert_eq!(covered, list_keys().iter().map(String::as_str).collect(), "a case for every list key");
        for (key, given, expected) in cases {
            let name = variable(key);
            let s = load_env(&[(&name, given)]).unwrap_or_else(|e| panic!("{name}={given}: {e}"));
            let printed = s.to_json();
            let (section, member) = key.split_once('.').unwrap();
            let read: Vec<String> = serde_json::from_value(printed[section][member].clone()).unwrap();
            // Secrets are printed redacted: compare the names only.
            if *key == "http.api_tokens" {
                assert_eq!(s.http.api_tokens, *expected, "{name}={given}");
            } else if *key == "claude_code.env" {
                let names: Vec<String> = expected.iter().map(|e| format!("{}=[redacted]", e.split('=').next().unwrap_or_default())).collect();
                assert_eq!(read, names, "{name}={given}");
            } else {
                assert_eq!(read, *expected, "{name}={given}");
            }
        }
    }

    #[test]
    fn an_unknown_key_is_named_with_its_variable_or_file_line_and_the_nearest_key() {
        let err = load_env(&[("HITL_BRIDGE__TELEGRAM__TOKN", "x")]).unwrap_err().to_string();
        assert_eq!(
            err,
            "configuration: HITL_BRIDGE__TELEGRAM__TOKN sets `telegram.tokn`, which is not a configuration key; \
             did you mean `telegram.token` (HITL_BRIDGE__TELEGRAM__TOKEN)?"
        );
        let err = load_env(&[("HITL_BRIDGE__TELEGRM__ENABLED", "true")]).unwrap_err().to_string();
        assert!(err.contains("HITL_BRIDGE__TELEGRM__ENABLED sets `telegrm.enabled`") && err.contains("did you mean `telegram.enabled`"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bridge.toml");
        std::fs::write(&file, "# mine\n[telegram]\nenabled = true\n\n[access]\nusers = [\n  \"telegram:1\",\n]\napprover = [\"telegram:2\"]\n").unwrap();
        let err = Settings::load_from(Some(&file), env(&[]), &[]).unwrap_err().to_string();
        assert_eq!(
            err,
            format!("configuration: {} line 9 sets `access.approver`, which is not a configuration key; did you mean `access.approvers`?", file.display())
        );
        // Table keys take any name; [[policies]] entries are checked by their own rules.
        std::fs::write(&file, "[telegram.chat_locales]\n\"-100123\" = \"zh\"\n[[policies]]\ntools = [\"t\"]\n").unwrap();
        Settings::load_from(Some(&file), env(&[]), &[]).unwrap();
    }

    #[test]
    fn a_bad_value_is_named_with_where_it_was_set() {
        let err = load_env(&[("HITL_BRIDGE__ACCESS__USERS", "nobody")]).unwrap_err().to_string();
        assert_eq!(err, "configuration key `access.users`: `nobody` is not of the form platform:user_id (set by HITL_BRIDGE__ACCESS__USERS)");
        let err = load_env(&[("HITL_BRIDGE__TIMEOUTS__APPROVAL_SECS", "soon")]).unwrap_err().to_string();
        assert!(err.contains("timeouts.approval_secs") && err.contains("HITL_BRIDGE__TIMEOUTS__APPROVAL_SECS"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bridge.toml");
        std::fs::write(&file, "[telegram]\nenabled = \"maybe\"\n").unwrap();
        let err = Settings::load_from(Some(&file), env(&[]), &[]).unwrap_err().to_string();
        assert_eq!(
            err,
            format!("configuration: invalid type: string \"maybe\", expected a boolean for key `telegram.enabled` (set by {} line 2)", file.display())
        );
    }

    #[test]
    fn variables_that_set_nothing_are_warned_about_with_the_nearest_name() {
        let known = KnownKeys::new().unwrap().keys;
        let warnings = env(&[
            ("HITL_BRIDGE_TELEGRAM__TOKEN", "x"),
            ("HITL_BRIDGE_ACCESS_USERS", "x"),
            ("HITL_BRIDGE_MCP_TARGET", "x"),
            ("HITL_BRIDGE_SOMETHING_ELSE_ENTIRELY", "x"),
            // Read elsewhere, or keys: no warning.
            ("HITL_BRIDGE_MCP_TARGETS", "x"),
            ("HITL_BRIDGE_TEST_POSTGRES_URL", "x"),
            ("HITL_BRIDGE__TELEGRAM__TOKEN", "x"),
        ])
        .unread(&known);
        assert_eq!(
            warnings,
            [
                "the environment variable HITL_BRIDGE_ACCESS_USERS is not read: did you mean HITL_BRIDGE__ACCESS__USERS?",
                "the environment variable HITL_BRIDGE_MCP_TARGET is not read: did you mean HITL_BRIDGE_MCP_TARGETS?",
                "the environment variable HITL_BRIDGE_SOMETHING_ELSE_ENTIRELY is not read: a key is set as HITL_BRIDGE__SECTION__KEY, two underscores each",
                "the environment variable HITL_BRIDGE_TELEGRAM__TOKEN is not read: did you mean HITL_BRIDGE__TELEGRAM__TOKEN?",
            ]
        );
    }
}
