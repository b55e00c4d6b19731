//! What the admin commands (`hitl-bridge pending`, `cancel`, `audit export`) read and
//! write: where pending requests are shown, interactions by approval key alone, a
//! settle made outside the engine (with the `outside_settles` row that tells running
//! bridges to update its messages), and the audit log in time order, page by page.
//!
//! Like the rest of the store it decides nothing: [`crate::admin`] decides what a
//! cancel means, the engine's rescan claims the notices.

use std::collections::{BTreeMap, HashMap};

use super::Store;
use super::audit::{self, insert_audit};
use super::audit_entry::AuditEntry;
use super::chats::ChatKey;
use super::error::{Result, StoreError};
use super::interactions::{access_column, decode_rows};
use super::json::{self, skip_corrupt};
use super::outbox::insert_command;
use super::placeholders::{Marks, run_time_statement};
use super::row::column;
use super::shows::forget_ended;
use crate::interaction::{Interaction, Status};
use crate::protocol::Command;

/// Where the next page of the audit log starts (after this row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditCursor {
    pub at_ms: i64,
    pub id: i64,
}

/// One page of the audit log; `next` is `None` on the last page.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditPage {
    pub rows: Vec<AuditRow>,
    pub next: Option<AuditCursor>,
}

/// One audit entry with its row id, the tie-breaker of the export's time order.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRow {
    pub id: i64,
    pub entry: AuditEntry,
}

impl Store {
    /// Every chat each pending interaction is shown in or still waits to be shown in
    /// (its messages, its queued shows, a pushed request's targets), by interaction
    /// id, each list sorted and without repeats.
    pub async fn pending_targets(&self) -> Result<BTreeMap<String, Vec<ChatKey>>> {
        self.targets_where(None).await
    }

    /// [`Store::pending_targets`] of these pending interactions only (a page's rows):
    /// a few rows read, however many are pending.
    pub async fn pending_targets_of(&self, ids: &[String]) -> Result<BTreeMap<String, Vec<ChatKey>>> {
        if ids.is_empty() {
            return Ok(BTreeMap::new());
        }
        self.targets_where(Some(ids)).await
    }

    /// Every chat some pending interaction is shown in or waits to be shown in: the
    /// lists of [`Store::pending_targets`] together, sorted, without repeats. Made
    /// distinct by the database, so it reads a row per chat, not per request.
    pub async fn pending_places(&self) -> Result<Vec<ChatKey>> {
        let pending = Status::Pending.name();
        let rows = sqlx::query(
            "SELECT m.platform, m.chat_id, m.thread_id FROM message_refs m
             JOIN interactions i ON i.id = m.interaction_id WHERE i.status = $1
             UNION
             SELECT s.platform, s.chat_id, s.thread_id FROM pending_shows s
             JOIN interactions i ON i.id = s.interaction_id WHERE i.status = $1",
        )
        .bind(pending)
        .fetch_all(&self.pool)
        .await
        .map_err(StoreError::query("list where pending requests are shown"))?;
        let mut places = rows.iter().map(ChatKey::from_row).collect::<Result<Vec<_>>>()?;
        let pushed = sqlx::query("SELECT DISTINCT a.targets FROM api_requests a JOIN interactions i ON i.id = a.interaction_id WHERE i.status = $1")
            .bind(pending)
            .fetch_all(&self.pool)
            .await
            .map_err(StoreError::query("list the targets of pending pushed requests"))?;
        for row in &pushed {
            places
                .extend(skip_corrupt(json::decode::<Vec<ChatKey>>(column(row, "targets")?, "request targets", "a pending pushed request")).unwrap_or_default());
        }
        sort_chats(&mut places);
        Ok(places)
    }

