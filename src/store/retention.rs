//! Retention (`store.retention_days`): what the bridge may forget once it is finished
//! and old, so the database does not grow forever. Counts what each pass removed.
//!
//! Only finished work goes, and only once older than the cutoff:
//! - settled interactions (created and past their deadline before the cutoff) with
//!   their message refs (drafts live in the interaction's body) and, for pushed
//!   requests, their `api_requests` row; an interaction whose callback is still owed
//!   stays with its row, as the callback needs both;
//! - outbox leftovers: commands queued before the cutoff for sessions that have
//!   nothing pending (a backend gone that long is not coming back for them);
//! - audit entries older than the cutoff, except those of a still-pending request;
//! - session leases that lapsed before the cutoff.
//!
//! Nothing pending is ever touched. Every statement is idempotent and safe to run on
//! several replicas at once. [`keep_pruning`] runs a pass at start and then hourly;
//! each pass also clears the web inbox's expired sign-in links and idle sessions
//! ([`Store::clear_expired_web`]), whatever the retention: they are dead secrets'
//! hashes, not history.

use std::time::Duration;

use super::Store;
use super::error::{Result, StoreError};
use crate::interaction::Status;

/// How often the periodic prune runs.
pub const PRUNE_EVERY: Duration = Duration::from_secs(3600);

const DAY_MS: i64 = 24 * 3600 * 1000;

/// What one pass removed, per table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    pub interactions: u64,
    pub message_refs: u64,
    pub api_requests: u64,
    pub outbox: u64,
    pub audit: u64,
    pub leases: u64,
}

impl Pruned {
    pub fn total(&self) -> u64 {
        self.interactions + self.message_refs + self.api_requests + self.outbox + self.audit + self.leases
    }
}

/// The interactions a pass removes: settled, created and past their deadline before
/// the cutoff ($1), no callback owed. `$2` is the pending status name.
macro_rules! settled_before_cutoff {
    () => {
        "SELECT id FROM interactions
         WHERE status <> $2 AND created_at_ms < $1 AND deadline_ms < $1
           AND id NOT IN (SELECT interaction_id FROM callback_outbox)"
    };
}

impl Store {
    /// Removes finished rows older than `cutoff_ms` (see the module doc). Children go
    /// before their interactions, so a pass cut short leaves nothing dangling.
    pub async fn prune_before(&self, cutoff_ms: i64) -> Result<Pruned> {
        let pending = Status::Pending.name();
        let run = |sql: &'static str, what: &'static str| async move {
            sqlx::query(sql).bind(cutoff_ms).bind(pending).execute(&self.pool).await.map(|done| done.rows_affected()).map_err(StoreError::query(what))
        };
        let api_requests = run(concat!("DELETE FROM api_requests WHERE interaction_id IN (", settled_before_cutoff!(), ")"), "prune api requests").await?;
        let message_refs = run(concat!("DELETE FROM message_refs WHERE interaction_id IN (", settled_before_cutoff!(), ")"), "prune message refs").await?;
        let interactions = run(concat!("DELETE FROM interactions WHERE id IN (", settled_before_cutoff!(), ")"), "prune interactions").await?;
        let outbox = run(
            "DELETE FROM outbox WHERE created_at_ms < $1
             AND session_id NOT IN (SELECT session_id FROM interactions WHERE status = $2)",
            "prune outbox leftovers",
        )
        .await?;
        let audit = run(
            "DELETE FROM audit_log WHERE at_ms < $1
             AND interaction_id NOT IN (SELECT id FROM interactions WHERE status = $2)",
            "prune audit log",
        )
        .await?;
        // One parameter only: PostgreSQL refuses values bound beyond what is used.
        let leases = sqlx::query("DELETE FROM session_leases WHERE until_ms < $1")
            .bind(cutoff_ms)
            .execute(&self.pool)
            .await
            .map_err(StoreError::query("prune lapsed leases"))?
            .rows_affected();
        Ok(Pruned { interactions, message_refs, api_requests, outbox, audit, leases })
    }
}

/// The cutoff for `retention_days` at `now_ms`; `None` when retention is off (0).
pub fn cutoff_ms(retention_days: u64, now_ms: i64) -> Option<i64> {
    let days = i64::try_from(retention_days).ok().filter(|&d| d > 0)?;
    Some(now_ms.saturating_sub(days.saturating_mul(DAY_MS)))
}

/// Prunes now and then every [`PRUNE_EVERY`], forever (abort the task to stop it).
/// A failed pass is logged and tried again at the next one. History is kept whole
/// when `retention_days` is 0; the web inbox's expired links and sessions unused for
/// `web_session_idle_ms` are cleared either way.
pub async fn keep_pruning(store: Store, retention_days: u64, web_session_idle_ms: i64) {
    if retention_days == 0 {
        tracing::info!("store.retention_days = 0: keeping everything");
    }
    let mut every = tokio::time::interval(PRUNE_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await; // the first tick is immediate: a pass at start
        let now = crate::clock::now_ms();
        match store.clear_expired_web(now, web_session_idle_ms).await {
            Ok(cleared) if cleared.sign_in_links + cleared.sessions > 0 => {
                tracing::debug!(sign_in_links = cleared.sign_in_links, sessions = cleared.sessions, "cleared expired web sign-in links and sessions")
            }
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "clearing expired web sign-in links failed; trying again next hour"),
        }
        let Some(cutoff) = cutoff_ms(retention_days, now) else { continue };
        match store.prune_before(cutoff).await {
            Ok(pruned) if pruned.total() > 0 => tracing::info!(
                retention_days,
                interactions = pruned.interactions,
                message_refs = pruned.message_refs,
                api_requests = pruned.api_requests,
                outbox = pruned.outbox,
                audit = pruned.audit,
                leases = pruned.leases,
                "pruned finished rows older than the retention period"
            ),
            Ok(_) => tracing::debug!(retention_days, "nothing to prune"),
            Err(e) => tracing::error!(error = %e, "pruning old rows failed; trying again next hour"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cutoff_is_days_before_now_and_zero_is_off() {
        assert_eq!(cutoff_ms(0, 1_000 * DAY_MS), None);
        assert_eq!(cutoff_ms(30, 1_000 * DAY_MS), Some(970 * DAY_MS));
        assert_eq!(cutoff_ms(u64::MAX, 0), None, "more days than i64 holds is no cutoff, not a panic");
        assert_eq!(cutoff_ms(i64::MAX as u64, 0), Some(-i64::MAX), "saturates instead of overflowing");
    }
}
