//! Discord (serenity): requests as embeds with buttons, select menus and modals;
//! chat through channels, DMs, mentions and slash commands.
//!
//! [`start`] builds the REST client, connects the gateway (messages, slash commands,
//! component clicks) and, when `discord.public_key` is set, serves the HTTP
//! interactions endpoint. Both ways in share one handler ([`clicks`]). This file
//! is the [`Platform`] the engine calls: sending text, status lines, and showing and
//! refreshing interaction messages. What a click means is the core's call.
//!
//! The page a message shows lives in the store, so a page turned on one replica is
//! still shown when another re-renders the message. The rest of [`Shared`] is caches
//! (status lines, threads, channel lookups, DM channels), bounded in size.

pub mod address;
pub mod api;
pub mod chat;
pub mod clicks;
pub mod codes;
pub mod descriptor;
pub mod gateway;
pub mod groups;
pub mod http_endpoint;
pub mod limits;
pub mod login;
pub mod modal;
pub mod render;
pub mod settings;
pub mod text;

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use secrecy::ExposeSecret;
use serenity::all::{
    ChannelId, CreateAttachment, CreateMessage, EditMessage, Http, Message, MessageId, MessageReference, MessageReferenceKind, ShardManager, UserId,
};

use self::settings::DiscordSettings;
use super::descriptor::{Membership, WebLinks};
use super::kit::reminder;
use super::{Platform, PlatformError};
use crate::clock::now_ms;
use crate::engine::Reminder;
use crate::engine::{EngineHandle, UiStateWrite};
use crate::interaction::updates::{Notice, ToolGroupStatus};
use crate::interaction::{AccessPolicy, Actor, Interaction, readable};
use crate::listener::Limits;
use crate::metrics::Metrics;
use crate::platform::kit::bounded::BoundedMap;
use crate::platform::kit::token::TokenSigner;
use crate::platform::kit::turns::{Line, Priority};
use crate::platform::locale::Locale;
use crate::store::{ChatKey, MessageRef, UiStates};

/// Entries each cache keeps at most.
const CACHE_CAP: usize = 10_000;
const PAGE_KIND: &str = "discord.page";
/// A stored page outlives the interaction's deadline by this much.
const PAGE_GRACE_MS: i64 = 60_000;

pub const PLATFORM: &str = "discord";

/// What the gateway handler, the HTTP endpoint and the platform share.
pub struct Shared {
    pub http: Arc<Http>,
    pub engine: EngineHandle,
    pub signer: TokenSigner,
    pub settings: DiscordSettings,
    /// Who may answer: only to refuse a stranger before opening a modal for them
    /// (a modal cannot be refused later without them typing first). The engine
    /// checks again on every action.
    pub policy: AccessPolicy,
    /// Where the page each message shows is kept (shared by replicas).
    ui_states: UiStates,
    /// Status line message per (channel, tool group); removed when the group finishes.
    statuses: Mutex<BoundedMap<(u64, u64), MessageId>>,
    /// Threads this bridge opened, with their parent channel (a forgotten one is looked
    /// up again).
    threads: Mutex<BoundedMap<u64, u64>>,
    /// Channels looked up once: the parent when it is a thread, else `None`.
    looked_up: Mutex<BoundedMap<u64, Option<u64>>>,
    /// A user's DM channel, opened once per user (routing to approvers' DMs).
    dms: Mutex<BoundedMap<u64, ChannelId>>,
    /// Roles of members looked up for DMs (`discord.guild_id`).
    members: groups::MemberCache,
    /// One line per channel: its new messages go one at a time, cards first, so a
    /// card never waits behind a crowd's refusals in the channel's rate limit.
    turns: Mutex<BoundedMap<u64, Arc<Line>>>,
    /// Where failed REST calls are counted (refusals are the engine's to count).
    pub metrics: Metrics,
    /// The web inbox's links: `/web`, and each card's "Open in browser".
    pub web: Arc<dyn WebLinks>,
}

impl Shared {
    /// Sends `message` to `channel` when its turn comes ([`Priority`]).
    pub async fn send(&self, channel: ChannelId, message: CreateMessage, priority: Priority) -> Result<Message, serenity::Error> {
        let line = {
            let mut turns = Shared::lock(&self.turns);
            match turns.get(&channel.get()) {
                Some(line) => line.clone(),
                None => {
                    let line = Arc::new(Line::default());
                    turns.insert(channel.get(), line.clone());
                    line
                }
            }
        };
        let _turn = line.turn(priority).await;
        api::retrying(&self.metrics, "send message", || channel.send_message(&self.http, message.clone())).await
    }

