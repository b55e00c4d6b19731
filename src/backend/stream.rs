//! The stream-protocol transport (PROTOCOL.md §1–§3): one WebSocket per agent session,
//! opened by the bridge, one JSON object per text frame in both directions.
//!
//! This file owns only the wire: the URL and bearer token, framing, and skipping bad
//! frames. Turning events into updates is the pure [`Assembler`]'s job; leases,
//! reconnects, the outbox and history live in [`super::session`].

use futures_util::{SinkExt, StreamExt};
use secrecy::ExposeSecret;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

use super::SessionUpdate;
use super::assembler::Assembler;
use super::session::{Link, LinkError, Transport};
use crate::config::BackendSettings;
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
        let (ws, _response) = tokio_tungstenite::connect_async(request).await.map_err(LinkError::transport)?;
        Ok(StreamLink { ws })
    }
}

impl Link for StreamLink {
    type State = Assembler;

    async fn send(&mut self, command: &Command) -> Result<(), LinkError> {
        let frame = serde_json::to_string(command).map_err(LinkError::transport)?;
        self.ws.send(Message::Text(frame)).await.map_err(LinkError::transport)
    }

    async fn recv(&mut self, assembler: &mut Assembler) -> Option<Result<Vec<SessionUpdate>, LinkError>> {
        loop {
            match self.ws.next().await? {
                Ok(Message::Text(text)) => return Some(Ok(decode(assembler, &text))),
                Ok(Message::Binary(bytes)) => tracing::warn!(bytes = bytes.len(), "skipping a binary frame"),
                Ok(Message::Close(_)) => return None,
                Ok(_) => {} // ping/pong are answered by tungstenite
                Err(e) => return Some(Err(LinkError::transport(e))),
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
        Ok(event) => assembler.push(event),
        Err(e) => {
            let preview: String = text.chars().take(120).collect();
            tracing::warn!(error = %e, frame = %preview, "skipping a frame that is not a valid event");
            Vec::new()
        }
    }
}
