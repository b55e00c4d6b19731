//! Where updates come from: long polling (`getUpdates`, the default) or a webhook
//! served with axum (`telegram.mode = "webhook"`, for several replicas behind a load
//! balancer; the `X-Telegram-Bot-Api-Secret-Token` header is checked on every call).
//! Either way each update is stored in the inbox first ([`super::inbox`]) and
//! confirmed as soon as it is stored: polling asks for the next batch (whose `offset`
//! confirms the last) at once, and the webhook answers 200 right after the write. The
//! chat lanes handle it from there, in order within a chat and in parallel across
//! chats, so no update waits for another chat's handling. A store that cannot take the
//! batch leaves it unconfirmed: Telegram delivers it again.
//!
//! [`start`] runs before the bridge is up: getMe (a refused token is fatal at once,
//! an unreachable API after [`START_RETRY`]) and, for a webhook, binding the listener
//! and setWebhook. Only then do updates flow in the background.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use secrecy::ExposeSecret;
use teloxide::RequestError;
use teloxide::payloads::{GetUpdatesSetters, SetMyCommandsSetters, SetWebhookSetters};
use teloxide::prelude::Requester;
use teloxide::types::{AllowedUpdate, BotCommand, Update};
use tokio::task::JoinHandle;

use super::send::retrying;
use super::settings::TelegramMode;
use super::{StartError, Telegram, inbox};
use crate::platform::kit::commands::{COMMANDS, LANGUAGES};
use crate::platform::locale::Locale;

/// Long-poll wait. Below teloxide's default HTTP timeout (17 s), or every poll would
/// end in a client-side timeout.
const POLL_SECS: u32 = 10;
const MAX_BACKOFF: Duration = Duration::from_secs(30);
const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";
/// The largest webhook body read. Real updates are a few KiB.
pub const MAX_UPDATE_BYTES: usize = 1024 * 1024;
/// How long start-up keeps trying to reach an unreachable Bot API.
pub const START_RETRY: Duration = Duration::from_secs(30);

/// Identifies the bot and prepares the transport; returns the task that then receives
/// updates. Errors here stop the bridge.
pub async fn start(tg: Arc<Telegram>) -> Result<JoinHandle<()>, StartError> {
    identify(&tg).await?;
    register_commands(&tg).await;
    // What a previous run stored and never finished goes first, in order.
    tg.inbox.start(&tg).await;
    let swept = tg.clone();
    tg.tasks().push(tokio::spawn(async move { swept.inbox.sweep(swept.clone()).await }));
    Ok(match tg.settings.mode {
        TelegramMode::Polling => tokio::spawn(poll(tg)),
        TelegramMode::Webhook => {
            let limits = tg.limits;
            let (listener, app) = webhook(tg).await.map_err(|e| StartError::Webhook(e.to_string()))?;
            tokio::spawn(crate::listener::serve(listener, app, limits))
        }
    })
}

fn updates() -> Vec<AllowedUpdate> {
    vec![AllowedUpdate::Message, AllowedUpdate::CallbackQuery]
}

