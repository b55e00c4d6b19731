//! Turns in progress (`open_turns`): a session whose agent got a message and has not
//! ended its turn yet. Kept in the store, not only in the connection's memory, so that
//! a bridge killed mid-turn, or a replica taking over a dead one's sessions, connects
//! the session again and hears what the agent says next (or said meanwhile).
//!
//! A turn is known by when it opened (`opened_at_ms`), and counts how many of the
//! agent's texts in it the chats have shown (`texts_shown`): after a restart, what the
//! backend's history holds beyond them is relayed once. Both the count and the turn's
//! end are written once the chats have shown what came before, for that turn only, so
//! a late write for a turn that is over never touches the next one.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use sqlx::AnyConnection;

use super::Store;
use super::deferred::Deferred;
use super::error::{Result, StoreError};
use super::group_commit::{Write, apply_each, run_of, statement_len};
use super::placeholders::{Marks, run_time_statement};
use super::row::column;

/// Turns per statement when a run of turn writes shares one (three values each).
const TURNS_PER_STATEMENT: usize = 128;

/// A session's turn in progress, as the store has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenTurn {
    /// When the turn opened; it names the turn in [`Store::note_texts_shown`] and
    /// [`Store::end_turn`].
    pub opened_at_ms: i64,
    /// How many of the agent's texts in this turn the chats have shown.
    pub texts_shown: u64,
}

impl Store {
    /// Notes that `session_id`'s agent is in a turn (a message or a decision went to
    /// it). A turn already open keeps when it was opened and what it has shown. Returns
    /// when the session's turn opened.
    pub async fn open_turn(&self, session_id: &str, now_ms: i64) -> Result<i64> {
        self.write_turn(TurnOpening { session_id: session_id.to_owned(), now_ms, fresh: false, opened_at_ms: Mutex::default() }).await
    }

    /// Notes that `session_id`'s agent starts a new turn: a row the turn before left
    /// (its end is written once the chats have shown its last words, which may come
    /// after this) is replaced, with nothing shown yet and a later `opened_at_ms`, so
    /// that turn's late writes miss this one. Returns when the new turn opened.
    pub async fn start_turn(&self, session_id: &str, now_ms: i64) -> Result<i64> {
        self.write_turn(TurnOpening { session_id: session_id.to_owned(), now_ms, fresh: true, opened_at_ms: Mutex::default() }).await
    }

    /// Writes `opening` in the group commit and returns when the turn opened, as the
    /// committed statement returned it.
    async fn write_turn(&self, opening: TurnOpening) -> Result<i64> {
        let opening = Arc::new(opening);
        self.write(Arc::clone(&opening)).await?;
        let opened_at_ms = *opening.opened_at_ms.lock().unwrap_or_else(|p| p.into_inner());
        // A committed write has run its statement, which always returns the row.
        opened_at_ms.ok_or(StoreError::Query { what: "note a turn", source: sqlx::Error::RowNotFound })
    }

