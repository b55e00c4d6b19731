//! [`MessageRef`]: a platform message that shows an interaction. A plain value of its
//! own so that what holds one (the writes a transaction leaves to its end, in
//! [`super::deferred`]) need not import the table that stores it ([`super::messages`]),
//! which itself writes through the group commit: the type sits below both.

use super::chats::ChatKey;

/// A platform message that shows an interaction, so it can be edited when it ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageRef {
    pub interaction_id: String,
    pub chat: ChatKey,
    pub message_id: String,
}
