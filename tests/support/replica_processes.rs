//! Replicas of one deployment as real `hitl-bridge run` processes: one store, the
//! reference agent (in the test's process) as their backend, and Telegram in webhook
//! mode, so that the test, as a load balancer would, chooses the replica each update
//! is posted to. One person has a private chat with the bot. Each replica logs to a
//! file of the test's, for [`Replicas::dump_logs`] when a test fails.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use hitl_bridge::agent_sim::SimHandle;
use hitl_bridge::store::Store;
use serde_json::Value;

use super::fake_telegram::{self, FakeTelegram, User, button};
use super::{start_sim, wait_until};

/// The secret Telegram sends with every webhook post (`telegram.webhook_secret`).
pub const WEBHOOK_SECRET: &str = "hook-secret";
/// How long Telegram keeps re-posting an update before the test gives up.
const DELIVERY: Duration = Duration::from_secs(30);

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("free port");
    listener.local_addr().expect("addr").port()
}

/// One bridge process; SIGKILLed when dropped.
pub struct Replica {
    pub name: &'static str,
    /// Its webhook, where Telegram posts the updates meant for it.
    pub hook: String,
    child: Option<Child>,
    log: PathBuf,
}

impl Replica {
    /// `hitl-bridge run` as replica `name` (its `backend.replica_id` is
    /// `replica-<name>`), on the store at `store_url`, the agent `sim` and the fake
    /// Bot API, where only `user` may talk to the agent.
    fn spawn(name: &'static str, dir: &tempfile::TempDir, store_url: &str, sim: &SimHandle, fake: &FakeTelegram, user: &User, lease_secs: u64) -> Replica {
        let listen = format!("127.0.0.1:{}", free_port());
        let hook = format!("http://{listen}/telegram/hook");
        let log = dir.path().join(format!("{name}.log"));
        let file = std::fs::File::create(&log).expect("log file");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hitl-bridge"));
        cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
        for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("HITL_BRIDGE__")) {
            cmd.env_remove(key);
        }
        let env = [
            ("HITL_BRIDGE__STORE__URL", store_url.to_owned()),
            ("HITL_BRIDGE__BACKEND__URL", format!("ws://{}/ws/{{session_id}}", sim.addr)),
            ("HITL_BRIDGE__BACKEND__HISTORY_URL", format!("http://{}/sessions/{{session_id}}/history", sim.addr)),
            ("HITL_BRIDGE__BACKEND__LEASE_SECS", lease_secs.to_string()),
            // Replicas on one host: each needs its own id (the default, the host
            // name, would be the same for all).
            ("HITL_BRIDGE__BACKEND__REPLICA_ID", format!("replica-{name}")),
            ("HITL_BRIDGE__BACKEND__RECONNECT_MAX_SECS", "1".into()),
            ("HITL_BRIDGE__HTTP__ENABLED", "false".into()),
            // One secret for all: a button one replica signed is clicked on another.
            ("HITL_BRIDGE__TOKENS__SECRET", "replica-shared-token-secret".into()),
            ("HITL_BRIDGE__TELEGRAM__ENABLED", "true".into()),
            ("HITL_BRIDGE__ACCESS__USERS", format!("telegram:{}", user.id)),
            ("HITL_BRIDGE__TELEGRAM__TOKEN", fake_telegram::TOKEN.into()),
            ("HITL_BRIDGE__TELEGRAM__API_URL", fake.url.clone()),
            ("HITL_BRIDGE__TELEGRAM__MODE", "webhook".into()),
            ("HITL_BRIDGE__TELEGRAM__WEBHOOK_URL", hook.clone()),
            ("HITL_BRIDGE__TELEGRAM__WEBHOOK_LISTEN", listen),
            ("HITL_BRIDGE__TELEGRAM__WEBHOOK_SECRET", WEBHOOK_SECRET.into()),
            ("HITL_BRIDGE__LOG__FILTER", "info,hitl_bridge=debug".into()),
            ("NO_COLOR", "1".into()),
        ];
        cmd.envs(env).args(["run"]).stdin(Stdio::null()).stdout(file.try_clone().expect("log file")).stderr(file);
        let child = cmd.spawn().expect("spawn the bridge");
        Replica { name, hook, child: Some(child), log }
    }

    /// Everything the replica logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The last time this replica connected a session to the backend (its log's
    /// timestamp, comparable as text), if it ever did.
    pub fn last_connect(&self) -> Option<String> {
        self.log().lines().rfind(|l| l.contains("connected to backend")).map(|l| l.split_whitespace().next().unwrap_or_default().to_owned())
    }

    /// SIGKILL (std's kill on Unix): no shutdown, no lease release.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().expect("SIGKILL");
            let _ = child.wait();
        }
    }

    pub fn alive(&mut self) -> bool {
        self.child.as_mut().is_some_and(|c| c.try_wait().ok().flatten().is_none())
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The replicas, the agent and the fake Telegram they share, the person's chat, and
/// the store (opened first, so it is migrated once before any replica starts, as a
/// deployment's first replica would).
pub struct Replicas {
    pub sim: SimHandle,
    pub fake: FakeTelegram,
    pub user: User,
    /// The person's private chat with the bot.
    pub chat: i64,
    pub replicas: Vec<Replica>,
    pub store: Store,
    /// Holds the replicas' logs.
    _dir: tempfile::TempDir,
}

impl Replicas {
    /// One replica per name on the store at `store_url`, with `backend.lease_secs =
    /// lease_secs`; the agent answers approvals for up to 600 s.
    pub async fn start(store_url: &str, names: &[&'static str], user: User, lease_secs: u64) -> Replicas {
        let sim = start_sim(600).await;
        let fake = FakeTelegram::start().await;
        let chat = fake.private_chat(&user);
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::connect(store_url).await.expect("store");
        let replicas = names.iter().map(|name| Replica::spawn(name, &dir, store_url, &sim, &fake, &user, lease_secs)).collect();
        Replicas { sim, fake, user, chat, replicas, store, _dir: dir }
    }

    /// Posts a text message from the person to replica `to` (optionally as a reply).
    pub async fn say(&self, to: usize, text: &str, reply_to: Option<i64>) {
        let update = self.fake.message_update(self.chat, &self.user, text, None, reply_to);
        self.fake.deliver(&self.replicas[to].hook, WEBHOOK_SECRET, update, DELIVERY).await;
    }

    /// Posts a click on the button labelled `label` of message `id` to replica `to`;
    /// returns the answerCallbackQuery body.
    pub async fn click(&self, to: usize, id: i64, label: &str) -> Value {
        let message = self.fake.message(self.chat, id).expect("message");
        let (query, update) = self.fake.click_update(self.chat, &self.user, id, &button(&message, label));
        self.fake.deliver(&self.replicas[to].hook, WEBHOOK_SECRET, update, DELIVERY).await;
        // The webhook answers 200 once the update is stored; the handling (and its
        // answer) follows on the replica that received it.
        wait_until(|| async { self.fake.answer_to(&query) }).await
    }

    /// Waits for a bot message containing `needle`; the newest such.
    pub async fn message_with(&self, needle: &str) -> Value {
        wait_until(|| async { self.fake.bot_messages(self.chat).into_iter().rev().find(|m| m["text"].as_str().is_some_and(|t| t.contains(needle))) }).await
    }

    /// Waits until message `id` shows text containing `needle`.
    pub async fn message_shows(&self, id: i64, needle: &str) -> Value {
        wait_until(|| async { self.fake.message(self.chat, id).filter(|m| m["text"].as_str().is_some_and(|t| t.contains(needle))) }).await
    }

    /// Prints every replica's log (on a failure, before the panic is passed on).
    pub fn dump_logs(&self) {
        for r in &self.replicas {
            eprintln!("----- replica {} log -----\n{}", r.name, r.log());
        }
    }

    /// Kills the replicas, closes the store, stops the fake and the agent.
    pub async fn shutdown(mut self) {
        for replica in &mut self.replicas {
            replica.kill();
        }
        self.store.close().await;
        self.fake.shutdown();
        self.sim.shutdown().await;
    }
}
