//! Outgoing Bot API calls, each retried after a 429 for as long as Telegram asks
//! (`retry_after`): a message is delayed, never dropped. New messages first pass the
//! rate limits ([`super::pacing`]: per chat, per group, overall) and go out at once
//! when under them; edits and callback answers are not counted against them. A 429
//! pauses the chat it was about (every chat, for a call that names none), so the
//! other sends to it wait the same `retry_after` instead of each earning its own 429.
//! Every failed attempt is counted in `platform_errors_total` ([`TgBot`] carries the
//! bridge's [`Metrics`](crate::metrics::Metrics)).

use std::time::Duration;

use teloxide::payloads::{AnswerCallbackQuerySetters, EditMessageTextSetters, SendDocumentSetters, SendMessageSetters};
use teloxide::prelude::Requester;
use teloxide::requests::{Output, Request};
use teloxide::types::{
    CallbackQueryId, ChatId, InlineKeyboardMarkup, InputFile, LinkPreviewOptions, MessageId, ParseMode, ReplyMarkup, ReplyParameters, ThreadId,
};
use teloxide::{ApiError, RequestError};

use super::TgBot;
pub use super::pacing::Priority;
use super::pacing::Scope;
use crate::metrics::PlatformErrorKind;
use crate::platform::PlatformError;
use crate::store::ChatKey;

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

/// Whether Telegram's answer refuses for good: the chat, topic or person cannot be
/// reached by this bot (it does not exist, the bot was removed or blocked, or may not
/// post there), so the same message would be refused again. Telegram's 403s all say
/// the bot may not write there. Rate limits, 5xx and the network are no API error
/// here, and a message Telegram could not take is about the message: they pass.
fn refuses_for_good(e: &ApiError) -> bool {
    match e {
        ApiError::ChatNotFound
        | ApiError::UserNotFound
        | ApiError::GroupDeactivated
        | ApiError::BotBlocked
        | ApiError::BotKicked
        | ApiError::BotKickedFromSupergroup
        | ApiError::BotKickedFromChannel
        | ApiError::UserDeactivated
        | ApiError::CantInitiateConversation
        | ApiError::CantTalkWithBots
        | ApiError::NotEnoughRightsToPostMessages => true,
        ApiError::Unknown(description) => refuses_for_good_unknown(description),
        _ => false,
    }
}

/// [`refuses_for_good`] for a description teloxide has no variant for.
fn refuses_for_good_unknown(description: &str) -> bool {
    description.starts_with("Forbidden:") || description.starts_with("Bad Request: message thread not found")
}

/// Gives up after this many 429s in a row for one call: Telegram asking to wait that
/// often means something else is wrong, and the caller logs it.
const MAX_RETRIES: usize = 20;

/// Shortest wait after a 429, whatever `retry_after` says.
const MIN_RETRY_WAIT: Duration = Duration::from_millis(100);

/// What a call counts against: a new message in a chat, a change to one, or no chat.
#[derive(Debug, Clone, Copy)]
enum Call {
    Send(ChatId, Priority),
    Edit(ChatId),
    Chatless,
}

/// Sends `request` (a call outside the rate limits: getMe, getUpdates, webhooks),
/// waiting out every `RetryAfter`.
pub async fn retrying<R>(bot: &TgBot, request: R) -> Result<Output<R>, RequestError>
where
    R: Request<Err = RequestError>,
{
    with_retries(bot, request, None).await
}

/// Sends `request` once the rate limits allow `call`, retrying as [`retrying`] does;
/// a 429 pauses the chat (or, for a chatless call, the bot) before the retry.
async fn limited<R>(bot: &TgBot, call: Call, request: R) -> Result<Output<R>, RequestError>
where
    R: Request<Err = RequestError>,
{
    // A new message is charged to the quotas once; its retries only wait out pauses.
    match call {
        Call::Send(chat, priority) => bot.limiter.before_send(chat.0, priority).await,
        Call::Edit(chat) => bot.limiter.before_edit(chat.0).await,
        Call::Chatless => bot.limiter.before_any().await,
    }
    with_retries(bot, request, Some(call)).await
}

