//! The web inbox (`/inbox` on the HTTP listener, `web.enabled`): every request waiting
//! on a person on one page, read in full and decided from the browser under the same
//! rules as a click in chat (docs/web.md).
//!
//! People sign in with a one-time link a chat platform or the operator hands them
//! ([`sign_in_link`]); the session is a cookie whose random value the store keeps
//! hashed ([`session`]). Pages are rendered on the server ([`maud`]), work without
//! JavaScript, and every response carries a strict Content-Security-Policy
//! ([`headers`]). Decisions go through the engine's one entry for them ([`decide`]);
//! who may see and answer what is the core's rule ([`visibility`]), asked with the
//! person's groups as their platform gives them at that moment ([`Web::acting`]).
//!
//! One job per file: [`links`] (sign-in and request links), [`session`] (cookie,
//! CSRF), [`headers`], [`assets`] (embedded CSS and JS), [`layout`], [`json_view`]
//! (arguments as coloured JSON, text blocks, diffs), [`sign_in`], [`inbox`],
//! [`request_page`], [`audit_page`], [`forms`] (reading posted forms), [`decide`],
//! [`events`] (Server-Sent Events).

mod assets;
mod audit_page;
mod decide;
mod events;
mod forms;
mod headers;
mod inbox;
mod json_view;
mod layout;
mod links;
mod request_page;
mod session;
pub mod settings;
mod sign_in;
mod visibility;

use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};
use tokio::sync::watch;

use crate::engine::EngineHandle;
use crate::interaction::chat::Networks;
use crate::interaction::{AccessPolicy, Actor};
use crate::platform::descriptor::Membership;
use crate::store::Store;

pub use audit_page::OUTCOMES as AUDIT_OUTCOMES;
pub use links::{ChatLinks, SIGN_IN_LINK_SECS, request_link, sign_in_link};
pub use settings::WebSettings;

/// What every page of the inbox works with.
pub struct Web {
    store: Store,
    engine: EngineHandle,
    /// The configured approvers and four eyes: the same policy the platforms apply.
    policy: AccessPolicy,
    /// `access.users` and `access.admins` as `(platform, user id)`: who is shown a
    /// request open to anyone in its chat (the web cannot tell who is in that chat).
    open_viewers: Vec<(String, String)>,
    settings: WebSettings,
    /// The path the inbox is served under behind `web.public_url` (`""` at the root).
    prefix: String,
    /// Bumped whenever a request is stored pending or settled ([`events`]).
    changes: watch::Receiver<u64>,
    /// Each platform's groups, asked at the moment a person reads or decides
    /// ([`Web::acting`]).
    memberships: Vec<(&'static str, Arc<dyn Membership>)>,
    /// Every platform's address grammar, handed down by the assembly (the inbox sits
    /// above the platforms but never reads their registry): how chats and people are
    /// written.
    networks: Networks,
}

impl Web {
    /// The inbox for a running bridge. `open_viewers` are `access.users` and
    /// `access.admins` (`platform:user_id`); `memberships`, each started platform's
    /// groups by its name; `networks`, every platform's address grammar.
    pub fn new(
        store: Store,
        engine: EngineHandle,
        policy: AccessPolicy,
        open_viewers: &[String],
        settings: WebSettings,
        memberships: Vec<(&'static str, Arc<dyn Membership>)>,
        networks: Networks,
    ) -> Arc<Web> {
        let open_viewers = open_viewers.iter().filter_map(|e| networks.parse_user(e)).collect();
        let prefix = url::Url::parse(&settings.public_url).map(|u| u.path().trim_end_matches('/').to_owned()).unwrap_or_default();
        let (changes_tx, changes) = watch::channel(0);
        let web = Arc::new(Web { store, engine, policy, open_viewers, settings, prefix, changes, memberships, networks });
        events::watch_changes(Arc::downgrade(&web), changes_tx);
        web
    }

    /// An in-page path (`/inbox/audit`) as browsers reach it behind the public URL.
    fn path(&self, path: &str) -> String {
        format!("{}{path}", self.prefix)
    }

    /// `person` as the engine must see them now: with the groups their platform says
    /// they are in at this moment, among the configured ones and `named` (the approver
    /// groups of the requests at hand). The session keeps none: a person taken out of
    /// a group stops counting here when they stop counting in chat.
    async fn acting(&self, person: &Actor, named: &[String]) -> Actor {
        let mut actor = person.clone();
        actor.groups = match self.memberships.iter().find(|(platform, _)| *platform == person.platform) {
            Some((_, membership)) => membership.groups_of(person, named).await,
            None => Vec::new(),
        };
        actor
    }

    fn is_open_viewer(&self, actor: &Actor) -> bool {
        self.open_viewers.iter().any(|(p, id)| *p == actor.platform && *id == actor.user_id)
    }
}

/// The inbox's routes, to merge into the HTTP listener's.
pub fn router(web: Arc<Web>) -> Router {
    Router::new()
        .route("/inbox", get(inbox::page))
        .route("/inbox/chats", get(inbox::chats))
        .route("/inbox/sign-in/{token}", get(sign_in::page))
        .route("/inbox/sign-in", post(sign_in::spend))
        .route("/inbox/sign-out", post(sign_in::sign_out))
        .route("/inbox/requests/{id}", get(request_page::page))
        .route("/inbox/requests/{id}/decide", post(decide::decide))
        .route("/inbox/requests/{id}/answer", post(decide::answer))
        .route("/inbox/audit", get(audit_page::page))
        .route("/inbox/events", get(events::stream))
        .route("/inbox/static/{file}", get(assets::serve))
        .layer(axum::middleware::map_response(headers::secure))
        .with_state(web)
}
