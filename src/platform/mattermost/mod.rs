//! Mattermost: approvals and questions as interactive message attachments (buttons
//! and select menus) with interactive dialogs, over REST API v4 and the integration
//! endpoint Mattermost posts clicks to.
//!
//! This file is the [`Platform`] the engine calls (sending text, status lines, showing
//! and refreshing cards, notices, reminders) and [`start`]; the other files each own
//! one job:
//! - [`settings`], [`address`], [`descriptor`]: the `[mattermost]` section, how
//!   Mattermost's chats, people and targets are written, and the registry's entry
//! - [`api`]: the REST v4 client (Mattermost's errors, 429s with `X-Ratelimit-*`, one
//!   line of posts per channel)
//! - [`render`]: Interaction → message attachments, and the dialogs (pure)
//! - [`codes`]: what a signed button context or dialog state names
//! - [`cards`]: which posts are the bridge's own cards
//! - [`groups`]: custom groups and channel membership as approver groups
//! - [`text`]: Mattermost-only strings and Markdown escaping
//! - [`http_endpoint`]: the integration endpoint (clicks, menus, dialog submissions,
//!   the `/hitl` slash command with its token checked)
//! - [`socket`]: the WebSocket (`posted` events, `seq` checked, missed posts fetched
//!   `since` after a gap or a reconnect)
//! - [`chat`]: posts in channels, DMs and mentions → the agent's turns, one session
//!   per thread
//! - [`stream`]: the agent's text growing in one post, edited about once a second
//! - [`commands`]: `/hitl <command>`, answered to the person in the response
//! - [`inbox`]: those posts stored before they are handled, answered from the store
//! - [`payload`]: the few Mattermost payloads the bridge reads
//! - [`clicks`]: clicks and submissions → the engine, in one call each
//! - [`setup`]: what `hitl-bridge mattermost setup` prints
//!
//! **Why no Mattermost crate.** The bridge calls six REST endpoints and reads two
//! payloads, a few fields each, and writes attachments whose exact JSON the tests
//! assert; reqwest and serde are already in the tree, and a generated client
//! (`mattermost-rust-client`) would bring its own models of the whole API.

pub mod address;
pub mod api;
pub mod cards;
pub mod chat;
mod clicks;
pub mod codes;
pub mod commands;
pub mod descriptor;
pub mod groups;
mod http_endpoint;
mod inbox;
pub mod limits;
pub mod payload;
pub mod render;
pub mod settings;
pub mod setup;
mod socket;
mod stream;
pub mod text;

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use self::api::{Api, ApiError};
use self::settings::MattermostSettings;
use super::kit::reminder;
use super::{Platform, PlatformError};
use crate::engine::{EngineHandle, Reminder};
use crate::interaction::updates::{Notice, ToolGroupStatus};
use crate::interaction::{AccessPolicy, Interaction};
use crate::metrics::Metrics;
use crate::platform::descriptor::WebLinks;
use crate::platform::kit::bounded::BoundedMap;
use crate::platform::kit::stream::{self as kit_stream, Streams};
use crate::platform::kit::token::TokenSigner;
use crate::platform::kit::turns::Priority;
use crate::store::{ChatKey, MessageRef, PlatformState};
use crate::texts::{self, Locale};

pub const PLATFORM: &str = "mattermost";

/// Entries each cache keeps at most.
const CACHE_CAP: usize = 10_000;
/// The longest piece of agent text one post carries: Mattermost's default post limit,
/// before escaping, which may add a little (kept well under it).
const TEXT_PIECE: usize = 8_000;

pub fn send_error(message: impl Into<String>) -> PlatformError {
    PlatformError::Send { platform: PLATFORM, message: message.into() }
}

/// A failed call: refused for good when Mattermost refuses the channel or person
/// (403, 404), else worth trying again.
fn api_error(what: &str, e: ApiError) -> PlatformError {
    if e.refused_for_good() { PlatformError::Refused { platform: PLATFORM, message: format!("{what}: {e}") } } else { send_error(format!("{what}: {e}")) }
}

