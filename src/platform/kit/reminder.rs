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
use crate::store::{ChatKey, MessageRef};

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

/// How one platform writes a reminder's parts; [`text`] puts them together.
pub struct Style {
    /// A person of this platform, mentioned; `None` for an id it cannot mention (then
    /// the id is named as text).
    pub user: fn(&str) -> Option<String>,
    /// A group, mentioned; `None` for one it cannot mention (then the group is named in
    /// the reminder's "for the role" line, when nobody else is named).
    pub group: fn(&str) -> Option<String>,
    /// Text as the platform shows it, escaped and cut to at most `max` characters.
    pub text: fn(&str, usize) -> String,
    /// The deadline, as the platform writes a time.
    pub deadline: fn(i64) -> String,
    /// The longest subject shown.
    pub subject_max: usize,
    /// The most people (and, apart, groups; and people of other platforms) named, so
    /// the reminder stays within the platform's limit.
    pub most_named: usize,
}

/// The longest id or name of another platform's person, as text.
const NAME_MAX: usize = 60;
/// The longest "for the role" line.
const ROLES_MAX: usize = 500;

/// The reminder's text on a platform written in `style`: whom it addresses, what
/// waits, the approvals so far and the deadline.
pub fn text(locale: Locale, interaction: &Interaction, people: &Recipients, style: &Style) -> String {
    let interaction = &*crate::interaction::readable::interaction(interaction);
    let as_text = |name: &String| (style.text)(name, NAME_MAX);
    let mut named: Vec<String> = people.users.iter().take(style.most_named).map(|id| (style.user)(id).unwrap_or_else(|| as_text(id))).collect();
    let (groups, roles): (Vec<&String>, Vec<&String>) = people.roles.iter().partition(|r| (style.group)(r).is_some());
    named.extend(groups.iter().take(style.most_named).filter_map(|g| (style.group)(g)));
    named.extend(people.others.iter().take(style.most_named).map(as_text));
    let named = named.join(" ");
    let roles = (style.text)(&roles.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(", "), ROLES_MAX);
    let to = match (named.is_empty(), roles.is_empty()) {
        (false, _) => Addressed::To(&named),
        (true, false) => Addressed::Role(&roles),
        (true, true) => Addressed::Nobody,
    };
    let progress = progress(locale, interaction).map(|p| (style.text)(&p, usize::MAX));
    let subject = (style.text)(&texts::subject(interaction), style.subject_max);
    texts::reminder(locale, to, &subject, progress.as_deref(), &(style.deadline)(interaction.deadline_ms))
}

/// A reminder as plain text (the terminal): `@id` for people, `@role:id` for groups.
pub fn plain(locale: Locale, interaction: &Interaction, people: &Recipients) -> String {
    const PLAIN: Style = Style {
        user: |id| Some(format!("@{id}")),
        group: |id| Some(format!("@role:{id}")),
        text: |text, _| text.to_owned(),
        deadline: locale::clock,
        subject_max: usize::MAX,
        most_named: usize::MAX,
    };
    text(locale, interaction, people, &PLAIN)
}

/// Where a reminder goes on a platform with threads: `chat`, or, when it has no
/// thread of its own and `card` is the request's card there (its id one of the
/// platform's, as `is_message_id` says), the card's thread: one tap from the reminder
/// to the buttons, and the channel is not flooded.
pub fn in_cards_thread(chat: &ChatKey, card: Option<&MessageRef>, is_message_id: impl Fn(&str) -> bool) -> ChatKey {
    let mut chat = chat.clone();
    if chat.thread_id.is_none()
        && let Some(card) = card.filter(|c| is_message_id(&c.message_id) && c.chat == chat)
    {
        chat.thread_id = Some(card.message_id.clone());
    }
    chat
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reminder_goes_in_the_cards_thread_unless_its_chat_has_one() {
        let channel = ChatKey::new("slack", "C0OPS", None);
        let card = |chat: &ChatKey, id: &str| MessageRef { interaction_id: "i".into(), chat: chat.clone(), message_id: id.into() };
        let is_ts = |id: &str| id.contains('.');
        assert_eq!(in_cards_thread(&channel, Some(&card(&channel, "1.2")), is_ts), ChatKey::new("slack", "C0OPS", Some("1.2")));
        assert_eq!(in_cards_thread(&channel, Some(&card(&channel, "12")), is_ts), channel, "not a message id of the platform");
        assert_eq!(in_cards_thread(&channel, Some(&card(&ChatKey::new("slack", "C0DEV", None), "1.2")), is_ts), channel, "another chat's card");
        assert_eq!(in_cards_thread(&channel, None, is_ts), channel);
        let thread = ChatKey::new("slack", "C0OPS", Some("9.9"));
        assert_eq!(in_cards_thread(&thread, Some(&card(&thread, "1.2")), is_ts), thread, "the chat's own thread is kept");
    }
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
