//! Test support, shared by every suite: [`harness`] builds the bridge under test (its
//! chat platform, backend, store and settings); the fakes stand in for Telegram,
//! Discord, Slack and Teams, [`synapse`] runs a real Matrix homeserver, and the
//! `*_chat` modules say what a person does on each; this file holds the console bridge
//! (stdin/stdout replaced by in-memory pipes the test writes to and reads from) and the
//! waits every suite uses.

#![allow(dead_code)]

pub mod backend_bridge;
pub mod backends;
pub mod bridge_process;
pub mod chaos_proxy;
pub mod discord_chat;
pub mod fake_discord;
pub mod fake_mattermost;
pub mod fake_slack;
pub mod fake_teams;
pub mod fake_telegram;
pub mod harness;
// A person on Matrix is a matrix-sdk client: only with the `matrix` feature, so the
// benches build without it (`cargo bench --bench load --no-default-features`).
#[cfg(feature = "matrix")]
pub mod matrix_person;
pub mod private_postgres;
pub mod replica_processes;
pub mod scripted_model;
pub mod slack_chat;
pub mod synapse;
pub mod telegram_chat;
pub mod test_db;
pub mod web_inbox;
pub mod webdriver;
pub mod withholding_proxy;

#[allow(unused_imports)] // each suite uses its own part of the support
pub use harness::{Chat, Harness, HarnessBuilder, settings};

use std::time::Duration;

use hitl_bridge::agent_sim::{self, SimHandle, SimOptions};
use hitl_bridge::app::App;
use hitl_bridge::config::Settings;
use hitl_bridge::engine::EngineHandle;
use hitl_bridge::interaction::Interaction;
use hitl_bridge::store::Store;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

/// How long one expectation may wait before the test fails: generous, because a real
/// backend (a CLI starting, a few model round trips) is slow on a busy CI machine.
pub const WAIT: Duration = Duration::from_secs(30);

pub async fn start_sim(timeout_secs: u64) -> SimHandle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    agent_sim::spawn(listener, SimOptions { timeout_secs, token: None }).await.expect("sim")
}

/// A running bridge whose console the test types into and reads from.
pub struct Bridge {
    pub app: App,
    pub store: Store,
    input: DuplexStream,
    output: Lines<BufReader<DuplexStream>>,
    pub transcript: Vec<String>,
}

impl Bridge {
    pub async fn start(settings: &Settings) -> Bridge {
        let (input, console_in) = tokio::io::duplex(1 << 20);
        let (console_out, output) = tokio::io::duplex(1 << 20);
        let app = App::start(settings, Some((BufReader::new(console_in), console_out))).await.expect("bridge starts");
        let store = Store::connect(&settings.store.url).await.expect("store");
        Bridge { app, store, input, output: BufReader::new(output).lines(), transcript: Vec::new() }
    }

    pub fn engine(&self) -> &EngineHandle {
        &self.app.engine
    }

    /// Types one line into the console.
    pub async fn send(&mut self, line: &str) {
        self.input.write_all(format!("{line}\n").as_bytes()).await.expect("console input");
    }

    /// Reads console output until a line contains `needle`; returns that line.
    pub async fn expect(&mut self, needle: &str) -> String {
        let found = tokio::time::timeout(WAIT, async {
            while let Ok(Some(line)) = self.output.next_line().await {
                self.transcript.push(line.clone());
                if line.contains(needle) {
                    return Some(line);
                }
            }
            None
        })
        .await;
        match found {
            Ok(Some(line)) => line,
            _ => panic!("console never printed {needle:?}; transcript:\n{}", self.transcript.join("\n")),
        }
    }

    /// The pending interactions, oldest first.
    pub async fn pending(&self) -> Vec<Interaction> {
        self.store.pending_interactions().await.expect("pending")
    }

    /// Waits until an interaction is pending and returns it.
    pub async fn wait_pending(&self) -> Interaction {
        wait_until(|| async { self.pending().await.into_iter().next() }).await
    }

    pub async fn stop(self) {
        self.app.stop().await;
        self.store.close().await;
    }
}

/// The bridge of `settings` without a console (chat platforms only), as the platform and
/// backend tests run it.
pub async fn start_headless(settings: &Settings) -> App {
    App::start(settings, None::<(tokio::io::BufReader<tokio::io::Empty>, tokio::io::Sink)>).await.expect("the bridge starts")
}

/// Polls `probe` until it yields something (or the test fails after [`WAIT`]).
pub async fn wait_until<T, F, Fut>(mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(found) = probe().await {
            return found;
        }
        assert!(tokio::time::Instant::now() < deadline, "condition not met within {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `listener` with Nagle's algorithm off on every connection, as the platforms' and
/// the agents' servers run (Go's net, nginx and Python's asyncio all set TCP_NODELAY):
/// a fake that held its second small write for the bridge's delayed ACK would add
/// 40 ms the real server does not.
pub fn without_nagle(listener: tokio::net::TcpListener) -> impl axum::serve::Listener<Addr = std::net::SocketAddr> {
    axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    })
}

/// The `approval` commands the agent received.
pub fn approvals(sim: &SimHandle) -> Vec<Value> {
    sim.commands().into_iter().filter(|c| c["type"] == "approval").collect()
}

/// Waits until the agent has received `n` approval commands, and returns them.
pub async fn wait_approvals(sim: &SimHandle, n: usize) -> Vec<Value> {
    wait_until(|| async {
        let got = approvals(sim);
        (got.len() >= n).then_some(got)
    })
    .await
}

/// The session id the bridge used for its first message.
pub fn session_id(sim: &SimHandle) -> String {
    sim.commands().iter().find(|c| c["type"] == "message").and_then(|c| c["session_id"].as_str()).expect("a message command").to_owned()
}

/// An agent and a bridge wired to it, on a fresh SQLite file.
pub struct Rig {
    pub sim: SimHandle,
    pub bridge: Bridge,
    /// Keeps the database directory alive for the test.
    pub dir: tempfile::TempDir,
}

impl Rig {
    pub async fn start(timeout_secs: u64, extra: &[(&str, &str)]) -> Rig {
        let Harness { sim, dir, settings, .. } = Harness::on(Chat::Console).agent(timeout_secs).settings(extra).build().await;
        let bridge = Bridge::start(&settings).await;
        Rig { sim: sim.expect("the reference agent"), bridge, dir }
    }
}

/// Stops the bridge, then the agent.
pub async fn stop(bridge: Bridge, sim: SimHandle) {
    bridge.stop().await;
    sim.shutdown().await;
}

/// A `message` command as the agent received it, minus its `message_id` (the outbox
/// row and the moment it was queued, `<id>-<ms>`, unknown to the test), which must be
/// there and of that form.
pub fn without_message_id(mut command: serde_json::Value) -> serde_json::Value {
    let id = command.as_object_mut().and_then(|c| c.remove("message_id"));
    let id = id.as_ref().and_then(serde_json::Value::as_str).unwrap_or_else(|| panic!("a message carries message_id: {command}"));
    let well_formed = id.split_once('-').is_some_and(|(row, ms)| row.parse::<u64>().is_ok() && ms.parse::<u64>().is_ok());
    assert!(well_formed, "message_id {id:?} is <outbox id>-<ms>");
    command
}