async fn with_retries<R>(bot: &TgBot, request: R, limited: Option<Call>) -> Result<Output<R>, RequestError>
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
                let wait = after.duration().max(MIN_RETRY_WAIT);
                tracing::warn!(seconds = after.seconds(), call = ?limited, "telegram asked to slow down; retrying");
                let Some(call) = limited else {
                    tokio::time::sleep(wait).await;
                    continue;
                };
                let scope = match call {
                    Call::Send(chat, _) | Call::Edit(chat) => Scope::One(chat.0),
                    Call::Chatless => Scope::All,
                };
                bot.limiter.pause(scope, wait);
                tokio::time::sleep(wait).await;
                // Another 429 meanwhile may have paused it for longer.
                match call {
                    Call::Send(chat, _) | Call::Edit(chat) => bot.limiter.before_edit(chat.0).await,
                    Call::Chatless => bot.limiter.before_any().await,
                }
            }
            // A network hiccup: one quick retry, then report. Logged at debug: the
            // caller reports a failure that lasts (getMe and getUpdates log each of
            // their own retries), so one outage is not logged twice per retry.
            Err(RequestError::Network(e)) if attempts == 0 => {
                attempts += 1;
                tracing::debug!(error = %e, "telegram request failed; retrying once");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            other => return other,
        }
    }
}

pub fn fail(e: impl std::fmt::Display) -> PlatformError {
    PlatformError::Send { platform: super::PLATFORM, message: e.to_string() }
}

/// A chat Telegram can never reach from here (see [`refuses_for_good`]).
fn refused(e: impl std::fmt::Display) -> PlatformError {
    PlatformError::Refused { platform: super::PLATFORM, message: e.to_string() }
}

/// A failed send: refused for good (with Telegram's own description, as the pusher
/// sees it), or worth trying again.
fn send_failed(e: RequestError) -> PlatformError {
    match e {
        RequestError::Api(ApiError::Unknown(description)) if refuses_for_good_unknown(&description) => refused(description),
        RequestError::Api(api) if refuses_for_good(&api) => refused(api),
        e => fail(e),
    }
}

/// Where a chat key points: the chat, and the forum topic if any.
pub fn target(chat: &ChatKey) -> Result<(ChatId, Option<ThreadId>), PlatformError> {
    let chat_id = chat.chat_id.parse::<i64>().map_err(|_| refused(format!("not a Telegram chat id: {}", chat.chat_id)))?;
    let thread = match chat.thread_id.as_deref() {
        Some(t) => Some(ThreadId(MessageId(t.parse::<i32>().map_err(|_| refused(format!("not a Telegram topic id: {t}")))?))),
        None => None,
    };
    Ok((ChatId(chat_id), thread))
}

fn no_preview() -> LinkPreviewOptions {
    LinkPreviewOptions { is_disabled: true, url: None, prefer_small_media: false, prefer_large_media: false, show_above_text: false }
}

/// One HTML message; returns its id.
pub async fn html(bot: &TgBot, chat: &ChatKey, text: &str, markup: Option<ReplyMarkup>) -> Result<MessageId, PlatformError> {
    message(bot, chat, text, markup, None, Priority::Text).await
}

/// One HTML message, optionally quoting `reply_to` (sent anyway if that one is gone).
pub async fn html_reply(bot: &TgBot, chat: &ChatKey, text: &str, markup: Option<ReplyMarkup>, reply_to: Option<MessageId>) -> Result<MessageId, PlatformError> {
    message(bot, chat, text, markup, reply_to, Priority::Text).await
}

/// An approval card, or a message that belongs to one (a reminder quoting it): ahead
/// of text and refusals when the overall quota is short.
pub async fn card(bot: &TgBot, chat: &ChatKey, text: &str, markup: Option<ReplyMarkup>, reply_to: Option<MessageId>) -> Result<MessageId, PlatformError> {
    message(bot, chat, text, markup, reply_to, Priority::Card).await
}

