//! The stream-protocol connector (PROTOCOL.md §1–§3, §6): one WebSocket per agent
//! session, opened by the bridge.
//!
//! Each session gets one task that connects while the session has work (an open turn,
//! pending interactions, or commands in the outbox), reconnects with capped
//! exponential backoff, reconciles from history on every connect, and delivers the
//! durable outbox in order, deleting a command only once it was written to the
//! socket. It never decides anything: updates go to the engine.
//!
//! With several replicas on one database, a session is connected only by the replica
//! holding its lease (see the store's `session_leases`); that replica also picks up
//! commands other replicas put in the outbox, by polling it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use secrecy::ExposeSecret;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tracing::Instrument;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

use super::assembler::Assembler;
use super::history::{self, HistoryResolution};
use super::SessionUpdate;
use crate::clock::now_ms;
use crate::config::BackendSettings;
use crate::interaction::TimeoutDefaults;
use crate::protocol::{BackendEvent, Command, HistoryMessage};
use crate::store::Store;

/// Frames larger than this are skipped (PROTOCOL.md §1).
pub const MAX_FRAME_BYTES: usize = 1024 * 1024;

/// How often a connected session looks for commands other replicas queued.
const OUTBOX_POLL: Duration = Duration::from_secs(1);

/// An update for the engine, tagged with its session.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendInput {
    pub session_id: String,
    pub update: SessionUpdate,
}

#[derive(Debug, thiserror::Error)]
enum LinkError {
    #[error("websocket: {0}")]
    Ws(#[from] tokio_tungstenite::tungstenite::Error),
    #[error("store: {0}")]
    Store(#[from] crate::store::StoreError),
    #[error("bad backend url: {0}")]
    Url(String),
    #[error("the engine stopped")]
    EngineGone,
    #[error("another replica took the session's lease")]
    LeaseLost,
}

/// Handle to all session connections. Cheap to clone.
#[derive(Clone)]
pub struct StreamConnector {
    inner: Arc<Inner>,
}

struct Inner {
    /// This replica's name in session leases.
    owner: String,
    settings: BackendSettings,
    defaults: TimeoutDefaults,
    store: Store,
    http: reqwest::Client,
    updates: mpsc::Sender<BackendInput>,
    sessions: Mutex<HashMap<String, SessionLink>>,
}

struct SessionLink {
    signals: Arc<Signals>,
    task: JoinHandle<()>,
}

/// What the engine tells a session task.
#[derive(Default)]
struct Signals {
    /// New commands are in the outbox.
    wake: Notify,
    /// A `message` was sent and no `message_stop` or `error` has come back yet.
    turn_open: AtomicBool,
}

impl StreamConnector {
    pub fn new(settings: BackendSettings, defaults: TimeoutDefaults, store: Store, updates: mpsc::Sender<BackendInput>) -> Self {
        let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap_or_default();
        let owner = uuid::Uuid::new_v4().simple().to_string();
        Self { inner: Arc::new(Inner { owner, settings, defaults, store, http, updates, sessions: Mutex::new(HashMap::new()) }) }
    }

    /// Makes sure `session_id` has a connection task and tells it to deliver its outbox.
    pub fn deliver(&self, session_id: &str) {
        let mut sessions = self.inner.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let link = sessions.entry(session_id.to_owned()).or_insert_with(|| {
            let signals = Arc::new(Signals::default());
            let span = tracing::info_span!("session", session_id = %session_id);
            let task = tokio::spawn(run_session(self.inner.clone(), session_id.to_owned(), signals.clone()).instrument(span));
            SessionLink { signals, task }
        });
        link.signals.wake.notify_one();
    }

    /// Stops every session task and gives up their leases (graceful shutdown; the
    /// outbox keeps what was not sent).
    pub async fn shutdown(&self) {
        let stopped: Vec<String> = {
            let mut sessions = self.inner.sessions.lock().unwrap_or_else(|p| p.into_inner());
            sessions.drain().map(|(session, link)| {
                link.task.abort();
                session
            }).collect()
        };
        for session in stopped {
            if let Err(e) = self.inner.store.release_lease(&session, &self.inner.owner).await {
                tracing::warn!(session_id = %session, error = %e, "cannot release a session lease; it will lapse");
            }
        }
    }
}

impl Inner {
    fn lease_period(&self) -> Duration {
        Duration::from_secs(self.settings.lease_secs.max(3))
    }

    fn lease_ms(&self) -> i64 {
        self.lease_period().as_millis() as i64
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let sessions = self.sessions.get_mut().unwrap_or_else(|p| p.into_inner());
        for (_, link) in sessions.drain() {
            link.task.abort();
        }
    }
}

async fn run_session(inner: Arc<Inner>, session_id: String, signals: Arc<Signals>) {
    let max_backoff = Duration::from_secs(inner.settings.reconnect_max_secs.max(1));
    let mut backoff = Duration::from_secs(1);
    let mut assembler = Assembler::new(inner.defaults);
    loop {
        match has_work(&inner, &session_id, &signals).await {
            Ok(true) => {}
            Ok(false) => {
                signals.wake.notified().await;
                continue;
            }
            Err(e) => tracing::warn!(%session_id, error = %e, "cannot read the outbox; retrying"),
        }
        match inner.store.try_lease(&session_id, &inner.owner, now_ms(), inner.lease_ms()).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::debug!(%session_id, "another replica holds this session");
                tokio::time::sleep(inner.lease_period() / 2).await;
                continue;
            }
            Err(e) => {
                tracing::warn!(%session_id, error = %e, "cannot take the session lease; retrying");
                tokio::time::sleep(backoff).await;
                continue;
            }
        }
        match connect(&inner, &session_id).await {
            Ok(ws) => {
                backoff = Duration::from_secs(1);
                tracing::info!(%session_id, "connected to backend");
                match pump(&inner, &session_id, &signals, &mut assembler, ws).await {
                    Ok(()) => tracing::info!(%session_id, "backend closed the connection"),
                    Err(LinkError::EngineGone) => return,
                    Err(e) => tracing::warn!(%session_id, error = %e, "backend connection lost"),
                }
                if let Ok(false) = has_work(&inner, &session_id, &signals).await {
                    // Idle: let any replica take the session when work comes.
                    let _ = inner.store.release_lease(&session_id, &inner.owner).await;
                }
            }
            Err(e) => {
                tracing::warn!(%session_id, error = %e, retry_in = ?backoff, "cannot connect to backend");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(max_backoff);
            }
        }
    }
}