    /// The targets of every pending interaction, or of those in `ids`.
    async fn targets_where(&self, ids: Option<&[String]>) -> Result<BTreeMap<String, Vec<ChatKey>>> {
        let pending = Status::Pending.name();
        let mut conn = self.pool.acquire().await.map_err(StoreError::query("list where pending requests are shown"))?;
        let marks = Marks::of(&conn);
        // `$1` is the status; the ids, when given, follow it.
        let only = |table: &str| ids.map_or(String::new(), |ids| format!(" AND {table}.interaction_id IN ({})", marks.list(2, ids.len())));
        let sql = format!(
            "SELECT m.interaction_id, m.platform, m.chat_id, m.thread_id FROM message_refs m
             JOIN interactions i ON i.id = m.interaction_id WHERE i.status = {status}{m}
             UNION
             SELECT s.interaction_id, s.platform, s.chat_id, s.thread_id FROM pending_shows s
             JOIN interactions i ON i.id = s.interaction_id WHERE i.status = {status}{s}",
            status = marks.list(1, 1),
            m = only("m"),
            s = only("s"),
        );
        // Safe: the text is only value marks; every value is bound.
        let mut select = run_time_statement(sql).bind(pending);
        for id in ids.into_iter().flatten() {
            select = select.bind(id.as_str());
        }
        if marks == Marks::Positional {
            // `?` marks are numbered in order: the second half's are bound again.
            select = select.bind(pending);
            for id in ids.into_iter().flatten() {
                select = select.bind(id.as_str());
            }
        }
        let rows = select.fetch_all(&mut *conn).await.map_err(StoreError::query("list where pending requests are shown"))?;
        let mut targets: BTreeMap<String, Vec<ChatKey>> = BTreeMap::new();
        for row in &rows {
            targets.entry(column(row, "interaction_id")?).or_default().push(ChatKey::from_row(row)?);
        }
        let sql = format!(
            "SELECT a.interaction_id, a.approval_key, a.targets FROM api_requests a
             JOIN interactions i ON i.id = a.interaction_id WHERE i.status = {}{}",
            marks.list(1, 1),
            only("a")
        );
        // Safe: the text is only value marks; every value is bound.
        let mut select = run_time_statement(sql).bind(pending);
        for id in ids.into_iter().flatten() {
            select = select.bind(id.as_str());
        }
        let pushed = select.fetch_all(&mut *conn).await.map_err(StoreError::query("list the targets of pending pushed requests"))?;
        // Pushed requests mostly share their targets: each distinct list is decoded once.
        let mut decoded: HashMap<&str, Vec<ChatKey>> = HashMap::new();
        for row in &pushed {
            let text: &str = column(row, "targets")?;
            let chats = match decoded.get(text) {
                Some(chats) => chats.clone(),
                None => {
                    let key: &str = column(row, "approval_key")?;
                    let Some(chats) = skip_corrupt(json::decode::<Vec<ChatKey>>(text, "request targets", key)) else {
                        continue;
                    };
                    decoded.insert(text, chats.clone());
                    chats
                }
            };
            targets.entry(column(row, "interaction_id")?).or_default().extend(chats);
        }
        for chats in targets.values_mut() {
            sort_chats(chats);
        }
        Ok(targets)
    }

    /// Every interaction with this approval key, in any session, oldest first (keys
    /// are unique per session only).
    pub async fn interactions_with_key(&self, approval_key: &str) -> Result<Vec<Interaction>> {
        let rows = sqlx::query("SELECT id, body, revision FROM interactions WHERE approval_key = $1 ORDER BY created_at_ms, id")
            .bind(approval_key)
            .fetch_all(&self.pool)
            .await
            .map_err(StoreError::query("find interactions by approval key"))?;
        Ok(decode_rows(&rows))
    }

