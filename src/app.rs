//! Assembles a running bridge from settings: store, platforms, engine, and (when
//! enabled) the console's input loop. `main` and the end-to-end tests both start the
//! bridge through here, so the tests run exactly what users run.

use std::sync::Arc;

use tokio::io::{AsyncBufRead, AsyncWrite};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::config::Settings;
use crate::engine::{Engine, EngineError, EngineHandle};
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
}

/// A running bridge.
pub struct App {
    pub engine: EngineHandle,
    stop: oneshot::Sender<()>,
    engine_task: JoinHandle<()>,
    console_task: Option<JoinHandle<Result<(), PlatformError>>>,
    platforms: Vec<Arc<dyn Platform>>,
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
        let core = Engine::start(settings, store, platforms.clone(), requests).await?;
        let (stop, stopped) = oneshot::channel::<()>();
        let engine_task = tokio::spawn(core.run(async move {
            let _ = stopped.await;
        }));
        let console_task = console_input.map(|(console, input)| tokio::spawn(console.run(input, engine.clone())));
        Ok(App { engine, stop, engine_task, console_task, platforms })
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
