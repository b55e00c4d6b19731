//! The HTTP API's tables: `api_requests` (one row per pushed request: who pushed it,
//! the hash of its body for idempotency, where it is shown) and `callback_outbox`
//! (callbacks owed to agents, removed only once delivered).
//!
//! A pushed request and its interaction are written in one transaction, so a request
//! is either fully known or not at all.

use futures_util::future::BoxFuture;
use sqlx::AnyConnection;
use sqlx::any::AnyRow;

use super::Store;
use super::chats::ChatKey;
use super::deferred::Deferred;
use super::error::{Result, StoreError};
use super::group_commit::Write;
use super::interactions::insert_interaction;
use super::json;
use super::row::column;
use super::shows::{ShowClaim, insert_shows};
use crate::interaction::{Interaction, Status};

/// One request pushed over the HTTP API.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiRequest {
    pub approval_key: String,
    pub interaction_id: String,
    /// The internal session (`api:` + the client's `session_id`, else the key).
    pub session_id: String,
    /// The `session_id` the client sent, if any.
    pub client_session: Option<String>,
    /// The API token's name.
    pub agent: String,
    /// SHA-256 of the request body as sent, hex.
    pub body_hash: String,
    pub targets: Vec<ChatKey>,
    pub callback_url: Option<String>,
    pub created_at_ms: i64,
}

/// Where a page of pending requests ended: the next page starts after this row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageMark {
    pub created_at_ms: i64,
    pub approval_key: String,
}

/// A push: the request's row, its interaction, the chats it must be shown in and its
/// callback, all or nothing. Nothing (false) when the agent already used the key. On
/// SQLite it shares the next group commit, so pushes that arrive together do not queue
/// for the write lock one transaction at a time.
struct Push {
    row: ApiRequest,
    /// `row.targets` as stored.
    targets: String,
    interaction: Interaction,
    claim: ShowClaim,
}

impl Write for Push {
    fn apply<'a>(&'a self, conn: &'a mut AnyConnection, _deferred: &'a mut Deferred) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            let row = &self.row;
            let done = sqlx::query(
                "INSERT INTO api_requests (approval_key, interaction_id, session_id, client_session, agent, body_hash,
                                           targets, callback_url, created_at_ms)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                 ON CONFLICT (agent, approval_key) DO NOTHING",
            )
            .bind(row.approval_key.as_str())
            .bind(row.interaction_id.as_str())
            .bind(row.session_id.as_str())
            .bind(row.client_session.as_deref())
            .bind(row.agent.as_str())
            .bind(row.body_hash.as_str())
            .bind(self.targets.as_str())
            .bind(row.callback_url.as_deref())
            .bind(row.created_at_ms)
            .execute(&mut *conn)
            .await
            .map_err(StoreError::query("insert api request"))?;
            if done.rows_affected() == 0 {
                return Ok(false);
            }
            if !insert_interaction(&mut *conn, &self.interaction).await? {
                // The key is new to the API but its (session, key) interaction exists: a
                // conflict, reported as the key being taken (the error undoes the row).
                return Err(StoreError::WrongState { op: "push", id: row.approval_key.clone(), reason: "an interaction with this key exists" });
            }
            insert_shows(&mut *conn, &self.interaction.id, &row.targets, &self.claim, row.created_at_ms).await?;
            if let Some(url) = &row.callback_url {
                sqlx::query(
                    "INSERT INTO callback_outbox (approval_key, interaction_id, url, agent, attempts, next_attempt_ms)
                     VALUES ($1, $2, $3, $4, 0, 0)",
                )
                .bind(row.approval_key.as_str())
                .bind(row.interaction_id.as_str())
                .bind(url.as_str())
                .bind(row.agent.as_str())
                .execute(&mut *conn)
                .await
                .map_err(StoreError::query("queue callback"))?;
            }
            Ok(true)
        })
    }
}

/// A callback whose request has ended and whose next attempt is due.
#[derive(Debug, Clone, PartialEq)]
pub struct DueCallback {
    pub approval_key: String,
    pub interaction_id: String,
    pub url: String,
    pub agent: String,
    pub attempts: i64,
    pub next_attempt_ms: i64,
}

impl Store {
    /// Stores a pushed request with its interaction (and its callback, when it has a
    /// URL) in one transaction. Returns the existing row, changing nothing, when the
    /// agent already used the approval key (keys are per agent: another agent's same
    /// key is a different request).
    pub async fn create_api_request(&self, row: &ApiRequest, interaction: &Interaction, claim: &ShowClaim) -> Result<Option<ApiRequest>> {
        let push = Push { row: row.clone(), targets: json::encode(&row.targets, "request targets")?, interaction: interaction.clone(), claim: claim.clone() };
        if self.write(push).await? {
            return Ok(None);
        }
        self.api_request(&row.agent, &row.approval_key).await
    }

    /// `agent`'s request under `approval_key`.
    pub async fn api_request(&self, agent: &str, approval_key: &str) -> Result<Option<ApiRequest>> {
        let row = sqlx::query(
            "SELECT approval_key, interaction_id, session_id, client_session, agent, body_hash, targets, callback_url,
                    created_at_ms
             FROM api_requests WHERE agent = $1 AND approval_key = $2",
        )
        .bind(agent)
        .bind(approval_key)
        .fetch_optional(&self.pool)
        .await
        .map_err(StoreError::query("load api request"))?;
        row.as_ref().map(decode_row).transpose()
    }

