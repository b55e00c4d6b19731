//! The `pending_shows` table: requests that still have to appear in a chat. A row is
//! written with its interaction (same transaction) and removed together with the
//! `message_refs` row of the message that shows it, so a request whose send failed
//! (a 429 storm, a 5xx, the network) or that was never sent before a crash is shown
//! later, by whichever replica claims it, and never twice.
//!
//! A chat the platform refuses for good (chat not found, the bot not in the channel or
//! blocked) is not tried again: its row moves to `refused_shows` with the platform's
//! reason, in one transaction, which the request's state shows as `not_shown`.

use std::collections::HashMap;

use futures_util::future::BoxFuture;
use sqlx::AnyConnection;
use sqlx::any::AnyRow;

use super::claims::{RenewClaims, Which};
use super::deferred::Deferred;
use super::error::{Result, StoreError};
use super::group_commit::Write;
use super::placeholders::{Marks, bind_keys, list_statement, padded_len};
use super::row::column;
use super::{ChatKey, MessageRef, Store};

/// The longest wait between two attempts to show a request.
pub const MAX_SHOW_BACKOFF_MS: i64 = 60_000;

/// 1 s after the first failure, doubling, capped.
fn show_backoff_ms(failures_before: i64) -> i64 {
    1000i64.saturating_mul(1 << failures_before.clamp(0, 16)).min(MAX_SHOW_BACKOFF_MS)
}

/// A replica's claim on the rows it is sending now.
#[derive(Debug, Clone)]
pub struct ShowClaim {
    pub owner: String,
    pub until_ms: i64,
}

/// One request to show in one chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingShow {
    pub interaction_id: String,
    pub chat: ChatKey,
    pub attempts: i64,
}

/// Request ids per statement of [`Store::refused_shows_of`].
const REFUSALS_PER_STATEMENT: usize = 512;

/// A chat where a request could not be shown, the platform having refused it for good.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedShow {
    pub chat: ChatKey,
    /// The platform's reason, e.g. `Bad Request: chat not found`.
    pub error: String,
}

impl PendingShow {
    fn from_row(row: &AnyRow) -> Result<Self> {
        Ok(Self { interaction_id: column(row, "interaction_id")?, chat: ChatKey::from_row(row)?, attempts: column(row, "attempts")? })
    }
}

impl Store {
    /// Claims for `claim.owner` the rows due at `now_ms` that no live claim holds. (An
    /// interaction's rows are deleted when it settles.)
    pub async fn claim_due_shows(&self, claim: &ShowClaim, now_ms: i64) -> Result<Vec<PendingShow>> {
        let rows = sqlx::query(
            "UPDATE pending_shows SET claimed_by = $1, claimed_until_ms = $2
             WHERE next_at_ms <= $3 AND claimed_until_ms < $3
             RETURNING interaction_id, platform, chat_id, thread_id, attempts",
        )
        .bind(claim.owner.as_str())
        .bind(claim.until_ms)
        .bind(now_ms)
        .fetch_all(&self.pool)
        .await
        .map_err(StoreError::query("claim due shows"))?;
        rows.iter().map(PendingShow::from_row).collect()
    }

    /// Extends the claims `claim.owner` holds (rows still queued in its chat lanes).
    /// In the group commit: on PostgreSQL, an update of many rows beside a batch that
    /// removes some of them (requests shown meanwhile) could lock them in the other
    /// order and deadlock; in the same queue the two never overlap.
    pub async fn renew_show_claims(&self, claim: &ShowClaim, now_ms: i64) -> Result<()> {
        self.write(RenewClaims {
            what: "renew show claims",
            statement: "UPDATE pending_shows SET claimed_until_ms = $1 WHERE claimed_by = $2 AND claimed_until_ms >= $3",
            claim: claim.clone(),
            which: Which::LiveAt(now_ms),
        })
        .await?;
        Ok(())
    }

    /// Gives every claim of `owner` up (shutdown): another replica, or this one after a
    /// restart, shows those requests at once.
    pub async fn release_show_claims(&self, owner: &str) -> Result<()> {
        sqlx::query("UPDATE pending_shows SET claimed_until_ms = 0 WHERE claimed_by = $1")
            .bind(owner)
            .execute(&self.pool)
            .await
            .map_err(StoreError::query("release show claims"))?;
        Ok(())
    }

    /// The request is shown in `chat`: remembers the message (when the platform has
    /// one to edit later) and removes the row, in one transaction.
    pub async fn shown(&self, interaction_id: &str, chat: &ChatKey, message: Option<&MessageRef>) -> Result<()> {
        self.shown_at(interaction_id, chat, message, None).await
    }

    /// [`Store::shown`], recording in the same write that `message` shows the
    /// interaction at `revision` (what a restart compares: [`Store::mark_shown`]).
    pub async fn shown_at(&self, interaction_id: &str, chat: &ChatKey, message: Option<&MessageRef>, revision: Option<i64>) -> Result<()> {
        self.write(Shown { interaction_id: interaction_id.to_owned(), chat: chat.clone(), message: message.cloned(), revision }).await?;
        Ok(())
    }

