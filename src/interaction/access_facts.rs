//! What the rule of who may act needs of a request, apart from its state: where it
//! came from, who started it, whom its decision policy names, whether it is an
//! approval, and who has cast a quorum vote on it. [`Interaction::may_act`] decides
//! from exactly these, and the store keeps them as a small column beside the body, so a
//! list of every pending request (the web inbox) applies the very same rule without
//! decoding thousands of bodies.

use serde::{Deserialize, Serialize};

use super::access::{AccessPolicy, Actor, Origin};
use super::refusal::Refusal;
use super::state::{Draft, Interaction};

/// A request's facts for the access rule, owned: what the store keeps per request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessFacts {
    #[serde(default)]
    pub origin: Origin,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requester: Option<Actor>,
    /// `(platform, user id)` pairs its decision policy names (they replace every other
    /// rule of who decides).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy_approvers: Vec<(String, String)>,
    /// Groups its decision policy names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy_roles: Vec<String>,
    /// A tool call, not questions: four eyes covers tool calls only.
    pub approval: bool,
    /// `(platform, user id)` of everyone who has cast a quorum vote on it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub voters: Vec<(String, String)>,
}

/// Who may decide a request, borrowed from an interaction or from its facts: the one
/// place the rule is written.
pub struct Deciders<'a> {
    pub origin: &'a Origin,
    pub requester: Option<&'a Actor>,
    pub policy_approvers: &'a [(String, String)],
    pub policy_roles: &'a [String],
    pub approval: bool,
}

impl Deciders<'_> {
    /// Whether `actor` may decide, whatever the request's state: not allowed, or
    /// allowed but refused by four eyes.
    pub fn check(&self, actor: &Actor, configured: &AccessPolicy) -> Result<(), Refusal> {
        // A decision policy naming approvers replaces every other rule of who decides.
        let named = named_access(self.policy_approvers, self.policy_roles, configured);
        let allowed = match &named {
            Some(named) => named.is_approver(actor),
            None => self.origin.allows(actor, self.requester, configured),
        };
        if !allowed {
            return Err(Refusal::NotAllowed);
        }
        // Four eyes covers tool calls only: the requester still answers questions.
        if matches!(self.origin, Origin::Chat) && self.approval && named.as_ref().unwrap_or(configured).refuses_self_approval(actor, self.requester) {
            return Err(Refusal::SelfApproval);
        }
        Ok(())
    }
}

/// The approvers a decision policy names, with the configuration's four-eyes setting;
/// `None` when it names none (the usual rules apply).
pub fn named_access(users: &[(String, String)], roles: &[String], configured: &AccessPolicy) -> Option<AccessPolicy> {
    (!users.is_empty() || !roles.is_empty()).then(|| AccessPolicy {
        approver_users: users.to_vec(),
        approver_roles: roles.to_vec(),
        four_eyes: configured.four_eyes,
    })
}

/// Whether a pending request with deadline `deadline_ms` may still be answered at
/// `now_ms`: the part of [`AccessFacts::may_act_pending`] that is not about who.
pub fn still_open(deadline_ms: i64, now_ms: i64) -> Result<(), Refusal> {
    if now_ms >= deadline_ms { Err(Refusal::Expired) } else { Ok(()) }
}

impl AccessFacts {
    pub fn deciders(&self) -> Deciders<'_> {
        Deciders {
            origin: &self.origin,
            requester: self.requester.as_ref(),
            policy_approvers: &self.policy_approvers,
            policy_roles: &self.policy_roles,
            approval: self.approval,
        }
    }

    /// [`Interaction::may_act`] for a request known to be pending, with deadline
    /// `deadline_ms`.
    pub fn may_act_pending(&self, actor: &Actor, configured: &AccessPolicy, deadline_ms: i64, now_ms: i64) -> Result<(), Refusal> {
        self.deciders().check(actor, configured)?;
        still_open(deadline_ms, now_ms)
    }

    /// Whether `actor` has cast a quorum vote on it already.
    pub fn has_voted(&self, actor: &Actor) -> bool {
        self.voters.iter().any(|(platform, user_id)| *platform == actor.platform && *user_id == actor.user_id)
    }

    /// The agent that pushed it, or `chat` for a chat turn's.
    pub fn agent(&self) -> &str {
        self.origin.agent().unwrap_or("chat")
    }
}

impl Interaction {
    /// Who may decide it, borrowed.
    pub fn deciders(&self) -> Deciders<'_> {
        let (policy_approvers, policy_roles) = self.policy.as_ref().map_or((&[][..], &[][..]), |p| (&p.approvers[..], &p.approver_roles[..]));
        Deciders { origin: &self.origin, requester: self.requester.as_ref(), policy_approvers, policy_roles, approval: !self.request.is_question() }
    }

    /// Its facts for the access rule, as the store keeps them.
    pub fn access_facts(&self) -> AccessFacts {
        let voters = match &self.draft {
            Draft::Decisions(d) => d.votes.iter().map(|v| (v.voter.platform.clone(), v.voter.user_id.clone())).collect(),
            Draft::Answers { .. } => Vec::new(),
        };
        let deciders = self.deciders();
        AccessFacts {
            origin: self.origin.clone(),
            requester: self.requester.clone(),
            policy_approvers: deciders.policy_approvers.to_vec(),
            policy_roles: deciders.policy_roles.to_vec(),
            approval: deciders.approval,
            voters,
        }
    }
}
