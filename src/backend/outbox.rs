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
//!
//! A command the engine just committed is handed to the session task with its row
//! ([`Source::Handed`]) and sent without reading it back, while the lease is vouched
//! for in memory. The outbox is read instead when the connection opens, on the slow
//! poll, when the lease cannot be vouched for, and when a handed row may already have
//! been sent and proven on this connection (its id is at or below the highest one the
//! connection has read or sent): the store then says whether it is still queued.

use crate::clock::now_ms;
use crate::protocol::Command;
use crate::store::{Queued, Store};

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
    /// The highest outbox id this connection has read, sent or dropped.
    seen_through: i64,
}

impl InFlight {
    pub fn opened_at(opened_at_ms: i64) -> Self {
        Self { opened_at_ms, ..Self::default() }
    }

    pub fn is_empty(&self) -> bool {
        self.written.is_empty()
    }

    /// How many commands wait for their proof.
    pub fn len(&self) -> usize {
        self.written.len()
    }

    fn contains(&self, id: i64) -> bool {
        self.written.iter().any(|(_, written, _)| *written == id)
    }
}

/// Where a flush takes the commands it writes from.
#[derive(Debug)]
pub enum Source {
    /// The session's outbox, read under the lease.
    Store,
    /// Rows the engine just committed and handed over, the lease vouched for.
    Handed(Vec<Queued>),
}

/// Writes the queued commands of `session_id` that are not already in flight, in
/// order: those of the outbox, read while this replica holds the lease, or those
/// handed over (read from the outbox after all when one may have been sent already).
/// `on_send` sees each command with what the link did with it (to note an open turn).
/// Returns what the engine must hear about replies the link settled without writing
/// them: `Delivered` when the backend's record shows it has the reply,
/// `NoLongerWaiting` when it waits for it no more.
pub async fn flush<L: Link>(
    store: &Store,
    lease: &Lease,
    session_id: &str,
    link: &mut L,
    in_flight: &mut InFlight,
    source: Source,
    mut on_send: impl FnMut(&Command, Sent),
) -> Result<Vec<SessionUpdate>, LinkError> {
    let queued = match source {
        Source::Handed(mut handed) if handed.iter().all(|queued| queued.id > in_flight.seen_through) => {
            handed.sort_unstable_by_key(|queued| queued.id);
            handed
        }
        Source::Handed(_) | Source::Store => store.outbox_if_leased(session_id, lease.owner(), now_ms()).await?,
    };
    let mut settled = Vec::new();
    for queued in queued {
        in_flight.seen_through = in_flight.seen_through.max(queued.id);
        if in_flight.contains(queued.id) {
            continue;
        }
        let id = queued.stable_id();
        let outgoing = Outgoing { id: &id, command: &queued.command, maybe_received: queued.created_at_ms <= in_flight.opened_at_ms };
        let sent = link.send(outgoing).await?;
        on_send(&queued.command, sent);
        match sent {
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
    let dropped = store.drop_outbox_for_key(session_id, approval_key).await?;
    // A reply handed over late for this key must not be written: the store is asked.
    in_flight.seen_through = dropped.iter().copied().fold(in_flight.seen_through, i64::max);
    Ok(!dropped.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Reply;

    /// A link that writes everything and records what it wrote.
    #[derive(Default)]
    struct Recorder(Vec<Command>);

    impl Link for Recorder {
        type State = ();

        async fn send(&mut self, outgoing: Outgoing<'_>) -> Result<Sent, LinkError> {
            self.0.push(outgoing.command.clone());
            Ok(Sent::Written)
        }

        async fn recv(&mut self, _: &mut ()) -> Option<Result<super::super::link::Received, LinkError>> {
            None
        }
    }

    fn approval(key: &str) -> Command {
        Command::Approval { session_id: "s".into(), approval_key: key.into(), reply: Reply::Decisions { decisions: vec![], user_edit_content: None } }
    }

    async fn leased_store() -> (tempfile::TempDir, Store, Lease) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::connect(&format!("sqlite://{}", dir.path().join("o.db").display())).await.unwrap();
        let lease = Lease::new(store.clone(), 15, "me".into());
        assert!(lease.take("s").await.unwrap());
        (dir, store, lease)
    }

    /// What was handed over is written as handed, oldest id first, without reading the
    /// outbox: these rows were never stored, and are written all the same. A row at or
    /// below what the connection already saw is not trusted: the outbox is read, and
    /// there it is gone (proven and removed), so nothing is written twice.
    #[tokio::test]
    async fn handed_rows_are_written_unread_unless_the_connection_may_have_sent_them() {
        let (_dir, store, lease) = leased_store().await;
        let mut link = Recorder::default();
        let mut in_flight = InFlight::opened_at(0);
        let handed = vec![Queued { id: 8, created_at_ms: 1, command: approval("b") }, Queued { id: 7, created_at_ms: 1, command: approval("a") }];
        flush(&store, &lease, "s", &mut link, &mut in_flight, Source::Handed(handed), |_, _| {}).await.unwrap();
        assert_eq!(link.0, [approval("a"), approval("b")]);
        // The backend proved it read both: they are no longer in flight.
        assert_eq!(confirm_first(&store, "s", &mut in_flight, 2).await.unwrap(), ["a", "b"]);

        let late = vec![Queued { id: 7, created_at_ms: 1, command: approval("a") }];
        flush(&store, &lease, "s", &mut link, &mut in_flight, Source::Handed(late), |_, _| {}).await.unwrap();
        assert_eq!(link.0.len(), 2, "a row this connection saw is looked up, not written again: {:?}", link.0);
    }

    /// Reading the outbox (at connect, on the poll) writes what is queued once, and
    /// only while the lease is held: after another replica took it, nothing.
    #[tokio::test]
    async fn the_outbox_is_read_under_the_lease_and_nothing_is_written_twice() {
        let (_dir, store, lease) = leased_store().await;
        let id = store.enqueue(&approval("a"), 1).await.unwrap();
        let mut link = Recorder::default();
        let mut in_flight = InFlight::opened_at(0);
        flush(&store, &lease, "s", &mut link, &mut in_flight, Source::Store, |_, _| {}).await.unwrap();
        let handed = vec![Queued { id, created_at_ms: 1, command: approval("a") }];
        flush(&store, &lease, "s", &mut link, &mut in_flight, Source::Handed(handed), |_, _| {}).await.unwrap();
        assert_eq!(link.0, [approval("a")], "in flight already");

        store.release_lease("s", "me").await.unwrap();
        assert!(Lease::new(store.clone(), 15, "other".into()).take("s").await.unwrap());
        let mut fresh = InFlight::opened_at(0);
        flush(&store, &lease, "s", &mut link, &mut fresh, Source::Store, |_, _| {}).await.unwrap();
        assert_eq!(link.0.len(), 1, "another replica holds the session");
    }
}
