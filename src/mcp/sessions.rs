//! What a client may do with `/mcp` sessions, enforced in front of rmcp (whose
//! session manager keys sessions by id alone and knows nothing of tokens):
//!
//! - **A session belongs to the token that opened it.** A request naming another
//!   token's session is answered 404, as an unknown session is, so it can neither
//!   list, call nor cancel there.
//! - **Sessions are bounded**: at most `mcp.max_sessions_per_token` per token and
//!   `mcp.max_sessions` in all; past either, `initialize` is refused with a message
//!   naming the setting.
//! - **Idle means no client is connected**: a session with no HTTP stream open for
//!   `mcp.session_idle_secs` is closed. The server's own messages (progress reports)
//!   do not count, so a call nobody waits for cannot keep its session alive.
//! - **A call whose client left is cancelled**: when the response stream of a
//!   `tools/call` closes before its answer and the client does not resume it within
//!   [`RESUME_GRACE`], the call is cancelled as if the client had sent
//!   `notifications/cancelled`, which cancels its request and locks every card.
//! - **One body limit** (`http.max_body_bytes`), from `Content-Length` before a byte
//!   is read and again while the body streams in.

use std::collections::{HashMap, HashSet};
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body::Frame;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::settings::McpSettings;
use crate::backend::http_api::auth::Tokens;

/// How long a client whose call stream broke has to resume it (`Last-Event-Id`)
/// before the call is cancelled.
pub const RESUME_GRACE: Duration = Duration::from_secs(2);

const SESSION_HEADER: &str = "mcp-session-id";
const LAST_EVENT_HEADER: &str = "last-event-id";

/// The limits [`Sessions`] enforces.
#[derive(Debug, Clone, Copy)]
pub struct SessionLimits {
    pub per_token: usize,
    pub total: usize,
    pub idle: Duration,
    pub max_body_bytes: usize,
}

impl SessionLimits {
    pub fn new(settings: &McpSettings, max_body_bytes: usize) -> Self {
        Self {
            per_token: settings.max_sessions_per_token,
            total: settings.max_sessions,
            idle: Duration::from_secs(settings.session_idle_secs.max(1)),
            max_body_bytes,
        }
    }
}

/// One open session.
struct Entry {
    owner: String,
    /// Response streams (calls, the standalone GET stream) the client holds open.
    open_streams: usize,
    /// When the client last sent something or a stream of it closed.
    last_seen: Instant,
    /// When the client last asked to resume a stream.
    resumed_at: Option<Instant>,
}

#[derive(Default)]
struct Book {
    sessions: HashMap<Arc<str>, Entry>,
    /// `initialize` requests in flight, per token: counted against the caps.
    opening: HashMap<String, usize>,
    /// Sessions rmcp holds that no entry names (seen by the last sweep).
    strays: HashSet<Arc<str>>,
}

impl Book {
    fn owned_by(&self, agent: &str) -> usize {
        self.sessions.values().filter(|e| e.owner == agent).count() + self.opening.get(agent).copied().unwrap_or(0)
    }

    fn total(&self) -> usize {
        self.sessions.len() + self.opening.values().sum::<usize>()
    }
}

/// The sessions of `/mcp`, their owners and their streams.
pub struct Sessions {
    manager: Arc<LocalSessionManager>,
    tokens: Tokens,
    limits: SessionLimits,
    book: Mutex<Book>,
}

/// Why a request is refused before rmcp sees it.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    Unauthorized,
    TooLarge(usize),
    UnknownSession,
    TokenFull { agent: String, cap: usize },
    BridgeFull { cap: usize },
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        let (status, code, message) = match self {
            Refused::Unauthorized => (StatusCode::UNAUTHORIZED, "unauthorized", "a valid bearer token (http.api_tokens) is required".to_owned()),
            Refused::TooLarge(limit) => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", crate::listener::body_over(limit)),
            Refused::UnknownSession => (
                StatusCode::NOT_FOUND,
                "unknown_session",
                "no such MCP session for this token (it ended, or another token opened it); initialize a new one".to_owned(),
            ),
            Refused::TokenFull { agent, cap } => (
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_sessions",
                format!(
                    "`{agent}` already has {cap} open MCP sessions, the most mcp.max_sessions_per_token allows; end one (DELETE /mcp) or let an idle one expire (mcp.session_idle_secs)"
                ),
            ),
            Refused::BridgeFull { cap } => (
                StatusCode::SERVICE_UNAVAILABLE,
                "too_many_sessions",
                format!("the bridge has {cap} open MCP sessions, the most mcp.max_sessions allows; try again once idle ones expire (mcp.session_idle_secs)"),
            ),
        };
        (status, axum::Json(json!({"error": {"code": code, "message": message}}))).into_response()
    }
}

