//! The engine wires connectors, the core, the store and the platforms together. It is
//! deliberately thin: it loads, asks the core, persists, delivers and re-renders.
//!
//! It runs as a set of shards ([`shards`]): each session belongs to one shard task,
//! which handles that session's inputs (a person's action, a backend update, a
//! deadline) one at a time and in order, so two inputs never race on the same
//! interaction inside a replica, while other sessions' inputs run on other shards in
//! parallel. A router task only forwards inputs to shards, and a housekeeping task
//! runs the store-wide timers (rescan, show retry) by sending each shard its share.
//! No platform call is made on the decision path: replies and message edits go to
//! the chat lanes ([`lanes`]) once the decision is durable. Across replicas the
//! store's conditional settle decides who was first.

mod config;
mod connector;
mod gate;
mod handle;
mod lanes;
mod outside;
mod platform;
mod policies;
mod refusals;
pub mod routing;
mod rules;
mod shards;
#[cfg(test)]
mod tests;

pub use crate::clock::now_ms;
pub use config::{EngineConfig, OnExpiry};
pub use connector::{Connector, Connectors};
pub use gate::{PairRefusal, Stranger, paired_notice};
pub use handle::{ActError, ActOutcome, EngineError, EngineHandle, EngineRequest, PendingShown, PushOutcome};
pub use platform::{Platform, PlatformError};
pub use rules::RevokeRefusal;

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;

use crate::interaction::updates::{self as history, BackendInput, HistoryResolution, SessionUpdate, ToolGroupStatus};
use crate::interaction::admission::PairingAdmins;
use crate::interaction::{AccessPolicy, Actor, Allowlist, Applied, Attempt, Delivery, Interaction, Origin, PolicyRule, RememberedRule, Request, UserAction};
use self::lanes::{Job, Lanes};
use self::shards::{Input, Routes, Shards, Watched};
use crate::protocol::{Command, Reply, UserInfo};
use crate::store::{ApiRequest, AuditEntry, ChatKey, PendingShow, ShowClaim, Store};

/// How many times one click is applied again after a concurrent change of the same
/// request's draft by another replica ([`Shard::act`]), waiting a little longer each
/// time: about a second in all before the person is asked to try again.
const MAX_DRAFT_RACES: usize = 16;
const DRAFT_RACE_BACKOFF: Duration = Duration::from_millis(8);

/// Who settled an interaction, as far as the store's condition goes.
enum Decided<'a> {
    /// A person's click, from the copy it was applied to; `rule` is what an approval
    /// "for this session" / "always" remembers.
    ByPerson { rule: Option<&'a RememberedRule> },
    /// A deadline, a fallback, a rule, the backend, a cancel: first wins on the status.
    Otherwise,
}

/// How often deadlines are checked.
const TICK: Duration = Duration::from_millis(500);

/// A settled interaction whose reply the backend has not proven it read yet is
/// re-rendered as "saved, not yet delivered" after this long. Usually the proof comes
/// first and the message is edited once, straight to its final state.
const DELIVERY_GRACE_MS: i64 = 1000;

/// How often requests that still have to be shown (a failed send, a restart) are
/// claimed and shown again.
const SHOW_RETRY: Duration = Duration::from_secs(2);

/// How long this replica's claim on a request it is showing lasts without renewal
/// (renewed every [`SHOW_RETRY`]; given up at shutdown). Short, because a replica
/// killed between sending a request and recording its message holds the claim until
/// it lapses: only then is the request shown again.
const SHOW_CLAIM_MS: i64 = 8_000;

/// How long a stopping engine waits for the chat lanes to finish their jobs.
const LANE_DRAIN: Duration = Duration::from_secs(5);

/// How often the store is re-read for work other replicas left: requests they showed
/// (whose deadlines this replica must also watch) and sessions whose lease lapsed.
const RESCAN: Duration = Duration::from_secs(10);

/// Shards per core. A shard waits on the store most of the time (a decision is a
/// durable commit), so several per core keep the cores busy and let concurrent
/// decisions share a commit, while a session stuck on a slow call holds back only the
/// few sessions that share its shard.
const SHARDS_PER_CORE: usize = 16;

/// What every shard shares: configuration, the store, the connectors, the chat lanes.
struct Shared {
    store: Store,
    connectors: Connectors,
    lanes: Lanes,
    policy: AccessPolicy,
    /// Who may talk to the agent ([`gate`]).
    allowlist: Allowlist,
    /// Who may approve pairing codes with `/pair CODE`, and where.
    pairing_admins: PairingAdmins,
    /// A stranger is answered once per this long per chat ([`refusals`]).
    refusal_window_ms: i64,
    pairing_ttl_ms: i64,
    /// Where chat turns' requests are also shown (`routing.target`).
    extra_chats: Vec<ChatKey>,
    grace_ms: i64,
    on_expiry: OnExpiry,
    /// This replica's name on the `pending_shows` rows it is sending.
    show_owner: String,
    /// The session of each pending interaction, to route clicks.
    routes: Routes,
    /// Where settled requests and refusals are counted ([`Engine::with_metrics`]).
    metrics: crate::metrics::Metrics,
    /// The `[[policies]]` entries, in file order ([`policies`]).
    policies: Vec<PolicyRule>,
    /// The chat connector's kind as policies and remembered rules name it (`stream`,
    /// `kimi`, …); pushed requests are `http`.
    backend_kind: String,
}

pub struct Engine {
    shared: Shared,
    shards: Shards,
    /// Per shard: its receiver and the timers it starts with; [`Engine::run`]
    /// starts the shard tasks.
    workers: Vec<(mpsc::Receiver<Input>, Vec<Watched>)>,
    requests: mpsc::Receiver<EngineRequest>,
    backend: mpsc::Receiver<BackendInput>,
}

