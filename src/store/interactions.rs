//! The `interactions` table: each [`Interaction`] stored whole as JSON in `body`, with
//! the columns the store filters on (session, approval key, status, times) copied out.
//! Settling, the one multi-table write, lives here too: it must be a single transaction
//! (on SQLite shared with other writes by [`super::group_commit`]).

use std::collections::{HashMap, HashSet};

use futures_util::TryStreamExt;
use futures_util::future::BoxFuture;
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, AnyExecutor};

use super::Store;
use super::audit_entry::AuditEntry;
use super::chats::ChatKey;
use super::deferred::{Deferred, OutboxId};
use super::error::{Result, StoreError};
use super::group_commit::{Write, apply_each, run_of, statement_len};
use super::json::{self, skip_corrupt};
use super::outbox::Queued;
use super::placeholders::{Marks, bind_keys, list_statement, padded_len, run_time_statement};
use super::row::column;
use super::rules::insert_rule;
use super::shared_reads::SharedRead;
use super::shows::{ShowClaim, insert_shows};
use crate::interaction::{Interaction, RememberedRule, Revision, Status};
use crate::protocol::Command;

/// What a shard needs of a pending interaction to watch it: where it goes and when
/// its deadline and its policy's next escalation step are due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingTimers {
    pub id: String,
    pub session_id: String,
    pub deadline_ms: i64,
    /// When its policy's next escalation step is due, if one is left.
    pub escalation_ms: Option<i64>,
}

impl PendingTimers {
    pub fn of(interaction: &Interaction) -> Self {
        Self {
            id: interaction.id.clone(),
            session_id: interaction.session_id.clone(),
            deadline_ms: interaction.deadline_ms,
            escalation_ms: interaction.next_escalation_at(),
        }
    }
}

/// The value of the `status` column while an interaction is open.
fn pending() -> &'static str {
    Status::Pending.name()
}

impl Store {
    /// Stores a new interaction. Returns false, changing nothing, if one with the same
    /// `(session_id, approval_key)` exists: a replayed request is not a new one.
    pub async fn insert_interaction(&self, i: &Interaction) -> Result<bool> {
        insert_interaction(&self.pool, i).await
    }

    /// One interaction by its short id. An unreadable row is an error here (the caller
    /// asked for exactly this one), unlike in listings where it is skipped.
    /// Inserts a new interaction with the chats it must be shown in, claimed by the
    /// caller (who shows it now), in one transaction: a crash cannot leave a request
    /// that nobody will ever show. False (nothing written) for a replay.
    pub async fn insert_interaction_to_show(&self, i: &Interaction, chats: &[ChatKey], claim: &ShowClaim, now_ms: i64) -> Result<bool> {
        self.write(InsertToShow { interaction: i.clone(), chats: chats.to_vec(), claim: claim.clone(), now_ms }).await
    }

    /// The interaction `id`, read with the loads asked meanwhile ([`Load`]): `None`
    /// when there is none, an error when its row cannot be read.
    pub async fn interaction(&self, id: &str) -> Result<Option<Interaction>> {
        self.loads.ask(id.to_owned()).await?
    }

