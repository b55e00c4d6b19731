//! Telegram's rate limits, kept in front of the Bot API client so a send goes out at
//! once while it is under them and waits only as long as a quota says.
//!
//! Quotas (GCRA, `governor`), per the Bot FAQ: 30 messages a second overall, one a
//! second per chat, 20 a minute per group (a negative chat id), each with a small
//! burst (Telegram tolerates a few messages at once; the long-run rate is the limit).
//! A 429 pauses the chat it was about (or every chat, for a call that names none) for
//! the `retry_after` Telegram gave; sends and edits to a paused chat wait.
//!
//! When the overall quota is what holds sends back (a crowd of strangers each owed a
//! refusal), sends wait in one line by [`Priority`]: approval cards first, then the
//! agent's text, then refusals; in order within each. A new card then waits for at
//! most the sends already admitted, not for a thousand refusals.
//!
//! This module only decides and waits: it never sends, retries or drops anything
//! (that is [`super::send`]). [`Limits`] is pure bookkeeping over a clock (tested with
//! governor's fake clock); [`Limiter`] is the async wrapper on the real clock.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use governor::clock::{Clock, MonotonicClock, Reference};
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::HashMapStateStore;
use governor::state::{InMemoryState, NotKeyed};
use governor::{NotUntil, Quota, RateLimiter};

use crate::platform::kit::turns::Line;
pub use crate::platform::kit::turns::Priority;

/// Messages a second to all chats together.
pub const GLOBAL_PER_SEC: u32 = 30;
/// Sends allowed at once overall before the 30/s pacing starts.
pub const GLOBAL_BURST: u32 = 5;
/// Sends allowed at once to one chat before its one-a-second pacing starts.
pub const CHAT_BURST: u32 = 3;
/// Messages a minute to one group.
pub const GROUP_PER_MIN: u32 = 20;
/// Sends allowed at once to one group before its 20-a-minute pacing starts.
pub const GROUP_BURST: u32 = 3;
/// Idle keyed state (a chat not written to lately) is dropped every this many sends,
/// so the maps stay as small as the set of recently active chats.
const PRUNE_EVERY: u32 = 1024;

type Direct<C> = RateLimiter<NotKeyed, InMemoryState, C, NoOpMiddleware<<C as Clock>::Instant>>;
type Keyed<C> = RateLimiter<i64, HashMapStateStore<i64>, C, NoOpMiddleware<<C as Clock>::Instant>>;

fn nz(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN)
}

/// Who a 429 is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Chat(i64),
    All,
}

/// How far one send got through the quotas. A send that has to wait keeps its
/// `Admission`, so a quota it already passed is not charged again when it retries.
#[derive(Debug, Default)]
pub struct Admission {
    passed: u8,
}

/// Pauses after 429s, as instants of the clock.
struct Pauses<I> {
    all: Option<I>,
    chats: HashMap<i64, I>,
}

/// The quotas and pauses, over any governor clock.
pub struct Limits<C: Clock> {
    clock: C,
    global: Direct<C>,
    chats: Keyed<C>,
    groups: Keyed<C>,
    pauses: Mutex<Pauses<C::Instant>>,
    sends: AtomicU32,
}

impl<C: Clock + Clone> Limits<C> {
    pub fn new(clock: C) -> Self {
        let global = Quota::per_second(nz(GLOBAL_PER_SEC)).allow_burst(nz(GLOBAL_BURST));
        let chat = Quota::per_second(nz(1)).allow_burst(nz(CHAT_BURST));
        let group = Quota::per_minute(nz(GROUP_PER_MIN)).allow_burst(nz(GROUP_BURST));
        Limits {
            global: RateLimiter::direct_with_clock(global, clock.clone()),
            chats: RateLimiter::hashmap_with_clock(chat, clock.clone()),
            groups: RateLimiter::hashmap_with_clock(group, clock.clone()),
            pauses: Mutex::new(Pauses { all: None, chats: HashMap::new() }),
            sends: AtomicU32::new(0),
            clock,
        }
    }
}

