//! Slack: approvals and questions as Block Kit cards with buttons, menus and modals,
//! and chat turns in channels, threads and DMs, over Socket Mode or the Events API
//! (HTTP).
//!
//! This file is the [`Platform`] the engine calls (sending text, status lines, showing
//! and refreshing cards, notices, reminders) and [`start`]; the other files each own
//! one job:
//! - [`settings`], [`address`], [`descriptor`]: the `[slack]` section, how Slack's
//!   chats, people and targets are written, and the registry's entry
//! - [`api`]: the Web API client (Slack's errors, 429s, each method's tier, one post a
//!   second a channel)
//! - [`groups`]: user groups (`S…`) as approver groups, their members asked of Slack
//! - [`render`]: Interaction → Block Kit message, and the modals (pure)
//! - [`codes`]: what a signed button value or modal metadata names
//! - [`text`]: Slack-only strings and mrkdwn escaping
//! - [`stream`]: the agent's text streamed into one message, edited as it grows
//! - [`socket`]: the Socket Mode connection (envelopes, acks, reconnects)
//! - [`http_endpoint`]: HTTP mode's endpoint (signed posts read as the envelopes Socket
//!   Mode would deliver)
//! - [`inbox`]: envelopes stored before they are acknowledged, handled from the store
//! - [`payload`]: the few Slack payloads the bridge reads
//! - [`clicks`]: block_actions and view_submission → the engine, in one call each
//! - [`chat`]: messages and mentions → the agent's turns, one session per thread
//! - [`commands`]: `/hitl <command>`, answered to the person in the acknowledgement
//! - [`signature`]: the `v0` request signatures HTTP mode checks before parsing
//! - [`manifest`]: the app manifest `hitl-bridge slack manifest` prints
//!
//! What a click means is always the core's call, through [`EngineHandle::act`].
//!
//! **Why no Slack crate.** The issue suggests `slack-morphism`. Its `hyper` feature
//! (Socket Mode and HTTP clients) brings a second HTTP/TLS stack (hyper-rustls), a
//! third tokio-tungstenite and signal handlers that fight the bridge's own SIGTERM
//! handling, so the transport is the bridge's own (reqwest, tokio-tungstenite 0.21,
//! both already in the tree). Its models alone (`default-features = false`) were not
//! taken either: the bridge reads a handful of payloads (the Socket Mode envelope,
//! `hello` and `disconnect`, `block_actions`, `view_submission`, the `message` and
//! `app_mention` events, the slash command), a few fields each, and
//! writes Block Kit whose exact JSON the tests assert. Hand-written serde types for
//! what is read ([`payload`]) and `json!` for what is written keep that JSON in plain
//! sight, with one dependency fewer to build and keep current.

pub mod address;
pub mod api;
pub mod chat;
mod clicks;
pub mod codes;
pub mod commands;
pub mod descriptor;
pub mod groups;
mod http_endpoint;
mod inbox;
pub mod limits;
pub mod manifest;
pub mod payload;
pub mod render;
pub mod settings;
pub mod signature;
mod socket;
pub mod stream;
pub mod text;

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use self::api::{Api, ApiError};
use self::settings::SlackSettings;
use self::text::escape;
use super::kit::reminder;
use super::{Platform, PlatformError};
use crate::engine::EngineHandle;
use crate::engine::Reminder;
use crate::interaction::updates::{Notice, ToolGroupStatus};
use crate::interaction::{AccessPolicy, Actor, Interaction};
use crate::metrics::Metrics;
use crate::platform::descriptor::{Membership, WebLinks};
use crate::platform::kit::bounded::BoundedMap;
use crate::platform::kit::stream::{self as kit_stream, Streams};
use crate::platform::kit::token::TokenSigner;
use crate::platform::kit::turns::Priority;
use crate::store::{ChatKey, MessageRef, PlatformState};
use crate::texts::{self, Locale};

pub const PLATFORM: &str = "slack";

/// Entries each cache keeps at most.
const CACHE_CAP: usize = 10_000;
/// The longest piece of agent text one message carries (Slack truncates past 40,000
/// characters and advises 4,000): cut before escaping, which may add a little.
const TEXT_PIECE: usize = 3_000;

pub fn send_error(message: impl Into<String>) -> PlatformError {
    PlatformError::Send { platform: PLATFORM, message: message.into() }
}

/// A failed call: Slack's own error string when it refuses the conversation for good
/// ([`ApiError::refused_for_good`]), else worth trying again.
fn api_error(what: &str, e: ApiError) -> PlatformError {
    match e.refused_for_good() {
        Some(error) => PlatformError::Refused { platform: PLATFORM, message: format!("{what}: {error}") },
        None => send_error(format!("{what}: {e}")),
    }
}