    /// The interactions with these ids, in the order given, in one query; ids not
    /// found (pruned) and unreadable rows are left out. For a page of a list: a few
    /// dozen ids.
    pub async fn interactions_by_ids(&self, ids: &[String]) -> Result<Vec<Interaction>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.pool.acquire().await.map_err(StoreError::query("load interactions"))?;
        let sql = format!("SELECT id, body, revision FROM interactions WHERE id IN ({})", Marks::of(&conn).list(1, padded_len(ids.len())));
        // Safe: the text is only value marks; every value is bound.
        let select = bind_keys(list_statement(sql), ids, String::as_str);
        let rows = select.fetch_all(&mut *conn).await.map_err(StoreError::query("load interactions"))?;
        let mut found: HashMap<String, Interaction> = decode_rows(&rows).into_iter().map(|i| (i.id.clone(), i)).collect();
        Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
    }

    pub async fn interaction_by_key(&self, session_id: &str, approval_key: &str) -> Result<Option<Interaction>> {
        let row = sqlx::query("SELECT id, body, revision FROM interactions WHERE session_id = $1 AND approval_key = $2")
            .bind(session_id)
            .bind(approval_key)
            .fetch_optional(&self.pool)
            .await
            .map_err(StoreError::query("load interaction by approval key"))?;
        row.as_ref().map(decode_row).transpose()
    }

    /// Every pending interaction, in all sessions, oldest first (timers, restart).
    pub async fn pending_interactions(&self) -> Result<Vec<Interaction>> {
        let rows = sqlx::query("SELECT id, body, revision FROM interactions WHERE status = $1 ORDER BY created_at_ms, id")
            .bind(pending())
            .fetch_all(&self.pool)
            .await
            .map_err(StoreError::query("list pending interactions"))?;
        Ok(decode_rows(&rows))
    }

    /// Every pending interaction's session and timers, oldest first (a restart, a
    /// rescan); only those created at or after `created_since`, when given (a
    /// rescan's look back, on the `(status, created_at_ms)` index). Rows are decoded one at a time and their bodies dropped, so listing
    /// thousands pending holds no more than one of them at once.
    ///
    /// Reads the timer columns, not the bodies: a replica rescans every pending
    /// request every few seconds. Rows written before the columns existed are decoded
    /// once and their columns filled in.
    pub async fn pending_timers(&self, created_since: Option<i64>) -> Result<Vec<PendingTimers>> {
        let mut rows = sqlx::query(
            "SELECT id, session_id, deadline_ms, escalation_ms, timers_known, revision, CASE WHEN timers_known = 0 THEN body END AS body
             FROM interactions WHERE status = $1 AND created_at_ms >= $2 ORDER BY created_at_ms, id",
        )
        .bind(pending())
        .bind(created_since.unwrap_or(i64::MIN))
        .fetch(&self.pool);
        let mut timers = Vec::new();
        let mut unknown = Vec::new();
        while let Some(row) = rows.try_next().await.map_err(StoreError::query("list pending interactions' timers"))? {
            if column::<i64>(&row, "timers_known")? != 0 {
                timers.push(PendingTimers {
                    id: column(&row, "id")?,
                    session_id: column(&row, "session_id")?,
                    deadline_ms: column(&row, "deadline_ms")?,
                    escalation_ms: column(&row, "escalation_ms")?,
                });
            } else if let Some(interaction) = skip_corrupt(decode_row(&row)) {
                unknown.push((interaction.revision.0, PendingTimers::of(&interaction)));
            }
        }
        drop(rows);
        for (revision, found) in unknown {
            // Best effort: a row changed meanwhile is read from its body next time.
            let filled = sqlx::query("UPDATE interactions SET escalation_ms = $1, timers_known = 1 WHERE id = $2 AND revision = $3")
                .bind(found.escalation_ms)
                .bind(found.id.as_str())
                .bind(revision)
                .execute(&self.pool)
                .await;
            if let Err(e) = filled {
                tracing::warn!(interaction = %found.id, error = %e, "cannot fill in a pending request's timer columns");
            }
            timers.push(found);
        }
        Ok(timers)
    }

    /// The session's pending interactions, oldest first.
    pub async fn pending_in_session(&self, session_id: &str) -> Result<Vec<Interaction>> {
        let rows = sqlx::query("SELECT id, body, revision FROM interactions WHERE session_id = $1 AND status = $2 ORDER BY created_at_ms, id")
            .bind(session_id)
            .bind(pending())
            .fetch_all(&self.pool)
            .await
            .map_err(StoreError::query("list pending interactions of a session"))?;
        Ok(decode_rows(&rows))
    }

    /// Whether `session_id` has an interaction pending; reads no body.
    pub async fn has_pending_in_session(&self, session_id: &str) -> Result<bool> {
        let row = sqlx::query("SELECT id FROM interactions WHERE session_id = $1 AND status = $2 LIMIT 1")
            .bind(session_id)
            .bind(pending())
            .fetch_optional(&self.pool)
            .await
            .map_err(StoreError::query("look for pending interactions of a session"))?;
        Ok(row.is_some())
    }

    /// Every interaction of the session, whatever its status, oldest first (history
    /// matching must see requests asked again).
    pub async fn interactions_in_session(&self, session_id: &str) -> Result<Vec<Interaction>> {
        let rows = sqlx::query("SELECT id, body, revision FROM interactions WHERE session_id = $1 ORDER BY created_at_ms, id")
            .bind(session_id)
            .fetch_all(&self.pool)
            .await
            .map_err(StoreError::query("list interactions of a session"))?;
        Ok(decode_rows(&rows))
    }

    /// Stores the body of a settled interaction whose delivery state changed. Its
    /// status column is not touched: a settled interaction stays settled.
    pub async fn save_delivery(&self, i: &Interaction) -> Result<()> {
        let body = json::encode(i, "interaction")?;
        self.write(SaveBody { id: i.id.clone(), status: i.status.name(), revision: None, body, access: access_column(i)?, what: "save delivery state" })
            .await?;
        Ok(())
    }

    /// Pending interactions shown by a message in `chat`, oldest first (`/pending`).
    pub async fn pending_in_chat(&self, chat: &ChatKey) -> Result<Vec<Interaction>> {
        let rows = sqlx::query(
            "SELECT DISTINCT i.id, i.body, i.revision, i.created_at_ms FROM interactions i
             JOIN message_refs m ON m.interaction_id = i.id
             WHERE i.status = $1 AND m.platform = $2 AND m.chat_id = $3 AND m.thread_id = $4
             ORDER BY i.created_at_ms, i.id",
        )
        .bind(pending())
        .bind(chat.platform.as_str())
        .bind(chat.chat_id.as_str())
        .bind(chat.thread_column())
        .fetch_all(&self.pool)
        .await
        .map_err(StoreError::query("list pending interactions of a chat"))?;
        Ok(decode_rows(&rows))
    }

    /// Stores the draft of a pending interaction, only over the row `i` was read from:
    /// false, changing nothing, when the row was written since (another vote, another
    /// replica's draft, a settle) or is no longer pending. The caller reads it again
    /// and retries on the fresh copy; a saved `i` is itself stale afterwards.
    pub async fn save_draft(&self, i: &Interaction) -> Result<bool> {
        if !i.status.is_pending() {
            // Writing a settled body under a 'pending' status column would split the row.
            return Err(StoreError::WrongState { op: "save the draft of", id: i.id.clone(), reason: "it is settled; use settle" });
        }
        let body = json::encode(i, "interaction")?;
        self.write(SaveBody { id: i.id.clone(), status: pending(), revision: Some(i.revision.0), body, access: access_column(i)?, what: "save draft" }).await
    }

    /// Records that `i` has ended (its status is no longer pending): in one
    /// transaction, marks it settled only if it is still pending in the database, then
    /// queues `command` for the backend, then appends `audit`.
    ///
    /// Returns [`Settled::Lost`] and changes nothing if it was already settled: with
    /// several replicas (or a timer racing a click) the first decision wins and later
    /// ones must neither send a second reply nor log a second outcome.
    pub async fn settle(&self, i: &Interaction, command: Option<&Command>, audit: &AuditEntry) -> Result<Settled> {
        self.settle_over(i, command, audit, None, None).await
    }

    /// Settles `i` as a person decided it, from the copy they acted on: only if the row
    /// is still pending *and* still at the revision `i` was read at, so a decision
    /// computed from a stale draft (a vote another replica saved meanwhile, answers
    /// changed by another click) never overwrites it; the caller reads again and
    /// re-applies the action. `rule`, the rule an approval "for this session" /
    /// "always" sets ([`Store::save_rule`]), is stored in the same transaction, so a
    /// rule never exists for a decision that lost its race.
    ///
    /// Timers and the backend settle with [`Store::settle`], on the status alone.
    pub async fn settle_decision(&self, i: &Interaction, command: Option<&Command>, audit: &AuditEntry, rule: Option<&RememberedRule>) -> Result<Settled> {
        self.settle_over(i, command, audit, rule, Some(i.revision.0)).await
    }

    async fn settle_over(
        &self,
        i: &Interaction,
        command: Option<&Command>,
        audit: &AuditEntry,
        rule: Option<&RememberedRule>,
        revision: Option<i64>,
    ) -> Result<Settled> {
        if i.status.is_pending() {
            return Err(StoreError::WrongState { op: "settle", id: i.id.clone(), reason: "it is still pending" });
        }
        let outbox_id = OutboxId::default();
        let settle = Settle {
            id: i.id.clone(),
            status: i.status.name(),
            body: json::encode(i, "interaction")?,
            access: access_column(i)?,
            command: command.cloned(),
            audit: audit.clone(),
            rule: rule.cloned(),
            revision,
            outbox_id: outbox_id.clone(),
        };
        if !self.write(settle).await? {
            return Ok(Settled::Lost);
        }
        let queued = command.zip(outbox_id.get()).map(|(command, &id)| Queued { id, created_at_ms: audit.at_ms, command: command.clone() });
        Ok(Settled::Won { queued })
    }
}