/// What the platform and the click handler share.
pub struct Shared {
    pub api: Api,
    pub engine: EngineHandle,
    pub signer: TokenSigner,
    pub locale: Locale,
    /// The bot account (`users/me`): its DMs are opened with it.
    pub bot: api::Me,
    /// `<public_url>`, without a trailing `/`.
    pub public_url: String,
    /// `mattermost.channels`: where every post goes to the agent.
    pub channels: Vec<String>,
    pub web: Arc<dyn WebLinks>,
    pub cards: cards::Cards,
    /// Who is in the approver groups, as Mattermost says.
    pub groups: groups::Groups,
    /// A person's DM channel, opened once per person.
    dms: Mutex<BoundedMap<String, String>>,
    /// People's usernames, asked once per person.
    names: Mutex<BoundedMap<String, String>>,
    /// The status line post per (channel, tool group); dropped once finished.
    statuses: Mutex<BoundedMap<(String, u64), String>>,
    /// The posts agent text is streaming into.
    streams: Streams,
}

impl Shared {
    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Where buttons post.
    pub fn actions_url(&self) -> String {
        format!("{}{}", self.public_url, setup::ACTIONS_PATH)
    }

    /// Where dialogs post.
    pub fn dialogs_url(&self) -> String {
        format!("{}{}", self.public_url, setup::DIALOGS_PATH)
    }

    /// The post showing `interaction` now (`message` and `props`).
    pub fn card(&self, interaction: &Interaction) -> Value {
        let url = self.actions_url();
        let buttons = render::Buttons { url: &url, signer: &self.signer };
        render::card(interaction, self.locale, &buttons, self.web.card_link(&interaction.id).as_ref())
    }

    /// A person's username, asked of Mattermost once (`GET users/{id}`); their id
    /// when Mattermost cannot say.
    pub async fn username(&self, user_id: &str) -> String {
        if let Some(name) = Self::lock(&self.names).get(&user_id.to_owned()).cloned() {
            return name;
        }
        match self.api.call("users/{id}", reqwest::Method::GET, &format!("/users/{user_id}"), None).await {
            Ok(user) => {
                let name = user["username"].as_str().unwrap_or(user_id).to_owned();
                Self::lock(&self.names).insert(user_id.to_owned(), name.clone());
                name
            }
            Err(e) => {
                tracing::info!(%user_id, error = %e, "cannot read a Mattermost user's name");
                user_id.to_owned()
            }
        }
    }

    /// The channel `chat`'s posts go to, opening the DM of a `user:…` target once
    /// (`channels/direct` gives the same channel every time).
    pub async fn channel(&self, chat: &ChatKey) -> Result<String, PlatformError> {
        let Some(user) = chat.chat_id.strip_prefix(address::DM_PREFIX) else { return Ok(chat.chat_id.clone()) };
        if let Some(channel) = Self::lock(&self.dms).get(&user.to_owned()).cloned() {
            return Ok(channel);
        }
        let channel = self.api.direct_channel(&self.bot.id, user).await.map_err(|e| api_error(&format!("cannot open a DM with {user}"), e))?;
        Self::lock(&self.dms).insert(user.to_owned(), channel.clone());
        Ok(channel)
    }

    /// Posts `post` (message and props) to `chat`, in its thread when it has one:
    /// the new post's id.
    async fn post(&self, chat: &ChatKey, mut post: Value, priority: Priority) -> Result<String, PlatformError> {
        let channel = self.channel(chat).await?;
        post["channel_id"] = json!(channel);
        if let Some(root) = &chat.thread_id {
            post["root_id"] = json!(root);
        }
        self.api.create_post(&post, priority).await.map_err(|e| api_error(&format!("post to {channel}"), e))
    }
}

