//! Group commit: the writes on the hot path (a decision's settle, a new request with
//! the chats it must be shown in, a shown message, a turn opened or shown) that arrive
//! while another commit is under way share the next transaction, and so its one
//! fsync, instead of queueing for SQLite's single write lock one commit at a time. On
//! PostgreSQL, which commits writers in parallel, sharing saves round trips instead:
//! a settle alone is a transaction of seven statements (`BEGIN`, the update, the audit
//! and outbox rows, two removals, `COMMIT`), in a batch it is one statement and a
//! share of the rest.
//!
//! Each write keeps its own outcome: a write that finds nothing to do (a settle that
//! lost its race) writes nothing and reports false, and a batch that fails is rolled
//! back and retried write by write, so a bad write fails only itself. A write is
//! answered only after the transaction holding it has committed.
//!
//! Replicas racing on the same rows (PostgreSQL) stay correct: a write's own `WHERE`
//! decides whether it wins, as it would alone; a batch that meets a deadlock with
//! another replica's is rolled back by the database and its writes retried one by
//! one. Nothing here decides anything or knows what a write means.

use std::any::Any;
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::future::BoxFuture;
use sqlx::{AnyConnection, AnyPool, Connection};
use tokio::sync::{mpsc, oneshot};

use super::deferred::Deferred;
use super::error::{Result, StoreError};
use super::health::StoreHealth;
use super::held::Held;

/// At most this many writes share one transaction, so one commit stays short.
const MAX_BATCH: usize = 256;

/// One write: its statements, run inside a transaction it does not own, and those it
/// leaves to the end (rows appended to the audit log and the outbox, rows removed or
/// marked), which the transaction runs for all its writes at once before it commits
/// ([`Deferred`]). Returns false when it had nothing to do, and then must have written
/// and deferred nothing. Runs again, in a transaction of its own, when the batch it was
/// in failed.
pub(super) trait Write: Any + Send + Sync {
    fn apply<'a>(&'a self, conn: &'a mut AnyConnection, deferred: &'a mut Deferred) -> BoxFuture<'a, Result<bool>>;

    /// True when the write is one statement in all, its own or one it defers (a
    /// message marked shown, an update marked handled, a turn noted): alone, it needs
    /// no transaction, which on PostgreSQL saves the `BEGIN` and `COMMIT` round trips.
    fn is_one_statement(&self) -> bool {
        false
    }

    /// True when writes of this type queued one after another in a batch may run
    /// together ([`Write::apply_run`]): a burst's settles, one statement for many.
    fn runs_together(&self) -> bool {
        false
    }

    /// Applies `run`: writes of this write's type queued one after another in the
    /// batch, this one first. Returns their outcomes in order, each what its own
    /// [`Write::apply`] would have returned in that place. By default each is applied
    /// in turn.
    fn apply_run<'a>(&'a self, run: &'a [&'a dyn Write], conn: &'a mut AnyConnection, deferred: &'a mut Deferred) -> BoxFuture<'a, Result<Vec<bool>>> {
        Box::pin(apply_each(run, conn, deferred))
    }
}

/// `run` as writes of type `W`, or `None` when one is of another type (then it is
/// applied write by write, [`apply_each`]).
pub(super) fn run_of<'a, W: Write>(run: &[&'a dyn Write]) -> Option<Vec<&'a W>> {
    run.iter().map(|write| (*write as &dyn Any).downcast_ref::<W>()).collect()
}

/// How many of `rest`, at most `max`, the next statement of a run takes: up to the
/// first write to a `row` already in it, so that one sees the first one's outcome, as
/// it would in turn.
pub(super) fn statement_len<'w, W>(rest: &[&'w W], max: usize, row: impl Fn(&'w W) -> &'w str) -> usize {
    let mut rows = HashSet::new();
    rest.iter().take(max).take_while(|write| rows.insert(row(write))).count()
}

/// Each write of `run` in turn, as a batch applies them.
pub(super) async fn apply_each(run: &[&dyn Write], conn: &mut AnyConnection, deferred: &mut Deferred) -> Result<Vec<bool>> {
    let mut outcomes = Vec::with_capacity(run.len());
    for write in run {
        outcomes.push(write.apply(&mut *conn, &mut *deferred).await?);
    }
    Ok(outcomes)
}

struct Queued {
    write: Box<dyn Write>,
    done: oneshot::Sender<Result<bool>>,
}

/// The queue to the writer task. Cheap to clone; the task ends with the last clone.
#[derive(Clone)]
pub(super) struct GroupCommit {
    pool: AnyPool,
    queue: mpsc::UnboundedSender<Queued>,
    retried: Arc<AtomicU64>,
}

