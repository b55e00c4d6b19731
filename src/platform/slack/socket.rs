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

use futures_util::{FutureExt, SinkExt, StreamExt};
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

/// The most envelopes stored in one transaction: what arrived while the previous
/// batch was being stored, as Telegram's `getUpdates` hands over up to 100 at once.
const BATCH: usize = 100;

/// What one WebSocket message means for the connection.
enum Step {
    /// An envelope to store and acknowledge: (envelope, its id, its text); boxed, as
    /// the other steps carry nothing.
    Envelope(Box<Envelope>, String, String),
    Hello,
    Disconnect,
    /// The socket closed or failed.
    Closed,
    /// Nothing to do (a ping, a message without an envelope id, one that does not read).
    Nothing,
}

fn step(message: Result<Message, tokio_tungstenite::tungstenite::Error>) -> Step {
    let text = match message {
        Ok(Message::Text(text)) => text,
        Ok(Message::Close(frame)) => {
            tracing::info!(?frame, "Slack closed the Socket Mode connection");
            return Step::Closed;
        }
        // Pings are answered by tungstenite itself.
        Ok(_) => return Step::Nothing,
        Err(e) => {
            tracing::warn!(error = %e, "the Socket Mode connection failed");
            return Step::Closed;
        }
    };
    let envelope: Envelope = match serde_json::from_str(&text) {
        Ok(envelope) => envelope,
        Err(e) => {
            tracing::warn!(error = %e, "a Socket Mode message that does not read; skipped");
            return Step::Nothing;
        }
    };
    match envelope.kind.as_str() {
        "hello" => Step::Hello,
        "disconnect" => {
            tracing::info!(reason = ?envelope.reason, "Slack asked for a new Socket Mode connection");
            Step::Disconnect
        }
        _ => match envelope.envelope_id.clone() {
            Some(envelope_id) => Step::Envelope(Box::new(envelope), envelope_id, text),
            None => {
                tracing::debug!(kind = %envelope.kind, "a Socket Mode message without an envelope id; nothing to acknowledge");
                Step::Nothing
            }
        },
    }
}

/// One connection, until Slack or the network ends it. Each envelope is acknowledged
/// once stored; whatever arrived while the last batch was being stored is stored
/// together (up to [`BATCH`]), so a burst of clicks is not stored one commit after
/// another while the rest wait unread.
async fn connection(handler: &Arc<Handler>, url: &str) -> Ended {
    // Nagle off: an acknowledgement written right after another frame must not wait
    // for Slack's delayed ACK (up to 40 ms).
    let (mut ws, _) = match tokio_tungstenite::connect_async_with_config(url, None, true).await {
        Ok(connected) => connected,
        Err(e) => {
            tracing::warn!(error = %e, "cannot connect the Socket Mode WebSocket");
            return Ended::Dropped { greeted: false };
        }
    };
    let mut greeted = false;
    while let Some(first) = ws.next().await {
        let mut batch = Vec::new();
        let mut ended = None;
        let mut next = Some(first);
        while let Some(message) = next.take() {
            match step(message) {
                Step::Envelope(envelope, envelope_id, text) => batch.push((*envelope, envelope_id, text)),
                Step::Hello => {
                    greeted = true;
                    tracing::info!("Socket Mode connected");
                }
                Step::Disconnect => ended = Some(Ended::Disconnect),
                Step::Closed => ended = Some(Ended::Dropped { greeted }),
                Step::Nothing => {}
            }
            if ended.is_none() && batch.len() < BATCH {
                // Only what has already arrived: never waits.
                next = ws.next().now_or_never().flatten();
            }
        }
        if !batch.is_empty() && !acknowledge(handler, &mut ws, batch).await {
            return Ended::Dropped { greeted };
        }
        match ended {
            Some(Ended::Disconnect) => {
                let _ = ws.close(None).await;
                return Ended::Disconnect;
            }
            Some(dropped) => return dropped,
            None => {}
        }
    }
    Ended::Dropped { greeted }
}

/// Stores `batch` in one transaction and acknowledges each envelope, in order (with
/// the answer Slack waits for, where it does); false when the socket failed. Nothing
/// is acknowledged when the batch cannot be stored: Slack sends it again.
async fn acknowledge<S>(handler: &Arc<Handler>, ws: &mut S, batch: Vec<(Envelope, String, String)>) -> bool
where
    S: futures_util::Sink<Message, Error = tokio_tungstenite::tungstenite::Error> + Unpin,
{
    let ids: Vec<String> = batch.iter().map(|(_, id, _)| id.clone()).collect();
    let received = match handler.receive_all(batch.into_iter().map(|(envelope, _, text)| (envelope, text)).collect()).await {
        Ok(received) => received,
        Err(e) => {
            tracing::warn!(envelopes = ids.len(), error = %e, "cannot store envelopes; not acknowledged, so Slack sends them again");
            return true;
        }
    };
    for (envelope_id, received) in ids.into_iter().zip(received) {
        let mut ack = json!({ "envelope_id": envelope_id });
        if let Some(payload) = received.answer().await {
            ack["payload"] = payload;
        }
        if let Err(e) = ws.send(Message::Text(ack.to_string())).await {
            tracing::warn!(error = %e, "cannot acknowledge an envelope; Slack sends it again");
            return false;
        }
    }
    true
}
