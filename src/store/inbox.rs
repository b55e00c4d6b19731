//! `platform_inbox`: every chat platform's updates (Telegram's updates, Slack's
//! envelopes, …), stored before they are confirmed to the platform and marked once
//! handled (kept as long as the platform may deliver them again, then pruned), keyed
//! by platform. Storing is the only thing a confirmation waits for, so no update (a
//! stranger's flood, a slow handler) holds back the next batch, and a crash between
//! confirming and handling loses nothing: the row is still here, handled by the next
//! start or, once its claim lapses, by another replica.
//!
//! A platform reaches its own rows through [`PlatformInbox`], its narrow port: it
//! holds no [`Store`] and cannot touch another platform's updates.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use sqlx::AnyConnection;

use super::claims::{RenewClaims, Which};
use super::deferred::Deferred;
use super::error::{Result, StoreError};
use super::group_commit::{Write, apply_each, run_of};
use super::placeholders::{Marks, run_time_statement};
use super::row::column;
use super::{ShowClaim, Store};

/// One update as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxUpdate {
    /// The platform's own id of the update, unique on that platform (Telegram's
    /// `update_id`, a Slack envelope's `envelope_id`).
    pub update_id: String,
    /// Its place in the platform's order: stranded updates are handled by it, oldest
    /// first, so each chat's are handled in order (Telegram's `update_id`).
    pub seq: i64,
    /// The chat whose lane handles it ("0" for a click on a Telegram inline message).
    pub lane: String,
    /// The update's JSON, as the platform sent it.
    pub body: String,
}

/// One platform's rows of `platform_inbox` and nothing else of the store: what a
/// platform is handed.
#[derive(Clone)]
pub struct PlatformInbox {
    store: Store,
    platform: &'static str,
}

impl Store {
    /// Platform `platform`'s inbox, as its port.
    pub fn platform_inbox(&self, platform: &'static str) -> PlatformInbox {
        PlatformInbox { store: self.clone(), platform }
    }

    /// Every platform's inbox, each reached by its platform's name: what the app hands
    /// the platforms.
    pub fn inboxes(&self) -> Inboxes {
        Inboxes { store: self.clone() }
    }
}

/// Every platform's inbox and nothing else of the store.
#[derive(Clone)]
pub struct Inboxes {
    store: Store,
}

impl Inboxes {
    /// Platform `platform`'s inbox.
    pub fn of(&self, platform: &'static str) -> PlatformInbox {
        self.store.platform_inbox(platform)
    }
}

impl PlatformInbox {
    /// Stores the platform's `updates` claimed by `claim` in one transaction; returns the
    /// ids that were new, in the order given (an update delivered again is already
    /// here, being handled or handled, and is not handled twice). One statement per
    /// [`UPDATES_PER_STATEMENT`] updates, and on SQLite the transaction is the next
    /// group commit, shared with the decisions of the clicks stored before.
    pub async fn store(&self, updates: &[InboxUpdate], claim: &ShowClaim, now_ms: i64) -> Result<Vec<String>> {
        let new = Arc::new(Mutex::new(HashSet::new()));
        let write = StoreUpdates { platform: self.platform.to_owned(), updates: updates.to_vec(), claim: claim.clone(), now_ms, new: new.clone() };
        self.store.write(write).await?;
        let new = new.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        Ok(updates.iter().map(|u| &u.update_id).filter(|id| new.contains(*id)).cloned().collect())
    }

    /// How many of the platform's updates wait in the inbox (stored, not yet handled).
    pub async fn waiting(&self) -> Result<i64> {
        let row = sqlx::query("SELECT COUNT(*) AS n FROM platform_inbox WHERE platform = $1 AND handled_at_ms IS NULL")
            .bind(self.platform)
            .fetch_one(&self.store.pool)
            .await
            .map_err(StoreError::query("count stored updates"))?;
        column(&row, "n")
    }

