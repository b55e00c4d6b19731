//! Requests other replicas store, watched here at once: on PostgreSQL each request
//! stored pending is announced at commit ([`Store::pending_listener`]), and this
//! replica reads its timers and hands them to the session's shard, so its deadline is
//! kept here too (the replica that stored it may die before it comes) without waiting
//! for the next [`RESCAN`](super::RESCAN), which stays as the safety net for notices
//! lost while the listener reconnects. On SQLite there is one replica, which watches
//! what it stores: nothing to hear.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::Shared;
use super::shards::{Input, Shards, Watched};

use crate::store::{PendingListener, StoreError};

/// How long to wait before listening again after the connection was lost.
const RELISTEN: Duration = Duration::from_secs(1);

/// Listens for announced requests before the engine reads what is pending at start,
/// so a request stored between that read and the first `LISTEN` is not left to the
/// rescan. `None` on SQLite, or when PostgreSQL cannot be heard yet (then
/// [`watch_announced`] keeps trying).
pub(super) async fn listen_first(store: &crate::store::Store) -> Option<PendingListener> {
    match store.pending_listener().await {
        Ok(listener) => listener,
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for new requests yet; trying again once the engine runs");
            None
        }
    }
}

/// Watches every request announced by any replica until the engine stops, starting
/// with `first`, the listener [`listen_first`] opened.
pub(super) async fn watch_announced(shared: Arc<Shared>, shards: Shards, mut first: Option<PendingListener>, mut stopping: watch::Receiver<bool>) {
    loop {
        let opened = match first.take() {
            Some(listener) => Ok(Some(listener)),
            None => tokio::select! {
                opened = shared.store.pending_listener() => opened,
                _ = stopping.changed() => return,
            },
        };
        let mut listener = match opened {
            Ok(Some(listener)) => listener,
            // SQLite: nothing is announced; this task only waits for the stop.
            Ok(None) => {
                let _ = stopping.changed().await;
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for new requests; other replicas' requests are watched at the next rescan meanwhile");
                tokio::select! {
                    _ = tokio::time::sleep(RELISTEN * 5) => continue,
                    _ = stopping.changed() => return,
                }
            }
        };
        loop {
            let id = tokio::select! {
                id = listener.recv() => match id {
                    Ok(id) => id,
                    Err(e) => {
                        tracing::warn!(error = %e, "lost the listener for new requests; listening again");
                        break;
                    }
                },
                _ = stopping.changed() => return,
            };
            // Stored by this replica (or heard already): its shard watches it.
            if shared.routes.session_of(&id).is_some() {
                continue;
            }
            if let Err(e) = watch(&shared, &shards, &id).await {
                tracing::warn!(interaction_id = %id, error = %e, "cannot read an announced request; it is watched at the next rescan");
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(RELISTEN) => {}
            _ = stopping.changed() => return,
        }
    }
}

/// Hands the timers of request `id`, if it is still pending, to its session's shard.
async fn watch(shared: &Shared, shards: &Shards, id: &str) -> Result<(), StoreError> {
    let Some(interaction) = shared.store.interaction(id).await? else { return Ok(()) };
    if !interaction.status.is_pending() {
        return Ok(());
    }
    shared.routes.insert(&interaction.id, &interaction.session_id);
    shards.send(shards.of_session(&interaction.session_id), Input::Watch(vec![Watched::of(&interaction)])).await;
    Ok(())
}
