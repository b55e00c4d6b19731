//! Reads asked together. Some reads are asked hundreds of times at once in a burst of
//! decisions (a request loaded for its click, where it is shown for its card's
//! refresh). The asks that arrive while a read is under way share the next one: one
//! statement for all of them instead of one each, as the group commit does for
//! writes, on a connection the reader keeps ([`Held`]). A lone ask is read once the
//! tasks already woken have run: nothing waits for company on a timer.
//!
//! Each ask gets exactly what a read of its own would return: a read that fails for
//! the batch is made again ask by ask, so an error reaches only the asks it belongs
//! to. Nothing here knows what the rows mean; each read says that ([`SharedRead`]).

use futures_util::future::BoxFuture;
use sqlx::{AnyConnection, AnyPool};
use tokio::sync::{mpsc, oneshot};

use super::error::{Result, StoreError};
use super::group_commit::next_batch;
use super::health::StoreHealth;
use super::held::Held;

/// At most this many asks share one read (each adds a few bound values).
const MAX_BATCH: usize = 256;

/// One kind of read that asks can share.
pub(super) trait SharedRead: Send + Sync + 'static {
    type Ask: Send + Sync + 'static;
    type Answer: Send + 'static;

    /// What the read does, for its errors.
    const WHAT: &'static str;

    /// The answer to each of `asks`, in their order, in one statement.
    fn read<'a>(conn: &'a mut AnyConnection, asks: &'a [Self::Ask]) -> BoxFuture<'a, Result<Vec<Self::Answer>>>;
}

struct Queued<R: SharedRead> {
    ask: R::Ask,
    answer: oneshot::Sender<Result<R::Answer>>,
}

/// The queue to one reader task. Cheap to clone; the task ends with the last clone.
pub(super) struct SharedReads<R: SharedRead> {
    pool: AnyPool,
    queue: mpsc::UnboundedSender<Queued<R>>,
}

impl<R: SharedRead> Clone for SharedReads<R> {
    fn clone(&self) -> Self {
        Self { pool: self.pool.clone(), queue: self.queue.clone() }
    }
}

impl<R: SharedRead> SharedReads<R> {
    /// Starts the reader task on the current Tokio runtime.
    pub fn start(pool: AnyPool, health: StoreHealth) -> Self {
        let (queue, asks) = mpsc::unbounded_channel();
        tokio::spawn(run::<R>(pool.clone(), health, asks));
        Self { pool, queue }
    }

    /// The answer to `ask`, read with the asks made meanwhile.
    pub async fn ask(&self, ask: R::Ask) -> Result<R::Answer> {
        let (answer, answered) = oneshot::channel();
        match self.queue.send(Queued { ask, answer }) {
            Ok(()) => answered.await.unwrap_or(Err(StoreError::Query { what: R::WHAT, source: sqlx::Error::PoolClosed })),
            // The reader task is gone (its runtime ended): read alone.
            Err(mpsc::error::SendError(queued)) => {
                let mut conn = self.pool.acquire().await.map_err(StoreError::query(R::WHAT))?;
                R::read(&mut conn, std::slice::from_ref(&queued.ask)).await.map(only)
            }
        }
    }
}

/// Takes whatever is queued, up to [`MAX_BATCH`], reads it together, answers each.
async fn run<R: SharedRead>(pool: AnyPool, health: StoreHealth, mut asks: mpsc::UnboundedReceiver<Queued<R>>) {
    let mut held = Held::new(pool);
    while let Some(batch) = held.idle_until(next_batch(&mut asks, MAX_BATCH)).await {
        let (asked, answers): (Vec<R::Ask>, Vec<_>) = batch.into_iter().map(|q| (q.ask, q.answer)).unzip();
        let read = read_held::<R>(&mut held, &asked).await;
        if let Some(e) = read.as_ref().err().filter(|e| e.is_outage()) {
            health.outage(e);
        }
        match read {
            Ok(all) => {
                for (answer, one) in answers.into_iter().zip(all) {
                    let _ = answer.send(Ok(one));
                }
            }
            Err(e) if asked.len() == 1 => {
                let _ = answers.into_iter().next().map(|answer| answer.send(Err(e)));
            }
            Err(e) => {
                tracing::warn!(error = %e, asks = asked.len(), what = R::WHAT, "a shared read failed; reading its asks one by one");
                for (ask, answer) in asked.iter().zip(answers) {
                    let _ = answer.send(read_held::<R>(&mut held, std::slice::from_ref(ask)).await.map(only));
                }
            }
        }
    }
}

/// `R`'s read on the held connection, handed back when the read failed.
async fn read_held<R: SharedRead>(held: &mut Held, asks: &[R::Ask]) -> Result<Vec<R::Answer>> {
    let all = match held.get(R::WHAT).await {
        Ok(conn) => R::read(conn, asks).await,
        Err(e) => Err(e),
    };
    held.done(all.is_err());
    all
}

/// The one answer of a read of one ask.
fn only<A>(mut answers: Vec<A>) -> A {
    answers.remove(0)
}