/// A refusal to someone who may not talk here: behind cards and text.
pub async fn refusal(bot: &TgBot, chat: &ChatKey, text: &str, reply_to: Option<MessageId>) -> Result<MessageId, PlatformError> {
    message(bot, chat, text, None, reply_to, Priority::Refusal).await
}

async fn message(
    bot: &TgBot,
    chat: &ChatKey,
    text: &str,
    markup: Option<ReplyMarkup>,
    reply_to: Option<MessageId>,
    priority: Priority,
) -> Result<MessageId, PlatformError> {
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
    limited(bot, Call::Send(chat_id, priority), request).await.map(|m| m.id).map_err(send_failed)
}

/// Replaces a message's text and keyboard. "message is not modified" is success: the
/// message already shows what we wanted.
pub async fn edit(bot: &TgBot, chat_id: ChatId, message_id: MessageId, text: &str, keyboard: InlineKeyboardMarkup) -> Result<(), PlatformError> {
    let request = bot.edit_message_text(chat_id, message_id, text).parse_mode(ParseMode::Html).link_preview_options(no_preview()).reply_markup(keyboard);
    match limited(bot, Call::Edit(chat_id), request).await {
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
    if let Err(e) = limited(bot, Call::Chatless, request).await {
        tracing::warn!(error = %e, "cannot answer a callback query");
    }
}

/// A JSON file (the full args of an action when the message had to cut them), sent
/// as part of its card.
pub async fn document(bot: &TgBot, chat: &ChatKey, name: &str, content: String, caption: &str) -> Result<(), PlatformError> {
    let (chat_id, thread) = target(chat)?;
    let mut request = bot.send_document(chat_id, InputFile::memory(content.into_bytes()).file_name(name.to_owned())).caption(caption);
    if let Some(thread) = thread {
        request = request.message_thread_id(thread);
    }
    limited(bot, Call::Send(chat_id, Priority::Card), request).await.map(|_| ()).map_err(send_failed)
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

    #[test]
    fn chats_the_bot_cannot_reach_are_refused_for_good_and_the_rest_retried() {
        let refusal = |e: RequestError| send_failed(e).refusal().map(str::to_owned);
        assert_eq!(refusal(RequestError::Api(ApiError::ChatNotFound)).as_deref(), Some("Bad Request: chat not found"));
        assert_eq!(refusal(RequestError::Api(ApiError::BotBlocked)).as_deref(), Some("Forbidden: bot was blocked by the user"));
        for e in [ApiError::BotKicked, ApiError::BotKickedFromSupergroup, ApiError::UserDeactivated, ApiError::CantInitiateConversation] {
            assert!(refusal(RequestError::Api(e)).is_some());
        }
        let not_member = "Forbidden: bot is not a member of the channel chat";
        assert_eq!(refusal(RequestError::Api(ApiError::Unknown(not_member.into()))).as_deref(), Some(not_member));
        assert!(refusal(RequestError::Api(ApiError::Unknown("Bad Request: message thread not found".into()))).is_some());
        // Worth trying again: a 429, a 5xx, the network, a message Telegram could not parse.
        assert_eq!(refusal(RequestError::RetryAfter(Seconds::from_seconds(3))), None);
        assert_eq!(refusal(RequestError::Api(ApiError::Unknown("Internal Server Error".into()))), None);
        assert_eq!(refusal(RequestError::Io(Arc::new(std::io::Error::other("reset")))), None);
        assert_eq!(refusal(RequestError::Api(ApiError::Unknown("Bad Request: can't parse entities".into()))), None);
        // A target that is no Telegram chat id at all never will be.
        let typo = target(&ChatKey::new("telegram", "-100abc", None)).expect_err("not a number");
        assert_eq!(typo.refusal(), Some("not a Telegram chat id: -100abc"));
    }
}
