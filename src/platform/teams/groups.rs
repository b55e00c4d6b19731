//! A team's or a channel's members as an approver group: a conversation id
//! (`19:…@thread.tacv2`, a team's General channel or another channel) written where a
//! group goes (`access.roles`, `access.approver_roles`, a policy's `approver_roles`, a
//! pushed request's `approvers.roles`) stands for everyone in it, as Teams lists them.
//!
//! An activity names its sender, never the teams they are in, so each conversation's
//! members are read from the Connector API (`GET /v3/conversations/{id}/pagedmembers`,
//! page by page; learn.microsoft.com, "Get team members" / `GetPagedMembersAsync`), by
//! their Entra object id (`aadObjectId`). The roster is read at first need and again
//! once older than `teams.group_refresh_secs`: someone taken out of the team stops
//! counting within that time. A click that needs a roster waits for it at most
//! [`ASK_WAIT`] (Teams wants the invoke answered within about 5 s); many clicks at
//! once share one read. A read that fails or is late keeps the roster last read (none
//! before the first: refusing is the safe side), is logged, and is tried again after
//! [`RETRY`]. Rosters are kept in memory only: after a restart the first click reads
//! them again.
//!
//! Which groups: the Teams conversation ids the configuration names, and those the
//! request clicked on names itself: noted when its card is shown or updated here, or
//! read from the engine once for a request this process never showed (after a
//! restart, or shown by another replica). Other platforms' group ids are left alone.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::Shared;
use super::address::is_conversation_id;
use crate::interaction::{Actor, Interaction, Origin};
use crate::platform::kit::bounded::BoundedMap;

/// How long a click waits for Teams to list a group's members.
pub const ASK_WAIT: Duration = Duration::from_millis(2500);
/// Requests whose groups are remembered at once.
const REQUESTS: usize = 10_000;
/// How soon a roster that could not be read is tried again (sooner when the refresh is).
pub const RETRY: Duration = Duration::from_secs(30);

/// One conversation's members as last read.
#[derive(Default)]
struct Roster {
    aad_ids: HashSet<String>,
    /// When Teams was last asked, and whether that failed.
    read_at: Option<(Instant, bool)>,
}

impl Roster {
    fn stale(&self, now: Instant, refresh: Duration) -> bool {
        match self.read_at {
            None => true,
            Some((at, failed)) => now.saturating_duration_since(at) >= if failed { refresh.min(RETRY) } else { refresh },
        }
    }
}

/// The Teams conversations approvers may be members of, and who is in them.
pub struct Groups {
    configured: Vec<String>,
    /// The Teams groups each request names (mostly none), by interaction id.
    by_request: Mutex<BoundedMap<String, Vec<String>>>,
    rosters: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Roster>>>>,
    refresh: Duration,
}

/// The Teams groups among `ids`, each once, in order.
fn teams_groups<'a>(ids: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    let mut kept: Vec<String> = Vec::new();
    for id in ids {
        if is_conversation_id(id) && !kept.contains(id) {
            kept.push(id.clone());
        }
    }
    kept
}

/// The groups `interaction` names itself.
pub fn requested_by(interaction: &Interaction) -> Vec<String> {
    let pushed = match &interaction.origin {
        Origin::Pushed { approvers: Some(approvers), .. } => approvers.roles.as_slice(),
        _ => &[],
    };
    teams_groups(interaction.policy.iter().flat_map(|p| p.approver_roles.iter()).chain(pushed))
}

impl Groups {
    /// `configured`: every (setting, group id) the configuration names, of every
    /// platform; `refresh`: `teams.group_refresh_secs`.
    pub fn new(configured: &[(String, String)], refresh: Duration) -> Self {
        Self {
            configured: teams_groups(configured.iter().map(|(_, id)| id)),
            by_request: Mutex::new(BoundedMap::new(REQUESTS)),
            rosters: Mutex::new(HashMap::new()),
            refresh,
        }
    }

    /// Remembers the groups `interaction` names, for the clicks on its card.
    pub fn note(&self, interaction: &Interaction) {
        self.by_request.lock().unwrap_or_else(|p| p.into_inner()).insert(interaction.id.clone(), requested_by(interaction));
    }

    /// The groups request `interaction_id` names: as noted, or read from the engine
    /// once (none when it cannot say).
    async fn named_by_request(&self, shared: &Shared, interaction_id: &str) -> Vec<String> {
        if let Some(named) = self.by_request.lock().unwrap_or_else(|p| p.into_inner()).get(&interaction_id.to_owned()) {
            return named.clone();
        }
        match shared.engine.interaction(interaction_id).await {
            Ok(Some(interaction)) => {
                self.note(&interaction);
                requested_by(&interaction)
            }
            Ok(None) => Vec::new(),
            Err(e) => {
                tracing::warn!(error = %e, interaction = interaction_id, "cannot read which Teams groups a request names");
                Vec::new()
            }
        }
    }

