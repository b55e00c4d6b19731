//! Serving an HTTP app to clients that may be hostile: every listener of the bridge
//! (`http.listen`, the Telegram webhook, the Discord interactions endpoint) goes
//! through [`serve`], so none of them trusts a client to be quick, brief or few.
//!
//! - **Open connections are capped** ([`Limits::max_connections`], kept below the
//!   open-files limit). At the cap the longest-idle connection (one with no request
//!   in progress) is closed to make room, so a client hoarding idle connections
//!   cannot lock out `/healthz`, a click or an agent; only when every connection is
//!   busy is the newcomer closed at once. An `accept` that fails (out of file
//!   descriptors) backs off instead of spinning.
//! - **Headers must arrive within [`Limits::header_read_timeout`]**, counted from
//!   when the connection is ready for a request. hyper starts that clock again after
//!   each response, so the same bound closes a keep-alive connection left idle.
//! - **A body must arrive whole within [`Limits::body_read_timeout`]** from the
//!   request's start (a total, not per chunk: a client dripping one byte at a time is
//!   cut off too). Size limits and authentication stay with each app, which checks
//!   them before reading the body.

use std::collections::HashMap;
use std::future::Future as _;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::time::{Instant, Sleep};

pub mod settings;

pub use settings::{ApiToken, HttpSettings};

/// The largest request body the bridge's own API (`/v1`, `/mcp`) accepts unless
/// `http.max_body_bytes` says otherwise (docs/protocol.md, Part 2).
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;

/// "the request body is over 1 MiB": what a refused body is told, in the units the
/// limit reads best in.
pub fn body_over(limit: usize) -> String {
    let size = match limit {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} bytes"),
    };
    format!("the request body is over {size}")
}

/// How many file descriptors the process keeps for itself (store, backends, platform
/// calls, logs) when the connection cap is derived from the open-files limit.
const RESERVED_FDS: u64 = 256;

/// What a listener allows one client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    pub body_read_timeout: Duration,
    /// The largest body the bridge's own routes read (`http.max_body_bytes`).
    pub max_body_bytes: usize,
}

impl Limits {
    /// The limits `http` configures, the connection cap lowered to fit the open-files
    /// limit (`open_files`, see [`raise_open_files_limit`]): the bridge's listeners
    /// together use at most half of what is left after [`RESERVED_FDS`].
    pub fn from_settings(http: &HttpSettings, open_files: Option<u64>) -> Self {
        let configured = http.max_connections.max(1);
        let fits = open_files.map_or(usize::MAX, |n| (n.saturating_sub(RESERVED_FDS) / 2).max(16) as usize);
        Self {
            max_connections: configured.min(fits),
            header_read_timeout: Duration::from_secs(http.header_read_timeout_secs.max(1)),
            body_read_timeout: Duration::from_secs(http.body_read_timeout_secs.max(1)),
            max_body_bytes: http.max_body_bytes,
        }
    }
}

/// Raises the soft open-files limit to the hard one, as servers do (systemd's default
/// soft limit is 1,024), and returns the soft limit now in force; `None` when it
/// cannot be read.
pub fn raise_open_files_limit() -> Option<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed in.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return None;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                tracing::debug!(from = limit.rlim_cur, to = raised.rlim_cur, "raised the open-files limit");
                limit = raised;
            }
        }
    }
    // rlim_t is u64 on Linux, not on every Unix.
    #[allow(clippy::unnecessary_cast)]
    Some(limit.rlim_cur as u64)
}

/// Serves `app` on `listener` within `limits` until the task is aborted.
pub async fn serve(listener: TcpListener, app: Router, limits: Limits) {
    let app = app.layer(axum::middleware::map_request(move |request: Request| async move {
        request.map(|body| Body::new(DeadlineBody::new(body, limits.body_read_timeout)))
    }));
    let connections = Arc::new(Connections::default());
    let mut backoff = Duration::from_millis(10);
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors (or a connection reset before accept): make
                // room if an idle connection can go, and do not spin meanwhile.
                tracing::warn!(error = %e, retry_in = ?backoff, "cannot accept a connection");
                connections.close_idlest();
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        backoff = Duration::from_millis(10);
        if connections.len() >= limits.max_connections && !connections.close_idlest() {
            tracing::warn!(cap = limits.max_connections, "every connection is busy; refusing a new one");
            drop(stream);
            continue;
        }
        let (id, conn) = connections.open();
        let app = app.clone();
        let connections = connections.clone();
        tokio::spawn(async move {
            serve_connection(stream, app, limits, &conn).await;
            connections.close(id);
        });
    }
}

