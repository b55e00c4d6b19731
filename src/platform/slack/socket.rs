//! Socket Mode: `apps.connections.open` with the app-level token gives a WebSocket
//! URL; Slack says `hello`, then sends envelopes, each acknowledged with
//! `{"envelope_id": …}` (and a `payload` where Slack waits for one) once the inbox
//! has stored it ([`Handler::receive`]). An envelope that cannot be stored is not
//! acknowledged, so Slack sends it again.
//!
//! Slack closes connections now and then: a `disconnect` message (`refresh_requested`,
//! `warning`) is answered by opening a new connection at once; a dropped socket or a
//! refused `apps.connections.open` by trying again after a growing pause (0.5 s up to
//! 30 s), back to the shortest once Slack says `hello` again.

use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

use super::inbox::Handler;
use super::payload::Envelope;

const FIRST_PAUSE: Duration = Duration::from_millis(500);
const LONGEST_PAUSE: Duration = Duration::from_secs(30);

/// How one connection ended.
#[derive(Debug, PartialEq, Eq)]
enum Ended {
    /// Slack asked for a new connection.
    Disconnect,
    /// The socket dropped or could not be opened, after `hello` or before it.
    Dropped { greeted: bool },
}

/// Keeps a Socket Mode connection up until the task is aborted. `url` is the first
/// connection's, already opened by the start-up check.
pub async fn run(handler: Arc<Handler>, mut url: Option<String>) {
    let mut pause = FIRST_PAUSE;
    loop {
        let next = match url.take() {
            Some(url) => Ok(url),
            None => handler.shared.api.connections_open().await,
        };
        let ended = match next {
            Ok(url) => connection(&handler, &url).await,
            Err(e) => {
                tracing::warn!(error = %e, "cannot open a Socket Mode connection");
                Ended::Dropped { greeted: false }
            }
        };
        match ended {
            Ended::Disconnect => pause = FIRST_PAUSE,
            Ended::Dropped { greeted } => {
                if greeted {
                    pause = FIRST_PAUSE;
                }
                tracing::info!(pause_ms = pause.as_millis() as u64, "Socket Mode connection lost; reconnecting");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(LONGEST_PAUSE);
            }
        }
    }
}

/// One connection, until Slack or the network ends it.
async fn connection(handler: &Arc<Handler>, url: &str) -> Ended {
    let (mut ws, _) = match tokio_tungstenite::connect_async(url).await {
        Ok(connected) => connected,
        Err(e) => {
            tracing::warn!(error = %e, "cannot connect the Socket Mode WebSocket");
            return Ended::Dropped { greeted: false };
        }
    };
    let mut greeted = false;
    while let Some(message) = ws.next().await {
        let text = match message {
            Ok(Message::Text(text)) => text,
            Ok(Message::Close(frame)) => {
                tracing::info!(?frame, "Slack closed the Socket Mode connection");
                break;
            }
            // Pings are answered by tungstenite itself.
            Ok(_) => continue,
            Err(e) => {
                tracing::warn!(error = %e, "the Socket Mode connection failed");
                break;
            }
        };
        let envelope: Envelope = match serde_json::from_str(&text) {
            Ok(envelope) => envelope,
            Err(e) => {
                tracing::warn!(error = %e, "a Socket Mode message that does not read; skipped");
                continue;
            }
        };
        match envelope.kind.as_str() {
            "hello" => {
                greeted = true;
                tracing::info!("Socket Mode connected");
            }
            "disconnect" => {
                tracing::info!(reason = ?envelope.reason, "Slack asked for a new Socket Mode connection");
                let _ = ws.close(None).await;
                return Ended::Disconnect;
            }
            _ => {
                let Some(envelope_id) = envelope.envelope_id.clone() else {
                    tracing::debug!(kind = %envelope.kind, "a Socket Mode message without an envelope id; nothing to acknowledge");
                    continue;
                };
                match handler.receive(envelope, &text).await {
                    Ok(received) => {
                        let mut ack = json!({ "envelope_id": envelope_id });
                        if let Some(payload) = received.answer().await {
                            ack["payload"] = payload;
                        }
                        if let Err(e) = ws.send(Message::Text(ack.to_string())).await {
                            tracing::warn!(error = %e, "cannot acknowledge an envelope; Slack sends it again");
                            break;
                        }
                    }
                    Err(e) => tracing::warn!(%envelope_id, error = %e, "cannot store an envelope; not acknowledged, so Slack sends it again"),
                }
            }
        }
    }
    Ended::Dropped { greeted }
}
