//! LangGraph's [`BackendDescriptor`]: its `[langgraph]` section and its connector.

use std::sync::Arc;

use super::{LangGraphSettings, LangGraphTransport};
use crate::backend::Connector;
use crate::backend::descriptor::{self, BackendDescriptor, BackendSection, ConnectorParts, SectionSettings};
use crate::backend::settings::BackendSettings;

/// A LangGraph server's threads and runs.
pub struct LangGraph;

impl BackendDescriptor for LangGraph {
    fn name(&self) -> &'static str {
        "langgraph"
    }

    fn title(&self) -> &'static str {
        "LangGraph"
    }

    fn defaults(&self) -> Option<&'static str> {
        Some(include_str!("default.toml"))
    }

    fn docs_page(&self) -> &'static str {
        "docs/backends/langgraph.md"
    }

    fn read_section(&self, config: &config::Config) -> Result<Box<dyn BackendSection>, config::ConfigError> {
        descriptor::read_section::<LangGraphSettings>(config, self.name())
    }

    fn address(&self, section: &dyn BackendSection, _shared: &BackendSettings) -> Option<String> {
        descriptor::section_as::<LangGraphSettings>(section, self.title()).ok().map(|s| s.url.clone())
    }

    fn connector(&self, section: &dyn BackendSection, parts: ConnectorParts) -> Result<Arc<dyn Connector>, String> {
        let settings = descriptor::section_as::<LangGraphSettings>(section, self.title())?;
        let transport = LangGraphTransport::new(settings.clone(), parts.defaults);
        Ok(parts.around(transport))
    }
}

impl SectionSettings for LangGraphSettings {
    fn problem(&self) -> Option<(&'static str, String)> {
        LangGraphSettings::problem(self).map(|(key, reason)| (key, reason.to_owned()))
    }
}
