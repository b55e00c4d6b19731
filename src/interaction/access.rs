//! Who may answer an interaction: the user whose message started the turn, plus
//! approvers configured by platform user id or by Discord role id. Everyone else is
//! refused.

use serde::{Deserialize, Serialize};

/// A person acting on a platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    /// `telegram`, `discord` or `console`.
    pub platform: String,
    pub user_id: String,
    pub name: String,
    /// Discord role ids of the member, empty elsewhere.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub role_ids: Vec<String>,
}

impl Actor {
    pub fn new(platform: &str, user_id: &str, name: &str) -> Self {
        Self {
            platform: platform.into(),
            user_id: user_id.into(),
            name: name.into(),
            role_ids: Vec::new(),
        }
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
    /// Discord role ids.
    pub approver_roles: Vec<String>,
}

impl AccessPolicy {
    /// Whether `actor` may answer an interaction started by `requester`.
    pub fn may_answer(&self, actor: &Actor, requester: Option<&Actor>) -> bool {
        requester.is_some_and(|r| r.is_same_person(actor))
            || self
                .approver_users
                .iter()
                .any(|(platform, id)| *platform == actor.platform && *id == actor.user_id)
            || actor.role_ids.iter().any(|role| self.approver_roles.contains(role))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> AccessPolicy {
        AccessPolicy {
            approver_users: vec![("telegram".into(), "42".into())],
            approver_roles: vec!["777".into()],
        }
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
        lead.role_ids = vec!["555".into(), "777".into()];
        assert!(policy().may_answer(&lead, Some(&requester)));
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