/// The Mattermost platform.
pub struct Mattermost {
    shared: Arc<Shared>,
    /// Whom a reminder names besides the request's own approvers.
    policy: AccessPolicy,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

/// What [`start`] needs besides the settings.
pub struct Wiring {
    pub engine: EngineHandle,
    pub signer: TokenSigner,
    pub policy: AccessPolicy,
    pub metrics: Metrics,
    /// What the integration endpoint allows a client.
    pub limits: crate::listener::Limits,
    pub inbox: crate::platform::kit::inbox::DurableInbox,
    pub web: Arc<dyn WebLinks>,
    /// Every group id the configuration names, with the setting naming it.
    pub groups: Vec<(String, String)>,
    /// Mattermost's own keys in the store: its cards.
    pub state: PlatformState,
}

/// Checks the bot token with `users/me`, then listens for clicks. A token Mattermost
/// refuses is an error naming `mattermost.bot_token`: the bridge must not run with a
/// Mattermost that cannot work.
pub async fn start(settings: &MattermostSettings, wiring: Wiring) -> Result<Arc<Mattermost>, PlatformError> {
    let Some(token) = settings.bot_token() else {
        return Err(send_error("mattermost.enabled is set but mattermost.bot_token is empty (env HITL_BRIDGE__MATTERMOST__BOT_TOKEN)"));
    };
    let api = Api::new(settings.server(), token, settings.post_interval(), wiring.metrics.clone());
    wiring.metrics.platform_started(PLATFORM);
    let bot = api.me().await.map_err(|e| match e.refused() {
        Some((status, id)) => send_error(format!(
            "Mattermost refused mattermost.bot_token (users/me: HTTP {status} {id}); copy the bot account's access token again (Integrations > Bot Accounts)"
        )),
        None => send_error(format!("cannot check mattermost.bot_token at mattermost.url = {}: {e}", settings.server())),
    })?;
    tracing::info!(bot = %bot.username, "mattermost.bot_token accepted");
    let shared = Arc::new(Shared {
        api,
        engine: wiring.engine,
        signer: wiring.signer,
        locale: settings.locale(),
        bot,
        public_url: settings.public().to_owned(),
        channels: settings.channels.clone(),
        web: wiring.web,
        cards: cards::Cards::new(wiring.state.clone()),
        groups: groups::Groups::new(&wiring.groups),
        dms: Mutex::new(BoundedMap::new(CACHE_CAP)),
        names: Mutex::new(BoundedMap::new(CACHE_CAP)),
        statuses: Mutex::new(BoundedMap::new(CACHE_CAP)),
        streams: Streams::new(CACHE_CAP),
    });
    let state = wiring.state;
    let handler = Arc::new(inbox::Handler::new(shared.clone(), wiring.inbox));
    // What a previous run stored and never finished is handled before new posts.
    handler.inbox.start(&handler).await;
    let listener = tokio::net::TcpListener::bind(&settings.listen)
        .await
        .map_err(|e| send_error(format!("cannot listen on mattermost.listen = {}: {e}", settings.listen)))?;
    tracing::info!(listen = %settings.listen, "Mattermost integration endpoint ready");
    let router = http_endpoint::router(Arc::new(http_endpoint::Endpoint { handler: handler.clone(), slash_token: settings.slash_token().map(str::to_owned) }));
    let endpoint = tokio::spawn(crate::listener::serve(listener, router, wiring.limits));
    let socket = tokio::spawn(socket::run(handler.clone(), state, socket::url_of(settings.server()), token.to_owned(), settings.channels.clone()));
    let sweep = tokio::spawn(async move { handler.inbox.sweep(handler.clone()).await });
    Ok(Arc::new(Mattermost { shared, policy: wiring.policy, tasks: Mutex::new(vec![endpoint, socket, sweep]) }))
}

impl Platform for Mattermost {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    fn send_text<'a>(&'a self, chat: &'a ChatKey, text: &'a str) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            for piece in pieces(text) {
                self.shared.post(chat, json!({ "message": text::escape(&piece) }), Priority::Text).await?;
            }
            Ok(())
        })
    }

    fn text_progress<'a>(&'a self, chat: &'a ChatKey, block: u64, text_so_far: &'a str) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(self.shared.streams.progress(&*self.shared, chat, block, text_so_far))
    }

    fn finish_text<'a>(&'a self, chat: &'a ChatKey, block: u64, text: &'a str) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(self.shared.streams.finish(&*self.shared, chat, block, text))
    }

    fn tool_status<'a>(&'a self, chat: &'a ChatKey, status: &'a ToolGroupStatus) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            let line = json!({ "message": text::escape_cut(&status.line(), TEXT_PIECE) });
            let channel = self.shared.channel(chat).await?;
            let key = (channel.clone(), status.group);
            let existing = Shared::lock(&self.shared.statuses).get(&key).cloned();
            match existing {
                Some(post_id) => self.shared.api.patch_post(&post_id, &line).await.map_err(|e| api_error("edit a status line", e))?,
                None => {
                    let post_id = self.shared.post(chat, line, Priority::Text).await?;
                    Shared::lock(&self.shared.statuses).insert(key.clone(), post_id);
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
            let post_id = self.shared.post(chat, self.shared.card(interaction), Priority::Card).await?;
            self.shared.cards.remember(&post_id, &interaction.id, interaction.deadline_ms).await;
            Ok(Some(post_id))
        })
    }

    fn refresh_interaction<'a>(&'a self, message: &'a MessageRef, interaction: &'a Interaction) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            if !address::is_id(&message.message_id) {
                return Err(send_error(format!("not a Mattermost post id: {:?}", message.message_id)));
            }
            self.shared
                .api
                .patch_post(&message.message_id, &self.shared.card(interaction))
                .await
                .map_err(|e| api_error(&format!("edit post {}", message.message_id), e))
        })
    }

    fn send_notice<'a>(&'a self, chat: &'a ChatKey, notice: &'a Notice) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            let text = crate::platform::kit::refusals::notice_line(notice);
            self.shared.post(chat, json!({ "message": text::escape_cut(&text, TEXT_PIECE) }), Priority::Text).await.map(|_| ())
        })
    }

    fn send_reminder<'a>(&'a self, reminder: Reminder<'a>) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            let Reminder { chat, interaction, mention, card } = reminder;
            let people = reminder::recipients(PLATFORM, interaction, mention, Some(&self.policy));
            let text = reminder_text(interaction, &people, self.shared.locale);
            let chat = reminder::in_cards_thread(chat, card, address::is_id);
            self.shared.post(&chat, json!({ "message": text }), Priority::Card).await.map(|_| ())
        })
    }

    fn shutdown(&self) {
        for task in Shared::lock(&self.tasks).drain(..) {
            task.abort();
        }
    }
}

/// Agent text as the posts that carry it: cut into [`TEXT_PIECE`]s (before
/// escaping), blank pieces left out (Mattermost refuses an empty post).
fn pieces(text: &str) -> Vec<String> {
    kit_stream::pieces(text, TEXT_PIECE)
}

/// People one reminder names at most.
const MAX_MENTIONS: usize = 25;

/// An escalation reminder: Mattermost mentions by username, which a user id does not
/// give without a lookup, so everyone is named (escaped, no mention), with the deadline.
fn reminder_text(interaction: &Interaction, people: &reminder::Recipients, locale: Locale) -> String {
    const MATTERMOST: reminder::Style =
        reminder::Style { user: |_| None, group: |_| None, text: text::escape_cut, deadline: texts::clock, subject_max: 1000, most_named: MAX_MENTIONS };
    reminder::text(locale, interaction, people, &MATTERMOST)
}
