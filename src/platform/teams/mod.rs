//! Microsoft Teams: approvals and questions as Adaptive Cards (Universal Actions) in
//! channels, group chats and 1:1 chats, and chat turns in them, over the Bot Framework
//! REST protocol.
//!
//! This file is the [`Platform`] the engine calls (sending text, status lines, showing
//! and updating cards, notices, reminders) and [`start`]; the other files each own
//! one job:
//! - [`settings`], [`address`], [`descriptor`]: the `[teams]` section, how Teams'
//!   conversations, people and targets are written, and the registry's entry
//! - [`login`]: the bot's client-credentials token, cached
//! - [`groups`]: a team's or channel's members as an approver group, read from the
//!   Connector API
//! - [`api`]: the Connector API (send, reply, update, delete, a 1:1 chat), paced to
//!   Teams' per-conversation limits
//! - [`pacing`]: Teams' sliding windows per conversation
//! - [`signature`]: the Bot Connector's JWT on every incoming request
//! - [`http_endpoint`]: `/teams/messages`; [`inbox`]: activities stored before the 200
//! - [`payload`]: the activity as the bridge reads it
//! - [`render`], [`limits`], [`text`], [`codes`]: the Adaptive Cards, what a message
//!   may hold, inert agent text, what a signed button names
//! - [`clicks`]: `adaptiveCard/action` invokes → the engine, answered with the card;
//!   [`card_memo`]: that card rendered once for the answer and the copies' update
//! - [`manifest`]: the app package `hitl-bridge teams package` writes
//! - [`stream`]: the agent's text streamed into one message, updated about once a second
//! - [`chat`]: messages, mentions and commands → the agent's turns, one session per
//!   thread
//!
//! **Why no SDK.** Microsoft ships no Rust Bot Framework SDK. The protocol the bridge
//! needs is small: one JSON POST in (an activity), five REST calls out, a token grant,
//! and a JWT check. reqwest, serde and axum were already in the tree; `jsonwebtoken`
//! (without its PEM feature, on `ring`, which rustls already builds) checks the
//! RS256 signature and the registered claims. Hand-written serde types for what is
//! read ([`payload`]) and `json!` for what is written keep the exact JSON in sight.

pub mod address;
pub mod api;
pub mod card_memo;
pub mod chat;
pub mod clicks;
pub mod codes;
pub mod descriptor;
pub mod groups;
pub mod http_endpoint;
mod inbox;
pub mod limits;
pub mod login;
pub mod manifest;
pub mod pacing;
pub mod payload;
pub mod render;
pub mod settings;
pub mod signature;
pub mod stream;
pub mod text;

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::task::JoinHandle;

use self::api::{Api, ApiError};
use self::payload::Activity;
use self::settings::TeamsSettings;
use super::kit::reminder;
use super::{Platform, PlatformError};
use crate::engine::{EngineHandle, Reminder};
use crate::interaction::updates::{Notice, ToolGroupStatus};
use crate::interaction::{AccessPolicy, Actor, Interaction, readable};
use crate::platform::descriptor::{Membership, WebLinks};
use crate::platform::kit::bounded::BoundedMap;
use crate::platform::kit::token::TokenSigner;
use crate::platform::kit::turns::Priority;
use crate::store::{ChatKey, MessageRef};
use crate::texts::{self, Locale};

pub const PLATFORM: &str = "teams";

/// Entries each cache keeps at most.
const CACHE_CAP: usize = 10_000;

pub fn send_error(message: impl Into<String>) -> PlatformError {
    PlatformError::Send { platform: PLATFORM, message: message.into() }
}

/// A failed call: refused for good when Teams closed the conversation to the bot.
fn api_error(what: &str, e: ApiError) -> PlatformError {
    match e.refused_for_good() {
        Some(code) => PlatformError::Refused { platform: PLATFORM, message: format!("{what}: {e} {code}") },
        None => send_error(format!("{what}: {e}")),
    }
}

