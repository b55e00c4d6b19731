//! Matrix (Element and every other client): approvals as one formatted message answered
//! by a reaction or a reply, questions as polls, in plain and end-to-end encrypted
//! rooms, over `matrix-sdk` (its Rust crypto decrypts what the bot is sent and
//! encrypts what it sends).
//!
//! This file is the [`Platform`] the engine calls (sending text, status lines,
//! showing and refreshing cards, notices, reminders) and [`start`]; the other files
//! each own one job:
//! - [`settings`], [`address`], [`descriptor`]: the `[matrix]` section, how Matrix's
//!   rooms, people and targets are written, and the registry's entry
//! - [`client`]: the SDK client: its store, login once, the device kept, `whoami`
//! - [`sync`]: `/sync` with the token kept after the events are stored; the sync
//!   lease between replicas; invitations
//! - [`payload`]: the room events the bridge reads
//! - [`inbox`]: those events stored before they are handled, on each room's lane
//! - [`render`]: Interaction → the card, its polls and reactions (pure)
//! - [`cards`]: which events are the bridge's cards and polls
//! - [`answers`]: reactions, votes and replies → the engine
//! - [`chat`]: messages → the agent's turns, one session per thread; `!hitl` commands
//! - [`groups`]: a room's power levels as approver groups
//! - [`text`]: Matrix-only strings and escaping (no markup, no mention)
//!
//! **Why matrix-sdk.** End-to-end encryption (Olm and Megolm sessions, device keys,
//! key sharing, cross-signing) is the bulk of a Matrix client, and its correctness is
//! not something to write again; the SDK is maintained by the Matrix.org Foundation
//! and is what Element X runs. It is behind the `matrix` cargo feature, on by default.

pub mod address;
pub mod answers;
pub mod cards;
pub mod chat;
pub mod client;
pub mod descriptor;
pub mod groups;
mod inbox;
pub mod payload;
pub mod render;
pub mod settings;
mod sync;
pub mod text;

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use matrix_sdk::ruma::{RoomId, UserId};
use matrix_sdk::{Client, Room};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use self::cards::{Card, Poll, Target};
use self::settings::MatrixSettings;
use super::kit::reminder;
use super::{Platform, PlatformError};
use crate::clock::now_ms;
use crate::engine::{EngineHandle, Reminder};
use crate::interaction::updates::{Notice, ToolGroupStatus};
use crate::interaction::{AccessPolicy, Actor, Interaction, RequestKind};
use crate::platform::descriptor::WebLinks;
use crate::platform::kit::bounded::BoundedMap;
use crate::platform::kit::stream::{self as kit_stream, Posted, Sink, Streams};
use crate::store::{ChatKey, MessageRef, PlatformState};
use crate::texts::{self, Locale};

pub const PLATFORM: &str = "matrix";

/// Entries each cache keeps at most.
const CACHE_CAP: usize = 10_000;
/// The longest piece of agent text one message carries (an event is at most 64 KiB;
/// the text goes twice, plain and HTML, and may take three bytes a character).
const TEXT_PIECE: usize = 8_000;

pub fn send_error(message: impl Into<String>) -> PlatformError {
    PlatformError::Send { platform: PLATFORM, message: message.into() }
}

/// A failed call: refused for good when the homeserver refuses the room or person
/// (`M_FORBIDDEN`, `M_NOT_FOUND`, an unknown room), else worth trying again.
fn sdk_error(what: &str, e: matrix_sdk::Error) -> PlatformError {
    use matrix_sdk::ruma::api::error::ErrorKind;
    match e.client_api_error_kind() {
        Some(ErrorKind::Forbidden | ErrorKind::NotFound) => PlatformError::Refused { platform: PLATFORM, message: format!("{what}: {e}") },
        _ => send_error(format!("{what}: {e}")),
    }
}

