//! What every connection-based backend shares, whatever its wire format: one
//! supervised task per session that connects while the session has work (an open
//! turn, pending interactions, or commands in the outbox), holds the replica
//! [`Lease`] while connected, reconnects with capped exponential backoff, reconciles
//! from history on every connect, delivers the outbox in order and at least once,
//! closes the connection when idle, and relays the backend's updates to the engine.
//! What the chats have shown of an open turn's texts is recorded with the turn, so a
//! reconnect relays the texts the history holds beyond it once ([`super::last_words`]).
//!
//! A backend plugs in as a [`Transport`]: how to open a session's [`Link`], how to write
//! one command to it and how to read the next updates from it, including whether they
//! prove the backend read what was written. Everything else lives here, once.
//! [`SessionConnector`] is the resulting [`Connector`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use tracing::Instrument;

use super::last_words::TurnTexts;
use super::lease::Lease;
pub use super::link::{Link, LinkError, Outgoing, Received, Sent, Transport};
use super::outbox::{InFlight, Source};
use super::{BackendInput, Connector, SessionUpdate, history, outbox};
use crate::clock::now_ms;
use crate::protocol::Command;
use crate::store::{Queued, Store};

/// How often the connector looks at the whole outbox for commands no one here was told
/// of: clicks that reached another replica, `hitl-bridge cancel` run beside the bridge.
/// One query for every session, not one per session.
const OUTBOX_POLL: Duration = Duration::from_secs(1);

/// Settings shared by every session task.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// GET endpoint in seed 000 history format, `{session_id}` replaced.
    pub history_url: Option<String>,
    /// Deadlines for requests recovered from history (see [`history::reconcile`]).
    pub defaults: crate::interaction::TimeoutDefaults,
    pub reconnect_max: Duration,
    /// An idle session (no open turn, nothing pending, nothing queued, nothing in
    /// flight) closes its connection after this long.
    pub idle_close: Duration,
    /// Where live connections are counted (`backend_sessions_connected`).
    pub metrics: crate::metrics::Metrics,
}

/// A [`Connector`] for any [`Transport`]: serves every session not claimed by a more
/// specific connector.
pub struct SessionConnector<T: Transport> {
    inner: Arc<Inner<T>>,
}

struct Inner<T: Transport> {
    transport: T,
    options: SessionOptions,
    lease: Lease,
    store: Store,
    http: reqwest::Client,
    updates: mpsc::Sender<BackendInput>,
    sessions: Mutex<HashMap<String, SessionTask>>,
    /// Hears PostgreSQL's announcements of queued commands ([`listen_outbox`]).
    listener: Mutex<Option<JoinHandle<()>>>,
    /// Set by `shutdown`: the polls and the listener start no session task after it
    /// (a turn whose lease was just given up is for the next bridge or another replica).
    stopped: AtomicBool,
}

struct SessionTask {
    signals: Arc<Signals>,
    task: JoinHandle<()>,
}

/// What the engine tells a session task.
#[derive(Default)]
struct Signals {
    /// New commands are in the outbox.
    wake: Notify,
    /// Some of them were not handed over: read the outbox.
    read_outbox: AtomicBool,
    /// Rows just committed and handed over, to send without reading them back.
    handed: Mutex<Vec<Queued>>,
    /// The highest outbox id handed over here: PostgreSQL's announcement of a row up to
    /// it needs no outbox read.
    handed_through: AtomicI64,
    /// A `message` was sent and no end of turn has come back yet.
    turn_open: AtomicBool,
    /// The store says the agent was in a turn when this task started: a bridge (this
    /// one before a restart, or a replica that died) sent the message and did not hear
    /// the turn end. Work until the backend is heard from on a connection (then the turn
    /// is [`Signals::turn_open`]) or has said nothing for `idle_close`.
    turn_restored: AtomicBool,
    /// Commands written on the current connection and not yet proven read: the outbox
    /// poll wakes the task when the session has more queued than this.
    in_flight: AtomicUsize,
}

