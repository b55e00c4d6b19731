//! hitl-bridge library.
pub mod agent_sim;