/// What the platform and the answer handlers share.
pub struct Shared {
    pub client: Client,
    /// The bot's own user id.
    pub bot: String,
    pub engine: EngineHandle,
    pub locale: Locale,
    /// `matrix.rooms`: where every message goes to the agent.
    pub rooms: Vec<String>,
    pub web: Arc<dyn WebLinks>,
    pub cards: cards::Cards,
    pub groups: groups::Groups,
    state: PlatformState,
    /// A person's DM room, by user id.
    dms: Mutex<BoundedMap<String, String>>,
    /// The status line event per (room, tool group); dropped once finished.
    statuses: Mutex<BoundedMap<(String, u64), String>>,
    /// The messages agent text is streaming into.
    streams: Streams,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// Room `room_id`, which the bot must be in. A room this process's client has not
    /// synced yet (a replica that stood by while the bot joined it) is joined again,
    /// which for a member changes nothing and gives the client the room.
    async fn room(&self, room_id: &str) -> Result<Room, PlatformError> {
        let id =
            <&RoomId>::try_from(room_id).map_err(|_| PlatformError::Refused { platform: PLATFORM, message: format!("not a Matrix room id: {room_id:?}") })?;
        if let Some(room) = self.client.get_room(id) {
            return Ok(room);
        }
        self.client.join_room_by_id(id).await.map_err(|e| sdk_error(&format!("the bot is not in room {room_id}; invite it"), e))
    }

    /// The DM room with `user`: the one they wrote from, else the SDK's, else a new
    /// one (encrypted, marked direct).
    async fn dm_room(&self, user: &str) -> Result<Room, PlatformError> {
        let known = lock(&self.dms).get(&user.to_owned()).cloned();
        if let Some(room) = known {
            return self.room(&room).await;
        }
        if let Ok(Some(stored)) = self.state.get(&format!("dm:{user}"), now_ms()).await
            && let Ok(room) = self.room(&stored.value).await
        {
            lock(&self.dms).insert(user.to_owned(), stored.value);
            return Ok(room);
        }
        let user_id =
            <&UserId>::try_from(user).map_err(|_| PlatformError::Refused { platform: PLATFORM, message: format!("not a Matrix user id: {user:?}") })?;
        let room = match self.client.get_dm_room(user_id) {
            Some(room) => room,
            None => self.client.create_dm(user_id).await.map_err(|e| sdk_error(&format!("cannot open a DM with {user}"), e))?,
        };
        self.remember_dm(user, room.room_id().as_str()).await;
        Ok(room)
    }

    /// Remembers `room` as `user`'s DM with the bot.
    pub async fn remember_dm(&self, user: &str, room: &str) {
        if lock(&self.dms).get(&user.to_owned()).is_some_and(|known| known == room) {
            return;
        }
        lock(&self.dms).insert(user.to_owned(), room.to_owned());
        if let Err(e) = self.state.put(&format!("dm:{user}"), room, now_ms(), None).await {
            tracing::warn!(%user, error = %e, "cannot remember a Matrix DM room");
        }
    }

    /// The room `chat` is in, and its thread.
    async fn resolve(&self, chat: &ChatKey) -> Result<(Room, Option<String>), PlatformError> {
        let room = match chat.chat_id.strip_prefix(address::DM_PREFIX) {
            Some(user) => self.dm_room(user).await?,
            None => self.room(&chat.chat_id).await?,
        };
        Ok((room, chat.thread_id.clone()))
    }

    /// Sends one event: its id.
    async fn send(&self, room: &Room, event_type: &str, content: Value) -> Result<String, PlatformError> {
        let sent = room.send_raw(event_type, content).await.map_err(|e| sdk_error(&format!("send {event_type} to {}", room.room_id()), e))?;
        Ok(sent.response.event_id.to_string())
    }

    /// Sends `content` (an `m.room.message`) to `chat`, in its thread: where, and the
    /// event's id.
    async fn post(&self, chat: &ChatKey, content: Value) -> Result<(Room, String), PlatformError> {
        let (room, thread) = self.resolve(chat).await?;
        let id = self.send(&room, "m.room.message", render::in_thread(content, thread.as_deref())).await?;
        Ok((room, id))
    }

    /// Replaces message `event` with `content`.
    async fn edit(&self, room: &Room, event: &str, content: &Value) -> Result<(), PlatformError> {
        self.send(room, "m.room.message", render::replacement(event, content)).await.map(|_| ())
    }

