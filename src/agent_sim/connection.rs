//! One WebSocket connection of a session: attaches it as the session's live connection,
//! then runs a writer (outbox → socket) and a reader (socket → commands) until either
//! ends. The writer stops, sending a Close frame, when this connection is no longer the
//! live one (replaced by a newer connection, backend down, shutdown).

use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket};
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};

use super::commands;
use super::hub::Hub;
use super::session::{Frame, Live, Next};

pub(crate) async fn run(hub: Arc<Hub>, session_id: String, mut socket: WebSocket) {
    let Some(live) = hub.attach(&session_id) else {
        // Went down between the upgrade check and now; best effort, the peer may be gone.
        let _ = socket.send(Message::Close(None)).await;
        return;
    };
    tracing::info!(%session_id, conn = live.id, "connection attached");
    let (mut sink, mut stream) = socket.split();
    tokio::select! {
        () = write_loop(&hub, &session_id, &live, &mut sink) => {}
        () = read_loop(&hub, &session_id, &mut stream) => {}
    }
    hub.with_session(&session_id, |s| s.detach(live.id));
    tracing::info!(%session_id, conn = live.id, "connection ended");
}

async fn write_loop(hub: &Hub, session_id: &str, live: &Live, sink: &mut SplitSink<WebSocket, Message>) {
    loop {
        match hub.with_session(session_id, |s| s.next_frame(live.id)) {
            Next::Send(seq, frame) => {
                if let Err(e) = sink.send(to_message(frame)).await {
                    // The frame is still in the outbox: the next connection gets it.
                    tracing::debug!(%session_id, error = %e, "write failed");
                    return;
                }
                hub.with_session(session_id, |s| s.delivered(seq));
            }
            // notify_one stores a permit, so an emit between the check and here still wakes us.
            Next::Idle => live.wake.notified().await,
            Next::Stop => {
                // Best effort: the peer may already be gone.
                let _ = sink.send(Message::Close(None)).await;
                return;
            }
        }
    }
}

async fn read_loop(hub: &Arc<Hub>, session_id: &str, stream: &mut SplitStream<WebSocket>) {
    while let Some(message) = stream.next().await {
        match message {
            Ok(Message::Text(text)) => commands::handle_frame(hub, session_id, text.as_str()),
            Ok(Message::Binary(data)) => {
                tracing::warn!(%session_id, len = data.len(), "skipping binary frame");
            }
            Ok(Message::Close(_)) => return,
            // Pings are answered by the WebSocket layer itself.
            Ok(Message::Ping(_) | Message::Pong(_)) => {}
            Err(e) => {
                tracing::debug!(%session_id, error = %e, "read failed");
                return;
            }
        }
    }
}

fn to_message(frame: Frame) -> Message {
    match frame {
        Frame::Text(text) => Message::text(text),
        Frame::Binary(data) => Message::binary(data),
    }
}
