//! Teams' per-conversation limits, kept before Teams has to refuse: a bot may make 7
//! operations a second, 8 in 2 seconds, 60 in 30 seconds and 1,800 an hour in one
//! conversation (learn.microsoft.com, "Optimize your bot with rate limiting and best
//! practices in Teams", "Per bot per thread limit"). These are sliding windows, which
//! a token bucket only approximates (a full bucket then its refill would put 14 sends
//! in one second), so each conversation keeps the times of its recent operations and
//! an operation waits until it fits every window. A 429 that comes anyway is the
//! kit's pause ([`Pauses`](crate::platform::kit::pacing::Pauses)), in [`super::api`].

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::platform::kit::bounded::BoundedMap;

/// Teams' windows: (operations, length).
pub const WINDOWS: [(usize, Duration); 4] =
    [(7, Duration::from_secs(1)), (8, Duration::from_secs(2)), (60, Duration::from_secs(30)), (1800, Duration::from_secs(3600))];
/// Added to every window: Teams counts operations as they arrive, and one sent a
/// little late must not land in the same window as one sent on time after it.
pub const MARGIN: Duration = Duration::from_millis(100);
/// Conversations whose recent operations are kept at most.
const CONVERSATIONS: usize = 2_000;

/// How long an operation at `now` must wait to fit every window, given the times of
/// the operations before it (oldest first); `None` when it may go now.
pub fn wait_needed(log: &VecDeque<Instant>, now: Instant) -> Option<Duration> {
    WINDOWS
        .iter()
        .filter_map(|&(most, length)| {
            // The operation `most` places back must have left the window.
            let oldest_counted = log.len().checked_sub(most).map(|at| log[at])?;
            let frees_at = oldest_counted + length + MARGIN;
            (frees_at > now).then(|| frees_at - now)
        })
        .max()
}

/// One conversation's recent operations, oldest first.
type Log = Arc<Mutex<VecDeque<Instant>>>;

/// The operations of every conversation (the map made at first use).
#[derive(Default)]
pub struct Windows {
    logs: Mutex<Option<BoundedMap<String, Log>>>,
}

impl Windows {
    fn log(&self, conversation: &str) -> Log {
        let mut logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
        let logs = logs.get_or_insert_with(|| BoundedMap::new(CONVERSATIONS));
        if let Some(log) = logs.get(&conversation.to_owned()) {
            return log.clone();
        }
        let log = Arc::new(Mutex::new(VecDeque::new()));
        logs.insert(conversation.to_owned(), log.clone());
        log
    }

    /// Waits until one more operation in `conversation` fits every window, and counts it.
    pub async fn ready(&self, conversation: &str) {
        let log = self.log(conversation);
        loop {
            let wait = {
                let mut log = log.lock().unwrap_or_else(|p| p.into_inner());
                let now = Instant::now();
                let longest = WINDOWS[WINDOWS.len() - 1].1;
                while log.front().is_some_and(|t| now.duration_since(*t) >= longest) {
                    log.pop_front();
                }
                match wait_needed(&log, now) {
                    None => {
                        log.push_back(now);
                        return;
                    }
                    Some(wait) => wait,
                }
            };
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seven_a_second_then_eight_in_two_then_the_rest() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut log = VecDeque::new();
        for _ in 0..7 {
            assert_eq!(wait_needed(&log, start), None);
            log.push_back(start);
        }
        assert_eq!(wait_needed(&log, start), Some(Duration::from_millis(1100)), "the eighth waits for the first second (and the margin) to pass");
        log.push_back(at(1100));
        assert_eq!(wait_needed(&log, at(1100)), Some(Duration::from_millis(1000)), "a ninth would be 9 in 2 s");
        let log: VecDeque<Instant> = (0..60).map(|i| at(i * 400)).collect();
        assert_eq!(wait_needed(&log, at(24_000)), Some(Duration::from_millis(6100)), "60 in 24 s: the 61st waits until the first is 30 s old");
        assert_eq!(wait_needed(&log, at(30_100)), None);
    }

    #[test]
    fn an_hour_holds_1800() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        // 1,800 operations, one every 2 s: every shorter window has room.
        let log: VecDeque<Instant> = (0..1800).map(|i| at(i * 2000)).collect();
        assert_eq!(wait_needed(&log, at(3_600_000)), Some(Duration::from_millis(100)), "the 1,801st waits until the first is an hour old");
        assert_eq!(wait_needed(&log, at(3_600_100)), None);
    }

    /// A burst of 200 into one conversation, each operation sent as soon as it fits:
    /// all go, in order, and no window ever holds more than Teams allows.
    #[test]
    fn a_burst_of_200_keeps_every_window() {
        let start = Instant::now();
        let mut log: VecDeque<Instant> = VecDeque::new();
        let mut now = start;
        for _ in 0..200 {
            if let Some(wait) = wait_needed(&log, now) {
                now += wait;
            }
            assert_eq!(wait_needed(&log, now), None);
            log.push_back(now);
        }
        for (i, &t) in log.iter().enumerate() {
            for (most, length) in WINDOWS {
                let within = log.iter().skip(i).take_while(|&&u| u.duration_since(t) < length).count();
                assert!(within <= most, "{within} operations within {length:?} of operation {i}");
            }
        }
        let took = log.back().unwrap().duration_since(start);
        assert!(took < Duration::from_secs(110), "60 in 30 s sets the pace: {took:?}");
    }
}