/// One shard: the sessions that hash to it, with their deadlines and the decisions
/// waiting for proof of delivery. Only this shard's task touches them.
struct Shard {
    shared: Arc<Shared>,
    shards: Shards,
    /// Pending interaction id → deadline, loaded at start and kept in step.
    deadlines: HashMap<String, i64>,
    /// Pending interaction id → when its policy's next escalation step is due.
    escalations: HashMap<String, i64>,
    /// Settled interactions whose reply is queued and not yet proven delivered: when
    /// to show them as "not yet delivered" unless the proof arrives first.
    undelivered: HashMap<String, (i64, Interaction)>,
}

/// A shard reads the shared configuration and handles as its own fields.
impl Deref for Shard {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.shared
    }
}

impl Engine {
    /// Builds the engine and reconnects every session that still has work (pending
    /// interactions or undelivered commands), so a restart picks up where it stopped.
    /// `backend` carries the connectors' updates.
    pub async fn start(
        config: &EngineConfig,
        store: Store,
        platforms: Vec<Arc<dyn Platform>>,
        connectors: Connectors,
        backend: mpsc::Receiver<BackendInput>,
        requests: mpsc::Receiver<EngineRequest>,
    ) -> Result<Self, EngineError> {
        let pending = store.pending_interactions().await?;
        for session in store.sessions_with_work().await? {
            connectors.deliver(&session);
        }
        let shared = Shared {
            allowlist: config.allowlist.clone(),
            pairing_admins: config.pairing_admins.clone(),
            refusal_window_ms: config.refusal_window_ms,
            pairing_ttl_ms: config.pairing_ttl_ms,
            connectors,
            lanes: Lanes::new(store.clone(), platforms),
            store,
            extra_chats: routing::extra_chats(&config.routing, &config.policy),
            policy: config.policy.clone(),
            grace_ms: config.grace_ms,
            on_expiry: config.on_expiry,
            // The replica's stable id: what a predecessor killed mid-show claimed is
            // this replica's own, released below instead of waiting for it to lapse.
            show_owner: config.replica_id.clone(),
            routes: Routes::default(),
            metrics: crate::metrics::Metrics::default(),
            policies: config.policies.clone(),
            backend_kind: config.backend_kind.clone(),
        };
        // Nothing of this replica is being shown yet: claims under its id were left by
        // a previous process killed mid-show, and are free now.
        if let Err(e) = shared.store.release_show_claims(&shared.show_owner).await {
            tracing::warn!(error = %e, "cannot release this replica's earlier show claims; they lapse in {} s", SHOW_CLAIM_MS / 1000);
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (shards, receivers) = Shards::new(cores * SHARDS_PER_CORE);
        let mut workers: Vec<(mpsc::Receiver<Input>, Vec<Watched>)> = receivers.into_iter().map(|rx| (rx, Vec::new())).collect();
        for interaction in pending {
            shared.routes.insert(&interaction.id, &interaction.session_id);
            workers[shards.of_session(&interaction.session_id)].1.push(Watched::of(&interaction));
        }
        Ok(Self { shared, shards, workers, requests, backend })
    }

    /// Counts into `metrics` (the bridge's registry) instead of a registry of its own.
    pub fn with_metrics(mut self, metrics: crate::metrics::Metrics) -> Self {
        self.shared.metrics = metrics;
        self
    }

    /// Runs until `shutdown` completes or every handle is dropped.
    pub async fn run(self, shutdown: impl std::future::Future<Output = ()>) {
        tokio::pin!(shutdown);
        let Engine { shared, shards, workers, mut requests, mut backend } = self;
        let shared = Arc::new(shared);
        // In the background: with thousands pending, re-rendering them all would
        // otherwise hold back the first click after a restart by seconds.
        let rerender = tokio::spawn({
            let shared = shared.clone();
            async move { shared.show_pending().await }
        });
        let (stop, stopping) = watch::channel(false);
        let mut tasks = JoinSet::new();
        for (inputs, watched) in workers {
            let mut shard = Shard {
                shared: shared.clone(),
                shards: shards.clone(),
                deadlines: HashMap::new(),
                escalations: HashMap::new(),
                undelivered: HashMap::new(),
            };
            shard.watch(watched);
            tasks.spawn(shard.run(inputs, stopping.clone()));
        }
        tasks.spawn(housekeeping(shared.clone(), shards.clone(), stopping));
        loop {
            tokio::select! {
                // A shard or housekeeping only ends early by panicking: that is the
                // engine panicking, reported as such (the process exits non-zero).
                Some(ended) = tasks.join_next() => match ended {
                    Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                    _ => {
                        tracing::error!("an engine task ended before the engine; stopping");
                        break;
                    }
                },
                request = requests.recv() => match request {
                    Some(request) => route(&shared, &shards, request).await,
                    None => break,
                },
                Some(input) = backend.recv() => {
                    shards.send(shards.of_session(&input.session_id), Input::Backend(input)).await;
                }
                _ = &mut shutdown => break,
            }
        }
        // Graceful stop: the shards finish what they were given, then the chats what
        // they hold; claims and leases are given up so a restarted or other replica
        // carries on at once.
        let _ = stop.send(true);
        rerender.abort();
        while let Some(ended) = tasks.join_next().await {
            if let Err(e) = ended {
                tracing::error!(error = %e, "an engine task failed");
            }
        }
        shared.lanes.drain(LANE_DRAIN).await;
        if let Err(e) = shared.store.release_show_claims(&shared.show_owner).await {
            tracing::warn!(error = %e, "cannot release show claims; they lapse in {} s", SHOW_CLAIM_MS / 1000);
        }
        shared.connectors.shutdown().await;
        tracing::info!("engine stopped");
    }
}

/// Sends a platform's request to the shard that handles it. A request naming an
/// interaction this replica does not know yet is looked up in the store off the
/// router, so a slow read holds back nobody else.
async fn route(shared: &Arc<Shared>, shards: &Shards, request: EngineRequest) {
    let interaction_id = match &request {
        EngineRequest::UserMessage { chat, .. }
        | EngineRequest::Admit { chat, .. }
        | EngineRequest::Pair { chat, .. }
        | EngineRequest::NewSession { chat, .. }
        | EngineRequest::Cancel { chat, .. }
        | EngineRequest::PendingInChat { chat, .. }
        | EngineRequest::Rules { chat, .. }
        | EngineRequest::RevokeRule { chat, .. } => {
            shards.send(shards.of_chat(chat), Input::Request(request)).await;
            return;
        }
        EngineRequest::Push { interaction, .. } => {
            shards.send(shards.of_session(&interaction.session_id), Input::Request(request)).await;
            return;
        }
        EngineRequest::Act { interaction_id, .. }
        | EngineRequest::Interaction { interaction_id, .. }
        | EngineRequest::CancelInteraction { interaction_id, .. } => interaction_id.clone(),
        EngineRequest::Refused { refused } => refused.interaction_id.clone(),
    };
    if let Some(session) = shared.routes.session_of(&interaction_id) {
        shards.send(shards.of_session(&session), Input::Request(request)).await;
        return;
    }
    let (shared, shards) = (shared.clone(), shards.clone());
    tokio::spawn(async move {
        // Unknown or unreadable: any shard answers the same (it reads the store
        // again and says what it finds), so the id's own hash picks one.
        let shard = match shared.store.interaction(&interaction_id).await {
            Ok(Some(interaction)) => shards.of_session(&interaction.session_id),
            _ => shards.of_session(&interaction_id),
        };
        shards.send(shard, Input::Request(request)).await;
    });
}

/// The store-wide timers: every [`RESCAN`], work other replicas left; every
/// [`SHOW_RETRY`], requests due to be shown again. Each interaction found is handed
/// to its session's shard, so its deadline is watched, and it is shown, by that shard
/// only.
async fn housekeeping(shared: Arc<Shared>, shards: Shards, mut stopping: watch::Receiver<bool>) {
    let mut rescan = tokio::time::interval(RESCAN);
    rescan.tick().await; // the first tick is immediate; start already did this
    // The first tick is immediate: after a restart, what was never shown is shown.
    let mut show_retry = tokio::time::interval(SHOW_RETRY);
    show_retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = rescan.tick() => {
                if let Err(e) = shared.rescan(&shards).await {
                    tracing::error!(error = %e, "rescanning the store failed");
                }
            }
            _ = show_retry.tick() => {
                if let Err(e) = shared.show_due(&shards, now_ms()).await {
                    tracing::error!(error = %e, "cannot claim requests waiting to be shown");
                }
            }
            _ = stopping.changed() => return,
        }
    }
}

