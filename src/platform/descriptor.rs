//! What the rest of the bridge knows of one chat platform: its [`Descriptor`]. Each
//! platform writes its own in its folder; the registry (`registry.rs`) lists them, one
//! line each, and the assembly (configuration, the app, the admin commands, pairing
//! and the demo) reads that list instead of naming platforms. This file names no
//! platform and never reads the registry: the platforms import it, and the registry
//! imports them.

use std::any::Any;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use std::marker::PhantomData;

use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufRead, AsyncWrite};

use crate::engine::{EngineHandle, Platform, PlatformError};
use crate::interaction::chat::ChatNetwork;
use crate::interaction::{AccessPolicy, Actor};
use crate::listener::Limits;
use crate::metrics::Metrics;
use crate::platform::kit::token::TokenSigner;
use crate::store::{Inboxes, PlatformState, PlatformStates, UiStates};

/// One chat platform, as the bridge assembles it.
pub trait Descriptor: Send + Sync {
    /// Its address grammar: its name, how its chats, people, groups, spaces and HTTP
    /// API targets are written (the part the core and the engine see).
    fn network(&self) -> Arc<dyn ChatNetwork>;

    /// Its name as people read it (`Telegram`).
    fn title(&self) -> &'static str;

    /// Its `[name]` section as shipped: every key with its default, or commented out
    /// when unset, each with a comment saying what it does (its folder's
    /// `default.toml`). `config/default.toml` carries a copy of every platform's,
    /// which `tests/docs.rs` keeps current.
    fn defaults(&self) -> &'static str;

    /// Its `[name]` section from the loaded configuration (the built-in defaults are
    /// in `config/default.toml`); a section the file leaves out is the defaults.
    fn read_section(&self, config: &config::Config) -> Result<Box<dyn Section>, config::ConfigError>;

    /// Starts it from the shared context: `Ok(None)` when it has nothing to run (the
    /// console without a terminal). A platform that is enabled but cannot start is an
    /// error that stops the bridge.
    fn start<'a>(&'a self, section: &'a dyn Section, context: &'a StartContext) -> BoxFuture<'a, Result<Option<Started>, String>>;

    /// Its own admin commands, as the subcommand named after it (`hitl-bridge slack
    /// manifest`), if it has any: `hitl-bridge` adds it to its own.
    fn admin_command(&self) -> Option<clap::Command> {
        None
    }

    /// Runs its admin command (`matches` are its subcommand's); what to print.
    fn run_admin_command(&self, matches: &clap::ArgMatches) -> Result<String, String> {
        let _ = matches;
        Err(format!("{} has no admin commands", self.title()))
    }
}

