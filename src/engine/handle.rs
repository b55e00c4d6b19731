//! The engine's front door for platforms: a cloneable handle whose calls travel over
//! a channel to the shard that handles them and come back with the outcome. Each call
//! is written once: its method here names the shard ([`Route`]) and the work, and the
//! router and the shards run any call alike.

use futures_util::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};

use super::gate::{PairRefusal, Stranger};
use super::rules::RevokeRefusal;
use super::{Click, Clicked, Shard};
use crate::interaction::{Actor, Attempt, Interaction, Refusal, RememberedRule, UserAction};
use crate::store::{ApiRequest, ChatKey, MessageRef, PairedUser, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("no session is bound to this chat")]
    NoSession,
    #[error("the bridge is shutting down")]
    Stopped,
    /// The person may not talk to the agent (see [`crate::interaction::admission`]).
    #[error("you are not allowed to talk to this agent")]
    NotAdmitted(Stranger),
}

/// Why an action on an interaction changed nothing.
#[derive(Debug, thiserror::Error)]
pub enum ActError {
    #[error("{0}")]
    Refused(Refusal),
    #[error("this request is unknown to the bridge")]
    UnknownInteraction,
    #[error("internal error: {0}")]
    Internal(String),
    /// Nothing was kept because the store is failing (a full disk, a database that
    /// went away: [`StoreError::is_outage`]). The person is told their click was not
    /// saved; the same click once the store recovers works.
    #[error("not saved, the store is failing: {0}")]
    StoreFailing(String),
}

impl From<StoreError> for ActError {
    fn from(e: StoreError) -> Self {
        if e.is_outage() { ActError::StoreFailing(e.to_string()) } else { ActError::Internal(e.to_string()) }
    }
}

impl From<EngineError> for ActError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Store(e) => e.into(),
            other => ActError::Internal(other.to_string()),
        }
    }
}

impl EngineError {
    /// True when nothing was kept because the store is failing: a person is told
    /// their message was not saved.
    pub fn is_store_failing(&self) -> bool {
        matches!(self, EngineError::Store(e) if e.is_outage())
    }
}

#[derive(Debug, Clone)]
pub enum ActOutcome {
    /// The draft changed (a selection, one of several decisions).
    Updated(Interaction),
    /// The interaction is decided; the command is in the outbox.
    Resolved(Interaction),
}

/// What became of a pushed request.
#[derive(Debug, Clone)]
pub enum PushOutcome {
    /// Stored and being shown (boxed: an interaction is far larger than the other case).
    Created(Box<Interaction>),
    /// The approval key was taken; nothing changed. The stored request is returned so
    /// the caller can tell a retry (same body) from a conflict.
    Existing(ApiRequest),
}

/// A platform's check that what a click opens makes sense on the request as stored
/// (beyond who may act: the action allows editing, the page exists): `Err` with the
/// refusal to show and audit. Run by the engine, so the platform needs no second trip.
pub type OpeningCheck = Box<dyn FnOnce(&Interaction) -> Result<(), Refusal> + Send>;

/// Pending interactions with the messages that show them in one chat.
pub type PendingShown = Vec<(Interaction, Vec<MessageRef>)>;

/// Which shard handles a request: a chat's, a session's, or the shard of the session
/// an interaction belongs to (looked up when this replica does not know it yet).
pub(super) enum Route {
    Chat(ChatKey),
    Session(String),
    Interaction(String),
}

/// The work a request asks of its shard.
type Work = Box<dyn for<'s> FnOnce(&'s mut Shard) -> BoxFuture<'s, ()> + Send>;

/// A platform's call on its way to the engine: where it goes and what the shard does
/// there. Each call is written once, in its [`EngineHandle`] method.
pub struct EngineRequest {
    pub(super) route: Route,
    pub(super) work: Work,
}

impl std::fmt::Debug for EngineRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let route = match &self.route {
            Route::Chat(chat) => format!("chat {}:{}", chat.platform, chat.chat_id),
            Route::Session(session) => format!("session {session}"),
            Route::Interaction(id) => format!("interaction {id}"),
        };
        f.debug_struct("EngineRequest").field("route", &route).finish_non_exhaustive()
    }
}

/// Cheap to clone; every platform holds one.
#[derive(Debug, Clone)]
pub struct EngineHandle {
    tx: mpsc::Sender<EngineRequest>,
}

impl EngineHandle {
    /// A handle and the receiver to give to [`super::Engine::start`].
    pub fn channel() -> (Self, mpsc::Receiver<EngineRequest>) {
        let (tx, rx) = mpsc::channel(256);
        (Self { tx }, rx)
    }

