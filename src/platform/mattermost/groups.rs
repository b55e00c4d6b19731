//! Mattermost's custom user groups and channel membership as approver groups:
//! `group:GROUP_ID` (a custom group, System Console or the Groups menu) and
//! `channel:CHANNEL_ID` (whoever is a member of the channel) in
//! `access.approver_roles`, `access.roles`, a policy's `approver_roles` and a pushed
//! request's `approvers.roles`, so they work on Mattermost as Discord's roles do on
//! Discord.
//!
//! A click, a dialog submission, a post or a slash command carries the user and never
//! their groups, so Mattermost is asked, for each group the configuration and the
//! request name, whether the person is in it:
//! - a channel: `GET channels/{id}/members/{user_id}`, 200 for a member, 404 for
//!   anyone else (permission `read_channel`: the bot must be in the channel);
//! - a custom group: `GET groups/{id}/members`, 200 at a time, all its members (the
//!   bot account needs the permission to read groups).
//!
//! Each answer is remembered [`REMEMBERED`] (a channel's per person, a custom group's
//! members whole), so a burst of clicks asks once, and someone taken out of a group
//! stops counting within that time. A failed answer counts as not a member (refusing
//! is the safe side), is logged with the group, and is asked again at the next click.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use reqwest::Method;

use super::api::Api;
use crate::engine::EngineHandle;
use crate::interaction::Interaction;

/// How long one answer (is this person in that group) is used.
pub const REMEMBERED: Duration = Duration::from_secs(60);
/// Members asked per page of a custom group (Mattermost's most).
const PAGE: usize = 200;
/// Pages of a custom group read at most (40,000 members).
const MAX_PAGES: usize = 200;
/// Answers remembered at most.
const MAX_REMEMBERED: usize = 10_000;

/// A Mattermost approver group as written: a custom group or a channel's members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group<'a> {
    Custom(&'a str),
    Channel(&'a str),
}

/// The group `text` names, when it is one of Mattermost's.
pub fn parse(text: &str) -> Option<Group<'_>> {
    if let Some(id) = text.strip_prefix("group:") {
        return super::address::is_id(id).then_some(Group::Custom(id));
    }
    text.strip_prefix("channel:").filter(|id| super::address::is_id(id)).map(Group::Channel)
}

/// The Mattermost groups request `interaction` names: its policy's approver groups and
/// a pushed request's `approvers.roles`.
pub fn named_by(interaction: &Interaction) -> Vec<String> {
    crate::platform::kit::groups::named_by(interaction, |id| parse(id).is_some())
}

/// Who is in which group, as Mattermost last said.
pub struct Groups {
    /// The Mattermost groups the configuration names.
    configured: Vec<String>,
    /// (channel, person) → whether a member, and when Mattermost said so.
    answers: Mutex<HashMap<(String, String), (bool, Instant)>>,
    /// Custom group → its members, and when Mattermost said so.
    members: Mutex<HashMap<String, (HashSet<String>, Instant)>>,
}

impl Groups {
    /// `configured`: (setting, group id) pairs of every platform; Mattermost's kept.
    pub fn new(configured: &[(String, String)]) -> Self {
        let mut ids: Vec<String> = Vec::new();
        for (_, id) in configured {
            if parse(id).is_some() && !ids.contains(id) {
                ids.push(id.clone());
            }
        }
        Self { configured: ids, answers: Mutex::new(HashMap::new()), members: Mutex::new(HashMap::new()) }
    }

