//! Telegram's updates in the durable inbox ([`crate::platform::inbox`]): which
//! updates are stored and under which chat's lane, and how a stored one is handed to
//! the lanes. Updates are confirmed to Telegram once stored (the next `getUpdates`,
//! the webhook's 200), not once handled.

use std::sync::Arc;

use teloxide::types::{Update, UpdateKind};

use super::Telegram;
use super::lanes::{Job, Lanes};
use crate::platform::inbox::{Done, InboxHandler};
use crate::store::{InboxUpdate, StoreError};

/// The update's inbox row, `None` for kinds the bridge does not handle (confirmed and
/// dropped).
pub fn row(update: &Update) -> Option<InboxUpdate> {
    let chat_id = match &update.kind {
        UpdateKind::Message(message) => message.chat.id.0,
        // A click on an inline message has no chat; it still needs its answer.
        UpdateKind::CallbackQuery(query) => query.message.as_ref().map_or(0, |m| m.chat().id.0),
        UpdateKind::Error(value) => {
            tracing::warn!(update = %value, "an update teloxide cannot read; skipped");
            return None;
        }
        other => {
            tracing::debug!(kind = ?std::mem::discriminant(other), "ignoring an update kind");
            return None;
        }
    };
    let body = serde_json::to_string(update).ok()?;
    let id = i64::from(update.id.0);
    Some(InboxUpdate { update_id: id.to_string(), seq: id, lane: chat_id.to_string(), body })
}

/// Stores `updates` and hands the new ones to their lanes; an error means nothing was
/// stored, and the caller must not confirm them.
pub async fn receive(tg: &Arc<Telegram>, updates: Vec<Update>) -> Result<(), StoreError> {
    let rows = updates.into_iter().filter_map(|u| row(&u).map(|r| (r, u))).collect();
    tg.inbox.receive(tg, rows).await
}

impl InboxHandler for Telegram {
    type Update = Update;

    /// Queues one stored update on its chat's lane.
    fn handle(self: &Arc<Self>, update: Update, done: Done) {
        match update.kind {
            UpdateKind::Message(message) => Lanes::push(self, message.chat.id.0, Job::Message(Box::new(message), done)),
            UpdateKind::CallbackQuery(query) => {
                let chat_id = query.message.as_ref().map_or(0, |m| m.chat().id.0);
                Lanes::push(self, chat_id, Job::Click(Box::new(query), done));
            }
            _ => drop(done),
        }
    }
}
