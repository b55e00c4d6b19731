//! Assembles a running bridge from settings: store, platforms, backend connectors,
//! engine, the HTTP listener, and (when enabled) the console's input loop. `main` and
//! the end-to-end tests both start the bridge through here, so the tests run exactly
//! what users run.

use std::net::SocketAddr;
use std::sync::Arc;

use std::future::Future;
use std::panic::AssertUnwindSafe;
use tokio::io::{AsyncBufRead, AsyncWrite};

use futures_util::FutureExt as _;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::backend::descriptor::ConnectorParts;
use crate::backend::http_api::HttpApi;
use crate::backend::http_api::auth::Tokens;
use crate::backend::http_api::body::Platforms;
use crate::backend::lease::Lease;
use crate::backend::session::SessionOptions;
use crate::backend::{Connector, Connectors};
use crate::config::Settings;
use crate::engine::{Engine, EngineError, EngineHandle};
use crate::listener::Limits;
use crate::metrics::Metrics;
use crate::platform::descriptor::{StartContext, Terminal};
use crate::platform::kit::token::TokenSigner;
use crate::platform::{Platform, PlatformError};
use crate::server::Readiness;
use crate::store::{Store, StoreError};
use secrecy::ExposeSecret;

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("cannot open the store at {url}: {source}")]
    Store { url: String, source: StoreError },
    #[error("cannot start {platform}: {reason}")]
    Platform { platform: &'static str, reason: String },
    #[error("cannot start the backend {backend}: {reason}")]
    Backend { backend: String, reason: String },
    #[error("cannot start the engine: {0}")]
    Engine(#[from] EngineError),
    #[error("cannot listen on http.listen = {listen}: {source}")]
    Listen { listen: String, source: std::io::Error },
}

/// How the engine's task ended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineEnd {
    /// Its loop returned: after [`App::stop`], or (unexpectedly) when nothing could
    /// send it requests any more.
    #[error("the engine returned")]
    Returned,
    /// It panicked (a bug); the panic message.
    #[error("the engine panicked: {0}")]
    Panicked(String),
    /// Its task was cancelled before it could say how it ended.
    #[error("the engine's task was cancelled")]
    Cancelled,
}

/// A running bridge.
pub struct App {
    pub engine: EngineHandle,
    stop: oneshot::Sender<()>,
    engine_task: JoinHandle<()>,
    /// Set once by the engine's task as it ends, however it ends.
    engine_end: watch::Receiver<Option<EngineEnd>>,
    /// Platforms' work whose end ends the bridge (the console reading its input).
    foreground: Vec<JoinHandle<Result<(), PlatformError>>>,
    platforms: Vec<Arc<dyn Platform>>,
    http: Option<(SocketAddr, JoinHandle<()>)>,
    store: Store,
    /// Prunes finished rows past `store.retention_days`, hourly.
    retention: JoinHandle<()>,
}

impl App {
    /// Starts the bridge. `terminal` is the terminal's input and output, for the
    /// platform that is the terminal (`console.enabled`).
    pub async fn start<R, W>(settings: &Settings, terminal: Option<(R, W)>) -> Result<App, AppError>
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let store = Store::connect_with(&settings.store.url, settings.store.sqlite_synchronous)
            .await
            .map_err(|source| AppError::Store { url: crate::config::url_without_password(&settings.store.url), source })?;
        let signer =
            token_signer(settings, &store).await.map_err(|source| AppError::Store { url: crate::config::url_without_password(&settings.store.url), source })?;
        let (engine, requests) = EngineHandle::channel();
        // This bridge's own registry: figures of other bridges in the process never mix in.
        let metrics = Metrics::new();
        // Every listener (HTTP API, Telegram webhook, Discord endpoint) shares these.
        let limits = Limits::from_settings(&settings.http, crate::listener::raise_open_files_limit());
        // Every platform's address grammar, read from the registry here and handed to
        // the parts above the platforms that write chats (the HTTP API, the web inbox).
        let networks = crate::platform::registry::networks();
        // Chat platforms, in the registry's order: each `start` spawns its own
        // background tasks (polling, gateway, HTTP endpoints) and returns the platform
        // for the engine. A platform that is enabled but cannot start stops the bridge
        // with a clear error, rather than running without it.
        let context = StartContext {
            policy: settings.access_policy(),
            groups: configured_groups(settings),
            replica_id: settings.backend.replica_id(),
            limits,
            engine: engine.clone(),
            signer: signer.clone(),
            inboxes: store.inboxes(),
            ui_states: store.ui_states(),
            states: store.platform_states(),
            metrics: metrics.clone(),
            web: Arc::new(crate::web::ChatLinks::new(store.clone(), settings.web.clone())),
            terminal: std::sync::Mutex::new(terminal.map(|(input, output)| Terminal { input: Box::new(input), output: Box::new(output) })),
        };
        let mut platforms: Vec<Arc<dyn Platform>> = Vec::new();
        let mut foreground = Vec::new();
        let mut memberships = Vec::new();
        for descriptor in crate::platform::registry::DESCRIPTORS {
            let name = descriptor.network().name();
            let Some(section) = settings.platforms.named(name).filter(|s| s.enabled()) else { continue };
            let started = descriptor.start(section, &context).await.map_err(|reason| AppError::Platform { platform: name, reason })?;
            if let Some(started) = started {
                platforms.push(started.platform);
                foreground.extend(started.foreground);
                memberships.extend(started.membership.map(|m| (name, m)));
            }
        }
        if platforms.is_empty() {
            tracing::warn!("no platform is enabled: requests will wait for their deadline (enable one of {})", networks.listed());
        }

