//! A bridge in front of a real agent backend, as the backend connector suites
//! (tests/backend_*.rs) run it: on the fake Telegram, where one person has a private
//! chat with the bot, with the backend the settings name and the store opened beside
//! it. A suite says only what is its own: its backend's settings (some made inside
//! the test's directory), and where the backend processes the bridge starts run, so
//! that a stop of the bridge is waited for until they have ended.
//!
//! ```ignore
//! let venv = backends::installed("kimi")?;
//! let mut h = BackendBridge::on("kimi", lan()).prepare(move |settings, dir| { /* … */ }).runs_in("work").start().await;
//! h.person().say("deploy");
//! h.restart_bridge().await;
//! h.finish().await;
//! ```

use std::path::{Path, PathBuf};

use hitl_bridge::config::Settings;
use hitl_bridge::store::Store;

use super::fake_telegram::User;
use super::harness::HarnessBuilder;
use super::telegram_chat::TelegramChat;
use super::{Chat, Harness, wait_until};

/// A change to the settings that needs the test's directory (a work dir, a home, a
/// config file in it), made before the bridge starts.
type Prepare = Box<dyn FnOnce(&mut Settings, &Path)>;

/// What the bridge in front of the backend is made of; [`BackendBridgeBuilder::start`]
/// runs it.
pub struct BackendBridgeBuilder {
    harness: HarnessBuilder,
    user: User,
    prepare: Vec<Prepare>,
    runs_in: Option<String>,
}

impl BackendBridgeBuilder {
    /// One setting, as a config file's dotted key would say it; later ones win.
    pub fn set(mut self, key: &str, value: &str) -> Self {
        self.harness = self.harness.set(key, value);
        self
    }

    /// Several settings at once; see [`BackendBridgeBuilder::set`].
    pub fn settings(mut self, pairs: &[(&str, &str)]) -> Self {
        self.harness = self.harness.settings(pairs);
        self
    }

    /// A change made to the settings once the test's directory exists, given its path.
    pub fn prepare(mut self, change: impl FnOnce(&mut Settings, &Path) + 'static) -> Self {
        self.prepare.push(Box::new(change));
        self
    }

    /// The backend processes the bridge starts run in `sub` (a directory of the
    /// test's): every stop of the bridge waits until none runs there any more, so that
    /// a restarted bridge starts its own and a finished test leaves none behind.
    pub fn runs_in(mut self, sub: &str) -> Self {
        self.runs_in = Some(sub.to_owned());
        self
    }

    /// The person's chat registered, the bridge started, the store opened.
    pub async fn start(self) -> BackendBridge {
        let mut harness = self.harness.build().await;
        for change in self.prepare {
            change(&mut harness.settings, harness.dir.path());
        }
        let chat = harness.telegram().private_chat(&self.user);
        harness.boot().await;
        let store = Store::connect(&harness.settings.store.url).await.expect("store");
        let runs_in = self.runs_in.map(|sub| harness.dir.path().join(sub));
        BackendBridge { harness, user: self.user, chat, store, runs_in, restarted: false }
    }
}

/// The bridge under test in front of a real backend. It derefs to its [`Harness`]
/// (`h.telegram()`, `h.settings`, `h.dir`, `h.app()`); its own `stop_bridge` and
/// `restart_bridge` are the ones to call, as they wait for the backend's processes.
pub struct BackendBridge {
    harness: Harness,
    /// The one person who talks to the bot.
    pub user: User,
    /// Their private chat with the bot.
    pub chat: i64,
    /// The bridge's store, to read what it keeps.
    pub store: Store,
    /// Where the backend processes the bridge starts run, if it starts any.
    runs_in: Option<PathBuf>,
    /// Whether Telegram may answer "message is not modified" to the bridge's edits
    /// (see [`BackendBridge::finish`]): after a restart, or where a policy's rule
    /// decided a card as it was shown (its delivery edit then changes nothing).
    restarted: bool,
}

crate::wraps_harness!(BackendBridge, harness);

impl BackendBridge {
    /// A bridge whose backend is `kind` (`backend.kind`), reconnecting within a second,
    /// on the fake Telegram where `user` (and no one else) may talk to the agent.
    pub fn on(kind: &str, user: User) -> BackendBridgeBuilder {
        let allowed = format!("telegram:{}", user.id);
        let harness = Harness::on(Chat::Telegram)
            .no_agent()
            .settings(&[("backend.kind", kind), ("backend.reconnect_max_secs", "1")])
            .tweak(move |settings| settings.access.users = vec![allowed]);
        BackendBridgeBuilder { harness, user, prepare: Vec::new(), runs_in: None }
    }

    /// The work directory the backend processes run in (the builder's `runs_in`).
    pub fn work_dir(&self) -> PathBuf {
        self.runs_in.clone().expect("the builder named where the backend runs (runs_in)")
    }

    /// The person's chat with the bot.
    pub fn person(&self) -> TelegramChat<'_> {
        TelegramChat { fake: self.harness.telegram(), chat: self.chat, user: self.user.clone() }
    }

    /// Stops the bridge and waits until the backend processes it started have ended.
    pub async fn stop_bridge(&mut self) {
        self.harness.stop_bridge().await;
        if let Some(dir) = &self.runs_in {
            wait_until(|| async { processes_in(dir).is_empty().then_some(()) }).await;
        }
    }

    /// Stops the bridge (see [`BackendBridge::stop_bridge`]) and starts it again on
    /// the same settings and store.
    pub async fn restart_bridge(&mut self) {
        self.stop_bridge().await;
        self.restarted = true;
        self.harness.boot().await;
    }

    /// Lets [`BackendBridge::finish`] accept "message is not modified": a card a
    /// policy's rule decided is shown decided, and the backend's proof of delivery
    /// edits it to the same (the bridge takes that answer as done, as policies.rs does).
    pub fn allow_unmodified_edits(&mut self) {
        self.restarted = true;
    }

    /// Stops the bridge, then checks that it sent Telegram nothing Telegram would
    /// refuse: after a restart the bridge re-renders pending messages without knowing
    /// what they show, and "message is not modified", which it treats as done, is
    /// allowed then. Stops the fake and closes the store.
    pub async fn finish(mut self) {
        self.stop_bridge().await;
        let refused: Vec<_> =
            self.harness.telegram().errors().into_iter().filter(|(_, e)| !(self.restarted && e.starts_with("Bad Request: message is not modified"))).collect();
        assert!(refused.is_empty(), "Telegram would have refused: {refused:?}");
        self.store.close().await;
        self.harness.shutdown().await;
    }
}

/// The processes whose working directory is `dir` (none when it does not exist): a
/// backend CLI started by the bridge, found by where it runs, as its command line can
/// be no help (kimi renames itself).
pub fn processes_in(dir: &Path) -> Vec<u32> {
    let Ok(dir) = dir.canonicalize() else { return Vec::new() };
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_string_lossy().parse::<u32>().ok()?;
            std::fs::read_link(entry.path().join("cwd")).is_ok_and(|cwd| cwd == dir).then_some(pid)
        })
        .collect()
}

/// A key no other test uses: `name` and eight random hex digits (a scripted model
/// picks its script by the key in the message).
pub fn unique(name: &str) -> String {
    format!("{name}-{}", &uuid::Uuid::new_v4().simple().to_string()[..8])
}
