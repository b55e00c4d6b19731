//! Delivering the durable outbox: a session's queued commands, oldest first, written
//! to its link and removed from the store only once written, so a crash or a dropped
//! connection never loses a decision (a crash between the write and the removal sends
//! it again; `approval_key` lets the backend tell).

use crate::protocol::Command;
use crate::store::Store;

use super::session::{Link, LinkError};

/// Sends every queued command of `session_id` through `link`, in order. `on_send` sees
/// each command just before it is written (to note an open turn).
pub async fn flush<L: Link>(store: &Store, session_id: &str, link: &mut L, mut on_send: impl FnMut(&Command)) -> Result<(), LinkError> {
    for (id, command) in store.outbox_for_session(session_id).await? {
        on_send(&command);
        link.send(&command).await?;
        // Removed only once written: a crash before this line re-sends it on restart.
        store.remove_outbox(id).await?;
        tracing::debug!(%session_id, outbox_id = id, "command delivered");
    }
    Ok(())
}

/// Whether `session_id` has commands waiting.
pub async fn has_commands(store: &Store, session_id: &str) -> Result<bool, LinkError> {
    Ok(!store.outbox_for_session(session_id).await?.is_empty())
}
