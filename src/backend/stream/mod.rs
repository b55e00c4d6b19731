//! The stream-protocol transport (PROTOCOL.md §1–§3): one WebSocket per agent session,
//! opened by the bridge, one JSON object per text frame in both directions.
//!
//! This file owns only the wire: the URL and bearer token, framing, skipping bad
//! frames, and liveness. A ping goes out right after every command and every
//! `backend.ping_secs`; its payload is the number of commands written so far, so its
//! pong proves the backend read that many (TCP keeps order), even when more were
//! written meanwhile. A connection
//! with no frame for `backend.read_timeout_secs` is half-open and is dropped.
//! Turning events into updates is the pure [`Assembler`]'s job; leases, reconnects,
//! the outbox and history live in [`super::session`].

pub mod descriptor;

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use secrecy::ExposeSecret;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

use super::SessionUpdate;
use super::assembler::Assembler;
use super::session::{Link, LinkError, Outgoing, Received, Sent, Transport};
use super::settings::BackendSettings;
use crate::interaction::TimeoutDefaults;
use crate::protocol::{BackendEvent, Command};

/// Frames larger than this are skipped (PROTOCOL.md §1).
pub const MAX_FRAME_BYTES: usize = 1024 * 1024;

/// Connects sessions to `backend.url`.
pub struct StreamTransport {
    settings: BackendSettings,
    defaults: TimeoutDefaults,
}

impl StreamTransport {
    pub fn new(settings: BackendSettings, defaults: TimeoutDefaults) -> Self {
        Self { settings, defaults }
    }
}

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// One open WebSocket.
pub struct StreamLink {
    ws: Ws,
    /// Commands written so far; the payload of every ping.
    written: u64,
    ping_every: Duration,
    read_timeout: Duration,
    next_ping: Instant,
    last_frame: Instant,
}

impl StreamLink {
    fn new(ws: Ws, settings: &BackendSettings) -> Self {
        let ping_every = Duration::from_secs(settings.ping_secs.max(1));
        let now = Instant::now();
        Self { ws, written: 0, ping_every, read_timeout: Duration::from_secs(settings.read_timeout_secs.max(1)), next_ping: now + ping_every, last_frame: now }
    }

    async fn ping(&mut self) -> Result<(), LinkError> {
        self.next_ping = Instant::now() + self.ping_every;
        let payload = self.written.to_be_bytes().to_vec();
        self.ws.send(Message::Ping(payload)).await.map_err(LinkError::transport)
    }

    /// How many writes a pong proves: the count its ping carried (never more than
    /// were written, whatever the backend echoes).
    fn proven_by(&self, payload: &[u8]) -> Option<u64> {
        let count = u64::from_be_bytes(payload.try_into().ok()?);
        Some(count.min(self.written))
    }
}

impl Transport for StreamTransport {
    type State = Assembler;
    type Link = StreamLink;

    fn name(&self) -> &'static str {
        "stream"
    }

    fn new_state(&self) -> Assembler {
        Assembler::new(self.defaults)
    }

    async fn connect(&self, session_id: &str) -> Result<StreamLink, LinkError> {
        let url = self.settings.url.replace("{session_id}", session_id);
        let mut request = url.as_str().into_client_request().map_err(LinkError::transport)?;
        if let Some(token) = &self.settings.token {
            let value = HeaderValue::from_str(&format!("Bearer {}", token.expose_secret()))
                .map_err(|_| LinkError::Transport("backend.token is not a valid header value".into()))?;
            request.headers_mut().insert("authorization", value);
        }
        // Nagle off: a command written right after another frame must not wait for
        // the backend's delayed ACK (up to 40 ms; docs/performance.md).
        let (ws, _response) = tokio_tungstenite::connect_async_with_config(request, None, true).await.map_err(LinkError::transport)?;
        Ok(StreamLink::new(ws, &self.settings))
    }
}

impl Link for StreamLink {
    type State = Assembler;

    /// The stream protocol has no record to check: a command that may have been
    /// received is written again. Replies carry `approval_key` and messages their
    /// `message_id` (the same on every write), by which the backend tells a repeat.
    async fn send(&mut self, outgoing: Outgoing<'_>) -> Result<Sent, LinkError> {
        let mut frame = serde_json::to_value(outgoing.command).map_err(LinkError::transport)?;
        if let (Command::Message { .. }, Some(fields)) = (outgoing.command, frame.as_object_mut()) {
            fields.insert("message_id".into(), outgoing.id.into());
        }
        let frame = frame.to_string();
        self.ws.send(Message::Text(frame)).await.map_err(LinkError::transport)?;
        self.written += 1;
        // Its pong is the proof that the backend read this command.
        self.ping().await?;
        Ok(Sent::Written)
    }

    async fn recv(&mut self, assembler: &mut Assembler) -> Option<Result<Received, LinkError>> {
        loop {
            // Cancel-safe: `next` loses nothing when dropped, and the ping schedule
            // lives in `self`, not in this future.
            tokio::select! {
                frame = self.ws.next() => {
                    self.last_frame = Instant::now();
                    match frame? {
                        Ok(Message::Text(text)) => return Some(Ok(Received::updates(decode(assembler, &text)))),
                        Ok(Message::Pong(payload)) => match self.proven_by(&payload) {
                            Some(written) => return Some(Ok(Received::proof(written))),
                            None => tracing::debug!(bytes = payload.len(), "ignoring a pong that answers no ping of ours"),
                        },
                        Ok(Message::Binary(bytes)) => tracing::warn!(bytes = bytes.len(), "skipping a binary frame"),
                        Ok(Message::Close(_)) => return None,
                        Ok(_) => {} // pings are answered by tungstenite
                        Err(e) => return Some(Err(LinkError::transport(e))),
                    }
                }
                _ = tokio::time::sleep_until(self.next_ping) => {
                    if self.last_frame.elapsed() >= self.read_timeout {
                        return Some(Err(LinkError::Transport(format!(
                            "no frame from the backend in {} s (not even a pong): the connection is half-open",
                            self.read_timeout.as_secs()
                        ))));
                    }
                    if let Err(e) = self.ping().await {
                        return Some(Err(e));
                    }
                }
            }
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
        Ok(event) => assembler.push(event, crate::clock::now_ms()),
        Err(e) => {
            let preview: String = text.chars().take(120).collect();
            tracing::warn!(error = %e, frame = %preview, "skipping a frame that is not a valid event");
            Vec::new()
        }
    }
}