/// What the platform, the endpoint and the handlers share.
pub struct Shared {
    pub api: Api,
    pub engine: EngineHandle,
    pub signer: TokenSigner,
    pub locale: Locale,
    /// `teams.channels`: where every message goes to the agent.
    pub channels: Vec<String>,
    pub web: Arc<dyn WebLinks>,
    /// `teams.service_url`, for a conversation not heard from since the start.
    default_service_url: String,
    /// Each conversation's `serviceUrl`, as its last verified activity gave it.
    service_urls: Mutex<BoundedMap<String, String>>,
    /// A person's 1:1 chat with the bot, created once per person.
    dms: Mutex<BoundedMap<String, String>>,
    /// The status line message per (conversation, tool group); dropped once finished.
    statuses: Mutex<BoundedMap<(String, u64), String>>,
    /// The messages agent text is streaming into.
    streams: stream::Streams,
    /// The teams and channels approvers may be members of, and who is in them.
    pub groups: groups::Groups,
    /// A click's card, rendered once for its answer and its copies' update.
    cards: card_memo::CardMemo,
}

impl Shared {
    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Remembers the `serviceUrl` a verified activity came with, for its conversation.
    pub fn remember_service_url(&self, activity: &Activity) {
        let url = &activity.service_url;
        if url.starts_with("https://") || url.starts_with("http://") {
            let url = if url.ends_with('/') { url.clone() } else { format!("{url}/") };
            Self::lock(&self.service_urls).insert(activity.conversation_and_thread().0.to_owned(), url);
        }
    }

    fn service_url(&self, conversation: &str) -> String {
        Self::lock(&self.service_urls).get(&conversation.to_owned()).cloned().unwrap_or_else(|| self.default_service_url.clone())
    }

    /// The conversation `chat`'s messages go to, with its `serviceUrl`: a `user:` target's
    /// 1:1 chat is created once.
    pub async fn conversation(&self, chat: &ChatKey) -> Result<(String, String), PlatformError> {
        let Some(user) = chat.chat_id.strip_prefix(address::DM_PREFIX) else {
            return Ok((self.service_url(&chat.chat_id), chat.chat_id.clone()));
        };
        if let Some(conversation) = Self::lock(&self.dms).get(&user.to_owned()).cloned() {
            return Ok((self.service_url(&conversation), conversation));
        }
        let service_url = self.default_service_url.clone();
        let conversation = self.api.create_conversation(&service_url, user).await.map_err(|e| api_error(&format!("cannot open a chat with {user}"), e))?;
        Self::lock(&self.dms).insert(user.to_owned(), conversation.clone());
        Ok((self.service_url(&conversation), conversation))
    }

    /// Posts `activity` to `chat`, in its thread when it has one: its activity id.
    pub async fn post(&self, chat: &ChatKey, activity: &Value, priority: Priority) -> Result<String, PlatformError> {
        let (service_url, conversation) = self.conversation(chat).await?;
        let sent = match &chat.thread_id {
            Some(thread) => self.api.reply(&service_url, &conversation, thread, activity, priority).await,
            None => self.api.send(&service_url, &conversation, activity, priority).await,
        };
        sent.map_err(|e| api_error(&format!("post to {conversation}"), e))
    }

    /// A notice for the person who wrote, in the chat they wrote in.
    pub async fn tell(&self, chat: &ChatKey, text: &str) {
        if let Err(e) = self.post(chat, &render::text_message(text), Priority::Text).await {
            tracing::warn!(error = %e, "cannot answer in Teams");
        }
    }

    /// The card showing `interaction` now.
    pub fn card(&self, interaction: &Interaction, edit_error: Option<(usize, &str)>) -> Value {
        render::card(interaction, self.locale, &self.signer, self.web.card_link(&interaction.id).as_ref(), edit_error)
    }

    /// The message activity carrying the card of `interaction` after a change: the
    /// clicker's answer and the copies' update share one rendering ([`card_memo`]).
    pub fn changed_card(&self, interaction: &Interaction) -> Arc<Value> {
        self.cards.take_or_render(interaction, || render::message(self.card(interaction, None)))
    }
}

