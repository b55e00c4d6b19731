//! Discord's [`Descriptor`]: its address grammar, its `[discord]` section and how it
//! starts.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::settings::DiscordSettings;
use crate::interaction::chat::ChatNetwork;
use crate::platform::descriptor::{self, Descriptor, PlatformSettings, Section, StartContext, Started};

/// The Discord platform.
pub struct Discord;

impl Descriptor for Discord {
    fn network(&self) -> Arc<dyn ChatNetwork> {
        Arc::new(super::address::ADDRESS)
    }

    fn title(&self) -> &'static str {
        "Discord"
    }

    fn defaults(&self) -> &'static str {
        include_str!("default.toml")
    }

    fn read_section(&self, config: &config::Config) -> Result<Box<dyn Section>, config::ConfigError> {
        descriptor::read_section::<DiscordSettings>(config, super::PLATFORM)
    }

    fn start<'a>(&'a self, section: &'a dyn Section, context: &'a StartContext) -> BoxFuture<'a, Result<Option<Started>, String>> {
        Box::pin(async move {
            let Some(settings) = section.as_any().downcast_ref::<DiscordSettings>() else { return Err("not Discord's section".into()) };
            let discord = super::start(
                settings,
                context.limits,
                context.policy.clone(),
                context.signer.clone(),
                context.engine.clone(),
                context.ui_states.clone(),
                context.metrics.clone(),
                context.web.clone(),
            )
            .await
            .map_err(|e| e.to_string())?;
            Ok(Some(Started { platform: discord.clone(), foreground: None, membership: Some(discord) }))
        })
    }
}

impl PlatformSettings for DiscordSettings {
    fn enabled(&self) -> bool {
        self.enabled
    }

    fn problem(&self) -> Option<(&'static str, String)> {
        self.check().map(|(key, reason)| (key, reason.to_owned()))
    }
}
