//! What the rest of the bridge knows of one agent backend: its [`BackendDescriptor`].
//! Each backend writes its own beside its code; the registry (`registry.rs`) lists
//! them, one line each, and the assembly (configuration, the app, `main`) reads that
//! list instead of naming backends. This file names no backend and never reads the
//! registry: the backends import it, and the registry imports them.

use std::any::Any;
use std::fmt::Debug;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;

use super::child::Agents;
use super::lease::Lease;
use super::session::{SessionConnector, SessionOptions, Transport};
use super::settings::BackendSettings;
use super::{BackendInput, Connector};
use crate::interaction::TimeoutDefaults;
use crate::store::Store;

/// One agent backend, as the bridge assembles it.
pub trait BackendDescriptor: Send + Sync {
    /// Its name, as written in `backend.kind` and in policies' `backends`; also its
    /// section's name, when it has one.
    fn name(&self) -> &'static str;

    /// Its name as people read it (`LangGraph`).
    fn title(&self) -> &'static str;

    /// Its `[name]` section as shipped: every key with its default, or commented out
    /// when unset, each with a comment saying what it does (its folder's
    /// `default.toml`). `config/default.toml` carries a copy of every backend's, which
    /// `tests/docs.rs` keeps current. `None` for a backend whose keys are `[backend]`'s.
    fn defaults(&self) -> Option<&'static str>;

    /// Where its guide is, from the repository's root (`docs/backends/kimi.md`).
    fn docs_page(&self) -> &'static str;

    /// Its section from the loaded configuration (the built-in defaults are in
    /// `config/default.toml`); a section the file leaves out is the defaults.
    fn read_section(&self, config: &config::Config) -> Result<Box<dyn BackendSection>, config::ConfigError>;

    /// What is invalid when it serves the chat sessions, as (key, reason): its section,
    /// and the keys of `[backend]` that are its own (`shared`).
    fn problem(&self, section: &dyn BackendSection, shared: &BackendSettings) -> Option<(&'static str, String)> {
        let _ = shared;
        section.problem()
    }

    /// Whether it starts agent processes on this host (one per session), which the
    /// bridge records so none outlives a crashed bridge ([`Agents`]).
    fn starts_agents(&self) -> bool {
        false
    }

    /// What it talks to, for the line the bridge logs at start (`http://127.0.0.1:2024`);
    /// `None` when its name says enough.
    fn address(&self, section: &dyn BackendSection, shared: &BackendSettings) -> Option<String> {
        let _ = (section, shared);
        None
    }

    /// The connector for chat sessions: the session machinery (leases, outbox,
    /// reconnects) in `parts` around its transport, built from its section.
    fn connector(&self, section: &dyn BackendSection, parts: ConnectorParts) -> Result<Arc<dyn Connector>, String>;
}

