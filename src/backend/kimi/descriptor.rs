//! Kimi CLI's [`BackendDescriptor`]: its `[kimi]` section and its connector.

use std::sync::Arc;

use super::{KimiSettings, KimiTransport};
use crate::backend::Connector;
use crate::backend::descriptor::{self, BackendDescriptor, BackendSection, ConnectorParts, SectionSettings};

/// Kimi CLI in wire mode.
pub struct Kimi;

impl BackendDescriptor for Kimi {
    fn name(&self) -> &'static str {
        "kimi"
    }

    fn title(&self) -> &'static str {
        "Kimi CLI"
    }

    fn defaults(&self) -> Option<&'static str> {
        Some(include_str!("default.toml"))
    }

    fn docs_page(&self) -> &'static str {
        "docs/backends/kimi.md"
    }

    fn read_section(&self, config: &config::Config) -> Result<Box<dyn BackendSection>, config::ConfigError> {
        descriptor::read_section::<KimiSettings>(config, self.name())
    }

    fn starts_agents(&self) -> bool {
        true
    }

    fn connector(&self, section: &dyn BackendSection, parts: ConnectorParts) -> Result<Arc<dyn Connector>, String> {
        let settings = descriptor::section_as::<KimiSettings>(section, self.title())?;
        let transport = KimiTransport::new(settings.clone(), parts.defaults).with_agents(parts.agents.clone());
        Ok(parts.around(transport))
    }
}

impl SectionSettings for KimiSettings {
    fn problem(&self) -> Option<(&'static str, String)> {
        KimiSettings::problem(self).map(|(key, reason)| (key, reason.to_owned()))
    }
}