/// What the platform, the socket and the click handler share.
pub struct Shared {
    pub api: Api,
    pub engine: EngineHandle,
    pub signer: TokenSigner,
    pub locale: Locale,
    /// The bot's own user id (`auth.test`): its messages are not the agent's to hear.
    pub bot_user: String,
    /// `slack.channels`: where every message goes to the agent.
    pub channels: Vec<String>,
    /// The web inbox's links (`/hitl web`).
    pub web: Arc<dyn WebLinks>,
    /// The user groups approvers may be in, and who is in them.
    pub groups: groups::Groups,
    /// A person's DM channel, opened once per person.
    dms: Mutex<BoundedMap<String, String>>,
    /// The status line message per (channel, tool group); dropped once finished.
    statuses: Mutex<BoundedMap<(String, u64), String>>,
    /// The messages agent text is streaming into.
    streams: Streams,
}

impl Shared {
    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The conversation `chat`'s messages go to, opening the DM of a `user:U…` target
    /// once (`conversations.open` gives the same channel every time, so after a restart
    /// the same messages are edited).
    pub async fn channel(&self, chat: &ChatKey) -> Result<String, PlatformError> {
        let Some(user) = chat.chat_id.strip_prefix(address::DM_PREFIX) else { return Ok(chat.chat_id.clone()) };
        if let Some(channel) = Self::lock(&self.dms).get(&user.to_owned()).cloned() {
            return Ok(channel);
        }
        let channel = self.api.conversations_open(user).await.map_err(|e| api_error(&format!("cannot open a DM with {user}"), e))?;
        Self::lock(&self.dms).insert(user.to_owned(), channel.clone());
        Ok(channel)
    }

    /// Posts each piece of agent text (see [`pieces`]) to `chat`, one message each, in
    /// order, escaped.
    async fn post_pieces(&self, chat: &ChatKey, pieces: impl IntoIterator<Item = String>) -> Result<(), PlatformError> {
        for piece in pieces {
            self.post(chat, json!({ "text": escape(&piece) }), Priority::Text).await?;
        }
        Ok(())
    }

    /// Posts `message` (text and blocks) to `chat`, in its thread when it has one.
    async fn post(&self, chat: &ChatKey, mut message: Value, priority: Priority) -> Result<(String, String), PlatformError> {
        let channel = self.channel(chat).await?;
        message["channel"] = json!(channel);
        if let Some(thread) = &chat.thread_id {
            message["thread_ts"] = json!(thread);
        }
        let ts = self.api.post_message(&message, priority).await.map_err(|e| api_error(&format!("post to {channel}"), e))?;
        Ok((channel, ts))
    }
}

