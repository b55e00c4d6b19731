//! The wire contract with agent backends (PROTOCOL.md), as serde types.
//!
//! This module only describes shapes: what a backend may send ([`event`]), what the
//! bridge sends back ([`command`]) and what a history endpoint returns ([`history`]).
//! It makes no decisions; merging request shapes and validating replies is the job of
//! [`crate::interaction`].

pub mod command;
pub mod event;
pub mod history;

pub use command::{Answers, Command, Decision, DecisionType, EditedAction, Reply, UserInfo};
pub use event::{ActionRequest, BackendEvent, ContentBlock, Delta, ReviewConfig};
pub use history::{HistoryBlock, HistoryMessage};
