//! Where updates come from: long polling (`getUpdates`, the default) or a webhook
//! served with axum (`telegram.mode = "webhook"`, for several replicas behind a load
//! balancer; the `X-Telegram-Bot-Api-Secret-Token` header is checked on every call).
//! Either way each update is handed to [`dispatch`], which queues it on its chat's
//! lane: in order within a chat, in parallel across chats.
//!
//! An update is confirmed to Telegram only once it was handled: polling asks for the
//! next batch (whose `offset` confirms the last) after the lanes finished the current
//! one, and the webhook answers 200 after the update's lane finished it. A crash in
//! between makes Telegram deliver the update again. Both waits are bounded
//! ([`HANDLING_BOUND`]) so a stuck engine cannot stall every chat: past the bound the
//! update is confirmed anyway and a warning logged.
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
use teloxide::payloads::{GetUpdatesSetters, SetWebhookSetters};
use teloxide::prelude::Requester;
use teloxide::types::{AllowedUpdate, Update, UpdateKind};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::send::retrying;
use super::{StartError, Telegram};
use super::lanes::{Job, Lanes};
use crate::config::TelegramMode;

/// Long-poll wait. Below teloxide's default HTTP timeout (17 s), or every poll would
/// end in a client-side timeout.
const POLL_SECS: u32 = 10;
const MAX_BACKOFF: Duration = Duration::from_secs(30);
const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";
/// How long an update's handling is waited for before it is confirmed anyway. Below
/// Telegram's webhook timeout (about 60 s), after which it would resend the update
/// while it is still being handled.
pub const HANDLING_BOUND: Duration = Duration::from_secs(50);
/// The largest webhook body read. Real updates are a few KiB.
pub const MAX_UPDATE_BYTES: usize = 1024 * 1024;
/// How long start-up keeps trying to reach an unreachable Bot API.
pub const START_RETRY: Duration = Duration::from_secs(30);

/// Identifies the bot and prepares the transport; returns the task that then receives
/// updates. Errors here stop the bridge.
pub async fn start(tg: Arc<Telegram>) -> Result<JoinHandle<()>, StartError> {
    identify(&tg).await?;
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
        if started.elapsed() + backoff > START_RETRY {
            return Err(StartError::Unreachable { secs: START_RETRY.as_secs(), error: error.to_string() });
        }
        tracing::warn!(error = %error, retry_in = ?backoff, "telegram getMe failed (check telegram.api_url); retrying");
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(5));
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
                backoff = Duration::from_millis(500);
                let mut handled = Vec::with_capacity(batch.len());
                let mut next = offset;
                for update in batch {
                    next = Some(i32::try_from(update.id.0).unwrap_or(i32::MAX).saturating_add(1));
                    handled.extend(dispatch(&tg, update));
                }
                // The next getUpdates confirms this batch: ask only once it is handled,
                // so a crash meanwhile gets the same updates again.
                let waited = tokio::time::timeout(HANDLING_BOUND, futures_util::future::join_all(handled)).await;
                if waited.is_err() {
                    tracing::warn!(bound = ?HANDLING_BOUND, "updates still being handled; confirming them to Telegram anyway");
                }
                offset = next;
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

/// Queues one update on its chat's lane (see [`super::lanes`]). Returns what resolves
/// once it was handled; `None` for an update there is nothing to do for.
pub fn dispatch(tg: &Arc<Telegram>, update: Update) -> Option<oneshot::Receiver<()>> {
    let (done, handled) = oneshot::channel();
    match update.kind {
        UpdateKind::Message(message) => Lanes::push(tg, message.chat.id.0, Job::Message(Box::new(message), done)),
        UpdateKind::CallbackQuery(query) => {
            // A click on an inline message has no chat; it still needs its answer.
            let chat_id = query.message.as_ref().map_or(0, |m| m.chat().id.0);
            Lanes::push(tg, chat_id, Job::Click(Box::new(query), done));
        }
        UpdateKind::Error(value) => {
            tracing::warn!(update = %value, "an update teloxide cannot read; skipped");
            return None;
        }
        other => {
            tracing::debug!(kind = ?std::mem::discriminant(&other), "ignoring an update kind");
            return None;
        }
    }
    Some(handled)
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
    let handled = match serde_json::from_slice::<Update>(&body) {
        Ok(update) => dispatch(&tg, update),
        // 200 anyway: Telegram would resend an update we can never read.
        Err(e) => {
            tracing::warn!(error = %e, "unreadable webhook update; skipped");
            None
        }
    };
    // 200 only once handled: until then Telegram keeps the update and resends it if
    // this replica dies. Past the bound, 200 anyway before Telegram gives up on us.
    if let Some(handled) = handled
        && tokio::time::timeout(HANDLING_BOUND, handled).await.is_err()
    {
        tracing::warn!(bound = ?HANDLING_BOUND, "a webhook update is still being handled; confirming it to Telegram anyway");
    }
    StatusCode::OK
}

/// The configured secret; an empty value counts as none (Telegram refuses it anyway).
fn webhook_secret(tg: &Telegram) -> Option<&secrecy::SecretString> {
    tg.settings.webhook_secret.as_ref().filter(|s| !s.expose_secret().is_empty())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