    /// The message showing `interaction` at `page`, with its "Open in browser" when
    /// the web inbox is on.
    pub fn view(&self, interaction: &Interaction, locale: Locale, page: usize) -> render::View {
        render::card(interaction, locale, &self.signer, page, self.web.card_link(&interaction.id).as_ref())
    }

    /// The configured locale, else the interaction's, else English.
    pub fn locale(&self, interaction_locale: Option<&str>) -> Locale {
        Locale::pick([self.settings.locale.as_deref(), interaction_locale])
    }

    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The page `message` shows: the one last turned to on any replica, else 0.
    pub async fn page_of(&self, message: u64) -> usize {
        match self.ui_states.get(PAGE_KIND, &message.to_string(), now_ms()).await {
            Ok(found) => found.and_then(|s| s.value.parse().ok()).unwrap_or(0),
            Err(e) => {
                tracing::warn!(error = %e, message, "cannot read a message's page; showing the first");
                0
            }
        }
    }

    /// The row that remembers the page `message` (showing `interaction`) was turned
    /// to, until the interaction's deadline has passed: the engine writes it with the
    /// click ([`crate::engine::Click::keeping`]); a failed write leaves re-renders on
    /// the first page.
    pub fn page_state(interaction: &Interaction, message: u64, page: usize) -> UiStateWrite {
        let expires_ms = interaction.deadline_ms.max(now_ms()).saturating_add(PAGE_GRACE_MS);
        UiStateWrite { kind: PAGE_KIND, key: message.to_string(), value: page.to_string(), expires_ms }
    }

    /// A new session in `channel` counts its tool groups from 1 again: forget the
    /// old status lines so they are not edited by the new session's groups.
    pub fn forget_statuses(&self, channel: u64) {
        Self::lock(&self.statuses).retain(|(c, _), _| *c != channel);
    }

    pub fn thread_parent(&self, thread: u64) -> Option<u64> {
        Self::lock(&self.threads).get(&thread).copied()
    }

    pub fn remember_thread(&self, thread: u64, parent: u64) {
        Self::lock(&self.threads).insert(thread, parent);
    }

    pub fn looked_up(&self, channel: u64) -> Option<Option<u64>> {
        Self::lock(&self.looked_up).get(&channel).copied()
    }

    pub fn remember_lookup(&self, channel: u64, parent: Option<u64>) {
        Self::lock(&self.looked_up).insert(channel, parent);
    }
}

/// The channel a chat's messages go to: its thread when it has one. A DM target
/// (`user:<id>`, see [`crate::engine::routing`]) is not a channel yet: use
/// [`Discord::channel`].
pub fn target(chat: &ChatKey) -> Result<ChannelId, PlatformError> {
    let id = chat.thread_id.as_deref().unwrap_or(&chat.chat_id);
    id.parse::<u64>().ok().filter(|&n| n != 0).map(ChannelId::new).ok_or_else(|| refused(format!("not a Discord channel id: {id:?}")))
}

pub fn send_error(message: impl Into<String>) -> PlatformError {
    PlatformError::Send { platform: PLATFORM, message: message.into() }
}

/// A channel or person this bot can never post to ([`api::refused_for_good`]).
fn refused(message: impl Into<String>) -> PlatformError {
    PlatformError::Refused { platform: PLATFORM, message: message.into() }
}

/// A failed call: refused for good when Discord says so, else worth trying again.
fn call_failed(e: &serenity::Error, message: String) -> PlatformError {
    if api::refused_for_good(e) { refused(message) } else { send_error(message) }
}

