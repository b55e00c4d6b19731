//! Outgoing Bot API calls, each retried after a 429 for as long as Telegram asks
//! (`retry_after`): a message is delayed, never dropped. Sends also go through
//! teloxide's `Throttle` (per-chat and global rate limits); edits and callback
//! answers are not throttled by it, so the retry here is what protects them.

use std::time::Duration;

use teloxide::RequestError;
use teloxide::payloads::{AnswerCallbackQuerySetters, EditMessageTextSetters, SendDocumentSetters, SendMessageSetters};
use teloxide::prelude::Requester;
use teloxide::requests::{Output, Request};
use teloxide::types::{
    CallbackQueryId, ChatId, InlineKeyboardMarkup, InputFile, LinkPreviewOptions, MessageId, ParseMode, ReplyMarkup, ReplyParameters,
    ThreadId,
};

use super::TgBot;
use crate::platform::PlatformError;
use crate::store::ChatKey;

/// Gives up after this many 429s in a row for one call: Telegram asking to wait that
/// often means something else is wrong, and the caller logs it.
const MAX_RETRIES: usize = 20;

/// Sends `request`, waiting out every `RetryAfter`.
pub async fn retrying<R>(request: R) -> Result<Output<R>, RequestError>
where
    R: Request<Err = RequestError>,
{
    let mut attempts = 0;
    loop {
        match request.send_ref().await {
            Err(RequestError::RetryAfter(after)) if attempts < MAX_RETRIES => {
                attempts += 1;
                tracing::warn!(seconds = after.seconds(), "telegram asked to slow down; retrying");
                tokio::time::sleep(after.duration().max(Duration::from_millis(100))).await;
            }
            // A network hiccup: one quick retry, then report.
            Err(RequestError::Network(e)) if attempts == 0 => {
                attempts += 1;
                tracing::warn!(error = %e, "telegram request failed; retrying once");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            other => return other,
        }
    }
}

pub fn fail(e: impl std::fmt::Display) -> PlatformError {
    PlatformError::Send { platform: super::PLATFORM, message: e.to_string() }
}

/// Where a chat key points: the chat, and the forum topic if any.
pub fn target(chat: &ChatKey) -> Result<(ChatId, Option<ThreadId>), PlatformError> {
    let chat_id = chat.chat_id.parse::<i64>().map_err(|_| fail(format!("not a Telegram chat id: {}", chat.chat_id)))?;
    let thread = match chat.thread_id.as_deref() {
        Some(t) => Some(ThreadId(MessageId(t.parse::<i32>().map_err(|_| fail(format!("not a Telegram topic id: {t}")))?))),
        None => None,
    };
    Ok((ChatId(chat_id), thread))
}

fn no_preview() -> LinkPreviewOptions {
    LinkPreviewOptions { is_disabled: true, url: None, prefer_small_media: false, prefer_large_media: false, show_above_text: false }
}

/// One HTML message; returns its id.
pub async fn html(bot: &TgBot, chat: &ChatKey, text: &str, markup: Option<ReplyMarkup>) -> Result<MessageId, PlatformError> {
    html_reply(bot, chat, text, markup, None).await
}

/// One HTML message, optionally quoting `reply_to` (sent anyway if that one is gone).
pub async fn html_reply(bot: &TgBot, chat: &ChatKey, text: &str, markup: Option<ReplyMarkup>, reply_to: Option<MessageId>) -> Result<MessageId, PlatformError> {
    let (chat_id, thread) = target(chat)?;
    let mut request = bot.send_message(chat_id, text).parse_mode(ParseMode::Html).link_preview_options(no_preview());
    if let Some(reply_to) = reply_to {
        request = request.reply_parameters(ReplyParameters::new(reply_to).allow_sending_without_reply());
    }
    if let Some(thread) = thread {
        request = request.message_thread_id(thread);
    }
    if let Some(markup) = markup {
        request = request.reply_markup(markup);
    }
    retrying(request).await.map(|m| m.id).map_err(fail)
}

/// Replaces a message's text and keyboard. "message is not modified" is success: the
/// message already shows what we wanted.
pub async fn edit(bot: &TgBot, chat_id: ChatId, message_id: MessageId, text: &str, keyboard: InlineKeyboardMarkup) -> Result<(), PlatformError> {
    let request = bot
        .edit_message_text(chat_id, message_id, text)
        .parse_mode(ParseMode::Html)
        .link_preview_options(no_preview())
        .reply_markup(keyboard);
    match retrying(request).await {
        Ok(_) => Ok(()),
        Err(RequestError::Api(teloxide::ApiError::MessageNotModified)) => Ok(()),
        Err(e) => Err(fail(e)),
    }
}

/// Answers a callback query (every one must be answered, or the client spins).
pub async fn answer(bot: &TgBot, id: CallbackQueryId, text: Option<&str>, alert: bool) {
    let mut request = bot.answer_callback_query(id);
    if let Some(text) = text {
        request = request.text(super::text::cut(text, super::text::MAX_ALERT_CHARS)).show_alert(alert);
    }
    if let Err(e) = retrying(request).await {
        tracing::warn!(error = %e, "cannot answer a callback query");
    }
}

/// A JSON file (the full args of an action when the message had to cut them).
pub async fn document(bot: &TgBot, chat: &ChatKey, name: &str, content: String, caption: &str) -> Result<(), PlatformError> {
    let (chat_id, thread) = target(chat)?;
    let mut request = bot.send_document(chat_id, InputFile::memory(content.into_bytes()).file_name(name.to_owned())).caption(caption);
    if let Some(thread) = thread {
        request = request.message_thread_id(thread);
    }
    retrying(request).await.map(|_| ()).map_err(fail)
}
