//! Delivering the durable outbox, at least once: a session's queued commands, oldest
//! first, are written to its link and stay in the store, "in flight", until the
//! backend proves it read them (the transport says so, e.g. the pong to a ping sent
//! after the write; or the backend shows `approval_result` for the request). A write
//! to a half-open connection therefore never loses a decision: the connection is
//! dropped by its read timeout and the command is written again on the next one,
//! where `approval_key` lets the backend tell a repeat.
//!
//! A command queued before the current connection opened may have been written by an
//! earlier connection or process that died before the proof: the link is told so
//! ([`Outgoing::maybe_received`]) and, where the backend keeps a record, checks it
//! before writing the command again ([`Sent`]).
//!
//! Only the replica holding the session's lease reads its rows, so two replicas never
//! send the same rows.

use crate::clock::now_ms;
use crate::protocol::Command;
use crate::store::Store;

use super::SessionUpdate;
use super::lease::Lease;
use super::link::{Link, LinkError, Outgoing, Sent};

/// Commands written on the current connection and not yet proven read. One per
/// connection: a new connection starts empty, so everything unproven is written again.
#[derive(Debug, Default)]
pub struct InFlight {
    /// When the connection opened: a command queued before may have been written by
    /// an earlier one.
    opened_at_ms: i64,
    /// Commands written on this link so far; the `n`th write has sequence `n`.
    writes: u64,
    /// (sequence, outbox id, command), oldest first.
    written: Vec<(u64, i64, Command)>,
}

impl InFlight {
    pub fn opened_at(opened_at_ms: i64) -> Self {
        Self { opened_at_ms, ..Self::default() }
    }

    pub fn is_empty(&self) -> bool {
        self.written.is_empty()
    }

    fn contains(&self, id: i64) -> bool {
        self.written.iter().any(|(_, written, _)| *written == id)
    }
}

/// Writes every queued command of `session_id` that is not already in flight, in
/// order, while this replica holds the lease. `on_send` sees each command just before
/// it is written (to note an open turn). Returns what the engine must hear about
/// replies the link settled without writing them: `Delivered` when the backend's
/// record shows it has the reply, `NoLongerWaiting` when it waits for it no more.
pub async fn flush<L: Link>(
    store: &Store,
    lease: &Lease,
    session_id: &str,
    link: &mut L,
    in_flight: &mut InFlight,
    mut on_send: impl FnMut(&Command),
) -> Result<Vec<SessionUpdate>, LinkError> {
    let mut settled = Vec::new();
    for queued in store.outbox_if_leased(session_id, lease.owner(), now_ms()).await? {
        if in_flight.contains(queued.id) {
            continue;
        }
        on_send(&queued.command);
        let id = queued.stable_id();
        let outgoing = Outgoing { id: &id, command: &queued.command, maybe_received: queued.created_at_ms <= in_flight.opened_at_ms };
        match link.send(outgoing).await? {
            Sent::Written => {
                in_flight.writes += 1;
                tracing::debug!(%session_id, outbox_id = queued.id, sequence = in_flight.writes, "command written; waiting for the backend to prove it read it");
                in_flight.written.push((in_flight.writes, queued.id, queued.command));
            }
            outcome @ (Sent::AlreadyReceived | Sent::NotWaiting) => {
                tracing::info!(%session_id, outbox_id = queued.id, ?outcome, "command settled without writing it");
                store.remove_outbox(queued.id).await?;
                if let Command::Approval { approval_key, .. } = queued.command {
                    settled.push(match outcome {
                        Sent::NotWaiting => SessionUpdate::NoLongerWaiting { approval_key },
                        _ => SessionUpdate::Delivered { approval_key },
                    });
                }
            }
        }
    }
    Ok(settled)
}

/// The backend read the first `written` commands of this link: removes them from the
/// outbox. Returns the approval keys whose reply is now delivered.
pub async fn confirm_first(store: &Store, session_id: &str, in_flight: &mut InFlight, written: u64) -> Result<Vec<String>, LinkError> {
    let proven = in_flight.written.iter().take_while(|(sequence, _, _)| *sequence <= written).count();
    let mut delivered = Vec::new();
    for (_, id, command) in in_flight.written.drain(..proven) {
        store.remove_outbox(id).await?;
        tracing::debug!(%session_id, outbox_id = id, "command delivered");
        if let Command::Approval { approval_key, .. } = command {
            delivered.push(approval_key);
        }
    }
    Ok(delivered)
}

/// The backend showed `approval_result` (or `approval_timeout`) for `approval_key`:
/// whatever the bridge still holds for that request, written or not, is not sent
/// (again). True when a reply of the bridge's was among it.
pub async fn confirm_key(store: &Store, session_id: &str, approval_key: &str, in_flight: &mut InFlight) -> Result<bool, LinkError> {
    in_flight.written.retain(|(_, _, command)| !matches!(command, Command::Approval { approval_key: key, .. } if key == approval_key));
    Ok(store.drop_outbox_for_key(session_id, approval_key).await? > 0)
}

/// Whether `session_id` has commands waiting.
pub async fn has_commands(store: &Store, session_id: &str) -> Result<bool, LinkError> {
    Ok(!store.outbox_for_session(session_id).await?.is_empty())
}
