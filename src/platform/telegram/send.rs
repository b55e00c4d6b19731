//! Outgoing Bot API calls, each retried after a 429 for as long as Telegram asks
//! (`retry_after`): a message is delayed, never dropped. Sends also go through
//! teloxide's `Throttle` (per-chat and global rate limits, its own retry off); edits
//! and callback answers are not throttled by it. The retry here protects them all.
//! Every failed attempt is counted in `platform_errors_total` ([`TgBot`] carries the
//! bridge's [`Metrics`]).

use std::ops::Deref;
use std::time::Duration;

use teloxide::adaptors::Throttle;
use teloxide::{ApiError, Bot, RequestError};
use teloxide::payloads::{AnswerCallbackQuerySetters, EditMessageTextSetters, SendDocumentSetters, SendMessageSetters};
use teloxide::prelude::Requester;
use teloxide::requests::{Output, Request};
use teloxide::types::{
    CallbackQueryId, ChatId, InlineKeyboardMarkup, InputFile, LinkPreviewOptions, MessageId, ParseMode, ReplyMarkup, ReplyParameters,
    ThreadId,
};

use crate::metrics::{Metrics, PlatformErrorKind};
use crate::platform::PlatformError;
use crate::store::ChatKey;

/// The Bot API client: teloxide's `Bot` behind its rate limiter, with the metrics its
/// failures are counted in. Derefs to the client, so requests are built on it directly.
pub struct TgBot {
    api: Throttle<Bot>,
    metrics: Metrics,
}

impl TgBot {
    pub fn new(api: Throttle<Bot>, metrics: Metrics) -> Self {
        Self { api, metrics }
    }
}

impl Deref for TgBot {
    type Target = Throttle<Bot>;

    fn deref(&self) -> &Throttle<Bot> {
        &self.api
    }
}

/// What kind of failure a Bot API error is. teloxide keeps no HTTP status, so it is
/// read from the variant: Telegram's own 5xx come back as API errors named after the
/// status, and a body that is not the Bot API's JSON is what a failing server or proxy
/// sends. `None` for "message is not modified", which callers treat as success.
fn error_kind(e: &RequestError) -> Option<PlatformErrorKind> {
    Some(match e {
        RequestError::RetryAfter(_) => PlatformErrorKind::RateLimited,
        RequestError::Network(_) | RequestError::Io(_) => PlatformErrorKind::Network,
        RequestError::InvalidJson { .. } => PlatformErrorKind::Server,
        RequestError::Api(ApiError::MessageNotModified) => return None,
        RequestError::Api(ApiError::Unknown(description)) if is_server_error(description) => PlatformErrorKind::Server,
        RequestError::Api(_) | RequestError::MigrateToChatId(_) => PlatformErrorKind::Client,
    })
}

/// Telegram describes its 5xx answers by the status's reason phrase.
fn is_server_error(description: &str) -> bool {
    ["Internal Server Error", "Bad Gateway", "Service Unavailable", "Gateway Timeout"].iter().any(|p| description.starts_with(p))
}

/// Gives up after this many 429s in a row for one call: Telegram asking to wait that
/// often means something else is wrong, and the caller logs it.
const MAX_RETRIES: usize = 20;

/// Sends `request` (built on `bot`), waiting out every `RetryAfter`.
pub async fn retrying<R>(bot: &TgBot, request: R) -> Result<Output<R>, RequestError>
where
    R: Request<Err = RequestError>,
{
    let mut attempts = 0;
    loop {
        let result = request.send_ref().await;
        if let Some(kind) = result.as_ref().err().and_then(error_kind) {
            bot.metrics.platform_error(super::PLATFORM, kind);
        }
        match result {
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
    retrying(bot, request).await.map(|m| m.id).map_err(fail)
}

/// Replaces a message's text and keyboard. "message is not modified" is success: the
/// message already shows what we wanted.
pub async fn edit(bot: &TgBot, chat_id: ChatId, message_id: MessageId, text: &str, keyboard: InlineKeyboardMarkup) -> Result<(), PlatformError> {
    let request = bot
        .edit_message_text(chat_id, message_id, text)
        .parse_mode(ParseMode::Html)
        .link_preview_options(no_preview())
        .reply_markup(keyboard);
    match retrying(bot, request).await {
        Ok(_) => Ok(()),
        Err(RequestError::Api(ApiError::MessageNotModified)) => Ok(()),
        Err(e) => Err(fail(e)),
    }
}

/// Answers a callback query (every one must be answered, or the client spins).
pub async fn answer(bot: &TgBot, id: CallbackQueryId, text: Option<&str>, alert: bool) {
    let mut request = bot.answer_callback_query(id);
    if let Some(text) = text {
        request = request.text(super::text::cut(text, super::text::MAX_ALERT_CHARS)).show_alert(alert);
    }
    if let Err(e) = retrying(bot, request).await {
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
    retrying(bot, request).await.map(|_| ()).map_err(fail)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use teloxide::types::Seconds;

    use super::*;

    #[test]
    fn bot_api_errors_map_to_metric_kinds() {
        let kind = |e: RequestError| error_kind(&e);
        assert_eq!(kind(RequestError::RetryAfter(Seconds::from_seconds(3))), Some(PlatformErrorKind::RateLimited));
        assert_eq!(kind(RequestError::Api(ApiError::Unknown("Internal Server Error".into()))), Some(PlatformErrorKind::Server));
        assert_eq!(kind(RequestError::Api(ApiError::Unknown("Bad Gateway".into()))), Some(PlatformErrorKind::Server));
        let html = serde_json::from_str::<serde_json::Value>("<html>502</html>").expect_err("not JSON");
        assert_eq!(kind(RequestError::InvalidJson { source: Arc::new(html), raw: "<html>502</html>".into() }), Some(PlatformErrorKind::Server));
        assert_eq!(kind(RequestError::Api(ApiError::BotBlocked)), Some(PlatformErrorKind::Client));
        assert_eq!(kind(RequestError::Api(ApiError::Unknown("Bad Request: chat not found".into()))), Some(PlatformErrorKind::Client));
        assert_eq!(kind(RequestError::Io(Arc::new(std::io::Error::other("reset")))), Some(PlatformErrorKind::Network));
        // An edit that changes nothing is success to the bridge, not an error.
        assert_eq!(kind(RequestError::Api(ApiError::MessageNotModified)), None);
    }
}
