//! The store: everything the bridge must not forget across a restart. Interactions
//! with their drafts, the platform messages showing them, chat ↔ session bindings,
//! who started each session's turn, the outbox of commands for the backend, requests
//! pushed over the HTTP API with the callbacks owed for them, pairing codes and paired
//! users, remembered approval rules ([`rules`]), the audit log, the sessions whose
//! agent is in the middle of a turn ([`turns`]), what the admin commands need
//! ([`admin`]), and what each chat platform keeps for itself ([`platform_state`]).
//!
//! One code path serves SQLite (embedded default) and PostgreSQL (several replicas)
//! through sqlx's Any driver. The store makes no decisions: the core
//! ([`crate::interaction`]) decides, the store only makes the result durable. Where
//! replicas race, the store's conditional updates make the first decision win.
//! Each file owns one table (or a close pair); [`connect`] owns opening and migrating.

mod admin;
mod api_requests;
mod audit;
mod audit_entry;
mod chats;
mod chats_memo;
mod claims;
mod connect;
mod deferred;
mod error;
mod escalations;
mod group_commit;
mod health;
mod held;
mod inbox;
mod interactions;
mod json;
mod leases;
pub mod lock;
mod message_ref;
mod messages;
mod notify;
mod outbox;
mod pairing;
mod pending_access;
mod placeholders;
pub mod platform_state;
mod refusals;
pub mod retention;
mod row;
mod rules;
mod secrets;
pub mod settings;
mod shared_reads;
mod showing;
mod shows;
mod turns;
mod ui_state;
mod web;

use sqlx::AnyPool;

pub use admin::{AuditCursor, AuditPage, AuditRow};
pub use api_requests::{ApiRequest, DueCallback, PageMark};
pub use audit_entry::{AuditEntry, kind_and_tools};
pub use chats::ChatKey;
pub use connect::DEFAULT_URL;
pub use error::{Result, StoreError, error_counts};
pub use health::{HealthReport, StoreHealth};
pub use inbox::{InboxUpdate, Inboxes, PlatformInbox};
pub use interactions::{PendingTimers, Settled};
pub use message_ref::MessageRef;
pub use notify::{OutboxListener, PendingListener, QueuedNotice};
pub use outbox::Queued;
pub use pairing::{PairError, PairedUser, PairingCode};
pub use pending_access::PendingAccess;
pub use platform_state::{PlatformState, PlatformStates, Stored};
pub use refusals::StrangerWindow;
pub use retention::Pruned;
pub use showing::Showing;
pub use shows::{PendingShow, RefusedShow, ShowClaim};
pub use turns::OpenTurn;
pub use ui_state::{UiState, UiStates};
pub use web::{AuditFilter, ClearedWeb, WebSession};

/// A handle to the database. Cheap to clone: clones share one connection pool.
#[derive(Clone)]
pub struct Store {
    pool: AnyPool,
    /// The hot writes share commits ([`group_commit`]).
    group: group_commit::GroupCommit,
    /// PostgreSQL only: where a listener for the outbox's announcements connects
    /// ([`notify`]). Never shown (it may hold a password).
    listen_url: Option<std::sync::Arc<str>>,
    /// Where requests are shown, asked together ([`showing`]).
    showing_reads: shared_reads::SharedReads<showing::ShowingRead>,
    /// Interactions loaded by id, asked together ([`interactions`]).
    loads: shared_reads::SharedReads<interactions::Load>,
    /// The chats of sessions, asked together ([`chats`]).
    session_chats: shared_reads::SharedReads<chats::SessionChats>,
    /// SQLite only: the chats of recent sessions, so most asks read nothing
    /// ([`chats_memo`]).
    chats_memo: Option<std::sync::Arc<chats_memo::ChatsMemo>>,
    /// How the store is doing, for readiness ([`health`]).
    health: StoreHealth,
}

impl Store {
    /// Runs `write` in a transaction, grouped with concurrent ones. False (nothing
    /// written) when the write had nothing to do.
    async fn write(&self, write: impl group_commit::Write) -> Result<bool> {
        self.group.write(write).await
    }

    /// How many group commits failed since the store opened and had their writes
    /// retried one by one (a write that fails alone too, or on PostgreSQL a deadlock
    /// with another replica). Each write keeps its own outcome either way.
    pub fn group_commits_retried(&self) -> u64 {
        self.group.retried()
    }

    /// How the store is doing, read without asking the database (`/readyz`).
    pub fn health(&self) -> HealthReport {
        self.health.report()
    }
}

// By hand: the pool's own Debug shows its options, which must never risk showing a
// database password in a log line.
impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("connections", &self.pool.size()).field("closed", &self.pool.is_closed()).finish()
    }
}
