//! Assembles a running bridge from settings: store, platforms, backend connectors,
//! engine, the HTTP listener, and (when enabled) the console's input loop. `main` and
//! the end-to-end tests both start the bridge through here, so the tests run exactly
//! what users run.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::{AsyncBufRead, AsyncWrite};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::backend::http_api::HttpApi;
use crate::backend::lease::Lease;
use crate::backend::session::{SessionConnector, SessionOptions};
use crate::backend::stream::StreamTransport;
use crate::backend::{Connector, Connectors};
use crate::config::Settings;
use crate::engine::{Engine, EngineError, EngineHandle};
use crate::server::Readiness;
use crate::platform::console::Console;
use crate::platform::token::TokenSigner;
use crate::platform::{Platform, PlatformError};
use secrecy::ExposeSecret;
use crate::store::{Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("cannot open the store at {url}: {source}")]
    Store { url: String, source: StoreError },
    #[error("cannot start {platform}: {reason}")]
    Platform { platform: &'static str, reason: String },
    #[error("cannot start the engine: {0}")]
    Engine(#[from] EngineError),
    #[error("cannot listen on http.listen = {listen}: {source}")]
    Listen { listen: String, source: std::io::Error },
}

/// A running bridge.
pub struct App {
    pub engine: EngineHandle,
    stop: oneshot::Sender<()>,
    engine_task: JoinHandle<()>,
    console_task: Option<JoinHandle<Result<(), PlatformError>>>,
    platforms: Vec<Arc<dyn Platform>>,
    http: Option<(SocketAddr, JoinHandle<()>)>,
}

impl App {
    /// Starts the bridge. `console` is the terminal's input and output, used when
    /// `console.enabled` is set.
    pub async fn start<R, W>(settings: &Settings, console: Option<(R, W)>) -> Result<App, AppError>
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let store = Store::connect(&settings.store.url)
            .await
            .map_err(|source| AppError::Store { url: settings.store.url.clone(), source })?;
        let signer = token_signer(settings, &store)
            .await
            .map_err(|source| AppError::Store { url: settings.store.url.clone(), source })?;
        let (engine, requests) = EngineHandle::channel();
        let mut platforms: Vec<Arc<dyn Platform>> = Vec::new();
        let mut console_input = None;
        if let (true, Some((input, output))) = (settings.console.enabled, console) {
            let console = Console::new(&settings.console, output);
            platforms.push(console.clone());
            console_input = Some((console, input));
        }
        // Chat platforms: each `start` spawns its own background tasks (polling, gateway,
        // HTTP endpoints) and returns the platform for the engine.
        // A platform that is enabled but cannot start stops the bridge with a clear
        // error, rather than running without it.
        if settings.telegram.enabled {
            let telegram = crate::platform::telegram::start(settings, engine.clone(), signer.clone())
                .map_err(|e| AppError::Platform { platform: "telegram", reason: e.to_string() })?;
            platforms.push(telegram);
        }
        if settings.discord.enabled {
            let discord = crate::platform::discord::start(&settings.discord, settings.access_policy(), signer.clone(), engine.clone())
                .await
                .map_err(|e| AppError::Platform { platform: "discord", reason: e.to_string() })?;
            platforms.push(discord);
        }
        if platforms.is_empty() {
            tracing::warn!("no platform is enabled: requests will wait for their deadline (enable console, telegram or discord)");
        }

        // Backends: the inbound HTTP API serves `api:` sessions; the stream protocol
        // serves every chat session.
        let names: Vec<&'static str> = platforms.iter().map(|p| p.name()).collect();
        let http_api = HttpApi::start(&settings.http, settings.timeouts.defaults(), names, store.clone(), engine.clone());
        let (backend_tx, backend_rx) = tokio::sync::mpsc::channel(1024);
        let stream = SessionConnector::new(
            StreamTransport::new(settings.backend.clone(), settings.timeouts.defaults()),
            SessionOptions {
                history_url: settings.backend.history_url.clone(),
                reconnect_max: std::time::Duration::from_secs(settings.backend.reconnect_max_secs.max(1)),
            },
            Lease::new(store.clone(), settings.backend.lease_secs),
            store.clone(),
            backend_tx,
        );
        let connectors = Connectors::new(vec![http_api.clone() as Arc<dyn Connector>, Arc::new(stream)]);

        let readiness = Readiness::new(store.clone());
        let http = if settings.http.enabled {
            let served = crate::server::serve(&settings.http.listen, readiness.clone(), http_api.router())
                .await
                .map_err(|source| AppError::Listen { listen: settings.http.listen.clone(), source })?;
            Some(served)
        } else {
            None
        };
        let core = Engine::start(settings, store, platforms.clone(), connectors, backend_rx, requests).await?;
        let (stop, stopped) = oneshot::channel::<()>();
        let engine_task = tokio::spawn(core.run(async move {
            let _ = stopped.await;
        }));
        let console_task = console_input.map(|(console, input)| tokio::spawn(console.run(input, engine.clone())));
        readiness.platforms_started();
        Ok(App { engine, stop, engine_task, console_task, platforms, http })
    }

    /// The address the HTTP listener is bound to (`http.listen`; port 0 picks one).
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http.as_ref().map(|(addr, _)| *addr)
    }

    /// Resolves when the console's input ends (EOF or `/quit`); never without a console.
    pub async fn console_closed(&mut self) {
        match self.console_task.as_mut() {
            Some(task) => match task.await {
                Ok(Err(e)) => tracing::error!(error = %e, "console failed"),
                Err(e) => tracing::error!(error = %e, "console task panicked"),
                Ok(Ok(())) => {}
            },
            None => std::future::pending().await,
        }
        self.console_task = None;
    }

    /// Stops the engine and waits for it. What was not delivered stays in the outbox.
    pub async fn stop(self) {
        for platform in &self.platforms {
            platform.shutdown();
        }
        if let Some(task) = &self.console_task {
            task.abort();
        }
        if let Some((_, task)) = &self.http {
            task.abort();
        }
        let _ = self.stop.send(());
        let _ = self.engine_task.await;
    }
}

/// The button-token signer: the configured secret, else one generated once and kept
/// in the store.
async fn token_signer(settings: &Settings, store: &Store) -> Result<TokenSigner, StoreError> {
    if let Some(secret) = settings.tokens.secret.as_ref().filter(|s| !s.expose_secret().is_empty()) {
        return Ok(TokenSigner::new(secret.expose_secret().as_bytes()));
    }
    let generated = store
        .secret("callback_tokens", || format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple()))
        .await?;
    Ok(TokenSigner::new(generated.as_bytes()))
}