impl Signals {
    /// Where the next flush takes its commands from; `None`: nothing new. Taken before
    /// any read, so whatever is handed over meanwhile waits for the next flush.
    fn take_source(&self, lease_vouched: bool) -> Option<Source> {
        let handed = std::mem::take(&mut *self.handed.lock().unwrap_or_else(|p| p.into_inner()));
        if self.read_outbox.swap(false, Ordering::AcqRel) || (!handed.is_empty() && !lease_vouched) {
            return Some(Source::Store);
        }
        (!handed.is_empty()).then_some(Source::Handed(handed))
    }
}

impl<T: Transport> SessionConnector<T> {
    pub fn new(transport: T, options: SessionOptions, lease: Lease, store: Store, updates: mpsc::Sender<BackendInput>) -> Self {
        let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap_or_default();
        let inner = Arc::new(Inner {
            transport,
            options,
            lease,
            store,
            http,
            updates,
            sessions: Mutex::new(HashMap::new()),
            listener: Mutex::new(None),
            stopped: AtomicBool::new(false),
        });
        tokio::spawn(poll_outbox(Arc::downgrade(&inner)));
        let listener = tokio::spawn(listen_outbox(Arc::downgrade(&inner)));
        *inner.listener.lock().unwrap_or_else(|p| p.into_inner()) = Some(listener);
        Self { inner }
    }
}

impl<T: Transport> Connector for SessionConnector<T> {
    fn name(&self) -> &'static str {
        self.inner.transport.name()
    }

    fn serves(&self, _session_id: &str) -> bool {
        true
    }

    /// Makes sure `session_id` has a task and tells it to read and deliver its outbox.
    fn deliver(&self, session_id: &str) {
        let signals = self.inner.task_for(session_id);
        signals.read_outbox.store(true, Ordering::Release);
        signals.wake.notify_one();
    }

    /// Hands `queued` to its session's task, which sends it without reading it back.
    fn deliver_queued(&self, queued: Queued) {
        let signals = self.inner.task_for(queued.command.session_id());
        signals.handed_through.fetch_max(queued.id, Ordering::AcqRel);
        signals.handed.lock().unwrap_or_else(|p| p.into_inner()).push(queued);
        signals.wake.notify_one();
    }

    /// Stops every session task and gives up their leases; the outbox keeps what was
    /// not sent.
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.inner.stopped.store(true, Ordering::Release);
            let stopped: Vec<String> = {
                let mut sessions = self.inner.sessions.lock().unwrap_or_else(|p| p.into_inner());
                sessions
                    .drain()
                    .map(|(session, task)| {
                        task.task.abort();
                        session
                    })
                    .collect()
            };
            for session in stopped {
                self.inner.lease.release(&session).await;
            }
        })
    }
}

impl<T: Transport> Inner<T> {
    /// The signals of `session_id`'s task, started if it has none (unless the connector
    /// is stopping).
    fn task_for(self: &Arc<Self>, session_id: &str) -> Arc<Signals> {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        if self.stopped.load(Ordering::Acquire) {
            // Signals nobody reads: a stopping connector starts nothing.
            return Arc::new(Signals::default());
        }
        let entry = sessions.entry(session_id.to_owned()).or_insert_with(|| {
            let signals = Arc::new(Signals::default());
            let span = tracing::info_span!("session", session_id = %session_id);
            let task = tokio::spawn(run(self.clone(), session_id.to_owned(), signals.clone()).instrument(span));
            SessionTask { signals, task }
        });
        entry.signals.clone()
    }
}