    /// `session_id`'s turn in progress, if the store has one.
    pub async fn open_turn_of(&self, session_id: &str) -> Result<Option<OpenTurn>> {
        let row = sqlx::query("SELECT opened_at_ms, texts_shown FROM open_turns WHERE session_id = $1")
            .bind(session_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(StoreError::query("read an open turn"))?;
        let Some(row) = row else { return Ok(None) };
        let texts_shown: i64 = column(&row, "texts_shown")?;
        Ok(Some(OpenTurn { opened_at_ms: column(&row, "opened_at_ms")?, texts_shown: u64::try_from(texts_shown).unwrap_or(0) }))
    }

    /// Notes that the chats have shown the first `texts` texts of the turn opened at
    /// `opened_at_ms`. Never lowers the count (notes may land out of order), and does
    /// nothing once that turn is over.
    pub async fn note_texts_shown(&self, session_id: &str, opened_at_ms: i64, texts: u64) -> Result<()> {
        let texts = i64::try_from(texts).unwrap_or(i64::MAX);
        self.write(TurnShown { session_id: session_id.to_owned(), opened_at_ms, shown: Shown::Texts(texts) }).await?;
        Ok(())
    }

    /// Notes that the turn opened at `opened_at_ms` ended; a later turn is left alone.
    pub async fn end_turn(&self, session_id: &str, opened_at_ms: i64) -> Result<()> {
        self.write(TurnShown { session_id: session_id.to_owned(), opened_at_ms, shown: Shown::Ended }).await?;
        Ok(())
    }

    /// Notes that `session_id`'s turn ended (or that nobody will hear it end).
    pub async fn close_turn(&self, session_id: &str) -> Result<()> {
        sqlx::query("DELETE FROM open_turns WHERE session_id = $1")
            .bind(session_id)
            .execute(&self.pool)
            .await
            .map_err(StoreError::query("note a turn's end"))?;
        Ok(())
    }

    /// Whether `session_id`'s agent is in a turn, as far as the store knows.
    pub async fn has_open_turn(&self, session_id: &str) -> Result<bool> {
        let row = sqlx::query("SELECT session_id FROM open_turns WHERE session_id = $1")
            .bind(session_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(StoreError::query("look for an open turn"))?;
        Ok(row.is_some())
    }

    /// Sessions in a turn that no replica holds (no lease, or one that lapsed before
    /// `now_ms`): a replica that died mid-turn left them; the caller takes them over.
    pub async fn orphaned_turns(&self, now_ms: i64) -> Result<Vec<String>> {
        let rows = sqlx::query(
            "SELECT t.session_id FROM open_turns t LEFT JOIN session_leases l ON l.session_id = t.session_id
             WHERE l.session_id IS NULL OR l.until_ms < $1 ORDER BY t.session_id",
        )
        .bind(now_ms)
        .fetch_all(&self.pool)
        .await
        .map_err(StoreError::query("list turns no replica holds"))?;
        rows.iter().map(|row| column(row, "session_id")).collect()
    }
}

/// [`Store::open_turn`] and [`Store::start_turn`] as a write of a group commit: one
/// statement, which returns when the turn opened, so no read follows it. In a burst
/// of decisions each opens its session's turn, and they share a commit (on SQLite, one
/// fsync) instead of taking one each.
struct TurnOpening {
    session_id: String,
    now_ms: i64,
    /// A new turn ([`Store::start_turn`]) rather than the one in progress.
    fresh: bool,
    /// When the turn opened, as the last run of the statement returned it: a batch
    /// rolled back and run again alone overwrites what the first run said.
    opened_at_ms: Mutex<Option<i64>>,
}

impl TurnOpening {
    /// The statement that opens turns of this kind (`fresh` or not), `values` holding
    /// the marks of their `(session_id, opened_at_ms)` rows, and returns each session's
    /// opening time.
    /// The update on a conflict is what `RETURNING` needs to give the row that was
    /// there: a turn in progress keeps its time (and what it has shown); a new one is
    /// a moment later than the last, so the last one's late writes miss it.
    fn statement(&self, values: &str) -> String {
        let on_conflict = if self.fresh {
            "opened_at_ms = CASE WHEN open_turns.opened_at_ms >= excluded.opened_at_ms THEN open_turns.opened_at_ms + 1 ELSE excluded.opened_at_ms END,
             texts_shown = 0"
        } else {
            "opened_at_ms = open_turns.opened_at_ms"
        };
        format!(
            "INSERT INTO open_turns (session_id, opened_at_ms) VALUES {values} ON CONFLICT (session_id) DO UPDATE SET {on_conflict} RETURNING session_id, opened_at_ms"
        )
    }

    fn doing(&self) -> &'static str {
        if self.fresh { "note a new turn" } else { "note an open turn" }
    }

    /// Tells this opening when its turn opened.
    fn opened(&self, at_ms: i64) {
        *self.opened_at_ms.lock().unwrap_or_else(|p| p.into_inner()) = Some(at_ms);
    }
}

impl Write for Arc<TurnOpening> {
    fn apply<'a>(&'a self, conn: &'a mut AnyConnection, _deferred: &'a mut Deferred) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            // Safe: the text is fixed but for value marks; every value is bound. One
            // text per kind, so it stays prepared.
            let row = sqlx::query(sqlx::AssertSqlSafe(self.statement("($1, $2)")))
                .bind(self.session_id.as_str())
                .bind(self.now_ms)
                .fetch_one(conn)
                .await
                .map_err(StoreError::query(self.doing()))?;
            self.opened(column(&row, "opened_at_ms")?);
            Ok(true)
        })
    }

    fn is_one_statement(&self) -> bool {
        true
    }

    fn runs_together(&self) -> bool {
        true
    }

    /// Turns opened one after another (a burst of decisions, each opening its
    /// session's turn) share one `INSERT` per kind and [`TURNS_PER_STATEMENT`]. A
    /// session's second opening, or one of the other kind, starts the next statement,
    /// so it sees the first one's outcome, as it would in turn.
    fn apply_run<'a>(&'a self, run: &'a [&'a dyn Write], conn: &'a mut AnyConnection, deferred: &'a mut Deferred) -> BoxFuture<'a, Result<Vec<bool>>> {
        Box::pin(async move {
            let Some(openings) = run_of::<Arc<TurnOpening>>(run) else { return apply_each(run, conn, deferred).await };
            let marks = Marks::of(conn);
            let mut rest = openings.as_slice();
            while let Some(first) = rest.first() {
                let same_kind = rest.iter().take_while(|opening| opening.fresh == first.fresh).count();
                let len = statement_len(&rest[..same_kind], TURNS_PER_STATEMENT, |opening| opening.session_id.as_str());
                let (statement, after) = rest.split_at(len);
                // Safe: the text is fixed but for value marks; every value is bound.
                let insert = statement.iter().fold(run_time_statement(first.statement(&marks.rows(len, 2))), |query, opening| {
                    query.bind(opening.session_id.as_str()).bind(opening.now_ms)
                });
                let rows = insert.fetch_all(&mut *conn).await.map_err(StoreError::query(first.doing()))?;
                let mut opened: HashMap<String, i64> = HashMap::with_capacity(rows.len());
                for row in &rows {
                    opened.insert(column(row, "session_id")?, column(row, "opened_at_ms")?);
                }
                for opening in statement {
                    // Every row is inserted or updated, so each returns; one that did not
                    // is an error of its own, not a time made up.
                    let at = opened.get(&opening.session_id).ok_or(StoreError::Query { what: "note a turn", source: sqlx::Error::RowNotFound })?;
                    opening.opened(*at);
                }
                rest = after;
            }
            Ok(vec![true; openings.len()])
        })
    }
}

