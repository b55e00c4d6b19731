//! The inbound HTTP API (PROTOCOL.md §8): agents that are not chatting through the
//! bridge (a cron job, a CI pipeline, a LangGraph node, any script) push a request to
//! chats, channels or people and get the answer back by `GET` (long-poll) or by a
//! signed callback.
//!
//! It is a [`Connector`] like the stream protocol: its sessions are `api:<session>`,
//! it takes no outbox commands (the agent reads the reply from the stored
//! interaction), and it learns of every settle so long-polls return at once and
//! callbacks go out. Requests enter through the [`EngineHandle`], so they get the same
//! core, store and guarantees as streamed ones.
//!
//! - [`body`]: the request body and its validation.
//! - [`view`]: the state an agent sees.
//! - [`routes`]: the handlers. [`auth`]: named tokens. [`error`]: error bodies.
//! - [`callbacks`]: durable, signed, retried callbacks from the store's outbox, each
//!   isolated from the others; [`callback_guard`]: where they may go.

pub mod auth;
pub mod body;
pub mod callback_guard;
pub mod callbacks;
pub mod error;
pub mod page;
pub mod routes;
pub mod view;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::get;
use futures_util::future::BoxFuture;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use utoipa::OpenApi;

use self::auth::Tokens;
use self::error::ApiError;
use super::Connector;
use crate::engine::EngineHandle;
use crate::interaction::{Interaction, TimeoutDefaults};
use crate::listener::HttpSettings;
use crate::store::{ApiRequest, Store};

/// Sessions of pushed requests start with this.
pub const SESSION_PREFIX: &str = "api:";

pub struct HttpApi {
    store: Store,
    engine: EngineHandle,
    tokens: Tokens,
    defaults: TimeoutDefaults,
    /// Platforms a target may name.
    platforms: body::Platforms,
    /// `http.callback_allow_private`: callback URLs may point inside the network.
    callback_allow_private: bool,
    /// `http.max_body_bytes`.
    max_body_bytes: usize,
    /// Notified whenever one of its interactions settles (long-polls wait on it).
    changed: Notify,
    wake_callbacks: Arc<Notify>,
    deliverer: Mutex<Option<JoinHandle<()>>>,
}

impl HttpApi {
    /// Starts the callback deliverer. `platforms` are those a request may name.
    pub fn start(settings: &HttpSettings, defaults: TimeoutDefaults, platforms: body::Platforms, store: Store, engine: EngineHandle) -> Arc<Self> {
        let tokens = Tokens::new(settings.tokens());
        let wake_callbacks = Arc::new(Notify::new());
        let deliverer = callbacks::Deliverer {
            store: store.clone(),
            tokens: tokens.clone(),
            http: callbacks::client(settings.callback_allow_private),
            wake: wake_callbacks.clone(),
            timeout: Duration::from_secs(settings.callback_timeout_secs.max(1)),
            max_backoff: Duration::from_secs(settings.callback_max_backoff_secs.max(1)),
            allow_private: settings.callback_allow_private,
            concurrency: settings.callback_concurrency,
            networks: platforms.known.clone(),
        };
        let task = (!tokens.is_empty()).then(|| tokio::spawn(deliverer.run()));
        let callback_allow_private = settings.callback_allow_private;
        Arc::new(Self {
            store,
            engine,
            tokens,
            defaults,
            platforms,
            callback_allow_private,
            max_body_bytes: settings.max_body_bytes,
            changed: Notify::new(),
            wake_callbacks,
            deliverer: Mutex::new(task),
        })
    }

