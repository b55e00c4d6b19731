//! `hitl-bridge rules [list]` and `hitl-bridge rules revoke ID [--by NAME]`: the
//! remembered approvals ("approve for this session", "always approve") that still
//! answer requests without asking, and taking one back.
//!
//! A revoke goes through the store's conditional update, so beside running replicas
//! (or a `/rules revoke` in a chat at the same moment) a rule is revoked and audited
//! once; the bridges read the rules afresh for every request, so a revoked rule
//! answers nothing from then on. Formatting is pure and tested here.

use super::{AdminError, cancel, rfc3339_s};
use crate::interaction::RememberedRule;
use crate::store::Store;
use crate::texts::cut;

/// The columns of `rules list`.
pub const HEADER: [&str; 9] = ["ID", "SCOPE", "TOOL", "ARGS", "SESSION", "BACKEND", "SET_BY", "SET_AT", "POLICY"];

/// What `rules list` prints when no rule is active.
pub const EMPTY: &str = "no active rules";

/// Args longer than this (as compact JSON) are cut, ending in `…`: the table is for
/// finding a rule, the audit log has the whole args.
pub const MAX_ARGS_CHARS: usize = 40;

/// The cells of one rule, in [`HEADER`] order: args as compact JSON (`(any)` when the
/// rule matches any args), `-` for the session of an always rule, the setter as
/// `Name (platform:user_id)`, the time in RFC 3339 UTC.
pub fn cells(rule: &RememberedRule) -> [String; 9] {
    let args = match &rule.args {
        None => "(any)".to_owned(),
        Some(args) => cut(&args.to_string(), MAX_ARGS_CHARS),
    };
    [
        rule.id.clone(),
        rule.scope.as_str().to_owned(),
        rule.tool.clone(),
        args,
        rule.session_id.clone().unwrap_or_else(|| "-".to_owned()),
        rule.backend.clone(),
        setter(rule),
        rfc3339_s(rule.set_at_ms),
        rule.policy.clone(),
    ]
}

fn setter(rule: &RememberedRule) -> String {
    format!("{} ({}:{})", rule.set_by.name, rule.set_by.platform, rule.set_by.user_id)
}

/// The table of `rules`, or [`EMPTY`].
pub fn table(rules: &[RememberedRule]) -> String {
    if rules.is_empty() {
        return EMPTY.to_owned();
    }
    super::aligned(&HEADER, &rules.iter().map(cells).collect::<Vec<_>>())
}

/// `rules list`: every active rule, oldest first.
pub async fn list(store: &Store) -> Result<String, AdminError> {
    Ok(table(&store.active_rules().await?))
}

/// `rules revoke ID`: revokes the rule on behalf of the operator `by` at `now_ms` and
/// says which it was; an unknown or already revoked id is an error.
pub async fn revoke(store: &Store, id: &str, by: &str, now_ms: i64) -> Result<String, AdminError> {
    let by = cancel::operator(by);
    match store.revoke_rule(id, &by.name, now_ms).await? {
        Some(rule) => Ok(format!("revoked rule {}", describe(&rule))),
        None => Err(AdminError::UnknownRule { id: id.to_owned() }),
    }
}

/// `id-S_2 (always: execute_trade on stream, set by Thảo (telegram:42) at …)`.
pub fn describe(rule: &RememberedRule) -> String {
    let session = rule.session_id.as_deref().map(|s| format!(" in session {s}")).unwrap_or_default();
    format!("{} ({}: {}{session} on {}, set by {} at {})", rule.id, rule.scope.as_str(), rule.tool, rule.backend, setter(rule), rfc3339_s(rule.set_at_ms))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::interaction::Actor;
    use crate::interaction::policy::RememberScope;

    /// 2025-06-01T08:30:00Z.
    const T0: i64 = 1_748_766_600_000;

    fn rule(id: &str, scope: RememberScope, args: Option<serde_json::Value>, session: Option<&str>) -> RememberedRule {
        RememberedRule {
            id: id.into(),
            scope,
            tool: "execute_trade".into(),
            args,
            session_id: session.map(str::to_owned),
            backend: "stream".into(),
            set_by: Actor::new("telegram", "42", "Thảo"),
            set_at_ms: T0,
            policy: "trades".into(),
        }
    }

    #[test]
    fn the_table_aligns_cuts_long_args_and_says_when_empty() {
        let long = json!({"symbol": "VNM", "quantity": 100, "note": "rebalance the whole portfolio"});
        let rules = [rule("a1b2c3d4e5f6", RememberScope::Always, None, None), rule("0f9e8d7c6b5a", RememberScope::Session, Some(long), Some("S"))];
        assert_eq!(
            table(&rules),
            "ID            SCOPE    TOOL           ARGS                                      SESSION  BACKEND  SET_BY              SET_AT                POLICY\n\
             a1b2c3d4e5f6  always   execute_trade  (any)                                     -        stream   Thảo (telegram:42)  2025-06-01T08:30:00Z  trades\n\
             0f9e8d7c6b5a  session  execute_trade  {\"symbol\":\"VNM\",\"quantity\":100,\"note\":\"…  S        stream   Thảo (telegram:42)  2025-06-01T08:30:00Z  trades"
        );
        assert_eq!(table(&[]), "no active rules");
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abcd", 4), "abcd");
    }

    #[test]
    fn a_revoked_rule_is_described() {
        assert_eq!(
            describe(&rule("id-S_2", RememberScope::Session, None, Some("S"))),
            "id-S_2 (session: execute_trade in session S on stream, set by Thảo (telegram:42) at 2025-06-01T08:30:00Z)"
        );
    }
}
