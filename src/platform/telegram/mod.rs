//! Telegram: inline-keyboard approvals and question wizards over the Bot API
//! (teloxide). This file is the [`Platform`] the engine calls; the other files each
//! own one job:
//! - [`render`]: Interaction → HTML text + inline keyboard, and reminders (pure,
//!   snapshot-tested)
//! - [`codes`]: button action codes inside callback tokens
//! - [`clicks`]: callback queries → one engine call each, whose plan turns the
//!   button into a [`UserAction`](crate::interaction::UserAction), a prompt or a page
//! - [`chat`]: messages: agent chat, commands, group addressing, ForceReply answers
//! - [`wizard`]: wizard views and ForceReply prompts (in the store, so any replica
//!   can handle the next update) and bounded rendering caches
//! - [`inbox`]: updates stored before they are confirmed, handled from the store
//! - [`send`]: outgoing calls with 429 retries; [`transport`]: polling or webhook
//! - [`limits`]: Telegram's rate limits, waited for only when a quota says so
//! - [`text`]: Telegram-only strings and HTML escaping
//!
//! What a click or reply means is always the core's call, through
//! [`EngineHandle::click`]; this module never decides or stores an answer itself.

pub mod address;
mod chat;
mod clicks;
pub mod codes;
pub mod descriptor;
mod inbox;
mod limits;
pub mod render;
mod send;
pub mod settings;
pub mod text;
mod transport;
pub mod wizard;

/// How long a replica's claim on a stored update outlives its last renewal: a dead
/// replica's updates are handled by another replica this long (plus one sweep) after.
pub use crate::platform::kit::inbox::CLAIM as INBOX_CLAIM;

use std::sync::{Arc, Mutex, OnceLock};

use futures_util::future::BoxFuture;
use secrecy::ExposeSecret;
use teloxide::Bot;
use teloxide::types::{ChatId, MessageId, ReplyMarkup};
use tokio::task::JoinHandle;

use self::render::{render_card, step_for};
use self::settings::TelegramSettings;
use self::wizard::{Caches, View, Wizard};
use super::descriptor::WebLinks;
use super::kit::reminder;
use super::kit::token::TokenSigner;
use super::locale::{self, Locale, Msg};
use super::{Platform, PlatformError};
use crate::engine::EngineHandle;
use crate::engine::Reminder;
use crate::interaction::updates::{Notice, ToolGroupStatus};
use crate::interaction::{AccessPolicy, Interaction, RequestKind, readable};
use crate::listener::Limits;
use crate::metrics::Metrics;
use crate::platform::kit::inbox::DurableInbox;
use crate::platform::kit::lanes::Lanes;
use crate::store::{ChatKey, MessageRef, PlatformInbox, UiStates};

pub const PLATFORM: &str = "telegram";

/// The Bot API client: teloxide's plain `Bot`, the rate limits [`send`] applies to the
/// calls that count against them, and the metrics its failures are counted in. The
/// calls outside the limits (getMe, getUpdates, webhooks) use the `Bot` directly,
/// through `Deref`.
pub struct TgBot {
    bot: Bot,
    limiter: limits::Limiter,
    metrics: Metrics,
}

impl std::ops::Deref for TgBot {
    type Target = Bot;

    fn deref(&self) -> &Bot {
        &self.bot
    }
}

pub struct Telegram {
    bot: TgBot,
    engine: EngineHandle,
    signer: TokenSigner,
    policy: AccessPolicy,
    settings: TelegramSettings,
    /// What the webhook listener allows a client.
    limits: Limits,
    /// The bot's own user id and @username, from getMe (needed to tell whether a
    /// group message is addressed to it).
    me: OnceLock<(u64, String)>,
    wizard: Wizard,
    /// Where updates wait between being confirmed and handled ([`inbox`]), claimed
    /// under this replica's id.
    inbox: DurableInbox,
    caches: Mutex<Caches>,
    /// One ordered queue per chat for incoming updates ([`Lanes`]).
    lanes: Arc<Lanes<i64>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// Where the platform says it has started (refusals are the engine's to count:
    /// [`clicks`] hands its own over).
    metrics: Metrics,
    /// The web inbox's links: `/web`, and each card's "Open in browser".
    web: Arc<dyn WebLinks>,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("telegram.enabled is set but telegram.token is empty")]
    NoToken,
    #[error("telegram.api_url is not a URL: {0}")]
    ApiUrl(String),
    #[error("Telegram refused telegram.token ({0}); check the token BotFather gave you")]
    BadToken(String),
    /// `at` names `telegram.api_url` only when it was set; `error` is the whole cause
    /// chain (DNS, connect, TLS, an HTTP status).
    #[error("cannot reach Telegram at {at} for {secs} s (getMe: {error})")]
    Unreachable { at: String, secs: u64, error: String },
    #[error("telegram.mode = \"webhook\": {0}")]
    Webhook(String),
}

