//! A room's power levels as approver groups: `!ROOM_ID@50` in
//! `access.approver_roles`, `access.roles`, a policy's `approver_roles` or a pushed
//! request's `approvers.roles` means "whoever is joined to that room with power level
//! 50 or more" (a room creator in room version 12 counts as above every level).
//!
//! The bot must be in that room: it reads the room's `m.room.power_levels` and the
//! person's membership from the state its own sync keeps (no request per click). A
//! room it is not in, or a person not joined, counts as not in the group: refusing
//! is the safe side.

use matrix_sdk::Client;
use matrix_sdk::ruma::events::room::member::MembershipState;
use matrix_sdk::ruma::events::room::power_levels::UserPowerLevel;
use matrix_sdk::ruma::{RoomId, UserId};

use super::address::parse_group;

/// The Matrix approver groups the configuration names.
pub struct Groups {
    configured: Vec<String>,
}

impl Groups {
    /// `configured`: (setting, group id) pairs of every platform; Matrix's kept.
    pub fn new(configured: &[(String, String)]) -> Self {
        let mut ids: Vec<String> = Vec::new();
        for (_, id) in configured {
            if parse_group(id).is_some() && !ids.contains(id) {
                ids.push(id.clone());
            }
        }
        Self { configured: ids }
    }

    /// The groups, among those configured and `named` (a request's own), that `user`
    /// is in now.
    pub async fn of(&self, client: &Client, user: &str, named: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        for group in self.configured.iter().chain(named.iter().filter(|g| !self.configured.contains(g))) {
            let Some((room, level)) = parse_group(group) else { continue };
            if in_group(client, room, level, user).await {
                out.push(group.clone());
            }
        }
        out
    }
}

/// Whether `user` is joined to `room` at power level `level` or above.
async fn in_group(client: &Client, room: &str, level: i64, user: &str) -> bool {
    let (Ok(room_id), Ok(user_id)) = (<&RoomId>::try_from(room), <&UserId>::try_from(user)) else { return false };
    let Some(room) = client.get_room(room_id) else {
        tracing::info!(%room, "an approver group's room is not one the bot is in; nobody counts as in it");
        return false;
    };
    match room.get_member_no_sync(user_id).await {
        Ok(Some(member)) if *member.membership() == MembershipState::Join => {}
        Ok(_) => return false,
        Err(e) => {
            tracing::warn!(%room_id, error = %e, "cannot read a room's members for an approver group");
            return false;
        }
    }
    match room.get_user_power_level(user_id).await {
        Ok(UserPowerLevel::Infinite) => true,
        Ok(UserPowerLevel::Int(own)) => i64::from(own) >= level,
        Ok(_) => false,
        Err(e) => {
            tracing::warn!(%room_id, error = %e, "cannot read a room's power levels for an approver group");
            false
        }
    }
}
