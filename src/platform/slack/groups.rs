//! Slack user groups (`S…`, Slack's "subteams") as approver groups: which of the
//! groups the configuration and a request name a person is in, for [`Actor::groups`],
//! so that `access.approver_roles`, `access.roles` and a policy's `approver_roles`
//! work on Slack as Discord's roles do on Discord.
//!
//! A click, a modal submission, a message or a slash command carries the user and
//! never their groups, so each group's members are asked of Slack
//! (`usergroups.users.list`, scope `usergroups:read`, Tier 2) at first need,
//! remembered, and asked again once older than `slack.group_refresh_secs` (5 minutes by
//! default): someone taken out of a group stops counting within that time. The
//! question is asked on the way of the click that needs it, once per group however
//! many clicks wait for it, and waited for at most [`ASK_WAIT`] (a modal's answer is
//! due within Slack's 3 s). A failed or late answer keeps the members last known (none
//! before the first answer: refusing is the safe side), is logged, and is asked again
//! after [`RETRY`]; it never fails the click. A group Slack does not know
//! (`no_such_subteam`) is logged with the setting that names it.
//!
//! The web inbox asks the same question, with the same members and refresh, when a
//! signed-in person reads or decides ([`Membership`]): someone taken out of a group
//! stops counting in the browser when they stop counting in Slack.
//!
//! Which groups: those the configuration names ([`StartContext::groups`]) and those a
//! request names itself (its policy's `approver_roles`, a pushed request's
//! `approvers.roles`), noted when its card is shown or refreshed here, or looked up in
//! the engine when a click comes for a request this process never showed (after a
//! restart, or shown by another replica). Ids of other platforms' groups (Discord's
//! digits) are left alone.
//!
//! [`StartContext::groups`]: crate::platform::descriptor::StartContext::groups
//! [`Membership`]: crate::platform::descriptor::Membership

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::address::is_group_id;
use super::api::Api;
use crate::engine::EngineHandle;
use crate::interaction::{Actor, Interaction, Origin};
use crate::platform::kit::bounded::BoundedMap;

/// How long a click waits for Slack to say who is in a group.
pub const ASK_WAIT: Duration = Duration::from_millis(1500);
/// How soon a group whose members could not be asked is asked again (sooner when
/// `slack.group_refresh_secs` is shorter).
pub const RETRY: Duration = Duration::from_secs(30);
/// Requests whose groups are remembered at once.
const REQUESTS: usize = 10_000;
/// Groups whose members are remembered at once; past this, those no setting names are
/// forgotten (a pushed request may name any).
const MAX_GROUPS: usize = 1_000;

/// One group's members as last known.
#[derive(Default)]
struct Members {
    users: HashSet<String>,
    /// When Slack was last asked; `None`: never.
    asked: Option<Instant>,
    /// Whether that last question failed (the users are older than `asked`).
    failed: bool,
}

impl Members {
    /// Whether Slack must be asked again at `now`.
    fn due(&self, now: Instant, refresh: Duration) -> bool {
        let wait = if self.failed { refresh.min(RETRY) } else { refresh };
        self.asked.is_none_or(|asked| now.saturating_duration_since(asked) >= wait)
    }
}

/// The user groups the bridge asks Slack about, and their members.
pub struct Groups {
    /// The Slack group ids the configuration names, each once.
    configured: Vec<String>,
    /// Where each group id is named, for the log: a setting, or a request.
    named_in: Mutex<HashMap<String, String>>,
    /// The Slack groups each request names (often none), by interaction id.
    by_request: Mutex<BoundedMap<String, Vec<String>>>,
    members: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Members>>>>,
    refresh: Duration,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The Slack groups `interaction` names itself: its policy's `approver_roles` and a
/// pushed request's `approvers.roles`, each once.
pub fn named_by(interaction: &Interaction) -> Vec<String> {
    let policy = interaction.policy.iter().flat_map(|p| p.approver_roles.iter());
    let pushed: &[String] = match &interaction.origin {
        Origin::Pushed { approvers: Some(approvers), .. } => &approvers.roles,
        _ => &[],
    };
    let mut ids: Vec<String> = Vec::new();
    for id in policy.chain(pushed).filter(|id| is_group_id(id)) {
        if !ids.contains(id) {
            ids.push(id.clone());
        }
    }
    ids
}

impl Groups {
    /// `configured`: (setting, group id) pairs, of every platform; `refresh`:
    /// `slack.group_refresh_secs`.
    pub fn new(configured: &[(String, String)], refresh: Duration) -> Self {
        let mut ids = Vec::new();
        let mut named_in = HashMap::new();
        for (setting, id) in configured.iter().filter(|(_, id)| is_group_id(id)) {
            if !ids.contains(id) {
                ids.push(id.clone());
                named_in.insert(id.clone(), setting.clone());
            }
        }
        Self {
            configured: ids,
            named_in: Mutex::new(named_in),
            by_request: Mutex::new(BoundedMap::new(REQUESTS)),
            members: Mutex::new(HashMap::new()),
            refresh,
        }
    }