/// Every [`OUTBOX_POLL`] while the connector lives: counts the outbox by session and
/// tells each session with more queued than it has in flight to read its outbox
/// (starting its task if it has none); and takes over the turns in progress no replica
/// holds any more (one died mid-turn), once their lease has lapsed.
async fn poll_outbox<T: Transport>(inner: Weak<Inner<T>>) {
    let mut poll = tokio::time::interval(OUTBOX_POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        poll.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        let queued = match inner.store.outbox_by_session().await {
            Ok(queued) => queued,
            Err(e) => {
                tracing::warn!(error = %e, "cannot count the outbox; looking again soon");
                continue;
            }
        };
        for (session_id, count) in queued {
            let signals = inner.task_for(&session_id);
            if count > signals.in_flight.load(Ordering::Acquire) {
                signals.read_outbox.store(true, Ordering::Release);
                signals.wake.notify_one();
            }
        }
        match inner.store.orphaned_turns(now_ms()).await {
            Ok(orphaned) => {
                for session_id in orphaned {
                    let signals = inner.task_for(&session_id);
                    if !signals.turn_open.load(Ordering::Acquire) && !signals.turn_restored.swap(true, Ordering::AcqRel) {
                        tracing::info!(%session_id, "the agent is in a turn no replica holds; taking the session over");
                        signals.wake.notify_one();
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot list the turns no replica holds; looking again soon"),
        }
    }
}

/// PostgreSQL: hears each command queued by any replica (a click handled elsewhere,
/// `hitl-bridge cancel`) as it commits, and tells its session's task to read the
/// outbox at once, unless it was handed over here already. The holder of the session
/// then sends it within milliseconds rather than at the next [`OUTBOX_POLL`], which
/// stays as the safety net for announcements lost while the listener reconnects. Ends
/// at once on SQLite (one process: everything is handed over in memory).
async fn listen_outbox<T: Transport>(inner: Weak<Inner<T>>) {
    loop {
        let Some(store) = inner.upgrade().map(|inner| inner.store.clone()) else { return };
        let mut listener = match store.outbox_listener().await {
            Ok(Some(listener)) => listener,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for queued commands; counting the outbox once a second meanwhile");
                tokio::time::sleep(OUTBOX_POLL * 5).await;
                continue;
            }
        };
        drop(store);
        loop {
            let notice = match listener.recv().await {
                Ok(notice) => notice,
                Err(e) => {
                    tracing::warn!(error = %e, "lost the listener for queued commands; listening again");
                    break;
                }
            };
            let Some(inner) = inner.upgrade() else { return };
            let signals = inner.task_for(&notice.session_id);
            if notice.id > signals.handed_through.load(Ordering::Acquire) {
                signals.read_outbox.store(true, Ordering::Release);
                signals.wake.notify_one();
            }
        }
        tokio::time::sleep(OUTBOX_POLL).await;
    }
}

impl<T: Transport> Drop for Inner<T> {
    fn drop(&mut self) {
        if let Some(listener) = self.listener.get_mut().unwrap_or_else(|p| p.into_inner()).take() {
            listener.abort();
        }
        let sessions = self.sessions.get_mut().unwrap_or_else(|p| p.into_inner());
        for (_, task) in sessions.drain() {
            task.task.abort();
        }
    }
}

async fn run<T: Transport>(inner: Arc<Inner<T>>, session_id: String, signals: Arc<Signals>) {
    let mut backoff = Duration::from_secs(1);
    let mut state = inner.transport.new_state();
    let mut texts = TurnTexts::default();
    match inner.store.has_open_turn(&session_id).await {
        Ok(open) => signals.turn_restored.store(open, Ordering::Release),
        Err(e) => tracing::warn!(%session_id, error = %e, "cannot tell whether the agent is in a turn; connecting only for other work"),
    }
    loop {
        match has_work(&inner, &session_id, &signals).await {
            Ok(true) => {}
            Ok(false) => {
                signals.wake.notified().await;
                continue;
            }
            Err(e) => tracing::warn!(%session_id, error = %e, "cannot read the outbox; retrying"),
        }
        // Not connected: what was handed over is read from the outbox at connect (and
        // must not pile up while the backend is down or another replica holds it).
        drop(signals.take_source(false));
        let taking = Instant::now();
        match inner.lease.take(&session_id).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::debug!(%session_id, "another replica holds this session");
                // Often enough to take over soon after the holder's lease lapses.
                tokio::time::sleep(inner.lease.renew_every() / 2).await;
                continue;
            }
            Err(e) => {
                tracing::warn!(%session_id, error = %e, "cannot take the session lease; retrying");
                tokio::time::sleep(backoff).await;
                continue;
            }
        }
        match inner.transport.connect(&session_id).await {
            Ok(link) => {
                backoff = Duration::from_secs(1);
                tracing::info!(%session_id, backend = inner.transport.name(), "connected to backend");
                let connected = inner.options.metrics.session_connected();
                let ended = pump(&inner, &session_id, &signals, &mut state, &mut texts, link, taking).await;
                // What was in flight is written again on the next connection.
                signals.in_flight.store(0, Ordering::Release);
                match ended {
                    Ok(()) => tracing::info!(%session_id, "backend closed the connection"),
                    Err(LinkError::EngineGone) => return,
                    Err(e) => tracing::warn!(%session_id, error = %e, "backend connection lost"),
                }
                drop(connected);
                if let Ok(false) = has_work(&inner, &session_id, &signals).await {
                    // Idle: let any replica take the session when work comes.
                    inner.lease.release(&session_id).await;
                }
            }
            Err(e) => {
                tracing::warn!(%session_id, error = %e, retry_in = ?backoff, "cannot connect to backend");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(inner.options.reconnect_max);
            }
        }
    }
}

