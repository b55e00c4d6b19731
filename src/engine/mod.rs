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
//!
//! Layout, one job per file:
//! - this file: start-up ([`Engine::start`]), the router and the housekeeping timers;
//! - [`config`], [`platform`] and [`connector`]: what the engine is given: its
//!   configuration and its two ports, [`Platform`] and [`Connector`];
//! - [`handle`]: the [`EngineHandle`] the platforms and the HTTP API call;
//!   [`commands`]: the chat commands every platform runs through it;
//! - [`dispatch`]: a shard's loop; [`actions`]: what people do; [`clicks`]: a click
//!   taken in one trip (loaded once, checked, planned by its platform, applied or
//!   opened, with the platform's UI state written alongside); [`copies`]: the
//!   pending requests a shard keeps in memory; [`settle`]: decisions made durable and
//!   delivered; [`updates`]: what a backend said; [`expiry`]:
//!   deadlines; [`shows`]: showing requests in chats; [`lanes`]: the per-chat queues
//!   of platform calls;
//! - [`gate`], [`refusals`], [`policies`], [`rules`], [`routing`]: who may talk, the
//!   refused, decision policies, remembered rules, where requests go;
//! - [`announced`]: requests other replicas store, watched as they commit.

mod actions;
mod announced;
mod clicks;
mod commands;
mod config;
mod connector;
mod copies;
mod dispatch;
mod expiry;
mod gate;
mod handle;
mod lanes;
mod outside;
mod platform;
mod policies;
mod refusals;
pub mod routing;
mod rules;
mod settle;
mod shards;
mod shows;
#[cfg(test)]
mod tests;
mod updates;

pub use crate::clock::now_ms;
pub use clicks::{Click, Clicked, UiStateWrite};
pub use commands::CommandOutcome;
pub use config::{EngineConfig, OnExpiry};
pub use connector::{Connector, Connectors};
pub use gate::{PairRefusal, Stranger};
use handle::Route;
pub use handle::{ActError, ActOutcome, EngineError, EngineHandle, EngineRequest, OpeningCheck, PendingShown, PushOutcome};
pub use platform::{Platform, PlatformError, Reminder};
pub use rules::RevokeRefusal;

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use self::lanes::Lanes;
use self::shards::{Input, Routes, Shards, Watched};
use crate::interaction::admission::PairingAdmins;
use crate::interaction::chat::Networks;
use crate::interaction::updates::BackendInput;
use crate::interaction::{AccessPolicy, Allowlist, Interaction, PolicyRule, RememberedRule};
use crate::store::{ChatKey, Store};

/// The log target of the lines the engine's start-up, dispatch, actions, settling,
/// updates, expiry and shows log, whichever file they are in: what operators filter
/// on (`hitl_bridge::engine`) did not move when the engine was split by job.
const LOG_TARGET: &str = "hitl_bridge::engine";

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
/// (whose deadlines this replica must also watch; on PostgreSQL each is also heard at
/// once, [`announced`]) and sessions whose lease lapsed.
const RESCAN: Duration = Duration::from_secs(10);

/// How far back a rescan looks for requests created elsewhere: a request is read by
/// the first rescan after it was created, and the margin covers a write that
/// committed late and clocks that disagree between replicas. Older ones were read
/// by an earlier rescan (or at start).
const RESCAN_LOOKBACK: Duration = Duration::from_secs(120);

/// Every this many rescans, one reads every pending request again (every five
/// minutes): the safety net for anything a narrower rescan could miss, such as a
/// clock more than [`RESCAN_LOOKBACK`] behind another replica's.
const FULL_RESCAN_EVERY: u32 = 30;

/// Shards per core. A shard waits on the store most of the time (a decision is a
/// durable commit), so several per core keep the cores busy and let concurrent
/// decisions share a commit, while a session stuck on a slow call holds back only the
/// few sessions that share its shard.
const SHARDS_PER_CORE: usize = 64;

