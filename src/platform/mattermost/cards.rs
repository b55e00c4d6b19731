//! Which posts are the bridge's own cards: every card it posts is remembered as
//! `card:<post_id>` → the request it shows, in Mattermost's own keys of the store
//! (`platform_state`), so every replica knows them after a restart. A click's
//! `post_id` must be one of them, for the request its signed code names: Mattermost
//! does not sign what it posts to the integration URL, and a valid code replayed
//! against another post (or a post made to look like a card) is refused.
//!
//! A card is also known in memory from the moment its post comes back until the
//! store has it: a click in that window (Mattermost shows the post at once, and a
//! commit with its fsync can take a while under load) is not refused as a forgery.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::clock::now_ms;
use crate::store::PlatformState;

/// How long a card is remembered past its request's deadline: a late click is still
/// recognised as one (and answered "expired"), not as a forgery.
const AFTER_DEADLINE: Duration = Duration::from_secs(7 * 24 * 3600);

/// The bridge's cards, by post id.
#[derive(Clone)]
pub struct Cards {
    state: PlatformState,
    /// Cards whose `remember` is still writing: post id → request. Each entry lives
    /// only as long as one store write, so the map holds at most the cards being
    /// posted at once.
    being_stored: Arc<Mutex<HashMap<String, String>>>,
}

fn key(post_id: &str) -> String {
    format!("card:{post_id}")
}

impl Cards {
    pub fn new(state: PlatformState) -> Self {
        Self { state, being_stored: Arc::default() }
    }

    fn being_stored(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.being_stored.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Remembers post `post_id` as a card of request `interaction_id`, whose deadline
    /// is `deadline_ms`.
    pub async fn remember(&self, post_id: &str, interaction_id: &str, deadline_ms: i64) {
        let now = now_ms();
        let ttl = Duration::from_millis(deadline_ms.saturating_sub(now).max(0) as u64) + AFTER_DEADLINE;
        self.being_stored().insert(post_id.to_owned(), interaction_id.to_owned());
        let stored = self.state.put(&key(post_id), interaction_id, now, Some(ttl)).await;
        self.being_stored().remove(post_id);
        if let Err(e) = stored {
            tracing::warn!(%post_id, error = %e, "cannot remember a card; clicks on it will be refused");
        }
    }

    /// The request post `post_id` shows, when it is one of the bridge's cards.
    pub async fn interaction_of(&self, post_id: &str) -> Option<String> {
        if !super::address::is_id(post_id) {
            return None;
        }
        if let Some(interaction) = self.being_stored().get(post_id) {
            return Some(interaction.clone());
        }
        match self.state.get(&key(post_id), now_ms()).await {
            Ok(stored) => stored.map(|s| s.value),
            Err(e) => {
                tracing::warn!(%post_id, error = %e, "cannot read the bridge's cards; the click is refused");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use sqlx::Connection;

    const POST: &str = "p0st0000000000000000000000";

    /// A click while the card's write waits on the database (another writer holds
    /// it) finds the card, and still finds it once the store has it.
    #[tokio::test]
    async fn a_card_is_known_while_its_write_waits_and_after() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("bridge.db").display());
        let store = Store::connect(&url).await.unwrap();
        let cards = Cards::new(store.platform_state("mattermost"));
        let mut other_writer = sqlx::SqliteConnection::connect(&url).await.unwrap();
        sqlx::query("BEGIN IMMEDIATE").execute(&mut other_writer).await.unwrap();

        let remembering = tokio::spawn({
            let cards = cards.clone();
            async move { cards.remember(POST, "i-1", now_ms() + 60_000).await }
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!remembering.is_finished(), "the write waits for the other writer");
        assert_eq!(cards.interaction_of(POST).await.as_deref(), Some("i-1"));
        assert_eq!(cards.interaction_of("0ther000000000000000000000").await, None);

        sqlx::query("ROLLBACK").execute(&mut other_writer).await.unwrap();
        remembering.await.unwrap();
        assert!(cards.being_stored().is_empty(), "the memory holds only cards being written");
        assert_eq!(cards.interaction_of(POST).await.as_deref(), Some("i-1"));
    }
}
