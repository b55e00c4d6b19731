//! The [`Platform`] trait: the engine's one view of a chat network, the mirror of
//! [`super::Connector`]. Every method is one outgoing message or edit; rendering, and
//! the network's limits, are the platform's. Streaming text is optional: the defaults
//! of [`Platform::text_progress`] and [`Platform::finish_text`] show only the complete
//! text, as [`Platform::send_text`] does.

use futures_util::future::BoxFuture;

use crate::interaction::Interaction;
use crate::interaction::policy::Mention;
use crate::interaction::updates::{Notice, ToolGroupStatus};
use crate::store::{ChatKey, MessageRef};

/// An escalation reminder, as [`Platform::send_reminder`] is asked to send it.
#[derive(Debug, Clone, Copy)]
pub struct Reminder<'a> {
    /// Where it goes.
    pub chat: &'a ChatKey,
    /// The request that still waits.
    pub interaction: &'a Interaction,
    /// Whom it mentions (whom `Approvers` means is the platform's call).
    pub mention: &'a Mention,
    /// The message that shows the request in this chat, when there is one: the
    /// reminder replies to it, one tap from the buttons.
    pub card: Option<&'a MessageRef>,
}

impl<'a> Reminder<'a> {
    pub fn new(chat: &'a ChatKey, interaction: &'a Interaction, mention: &'a Mention, card: Option<&'a MessageRef>) -> Self {
        Self { chat, interaction, mention, card }
    }
}

/// A call a platform could not make. `Send` may work later (a 429, a 5xx, the
/// network); `Refused` never will for that chat: the platform said so for good (chat
/// not found, the bot not in the channel or blocked by the person), so a card refused
/// this way is not tried again there.
#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    #[error("{platform}: {message}")]
    Send { platform: &'static str, message: String },
    /// `message` is the platform's own reason, as shown to the pusher.
    #[error("{platform}: {message}")]
    Refused { platform: &'static str, message: String },
}

impl PlatformError {
    /// The platform's reason when it refused for good; `None` when trying again may
    /// work.
    pub fn refusal(&self) -> Option<&str> {
        match self {
            Self::Refused { message, .. } => Some(message),
            Self::Send { .. } => None,
        }
    }
}

/// What the engine asks of a platform. Every method is one outgoing message or edit.
pub trait Platform: Send + Sync {
    /// The name used in [`ChatKey::platform`].
    fn name(&self) -> &'static str;

    /// Agent text for a chat.
    fn send_text<'a>(&'a self, chat: &'a ChatKey, text: &'a str) -> BoxFuture<'a, Result<(), PlatformError>>;

    /// Agent text still arriving: everything block `block` holds so far (at most about
    /// once a second per block; intermediate reports may have been dropped on the
    /// way). A platform that streams shows it in one message it edits as the text
    /// grows; by default nothing is shown until the text is complete.
    fn text_progress<'a>(&'a self, _chat: &'a ChatKey, _block: u64, _text_so_far: &'a str) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async { Ok(()) })
    }

    /// The complete text of block `block`, which reported progress: a platform that
    /// streamed it finishes the same message (the whole text, always). By default it
    /// is sent as any text is.
    fn finish_text<'a>(&'a self, chat: &'a ChatKey, _block: u64, text: &'a str) -> BoxFuture<'a, Result<(), PlatformError>> {
        self.send_text(chat, text)
    }

    /// A tool group's status line, created on the first call for a group and edited after.
    fn tool_status<'a>(&'a self, chat: &'a ChatKey, status: &'a ToolGroupStatus) -> BoxFuture<'a, Result<(), PlatformError>>;

    /// Shows a new interaction; returns the message id to edit later, if any.
    fn show_interaction<'a>(&'a self, chat: &'a ChatKey, interaction: &'a Interaction) -> BoxFuture<'a, Result<Option<String>, PlatformError>>;

    /// Whether a message shown stays there when the bridge restarts (a chat keeps it; a
    /// terminal does not, and must print what waits again).
    fn keeps_messages(&self) -> bool {
        true
    }

    /// Re-renders an interaction's message: its draft changed, or it ended (then the
    /// outcome is shown and the controls are removed).
    fn refresh_interaction<'a>(&'a self, message: &'a MessageRef, interaction: &'a Interaction) -> BoxFuture<'a, Result<(), PlatformError>>;

    /// A notice for a chat that is not agent output (an error from the backend, a
    /// request that could not be understood, "you may now talk"), worded by the
    /// platform.
    fn send_notice<'a>(&'a self, chat: &'a ChatKey, notice: &'a Notice) -> BoxFuture<'a, Result<(), PlatformError>>;

    /// An escalation reminder in `chat` that `interaction` still waits, mentioning
    /// `mention` (whom `Approvers` means is the platform's call), as a reply to
    /// `card`, the message that shows the request in this chat, when there is one (one
    /// tap from the reminder to the buttons). Goes through the same send path and rate
    /// limits as every other message.
    ///
    fn send_reminder<'a>(&'a self, reminder: Reminder<'a>) -> BoxFuture<'a, Result<(), PlatformError>>;

    /// Stops background tasks (polling, gateway, HTTP servers). Called once at shutdown.
    fn shutdown(&self) {}
}