/// Whether the session should be connected: an open turn, pending interactions, or
/// commands waiting.
async fn has_work(inner: &Inner, session_id: &str, signals: &Signals) -> Result<bool, LinkError> {
    Ok(signals.turn_open.load(Ordering::Acquire)
        || !inner.store.outbox_for_session(session_id).await?.is_empty()
        || !inner.store.pending_in_session(session_id).await?.is_empty())
}

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(inner: &Inner, session_id: &str) -> Result<Ws, LinkError> {
    let url = inner.settings.url.replace("{session_id}", session_id);
    let mut request = url.as_str().into_client_request()?;
    if let Some(token) = &inner.settings.token {
        let value = HeaderValue::from_str(&format!("Bearer {}", token.expose_secret()))
            .map_err(|_| LinkError::Url("backend.token is not a valid header value".into()))?;
        request.headers_mut().insert("authorization", value);
    }
    let (ws, _response) = tokio_tungstenite::connect_async(request).await?;
    Ok(ws)
}

/// Runs one connection: reconcile, deliver the outbox, then relay frames until the
/// socket closes. Outbox deliveries are triggered by `wake`.
async fn pump(inner: &Inner, session_id: &str, signals: &Signals, assembler: &mut Assembler, ws: Ws) -> Result<(), LinkError> {
    let (mut sink, mut stream) = ws.split();
    reconcile(inner, session_id).await?;
    flush_outbox(inner, session_id, signals, &mut sink).await?;
    let mut renew = tokio::time::interval(inner.lease_period() / 3);
    renew.tick().await; // the first tick is immediate; the lease was just taken
    let mut poll = tokio::time::interval(OUTBOX_POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = renew.tick() => {
                if !inner.store.try_lease(session_id, &inner.owner, now_ms(), inner.lease_ms()).await? {
                    return Err(LinkError::LeaseLost);
                }
            }
            // Commands queued by another replica (clicks that reached it) wake no one here.
            _ = poll.tick() => flush_outbox(inner, session_id, signals, &mut sink).await?,
            frame = stream.next() => match frame {
                Some(Ok(Message::Text(text))) => {
                    for update in decode(assembler, &text) {
                        if matches!(update, SessionUpdate::TurnEnded | SessionUpdate::TurnFailed { .. }) {
                            signals.turn_open.store(false, Ordering::Release);
                        }
                        send_update(inner, session_id, update).await?;
                    }
                }
                Some(Ok(Message::Binary(bytes))) => {
                    tracing::warn!(%session_id, bytes = bytes.len(), "skipping a binary frame");
                }
                Some(Ok(Message::Close(_))) | None => return Ok(()),
                Some(Ok(_)) => {} // ping/pong are answered by tungstenite
                Some(Err(e)) => return Err(e.into()),
            },
            _ = signals.wake.notified() => flush_outbox(inner, session_id, signals, &mut sink).await?,
        }
    }
}

