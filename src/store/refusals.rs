//! `refusal_windows`: a stranger (someone not allowed to talk to the agent) is
//! answered once per `access.refusal_window_secs` per chat, and the audit log keeps
//! one entry per window whose `attempts` is counted up in place by every further
//! attempt. The window lives in the store so every replica, and a restarted one,
//! sees the same window: one refusal per window across the deployment.

use super::Store;
use super::audit::insert_audit;
use super::audit_entry::AuditEntry;
use super::error::{Result, StoreError};
use crate::interaction::Actor;

/// What became of a stranger's refused attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrangerWindow {
    /// A new window opened with its own audit entry: answer the stranger.
    Opened,
    /// Counted on the open window's entry: stay silent.
    Counted,
}

/// Rounds of "open, else count" before giving up: a round is lost only to another
/// replica opening the same window at the same moment, and then counting on theirs
/// succeeds.
const ROUNDS: usize = 3;

impl Store {
    /// Counts one refused attempt by `actor` in `chat_id` on the open refusal window's
    /// audit entry (forum topics and threads share their chat's window); false when no
    /// window opened less than `window_ms` before `now_ms` (then see
    /// [`Store::open_refusal_window`]). One statement: the cheap path of a flood.
    pub async fn count_refused_attempt(&self, actor: &Actor, chat_id: &str, now_ms: i64, window_ms: i64) -> Result<bool> {
        let counted = sqlx::query(
            "UPDATE audit_log SET attempts = attempts + 1 WHERE id = (
                 SELECT audit_id FROM refusal_windows
                 WHERE platform = $1 AND chat_id = $2 AND user_id = $3 AND opened_at_ms > $4)",
        )
        .bind(actor.platform.as_str())
        .bind(chat_id)
        .bind(actor.user_id.as_str())
        .bind(window_closed_before(now_ms, window_ms))
        .execute(&self.pool)
        .await
        .map_err(StoreError::query("count a refused attempt"))?;
        Ok(counted.rows_affected() > 0)
    }

    /// Writes `entry` and opens a refusal window for `actor` in `chat_id` at `now_ms`,
    /// unless another replica opened one meanwhile: then the attempt is counted on
    /// theirs. Expired windows are swept whenever one opens, so the table holds at
    /// most the strangers of the last `window_ms` (0: every attempt opens a window).
    pub async fn open_refusal_window(&self, actor: &Actor, chat_id: &str, entry: &AuditEntry, now_ms: i64, window_ms: i64) -> Result<StrangerWindow> {
        let closed_before = window_closed_before(now_ms, window_ms);
        for _ in 0..ROUNDS {
            let mut tx = self.pool.begin().await.map_err(StoreError::query("begin a refusal window"))?;
            sqlx::query("DELETE FROM refusal_windows WHERE opened_at_ms <= $1")
                .bind(closed_before)
                .execute(&mut *tx)
                .await
                .map_err(StoreError::query("sweep refusal windows"))?;
            let audit_id = insert_audit(&mut *tx, entry).await?;
            let opened = sqlx::query(
                "INSERT INTO refusal_windows (platform, chat_id, user_id, opened_at_ms, audit_id) VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (platform, chat_id, user_id) DO NOTHING",
            )
            .bind(actor.platform.as_str())
            .bind(chat_id)
            .bind(actor.user_id.as_str())
            .bind(now_ms)
            .bind(audit_id)
            .execute(&mut *tx)
            .await
            .map_err(StoreError::query("open a refusal window"))?;
            if opened.rows_affected() > 0 {
                tx.commit().await.map_err(StoreError::query("commit a refusal window"))?;
                return Ok(StrangerWindow::Opened);
            }
            // Another replica opened this window since the caller counted: undo our
            // entry and count on theirs.
            tx.rollback().await.map_err(StoreError::query("roll back a refusal window"))?;
            if self.count_refused_attempt(actor, chat_id, now_ms, window_ms).await? {
                return Ok(StrangerWindow::Counted);
            }
        }
        // Only when the open window's audit entry is gone (audit retention shorter
        // than the window): the attempt is counted by the metric alone.
        tracing::warn!(platform = %actor.platform, chat = chat_id, user = %actor.user_id, "a refused attempt could not be counted on its window's audit entry");
        Ok(StrangerWindow::Counted)
    }
}

/// A window opened at or before this instant has closed by `now_ms`.
fn window_closed_before(now_ms: i64, window_ms: i64) -> i64 {
    now_ms.saturating_sub(window_ms.max(0))
}
