//! The stream protocol's [`BackendDescriptor`]: its keys are `[backend]`'s (the URL,
//! the token, pings), so it has no section of its own.

use std::sync::Arc;

use super::StreamTransport;
use crate::backend::Connector;
use crate::backend::descriptor::{BackendDescriptor, BackendSection, ConnectorParts, NoSection};
use crate::backend::settings::BackendSettings;

/// The stream protocol as a backend of the registry: its keys are `[backend]`'s.
pub struct Stream;

impl BackendDescriptor for Stream {
    fn name(&self) -> &'static str {
        "stream"
    }

    fn title(&self) -> &'static str {
        "the stream protocol"
    }

    fn defaults(&self) -> Option<&'static str> {
        None
    }

    fn docs_page(&self) -> &'static str {
        "docs/protocol.md"
    }

    fn read_section(&self, _config: &config::Config) -> Result<Box<dyn BackendSection>, config::ConfigError> {
        Ok(Box::new(NoSection))
    }

    fn problem(&self, _section: &dyn BackendSection, shared: &BackendSettings) -> Option<(&'static str, String)> {
        let url = &shared.url;
        if !(url.starts_with("ws://") || url.starts_with("wss://")) {
            return Some(("backend.url", "must start with ws:// or wss://".into()));
        }
        if !url.contains("{session_id}") {
            return Some(("backend.url", "must contain {session_id}".into()));
        }
        None
    }

    fn address(&self, _section: &dyn BackendSection, shared: &BackendSettings) -> Option<String> {
        Some(shared.url.clone())
    }

    fn connector(&self, _section: &dyn BackendSection, parts: ConnectorParts) -> Result<Arc<dyn Connector>, String> {
        let transport = StreamTransport::new(parts.shared.clone(), parts.defaults);
        Ok(parts.around(transport))
    }
}
