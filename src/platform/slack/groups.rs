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
//! Each answer is also kept in Slack's own state in the store ([`PlatformState`]),
//! with when Slack gave it, for [`KEPT`]. After a restart (or on another replica) a
//! group's members last known are read from there at first need, as asked when Slack
//! gave them: asked again at once when that is older than `slack.group_refresh_secs`,
//! and kept if Slack then fails or is late. So a restart while Slack is slow or failing
//! refuses no member Slack named within [`KEPT`]; a group with no answer kept is none
//! known, as before. A store that cannot be read or written is logged and changes
//! nothing else.
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
//! [`PlatformState`]: crate::store::PlatformState

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::address::is_group_id;
use super::api::Api;
use crate::clock::now_ms;
use crate::engine::EngineHandle;
use crate::interaction::{Actor, Interaction};
use crate::platform::kit::bounded::BoundedMap;
use crate::store::PlatformState;

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
/// How long a group's members as Slack last gave them are kept in the store for a
/// restart to start from: older, they are not trusted (someone taken out of the group
/// while the bridge was down must not count because it was down).
pub const KEPT: Duration = Duration::from_secs(24 * 60 * 60);

/// One group's members as last known.
#[derive(Default)]
struct Members {
    users: HashSet<String>,
    /// When Slack was last asked; `None`: never.
    asked: Option<Instant>,
    /// Whether that last question failed (the users are older than `asked`).
    failed: bool,
}

/// One group's members as kept in the store.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Kept {
    users: Vec<String>,
    /// When Slack gave them, unix ms.
    fetched_ms: i64,
}

/// Where group `id`'s members are kept.
fn kept_key(id: &str) -> String {
    format!("group_members:{id}")
}

impl Members {
    /// The members `kept` by an earlier run or another replica, as asked when Slack
    /// gave them (`now_ms` and `now` being the same moment); as never asked (so asked
    /// at once) when that moment is further back than `Instant` reaches.
    fn recalled(kept: Kept, now_ms: i64, now: Instant) -> Self {
        let age = Duration::from_millis(u64::try_from(now_ms.saturating_sub(kept.fetched_ms)).unwrap_or(0));
        Self { users: kept.users.into_iter().collect(), asked: now.checked_sub(age), failed: false }
    }

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
    /// Where each group's members as last known are kept across restarts.
    state: PlatformState,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The Slack groups `interaction` names itself: its policy's `approver_roles` and a
/// pushed request's `approvers.roles`, each once.
pub fn named_by(interaction: &Interaction) -> Vec<String> {
    crate::platform::kit::groups::named_by(interaction, is_group_id)
}

impl Groups {
    /// `configured`: (setting, group id) pairs, of every platform; `refresh`:
    /// `slack.group_refresh_secs`; `state`: Slack's own state in the store.
    pub fn new(configured: &[(String, String)], refresh: Duration, state: PlatformState) -> Self {
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
            state,
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
        if members.asked.is_none() {
            self.recall(id, &mut members).await;
        }
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

    /// The members of `id` an earlier run or another replica kept, if any, into
    /// `members` (this process knows none yet).
    async fn recall(&self, id: &str, members: &mut Members) {
        let now = now_ms();
        let kept = match self.state.get(&kept_key(id), now).await {
            Ok(Some(stored)) => stored.value,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(group = id, error = %e, "cannot read a user group's members last known from the store; asking Slack");
                return;
            }
        };
        match serde_json::from_str(&kept) {
            Ok(kept) => *members = Members::recalled(kept, now, Instant::now()),
            Err(e) => tracing::warn!(group = id, error = %e, "the members last known of a user group, as stored, are unreadable; asking Slack"),
        }
    }