    /// A bridge notice in `room`, in thread `thread` when given.
    pub async fn notice_in(&self, room: &str, thread: Option<&str>, text: &str) {
        self.send_in(room, thread, render::notice(text)).await;
    }

    /// `content` (an `m.room.message`) in `room`, in thread `thread` when given; a
    /// failure is logged.
    pub async fn send_in(&self, room: &str, thread: Option<&str>, content: Value) {
        let sent = match self.room(room).await {
            Ok(room) => self.send(&room, "m.room.message", render::in_thread(content, thread)).await.map(|_| ()),
            Err(e) => Err(e),
        };
        match sent {
            Ok(()) => tracing::debug!(%room, "a Matrix notice sent"),
            Err(e) => tracing::warn!(%room, error = %e, "cannot send a Matrix notice"),
        }
    }

    /// A notice only `user` reads: in their DM with the bot.
    pub async fn notice_in_dm(&self, user: &str, text: &str) {
        let sent = match self.dm_room(user).await {
            Ok(room) => self.send(&room, "m.room.message", render::notice(text)).await.map(|_| ()),
            Err(e) => Err(e),
        };
        if let Err(e) = sent {
            tracing::warn!(%user, error = %e, "cannot send a Matrix notice in a DM");
        }
    }

    /// A notice in the thread of the card `target` belongs to: the card's own thread,
    /// or a thread at the card.
    pub async fn notice_on_card(&self, target: &Target, text: &str) {
        let card = match target {
            Target::Card { card, .. } => Some(card.clone()),
            Target::Poll { poll, .. } => self.cards.card(&poll.card).await,
        };
        let Some(card) = card else { return };
        let thread = card.thread.clone().unwrap_or_else(|| target.card_id().to_owned());
        self.notice_in(&card.room, Some(&thread), text).await;
    }

    /// The person `user`, acting in `room`: their display name there, and the approver
    /// groups they are in (among those the configuration and request `interaction`
    /// name; the caller has the request loaded already).
    pub async fn actor(&self, room: &str, user: &str, interaction: Option<&Interaction>) -> Actor {
        let mut name = user.to_owned();
        if let Ok(room_id) = <&RoomId>::try_from(room)
            && let Some(room) = self.client.get_room(room_id)
            && let Ok(user_id) = <&UserId>::try_from(user)
            && let Ok(Some(member)) = room.get_member_no_sync(user_id).await
            && let Some(display) = member.display_name()
        {
            name = display.to_owned();
        }
        let named = interaction.map(|i| crate::platform::kit::groups::named_by(i, |g| address::parse_group(g).is_some())).unwrap_or_default();
        let mut actor = Actor::new(PLATFORM, user, &name);
        actor.groups = self.groups.of(&self.client, user, &named).await;
        actor
    }
}

impl Sink for Shared {
    fn piece_chars(&self) -> usize {
        TEXT_PIECE
    }

    fn post<'a>(&'a self, chat: &'a ChatKey, piece: &'a str) -> BoxFuture<'a, Result<Posted, PlatformError>> {
        Box::pin(async move {
            let (room, id) = Shared::post(self, chat, render::text_message(piece)).await?;
            Ok(Posted { channel: room.room_id().to_string(), id })
        })
    }

    fn edit<'a>(&'a self, message: &'a Posted, piece: &'a str) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move { Shared::edit(self, &self.room(&message.channel).await?, &message.id, &render::text_message(piece)).await })
    }
}

