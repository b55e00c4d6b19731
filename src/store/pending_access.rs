//! The web inbox's read of every pending request: its id, times and the facts the rule
//! of who may act needs ([`AccessFacts`]), from columns, not from the body. Requests
//! mostly share their facts (one agent, the same approvers), so each distinct text is
//! decoded once per read. A row whose facts were not written at its current revision
//! (written before the column existed, or since by a replica of an older version) is
//! decoded once from its body and its columns filled in.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::TryStreamExt;

use super::Store;
use super::error::{Result, StoreError};
use super::interactions::{access_column, decode_row};
use super::json::{self, skip_corrupt};
use super::row::column;
use crate::interaction::{AccessFacts, Status};

/// What the inbox needs of one pending request to tell whether it waits on someone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingAccess {
    pub id: String,
    pub created_at_ms: i64,
    pub deadline_ms: i64,
    /// Shared by every row of the read with the same facts.
    pub facts: Arc<AccessFacts>,
}

impl Store {
    /// What `keep` makes of each pending request, oldest first, where it makes
    /// something. Reads no body, except once for a row whose facts column is not
    /// current (see the module doc).
    pub async fn pending_access_each<T>(&self, mut keep: impl FnMut(&PendingAccess) -> Option<T>) -> Result<Vec<T>> {
        let mut rows = sqlx::query(
            "SELECT id, created_at_ms, deadline_ms, revision, access_revision, access, CASE WHEN access_revision <> revision THEN body END AS body
             FROM interactions WHERE status = $1 ORDER BY created_at_ms, id",
        )
        .bind(Status::Pending.name())
        .fetch(&self.pool);
        let mut known: HashMap<String, Arc<AccessFacts>> = HashMap::new();
        let mut kept = Vec::new();
        let mut stale = Vec::new();
        while let Some(row) = rows.try_next().await.map_err(StoreError::query("go through pending requests' access facts"))? {
            let id: String = column(&row, "id")?;
            let revision: i64 = column(&row, "revision")?;
            let current = if column::<i64>(&row, "access_revision")? == revision { column::<Option<&str>>(&row, "access")? } else { None };
            let facts = match current {
                Some(text) => match known.get(text) {
                    Some(facts) => Some(facts.clone()),
                    None => skip_corrupt(json::decode::<AccessFacts>(text, "access facts", &id)).map(|facts| {
                        let facts = Arc::new(facts);
                        known.insert(text.to_owned(), facts.clone());
                        facts
                    }),
                },
                None => match skip_corrupt(decode_row(&row)) {
                    Some(interaction) => {
                        let facts = Arc::new(interaction.access_facts());
                        stale.push((id.clone(), revision, access_column(&interaction)?));
                        Some(facts)
                    }
                    None => None,
                },
            };
            let Some(facts) = facts else { continue };
            let pending = PendingAccess { id, created_at_ms: column(&row, "created_at_ms")?, deadline_ms: column(&row, "deadline_ms")?, facts };
            if let Some(made) = keep(&pending) {
                kept.push(made);
            }
        }
        drop(rows);
        for (id, revision, access) in stale {
            // Best effort, and only over the revision read: a row written meanwhile is
            // read from its body next time.
            let filled = sqlx::query("UPDATE interactions SET access = $1, access_revision = revision WHERE id = $2 AND revision = $3")
                .bind(access)
                .bind(id.as_str())
                .bind(revision)
                .execute(&self.pool)
                .await;
            if let Err(e) = filled {
                tracing::warn!(interaction = %id, error = %e, "cannot fill in a pending request's access facts");
            }
        }
        Ok(kept)
    }
}
