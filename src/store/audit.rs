//! The `audit_log` table: entries ([`AuditEntry`]) appended inside
//! [`Store::settle`]'s transaction (or on their own, for refusals and escalations) and
//! never changed afterwards; read back per request and for the refused.

use serde::de::DeserializeOwned;
use sqlx::any::AnyArguments;
use sqlx::any::AnyRow;
use sqlx::query::Query;
use sqlx::{Any, AnyExecutor};

use super::Store;
use super::audit_entry::AuditEntry;
use super::error::{Result, StoreError};
use super::json::{self, skip_corrupt};
use super::row::column;

impl Store {
    /// Refused attempts (to answer or to talk) since `since_ms`, oldest first.
    pub async fn refused_attempts(&self, since_ms: i64) -> Result<Vec<AuditEntry>> {
        let rows = sqlx::query(
            "SELECT id, at_ms, session_id, approval_key, interaction_id, actor, outcome, reply,
                    original_args, edited_args, latency_ms, agent, kind, tools, reason, attempts
             FROM audit_log WHERE outcome = 'refused' AND at_ms >= $1 ORDER BY id",
        )
        .bind(since_ms)
        .fetch_all(&self.pool)
        .await
        .map_err(StoreError::query("read refused attempts"))?;
        Ok(rows.iter().map(decode_row).filter_map(skip_corrupt).collect())
    }

    /// Appends one entry on its own (settling writes its entry inside `settle`).
    pub async fn append_audit(&self, entry: &AuditEntry) -> Result<()> {
        insert_audit(&self.pool, entry).await.map(drop)
    }
}

impl Store {
    /// The audit entries of one request, oldest first.
    pub async fn audit_log(&self, approval_key: &str) -> Result<Vec<AuditEntry>> {
        let rows = sqlx::query(
            "SELECT id, at_ms, session_id, approval_key, interaction_id, actor, outcome, reply,
                    original_args, edited_args, latency_ms, agent, kind, tools, reason, attempts
             FROM audit_log WHERE approval_key = $1 ORDER BY id",
        )
        .bind(approval_key)
        .fetch_all(&self.pool)
        .await
        .map_err(StoreError::query("read audit log"))?;
        Ok(rows.iter().map(decode_row).filter_map(skip_corrupt).collect())
    }
}

/// Appends an entry on any executor, so a write can do it inside its
/// transaction; returns the entry's row id.
pub(super) async fn insert_audit<'e>(executor: impl AnyExecutor<'e>, e: &AuditEntry) -> Result<i64> {
    let insert = sqlx::query(
        "INSERT INTO audit_log (at_ms, session_id, approval_key, interaction_id, actor, outcome, reply,
                                original_args, edited_args, latency_ms, agent, kind, tools, reason, attempts)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING id",
    );
    let row = bind_entry(insert, e)?.fetch_one(executor).await.map_err(StoreError::query("append audit entry"))?;
    column(&row, "id")
}

/// Binds an entry's 15 values in the order of the audit table's columns as both
/// inserts name them (`at_ms` … `attempts`).
pub(super) fn bind_entry<'q>(query: Query<'q, Any, AnyArguments>, e: &AuditEntry) -> Result<Query<'q, Any, AnyArguments>> {
    Ok(query
        .bind(e.at_ms)
        .bind(e.session_id.clone())
        .bind(e.approval_key.clone())
        .bind(e.interaction_id.clone())
        .bind(json::encode_opt(e.actor.as_ref(), "audit actor")?)
        .bind(e.outcome.clone())
        .bind(json::encode_opt(e.reply.as_ref(), "audit reply")?)
        .bind(json::encode(&e.original_args, "audit args")?)
        .bind(json::encode_opt(e.edited_args.as_ref(), "audit edited args")?)
        .bind(e.latency_ms)
        .bind(e.agent.clone())
        .bind(e.kind.clone())
        .bind(json::encode_opt(e.tools.as_ref(), "audit tools")?)
        .bind(e.reason.clone())
        .bind(e.attempts))
}

pub(super) fn decode_row(row: &AnyRow) -> Result<AuditEntry> {
    let id: i64 = column(row, "id")?;
    Ok(AuditEntry {
        at_ms: column(row, "at_ms")?,
        session_id: column(row, "session_id")?,
        approval_key: column(row, "approval_key")?,
        interaction_id: column(row, "interaction_id")?,
        actor: json_opt(row, "actor", id)?,
        outcome: column(row, "outcome")?,
        reply: json_opt(row, "reply", id)?,
        original_args: json::decode(column(row, "original_args")?, "audit args", id)?,
        edited_args: json_opt(row, "edited_args", id)?,
        latency_ms: column(row, "latency_ms")?,
        agent: column(row, "agent")?,
        kind: column(row, "kind")?,
        tools: json_opt(row, "tools", id)?,
        reason: column(row, "reason")?,
        attempts: column(row, "attempts")?,
    })
}

/// A nullable JSON column of the audit row `id`.
fn json_opt<T: DeserializeOwned>(row: &AnyRow, name: &'static str, id: i64) -> Result<Option<T>> {
    json::decode_opt(column::<Option<&str>>(row, name)?, name, id)
}
