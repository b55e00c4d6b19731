//! The engine's front door for platforms: a cloneable handle whose calls travel over
//! a channel to the engine task and come back with the outcome.

use tokio::sync::{mpsc, oneshot};

use super::gate::{PairRefusal, Stranger};
use super::rules::RevokeRefusal;
use crate::interaction::{Actor, Interaction, Refusal, RefusedAttempt, RememberedRule, UserAction};
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
}

impl From<StoreError> for ActError {
    fn from(e: StoreError) -> Self {
        ActError::Internal(e.to_string())
    }
}

impl From<EngineError> for ActError {
    fn from(e: EngineError) -> Self {
        ActError::Internal(e.to_string())
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

/// Pending interactions with the messages that show them in one chat.
pub type PendingShown = Vec<(Interaction, Vec<MessageRef>)>;

#[derive(Debug)]
pub enum EngineRequest {
    UserMessage {
        chat: ChatKey,
        actor: Actor,
        text: String,
        done: oneshot::Sender<Result<String, EngineError>>,
    },
    Admit {
        chat: ChatKey,
        actor: Actor,
        attempted: &'static str,
        text: String,
        locale: &'static str,
        done: oneshot::Sender<Result<(), EngineError>>,
    },
    Pair {
        chat: ChatKey,
        actor: Actor,
        code: String,
        direct: bool,
        done: oneshot::Sender<Result<PairedUser, PairRefusal>>,
    },
    /// A refusal a platform decided before the engine; nobody waits for it.
    Refused {
        refused: Box<RefusedAttempt>,
    },
    NewSession {
        chat: ChatKey,
        done: oneshot::Sender<Result<String, EngineError>>,
    },
    Cancel {
        chat: ChatKey,
        actor: Actor,
        done: oneshot::Sender<Result<(), EngineError>>,
    },
    Act {
        interaction_id: String,
        actor: Actor,
        action: UserAction,
        done: oneshot::Sender<Result<ActOutcome, ActError>>,
    },
    Interaction {
        interaction_id: String,
        done: oneshot::Sender<Result<Option<Interaction>, EngineError>>,
    },
    Push {
        request: Box<ApiRequest>,
        interaction: Box<Interaction>,
        done: oneshot::Sender<Result<PushOutcome, EngineError>>,
    },
    CancelInteraction {
        interaction_id: String,
        reason: String,
        done: oneshot::Sender<Result<Option<Interaction>, EngineError>>,
    },
    PendingInChat {
        chat: ChatKey,
        done: oneshot::Sender<Result<PendingShown, EngineError>>,
    },
    Rules {
        chat: ChatKey,
        actor: Actor,
        done: oneshot::Sender<Result<Vec<RememberedRule>, EngineError>>,
    },
    RevokeRule {
        chat: ChatKey,
        actor: Actor,
        rule_id: String,
        done: oneshot::Sender<Result<RememberedRule, RevokeRefusal>>,
    },
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

    async fn call<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> EngineRequest) -> Option<T> {
        let (done, rx) = oneshot::channel();
        self.tx.send(make(done)).await.ok()?;
        rx.await.ok()
    }

    /// A chat message for the agent; returns the session it went to.
    pub async fn user_message(&self, chat: ChatKey, actor: Actor, text: String) -> Result<String, EngineError> {
        self.call(|done| EngineRequest::UserMessage { chat, actor, text, done }).await.unwrap_or(Err(EngineError::Stopped))
    }

    /// Whether `actor` may talk in `chat` (a message, or a chat command such as `/new`):
    /// `Err(EngineError::NotAdmitted)` says why not, with a pairing code when pairing
    /// is on, and whether to stay silent ([`Stranger::silent`]: already answered in
    /// this chat within the refusal window). Every refusal is counted and audited, once
    /// per window. `locale` is the code of the language the platform answers them in.
    /// [`EngineHandle::user_message`] checks again itself.
    pub async fn admit(&self, chat: ChatKey, actor: Actor, attempted: &'static str, text: &str, locale: &'static str) -> Result<(), EngineError> {
        let text = text.to_owned();
        self.call(|done| EngineRequest::Admit { chat, actor, attempted, text, locale, done }).await.unwrap_or(Err(EngineError::Stopped))
    }

    /// `/pair CODE` sent in `chat`; `direct` says the chat is the sender's own direct
    /// chat with the bot. Accepted from `access.admins` only (see
    /// [`crate::interaction::admission::PairingAdmins`]); a refusal is audited.
    pub async fn pair(&self, chat: ChatKey, actor: Actor, code: &str, direct: bool) -> Result<PairedUser, PairRefusal> {
        let code = code.to_owned();
        self.call(|done| EngineRequest::Pair { chat, actor, code, direct, done }).await.unwrap_or(Err(PairRefusal::Stopped))
    }

    /// Binds the chat to a fresh session (`/new`).
    pub async fn new_session(&self, chat: ChatKey) -> Result<String, EngineError> {
        self.call(|done| EngineRequest::NewSession { chat, done }).await.unwrap_or(Err(EngineError::Stopped))
    }

    /// Sends `cancel` and cancels the session's pending interactions (`/cancel`).
    pub async fn cancel(&self, chat: ChatKey, actor: Actor) -> Result<(), EngineError> {
        self.call(|done| EngineRequest::Cancel { chat, actor, done }).await.unwrap_or(Err(EngineError::Stopped))
    }

    /// A person's action on an interaction.
    pub async fn act(&self, interaction_id: &str, actor: Actor, action: UserAction) -> Result<ActOutcome, ActError> {
        let interaction_id = interaction_id.to_owned();
        self.call(|done| EngineRequest::Act { interaction_id, actor, action, done })
            .await
            .unwrap_or(Err(ActError::Internal("the bridge is shutting down".into())))
    }

    /// Hands over a refusal the platform decided itself (a stranger's click refused
    /// before a form opens): the engine counts it and audits it once, as it does the
    /// refusals it decides. Returns once the engine has it queued, without waiting for
    /// the audit write, so the click is answered at once.
    pub async fn refused(&self, refused: RefusedAttempt) {
        let who = (refused.actor.platform.clone(), refused.actor.user_id.clone(), refused.refusal.to_string());
        if self.tx.send(EngineRequest::Refused { refused: Box::new(refused) }).await.is_err() {
            tracing::warn!(platform = %who.0, user = %who.1, refusal = %who.2, "the bridge is shutting down: a refused attempt is not audited");
        }
    }

    /// The stored interaction (e.g. to prefill an edit form).
    pub async fn interaction(&self, interaction_id: &str) -> Result<Option<Interaction>, EngineError> {
        let interaction_id = interaction_id.to_owned();
        self.call(|done| EngineRequest::Interaction { interaction_id, done }).await.unwrap_or(Err(EngineError::Stopped))
    }

    /// Stores and shows a request pushed over the HTTP API.
    pub async fn push(&self, request: ApiRequest, interaction: Interaction) -> Result<PushOutcome, EngineError> {
        let (request, interaction) = (Box::new(request), Box::new(interaction));
        self.call(|done| EngineRequest::Push { request, interaction, done }).await.unwrap_or(Err(EngineError::Stopped))
    }

    /// Cancels one interaction; returns it as it is afterwards (`None` if unknown).
    pub async fn cancel_interaction(&self, interaction_id: &str, reason: String) -> Result<Option<Interaction>, EngineError> {
        let interaction_id = interaction_id.to_owned();
        self.call(|done| EngineRequest::CancelInteraction { interaction_id, reason, done }).await.unwrap_or(Err(EngineError::Stopped))
    }

    /// Pending interactions shown in `chat`, with the messages that show them (`/pending`).
    pub async fn pending_in_chat(&self, chat: ChatKey) -> Result<PendingShown, EngineError> {
        self.call(|done| EngineRequest::PendingInChat { chat, done }).await.unwrap_or(Err(EngineError::Stopped))
    }

    /// The remembered approvals that would answer a request in `chat`'s session, oldest
    /// first (`/rules`).
    pub async fn rules(&self, chat: ChatKey, actor: Actor) -> Result<Vec<RememberedRule>, EngineError> {
        self.call(|done| EngineRequest::Rules { chat, actor, done }).await.unwrap_or(Err(EngineError::Stopped))
    }

    /// Revokes rule `rule_id` on behalf of `actor` (`/rules revoke ID`): a configured
    /// approver or the person who set it; anyone else is refused (and audited).
    pub async fn revoke_rule(&self, chat: ChatKey, actor: Actor, rule_id: &str) -> Result<RememberedRule, RevokeRefusal> {
        let rule_id = rule_id.to_owned();
        self.call(|done| EngineRequest::RevokeRule { chat, actor, rule_id, done }).await.unwrap_or(Err(RevokeRefusal::Engine(EngineError::Stopped)))
    }
}