/// Whether the session should be connected: an open turn (one this task saw start, or
/// one the store says a bridge before it did), pending interactions, or commands
/// waiting.
async fn has_work<T: Transport>(inner: &Inner<T>, session_id: &str, signals: &Signals) -> Result<bool, LinkError> {
    Ok(signals.turn_restored.load(Ordering::Acquire) || is_busy(inner, session_id, signals).await?)
}

/// [`has_work`] but for a turn only restored from the store: what keeps a connection
/// from closing when idle. A restored turn the backend says nothing about (it ended
/// while no bridge listened) must not hold the connection forever.
async fn is_busy<T: Transport>(inner: &Inner<T>, session_id: &str, signals: &Signals) -> Result<bool, LinkError> {
    Ok(signals.turn_open.load(Ordering::Acquire) || inner.store.has_commands(session_id).await? || inner.store.has_pending_in_session(session_id).await?)
}

/// Runs one connection: reconcile, deliver the outbox, then relay updates until the
/// backend closes, the link fails, or the session has been idle for
/// `options.idle_close`. Outbox deliveries are triggered by `wake` (the engine, or the
/// connector's outbox poll).
/// `lease_taken`: when the lease was last taken (just before the call that took it).
async fn pump<T: Transport>(
    inner: &Inner<T>,
    session_id: &str,
    signals: &Signals,
    state: &mut T::State,
    texts: &mut TurnTexts,
    mut link: T::Link,
    mut lease_taken: Instant,
) -> Result<(), LinkError> {
    match inner.store.open_turn_of(session_id).await? {
        Some(turn) => texts.track(turn.opened_at_ms, turn.texts_shown),
        // No turn open (or its end was recorded): nothing of one to relay or count.
        None => drop(texts.end()),
    }
    if let Some(template) = &inner.options.history_url
        && let Some(messages) = history::read(&inner.http, template, session_id).await
    {
        // Read before anything of this connection is relayed: what arrives live after
        // it and repeats these texts is the backend sending them again.
        relay_last_words(inner, session_id, texts, &messages).await?;
        for update in history::reconcile(&inner.store, &messages, session_id, inner.options.defaults).await? {
            send_update(inner, session_id, update).await?;
        }
    }
    let mut in_flight = InFlight::opened_at(now_ms());
    // With the turn's message still queued, the backend may not have it: the flush
    // below sends it (or finds it received), and what the backend says then is the
    // turn; a backend's latest outcome would be the turn before's.
    if signals.turn_restored.load(Ordering::Acquire) && !message_queued(inner, session_id).await? {
        let updates = link.resume_turn().await?;
        relay(inner, session_id, signals, texts, Received::updates(updates), &mut in_flight).await?;
    }
    // Whatever was handed over before now is in the outbox this read sees.
    drop(signals.take_source(false));
    flush(inner, session_id, signals, texts, &mut link, &mut in_flight, Source::Store).await?;
    let mut renew = tokio::time::interval(inner.lease.renew_every());
    renew.tick().await; // the first tick is immediate; the lease was just taken
    // Idleness is looked at a few times per `idle_close`: it only decides when to close.
    let mut idle_check = tokio::time::interval((inner.options.idle_close / 4).clamp(Duration::from_secs(1), Duration::from_secs(15)));
    idle_check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut idle_since: Option<tokio::time::Instant> = None;
    loop {
        tokio::select! {
            _ = renew.tick() => {
                let taking = Instant::now();
                if !inner.lease.take(session_id).await? {
                    return Err(LinkError::LeaseLost);
                }
                lease_taken = taking;
            }
            _ = idle_check.tick() => {
                if in_flight.is_empty() && !is_busy(inner, session_id, signals).await? {
                    let since = *idle_since.get_or_insert_with(tokio::time::Instant::now);
                    if since.elapsed() >= inner.options.idle_close {
                        if signals.turn_restored.swap(false, Ordering::AcqRel) {
                            tracing::info!(%session_id, "the turn open when the bridge stopped was not heard from; taking it as ended");
                            end_turn(inner, session_id, texts).await?;
                        }
                        tracing::info!(%session_id, "idle; closing the backend connection");
                        return Ok(());
                    }
                } else {
                    idle_since = None;
                }
            }
            _ = signals.wake.notified() => {
                // The lease lasts `period` from when it was taken; renewed every third
                // of it, it normally has two thirds left. Past half, it is not vouched
                // for in memory: the outbox read checks it in the store.
                let lease_vouched = lease_taken.elapsed() < inner.lease.period() / 2;
                if let Some(source) = signals.take_source(lease_vouched) {
                    flush(inner, session_id, signals, texts, &mut link, &mut in_flight, source).await?;
                }
            }
            received = link.recv(state) => match received {
                Some(Ok(received)) => relay(inner, session_id, signals, texts, received, &mut in_flight).await?,
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            },
        }
        signals.in_flight.store(in_flight.len(), Ordering::Release);
    }
}