/// What a settle did.
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub enum Settled {
    /// The interaction was no longer pending (or, for a person's decision, no longer at
    /// the revision it was read at): nothing changed.
    Lost,
    /// Settled, with the command it queued as the outbox now holds it, for the
    /// connector to send without reading it back (`None` without a command, or in the
    /// rare case its id could not be told: the connector reads the outbox then).
    Won { queued: Option<Queued> },
}

impl Settled {
    pub fn won(&self) -> bool {
        matches!(self, Settled::Won { .. })
    }
}

/// A new interaction with the chats it must be shown in: nothing when it is a replay.
struct InsertToShow {
    interaction: Interaction,
    chats: Vec<ChatKey>,
    claim: ShowClaim,
    now_ms: i64,
}

impl Write for InsertToShow {
    fn apply<'a>(&'a self, conn: &'a mut AnyConnection, _deferred: &'a mut Deferred) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            if !insert_interaction(&mut *conn, &self.interaction).await? {
                return Ok(false);
            }
            insert_shows(conn, &self.interaction.id, &self.chats, &self.claim, self.now_ms).await?;
            Ok(true)
        })
    }
}

/// A new body for an interaction whose status column is `status`, which it keeps:
/// nothing when the status changed meanwhile, or, with `revision`, when the row is no
/// longer at that revision.
struct SaveBody {
    id: String,
    status: &'static str,
    revision: Option<i64>,
    body: String,
    /// Its [`access_column`], written with it.
    access: String,
    what: &'static str,
}