    /// Whether `/v1` is served: at least one token is configured.
    pub fn enabled(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// The `/v1` routes (empty when no token is configured).
    pub fn router(self: &Arc<Self>) -> Router {
        if !self.enabled() {
            return Router::new();
        }
        Router::new()
            .route("/v1/requests", get(routes::list).post(routes::create))
            .route("/v1/requests/{approval_key}", get(routes::get_one).delete(routes::cancel))
            // Before any of the routes above reads a body byte.
            .route_layer(axum::middleware::from_fn_with_state(self.clone(), routes::guard))
            .route("/v1/openapi.json", get(openapi_json))
            .with_state(self.clone())
    }

    fn authenticate(&self, headers: &HeaderMap) -> Result<String, ApiError> {
        self.tokens.agent(headers).ok_or_else(ApiError::unauthorized)
    }

    /// The caller's own request under `key`; another agent's is reported as unknown.
    async fn own_request(&self, agent: &str, key: &str) -> Result<ApiRequest, ApiError> {
        match self.store.api_request(agent, key).await? {
            Some(request) if request.agent == agent => Ok(request),
            _ => Err(ApiError::not_found(key)),
        }
    }

    async fn state_of(&self, request: &ApiRequest) -> Result<view::RequestState, ApiError> {
        let interaction = self.store.interaction(&request.interaction_id).await?.ok_or_else(|| ApiError::not_found(&request.approval_key))?;
        self.view(request, &interaction).await
    }

    /// The state of `request` with `interaction` as given, and where it could not be
    /// shown as the store has it now.
    async fn view(&self, request: &ApiRequest, interaction: &Interaction) -> Result<view::RequestState, ApiError> {
        let refused = self.store.refused_shows(&request.interaction_id).await?;
        Ok(view::state(request, interaction, view::not_shown(&self.platforms.known, refused)))
    }
}

impl Connector for HttpApi {
    fn name(&self) -> &'static str {
        "http_api"
    }

    fn serves(&self, session_id: &str) -> bool {
        session_id.starts_with(SESSION_PREFIX)
    }

    fn takes_commands(&self) -> bool {
        false
    }

    fn deliver(&self, _session_id: &str) {}

    fn settled(&self, _interaction: &Interaction) {
        self.changed.notify_waiters();
        self.wake_callbacks.notify_one();
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        if let Some(task) = self.deliverer.lock().unwrap_or_else(|p| p.into_inner()).take() {
            task.abort();
        }
        Box::pin(async {})
    }
}

/// The OpenAPI 3.1 document, generated from the handlers and their types.
#[derive(OpenApi)]
#[openapi(
    info(title = "hitl-bridge inbound API", description = "Push approval requests and questions to people in chat; get the human's answer back (PROTOCOL.md §8)."),
    paths(routes::create, routes::get_one, routes::cancel, routes::list),
    modifiers(&BearerAuth)
)]
pub struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme("bearer", SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()));
    }
}

/// Where the document's description says requests go; the platforms' names follow it.
const CHATS: &str = "people in chat";

/// The document, with `Target` as each platform's descriptor publishes its target
/// object and the description naming the platforms: a platform adds its own without
/// this module naming it.
async fn openapi_json(State(api): State<Arc<HttpApi>>) -> axum::response::Response {
    use axum::response::IntoResponse;
    let mut doc = serde_json::to_value(ApiDoc::openapi()).unwrap_or_default();
    doc["components"]["schemas"]["Target"] = api.platforms.known.target_schema();
    if let Some(description) = doc["info"]["description"].as_str() {
        doc["info"]["description"] = description.replace(CHATS, &format!("{CHATS} ({})", api.platforms.known.listed())).into();
    }
    // How a group is written, in the form of every platform with groups.
    let groups = format!("Groups whose members may answer, each {}.", api.platforms.known.group_forms());
    for schema in ["PushBody", "ApiPolicy"] {
        let property = &mut doc["components"]["schemas"][schema]["properties"]["approver_roles"];
        if property.is_object() {
            property["description"] = groups.clone().into();
        }
    }
    ([(axum::http::header::CONTENT_TYPE, "application/json")], serde_json::to_string_pretty(&doc).unwrap_or_default()).into_response()
}