        // Backends: the inbound HTTP API serves `api:` sessions; the configured
        // backend (`backend.kind`) serves every chat session.
        let names: Vec<&'static str> = platforms.iter().map(|p| p.name()).collect();
        let known = networks.clone();
        let http_api = HttpApi::start(&settings.http, settings.timeouts.defaults(), Platforms { known, enabled: names }, store.clone(), engine.clone());
        // Before any agent process starts: none left by a crashed bridge of this
        // deployment may go on beside the ones this bridge starts.
        let agents = deployment_agents(settings, &store).await?;
        agents.end_left_by_dead_bridges().await;
        let (backend_tx, backend_rx) = tokio::sync::mpsc::channel(1024);
        let chat_backend = chat_connector(settings, &store, backend_tx, &metrics, agents)?;
        let connectors = Connectors::new(vec![http_api.clone() as Arc<dyn Connector>, chat_backend]);

        let readiness = Readiness::new(store.clone());
        let http = if settings.http.enabled {
            // The MCP tools call /v1 on this very listener, once it is bound.
            let own_base = Arc::new(std::sync::OnceLock::new());
            let mut routes = http_api.router();
            if http_api.enabled() && settings.mcp.enabled {
                routes = routes.merge(crate::mcp::http::router(
                    &settings.mcp,
                    Tokens::new(settings.http.tokens()),
                    own_base.clone(),
                    settings.http.max_body_bytes,
                    networks.clone(),
                ));
            }
            if settings.web.enabled {
                let open_viewers: Vec<String> = settings.access.users.iter().chain(&settings.access.admins).cloned().collect();
                let web = crate::web::Web::new(
                    store.clone(),
                    engine.clone(),
                    settings.access_policy(),
                    &open_viewers,
                    settings.web.clone(),
                    memberships,
                    networks.clone(),
                );
                routes = routes.merge(crate::web::router(web));
            }
            let served = crate::server::serve(&settings.http.listen, limits, readiness.clone(), metrics.clone(), routes)
                .await
                .map_err(|source| AppError::Listen { listen: settings.http.listen.clone(), source })?;
            let _ = own_base.set(loopback_base(served.0));
            Some(served)
        } else {
            None
        };
        for warning in settings.access_warnings() {
            tracing::warn!("{warning}");
        }
        let core = Engine::start(&settings.engine_config(), store.clone(), platforms.clone(), connectors, backend_rx, requests).await?.with_metrics(metrics);
        let web_idle_ms = i64::try_from(settings.web.session_idle_secs.saturating_mul(1000)).unwrap_or(i64::MAX);
        let retention = tokio::spawn(crate::store::retention::keep_pruning(store.clone(), settings.store.retention_days, web_idle_ms));
        let (stop, stopped) = oneshot::channel::<()>();
        let (ended, engine_end) = watch::channel(None);
        let engine_task = tokio::spawn(report_end(
            core.run(async move {
                let _ = stopped.await;
            }),
            ended,
        ));
        let foreground = foreground.into_iter().map(tokio::spawn).collect();
        readiness.platforms_started();
        Ok(App { engine, stop, engine_task, engine_end, foreground, platforms, http, store, retention })
    }

    /// The address the HTTP listener is bound to (`http.listen`; port 0 picks one).
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http.as_ref().map(|(addr, _)| *addr)
    }

    /// Resolves when a platform's foreground work ends: the console's input (EOF or
    /// `/quit`). Never when no platform has any.
    pub async fn console_closed(&mut self) {
        if self.foreground.is_empty() {
            return std::future::pending().await;
        }
        // By reference: dropped unfinished (another branch of a `select!` won), the
        // tasks stay here for `stop` to abort.
        let (ended, index, _) = futures_util::future::select_all(self.foreground.iter_mut()).await;
        match ended {
            Ok(Err(e)) => tracing::error!(error = %e, "console failed"),
            Err(e) => tracing::error!(error = %e, "console task panicked"),
            Ok(Ok(())) => {}
        }
        self.foreground.remove(index);
    }

    /// Resolves when the engine's task ends, with how it ended. Before [`App::stop`]
    /// any end is unexpected (a panic, most likely): the platforms would only answer
    /// "shutting down" from then on, so `main` exits non-zero and lets the supervisor
    /// restart the bridge. Borrows nothing, so it can be awaited beside
    /// [`App::console_closed`].
    pub fn engine_stopped(&self) -> impl Future<Output = EngineEnd> + Send + 'static {
        let mut end = self.engine_end.clone();
        async move {
            // An error means the task is gone without a word: it was cancelled.
            let result = end.wait_for(Option::is_some).await.map(|seen| seen.clone());
            result.ok().flatten().unwrap_or(EngineEnd::Cancelled)
        }
    }

    /// Stops gracefully (SIGTERM, SIGINT): platforms stop taking input, the engine
    /// finishes the chat lanes (bounded) and releases its leases and claims, then the
    /// store is closed. What was not delivered stays in the outbox for the next start.
    pub async fn stop(self) {
        for platform in &self.platforms {
            platform.shutdown();
        }
        for task in &self.foreground {
            task.abort();
        }
        if let Some((_, task)) = &self.http {
            task.abort();
        }
        self.retention.abort();
        let _ = self.stop.send(());
        let _ = self.engine_task.await;
        self.store.close().await;
    }
}