impl Write for SaveBody {
    fn apply<'a>(&'a self, conn: &'a mut AnyConnection, _deferred: &'a mut Deferred) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            let done = match self.revision {
                Some(revision) => {
                    sqlx::query("UPDATE interactions SET body = $1, access = $2, access_revision = revision + 1, revision = revision + 1 WHERE id = $3 AND status = $4 AND revision = $5")
                        .bind(self.body.as_str())
                        .bind(self.access.as_str())
                        .bind(self.id.as_str())
                        .bind(self.status)
                        .bind(revision)
                }
                None => sqlx::query("UPDATE interactions SET body = $1, access = $2, access_revision = revision + 1, revision = revision + 1 WHERE id = $3 AND status = $4")
                    .bind(self.body.as_str())
                    .bind(self.access.as_str())
                    .bind(self.id.as_str())
                    .bind(self.status),
            }
            .execute(conn)
            .await
            .map_err(StoreError::query(self.what))?;
            Ok(done.rows_affected() > 0)
        })
    }

    fn runs_together(&self) -> bool {
        true
    }

    /// Bodies saved one after another (a burst's proofs of delivery) share one
    /// `UPDATE` per [`SAVES_PER_STATEMENT`], each row with its own `WHERE` as alone. A
    /// second save of the same interaction starts the next statement, so it sees the
    /// first one's outcome, as it would in turn.
    fn apply_run<'a>(&'a self, run: &'a [&'a dyn Write], conn: &'a mut AnyConnection, deferred: &'a mut Deferred) -> BoxFuture<'a, Result<Vec<bool>>> {
        Box::pin(async move {
            let Some(saves) = run_of::<SaveBody>(run) else { return apply_each(run, conn, deferred).await };
            let mut outcomes = Vec::with_capacity(saves.len());
            let mut rest = saves.as_slice();
            while !rest.is_empty() {
                let (statement, after) = rest.split_at(statement_len(rest, SAVES_PER_STATEMENT, |save| save.id.as_str()));
                match statement {
                    [one] => outcomes.push(one.apply(&mut *conn, &mut *deferred).await?),
                    many => outcomes.extend(save_together(many, &mut *conn).await?),
                }
                rest = after;
            }
            Ok(outcomes)
        })
    }
}

