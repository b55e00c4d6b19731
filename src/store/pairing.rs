//! Pairing (`pairing_codes`, `paired_users`): the codes shown to strangers and the
//! users an admin approved. The store only remembers; whether someone may talk is
//! [`crate::interaction::admission`]'s call, and codes are made there too.

use sqlx::any::AnyRow;

use super::Store;
use super::chats::ChatKey;
use super::error::{Result, StoreError};
use super::json;
use super::row::column;
use crate::interaction::Actor;
use crate::interaction::admission::normalize_code;

/// A code shown to a stranger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairingCode {
    pub code: String,
    pub expires_at_ms: i64,
}

/// Someone an admin paired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairedUser {
    pub platform: String,
    pub user_id: String,
    pub user_name: String,
    /// Where they asked for the code: where they are told they may talk.
    pub chat: ChatKey,
    /// The language they were answered in there (`en`, `vi`, `zh`).
    pub locale: String,
    pub paired_at_ms: i64,
    /// Who approved: `cli`, or `platform:user_id` of the admin.
    pub paired_by: String,
}

/// Why a code was not approved. Nothing changed.
#[derive(Debug, thiserror::Error)]
pub enum PairError {
    #[error("no pairing code {0} is waiting (check the spelling, or ask the person to send a message again)")]
    Unknown(String),
    #[error("pairing code {0} has expired; ask the person to send a message for a new one")]
    Expired(String),
    /// An admin tried to approve the code they were given themselves.
    #[error("pairing code {0} is your own; another admin must approve it")]
    OwnCode(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Store {
    /// The code for `actor`: the one still valid at `now_ms` if there is one (asking
    /// again shows the same code), else `fresh()` stored until `now_ms + ttl_ms`.
    /// Expired codes are cleared on the way.
    pub async fn pairing_code(
        &self,
        actor: &Actor,
        chat: &ChatKey,
        locale: &str,
        now_ms: i64,
        ttl_ms: i64,
        mut fresh: impl FnMut() -> String,
    ) -> Result<PairingCode> {
        sqlx::query("DELETE FROM pairing_codes WHERE expires_at_ms <= $1")
            .bind(now_ms)
            .execute(&self.pool)
            .await
            .map_err(StoreError::query("clear expired pairing codes"))?;
        // Two tries: a fresh code colliding with a live one is astronomically rare,
        // and then the second draw is used.
        for _ in 0..2 {
            if let Some(existing) = self.valid_code_of(actor, now_ms).await? {
                return Ok(existing);
            }
            let code = PairingCode { code: fresh(), expires_at_ms: now_ms.saturating_add(ttl_ms) };
            let done = sqlx::query(
                "INSERT INTO pairing_codes (code, platform, user_id, user_name, chat, locale, created_at_ms, expires_at_ms)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (code) DO NOTHING",
            )
            .bind(code.code.as_str())
            .bind(actor.platform.as_str())
            .bind(actor.user_id.as_str())
            .bind(actor.name.as_str())
            .bind(json::encode(chat, "pairing chat")?)
            .bind(locale)
            .bind(now_ms)
            .bind(code.expires_at_ms)
            .execute(&self.pool)
            .await
            .map_err(StoreError::query("store a pairing code"))?;
            if done.rows_affected() == 1 {
                return Ok(code);
            }
        }
        Err(StoreError::WrongState { op: "issue", id: "pairing code".into(), reason: "two fresh codes collided" })
    }

    /// The codes still valid at `now_ms`, oldest first, with whom each was given to
    /// (`demo --telegram` asks in the terminal about each).
    pub async fn waiting_pairing_codes(&self, now_ms: i64) -> Result<Vec<(PairingCode, Actor)>> {
        let rows = sqlx::query(
            "SELECT code, expires_at_ms, platform, user_id, user_name FROM pairing_codes
             WHERE expires_at_ms > $1 ORDER BY created_at_ms, code",
        )
        .bind(now_ms)
        .fetch_all(&self.pool)
        .await
        .map_err(StoreError::query("list waiting pairing codes"))?;
        rows.iter()
            .map(|row| {
                let code = PairingCode { code: column(row, "code")?, expires_at_ms: column(row, "expires_at_ms")? };
                let actor = Actor::new(column(row, "platform")?, column(row, "user_id")?, column(row, "user_name")?);
                Ok((code, actor))
            })
            .collect()
    }

    async fn valid_code_of(&self, actor: &Actor, now_ms: i64) -> Result<Option<PairingCode>> {
        let row = sqlx::query(
            "SELECT code, expires_at_ms FROM pairing_codes
             WHERE platform = $1 AND user_id = $2 AND expires_at_ms > $3 ORDER BY expires_at_ms DESC LIMIT 1",
        )
        .bind(actor.platform.as_str())
        .bind(actor.user_id.as_str())
        .bind(now_ms)
        .fetch_optional(&self.pool)
        .await
        .map_err(StoreError::query("load a pairing code"))?;
        row.map(|r| Ok(PairingCode { code: column(&r, "code")?, expires_at_ms: column(&r, "expires_at_ms")? })).transpose()
    }

    /// Approves `code` (already normalized): its user is paired from now on and the
    /// code is used up, in one transaction. `admin` is the person approving from a
    /// chat (`None` from the CLI): never the code's own user. `notified` marks the
    /// user as already told (the caller tells them itself).
    /// Approves a code as a person typed it (case, spaces and dashes ignored), shared by
    /// the CLI (`hitl-bridge pair`), the demo and an admin's `/pair CODE`. `admin` is
    /// who approved from a chat (`None`: the CLI); `notified` says the caller tells the
    /// user itself (else a running bridge does, within its rescan interval).
    pub async fn approve_typed_pairing(&self, typed: &str, admin: Option<&Actor>, now_ms: i64, notified: bool) -> Result<PairedUser, PairError> {
        let code = normalize_code(typed).ok_or_else(|| PairError::Unknown(typed.trim().to_owned()))?;
        let by = admin.map_or_else(|| "cli".to_owned(), |a| format!("{}:{}", a.platform, a.user_id));
        self.approve_pairing(&code, &by, admin, now_ms, notified).await
    }

    pub async fn approve_pairing(&self, code: &str, paired_by: &str, admin: Option<&Actor>, now_ms: i64, notified: bool) -> Result<PairedUser, PairError> {
        let mut tx = self.pool.begin().await.map_err(StoreError::query("begin pairing"))?;
        // Taken with a write, not read first: on SQLite a transaction that reads and
        // then writes fails at once ("database is locked") when another connection
        // wrote in between, whereas a first write waits its turn (busy_timeout). An
        // expired or own code returns before the commit, so it is not used up.
        let row = sqlx::query("DELETE FROM pairing_codes WHERE code = $1 RETURNING platform, user_id, user_name, chat, locale, expires_at_ms")
            .bind(code)
            .fetch_optional(&mut *tx)
            .await
            .map_err(StoreError::query("find a pairing code"))?
            .ok_or_else(|| PairError::Unknown(code.to_owned()))?;
        let expires_at_ms: i64 = column(&row, "expires_at_ms")?;
        if expires_at_ms <= now_ms {
            return Err(PairError::Expired(code.to_owned()));
        }
        let (platform, user_id): (String, String) = (column(&row, "platform")?, column(&row, "user_id")?);
        if admin.is_some_and(|a| a.platform == platform && a.user_id == user_id) {
            return Err(PairError::OwnCode(code.to_owned()));
        }
        let chat_text: String = column(&row, "chat")?;
        let user = PairedUser {
            platform,
            user_id,
            user_name: column(&row, "user_name")?,
            chat: json::decode(&chat_text, "pairing chat", code)?,
            locale: column(&row, "locale")?,
            paired_at_ms: now_ms,
            paired_by: paired_by.to_owned(),
        };
        sqlx::query(
            "INSERT INTO paired_users (platform, user_id, user_name, chat, locale, paired_at_ms, paired_by, notified_at_ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (platform, user_id) DO UPDATE SET user_name = excluded.user_name, chat = excluded.chat,
                 locale = excluded.locale, paired_at_ms = excluded.paired_at_ms, paired_by = excluded.paired_by,
                 notified_at_ms = excluded.notified_at_ms",
        )
        .bind(user.platform.as_str())
        .bind(user.user_id.as_str())
        .bind(user.user_name.as_str())
        .bind(chat_text.as_str())
        .bind(user.locale.as_str())
        .bind(now_ms)
        .bind(paired_by)
        .bind(notified.then_some(now_ms))
        .execute(&mut *tx)
        .await
        .map_err(StoreError::query("pair a user"))?;
        sqlx::query("DELETE FROM pairing_codes WHERE platform = $1 AND user_id = $2")
            .bind(user.platform.as_str())
            .bind(user.user_id.as_str())
            .execute(&mut *tx)
            .await
            .map_err(StoreError::query("use up a pairing code"))?;
        tx.commit().await.map_err(StoreError::query("commit pairing"))?;
        Ok(user)
    }

    /// Whether an admin paired `actor`.
    pub async fn is_paired(&self, actor: &Actor) -> Result<bool> {
        let row = sqlx::query("SELECT 1 AS found FROM paired_users WHERE platform = $1 AND user_id = $2")
            .bind(actor.platform.as_str())
            .bind(actor.user_id.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(StoreError::query("check pairing"))?;
        Ok(row.is_some())
    }

    /// Every paired user, oldest first.
    pub async fn paired_users(&self) -> Result<Vec<PairedUser>> {
        let rows = sqlx::query(
            "SELECT platform, user_id, user_name, chat, locale, paired_at_ms, paired_by FROM paired_users ORDER BY paired_at_ms, platform, user_id",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(StoreError::query("list paired users"))?;
        Ok(rows.iter().map(decode_paired).filter_map(json::skip_corrupt).collect())
    }

    /// Un-pairs a user; false if they were not paired.
    pub async fn revoke_pairing(&self, platform: &str, user_id: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM paired_users WHERE platform = $1 AND user_id = $2")
            .bind(platform)
            .bind(user_id)
            .execute(&self.pool)
            .await
            .map_err(StoreError::query("revoke pairing"))?;
        Ok(done.rows_affected() > 0)
    }

    /// Paired users nobody has told yet, each claimed (marked told) by this call so
    /// that one replica tells them once.
    pub async fn claim_unnotified_pairings(&self, now_ms: i64) -> Result<Vec<PairedUser>> {
        let rows = sqlx::query("SELECT platform, user_id, user_name, chat, locale, paired_at_ms, paired_by FROM paired_users WHERE notified_at_ms IS NULL")
            .fetch_all(&self.pool)
            .await
            .map_err(StoreError::query("list unnotified pairings"))?;
        let mut claimed = Vec::new();
        for user in rows.iter().map(decode_paired).filter_map(json::skip_corrupt) {
            let done = sqlx::query("UPDATE paired_users SET notified_at_ms = $1 WHERE platform = $2 AND user_id = $3 AND notified_at_ms IS NULL")
                .bind(now_ms)
                .bind(user.platform.as_str())
                .bind(user.user_id.as_str())
                .execute(&self.pool)
                .await
                .map_err(StoreError::query("claim a pairing notice"))?;
            if done.rows_affected() == 1 {
                claimed.push(user);
            }
        }
        Ok(claimed)
    }
}

fn decode_paired(row: &AnyRow) -> Result<PairedUser> {
    let platform: String = column(row, "platform")?;
    let user_id: String = column(row, "user_id")?;
    let chat: String = column(row, "chat")?;
    Ok(PairedUser {
        chat: json::decode(&chat, "paired user chat", format!("{platform}:{user_id}"))?,
        platform,
        user_id,
        user_name: column(row, "user_name")?,
        locale: column(row, "locale")?,
        paired_at_ms: column(row, "paired_at_ms")?,
        paired_by: column(row, "paired_by")?,
    })
}
