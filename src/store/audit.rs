//! The `audit_log` table: one entry per settled interaction (who, what, how fast, and
//! what was asked versus what was sent), appended inside [`Store::settle`]'s
//! transaction and never changed afterwards.

use serde::de::DeserializeOwned;
use serde_json::Value;
use sqlx::any::AnyRow;
use sqlx::AnyExecutor;

use super::error::{Result, StoreError};
use super::json::{self, skip_corrupt};
use super::row::column;
use super::Store;
use crate::interaction::{Actor, Decider, Interaction, Status, UserAction};
use crate::protocol::{Decision, Reply};

#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    /// When the interaction was settled (unix ms).
    pub at_ms: i64,
    pub session_id: String,
    pub approval_key: String,
    pub interaction_id: String,
    /// The person who decided; `None` when the backend or the bridge ended it.
    pub actor: Option<Actor>,
    /// `resolved`, `resolved_elsewhere`, `expired`, `expired_by_backend`, `cancelled`,
    /// or `refused` (set by the caller; no status maps to it).
    pub outcome: String,
    /// The reply as sent (or as received from elsewhere), as JSON.
    pub reply: Option<Value>,
    /// An array: each action's args as the backend asked.
    pub original_args: Value,
    /// An array with each action's edited args, `null` where not edited; `None` when
    /// nothing was edited.
    pub edited_args: Option<Value>,
    /// From creation to settling.
    pub latency_ms: i64,
    /// The agent (HTTP API token name) that pushed the request; `None` for chat turns.
    pub agent: Option<String>,
    /// `approval` or `question`; `None` when no request was involved (a refused
    /// message) or for entries written before kinds were kept.
    pub kind: Option<String>,
    /// The requested actions' names, in order; `None` for entries written before
    /// tool names were kept (the export then reads them from the interaction).
    pub tools: Option<Vec<String>>,
    /// Why it was cancelled or refused.
    pub reason: Option<String>,
}

impl AuditEntry {
    /// The entry for a settled interaction. Its time is the settle time from the
    /// status; `now_ms` stands in only if the interaction is (wrongly) still pending.
    pub fn for_settled(i: &Interaction, now_ms: i64) -> AuditEntry {
        let at_ms = settled_at(&i.status).unwrap_or(now_ms);
        let (kind, tools) = kind_and_tools(i);
        AuditEntry {
            at_ms,
            session_id: i.session_id.clone(),
            approval_key: i.approval_key().to_owned(),
            interaction_id: i.id.clone(),
            actor: match &i.status {
                Status::Resolved { by: Decider::Person(actor), .. } => Some(actor.clone()),
                _ => None,
            },
            outcome: outcome(&i.status).to_owned(),
            reply: i.reply.as_ref().and_then(reply_json),
            original_args: Value::Array(i.request.actions().iter().map(|a| a.args.clone()).collect()),
            edited_args: i.reply.as_ref().and_then(edited_args),
            latency_ms: at_ms.saturating_sub(i.created_at_ms),
            agent: i.origin.agent().map(str::to_owned),
            kind: Some(kind.to_owned()),
            tools: Some(tools),
            reason: match &i.status {
                Status::Cancelled { reason, .. } => Some(reason.clone()),
                _ => None,
            },
        }
    }
}

impl AuditEntry {
    /// The entry for a refused attempt by someone who may not answer (outcome
    /// `refused`): who tried what, and when. `reply` holds the attempted action and the
    /// reason instead of a reply.
    pub fn for_refused(i: &Interaction, actor: &Actor, attempted: &UserAction, why: &str, now_ms: i64) -> AuditEntry {
        let (kind, tools) = kind_and_tools(i);
        AuditEntry {
            at_ms: now_ms,
            session_id: i.session_id.clone(),
            approval_key: i.approval_key().to_owned(),
            interaction_id: i.id.clone(),
            actor: Some(actor.clone()),
            outcome: "refused".to_owned(),
            reply: Some(serde_json::json!({ "attempted": attempted, "reason": why })),
            original_args: Value::Array(i.request.actions().iter().map(|a| a.args.clone()).collect()),
            edited_args: None,
            latency_ms: now_ms.saturating_sub(i.created_at_ms),
            agent: i.origin.agent().map(str::to_owned),
            kind: Some(kind.to_owned()),
            tools: Some(tools),
            reason: Some(why.to_owned()),
        }
    }
}

impl AuditEntry {
    /// The entry for someone not allowed to talk to the agent (outcome `refused`, no
    /// request): who, where (`chat`), what they attempted (`message`, `command`,
    /// `pair`) and a prefix of what they wrote. `session_id` is the chat's session
    /// when it has one.
    pub fn for_refused_talk(actor: &Actor, chat: &super::ChatKey, attempted: &str, text: &str, session_id: Option<&str>, now_ms: i64) -> AuditEntry {
        /// Enough to see what was tried, without keeping whole pasted documents.
        const MAX_TEXT_CHARS: usize = 200;
        const REASON: &str = "not allowed to talk to the agent";
        let text: String = text.chars().take(MAX_TEXT_CHARS).collect();
        AuditEntry {
            at_ms: now_ms,
            session_id: session_id.unwrap_or_default().to_owned(),
            approval_key: String::new(),
            interaction_id: String::new(),
            actor: Some(actor.clone()),
            outcome: "refused".to_owned(),
            reply: Some(serde_json::json!({ "attempted": attempted, "text": text, "chat": chat, "reason": REASON })),
            original_args: Value::Array(Vec::new()),
            edited_args: None,
            latency_ms: 0,
            agent: None,
            kind: None,
            tools: Some(Vec::new()),
            reason: Some(REASON.to_owned()),
        }
    }
}