impl<C: Clock> Limits<C> {
    fn pauses(&self) -> std::sync::MutexGuard<'_, Pauses<C::Instant>> {
        // Plain instants: a panic elsewhere cannot leave them inconsistent.
        self.pauses.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How much longer `chat` is paused by a 429 (its own or everyone's), if at all.
    pub fn paused(&self, chat: i64) -> Option<Duration> {
        let pauses = self.pauses();
        self.left([pauses.all, pauses.chats.get(&chat).copied()].into_iter().flatten().max())
    }

    /// How much longer every chat is paused (a 429 on a call that named none), if at all.
    pub fn paused_all(&self) -> Option<Duration> {
        self.left(self.pauses().all)
    }

    fn left(&self, until: Option<C::Instant>) -> Option<Duration> {
        let now = self.clock.now();
        until.filter(|u| *u > now).map(|u| u.duration_since(now).into())
    }

    /// Telegram answered 429 with `retry_after`: nothing goes to `scope` before then.
    /// A pause never shortens one already running.
    pub fn pause(&self, scope: Scope, retry_after: Duration) {
        let now = self.clock.now();
        let until = now + Nanos::from(retry_after);
        let mut pauses = self.pauses();
        pauses.chats.retain(|_, u| *u > now);
        let slot = match scope {
            Scope::All => &mut pauses.all,
            Scope::Chat(chat) => {
                let current = pauses.chats.get(&chat).copied();
                pauses.chats.insert(chat, current.map_or(until, |c| c.max(until)));
                return;
            }
        };
        *slot = Some(slot.map_or(until, |c| c.max(until)));
    }

    /// One more message to `chat`: `Ok` when it may go now, else how long to wait
    /// before asking again with the same `admission`. Quotas are checked strictest
    /// first (group, chat, overall) and each is charged once, when it admits the send.
    #[cfg(test)]
    pub fn admit(&self, chat: i64, admission: &mut Admission) -> Result<(), Duration> {
        self.admit_in_chat(chat, admission)?;
        self.admit_overall(admission)
    }

    /// The pauses and the quotas of `chat` (and its group): the first part of
    /// [`Self::admit`].
    pub fn admit_in_chat(&self, chat: i64, admission: &mut Admission) -> Result<(), Duration> {
        if let Some(wait) = self.paused(chat) {
            return Err(wait);
        }
        if admission.passed == 0 {
            self.prune();
            if chat < 0 {
                self.groups.check_key(&chat).map_err(|n| self.wait(&n))?;
            }
            admission.passed = 1;
        }
        if admission.passed == 1 {
            self.chats.check_key(&chat).map_err(|n| self.wait(&n))?;
            admission.passed = 2;
        }
        Ok(())
    }

    /// The overall quota, once the chat's are passed: the rest of [`Self::admit`].
    pub fn admit_overall(&self, admission: &mut Admission) -> Result<(), Duration> {
        if admission.passed == 2 {
            self.global.check().map_err(|n| self.wait(&n))?;
            admission.passed = 3;
        }
        Ok(())
    }

    fn wait(&self, not_until: &NotUntil<C::Instant>) -> Duration {
        not_until.wait_time_from(self.clock.now())
    }

    fn prune(&self) {
        if self.sends.fetch_add(1, Ordering::Relaxed) % PRUNE_EVERY == PRUNE_EVERY - 1 {
            self.chats.retain_recent();
            self.groups.retain_recent();
        }
    }

    /// Chats with quota state kept (for tests of the pruning).
    #[cfg(test)]
    fn tracked_chats(&self) -> usize {
        self.chats.len()
    }
}

/// The limits on the real clock, or nothing when `telegram.rate_limits` is off (a
/// benchmark against a fake Bot API); then every call goes straight out and a 429 is
/// only waited out by the call that got it.
pub struct Limiter {
    limits: Option<Limits<MonotonicClock>>,
    line: Line,
}

impl Limiter {
    pub fn new(enabled: bool) -> Self {
        Limiter { limits: enabled.then(|| Limits::new(MonotonicClock)), line: Line::default() }
    }

    /// Waits until a new message to `chat` is within every quota and no pause; for
    /// the overall quota, in line by `priority`.
    pub async fn before_send(&self, chat: i64, priority: Priority) {
        let Some(limits) = &self.limits else { return };
        let mut admission = Admission::default();
        while let Err(wait) = limits.admit_in_chat(chat, &mut admission) {
            tokio::time::sleep(wait).await;
        }
        // First in line by priority, then as long as the overall quota says.
        let _turn = self.line.turn(priority).await;
        while let Err(wait) = limits.admit_overall(&mut admission) {
            tokio::time::sleep(wait).await;
        }
    }

    /// Waits out a 429 pause on `chat` (edits are not counted against the quotas,
    /// as Telegram's limits are on messages, but a paused chat is paused for them too).
    pub async fn before_edit(&self, chat: i64) {
        let Some(limits) = &self.limits else { return };
        while let Some(wait) = limits.paused(chat) {
            tokio::time::sleep(wait).await;
        }
    }

    /// Waits out a pause of every chat (for calls that name no chat).
    pub async fn before_any(&self) {
        let Some(limits) = &self.limits else { return };
        while let Some(wait) = limits.paused_all() {
            tokio::time::sleep(wait).await;
        }
    }