    /// The send failed: any replica tries again after a backoff that doubles from 1 s
    /// to [`MAX_SHOW_BACKOFF_MS`] with each attempt.
    pub async fn show_failed(&self, interaction_id: &str, chat: &ChatKey, now_ms: i64, error: &str) -> Result<()> {
        let attempts: i64 = sqlx::query("SELECT attempts FROM pending_shows WHERE interaction_id = $1 AND platform = $2 AND chat_id = $3 AND thread_id = $4")
            .bind(interaction_id)
            .bind(chat.platform.as_str())
            .bind(chat.chat_id.as_str())
            .bind(chat.thread_column())
            .fetch_optional(&self.pool)
            .await
            .map_err(StoreError::query("read a pending show"))?
            .map(|row| column(&row, "attempts"))
            .transpose()?
            .unwrap_or(0);
        sqlx::query(
            "UPDATE pending_shows SET attempts = $1, next_at_ms = $2, claimed_until_ms = 0, last_error = $3
             WHERE interaction_id = $4 AND platform = $5 AND chat_id = $6 AND thread_id = $7",
        )
        .bind(attempts + 1)
        .bind(now_ms + show_backoff_ms(attempts))
        .bind(error)
        .bind(interaction_id)
        .bind(chat.platform.as_str())
        .bind(chat.chat_id.as_str())
        .bind(chat.thread_column())
        .execute(&self.pool)
        .await
        .map_err(StoreError::query("record a failed show"))?;
        Ok(())
    }

    /// The platform refused `chat` for good: the show leaves the retry queue and is
    /// recorded as refused there with the platform's `error`, in one transaction (a
    /// restart does not try it again).
    pub async fn show_refused(&self, interaction_id: &str, chat: &ChatKey, now_ms: i64, error: &str) -> Result<()> {
        self.write(Refused { interaction_id: interaction_id.to_owned(), chat: chat.clone(), error: error.to_owned(), at_ms: now_ms }).await?;
        Ok(())
    }

    /// Where `interaction_id` could not be shown, in the order the chats were refused.
    pub async fn refused_shows(&self, interaction_id: &str) -> Result<Vec<RefusedShow>> {
        let rows =
            sqlx::query("SELECT platform, chat_id, thread_id, error FROM refused_shows WHERE interaction_id = $1 ORDER BY at_ms, platform, chat_id, thread_id")
                .bind(interaction_id)
                .fetch_all(&self.pool)
                .await
                .map_err(StoreError::query("list refused shows"))?;
        rows.iter().map(|row| Ok(RefusedShow { chat: ChatKey::from_row(row)?, error: column(row, "error")? })).collect()
    }

    /// Where each of `interaction_ids` could not be shown ([`Store::refused_shows`]), in
    /// one statement per [`REFUSALS_PER_STATEMENT`] ids rather than one per id (a page
    /// of the HTTP API's list holds up to 1000 requests); ids with none are left out.
    pub async fn refused_shows_of(&self, interaction_ids: &[&str]) -> Result<HashMap<String, Vec<RefusedShow>>> {
        let mut refused: HashMap<String, Vec<RefusedShow>> = HashMap::new();
        if interaction_ids.is_empty() {
            return Ok(refused);
        }
        let mut conn = self.pool.acquire().await.map_err(StoreError::query("list refused shows"))?;
        let marks = Marks::of(&conn);
        for chunk in interaction_ids.chunks(REFUSALS_PER_STATEMENT) {
            let sql = format!(
                "SELECT interaction_id, platform, chat_id, thread_id, error FROM refused_shows WHERE interaction_id IN ({})
                 ORDER BY interaction_id, at_ms, platform, chat_id, thread_id",
                marks.list(1, padded_len(chunk.len()))
            );
            // Safe: the text is only value marks; every value is bound.
            let select = bind_keys(list_statement(sql), chunk, |id| *id);
            let rows = select.fetch_all(&mut *conn).await.map_err(StoreError::query("list refused shows"))?;
            for row in &rows {
                let show = RefusedShow { chat: ChatKey::from_row(row)?, error: column(row, "error")? };
                refused.entry(column(row, "interaction_id")?).or_default().push(show);
            }
        }
        Ok(refused)
    }

    /// Whether `interaction_id` is neither shown in any chat nor queued to be.
    pub async fn shown_nowhere(&self, interaction_id: &str) -> Result<bool> {
        let row = sqlx::query(
            "SELECT (SELECT COUNT(*) FROM pending_shows WHERE interaction_id = $1)
                  + (SELECT COUNT(*) FROM message_refs WHERE interaction_id = $1) AS n",
        )
        .bind(interaction_id)
        .fetch_one(&self.pool)
        .await
        .map_err(StoreError::query("count where an interaction is shown"))?;
        Ok(column::<i64>(&row, "n")? == 0)
    }

