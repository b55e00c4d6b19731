//! Runs a session's turns one at a time: a `message` starts a turn, or queues behind the
//! running one; `cancel` ends the running turn with "Đã hủy.". One runner task per
//! session exists while there is work, and it ends when the queue is empty. Every turn
//! ends with `message_stop`, sent here rather than by the scripts.

use std::sync::Arc;

use tokio::sync::oneshot;

use super::history;
use super::hub::Hub;
use super::scenarios;
use super::session::UserMessage;
use super::turn::Turn;

/// Queues a user message and starts the session's runner if none is running.
pub(crate) fn enqueue(hub: &Arc<Hub>, session_id: &str, message: UserMessage) {
    if hub.is_closed() {
        return;
    }
    hub.with_session(session_id, |s| {
        s.queue.push_back(message);
        if s.runner.is_none() {
            // Spawned under the lock: the runner's first look at the queue waits for us,
            // so it always sees the `runner` slot filled.
            let task = tokio::spawn(run(hub.clone(), session_id.to_owned()));
            s.runner = Some(task.abort_handle());
        } else {
            tracing::info!(%session_id, queued = s.queue.len(), "turn running; message queued");
        }
    });
}

/// Ends the running turn, if any.
pub(crate) fn cancel(hub: &Hub, session_id: &str) {
    match hub.with_session(session_id, |s| s.cancel.take()) {
        // The runner may have just finished the turn; then there is nothing to cancel.
        Some(cancel) => drop(cancel.send(())),
        None => tracing::info!(%session_id, "cancel without a running turn; ignored"),
    }
}

async fn run(hub: Arc<Hub>, session_id: String) {
    loop {
        let next = hub.with_session(&session_id, |s| match s.queue.pop_front() {
            Some(message) => {
                let (cancel_tx, cancel_rx) = oneshot::channel::<()>();
                s.cancel = Some(cancel_tx);
                s.history.push(history::user_text(&message.text));
                Some((message, cancel_rx))
            }
            None => {
                // Cleared under the same lock as the empty check, so `enqueue` either
                // sees this runner still registered (and it will pop) or starts a new one.
                s.runner = None;
                None
            }
        });
        let Some((message, cancel_rx)) = next else {
            return;
        };
        tracing::info!(%session_id, text = %message.text, "turn started");
        let turn = Turn::new(hub.clone(), &session_id);
        tokio::select! {
            () = scenarios::run(turn.clone(), message.text) => {}
            Ok(()) = cancel_rx => {
                // The script future is dropped at an await point; all its state changes
                // happen under the lock, so nothing is left half-done except its requests.
                turn.abandon_pending();
                turn.text("Đã hủy.", false);
                tracing::info!(%session_id, "turn cancelled");
            }
        }
        turn.message_stop();
        hub.with_session(&session_id, |s| s.cancel = None);
    }
}