    pub fn pause(&self, scope: Scope, retry_after: Duration) {
        if let Some(limits) = &self.limits {
            limits.pause(scope, retry_after);
        }
    }
}

#[cfg(test)]
mod tests {
    use governor::clock::FakeRelativeClock;

    use super::*;

    fn limits() -> (Limits<FakeRelativeClock>, FakeRelativeClock) {
        let clock = FakeRelativeClock::default();
        (Limits::new(clock.clone()), clock)
    }

    fn admit(l: &Limits<FakeRelativeClock>, chat: i64) -> Result<(), Duration> {
        l.admit(chat, &mut Admission::default())
    }

    #[test]
    fn a_send_under_every_quota_goes_at_once() {
        let (l, _) = limits();
        assert_eq!(admit(&l, 42), Ok(()));
        assert_eq!(admit(&l, -1001), Ok(()));
    }

    #[test]
    fn one_chat_gets_its_burst_then_one_a_second() {
        let (l, clock) = limits();
        for _ in 0..CHAT_BURST {
            assert_eq!(admit(&l, 42), Ok(()));
        }
        assert_eq!(admit(&l, 42), Err(Duration::from_secs(1)));
        // Another chat is not held up by this one.
        assert_eq!(admit(&l, 43), Ok(()));
        clock.advance(Duration::from_millis(999));
        assert_eq!(admit(&l, 42), Err(Duration::from_millis(1)));
        clock.advance(Duration::from_millis(1));
        assert_eq!(admit(&l, 42), Ok(()));
        assert_eq!(admit(&l, 42), Err(Duration::from_secs(1)));
    }

    #[test]
    fn a_group_gets_twenty_a_minute() {
        let (l, clock) = limits();
        let group = -100_200;
        let mut sent = 0;
        // A minute of trying once a second: the burst, then one every 3 s.
        for _ in 0..60 {
            if admit(&l, group).is_ok() {
                sent += 1;
            }
            clock.advance(Duration::from_secs(1));
        }
        assert_eq!(sent, GROUP_BURST + 19, "a burst of {GROUP_BURST}, then 20/min");
        // A private chat at the same pace gets one a second.
        let (l, clock) = limits();
        let mut private = 0;
        for _ in 0..60 {
            if admit(&l, 77).is_ok() {
                private += 1;
            }
            clock.advance(Duration::from_secs(1));
        }
        assert_eq!(private, 60);
    }

    #[test]
    fn all_chats_together_get_thirty_a_second() {
        let (l, clock) = limits();
        let mut at_once = 0;
        for chat in 0..100 {
            if admit(&l, chat).is_ok() {
                at_once += 1;
            }
        }
        assert_eq!(at_once, GLOBAL_BURST);
        let wait = admit(&l, 1000).expect_err("over the overall quota");
        assert_eq!(wait, Duration::from_secs(1) / GLOBAL_PER_SEC);
        // Over the next second, new chats get 30: one every 1/30 s.
        let mut in_a_second = 0;
        for step in 0..=1000 {
            if admit(&l, 10_000 + step).is_ok() {
                in_a_second += 1;
            }
            clock.advance(Duration::from_millis(1));
        }
        assert_eq!(in_a_second, GLOBAL_PER_SEC);
    }

    #[test]
    fn a_waiting_send_is_charged_once_per_quota() {
        let (l, clock) = limits();
        for chat in 0..GLOBAL_BURST as i64 {
            assert_eq!(admit(&l, chat), Ok(()));
        }
        // Chat 99 passes its own quota, then waits for the overall one.
        let mut admission = Admission::default();
        assert!(l.admit(99, &mut admission).is_err());
        for _ in 0..CHAT_BURST * 3 {
            clock.advance(Duration::from_millis(34));
            if l.admit(99, &mut admission).is_ok() {
                break;
            }
        }
        assert_eq!(admission.passed, 3);
        // Its chat quota was charged once: two more of its burst are left.
        clock.advance(Duration::from_millis(100));
        assert_eq!(admit(&l, 99), Ok(()));
        clock.advance(Duration::from_millis(100));
        assert_eq!(admit(&l, 99), Ok(()));
        clock.advance(Duration::from_millis(100));
        assert!(admit(&l, 99).is_err());
    }

