//! Claude Code's [`BackendDescriptor`]: its `[claude_code]` section and its connector.

use std::sync::Arc;

use super::{ClaudeCodeSettings, ClaudeCodeTransport};
use crate::backend::Connector;
use crate::backend::descriptor::{self, BackendDescriptor, BackendSection, ConnectorParts, SectionSettings};

/// Claude Code, one CLI process per session.
pub struct ClaudeCode;

impl BackendDescriptor for ClaudeCode {
    fn name(&self) -> &'static str {
        "claude_code"
    }

    fn title(&self) -> &'static str {
        "Claude Code"
    }

    fn defaults(&self) -> Option<&'static str> {
        Some(include_str!("default.toml"))
    }

    fn docs_page(&self) -> &'static str {
        "docs/backends/claude_code.md"
    }

    fn read_section(&self, config: &config::Config) -> Result<Box<dyn BackendSection>, config::ConfigError> {
        descriptor::read_section::<ClaudeCodeSettings>(config, self.name())
    }

    fn starts_agents(&self) -> bool {
        true
    }

    fn connector(&self, section: &dyn BackendSection, parts: ConnectorParts) -> Result<Arc<dyn Connector>, String> {
        let settings = descriptor::section_as::<ClaudeCodeSettings>(section, self.title())?;
        let transport = ClaudeCodeTransport::new(settings.clone(), parts.defaults).with_agents(parts.agents.clone());
        Ok(parts.around(transport))
    }
}

impl SectionSettings for ClaudeCodeSettings {
    fn problem(&self) -> Option<(&'static str, String)> {
        self.validate().err()
    }
}
