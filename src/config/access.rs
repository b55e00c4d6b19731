//! The `[access]` section: who may answer, who may talk, who may approve pairing
//! codes, as written in the file, and the core's [`AccessPolicy`], [`Allowlist`] and
//! [`PairingAdmins`] they become.

use serde::{Deserialize, Serialize};

use crate::interaction::admission::PairingAdmins;
use crate::interaction::{AccessPolicy, Allowlist};

/// Who may answer and who may talk; see `config/default.toml` and
/// [`crate::interaction::admission`].
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AccessSettings {
    /// `platform:user_id`.
    pub approvers: Vec<String>,
    pub approver_roles: Vec<String>,
    /// Who may talk to the agent: `platform:user_id`.
    pub users: Vec<String>,
    /// Chats where everyone may talk, as each platform's address grammar writes them
    /// (`telegram:CHAT_ID`, `discord:guild:GUILD_ID`; docs/configuration.md, "Addresses").
    pub chats: Vec<String>,
    /// Groups whose members may talk, as their platforms write group ids.
    pub roles: Vec<String>,
    /// Strangers get a code an admin approves (`hitl-bridge pair CODE`, `/pair CODE`).
    pub pairing: bool,
    /// How long a pairing code stays valid.
    pub pairing_code_secs: u64,
    /// Who may approve pairing codes with `/pair CODE`: `platform:user_id`.
    pub admins: Vec<String>,
    /// Chats where admins may use `/pair CODE` (besides their DM with the bot):
    /// `telegram:CHAT_ID`, `discord:CHANNEL_ID`.
    pub admin_chats: Vec<String>,
    /// A stranger is answered once per this many seconds per chat; their other
    /// attempts meanwhile are counted on that one audit entry. 0 answers every one.
    pub refusal_window_secs: u64,
    /// False: the requester may not decide their own turn's tool calls while
    /// approvers are configured (four eyes).
    pub self_approval: bool,
}

impl Default for AccessSettings {
    fn default() -> Self {
        Self {
            approvers: Vec::new(),
            approver_roles: Vec::new(),
            users: Vec::new(),
            chats: Vec::new(),
            roles: Vec::new(),
            pairing: false,
            pairing_code_secs: 3600,
            admins: Vec::new(),
            admin_chats: Vec::new(),
            refusal_window_secs: 600,
            self_approval: true,
        }
    }
}

impl AccessSettings {
    /// What is wrong with the section, as (key, reason); `None` when it is sound.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        let parse_user = |entry: &str| crate::platform::registry::networks().parse_user(entry);
        for approver in &self.approvers {
            if parse_user(approver).is_none() {
                return Some(("access.approvers", format!("`{approver}` is not of the form platform:user_id")));
            }
        }
        for user in &self.users {
            if parse_user(user).is_none() {
                return Some(("access.users", format!("`{user}` is not of the form platform:user_id")));
            }
        }
        let networks = crate::platform::registry::networks();
        if let Err(entry) = Allowlist::parse_chats(&networks, &self.chats) {
            return Some(("access.chats", format!("`{entry}` is not {}", networks.allowed_chats_forms(true))));
        }
        for admin in &self.admins {
            if parse_user(admin).is_none() {
                return Some(("access.admins", format!("`{admin}` is not of the form platform:user_id")));
            }
        }
        if let Err(entry) = Allowlist::parse_chats(&networks, &self.admin_chats) {
            return Some(("access.admin_chats", format!("`{entry}` is not {}", networks.allowed_chats_forms(false))));
        }
        if self.pairing_code_secs < 60 {
            return Some(("access.pairing_code_secs", "must be at least 60".to_owned()));
        }
        None
    }

    /// Who may answer requests beyond the requester.
    pub fn policy(&self) -> AccessPolicy {
        AccessPolicy { approver_users: users(&self.approvers), approver_roles: self.approver_roles.clone(), four_eyes: !self.self_approval }
    }

    /// Who may talk to the agent (entries that do not parse were refused by `validate`).
    pub fn allowlist(&self) -> Allowlist {
        let networks = crate::platform::registry::networks();
        let (chats, spaces) = Allowlist::parse_chats(&networks, &self.chats).unwrap_or_default();
        // `access.roles` are ids of groups on each platform that has them (Discord's roles).
        let groups = networks.with_groups().flat_map(|platform| self.roles.iter().map(move |role| (platform.to_owned(), role.clone()))).collect();
        Allowlist { users: users(&self.users), chats, spaces, groups, open: networks.always_open(), approvers: self.policy(), pairing: self.pairing }
    }

    /// Who may approve pairing codes with `/pair CODE`, and in which chats besides
    /// their direct chat with the bot.
    pub fn pairing_admins(&self) -> PairingAdmins {
        PairingAdmins {
            admins: users(&self.admins),
            admin_chats: Allowlist::parse_chats(&crate::platform::registry::networks(), &self.admin_chats).map(|(chats, _)| chats).unwrap_or_default(),
        }
    }

    /// Each platform of `enabled` where nobody could talk (an empty allowlist and
    /// pairing off refuses everyone there); with pairing on and nobody in
    /// `access.admins`, that codes can then only be approved from a shell. A warning,
    /// not an error: `hitl-bridge pair CODE` still works, and some deployments want
    /// exactly that.
    pub fn warnings<'a>(&self, enabled: impl Iterator<Item = &'a str>) -> Vec<String> {
        if self.pairing {
            if !self.admins.is_empty() {
                return Vec::new();
            }
            return vec![
                "access.pairing is on but access.admins is empty: nobody may approve a pairing code with /pair; \
                 approve them with `hitl-bridge pair CODE`"
                    .to_owned(),
            ];
        }
        let allowlist = self.allowlist();
        let networks = crate::platform::registry::networks();
        enabled
            .filter(|platform| allowlist.is_closed_on(platform, networks.has_groups(platform)))
            .map(|platform| {
                format!(
                    "{platform} is enabled but nobody may talk to the agent there: access.users, access.chats, access.roles \
                     and the approvers name nobody on {platform}, and access.pairing is off; every message will be refused. \
                     Send the bot /id: it answers your id as access.users takes it; restart with it in \
                     HITL_BRIDGE__ACCESS__USERS (or turn on access.pairing)"
                )
            })
            .collect()
    }
}

/// `platform:user_id` entries as `(platform, user id)` (entries that do not parse
/// were refused by `problem`).
fn users(entries: &[String]) -> Vec<(String, String)> {
    let networks = crate::platform::registry::networks();
    entries.iter().filter_map(|entry| networks.parse_user(entry)).collect()
}

#[cfg(test)]
mod tests {
    use crate::config::Settings;

    #[test]
    fn pairing_without_admins_and_closed_platforms_are_warned_about() {
        let mut s = Settings::from_pairs(&[("telegram.enabled", "true"), ("telegram.token", "1:x")]).unwrap();
        let closed = s.access_warnings();
        assert_eq!(closed.len(), 1);
        assert!(closed[0].starts_with("telegram is enabled but nobody may talk"), "{closed:?}");
        assert!(
            closed[0].ends_with(
                "Send the bot /id: it answers your id as access.users takes it; restart with it in HITL_BRIDGE__ACCESS__USERS (or turn on access.pairing)"
            ),
            "{closed:?}"
        );
        s.access.pairing = true;
        assert_eq!(
            s.access_warnings(),
            ["access.pairing is on but access.admins is empty: nobody may approve a pairing code with /pair; approve them with `hitl-bridge pair CODE`"]
        );
        s.access.admins = vec!["telegram:3003".into()];
        assert!(s.access_warnings().is_empty());
    }
}
