//! One lane per chat: work from the same chat is handled one piece after another, in
//! the order the platform delivered it, while different chats run in parallel.
//! Without this, `/new` followed quickly by a message, or a typed answer followed by
//! the next message, could reach the engine in the wrong order.
//!
//! A lane is a task with a queue; it ends after a quiet spell ([`IDLE`]) so idle chats
//! cost nothing (the map holds only lanes with a live task). Each piece of work runs
//! in a task of its own, awaited: work that panics (a poison update) is logged and the
//! lane goes on with the next, instead of ending and dropping what is queued behind
//! it. A piece of work that holds its inbox row's [`Done`](super::inbox::Done) signal
//! drops it when it returns or panics, so the row is marked handled only then.

use std::collections::HashMap;
use std::fmt::Display;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::mpsc;

/// How long a lane waits for more work before it ends.
pub const IDLE: Duration = Duration::from_secs(300);

type Work = BoxFuture<'static, ()>;

/// Every chat's lane, by the platform's key for a chat.
pub struct Lanes<K> {
    lanes: Mutex<HashMap<K, mpsc::UnboundedSender<Work>>>,
    /// What the logs call a lane's work when it fails (`a Slack envelope`).
    what: &'static str,
    idle: Duration,
}

impl<K: Eq + Hash + Clone + Display + Send + Sync + 'static> Lanes<K> {
    /// Lanes whose failed work the logs name `what` (`a Telegram update`).
    pub fn new(what: &'static str) -> Arc<Self> {
        Self::with_idle(what, IDLE)
    }

    fn with_idle(what: &'static str, idle: Duration) -> Arc<Self> {
        Arc::new(Self { lanes: Mutex::new(HashMap::new()), what, idle })
    }

    fn lanes(&self) -> MutexGuard<'_, HashMap<K, mpsc::UnboundedSender<Work>>> {
        self.lanes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `work` on the lane of `chat`, starting the lane if needed.
    pub fn push(self: &Arc<Self>, chat: K, work: impl Future<Output = ()> + Send + 'static) {
        let mut lanes = self.lanes();
        let work: Work = Box::pin(work);
        let work = match lanes.get(&chat) {
            Some(lane) => match lane.send(work) {
                Ok(()) => return,
                // The lane ended (it cannot, while listed; a panic could): start anew.
                Err(mpsc::error::SendError(work)) => work,
            },
            None => work,
        };
        let (tx, rx) = mpsc::unbounded_channel();
        // Cannot fail: the receiver is alive right here.
        let _ = tx.send(work);
        lanes.insert(chat.clone(), tx);
        tokio::spawn(self.clone().run(chat, rx));
    }

    /// Chats with a live lane.
    pub fn live(&self) -> usize {
        self.lanes().len()
    }

    async fn run(self: Arc<Self>, chat: K, mut rx: mpsc::UnboundedReceiver<Work>) {
        loop {
            match tokio::time::timeout(self.idle, rx.recv()).await {
                Ok(Some(work)) => {
                    if let Err(e) = tokio::spawn(work).await {
                        tracing::error!(lane = %chat, error = %e, "handling {} failed; it is dropped and the chat goes on", self.what);
                    }
                }
                Ok(None) => return,
                Err(_) => {
                    // Removed under the map lock, which senders hold too: work queued
                    // meanwhile is seen here and handled before leaving.
                    let mut lanes = self.lanes();
                    if rx.is_empty() {
                        lanes.remove(&chat);
                        return;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn one_chat_runs_in_order_and_goes_on_after_a_panic() {
        let lanes = Lanes::<i64>::new("a test update");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (done, finished) = tokio::sync::oneshot::channel();
        for n in 0..5 {
            let seen = seen.clone();
            lanes.push(1, async move {
                // Later work must not overtake earlier, slower work.
                tokio::time::sleep(Duration::from_millis(5 * (5 - n))).await;
                assert_ne!(n, 2, "a poison update");
                seen.lock().unwrap().push(n);
            });
        }
        lanes.push(1, async move {
            let _ = done.send(());
        });
        finished.await.unwrap();
        assert_eq!(*seen.lock().unwrap(), [0, 1, 3, 4]);
    }

    #[tokio::test]
    async fn chats_run_in_parallel() {
        let lanes = Lanes::<&'static str>::new("a test update");
        let (release, held) = tokio::sync::oneshot::channel::<()>();
        lanes.push("slow", async move {
            let _ = held.await;
        });
        let (done, finished) = tokio::sync::oneshot::channel();
        lanes.push("quick", async move {
            let _ = done.send(());
        });
        tokio::time::timeout(Duration::from_secs(5), finished).await.expect("not held up by another chat").unwrap();
        let _ = release.send(());
    }

    #[tokio::test]
    async fn an_idle_lane_ends_and_a_new_one_starts_on_the_next_work() {
        let lanes = Lanes::<i64>::with_idle("a test update", Duration::from_millis(20));
        let runs = Arc::new(AtomicUsize::new(0));
        for _ in 0..2 {
            let counted = runs.clone();
            lanes.push(7, async move {
                counted.fetch_add(1, Ordering::SeqCst);
            });
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert_eq!(lanes.live(), 0, "an idle lane costs nothing");
        }
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    }
}