/// Saved bodies per statement: 5 values each.
const SAVES_PER_STATEMENT: usize = 64;

/// `saves` (of distinct interactions) in one statement: each row written only where
/// its own save would have been (at its status, and at the revision it was read at
/// when it has one). Returns each one's outcome, in order.
async fn save_together(saves: &[&SaveBody], conn: &mut AnyConnection) -> Result<Vec<bool>> {
    let sql = format!(
        "WITH saved (saved_id, saved_status, new_body, new_access, read_revision) AS (VALUES {})
         UPDATE interactions SET body = saved.new_body, access = saved.new_access, access_revision = revision + 1, revision = revision + 1
         FROM saved
         WHERE interactions.id = saved.saved_id AND interactions.status = saved.saved_status
           AND (saved.read_revision IS NULL OR interactions.revision = saved.read_revision)
         RETURNING id",
        Marks::of(conn).rows(saves.len(), 5)
    );
    // Safe: the text is fixed but for value marks; every value is bound.
    let update = saves.iter().fold(run_time_statement(sql), |query, save| {
        query.bind(save.id.as_str()).bind(save.status).bind(save.body.as_str()).bind(save.access.as_str()).bind(save.revision)
    });
    let rows = update.fetch_all(&mut *conn).await.map_err(StoreError::query("save interactions"))?;
    let saved = rows.iter().map(|row| column::<String>(row, "id")).collect::<Result<HashSet<String>>>()?;
    Ok(saves.iter().map(|save| saved.contains(&save.id)).collect())
}

/// A settle: nothing when the interaction is no longer pending in the database.
struct Settle {
    id: String,
    status: &'static str,
    body: String,
    /// Its [`access_column`], written with it.
    access: String,
    command: Option<Command>,
    audit: AuditEntry,
    /// Stored with the settle ([`Store::settle_decision`]).
    rule: Option<RememberedRule>,
    /// Only over this revision ([`Store::settle_decision`]); `None`: first wins on the
    /// status alone.
    revision: Option<i64>,
    /// Told the outbox id of `command` once the settle has committed.
    outbox_id: OutboxId,
}