    /// The update was handled: it is never handled again (the row stays, so the same
    /// update delivered again is still a no-op, until [`PlatformInbox::prune`]).
    /// It shares the next group commit: a burst of clicks marks its updates
    /// handled in a few transactions, not one fsync each.
    pub async fn finish(&self, update_id: &str, now_ms: i64) -> Result<()> {
        self.store.write(FinishUpdate { platform: self.platform.to_owned(), update_id: update_id.to_owned(), now_ms }).await?;
        Ok(())
    }

    /// Claims for `claim.owner` the platform's updates whose claim lapsed (their
    /// replica died) and returns them oldest first, so each chat's are handled in
    /// order.
    pub async fn claim_stranded(&self, claim: &ShowClaim, now_ms: i64) -> Result<Vec<InboxUpdate>> {
        let rows = sqlx::query(
            "UPDATE platform_inbox SET claimed_by = $1, claimed_until_ms = $2
             WHERE platform = $3 AND handled_at_ms IS NULL AND claimed_until_ms < $4
             RETURNING update_id, seq, lane, body",
        )
        .bind(claim.owner.as_str())
        .bind(claim.until_ms)
        .bind(self.platform)
        .bind(now_ms)
        .fetch_all(&self.store.pool)
        .await
        .map_err(StoreError::query("claim stranded updates"))?;
        let mut updates = rows
            .iter()
            .map(|row| {
                Ok(InboxUpdate { update_id: column(row, "update_id")?, seq: column(row, "seq")?, lane: column(row, "lane")?, body: column(row, "body")? })
            })
            .collect::<Result<Vec<_>>>()?;
        updates.sort_by_key(|u| u.seq);
        Ok(updates)
    }

    /// Keeps `claim.owner`'s updates (still queued or being handled) from
    /// lapsing. In the group commit, where the updates marked handled are: on
    /// PostgreSQL the two updating many rows side by side could lock them in the
    /// other order and deadlock.
    pub async fn renew(&self, claim: &ShowClaim) -> Result<()> {
        self.store
            .write(RenewClaims {
                what: "renew update claims",
                statement: "UPDATE platform_inbox SET claimed_until_ms = $1 WHERE claimed_by = $2 AND platform = $3 AND handled_at_ms IS NULL",
                claim: claim.clone(),
                which: Which::Platform(self.platform),
            })
            .await?;
        Ok(())
    }

    /// Frees `owner`'s claims on the platform's updates at once: a replica starting under
    /// its own id is not handling anything yet, so what it claimed before a crash is
    /// free.
    pub async fn release(&self, owner: &str) -> Result<()> {
        sqlx::query("UPDATE platform_inbox SET claimed_until_ms = 0 WHERE platform = $1 AND claimed_by = $2 AND handled_at_ms IS NULL")
            .bind(self.platform)
            .bind(owner)
            .execute(&self.store.pool)
            .await
            .map_err(StoreError::query("release update claims"))?;
        Ok(())
    }

    /// Forgets the platform's updates handled before `before_ms` (it no longer delivers
    /// them again).
    pub async fn prune(&self, before_ms: i64) -> Result<u64> {
        let done = sqlx::query("DELETE FROM platform_inbox WHERE platform = $1 AND handled_at_ms < $2")
            .bind(self.platform)
            .bind(before_ms)
            .execute(&self.store.pool)
            .await
            .map_err(StoreError::query("prune handled updates"))?;
        Ok(done.rows_affected())
    }
}

/// Telegram hands out at most 100 updates per `getUpdates`: one statement each.
const UPDATES_PER_STATEMENT: usize = 100;

/// Inserts a batch of updates, skipping those already stored; the ids it inserted
/// land in `new` (cleared first: a write runs again alone when its group failed).
struct StoreUpdates {
    platform: String,
    updates: Vec<InboxUpdate>,
    claim: ShowClaim,
    now_ms: i64,
    new: Arc<Mutex<HashSet<String>>>,
}