impl Sessions {
    /// Takes over idle expiry from `manager` (whose own timer counts the server's
    /// progress messages as activity) and sweeps every quarter of the idle time.
    pub fn start(mut manager: LocalSessionManager, tokens: Tokens, limits: SessionLimits) -> (Arc<Self>, Arc<LocalSessionManager>) {
        manager.session_config.keep_alive = None;
        let manager = Arc::new(manager);
        let sessions = Arc::new(Self { manager: manager.clone(), tokens, limits, book: Mutex::new(Book::default()) });
        tokio::spawn(sweep_while_alive(Arc::downgrade(&sessions)));
        (sessions, manager)
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The token's agent name, or the refusal.
    fn agent(&self, headers: &HeaderMap) -> Result<String, Refused> {
        self.tokens.agent(headers).ok_or(Refused::Unauthorized)
    }

    /// Whether `agent` may use session `id` (and notes that its client is here).
    fn enter(&self, id: &str, agent: &str) -> Result<(), Refused> {
        let mut book = self.book();
        match book.sessions.get_mut(id) {
            Some(entry) if entry.owner == agent => {
                entry.last_seen = Instant::now();
                Ok(())
            }
            _ => Err(Refused::UnknownSession),
        }
    }

    /// Holds a place for a session `agent` is opening, within both caps.
    fn reserve(self: &Arc<Self>, agent: &str) -> Result<Opening, Refused> {
        let mut book = self.book();
        if book.total() >= self.limits.total {
            return Err(Refused::BridgeFull { cap: self.limits.total });
        }
        if book.owned_by(agent) >= self.limits.per_token {
            return Err(Refused::TokenFull { agent: agent.to_owned(), cap: self.limits.per_token });
        }
        *book.opening.entry(agent.to_owned()).or_default() += 1;
        Ok(Opening { sessions: self.clone(), agent: agent.to_owned() })
    }

    fn resumed(&self, id: &str) {
        if let Some(entry) = self.book().sessions.get_mut(id) {
            entry.resumed_at = Some(Instant::now());
        }
    }

    fn forget(&self, id: &str) {
        self.book().sessions.remove(id);
    }

    /// Closes sessions idle for the limit, drops entries rmcp no longer holds, and
    /// closes sessions rmcp holds that no entry names (twice seen: an `initialize`
    /// may be between rmcp and [`guard`]). Memory freed is handed back to the OS.
    async fn sweep(&self) {
        let live: HashSet<Arc<str>> = self.manager.sessions.read().await.keys().cloned().collect();
        let mut to_close = Vec::new();
        {
            let mut book = self.book();
            let idle = self.limits.idle;
            book.sessions.retain(|id, entry| {
                let expired = entry.open_streams == 0 && entry.last_seen.elapsed() >= idle;
                if expired {
                    to_close.push(id.clone());
                }
                live.contains(id) && !expired
            });
            let strays: HashSet<Arc<str>> = live.iter().filter(|id| !book.sessions.contains_key(*id)).cloned().collect();
            to_close.extend(strays.intersection(&book.strays).cloned());
            book.strays = strays;
        }
        for id in &to_close {
            tracing::info!(session = %id, "closing an idle MCP session");
            if let Err(e) = self.manager.close_session(id).await {
                tracing::warn!(session = %id, error = %e, "cannot close an idle MCP session");
            }
        }
        if !to_close.is_empty() {
            release_freed_memory();
        }
    }

    /// Cancels call `call` in session `id`, unless the client resumed a stream of it
    /// since `broke`.
    async fn cancel_abandoned(&self, id: Arc<str>, call: Value, broke: Instant) {
        tokio::time::sleep(RESUME_GRACE).await;
        let resumed = self.book().sessions.get(&id).and_then(|e| e.resumed_at).is_some_and(|at| at >= broke);
        if resumed {
            return;
        }
        let notification = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": call, "reason": "the client disconnected"}});
        let Ok(message) = serde_json::from_value::<ClientJsonRpcMessage>(notification) else { return };
        tracing::info!(session = %id, call = %call, "the MCP client left during a call; cancelling it");
        if let Err(e) = self.manager.accept_message(&id, message).await {
            tracing::debug!(session = %id, error = %e, "the abandoned call's session is gone");
        }
    }

    /// A stream of session `id` opened: it counts as the client being here.
    fn stream_opened(&self, id: &str) {
        if let Some(entry) = self.book().sessions.get_mut(id) {
            entry.open_streams += 1;
        }
    }

    /// A stream of session `id` closed, `finished` or not; an unfinished call's is
    /// cancelled after the grace.
    fn stream_closed(self: &Arc<Self>, id: &Arc<str>, call: Option<Value>, finished: bool) {
        if let Some(entry) = self.book().sessions.get_mut(id) {
            entry.open_streams = entry.open_streams.saturating_sub(1);
            entry.last_seen = Instant::now();
        }
        if let (false, Some(call)) = (finished, call) {
            let sessions = self.clone();
            let id = id.clone();
            tokio::spawn(async move { sessions.cancel_abandoned(id, call, Instant::now()).await });
        }
    }
}

/// A place held for a session being opened; given up when dropped.
struct Opening {
    sessions: Arc<Sessions>,
    agent: String,
}

impl Opening {
    /// The session opened as `id`: it is `agent`'s from now on.
    fn opened(self, id: &str) {
        let entry = Entry { owner: self.agent.clone(), open_streams: 0, last_seen: Instant::now(), resumed_at: None };
        self.sessions.book().sessions.insert(Arc::from(id), entry);
    }
}

impl Drop for Opening {
    fn drop(&mut self) {
        let mut book = self.sessions.book();
        if let Some(n) = book.opening.get_mut(&self.agent) {
            *n -= 1;
            if *n == 0 {
                book.opening.remove(&self.agent);
            }
        }
    }
}

async fn sweep_while_alive(sessions: Weak<Sessions>) {
    let every = match sessions.upgrade() {
        Some(s) => (s.limits.idle / 4).clamp(Duration::from_millis(250), Duration::from_secs(30)),
        None => return,
    };
    loop {
        tokio::time::sleep(every).await;
        let Some(sessions) = sessions.upgrade() else { return };
        sessions.sweep().await;
    }
}

/// glibc keeps freed memory in its arenas; without this, RSS after thousands of
/// sessions expire stays at its peak.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory to the OS; it touches no live allocation.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The middleware in front of rmcp: token, body limit, session owner and caps; the
/// response stream watched for a client that leaves.
pub async fn guard(State(sessions): State<Arc<Sessions>>, request: Request, next: Next) -> Response {
    match guarded(&sessions, request, next).await {
        Ok(response) | Err(response) => response,
    }
}

async fn guarded(sessions: &Arc<Sessions>, request: Request, next: Next) -> Result<Response, Response> {
    let refuse = |r: Refused| r.into_response();
    let agent = sessions.agent(request.headers()).map_err(refuse)?;
    let limit = sessions.limits.max_body_bytes;
    let declared = request.headers().get(axum::http::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(refuse(Refused::TooLarge(limit)));
    }
    let session: Option<Arc<str>> = request.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(Arc::from);
    if let Some(id) = &session {
        sessions.enter(id, &agent).map_err(refuse)?;
        if request.headers().contains_key(LAST_EVENT_HEADER) {
            sessions.resumed(id);
        }
    }
    let method = request.method().clone();
    let (parts, body) = request.into_parts();
    let (body, rpc) = if method == Method::POST {
        let bytes = axum::body::to_bytes(body, limit).await.map_err(|_| refuse(Refused::TooLarge(limit)))?;
        let rpc = Rpc::read(&bytes);
        (Body::from(bytes), rpc)
    } else {
        (body, Rpc::default())
    };
    // Only an `initialize` opens a session; a stateless call (protocol 2026-07-28)
    // holds no place while it waits.
    let opening = match (&session, rpc.method.as_deref()) {
        (None, Some("initialize")) => Some(sessions.reserve(&agent).map_err(refuse)?),
        _ => None,
    };
    let call = rpc.tool_call();
    let response = next.run(Request::from_parts(parts, body)).await;
    if let (Some(opening), Some(id)) = (opening, response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok())) {
        opening.opened(id);
    }
    let Some(id) = session else { return Ok(response) };
    if method == Method::DELETE && response.status().is_success() {
        sessions.forget(&id);
        return Ok(response);
    }
    sessions.stream_opened(&id);
    let (parts, body) = response.into_parts();
    let watched = Watched { inner: body, finished: false, on_close: Some((sessions.clone(), id, call)) };
    Ok(Response::from_parts(parts, Body::new(watched)))
}

