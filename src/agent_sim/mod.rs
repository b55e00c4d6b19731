//! The reference agent backend (`agent_sim`): a fake backend that speaks PROTOCOL.md over
//! WebSocket from scripted scenarios, so the bridge and its tests have something real to
//! talk to. It owns its HTTP/WS server, per-session state and the scenario scripts; it
//! deliberately builds every event as raw `serde_json::json!` values and never uses the
//! bridge's own protocol types, so a bug in those types shows up as a failing test.
//!
//! Layout (one job per file):
//! - `hub`: shared state (sessions, command log, down flag) behind one mutex.
//! - `session`: one session's outbox, live connection, history, pending requests, queue.
//! - `http`: the axum routes; `connection`: one WebSocket's read and write loops.
//! - `commands`: parses and dispatches bridge → backend commands.
//! - `validate`: checks an approval command against the request it answers.
//! - `runner`: runs a session's turns one after another and handles cancel.
//! - `turn`: what a scenario can do (emit blocks, ask and wait).
//! - `events`, `history`: the JSON shapes of stream events and history entries.
//! - `scenarios`: the scripts, chosen by keyword (see the table there).

mod commands;
mod connection;
mod events;
mod history;
mod http;
mod hub;
mod runner;
mod scenarios;
mod session;
mod turn;
mod validate;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use hub::Hub;

/// How the simulator behaves.
#[derive(Debug, Clone)]
pub struct SimOptions {
    /// Deadline of scenario (d) ("timeout"), in seconds. Default 20.
    pub timeout_secs: u64,
    /// When set, a WebSocket upgrade must carry `Authorization: Bearer <token>` or gets 401.
    pub token: Option<String>,
}

impl Default for SimOptions {
    fn default() -> Self {
        Self { timeout_secs: 20, token: None }
    }
}

/// A simulator running in background tasks; see [`spawn`].
pub struct SimHandle {
    /// The address the simulator listens on.
    pub addr: SocketAddr,
    hub: Arc<Hub>,
    stop: oneshot::Sender<()>,
    server: JoinHandle<std::io::Result<()>>,
}

impl std::fmt::Debug for SimHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimHandle").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl SimHandle {
    /// Every command received so far (all types, invalid ones too), in arrival order.
    pub fn commands(&self) -> Vec<serde_json::Value> {
        self.hub.commands()
    }

    /// Simulates a backend outage: while down, WebSocket upgrades get 503 and live
    /// connections are closed. Session state (history, pending requests, buffered events)
    /// survives and is delivered after the next connection once back up.
    pub fn set_down(&self, down: bool) {
        self.hub.set_down(down);
    }

    /// From now on, a new connection of a session gets only what the agent says after
    /// it: what it said while no connection was open (or on one that died before taking
    /// it) is not sent again, and only the history has it. The protocol does not promise
    /// the re-sending this simulator does by default.
    pub fn forget_unsent(&self) {
        self.hub.set_forgets_unsent(true);
    }

    /// Closes every connection, stops running turns and the HTTP server.
    pub async fn shutdown(self) {
        self.hub.close();
        // The receiver may already be gone if the server failed; nothing to stop then.
        let _ = self.stop.send(());
        // Bounded so a stuck connection cannot hang a test's teardown.
        match tokio::time::timeout(Duration::from_secs(5), self.server).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => tracing::warn!(error = %e, "agent sim server ended with an error"),
            Ok(Err(e)) => tracing::warn!(error = %e, "agent sim server task failed"),
            Err(_) => tracing::warn!("agent sim server did not stop within 5 s"),
        }
    }
}

/// Starts the simulator on `listener` in background tasks and returns at once.
pub async fn spawn(listener: tokio::net::TcpListener, opts: SimOptions) -> std::io::Result<SimHandle> {
    let addr = listener.local_addr()?;
    let hub = Arc::new(Hub::new(opts));
    let app = http::router(hub.clone());
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                // An error means the handle was dropped: stop as well.
                let _ = stopped.await;
            })
            .await
    });
    tracing::info!(%addr, "agent sim listening");
    Ok(SimHandle { addr, hub, stop, server })
}

/// Runs the simulator on `listener` until ctrl-c (for the CLI).
pub async fn serve(listener: tokio::net::TcpListener, opts: SimOptions) -> std::io::Result<()> {
    let addr = listener.local_addr()?;
    let hub = Arc::new(Hub::new(opts));
    let app = http::router(hub.clone());
    tracing::info!(%addr, "agent sim listening");
    let closing = hub.clone();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            if let Err(e) = tokio::signal::ctrl_c().await {
                tracing::warn!(error = %e, "cannot listen for ctrl-c; stopping");
            }
            // Upgraded WebSockets are not tracked by graceful shutdown: close them here.
            closing.close();
        })
        .await
}