/// The writer task's side: its connection, where it reports the outages it meets,
/// and how many batches it retried write by write.
struct Writer {
    held: Held,
    health: StoreHealth,
    retried: Arc<AtomicU64>,
}

impl GroupCommit {
    /// Starts the writer task on the current Tokio runtime.
    pub fn start(pool: AnyPool, health: StoreHealth) -> Self {
        let (queue, writes) = mpsc::unbounded_channel();
        let retried = Arc::new(AtomicU64::new(0));
        tokio::spawn(run(Writer { held: Held::new(pool.clone()), health, retried: Arc::clone(&retried) }, writes));
        Self { pool, queue, retried }
    }

    /// How many batches failed and had their writes retried one by one. Each write
    /// still gets its own outcome then, so only this count tells that a batch (or a
    /// statement written for many writes of a kind) failed where each alone did not.
    pub fn retried(&self) -> u64 {
        self.retried.load(Ordering::Relaxed)
    }

    /// Runs `write` in the next group transaction and returns its outcome once that
    /// transaction has committed.
    pub async fn write(&self, write: impl Write) -> Result<bool> {
        let (done, outcome) = oneshot::channel();
        match self.queue.send(Queued { write: Box::new(write), done }) {
            Ok(()) => outcome.await.unwrap_or(Err(StoreError::Query { what: "group commit", source: sqlx::Error::PoolClosed })),
            // The writer task is gone (its runtime ended): write alone.
            Err(mpsc::error::SendError(queued)) => alone_from(&self.pool, queued.write.as_ref()).await,
        }
    }
}

/// Takes whatever is queued, up to [`MAX_BATCH`], commits it together, answers each,
/// on a connection it keeps between batches ([`Held`]).
async fn run(mut writer: Writer, mut writes: mpsc::UnboundedReceiver<Queued>) {
    while let Some(batch) = writer.held.idle_until(next_batch(&mut writes, MAX_BATCH)).await {
        commit(&mut writer, batch).await;
    }
}

/// The next item of `queue` with whatever else is queued already, up to `max` in
/// all. Nothing waits for company on a timer: only the tasks already woken run first
/// (one turn of the scheduler), so that what they queue in the same moment (a burst's
/// frames, read at once and handled by as many shards) joins this batch instead of
/// each taking a statement of its own. `None` once the queue is closed and empty.
pub(super) async fn next_batch<T>(queue: &mut mpsc::UnboundedReceiver<T>, max: usize) -> Option<Vec<T>> {
    let first = queue.recv().await?;
    let mut batch = Vec::with_capacity(max.min(16));
    batch.push(first);
    tokio::task::yield_now().await;
    while batch.len() < max {
        match queue.try_recv() {
            Ok(next) => batch.push(next),
            Err(_) => break,
        }
    }
    Some(batch)
}

async fn commit(writer: &mut Writer, batch: Vec<Queued>) {
    let Writer { held, health, retried } = writer;
    if batch.len() > 1 {
        let outcomes = match held.get("begin a group commit").await {
            Ok(conn) => together(conn, &batch).await,
            Err(e) => Err(e),
        };
        held.done(outcomes.is_err());
        match outcomes {
            Ok(outcomes) => {
                for (queued, outcome) in batch.into_iter().zip(outcomes) {
                    let _ = queued.done.send(Ok(outcome));
                }
                return;
            }
            Err(e) => {
                if e.is_outage() {
                    health.outage(&e);
                }
                retried.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(error = %e, writes = batch.len(), "a group commit failed; retrying its writes one by one");
            }
        }
    }
    for queued in batch {
        let outcome = match held.get("begin a write").await {
            Ok(conn) => alone(conn, queued.write.as_ref()).await,
            Err(e) => Err(e),
        };
        held.done(outcome.is_err());
        if let Some(e) = outcome.as_ref().err().filter(|e| e.is_outage()) {
            health.outage(e);
        }
        let _ = queued.done.send(outcome);
    }
}

