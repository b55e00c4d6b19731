//! How the store is doing, known without asking it. `/readyz` must answer within a
//! second whatever the database is doing, and must never queue behind the store's own
//! work (a pool whose connections all wait on a database that went away would hold a
//! probe for the pool's whole acquire timeout). So a task of its own checks the
//! database every [`CHECK_EVERY`] on a connection of its own, outside the pool, each
//! check bounded by [`CHECK_TIMEOUT`]; the store's writers and shared readers report
//! the outages they meet (a full disk, a lost connection); and readiness only reads
//! what both recorded.
//!
//! The store is healthy when its last check succeeded less than [`STALE_AFTER`] ago
//! and no outage was met since that check began.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use sqlx::any::AnyConnectOptions;
use sqlx::{AnyConnection, ConnectOptions};

/// How often the database is checked.
pub const CHECK_EVERY: Duration = Duration::from_millis(500);
/// How long one check may take before it counts as failed (its connection is then
/// dropped and opened again for the next check).
pub const CHECK_TIMEOUT: Duration = Duration::from_millis(800);
/// How old the last successful check may be for the store to count as healthy: a few
/// checks, so one slow check on a loaded machine does not flap readiness.
pub const STALE_AFTER: Duration = Duration::from_millis(2_500);

/// What the store's health task and its writers record. Cheap to clone.
#[derive(Clone)]
pub struct StoreHealth {
    inner: Arc<Inner>,
}

struct Inner {
    /// The instant the times below count from.
    since: Instant,
    /// When the last successful check began, in ms since `since` (0: never).
    checked_ok_ms: AtomicU64,
    /// When the last outage was met, in ms since `since` (0: never).
    outage_ms: AtomicU64,
    /// What the last failure said, for the readiness answer and the logs.
    last_error: Mutex<Option<String>>,
}

/// What readiness reads: whether the store is healthy, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthReport {
    pub healthy: bool,
    /// How long ago the last successful check was, in ms (`None`: never).
    pub checked_ms_ago: Option<u64>,
    /// The last failure met, while the store is not healthy.
    pub error: Option<String>,
}

impl StoreHealth {
    fn new() -> Self {
        let inner = Inner { since: Instant::now(), checked_ok_ms: AtomicU64::new(0), outage_ms: AtomicU64::new(0), last_error: Mutex::new(None) };
        Self { inner: Arc::new(inner) }
    }

    /// Starts the health task on the current Tokio runtime; it checks the database at
    /// `options` until `closed` resolves (the store's pool closing).
    pub(super) fn start(options: AnyConnectOptions, closed: impl std::future::Future<Output = ()> + Send + 'static) -> Self {
        let health = Self::new();
        let task = health.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = task.check_forever(options) => {}
                () = closed => {}
            }
        });
        health
    }

    /// The store answered (it was just opened and migrated): healthy from now, before
    /// the task's first check.
    pub(super) fn answered(&self) {
        self.inner.checked_ok_ms.store(self.now_ms(), Ordering::Release);
    }

    fn now_ms(&self) -> u64 {
        // +1: zero means "never".
        self.inner.since.elapsed().as_millis() as u64 + 1
    }

    /// An operation of the store met an outage (its error is the reason).
    pub(super) fn outage(&self, error: &impl std::fmt::Display) {
        self.inner.outage_ms.store(self.now_ms(), Ordering::Release);
        *self.inner.last_error.lock().unwrap_or_else(PoisonError::into_inner) = Some(error.to_string());
    }

    /// Whether the store is healthy now, and why not; never waits for the database.
    pub fn report(&self) -> HealthReport {
        let now = self.now_ms();
        let checked = self.inner.checked_ok_ms.load(Ordering::Acquire);
        let outage = self.inner.outage_ms.load(Ordering::Acquire);
        let checked_ms_ago = (checked > 0).then(|| now.saturating_sub(checked));
        let fresh = checked_ms_ago.is_some_and(|ago| ago < STALE_AFTER.as_millis() as u64);
        let healthy = fresh && outage < checked;
        let error = if healthy {
            None
        } else {
            let said = self.inner.last_error.lock().unwrap_or_else(PoisonError::into_inner).clone();
            Some(said.unwrap_or_else(|| "the store has not answered a check yet".to_owned()))
        };
        HealthReport { healthy, checked_ms_ago, error }
    }

    async fn check_forever(&self, options: AnyConnectOptions) {
        let mut conn: Option<AnyConnection> = None;
        let mut every = tokio::time::interval(CHECK_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            let began = self.now_ms();
            match tokio::time::timeout(CHECK_TIMEOUT, check(&options, &mut conn)).await {
                Ok(Ok(())) => self.inner.checked_ok_ms.store(began, Ordering::Release),
                Ok(Err(e)) => self.failed(&mut conn, &format!("the store's health check failed: {e}")),
                Err(_) => self.failed(&mut conn, &format!("the store did not answer its health check within {} ms", CHECK_TIMEOUT.as_millis())),
            }
        }
    }

    fn failed(&self, conn: &mut Option<AnyConnection>, why: &str) {
        // A connection that failed or hung may be broken: the next check opens another.
        *conn = None;
        let mut last = self.inner.last_error.lock().unwrap_or_else(PoisonError::into_inner);
        if last.as_deref() != Some(why) {
            tracing::warn!(error = %why, "the store is not healthy");
        }
        *last = Some(why.to_owned());
    }
}

/// One check: `SELECT 1` on the health task's own connection, opened first if needed.
async fn check(options: &AnyConnectOptions, conn: &mut Option<AnyConnection>) -> Result<(), sqlx::Error> {
    let live = match conn {
        Some(live) => live,
        None => conn.insert(options.connect().await?),
    };
    sqlx::query("SELECT 1").execute(&mut *live).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Healthy only after a successful check, and not once an outage is met after it;
    /// the next successful check makes it healthy again.
    #[test]
    fn an_outage_after_the_last_check_makes_the_store_unhealthy_until_the_next() {
        let health = StoreHealth::new();
        let report = health.report();
        assert!(!report.healthy);
        assert_eq!(report.error.as_deref(), Some("the store has not answered a check yet"));
        health.inner.checked_ok_ms.store(health.now_ms(), Ordering::Release);
        assert_eq!(health.report(), HealthReport { healthy: true, checked_ms_ago: Some(0), error: None });
        std::thread::sleep(Duration::from_millis(2));
        health.outage(&"commit a write: database or disk is full");
        let report = health.report();
        assert!(!report.healthy);
        assert_eq!(report.error.as_deref(), Some("commit a write: database or disk is full"));
        std::thread::sleep(Duration::from_millis(2));
        health.inner.checked_ok_ms.store(health.now_ms(), Ordering::Release);
        assert!(health.report().healthy);
    }

    /// A check older than [`STALE_AFTER`] no longer counts.
    #[test]
    fn a_stale_check_is_not_health() {
        // A store started ten seconds ago, checked once at its start.
        let since = Instant::now() - Duration::from_secs(10);
        let inner = Inner { since, checked_ok_ms: AtomicU64::new(1), outage_ms: AtomicU64::new(0), last_error: Mutex::new(None) };
        let health = StoreHealth { inner: Arc::new(inner) };
        let report = health.report();
        assert!(!report.healthy);
        assert!(report.checked_ms_ago.is_some_and(|ago| ago >= 10_000), "{report:?}");
    }
}
