//! hitl-bridge: answer an AI agent's questions and approve its tool calls from chat.
//!
//! The flow runs one way: a backend connector ([`backend`]) turns the agent's wire
//! format into events, the pure core ([`interaction`]) merges and tracks requests, the
//! store ([`store`]) makes every step durable, and platforms ([`platform`]) render
//! requests and turn clicks into actions. The engine ([`engine`]) wires them together.
//!
//! Layout:
//! - [`backend`]: the [`backend::Connector`] trait (the mirror of
//!   [`platform::Platform`]) and its implementations:
//!   - [`backend::stream`], the WebSocket stream protocol, on the shared session
//!     machinery of [`backend::session`] (leases, reconnects, outbox, history);
//!   - [`backend::http_api`], agents that push requests over HTTP (PROTOCOL.md §8).
//! - [`interaction`]: the pure core (merging, questions, answers, decisions, who may
//!   answer, the state machine).
//! - [`store`]: SQLite or PostgreSQL; interactions, outbox, callbacks, audit.
//! - [`engine`]: applies actions, settles, routes requests to chats
//!   ([`engine::routing`]) and runs deadlines, on parallel shards that each own their
//!   sessions; platform calls go through per-chat lanes.
//! - [`platform`]: console, Telegram, Discord.
//! - [`listener`]: what every HTTP listener allows a client (connections, timeouts).
//! - [`server`]: the HTTP listener (`/healthz`, `/readyz`, `/metrics`, `/v1`).
//! - [`mcp`]: the bridge as an MCP server (`/mcp`, `hitl-bridge mcp`), every tool
//!   call a `/v1` request.
//! - [`metrics`]: the Prometheus registry `/metrics` renders.
//! - [`pairing`]: approving pairing codes (CLI and admin chats).
//! - [`logging`]: the log format (pretty or JSON lines) and the per-interaction span.
//! - [`admin`]: the operator's commands on the store (`pending`, `cancel`, `audit export`).
//! - [`app`]: assembles all of it from [`config`]; `main` is the CLI.
//! - [`agent_sim`]: a reference agent backend for the demo and the tests.

pub mod admin;
pub mod agent_sim;
pub mod app;
pub mod backend;
pub mod clock;
pub mod config;
pub mod demo;
pub mod engine;
pub mod error_chain;
pub mod interaction;
pub mod listener;
pub mod logging;
pub mod mcp;
pub mod metrics;
pub mod pairing;
pub mod platform;
pub mod protocol;
pub mod redact;
pub mod server;
pub mod store;
pub mod texts;