/// The Discord platform.
pub struct Discord {
    shared: Arc<Shared>,
    shard_manager: Mutex<Option<Arc<ShardManager>>>,
    endpoint: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// Checks the token, then starts the gateway (and the HTTP interactions endpoint when
/// a public key is configured) in the background. A token Discord refuses, a gateway
/// that closes before READY or an endpoint port that cannot be bound is an error:
/// the bridge must not run with a Discord that cannot work.
#[allow(clippy::too_many_arguments)] // each is a separate piece the app hands over
pub async fn start(
    settings: &DiscordSettings,
    limits: Limits,
    policy: AccessPolicy,
    signer: TokenSigner,
    engine: EngineHandle,
    ui_states: UiStates,
    metrics: Metrics,
    web: Arc<dyn WebLinks>,
) -> Result<Arc<Discord>, PlatformError> {
    let token = settings.token.as_ref().map(|t| t.expose_secret().to_owned()).unwrap_or_default();
    if token.is_empty() {
        return Err(send_error("discord.enabled is set but discord.token is empty (env HITL_BRIDGE__DISCORD__TOKEN)"));
    }
    let shared = Arc::new(Shared {
        http: api::client(settings, &token),
        engine,
        signer,
        settings: settings.clone(),
        policy,
        ui_states,
        statuses: Mutex::new(BoundedMap::new(CACHE_CAP)),
        threads: Mutex::new(BoundedMap::new(CACHE_CAP)),
        looked_up: Mutex::new(BoundedMap::new(CACHE_CAP)),
        dms: Mutex::new(BoundedMap::new(CACHE_CAP)),
        members: groups::MemberCache::default(),
        turns: Mutex::new(BoundedMap::new(CACHE_CAP)),
        metrics,
        web,
    });
    shared.metrics.platform_started(PLATFORM);
    let me = login::check_token(&shared.http).await.map_err(|e| send_error(e.to_string()))?;
    tracing::info!(bot = %me.name, "discord.token accepted");
    let discord = Arc::new(Discord { shared: shared.clone(), shard_manager: Mutex::new(None), endpoint: Mutex::new(None) });
    if settings.gateway && !token.is_empty() {
        let manager = gateway::connect(shared.clone(), &token).await.map_err(|e| send_error(format!("cannot start the gateway: {}", gateway::explain(&e))))?;
        *Shared::lock(&discord.shard_manager) = Some(manager);
    }
    if let Some(key) = settings.public_key.as_deref().filter(|k| !k.is_empty()) {
        match http_endpoint::serve(shared.clone(), key, &settings.interactions_listen, limits).await {
            Ok(task) => *Shared::lock(&discord.endpoint) = Some(task),
            Err(e) => {
                discord.shutdown(); // the gateway, if it was started
                return Err(send_error(format!(
                    "cannot serve the interactions endpoint (discord.interactions_listen = {}): {e}",
                    settings.interactions_listen
                )));
            }
        }
    }
    Ok(discord)
}

impl Discord {
    /// The channel for `chat`, opening the DM channel of a `user:<id>` target once.
    async fn channel(&self, chat: &ChatKey) -> Result<ChannelId, PlatformError> {
        let Some(user) = chat.chat_id.strip_prefix(address::DM_PREFIX) else { return target(chat) };
        let user = user.parse::<u64>().ok().filter(|&n| n != 0).ok_or_else(|| refused(format!("not a Discord user id: {user:?}")))?;
        if let Some(channel) = Shared::lock(&self.shared.dms).get(&user).copied() {
            return Ok(channel);
        }
        let http = &self.shared.http;
        let dm = api::retrying(&self.shared.metrics, "open a DM", || UserId::new(user).create_dm_channel(http))
            .await
            .map_err(|e| call_failed(&e, format!("cannot open a DM with {user}: {e}")))?;
        Shared::lock(&self.shared.dms).insert(user, dm.id);
        Ok(dm.id)
    }

    async fn send(&self, channel: ChannelId, message: CreateMessage, priority: Priority) -> Result<MessageId, PlatformError> {
        self.shared.send(channel, message, priority).await.map(|m| m.id).map_err(|e| call_failed(&e, format!("send to {channel}: {e}")))
    }
}

impl Membership for Discord {
    fn groups_of<'a>(&'a self, person: &'a Actor, _named: &'a [String]) -> BoxFuture<'a, Vec<String>> {
        // A member's roles come whole: which ones a request names does not matter.
        Box::pin(async move { if person.platform == PLATFORM { groups::web_roles(&self.shared, person).await } else { Vec::new() } })
    }
}