async fn serve_connection(stream: tokio::net::TcpStream, app: Router, limits: Limits, conn: &Arc<Connection>) {
    // Nagle off: an answer (a webhook's 200, an invoke's card, a live update) goes out
    // as it is written, not held until the client acknowledges the last one (a delayed
    // ACK is up to 40 ms). A socket that refuses the option still serves.
    let _ = stream.set_nodelay(true);
    let service = {
        let conn = conn.clone();
        hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
            let busy = conn.busy();
            let app = app.clone();
            async move {
                let response = tower::ServiceExt::oneshot(app, request.map(Body::new)).await;
                drop(busy);
                response
            }
        })
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    let served = builder.serve_connection(TokioIo::new(stream), service).with_upgrades();
    tokio::pin!(served);
    tokio::select! {
        result = served.as_mut() => log_end(result),
        () = conn.evicted.notified() => {
            // Idle by construction (see `close_idlest`): it closes at once.
            served.as_mut().graceful_shutdown();
            log_end(served.await);
        }
    }
}

fn log_end(result: Result<(), hyper::Error>) {
    if let Err(e) = result {
        // Timeouts and resets are the listener doing its job; nothing to alarm anyone.
        tracing::debug!(error = %e, "connection ended");
    }
}

/// The open connections of one listener.
#[derive(Default)]
struct Connections {
    open: Mutex<HashMap<u64, Arc<Connection>>>,
    next_id: AtomicU64,
}

struct Connection {
    /// Requests in progress.
    in_progress: AtomicUsize,
    /// When a request last started or finished.
    last_active: Mutex<Instant>,
    evicted: Notify,
}

impl Connections {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Connection>>> {
        // A plain map: a panic elsewhere cannot leave it half-written.
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn len(&self) -> usize {
        self.lock().len()
    }

    fn open(&self) -> (u64, Arc<Connection>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Connection { in_progress: AtomicUsize::new(0), last_active: Mutex::new(Instant::now()), evicted: Notify::new() });
        self.lock().insert(id, conn.clone());
        (id, conn)
    }

    fn close(&self, id: u64) {
        self.lock().remove(&id);
    }

    /// Asks the connection idle the longest to close and forgets it; false when every
    /// connection has a request in progress.
    fn close_idlest(&self) -> bool {
        let mut open = self.lock();
        let idlest = open
            .iter()
            .filter(|(_, c)| c.in_progress.load(Ordering::Acquire) == 0)
            .min_by_key(|(_, c)| *c.last_active.lock().unwrap_or_else(|p| p.into_inner()))
            .map(|(id, _)| *id);
        match idlest.and_then(|id| open.remove(&id)) {
            Some(conn) => {
                // `notify_one` keeps the wake-up if the task is not waiting yet.
                conn.evicted.notify_one();
                true
            }
            None => false,
        }
    }
}

impl Connection {
    fn busy(self: &Arc<Self>) -> Busy {
        self.in_progress.fetch_add(1, Ordering::AcqRel);
        self.touch();
        Busy(self.clone())
    }

    fn touch(&self) {
        *self.last_active.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }
}

/// A request in progress on a connection; dropped when its response is ready.
struct Busy(Arc<Connection>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_progress.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A request body that fails once its deadline passes, however the bytes trickle in.
struct DeadlineBody {
    inner: Body,
    deadline: Pin<Box<Sleep>>,
    timeout: Duration,
}

impl DeadlineBody {
    fn new(inner: Body, timeout: Duration) -> Self {
        Self { inner, deadline: Box::pin(tokio::time::sleep(timeout)), timeout }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {0:?}")]
struct BodyTimedOut(Duration);

impl http_body::Body for DeadlineBody {
    type Data = axum::body::Bytes;
    type Error = axum::BoxError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        match this.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(BodyTimedOut(this.timeout).into()))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