/// The Slack platform.
pub struct Slack {
    shared: Arc<Shared>,
    policy: AccessPolicy,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

/// What [`start`] needs besides the settings.
pub struct Wiring {
    pub engine: EngineHandle,
    pub signer: TokenSigner,
    pub policy: AccessPolicy,
    pub metrics: Metrics,
    /// What the HTTP events listener allows a client (HTTP mode).
    pub limits: crate::listener::Limits,
    pub inbox: crate::platform::kit::inbox::DurableInbox,
    pub web: Arc<dyn WebLinks>,
    /// Every group id the configuration names, with its setting.
    pub groups: Vec<(String, String)>,
    /// Slack's own keys in the store: the members of its groups as last known.
    pub state: PlatformState,
}

/// Checks the bot token with `auth.test`, then connects Socket Mode. A token Slack
/// refuses is an error naming `slack.bot_token`: the bridge must not run with a Slack
/// that cannot work.
pub async fn start(settings: &SlackSettings, wiring: Wiring) -> Result<Arc<Slack>, PlatformError> {
    let Some(bot_token) = settings.bot_token() else {
        return Err(send_error("slack.enabled is set but slack.bot_token is empty (env HITL_BRIDGE__SLACK__BOT_TOKEN)"));
    };
    let api = Api::new(&settings.api_url, bot_token, settings.app_token(), settings.post_interval(), wiring.metrics.clone());
    wiring.metrics.platform_started(PLATFORM);
    let (bot, team) = api.auth_test().await.map_err(|e| match e.slack_error() {
        Some(error) => send_error(format!("Slack refused slack.bot_token (auth.test: {error}); copy the Bot User OAuth Token (xoxb-…) again")),
        None => send_error(format!("cannot check slack.bot_token at slack.api_url = {}: {e}", settings.api_url)),
    })?;
    tracing::info!(%bot, %team, "slack.bot_token accepted");
    let shared = Arc::new(Shared {
        api,
        engine: wiring.engine,
        signer: wiring.signer,
        locale: settings.locale(),
        bot_user: bot,
        channels: settings.channels.clone(),
        web: wiring.web,
        groups: groups::Groups::new(&wiring.groups, settings.group_refresh(), wiring.state),
        dms: Mutex::new(BoundedMap::new(CACHE_CAP)),
        statuses: Mutex::new(BoundedMap::new(CACHE_CAP)),
        streams: Streams::new(CACHE_CAP),
    });
    let handler = Arc::new(inbox::Handler::new(shared.clone(), wiring.inbox));
    // What a previous run stored and never finished is handed over before new envelopes.
    handler.inbox.start(&handler).await;
    let transport = match settings.mode {
        settings::SlackMode::Socket => {
            let url = shared.api.connections_open().await.map_err(|e| match e.slack_error() {
                Some(error) => send_error(format!("Slack refused slack.app_token (apps.connections.open: {error}); it needs the connections:write scope")),
                None => send_error(format!("cannot open Socket Mode: {e}")),
            })?;
            tokio::spawn(socket::run(handler.clone(), Some(url)))
        }
        settings::SlackMode::Http => {
            let secret = settings.signing_secret.clone().ok_or_else(|| send_error("slack.mode = \"http\" needs slack.signing_secret"))?;
            let listener = tokio::net::TcpListener::bind(&settings.events_listen)
                .await
                .map_err(|e| send_error(format!("cannot listen on slack.events_listen = {}: {e}", settings.events_listen)))?;
            tracing::info!(listen = %settings.events_listen, path = manifest::EVENTS_PATH, "Slack events endpoint ready");
            let endpoint = Arc::new(http_endpoint::Endpoint { handler: handler.clone(), verifier: signature::Verifier::new(secret) });
            tokio::spawn(crate::listener::serve(listener, http_endpoint::router(endpoint), wiring.limits))
        }
    };
    let sweep = tokio::spawn(async move { handler.inbox.sweep(handler.clone()).await });
    Ok(Arc::new(Slack { shared, policy: wiring.policy, tasks: Mutex::new(vec![transport, sweep]) }))
}

impl Membership for Slack {
    fn groups_of<'a>(&'a self, person: &'a Actor, named: &'a [String]) -> BoxFuture<'a, Vec<String>> {
        Box::pin(async move {
            if person.platform != PLATFORM {
                return Vec::new();
            }
            self.shared.groups.of_user_naming(&self.shared.api, &person.user_id, named).await
        })
    }
}

impl Platform for Slack {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    fn send_text<'a>(&'a self, chat: &'a ChatKey, text: &'a str) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(self.shared.post_pieces(chat, pieces(text)))
    }

    fn text_progress<'a>(&'a self, chat: &'a ChatKey, block: u64, text_so_far: &'a str) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(self.shared.streams.progress(&*self.shared, chat, block, text_so_far))
    }

    fn finish_text<'a>(&'a self, chat: &'a ChatKey, block: u64, text: &'a str) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(self.shared.streams.finish(&*self.shared, chat, block, text))
    }

    fn tool_status<'a>(&'a self, chat: &'a ChatKey, status: &'a ToolGroupStatus) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            let line = json!({ "text": text::escape_cut(&status.line(), TEXT_PIECE) });
            let channel = self.shared.channel(chat).await?;
            let key = (channel.clone(), status.group);
            let existing = Shared::lock(&self.shared.statuses).get(&key).cloned();
            match existing {
                Some(ts) => self.shared.api.update_message(&channel, &ts, &line).await.map_err(|e| api_error("edit a status line", e))?,
                None => {
                    let (_, ts) = self.shared.post(chat, line, Priority::Text).await?;
                    Shared::lock(&self.shared.statuses).insert(key.clone(), ts);
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
            let card = render::card(interaction, self.shared.locale, &self.shared.signer, self.shared.web.card_link(&interaction.id).as_ref());
            let (_, ts) = self.shared.post(chat, card, Priority::Card).await?;
            Ok(Some(ts))
        })
    }

    fn refresh_interaction<'a>(&'a self, message: &'a MessageRef, interaction: &'a Interaction) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            if !address::is_ts(&message.message_id) {
                return Err(send_error(format!("not a Slack message ts: {:?}", message.message_id)));
            }
            self.shared.groups.note(interaction);
            let channel = self.shared.channel(&message.chat).await?;
            let card = render::card(interaction, self.shared.locale, &self.shared.signer, self.shared.web.card_link(&interaction.id).as_ref());
            self.shared
                .api
                .update_message(&channel, &message.message_id, &card)
                .await
                .map_err(|e| api_error(&format!("edit {} in {channel}", message.message_id), e))
        })
    }

    fn send_notice<'a>(&'a self, chat: &'a ChatKey, notice: &'a Notice) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            let text = crate::platform::kit::refusals::notice_line(notice);
            self.shared.post(chat, json!({ "text": text::escape_cut(&text, TEXT_PIECE) }), Priority::Text).await.map(|_| ())
        })
    }

    fn send_reminder<'a>(&'a self, reminder: Reminder<'a>) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            let Reminder { chat, interaction, mention, card } = reminder;
            let people = reminder::recipients(PLATFORM, interaction, mention, Some(&self.policy));
            let text = reminder_text(interaction, &people, self.shared.locale);
            let chat = reminder::in_cards_thread(chat, card, address::is_ts);
            self.shared.post(&chat, json!({ "text": text }), Priority::Card).await.map(|_| ())
        })
    }

    fn shutdown(&self) {
        for task in Shared::lock(&self.tasks).drain(..) {
            task.abort();
        }
    }
}

