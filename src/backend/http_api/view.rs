//! What an agent sees of its request: the body of `GET /v1/requests/{key}`, of a
//! replayed `POST`, of `DELETE`, and of the callback (PROTOCOL.md §8). Built from the
//! stored request and interaction alone, so every replica answers the same.
//!
//! Under a decision policy it also shows the policy's part: its name (`policy`: which
//! one applied, a configured entry or the request's own), `quorum` and the `votes`
//! cast so far (or that decided it) when several people must approve, and
//! `settled_by` when the policy, not a person's click, ended the request (a
//! remembered rule, a fallback). Without a policy the body is exactly as before.
//!
//! `not_shown` lists the targets a platform refused for good (chat not found, bot not
//! in the channel or blocked), read from the store's refused shows ([`not_shown`]);
//! absent while there are none, so a client that does not know it sees nothing new.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::interaction::access::Actor;
use crate::interaction::chat::Networks;
use crate::interaction::policy::PolicySettlement;
use crate::interaction::{Decider, Draft, Interaction, RequestKind, Status, selected_labels};
use crate::protocol::Reply;
use crate::store::{ApiRequest, RefusedShow};

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RequestState {
    pub approval_key: String,
    /// The `session_id` the request was pushed with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// `pending`, `resolved`, `expired` or `cancelled`.
    pub status: &'static str,
    /// The deadline, RFC 3339.
    pub expires_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<DecidedBy>,
    /// When it left `pending`, RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<String>,
    /// Exactly the stream protocol's `approval` body: `{"decisions":[…]}` (one per
    /// action, in order; optional `user_edit_content`) or `{"answers":{…}}` plus
    /// `selected_options` (one list of chosen labels per question). An expired
    /// approval carries the reject decisions the bridge applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub reply: Option<Value>,
    /// The decision policy the request is under: the name of the `[[policies]]` entry
    /// that matched it (`policies[N]` when unnamed), which takes precedence over the
    /// request's own, or `request` for the request's own. Absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// Under a policy with a quorum: how many distinct people must approve the same
    /// decisions. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quorum: Option<u32>,
    /// With `quorum`: every vote, in the order cast (`[]` before the first). A request
    /// resolves once `quorum` votes carry the same decisions; a vote that rejects ends
    /// it at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub votes: Option<Vec<VoteView>>,
    /// Set when the request's policy ended it rather than a person's click.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settled_by: Option<SettledBy>,
    /// The targets where the request could not be shown because the platform refused
    /// them for good, each with the platform's reason; they are not tried again.
    /// Absent when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_shown: Vec<NotShown>,
}

/// A target the platform refused for good.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct NotShown {
    /// The target object, as a push names it (`platform` and its fields).
    #[schema(value_type = Object)]
    pub target: Value,
    /// The platform's reason, e.g. `Bad Request: chat not found`.
    pub error: String,
}

/// The refused shows of a request as [`RequestState::not_shown`] lists them.
pub fn not_shown(networks: &Networks, refused: Vec<RefusedShow>) -> Vec<NotShown> {
    refused
        .into_iter()
        .map(|r| NotShown { target: networks.target_of(&r.chat).unwrap_or_else(|| crate::interaction::chat::chat_target(&r.chat, "chat_id")), error: r.error })
        .collect()
}

/// One person's vote under a quorum.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct VoteView {
    pub by: DecidedBy,
    /// RFC 3339.
    pub at: String,
    /// The full decision set voted for, one per action in order, as in `reply`.
    #[schema(value_type = Vec<Object>)]
    pub decisions: Vec<Value>,
}

/// What ended a request instead of a person: exactly one key.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SettledBy {
    /// Approved at once by a remembered approval ("approve for this session",
    /// "always approve"); `decided_by` is the person who set the rule.
    Rule(RuleSettlement),
    /// Nobody decided in time: the policy's fallback ended it (status `expired`;
    /// `reply` holds the fallback's decisions, none for `leave`).
    Fallback(FallbackSettlement),
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct RuleSettlement {
    /// The rule's id (what `/rules` and `hitl-bridge rules` revoke).
    pub id: String,
    /// `session` or `always`.
    pub scope: &'static str,
    pub set_by: DecidedBy,
    /// RFC 3339.
    pub set_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct FallbackSettlement {
    /// `approve`, `reject` or `leave`.
    pub decision: &'static str,
    /// The fallback's `after`, in seconds since the request was created.
    pub after_seconds: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct DecidedBy {
    pub platform: String,
    pub id: String,
    pub name: String,
}

/// 201 to a new request.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Created {
    pub approval_key: String,
    pub status: &'static str,
    pub expires_at: String,
}

/// `GET /v1/requests?status=pending`: one page.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RequestList {
    pub requests: Vec<RequestState>,
    /// Pass as `cursor` for the next page; `null` on the last one.
    pub next_cursor: Option<String>,
}

