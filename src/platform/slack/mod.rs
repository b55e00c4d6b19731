//! Slack: approvals and questions in Block Kit, over Socket Mode or the Events API.
//!
//! - [`signature`]: the `v0` request signatures HTTP mode checks before parsing;
//! - [`manifest`]: the app manifest `hitl-bridge slack manifest` prints.

pub mod manifest;
pub mod signature;
