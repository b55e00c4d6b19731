//! The bridge's Prometheus metrics, served as `/metrics` on `http.listen`
//! ([`crate::server`]). It owns one registry per running bridge (never a process-wide
//! recorder: tests run several bridges in one process, and their figures must not mix)
//! and the metric families in it, and names what can be recorded after what happened:
//! [`Metrics::settled`], [`Metrics::refused`], [`Metrics::platform_error`],
//! [`Metrics::show_refused`], [`Metrics::session_connected`].
//!
//! Two sorts of figures live here. Counters and the histogram are what this replica did
//! since it started. The pending and outbox gauges are the store's truth, shared by
//! every replica and surviving restarts: they are read from the store on every scrape
//! ([`StoreFigures`]), never counted in memory. This module decides nothing and changes
//! nothing in the bridge; a new family is one more field and one `register` call in
//! [`Families::new`].

use std::sync::Arc;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use crate::interaction::{Interaction, Refusal, RequestKind, Status};
use crate::store::{Store, StoreError};

/// What `/metrics` answers with: OpenMetrics text, the format Prometheus asks for
/// first in its default `Accept` header (it also reads it when it asks for 0.0.4).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The prefix of every family name.
const PREFIX: &str = "hitl_bridge";

/// Bucket bounds of `decision_seconds`: people answer in seconds to a day.
const DECISION_BUCKETS: [f64; 14] = [1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0, 14400.0, 43200.0, 86400.0];

/// The `kind` label of an interaction.
const KINDS: [&str; 2] = ["approval", "question"];

/// The `outcome` label of a settled interaction.
const OUTCOMES: [&str; 3] = ["resolved", "expired", "cancelled"];

/// Every `reason` label: one per [`Refusal`] variant ([`refusal_reason`]), then the
/// refusals of people talking to the agent.
const REASONS: [&str; 20] = [
    "not_allowed",
    "self_approval",
    "already_decided",
    "expired",
    "cancelled",
    "decision_not_allowed",
    "invalid_edit",
    "out_of_range",
    "incomplete",
    "wrong_kind",
    "no_free_text",
    "empty_text",
    "text_too_long",
    "single_choice",
    "already_voted",
    "remember_not_offered",
    REASON_STRANGER,
    REASON_NOT_ADMIN,
    REASON_NOT_ADMIN_CHAT,
    REASON_OWN_PAIRING_CODE,
];

/// Every `kind` of a platform error.
const ERROR_KINDS: [PlatformErrorKind; 4] = [PlatformErrorKind::RateLimited, PlatformErrorKind::Server, PlatformErrorKind::Client, PlatformErrorKind::Network];

/// The `reason` of someone refused at the door to the agent ([`crate::engine`]'s gate):
/// not allowed to talk, and not paired.
pub const REASON_STRANGER: &str = "stranger";

/// The `reason` of a `/pair CODE` from someone not in `access.admins`.
pub const REASON_NOT_ADMIN: &str = "not_admin";

/// The `reason` of a `/pair CODE` from an admin outside `access.admin_chats` and their
/// direct chat with the bot.
pub const REASON_NOT_ADMIN_CHAT: &str = "not_admin_chat";

