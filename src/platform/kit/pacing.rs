//! Pacing against a platform's rate limits: the parts every platform's client needs,
//! whatever its quotas are.
//!
//! - [`Pauses`]: after a 429, nothing goes to what it was about (a chat, a method) or,
//!   for a 429 that names nothing, to anything, until the wait the platform gave has
//!   passed. Calls already waiting wait the same pause instead of each earning a 429
//!   of its own; a shorter wait never cuts a running pause short.
//! - [`retry_after`]: the wait an HTTP 429 asks for, from its `Retry-After` header,
//!   bounded, with a default when the header is missing or unreadable.
//! - [`Quota`]: a rate (so many a second or a minute, with a burst) per key, on
//!   governor's GCRA, for waiting before a platform has to say no.
//! - The order calls wait in once a quota holds them back is
//!   [`Line`](super::turns::Line) by [`Priority`](super::turns::Priority): cards
//!   before text before refusals.
//!
//! Each platform states its own quotas (Telegram: 30 messages a second overall, one
//! a second per chat, 20 a minute per group; Slack: per method by tier, one post a
//! second per channel) and what a 429 is about; the bookkeeping is here.

use std::collections::HashMap;
use std::hash::Hash;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::Duration;

use governor::clock::{Clock, MonotonicClock, Reference};
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::HashMapStateStore;
use governor::{NotUntil, RateLimiter};

/// What a 429 is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope<K> {
    /// One chat, one method: the rest goes on.
    One(K),
    /// Everything (a 429 that names nothing in particular).
    All,
}

/// Pauses after 429s, over any governor clock (a fake one in tests).
pub struct Pauses<K, C: Clock = MonotonicClock> {
    clock: C,
    state: Mutex<State<K, C::Instant>>,
}

struct State<K, I> {
    all: Option<I>,
    one: HashMap<K, I>,
}

impl<K: Eq + Hash + Clone> Pauses<K, MonotonicClock> {
    pub fn new() -> Self {
        Self::with_clock(MonotonicClock)
    }
}

impl<K: Eq + Hash + Clone> Default for Pauses<K, MonotonicClock> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Eq + Hash + Clone, C: Clock> Pauses<K, C> {
    pub fn with_clock(clock: C) -> Self {
        Self { clock, state: Mutex::new(State { all: None, one: HashMap::new() }) }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State<K, C::Instant>> {
        // Plain instants: a panic elsewhere cannot leave them inconsistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The platform answered 429 with `retry_after`: nothing goes to `scope` before
    /// then. A pause never shortens one already running.
    pub fn pause(&self, scope: Scope<K>, retry_after: Duration) {
        let now = self.clock.now();
        let until = now + Nanos::from(retry_after);
        let mut state = self.state();
        // Lapsed pauses go, so the map stays as small as the set of paused keys.
        state.one.retain(|_, u| *u > now);
        match scope {
            Scope::All => state.all = Some(state.all.map_or(until, |current| current.max(until))),
            Scope::One(key) => {
                let current = state.one.entry(key).or_insert(until);
                *current = (*current).max(until);
            }
        }
    }

    /// How much longer `key` is paused (by its own pause or everyone's), if at all.
    pub fn paused(&self, key: &K) -> Option<Duration> {
        let state = self.state();
        self.left([state.all, state.one.get(key).copied()].into_iter().flatten().max())
    }

    /// How much longer everything is paused, if at all.
    pub fn paused_all(&self) -> Option<Duration> {
        self.left(self.state().all)
    }

    fn left(&self, until: Option<C::Instant>) -> Option<Duration> {
        let now = self.clock.now();
        until.filter(|u| *u > now).map(|u| u.duration_since(now).into())
    }

    /// Waits until `key` is paused no more.
    pub async fn wait(&self, key: &K) {
        while let Some(wait) = self.paused(key) {
            tokio::time::sleep(wait).await;
        }
    }

    /// Waits until nothing is paused for everyone.
    pub async fn wait_all(&self) {
        while let Some(wait) = self.paused_all() {
            tokio::time::sleep(wait).await;
        }
    }
}

/// The wait an HTTP 429 asks for in its `Retry-After` header (whole seconds, as
/// every platform here sends it), at most `max`; `default` when the header is
/// missing or not a number.
pub fn retry_after(headers: &reqwest::header::HeaderMap, default: Duration, max: Duration) -> Duration {
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(default, Duration::from_secs)
        .min(max)
}

/// A rate per key (`K`: a chat, a method), with a burst, over any governor clock.
pub struct Quota<K: Eq + Hash + Clone, C: Clock = MonotonicClock> {
    limiter: RateLimiter<K, HashMapStateStore<K>, C, NoOpMiddleware<C::Instant>>,
    clock: C,
}

/// `n`, at least one.
pub fn at_least_one(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN)
}

impl<K: Eq + Hash + Clone, C: Clock + Clone> Quota<K, C> {
    pub fn new(quota: governor::Quota, clock: C) -> Self {
        Self { limiter: RateLimiter::hashmap_with_clock(quota, clock.clone()), clock }
    }
}

impl<K: Eq + Hash + Clone, C: Clock> Quota<K, C> {
    /// One more call for `key`: `Ok` when it may go now (and is counted), else how long
    /// to wait before asking again.
    pub fn check(&self, key: &K) -> Result<(), Duration> {
        self.limiter.check_key(key).map_err(|n: NotUntil<C::Instant>| n.wait_time_from(self.clock.now()))
    }

