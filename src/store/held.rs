//! A connection that one of the store's own tasks (the group commit, the shared reads)
//! keeps between its statements instead of taking it from the pool each time.
//!
//! Why: sqlx tests a connection each time it goes back to the pool (a round trip to
//! PostgreSQL, a hand-off to the connection's thread on SQLite), so a task that runs
//! a statement every few milliseconds in a burst paid a second round trip for each.
//! A held connection pays none; one whose work failed is closed (it may be left in
//! a transaction or holding a lock) and the next use takes a fresh one.
//!
//! A held connection never keeps the pool from closing: while the task waits for
//! work, it hands the connection back as soon as the pool starts closing. A pool of
//! one connection (an in-memory SQLite database) is never held from, or every other
//! user of the pool would wait forever.

use std::future::Future;

use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyConnection, AnyPool, Connection};

use super::error::{Result, StoreError};

pub(super) struct Held {
    pool: AnyPool,
    conn: Option<PoolConnection<Any>>,
    /// False for a pool of one connection: each use takes it and gives it back.
    keeps: bool,
}

impl Held {
    pub fn new(pool: AnyPool) -> Self {
        let keeps = pool.options().get_max_connections() > 1;
        Self { pool, conn: None, keeps }
    }

    /// The held connection, taken from the pool first when none is held. `what` names
    /// the work in the error when the pool has none to give.
    pub async fn get(&mut self, what: &'static str) -> Result<&mut AnyConnection> {
        let conn = match self.conn.take().filter(|conn| !conn.is_in_transaction()) {
            Some(conn) => conn,
            None => self.pool.acquire().await.map_err(StoreError::query(what))?,
        };
        Ok(&mut **self.conn.insert(conn))
    }

    /// Ends one unit of work: the connection stays held, unless this pool is never
    /// held from (then it goes back now) or `failed`. A connection whose work failed
    /// is closed, not handed back: the failure may have left it inside a transaction
    /// (a COMMIT refused on a full disk) or holding SQLite's write lock, and only
    /// closing it surely ends both; the next unit of work opens a fresh one.
    pub fn done(&mut self, failed: bool) {
        if let Some(conn) = self.conn.as_mut().filter(|_| failed && self.keeps) {
            conn.close_on_drop();
        }
        if failed || !self.keeps {
            self.conn = None;
        }
    }

    /// Awaits `next`, the task's next work; if the pool starts closing meanwhile, the
    /// held connection goes back at once so the close is not kept waiting for it.
    pub async fn idle_until<T>(&mut self, next: impl Future<Output = T>) -> T {
        if self.conn.is_none() {
            return next.await;
        }
        let mut next = std::pin::pin!(next);
        tokio::select! {
            out = &mut next => out,
            () = self.pool.close_event() => {
                self.conn = None;
                next.await
            }
        }
    }
}
