//! One replica's hold on a session's backend connection (the store's
//! `session_leases`): taken before connecting, renewed while connected, released when
//! idle or at shutdown. With one replica it always succeeds; with several, exactly one
//! connects each session, so events are rendered once and commands sent once. The
//! owner is the replica's stable id (`backend.replica_id`), so the same replica
//! restarted after a crash renews its own leases at once; another replica's live
//! lease is still respected.

use std::time::Duration;

use crate::clock::now_ms;
use crate::store::{Store, StoreError};

#[derive(Clone)]
pub struct Lease {
    store: Store,
    /// This replica's name in the lease table.
    owner: String,
    period: Duration,
}

impl Lease {
    /// Leases held as `owner` (the replica id: a restarted replica with the same id
    /// takes its own leases back at once). `lease_secs` below 3 is raised to 3:
    /// renewals happen every third of it.
    pub fn new(store: Store, lease_secs: u64, owner: String) -> Self {
        Self { store, owner, period: Duration::from_secs(lease_secs.max(3)) }
    }

    /// This replica's name in the lease table.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// How long a lease lasts without renewal.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// How often a held lease must be renewed.
    pub fn renew_every(&self) -> Duration {
        self.period / 3
    }

    /// Takes or renews the lease. False when another replica holds it.
    pub async fn take(&self, session_id: &str) -> Result<bool, StoreError> {
        self.store.try_lease(session_id, &self.owner, now_ms(), self.period.as_millis() as i64).await
    }

    /// Gives it up so another replica need not wait for it to lapse.
    pub async fn release(&self, session_id: &str) {
        if let Err(e) = self.store.release_lease(session_id, &self.owner).await {
            tracing::warn!(%session_id, error = %e, "cannot release a session lease; it will lapse");
        }
    }
}