    fn roster(&self, id: &str) -> Arc<tokio::sync::Mutex<Roster>> {
        self.rosters.lock().unwrap_or_else(|p| p.into_inner()).entry(id.to_owned()).or_default().clone()
    }

    /// Sets the groups of `actor`, who clicked on request `interaction_id`: those the
    /// configuration and the request name that they are a member of.
    pub async fn of_clicker(&self, shared: &Shared, interaction_id: &str, actor: &mut Actor) {
        let named = self.named_by_request(shared, interaction_id).await;
        let ids = teams_groups(self.configured.iter().chain(&named));
        actor.groups = self.containing(shared, &ids, &actor.user_id).await;
    }

    /// Sets the groups of `actor`, who wrote a message: those the configuration names.
    pub async fn of_writer(&self, shared: &Shared, actor: &mut Actor) {
        actor.groups = self.containing(shared, &self.configured, &actor.user_id).await;
    }

    /// The groups `aad_id` is in, among those the configuration and `named` (the
    /// approver groups of the requests the web inbox shows) name.
    pub async fn of_person_naming(&self, shared: &Shared, aad_id: &str, named: &[String]) -> Vec<String> {
        let ids = teams_groups(self.configured.iter().chain(named));
        self.containing(shared, &ids, aad_id).await
    }

    /// Those of `ids` whose roster holds `aad_id`.
    async fn containing(&self, shared: &Shared, ids: &[String], aad_id: &str) -> Vec<String> {
        let checks = ids.iter().map(|id| async move {
            let roster = self.roster(id);
            let mut roster = roster.lock().await;
            if roster.stale(Instant::now(), self.refresh) {
                self.read(shared, id, &mut roster).await;
            }
            roster.aad_ids.contains(&aad_id.to_ascii_lowercase()).then(|| id.clone())
        });
        futures_util::future::join_all(checks).await.into_iter().flatten().collect()
    }

    /// Reads conversation `id`'s members into `roster`; on failure keeps what it held.
    async fn read(&self, shared: &Shared, id: &str, roster: &mut Roster) {
        let (service_url, conversation) = match shared.conversation(&crate::store::ChatKey::new(super::PLATFORM, id, None)).await {
            Ok(place) => place,
            Err(e) => return tracing::warn!(group = id, error = %e, "cannot place a Teams group"),
        };
        let listed = tokio::time::timeout(ASK_WAIT, shared.api.members(&service_url, &conversation)).await;
        let failed = match listed {
            Ok(Ok(members)) => {
                roster.aad_ids = members.into_iter().map(|m| m.to_ascii_lowercase()).collect();
                false
            }
            Ok(Err(e)) => {
                tracing::warn!(group = id, error = %e, known = roster.aad_ids.len(), "cannot list a Teams group's members; keeping those last read");
                true
            }
            Err(_) => {
                tracing::warn!(group = id, known = roster.aad_ids.len(), "Teams did not list a group's members in time; keeping those last read");
                true
            }
        };
        roster.read_at = Some((Instant::now(), failed));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_teams_conversations_are_groups_each_once() {
        let configured = [
            ("access.roles".to_owned(), "19:team0a1b@thread.tacv2".to_owned()),
            ("access.approver_roles".to_owned(), "900100200".to_owned()),
            ("policies[0].approver_roles".to_owned(), "S0SRE".to_owned()),
            ("policies[1].approver_roles".to_owned(), "19:team0a1b@thread.tacv2".to_owned()),
        ];
        assert_eq!(Groups::new(&configured, Duration::from_secs(300)).configured, ["19:team0a1b@thread.tacv2"]);
    }

    #[test]
    fn a_roster_is_read_again_after_the_refresh_and_sooner_after_a_failure() {
        let now = Instant::now();
        let refresh = Duration::from_secs(300);
        let mut roster = Roster::default();
        assert!(roster.stale(now, refresh), "never read");
        roster.read_at = Some((now, false));
        assert!(!roster.stale(now + Duration::from_secs(299), refresh));
        assert!(roster.stale(now + refresh, refresh));
        roster.read_at = Some((now, true));
        assert!(!roster.stale(now + Duration::from_secs(29), refresh));
        assert!(roster.stale(now + RETRY, refresh));
    }
}
