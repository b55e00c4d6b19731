//! The bridge's own HTTP listener (`http.listen`): `/healthz` (the process is alive),
//! `/readyz` (the store's last health check succeeded, no outage met since, and every
//! enabled platform has started), `/metrics`
//! (Prometheus, see [`crate::metrics`]), and whatever routes the parts mount on it (the
//! inbound API's `/v1`), through [`crate::listener`]'s limits on connections and
//! timeouts. Bodies over `http.max_body_bytes` (1 MiB) are refused with 413 before any handler reads them. [`probe`] is the other side: `hitl-bridge health` (the container's
//! `HEALTHCHECK`) asking `/readyz`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;
use tokio::task::JoinHandle;

use crate::error_chain::one_line;
use crate::listener::Limits;
use crate::metrics::{self, Metrics, StoreFigures};
use crate::store::Store;

/// What `hitl-bridge health` asks by default: `/readyz` on the default `http.listen`.
pub const DEFAULT_PROBE_URL: &str = "http://127.0.0.1:8790/readyz";

/// How long [`probe`] waits for an answer (Docker's own timeout should be longer).
const PROBE_TIMEOUT: Duration = Duration::from_secs(4);

/// How much of an unhealthy answer's body [`ProbeError`] repeats.
const PROBE_BODY_CHARS: usize = 200;

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

/// What `/metrics` reads: the bridge's registry, and the store for the gauges every
/// replica reads alike.
#[derive(Clone)]
struct Scrape {
    store: Store,
    metrics: Metrics,
}

/// Binds `listen` and serves health, metrics and `routes` until the task is aborted.
pub async fn serve(listen: &str, limits: Limits, readiness: Arc<Readiness>, metrics: Metrics, routes: Router) -> std::io::Result<(SocketAddr, JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let addr = listener.local_addr()?;
    let scrape = Scrape { store: readiness.store.clone(), metrics };
    let app = Router::new()
        .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
        .route("/readyz", get(readyz).with_state(readiness))
        .route("/metrics", get(metrics_page).with_state(scrape))
        .merge(routes)
        .layer(DefaultBodyLimit::max(limits.max_body_bytes));
    let task = tokio::spawn(crate::listener::serve(listener, app, limits));
    tracing::info!(%addr, "HTTP listener up");
    Ok((addr, task))
}

/// Reads what the store's health task last found ([`crate::store::StoreHealth`]):
/// never a query of its own, so it answers at once whatever the database is doing.
async fn readyz(State(readiness): State<Arc<Readiness>>) -> (StatusCode, Json<serde_json::Value>) {
    let health = readiness.store.health();
    let platforms = readiness.platforms_started.load(Ordering::Acquire);
    let status = if health.healthy && platforms { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    let word = if status == StatusCode::OK { "ready" } else { "not_ready" };
    let mut body = json!({"status": word, "store": health.healthy, "platforms": platforms});
    // Why the store is not healthy, and how long ago it last answered a check.
    if let Some(error) = health.error {
        body["store_error"] = json!(error);
        body["store_checked_ms_ago"] = json!(health.checked_ms_ago);
    }
    (status, Json(body))
}

/// The registry in the OpenMetrics text format, with the store's gauges read now. A
/// store that does not answer fails the scrape (503) rather than serve stale gauges;
/// Prometheus then records the target as down, which is what an alert should see.
async fn metrics_page(State(scrape): State<Scrape>) -> Response {
    scrape.metrics.catch_up_store_errors(&crate::store::error_counts());
    scrape.metrics.catch_up_batches_retried(scrape.store.group_commits_retried());
    match StoreFigures::read(&scrape.store).await {
        Ok(figures) => scrape.metrics.set_store_figures(&figures),
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the store for /metrics");
            return (StatusCode::SERVICE_UNAVAILABLE, format!("the store did not answer: {e}\n")).into_response();
        }
    }
    match scrape.metrics.render() {
        Ok(text) => ([(header::CONTENT_TYPE, metrics::CONTENT_TYPE)], text).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "cannot render /metrics");
            (StatusCode::INTERNAL_SERVER_ERROR, "cannot render the metrics\n").into_response()
        }
    }
}

/// Why [`probe`] found the bridge unhealthy; one line each.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("{url} is not a URL: {reason}")]
    Url { url: String, reason: String },
    #[error("no answer from {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("{url} answered HTTP {status}: {body}")]
    Status { url: String, status: u16, body: String },
}

/// Asks `url` (normally [`DEFAULT_PROBE_URL`]) once: `Ok` with a short description on a
/// 2xx answer, else why not.
pub async fn probe(url: &str) -> Result<String, ProbeError> {
    let parsed = reqwest::Url::parse(url).map_err(|e| ProbeError::Url { url: url.to_owned(), reason: e.to_string() })?;
    let client =
        reqwest::Client::builder().timeout(PROBE_TIMEOUT).build().map_err(|e| ProbeError::Unreachable { url: url.to_owned(), reason: one_line(&e) })?;
    let response = client.get(parsed).send().await.map_err(|e| ProbeError::Unreachable { url: url.to_owned(), reason: one_line(&e) })?;
    let status = response.status();
    // A body that cannot be read still leaves the status to judge by.
    let body = response.text().await.unwrap_or_default();
    let body: String = body.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(PROBE_BODY_CHARS).collect();
    if status.is_success() {
        Ok(format!("{url} answered HTTP {}: {body}", status.as_u16()))
    } else {
        Err(ProbeError::Status { url: url.to_owned(), status: status.as_u16(), body })
    }
}