/// Whether a chat message waits in the session's outbox (unproven, or not sent yet).
async fn message_queued<T: Transport>(inner: &Inner<T>, session_id: &str) -> Result<bool, LinkError> {
    Ok(inner.store.outbox_for_session(session_id).await?.iter().any(|(_, command)| matches!(command, Command::Message { .. })))
}

/// The agent's texts of the open turn that the history holds beyond what the chats were
/// shown (it spoke while no bridge listened, or on a connection that died before its
/// words were relayed), relayed once, with what to record once they are shown.
async fn relay_last_words<T: Transport>(
    inner: &Inner<T>,
    session_id: &str,
    texts: &mut TurnTexts,
    messages: &[crate::protocol::HistoryMessage],
) -> Result<(), LinkError> {
    let last_words = texts.beyond(messages);
    if last_words.is_empty() {
        return Ok(());
    }
    tracing::info!(%session_id, texts = last_words.len(), "the history holds texts of this turn the chats were not shown; relaying them");
    for text in last_words {
        send_update(inner, session_id, text.into_update()).await?;
    }
    match texts.shown() {
        Some(shown) => send_update(inner, session_id, shown).await,
        None => Ok(()),
    }
}

/// The open turn ended (or is taken as ended): its end is recorded once the chats have
/// shown its last words, so a bridge killed before that still relays them after its
/// restart. A turn this task does not know is closed at once.
async fn end_turn<T: Transport>(inner: &Inner<T>, session_id: &str, texts: &mut TurnTexts) -> Result<(), LinkError> {
    match texts.end() {
        Some(ended) => send_update(inner, session_id, ended).await,
        None => Ok(inner.store.close_turn(session_id).await?),
    }
}

