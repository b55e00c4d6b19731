//! Matrix's [`Descriptor`]: its address grammar, its `[matrix]` section and how it
//! starts.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::settings::MatrixSettings;
use crate::interaction::chat::ChatNetwork;
use crate::platform::descriptor::{self, Descriptor, PlatformSettings, Section, StartContext, Started};
use crate::platform::kit::inbox::DurableInbox;

/// The Matrix platform.
pub struct Matrix;

impl Descriptor for Matrix {
    fn network(&self) -> Arc<dyn ChatNetwork> {
        Arc::new(super::address::Address)
    }

    fn title(&self) -> &'static str {
        "Matrix"
    }

    fn defaults(&self) -> &'static str {
        include_str!("default.toml")
    }

    fn read_section(&self, config: &config::Config) -> Result<Box<dyn Section>, config::ConfigError> {
        descriptor::read_section::<MatrixSettings>(config, super::PLATFORM)
    }

    fn start<'a>(&'a self, section: &'a dyn Section, context: &'a StartContext) -> BoxFuture<'a, Result<Option<Started>, String>> {
        Box::pin(async move {
            let Some(settings) = section.as_any().downcast_ref::<MatrixSettings>() else { return Err("not Matrix's section".into()) };
            let wiring = super::Wiring {
                engine: context.engine.clone(),
                policy: context.policy.clone(),
                metrics: context.metrics.clone(),
                inbox: DurableInbox::new(context.inboxes.of(super::PLATFORM), context.replica_id.clone()),
                web: context.web.clone(),
                groups: context.groups.clone(),
                state: context.state_of(super::PLATFORM),
                replica_id: context.replica_id.clone(),
            };
            let matrix = super::start(settings, wiring).await.map_err(|e| e.to_string())?;
            Ok(Some(Started { platform: matrix, foreground: None, membership: None }))
        })
    }
}

impl PlatformSettings for MatrixSettings {
    fn enabled(&self) -> bool {
        self.enabled
    }

    fn problem(&self) -> Option<(&'static str, String)> {
        self.check().map(|(key, reason)| (key, reason.to_owned()))
    }
}