/// The Matrix platform.
pub struct Matrix {
    shared: Arc<Shared>,
    /// Whom a reminder names besides the request's own approvers.
    policy: AccessPolicy,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

/// What [`start`] needs besides the settings.
pub struct Wiring {
    pub engine: EngineHandle,
    pub policy: AccessPolicy,
    pub metrics: crate::metrics::Metrics,
    pub inbox: crate::platform::kit::inbox::DurableInbox,
    pub web: Arc<dyn WebLinks>,
    /// Every group id the configuration names, with the setting naming it.
    pub groups: Vec<(String, String)>,
    /// Matrix's own keys in the store: its sync token, cards and DMs.
    pub state: PlatformState,
    pub replica_id: String,
}

/// Logs in (or restores the device), then syncs. A homeserver that refuses the bot is
/// an error naming the setting: the bridge must not run with a Matrix that cannot work.
pub async fn start(settings: &MatrixSettings, wiring: Wiring) -> Result<Arc<Matrix>, PlatformError> {
    if let Some((key, reason)) = settings.check() {
        return Err(send_error(format!("{key} {reason}")));
    }
    wiring.metrics.platform_started(PLATFORM);
    let client = client::connect(settings).await?;
    let bot = client.user_id().map(|u| u.to_string()).unwrap_or_else(|| settings.user_id.clone());
    let shared = Arc::new(Shared {
        client: client.clone(),
        bot,
        engine: wiring.engine,
        locale: settings.locale(),
        rooms: settings.rooms.clone(),
        web: wiring.web,
        cards: cards::Cards::new(wiring.state.clone()),
        groups: groups::Groups::new(&wiring.groups),
        state: wiring.state.clone(),
        dms: Mutex::new(BoundedMap::new(CACHE_CAP)),
        statuses: Mutex::new(BoundedMap::new(CACHE_CAP)),
        streams: Streams::new(CACHE_CAP),
    });
    let handler = Arc::new(inbox::Handler::new(shared.clone(), wiring.inbox));
    // What a previous run stored and never finished is handled before new events.
    handler.inbox.start(&handler).await;
    let syncing = tokio::spawn(sync::run(handler.clone(), client, wiring.state, wiring.replica_id));
    let sweep = tokio::spawn(async move { handler.inbox.sweep(handler.clone()).await });
    Ok(Arc::new(Matrix { shared, policy: wiring.policy, tasks: Mutex::new(vec![syncing, sweep]) }))
}

impl Matrix {
    /// Sends the polls of a question card, each seeded with ⏭️: their ids, and the
    /// seeded reactions'.
    async fn send_polls(&self, room: &Room, thread: Option<&str>, card_id: &str, interaction: &Interaction) -> (Vec<String>, Vec<String>) {
        let shared = &self.shared;
        let (mut polls, mut seeded) = (Vec::new(), Vec::new());
        let RequestKind::Questions { questions, .. } = &interaction.request.kind else { return (polls, seeded) };
        for index in 0..questions.len() {
            let Some(content) = render::poll(interaction, index, shared.locale) else { continue };
            let content = render::in_thread(content, thread);
            match shared.send(room, "org.matrix.msc3381.poll.start", content).await {
                Ok(poll_id) => {
                    let poll = Poll { interaction: interaction.id.clone(), card: card_id.to_owned(), room: room.room_id().to_string(), question: index };
                    shared.cards.save_poll(&poll_id, &poll, interaction.deadline_ms).await;
                    match shared.send(room, "m.reaction", render::reaction(&poll_id, render::SKIP)).await {
                        Ok(reaction) => seeded.push(reaction),
                        Err(e) => tracing::warn!(error = %e, "cannot seed a poll's skip reaction"),
                    }
                    polls.push(poll_id);
                }
                Err(e) => tracing::warn!(interaction = %interaction.id, question = index, error = %e, "cannot send a question's poll; it is answered by reply"),
            }
        }
        (polls, seeded)
    }
}

impl Platform for Matrix {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    fn send_text<'a>(&'a self, chat: &'a ChatKey, text: &'a str) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            for piece in kit_stream::pieces(text, TEXT_PIECE) {
                self.shared.post(chat, render::text_message(&piece)).await?;
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
            let line = render::notice(&texts::cut(&status.line(), TEXT_PIECE));
            let (room, _) = self.shared.resolve(chat).await?;
            let key = (room.room_id().to_string(), status.group);
            let existing = lock(&self.shared.statuses).get(&key).cloned();
            match existing {
                Some(event) => self.shared.edit(&room, &event, &line).await?,
                None => {
                    let (_, event) = self.shared.post(chat, line).await?;
                    lock(&self.shared.statuses).insert(key.clone(), event);
                }
            }
            if status.finished {
                lock(&self.shared.statuses).remove(&key);
            }
            Ok(())
        })
    }

    fn show_interaction<'a>(&'a self, chat: &'a ChatKey, interaction: &'a Interaction) -> BoxFuture<'a, Result<Option<String>, PlatformError>> {
        Box::pin(async move {
            let shared = &self.shared;
            let link = shared.web.card_link(&interaction.id);
            let (room, card_id) = shared.post(chat, render::card(interaction, shared.locale, link.as_ref())).await?;
            let mut card = Card {
                interaction: interaction.id.clone(),
                room: room.room_id().to_string(),
                thread: chat.thread_id.clone(),
                polls: Vec::new(),
                seeded: Vec::new(),
                ended: false,
                deadline_ms: interaction.deadline_ms,
            };
            // Remembered before anything can be answered on it.
            shared.cards.save_card(&card_id, &card).await;
            let (polls, mut seeded) = self.send_polls(&room, chat.thread_id.as_deref(), &card_id, interaction).await;
            for key in render::seeded_reactions(interaction) {
                match shared.send(&room, "m.reaction", render::reaction(&card_id, key)).await {
                    Ok(reaction) => seeded.push(reaction),
                    Err(e) => tracing::warn!(error = %e, "cannot seed a card's reaction; a reply still answers"),
                }
            }
            card.polls = polls;
            card.seeded = seeded;
            shared.cards.save_card(&card_id, &card).await;
            Ok(Some(card_id))
        })
    }

    fn refresh_interaction<'a>(&'a self, message: &'a MessageRef, interaction: &'a Interaction) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            let shared = &self.shared;
            let Some(mut card) = shared.cards.card(&message.message_id).await else {
                return Err(PlatformError::Refused { platform: PLATFORM, message: format!("not a Matrix card of the bridge: {:?}", message.message_id) });
            };
            let room = shared.room(&card.room).await?;
            let link = shared.web.card_link(&interaction.id);
            shared.edit(&room, &message.message_id, &render::card(interaction, shared.locale, link.as_ref())).await?;
            if interaction.status.is_pending() || card.ended {
                return Ok(());
            }
            let outcome = texts::outcome(shared.locale, interaction);
            for poll in &card.polls {
                if let Err(e) = shared.send(&room, "org.matrix.msc3381.poll.end", render::poll_end(poll, &outcome)).await {
                    tracing::warn!(%poll, error = %e, "cannot end a question's poll");
                }
            }
            for reaction in &card.seeded {
                if let Ok(event) = <&matrix_sdk::ruma::EventId>::try_from(reaction.as_str())
                    && let Err(e) = room.redact(event, None, None).await
                {
                    tracing::warn!(%reaction, error = %e, "cannot remove a seeded reaction");
                }
            }
            card.ended = true;
            shared.cards.save_card(&message.message_id, &card).await;
            Ok(())
        })
    }

    fn send_notice<'a>(&'a self, chat: &'a ChatKey, notice: &'a Notice) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            let text = crate::platform::kit::refusals::notice_line(notice);
            self.shared.post(chat, render::notice(&texts::cut(&text, TEXT_PIECE))).await.map(|_| ())
        })
    }

    fn send_reminder<'a>(&'a self, reminder: Reminder<'a>) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async move {
            let Reminder { chat, interaction, mention, card } = reminder;
            let people = reminder::recipients(PLATFORM, interaction, mention, Some(&self.policy));
            const MATRIX: reminder::Style = reminder::Style {
                user: |id| Some(id.to_owned()),
                group: |_| None,
                text: |t, max| text::plain(&texts::cut(t, max)),
                deadline: texts::clock,
                subject_max: 1000,
                most_named: 25,
            };
            let body = reminder::text(self.shared.locale, interaction, &people, &MATRIX);
            // Named on purpose: the people it is for are mentioned, nobody else.
            let content = json!({ "msgtype": "m.text", "body": body, "m.mentions": { "user_ids": people.users } });
            let chat = reminder::in_cards_thread(chat, card, address::is_event_id);
            self.shared.post(&chat, content).await.map(|_| ())
        })
    }

    fn shutdown(&self) {
        for task in lock(&self.tasks).drain(..) {
            task.abort();
        }
    }
}