/// Confirms what the backend proved it read, then hands the updates to the engine.
async fn relay<T: Transport>(
    inner: &Inner<T>,
    session_id: &str,
    signals: &Signals,
    texts: &mut TurnTexts,
    received: Received,
    in_flight: &mut InFlight,
) -> Result<(), LinkError> {
    if let Some(written) = received.proves_first {
        for approval_key in outbox::confirm_first(&inner.store, session_id, in_flight, written).await? {
            send_update(inner, session_id, SessionUpdate::Delivered { approval_key }).await?;
        }
    }
    // The backend speaks: a turn restored from the store is alive (or ends below).
    if !received.updates.is_empty() && signals.turn_restored.swap(false, Ordering::AcqRel) {
        signals.turn_open.store(true, Ordering::Release);
    }
    for update in received.updates {
        match &update {
            SessionUpdate::Text { text, .. } => {
                if !texts.live(text) {
                    tracing::info!(%session_id, "the backend sent again a text already relayed from its history; not shown twice");
                    continue;
                }
                send_update(inner, session_id, update).await?;
                if let Some(shown) = texts.shown() {
                    send_update(inner, session_id, shown).await?;
                }
                continue;
            }
            SessionUpdate::TextProgress { .. } if texts.awaits_echoes() => {
                tracing::debug!(%session_id, "a text streams while texts relayed from history may be repeated; showing it once complete");
                continue;
            }
            SessionUpdate::TurnEnded | SessionUpdate::TurnFailed { .. } => {
                signals.turn_open.store(false, Ordering::Release);
                send_update(inner, session_id, update).await?;
                end_turn(inner, session_id, texts).await?;
                continue;
            }
            // The backend has an outcome for the request: a reply still held for it is
            // delivered (approval_result) or too late (approval_timeout); either way it
            // is not sent (again).
            SessionUpdate::Resolved { approval_key, .. } => {
                let held_ours = outbox::confirm_key(&inner.store, session_id, approval_key, in_flight).await?;
                if held_ours {
                    send_update(inner, session_id, SessionUpdate::Delivered { approval_key: approval_key.clone() }).await?;
                }
            }
            SessionUpdate::TimedOut { approval_key } | SessionUpdate::NoLongerWaiting { approval_key } => {
                outbox::confirm_key(&inner.store, session_id, approval_key, in_flight).await?;
            }
            _ => {}
        }
        send_update(inner, session_id, update).await?;
    }
    Ok(())
}

/// Delivers the outbox, noting an open turn when a `message` goes out, and tells the
/// engine about replies settled without a write.
async fn flush<T: Transport>(
    inner: &Inner<T>,
    session_id: &str,
    signals: &Signals,
    texts: &mut TurnTexts,
    link: &mut T::Link,
    in_flight: &mut InFlight,
    source: Source,
) -> Result<(), LinkError> {
    // A message or decision sent while the agent is in a turn belongs to that turn; one
    // sent after its end starts a new turn.
    let in_turn = signals.turn_open.load(Ordering::Acquire) || signals.turn_restored.load(Ordering::Acquire);
    let mut turn_started = false;
    let settled = outbox::flush(&inner.store, &inner.lease, session_id, link, in_flight, source, |command, sent| match command {
        Command::Message { .. } => {
            signals.turn_open.store(true, Ordering::Release);
            turn_started = true;
        }
        // The agent goes on working with the decision: what it says next belongs to a
        // turn as much as what follows a message (a backend may have ended the turn
        // at the request, as LangGraph's run does at its interrupt), and the
        // connection stays until it ends.
        Command::Approval { .. } if sent == Sent::Written => {
            signals.turn_open.store(true, Ordering::Release);
            turn_started = true;
        }
        _ => {}
    })
    .await?;
    if turn_started {
        // Durable, so a bridge that dies before the turn ends is replaced by one that
        // connects this session again. Written after the command: until the backend
        // proves it read it, the outbox row is work enough.
        let opened_at_ms = if in_turn { inner.store.open_turn(session_id, now_ms()).await? } else { inner.store.start_turn(session_id, now_ms()).await? };
        texts.track(opened_at_ms, 0);
    }
    for update in settled {
        send_update(inner, session_id, update).await?;
    }
    Ok(())
}

async fn send_update<T: Transport>(inner: &Inner<T>, session_id: &str, update: SessionUpdate) -> Result<(), LinkError> {
    inner.updates.send(BackendInput { session_id: session_id.to_owned(), update }).await.map_err(|_| LinkError::EngineGone)
}