    fn answers(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), (bool, Instant)>> {
        self.answers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The groups `user` is in, among those the configuration names and, when a
    /// request is at hand, those it names (read from the engine).
    pub async fn of(&self, api: &Api, engine: &EngineHandle, user: &str, interaction_id: Option<&str>) -> Vec<String> {
        let mut ids = self.configured.clone();
        if let Some(id) = interaction_id {
            match engine.interaction(id).await {
                Ok(Some(interaction)) => ids.extend(named_by(&interaction).into_iter().filter(|g| !self.configured.contains(g))),
                Ok(None) => {}
                Err(e) => tracing::warn!(interaction = %id, error = %e, "cannot read which groups a request names"),
            }
        }
        let mut member_of = Vec::new();
        for id in ids {
            if self.is_member(api, &id, user).await {
                member_of.push(id);
            }
        }
        member_of
    }

    async fn is_member(&self, api: &Api, group: &str, user: &str) -> bool {
        match parse(group) {
            Some(Group::Channel(channel)) => self.in_channel(api, channel, user).await,
            Some(Group::Custom(custom)) => self.in_custom(api, custom, user).await,
            None => false,
        }
    }

    async fn in_custom(&self, api: &Api, group: &str, user: &str) -> bool {
        let known =
            self.members.lock().unwrap_or_else(|p| p.into_inner()).get(group).filter(|(_, at)| at.elapsed() < REMEMBERED).map(|(m, _)| m.contains(user));
        if let Some(member) = known {
            return member;
        }
        match custom_members(api, group).await {
            Ok(members) => {
                let member = members.contains(user);
                let mut all = self.members.lock().unwrap_or_else(|p| p.into_inner());
                if all.len() >= MAX_REMEMBERED {
                    all.retain(|_, (_, at)| at.elapsed() < REMEMBERED);
                }
                all.insert(group.to_owned(), (members, Instant::now()));
                member
            }
            Err(e) => {
                tracing::warn!(group = %format!("group:{group}"), %user, error = %e, "cannot ask Mattermost who is in an approver group; counted as not a member");
                false
            }
        }
    }

    async fn in_channel(&self, api: &Api, channel: &str, user: &str) -> bool {
        let group = format!("channel:{channel}");
        let key = (group.clone(), user.to_owned());
        if let Some((member, at)) = self.answers().get(&key).copied()
            && at.elapsed() < REMEMBERED
        {
            return member;
        }
        match channel_member(api, channel, user).await {
            Ok(member) => {
                let mut answers = self.answers();
                if answers.len() >= MAX_REMEMBERED {
                    answers.retain(|_, (_, at)| at.elapsed() < REMEMBERED);
                }
                answers.insert(key, (member, Instant::now()));
                member
            }
            Err(e) => {
                tracing::warn!(%group, %user, error = %e, "cannot ask Mattermost who is in an approver group; counted as not a member");
                false
            }
        }
    }
}

/// `GET channels/{id}/members/{user_id}`: 200 a member, 404 not one.
async fn channel_member(api: &Api, channel: &str, user: &str) -> Result<bool, super::api::ApiError> {
    match api.call("channels/members", Method::GET, &format!("/channels/{channel}/members/{user}"), None).await {
        Ok(member) => Ok(member["user_id"] == user),
        Err(e) if e.refused().is_some_and(|(status, _)| status == 404) => Ok(false),
        Err(e) => Err(e),
    }
}

/// `GET groups/{id}/members`, a page at a time until the pages end: the members' ids.
async fn custom_members(api: &Api, group: &str) -> Result<HashSet<String>, super::api::ApiError> {
    let mut ids = HashSet::new();
    for page in 0..MAX_PAGES {
        let answer = api.call("groups/members", Method::GET, &format!("/groups/{group}/members?page={page}&per_page={PAGE}"), None).await?;
        let members = answer["members"].as_array().cloned().unwrap_or_default();
        ids.extend(members.iter().filter_map(|m| m["id"].as_str().map(str::to_owned)));
        if members.len() < PAGE {
            break;
        }
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "4xp9fdt7pbgium38k5k6w95oma";

    #[test]
    fn groups_are_written_with_their_kind_and_an_id() {
        assert_eq!(parse(&format!("group:{ID}")), Some(Group::Custom(ID)));
        assert_eq!(parse(&format!("channel:{ID}")), Some(Group::Channel(ID)));
        for bad in [ID.to_owned(), "group:ops".into(), format!("channel:{}", ID.to_uppercase()), format!("team:{ID}"), "S0OPS".into()] {
            assert_eq!(parse(&bad), None, "{bad}");
        }
    }

    #[test]
    fn only_mattermost_groups_are_kept_from_the_configuration() {
        let configured = [("access.approver_roles".to_owned(), format!("channel:{ID}")), ("access.roles".to_owned(), "S0OPS".to_owned())];
        assert_eq!(Groups::new(&configured).configured, [format!("channel:{ID}")]);
    }
}