/// Every write of the batch in one transaction; any error rolls all of it back.
async fn together(conn: &mut AnyConnection, batch: &[Queued]) -> Result<Vec<bool>> {
    let mut tx = conn.begin().await.map_err(StoreError::query("begin a group commit"))?;
    let mut outcomes = Vec::with_capacity(batch.len());
    let mut deferred = Deferred::default();
    let mut rest = batch;
    while let Some(first) = rest.first() {
        let first = first.write.as_ref();
        if !first.runs_together() {
            outcomes.push(first.apply(&mut tx, &mut deferred).await?);
            rest = &rest[1..];
            continue;
        }
        // Taken with the like writes queued right after it; nothing is moved past a
        // write of another type.
        let len = 1 + rest[1..].iter().take_while(|queued| same_type(queued.write.as_ref(), first)).count();
        let run: Vec<&dyn Write> = rest[..len].iter().map(|queued| queued.write.as_ref()).collect();
        outcomes.extend(first.apply_run(&run, &mut tx, &mut deferred).await?);
        rest = &rest[len..];
    }
    let assigned = deferred.run(&mut tx).await?;
    tx.commit().await.map_err(StoreError::query("commit a group commit"))?;
    assigned.publish();
    Ok(outcomes)
}

fn same_type(a: &dyn Write, b: &dyn Write) -> bool {
    (a as &dyn Any).type_id() == (b as &dyn Any).type_id()
}

/// One write in its own transaction (or, when it is one statement, in none).
async fn alone(conn: &mut AnyConnection, write: &dyn Write) -> Result<bool> {
    if write.is_one_statement() {
        let mut deferred = Deferred::default();
        let applied = write.apply(conn, &mut deferred).await?;
        deferred.run(conn).await?.publish();
        return Ok(applied);
    }
    let mut tx = conn.begin().await.map_err(StoreError::query("begin a write"))?;
    let mut deferred = Deferred::default();
    if !write.apply(&mut tx, &mut deferred).await? {
        tx.rollback().await.map_err(StoreError::query("roll back a write"))?;
        return Ok(false);
    }
    let assigned = deferred.run(&mut tx).await?;
    tx.commit().await.map_err(StoreError::query("commit a write"))?;
    assigned.publish();
    Ok(true)
}

/// One write on a connection of its own from `pool`, when the writer task is gone.
async fn alone_from(pool: &AnyPool, write: &dyn Write) -> Result<bool> {
    let mut conn = pool.acquire().await.map_err(StoreError::query("acquire a connection for a write"))?;
    alone(&mut conn, write).await
}

#[cfg(test)]
mod tests {
    use futures_util::future::join_all;
    use serde_json::json;

    use crate::interaction::{Interaction, RequestBuilder, TimeoutDefaults};
    use crate::protocol::{ActionRequest, Command};
    use crate::store::{AuditEntry, ChatKey, MessageRef, Queued, Settled, Store};

    /// Ten tasks woken in the same moment as the first write is queued (a burst's
    /// frames read at once) queue theirs before the batch is taken: one batch, not
    /// the first alone and then the rest.
    #[tokio::test]
    async fn a_batch_takes_in_what_the_tasks_woken_with_its_first_write_queue() {
        let (queue, mut queued) = tokio::sync::mpsc::unbounded_channel();
        let go = std::sync::Arc::new(tokio::sync::Notify::new());
        for k in 1..=10 {
            let (queue, go) = (queue.clone(), go.clone());
            tokio::spawn(async move {
                go.notified().await;
                queue.send(k).expect("send");
            });
        }
        // Each task waits on `go` before it is woken.
        tokio::task::yield_now().await;
        queue.send(0).expect("send");
        go.notify_waiters();
        let batch = super::next_batch(&mut queued, 256).await.expect("a batch");
        assert_eq!(batch, (0..=10).collect::<Vec<_>>());
    }

    fn interaction(n: usize) -> Interaction {
        let action = ActionRequest { name: "execute_trade".into(), args: json!({"n": n}), description: None, tool_use_id: None };
        let request = RequestBuilder::start(&format!("trade_{n}"), vec![action], vec![], Some(600)).finish(TimeoutDefaults::default()).unwrap();
        Interaction::new(format!("i{n:011}"), "s1".into(), request, None, 0)
    }

    fn cancelled(n: usize) -> (Interaction, AuditEntry) {
        let mut i = interaction(n);
        assert!(i.cancel(5, "test"));
        let audit = AuditEntry::for_settled(&i, 5);
        (i, audit)
    }