/// getMe: the bot's name is needed to recognise mentions in groups, and it proves the
/// token. A token Telegram refuses (401, or 404 for a malformed one: teloxide reads
/// both as `InvalidToken`) is fatal at once;
/// anything else (network, 5xx) is retried for [`START_RETRY`], then fatal.
async fn identify(tg: &Telegram) -> Result<(), StartError> {
    let started = tokio::time::Instant::now();
    let mut backoff = Duration::from_millis(500);
    loop {
        let error = match retrying(&tg.bot, tg.bot.get_me()).await {
            Ok(me) => {
                tracing::info!(username = %me.username(), "telegram bot identified");
                let _ = tg.me.set((me.user.id.0, me.username().to_owned()));
                return Ok(());
            }
            Err(RequestError::Api(e @ teloxide::ApiError::InvalidToken)) => {
                return Err(StartError::BadToken(e.to_string()));
            }
            Err(e) => e,
        };
        // teloxide's own message hides why ("error sending request"); the causes say it.
        let error = crate::error_chain::one_line(&error);
        // Named with its setting either way: a wrong or missing telegram.api_url (a
        // self-hosted Bot API server) is the usual cause.
        let at = match &tg.settings.api_url {
            Some(url) => format!("{url} (telegram.api_url)"),
            None => "https://api.telegram.org (the default of telegram.api_url)".to_owned(),
        };
        if started.elapsed() + backoff > START_RETRY {
            return Err(StartError::Unreachable { at, secs: START_RETRY.as_secs(), error });
        }
        tracing::warn!(%error, %at, retry_in = ?backoff, "telegram getMe failed; retrying");
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}

/// `setMyCommands`: the menu Telegram shows for `/`, from the list Discord registers
/// too, once per language (English as the default for every other). A refusal costs
/// only the menu: it is logged, and the commands work typed.
async fn register_commands(tg: &Telegram) {
    for &(locale, code, _) in LANGUAGES {
        let commands: Vec<BotCommand> = COMMANDS.iter().map(|c| BotCommand::new(c.name, c.description(locale))).collect();
        let mut request = tg.bot.set_my_commands(commands);
        if locale != Locale::En {
            request = request.language_code(code);
        }
        if let Err(e) = retrying(&tg.bot, request).await {
            tracing::warn!(error = %crate::error_chain::one_line(&e), language = code, "cannot register the bot's commands with Telegram");
        }
    }
}

async fn poll(tg: Arc<Telegram>) {
    // Polling does not work while a webhook is set (Telegram answers 409).
    if let Err(e) = retrying(&tg.bot, tg.bot.delete_webhook()).await {
        tracing::warn!(error = %e, "cannot delete a previous webhook");
    }
    let mut offset: Option<i32> = None;
    let mut backoff = Duration::from_millis(500);
    loop {
        let mut request = tg.bot.get_updates().timeout(POLL_SECS).allowed_updates(updates());
        if let Some(offset) = offset {
            request = request.offset(offset);
        }
        match retrying(&tg.bot, request).await {
            Ok(batch) => {
                tracing::debug!(updates = batch.len(), ?offset, "getUpdates");
                let next = batch.last().map(|u| i32::try_from(u.id.0).unwrap_or(i32::MAX).saturating_add(1)).or(offset);
                // The next getUpdates confirms this batch: ask once it is stored, not
                // once it is handled, so nothing waits for another chat's handling.
                match inbox::receive(&tg, batch).await {
                    Ok(()) => {
                        backoff = Duration::from_millis(500);
                        offset = next;
                    }
                    Err(e) => {
                        tracing::error!(error = %e, retry_in = ?backoff, "cannot store updates; Telegram delivers them again");
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(MAX_BACKOFF);
                    }
                }
            }
            Err(RequestError::Api(e)) => {
                tracing::error!(error = %e, "getUpdates refused");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            Err(e) => {
                tracing::warn!(error = %e, "getUpdates failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

#[derive(Debug, thiserror::Error)]
enum WebhookError {
    #[error("telegram.webhook_url is missing or not a URL")]
    Url,
    #[error("cannot listen on {addr}: {source}")]
    Listen { addr: String, source: std::io::Error },
    #[error("setWebhook failed: {0}")]
    SetWebhook(RequestError),
}

/// Binds the webhook listener and registers the URL with Telegram; returns what to
/// serve.
async fn webhook(tg: Arc<Telegram>) -> Result<(tokio::net::TcpListener, axum::Router), WebhookError> {
    let url = tg.settings.webhook_url.as_deref().and_then(|u| reqwest::Url::parse(u).ok()).ok_or(WebhookError::Url)?;
    let path = if url.path().is_empty() { "/".to_owned() } else { url.path().to_owned() };
    let listener = tokio::net::TcpListener::bind(&tg.settings.webhook_listen)
        .await
        .map_err(|source| WebhookError::Listen { addr: tg.settings.webhook_listen.clone(), source })?;
    let mut request = tg.bot.set_webhook(url).allowed_updates(updates());
    match webhook_secret(&tg) {
        Some(secret) => request = request.secret_token(secret.expose_secret().to_owned()),
        None => tracing::warn!("telegram.webhook_secret is not set: anyone who finds the webhook URL can post updates"),
    }
    // Every replica sets the same URL; setting it again is harmless.
    retrying(&tg.bot, request).await.map_err(WebhookError::SetWebhook)?;
    tracing::info!(listen = %tg.settings.webhook_listen, %path, "telegram webhook ready");
    let app = axum::Router::new().route(&path, post(receive)).with_state(tg);
    Ok((listener, app))
}

/// The secret is checked from the headers before a byte of the body is read, so a
/// stranger's large POST costs nothing; a declared or streamed body over
/// [`MAX_UPDATE_BYTES`] is refused with 413.
async fn receive(State(tg): State<Arc<Telegram>>, request: axum::extract::Request) -> StatusCode {
    if let Some(secret) = webhook_secret(&tg) {
        let given = request.headers().get(SECRET_HEADER).map(|v| v.as_bytes()).unwrap_or_default();
        if !constant_time_eq(given, secret.expose_secret().as_bytes()) {
            tracing::warn!("webhook call without the right secret token; refused");
            return StatusCode::UNAUTHORIZED;
        }
    }
    let body = match axum::body::to_bytes(request.into_body(), MAX_UPDATE_BYTES).await {
        Ok(body) => body,
        Err(e) => {
            tracing::warn!(error = %e, "unreadable webhook body; refused");
            return StatusCode::PAYLOAD_TOO_LARGE;
        }
    };
    let update = match serde_json::from_slice::<Update>(&body) {
        Ok(update) => update,
        // 200 anyway: Telegram would resend an update we can never read.
        Err(e) => {
            tracing::warn!(error = %e, "unreadable webhook update; skipped");
            return StatusCode::OK;
        }
    };
    // 200 once stored: the inbox has it, whatever happens to this replica next. A
    // store that cannot take it gets a 503, and Telegram delivers it again.
    match inbox::receive(&tg, vec![update]).await {
        Ok(()) => StatusCode::OK,
        Err(e) => {
            tracing::error!(error = %e, "cannot store a webhook update; Telegram delivers it again");
            StatusCode::SERVICE_UNAVAILABLE
        }
    }
}

/// The configured secret; an empty value counts as none (Telegram refuses it anyway).
fn webhook_secret(tg: &Telegram) -> Option<&secrecy::SecretString> {
    tg.settings.webhook_secret.as_ref().filter(|s| !s.expose_secret().is_empty())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