/// The `reason` of a `/pair CODE` naming the sender's own code.
pub const REASON_OWN_PAIRING_CODE: &str = "own_pairing_code";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SettledLabels {
    kind: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PlatformErrorLabels {
    platform: &'static str,
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PlatformLabel {
    platform: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabel {
    operation: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ActionLabel {
    action: &'static str,
}

/// Every `action` of `hitl_bridge_policy_actions_total`: what a decision policy did on
/// its own, without a person's click.
pub const POLICY_ACTIONS: [&str; 6] = ["remind", "show_in", "rule_approve", "fallback_approve", "fallback_reject", "fallback_leave"];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

/// How a call to a chat platform's API failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlatformErrorKind {
    /// 429: the platform asked the bridge to slow down.
    RateLimited,
    /// 5xx, or an answer that could not be read.
    Server,
    /// Any other 4xx: the platform refused what was sent.
    Client,
    /// No answer: connection refused or reset, a timeout, DNS.
    Network,
}

impl PlatformErrorKind {
    /// The kind an HTTP error status means; `None` for a status that is no error.
    pub fn from_status(status: u16) -> Option<Self> {
        match status {
            429 => Some(Self::RateLimited),
            500..=599 => Some(Self::Server),
            400..=499 => Some(Self::Client),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::RateLimited => "rate_limited",
            Self::Server => "server",
            Self::Client => "client",
            Self::Network => "network",
        }
    }
}

/// The `reason` label of a refused action: stable snake_case, one per [`Refusal`]
/// variant (the refusal's text is for people and may change).
pub fn refusal_reason(refusal: &Refusal) -> &'static str {
    match refusal {
        Refusal::NotAllowed => "not_allowed",
        Refusal::SelfApproval => "self_approval",
        Refusal::AlreadyDecided { .. } => "already_decided",
        Refusal::Expired => "expired",
        Refusal::Cancelled => "cancelled",
        Refusal::DecisionNotAllowed { .. } => "decision_not_allowed",
        Refusal::InvalidEdit(_) => "invalid_edit",
        Refusal::OutOfRange(_) => "out_of_range",
        Refusal::Incomplete { .. } => "incomplete",
        Refusal::WrongKind { .. } => "wrong_kind",
        Refusal::NoFreeText => "no_free_text",
        Refusal::EmptyText => "empty_text",
        Refusal::TextTooLong => "text_too_long",
        Refusal::SingleChoice => "single_choice",
        Refusal::AlreadyVoted { .. } => "already_voted",
        Refusal::RememberNotOffered { .. } => "remember_not_offered",
    }
}

/// The `kind` label of an interaction.
fn kind_of(interaction: &Interaction) -> &'static str {
    match interaction.request.kind {
        RequestKind::Approval { .. } => KINDS[0],
        RequestKind::Questions { .. } => KINDS[1],
    }
}

/// The `outcome` label of a settled interaction and when it settled; `None` while it
/// is pending.
fn outcome_of(status: &Status) -> Option<(&'static str, i64)> {
    match status {
        Status::Pending => None,
        Status::Resolved { at_ms, .. } => Some((OUTCOMES[0], *at_ms)),
        Status::Expired { at_ms, .. } => Some((OUTCOMES[1], *at_ms)),
        Status::Cancelled { at_ms, .. } => Some((OUTCOMES[2], *at_ms)),
    }
}

fn decision_histogram() -> Histogram {
    Histogram::new(DECISION_BUCKETS)
}

/// The registry and its families.
struct Families {
    registry: Registry,
    pending: Family<KindLabel, Gauge>,
    interactions: Family<SettledLabels, Counter>,
    decision_seconds: Family<KindLabel, Histogram, fn() -> Histogram>,
    outbox_depth: Gauge,
    sessions_connected: Gauge,
    platform_errors: Family<PlatformErrorLabels, Counter>,
    shows_refused: Family<PlatformLabel, Counter>,
    refusals: Family<ReasonLabel, Counter>,
    policy_actions: Family<ActionLabel, Counter>,
    store_errors: Family<OperationLabel, Counter>,
    store_batches_retried: Counter,
}

impl Families {
    fn new() -> Self {
        let mut registry = Registry::with_prefix(PREFIX);
        let pending = Family::<KindLabel, Gauge>::default();
        registry.register(
            "interactions_pending",
            "Requests waiting for an answer, by kind; read from the store on each scrape, so every replica reports the same figure",
            pending.clone(),
        );
        let interactions = Family::<SettledLabels, Counter>::default();
        registry.register("interactions", "Requests this replica settled, by kind and outcome (resolved, expired, cancelled)", interactions.clone());
        let decision_seconds = Family::<KindLabel, Histogram, fn() -> Histogram>::new_with_constructor(decision_histogram as fn() -> Histogram);
        registry.register_with_unit(
            "decision",
            "Time from storing and showing a request to its decision, for the requests this replica resolved, by kind",
            Unit::Seconds,
            decision_seconds.clone(),
        );
        let outbox_depth = Gauge::default();
        registry.register(
            "outbox_depth",
            "Commands saved for the backend and not yet confirmed delivered, all sessions; read from the store on each scrape",
            outbox_depth.clone(),
        );
        let sessions_connected = Gauge::default();
        registry.register("backend_sessions_connected", "Backend sessions this replica holds a live connection to", sessions_connected.clone());
        let platform_errors = Family::<PlatformErrorLabels, Counter>::default();
        registry.register(
            "platform_errors",
            "Failed chat platform API calls on this replica, by platform and kind (rate_limited, server, client, network); each retried attempt counts",
            platform_errors.clone(),
        );
        let shows_refused = Family::<PlatformLabel, Counter>::default();
        registry.register(
            "shows_refused",
            "Requests this replica could not show in a chat because the platform refused it for good (chat not found, bot not in the channel or blocked), by platform; each is tried once and shown as undelivered",
            shows_refused.clone(),
        );
        let refusals = Family::<ReasonLabel, Counter>::default();
        registry.register("refusals", "Clicks, answers and messages this replica refused, by reason", refusals.clone());
        let policy_actions = Family::<ActionLabel, Counter>::default();
        registry.register(
            "policy_actions",
            "What decision policies did on this replica without a click: escalation steps (remind, show_in), approvals by a remembered rule, fallbacks",
            policy_actions.clone(),
        );
        for action in POLICY_ACTIONS {
            let _ = policy_actions.get_or_create(&ActionLabel { action });
        }
        let store_errors = Family::<OperationLabel, Counter>::default();
        registry.register(
            "store_errors",
            "Failed store statements in this process, by operation (the store's name for what failed: \"commit a write\", \"insert interaction\"…); a rise with failing clicks means a full disk or an unreachable database",
            store_errors.clone(),
        );
        let store_batches_retried = Counter::default();
        registry.register(
            "store_batches_retried",
            "Group commits (several writes in one transaction) that failed and had their writes retried one by one, on this replica; each write still got its own outcome, so only this count shows a statement that fails for many writes where each alone succeeds",
            store_batches_retried.clone(),
        );

        // Every series from the start (platforms' once they start): a series that
        // appears only with its first event hides that event from rate() and increase().
        for reason in REASONS {
            let _ = refusals.get_or_create(&ReasonLabel { reason });
        }
        for kind in KINDS {
            pending.get_or_create(&KindLabel { kind }).set(0);
            let _ = decision_seconds.get_or_create(&KindLabel { kind });
            for outcome in OUTCOMES {
                let _ = interactions.get_or_create(&SettledLabels { kind, outcome });
            }
        }
        Self {
            registry,
            pending,
            interactions,
            decision_seconds,
            outbox_depth,
            sessions_connected,
            platform_errors,
            shows_refused,
            refusals,
            policy_actions,
            store_errors,
            store_batches_retried,
        }
    }
}

/// One bridge's metrics. Cheap to clone: clones share the registry.
#[derive(Clone)]
pub struct Metrics {
    families: Arc<Families>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    pub fn new() -> Self {
        Self { families: Arc::new(Families::new()) }
    }

    /// An interaction was settled (the store accepted it). A pending one is ignored.
    /// Resolved ones also record how long the decision took, from `created_at_ms` (when
    /// the request was stored and first shown).
    pub fn settled(&self, interaction: &Interaction) {
        let Some((outcome, at_ms)) = outcome_of(&interaction.status) else { return };
        let kind = kind_of(interaction);
        self.families.interactions.get_or_create(&SettledLabels { kind, outcome }).inc();
        if outcome == OUTCOMES[0] {
            // A clock stepping back between the two instants must not record a negative.
            let seconds = (at_ms.saturating_sub(interaction.created_at_ms)).max(0) as f64 / 1000.0;
            self.families.decision_seconds.get_or_create(&KindLabel { kind }).observe(seconds);
        }
    }

    /// A decision policy acted on its own: one of [`POLICY_ACTIONS`].
    pub fn policy_action(&self, action: &'static str) {
        debug_assert!(POLICY_ACTIONS.contains(&action), "unknown policy action {action}");
        self.families.policy_actions.get_or_create(&ActionLabel { action }).inc();
    }

    /// A person's action was refused.
    pub fn refused(&self, refusal: &Refusal) {
        self.refused_because(refusal_reason(refusal));
    }

    /// Something else was refused: [`REASON_STRANGER`], [`REASON_NOT_ADMIN`],
    /// [`REASON_NOT_ADMIN_CHAT`], [`REASON_OWN_PAIRING_CODE`].
    pub fn refused_because(&self, reason: &'static str) {
        self.families.refusals.get_or_create(&ReasonLabel { reason }).inc();
    }

    /// `platform` has started: its error series exist from now on, at zero.
    pub fn platform_started(&self, platform: &'static str) {
        for kind in ERROR_KINDS {
            let _ = self.families.platform_errors.get_or_create(&PlatformErrorLabels { platform, kind: kind.as_str() });
        }
        let _ = self.families.shows_refused.get_or_create(&PlatformLabel { platform });
    }

    /// `platform` refused for good to show a request in a chat.
    pub fn show_refused(&self, platform: &'static str) {
        self.families.shows_refused.get_or_create(&PlatformLabel { platform }).inc();
    }

    /// A call to `platform`'s API failed.
    pub fn platform_error(&self, platform: &'static str, kind: PlatformErrorKind) {
        self.families.platform_errors.get_or_create(&PlatformErrorLabels { platform, kind: kind.as_str() }).inc();
    }

    /// A backend session's connection is up; counted until the guard is dropped (the
    /// connection ended, or its task was aborted).
    #[must_use = "the session counts as connected only while the guard lives"]
    pub fn session_connected(&self) -> Connected {
        self.families.sessions_connected.inc();
        Connected { metrics: self.clone() }
    }

    /// Sets the gauges read from the store.
    pub fn set_store_figures(&self, figures: &StoreFigures) {
        let f = &self.families;
        f.pending.get_or_create(&KindLabel { kind: KINDS[0] }).set(figures.pending_approvals);
        f.pending.get_or_create(&KindLabel { kind: KINDS[1] }).set(figures.pending_questions);
        f.outbox_depth.set(figures.outbox_depth);
    }

    /// Brings `hitl_bridge_store_errors_total` up to the store's own counts
    /// ([`crate::store::error_counts`]), which it keeps for the process as errors happen.
    pub fn catch_up_store_errors(&self, counts: &[(&'static str, u64)]) {
        for &(operation, total) in counts {
            catch_up(&self.families.store_errors.get_or_create(&OperationLabel { operation }), total);
        }
    }

    /// Brings `hitl_bridge_store_batches_retried_total` up to the store's own count
    /// ([`crate::store::Store::group_commits_retried`]), kept as batches fail.
    pub fn catch_up_batches_retried(&self, total: u64) {
        catch_up(&self.families.store_batches_retried, total);
    }

    /// Every family in the OpenMetrics text format ([`CONTENT_TYPE`]).
    pub fn render(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.families.registry)?;
        Ok(out)
    }
}

/// Raises `counter` to `total`, a count kept elsewhere as events happen; a counter
/// never goes down, so a lower `total` changes nothing.
fn catch_up(counter: &Counter, total: u64) {
    let seen = counter.get();
    if total > seen {
        counter.inc_by(total - seen);
    }
}

/// Keeps one backend session counted as connected; see [`Metrics::session_connected`].
pub struct Connected {
    metrics: Metrics,
}

impl Drop for Connected {
    fn drop(&mut self) {
        self.metrics.families.sessions_connected.dec();
    }
}

/// The figures every replica reads alike from the store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreFigures {
    pub pending_approvals: i64,
    pub pending_questions: i64,
    pub outbox_depth: i64,
}

impl StoreFigures {
    /// Reads them (for a scrape).
    pub async fn read(store: &Store) -> Result<Self, StoreError> {
        let (pending_approvals, pending_questions) = store.pending_counts().await?;
        Ok(StoreFigures { pending_approvals, pending_questions, outbox_depth: store.outbox_depth().await? })
    }
}

#[cfg(test)]
mod tests;
