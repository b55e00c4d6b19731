//! Shared state of one simulator: the sessions, the log of every command received, and
//! the down/closed flags, all behind one mutex. The simulator is low-traffic, so one lock
//! keeps ordering simple (an event is queued and a request registered atomically). Code
//! must never hold the lock across an `.await`; `with_session` makes that hard to do.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde_json::Value;

use super::SimOptions;
use super::session::{Live, Session};

pub(crate) struct Hub {
    pub(crate) opts: SimOptions,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    sessions: HashMap<String, Session>,
    commands: Vec<Value>,
    down: bool,
    /// Set by `forget_unsent`: a new connection gets only what is said from then on.
    forgets_unsent: bool,
    /// Set by `close`: nothing new starts after it.
    closed: bool,
    next_conn_id: u64,
}

impl Hub {
    pub(crate) fn new(opts: SimOptions) -> Self {
        Self { opts, state: Mutex::new(State::default()) }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves plain data behind; keep serving.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the session (created on first use) under the lock.
    pub(crate) fn with_session<R>(&self, session_id: &str, f: impl FnOnce(&mut Session) -> R) -> R {
        let mut state = self.lock();
        let session = state.sessions.entry(session_id.to_owned()).or_default();
        f(session)
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }

    pub(crate) fn record_command(&self, command: Value) {
        self.lock().commands.push(command);
    }

    pub(crate) fn commands(&self) -> Vec<Value> {
        self.lock().commands.clone()
    }

    /// The session's history; an unknown session has an empty one (and is not created).
    pub(crate) fn history(&self, session_id: &str) -> Vec<Value> {
        self.lock().sessions.get(session_id).map(|s| s.history.clone()).unwrap_or_default()
    }

    pub(crate) fn is_down(&self) -> bool {
        self.lock().down
    }

    pub(crate) fn set_down(&self, down: bool) {
        let mut state = self.lock();
        if state.closed {
            return;
        }
        state.down = down;
        if down {
            for (id, session) in &mut state.sessions {
                if session.detach_any() {
                    tracing::info!(session_id = %id, "backend down: closing connection");
                }
            }
        }
        tracing::info!(down, "agent sim availability changed");
    }

    pub(crate) fn set_forgets_unsent(&self, forgets: bool) {
        self.lock().forgets_unsent = forgets;
    }

    /// Makes a new connection the session's live one, replacing (and closing) any older
    /// one. `None` while down or closed: the upgrade raced with an outage.
    pub(crate) fn attach(&self, session_id: &str) -> Option<Live> {
        let mut state = self.lock();
        if state.down || state.closed {
            return None;
        }
        state.next_conn_id += 1;
        let id = state.next_conn_id;
        let forgets_unsent = state.forgets_unsent;
        let session = state.sessions.entry(session_id.to_owned()).or_default();
        if forgets_unsent {
            session.forget_unsent();
        }
        Some(session.attach(id))
    }

    /// Stops everything: closes connections, aborts running turns, refuses new work.
    pub(crate) fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        state.down = true;
        for session in state.sessions.values_mut() {
            session.detach_any();
            session.abort_runner();
        }
    }
}
