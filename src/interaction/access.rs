//! Who may answer an interaction. For a chat turn: the user whose message started
//! it, plus approvers configured by platform user id or by Discord role id. For a
//! request an agent pushed over the HTTP API ([`Origin::Pushed`]): the approvers it
//! named; else the configured approvers; else, when none are configured, anyone who
//! can see it in a target chat. Everyone else is refused.
//!
//! Four eyes (`access.self_approval = false`): when approvers are configured, the
//! requester of a chat turn may no longer decide its tool calls (questions stay theirs
//! to answer); see [`AccessPolicy::refuses_self_approval`]. Who may *talk* to the agent
//! at all is [`super::admission`]'s call.

use serde::{Deserialize, Serialize};

/// A person acting on a platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    /// The platform's name in the registry (`telegram`).
    pub platform: String,
    pub user_id: String,
    pub name: String,
    /// The groups the person is in on their platform (opaque ids the platform
    /// parses: a Discord member's role ids); empty where the platform has none.
    /// Stored under Discord's word, so audit rows written before stay readable.
    #[serde(default, skip_serializing_if = "Vec::is_empty", rename = "role_ids")]
    pub groups: Vec<String>,
    /// The space the groups (and the chat) belong to, when known (an opaque id: a
    /// Discord guild).
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "guild_id")]
    pub space: Option<String>,
    /// Where the person acted when it was not their platform's own chat: `web` for the
    /// web inbox, where a platform user signs in (the audit row says so). Who the
    /// person is stays `platform` and `user_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
}

impl Actor {
    pub fn new(platform: &str, user_id: &str, name: &str) -> Self {
        Self { platform: platform.into(), user_id: user_id.into(), name: name.into(), groups: Vec::new(), space: None, channel: None }
    }

    pub fn is_same_person(&self, other: &Actor) -> bool {
        self.platform == other.platform && self.user_id == other.user_id
    }
}

/// Configured approvers, beyond the requester.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccessPolicy {
    /// `(platform, user id)` pairs.
    pub approver_users: Vec<(String, String)>,
    /// Groups whose members approve (Discord role ids; the key's name in the
    /// configuration and the API).
    pub approver_roles: Vec<String>,
    /// `access.self_approval = false`: the requester may not decide their own turn's
    /// tool calls while someone else is configured to.
    pub four_eyes: bool,
}

/// Where an interaction came from, which decides who may answer it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "snake_case")]
pub enum Origin {
    /// A chat turn: its requester and the configured approvers.
    #[default]
    Chat,
    /// Pushed over the HTTP API by `agent` (the API token's name).
    Pushed {
        agent: String,
        /// Approvers the request named; `None` defers to the configuration.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        approvers: Option<Approvers>,
    },
}

/// Approvers named by one request: `(platform, user id)` pairs and Discord role ids.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approvers {
    pub users: Vec<(String, String)>,
    pub roles: Vec<String>,
}

impl Origin {
    /// Whether `actor` may answer: see the module doc for the rules.
    pub fn allows(&self, actor: &Actor, requester: Option<&Actor>, configured: &AccessPolicy) -> bool {
        match self {
            Origin::Chat => configured.may_answer(actor, requester),
            Origin::Pushed { approvers: Some(named), .. } => {
                AccessPolicy { approver_users: named.users.clone(), approver_roles: named.roles.clone(), four_eyes: false }.may_answer(actor, None)
            }
            Origin::Pushed { approvers: None, .. } if configured.is_empty() => true,
            Origin::Pushed { approvers: None, .. } => configured.may_answer(actor, None),
        }
    }

    /// The pushing agent's name, for the audit log.
    pub fn agent(&self) -> Option<&str> {
        match self {
            Origin::Chat => None,
            Origin::Pushed { agent, .. } => Some(agent),
        }
    }
}

impl AccessPolicy {
    /// No approver configured at all.
    pub fn is_empty(&self) -> bool {
        self.approver_users.is_empty() && self.approver_roles.is_empty()
    }

    /// Whether `actor` is a configured approver (by user id or group).
    pub fn is_approver(&self, actor: &Actor) -> bool {
        self.approver_users.iter().any(|(platform, id)| *platform == actor.platform && *id == actor.user_id)
            || actor.groups.iter().any(|group| self.approver_roles.contains(group))
    }