impl Write for StoreUpdates {
    fn apply<'a>(&'a self, conn: &'a mut AnyConnection, _deferred: &'a mut Deferred) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move { Ok(store_together(&[self], conn).await?[0]) })
    }

    fn runs_together(&self) -> bool {
        true
    }

    /// Updates stored one post at a time (a webhook's: Teams, Mattermost, Slack's and
    /// Telegram's HTTP modes, each post waiting for its own row) and queued together
    /// share their `INSERT`s, as a batch that arrived together does: a burst of 200
    /// clicks is a few statements, not 200, each parsed on SQLite and a round trip on
    /// PostgreSQL.
    fn apply_run<'a>(&'a self, run: &'a [&'a dyn Write], conn: &'a mut AnyConnection, deferred: &'a mut Deferred) -> BoxFuture<'a, Result<Vec<bool>>> {
        Box::pin(async move {
            match run_of::<StoreUpdates>(run) {
                Some(writes) => store_together(&writes, conn).await,
                None => apply_each(run, conn, deferred).await,
            }
        })
    }
}

/// Inserts the updates of `writes`, in order, skipping those already stored, and sets
/// each write's `new` to the ids it inserted (cleared first: a write runs again alone
/// when its group failed). An update carried twice (delivered again while the first
/// post was still queued) starts a new statement, so the first carrier inserts it and
/// the second finds it stored, as if each write ran in turn. Returns, per write,
/// whether it inserted anything.
async fn store_together(writes: &[&StoreUpdates], conn: &mut AnyConnection) -> Result<Vec<bool>> {
    let rows: Vec<(usize, &InboxUpdate)> = writes.iter().enumerate().flat_map(|(at, write)| write.updates.iter().map(move |update| (at, update))).collect();
    let mut inserted: Vec<HashSet<String>> = vec![HashSet::new(); writes.len()];
    let mut rest = rows.as_slice();
    while !rest.is_empty() {
        // Each row's (platform, update id) → the write carrying it: distinct within
        // a statement, so a new row returned belongs to exactly one write.
        let mut carriers: HashMap<(&str, &str), usize> = HashMap::new();
        let len = rest
            .iter()
            .take(UPDATES_PER_STATEMENT)
            .take_while(|(at, update)| carriers.insert((writes[*at].platform.as_str(), update.update_id.as_str()), *at).is_none())
            .count();
        let (statement, after) = rest.split_at(len);
        let sql = format!(
            "INSERT INTO platform_inbox (platform, update_id, seq, lane, body, received_at_ms, claimed_by, claimed_until_ms)
             VALUES {} ON CONFLICT (platform, update_id) DO NOTHING RETURNING platform, update_id",
            Marks::of(conn).rows(statement.len(), 8)
        );
        // Safe: the text is only value marks; every value is bound.
        let mut insert = run_time_statement(sql);
        for (at, update) in statement {
            let write = writes[*at];
            insert = insert
                .bind(write.platform.as_str())
                .bind(update.update_id.as_str())
                .bind(update.seq)
                .bind(update.lane.as_str())
                .bind(update.body.as_str())
                .bind(write.now_ms)
                .bind(write.claim.owner.as_str())
                .bind(write.claim.until_ms);
        }
        for row in insert.fetch_all(&mut *conn).await.map_err(StoreError::query("store updates"))? {
            let (platform, update_id): (String, String) = (column(&row, "platform")?, column(&row, "update_id")?);
            if let Some(&at) = carriers.get(&(platform.as_str(), update_id.as_str())) {
                inserted[at].insert(update_id);
            }
        }
        rest = after;
    }
    Ok(writes
        .iter()
        .zip(inserted)
        .map(|(write, inserted)| {
            let any = !inserted.is_empty();
            *write.new.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = inserted;
            any
        })
        .collect())
}

/// Marks one update handled.
struct FinishUpdate {
    platform: String,
    update_id: String,
    now_ms: i64,
}

impl Write for FinishUpdate {
    fn apply<'a>(&'a self, _conn: &'a mut AnyConnection, deferred: &'a mut Deferred) -> BoxFuture<'a, Result<bool>> {
        deferred.mark_handled(&self.platform, &self.update_id, self.now_ms);
        Box::pin(async { Ok(true) })
    }

    fn is_one_statement(&self) -> bool {
        true
    }
}
