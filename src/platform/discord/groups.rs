//! Who someone is on Discord, with their roles even where Discord leaves them out.
//!
//! A click or a message in a guild carries the member and its roles. In a DM it
//! carries only the user, so `approver_roles` and `access.roles` would never match
//! there: with `discord.guild_id` set, the member is looked up in that guild
//! (`GET /guilds/{guild}/members/{user}`) and their roles used. Lookups are cached for
//! [`TTL`], so a burst of clicks costs one request, and a role taken away stops
//! counting within that time. A user who is not in the guild has no roles.
//!
//! The web inbox asks the same way when a signed-in Discord user reads or decides
//! ([`web_roles`]): their roles in `discord.guild_id` (or in the guild their identity
//! names, were a link ever made from a guild: `/web` answers in DMs only), never the
//! roles they had when they signed in.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serenity::all::{GuildId, Member, User, UserId};

use super::{PLATFORM, Shared, api};
use crate::interaction::Actor;

/// How long a looked-up member's roles are trusted.
pub const TTL: Duration = Duration::from_secs(60);

/// At most this many members are remembered; the oldest half goes when it is full.
const MAX_CACHED: usize = 10_000;

/// A member: (guild id, user id).
type MemberKey = (u64, u64);

/// Roles looked up per member: `(when, role ids)`.
#[derive(Default)]
pub struct MemberCache {
    roles: Mutex<HashMap<MemberKey, (Instant, Vec<String>)>>,
}

impl MemberCache {
    fn get(&self, member: MemberKey) -> Option<Vec<String>> {
        let cached = self.roles.lock().unwrap_or_else(|p| p.into_inner());
        cached.get(&member).filter(|(at, _)| at.elapsed() < TTL).map(|(_, roles)| roles.clone())
    }

    fn put(&self, member: MemberKey, roles: Vec<String>) {
        let mut cached = self.roles.lock().unwrap_or_else(|p| p.into_inner());
        if cached.len() >= MAX_CACHED {
            cached.retain(|_, (at, _)| at.elapsed() < TTL);
        }
        if cached.len() >= MAX_CACHED {
            cached.clear();
        }
        cached.insert(member, (Instant::now(), roles));
    }
}

/// The person behind a click, command or message: `member` and `guild` as Discord
/// sent them; without a member (a DM) the roles come from `discord.guild_id`.
pub async fn person(shared: &Shared, user: &User, member: Option<&Member>, guild: Option<GuildId>) -> Actor {
    let mut actor = actor(user, member);
    actor.space = guild.map(|g| g.get().to_string());
    if member.is_none() && guild.is_none() {
        actor.groups = dm_roles(shared, user.id).await;
    }
    actor
}

/// The user's roles in the configured guild; none when no guild is configured, they
/// are not a member, or Discord cannot be asked right now (refusing is the safe side).
async fn dm_roles(shared: &Shared, user: UserId) -> Vec<String> {
    match configured_guild(shared) {
        Some(guild) => roles_in(shared, guild, user).await,
        None => Vec::new(),
    }
}

fn configured_guild(shared: &Shared) -> Option<GuildId> {
    shared.settings.guild_id.as_deref().and_then(|g| g.parse::<u64>().ok()).filter(|&g| g != 0).map(GuildId::new)
}

/// The roles of `person` (a Discord user signed in to the web inbox) now: in the guild
/// they asked for their link from, else in `discord.guild_id`, looked up and cached as
/// for a click in a DM.
pub async fn web_roles(shared: &Shared, person: &Actor) -> Vec<String> {
    let Some(user) = person.user_id.parse::<u64>().ok().filter(|&u| u != 0).map(UserId::new) else { return Vec::new() };
    let guild = person.space.as_deref().and_then(|g| g.parse::<u64>().ok()).filter(|&g| g != 0).map(GuildId::new).or_else(|| configured_guild(shared));
    match guild {
        Some(guild) => roles_in(shared, guild, user).await,
        None => Vec::new(),
    }
}

/// The user's roles in `guild` (`GET /guilds/{guild}/members/{user}`), cached for
/// [`TTL`]; none when they are not a member or Discord cannot be asked right now.
async fn roles_in(shared: &Shared, guild: GuildId, user: UserId) -> Vec<String> {
    let key = (guild.get(), user.get());
    if let Some(roles) = shared.members.get(key) {
        return roles;
    }
    let http = &shared.http;
    match api::retrying(&shared.metrics, "get member", || http.get_member(guild, user)).await {
        Ok(member) => {
            let roles: Vec<String> = member.roles.iter().map(|r| r.get().to_string()).collect();
            shared.members.put(key, roles.clone());
            roles
        }
        Err(serenity::Error::Http(e)) if e.status_code().is_some_and(|s| s.as_u16() == 404) => {
            // Not a member (Discord's 10007 Unknown Member): no roles, and remembered.
            shared.members.put(key, Vec::new());
            Vec::new()
        }
        Err(e) => {
            tracing::warn!(error = %e, user = user.get(), guild = guild.get(), "cannot look up a member's roles; treating them as having none");
            Vec::new()
        }
    }
}

/// The person behind an interaction: user id, display name, and roles in the guild.
pub fn actor(user: &User, member: Option<&Member>) -> Actor {
    let name = member.and_then(|m| m.nick.clone()).or_else(|| user.global_name.clone()).unwrap_or_else(|| user.name.clone());
    let mut actor = Actor::new(PLATFORM, &user.id.get().to_string(), &name);
    actor.groups = member.map(|m| m.roles.iter().map(|r| r.get().to_string()).collect()).unwrap_or_default();
    actor
}
