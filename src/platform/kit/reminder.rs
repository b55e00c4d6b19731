//! Whom an escalation reminder mentions, on one platform: the pure part of
//! [`Platform::send_reminder`](crate::platform::Platform::send_reminder). Each platform formats
//! the [`Recipients`] its own way (Discord `<@id>`, Telegram `tg://user` links) and
//! sends the text from [`locale::policy::reminder`](crate::platform::locale::policy::reminder).
//!
//! `Approvers` means who may decide this request, most specific first: the decision
//! policy's approvers (and roles), else the approvers the pushing agent named, else
//! the configured `access.approvers` / `access.approver_roles`. Only people on the
//! platform sending the reminder are mentioned; the others get their own reminder
//! where they are. A `User` on another platform is named as text, never dropped, so
//! a reminder always says whom it is for.

use crate::interaction::policy::Mention;
use crate::interaction::{AccessPolicy, Interaction, Origin};
use crate::platform::locale::policy::{self as texts, Addressed};
use crate::platform::locale::{self, Locale};

/// Whom one reminder addresses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recipients {
    /// User ids on this platform, to mention.
    pub users: Vec<String>,
    /// Discord role ids (other platforms name the role instead).
    pub roles: Vec<String>,
    /// People on other platforms, as `platform:user_id`, named as text.
    pub others: Vec<String>,
}

impl Recipients {
    pub fn is_empty(&self) -> bool {
        self.users.is_empty() && self.roles.is_empty() && self.others.is_empty()
    }
}

/// Whom `mention` means for a reminder on `platform`. `configured` is the platform's
/// access policy (the fallback for `Approvers`), `None` when it has none.
pub fn recipients(platform: &str, interaction: &Interaction, mention: &Mention, configured: Option<&AccessPolicy>) -> Recipients {
    let mut out = Recipients::default();
    match mention {
        Mention::Approvers => {
            let (users, roles) = approvers(interaction, configured);
            out.users = users.into_iter().filter(|(p, _)| p == platform).map(|(_, id)| id).collect();
            out.roles = roles;
        }
        Mention::User { platform: p, user_id } if p == platform => out.users.push(user_id.clone()),
        Mention::User { platform: p, user_id } => out.others.push(format!("{p}:{user_id}")),
        Mention::Role { role_id } => out.roles.push(role_id.clone()),
    }
    out.users.dedup();
    out.roles.dedup();
    out
}

/// Who may decide, as `(platform, user)` pairs and role ids: see the module doc.
fn approvers(interaction: &Interaction, configured: Option<&AccessPolicy>) -> (Vec<(String, String)>, Vec<String>) {
    if let Some(p) = interaction.policy.as_ref().filter(|p| !p.approvers.is_empty() || !p.approver_roles.is_empty()) {
        return (p.approvers.clone(), p.approver_roles.clone());
    }
    if let Origin::Pushed { approvers: Some(named), .. } = &interaction.origin {
        return (named.users.clone(), named.roles.clone());
    }
    configured.map(|c| (c.approver_users.clone(), c.approver_roles.clone())).unwrap_or_default()
}

/// "2 of 3 approvals" under a quorum, for the reminder's "(… so far)".
pub fn progress(locale: Locale, interaction: &Interaction) -> Option<String> {
    interaction.quorum_progress().map(|p| texts::approvals_count(locale, p.leading(), p.needed))
}

/// The reminder as plain text, people named by id: for a platform without mentions
/// (the console, the default of the trait).
pub fn plain(locale: Locale, interaction: &Interaction, people: &Recipients) -> String {
    let mut names: Vec<String> = people.users.iter().map(|u| format!("@{u}")).collect();
    names.extend(people.roles.iter().map(|r| format!("@role:{r}")));
    names.extend(people.others.iter().cloned());
    let names = names.join(" ");
    let to = if names.is_empty() { Addressed::Nobody } else { Addressed::To(&names) };
    let progress = progress(locale, interaction);
    texts::reminder(locale, to, &texts::subject(interaction), progress.as_deref(), &locale::clock(interaction.deadline_ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::policy::Policy;
    use crate::interaction::{Approvers, RequestBuilder, TimeoutDefaults};
    use crate::protocol::ActionRequest;

    fn interaction(policy: Option<Policy>) -> Interaction {
        let action = ActionRequest { name: "run_migration".into(), args: serde_json::json!({}), description: None, tool_use_id: None };
        let request = RequestBuilder::start("k", vec![action], vec![], Some(600)).finish(TimeoutDefaults::default()).expect("request");
        Interaction::new("id".into(), "s".into(), request, None, 0).with_policy(policy)
    }

    fn policy(approvers: &[(&str, &str)], roles: &[&str]) -> Policy {
        Policy {
            name: "p".into(),
            approvers: approvers.iter().map(|(p, u)| (p.to_string(), u.to_string())).collect(),
            approver_roles: roles.iter().map(|r| r.to_string()).collect(),
            quorum: 2,
            remember: vec![],
            remember_args: Default::default(),
            escalation: vec![],
            fallback: None,
        }
    }

    fn configured() -> AccessPolicy {
        AccessPolicy {
            approver_users: vec![("discord".into(), "7".into()), ("telegram".into(), "8".into())],
            approver_roles: vec!["55".into()],
            four_eyes: false,
        }
    }

    #[test]
    fn approvers_are_the_policys_else_the_pushed_ones_else_the_configured() {
        let i = interaction(Some(policy(&[("discord", "1"), ("telegram", "2")], &["900"])));
        let r = recipients("discord", &i, &Mention::Approvers, Some(&configured()));
        assert_eq!(r, Recipients { users: vec!["1".into()], roles: vec!["900".into()], others: vec![] });
        let r = recipients("telegram", &i, &Mention::Approvers, Some(&configured()));
        assert_eq!(r.users, ["2"]);

        let mut i = interaction(Some(policy(&[], &[])));
        let r = recipients("discord", &i, &Mention::Approvers, Some(&configured()));
        assert_eq!(r, Recipients { users: vec!["7".into()], roles: vec!["55".into()], others: vec![] });
        i.origin = Origin::Pushed { agent: "a".into(), approvers: Some(Approvers { users: vec![("telegram".into(), "3".into())], roles: vec![] }) };
        assert_eq!(recipients("telegram", &i, &Mention::Approvers, Some(&configured())).users, ["3"]);
        assert!(recipients("console", &interaction(None), &Mention::Approvers, None).is_empty());
    }

    #[test]
    fn a_user_elsewhere_is_named_and_a_role_kept() {
        let i = interaction(None);
        let user = Mention::User { platform: "telegram".into(), user_id: "5".into() };
        assert_eq!(recipients("telegram", &i, &user, None).users, ["5"]);
        assert_eq!(recipients("discord", &i, &user, None).others, ["telegram:5"]);
        assert_eq!(recipients("telegram", &i, &Mention::Role { role_id: "900".into() }, None).roles, ["900"]);
    }

    #[test]
    fn plain_text_names_everyone() {
        let i = interaction(Some(policy(&[("console", "me")], &[])));
        let r = recipients("console", &i, &Mention::Approvers, None);
        assert_eq!(plain(Locale::En, &i, &r), "⏰ Reminder: @me — run_migration still waits for a decision (0 of 2 approvals so far) · deadline 00:10 UTC");
    }
}