impl Shard {
    /// Handles this shard's inputs in order, and its deadlines, until the engine
    /// stops; what was queued by then is still handled.
    async fn run(mut self, mut inputs: mpsc::Receiver<Input>, mut stopping: watch::Receiver<bool>) {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                input = inputs.recv() => match input {
                    Some(input) => self.handle(input).await,
                    None => return,
                },
                _ = tick.tick() => {
                    if let Err(e) = self.escalate_due(now_ms()).await {
                        tracing::error!(error = %e, "escalation check failed");
                    }
                    if let Err(e) = self.expire_due(now_ms()).await {
                        tracing::error!(error = %e, "deadline check failed");
                    }
                    self.show_undelivered(now_ms()).await;
                }
                _ = stopping.changed() => break,
            }
        }
        inputs.close();
        while let Some(input) = inputs.recv().await {
            self.handle(input).await;
        }
    }

    async fn handle(&mut self, input: Input) {
        match input {
            Input::Request(request) => self.handle_request(request).await,
            Input::Backend(input) => {
                let session_id = input.session_id.clone();
                if let Err(e) = self.handle_backend(input).await {
                    tracing::error!(%session_id, error = %e, "cannot handle a backend update");
                }
            }
            Input::CancelSession { session_id, actor, done } => {
                let _ = done.send(self.cancel_session(&session_id, &actor).await);
            }
            Input::Watch(pending) => self.watch(pending),
            Input::Reshow(due) => {
                if let Err(e) = self.reshow(due).await {
                    tracing::error!(error = %e, "cannot show a request again");
                }
            }
        }
    }

    /// Watches the timers of pending interactions found in the store. One already
    /// watched keeps its own (this shard may have moved it on since the read).
    fn watch(&mut self, pending: Vec<Watched>) {
        for Watched { id, deadline_ms, escalation_ms } in pending {
            if let Some(at) = escalation_ms {
                self.escalations.entry(id.clone()).or_insert(at);
            }
            self.deadlines.entry(id).or_insert(deadline_ms);
        }
    }

    /// A request due to be shown again, handed over by [`housekeeping`]: shown if it
    /// still waits (read here, in its shard, so it cannot overtake its own settle).
    async fn reshow(&mut self, due: PendingShow) -> Result<(), EngineError> {
        let Some(interaction) = self.store.interaction(&due.interaction_id).await?.filter(|i| i.status.is_pending()) else {
            self.store.drop_show(&due.interaction_id, &due.chat).await?;
            return Ok(());
        };
        tracing::info!(approval_key = %interaction.approval_key(), platform = %due.chat.platform, chat = %due.chat.chat_id, attempts = due.attempts, "showing a request again");
        if !self.lanes.push(&due.chat, Job::Show(interaction)) {
            self.store.drop_show(&due.interaction_id, &due.chat).await?;
        }
        Ok(())
    }

    async fn handle_request(&mut self, request: EngineRequest) {
        match request {
            EngineRequest::UserMessage { chat, actor, text, done } => {
                let _ = done.send(self.user_message(&chat, &actor, &text).await);
            }
            EngineRequest::Admit { chat, actor, attempted, text, locale, done } => {
                let _ = done.send(self.gate(&chat, &actor, attempted, &text, locale).await);
            }
            EngineRequest::Pair { chat, actor, code, direct, done } => {
                let _ = done.send(self.pair_in_chat(&chat, &actor, &code, direct).await);
            }
            EngineRequest::NewSession { chat, done } => {
                let _ = done.send(self.new_session(&chat).await);
            }
            EngineRequest::Cancel { chat, actor, done } => self.cancel(&chat, &actor, done).await,
            EngineRequest::Act { interaction_id, actor, action, done } => {
                let _ = done.send(self.act(&interaction_id, &actor, action).await);
            }
            EngineRequest::Refused { refused } => self.platform_refusal(*refused).await,
            EngineRequest::Push { request, interaction, done } => {
                let _ = done.send(self.push(*request, *interaction).await);
            }
            EngineRequest::CancelInteraction { interaction_id, reason, done } => {
                let _ = done.send(self.cancel_interaction(&interaction_id, &reason).await);
            }
            EngineRequest::Interaction { interaction_id, done } => {
                let _ = done.send(self.store.interaction(&interaction_id).await.map_err(EngineError::from));
            }
            EngineRequest::PendingInChat { chat, done } => {
                // Answered after the chat's queued messages are out, so a request shown
                // a moment ago is listed; the engine does not wait for it.
                let reached = self.lanes.barrier(&chat);
                let store = self.store.clone();
                tokio::spawn(async move {
                    let _ = reached.await;
                    let _ = done.send(pending_in_chat(&store, &chat).await);
                });
            }
            EngineRequest::Rules { chat, actor, done } => {
                let _ = done.send(self.rules_in_chat(&chat, &actor).await);
            }
            EngineRequest::RevokeRule { chat, actor, rule_id, done } => {
                let _ = done.send(self.revoke_in_chat(&chat, &actor, &rule_id).await);
            }
        }
    }

    async fn session_for(&self, chat: &ChatKey) -> Result<String, EngineError> {
        match self.store.session_for_chat(chat).await? {
            Some(session) => Ok(session),
            None => self.new_session(chat).await,
        }
    }

    async fn new_session(&self, chat: &ChatKey) -> Result<String, EngineError> {
        let session = uuid::Uuid::new_v4().simple().to_string();
        self.store.bind_chat(chat, &session, now_ms()).await?;
        tracing::info!(session_id = %session, platform = %chat.platform, chat = %chat.chat_id, "new session");
        Ok(session)
    }

    async fn user_message(&self, chat: &ChatKey, actor: &Actor, text: &str) -> Result<String, EngineError> {
        // Platforms ask first (`admit`, in the person's language); this is the check no
        // platform can skip.
        self.gate(chat, actor, "message", text, Default::default()).await?;
        let session = self.session_for(chat).await?;
        self.store.set_requester(&session, actor).await?;
        let user = UserInfo { platform: actor.platform.clone(), id: actor.user_id.clone(), name: actor.name.clone() };
        self.store.enqueue(&Command::message(&session, text, Some(user)), now_ms()).await?;
        self.connectors.deliver(&session);
        Ok(session)
    }

    /// A request pushed over the HTTP API: stored with its interaction in one
    /// transaction, then shown on its targets. An existing key changes nothing.
    #[tracing::instrument(name = "interaction", skip_all, fields(approval_key = %interaction.approval_key(), session_id = %interaction.session_id))]
    async fn push(&mut self, request: ApiRequest, mut interaction: Interaction) -> Result<PushOutcome, EngineError> {
        // The agent's own policy applies only when no configured one matches.
        let requested = interaction.policy.take();
        let interaction = self.policy_for(interaction, policies::PUSHED_BACKEND, &request.targets, requested);
        if let Some(existing) = self.store.create_api_request(&request, &interaction, &self.show_claim(now_ms())).await? {
            return Ok(PushOutcome::Existing(existing));
        }
        tracing::info!(approval_key = %interaction.approval_key(), agent = %request.agent, targets = request.targets.len(), "request pushed");
        self.routes.insert(&interaction.id, &interaction.session_id);
        self.deadlines.insert(interaction.id.clone(), interaction.deadline_ms);
        self.watch_escalation(&interaction);
        let interaction = self.answer_by_rule(interaction, policies::PUSHED_BACKEND).await?;
        for chat in &request.targets {
            if !self.lanes.push(chat, Job::Show(interaction.clone())) {
                self.store.drop_show(&interaction.id, chat).await?;
            }
        }
        Ok(PushOutcome::Created(Box::new(interaction)))
    }

    /// Cancels one interaction (an agent's DELETE). Returns it as it is afterwards;
    /// one that had already ended is returned unchanged.
    #[tracing::instrument(name = "interaction", skip_all, fields(approval_key = tracing::field::Empty, session_id = tracing::field::Empty))]
    async fn cancel_interaction(&mut self, interaction_id: &str, reason: &str) -> Result<Option<Interaction>, EngineError> {
        let Some(mut interaction) = self.store.interaction(interaction_id).await? else { return Ok(None) };
        crate::logging::record_interaction(&interaction);
        let now = now_ms();
        if interaction.cancel(now, reason) && !self.settle(&interaction, None, &AuditEntry::for_settled(&interaction, now)).await? {
            // Another replica settled it first: report what it stored.
            return Ok(self.store.interaction(interaction_id).await?);
        }
        Ok(Some(interaction))
    }

    /// `/cancel` in `chat`: the `cancel` command is queued here, in the chat's shard;
    /// the session's shard settles its pending interactions and answers `done`.
    async fn cancel(&mut self, chat: &ChatKey, actor: &Actor, done: oneshot::Sender<Result<(), EngineError>>) {
        let session_id = match self.store.session_for_chat(chat).await {
            Ok(Some(session)) => session,
            Ok(None) => return drop(done.send(Err(EngineError::NoSession))),
            Err(e) => return drop(done.send(Err(e.into()))),
        };
        if let Err(e) = self.store.enqueue(&Command::Cancel { session_id: session_id.clone() }, now_ms()).await {
            return drop(done.send(Err(e.into())));
        }
        self.connectors.deliver(&session_id);
        // Sent from a task: the session's shard may be this one, whose queue this
        // shard must not wait on.
        let (shards, actor) = (self.shards.clone(), actor.clone());
        tokio::spawn(async move {
            let shard = shards.of_session(&session_id);
            shards.send(shard, Input::CancelSession { session_id, actor, done }).await;
        });
    }

    /// Cancels the session's pending interactions on behalf of `actor` (`/cancel`).
    async fn cancel_session(&mut self, session_id: &str, actor: &Actor) -> Result<(), EngineError> {
        let now = now_ms();
        for mut interaction in self.store.pending_in_session(session_id).await? {
            if interaction.cancel(now, &format!("cancelled by {}", actor.name)) {
                let mut audit = AuditEntry::for_settled(&interaction, now);
                audit.actor = Some(actor.clone());
                self.settle(&interaction, None, &audit).await?;
            }
        }
        Ok(())
    }

    #[tracing::instrument(name = "interaction", skip_all, fields(approval_key = tracing::field::Empty, session_id = tracing::field::Empty))]
    async fn act(&mut self, interaction_id: &str, actor: &Actor, action: UserAction) -> Result<ActOutcome, ActError> {
        // A draft write loses only to a concurrent change of the same request (another
        // replica's vote or escalation step): apply the action again to what is stored
        // now, so a vote is never lost to a race. A settle that loses is final.
        for attempt in 0..MAX_DRAFT_RACES {
            if let Some(outcome) = self.act_once(interaction_id, actor, action.clone()).await? {
                return Ok(outcome);
            }
            // The other replica is writing this request right now (a burst of votes):
            // give it a moment, longer each time, rather than lose to it again.
            tokio::time::sleep(DRAFT_RACE_BACKOFF * (attempt as u32 + 1)).await;
        }
        Err(ActError::Internal("the request kept changing while deciding; try again".into()))
    }

    /// One attempt at [`Shard::act`]: `None` when the draft changed under it.
    async fn act_once(&mut self, interaction_id: &str, actor: &Actor, action: UserAction) -> Result<Option<ActOutcome>, ActError> {
        let mut interaction = self.store.interaction(interaction_id).await?.ok_or(ActError::UnknownInteraction)?;
        crate::logging::record_interaction(&interaction);
        let now = now_ms();
        let applied = match interaction.apply(actor, action.clone(), &self.policy, now) {
            Ok(applied) => applied,
            Err(refusal) => {
                self.record_refusal(&interaction, actor, &Attempt::Act(action), &refusal).await;
                return Err(ActError::Refused(refusal));
            }
        };
        match applied {
            Applied::Updated => {
                if !self.store.save_draft(&interaction).await? {
                    return match self.store.interaction(interaction_id).await? {
                        Some(current) if current.status.is_pending() => Ok(None),
                        _ => Err(self.lost_race(interaction_id, actor, action, now).await),
                    };
                }
                self.refresh(&interaction).await;
                Ok(Some(ActOutcome::Updated(interaction)))
            }
            Applied::Resolved(reply) => {
                let command = self.command_for(&interaction, reply);
                let audit = AuditEntry::for_settled(&interaction, now);
                let rule = interaction.rule_to_save(&self.backend_of(&interaction));
                if !self.settle_as(&interaction, command.as_ref(), &audit, Decided::ByPerson { rule: rule.as_ref() }).await? {
                    return match self.store.interaction(interaction_id).await? {
                        // Its draft changed meanwhile (a vote on another replica):
                        // apply this action again to what is stored.
                        Some(current) if current.status.is_pending() => Ok(None),
                        _ => Err(self.lost_race(interaction_id, actor, action, now).await),
                    };
                }
                if let Some(rule) = &rule {
                    tracing::info!(approval_key = %interaction.approval_key(), rule = %rule.id, scope = rule.scope.as_str(), tool = %rule.tool, "approval remembered");
                }
                tracing::info!(approval_key = %interaction.approval_key(), session_id = %interaction.session_id, by = %actor.name, "decided");
                Ok(Some(ActOutcome::Resolved(interaction)))
            }
        }
    }

    /// The backend name rules and policies use for `interaction`'s requests.
    fn backend_of(&self, interaction: &Interaction) -> String {
        match interaction.origin {
            Origin::Pushed { .. } => policies::PUSHED_BACKEND.to_owned(),
            Origin::Chat => self.backend_kind.clone(),
        }
    }

    /// Another replica settled the interaction between our read and our write: answer
    /// with the refusal its stored state gives.
    async fn lost_race(&self, interaction_id: &str, actor: &Actor, action: UserAction, now: i64) -> ActError {
        match self.store.interaction(interaction_id).await {
            Ok(Some(mut current)) => match current.apply(actor, action.clone(), &self.policy, now) {
                Err(refusal) => {
                    self.record_refusal(&current, actor, &Attempt::Act(action), &refusal).await;
                    ActError::Refused(refusal)
                }
                Ok(_) => ActError::Internal("the interaction changed while deciding; try again".into()),
            },
            Ok(None) => ActError::UnknownInteraction,
            Err(e) => e.into(),
        }
    }

    /// Persists a settled interaction with its command and audit entry, then delivers
    /// and re-renders. False when it was already settled (nothing changed).
    ///
    /// With a command, the re-render waits for the backend's proof of delivery (or
    /// [`DELIVERY_GRACE_MS`], after which it shows "saved, not yet delivered").
    #[tracing::instrument(name = "interaction", skip_all, fields(approval_key = %interaction.approval_key(), session_id = %interaction.session_id))]
    async fn settle(&mut self, interaction: &Interaction, command: Option<&Command>, audit: &AuditEntry) -> Result<bool, EngineError> {
        self.settle_as(interaction, command, audit, Decided::Otherwise).await
    }

    /// [`Shard::settle`], saying how it was decided: a person's decision settles only
    /// over the stored copy it was made on, with the rule it remembers.
    async fn settle_as(&mut self, interaction: &Interaction, command: Option<&Command>, audit: &AuditEntry, decided: Decided<'_>) -> Result<bool, EngineError> {
        let mut interaction = interaction.clone();
        if command.is_some() {
            interaction.delivery = Delivery::Queued;
        }
        let stored = match decided {
            Decided::ByPerson { rule } => self.store.settle_decision(&interaction, command, audit, rule).await?,
            Decided::Otherwise => self.store.settle(&interaction, command, audit).await?,
        };
        if !stored {
            return Ok(false);
        }
        self.deadlines.remove(&interaction.id);
        self.escalations.remove(&interaction.id);
        self.routes.remove(&interaction.id);
        self.metrics.settled(&interaction);
        self.connectors.settled(&interaction);
        if command.is_some() {
            self.connectors.deliver(&interaction.session_id);
            self.undelivered.insert(interaction.id.clone(), (now_ms() + DELIVERY_GRACE_MS, interaction));
        } else {
            self.refresh(&interaction).await;
        }
        Ok(true)
    }

    /// Shows as "not yet delivered" what waited longer than the grace for its proof.
    async fn show_undelivered(&mut self, now: i64) {
        let due: Vec<String> = self.undelivered.iter().filter(|(_, (at, _))| now >= *at).map(|(id, _)| id.clone()).collect();
        for id in due {
            if let Some((_, interaction)) = self.undelivered.remove(&id) {
                tracing::info!(approval_key = %interaction.approval_key(), session_id = %interaction.session_id, "decision saved; the backend has not confirmed it yet");
                self.refresh(&interaction).await;
            }
        }
    }

    /// The backend proved it has the reply (`Delivered`), timed the request out before
    /// it did (`TooLate`) or stopped waiting for it (`NotWaiting`): store that and
    /// re-render.
    #[tracing::instrument(name = "interaction", skip(self, delivery))]
    async fn delivery_changed(&mut self, session_id: &str, approval_key: &str, delivery: Delivery) -> Result<(), EngineError> {
        let Some(mut interaction) = self.store.interaction_by_key(session_id, approval_key).await? else { return Ok(()) };
        if interaction.delivery != Delivery::Queued {
            return Ok(());
        }
        interaction.delivery = delivery;
        self.store.save_delivery(&interaction).await?;
        self.undelivered.remove(&interaction.id);
        tracing::info!(%approval_key, %session_id, ?delivery, "delivery settled");
        self.refresh(&interaction).await;
        Ok(())
    }

    /// The `approval` command carrying `reply`, when the session's connector takes
    /// commands (the HTTP API's agents read the reply themselves).
    fn command_for(&self, interaction: &Interaction, reply: Reply) -> Option<Command> {
        self.connectors.takes_commands(&interaction.session_id).then(|| approval_command(interaction, reply))
    }

    async fn handle_backend(&mut self, input: BackendInput) -> Result<(), EngineError> {
        let BackendInput { session_id, update } = input;
        match update {
            SessionUpdate::Text { text, .. } => {
                for chat in self.store.chats_for_session(&session_id).await? {
                    self.lanes.push(&chat, Job::Text(text.clone()));
                }
            }
            SessionUpdate::ToolGroup(status) => self.tool_status(&session_id, &status).await?,
            SessionUpdate::Request(request) => self.new_interaction(&session_id, request).await?,
            SessionUpdate::InvalidRequest { approval_key, reason } => {
                tracing::warn!(%session_id, %approval_key, %reason, "cannot show an approval request");
                self.notice(&session_id, &format!("The agent sent a request the bridge cannot show ({approval_key}): {reason}")).await?;
            }
            SessionUpdate::Resolved { approval_key, reply } => {
                let now = now_ms();
                if let Some(mut interaction) = self.store.interaction_by_key(&session_id, &approval_key).await?
                    && interaction.resolve_elsewhere(reply, now)
                {
                    self.settle(&interaction, None, &AuditEntry::for_settled(&interaction, now)).await?;
                }
            }
            SessionUpdate::TimedOut { approval_key } => {
                let now = now_ms();
                if let Some(mut interaction) = self.store.interaction_by_key(&session_id, &approval_key).await? {
                    if interaction.expire(now, true) {
                        self.settle(&interaction, None, &AuditEntry::for_settled(&interaction, now)).await?;
                    } else {
                        self.delivery_changed(&session_id, &approval_key, Delivery::TooLate { at_ms: now }).await?;
                    }
                }
            }
            SessionUpdate::Delivered { approval_key } => {
                self.delivery_changed(&session_id, &approval_key, Delivery::Delivered { at_ms: now_ms() }).await?;
            }
            SessionUpdate::NoLongerWaiting { approval_key } => {
                tracing::warn!(%session_id, %approval_key, "the backend no longer waits for this request; the reply was not delivered");
                self.delivery_changed(&session_id, &approval_key, Delivery::NotWaiting { at_ms: now_ms() }).await?;
            }
            SessionUpdate::TurnEnded => tracing::debug!(%session_id, "turn ended"),
            SessionUpdate::TurnFailed { message } => {
                self.notice(&session_id, &format!("The agent reported an error: {message}")).await?;
            }
            SessionUpdate::ResolvedInHistory(resolved) => self.reconcile(&session_id, &resolved).await?,
        }
        Ok(())
    }

    async fn tool_status(&mut self, session_id: &str, status: &ToolGroupStatus) -> Result<(), EngineError> {
        for chat in self.store.chats_for_session(session_id).await? {
            self.lanes.push(&chat, Job::ToolStatus(status.clone()));
        }
        Ok(())
    }

    #[tracing::instrument(name = "interaction", skip_all, fields(approval_key = tracing::field::Empty, session_id = tracing::field::Empty))]
    async fn new_interaction(&mut self, session_id: &str, request: Request) -> Result<(), EngineError> {
        let id = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
        let requester = self.store.requester(session_id).await?;
        let now = now_ms();
        let interaction = Interaction::new(id, session_id.to_owned(), request, requester, now);
        crate::logging::record_interaction(&interaction);
        let mut chats = self.store.chats_for_session(session_id).await?;
        chats.extend(self.extra_chats.iter().cloned());
        let chats = routing::dedup(chats);
        let backend = self.backend_kind.clone();
        let interaction = self.policy_for(interaction, &backend, &chats, None);
        // Stored with the chats it must appear in: shown now, or retried until it is.
        if !self.store.insert_interaction_to_show(&interaction, &chats, &self.show_claim(now), now).await? {
            tracing::debug!(%session_id, approval_key = %interaction.approval_key(), "request already known; ignoring the replay");
            return Ok(());
        }
        self.routes.insert(&interaction.id, &interaction.session_id);
        self.deadlines.insert(interaction.id.clone(), interaction.deadline_ms);
        self.watch_escalation(&interaction);
        let interaction = self.answer_by_rule(interaction, &backend).await?;
        if chats.is_empty() {
            tracing::warn!(%session_id, approval_key = %interaction.approval_key(), "no chat is bound to this session; the request waits for its deadline");
        }
        for chat in chats {
            if !self.lanes.push(&chat, Job::Show(interaction.clone())) {
                self.store.drop_show(&interaction.id, &chat).await?;
            }
        }
        Ok(())
    }

    async fn reconcile(&mut self, session_id: &str, resolved: &[HistoryResolution]) -> Result<(), EngineError> {
        let now = now_ms();
        let session = self.store.interactions_in_session(session_id).await?;
        for interaction in session.iter().filter(|i| i.status.is_pending()) {
            let mut interaction = interaction.clone();
            if let Some(found) = history::resolution_for(resolved, &interaction, &session)
                && interaction.resolve_elsewhere(found.reply.clone(), now)
            {
                tracing::info!(%session_id, approval_key = %interaction.approval_key(), "resolved while the bridge was away");
                self.settle(&interaction, None, &AuditEntry::for_settled(&interaction, now)).await?;
            }
        }
        Ok(())
    }

    /// The grace after interaction `id`'s deadline: none when its backend has no timer.
    fn grace_for(&self, id: &str) -> i64 {
        match self.routes.session_of(id) {
            Some(session) if !self.connectors.takes_commands(&session) => 0,
            _ => self.grace_ms,
        }
    }

    /// Expires what is past its deadline, plus the grace period where the backend keeps
    /// its own timer (PROTOCOL.md §6: its `approval_timeout` normally ends the request at
    /// the deadline; the grace covers one that never comes). A request pushed over the
    /// HTTP API has no other timer: it ends at the deadline its card shows.
    async fn expire_due(&mut self, now: i64) -> Result<(), EngineError> {
        let due: Vec<String> = self
            .deadlines
            .iter()
            .filter(|(id, deadline)| now >= **deadline + self.grace_for(id))
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            self.deadlines.remove(&id);
            let Some(mut interaction) = self.store.interaction(&id).await? else {
                self.routes.remove(&id);
                continue;
            };
            // A policy's fallback replaces `timeouts.on_expiry`.
            let under_fallback = interaction.policy_fallback().is_some();
            let ended = if under_fallback { interaction.apply_fallback(now) } else { interaction.expire(now, false) };
            if !ended {
                if interaction.status.is_pending() {
                    // Its deadline moved (read from another replica's write): watch that.
                    self.deadlines.insert(id, interaction.deadline_ms);
                } else {
                    // Settled elsewhere (another replica): nothing left to route here.
                    self.routes.remove(&id);
                }
                continue;
            }
            let reply = match (under_fallback, self.on_expiry) {
                (true, _) => interaction.reply.clone(),
                (false, OnExpiry::Reject) => interaction.expiry_reply(),
                (false, OnExpiry::Leave) => None,
            };
            interaction.reply = reply.clone();
            let command = reply.and_then(|reply| self.command_for(&interaction, reply));
            tracing::info!(approval_key = %interaction.approval_key(), session_id = %interaction.session_id, fallback = under_fallback, "expired by the bridge");
            if self.settle(&interaction, command.as_ref(), &AuditEntry::for_settled(&interaction, now)).await?
                && let Some(action) = policies::fallback_action(&interaction)
            {
                self.metrics.policy_action(action);
            }
        }
        Ok(())
    }

    async fn notice(&mut self, session_id: &str, text: &str) -> Result<(), EngineError> {
        for chat in self.store.chats_for_session(session_id).await? {
            self.lanes.push(&chat, Job::Notice(text.to_owned()));
        }
        Ok(())
    }
}