impl From<&Actor> for DecidedBy {
    fn from(actor: &Actor) -> Self {
        Self { platform: actor.platform.clone(), id: actor.user_id.clone(), name: actor.name.clone() }
    }
}

/// The state of `request`, its interaction as given; `not_shown` as [`not_shown`] reads it.
pub fn state(request: &ApiRequest, interaction: &Interaction, not_shown: Vec<NotShown>) -> RequestState {
    let (decided_by, decided_at) = match &interaction.status {
        Status::Pending => (None, None),
        Status::Resolved { by, at_ms } => {
            let by = match by {
                Decider::Person(actor) => Some(DecidedBy::from(actor)),
                Decider::Elsewhere => None,
            };
            (by, Some(*at_ms))
        }
        Status::Expired { at_ms, .. } | Status::Cancelled { at_ms, .. } => (None, Some(*at_ms)),
    };
    RequestState {
        approval_key: request.approval_key.clone(),
        session_id: request.client_session.clone(),
        status: interaction.status.name(),
        expires_at: rfc3339(interaction.deadline_ms),
        decided_by,
        decided_at: decided_at.map(rfc3339),
        reply: interaction.reply.as_ref().map(|reply| reply_json(interaction, reply)),
        policy: interaction.policy.as_ref().map(|p| p.name.clone()),
        quorum: interaction.quorum_progress().map(|p| p.needed),
        votes: votes(interaction),
        settled_by: interaction.settled_by_policy.as_ref().map(settled_by),
        not_shown,
    }
}

/// The votes in the order cast; `None` without a quorum.
fn votes(interaction: &Interaction) -> Option<Vec<VoteView>> {
    interaction.quorum_progress()?;
    let Draft::Decisions(draft) = &interaction.draft else { return None };
    let view = |v: &crate::interaction::policy::Vote| VoteView {
        by: DecidedBy::from(&v.voter),
        at: rfc3339(v.at_ms),
        decisions: v.decisions.iter().map(|d| serde_json::to_value(d).unwrap_or(Value::Null)).collect(),
    };
    Some(draft.votes.iter().map(view).collect())
}

fn settled_by(settlement: &PolicySettlement) -> SettledBy {
    match settlement {
        PolicySettlement::Rule { rule_id, scope, set_by, set_at_ms } => {
            SettledBy::Rule(RuleSettlement { id: rule_id.clone(), scope: scope.as_str(), set_by: DecidedBy::from(set_by), set_at: rfc3339(*set_at_ms) })
        }
        PolicySettlement::Fallback { decision, after_secs } => {
            SettledBy::Fallback(FallbackSettlement { decision: decision.as_str(), after_seconds: *after_secs })
        }
    }
}

/// The reply as the stream protocol sends it, plus `selected_options` for questions.
fn reply_json(interaction: &Interaction, reply: &Reply) -> Value {
    let mut value = serde_json::to_value(reply).unwrap_or(Value::Null);
    if let (Reply::Answers { .. }, RequestKind::Questions { questions, .. }, Draft::Answers { answers }) =
        (reply, &interaction.request.kind, &interaction.draft)
    {
        let selected: Vec<Vec<String>> = questions.iter().zip(answers).map(|(q, a)| selected_labels(q, a)).collect();
        value["selected_options"] = serde_json::json!(selected);
    }
    value
}