/// What the guard reads of a JSON-RPC message (rmcp reads the rest).
#[derive(Default, serde::Deserialize)]
struct Rpc {
    method: Option<String>,
    id: Option<Value>,
}

impl Rpc {
    fn read(body: &Bytes) -> Self {
        serde_json::from_slice(body).unwrap_or_default()
    }

    /// The id of a `tools/call` request, the one kind of call worth cancelling.
    fn tool_call(self) -> Option<Value> {
        (self.method.as_deref() == Some("tools/call")).then_some(self.id).flatten()
    }
}

/// A response body that tells [`Sessions`] when it closes, and whether it got to its
/// end first (a call's stream ends after its answer).
struct Watched {
    inner: Body,
    finished: bool,
    on_close: Option<(Arc<Sessions>, Arc<str>, Option<Value>)>,
}

impl http_body::Body for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            self.finished = true;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let Some((sessions, id, call)) = self.on_close.take() {
            let finished = self.finished || http_body::Body::is_end_stream(&self.inner);
            sessions.stream_closed(&id, call, finished);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_tool_calls_are_watched_for_cancellation() {
        let call = Bytes::from_static(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}"#);
        assert_eq!(Rpc::read(&call).tool_call(), Some(json!(7)));
        let list = Bytes::from_static(br#"{"jsonrpc":"2.0","id":"a","method":"tools/list"}"#);
        assert_eq!(Rpc::read(&list).tool_call(), None);
        assert_eq!(Rpc::read(&Bytes::from_static(b"not json")).tool_call(), None);
    }
}
