//! Taking turns by priority: when a platform's quota, not the bridge, is what holds
//! sends back (a crowd of strangers each owed a refusal), an approval card must not
//! wait behind the crowd. Sends wait in a [`Line`]: approval cards first, then the
//! agent's text, then refusals, and in arrival order within each. Whoever is first
//! holds its [`Turn`] while it waits for the quota (Telegram's 30 a second) or sends
//! (one message at a time in a Discord channel); the others sleep until it is theirs,
//! so a crowd waiting costs no wake-ups.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

/// Which new messages go first when a quota is short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    /// Approval cards and what belongs to them (their attachments, reminders).
    Card = 0,
    /// The agent's text, notices, command answers.
    Text = 1,
    /// Refusals to people who may not talk here.
    Refusal = 2,
}

/// Who holds the turn, and who waits: one queue per [`Priority`], each waiting send's
/// ticket and the bell that tells it the turn is free for it.
#[derive(Default)]
struct State {
    holding: Option<u64>,
    queues: [VecDeque<(u64, Arc<Notify>)>; 3],
}

impl State {
    fn first(&self) -> Option<&(u64, Arc<Notify>)> {
        self.queues.iter().find_map(VecDeque::front)
    }

    /// The turn is free: tell the first in line.
    fn pass_on(&mut self) {
        self.holding = None;
        if let Some((_, next)) = self.first() {
            next.notify_one();
        }
    }
}

/// Sends waiting for their turn.
#[derive(Default)]
pub struct Line {
    state: Mutex<State>,
    tickets: AtomicU64,
}

impl Line {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until the turn is free and this send is first in line; the turn lasts
    /// until the [`Turn`] is dropped. With nobody holding it, it is taken at once.
    pub async fn turn(&self, priority: Priority) -> Turn<'_> {
        let turn = Turn::join(self, priority);
        while !turn.take() {
            turn.bell.notified().await;
        }
        turn
    }

    /// Sends waiting or holding the turn.
    pub fn waiting(&self) -> usize {
        let state = self.state();
        state.queues.iter().map(VecDeque::len).sum::<usize>() + usize::from(state.holding.is_some())
    }
}

/// A send's place in a [`Line`], then its turn; dropping it (the send went, or was
/// given up) passes the turn on.
pub struct Turn<'a> {
    line: &'a Line,
    priority: Priority,
    ticket: u64,
    bell: Arc<Notify>,
}

impl<'a> Turn<'a> {
    fn join(line: &'a Line, priority: Priority) -> Self {
        let ticket = line.tickets.fetch_add(1, Ordering::Relaxed);
        let bell = Arc::new(Notify::new());
        line.state().queues[priority as usize].push_back((ticket, bell.clone()));
        Turn { line, priority, ticket, bell }
    }

    /// Takes the turn if it is free and this send is first in line.
    fn take(&self) -> bool {
        let mut state = self.line.state();
        if state.holding.is_some() || state.first().is_none_or(|(t, _)| *t != self.ticket) {
            return false;
        }
        state.queues[self.priority as usize].pop_front();
        state.holding = Some(self.ticket);
        true
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut state = self.line.state();
        if state.holding == Some(self.ticket) {
            // A bell rung for someone not yet listening keeps its permit.
            state.pass_on();
        } else {
            let was_first = state.first().is_some_and(|(t, _)| *t == self.ticket);
            state.queues[self.priority as usize].retain(|(t, _)| *t != self.ticket);
            if was_first && state.holding.is_none() {
                state.pass_on();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// While one send holds its turn, a card that arrives after two refusals goes
    /// before them; a send given up leaves the line to the next.
    #[tokio::test]
    async fn cards_go_first_then_text_then_refusals_each_in_order() {
        let line = Arc::new(Line::default());
        let first = line.turn(Priority::Text).await;
        let (went, mut order) = tokio::sync::mpsc::unbounded_channel();
        let mut sends = Vec::new();
        for (name, priority) in [("refusal 1", Priority::Refusal), ("refusal 2", Priority::Refusal), ("text", Priority::Text), ("card", Priority::Card)] {
            let (waiting_in, went) = (line.clone(), went.clone());
            sends.push(tokio::spawn(async move {
                let _turn = waiting_in.turn(priority).await;
                let _ = went.send(name);
            }));
            while line.waiting() < sends.len() + 1 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        let given_up = {
            let line = line.clone();
            tokio::spawn(async move { line.turn(Priority::Card).await.ticket })
        };
        while line.waiting() < 6 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        given_up.abort();
        let _ = given_up.await;
        assert_eq!(line.waiting(), 5, "the send given up left the line");
        drop(first);
        let mut seen = Vec::new();
        for _ in 0..4 {
            seen.push(tokio::time::timeout(Duration::from_secs(5), order.recv()).await.expect("every send gets its turn").expect("sent"));
        }
        assert_eq!(seen, ["card", "text", "refusal 1", "refusal 2"]);
        assert_eq!(line.waiting(), 0);
    }
}