    /// Forty writes at once, as forty shards would send them: twenty settles, each
    /// queueing a command, the same twenty again (each loses: false, nothing written
    /// or queued twice), and one shown message for an interaction that does not exist
    /// (a foreign key error). The bad write fails alone; every other write has its own,
    /// correct outcome, and the winners' audit rows and commands are all there, once.
    /// Each winner is told the outbox row its command got (the rows of one multi-row
    /// insert are matched to their commands), so the connector need not read it back.
    #[tokio::test]
    async fn concurrent_writes_keep_their_own_outcomes_and_a_bad_one_fails_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::connect(&format!("sqlite://{}", dir.path().join("g.db").display())).await.unwrap();
        for n in 0..20 {
            assert!(store.insert_interaction(&interaction(n)).await.unwrap());
        }
        let settles = (0..40).map(|k| {
            let store = store.clone();
            async move {
                let (i, audit) = cancelled(k % 20);
                let command = Command::Cancel { session_id: format!("s{}", k % 20) };
                store.settle(&i, Some(&command), &audit).await.unwrap()
            }
        });
        let chat = ChatKey::new("telegram", "-100", None);
        let orphan = MessageRef { interaction_id: "nobody".into(), chat: chat.clone(), message_id: "m1".into() };
        let (outcomes, bad) = tokio::join!(join_all(settles), store.shown("nobody", &chat, Some(&orphan)));

        assert!(bad.is_err(), "{bad:?}");
        for n in 0..20 {
            let won: Vec<&Settled> = [&outcomes[n], &outcomes[n + 20]].into_iter().filter(|s| s.won()).collect();
            assert_eq!(won.len(), 1, "interaction {n}: {:?}", [&outcomes[n], &outcomes[n + 20]]);
            assert_eq!(store.audit_log(&format!("trade_{n}")).await.unwrap().len(), 1);
            let queued = store.outbox_for_session(&format!("s{n}")).await.unwrap();
            let command = Command::Cancel { session_id: format!("s{n}") };
            assert_eq!(queued, [(queued[0].0, command.clone())]);
            assert_eq!(won[0], &Settled::Won { queued: Some(Queued { id: queued[0].0, created_at_ms: 5, command }) }, "interaction {n}: told its row");
            assert!(!store.interaction(&format!("i{n:011}")).await.unwrap().unwrap().status.is_pending());
        }
    }

    /// Writes whose statements are left to the end of the batch: ten settles drop the
    /// shows their requests still had, ten handled updates are marked, ten delivered
    /// commands removed, all at once. Each is done, and the handled updates stay stored
    /// (the same update delivered again is not new).
    #[tokio::test]
    async fn removals_and_marks_left_to_the_end_of_a_batch_are_all_done() {
        use crate::store::{InboxUpdate, ShowClaim};
        let dir = tempfile::tempdir().unwrap();
        let store = Store::connect(&format!("sqlite://{}", dir.path().join("g.db").display())).await.unwrap();
        let claim = ShowClaim { owner: "test".into(), until_ms: 60_000 };
        let chat = ChatKey::new("telegram", "-100", None);
        for n in 0..10 {
            assert!(store.insert_interaction_to_show(&interaction(n), std::slice::from_ref(&chat), &claim, 0).await.unwrap());
        }
        let updates: Vec<InboxUpdate> =
            (0..10).map(|n| InboxUpdate { update_id: (500 + n).to_string(), seq: 500 + n, lane: "-100".into(), body: "{}".into() }).collect();
        assert_eq!(store.platform_inbox("telegram").store(&updates, &claim, 0).await.unwrap().len(), 10);
        let mut commands = Vec::new();
        for n in 0..10 {
            commands.push(store.enqueue(&Command::Cancel { session_id: format!("s{n}") }, 0).await.unwrap());
        }
        assert_eq!(
            (store.pending_shows().await.unwrap().len(), store.platform_inbox("telegram").waiting().await.unwrap(), store.outbox_depth().await.unwrap()),
            (10, 10, 10)
        );

        let settles = join_all((0..10).map(|n| {
            let store = store.clone();
            async move {
                let (i, audit) = cancelled(n);
                store.settle(&i, None, &audit).await.unwrap().won()
            }
        }));
        let inbox = store.platform_inbox("telegram");
        let handled = join_all(updates.iter().map(|u| inbox.finish(&u.update_id, 7)));
        let removed = join_all(commands.iter().map(|&id| store.remove_outbox(id)));
        let (settled, handled, removed) = tokio::join!(settles, handled, removed);
        assert!(settled.into_iter().all(|won| won));
        assert!(handled.into_iter().chain(removed).all(|done| done.is_ok()));

        assert_eq!(store.pending_shows().await.unwrap(), [], "an ended request is never shown late");
        assert_eq!(store.platform_inbox("telegram").waiting().await.unwrap(), 0, "every update is marked handled");
        assert_eq!(store.outbox_depth().await.unwrap(), 0, "every delivered command is removed");
        assert_eq!(store.platform_inbox("telegram").store(&updates, &claim, 0).await.unwrap(), Vec::<String>::new(), "handled updates stay stored");
    }
}
