//! Which shard of the engine handles an input, and the channels that carry it there.
//!
//! A session belongs to one shard, chosen by a fixed hash of its id, so all of a
//! session's inputs (backend updates, clicks on its requests, its deadlines) are
//! handled by one task, in the order they arrived, while other sessions' inputs run
//! on other shards at the same time. Inputs that name a chat rather than a session
//! (a message, `/new`, `/cancel`) go to the chat's shard, so one chat's commands stay
//! in order too. A click names an interaction: [`Routes`] remembers the session of
//! every pending interaction this replica knows; anything else is looked up in the
//! store first.
//!
//! This module only routes: it never decides and never touches a platform.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{mpsc, oneshot};

use super::handle::{EngineError, EngineRequest};
use crate::interaction::Actor;
use crate::interaction::updates::BackendInput;
use crate::store::{ChatKey, PendingShow};

/// How many inputs may wait for one shard before whoever routes them waits too.
const QUEUE: usize = 1024;

/// One thing for a shard to do.
#[derive(Debug)]
pub(super) enum Input {
    Request(EngineRequest),
    Backend(BackendInput),
    /// `/cancel`, second half: settle the session's pending interactions (the chat's
    /// shard has queued the `cancel` command and sends the rest here).
    CancelSession {
        session_id: String,
        actor: Actor,
        done: oneshot::Sender<Result<(), EngineError>>,
    },
    /// Pending interactions found in the store (another replica's, or after a
    /// restart): watch their deadlines and escalation steps.
    Watch(Vec<Watched>),
    /// A request whose show is due again (a failed send, a restart).
    Reshow(PendingShow),
}

/// A pending interaction's timers, as its stored state gives them: so a restart, or
/// another replica's rescan, watches exactly what the store says is still to come.
pub(super) type Watched = crate::store::PendingTimers;

/// The senders to every shard. Cheap to clone.
#[derive(Clone)]
pub(super) struct Shards {
    senders: Arc<[mpsc::Sender<Input>]>,
}

impl Shards {
    /// `count` shards (at least one), with the receiver each shard task reads.
    pub fn new(count: usize) -> (Self, Vec<mpsc::Receiver<Input>>) {
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..count.max(1)).map(|_| mpsc::channel(QUEUE)).unzip();
        (Self { senders: senders.into() }, receivers)
    }

    pub fn count(&self) -> usize {
        self.senders.len()
    }

    /// The shard that owns `session_id`.
    pub fn of_session(&self, session_id: &str) -> usize {
        self.index(session_id)
    }

    /// The shard that handles what names `chat` (and not yet a session).
    pub fn of_chat(&self, chat: &ChatKey) -> usize {
        self.index(chat)
    }

    /// The same key always picks the same shard: `DefaultHasher::new` has fixed keys.
    fn index(&self, key: &(impl Hash + ?Sized)) -> usize {
        let mut hasher = DefaultHasher::new();
        key.hash(&mut hasher);
        (hasher.finish() % self.senders.len() as u64) as usize
    }

    /// Queues `input` on shard `index`, waiting while its queue is full. False once the
    /// shard has stopped (the input, and any reply it carries, is dropped).
    pub async fn send(&self, index: usize, input: Input) -> bool {
        self.senders[index].send(input).await.is_ok()
    }
}

/// Interaction id → session id, for the pending interactions this replica knows, so a
/// click reaches its session's shard without a store read. Filled when an interaction
/// is created or found in the store, emptied when it settles.
#[derive(Debug, Default)]
pub(super) struct Routes {
    sessions: Mutex<HashMap<String, String>>,
}

impl Routes {
    /// A panic while the lock was held cannot leave a half-made change (each is one
    /// insert or remove), so a poisoned lock is used as is.
    fn map(&self) -> MutexGuard<'_, HashMap<String, String>> {
        self.sessions.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn insert(&self, interaction_id: &str, session_id: &str) {
        self.map().insert(interaction_id.to_owned(), session_id.to_owned());
    }

    /// Routes `interaction_id` unless it is routed already; true when it was new.
    pub fn insert_new(&self, interaction_id: &str, session_id: &str) -> bool {
        let mut map = self.map();
        if map.contains_key(interaction_id) {
            return false;
        }
        map.insert(interaction_id.to_owned(), session_id.to_owned());
        true
    }

    pub fn remove(&self, interaction_id: &str) {
        self.map().remove(interaction_id);
    }

    pub fn session_of(&self, interaction_id: &str) -> Option<String> {
        self.map().get(interaction_id).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_always_goes_to_the_same_shard_and_keys_spread() {
        let (shards, _receivers) = Shards::new(8);
        let first: Vec<usize> = (0..200).map(|s| shards.of_session(&format!("s{s}"))).collect();
        let again: Vec<usize> = (0..200).map(|s| shards.of_session(&format!("s{s}"))).collect();
        assert_eq!(first, again);
        let used: std::collections::HashSet<usize> = first.iter().copied().collect();
        assert_eq!(used.len(), 8, "200 sessions use every shard");
        assert!(first.iter().all(|&i| i < 8));
        let chat = ChatKey::new("telegram", "-100", Some("7"));
        assert_eq!(shards.of_chat(&chat), shards.of_chat(&chat.clone()));
    }

    #[test]
    fn zero_shards_means_one() {
        let (shards, receivers) = Shards::new(0);
        assert_eq!((shards.count(), receivers.len()), (1, 1));
        assert_eq!(shards.of_session("anything"), 0);
    }

    #[test]
    fn routes_forget_a_settled_interaction() {
        let routes = Routes::default();
        routes.insert("i1", "s1");
        assert_eq!(routes.session_of("i1").as_deref(), Some("s1"));
        routes.remove("i1");
        assert_eq!(routes.session_of("i1"), None);
    }
}
