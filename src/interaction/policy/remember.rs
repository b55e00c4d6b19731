//! Remembered approvals: "Approve for this session" and "Always approve".
//!
//! A person who approves with one of these, where the request's policy offers it, sets
//! a [`RememberedRule`]; later requests it matches are approved at once, without asking,
//! and shown as "approved by rule set by X at T". The engine stores the rules and lists
//! and revokes them (`/rules`, `hitl-bridge rules`); this module decides what a rule
//! matches. The rules, chosen to stay safe by default:
//! - only an approval request with exactly one action is remembered or answered by a
//!   rule (a set of several calls is judged as a whole, every time);
//! - a rule names one tool exactly (no glob) and, with `remember_args = "same"` (the
//!   default), the exact args: "the next identical call"; with `"any"`, any args;
//! - a session rule holds in its session only; an "always" rule in every session of the
//!   same backend (tool names are each backend's own namespace);
//! - a rule answers only while the policy that now applies to the new request still
//!   offers its scope: removing `remember` from the config disables old rules at once;
//! - the action must allow `approve` (a review config may forbid it).
//!
//! Kimi CLI remembers "approve for session" itself. When the policy's session scope
//! means the same as Kimi's (`remember_args = "any"`: the tool, whatever its args) and
//! the action allows `approve_for_session`, the bridge sends Kimi's native decision and
//! stores no rule; otherwise it sends `approve` and remembers the rule itself.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Policy;
use crate::interaction::access::Actor;
use crate::interaction::request::{Request, RequestKind};
use crate::protocol::DecisionType;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RememberScope {
    /// The rest of this session.
    Session,
    /// Every session of this backend, until revoked.
    Always,
}

impl RememberScope {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Session => "session",
            Self::Always => "always",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "session" => Some(Self::Session),
            "always" => Some(Self::Always),
            _ => None,
        }
    }
}

/// What a remembered rule compares besides the tool name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RememberArgs {
    /// The exact same args (JSON equality).
    #[default]
    Same,
    /// Any args.
    Any,
}

/// How an approval was remembered, kept on the interaction it resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RememberChoice {
    pub scope: RememberScope,
    /// The backend remembers it itself (Kimi's `approve_for_session` was sent): the
    /// bridge stores no rule.
    pub native: bool,
}

/// A stored "approve for session" / "always approve".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RememberedRule {
    /// The id of the interaction whose approval set it (unique; what `/rules` revokes).
    pub id: String,
    pub scope: RememberScope,
    /// The exact tool name.
    pub tool: String,
    /// The exact args, or `None` for any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// The session a `session` rule holds in; `None` for `always`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The backend kind (`stream`, `kimi`, …, `http` for pushed requests).
    pub backend: String,
    pub set_by: Actor,
    pub set_at_ms: i64,
    /// The name of the policy that offered it, for listing.
    pub policy: String,
}

impl RememberedRule {
    /// Whether this rule approves `request`, arriving in `session_id` on `backend`
    /// under `policy` (the policy that applies to the new request). See the module doc.
    pub fn answers(&self, request: &Request, session_id: &str, backend: &str, policy: Option<&Policy>) -> bool {
        let RequestKind::Approval { actions } = &request.kind else { return false };
        let [action] = actions.as_slice() else { return false };
        policy.is_some_and(|p| p.remember.contains(&self.scope))
            && self.backend == backend
            && action.name == self.tool
            && self.args.as_ref().is_none_or(|args| *args == action.args)
            && action.allowed.contains(&DecisionType::Approve)
            && match self.scope {
                RememberScope::Session => self.session_id.as_deref() == Some(session_id),
                RememberScope::Always => true,
            }
    }
}

/// The first rule (in the order given: pass the oldest first) that approves `request`.
pub fn rule_answers<'a>(
    rules: &'a [RememberedRule],
    request: &Request,
    session_id: &str,
    backend: &str,
    policy: Option<&Policy>,
) -> Option<&'a RememberedRule> {
    rules.iter().find(|r| r.answers(request, session_id, backend, policy))
}