impl Write for Settle {
    fn apply<'a>(&'a self, conn: &'a mut AnyConnection, deferred: &'a mut Deferred) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            // First wins on the status (and, for a person's decision, the revision it
            // was read at); every settle bumps the revision.
            let update = match self.revision {
                Some(revision) => {
                    sqlx::query(
                        "UPDATE interactions SET status = $1, body = $2, access = $6, access_revision = revision + 1, revision = revision + 1 WHERE id = $3 AND status = $4 AND revision = $5",
                    )
                    .bind(self.status)
                    .bind(self.body.as_str())
                    .bind(self.id.as_str())
                    .bind(pending())
                    .bind(revision)
                    .bind(self.access.as_str())
                }
                None => sqlx::query("UPDATE interactions SET status = $1, body = $2, access = $5, access_revision = revision + 1, revision = revision + 1 WHERE id = $3 AND status = $4")
                    .bind(self.status)
                    .bind(self.body.as_str())
                    .bind(self.id.as_str())
                    .bind(pending())
                    .bind(self.access.as_str()),
            };
            let done = update.execute(&mut *conn).await.map_err(StoreError::query("settle interaction"))?;
            if done.rows_affected() == 0 {
                return Ok(false);
            }
            self.won(conn, deferred).await?;
            Ok(true)
        })
    }

    fn runs_together(&self) -> bool {
        true
    }

    /// Settles queued one after another (a burst of decisions) run as one `UPDATE`
    /// per [`SETTLES_PER_STATEMENT`], each row with its own `WHERE` as alone. A
    /// second settle of the same interaction starts the next statement, so it sees
    /// the first one's outcome, as it would in turn.
    fn apply_run<'a>(&'a self, run: &'a [&'a dyn Write], conn: &'a mut AnyConnection, deferred: &'a mut Deferred) -> BoxFuture<'a, Result<Vec<bool>>> {
        Box::pin(async move {
            let Some(settles) = run_of::<Settle>(run) else { return apply_each(run, conn, deferred).await };
            let mut outcomes = Vec::with_capacity(settles.len());
            let mut rest = settles.as_slice();
            while !rest.is_empty() {
                let (statement, after) = rest.split_at(statement_len(rest, SETTLES_PER_STATEMENT, |settle| settle.id.as_str()));
                match statement {
                    [one] => outcomes.push(one.apply(&mut *conn, &mut *deferred).await?),
                    many => outcomes.extend(settle_together(many, &mut *conn, &mut *deferred).await?),
                }
                rest = after;
            }
            Ok(outcomes)
        })
    }
}

impl Settle {
    /// What a settle that won writes besides its row: its command and audit entry
    /// (at the end of the transaction), its rule, and the end of its shows.
    async fn won(&self, conn: &mut AnyConnection, deferred: &mut Deferred) -> Result<()> {
        if let Some(command) = &self.command {
            // Queued at the settle time: the audit entry carries it.
            deferred.command(command, self.audit.at_ms, &self.outbox_id);
        }
        deferred.audit(&self.audit);
        if let Some(rule) = &self.rule {
            insert_rule(&mut *conn, rule).await?;
        }
        deferred.forget_ended(&self.id);
        Ok(())
    }
}

/// Settles per statement: 5 values each.
const SETTLES_PER_STATEMENT: usize = 64;

/// `settles` (of distinct interactions) in one statement: each row updated only where
/// its own settle would have been (still pending, and at the revision it was read at
/// when it has one). Returns each one's outcome, in order.
async fn settle_together(settles: &[&Settle], conn: &mut AnyConnection, deferred: &mut Deferred) -> Result<Vec<bool>> {
    let marks = Marks::of(conn);
    // Both databases take `UPDATE … FROM` a named list of values (SQLite 3.33 on) and
    // `RETURNING` (SQLite 3.35 on); the list's names differ from the table's, so each
    // name below is one column.
    let sql = format!(
        "WITH settled (settled_id, new_status, new_body, new_access, read_revision) AS (VALUES {})
         UPDATE interactions SET status = settled.new_status, body = settled.new_body, access = settled.new_access,
                                 access_revision = revision + 1, revision = revision + 1
         FROM settled
         WHERE interactions.id = settled.settled_id AND interactions.status = {}
           AND (settled.read_revision IS NULL OR interactions.revision = settled.read_revision)
         RETURNING id",
        marks.rows(settles.len(), 5),
        marks.list(settles.len() * 5 + 1, 1)
    );
    // Safe: the text is only value marks; every value is bound.
    let update = settles.iter().fold(run_time_statement(sql), |query, settle| {
        query.bind(settle.id.as_str()).bind(settle.status).bind(settle.body.as_str()).bind(settle.access.as_str()).bind(settle.revision)
    });
    let rows = update.bind(pending()).fetch_all(&mut *conn).await.map_err(StoreError::query("settle interactions"))?;
    let settled = rows.iter().map(|row| column::<String>(row, "id")).collect::<Result<HashSet<String>>>()?;
    let mut outcomes = Vec::with_capacity(settles.len());
    for settle in settles {
        let won = settled.contains(&settle.id);
        if won {
            settle.won(conn, deferred).await?;
        }
        outcomes.push(won);
    }
    Ok(outcomes)
}