    /// Forgets a show that can never happen here (its platform is not enabled).
    pub async fn drop_show(&self, interaction_id: &str, chat: &ChatKey) -> Result<()> {
        self.shown(interaction_id, chat, None).await
    }

    /// The rows still waiting, for tests and `pending`-style listings.
    pub async fn pending_shows(&self) -> Result<Vec<PendingShow>> {
        let rows = sqlx::query("SELECT interaction_id, platform, chat_id, thread_id, attempts FROM pending_shows ORDER BY interaction_id")
            .fetch_all(&self.pool)
            .await
            .map_err(StoreError::query("list pending shows"))?;
        rows.iter().map(PendingShow::from_row).collect()
    }
}

/// Forgets where a settled interaction still had to be shown (an ended request is
/// never shown late) and the UI state kept for its clicks, inside its settle
/// transaction: the one-write form of [`Deferred::forget_ended`](super::deferred::Deferred::forget_ended).
pub(super) async fn forget_ended(conn: &mut AnyConnection, interaction_id: &str) -> Result<()> {
    sqlx::query("DELETE FROM pending_shows WHERE interaction_id = $1")
        .bind(interaction_id)
        .execute(&mut *conn)
        .await
        .map_err(StoreError::query("drop the shows of a settled interaction"))?;
    sqlx::query("DELETE FROM ui_state WHERE interaction_id = $1")
        .bind(interaction_id)
        .execute(&mut *conn)
        .await
        .map_err(StoreError::query("forget the UI state of a settled interaction"))?;
    Ok(())
}

/// Queues `interaction_id` for every chat in `chats`, claimed by `claim` (the caller
/// shows them now), on any executor so it joins the interaction's transaction.
pub(super) async fn insert_shows(conn: &mut AnyConnection, interaction_id: &str, chats: &[ChatKey], claim: &ShowClaim, now_ms: i64) -> Result<()> {
    for chat in chats {
        sqlx::query(
            "INSERT INTO pending_shows (interaction_id, platform, chat_id, thread_id, attempts, next_at_ms, claimed_by, claimed_until_ms)
             VALUES ($1, $2, $3, $4, 0, $5, $6, $7)
             ON CONFLICT (interaction_id, platform, chat_id, thread_id) DO NOTHING",
        )
        .bind(interaction_id)
        .bind(chat.platform.as_str())
        .bind(chat.chat_id.as_str())
        .bind(chat.thread_column())
        .bind(now_ms)
        .bind(claim.owner.as_str())
        .bind(claim.until_ms)
        .execute(&mut *conn)
        .await
        .map_err(StoreError::query("queue a show"))?;
    }
    Ok(())
}

/// A request shown (or never to be shown) in one chat.
struct Shown {
    interaction_id: String,
    chat: ChatKey,
    message: Option<MessageRef>,
    /// The interaction revision the message shows, when the platform keeps messages.
    revision: Option<i64>,
}

impl Write for Shown {
    fn apply<'a>(&'a self, conn: &'a mut AnyConnection, deferred: &'a mut Deferred) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            if let Some(message) = &self.message {
                super::messages::insert_message_ref(&mut *conn, message).await?;
                if let Some(revision) = self.revision {
                    // With every other message its transaction marks, after the insert.
                    deferred.mark_shown(message, revision);
                }
            }
            remove_pending_show(conn, &self.interaction_id, &self.chat).await?;
            Ok(true)
        })
    }
}

async fn remove_pending_show(conn: &mut AnyConnection, interaction_id: &str, chat: &ChatKey) -> Result<()> {
    sqlx::query("DELETE FROM pending_shows WHERE interaction_id = $1 AND platform = $2 AND chat_id = $3 AND thread_id = $4")
        .bind(interaction_id)
        .bind(chat.platform.as_str())
        .bind(chat.chat_id.as_str())
        .bind(chat.thread_column())
        .execute(&mut *conn)
        .await
        .map_err(StoreError::query("remove a pending show"))?;
    Ok(())
}

/// A request the platform refused for good in one chat.
struct Refused {
    interaction_id: String,
    chat: ChatKey,
    error: String,
    at_ms: i64,
}

impl Write for Refused {
    fn apply<'a>(&'a self, conn: &'a mut AnyConnection, _deferred: &'a mut Deferred) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            // Only while the interaction exists (retention may have removed it).
            sqlx::query(
                "INSERT INTO refused_shows (interaction_id, platform, chat_id, thread_id, error, at_ms)
                 SELECT id, $2, $3, $4, $5, $6 FROM interactions WHERE id = $1
                 ON CONFLICT (interaction_id, platform, chat_id, thread_id) DO NOTHING",
            )
            .bind(self.interaction_id.as_str())
            .bind(self.chat.platform.as_str())
            .bind(self.chat.chat_id.as_str())
            .bind(self.chat.thread_column())
            .bind(self.error.as_str())
            .bind(self.at_ms)
            .execute(&mut *conn)
            .await
            .map_err(StoreError::query("record a refused show"))?;
            remove_pending_show(conn, &self.interaction_id, &self.chat).await?;
            Ok(true)
        })
    }
}