    /// Forgets keys not used lately, so the map stays as small as the set of active keys.
    pub fn forget_idle(&self) {
        self.limiter.retain_recent();
    }

    /// Keys with state kept.
    pub fn len(&self) -> usize {
        self.limiter.len()
    }

    pub fn is_empty(&self) -> bool {
        self.limiter.is_empty()
    }
}

impl<K: Eq + Hash + Clone> Quota<K, MonotonicClock> {
    /// Waits until `key` may make one more call, and counts it.
    pub async fn until_ready(&self, key: &K) {
        while let Err(wait) = self.check(key) {
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use governor::clock::FakeRelativeClock;

    use super::*;

    #[test]
    fn a_429_pauses_what_it_was_about_and_never_shortens() {
        let clock = FakeRelativeClock::default();
        let pauses = Pauses::with_clock(clock.clone());
        pauses.pause(Scope::One(42), Duration::from_secs(5));
        assert_eq!(pauses.paused(&42), Some(Duration::from_secs(5)));
        assert_eq!(pauses.paused(&43), None, "another key goes on");
        assert_eq!(pauses.paused_all(), None);
        pauses.pause(Scope::One(42), Duration::from_secs(1));
        clock.advance(Duration::from_secs(2));
        assert_eq!(pauses.paused(&42), Some(Duration::from_secs(3)), "a shorter wait does not cut it short");
        clock.advance(Duration::from_secs(3));
        assert_eq!(pauses.paused(&42), None);
    }

    #[test]
    fn a_429_about_nothing_pauses_everything() {
        let clock = FakeRelativeClock::default();
        let pauses = Pauses::with_clock(clock.clone());
        pauses.pause(Scope::All, Duration::from_secs(2));
        pauses.pause(Scope::One("chat.postMessage"), Duration::from_secs(7));
        assert_eq!(pauses.paused(&"users.info"), Some(Duration::from_secs(2)));
        assert_eq!(pauses.paused(&"chat.postMessage"), Some(Duration::from_secs(7)), "the longer pause wins");
        clock.advance(Duration::from_secs(2));
        assert_eq!((pauses.paused_all(), pauses.paused(&"users.info")), (None, None));
        assert_eq!(pauses.paused(&"chat.postMessage"), Some(Duration::from_secs(5)));
    }

    #[test]
    fn retry_after_is_read_bounded_and_defaulted() {
        let mut headers = reqwest::header::HeaderMap::new();
        let (default, max) = (Duration::from_secs(1), Duration::from_secs(60));
        assert_eq!(retry_after(&headers, default, max), default, "no header");
        for (value, wait) in [("3", 3), (" 12 ", 12), ("3600", 60), ("soon", 1), ("-1", 1), ("1.5", 1)] {
            headers.insert(reqwest::header::RETRY_AFTER, value.parse().unwrap());
            assert_eq!(retry_after(&headers, default, max), Duration::from_secs(wait), "{value:?}");
        }
    }

    #[test]
    fn a_quota_gives_its_burst_then_its_rate_per_key() {
        let clock = FakeRelativeClock::default();
        let quota = Quota::new(governor::Quota::per_second(at_least_one(1)).allow_burst(at_least_one(2)), clock.clone());
        assert_eq!((quota.check(&1), quota.check(&1)), (Ok(()), Ok(())));
        assert_eq!(quota.check(&1), Err(Duration::from_secs(1)));
        assert_eq!(quota.check(&2), Ok(()), "another key has its own");
        clock.advance(Duration::from_secs(1));
        assert_eq!(quota.check(&1), Ok(()));
    }
}