/// Inserts on any executor, so a push can store its interaction in its transaction.
pub(super) async fn insert_interaction<'e>(executor: impl AnyExecutor<'e>, i: &Interaction) -> Result<bool> {
    let body = json::encode(i, "interaction")?;
    let done = sqlx::query(
        "INSERT INTO interactions (id, session_id, approval_key, status, deadline_ms, created_at_ms, body, kind, escalation_ms, timers_known, access, access_revision)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 1, $10, 0)
         ON CONFLICT (session_id, approval_key) DO NOTHING",
    )
    .bind(i.id.as_str())
    .bind(i.session_id.as_str())
    .bind(i.approval_key())
    .bind(i.status.name())
    .bind(i.deadline_ms)
    .bind(i.created_at_ms)
    .bind(body)
    .bind(kind_column(i))
    .bind(i.next_escalation_at())
    .bind(access_column(i)?)
    .execute(executor)
    .await
    .map_err(StoreError::query("insert interaction"))?;
    Ok(done.rows_affected() > 0)
}

/// The `access` column: what the rule of who may act needs of `i`
/// ([`crate::interaction::AccessFacts`]), so the inbox reads it instead of the body.
pub(super) fn access_column(i: &Interaction) -> Result<String> {
    json::encode(&i.access_facts(), "access facts")
}

/// The `kind` column: what the pending gauge groups by.
fn kind_column(i: &Interaction) -> &'static str {
    if i.request.is_question() { "questions" } else { "approval" }
}

impl Store {
    /// How many interactions are pending, as (approvals, questions): two counts on an
    /// index, whatever the number pending.
    pub async fn pending_counts(&self) -> Result<(i64, i64)> {
        let rows = sqlx::query("SELECT kind, COUNT(*) AS n FROM interactions WHERE status = $1 GROUP BY kind")
            .bind(pending())
            .fetch_all(&self.pool)
            .await
            .map_err(StoreError::query("count pending interactions"))?;
        let mut counts = (0, 0);
        for row in &rows {
            let n: i64 = column(row, "n")?;
            match column::<&str>(row, "kind")? {
                "questions" => counts.1 += n,
                _ => counts.0 += n,
            }
        }
        Ok(counts)
    }
}

/// An interaction from a row with `id`, `body` and `revision`.
pub(super) fn decode_row(row: &AnyRow) -> Result<Interaction> {
    let id: &str = column(row, "id")?;
    let mut interaction: Interaction = json::decode(column(row, "body")?, "interaction", id)?;
    interaction.revision = Revision(column(row, "revision")?);
    Ok(interaction)
}

pub(super) fn decode_rows(rows: &[AnyRow]) -> Vec<Interaction> {
    rows.iter().map(decode_row).filter_map(skip_corrupt).collect()
}

/// Interactions loaded by id, a read that asks share ([`SharedReads`](super::shared_reads::SharedReads)): a click loads
/// its request, and a burst of clicks loads hundreds at once. Each ask gets its own
/// row, or `None`, or the error its row alone gave.
pub(super) struct Load;

impl SharedRead for Load {
    type Ask = String;
    type Answer = Result<Option<Interaction>>;
    const WHAT: &'static str = "load interaction";

    fn read<'a>(conn: &'a mut AnyConnection, ids: &'a [String]) -> BoxFuture<'a, Result<Vec<Self::Answer>>> {
        Box::pin(async move {
            let sql = format!("SELECT id, body, revision FROM interactions WHERE id IN ({})", Marks::of(conn).list(1, padded_len(ids.len())));
            // Safe: the text is only value marks; every value is bound.
            let select = bind_keys(list_statement(sql), ids, String::as_str);
            let rows = select.fetch_all(&mut *conn).await.map_err(StoreError::query(Self::WHAT))?;
            let mut by_id: HashMap<&str, &AnyRow> = HashMap::with_capacity(rows.len());
            for row in &rows {
                by_id.insert(column(row, "id")?, row);
            }
            Ok(ids.iter().map(|id| by_id.get(id.as_str()).map(|row| decode_row(row)).transpose()).collect())
        })
    }
}
