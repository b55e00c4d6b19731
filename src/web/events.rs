//! Live updates (`GET /inbox/events`, Server-Sent Events): one task per bridge reads
//! the store's change mark (the pending count and the newest audit row) every second
//! and bumps a counter; each open page holds a stream that sends `change` when it
//! moves, and the page's script fetches the page again and swaps its live parts. The
//! store is the source, not the engine's memory, so a decision made on another replica
//! or in chat shows up as well. An open page costs one watch receiver, no query.

use std::convert::Infallible;
use std::sync::{Arc, Weak};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, Stream};
use tokio::sync::watch;

use super::Web;
use super::session;

/// How often the change mark is read.
const POLL: Duration = Duration::from_secs(1);

/// Starts the task that watches the store for `web`; it ends once `web` is dropped
/// (the listener stopped).
pub(super) fn watch_changes(web: Weak<Web>, changes: watch::Sender<u64>) {
    tokio::spawn(async move {
        let mut last = None;
        let mut ticker = tokio::time::interval(POLL);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            let Some(web) = web.upgrade() else { return };
            // Nobody watching: no query, and the next watcher starts afresh.
            if changes.receiver_count() <= 1 {
                last = None;
                continue;
            }
            match web.store.web_change_mark().await {
                // The first mark after a quiet spell counts as a change too: what
                // happened between a page's rendering and its stream's opening is
                // then fetched as well.
                Ok(mark) if last != Some(mark) => {
                    changes.send_modify(|n| *n += 1);
                    last = Some(mark);
                }
                Ok(_) => {}
                Err(e) => tracing::debug!(error = %e, "cannot read the inbox's change mark"),
            }
        }
    });
}

/// `GET /inbox/events`: `change` each time something was stored pending or settled.
pub(super) async fn stream(State(web): State<Arc<Web>>, headers: HeaderMap) -> Response {
    match session::viewer(&web, &headers).await {
        Ok(Some(_)) => {}
        Ok(None) => return StatusCode::UNAUTHORIZED.into_response(),
        Err(_) => return StatusCode::SERVICE_UNAVAILABLE.into_response(),
    }
    let mut changes = web.changes.clone();
    changes.mark_unchanged();
    Sse::new(events(changes)).keep_alive(KeepAlive::new().interval(Duration::from_secs(20))).into_response()
}

fn events(changes: watch::Receiver<u64>) -> impl Stream<Item = Result<Event, Infallible>> {
    stream::unfold(changes, |mut changes| async move {
        changes.changed().await.ok()?;
        let n = *changes.borrow_and_update();
        Some((Ok(Event::default().event("change").data(n.to_string())), changes))
    })
}
