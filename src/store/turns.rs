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

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use sqlx::AnyConnection;

use super::Store;
use super::deferred::Deferred;
use super::error::{Result, StoreError};
use super::group_commit::Write;
use super::row::column;

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

impl Write for Arc<TurnOpening> {
    fn apply<'a>(&'a self, conn: &'a mut AnyConnection, _deferred: &'a mut Deferred) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            // The update on a conflict is what `RETURNING` needs to give the row that was
            // there: a turn in progress keeps its time (and what it has shown); a new
            // one is a moment later than the last, so the last one's late writes miss it.
            let (sql, doing) = if self.fresh {
                (
                    "INSERT INTO open_turns (session_id, opened_at_ms) VALUES ($1, $2) ON CONFLICT (session_id) DO UPDATE SET
                     opened_at_ms = CASE WHEN open_turns.opened_at_ms >= excluded.opened_at_ms THEN open_turns.opened_at_ms + 1 ELSE excluded.opened_at_ms END,
                     texts_shown = 0
                     RETURNING opened_at_ms",
                    "note a new turn",
                )
            } else {
                (
                    "INSERT INTO open_turns (session_id, opened_at_ms) VALUES ($1, $2) ON CONFLICT (session_id) DO UPDATE SET
                     opened_at_ms = open_turns.opened_at_ms
                     RETURNING opened_at_ms",
                    "note an open turn",
                )
            };
            let opened_at_ms: i64 =
                sqlx::query_scalar(sql).bind(self.session_id.as_str()).bind(self.now_ms).fetch_one(conn).await.map_err(StoreError::query(doing))?;
            *self.opened_at_ms.lock().unwrap_or_else(|p| p.into_inner()) = Some(opened_at_ms);
            Ok(true)
        })
    }

    fn is_one_statement(&self) -> bool {
        true
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