/// Pending interactions each shard keeps in memory ([`copies`]): on two cores at most
/// 2 × 64 × 16 = 2,048 copies, whatever the number pending.
const COPIES_PER_SHARD: usize = 16;

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
    /// How each platform writes its chats (escalations' `show_in`).
    networks: Networks,
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
    /// PostgreSQL: listening for other replicas' requests since before the pending
    /// ones were read, so none falls between the two.
    announced: Option<crate::store::PendingListener>,
    /// The ids of requests a chat refused for good, from the lanes: each is ended if
    /// it is now shown nowhere ([`Shard::end_if_shown_nowhere`]).
    refusals: mpsc::UnboundedReceiver<String>,
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
    /// The pending interactions it created or read last, as the store holds them.
    copies: copies::Copies,
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
        let listening = announced::listen_first(&store).await;
        let pending = store.pending_timers(None).await?;
        for session in store.sessions_with_work().await? {
            connectors.deliver(&session);
        }
        let mut shared = Shared {
            allowlist: config.allowlist.clone(),
            pairing_admins: config.pairing_admins.clone(),
            refusal_window_ms: config.refusal_window_ms,
            pairing_ttl_ms: config.pairing_ttl_ms,
            connectors,
            lanes: Lanes::new(store.clone(), platforms),
            store,
            extra_chats: routing::extra_chats(&config.routing, &config.policy, &config.networks),
            networks: config.networks.clone(),
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
        for timers in pending {
            shared.routes.insert(&timers.id, &timers.session_id);
            workers[shards.of_session(&timers.session_id)].1.push(timers);
        }
        let (tell_refusals, refusals) = mpsc::unbounded_channel();
        shared.lanes.tell_refusals(tell_refusals);
        Ok(Self { shared, shards, workers, requests, backend, announced: listening, refusals })
    }

    /// Counts into `metrics` (the bridge's registry) instead of a registry of its own.
    pub fn with_metrics(mut self, metrics: crate::metrics::Metrics) -> Self {
        self.shared.lanes.set_metrics(metrics.clone());
        self.shared.metrics = metrics;
        self
    }

    /// Runs until `shutdown` completes or every handle is dropped.
    pub async fn run(self, shutdown: impl std::future::Future<Output = ()>) {
        tokio::pin!(shutdown);
        let Engine { shared, shards, workers, mut requests, mut backend, announced: listening, mut refusals } = self;
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
                copies: copies::Copies::new(COPIES_PER_SHARD),
            };
            shard.watch(watched);
            tasks.spawn(shard.run(inputs, stopping.clone()));
        }
        tasks.spawn(announced::watch_announced(shared.clone(), shards.clone(), listening, stopping.clone()));
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
                Some(refused) = refusals.recv() => route(&shared, &shards, end_if_shown_nowhere(refused)).await,
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

/// The work of ending `interaction_id` if a refusal left it shown nowhere, in its shard.
fn end_if_shown_nowhere(interaction_id: String) -> EngineRequest {
    EngineRequest {
        route: Route::Interaction(interaction_id.clone()),
        work: Box::new(move |shard| {
            Box::pin(async move {
                if let Err(e) = shard.end_if_shown_nowhere(&interaction_id).await {
                    tracing::error!(target: LOG_TARGET, error = %e, interaction = %interaction_id, "cannot end a request no target would show; it waits for its deadline");
                }
            })
        }),
    }
}

/// Sends a platform's request to the shard that handles it. A request naming an
/// interaction this replica does not know yet is looked up in the store off the
/// router, so a slow read holds back nobody else.
async fn route(shared: &Arc<Shared>, shards: &Shards, request: EngineRequest) {
    let interaction_id = match &request.route {
        Route::Chat(chat) => {
            shards.send(shards.of_chat(chat), Input::Request(request)).await;
            return;
        }
        Route::Session(session) => {
            shards.send(shards.of_session(session), Input::Request(request)).await;
            return;
        }
        Route::Interaction(id) => id.clone(),
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
    let mut rescans: u32 = 0;
    // The first tick is immediate: after a restart, what was never shown is shown.
    let mut show_retry = tokio::time::interval(SHOW_RETRY);
    show_retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = rescan.tick() => {
                rescans = rescans.wrapping_add(1);
                let since = (!rescans.is_multiple_of(FULL_RESCAN_EVERY)).then(|| now_ms() - RESCAN_LOOKBACK.as_millis() as i64);
                if let Err(e) = shared.rescan(&shards, since).await {
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
