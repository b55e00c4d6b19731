//! Agno AgentOS's [`BackendDescriptor`]: its `[agno]` section and its connector.

use std::sync::Arc;

use super::{AgnoSettings, AgnoTransport};
use crate::backend::Connector;
use crate::backend::descriptor::{self, BackendDescriptor, BackendSection, ConnectorParts, SectionSettings};
use crate::backend::settings::BackendSettings;

/// Agno AgentOS over its HTTP API.
pub struct Agno;

impl BackendDescriptor for Agno {
    fn name(&self) -> &'static str {
        "agno"
    }

    fn title(&self) -> &'static str {
        "Agno AgentOS"
    }

    fn defaults(&self) -> Option<&'static str> {
        Some(include_str!("default.toml"))
    }

    fn docs_page(&self) -> &'static str {
        "docs/backends/agno.md"
    }

    fn read_section(&self, config: &config::Config) -> Result<Box<dyn BackendSection>, config::ConfigError> {
        descriptor::read_section::<AgnoSettings>(config, self.name())
    }

    fn address(&self, section: &dyn BackendSection, _shared: &BackendSettings) -> Option<String> {
        descriptor::section_as::<AgnoSettings>(section, self.title()).ok().map(|s| s.url.clone())
    }

    fn connector(&self, section: &dyn BackendSection, parts: ConnectorParts) -> Result<Arc<dyn Connector>, String> {
        let settings = descriptor::section_as::<AgnoSettings>(section, self.title())?;
        let transport = AgnoTransport::new(settings.clone(), parts.defaults);
        Ok(parts.around(transport))
    }
}

impl SectionSettings for AgnoSettings {
    fn problem(&self) -> Option<(&'static str, String)> {
        AgnoSettings::problem(self).map(|(key, reason)| (key, reason.to_owned()))
    }
}
