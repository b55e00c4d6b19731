//! The chats of recent sessions, kept in memory on SQLite so that an agent's words
//! and the end of its turn do not each read `chat_bindings` again. A burst of 200
//! replies asked where their sessions are shown about 600 times, and even shared
//! ([`SessionChats`](super::chats::SessionChats)) that was a fifth of its statements,
//! each a hand-off to one of SQLite's threads and back (docs/performance.md, twelfth).
//!
//! Only on SQLite, where this process is the only one that writes the table: the file
//! is locked to one bridge ([`lock`](super::lock)), and the admin commands that run
//! beside it never bind a chat. Every binding goes through
//! [`Store::bind_chat`](super::Store::bind_chat), which tells the memo
//! ([`ChatsMemo::rebound`]): the sessions concerned are read again. On PostgreSQL
//! another replica may bind a chat at any time, so nothing is kept there.
//!
//! A read that was under way while a chat was bound may carry the chats from before;
//! it is not kept ([`ChatsMemo::keep`] takes the generation the read began in). The
//! memo holds at most [`MAX_SESSIONS`] sessions and starts afresh when full: the
//! sessions of a burst fit, and a forgotten one costs one read.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use super::chats::ChatKey;

/// At most this many sessions are kept: a few hundred bytes each, so well under a
/// mebibyte, and more than the sessions one burst of decisions touches.
pub(super) const MAX_SESSIONS: usize = 1024;

#[derive(Debug, Default)]
pub(super) struct ChatsMemo {
    inner: Mutex<Memo>,
}

#[derive(Debug, Default)]
struct Memo {
    /// Moves on with every binding, so a read from before it is not kept.
    generation: u64,
    by_session: HashMap<String, Vec<ChatKey>>,
}

impl ChatsMemo {
    /// Each change is one insert, removal or count, so a panic while the lock was held
    /// leaves nothing half made: a poisoned lock is used as is.
    fn memo(&self) -> MutexGuard<'_, Memo> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The session's chats, in the order they were bound, when kept.
    pub fn get(&self, session_id: &str) -> Option<Vec<ChatKey>> {
        self.memo().by_session.get(session_id).cloned()
    }

    /// Where the memo stands now: what a read about to begin passes to [`keep`](Self::keep).
    pub fn generation(&self) -> u64 {
        self.memo().generation
    }

    /// Keeps what a read that began at `generation` found, unless a chat was bound since.
    pub fn keep(&self, session_id: &str, chats: &[ChatKey], generation: u64) {
        let mut memo = self.memo();
        if memo.generation != generation {
            return;
        }
        if memo.by_session.len() >= MAX_SESSIONS && !memo.by_session.contains_key(session_id) {
            memo.by_session.clear();
        }
        memo.by_session.insert(session_id.to_owned(), chats.to_vec());
    }

    /// `chat` now talks to `session_id`, or may: called whether or not the write
    /// succeeded, since a failed write may have committed and a refused one changed
    /// nothing. Either way every session kept with the chat, and the one it was bound
    /// to, are read again: the table then says which one it is in, and where it falls
    /// in the bound order.
    pub fn rebound(&self, chat: &ChatKey, session_id: &str) {
        let mut memo = self.memo();
        memo.generation += 1;
        memo.by_session.remove(session_id);
        memo.by_session.retain(|_, chats| !chats.contains(chat));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(id: &str) -> ChatKey {
        ChatKey::new("telegram", id, None)
    }

    #[test]
    fn the_sessions_a_rebound_chat_was_kept_with_and_the_new_one_are_read_again() {
        let memo = ChatsMemo::default();
        let at = memo.generation();
        memo.keep("s1", &[chat("a"), chat("b")], at);
        memo.keep("s2", &[chat("c")], at);
        memo.keep("s3", &[chat("b")], at);
        memo.rebound(&chat("a"), "s2");
        assert_eq!(memo.get("s1"), None, "read again: the write may have failed and left the chat there");
        assert_eq!(memo.get("s2"), None, "read again: where the new chat falls in its order is the table's to say");
        assert_eq!(memo.get("s3"), Some(vec![chat("b")]), "a session without the chat is kept");
    }

    #[test]
    fn a_read_from_before_a_binding_is_not_kept() {
        let memo = ChatsMemo::default();
        let began = memo.generation();
        memo.rebound(&chat("a"), "s2");
        memo.keep("s1", &[chat("a")], began);
        assert_eq!(memo.get("s1"), None);
        memo.keep("s1", &[], memo.generation());
        assert_eq!(memo.get("s1"), Some(vec![]), "a session with no chat is kept too");
    }

    #[test]
    fn holds_at_most_max_sessions() {
        let memo = ChatsMemo::default();
        let at = memo.generation();
        for n in 0..MAX_SESSIONS {
            memo.keep(&format!("s{n}"), &[chat("a")], at);
        }
        memo.keep("s0", &[chat("b")], at);
        assert_eq!(memo.get("s1"), Some(vec![chat("a")]), "replacing a kept session makes no room");
        memo.keep("new", &[chat("c")], at);
        assert_eq!((memo.get("s1"), memo.get("new")), (None, Some(vec![chat("c")])));
        assert_eq!(memo.memo().by_session.len(), 1);
    }
}
