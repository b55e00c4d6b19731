//! hitl-bridge: answer an AI agent's questions and approve its tool calls from chat.
//!
//! The flow runs one way: a backend connector ([`backend`]) turns the agent's stream
//! into events, the pure core ([`interaction`]) merges and tracks requests, the store
//! ([`store`]) makes every step durable, and platforms ([`platform`]) render requests
//! and turn clicks into actions. The engine ([`engine`]) wires them together.
//! [`agent_sim`] is a reference agent backend for the demo and the tests.

pub mod agent_sim;
pub mod app;
pub mod backend;
pub mod clock;
pub mod config;
pub mod engine;
pub mod interaction;
pub mod platform;
pub mod protocol;
pub mod store;