impl Shared {
    /// Picks up what other replicas started: deadlines to watch (each handed to its
    /// session's shard), sessions to connect (the connector only connects those whose
    /// lease it can take).
    async fn rescan(&self, shards: &Shards) -> Result<(), EngineError> {
        let mut watch: Vec<Vec<Watched>> = vec![Vec::new(); shards.count()];
        for interaction in self.store.pending_interactions().await? {
            self.routes.insert(&interaction.id, &interaction.session_id);
            watch[shards.of_session(&interaction.session_id)].push(Watched::of(&interaction));
        }
        for (shard, pending) in watch.into_iter().enumerate().filter(|(_, pending)| !pending.is_empty()) {
            shards.send(shard, Input::Watch(pending)).await;
        }
        for session in self.store.sessions_with_work().await? {
            self.connectors.deliver(&session);
        }
        self.show_outside_settles().await?;
        self.notify_pairings().await
    }

    /// A claim on `pending_shows` rows for this replica, from `now`.
    fn show_claim(&self, now: i64) -> ShowClaim {
        ShowClaim { owner: self.show_owner.clone(), until_ms: now + SHOW_CLAIM_MS }
    }

    /// Shows again what still has to appear somewhere: failed sends whose backoff is
    /// over, and, after a restart, what was never shown. Each is shown by the shard
    /// of its session ([`Shard::reshow`]).
    async fn show_due(&self, shards: &Shards, now: i64) -> Result<(), EngineError> {
        self.store.renew_show_claims(&self.show_claim(now), now).await?;
        for due in self.store.claim_due_shows(&self.show_claim(now), now).await? {
            let session = match self.routes.session_of(&due.interaction_id) {
                Some(session) => session,
                None => match self.store.interaction(&due.interaction_id).await? {
                    Some(interaction) => interaction.session_id,
                    None => {
                        self.store.drop_show(&due.interaction_id, &due.chat).await?;
                        continue;
                    }
                },
            };
            shards.send(shards.of_session(&session), Input::Reshow(due)).await;
        }
        Ok(())
    }

