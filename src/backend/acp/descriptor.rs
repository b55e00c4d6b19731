//! An Agent Client Protocol agent's [`BackendDescriptor`]: the `[acp]` section and its connector.

use std::sync::Arc;

use super::{AcpSettings, AcpTransport};
use crate::backend::Connector;
use crate::backend::descriptor::{self, BackendDescriptor, BackendSection, ConnectorParts, SectionSettings};

/// Any agent that speaks the Agent Client Protocol over its stdio.
pub struct Acp;

impl BackendDescriptor for Acp {
    fn name(&self) -> &'static str {
        "acp"
    }

    fn title(&self) -> &'static str {
        "ACP agent"
    }

    fn defaults(&self) -> Option<&'static str> {
        Some(include_str!("default.toml"))
    }

    fn docs_page(&self) -> &'static str {
        "docs/backends/acp.md"
    }

    fn read_section(&self, config: &config::Config) -> Result<Box<dyn BackendSection>, config::ConfigError> {
        descriptor::read_section::<AcpSettings>(config, self.name())
    }

    fn starts_agents(&self) -> bool {
        true
    }

    fn connector(&self, section: &dyn BackendSection, parts: ConnectorParts) -> Result<Arc<dyn Connector>, String> {
        let settings = descriptor::section_as::<AcpSettings>(section, self.title())?;
        let sessions = parts.store.platform_state(super::SESSIONS);
        let transport = AcpTransport::new(settings.clone(), parts.defaults).with_agents(parts.agents.clone()).with_sessions(sessions);
        Ok(parts.around(transport))
    }
}

impl SectionSettings for AcpSettings {
    fn problem(&self) -> Option<(&'static str, String)> {
        AcpSettings::problem(self).map(|(key, reason)| (key, reason.to_owned()))
    }
}