/// The Teams platform.
pub struct Teams {
    shared: Arc<Shared>,
    policy: AccessPolicy,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

/// What [`start`] needs besides the settings.
pub struct Wiring {
    pub engine: EngineHandle,
    pub signer: TokenSigner,
    pub policy: AccessPolicy,
    pub limits: crate::listener::Limits,
    pub inbox: crate::platform::kit::inbox::DurableInbox,
    pub web: Arc<dyn WebLinks>,
    /// Every group id the configuration names, with its setting.
    pub groups: Vec<(String, String)>,
}

/// Fetches a token (a refusal names the setting Microsoft refused), then serves the
/// messaging endpoint. The bridge must not run with a Teams that cannot work.
pub async fn start(settings: &TeamsSettings, wiring: Wiring) -> Result<Arc<Teams>, PlatformError> {
    let Some(password) = settings.app_password() else {
        return Err(send_error("teams.enabled is set but teams.app_password is empty (env HITL_BRIDGE__TEAMS__APP_PASSWORD)"));
    };
    let http = reqwest::Client::builder().build().map_err(|e| send_error(format!("cannot build an HTTP client: {e}")))?;
    let login = login::Login::new(http.clone(), &settings.token_url(), &settings.app_id, password);
    let api = Api::new(http.clone(), login, &settings.app_id, &settings.tenant_id);
    api.check_login().await.map_err(|e| match e {
        login::LoginError::Refused { setting, description } => {
            send_error(format!("Microsoft refused {setting} when the bridge asked for a token: {description}"))
        }
        login::LoginError::Network(why) => send_error(format!("cannot get a token at teams.token_url = {}: {why}", settings.token_url())),
    })?;
    tracing::info!(app_id = %settings.app_id, "teams.app_id and teams.app_password accepted");
    let shared = Arc::new(Shared {
        api,
        engine: wiring.engine,
        signer: wiring.signer,
        locale: settings.locale(),
        channels: settings.channels.clone(),
        web: wiring.web,
        default_service_url: settings.service_url(),
        service_urls: Mutex::new(BoundedMap::new(CACHE_CAP)),
        dms: Mutex::new(BoundedMap::new(CACHE_CAP)),
        statuses: Mutex::new(BoundedMap::new(CACHE_CAP)),
        streams: stream::Streams::default(),
        groups: groups::Groups::new(&wiring.groups, settings.group_refresh()),
        cards: card_memo::CardMemo::default(),
    });
    let handler = Arc::new(inbox::Handler::new(shared.clone(), wiring.inbox));
    // What a previous run stored and never finished is handled before new activities.
    handler.inbox.start(&handler).await;
    let listener = tokio::net::TcpListener::bind(&settings.messages_listen)
        .await
        .map_err(|e| send_error(format!("cannot listen on teams.messages_listen = {}: {e}", settings.messages_listen)))?;
    tracing::info!(listen = %settings.messages_listen, path = http_endpoint::MESSAGES_PATH, "Teams messaging endpoint ready");
    let verifier = signature::Verifier::new(http, &settings.openid_metadata_url, &settings.app_id);
    let endpoint = Arc::new(http_endpoint::Endpoint { handler: handler.clone(), verifier });
    let serve = tokio::spawn(crate::listener::serve(listener, http_endpoint::router(endpoint), wiring.limits));
    let sweep = tokio::spawn(async move { handler.inbox.sweep(handler.clone()).await });
    Ok(Arc::new(Teams { shared, policy: wiring.policy, tasks: Mutex::new(vec![serve, sweep]) }))
}

/// Agent text as the messages that carry it: made [`readable`], cut into pieces,
/// blank pieces left out.
fn pieces(text: &str) -> Vec<String> {
    let text = readable::text(text);
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(limits::TEXT_PIECE).map(|piece| piece.iter().collect::<String>()).filter(|piece| !piece.trim().is_empty()).collect()
}

/// An escalation reminder: Teams mentions only with an entity the bridge never sends,
/// so people and groups are named, inert.
fn reminder_text(interaction: &Interaction, people: &reminder::Recipients, locale: Locale) -> String {
    const TEAMS: reminder::Style =
        reminder::Style { user: |_| None, group: |_| None, text: text::inert, deadline: texts::clock, subject_max: 1000, most_named: 25 };
    reminder::text(locale, interaction, people, &TEAMS)
}

impl Membership for Teams {
    fn groups_of<'a>(&'a self, person: &'a Actor, named: &'a [String]) -> BoxFuture<'a, Vec<String>> {
        Box::pin(async move {
            if person.platform != PLATFORM {
                return Vec::new();
            }
            self.shared.groups.of_person_naming(&self.shared, &person.user_id, named).await
        })
    }
}

