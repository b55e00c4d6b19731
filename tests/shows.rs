//! Requests are never dropped on the way to a chat: a show the platform refused (429
//! storms, 5xx, the network) is retried from the store until it succeeds, and a
//! request never shown before a stop is shown after the next start. A chat the
//! platform refuses for good (chat not found) is tried once and never again.
//!
//! The engine runs for real, on SQLite; the platform is a double whose sends fail on
//! demand, and the backend update is handed to the engine as a connector would.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use hitl_bridge::backend::{BackendInput, Connectors, SessionUpdate, ToolGroupStatus};
use hitl_bridge::config::Settings;
use hitl_bridge::engine::Reminder;
use hitl_bridge::engine::{Engine, EngineHandle};
use hitl_bridge::interaction::{Interaction, RequestBuilder, TimeoutDefaults};
use hitl_bridge::platform::{Platform, PlatformError};
use hitl_bridge::protocol::ActionRequest;
use hitl_bridge::store::{ChatKey, MessageRef, Store};
use serde_json::json;
use tokio::sync::{mpsc, oneshot};

/// A chat platform whose first `failures` sends of a request fail, or that refuses
/// the chat for good.
struct Flaky {
    failures: AtomicUsize,
    refuses: bool,
    attempts: AtomicUsize,
    shown: Mutex<Vec<String>>,
}

impl Flaky {
    fn failing(failures: usize) -> Arc<Self> {
        Arc::new(Self { failures: AtomicUsize::new(failures), refuses: false, attempts: AtomicUsize::new(0), shown: Mutex::new(Vec::new()) })
    }

    fn refusing() -> Arc<Self> {
        Arc::new(Self { failures: AtomicUsize::new(0), refuses: true, attempts: AtomicUsize::new(0), shown: Mutex::new(Vec::new()) })
    }

    fn shown(&self) -> Vec<String> {
        self.shown.lock().unwrap().clone()
    }
}

impl Platform for Flaky {
    fn name(&self) -> &'static str {
        "telegram"
    }

    fn send_text<'a>(&'a self, _: &'a ChatKey, _: &'a str) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async { Ok(()) })
    }

    fn tool_status<'a>(&'a self, _: &'a ChatKey, _: &'a ToolGroupStatus) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async { Ok(()) })
    }

    fn show_interaction<'a>(&'a self, _: &'a ChatKey, interaction: &'a Interaction) -> BoxFuture<'a, Result<Option<String>, PlatformError>> {
        Box::pin(async move {
            self.attempts.fetch_add(1, Ordering::SeqCst);
            if self.refuses {
                return Err(PlatformError::Refused { platform: "telegram", message: "Bad Request: chat not found".into() });
            }
            let failed = self.failures.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok();
            if failed {
                return Err(PlatformError::Send { platform: "telegram", message: "502 Bad Gateway".into() });
            }
            let mut shown = self.shown.lock().unwrap();
            shown.push(interaction.approval_key().to_owned());
            Ok(Some(format!("m{}", shown.len())))
        })
    }

    fn refresh_interaction<'a>(&'a self, _: &'a MessageRef, _: &'a Interaction) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async { Ok(()) })
    }

    fn send_notice<'a>(&'a self, _: &'a ChatKey, _: &'a hitl_bridge::interaction::updates::Notice) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async { Ok(()) })
    }

    fn send_reminder<'a>(&'a self, _: Reminder<'a>) -> BoxFuture<'a, Result<(), PlatformError>> {
        Box::pin(async { Ok(()) })
    }
}

const SESSION: &str = "s1";

fn chat() -> ChatKey {
    ChatKey::new("telegram", "-100", None)
}

fn settings(dir: &tempfile::TempDir) -> Settings {
    let store = format!("sqlite://{}", dir.path().join("bridge.db").display());
    Settings::from_pairs(&[("backend.url", "ws://127.0.0.1:9/ws/{session_id}"), ("store.url", &store)]).unwrap()
}

/// A running engine with `platform`, fed backend updates through `backend`.
struct Running {
    backend: mpsc::Sender<BackendInput>,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
    _handle: EngineHandle,
}

async fn start(settings: &Settings, platform: Arc<Flaky>) -> Running {
    let store = Store::connect(&settings.store.url).await.unwrap();
    store.bind_chat(&chat(), SESSION, 0).await.unwrap();
    let (handle, requests) = EngineHandle::channel();
    let (backend, backend_rx) = mpsc::channel(16);
    let engine =
        Engine::start(&settings.engine_config(), store, vec![platform as Arc<dyn Platform>], Connectors::new(Vec::new()), backend_rx, requests).await.unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(engine.run(async move {
        let _ = stopped.await;
    }));
    Running { backend, stop, task, _handle: handle }
}

