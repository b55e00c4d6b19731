//! Mattermost's [`Descriptor`]: its address grammar, its `[mattermost]` section and
//! how it starts.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::settings::MattermostSettings;
use crate::interaction::chat::ChatNetwork;
use crate::platform::descriptor::{self, Descriptor, PlatformSettings, Section, StartContext, Started};
use crate::platform::kit::inbox::DurableInbox;

/// The Mattermost platform.
pub struct Mattermost;

impl Descriptor for Mattermost {
    fn network(&self) -> Arc<dyn ChatNetwork> {
        Arc::new(super::address::Address)
    }

    fn title(&self) -> &'static str {
        "Mattermost"
    }

    fn defaults(&self) -> &'static str {
        include_str!("default.toml")
    }

    fn read_section(&self, config: &config::Config) -> Result<Box<dyn Section>, config::ConfigError> {
        descriptor::read_section::<MattermostSettings>(config, super::PLATFORM)
    }

    fn start<'a>(&'a self, section: &'a dyn Section, context: &'a StartContext) -> BoxFuture<'a, Result<Option<Started>, String>> {
        Box::pin(async move {
            let Some(settings) = section.as_any().downcast_ref::<MattermostSettings>() else { return Err("not Mattermost's section".into()) };
            let wiring = super::Wiring {
                engine: context.engine.clone(),
                signer: context.signer.clone(),
                policy: context.policy.clone(),
                metrics: context.metrics.clone(),
                limits: context.limits,
                inbox: DurableInbox::new(context.inboxes.of(super::PLATFORM), context.replica_id.clone()),
                web: context.web.clone(),
                groups: context.groups.clone(),
                state: context.state_of(super::PLATFORM),
            };
            let mattermost = super::start(settings, wiring).await.map_err(|e| e.to_string())?;
            Ok(Some(Started { platform: mattermost, foreground: None, membership: None }))
        })
    }

    /// `hitl-bridge mattermost setup`.
    fn admin_command(&self) -> Option<clap::Command> {
        Some(super::setup::admin_command())
    }

    fn run_admin_command(&self, matches: &clap::ArgMatches) -> Result<String, String> {
        super::setup::run_admin_command(matches)
    }
}

impl PlatformSettings for MattermostSettings {
    fn enabled(&self) -> bool {
        self.enabled
    }

    fn problem(&self) -> Option<(&'static str, String)> {
        self.check().map(|(key, reason)| (key, reason.to_owned()))
    }
}
