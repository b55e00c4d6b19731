//! Chat platforms: each renders interactions into its own widgets and turns clicks
//! and replies into calls on the [`EngineHandle`](crate::engine::EngineHandle).
//!
//! The engine talks to every platform through [`Platform`], the port it owns, so adding
//! a network never touches the core. Rendering must respect the platform's limits; deciding what a
//! click means is the core's job, not the platform's.

pub mod console;
pub mod descriptor;
pub mod discord;
pub mod kit;
#[cfg(feature = "matrix")]
pub mod matrix;
pub mod mattermost;
pub mod registry;
pub mod slack;
pub mod teams;
pub mod telegram;

/// The texts people read, under the name the platforms have always used.
pub use crate::texts as locale;

pub use crate::engine::{Platform, PlatformError};