/// Starts the Telegram front end and returns the platform for the engine. The bot is
/// identified (getMe) and, in webhook mode, the listener bound and the webhook set
/// before this returns, so a bad token or a taken port stops the bridge with an error
/// instead of retrying in the background forever; updates then flow in the background.
/// `policy` says who may answer; `replica` names this process on the claims of the
/// updates it stores in `inbox`; `ui_states` keeps the wizards' steps and prompts.
#[allow(clippy::too_many_arguments)] // each is a separate piece the app hands over
pub async fn start(
    tg: &TelegramSettings,
    policy: AccessPolicy,
    replica: String,
    limits: Limits,
    engine: EngineHandle,
    signer: TokenSigner,
    inbox: PlatformInbox,
    ui_states: UiStates,
    metrics: Metrics,
    web: Arc<dyn WebLinks>,
) -> Result<Arc<Telegram>, StartError> {
    let token = tg.token.as_ref().map(|t| t.expose_secret().to_owned()).filter(|t| !t.is_empty()).ok_or(StartError::NoToken)?;
    let mut bot = Bot::new(token);
    if let Some(url) = tg.api_url.as_deref().filter(|u| !u.is_empty()) {
        let url = reqwest::Url::parse(url).map_err(|e| StartError::ApiUrl(e.to_string()))?;
        bot = bot.set_api_url(url);
    }
    let platform = Arc::new(Telegram {
        // The limiter paces sends; 429s are waited out and counted by `send`.
        bot: TgBot { bot, limiter: limits::Limiter::new(tg.rate_limits), metrics: metrics.clone() },
        engine,
        signer,
        policy,
        settings: tg.clone(),
        limits,
        me: OnceLock::new(),
        wizard: Wizard::new(ui_states),
        inbox: DurableInbox::new(inbox, replica),
        caches: Mutex::new(Caches::default()),
        lanes: Lanes::new("a Telegram update"),
        tasks: Mutex::new(Vec::new()),
        metrics,
        web,
    });
    platform.metrics.platform_started(PLATFORM);
    let task = transport::start(platform.clone()).await?;
    platform.tasks().push(task);
    Ok(platform)
}

impl Telegram {
    fn caches(&self) -> std::sync::MutexGuard<'_, Caches> {
        // The caches are plain maps; a panic elsewhere cannot leave them half-written in
        // a way that matters, so a poisoned lock is still usable.
        self.caches.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn tasks(&self) -> std::sync::MutexGuard<'_, Vec<JoinHandle<()>>> {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The chat's locale, in the order `TelegramSettings` documents: `locale` for every
    /// chat, else this chat's `chat_locales` entry, else the language of the person (or
    /// the one last seen in this chat), else English.
    fn locale(&self, chat_id: &str, user_language: Option<&str>) -> Locale {
        let remembered = if user_language.is_none() { self.caches().language(chat_id) } else { None };
        Locale::pick([self.settings.locale.as_deref(), self.settings.chat_locales.get(chat_id).map(String::as_str), user_language.or(remembered.as_deref())])
    }

    async fn rendered(&self, interaction: &Interaction, locale: Locale) -> render::Rendered {
        // Only a pending card with a step or a page to remember has a view stored (an
        // ended request's is forgotten as it ends): the others are not read for it.
        let remembers = interaction.status.is_pending()
            && match &interaction.request.kind {
                RequestKind::Questions { .. } => true,
                RequestKind::Approval { .. } => render::pages(interaction, 0) > 1,
            };
        let view = if remembers { self.wizard.view(&interaction.id).await } else { None };
        let step = step_for(interaction, view.map(|v| v.step));
        // A page belongs to the step it was turned on.
        let page = view.filter(|v| v.step == step).map_or(0, |v| v.page);
        let link = self.web.card_link(&interaction.id);
        render_card(interaction, View { step, page }, locale, &self.signer, link.as_ref())
    }

