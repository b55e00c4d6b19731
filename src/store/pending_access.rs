//! The web inbox's read of every pending request: its id, times and the facts the rule
//! of who may act needs ([`AccessFacts`]), from columns, not from the body. Requests
//! mostly share their facts (one agent, the same approvers), so the database groups
//! them by their facts text: a row per distinct text, decoded once, carrying the ids
//! and times of every request that shares it. A row whose facts were not written at
//! its current revision (written before the column existed, or since by a replica of
//! an older version) is decoded once from its body and its columns filled in.

use std::sync::Arc;

use super::Store;
use super::error::{Result, StoreError};
use super::interactions::{access_column, decode_row};
use super::json::{self, skip_corrupt};
use super::row::column;
use crate::interaction::AccessFacts;

/// What the inbox needs of one pending request to tell whether it waits on someone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingAccess {
    pub id: String,
    pub created_at_ms: i64,
    pub deadline_ms: i64,
    /// Shared by every request of the read with the same facts.
    pub facts: Arc<AccessFacts>,
}

/// Every pending request's facts grouped by their text. The status is written into the
/// text, not bound: that is what lets the databases read it from the partial index of
/// pending facts (migration 0027), which holds every column named here.
const PENDING_FACTS_GROUPED: &str = "SELECT access, string_agg(created_at_ms || ' ' || deadline_ms || ' ' || length(id) || ' ' || id, ',') AS requests
     FROM interactions WHERE status = 'pending' AND access_revision = revision GROUP BY access";

/// The pending requests whose facts column is not current, asked before every grouped
/// read. Found in the same partial index (it holds both revisions), so the usual
/// answer, none, costs no visit to a row; hence the literal status here too.
const PENDING_STALE_FACTS: &str =
    "SELECT id, created_at_ms, deadline_ms, revision, body FROM interactions WHERE status = 'pending' AND access_revision <> revision";

impl Store {
    /// What `keep` makes of each pending request, oldest first, where it makes
    /// something. Reads no body, except once for a row whose facts column is not
    /// current (see the module doc).
    pub async fn pending_access_each<T>(&self, keep: impl FnMut(PendingAccess) -> Option<T>) -> Result<Vec<T>> {
        let mut pending = self.fill_stale_access().await?;
        // A row per distinct facts text, with every request sharing it packed into one
        // text: ten thousand pending requests from a few agents are a few rows, where a
        // row each cost most of the read (each row crosses the driver on its own).
        let groups = sqlx::query(PENDING_FACTS_GROUPED).fetch_all(&self.pool).await.map_err(StoreError::query("go through pending requests' access facts"))?;
        for group in &groups {
            let packed: &str = column(group, "requests")?;
            let text: Option<&str> = column(group, "access")?;
            let Some(facts) = text.and_then(|text| skip_corrupt(json::decode::<AccessFacts>(text, "access facts", "pending requests"))) else { continue };
            let facts = Arc::new(facts);
            let Some(requests) = unpack(packed) else {
                tracing::error!(packed = %packed.chars().take(80).collect::<String>(), "skipping pending requests whose packed ids do not read");
                continue;
            };
            pending.extend(requests.into_iter().map(|(created_at_ms, deadline_ms, id)| PendingAccess {
                id: id.to_owned(),
                created_at_ms,
                deadline_ms,
                facts: facts.clone(),
            }));
        }
        pending.sort_unstable_by(|a, b| a.created_at_ms.cmp(&b.created_at_ms).then_with(|| a.id.cmp(&b.id)));
        Ok(pending.into_iter().filter_map(keep).collect())
    }

    /// Fills in the facts columns of the pending requests whose column is not current,
    /// from their bodies, so the grouped read that follows finds them (normally there
    /// are none). A request whose columns cannot be written is returned instead, read
    /// from its body; one written meanwhile is current already.
    async fn fill_stale_access(&self) -> Result<Vec<PendingAccess>> {
        let rows =
            sqlx::query(PENDING_STALE_FACTS).fetch_all(&self.pool).await.map_err(StoreError::query("read pending requests written without access facts"))?;
        let mut unfilled = Vec::new();
        for row in &rows {
            let Some(interaction) = skip_corrupt(decode_row(row)) else { continue };
            let filled = sqlx::query("UPDATE interactions SET access = $1, access_revision = revision WHERE id = $2 AND revision = $3")
                .bind(access_column(&interaction)?)
                .bind(interaction.id.as_str())
                .bind(interaction.revision.0)
                .execute(&self.pool)
                .await;
            if let Err(e) = filled {
                tracing::warn!(interaction = %interaction.id, error = %e, "cannot fill in a pending request's access facts");
                let facts = Arc::new(interaction.access_facts());
                unfilled.push(PendingAccess {
                    created_at_ms: column(row, "created_at_ms")?,
                    deadline_ms: column(row, "deadline_ms")?,
                    id: interaction.id,
                    facts,
                });
            }
        }
        Ok(unfilled)
    }
}

/// The requests of one group as `string_agg` packed them: `created deadline len id`,
/// comma-separated, the id's length in characters written before it so an id may hold
/// any character. `None` when the text is not in that form.
fn unpack(packed: &str) -> Option<Vec<(i64, i64, &str)>> {
    let mut requests = Vec::new();
    let mut rest = packed;
    while !rest.is_empty() {
        let (created, after) = rest.split_once(' ')?;
        let (deadline, after) = after.split_once(' ')?;
        let (len, after) = after.split_once(' ')?;
        let len: usize = len.parse().ok()?;
        let end = after.char_indices().nth(len).map_or(after.len(), |(at, _)| at);
        if after[..end].chars().count() != len {
            return None;
        }
        requests.push((created.parse().ok()?, deadline.parse().ok()?, &after[..end]));
        rest = match &after[end..] {
            "" => "",
            more => more.strip_prefix(',').filter(|next| !next.is_empty())?,
        };
    }
    Some(requests)
}

#[cfg(test)]
mod tests {
    use super::unpack;

    #[test]
    fn the_grouped_read_names_the_pending_status_as_stored() {
        let literal = format!("status = '{}'", crate::interaction::Status::Pending.name());
        assert!(super::PENDING_FACTS_GROUPED.contains(&literal));
        assert!(super::PENDING_STALE_FACTS.contains(&literal));
        assert!(include_str!("../../migrations/shared/0027_pending_reads.sql").contains(&format!("WHERE {literal}")));
    }

    #[test]
    fn packed_requests_read_back_whatever_their_ids_hold() {
        assert_eq!(unpack(""), Some(vec![]));
        assert_eq!(unpack("10 20 3 abc"), Some(vec![(10, 20, "abc")]));
        assert_eq!(unpack("10 20 4 a,b ,-5 7 2 é1"), Some(vec![(10, 20, "a,b "), (-5, 7, "é1")]));
    }

    #[test]
    fn a_text_not_in_the_packed_form_is_refused() {
        for bad in ["10 20 5 abc", "10 20 3 abcd", "10 20 x abc", "x 20 3 abc", "10 20 3 abc,", "10 20 3 abc;1 2 1 a"] {
            assert_eq!(unpack(bad), None, "{bad}");
        }
    }
}