    /// [`Store::settle`] for a settle made outside the engine (`hitl-bridge cancel`):
    /// the same first-wins conditional update, command and audit entry, plus a row in
    /// `outside_settles` so a running bridge updates the interaction's messages. One
    /// transaction; false, changing nothing, when it was already settled.
    pub async fn settle_outside(&self, i: &Interaction, command: Option<&Command>, audit: &AuditEntry) -> Result<bool> {
        if i.status.is_pending() {
            return Err(StoreError::WrongState { op: "settle", id: i.id.clone(), reason: "it is still pending" });
        }
        let body = json::encode(i, "interaction")?;
        let mut tx = self.pool.begin().await.map_err(StoreError::query("begin outside settle"))?;
        // The engine's settle does the same update; it is repeated here rather than
        // shared so that this transaction can also write its notice row.
        let done = sqlx::query("UPDATE interactions SET status = $1, body = $2, access = $5, access_revision = revision + 1, revision = revision + 1 WHERE id = $3 AND status = $4")
            .bind(i.status.name())
            .bind(body)
            .bind(i.id.as_str())
            .bind(Status::Pending.name())
            .bind(access_column(i)?)
            .execute(&mut *tx)
            .await
            .map_err(StoreError::query("settle interaction"))?;
        if done.rows_affected() == 0 {
            tx.rollback().await.map_err(StoreError::query("roll back outside settle"))?;
            return Ok(false);
        }
        if let Some(command) = command {
            insert_command(&mut *tx, command, audit.at_ms).await?;
        }
        insert_audit(&mut *tx, audit).await?;
        forget_ended(&mut tx, &i.id).await?;
        sqlx::query("INSERT INTO outside_settles (interaction_id, settled_at_ms) VALUES ($1, $2)")
            .bind(i.id.as_str())
            .bind(audit.at_ms)
            .execute(&mut *tx)
            .await
            .map_err(StoreError::query("note an outside settle"))?;
        tx.commit().await.map_err(StoreError::query("commit outside settle"))?;
        Ok(true)
    }

    /// The interactions settled outside the engine that no bridge has updated yet,
    /// oldest first, each claimed (its row deleted) by this call so that one replica
    /// updates its messages once.
    pub async fn claim_outside_settles(&self) -> Result<Vec<String>> {
        let rows = sqlx::query("SELECT interaction_id FROM outside_settles ORDER BY settled_at_ms, interaction_id")
            .fetch_all(&self.pool)
            .await
            .map_err(StoreError::query("list outside settles"))?;
        let mut claimed = Vec::new();
        for row in &rows {
            let id: String = column(row, "interaction_id")?;
            let done = sqlx::query("DELETE FROM outside_settles WHERE interaction_id = $1")
                .bind(id.as_str())
                .execute(&self.pool)
                .await
                .map_err(StoreError::query("claim an outside settle"))?;
            if done.rows_affected() == 1 {
                claimed.push(id);
            }
        }
        Ok(claimed)
    }

    /// Up to `limit` audit entries at or after `since_ms`, in time order (ties by row
    /// id), strictly after `page.next` of the previous page when given. An unreadable
    /// row is logged and left out; the cursor still moves past it.
    pub async fn audit_page(&self, since_ms: i64, after: Option<AuditCursor>, limit: i64) -> Result<AuditPage> {
        // Without a cursor, start just before the first possible row.
        let after = after.unwrap_or(AuditCursor { at_ms: since_ms, id: i64::MIN });
        let rows = sqlx::query(
            "SELECT id, at_ms, session_id, approval_key, interaction_id, actor, outcome, reply,
                    original_args, edited_args, latency_ms, agent, kind, tools, reason, attempts
             FROM audit_log
             WHERE at_ms >= $1 AND (at_ms > $2 OR (at_ms = $2 AND id > $3))
             ORDER BY at_ms, id LIMIT $4",
        )
        .bind(since_ms)
        .bind(after.at_ms)
        .bind(after.id)
        .bind(limit)
        .fetch_all(&self.pool)
        .await
        .map_err(StoreError::query("read the audit log"))?;
        let mut page = AuditPage { rows: Vec::with_capacity(rows.len()), next: None };
        for row in &rows {
            let cursor = AuditCursor { at_ms: column(row, "at_ms")?, id: column(row, "id")? };
            if let Some(entry) = skip_corrupt(audit::decode_row(row)) {
                page.rows.push(AuditRow { id: cursor.id, entry });
            }
            page.next = Some(cursor);
        }
        if (rows.len() as i64) < limit {
            page.next = None;
        }
        Ok(page)
    }
}

/// Sorts chats and drops repeats.
fn sort_chats(chats: &mut Vec<ChatKey>) {
    chats.sort_by(|a, b| (&a.platform, &a.chat_id, &a.thread_id).cmp(&(&b.platform, &b.chat_id, &b.thread_id)));
    chats.dedup();
}