/// A platform's config section, read by its descriptor.
pub trait Section: Any + Send + Sync + Debug {
    /// `name.enabled`.
    fn enabled(&self) -> bool;
    /// What is invalid, as (key, reason); checked at load.
    fn problem(&self) -> Option<(&'static str, String)>;
    /// The section as JSON (secrets redacted), for `check-config` and the key list.
    fn to_json(&self) -> serde_json::Value;
    fn clone_section(&self) -> Box<dyn Section>;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// A typed section: what a platform's settings struct provides to be a [`Section`].
pub trait PlatformSettings: Serialize + DeserializeOwned + Default + Clone + Debug + Send + Sync + 'static {
    fn enabled(&self) -> bool;
    fn problem(&self) -> Option<(&'static str, String)> {
        None
    }
}

impl<T: PlatformSettings> Section for T {
    fn enabled(&self) -> bool {
        PlatformSettings::enabled(self)
    }
    fn problem(&self) -> Option<(&'static str, String)> {
        PlatformSettings::problem(self)
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
    fn clone_section(&self) -> Box<dyn Section> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// Reads section `name` as `T`: the defaults when the configuration has none. Read
/// from the whole configuration (not `Config::get`), so an error names the key in
/// full (`telegram.enabled`), as for every other section.
pub fn read_section<T: PlatformSettings>(config: &config::Config, name: &'static str) -> Result<Box<dyn Section>, config::ConfigError> {
    let section = OneSection::<T> { name, section: PhantomData }.deserialize(config.clone())?;
    Ok(Box::new(section.unwrap_or_default()))
}

/// Deserializes the top-level table's `name` member as `T`, skipping the others.
struct OneSection<T> {
    name: &'static str,
    section: PhantomData<T>,
}

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for OneSection<T> {
    type Value = Option<T>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<T>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for OneSection<T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a table with a [{}] section", self.name)
    }

    /// An empty configuration: every section is its defaults.
    fn visit_unit<E: serde::de::Error>(self) -> Result<Option<T>, E> {
        Ok(None)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<T>, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == self.name {
                found = Some(map.next_value::<T>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// What a platform starts from: the pieces every platform shares.
pub struct StartContext {
    /// Who may answer requests beyond the requester.
    pub policy: AccessPolicy,
    /// Every group id the configuration names, with the setting that names it
    /// (`access.roles`, `access.approver_roles`, `policies[2].approver_roles`): a
    /// platform that must ask who is in a group (Slack's user groups) asks about these.
    pub groups: Vec<(String, String)>,
    /// This process's name on claims other replicas see.
    pub replica_id: String,
    /// What every HTTP listener allows a client.
    pub limits: Limits,
    pub engine: EngineHandle,
    pub signer: TokenSigner,
    /// Each platform's durable inbox of updates ([`super::inbox`]); a platform takes
    /// its own.
    pub inboxes: Inboxes,
    /// What a platform keeps to understand the next click or reply (wizard steps,
    /// prompts, pages).
    pub ui_states: UiStates,
    /// What each platform keeps for itself across restarts (a sync token, a cache);
    /// a platform takes its own with [`StartContext::state_of`].
    pub(crate) states: PlatformStates,
    pub metrics: Metrics,
    /// The web inbox's links (`/web`, a card's "Open in browser").
    pub web: Arc<dyn WebLinks>,
    /// The terminal's input and output, for the platform that is the terminal; taken
    /// by the first that asks.
    pub terminal: Mutex<Option<Terminal>>,
}

impl StartContext {
    /// The terminal, once.
    pub fn take_terminal(&self) -> Option<Terminal> {
        self.terminal.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// Platform `platform`'s own keys and cursors (`platform_state`), bound to its
    /// name: what it keeps across restarts and shares with its other replicas, with
    /// no table or store code of its own.
    pub fn state_of(&self, platform: &'static str) -> PlatformState {
        self.states.of(platform)
    }
}

/// The web inbox's links as a chat hands them out: `/web`'s sign-in link and a card's
/// "Open in browser". The inbox sits above the platforms, so they reach it through
/// this port; the app passes in the inbox's own (`crate::web::ChatLinks`).
pub trait WebLinks: Send + Sync {
    /// The page of request `interaction_id`; `None` when the inbox is off.
    fn request_link(&self, interaction_id: &str) -> Option<String>;

    /// Whether the inbox is on: a text may send people to it only then.
    fn is_on(&self) -> bool {
        self.request_link("").is_some()
    }

    /// A fresh one-time sign-in link for `person`, as their platform vouches for them;
    /// `Ok(None)` when the inbox is off.
    fn sign_in_link<'a>(&'a self, person: &'a Actor) -> BoxFuture<'a, Result<Option<String>, SignInLinkError>>;

    /// Where a card shows the link to request `interaction_id`, when the inbox is on.
    fn card_link(&self, interaction_id: &str) -> Option<BrowserLink> {
        self.request_link(interaction_id).map(BrowserLink::of)
    }
}

/// A sign-in link could not be stored.
#[derive(Debug, thiserror::Error)]
#[error("cannot store a sign-in link: {0}")]
pub struct SignInLinkError(pub String);

/// A card's "Open in browser": a URL button when browsers reach the inbox over https,
/// else the link in the card's text (a chat app opens a plain-http or loopback
/// address from text, while Telegram refuses such a button and a link button to a
/// page that will not load reads as broken).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrowserLink {
    Button(String),
    InText(String),
}

impl BrowserLink {
    pub fn of(url: String) -> Self {
        if url.starts_with("https://") { BrowserLink::Button(url) } else { BrowserLink::InText(url) }
    }
}

/// The bridge's standard input and output.
pub struct Terminal {
    pub input: Box<dyn AsyncBufRead + Unpin + Send>,
    pub output: Box<dyn AsyncWrite + Unpin + Send>,
}

/// A started platform.
pub struct Started {
    pub platform: Arc<dyn Platform>,
    /// Work whose end ends the bridge (reading the terminal until its input closes),
    /// run once the engine runs.
    pub foreground: Option<BoxFuture<'static, Result<(), PlatformError>>>,
    /// Who is in which of its groups now, for a person acting outside its chats (the
    /// web inbox); `None` for a platform without groups.
    pub membership: Option<Arc<dyn Membership>>,
}

/// A platform's groups (Discord roles, Slack user groups) as the web inbox asks for
/// them at the moment a person reads or decides: the same source and the same refresh
/// as a click in the platform's own chat, so a person taken out of a group stops
/// counting in the browser exactly when they stop counting in chat. A session holds
/// who the person is, never what they may do.
pub trait Membership: Send + Sync {
    /// The groups `person` (of this platform) is in now, among those the configuration
    /// names and `named` (the approver groups of the requests at hand); none when the
    /// platform cannot say (refusing is the safe side).
    fn groups_of<'a>(&'a self, person: &'a Actor, named: &'a [String]) -> BoxFuture<'a, Vec<String>>;
}

/// Every platform's section, in the registry's order (its `Default`, every
/// platform's defaults, is the registry's, which alone knows them all).
pub struct Sections(Vec<(&'static str, Box<dyn Section>)>);

impl Sections {
    pub fn new(sections: Vec<(&'static str, Box<dyn Section>)>) -> Self {
        Self(sections)
    }

    /// The section of platform `name`.
    pub fn named(&self, name: &str) -> Option<&dyn Section> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, s)| s.as_ref())
    }

    /// Each platform's name and section.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &dyn Section)> {
        self.0.iter().map(|(name, section)| (*name, section.as_ref()))
    }

    /// The platforms that are enabled, in order.
    pub fn enabled(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.iter().filter(|(_, s)| s.enabled()).map(|(name, _)| name)
    }

    /// The section of type `T` (its platform's settings struct).
    ///
    /// # Panics
    /// When no registered platform has sections of type `T`: a programming error.
    pub fn get<T: PlatformSettings>(&self) -> &T {
        self.0.iter().find_map(|(_, s)| s.as_any().downcast_ref::<T>()).expect("a registered platform's settings")
    }

    /// As [`Sections::get`], to change it (tests, the demo).
    pub fn get_mut<T: PlatformSettings>(&mut self) -> &mut T {
        self.0.iter_mut().find_map(|(_, s)| s.as_any_mut().downcast_mut::<T>()).expect("a registered platform's settings")
    }
}

impl Clone for Sections {
    fn clone(&self) -> Self {
        Self(self.0.iter().map(|(name, section)| (*name, section.clone_section())).collect())
    }
}

impl Debug for Sections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.0.iter().map(|(name, section)| (name, section))).finish()
    }
}