    /// Four eyes: whether `actor`, having started the turn (`requester`), must leave
    /// its tool calls to someone else. Only when the option is on and approvers exist
    /// (otherwise nobody could ever decide).
    pub fn refuses_self_approval(&self, actor: &Actor, requester: Option<&Actor>) -> bool {
        self.four_eyes && !self.is_empty() && requester.is_some_and(|r| r.is_same_person(actor))
    }

    /// Whether `actor` may answer an interaction started by `requester`.
    pub fn may_answer(&self, actor: &Actor, requester: Option<&Actor>) -> bool {
        requester.is_some_and(|r| r.is_same_person(actor)) || self.is_approver(actor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> AccessPolicy {
        AccessPolicy { approver_users: vec![("telegram".into(), "42".into())], approver_roles: vec!["777".into()], four_eyes: false }
    }

    #[test]
    fn requester_may_answer() {
        let thao = Actor::new("telegram", "1", "Thảo");
        assert!(AccessPolicy::default().may_answer(&thao, Some(&thao)));
    }

    #[test]
    fn same_id_on_another_platform_is_someone_else() {
        let requester = Actor::new("telegram", "1", "Thảo");
        let other = Actor::new("discord", "1", "Thảo");
        assert!(!AccessPolicy::default().may_answer(&other, Some(&requester)));
    }

    #[test]
    fn configured_user_and_role_may_answer() {
        let requester = Actor::new("telegram", "1", "Thảo");
        assert!(policy().may_answer(&Actor::new("telegram", "42", "Ops"), Some(&requester)));
        let mut lead = Actor::new("discord", "9", "Lead");
        lead.groups = vec!["555".into(), "777".into()];
        assert!(policy().may_answer(&lead, Some(&requester)));
    }

    #[test]
    fn pushed_requests_follow_named_then_configured_approvers_then_anyone() {
        let stranger = Actor::new("telegram", "13", "Stranger");
        let ops = Actor::new("telegram", "42", "Ops");
        let none = AccessPolicy::default();
        let pushed = |approvers| Origin::Pushed { agent: "ci".into(), approvers };
        // No approvers named, none configured: whoever sees it may answer.
        assert!(pushed(None).allows(&stranger, None, &none));
        // Configured approvers apply when the request names none.
        assert!(!pushed(None).allows(&stranger, None, &policy()));
        assert!(pushed(None).allows(&ops, None, &policy()));
        // Named approvers replace the configured ones.
        let named = Approvers { users: vec![("telegram".into(), "13".into())], roles: vec![] };
        assert!(pushed(Some(named.clone())).allows(&stranger, None, &policy()));
        assert!(!pushed(Some(named)).allows(&ops, None, &policy()));
        let by_role = Approvers { users: vec![], roles: vec!["900".into()] };
        let mut dba = Actor::new("discord", "5", "Dba");
        dba.groups = vec!["900".into()];
        assert!(pushed(Some(by_role.clone())).allows(&dba, None, &none));
        assert!(!pushed(Some(by_role)).allows(&stranger, None, &none));
        // A chat turn never opens to everyone.
        assert!(!Origin::Chat.allows(&stranger, None, &none));
    }

    #[test]
    fn four_eyes_needs_the_option_approvers_and_the_requester() {
        let thao = Actor::new("telegram", "1", "Thảo");
        let ops = Actor::new("telegram", "42", "Ops");
        let strict = AccessPolicy { four_eyes: true, ..policy() };
        assert!(strict.refuses_self_approval(&thao, Some(&thao)));
        // Another approver, or a request with no requester, is not self-approval.
        assert!(!strict.refuses_self_approval(&ops, Some(&thao)));
        assert!(!strict.refuses_self_approval(&thao, None));
        // Off, or no approvers configured (nobody else could decide): allowed.
        assert!(!policy().refuses_self_approval(&thao, Some(&thao)));
        let alone = AccessPolicy { four_eyes: true, ..AccessPolicy::default() };
        assert!(!alone.refuses_self_approval(&thao, Some(&thao)));
        // Even a requester who is a configured approver themselves.
        let ops_asked = AccessPolicy { four_eyes: true, ..policy() };
        assert!(ops_asked.refuses_self_approval(&ops, Some(&ops)));
    }

    #[test]
    fn stranger_is_refused_even_without_requester() {
        let stranger = Actor::new("telegram", "13", "Stranger");
        assert!(!policy().may_answer(&stranger, Some(&Actor::new("telegram", "1", "T"))));
        assert!(!policy().may_answer(&stranger, None));
        // A user id configured for Telegram is not an approver on Discord.
        assert!(!policy().may_answer(&Actor::new("discord", "42", "x"), None));
    }
}