/// Runs the engine's loop and publishes how it ended, a panic included (the panic is
/// caught here so it can be reported; the default hook has already printed it).
async fn report_end(run: impl Future<Output = ()>, ended: watch::Sender<Option<EngineEnd>>) {
    let end = match AssertUnwindSafe(run).catch_unwind().await {
        Ok(()) => EngineEnd::Returned,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".to_owned());
            tracing::error!(panic = %message, "the engine panicked");
            EngineEnd::Panicked(message)
        }
    };
    ended.send_replace(Some(end));
}

/// Every group id the configuration names, with the setting naming it.
fn configured_groups(settings: &Settings) -> Vec<(String, String)> {
    let named = |key: String, ids: &[String]| ids.iter().map(move |id| (key.clone(), id.clone())).collect::<Vec<_>>();
    let mut groups = named("access.roles".into(), &settings.access.roles);
    groups.extend(named("access.approver_roles".into(), &settings.access.approver_roles));
    for (i, policy) in settings.policies.iter().enumerate() {
        groups.extend(named(format!("policies[{i}].approver_roles"), &policy.terms.approver_roles));
    }
    groups
}

/// The button-token signer: the configured secret, else one generated once and kept
/// in the store.
async fn token_signer(settings: &Settings, store: &Store) -> Result<TokenSigner, StoreError> {
    if let Some(secret) = settings.tokens.secret.as_ref().filter(|s| !s.expose_secret().is_empty()) {
        return Ok(TokenSigner::new(secret.expose_secret().as_bytes()));
    }
    let generated = store.secret("callback_tokens", || format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple())).await?;
    Ok(TokenSigner::new(generated.as_bytes()))
}

/// The registry of agent processes of this deployment: named after the store's
/// identity, so bridges of other stores on the host never end this one's agents nor it
/// theirs. Only a backend that starts processes looks it up.
async fn deployment_agents(settings: &Settings, store: &Store) -> Result<crate::backend::child::Agents, AppError> {
    if !settings.chat_backend().is_some_and(|(backend, _)| backend.starts_agents()) {
        return Ok(crate::backend::child::Agents::default());
    }
    let deployment = store.deployment_id().await.map_err(|source| AppError::Store { url: crate::config::url_without_password(&settings.store.url), source })?;
    Ok(crate::backend::child::Agents::of_deployment(&deployment))
}

