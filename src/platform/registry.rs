//! The chat platforms this bridge has: one line each. Configuration, the app, the
//! HTTP API, MCP, pairing, the admin commands and the demo read this list; a new
//! platform is its folder and its line here.

use std::sync::Arc;

use super::descriptor::Descriptor;
use super::{console, discord, slack, telegram};
use crate::interaction::chat::Networks;

/// Every platform, in the order messages list them.
pub static DESCRIPTORS: &[&dyn Descriptor] =
    &[&telegram::descriptor::Telegram, &discord::descriptor::Discord, &slack::descriptor::Slack, &console::descriptor::Console];

/// Every platform's address grammar: what the core, the engine and the HTTP API know
/// of the platforms.
pub fn networks() -> Networks {
    Networks::new(DESCRIPTORS.iter().map(|d| d.network()).collect::<Vec<Arc<_>>>())
}

/// The platform named `name`.
pub fn descriptor(name: &str) -> Option<&'static dyn Descriptor> {
    DESCRIPTORS.iter().copied().find(|d| d.network().name() == name)
}
