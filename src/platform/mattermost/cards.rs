//! Which posts are the bridge's own cards: every card it posts is remembered as
//! `card:<post_id>` → the request it shows, in Mattermost's own keys of the store
//! (`platform_state`), so every replica knows them after a restart. A click's
//! `post_id` must be one of them, for the request its signed code names: Mattermost
//! does not sign what it posts to the integration URL, and a valid code replayed
//! against another post (or a post made to look like a card) is refused.

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
}

fn key(post_id: &str) -> String {
    format!("card:{post_id}")
}

impl Cards {
    pub fn new(state: PlatformState) -> Self {
        Self { state }
    }

    /// Remembers post `post_id` as a card of request `interaction_id`, whose deadline
    /// is `deadline_ms`.
    pub async fn remember(&self, post_id: &str, interaction_id: &str, deadline_ms: i64) {
        let now = now_ms();
        let ttl = Duration::from_millis(deadline_ms.saturating_sub(now).max(0) as u64) + AFTER_DEADLINE;
        if let Err(e) = self.state.put(&key(post_id), interaction_id, now, Some(ttl)).await {
            tracing::warn!(%post_id, error = %e, "cannot remember a card; clicks on it will be refused");
        }
    }

    /// The request post `post_id` shows, when it is one of the bridge's cards.
    pub async fn interaction_of(&self, post_id: &str) -> Option<String> {
        if !super::address::is_id(post_id) {
            return None;
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