/// The connector for chat sessions: the session machinery (leases, outbox, reconnects)
/// around the transport of the backend `backend.kind` names, built by its descriptor.
fn chat_connector(
    settings: &Settings,
    store: &Store,
    updates: tokio::sync::mpsc::Sender<crate::backend::BackendInput>,
    metrics: &Metrics,
    agents: crate::backend::child::Agents,
) -> Result<Arc<dyn Connector>, AppError> {
    let backend = &settings.backend;
    let defaults = settings.timeouts.defaults();
    let options = SessionOptions {
        history_url: backend.history_url.clone(),
        defaults,
        reconnect_max: std::time::Duration::from_secs(backend.reconnect_max_secs.max(1)),
        idle_close: std::time::Duration::from_secs(backend.idle_close_secs.max(1)),
        metrics: metrics.clone(),
    };
    let lease = Lease::new(store.clone(), backend.lease_secs, backend.replica_id());
    let failed = |reason: String| AppError::Backend { backend: backend.kind.clone(), reason };
    let (descriptor, section) = settings.chat_backend().ok_or_else(|| failed("not a backend of this bridge".into()))?;
    let parts = ConnectorParts { options, lease, store: store.clone(), updates, defaults, shared: backend.clone(), agents };
    descriptor.connector(section, parts).map_err(failed)
}

/// The URL this process reaches its own listener at: a wildcard bind (`0.0.0.0`,
/// `[::]`) is reached on loopback.
fn loopback_base(addr: SocketAddr) -> String {
    let ip = match addr.ip() {
        std::net::IpAddr::V4(ip) if ip.is_unspecified() => std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        std::net::IpAddr::V6(ip) if ip.is_unspecified() => std::net::IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    format!("http://{}", SocketAddr::new(ip, addr.port()))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    type NoConsole = Option<(tokio::io::BufReader<tokio::io::Empty>, tokio::io::Sink)>;

    async fn app(dir: &tempfile::TempDir) -> App {
        let store = format!("sqlite://{}/bridge.db", dir.path().display());
        let settings = Settings::from_pairs(&[
            ("store.url", &store),
            ("http.enabled", "false"),
            ("console.enabled", "false"),
            ("backend.url", "ws://127.0.0.1:9/ws/{session_id}"),
        ])
        .expect("settings");
        App::start(&settings, NoConsole::None).await.expect("app starts")
    }

    #[tokio::test]
    async fn a_running_engine_is_not_reported_and_a_stopped_one_returned() {
        let dir = tempfile::tempdir().expect("tempdir");
        let app = app(&dir).await;
        let ended = app.engine_stopped();
        tokio::pin!(ended);
        assert!(tokio::time::timeout(Duration::from_millis(200), &mut ended).await.is_err(), "the engine is running");
        app.stop().await;
        assert_eq!(ended.await, EngineEnd::Returned);
    }

    /// The engine's task dying under the App (here: cancelled) is reported, and
    /// stopping afterwards still works.
    #[tokio::test]
    async fn an_engine_that_dies_is_reported() {
        let dir = tempfile::tempdir().expect("tempdir");
        let app = app(&dir).await;
        app.engine_task.abort();
        let end = tokio::time::timeout(Duration::from_secs(5), app.engine_stopped()).await.expect("reported");
        assert_eq!(end, EngineEnd::Cancelled);
        // Every waiter hears it, late ones too.
        assert_eq!(app.engine_stopped().await, EngineEnd::Cancelled);
        tokio::time::timeout(Duration::from_secs(5), app.stop()).await.expect("stop does not hang");
    }

    /// What the engine's task runs under: a panic is caught and reported with its
    /// message, a normal return as such.
    #[tokio::test]
    async fn a_panic_in_the_engine_loop_is_reported_with_its_message() {
        let (tx, mut rx) = watch::channel(None);
        let task = tokio::spawn(report_end(
            async {
                tokio::task::yield_now().await;
                panic!("index out of bounds: the len is 0 but the index is 3");
            },
            tx,
        ));
        task.await.expect("the panic does not escape the task");
        let end = rx.wait_for(Option::is_some).await.expect("reported").clone();
        assert_eq!(end, Some(EngineEnd::Panicked("index out of bounds: the len is 0 but the index is 3".into())));

        let (tx, rx) = watch::channel(None);
        report_end(async {}, tx).await;
        assert_eq!(*rx.borrow(), Some(EngineEnd::Returned));
        let formatted = format!("{}", EngineEnd::Panicked(format!("boom {}", 1)));
        assert_eq!(formatted, "the engine panicked: boom 1");
    }
}