/// Unix milliseconds as RFC 3339 UTC, e.g. `2026-11-22T10:00:00.000Z`.
pub fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::backend::http_api::body::{self, PushBody};
    use crate::interaction::{AccessPolicy, Actor, Interaction, Origin, TimeoutDefaults, UserAction};
    use crate::protocol::Decision;
    use crate::store::ChatKey;

    const T0: i64 = 1_790_000_000_000;

    /// A pushed request as the handler builds it, with `extra` merged into the body.
    fn pushed(extra: Value) -> (ApiRequest, Interaction) {
        let mut raw = json!({"targets": [{"platform": "telegram", "chat_id": "-100777"}], "actions": [{"name": "run_migration", "args": {"db": "orders"}}]});
        raw.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let push: PushBody = serde_json::from_value(raw).unwrap();
        let valid = body::validate(
            &push,
            "mig-7",
            &body::Platforms { known: crate::interaction::test_networks::networks(), enabled: vec!["telegram"] },
            TimeoutDefaults::default(),
        )
        .unwrap();
        let mut interaction = Interaction::new("i1".into(), "api:mig-7".into(), valid.request, None, T0).with_policy(valid.policy);
        interaction.origin = Origin::Pushed { agent: "ci".into(), approvers: valid.approvers };
        let request = ApiRequest {
            approval_key: "mig-7".into(),
            interaction_id: "i1".into(),
            session_id: "api:mig-7".into(),
            client_session: None,
            agent: "ci".into(),
            body_hash: String::new(),
            targets: vec![ChatKey::new("telegram", "-100777", None)],
            callback_url: None,
            created_at_ms: T0,
        };
        (request, interaction)
    }

    fn json_of(request: &ApiRequest, interaction: &Interaction) -> Value {
        serde_json::to_value(state(request, interaction, Vec::new())).unwrap()
    }

    #[test]
    fn without_a_policy_nothing_new_appears() {
        let (request, interaction) = pushed(json!({}));
        assert_eq!(json_of(&request, &interaction), json!({"approval_key": "mig-7", "status": "pending", "expires_at": "2026-09-21T14:18:20.000Z"}));
    }

    #[test]
    fn a_quorum_shows_its_votes_in_order() {
        let (request, mut interaction) = pushed(json!({"policy": {"approvers": ["telegram:1", "telegram:2", "telegram:3"], "quorum": 2}}));
        assert_eq!(json_of(&request, &interaction)["votes"], json!([]));
        let lan = Actor::new("telegram", "1", "Lan");
        let approve = UserAction::Decide { action: 0, decision: Decision::Approve };
        interaction.apply(&lan, approve.clone(), &AccessPolicy::default(), T0 + 1_000).unwrap();
        assert_eq!(
            json_of(&request, &interaction),
            json!({"approval_key": "mig-7", "status": "pending", "expires_at": "2026-09-21T14:18:20.000Z",
                   "policy": "request", "quorum": 2,
                   "votes": [{"by": {"platform": "telegram", "id": "1", "name": "Lan"}, "at": "2026-09-21T14:13:21.000Z", "decisions": [{"type": "approve"}]}]})
        );
        let minh = Actor::new("telegram", "2", "Minh");
        interaction.apply(&minh, approve, &AccessPolicy::default(), T0 + 2_000).unwrap();
        let done = json_of(&request, &interaction);
        assert_eq!(done["status"], "resolved");
        assert_eq!(done["reply"], json!({"decisions": [{"type": "approve"}]}));
        assert_eq!(
            done["votes"][1],
            json!({"by": {"platform": "telegram", "id": "2", "name": "Minh"}, "at": "2026-09-21T14:13:22.000Z", "decisions": [{"type": "approve"}]})
        );
        assert!(done.get("settled_by").is_none());
    }

    #[test]
    fn a_fallback_is_the_deadline_and_says_it_settled_the_request() {
        let (request, mut interaction) = pushed(json!({"timeout_seconds": 3600, "policy": {"escalation": [{"after": "30m", "fallback": "reject"}]}}));
        let pending = json_of(&request, &interaction);
        assert_eq!(pending["expires_at"], "2026-09-21T14:43:20.000Z", "30 min, not the hour asked for");
        assert!(pending.get("quorum").is_none() && pending.get("votes").is_none(), "no quorum: {pending}");
        assert!(interaction.apply_fallback(T0 + 1_800_000));
        let reject = json!({"type": "reject", "message": "no human decision after 1800 s: rejected by policy request"});
        assert_eq!(
            json_of(&request, &interaction),
            json!({"approval_key": "mig-7", "status": "expired", "expires_at": "2026-09-21T14:43:20.000Z",
                   "decided_at": "2026-09-21T14:43:20.000Z", "reply": {"decisions": [reject]}, "policy": "request",
                   "settled_by": {"fallback": {"decision": "reject", "after_seconds": 1800}}})
        );
    }

    #[test]
    fn targets_refused_for_good_are_listed_with_the_platforms_reason() {
        let (request, interaction) = pushed(json!({}));
        let refused = vec![RefusedShow { chat: ChatKey::new("telegram", "-100777", None), error: "Bad Request: chat not found".into() }];
        let listed = not_shown(&crate::interaction::test_networks::networks(), refused);
        assert_eq!(
            serde_json::to_value(state(&request, &interaction, listed)).unwrap(),
            json!({"approval_key": "mig-7", "status": "pending", "expires_at": "2026-09-21T14:18:20.000Z",
                   "not_shown": [{"target": {"platform": "telegram", "chat_id": "-100777"}, "error": "Bad Request: chat not found"}]})
        );
    }

    #[test]
    fn a_rule_names_who_set_it() {
        let settled = settled_by(&PolicySettlement::Rule {
            rule_id: "r1".into(),
            scope: crate::interaction::RememberScope::Session,
            set_by: Actor::new("discord", "80", "Lan"),
            set_at_ms: T0,
        });
        assert_eq!(
            serde_json::to_value(settled).unwrap(),
            json!({"rule": {"id": "r1", "scope": "session", "set_by": {"platform": "discord", "id": "80", "name": "Lan"}, "set_at": "2026-09-21T14:13:20.000Z"}})
        );
    }
}
