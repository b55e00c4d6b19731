//! Where updates come from: long polling (`getUpdates`, the default) or a webhook
//! served with axum (`telegram.mode = "webhook"`, for several replicas behind a load
//! balancer; the `X-Telegram-Bot-Api-Secret-Token` header is checked on every call).
//! Either way each update is handed to [`dispatch`], which queues it on its chat's
//! lane: in order within a chat, in parallel across chats.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use secrecy::ExposeSecret;
use teloxide::RequestError;
use teloxide::payloads::{GetUpdatesSetters, SetWebhookSetters};
use teloxide::prelude::Requester;
use teloxide::types::{AllowedUpdate, Update, UpdateKind};
use tokio::task::JoinHandle;

use super::send::retrying;
use super::Telegram;
use super::lanes::{Job, Lanes};
use crate::config::TelegramMode;

/// Long-poll wait. Below teloxide's default HTTP timeout (17 s), or every poll would
/// end in a client-side timeout.
const POLL_SECS: u32 = 10;
const MAX_BACKOFF: Duration = Duration::from_secs(30);
const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";

pub fn spawn(tg: Arc<Telegram>) -> JoinHandle<()> {
    tokio::spawn(async move {
        identify(&tg).await;
        match tg.settings.mode {
            TelegramMode::Polling => poll(tg).await,
            TelegramMode::Webhook => {
                if let Err(e) = webhook(tg).await {
                    tracing::error!(error = %e, "the Telegram webhook server stopped");
                }
            }
        }
    })
}

fn updates() -> Vec<AllowedUpdate> {
    vec![AllowedUpdate::Message, AllowedUpdate::CallbackQuery]
}

/// getMe until it works: the bot's name is needed to recognise mentions in groups.
async fn identify(tg: &Telegram) {
    let mut backoff = Duration::from_millis(500);
    loop {
        match retrying(tg.bot.get_me()).await {
            Ok(me) => {
                tracing::info!(username = %me.username(), "telegram bot identified");
                let _ = tg.me.set((me.user.id.0, me.username().to_owned()));
                return;
            }
            Err(e) => {
                tracing::error!(error = %e, "telegram getMe failed (check telegram.token and telegram.api_url); retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

async fn poll(tg: Arc<Telegram>) {
    // Polling does not work while a webhook is set (Telegram answers 409).
    if let Err(e) = retrying(tg.bot.delete_webhook()).await {
        tracing::warn!(error = %e, "cannot delete a previous webhook");
    }
    let mut offset: Option<i32> = None;
    let mut backoff = Duration::from_millis(500);
    loop {
        let mut request = tg.bot.get_updates().timeout(POLL_SECS).allowed_updates(updates());
        if let Some(offset) = offset {
            request = request.offset(offset);
        }
        match retrying(request).await {
            Ok(batch) => {
                tracing::debug!(updates = batch.len(), ?offset, "getUpdates");
                backoff = Duration::from_millis(500);
                for update in batch {
                    // Confirmed on the next getUpdates; an update is never fetched twice.
                    offset = Some(i32::try_from(update.id.0).unwrap_or(i32::MAX).saturating_add(1));
                    dispatch(&tg, update);
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

/// Queues one update on its chat's lane (see [`super::lanes`]).
pub fn dispatch(tg: &Arc<Telegram>, update: Update) {
    match update.kind {
        UpdateKind::Message(message) => Lanes::push(tg, message.chat.id.0, Job::Message(Box::new(message))),
        UpdateKind::CallbackQuery(query) => {
            // A click on an inline message has no chat; it still needs its answer.
            let chat_id = query.message.as_ref().map_or(0, |m| m.chat().id.0);
            Lanes::push(tg, chat_id, Job::Click(Box::new(query)));
        }
        UpdateKind::Error(value) => tracing::warn!(update = %value, "an update teloxide cannot read; skipped"),
        other => tracing::debug!(kind = ?std::mem::discriminant(&other), "ignoring an update kind"),
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
    #[error("server: {0}")]
    Serve(std::io::Error),
}

async fn webhook(tg: Arc<Telegram>) -> Result<(), WebhookError> {
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
    retrying(request).await.map_err(WebhookError::SetWebhook)?;
    tracing::info!(listen = %tg.settings.webhook_listen, %path, "telegram webhook ready");
    let app = axum::Router::new().route(&path, post(receive)).with_state(tg);
    axum::serve(listener, app).await.map_err(WebhookError::Serve)
}

async fn receive(State(tg): State<Arc<Telegram>>, headers: HeaderMap, body: axum::body::Bytes) -> StatusCode {
    if let Some(secret) = webhook_secret(&tg) {
        let given = headers.get(SECRET_HEADER).map(|v| v.as_bytes()).unwrap_or_default();
        if !constant_time_eq(given, secret.expose_secret().as_bytes()) {
            tracing::warn!("webhook call without the right secret token; refused");
            return StatusCode::UNAUTHORIZED;
        }
    }
    match serde_json::from_slice::<Update>(&body) {
        Ok(update) => dispatch(&tg, update),
        // 200 anyway: Telegram would resend an update we can never read.
        Err(e) => tracing::warn!(error = %e, "unreadable webhook update; skipped"),
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