impl Platform for Discord {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    fn send_text<'a>(&'a self, chat: &'a ChatKey, text: &'a str) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            let channel = self.channel(chat).await?;
            for piece in text::split(&readable::text(text), limits::CONTENT) {
                if piece.trim().is_empty() {
                    continue; // Discord refuses empty messages.
                }
                self.send(channel, CreateMessage::new().content(piece), Priority::Text).await?;
            }
            Ok(())
        })
    }

    fn tool_status<'a>(&'a self, chat: &'a ChatKey, status: &'a ToolGroupStatus) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            let channel = self.channel(chat).await?;
            let line = text::truncate(&status.line(), limits::CONTENT);
            let key = (channel.get(), status.group);
            let existing = Shared::lock(&self.shared.statuses).get(&key).copied();
            match existing {
                Some(message) => {
                    let http = &self.shared.http;
                    let edit = EditMessage::new().content(line);
                    api::retrying(&self.shared.metrics, "edit status", || channel.edit_message(http, message, edit.clone()))
                        .await
                        .map_err(|e| send_error(format!("edit status in {channel}: {e}")))?;
                }
                None => {
                    let id = self.send(channel, CreateMessage::new().content(line), Priority::Text).await?;
                    Shared::lock(&self.shared.statuses).insert(key, id);
                }
            }
            // A finished group's line is never edited again.
            if status.finished {
                Shared::lock(&self.shared.statuses).remove(&key);
            }
            Ok(())
        })
    }

    fn show_interaction<'a>(&'a self, chat: &'a ChatKey, interaction: &'a Interaction) -> BoxFuture<'a, Result<Option<String>, PlatformError>> {
        Box::pin(async move {
            let channel = self.channel(chat).await?;
            let view = self.shared.view(interaction, self.shared.locale(None), 0);
            let mut message = CreateMessage::new().embed(view.embed).components(view.components);
            if let Some((name, bytes)) = view.attachment {
                message = message.add_file(CreateAttachment::bytes(bytes, name));
            }
            let id = self.send(channel, message, Priority::Card).await?;
            Ok(Some(id.get().to_string()))
        })
    }

    fn refresh_interaction<'a>(&'a self, message: &'a MessageRef, interaction: &'a Interaction) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            let channel = self.channel(&message.chat).await?;
            let Some(id) = message.message_id.parse::<u64>().ok().filter(|&n| n != 0).map(MessageId::new) else {
                return Err(send_error(format!("not a Discord message id: {:?}", message.message_id)));
            };
            // Only a pending card of several pages has one remembered (an ended
            // request's UI state is forgotten as it ends).
            let page = if interaction.status.is_pending() && render::pages(interaction) > 1 { self.shared.page_of(id.get()).await } else { 0 };
            let view = self.shared.view(interaction, self.shared.locale(None), page);
            // An empty component list is what removes the buttons once it has ended.
            let edit = EditMessage::new().embed(view.embed).components(view.components);
            let http = &self.shared.http;
            api::retrying(&self.shared.metrics, "edit interaction", || channel.edit_message(http, id, edit.clone()))
                .await
                .map_err(|e| send_error(format!("edit {id} in {channel}: {e}")))?;
            Ok(())
        })
    }

    fn send_notice<'a>(&'a self, chat: &'a ChatKey, notice: &'a Notice) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            let text = crate::texts::notice(notice);
            // Good news reads as a message, not as a warning.
            if let Notice::YouArePaired { .. } = notice {
                return self.send_text(chat, &text).await;
            }
            let channel = self.channel(chat).await?;
            let content = text::truncate(&format!("⚠️ {text}"), limits::CONTENT);
            self.send(channel, CreateMessage::new().content(content), Priority::Text).await.map(|_| ())
        })
    }

    fn send_reminder<'a>(&'a self, reminder: Reminder<'a>) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            let Reminder { chat, interaction, mention, card } = reminder;
            let channel = self.channel(chat).await?;
            let people = reminder::recipients(PLATFORM, interaction, mention, Some(&self.shared.policy));
            let mut message = render::reminder(interaction, &people, self.shared.locale(None));
            if let Some(card) = card.and_then(|m| m.message_id.parse::<u64>().ok()).filter(|&id| id != 0) {
                // A reply to the card: Discord links the two, one tap to the buttons. A
                // card deleted meanwhile must not cost the reminder: sent on its own then.
                let reference = MessageReference::new(MessageReferenceKind::Default, channel).message_id(MessageId::new(card)).fail_if_not_exists(false);
                message = message.reference_message(reference);
            }
            self.send(channel, message, Priority::Card).await.map(|_| ())
        })
    }

    fn shutdown(&self) {
        if let Some(manager) = Shared::lock(&self.shard_manager).take() {
            tokio::spawn(async move { manager.shutdown_all().await });
        }
        if let Some(task) = Shared::lock(&self.endpoint).take() {
            task.abort();
        }
    }
}
