//! The `remembered_rules` table: the "approve for this session" / "always approve"
//! rules people set ([`RememberedRule`]), which ones are active, and their revocation
//! (who and when, with an audit entry, in one transaction).
//!
//! Which rule answers a request is the core's decision
//! ([`crate::interaction::policy::rule_answers`]); the store only hands it the
//! candidates, oldest first. A revoked rule stays in the table (it is what the audit
//! entries name) and is never listed as active again. A rule set by a decision is
//! stored in that decision's settle ([`Store::settle_decision`]).

use futures_util::future::BoxFuture;
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, AnyExecutor};

use super::Store;
use super::audit_entry::AuditEntry;
use super::deferred::Deferred;
use super::error::{Result, StoreError};
use super::group_commit::Write;
use super::json::{self, skip_corrupt};
use super::row::column;
use crate::interaction::{Actor, RememberScope, RememberedRule};

/// The columns a rule is read from, in every query.
const COLUMNS: &str = "id, scope, tool, args, session_id, backend, set_by, set_at_ms, policy";

impl Store {
    /// Stores a rule; the same id again changes nothing.
    pub async fn save_rule(&self, rule: &RememberedRule) -> Result<()> {
        self.write(SaveRule(rule.clone())).await?;
        Ok(())
    }

    /// Active rules that may answer a request in `session_id` on `backend`: that
    /// session's session rules and the backend's always rules, oldest first.
    pub async fn rules_for(&self, backend: &str, session_id: &str) -> Result<Vec<RememberedRule>> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM remembered_rules
             WHERE revoked_at_ms IS NULL AND backend = $1
               AND (scope = $2 OR (scope = $3 AND session_id = $4))
             ORDER BY set_at_ms, id"
        )))
        .bind(backend)
        .bind(RememberScope::Always.as_str())
        .bind(RememberScope::Session.as_str())
        .bind(session_id)
        .fetch_all(&self.pool)
        .await
        .map_err(StoreError::query("list the rules of a session"))?;
        Ok(rows.iter().map(decode_row).filter_map(skip_corrupt).collect())
    }

    /// Every active (not revoked) rule, oldest first.
    pub async fn active_rules(&self) -> Result<Vec<RememberedRule>> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM remembered_rules WHERE revoked_at_ms IS NULL ORDER BY set_at_ms, id")))
            .fetch_all(&self.pool)
            .await
            .map_err(StoreError::query("list active rules"))?;
        Ok(rows.iter().map(decode_row).filter_map(skip_corrupt).collect())
    }

    /// One active rule by id; `None` if unknown or revoked.
    pub async fn active_rule(&self, id: &str) -> Result<Option<RememberedRule>> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT {COLUMNS} FROM remembered_rules WHERE id = $1 AND revoked_at_ms IS NULL")))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(StoreError::query("load a rule"))?;
        row.as_ref().map(decode_row).transpose()
    }

    /// Revokes rule `id` (recording who and when, and an audit entry); returns the rule
    /// if it was active, None if unknown or already revoked. `by` names an operator
    /// (platform `cli`); a person in a chat revokes with [`Store::revoke_rule_as`].
    pub async fn revoke_rule(&self, id: &str, by: &str, now_ms: i64) -> Result<Option<RememberedRule>> {
        self.revoke_rule_as(id, &Actor::new("cli", by, by), now_ms).await
    }

    /// [`Store::revoke_rule`] by `by`, a person on a platform (`/rules revoke`).
    pub async fn revoke_rule_as(&self, id: &str, by: &Actor, now_ms: i64) -> Result<Option<RememberedRule>> {
        // A rule never changes but for its revocation, so what is read here is what is
        // revoked below, unless someone revokes it first (then the write does nothing).
        let Some(rule) = self.active_rule(id).await? else { return Ok(None) };
        let revoke =
            RevokeRule { id: id.to_owned(), by: json::encode(by, "rule revoker")?, at_ms: now_ms, audit: AuditEntry::for_rule_revoked(&rule, by, now_ms) };
        Ok(self.write(revoke).await?.then_some(rule))
    }
}

/// A new rule: nothing when its id is taken.
struct SaveRule(RememberedRule);

impl Write for SaveRule {
    fn apply<'a>(&'a self, conn: &'a mut AnyConnection, _deferred: &'a mut Deferred) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move { insert_rule(conn, &self.0).await })
    }
}

/// Marks a rule revoked and audits it: nothing when it is no longer active.
struct RevokeRule {
    id: String,
    /// The revoker, as JSON.
    by: String,
    at_ms: i64,
    audit: AuditEntry,
}

impl Write for RevokeRule {
    fn apply<'a>(&'a self, conn: &'a mut AnyConnection, deferred: &'a mut Deferred) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            let done = sqlx::query("UPDATE remembered_rules SET revoked_by = $1, revoked_at_ms = $2 WHERE id = $3 AND revoked_at_ms IS NULL")
                .bind(self.by.as_str())
                .bind(self.at_ms)
                .bind(self.id.as_str())
                .execute(&mut *conn)
                .await
                .map_err(StoreError::query("revoke a rule"))?;
            if done.rows_affected() == 0 {
                return Ok(false);
            }
            deferred.audit(&self.audit);
            Ok(true)
        })
    }
}

/// Inserts on any executor, so a settle can store its rule in its transaction. False
/// when a rule with this id exists (a retried settle, a replayed save).
pub(super) async fn insert_rule<'e>(executor: impl AnyExecutor<'e>, rule: &RememberedRule) -> Result<bool> {
    let done = sqlx::query(
        "INSERT INTO remembered_rules (id, scope, tool, args, session_id, backend, set_by, set_at_ms, policy)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         ON CONFLICT (id) DO NOTHING",
    )
    .bind(rule.id.as_str())
    .bind(rule.scope.as_str())
    .bind(rule.tool.as_str())
    .bind(json::encode_opt(rule.args.as_ref(), "rule args")?)
    .bind(rule.session_id.as_deref())
    .bind(rule.backend.as_str())
    .bind(json::encode(&rule.set_by, "rule setter")?)
    .bind(rule.set_at_ms)
    .bind(rule.policy.as_str())
    .execute(executor)
    .await
    .map_err(StoreError::query("store a rule"))?;
    Ok(done.rows_affected() > 0)
}

fn decode_row(row: &AnyRow) -> Result<RememberedRule> {
    let id: String = column(row, "id")?;
    let scope: &str = column(row, "scope")?;
    let scope = match RememberScope::parse(scope) {
        Some(scope) => scope,
        // Reported like any unreadable row: the scope is JSON's string form.
        None => return Err(StoreError::Corrupt { what: "rule scope", id, source: serde::de::Error::custom(format!("unknown scope {scope:?}")) }),
    };
    Ok(RememberedRule {
        scope,
        tool: column(row, "tool")?,
        args: json::decode_opt(column::<Option<&str>>(row, "args")?, "rule args", &id)?,
        session_id: column(row, "session_id")?,
        backend: column(row, "backend")?,
        set_by: json::decode(column(row, "set_by")?, "rule setter", &id)?,
        set_at_ms: column(row, "set_at_ms")?,
        policy: column(row, "policy")?,
        id,
    })
}