impl Running {
    async fn request(&self, key: &str) {
        let action = ActionRequest { name: "execute_trade".into(), args: json!({"symbol": "VNM"}), description: None, tool_use_id: None };
        let request = RequestBuilder::start(key, vec![action], vec![], Some(600)).finish(TimeoutDefaults::default()).unwrap();
        self.backend.send(BackendInput { session_id: SESSION.into(), update: SessionUpdate::Request(request) }).await.unwrap();
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap();
    }
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..200 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

/// Two 502s in a row: the request is shown on the third attempt (after 1 s, then 2 s
/// of backoff), once, and its pending row is gone with the message remembered.
#[tokio::test]
async fn a_failed_show_is_retried_until_it_is_shown() {
    let dir = tempfile::tempdir().unwrap();
    let settings = settings(&dir);
    let platform = Flaky::failing(2);
    let engine = start(&settings, platform.clone()).await;
    engine.request("trade_1").await;
    wait_until("the request to be shown", || !platform.shown().is_empty()).await;
    assert_eq!(platform.shown(), ["trade_1"]);
    assert_eq!(platform.attempts.load(Ordering::SeqCst), 3);

    let store = Store::connect(&settings.store.url).await.unwrap();
    // The lane records the message just after the platform call returns.
    for _ in 0..40 {
        if store.pending_shows().await.unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(store.pending_shows().await.unwrap(), []);
    let interaction = store.interaction_by_key(SESSION, "trade_1").await.unwrap().unwrap();
    let refs = store.message_refs(&interaction.id).await.unwrap();
    assert_eq!(refs.iter().map(|m| m.message_id.as_str()).collect::<Vec<_>>(), ["m1"]);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(platform.attempts.load(Ordering::SeqCst), 3, "shown once, not retried after");
    engine.stop().await;
}

/// A request whose every send failed before a stop is shown right after the next
/// start, by the new process.
#[tokio::test]
async fn a_request_never_shown_is_shown_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let settings = settings(&dir);
    let down = Flaky::failing(usize::MAX);
    let engine = start(&settings, down.clone()).await;
    engine.request("trade_1").await;
    wait_until("a first attempt", || down.attempts.load(Ordering::SeqCst) >= 1).await;
    engine.stop().await;
    assert!(down.shown().is_empty());

    let store = Store::connect(&settings.store.url).await.unwrap();
    let waiting = store.pending_shows().await.unwrap();
    assert_eq!(waiting.len(), 1, "kept for the next start: {waiting:?}");
    assert_eq!(waiting[0].chat, chat());

    let up = Flaky::failing(0);
    let started = std::time::Instant::now();
    let engine = start(&settings, up.clone()).await;
    wait_until("the request to be shown after the restart", || !up.shown().is_empty()).await;
    assert!(started.elapsed() < Duration::from_secs(3), "shown {:?} after the start", started.elapsed());
    assert_eq!(up.shown(), ["trade_1"]);
    engine.stop().await;
}

/// A chat refused for good: one attempt, the show leaves the retry queue and is
/// recorded with the platform's reason at once, and neither the backoff nor a restart
/// brings it back.
#[tokio::test]
async fn a_chat_refused_for_good_is_tried_once_even_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let settings = settings(&dir);
    let refusing = Flaky::refusing();
    let engine = start(&settings, refusing.clone()).await;
    engine.request("trade_1").await;
    let store = Store::connect(&settings.store.url).await.unwrap();
    let mut refused = Vec::new();
    for _ in 0..100 {
        let Some(interaction) = store.interaction_by_key(SESSION, "trade_1").await.unwrap() else { continue };
        refused = store.refused_shows(&interaction.id).await.unwrap();
        if !refused.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(refused, [hitl_bridge::store::RefusedShow { chat: chat(), error: "Bad Request: chat not found".into() }]);
    assert_eq!(store.pending_shows().await.unwrap(), [], "nothing left to retry");
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert_eq!(refusing.attempts.load(Ordering::SeqCst), 1, "not retried on a backoff");
    engine.stop().await;

    let up = Flaky::failing(0);
    let engine = start(&settings, up.clone()).await;
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert_eq!(up.attempts.load(Ordering::SeqCst), 0, "a restart does not try it again");
    let interaction = store.interaction_by_key(SESSION, "trade_1").await.unwrap().unwrap();
    assert!(interaction.status.is_pending(), "a chat's own request is not cancelled: its session goes on");
    engine.stop().await;
}