    /// After a restart, platforms re-render what still waits and does not show its
    /// current state: a chat message whose interaction moved on since it was last
    /// edited (a vote saved just before a crash), and everything a terminal printed.
    /// A message already showing its state is left alone, so a restart with thousands
    /// pending costs no edits. Each lane reads the interaction when its turn comes, so
    /// one settled meanwhile is shown settled.
    async fn show_pending(&self) {
        match self.store.stale_pending_messages().await {
            Ok(stale) => {
                tracing::info!(messages = stale.len(), "rendering again what does not show its current state");
                for (interaction_id, chat) in stale {
                    self.lanes.push(&chat, Job::Rerender(interaction_id));
                }
            }
            Err(e) => tracing::error!(error = %e, "cannot list the messages to render again"),
        }
    }

    /// Re-renders every message that shows `interaction`, in each chat's lane.
    async fn refresh(&self, interaction: &Interaction) {
        for chat in self.chats_showing(interaction).await {
            self.lanes.push(&chat, Job::Refresh(interaction.clone()));
        }
    }

    /// The chats that show `interaction` or may yet: those bound to its session (a
    /// `Show` may still be queued there) and any other chat with a message showing it.
    async fn chats_showing(&self, interaction: &Interaction) -> Vec<ChatKey> {
        let mut chats = match self.store.chats_for_session(&interaction.session_id).await {
            Ok(chats) => chats,
            Err(e) => {
                tracing::error!(error = %e, "cannot load the chats of a session");
                return Vec::new();
            }
        };
        match self.store.message_refs(&interaction.id).await {
            Ok(messages) => chats.extend(messages.into_iter().map(|m| m.chat)),
            Err(e) => tracing::error!(error = %e, "cannot load message references"),
        }
        // Where a `Show` may still be queued: routed chats, or a pushed request's targets.
        match &interaction.origin {
            Origin::Chat => chats.extend(self.extra_chats.iter().cloned()),
            Origin::Pushed { agent, .. } => match self.store.api_request(agent, interaction.approval_key()).await {
                Ok(Some(request)) => chats.extend(request.targets),
                Ok(None) => {}
                Err(e) => tracing::error!(error = %e, "cannot load a pushed request's targets"),
            },
        }
        chats.sort_by(|a, b| (&a.platform, &a.chat_id, &a.thread_id).cmp(&(&b.platform, &b.chat_id, &b.thread_id)));
        chats.dedup();
        chats
    }
}

fn approval_command(interaction: &Interaction, reply: Reply) -> Command {
    Command::Approval {
        session_id: interaction.session_id.clone(),
        approval_key: interaction.approval_key().to_owned(),
        reply,
    }
}

/// Pending interactions shown in `chat`, with the messages there that show them.
async fn pending_in_chat(store: &Store, chat: &ChatKey) -> Result<PendingShown, EngineError> {
    let mut out = Vec::new();
    for interaction in store.pending_in_chat(chat).await? {
        let messages = store.message_refs(&interaction.id).await?;
        let here = messages.into_iter().filter(|m| m.chat == *chat).collect();
        out.push((interaction, here));
    }
    Ok(out)
}
