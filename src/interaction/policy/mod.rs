//! Decision policies: who must approve a tool call, how many of them, whether an
//! approval may be remembered, and what happens when nobody answers.
//!
//! A policy comes from the config (`[[policies]]`, matched against each new request)
//! or from the request itself (the HTTP API's `policy` object), as a [`PolicySpec`]
//! validated into a [`Policy`]. The engine picks one with [`select`] when a request
//! arrives and stores it *in the interaction* ([`crate::interaction::Interaction::with_policy`]),
//! so a config change never alters a request already in flight and a restart resumes
//! it as it was. Everything here is pure: no IO, time passed in.
//!
//! Policies apply to tool-call approvals only; questions are answered as before.
//!
//! Which policy applies: the **first** config entry (in file order) whose filters all
//! match, like a firewall: put narrow entries first. An entry matches when any of the
//! request's actions matches one of its `tools` globs, and each filter it sets
//! (`backends`, `sessions`, `targets`) matches too. When no config entry matches, the
//! request's own policy applies (an agent cannot weaken what the operator configured);
//! else none, and the request behaves exactly as without this module.

pub mod escalation;
pub mod glob;
pub mod quorum;
pub mod remember;
pub mod spec;

use serde::{Deserialize, Serialize};

use super::request::Request;
pub use escalation::{DueStep, EscalationStep, Fallback, FallbackDecision, Mention, StepAction};
pub use quorum::{QuorumProgress, Tally, Vote};
pub use remember::{RememberArgs, RememberChoice, RememberScope, RememberedRule, rule_answers};
pub use spec::{Known, PolicyError, PolicySpec, StepSpec};

/// A validated policy, as stored with an interaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// For the audit log and `/rules`: the entry's `name`, else `policies[i]`, or
    /// `request` for a request's own policy.
    pub name: String,
    /// `(platform, user id)` pairs. With these or `approver_roles` set, only they
    /// decide (not the configured approvers, not the requester unless listed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvers: Vec<(String, String)>,
    /// Groups whose members decide, as their platforms write group ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approver_roles: Vec<String>,
    /// Distinct people who must vote the same decisions; 1 is the usual first-wins.
    pub quorum: u32,
    /// Which of "approve for this session" / "always approve" may be offered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remember: Vec<RememberScope>,
    #[serde(default)]
    pub remember_args: RememberArgs,
    /// Reminders and extra chats, in time order (never a fallback).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub escalation: Vec<EscalationStep>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<Fallback>,
}

impl Policy {
    pub fn offers(&self, scope: RememberScope) -> bool {
        self.remember.contains(&scope)
    }
}

/// Which requests a config entry applies to. Empty filters match everything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Matcher {
    /// Globs on action names; at least one (validated).
    pub tools: Vec<String>,
    /// Backend kinds: `stream`, `claude_code`, `agno`, `kimi`, `langgraph`, or `http`
    /// for requests pushed over the HTTP API.
    pub backends: Vec<String>,
    /// Globs on the session id.
    pub sessions: Vec<String>,
    /// Globs on the chats the request is shown in, `platform:chat[/thread]`.
    pub targets: Vec<String>,
}

/// What a new request is matched on.
#[derive(Debug, Clone, Copy)]
pub struct RequestFacts<'a> {
    pub request: &'a Request,
    /// The backend kind, or `http` for a pushed request.
    pub backend: &'a str,
    pub session_id: &'a str,
    /// The chats it is shown in, as `platform:chat[/thread]`.
    pub targets: &'a [String],
}

impl Matcher {
    pub fn matches(&self, facts: &RequestFacts<'_>) -> bool {
        let any_glob = |patterns: &[String], text: &str| patterns.iter().any(|p| glob::matches(p, text));
        facts.request.actions().iter().any(|a| any_glob(&self.tools, &a.name))
            && (self.backends.is_empty() || self.backends.iter().any(|b| b == facts.backend))
            && (self.sessions.is_empty() || any_glob(&self.sessions, facts.session_id))
            && (self.targets.is_empty() || facts.targets.iter().any(|t| any_glob(&self.targets, t)))
    }
}

/// A config entry: where it applies and what it says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyRule {
    pub matcher: Matcher,
    pub policy: Policy,
}

/// The policy for a new request: see the module doc. `None` for questions.
pub fn select<'a>(rules: &'a [PolicyRule], facts: &RequestFacts<'_>, requested: Option<&'a Policy>) -> Option<&'a Policy> {
    if facts.request.is_question() {
        return None;
    }
    rules.iter().find(|r| r.matcher.matches(facts)).map(|r| &r.policy).or(requested)
}

/// Why the policy, not a person's decision, settled an interaction (kept on it, for
/// the message and the audit log).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum PolicySettlement {
    /// Approved at once by a remembered rule: "approved by rule set by X at T".
    Rule { rule_id: String, scope: RememberScope, set_by: super::access::Actor, set_at_ms: i64 },
    /// Nobody decided in time: the policy's fallback ended it.
    Fallback { decision: FallbackDecision, after_secs: u64 },
}
