//! The console's [`Descriptor`]: the terminal as a chat platform like the others,
//! started only when the bridge has a terminal to give it.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::settings::ConsoleSettings;
use crate::interaction::chat::ChatNetwork;
use crate::platform::descriptor::{self, Descriptor, PlatformSettings, Section, StartContext, Started};

/// The console platform.
pub struct Console;

impl Descriptor for Console {
    fn network(&self) -> Arc<dyn ChatNetwork> {
        Arc::new(super::address::Address)
    }

    fn title(&self) -> &'static str {
        "the terminal"
    }

    fn defaults(&self) -> &'static str {
        include_str!("default.toml")
    }

    fn read_section(&self, config: &config::Config) -> Result<Box<dyn Section>, config::ConfigError> {
        descriptor::read_section::<ConsoleSettings>(config, super::PLATFORM)
    }

    /// Reads the terminal until its input ends, which ends the bridge.
    fn start<'a>(&'a self, section: &'a dyn Section, context: &'a StartContext) -> BoxFuture<'a, Result<Option<Started>, String>> {
        Box::pin(async move {
            let Some(settings) = section.as_any().downcast_ref::<ConsoleSettings>() else { return Err("not the console's section".into()) };
            let Some(terminal) = context.take_terminal() else { return Ok(None) };
            let console = super::Console::new(settings, terminal.output);
            let foreground = Box::pin(console.clone().run(terminal.input, context.engine.clone()));
            Ok(Some(Started { platform: console, foreground: Some(foreground), membership: None }))
        })
    }
}

impl PlatformSettings for ConsoleSettings {
    fn enabled(&self) -> bool {
        self.enabled
    }
}