    /// Re-renders one message showing `interaction` (after a navigation click).
    async fn redraw(&self, chat_id: ChatId, message_id: MessageId, interaction: &Interaction, locale: Locale) -> Result<(), PlatformError> {
        let r = self.rendered(interaction, locale).await;
        send::edit(&self.bot, chat_id, message_id, &r.text, r.keyboard).await
    }

    async fn notice(&self, chat: &ChatKey, text: &str) -> Result<(), PlatformError> {
        send::html(&self.bot, chat, &text::escape_cut(&format!("⚠️ {text}"), text::MAX_TEXT_CHARS), None).await.map(|_| ())
    }
}

impl Platform for Telegram {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    fn send_text<'a>(&'a self, chat: &'a ChatKey, text: &'a str) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            for chunk in text::split_escaped(&readable::text(text), text::MAX_TEXT_CHARS) {
                send::html(&self.bot, chat, &chunk, None).await?;
            }
            Ok(())
        })
    }

    fn tool_status<'a>(&'a self, chat: &'a ChatKey, status: &'a ToolGroupStatus) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            let key = (chat.chat_id.clone(), chat.thread_id.clone(), status.group);
            let line = text::escape_cut(&status.line(), text::MAX_TEXT_CHARS);
            let existing = self.caches().tool_line(&key);
            match existing {
                // Telegram refuses an edit that changes nothing; skip it.
                Some((_, shown)) if shown == line => {}
                Some((message_id, _)) => {
                    let (chat_id, _) = send::target(chat)?;
                    send::edit(&self.bot, chat_id, MessageId(message_id), &line, render::empty()).await?;
                    self.caches().set_tool_line(key.clone(), message_id, line);
                }
                None => {
                    let id = send::html(&self.bot, chat, &line, None).await?;
                    self.caches().set_tool_line(key.clone(), id.0, line);
                }
            }
            // Group numbers restart with a new session: forget finished groups so a
            // later group with the same number gets its own line.
            if status.finished {
                self.caches().forget_tool_line(&key);
            }
            Ok(())
        })
    }

    fn show_interaction<'a>(&'a self, chat: &'a ChatKey, interaction: &'a Interaction) -> BoxFuture<'a, Result<Option<String>, PlatformError>> {
        Box::pin(async move {
            let locale = self.locale(&chat.chat_id, None);
            let r = self.rendered(interaction, locale).await;
            let id = send::card(&self.bot, chat, &r.text, Some(ReplyMarkup::InlineKeyboard(r.keyboard)), None).await?;
            for (name, json) in r.full_args {
                // The request is already shown; a missing attachment is logged, not fatal.
                if let Err(e) = send::document(&self.bot, chat, &name, json, locale::text(locale, Msg::ArgsAttached)).await {
                    tracing::warn!(error = %e, interaction = %interaction.id, "cannot attach the full args");
                }
            }
            Ok(Some(id.0.to_string()))
        })
    }

    fn refresh_interaction<'a>(&'a self, message: &'a MessageRef, interaction: &'a Interaction) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            let (chat_id, _) = send::target(&message.chat)?;
            let message_id = message.message_id.parse::<i32>().map_err(|_| send::fail(format!("not a Telegram message id: {}", message.message_id)))?;
            let locale = self.locale(&message.chat.chat_id, None);
            let r = self.rendered(interaction, locale).await;
            send::edit(&self.bot, chat_id, MessageId(message_id), &r.text, r.keyboard).await
        })
    }

    fn send_notice<'a>(&'a self, chat: &'a ChatKey, notice: &'a Notice) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            match notice {
                // Good news reads as a message, not as a warning.
                Notice::YouArePaired { .. } => self.send_text(chat, &locale::notice(notice)).await,
                _ => self.notice(chat, &locale::notice(notice)).await,
            }
        })
    }

    fn send_reminder<'a>(&'a self, reminder: Reminder<'a>) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            let Reminder { chat, interaction, mention, card } = reminder;
            let locale = self.locale(&chat.chat_id, None);
            let people = reminder::recipients(PLATFORM, interaction, mention, Some(&self.policy));
            let reply_to = card.and_then(|m| m.message_id.parse().ok()).map(MessageId);
            // A new message (not an edit), so it notifies: through the rate limits like any.
            send::card(&self.bot, chat, &render::reminder(interaction, &people, locale), None, reply_to).await.map(|_| ())
        })
    }

    fn shutdown(&self) {
        for task in self.tasks().drain(..) {
            task.abort();
        }
    }
}
