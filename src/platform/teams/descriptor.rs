//! Teams' [`Descriptor`]: its address grammar, its `[teams]` section and how it
//! starts.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::settings::TeamsSettings;
use crate::interaction::chat::ChatNetwork;
use crate::platform::descriptor::{self, Descriptor, PlatformSettings, Section, StartContext, Started};
use crate::platform::kit::inbox::DurableInbox;

/// The Microsoft Teams platform.
pub struct Teams;

impl Descriptor for Teams {
    fn network(&self) -> Arc<dyn ChatNetwork> {
        Arc::new(super::address::Address)
    }

    fn title(&self) -> &'static str {
        "Microsoft Teams"
    }

    fn defaults(&self) -> &'static str {
        include_str!("default.toml")
    }

    fn read_section(&self, config: &config::Config) -> Result<Box<dyn Section>, config::ConfigError> {
        descriptor::read_section::<TeamsSettings>(config, super::PLATFORM)
    }

    fn start<'a>(&'a self, section: &'a dyn Section, context: &'a StartContext) -> BoxFuture<'a, Result<Option<Started>, String>> {
        Box::pin(async move {
            let Some(settings) = section.as_any().downcast_ref::<TeamsSettings>() else { return Err("not Teams' section".into()) };
            let wiring = super::Wiring {
                engine: context.engine.clone(),
                signer: context.signer.clone(),
                policy: context.policy.clone(),
                limits: context.limits,
                inbox: DurableInbox::new(context.inboxes.of(super::PLATFORM), context.replica_id.clone()),
                web: context.web.clone(),
                groups: context.groups.clone(),
            };
            let teams = super::start(settings, wiring).await.map_err(|e| e.to_string())?;
            Ok(Some(Started { platform: teams.clone(), foreground: None, membership: Some(teams) }))
        })
    }

    /// `hitl-bridge teams package --app-id ID [--public-url URL] [--out PATH]`.
    fn admin_command(&self) -> Option<clap::Command> {
        Some(super::manifest::admin_command())
    }

    fn run_admin_command(&self, matches: &clap::ArgMatches) -> Result<String, String> {
        super::manifest::run_admin_command(matches)
    }
}

impl PlatformSettings for TeamsSettings {
    fn enabled(&self) -> bool {
        self.enabled
    }

    fn problem(&self) -> Option<(&'static str, String)> {
        self.check().map(|(key, reason)| (key, reason.to_owned()))
    }
}