/// Agent text as the messages that carry it: made [`readable`](crate::interaction::readable), cut into
/// [`TEXT_PIECE`]s (before escaping), blank pieces left out (Slack refuses an empty
/// message: `no_text`).
fn pieces(text: &str) -> Vec<String> {
    kit_stream::pieces(text, TEXT_PIECE)
}

/// People one reminder mentions at most.
const MAX_MENTIONS: usize = 25;

/// An escalation reminder in mrkdwn: people on Slack mentioned as `<@U…>` and user
/// groups as `<!subteam^S…>` (which notifies them, and only them: anything else in the
/// text is escaped), others named.
fn reminder_text(interaction: &Interaction, people: &reminder::Recipients, locale: Locale) -> String {
    const SLACK: reminder::Style = reminder::Style {
        user: |id| address::is_user_id(id).then(|| format!("<@{id}>")),
        group: |id| address::is_group_id(id).then(|| format!("<!subteam^{id}>")),
        text: text::escape_cut,
        deadline: texts::clock,
        subject_max: 1000,
        most_named: MAX_MENTIONS,
    };
    reminder::text(locale, interaction, people, &SLACK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::{RequestBuilder, TimeoutDefaults};
    use crate::protocol::ActionRequest;

    #[test]
    fn conversations_slack_refuses_for_good_are_not_tried_again_and_the_rest_are() {
        let refusal = |e: ApiError| api_error("post to C1", e).refusal().map(str::to_owned);
        let slack = |error: &str| ApiError::Slack { method: "chat.postMessage", error: error.into() };
        for error in ["channel_not_found", "not_in_channel", "is_archived", "user_not_found", "cannot_dm_bot"] {
            assert_eq!(refusal(slack(error)), Some(format!("post to C1: {error}")));
        }
        assert_eq!(refusal(slack("msg_too_long")), None, "about the message, not the channel");
        assert_eq!(refusal(slack("invalid_auth")), None, "about the token");
        assert_eq!(refusal(ApiError::RateLimited { method: "chat.postMessage" }), None);
        assert_eq!(refusal(ApiError::Status { method: "chat.postMessage", status: 503 }), None);
        assert_eq!(refusal(ApiError::Network { method: "chat.postMessage", message: "reset".into() }), None);
    }

    #[test]
    fn a_reminder_mentions_slack_users_and_names_everyone_else_escaped() {
        let action = ActionRequest { name: "drop <!channel>".into(), args: json!({}), description: None, tool_use_id: None };
        let request = RequestBuilder::start("k", vec![action], vec![], Some(300)).finish(TimeoutDefaults::default()).unwrap();
        let interaction = Interaction::new("a1b2c3d4e5f6".into(), "s".into(), request, None, 1_767_225_600_000);
        let people = reminder::Recipients { users: vec!["U0ANA".into(), "<!here>".into()], roles: vec![], others: vec!["telegram:42".into()] };
        let text = reminder_text(&interaction, &people, Locale::En);
        assert!(text.starts_with("⏰ Reminder: <@U0ANA> &lt;!here&gt; telegram:42 — "), "{text}");
        assert!(text.contains("drop &lt;!channel&gt;"), "{text}");
        assert!(!text.contains("<!"), "no broadcast mention: {text}");
    }

    #[test]
    fn a_reminder_mentions_a_user_group_by_its_id() {
        let action = ActionRequest { name: "deploy".into(), args: json!({}), description: None, tool_use_id: None };
        let request = RequestBuilder::start("k", vec![action], vec![], Some(300)).finish(TimeoutDefaults::default()).unwrap();
        let interaction = Interaction::new("a1b2c3d4e5f6".into(), "s".into(), request, None, 1_767_225_600_000);
        let people = reminder::Recipients { users: vec![], roles: vec!["S0SRE".into(), "900".into()], others: vec![] };
        let text = reminder_text(&interaction, &people, Locale::En);
        assert!(text.starts_with("⏰ Reminder: <!subteam^S0SRE> — "), "{text}");
        assert!(!text.contains("900"), "with someone to mention, role names (the fallback) are left out: {text}");
    }
}
