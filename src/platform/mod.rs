//! Chat platforms: each renders interactions into its own widgets and turns clicks
//! and replies into calls on the [`EngineHandle`](crate::engine::EngineHandle).
//!
//! The engine talks to every platform through [`Platform`], so adding a network never
//! touches the core. Rendering must respect the platform's limits; deciding what a
//! click means is the core's job, not the platform's.

pub mod bounded;
pub mod console;
pub mod discord;
pub mod locale;
pub mod telegram;
pub mod token;

use futures_util::future::BoxFuture;

use crate::backend::ToolGroupStatus;
use crate::interaction::Interaction;
use crate::store::{ChatKey, MessageRef};

#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    #[error("{platform}: {message}")]
    Send { platform: &'static str, message: String },
}

/// What the engine asks of a platform. Every method is one outgoing message or edit.
pub trait Platform: Send + Sync {
    /// The name used in [`ChatKey::platform`].
    fn name(&self) -> &'static str;

    /// Agent text for a chat.
    fn send_text<'a>(&'a self, chat: &'a ChatKey, text: &'a str) -> BoxFuture<'a, Result<(), PlatformError>>;

    /// A tool group's status line, created on the first call for a group and edited after.
    fn tool_status<'a>(&'a self, chat: &'a ChatKey, status: &'a ToolGroupStatus) -> BoxFuture<'a, Result<(), PlatformError>>;

    /// Shows a new interaction; returns the message id to edit later, if any.
    fn show_interaction<'a>(&'a self, chat: &'a ChatKey, interaction: &'a Interaction) -> BoxFuture<'a, Result<Option<String>, PlatformError>>;

    /// Re-renders an interaction's message: its draft changed, or it ended (then the
    /// outcome is shown and the controls are removed).
    fn refresh_interaction<'a>(&'a self, message: &'a MessageRef, interaction: &'a Interaction) -> BoxFuture<'a, Result<(), PlatformError>>;

    /// A notice for a chat that is not agent output (an error from the backend, a
    /// request that could not be understood).
    fn send_notice<'a>(&'a self, chat: &'a ChatKey, text: &'a str) -> BoxFuture<'a, Result<(), PlatformError>>;

    /// Stops background tasks (polling, gateway, HTTP servers). Called once at shutdown.
    fn shutdown(&self) {}
}
