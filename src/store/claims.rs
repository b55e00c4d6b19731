//! Claims renewed: a replica that holds rows of a work table (updates of a platform's
//! inbox, requests to show) extends its claims on them before they lapse, so another
//! replica does not take them over while it still works on them. One [`Write`] for
//! every such table; each brings its statement.

use futures_util::future::BoxFuture;
use sqlx::AnyConnection;

use super::ShowClaim;
use super::deferred::Deferred;
use super::error::{Result, StoreError};
use super::group_commit::Write;

/// One owner's claims on one table extended to `claim.until_ms`, in the group commit
/// (on PostgreSQL an update of many rows beside a batch that removes some of them
/// could lock them in the other order and deadlock; in one queue the two never
/// overlap).
pub struct RenewClaims {
    /// What the error names (`renew show claims`).
    pub what: &'static str,
    /// Sets `claimed_until_ms = $1` where `claimed_by = $2` and `$3` says which rows
    /// are still claimed.
    pub statement: &'static str,
    pub claim: ShowClaim,
    pub which: Which,
}

/// The third parameter of a [`RenewClaims`] statement.
pub enum Which {
    /// A platform's rows (`platform = $3`).
    Platform(&'static str),
    /// Claims not lapsed by then (`claimed_until_ms >= $3`).
    LiveAt(i64),
}

impl Write for RenewClaims {
    fn apply<'a>(&'a self, conn: &'a mut AnyConnection, _deferred: &'a mut Deferred) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            let query = sqlx::query(self.statement).bind(self.claim.until_ms).bind(self.claim.owner.as_str());
            let query = match self.which {
                Which::Platform(platform) => query.bind(platform),
                Which::LiveAt(now_ms) => query.bind(now_ms),
            };
            query.execute(conn).await.map_err(StoreError::query(self.what))?;
            Ok(true)
        })
    }
}
