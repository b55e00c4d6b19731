//! Escalation steps of a decision policy, recorded before they are performed: the
//! interaction's new body (how many steps are done), the chats a `show_in` adds (as
//! `pending_shows` rows, so the request is shown there even if this replica dies right
//! after) and one audit entry per step, in one transaction.
//!
//! The write is conditional on the row still being at the revision the steps were
//! computed from (the compare-and-swap of drafts): when another replica performed them
//! first, or a vote or a settle changed the request meanwhile, nothing is written and
//! the caller reads again. So each step happens once across replicas.

use futures_util::future::BoxFuture;
use sqlx::AnyConnection;

use super::deferred::Deferred;
use super::error::{Result, StoreError};
use super::group_commit::Write;
use super::interactions::access_column;
use super::json;
use super::shows::{ShowClaim, insert_shows};
use super::{AuditEntry, ChatKey, Store};
use crate::interaction::Interaction;

impl Store {
    /// Stores `escalated` (steps marked done) over `read` (as loaded), queues
    /// `new_chats` to be shown (claimed by `claim`: the caller shows them now) and
    /// appends `audits`. False, with nothing written, when the row was written since
    /// `read` was loaded or is no longer pending.
    pub async fn record_escalation(
        &self,
        read: &Interaction,
        escalated: &Interaction,
        new_chats: &[ChatKey],
        claim: &ShowClaim,
        audits: &[AuditEntry],
    ) -> Result<bool> {
        if !escalated.status.is_pending() {
            return Err(StoreError::WrongState { op: "escalate", id: escalated.id.clone(), reason: "it is settled" });
        }
        let now_ms = audits.first().map_or(0, |a| a.at_ms);
        self.write(RecordEscalation {
            id: escalated.id.clone(),
            revision: read.revision.0,
            body: json::encode(escalated, "interaction")?,
            access: access_column(escalated)?,
            escalation_ms: escalated.next_escalation_at(),
            new_chats: new_chats.to_vec(),
            claim: claim.clone(),
            audits: audits.to_vec(),
            now_ms,
        })
        .await
    }
}

struct RecordEscalation {
    id: String,
    revision: i64,
    /// The next step's time once this one is recorded (the timer column).
    escalation_ms: Option<i64>,
    body: String,
    access: String,
    new_chats: Vec<ChatKey>,
    claim: ShowClaim,
    audits: Vec<AuditEntry>,
    now_ms: i64,
}

impl Write for RecordEscalation {
    fn apply<'a>(&'a self, conn: &'a mut AnyConnection, deferred: &'a mut Deferred) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            let done = sqlx::query(
                "UPDATE interactions SET body = $1, escalation_ms = $2, timers_known = 1, access = $5, access_revision = revision + 1, revision = revision + 1
                 WHERE id = $3 AND status = 'pending' AND revision = $4",
            )
            .bind(self.body.as_str())
            .bind(self.escalation_ms)
            .bind(self.id.as_str())
            .bind(self.revision)
            .bind(self.access.as_str())
            .execute(&mut *conn)
            .await
            .map_err(StoreError::query("record an escalation step"))?;
            if done.rows_affected() == 0 {
                return Ok(false);
            }
            insert_shows(&mut *conn, &self.id, &self.new_chats, &self.claim, self.now_ms).await?;
            for audit in &self.audits {
                deferred.audit(audit);
            }
            Ok(true)
        })
    }
}
