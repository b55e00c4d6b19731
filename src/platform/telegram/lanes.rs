//! One lane per chat: updates from the same chat are handled one after another, in
//! the order Telegram delivered them, while different chats run in parallel. Without
//! this, `/new` followed quickly by a message, or a typed answer followed by the next
//! message, could reach the engine in the wrong order.
//!
//! A lane is a task with a queue; it ends after a quiet spell so idle chats cost
//! nothing (the map holds only lanes with a live task).
//!
//! Each job carries a [`Done`] signal, fired once the update was handled (its effects
//! are in the store, its replies sent): only then is the update marked handled in the store's
//! inbox ([`super::inbox`]), so a crash before that point handles it again at the next
//! start.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use teloxide::types::{CallbackQuery, Message};
use tokio::sync::mpsc;

use super::{Telegram, chat, clicks};

/// Fired (by being dropped) when a job's handling has finished, however it ended.
pub use crate::platform::inbox::Done;

/// How long a lane waits for more work before it ends.
const IDLE: Duration = Duration::from_secs(300);

/// Work for a chat's lane.
pub enum Job {
    Message(Box<Message>, Done),
    Click(Box<CallbackQuery>, Done),
}

#[derive(Default)]
pub struct Lanes {
    lanes: Mutex<HashMap<i64, mpsc::UnboundedSender<Job>>>,
}

impl Lanes {
    fn lanes(&self) -> std::sync::MutexGuard<'_, HashMap<i64, mpsc::UnboundedSender<Job>>> {
        self.lanes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `job` on the lane of `chat_id`, starting the lane if needed.
    pub fn push(tg: &Arc<Telegram>, chat_id: i64, job: Job) {
        let mut lanes = tg.lanes.lanes();
        let job = match lanes.get(&chat_id) {
            Some(lane) => match lane.send(job) {
                Ok(()) => return,
                // The lane ended (it cannot, while listed; a panic could): start anew.
                Err(mpsc::error::SendError(job)) => job,
            },
            None => job,
        };
        let (tx, rx) = mpsc::unbounded_channel();
        // Cannot fail: the receiver is alive right here.
        let _ = tx.send(job);
        lanes.insert(chat_id, tx);
        tokio::spawn(run(tg.clone(), chat_id, rx));
    }
}

async fn run(tg: Arc<Telegram>, chat_id: i64, mut rx: mpsc::UnboundedReceiver<Job>) {
    loop {
        match tokio::time::timeout(IDLE, rx.recv()).await {
            Ok(Some(job)) => {
                // Each job in a task of its own, awaited: a handler that panics on one
                // update (a poison update) is logged and the lane goes on with the next,
                // instead of ending and dropping the jobs queued behind it. `done` is
                // dropped once the handler returned or panicked: that is the signal.
                let tg = tg.clone();
                let handled = tokio::spawn(async move {
                    match job {
                        Job::Message(message, _done) => chat::on_message(&tg, *message).await,
                        Job::Click(query, _done) => clicks::on_callback(&tg, *query).await,
                    }
                });
                if let Err(e) = handled.await {
                    tracing::error!(chat_id, error = %e, "handling an update failed; it is dropped and the chat goes on");
                }
            }
            Ok(None) => return,
            Err(_) => {
                // Remove the lane under the map lock, where senders also hold it: a job
                // queued meanwhile is seen here and handled before leaving.
                let mut lanes = tg.lanes.lanes();
                if rx.is_empty() {
                    lanes.remove(&chat_id);
                    return;
                }
            }
        }
    }
}
