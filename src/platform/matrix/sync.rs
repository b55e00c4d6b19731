//! Where events come from: `/sync` (spec § Syncing), long-polled through the SDK, which
//! also decrypts what it can and keeps the room state and the encryption keys.
//!
//! The token a sync starts from is the bridge's, kept in its own store
//! (`platform_state`, key [`SINCE`]) and moved only after the events of the sync are
//! stored in the durable inbox. So a kill -9 after the sync and before the save syncs
//! the same events again, which the inbox recognises by event id: nothing is lost and
//! nothing is handled twice. The first start has no token: its sync only learns where
//! the rooms stand, and answers no history.
//!
//! With replicas on one PostgreSQL, only the holder of the sync lease ([`LEASE`], a row
//! of its own renewed at every sync) syncs; the others stand by and take the lease
//! over when it lapses. Every process first syncs once from nothing for its client
//! alone ([`prime`]), so each replica can send to the rooms as they are; a room joined
//! later is given to a stand-by's client when it first sends there.
//!
//! Invitations are answered here: a room of `matrix.rooms` is joined, a DM from
//! someone the bridge lets talk is joined, anything else is declined.

use std::sync::Arc;
use std::time::Duration;

use matrix_sdk::config::{SyncSettings, SyncToken};
use matrix_sdk::deserialized_responses::TimelineEventKind;
use matrix_sdk::ruma::api::client::filter::FilterDefinition;
use matrix_sdk::ruma::api::client::sync::sync_events::v3::Filter;
use matrix_sdk::sync::SyncResponse;
use matrix_sdk::{Client, Room};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::PLATFORM;
use super::inbox::Handler;
use super::payload::{self, RoomFacts, Update};
use crate::clock::now_ms;
use crate::interaction::Actor;
use crate::store::{ChatKey, PlatformState};

/// The platform-state key of the next sync's `since` token.
pub const SINCE: &str = "sync.since";
/// The platform-state key of the sync lease.
pub const LEASE: &str = "sync.lease";
/// How long a sync waits on the homeserver for news.
const LONG_POLL: Duration = Duration::from_secs(25);
/// How long a lease lasts without renewal: a long poll, and its handling, twice over.
const LEASE_FOR: Duration = Duration::from_secs(75);
/// How often a standby replica looks at the lease.
const STANDBY: Duration = Duration::from_secs(5);
/// Timeline events one sync returns per room at most. Synapse's default is 10, and the
/// bot's own events count: a burst of cards could push a person's reaction out of a
/// sync, so the bridge asks for more, and says when a room's timeline was cut anyway.
const TIMELINE_LIMIT: u32 = 500;
/// The longest wait between attempts after a failed sync.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Who holds the sync lease, until when.
#[derive(Debug, Serialize, Deserialize)]
struct Lease {
    owner: String,
    until_ms: i64,
}

