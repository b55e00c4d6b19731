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
//! - a custom group: `GET groups/{id}/members`, 200 at a time, the person looked for
//!   among the `members` (the bot account needs the permission to read groups).
//!
//! Each answer is remembered [`REMEMBERED`] per (group, person), so a burst of clicks
//! asks once, and someone taken out of a group stops counting within that time. A
//! failed answer counts as not a member (refusing is the safe side), is logged with
//! the group, and is asked again at the next click.

use std::collections::HashMap;
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
    answers: Mutex<HashMap<(String, String), (bool, Instant)>>,
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
        Self { configured: ids, answers: Mutex::new(HashMap::new()) }
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
        let key = (group.to_owned(), user.to_owned());
        if let Some((member, at)) = self.answers().get(&key).copied()
            && at.elapsed() < REMEMBERED
        {
            return member;
        }
        let answer = match parse(group) {
            Some(Group::Channel(channel)) => channel_member(api, channel, user).await,
            Some(Group::Custom(custom)) => custom_member(api, custom, user).await,
            None => return false,
        };
        match answer {
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

/// `GET groups/{id}/members`, a page at a time, until `user` is found or the pages end.
async fn custom_member(api: &Api, group: &str, user: &str) -> Result<bool, super::api::ApiError> {
    for page in 0..MAX_PAGES {
        let answer = api.call("groups/members", Method::GET, &format!("/groups/{group}/members?page={page}&per_page={PAGE}"), None).await?;
        let members = answer["members"].as_array().cloned().unwrap_or_default();
        if members.iter().any(|m| m["id"] == user) {
            return Ok(true);
        }
        if members.len() < PAGE {
            break;
        }
    }
    Ok(false)
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