/// A backend's config section, read by its descriptor.
pub trait BackendSection: Any + Send + Sync + Debug {
    /// What is invalid, as (key, reason); checked at load when its backend is selected.
    fn problem(&self) -> Option<(&'static str, String)>;
    /// The section as JSON (secrets redacted), for `check-config` and the key list;
    /// `None` for a backend without a section of its own.
    fn to_json(&self) -> Option<serde_json::Value>;
    fn clone_section(&self) -> Box<dyn BackendSection>;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// A typed section: what a backend's settings struct provides to be a [`BackendSection`].
pub trait SectionSettings: Serialize + DeserializeOwned + Default + Clone + Debug + Send + Sync + 'static {
    fn problem(&self) -> Option<(&'static str, String)>;
}

impl<T: SectionSettings> BackendSection for T {
    fn problem(&self) -> Option<(&'static str, String)> {
        SectionSettings::problem(self)
    }
    fn to_json(&self) -> Option<serde_json::Value> {
        Some(serde_json::to_value(self).unwrap_or_default())
    }
    fn clone_section(&self) -> Box<dyn BackendSection> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// The section of a backend whose keys are all `[backend]`'s (the stream protocol).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSection;

impl BackendSection for NoSection {
    fn problem(&self) -> Option<(&'static str, String)> {
        None
    }
    fn to_json(&self) -> Option<serde_json::Value> {
        None
    }
    fn clone_section(&self) -> Box<dyn BackendSection> {
        Box::new(*self)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// Reads section `name` as `T`: the defaults when the configuration has none. An error
/// names the key in full (`kimi.start_timeout_secs`), as for every other section: the
/// section is read as the one member of a table, whose reader puts the member's name
/// before the key at fault.
pub fn read_section<T: SectionSettings>(config: &config::Config, name: &'static str) -> Result<Box<dyn BackendSection>, config::ConfigError> {
    let section = match config.get::<config::Value>(name) {
        Ok(section) => section,
        Err(config::ConfigError::NotFound(_)) => return Ok(Box::new(T::default())),
        Err(e) => return Err(e),
    };
    let table = config::Value::new(None, config::ValueKind::Table(config::Map::from([(name.to_owned(), section)])));
    let mut read: std::collections::BTreeMap<String, T> = table.try_deserialize()?;
    Ok(Box::new(read.remove(name).unwrap_or_default()))
}

/// What every connection-based backend's connector is built around: the session
/// machinery's options, the replica lease, the store, where updates go, and the
/// shared `[backend]` keys.
pub struct ConnectorParts {
    pub options: SessionOptions,
    pub lease: Lease,
    pub store: Store,
    pub updates: mpsc::Sender<BackendInput>,
    /// Deadlines of requests that name none.
    pub defaults: TimeoutDefaults,
    /// The `[backend]` section.
    pub shared: BackendSettings,
    /// The registry of this deployment's agent processes, for a backend that
    /// [starts them](BackendDescriptor::starts_agents).
    pub agents: Agents,
}

impl ConnectorParts {
    /// The session machinery around `transport`.
    pub fn around<T: Transport>(self, transport: T) -> Arc<dyn Connector> {
        Arc::new(SessionConnector::new(transport, self.options, self.lease, self.store, self.updates))
    }
}

/// `section` as its backend's settings struct `T`; an error when it is another's (a
/// descriptor handed a section it did not read: a programming error, said, not a panic).
pub fn section_as<'a, T: SectionSettings>(section: &'a dyn BackendSection, backend: &str) -> Result<&'a T, String> {
    section.as_any().downcast_ref::<T>().ok_or_else(|| format!("not {backend}'s section"))
}

/// Every backend's section, in the registry's order (its `Default`, every backend's
/// defaults, is the registry's, which alone knows them all).
pub struct BackendSections(Vec<(&'static str, Box<dyn BackendSection>)>);

impl BackendSections {
    pub fn new(sections: Vec<(&'static str, Box<dyn BackendSection>)>) -> Self {
        Self(sections)
    }

    /// The section of backend `name`.
    pub fn named(&self, name: &str) -> Option<&dyn BackendSection> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, s)| s.as_ref())
    }

    /// Each backend's name and section.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &dyn BackendSection)> {
        self.0.iter().map(|(name, section)| (*name, section.as_ref()))
    }

    /// The section of type `T` (its backend's settings struct).
    ///
    /// # Panics
    /// When no registered backend has sections of type `T`: a programming error.
    pub fn get<T: SectionSettings>(&self) -> &T {
        self.0.iter().find_map(|(_, s)| s.as_any().downcast_ref::<T>()).expect("a registered backend's settings")
    }

    /// As [`BackendSections::get`], to change it (tests).
    pub fn get_mut<T: SectionSettings>(&mut self) -> &mut T {
        self.0.iter_mut().find_map(|(_, s)| s.as_any_mut().downcast_mut::<T>()).expect("a registered backend's settings")
    }
}

impl Clone for BackendSections {
    fn clone(&self) -> Self {
        Self(self.0.iter().map(|(name, section)| (*name, section.clone_section())).collect())
    }
}

impl Debug for BackendSections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.0.iter().map(|(name, section)| (name, section))).finish()
    }
}