    /// Keeps `users`, the members of `id` Slack just gave, in the store.
    async fn keep(&self, id: &str, users: &HashSet<String>) {
        let mut users: Vec<String> = users.iter().cloned().collect();
        users.sort();
        let now = now_ms();
        let written = match serde_json::to_string(&Kept { users, fetched_ms: now }) {
            Ok(value) => self.state.put(&kept_key(id), &value, now, Some(KEPT)).await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(error) = written {
            tracing::warn!(group = id, %error, "cannot keep a user group's members in the store; after a restart none are known until Slack answers");
        }
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
                self.keep(id, &members.users).await;
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
    use crate::interaction::{Approvers, Origin, RequestBuilder, TimeoutDefaults};
    use crate::protocol::ActionRequest;
    use crate::store::Store;

    /// Slack's own state, in a store of its own.
    async fn state() -> PlatformState {
        Store::connect("sqlite::memory:").await.unwrap().platform_state("slack")
    }

    fn interaction(origin: Origin) -> Interaction {
        let action = ActionRequest { name: "deploy".into(), args: serde_json::json!({}), description: None, tool_use_id: None };
        let request = RequestBuilder::start("k", vec![action], vec![], Some(300)).finish(TimeoutDefaults::default()).unwrap();
        let mut interaction = Interaction::new("a1b2c3d4e5f6".into(), "s".into(), request, None, 1_767_225_600_000);
        interaction.origin = origin;
        interaction
    }

    #[tokio::test]
    async fn only_slack_groups_are_asked_about_each_once() {
        let configured = [
            ("access.roles".to_owned(), "S0OPS".to_owned()),
            ("access.approver_roles".to_owned(), "900".to_owned()),
            ("policies[0].approver_roles".to_owned(), "S0OPS".to_owned()),
            ("policies[1].approver_roles".to_owned(), "S0DBA".to_owned()),
        ];
        let groups = Groups::new(&configured, Duration::from_secs(300), state().await);
        assert_eq!(groups.configured, ["S0OPS", "S0DBA"]);
        assert_eq!(lock(&groups.named_in).get("S0OPS").map(String::as_str), Some("access.roles"), "named where first named");
    }

    #[tokio::test]
    async fn a_request_names_groups_by_its_approvers_and_its_policy() {
        let pushed =
            Origin::Pushed { agent: "ci".into(), approvers: Some(Approvers { users: vec![], roles: vec!["S0SRE".into(), "900".into(), "S0SRE".into()] }) };
        assert_eq!(named_by(&interaction(pushed)), ["S0SRE"]);
        assert!(named_by(&interaction(Origin::Chat)).is_empty());
        let groups = Groups::new(&[], Duration::from_secs(300), state().await);
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

    /// Members Slack gave are kept in the store, and a later run (here: a new `Groups`
    /// on the same store) starts from them, as asked when Slack gave them: not due
    /// within the refresh, due after it. An unreadable entry counts as none.
    #[tokio::test]
    async fn members_slack_gave_are_recalled_by_a_later_run_as_asked_then() {
        let state = state().await;
        let first = Groups::new(&[], Duration::from_secs(300), state.clone());
        first.keep("S0SRE", &HashSet::from(["U0BO".to_owned(), "U0ANA".to_owned()])).await;
        let stored = state.get(&kept_key("S0SRE"), now_ms()).await.unwrap().expect("kept");
        let kept: Kept = serde_json::from_str(&stored.value).unwrap();
        assert_eq!(kept.users, ["U0ANA", "U0BO"]);

        let later = Groups::new(&[], Duration::from_secs(300), state.clone());
        let mut members = Members::default();
        later.recall("S0SRE", &mut members).await;
        assert_eq!(members.users, HashSet::from(["U0ANA".to_owned(), "U0BO".to_owned()]));
        assert!(!members.due(Instant::now(), Duration::from_secs(300)), "given moments ago");

        state
            .put(&kept_key("S0OLD"), &serde_json::to_string(&Kept { users: vec!["U0ANA".into()], fetched_ms: now_ms() - 10_000 }).unwrap(), now_ms(), None)
            .await
            .unwrap();
        let mut old = Members::default();
        later.recall("S0OLD", &mut old).await;
        assert!(old.users.contains("U0ANA"), "still the members last known");
        assert!(old.due(Instant::now(), Duration::from_secs(5)), "given 10 s ago: asked again after a 5 s refresh");
        assert!(!old.due(Instant::now(), Duration::from_secs(300)));

        state.put(&kept_key("S0BAD"), "not json", now_ms(), None).await.unwrap();
        let mut bad = Members::default();
        later.recall("S0BAD", &mut bad).await;
        assert!(bad.users.is_empty() && bad.asked.is_none(), "unreadable: none known");
    }
}
