//! The web inbox's tables (`web_sign_in_links`, `web_sessions`) and the reads only the
//! inbox makes (the audit log newest first, the change mark its live updates watch).
//! Tokens arrive here already hashed: the store never sees a secret a browser holds.
//! Whether a link or a session is still good is decided by the clock values the
//! caller passes; expired rows are cleared on the way, and by the hourly sweep.

use sqlx::any::AnyRow;

use super::Store;
use super::admin::AuditRow;
use super::audit;
use super::error::{Result, StoreError};
use super::json::{self, skip_corrupt};
use super::row::column;
use crate::interaction::Actor;

/// A signed-in browser, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSession {
    pub actor: Actor,
    /// The token every state-changing form of this session must carry.
    pub csrf: String,
    pub last_seen_ms: i64,
}

/// What the audit page filters on; empty fields match everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    pub agent: Option<String>,
    /// `platform:user_id` of the person who acted.
    pub person: Option<String>,
    pub outcome: Option<String>,
}

/// What [`Store::clear_expired_web`] removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClearedWeb {
    pub sign_in_links: u64,
    pub sessions: u64,
}

/// How often a session's `last_seen_ms` is written at most: reading a page must not
/// cost a write each time.
const TOUCH_EVERY_MS: i64 = 30_000;

impl Store {
    /// Stores a sign-in link for `actor`, valid until `expires_at_ms`. Expired links
    /// are cleared first.
    pub async fn create_sign_in_link(&self, token_hash: &str, actor: &Actor, now_ms: i64, expires_at_ms: i64) -> Result<()> {
        sqlx::query("DELETE FROM web_sign_in_links WHERE expires_at_ms <= $1")
            .bind(now_ms)
            .execute(&self.pool)
            .await
            .map_err(StoreError::query("clear expired sign-in links"))?;
        sqlx::query("INSERT INTO web_sign_in_links (token_hash, actor, created_at_ms, expires_at_ms) VALUES ($1, $2, $3, $4)")
            .bind(token_hash)
            .bind(json::encode(actor, "sign-in link actor")?)
            .bind(now_ms)
            .bind(expires_at_ms)
            .execute(&self.pool)
            .await
            .map_err(StoreError::query("store a sign-in link"))?;
        Ok(())
    }

    /// Whom the link signs in, while it is still good (unused, unexpired), without
    /// spending it: the page with the Sign in button says so before anyone presses it.
    pub async fn sign_in_link_person(&self, token_hash: &str, now_ms: i64) -> Result<Option<Actor>> {
        let row = sqlx::query("SELECT actor FROM web_sign_in_links WHERE token_hash = $1 AND used_at_ms IS NULL AND expires_at_ms > $2")
            .bind(token_hash)
            .bind(now_ms)
            .fetch_optional(&self.pool)
            .await
            .map_err(StoreError::query("read a sign-in link"))?;
        row.map(|row| decode_actor(&row, "sign-in link actor", "web_sign_in_links")).transpose()
    }

    /// Spends the link: the actor it was made for, once; `None` when it is unknown,
    /// used or expired. One conditional update, so two presses racing sign in once.
    pub async fn spend_sign_in_link(&self, token_hash: &str, now_ms: i64) -> Result<Option<Actor>> {
        let done = sqlx::query("UPDATE web_sign_in_links SET used_at_ms = $1 WHERE token_hash = $2 AND used_at_ms IS NULL AND expires_at_ms > $1")
            .bind(now_ms)
            .bind(token_hash)
            .execute(&self.pool)
            .await
            .map_err(StoreError::query("spend a sign-in link"))?;
        if done.rows_affected() != 1 {
            return Ok(None);
        }
        let row = sqlx::query("SELECT actor FROM web_sign_in_links WHERE token_hash = $1")
            .bind(token_hash)
            .fetch_one(&self.pool)
            .await
            .map_err(StoreError::query("read a spent sign-in link"))?;
        decode_actor(&row, "sign-in link actor", "web_sign_in_links").map(Some)
    }

    /// Opens a session for `actor`.
    pub async fn create_web_session(&self, id_hash: &str, actor: &Actor, csrf: &str, now_ms: i64) -> Result<()> {
        sqlx::query("INSERT INTO web_sessions (id_hash, actor, csrf, created_at_ms, last_seen_ms) VALUES ($1, $2, $3, $4, $4)")
            .bind(id_hash)
            .bind(json::encode(actor, "web session actor")?)
            .bind(csrf)
            .bind(now_ms)
            .execute(&self.pool)
            .await
            .map_err(StoreError::query("open a web session"))?;
        Ok(())
    }