/// What the chats have shown of a turn.
enum Shown {
    /// Its first this many texts.
    Texts(i64),
    /// All of it: the turn ended.
    Ended,
}

/// [`Store::note_texts_shown`] and [`Store::end_turn`] as a write of a group commit,
/// for the turn opened at `opened_at_ms` only.
struct TurnShown {
    session_id: String,
    opened_at_ms: i64,
    shown: Shown,
}

impl Write for TurnShown {
    fn apply<'a>(&'a self, conn: &'a mut AnyConnection, _deferred: &'a mut Deferred) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            let written = match self.shown {
                Shown::Texts(texts) => sqlx::query(
                    "UPDATE open_turns SET texts_shown = CASE WHEN texts_shown < $3 THEN $3 ELSE texts_shown END
                     WHERE session_id = $1 AND opened_at_ms = $2",
                )
                .bind(self.session_id.as_str())
                .bind(self.opened_at_ms)
                .bind(texts)
                .execute(conn)
                .await
                .map_err(StoreError::query("note the texts a turn has shown")),
                Shown::Ended => sqlx::query("DELETE FROM open_turns WHERE session_id = $1 AND opened_at_ms = $2")
                    .bind(self.session_id.as_str())
                    .bind(self.opened_at_ms)
                    .execute(conn)
                    .await
                    .map_err(StoreError::query("note a turn's end")),
            };
            // A turn that is over, or a later one, is left alone: done all the same.
            written.map(|_| true)
        })
    }

    fn is_one_statement(&self) -> bool {
        true
    }

    fn runs_together(&self) -> bool {
        true
    }

    /// Notes queued one after another (a burst of replies shown, turns ended) share
    /// two statements per [`TURNS_PER_STATEMENT`]: the counts, then the ends. That
    /// order ends in the state any order of the run would: a count only rises, and a
    /// turn with an end in the run is gone whichever came first (so its count is not
    /// written at all); notes of different turns touch different rows.
    fn apply_run<'a>(&'a self, run: &'a [&'a dyn Write], conn: &'a mut AnyConnection, deferred: &'a mut Deferred) -> BoxFuture<'a, Result<Vec<bool>>> {
        Box::pin(async move {
            let Some(notes) = run_of::<TurnShown>(run) else { return apply_each(run, conn, deferred).await };
            // Each turn's highest count once: a row joined twice in one `UPDATE … FROM`
            // takes either value (PostgreSQL), which could lower it.
            let mut counts: HashMap<(&str, i64), i64> = HashMap::new();
            let mut ends: HashSet<(&str, i64)> = HashSet::new();
            for note in &notes {
                let turn = (note.session_id.as_str(), note.opened_at_ms);
                match note.shown {
                    Shown::Texts(texts) => {
                        let count = counts.entry(turn).or_insert(texts);
                        *count = (*count).max(texts);
                    }
                    Shown::Ended => {
                        ends.insert(turn);
                    }
                }
            }
            // A turn that ends in the run is deleted: counting its texts first is moot.
            counts.retain(|turn, _| !ends.contains(turn));
            let marks = Marks::of(conn);
            let counts: Vec<_> = counts.into_iter().collect();
            for chunk in counts.chunks(TURNS_PER_STATEMENT) {
                let sql = format!(
                    "WITH noted (noted_session, noted_opened, noted_texts) AS (VALUES {})
                     UPDATE open_turns SET texts_shown = CASE WHEN open_turns.texts_shown < noted.noted_texts THEN noted.noted_texts ELSE open_turns.texts_shown END
                     FROM noted WHERE open_turns.session_id = noted.noted_session AND open_turns.opened_at_ms = noted.noted_opened",
                    marks.rows(chunk.len(), 3)
                );
                // Safe: the text is fixed but for value marks; every value is bound.
                let update = chunk.iter().fold(run_time_statement(sql), |query, ((session, opened), texts)| query.bind(*session).bind(*opened).bind(*texts));
                update.execute(&mut *conn).await.map_err(StoreError::query("note the texts turns have shown"))?;
            }
            let ends: Vec<_> = ends.into_iter().collect();
            for chunk in ends.chunks(TURNS_PER_STATEMENT) {
                let sql = format!(
                    "WITH ended (ended_session, ended_opened) AS (VALUES {})
                     DELETE FROM open_turns WHERE EXISTS (SELECT 1 FROM ended WHERE ended.ended_session = open_turns.session_id AND ended.ended_opened = open_turns.opened_at_ms)",
                    marks.rows(chunk.len(), 2)
                );
                // Safe: the text is fixed but for value marks; every value is bound.
                let delete = chunk.iter().fold(run_time_statement(sql), |query, (session, opened)| query.bind(*session).bind(*opened));
                delete.execute(&mut *conn).await.map_err(StoreError::query("note turns' ends"))?;
            }
            // A turn that is over, or a later one, is left alone: done all the same.
            Ok(vec![true; notes.len()])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::Store;

    #[tokio::test]
    async fn an_open_turn_is_work_until_it_ends_and_one_nobody_holds_is_orphaned() {
        let store = Store::connect("sqlite::memory:").await.expect("store");
        assert!(store.sessions_with_work().await.expect("work").is_empty());
        store.open_turn("s1", 1_000).await.expect("open");
        store.open_turn("s1", 2_000).await.expect("open again");
        store.open_turn("s2", 1_000).await.expect("open");
        assert!(store.has_open_turn("s1").await.expect("read"));
        assert_eq!(store.sessions_with_work().await.expect("work"), ["s1", "s2"]);

        // s1 is held by a live lease, s2's holder stopped renewing at 5 000.
        assert!(store.try_lease("s1", "replica-a", 1_000, 10_000).await.expect("lease"));
        assert!(store.try_lease("s2", "replica-b", 1_000, 4_000).await.expect("lease"));
        assert_eq!(store.orphaned_turns(3_000).await.expect("orphans"), Vec::<String>::new());
        assert_eq!(store.orphaned_turns(6_000).await.expect("orphans"), ["s2"]);

        store.close_turn("s1").await.expect("close");
        store.close_turn("s2").await.expect("close");
        assert!(!store.has_open_turn("s1").await.expect("read"));
        assert!(store.sessions_with_work().await.expect("work").is_empty());
        assert!(store.orphaned_turns(6_000).await.expect("orphans").is_empty());
    }
}
