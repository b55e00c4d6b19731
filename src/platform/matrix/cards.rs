//! Which events are the bridge's own cards and polls, and what hangs on them. Each
//! card the bridge sends is remembered as `card:<event_id>` (its request, its room and
//! thread, its polls, the reactions it seeded, whether its end was shown), each poll
//! as `poll:<event_id>` (its request, its card, its question), in Matrix's own keys of
//! the store (`platform_state`): every replica knows them after a restart, and a
//! reaction, a vote or a reply counts only on one of them.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::clock::now_ms;
use crate::store::PlatformState;

/// How long a card is remembered past its request's deadline: a late reaction is
/// still recognised (and answered "expired").
const AFTER_DEADLINE: Duration = Duration::from_secs(7 * 24 * 3600);

/// A card: the message showing one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Card {
    pub interaction: String,
    pub room: String,
    /// The thread it was sent in.
    pub thread: Option<String>,
    /// Its questions' polls, in order.
    pub polls: Vec<String>,
    /// The reactions the bot seeded on it and its polls (removed at the end).
    pub seeded: Vec<String>,
    /// Whether its end is shown (polls ended, seeded reactions removed).
    pub ended: bool,
    pub deadline_ms: i64,
}

/// A poll: one question of a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Poll {
    pub interaction: String,
    pub card: String,
    pub room: String,
    pub question: usize,
}

/// What an event a person reacted or replied to is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Card { id: String, card: Card },
    Poll { id: String, poll: Poll },
}

impl Target {
    pub fn interaction(&self) -> &str {
        match self {
            Target::Card { card, .. } => &card.interaction,
            Target::Poll { poll, .. } => &poll.interaction,
        }
    }

    /// The room it was sent to.
    pub fn room(&self) -> &str {
        match self {
            Target::Card { card, .. } => &card.room,
            Target::Poll { poll, .. } => &poll.room,
        }
    }

    /// The card's event id (a poll's card).
    pub fn card_id(&self) -> &str {
        match self {
            Target::Card { id, .. } => id,
            Target::Poll { poll, .. } => &poll.card,
        }
    }
}

/// The bridge's cards and polls.
#[derive(Clone)]
pub struct Cards {
    state: PlatformState,
}

impl Cards {
    pub fn new(state: PlatformState) -> Self {
        Self { state }
    }

    async fn put<T: Serialize>(&self, key: String, value: &T, deadline_ms: i64) {
        let now = now_ms();
        let ttl = Duration::from_millis(deadline_ms.saturating_sub(now).max(0) as u64) + AFTER_DEADLINE;
        let json = serde_json::to_string(value).unwrap_or_default();
        if let Err(e) = self.state.put(&key, &json, now, Some(ttl)).await {
            tracing::warn!(%key, error = %e, "cannot remember a Matrix card; answers on it will not count");
        }
    }

    async fn get<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        match self.state.get(key, now_ms()).await {
            Ok(stored) => stored.and_then(|s| serde_json::from_str(&s.value).ok()),
            Err(e) => {
                tracing::warn!(%key, error = %e, "cannot read the bridge's Matrix cards");
                None
            }
        }
    }

    /// Remembers (or rewrites) card `id`.
    pub async fn save_card(&self, id: &str, card: &Card) {
        self.put(format!("card:{id}"), card, card.deadline_ms).await;
    }

    /// Remembers poll `id`.
    pub async fn save_poll(&self, id: &str, poll: &Poll, deadline_ms: i64) {
        self.put(format!("poll:{id}"), poll, deadline_ms).await;
    }

    pub async fn card(&self, id: &str) -> Option<Card> {
        self.get(&format!("card:{id}")).await
    }

    /// What event `id` in `room` is, when it is one of the bridge's cards or polls
    /// there. Event ids are global and a reply's `m.in_reply_to` is not checked by the
    /// homeserver, so an answer naming a card of another room is no answer.
    pub async fn target(&self, room: &str, id: &str) -> Option<Target> {
        if !super::address::is_event_id(id) {
            return None;
        }
        let target = match self.card(id).await {
            Some(card) => Target::Card { id: id.to_owned(), card },
            None => Target::Poll { id: id.to_owned(), poll: self.get::<Poll>(&format!("poll:{id}")).await? },
        };
        if target.room() != room {
            tracing::warn!(%room, card_room = %target.room(), event = %id, "an answer in one room to a card of another; ignored");
            return None;
        }
        Some(target)
    }
}