impl Store {
    /// Refused attempts (to answer or to talk) since `since_ms`, oldest first.
    pub async fn refused_attempts(&self, since_ms: i64) -> Result<Vec<AuditEntry>> {
        let rows = sqlx::query(
            "SELECT id, at_ms, session_id, approval_key, interaction_id, actor, outcome, reply,
                    original_args, edited_args, latency_ms, agent, kind, tools, reason
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
        insert_audit(&self.pool, entry).await
    }
}

/// What an entry records about its request: the kind (`question` or `approval`) and
/// the requested actions' names, in order.
pub fn kind_and_tools(i: &Interaction) -> (&'static str, Vec<String>) {
    let kind = if i.request.is_question() { "question" } else { "approval" };
    (kind, i.request.actions().iter().map(|a| a.name.clone()).collect())
}

fn settled_at(status: &Status) -> Option<i64> {
    match status {
        Status::Pending => None,
        Status::Resolved { at_ms, .. } | Status::Expired { at_ms, .. } | Status::Cancelled { at_ms, .. } => Some(*at_ms),
    }
}

fn outcome(status: &Status) -> &'static str {
    match status {
        Status::Pending => "pending",
        Status::Resolved { by: Decider::Person(_), .. } => "resolved",
        Status::Resolved { by: Decider::Elsewhere, .. } => "resolved_elsewhere",
        Status::Expired { by_backend: false, .. } => "expired",
        Status::Expired { by_backend: true, .. } => "expired_by_backend",
        Status::Cancelled { .. } => "cancelled",
    }
}

fn reply_json(reply: &Reply) -> Option<Value> {
    // Cannot fail for these types (string keys only); logged rather than panicking.
    serde_json::to_value(reply)
        .inspect_err(|error| tracing::error!(%error, "cannot encode a reply for the audit log"))
        .ok()
}

/// Per action, the args of its `edit` decision; `None` if no action was edited.
fn edited_args(reply: &Reply) -> Option<Value> {
    let Reply::Decisions { decisions, .. } = reply else { return None };
    let edited: Vec<Value> = decisions
        .iter()
        .map(|d| match d {
            Decision::Edit { edited_action } => Value::Object(edited_action.args.clone()),
            _ => Value::Null,
        })
        .collect();
    edited.iter().any(|v| !v.is_null()).then_some(Value::Array(edited))
}

impl Store {
    /// The audit entries of one request, oldest first.
    pub async fn audit_log(&self, approval_key: &str) -> Result<Vec<AuditEntry>> {
        let rows = sqlx::query(
            "SELECT id, at_ms, session_id, approval_key, interaction_id, actor, outcome, reply,
                    original_args, edited_args, latency_ms, agent, kind, tools, reason
             FROM audit_log WHERE approval_key = $1 ORDER BY id",
        )
        .bind(approval_key)
        .fetch_all(&self.pool)
        .await
        .map_err(StoreError::query("read audit log"))?;
        Ok(rows.iter().map(decode_row).filter_map(skip_corrupt).collect())
    }
}

/// Appends an entry on any executor, so [`Store::settle`] can do it inside its
/// transaction.
pub(super) async fn insert_audit<'e>(executor: impl AnyExecutor<'e>, e: &AuditEntry) -> Result<()> {
    sqlx::query(
        "INSERT INTO audit_log (at_ms, session_id, approval_key, interaction_id, actor, outcome, reply,
                                original_args, edited_args, latency_ms, agent, kind, tools, reason)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
    )
    .bind(e.at_ms)
    .bind(e.session_id.as_str())
    .bind(e.approval_key.as_str())
    .bind(e.interaction_id.as_str())
    .bind(json::encode_opt(e.actor.as_ref(), "audit actor")?)
    .bind(e.outcome.as_str())
    .bind(json::encode_opt(e.reply.as_ref(), "audit reply")?)
    .bind(json::encode(&e.original_args, "audit args")?)
    .bind(json::encode_opt(e.edited_args.as_ref(), "audit edited args")?)
    .bind(e.latency_ms)
    .bind(e.agent.as_deref())
    .bind(e.kind.as_deref())
    .bind(json::encode_opt(e.tools.as_ref(), "audit tools")?)
    .bind(e.reason.as_deref())
    .execute(executor)
    .await
    .map_err(StoreError::query("append audit entry"))?;
    Ok(())
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
    })
}

/// A nullable JSON column of the audit row `id`.
fn json_opt<T: DeserializeOwned>(row: &AnyRow, name: &'static str, id: i64) -> Result<Option<T>> {
    json::decode_opt(column::<Option<&str>>(row, name)?, name, id)
}