    /// One page of the agent's pending requests with their interactions, oldest first
    /// (by push time, then key): at most `limit`, after `after` (the last row of the
    /// previous page). One query, a range of the `(agent, created_at_ms, approval_key)`
    /// index read in order; the mark is compared as a row value so that the range is
    /// the index condition. Written with `OR`, PostgreSQL's generic plan read and sorted
    /// every pending row (27 ms with 10,000, against 0.3 ms). The agent's rows are read
    /// in a subquery that its `LIMIT` (no limit at all, but neither database merges a
    /// limited subquery into the join) keeps apart, so that they are walked in the
    /// index's order and each interaction looked up until the page is full: joined
    /// directly, it started from the pending interactions (through the index by
    /// interaction that came with migration 27) and sorted them all, 27 ms again.
    pub async fn pending_api_requests_page(&self, agent: &str, after: Option<&PageMark>, limit: i64) -> Result<Vec<(ApiRequest, Interaction)>> {
        let (after_ms, after_key) = after.map_or((i64::MIN, ""), |mark| (mark.created_at_ms, mark.approval_key.as_str()));
        let rows = sqlx::query(
            "SELECT a.approval_key, a.interaction_id, a.session_id, a.client_session, a.agent, a.body_hash, a.targets,
                    a.callback_url, a.created_at_ms, i.id, i.body, i.revision
             FROM (SELECT * FROM api_requests WHERE agent = $1 AND (created_at_ms, approval_key) > ($3, $4)
                   ORDER BY created_at_ms, approval_key LIMIT $6) a
             JOIN interactions i ON i.id = a.interaction_id
             WHERE i.status = $2
             ORDER BY a.created_at_ms, a.approval_key LIMIT $5",
        )
        .bind(agent)
        .bind(Status::Pending.name())
        .bind(after_ms)
        .bind(after_key)
        .bind(limit)
        .bind(i64::MAX)
        .fetch_all(&self.pool)
        .await
        .map_err(StoreError::query("list a page of pending api requests"))?;
        Ok(rows.iter().map(|row| Ok((decode_row(row)?, super::interactions::decode_row(row)?))).filter_map(json::skip_corrupt).collect())
    }

    /// Callbacks whose request has ended and whose next attempt is at or before `now_ms`,
    /// by due time, then by when the request was pushed: never by key, which an agent
    /// picks and could use to jump the queue.
    pub async fn due_callbacks(&self, now_ms: i64, limit: i64) -> Result<Vec<DueCallback>> {
        let rows = sqlx::query(
            "SELECT c.approval_key, c.interaction_id, c.url, c.agent, c.attempts, c.next_attempt_ms
             FROM callback_outbox c JOIN interactions i ON i.id = c.interaction_id
             JOIN api_requests a ON a.agent = c.agent AND a.approval_key = c.approval_key
             WHERE i.status <> $1 AND c.next_attempt_ms <= $2
             ORDER BY c.next_attempt_ms, a.created_at_ms LIMIT $3",
        )
        .bind(Status::Pending.name())
        .bind(now_ms)
        .bind(limit)
        .fetch_all(&self.pool)
        .await
        .map_err(StoreError::query("list due callbacks"))?;
        rows.iter()
            .map(|row| {
                Ok(DueCallback {
                    approval_key: column(row, "approval_key")?,
                    interaction_id: column(row, "interaction_id")?,
                    url: column(row, "url")?,
                    agent: column(row, "agent")?,
                    attempts: column(row, "attempts")?,
                    next_attempt_ms: column(row, "next_attempt_ms")?,
                })
            })
            .collect()
    }

    /// Claims a due callback until `until_ms` (so no other replica posts it meanwhile)
    /// and counts the attempt. False when someone else claimed it first.
    pub async fn claim_callback(&self, due: &DueCallback, until_ms: i64) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE callback_outbox SET next_attempt_ms = $1, attempts = attempts + 1
             WHERE agent = $2 AND approval_key = $3 AND next_attempt_ms = $4 AND attempts = $5",
        )
        .bind(until_ms)
        .bind(due.agent.as_str())
        .bind(due.approval_key.as_str())
        .bind(due.next_attempt_ms)
        .bind(due.attempts)
        .execute(&self.pool)
        .await
        .map_err(StoreError::query("claim callback"))?;
        Ok(done.rows_affected() == 1)
    }

    /// The agent answered 2xx: the callback is done.
    pub async fn callback_delivered(&self, due: &DueCallback) -> Result<()> {
        sqlx::query("DELETE FROM callback_outbox WHERE agent = $1 AND approval_key = $2")
            .bind(due.agent.as_str())
            .bind(due.approval_key.as_str())
            .execute(&self.pool)
            .await
            .map_err(StoreError::query("remove delivered callback"))?;
        Ok(())
    }

    /// The attempt failed: try again at `next_attempt_ms`.
    pub async fn retry_callback_at(&self, due: &DueCallback, next_attempt_ms: i64) -> Result<()> {
        sqlx::query("UPDATE callback_outbox SET next_attempt_ms = $1 WHERE agent = $2 AND approval_key = $3")
            .bind(next_attempt_ms)
            .bind(due.agent.as_str())
            .bind(due.approval_key.as_str())
            .execute(&self.pool)
            .await
            .map_err(StoreError::query("reschedule callback"))?;
        Ok(())
    }
}

fn decode_row(row: &AnyRow) -> Result<ApiRequest> {
    let approval_key: String = column(row, "approval_key")?;
    let targets = json::decode(column(row, "targets")?, "request targets", &approval_key)?;
    Ok(ApiRequest {
        interaction_id: column(row, "interaction_id")?,
        session_id: column(row, "session_id")?,
        client_session: column(row, "client_session")?,
        agent: column(row, "agent")?,
        body_hash: column(row, "body_hash")?,
        targets,
        callback_url: column(row, "callback_url")?,
        created_at_ms: column(row, "created_at_ms")?,
        approval_key,
    })
}