impl Platform for Teams {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    fn send_text<'a>(&'a self, chat: &'a ChatKey, text: &'a str) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            for piece in pieces(text) {
                self.shared.post(chat, &render::text_message(&piece), Priority::Text).await?;
            }
            Ok(())
        })
    }

    fn text_progress<'a>(&'a self, chat: &'a ChatKey, block: u64, text_so_far: &'a str) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(stream::progress(&self.shared, chat, block, text_so_far))
    }

    fn finish_text<'a>(&'a self, chat: &'a ChatKey, block: u64, text: &'a str) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(stream::finish(&self.shared, chat, block, text))
    }

    fn tool_status<'a>(&'a self, chat: &'a ChatKey, status: &'a ToolGroupStatus) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            let line = render::text_message(&status.line());
            let (service_url, conversation) = self.shared.conversation(chat).await?;
            let key = (conversation.clone(), status.group);
            let existing = Shared::lock(&self.shared.statuses).get(&key).cloned();
            match existing {
                Some(id) => self.shared.api.update(&service_url, &conversation, &id, &line).await.map_err(|e| api_error("edit a status line", e))?,
                None => {
                    let id = self.shared.post(chat, &line, Priority::Text).await?;
                    Shared::lock(&self.shared.statuses).insert(key.clone(), id);
                }
            }
            if status.finished {
                Shared::lock(&self.shared.statuses).remove(&key);
            }
            Ok(())
        })
    }

    fn show_interaction<'a>(&'a self, chat: &'a ChatKey, interaction: &'a Interaction) -> BoxFuture<'a, Result<Option<String>, PlatformError>> {
        Box::pin(async move {
            self.shared.groups.note(interaction);
            let card = render::message(self.shared.card(interaction, None));
            let id = self.shared.post(chat, &card, Priority::Card).await?;
            Ok(Some(id))
        })
    }

    fn refresh_interaction<'a>(&'a self, message: &'a MessageRef, interaction: &'a Interaction) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            if message.message_id.is_empty() {
                return Err(send_error("an empty Teams activity id"));
            }
            self.shared.groups.note(interaction);
            let (service_url, conversation) = self.shared.conversation(&message.chat).await?;
            let card = self.shared.changed_card(interaction);
            self.shared
                .api
                .update(&service_url, &conversation, &message.message_id, &card)
                .await
                .map_err(|e| api_error(&format!("update {} in {conversation}", message.message_id), e))
        })
    }

    fn send_notice<'a>(&'a self, chat: &'a ChatKey, notice: &'a Notice) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            let text = crate::platform::kit::refusals::notice_line(notice);
            self.shared.post(chat, &render::text_message(&text), Priority::Text).await.map(|_| ())
        })
    }

    fn send_reminder<'a>(&'a self, reminder: Reminder<'a>) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            let Reminder { chat, interaction, mention, card } = reminder;
            let people = reminder::recipients(PLATFORM, interaction, mention, Some(&self.policy));
            let text = reminder_text(interaction, &people, self.shared.locale);
            let mut chat = chat.clone();
            // In a channel, in the card's thread when the chat has no thread of its own.
            if chat.thread_id.is_none()
                && chat.chat_id.ends_with("@thread.tacv2")
                && let Some(card) = card.filter(|c| c.chat == chat && address::is_message_id(&c.message_id))
            {
                chat.thread_id = Some(card.message_id.clone());
            }
            self.shared.post(&chat, &render::text_message(&text), Priority::Card).await.map(|_| ())
        })
    }

    fn shutdown(&self) {
        for task in Shared::lock(&self.tasks).drain(..) {
            task.abort();
        }
    }
}