    /// Runs `work` on the shard `route` names and returns what it answered; `None`
    /// when the engine has stopped.
    async fn call<T, F>(&self, route: Route, work: F) -> Option<T>
    where
        T: Send + 'static,
        F: for<'s> FnOnce(&'s mut Shard) -> BoxFuture<'s, T> + Send + 'static,
    {
        let (done, answer) = oneshot::channel();
        let work: Work = Box::new(move |shard| {
            Box::pin(async move {
                let _ = done.send(work(shard).await);
            })
        });
        self.tx.send(EngineRequest { route, work }).await.ok()?;
        answer.await.ok()
    }

    /// A chat message for the agent; returns the session it went to.
    pub async fn user_message(&self, chat: ChatKey, actor: Actor, text: String) -> Result<String, EngineError> {
        self.call(Route::Chat(chat.clone()), move |shard| Box::pin(async move { shard.user_message(&chat, &actor, &text).await }))
            .await
            .unwrap_or(Err(EngineError::Stopped))
    }

    /// Whether `actor` may talk in `chat` (a message, or a chat command such as `/new`):
    /// `Err(EngineError::NotAdmitted)` says why not, with a pairing code when pairing
    /// is on, and whether to stay silent ([`Stranger::silent`]: already answered in
    /// this chat within the refusal window). Every refusal is counted and audited, once
    /// per window. `locale` is the code of the language the platform answers them in.
    /// [`EngineHandle::user_message`] checks again itself.
    pub async fn admit(&self, chat: ChatKey, actor: Actor, attempted: &'static str, text: &str, locale: &'static str) -> Result<(), EngineError> {
        let text = text.to_owned();
        self.call(Route::Chat(chat.clone()), move |shard| Box::pin(async move { shard.gate(&chat, &actor, attempted, &text, locale).await }))
            .await
            .unwrap_or(Err(EngineError::Stopped))
    }

    /// `/pair CODE` sent in `chat`; `direct` says the chat is the sender's own direct
    /// chat with the bot. Accepted from `access.admins` only (see
    /// [`crate::interaction::admission::PairingAdmins`]); a refusal is audited.
    pub async fn pair(&self, chat: ChatKey, actor: Actor, code: &str, direct: bool) -> Result<PairedUser, PairRefusal> {
        let code = code.to_owned();
        self.call(Route::Chat(chat.clone()), move |shard| Box::pin(async move { shard.pair_in_chat(&chat, &actor, &code, direct).await }))
            .await
            .unwrap_or(Err(PairRefusal::Stopped))
    }

    /// Binds the chat to a fresh session (`/new`).
    pub async fn new_session(&self, chat: ChatKey) -> Result<String, EngineError> {
        self.call(Route::Chat(chat.clone()), move |shard| Box::pin(async move { shard.new_session(&chat).await })).await.unwrap_or(Err(EngineError::Stopped))
    }

    /// Sends `cancel` and cancels the session's pending interactions (`/cancel`).
    // The shard answers with a receiver, awaited here, outside the shard.
    #[allow(clippy::async_yields_async)]
    pub async fn cancel(&self, chat: ChatKey, actor: Actor) -> Result<(), EngineError> {
        // Queued in the chat's shard; the session's shard answers once its requests are
        // settled, without holding up the chat's.
        let settled = self.call(Route::Chat(chat.clone()), move |shard| Box::pin(async move { shard.cancel(&chat, &actor).await })).await;
        match settled {
            Some(settled) => settled.await.unwrap_or(Err(EngineError::Stopped)),
            None => Err(EngineError::Stopped),
        }
    }

    /// A person's action on an interaction.
    pub async fn act(&self, interaction_id: &str, actor: Actor, action: UserAction) -> Result<ActOutcome, ActError> {
        let id = interaction_id.to_owned();
        self.call(Route::Interaction(id.clone()), move |shard| Box::pin(async move { shard.act(&id, &actor, action).await }))
            .await
            .unwrap_or(Err(ActError::Internal("the bridge is shutting down".into())))
    }

    /// A click on request `interaction_id`, in one trip: the engine loads the request
    /// once, checks that `actor` may act on it, and asks `plan` (the platform's, run
    /// on the request as loaded) what the click does: apply an action, with the UI
    /// state to write alongside (a wizard's next step), or open something (a prompt,
    /// a page), handing the request back. A refusal (who may act, or the plan's own
    /// `Err`) is counted and audited as `attempt`, what the click tried, and changes
    /// nothing: no action, no UI state. See [`Click`].
    pub async fn click<T, F>(&self, interaction_id: &str, actor: Actor, attempt: Attempt, plan: F) -> Result<Clicked<T>, ActError>
    where
        T: Send + 'static,
        F: FnOnce(&Interaction) -> Result<Click<T>, Refusal> + Send + 'static,
    {
        let id = interaction_id.to_owned();
        self.call(Route::Interaction(id.clone()), move |shard| Box::pin(async move { shard.click(&id, &actor, attempt, plan).await }))
            .await
            .unwrap_or(Err(ActError::Internal("the bridge is shutting down".into())))
    }

    /// Whether `actor` may open what `attempt` names on a request (a form, a prompt, a
    /// page): the request as stored when they may, so the platform can fill the form
    /// or draw the page; else why not. `valid` is the platform's own check of the
    /// opening against the request (the action allows editing, the page exists). One
    /// call: the engine loads the request, checks access and `valid`, and counts and
    /// audits a refusal itself. A click that also keeps UI state or may act is an
    /// [`EngineHandle::click`].
    pub async fn open(&self, interaction_id: &str, actor: Actor, attempt: Attempt, valid: OpeningCheck) -> Result<Interaction, ActError> {
        let id = interaction_id.to_owned();
        self.call(Route::Interaction(id.clone()), move |shard| Box::pin(async move { shard.open(&id, &actor, attempt, valid).await }))
            .await
            .unwrap_or(Err(ActError::Internal("the bridge is shutting down".into())))
    }

    /// The stored interaction (e.g. to prefill an edit form).
    pub async fn interaction(&self, interaction_id: &str) -> Result<Option<Interaction>, EngineError> {
        let id = interaction_id.to_owned();
        self.call(Route::Interaction(id.clone()), move |shard| Box::pin(async move { shard.load(&id).await.map_err(EngineError::from) }))
            .await
            .unwrap_or(Err(EngineError::Stopped))
    }

    /// Stores and shows a request pushed over the HTTP API.
    pub async fn push(&self, request: ApiRequest, interaction: Interaction) -> Result<PushOutcome, EngineError> {
        self.call(Route::Session(interaction.session_id.clone()), move |shard| Box::pin(async move { shard.push(request, interaction).await }))
            .await
            .unwrap_or(Err(EngineError::Stopped))
    }

    /// Cancels one interaction; returns it as it is afterwards (`None` if unknown).
    pub async fn cancel_interaction(&self, interaction_id: &str, reason: String) -> Result<Option<Interaction>, EngineError> {
        let id = interaction_id.to_owned();
        self.call(Route::Interaction(id.clone()), move |shard| Box::pin(async move { shard.cancel_interaction(&id, &reason).await }))
            .await
            .unwrap_or(Err(EngineError::Stopped))
    }

    /// Pending interactions shown in `chat`, with the messages that show them (`/pending`).
    // The shard answers with a receiver, awaited here, outside the shard.
    #[allow(clippy::async_yields_async)]
    pub async fn pending_in_chat(&self, chat: ChatKey) -> Result<PendingShown, EngineError> {
        // Read after the chat's queued messages are out, so a request shown a moment
        // ago is listed; the shard does not wait for it.
        let listed = self.call(Route::Chat(chat.clone()), move |shard| Box::pin(async move { shard.pending_in_chat(chat) })).await;
        match listed {
            Some(listed) => listed.await.unwrap_or(Err(EngineError::Stopped)),
            None => Err(EngineError::Stopped),
        }
    }

    /// The remembered approvals that would answer a request in `chat`'s session, oldest
    /// first (`/rules`).
    pub async fn rules(&self, chat: ChatKey, actor: Actor) -> Result<Vec<RememberedRule>, EngineError> {
        self.call(Route::Chat(chat.clone()), move |shard| Box::pin(async move { shard.rules_in_chat(&chat, &actor).await }))
            .await
            .unwrap_or(Err(EngineError::Stopped))
    }

    /// Revokes rule `rule_id` on behalf of `actor` (`/rules revoke ID`): a configured
    /// approver or the person who set it; anyone else is refused (and audited).
    pub async fn revoke_rule(&self, chat: ChatKey, actor: Actor, rule_id: &str) -> Result<RememberedRule, RevokeRefusal> {
        let rule_id = rule_id.to_owned();
        self.call(Route::Chat(chat.clone()), move |shard| Box::pin(async move { shard.revoke_in_chat(&chat, &actor, &rule_id).await }))
            .await
            .unwrap_or(Err(RevokeRefusal::Engine(EngineError::Stopped)))
    }
}