    #[test]
    fn a_429_pauses_that_chat_only() {
        let (l, clock) = limits();
        l.pause(Scope::Chat(42), Duration::from_secs(5));
        assert_eq!(admit(&l, 42), Err(Duration::from_secs(5)));
        assert_eq!(l.paused(42), Some(Duration::from_secs(5)));
        assert_eq!(admit(&l, 43), Ok(()));
        assert_eq!(l.paused_all(), None, "a chat's 429 pauses only that chat");
        // A shorter retry_after does not cut the pause short.
        l.pause(Scope::Chat(42), Duration::from_secs(1));
        clock.advance(Duration::from_secs(2));
        assert_eq!(l.paused(42), Some(Duration::from_secs(3)));
        clock.advance(Duration::from_secs(3));
        assert_eq!(l.paused(42), None);
        assert_eq!(admit(&l, 42), Ok(()));
    }

    #[test]
    fn a_429_for_everyone_pauses_every_chat() {
        let (l, clock) = limits();
        l.pause(Scope::All, Duration::from_secs(2));
        assert_eq!(l.paused_all(), Some(Duration::from_secs(2)));
        assert_eq!(admit(&l, 1), Err(Duration::from_secs(2)));
        assert_eq!(admit(&l, -1005), Err(Duration::from_secs(2)));
        // A chat's own longer pause outlasts the global one.
        l.pause(Scope::Chat(1), Duration::from_secs(7));
        clock.advance(Duration::from_secs(2));
        assert_eq!(admit(&l, 2), Ok(()));
        assert_eq!(admit(&l, 1), Err(Duration::from_secs(5)));
        assert_eq!(l.paused_all(), None);
    }

    #[test]
    fn idle_chats_are_forgotten() {
        let (l, clock) = limits();
        for chat in 0..PRUNE_EVERY as i64 - 1 {
            let _ = admit(&l, chat);
            clock.advance(Duration::from_millis(40));
        }
        assert_eq!(l.tracked_chats(), PRUNE_EVERY as usize - 1);
        clock.advance(Duration::from_secs(10));
        let _ = admit(&l, -1);
        assert!(l.tracked_chats() <= 1, "{} chats still tracked", l.tracked_chats());
    }

    #[test]
    fn switched_off_nothing_waits() {
        use futures_util::FutureExt;
        let limiter = Limiter::new(false);
        limiter.pause(Scope::All, Duration::from_secs(60));
        for _ in 0..100 {
            assert!(limiter.before_send(42, Priority::Text).now_or_never().is_some(), "a switched-off limiter never waits");
        }
        assert!(limiter.before_edit(42).now_or_never().is_some());
    }

    /// A card sent while a crowd of refusals waits for the overall quota goes next,
    /// not after the crowd.
    #[tokio::test]
    async fn a_card_goes_before_a_crowd_of_refusals() {
        use std::sync::Arc;
        const CROWD: i64 = 40;
        let limiter = Arc::new(Limiter::new(true));
        let (sent, mut order) = tokio::sync::mpsc::unbounded_channel();
        for chat in 0..CROWD {
            let (limiter, sent) = (limiter.clone(), sent.clone());
            tokio::spawn(async move {
                limiter.before_send(1000 + chat, Priority::Refusal).await;
                let _ = sent.send(chat);
            });
        }
        // The crowd is in line once all but the burst wait.
        while limiter.line.waiting() < (CROWD as usize).saturating_sub(GLOBAL_BURST as usize + 2) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let mut before = Vec::new();
        while let Ok(chat) = order.try_recv() {
            before.push(chat);
        }
        let card = {
            let (limiter, sent) = (limiter.clone(), sent.clone());
            tokio::spawn(async move {
                limiter.before_send(9999, Priority::Card).await;
                let _ = sent.send(-1);
            })
        };
        let mut after = Vec::new();
        while after.len() < (CROWD as usize + 1 - before.len()) {
            after.push(order.recv().await.expect("every send goes"));
        }
        card.await.unwrap();
        let card_at = after.iter().position(|c| *c == -1).expect("the card went");
        // At most the refusal already first in line (and one admitted as the card
        // joined) goes before it.
        assert!(card_at <= 2, "the card went after {card_at} refusals that were waiting: {after:?}");
        assert!(after.len() - card_at > CROWD as usize / 2, "most of the crowd went after the card: {after:?}");
    }

    #[tokio::test]
    async fn switched_on_a_paused_chat_waits() {
        use futures_util::FutureExt;
        let limiter = Limiter::new(true);
        assert!(limiter.before_send(42, Priority::Text).now_or_never().is_some(), "the first send goes at once");
        limiter.pause(Scope::Chat(42), Duration::from_secs(60));
        assert!(limiter.before_send(42, Priority::Text).now_or_never().is_none());
        assert!(limiter.before_edit(42).now_or_never().is_none());
        assert!(limiter.before_edit(43).now_or_never().is_some());
    }
}