/// Syncs until aborted.
pub async fn run(handler: Arc<Handler>, client: Client, state: PlatformState, replica: String) {
    let mut backoff = Duration::from_secs(1);
    // Every replica's client first learns the rooms as they are, lease or not: each
    // one sends (a card pushed to it, a click it settles), and sending needs them.
    while let Err(why) = prime(&handler, &client).await {
        tracing::warn!(error = %why, retry_in_s = backoff.as_secs(), "cannot learn the Matrix rooms");
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
    loop {
        match hold_lease(&state, &replica).await {
            Ok(true) => {}
            Ok(false) => {
                tokio::time::sleep(STANDBY).await;
                continue;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the Matrix sync lease; trying again");
                tokio::time::sleep(STANDBY).await;
                continue;
            }
        }
        match sync_once(&handler, &client, &state).await {
            Ok(()) => backoff = Duration::from_secs(1),
            Err(why) => {
                tracing::warn!(error = %why, retry_in_s = backoff.as_secs(), "a Matrix sync failed");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// Takes or renews the sync lease for `replica`: false when another replica holds it.
async fn hold_lease(state: &PlatformState, replica: &str) -> Result<bool, String> {
    let now = now_ms();
    let current = state.get(LEASE, now).await.map_err(|e| e.to_string())?;
    let held = current.as_ref().and_then(|s| serde_json::from_str::<Lease>(&s.value).ok());
    if let Some(lease) = &held
        && lease.owner != replica
        && lease.until_ms >= now
    {
        return Ok(false);
    }
    let renewed = serde_json::to_string(&Lease { owner: replica.to_owned(), until_ms: now + LEASE_FOR.as_millis() as i64 }).unwrap_or_default();
    state.advance(LEASE, current.map(|s| s.version), &renewed, now).await.map_err(|e| e.to_string())
}

/// A sync from nothing, for the client alone: it learns the rooms, their members and
/// state and the encryption keys as they are now. Its events are not the bridge's to
/// answer (the kept token says where the bridge is), so they are not read.
/// Invitations waiting are answered.
async fn prime(handler: &Arc<Handler>, client: &Client) -> Result<(), String> {
    let settings = SyncSettings::default().token(SyncToken::NoToken).filter(Filter::FilterDefinition(timeline_filter())).timeout(Duration::ZERO);
    let response = client.sync_once(settings).await.map_err(|e| e.to_string())?;
    answer_invites(handler, client, &response).await;
    Ok(())
}

/// The timeline filter every sync uses.
fn timeline_filter() -> FilterDefinition {
    let mut filter = FilterDefinition::default();
    filter.room.timeline.limit = Some(TIMELINE_LIMIT.into());
    filter
}

/// One sync: its events stored, then its token kept.
async fn sync_once(handler: &Arc<Handler>, client: &Client, state: &PlatformState) -> Result<(), String> {
    let since = state.get(SINCE, now_ms()).await.map_err(|e| e.to_string())?;
    let mut settings =
        SyncSettings::default().filter(Filter::FilterDefinition(timeline_filter())).timeout(if since.is_some() { LONG_POLL } else { Duration::ZERO });
    settings = settings.token(match &since {
        Some(token) => SyncToken::Specific(token.value.clone()),
        None => SyncToken::NoToken,
    });
    let response = client.sync_once(settings).await.map_err(|e| e.to_string())?;
    tracing::debug!(joined = response.rooms.joined.len(), invited = response.rooms.invited.len(), "a Matrix sync");
    answer_invites(handler, client, &response).await;
    if since.is_some() {
        let updates = updates_of(client, &response).await;
        tracing::debug!(updates = updates.len(), "Matrix events to handle");
        handler.receive(updates).await.map_err(|e| format!("cannot store the events of a sync (its token is not kept): {e}"))?;
    } else {
        tracing::info!("first Matrix sync: the rooms' history is not answered");
    }
    if !state.advance(SINCE, since.map(|s| s.version), &response.next_batch, now_ms()).await.map_err(|e| e.to_string())? {
        tracing::info!("another replica moved the Matrix sync token; reading it again");
    }
    Ok(())
}

/// The updates the bridge reads in a sync's joined rooms, in order.
async fn updates_of(client: &Client, response: &SyncResponse) -> Vec<Update> {
    let bot = client.user_id().map(|u| u.to_string()).unwrap_or_default();
    let mut updates = Vec::new();
    for (room_id, joined) in &response.rooms.joined {
        let room_id = room_id.as_str();
        let direct = match client.get_room(joined_room_id(room_id)) {
            Some(room) => is_direct(&room).await,
            None => false,
        };
        let facts = RoomFacts { room: room_id, bot: &bot, direct };
        if joined.timeline.limited {
            tracing::info!(room = %room_id, "a room's timeline has a gap (a room just joined, or more than {TIMELINE_LIMIT} events in one sync); what is before it is not answered");
        }
        for event in &joined.timeline.events {
            let json: Option<Value> = serde_json::from_str(event.raw().json().get()).ok();
            let Some(json) = json else { continue };
            match &event.kind {
                TimelineEventKind::UnableToDecrypt { .. } => {
                    let (Some(event_id), Some(sender)) = (json["event_id"].as_str(), json["sender"].as_str()) else { continue };
                    if sender != bot {
                        updates.push(Update::Undecryptable { room: room_id.to_owned(), event_id: event_id.to_owned(), sender: sender.to_owned(), direct });
                    }
                }
                _ => updates.extend(payload::read(&json, facts)),
            }
        }
    }
    updates
}

fn joined_room_id(room_id: &str) -> &matrix_sdk::ruma::RoomId {
    <&matrix_sdk::ruma::RoomId>::try_from(room_id).expect("a room id the homeserver gave")
}

/// Whether `room` is a DM with the bot: marked direct in the bot's `m.direct` (the
/// bridge marks a DM invitation it accepts, and the DMs it opens). A member count is
/// no test: the sync's room summary may not carry one.
pub async fn is_direct(room: &Room) -> bool {
    room.is_direct().await.unwrap_or(false)
}

/// Joins the invitations the bridge accepts and declines the rest.
async fn answer_invites(handler: &Arc<Handler>, client: &Client, response: &SyncResponse) {
    let bot = client.user_id().map(|u| u.to_string()).unwrap_or_default();
    for (room_id, invited) in &response.rooms.invited {
        let Some(room) = client.get_room(room_id) else { continue };
        let invite = invited
            .invite_state
            .events
            .iter()
            .filter_map(|e| serde_json::from_str::<Value>(e.json().get()).ok())
            .find(|e| e["type"] == "m.room.member" && e["state_key"] == bot.as_str() && e["content"]["membership"] == "invite");
        let inviter = invite.as_ref().and_then(|e| e["sender"].as_str()).unwrap_or_default().to_owned();
        let direct = invite.as_ref().is_some_and(|e| e["content"]["is_direct"] == true);
        let configured = handler.shared.rooms.iter().any(|r| r == room_id.as_str());
        let accepted = configured || (direct && super::address::is_user_id(&inviter) && may_talk(handler, &inviter).await);
        let outcome = match (accepted, direct) {
            (true, true) => match room.join().await {
                Ok(()) => room.set_is_direct(true).await,
                Err(e) => Err(e),
            },
            (true, false) => room.join().await,
            (false, _) => room.leave().await,
        };
        match outcome {
            Ok(()) => tracing::info!(room = %room_id, %inviter, direct, accepted, "answered a Matrix invitation"),
            Err(e) => tracing::warn!(room = %room_id, error = %e, "cannot answer a Matrix invitation"),
        }
    }
}

/// Whether `user` may talk to the agent in their DM, as the bridge's access rules say
/// (the same check as a message; a refusal is audited there).
async fn may_talk(handler: &Arc<Handler>, user: &str) -> bool {
    let shared = &handler.shared;
    let chat = ChatKey::new(PLATFORM, &format!("{}{user}", super::address::DM_PREFIX), None);
    let actor = Actor::new(PLATFORM, user, user);
    shared.engine.admit(chat, actor, "invite", "", shared.locale.code()).await.is_ok()
}