/// One text frame to updates; bad frames are logged and skipped, never fatal.
fn decode(assembler: &mut Assembler, text: &str) -> Vec<SessionUpdate> {
    if text.len() > MAX_FRAME_BYTES {
        tracing::warn!(bytes = text.len(), limit = MAX_FRAME_BYTES, "skipping an oversized frame");
        return Vec::new();
    }
    match BackendEvent::parse(text) {
        Ok(event) => assembler.push(event),
        Err(e) => {
            let preview: String = text.chars().take(120).collect();
            tracing::warn!(error = %e, frame = %preview, "skipping a frame that is not a valid event");
            Vec::new()
        }
    }
}

async fn send_update(inner: &Inner, session_id: &str, update: SessionUpdate) -> Result<(), LinkError> {
    inner
        .updates
        .send(BackendInput { session_id: session_id.to_owned(), update })
        .await
        .map_err(|_| LinkError::EngineGone)
}

async fn flush_outbox<S>(inner: &Inner, session_id: &str, signals: &Signals, sink: &mut S) -> Result<(), LinkError>
where
    S: futures_util::Sink<Message, Error = tokio_tungstenite::tungstenite::Error> + Unpin,
{
    for (id, command) in inner.store.outbox_for_session(session_id).await? {
        let frame = match serde_json::to_string(&command) {
            Ok(frame) => frame,
            Err(e) => {
                tracing::error!(%session_id, outbox_id = id, error = %e, "cannot encode a command; leaving it in the outbox");
                continue;
            }
        };
        if matches!(command, Command::Message { .. }) {
            signals.turn_open.store(true, Ordering::Release);
        }
        sink.send(Message::Text(frame)).await?;
        // Removed only once written: a crash before this line re-sends it on restart.
        inner.store.remove_outbox(id).await?;
        tracing::debug!(%session_id, outbox_id = id, "command delivered");
    }
    Ok(())
}

/// Reads history (when configured) and tells the engine what was resolved while the
/// bridge was away. Approval commands the backend already has are dropped from the
/// outbox so they are not sent twice.
async fn reconcile(inner: &Inner, session_id: &str) -> Result<(), LinkError> {
    let Some(template) = &inner.settings.history_url else { return Ok(()) };
    let url = template.replace("{session_id}", session_id);
    let messages: Vec<HistoryMessage> = match fetch_history(&inner.http, &url).await {
        Ok(messages) => messages,
        Err(e) => {
            tracing::warn!(%session_id, %url, error = %e, "cannot read history; continuing without it");
            return Ok(());
        }
    };
    let resolved = history::resolved_requests(messages);
    if resolved.is_empty() {
        return Ok(());
    }
    drop_answered_commands(inner, session_id, &resolved).await?;
    send_update(inner, session_id, SessionUpdate::ResolvedInHistory(resolved)).await
}

async fn fetch_history(http: &reqwest::Client, url: &str) -> Result<Vec<HistoryMessage>, reqwest::Error> {
    http.get(url).send().await?.error_for_status()?.json().await
}

async fn drop_answered_commands(inner: &Inner, session_id: &str, resolved: &[HistoryResolution]) -> Result<(), LinkError> {
    for (_, command) in inner.store.outbox_for_session(session_id).await? {
        let Command::Approval { approval_key, .. } = &command else { continue };
        let Some(interaction) = inner.store.interaction_by_key(session_id, approval_key).await? else { continue };
        if resolved.iter().any(|r| r.matches(&interaction)) {
            let dropped = inner.store.drop_outbox_for_key(session_id, approval_key).await?;
            tracing::info!(%session_id, %approval_key, dropped, "history shows the backend has this decision; not re-sending");
        }
    }
    Ok(())
}
