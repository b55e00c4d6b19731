//! The bridge's own HTTP listener (`http.listen`): `/healthz` (the process is alive),
//! `/readyz` (the store answers and every enabled platform has started), and whatever
//! routes the parts mount on it (the inbound API's `/v1`). Bodies over 1 MiB are
//! refused with 413 before any handler reads them.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Json;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use serde_json::json;
use tokio::task::JoinHandle;

use crate::store::Store;

/// The largest request body accepted (PROTOCOL.md §8).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// What `/readyz` checks.
pub struct Readiness {
    store: Store,
    /// Set once every enabled platform has started.
    platforms_started: AtomicBool,
}

impl Readiness {
    pub fn new(store: Store) -> Arc<Self> {
        Arc::new(Self { store, platforms_started: AtomicBool::new(false) })
    }

    pub fn platforms_started(&self) {
        self.platforms_started.store(true, Ordering::Release);
    }
}

/// Binds `listen` and serves health plus `routes` until the task is aborted.
pub async fn serve(listen: &str, readiness: Arc<Readiness>, routes: Router) -> std::io::Result<(SocketAddr, JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let addr = listener.local_addr()?;
    let app = Router::new()
        .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
        .route("/readyz", get(readyz).with_state(readiness))
        .merge(routes)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES));
    let task = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "the HTTP listener stopped");
        }
    });
    tracing::info!(%addr, "HTTP listener up");
    Ok((addr, task))
}

async fn readyz(State(readiness): State<Arc<Readiness>>) -> (StatusCode, Json<serde_json::Value>) {
    let store = readiness.store.ping().await;
    let platforms = readiness.platforms_started.load(Ordering::Acquire);
    let status = if store && platforms { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    let word = if status == StatusCode::OK { "ready" } else { "not_ready" };
    (status, Json(json!({"status": word, "store": store, "platforms": platforms})))
}
