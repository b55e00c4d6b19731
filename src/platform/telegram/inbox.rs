//! Telegram's updates in the durable inbox ([`crate::platform::kit::inbox`]): which
//! updates are stored and under which chat's lane, and how a stored one is handed to
//! the lanes. Updates are confirmed to Telegram once stored (the next `getUpdates`,
//! the webhook's 200), not once handled.

use std::sync::Arc;

use teloxide::types::{Update, UpdateKind};

use super::Telegram;
use super::chat::chat_key;
use super::send;
use super::text::escape;
use super::{chat, clicks};
use crate::platform::kit::inbox::{Done, InboxHandler, Unstored};
use crate::platform::locale::{Msg, text};
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
/// stored, and the caller must not confirm them. When the store is failing, their
/// senders are told first ([`tell_not_stored`]).
pub async fn receive(tg: &Arc<Telegram>, updates: Vec<Update>) -> Result<(), StoreError> {
    let rows = updates.into_iter().filter_map(|u| row(&u).map(|r| (r, u))).collect();
    match tg.inbox.receive(tg, rows).await {
        Ok(()) => Ok(()),
        Err(Unstored { error, updates }) => {
            if error.is_outage() {
                tell_not_stored(tg, &updates).await;
            }
            Err(error)
        }
    }
}

/// Tells the people whose updates could not be stored because the store is failing
/// that they are not saved yet: a click's spinner ends with the notice, a message gets
/// it as a reply. Nothing is lost meanwhile: unconfirmed, the updates come back from
/// Telegram and are handled once stored, so the notice asks nobody to send again. Once
/// per update, and a chat gets at most one such message a minute.
async fn tell_not_stored(tg: &Arc<Telegram>, updates: &[Update]) {
    let now = std::time::Instant::now();
    for update in updates {
        match &update.kind {
            UpdateKind::CallbackQuery(query) => {
                let chat = query.message.as_ref().map(|m| m.chat().id.0).unwrap_or_default();
                if !tg.caches().may_tell_unstored(i64::from(update.id.0), None, now) {
                    continue;
                }
                let locale = tg.locale(&chat.to_string(), query.from.language_code.as_deref());
                send::answer(&tg.bot, query.id.clone(), Some(text(locale, Msg::StoreDelayed)), true).await;
            }
            UpdateKind::Message(message) if !message.from.as_ref().is_some_and(|u| u.is_bot) => {
                if !tg.caches().may_tell_unstored(i64::from(update.id.0), Some(message.chat.id.0), now) {
                    continue;
                }
                let language = message.from.as_ref().and_then(|u| u.language_code.as_deref());
                let locale = tg.locale(&message.chat.id.0.to_string(), language);
                let chat = chat_key(message.chat.id, Some(message));
                let notice = format!("⚠️ {}", escape(text(locale, Msg::StoreDelayed)));
                if let Err(e) = send::html_reply(&tg.bot, &chat, &notice, None, Some(message.id)).await {
                    tracing::warn!(error = %e, "cannot tell a sender their message is not stored yet");
                }
            }
            _ => {}
        }
    }
}

impl InboxHandler for Telegram {
    type Update = Update;

    /// Queues one stored update on its chat's lane.
    fn handle(self: &Arc<Self>, update: Update, done: Done) {
        match update.kind {
            UpdateKind::Message(message) => {
                let tg = self.clone();
                self.lanes.push(message.chat.id.0, async move {
                    chat::on_message(&tg, message).await;
                    drop(done);
                });
            }
            UpdateKind::CallbackQuery(query) => {
                let chat_id = query.message.as_ref().map_or(0, |m| m.chat().id.0);
                let tg = self.clone();
                self.lanes.push(chat_id, async move {
                    clicks::on_callback(&tg, query).await;
                    drop(done);
                });
            }
            _ => drop(done),
        }
    }
}
