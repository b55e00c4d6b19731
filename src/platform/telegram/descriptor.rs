//! Telegram's [`Descriptor`]: its address grammar, its `[telegram]` section and how
//! it starts.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::settings::TelegramSettings;
use crate::interaction::chat::ChatNetwork;
use crate::platform::descriptor::{self, Descriptor, PlatformSettings, Section, StartContext, Started};

/// The Telegram platform.
pub struct Telegram;

impl Descriptor for Telegram {
    fn network(&self) -> Arc<dyn ChatNetwork> {
        Arc::new(super::address::ADDRESS)
    }

    fn title(&self) -> &'static str {
        "Telegram"
    }

    fn defaults(&self) -> &'static str {
        include_str!("default.toml")
    }

    fn read_section(&self, config: &config::Config) -> Result<Box<dyn Section>, config::ConfigError> {
        descriptor::read_section::<TelegramSettings>(config, super::PLATFORM)
    }

    fn start<'a>(&'a self, section: &'a dyn Section, context: &'a StartContext) -> BoxFuture<'a, Result<Option<Started>, String>> {
        Box::pin(async move {
            let Some(settings) = section.as_any().downcast_ref::<TelegramSettings>() else { return Err("not Telegram's section".into()) };
            let telegram = super::start(
                settings,
                context.policy.clone(),
                context.replica_id.clone(),
                context.limits,
                context.engine.clone(),
                context.signer.clone(),
                context.inboxes.of(super::PLATFORM),
                context.ui_states.clone(),
                context.metrics.clone(),
                context.web.clone(),
            )
            .await
            .map_err(|e| e.to_string())?;
            Ok(Some(Started { platform: telegram, foreground: None, membership: None }))
        })
    }
}

impl PlatformSettings for TelegramSettings {
    fn enabled(&self) -> bool {
        self.enabled
    }

    fn problem(&self) -> Option<(&'static str, String)> {
        self.check().map(|(key, reason)| (key, reason.to_owned()))
    }
}