    /// Remembers the groups `interaction` names, for the clicks on its card.
    pub fn note(&self, interaction: &Interaction) {
        let ids = named_by(interaction);
        let mut named_in = lock(&self.named_in);
        for id in &ids {
            named_in.entry(id.clone()).or_insert_with(|| format!("the approvers of request {}", interaction.id));
        }
        drop(named_in);
        lock(&self.by_request).insert(interaction.id.clone(), ids);
    }

    /// The groups `actor` (a click or a submission on request `interaction_id`) is in,
    /// among those the configuration and the request name.
    pub async fn of_clicker(&self, api: &Api, engine: &EngineHandle, interaction_id: &str, actor: &mut Actor) {
        let mut ids = self.configured.clone();
        for id in self.named_by_request(engine, interaction_id).await {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        actor.groups = self.member_of(api, &ids, &actor.user_id).await;
    }

    /// The groups `actor` (a message or a command) is in, among those the
    /// configuration names.
    pub async fn of_person(&self, api: &Api, actor: &mut Actor) {
        actor.groups = self.member_of(api, &self.configured, &actor.user_id).await;
    }

    /// The groups `user` is in, among those the configuration names and the Slack
    /// groups of `named` (the web inbox asking for the requests it shows): the same
    /// members, asked and refreshed as for a click.
    pub async fn of_user_naming(&self, api: &Api, user: &str, named: &[String]) -> Vec<String> {
        let mut ids = self.configured.clone();
        for id in named.iter().filter(|id| is_group_id(id)) {
            if !ids.contains(id) {
                lock(&self.named_in).entry(id.clone()).or_insert_with(|| "a request's approvers".to_owned());
                ids.push(id.clone());
            }
        }
        self.member_of(api, &ids, user).await
    }

    /// The groups request `interaction_id` names: as noted, or asked of the engine
    /// once (nothing when it cannot say).
    async fn named_by_request(&self, engine: &EngineHandle, interaction_id: &str) -> Vec<String> {
        if let Some(ids) = lock(&self.by_request).get(&interaction_id.to_owned()) {
            return ids.clone();
        }
        match engine.interaction(interaction_id).await {
            Ok(Some(interaction)) => {
                self.note(&interaction);
                named_by(&interaction)
            }
            Ok(None) => Vec::new(),
            Err(e) => {
                tracing::warn!(error = %e, interaction = interaction_id, "cannot read which user groups a request names");
                Vec::new()
            }
        }
    }

    /// Those of `ids` that `user` is in, asking Slack about each group that is due.
    async fn member_of(&self, api: &Api, ids: &[String], user: &str) -> Vec<String> {
        if ids.is_empty() {
            return Vec::new();
        }
        let checks = ids.iter().map(|id| async move { self.is_member(api, id, user).await.then(|| id.clone()) });
        futures_util::future::join_all(checks).await.into_iter().flatten().collect()
    }

    async fn is_member(&self, api: &Api, id: &str, user: &str) -> bool {
        let members = self.members_of(id);
        let mut members = members.lock().await;
        if members.due(Instant::now(), self.refresh) {
            self.ask(api, id, &mut members).await;
        }
        members.users.contains(user)
    }

    /// The members of `id`, as last known (an empty, never asked entry at first).
    fn members_of(&self, id: &str) -> Arc<tokio::sync::Mutex<Members>> {
        let mut all = lock(&self.members);
        if all.len() >= MAX_GROUPS && !all.contains_key(id) {
            all.retain(|group, _| self.configured.contains(group));
        }
        all.entry(id.to_owned()).or_default().clone()
    }

    /// Asks Slack who is in `id`; on failure keeps what `members` knew, and says so.
    async fn ask(&self, api: &Api, id: &str, members: &mut Members) {
        let answer = tokio::time::timeout(ASK_WAIT, api.usergroup_members(id)).await;
        members.asked = Some(Instant::now());
        members.failed = true;
        let known = members.users.len();
        match answer {
            Ok(Ok(users)) => {
                members.users = users.into_iter().collect();
                members.failed = false;
            }
            Ok(Err(e)) if e.slack_error() == Some("no_such_subteam") => {
                let setting = lock(&self.named_in).get(id).cloned().unwrap_or_else(|| "a setting".to_owned());
                tracing::warn!(group = id, %setting, "Slack has no user group {id} (usergroups.users.list: no_such_subteam): nobody counts as in it; check {setting}");
            }
            Ok(Err(e)) if e.slack_error() == Some("missing_scope") => {
                tracing::warn!(
                    group = id,
                    "Slack refused to list a user group's members (missing_scope): add the usergroups:read bot scope and reinstall the app"
                );
            }
            Ok(Err(e)) => tracing::warn!(group = id, error = %e, known, "cannot ask Slack who is in a user group; keeping the members last known"),
            Err(_) => tracing::warn!(group = id, known, "Slack did not say in time who is in a user group; keeping the members last known"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::{Approvers, RequestBuilder, TimeoutDefaults};
    use crate::protocol::ActionRequest;

    fn interaction(origin: Origin) -> Interaction {
        let action = ActionRequest { name: "deploy".into(), args: serde_json::json!({}), description: None, tool_use_id: None };
        let request = RequestBuilder::start("k", vec![action], vec![], Some(300)).finish(TimeoutDefaults::default()).unwrap();
        let mut interaction = Interaction::new("a1b2c3d4e5f6".into(), "s".into(), request, None, 1_767_225_600_000);
        interaction.origin = origin;
        interaction
    }

    #[test]
    fn only_slack_groups_are_asked_about_each_once() {
        let configured = [
            ("access.roles".to_owned(), "S0OPS".to_owned()),
            ("access.approver_roles".to_owned(), "900".to_owned()),
            ("policies[0].approver_roles".to_owned(), "S0OPS".to_owned()),
            ("policies[1].approver_roles".to_owned(), "S0DBA".to_owned()),
        ];
        let groups = Groups::new(&configured, Duration::from_secs(300));
        assert_eq!(groups.configured, ["S0OPS", "S0DBA"]);
        assert_eq!(lock(&groups.named_in).get("S0OPS").map(String::as_str), Some("access.roles"), "named where first named");
    }

    #[test]
    fn a_request_names_groups_by_its_approvers_and_its_policy() {
        let pushed =
            Origin::Pushed { agent: "ci".into(), approvers: Some(Approvers { users: vec![], roles: vec!["S0SRE".into(), "900".into(), "S0SRE".into()] }) };
        assert_eq!(named_by(&interaction(pushed)), ["S0SRE"]);
        assert!(named_by(&interaction(Origin::Chat)).is_empty());
        let groups = Groups::new(&[], Duration::from_secs(300));
        let mut shown = interaction(Origin::Pushed { agent: "ci".into(), approvers: Some(Approvers { users: vec![], roles: vec!["S0SRE".into()] }) });
        shown.id = "r1".into();
        groups.note(&shown);
        assert_eq!(lock(&groups.by_request).get(&"r1".to_owned()).cloned(), Some(vec!["S0SRE".to_owned()]));
        assert_eq!(lock(&groups.named_in).get("S0SRE").map(String::as_str), Some("the approvers of request r1"));
    }

    #[test]
    fn members_are_asked_at_first_need_then_after_the_refresh_sooner_after_a_failure() {
        let refresh = Duration::from_secs(300);
        let now = Instant::now();
        let mut members = Members::default();
        assert!(members.due(now, refresh), "never asked");
        members.asked = Some(now);
        assert!(!members.due(now + Duration::from_secs(299), refresh));
        assert!(members.due(now + refresh, refresh));
        members.failed = true;
        assert!(!members.due(now + Duration::from_secs(29), refresh));
        assert!(members.due(now + RETRY, refresh));
        assert!(members.due(now + Duration::from_secs(1), Duration::from_secs(1)), "a short refresh retries as soon");
    }
}