    /// The session, if it was used within `idle_ms` before `now_ms`; marks it used. An
    /// idle session is ended here (and every other idle one with it).
    pub async fn web_session(&self, id_hash: &str, now_ms: i64, idle_ms: i64) -> Result<Option<WebSession>> {
        let oldest = now_ms.saturating_sub(idle_ms);
        sqlx::query("DELETE FROM web_sessions WHERE last_seen_ms < $1")
            .bind(oldest)
            .execute(&self.pool)
            .await
            .map_err(StoreError::query("end idle web sessions"))?;
        let row = sqlx::query("SELECT actor, csrf, last_seen_ms FROM web_sessions WHERE id_hash = $1")
            .bind(id_hash)
            .fetch_optional(&self.pool)
            .await
            .map_err(StoreError::query("read a web session"))?;
        let Some(row) = row else { return Ok(None) };
        let session = WebSession {
            actor: decode_actor(&row, "web session actor", "web_sessions")?,
            csrf: column(&row, "csrf")?,
            last_seen_ms: column(&row, "last_seen_ms")?,
        };
        if now_ms - session.last_seen_ms >= TOUCH_EVERY_MS {
            sqlx::query("UPDATE web_sessions SET last_seen_ms = $1 WHERE id_hash = $2")
                .bind(now_ms)
                .bind(id_hash)
                .execute(&self.pool)
                .await
                .map_err(StoreError::query("mark a web session used"))?;
        }
        Ok(Some(session))
    }

    /// Clears what can no longer sign anyone in: links past their expiry (used or not)
    /// and sessions unused for `session_idle_ms`. Using a link or a session clears
    /// these too; this is for the ones nobody comes back to (the hourly sweep,
    /// [`super::retention::keep_pruning`]).
    pub async fn clear_expired_web(&self, now_ms: i64, session_idle_ms: i64) -> Result<ClearedWeb> {
        let sign_in_links = sqlx::query("DELETE FROM web_sign_in_links WHERE expires_at_ms <= $1")
            .bind(now_ms)
            .execute(&self.pool)
            .await
            .map_err(StoreError::query("clear expired sign-in links"))?
            .rows_affected();
        let sessions = sqlx::query("DELETE FROM web_sessions WHERE last_seen_ms < $1")
            .bind(now_ms.saturating_sub(session_idle_ms))
            .execute(&self.pool)
            .await
            .map_err(StoreError::query("end idle web sessions"))?
            .rows_affected();
        Ok(ClearedWeb { sign_in_links, sessions })
    }

    /// Signs a session out.
    pub async fn end_web_session(&self, id_hash: &str) -> Result<()> {
        sqlx::query("DELETE FROM web_sessions WHERE id_hash = $1").bind(id_hash).execute(&self.pool).await.map_err(StoreError::query("end a web session"))?;
        Ok(())
    }

    /// Audit entries newest first, strictly before row `before_id` when given, matching
    /// `filter`; up to `limit`.
    pub async fn audit_newest(&self, filter: &AuditFilter, before_id: Option<i64>, limit: i64) -> Result<Vec<AuditRow>> {
        // The actor column is the `Actor` as JSON, written by serde in field order.
        let person = filter.person.as_deref().and_then(|p| p.split_once(':')).map(|(platform, id)| {
            let quoted = |s: &str| serde_json::to_string(s).unwrap_or_default();
            format!("%\"platform\":{},\"user_id\":{},%", quoted(platform), quoted(id))
        });
        let rows = sqlx::query(
            "SELECT id, at_ms, session_id, approval_key, interaction_id, actor, outcome, reply,
                    original_args, edited_args, latency_ms, agent, kind, tools, reason, attempts
             FROM audit_log
             WHERE id < $1 AND ($2 = '' OR agent = $2) AND ($3 = '' OR outcome = $3) AND ($4 = '' OR actor LIKE $4)
             ORDER BY id DESC LIMIT $5",
        )
        .bind(before_id.unwrap_or(i64::MAX))
        .bind(filter.agent.clone().unwrap_or_default())
        .bind(filter.outcome.clone().unwrap_or_default())
        .bind(person.unwrap_or_default())
        .bind(limit)
        .fetch_all(&self.pool)
        .await
        .map_err(StoreError::query("read the audit log newest first"))?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let id: i64 = column(row, "id")?;
            if let Some(entry) = skip_corrupt(audit::decode_row(row)) {
                out.push(AuditRow { id, entry });
            }
        }
        Ok(out)
    }

    /// A mark that changes whenever a request is stored pending or settled (the
    /// pending count and the newest audit row): what the inbox's live updates poll.
    pub async fn web_change_mark(&self) -> Result<(i64, i64)> {
        let row = sqlx::query(
            "SELECT (SELECT COUNT(*) FROM interactions WHERE status = 'pending') AS pending,
                    (SELECT COALESCE(MAX(id), 0) FROM audit_log) AS audit",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(StoreError::query("read the inbox's change mark"))?;
        Ok((column(&row, "pending")?, column(&row, "audit")?))
    }
}

fn decode_actor(row: &AnyRow, what: &'static str, table: &'static str) -> Result<Actor> {
    let actor: String = column(row, "actor")?;
    json::decode(&actor, what, table)
}
