//! The [`Connector`] trait, the engine's one view of a backend, and [`Connectors`],
//! which picks the connector that serves a session.
//!
//! A connector turns its backend's events into
//! [`BackendInput`](crate::interaction::updates::BackendInput)s on the channel
//! the engine gave it, and delivers what the engine queued for its sessions. It never
//! decides anything: the core decides, the store remembers.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use crate::interaction::Interaction;
use crate::store::Queued;

/// What the engine asks of a backend connector.
pub trait Connector: Send + Sync {
    /// A short name for logs (`stream`, `http_api`).
    fn name(&self) -> &'static str;

    /// Whether this connector owns `session_id`.
    fn serves(&self, session_id: &str) -> bool;

    /// Whether decisions are sent to the backend as outbox commands. A connector
    /// whose clients read the outcome themselves (the HTTP API) says no, and the
    /// engine queues nothing for its sessions.
    fn takes_commands(&self) -> bool {
        true
    }

    /// Commands for `session_id` may be waiting in the outbox: deliver them (and keep
    /// the session connected while it has work). Never blocks.
    fn deliver(&self, session_id: &str);

    /// `queued` was just committed to the outbox: deliver it, and whatever else waits
    /// for its session, without reading it back where the connector can. Never blocks.
    fn deliver_queued(&self, queued: Queued) {
        self.deliver(queued.command.session_id());
    }

    /// An interaction of one of its sessions has ended; the outcome is already
    /// durable. Never blocks.
    fn settled(&self, _interaction: &Interaction) {}

    /// Stops background work. What was not delivered stays durable for the next start.
    fn shutdown(&self) -> BoxFuture<'_, ()>;
}

/// Every configured connector; a session belongs to the first that serves it.
#[derive(Clone, Default)]
pub struct Connectors {
    list: Vec<Arc<dyn Connector>>,
}

impl Connectors {
    /// `list` in priority order: put catch-all connectors (the chat backend) last.
    pub fn new(list: Vec<Arc<dyn Connector>>) -> Self {
        Self { list }
    }

    pub fn for_session(&self, session_id: &str) -> Option<&dyn Connector> {
        self.list.iter().find(|c| c.serves(session_id)).map(|c| c.as_ref())
    }

    /// Whether decisions in `session_id` become outbox commands.
    pub fn takes_commands(&self, session_id: &str) -> bool {
        self.for_session(session_id).is_some_and(|c| c.takes_commands())
    }

    pub fn deliver(&self, session_id: &str) {
        match self.for_session(session_id) {
            Some(connector) => connector.deliver(session_id),
            None => tracing::warn!(%session_id, "no backend connector serves this session; its commands wait"),
        }
    }

    pub fn deliver_queued(&self, queued: Queued) {
        match self.for_session(queued.command.session_id()) {
            Some(connector) => connector.deliver_queued(queued),
            None => tracing::warn!(session_id = %queued.command.session_id(), "no backend connector serves this session; its commands wait"),
        }
    }

    pub fn settled(&self, interaction: &Interaction) {
        if let Some(connector) = self.for_session(&interaction.session_id) {
            connector.settled(interaction);
        }
    }

    pub async fn shutdown(&self) {
        for connector in &self.list {
            connector.shutdown().await;
        }
    }
}
